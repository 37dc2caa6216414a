//! The transport: what the executor needs from the world.
//!
//! Two implementations: [`sim::SimTransport`] (p ranks as threads in one process, used by the
//! unit tests of every algorithm) and `PmpiTransport` in the `pcoll-mpi` crate (the only code
//! that calls `PMPI_*`). A transport binds the program's buffers (`In`, `Out`, `Tmp(k)`) to
//! memory and moves and reduces elements; it knows the datatype and the op.

pub mod sim;

use crate::error::Error;
use crate::plan::{NodeStep, Piece};

/// Moves and reduces elements for one rank of one collective call.
pub trait Transport {
    /// Handle of a posted nonblocking operation.
    type Request;
    /// Allocate the scratch buffers of a program (sizes in elements).
    fn alloc_tmp(&mut self, sizes: &[usize]) -> Result<(), Error>;
    fn isend(&mut self, peer: usize, pieces: &[Piece]) -> Result<Self::Request, Error>;
    fn irecv(&mut self, peer: usize, pieces: &[Piece]) -> Result<Self::Request, Error>;
    fn wait(&mut self, req: Self::Request) -> Result<(), Error>;
    /// Complete `req` if it can be completed without blocking: `Ok(true)` (the request is
    /// finished and must not be used again), or `Ok(false)` (still in flight; nothing changed).
    fn test(&mut self, req: &mut Self::Request) -> Result<bool, Error>;
    /// `dst := src ⊕ dst` if `src_first`, else `dst := dst ⊕ src` (MPI operand order).
    fn reduce(&mut self, src: Piece, dst: Piece, src_first: bool) -> Result<(), Error>;
    fn copy(&mut self, src: Piece, dst: Piece) -> Result<(), Error>;
    /// [`Op::Node`](crate::plan::Op::Node): a step among this rank's node (`members`, in
    /// rank order) through the node's shared window.
    fn node(&mut self, members: &[usize], step: &NodeStep) -> Result<(), Error>;
}
