//! Programs: what one rank does in one collective call, as data.
//!
//! A schedule generator (in [`crate::sched`]) produces integers; an algorithm builder (in
//! [`crate::algo`]) turns them into a [`Program`] for one rank: a straight-line list of
//! [`Op`]s over element-addressed buffers. The executor ([`crate::exec`]) is the only thing
//! that runs programs; the transport binds the buffers to memory.
//!
//! Buffers are addressed by **element index** (never by byte): element `i` of a buffer lives
//! at `base + i * extent` of the MPI datatype, so derived datatypes with holes and resized
//! extents are handled by the transport, not here.
//!
//! Buffer meanings per collective (all lengths in elements):
//! * `In`: the user's input. reduce/allreduce: `count`; reduce_scatter: `sum(recvcounts)`;
//!   allgatherv: `recvcounts[rank]`. With `MPI_IN_PLACE` the transport binds `In` to the
//!   matching part of the receive buffer, so **`In` may alias `Out`**: a program reads every
//!   element of `In` it needs before it writes the aliased elements of `Out` (the simulator
//!   tests this by aliasing too). `In` is never written.
//! * `Out`: the user's receive buffer (reduce: only at the root; reduce_scatter:
//!   `recvcounts[rank]`; allgatherv: addressed as `displs[j] + i`). Programs write only the
//!   elements the collective defines, so holes and gaps are never touched.
//! * `Tmp(k)`: scratch of `Program::tmp[k]` elements, allocated by the transport.
//!
//! Message matching: every message of one call uses one tag on a private communicator; MPI's
//! non-overtaking rule matches the sends from A to B in the order B posted its receives, so a
//! program posts its receives from a peer in the order that peer posts the sends.

use std::fmt;

mod node;
pub use node::NodeStep;

/// A buffer of the call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Buf {
    In,
    Out,
    Tmp(u32),
}

/// A half-open range `[off, off + len)` of elements of one buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Piece {
    pub buf: Buf,
    pub off: usize,
    pub len: usize,
}

impl Piece {
    pub fn new(buf: Buf, off: usize, len: usize) -> Piece {
        Piece { buf, off, len }
    }
    pub fn end(&self) -> usize {
        self.off + self.len
    }
    /// The sub-piece `[lo, hi)` relative to this piece's start.
    pub fn sub(&self, lo: usize, hi: usize) -> Piece {
        debug_assert!(lo <= hi && hi <= self.len);
        Piece {
            buf: self.buf,
            off: self.off + lo,
            len: hi - lo,
        }
    }
}

impl fmt::Display for Piece {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}[{},{})", self.buf, self.off, self.end())
    }
}

/// Request slot of a nonblocking operation, local to one program.
pub type Req = u32;

/// One step of a program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// Post a receive of the concatenation of `pieces` from `peer` (a rank of the
    /// communicator). Zero-length pieces are allowed; a message of zero elements is still sent.
    Irecv {
        req: Req,
        peer: usize,
        pieces: Vec<Piece>,
    },
    /// Post a send of the concatenation of `pieces` to `peer`.
    Isend {
        req: Req,
        peer: usize,
        pieces: Vec<Piece>,
    },
    /// Complete the operation posted under `req`; the slot may be reused afterwards.
    Wait { req: Req },
    /// Local reduction of `src` into `dst` (equal lengths).
    /// `src_first`: `dst := src ⊕ dst` (src covers lower ranks); else `dst := dst ⊕ src`.
    /// For commutative ops the two are the same.
    Reduce {
        src: Piece,
        dst: Piece,
        src_first: bool,
    },
    /// `dst := src` (equal lengths; a copy onto itself is a no-op).
    Copy { src: Piece, dst: Piece },
    /// A collective step among the ranks of this rank's node (`members`, in rank order)
    /// through the node's shared window (`shm`): a blocking step every member runs at the
    /// same point of its program ([`NodeStep`]).
    Node { members: Vec<usize>, step: NodeStep },
}

/// Everything one rank does in one collective call.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Program {
    pub ops: Vec<Op>,
    /// Sizes (elements) of the scratch buffers `Tmp(0..)`.
    pub tmp: Vec<usize>,
    /// Communication rounds of the schedule this program follows (for logs and tests).
    pub rounds: usize,
}

impl Program {
    pub fn new() -> Program {
        Program::default()
    }

    /// Allocate a new scratch buffer of `len` elements; returns its `Buf`.
    pub fn tmp(&mut self, len: usize) -> Buf {
        self.tmp.push(len);
        Buf::Tmp((self.tmp.len() - 1) as u32)
    }

    pub fn irecv(&mut self, req: Req, peer: usize, pieces: Vec<Piece>) {
        self.ops.push(Op::Irecv { req, peer, pieces });
    }
    pub fn isend(&mut self, req: Req, peer: usize, pieces: Vec<Piece>) {
        self.ops.push(Op::Isend { req, peer, pieces });
    }
    pub fn wait(&mut self, req: Req) {
        self.ops.push(Op::Wait { req });
    }
    /// Blocking receive: post and complete.
    pub fn recv(&mut self, peer: usize, pieces: Vec<Piece>) {
        self.irecv(0, peer, pieces);
        self.wait(0);
    }
    /// Blocking send: post and complete.
    pub fn send(&mut self, peer: usize, pieces: Vec<Piece>) {
        self.isend(0, peer, pieces);
        self.wait(0);
    }
    /// Send to `to` and receive from `from` at the same time (one full-duplex round).
    pub fn sendrecv(&mut self, to: usize, send: Vec<Piece>, from: usize, recv: Vec<Piece>) {
        self.irecv(0, from, recv);
        self.isend(1, to, send);
        self.wait(0);
        self.wait(1);
    }
    pub fn reduce(&mut self, src: Piece, dst: Piece, src_first: bool) {
        if src.len > 0 {
            self.ops.push(Op::Reduce {
                src,
                dst,
                src_first,
            });
        }
    }
    pub fn copy(&mut self, src: Piece, dst: Piece) {
        if src.len > 0 && src != dst {
            self.ops.push(Op::Copy { src, dst });
        }
    }

    /// Total elements this program sends (for stats and tests).
    pub fn sent_elems(&self) -> usize {
        self.ops
            .iter()
            .map(|o| match o {
                Op::Isend { pieces, .. } => pieces.iter().map(|p| p.len).sum(),
                _ => 0,
            })
            .sum()
    }

    /// Checks the program's own consistency: pieces inside their buffers, every request
    /// waited exactly once and never reposted while in flight, equal lengths for
    /// reduce/copy. `in_len`/`out_len`: element counts of `In` and `Out` (None: unbound).
    pub fn validate(&self, in_len: Option<usize>, out_len: Option<usize>) -> Result<(), String> {
        let check = |p: &Piece| -> Result<(), String> {
            let cap = match p.buf {
                Buf::In => in_len,
                Buf::Out => out_len,
                Buf::Tmp(k) => self.tmp.get(k as usize).copied(),
            };
            match cap {
                None => Err(format!("{p}: buffer not bound on this rank")),
                Some(c) if p.end() > c => Err(format!("{p}: beyond buffer of {c} elements")),
                _ => Ok(()),
            }
        };
        let mut inflight = std::collections::HashSet::new();
        for (i, op) in self.ops.iter().enumerate() {
            let r = match op {
                Op::Irecv { req, pieces, .. } | Op::Isend { req, pieces, .. } => {
                    if !inflight.insert(*req) {
                        Err(format!("request {req} reposted while in flight"))
                    } else {
                        pieces.iter().try_for_each(check)
                    }
                }
                Op::Wait { req } => {
                    if inflight.remove(req) {
                        Ok(())
                    } else {
                        Err(format!("wait on idle request {req}"))
                    }
                }
                Op::Node { members, step } => step
                    .check(members)
                    .and_then(|()| step.pieces().try_for_each(check)),
                Op::Reduce { src, dst, .. } | Op::Copy { src, dst } => {
                    if src.len != dst.len {
                        Err(format!("length mismatch {src} -> {dst}"))
                    } else if matches!(op, Op::Reduce { .. }) && dst.buf == Buf::In {
                        Err(format!("reduce into In {dst}"))
                    } else {
                        check(src).and(check(dst))
                    }
                }
            };
            r.map_err(|e| format!("op {i} ({op:?}): {e}"))?;
        }
        if let Some(r) = inflight.iter().next() {
            return Err(format!("request {r} never waited"));
        }
        Ok(())
    }
}
