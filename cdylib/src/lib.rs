//! libpcoll.so: PMPI interposition of `MPI_Reduce`, `MPI_Allreduce`, `MPI_Reduce_scatter`
//! and `MPI_Allgatherv` (C, Fortran, large-count), serving them with pcoll's algorithms.
//!
//! All `unsafe` of the project lives in this crate, each block with a `// SAFETY:` line:
//! `ffi/` converts and checks arguments, `pmpi.rs` is the only caller of point-to-point
//! `PMPI_*`, `comm.rs`/`mpi_types.rs` read MPI facts.

pub mod bench;
pub mod comm;
pub mod consts;
pub mod dispatch;
pub mod ffi;
pub mod gate;
pub mod mpi_types;
pub mod pack;
pub mod pmpi;
pub mod standin;
pub mod state;
