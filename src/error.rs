//! One error type for the whole library; `pcoll-mpi` maps it to MPI error classes.

use std::fmt;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error {
    /// An MPI call failed with this error code (propagated unchanged).
    Mpi(i32, String),
    /// The chosen algorithm cannot serve this call (precondition failed).
    Unsupported(String),
    /// Invalid argument found by pcoll itself.
    Arg(ArgKind, String),
    /// Out of memory for scratch buffers.
    NoMem(usize),
    /// Internal invariant broken (a bug in pcoll).
    Internal(String),
}

/// Which MPI error class an argument error maps to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgKind {
    Count,
    Root,
    Type,
    Op,
    Comm,
    Buffer,
    Arg,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Mpi(c, w) => write!(f, "MPI error {c} in {w}"),
            Error::Unsupported(w) => write!(f, "unsupported: {w}"),
            Error::Arg(k, w) => write!(f, "invalid argument ({k:?}): {w}"),
            Error::NoMem(n) => write!(f, "cannot allocate {n} bytes of scratch"),
            Error::Internal(w) => write!(f, "internal error: {w}"),
        }
    }
}

impl std::error::Error for Error {}
