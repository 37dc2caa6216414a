//! The bad-input policy: which erroneous arguments pcoll reports itself (those some native
//! MPI does not check and crashes or hangs on), with which error class, and how an error is
//! raised on the user's communicator. Everything else erroneous goes to the native collective,
//! which reports it as the MPI does.

use super::call::Args;
use crate::comm;
use crate::consts;
use crate::mpi_types;
use crate::standin::{self, StandIn};
use mpi_sys::*;
use pcoll::algo::Collective;
use pcoll::Error;
use std::os::raw::{c_int, c_void};

/// A rank's own bad argument, found before any communication.
pub(super) struct OwnError {
    pub code: c_int,
    pub what: String,
    /// NULL buffers: the rank still takes part with scratch standing in for them.
    pub stand_in: Option<StandIn>,
}

/// Bad input that some native MPI does not check and crashes on (MPICH 4.0.2: a negative
/// count in reduce/allreduce; Open MPI 4.1.4: NULL buffers with count > 0, negative
/// allgatherv counts): pcoll reports it with the error class the standard names, through
/// the communicator's error handler, instead of passing it on. Only for a valid
/// intracommunicator; everything else is left to the MPI.
pub(super) fn own_error(a: &Args) -> Option<OwnError> {
    let (p, rank) = comm::intra(a.comm).ok()??;
    if let Some(e) = negative_count(a) {
        return Some(e);
    }
    if let Some(e) = in_place_at_non_root(a, p, rank) {
        return Some(e);
    }
    null_buffer(a, p, rank)
}

/// A negative count, or a negative allgatherv send count.
fn negative_count(a: &Args) -> Option<OwnError> {
    let count_err = |what: String| {
        Some(OwnError {
            code: consts::ERR_COUNT(),
            what,
            stand_in: None,
        })
    };
    if let Some(c) = a.counts.iter().find(|&&c| c < 0) {
        return count_err(format!("negative count {c}"));
    }
    if a.coll.base() == Collective::Allgatherv && !a.in_place() && a.sendcount < 0 {
        return count_err(format!("negative sendcount {}", a.sendcount));
    }
    None
}

/// MPI_IN_PLACE at a non-root of a reduce (only the root may pass it): Open MPI reports
/// MPI_ERR_ARG there, but the root then waits for this rank's data and crashes.
fn in_place_at_non_root(a: &Args, p: usize, rank: usize) -> Option<OwnError> {
    if a.coll != Collective::Reduce
        || !a.in_place()
        || !(0..p as i64).contains(&a.root)
        || a.root == rank as i64
    {
        return None;
    }
    let count = *a.counts.first()?;
    Some(OwnError {
        code: if cfg!(pcoll_mpich) {
            consts::ERR_BUFFER()
        } else {
            consts::ERR_ARG()
        },
        what: "MPI_IN_PLACE as the send buffer of a non-root rank".into(),
        stand_in: (count >= 0)
            .then(|| standin::send_bytes(a))
            .flatten()
            .map(|s| StandIn {
                send: Some(s),
                recv: None,
            }),
    })
}

/// A NULL send or receive buffer with data to hold (`MPI_ERR_BUFFER`), with the stand-in the
/// rank takes part with.
fn null_buffer(a: &Args, p: usize, rank: usize) -> Option<OwnError> {
    let (null_send, null_recv) = null_buffers(a, p, rank)?;
    let what = match (null_send, null_recv) {
        (true, true) => "NULL send and receive buffers with a non-zero count",
        (true, false) => "NULL send buffer with a non-zero count",
        _ => "NULL receive buffer with a non-zero count",
    };
    // The stand-in is sized from this rank's arguments; if that is impossible (negative
    // displacements, overflow) the rank does not take part.
    let send = if null_send {
        standin::send_bytes(a)
    } else {
        Some(0)
    };
    let recv = if null_recv {
        standin::recv_bytes(a, rank)
    } else {
        Some(0)
    };
    let stand_in = match (send, recv) {
        (Some(s), Some(r)) => Some(StandIn {
            send: null_send.then_some(s),
            recv: null_recv.then_some(r),
        }),
        _ => None,
    };
    Some(OwnError {
        code: consts::ERR_BUFFER(),
        what: what.into(),
        stand_in,
    })
}

/// Which buffers (send, receive) are NULL with a non-zero count (`None`: neither, or count
/// arrays that do not fit the communicator).
fn null_buffers(a: &Args, p: usize, rank: usize) -> Option<(bool, bool)> {
    // A NULL buffer is MPI_BOTTOM, legal only with absolute-address datatypes: flag it only
    // for types whose data starts at offset 0.
    let plain = |dt: MPI_Datatype| {
        mpi_types::type_facts(dt).is_ok_and(|f| f.lb == 0 && f.true_lb == 0 && f.size > 0)
    };
    let null = |ptr: *const c_void, n: i64, dt: MPI_Datatype| ptr.is_null() && n > 0 && plain(dt);
    let counts_ok = a.counts.len()
        == if matches!(
            a.coll,
            Collective::Reduce | Collective::Allreduce | Collective::Bcast
        ) {
            1
        } else {
            p
        };
    if !counts_ok || (a.coll.base() == Collective::Allgatherv && a.displs.len() != p) {
        return None;
    }
    let in_place = a.in_place();
    let total: i64 = a.counts.iter().sum();
    let (send_n, recv_n, send_dt) = match a.coll.base() {
        Collective::Reduce => (total, if a.root == rank as i64 { total } else { 0 }, a.dt),
        Collective::Allreduce => (total, total, a.dt),
        // In place, the input (all blocks) lives in the receive buffer.
        Collective::ReduceScatter => (total, if in_place { total } else { a.counts[rank] }, a.dt),
        // One buffer: reported as the receive buffer.
        Collective::Bcast => (0, total, a.dt),
        _ => (a.sendcount, total, a.sendtype),
    };
    let null_send = !in_place && null(a.sendbuf, send_n, send_dt);
    let null_recv = if a.coll.base() == Collective::Allgatherv {
        // A block's displacement may place it (`MPI_BOTTOM` with absolute ones).
        a.recvbuf.is_null()
            && mpi_types::type_facts(a.dt).is_ok_and(|f| super::validate::recv_unplaced_v(a, &f))
    } else {
        null(a.recvbuf as *const c_void, recv_n, a.dt)
    };
    (null_send || null_recv).then_some((null_send, null_recv))
}

/// A predefined op applied to a datatype it is not defined for (found by `MPI_Reduce_local`
/// on one element): its error class, reported by pcoll for every rank alike (the probe is
/// made by every rank with the same op and type, so no rank is left waiting).
pub(super) fn op_type_error(a: &Args) -> Option<c_int> {
    if !a.coll.reduces() {
        return None;
    }
    comm::intra(a.comm).ok()??;
    let facts = mpi_types::type_facts(a.dt).ok()?;
    if facts.size == 0 || facts.extent <= 0 {
        return None;
    }
    mpi_types::op_commutative(a.op).ok()?;
    mpi_types::op_accepts(a.op, a.dt, &facts).err()
}

/// The MPI error class of an error of pcoll's own path.
pub(crate) fn error_code(e: &Error) -> c_int {
    match e {
        Error::Mpi(c, _) => *c,
        Error::NoMem(_) => consts::ERR_NO_MEM(),
        Error::Arg(..) => consts::ERR_ARG(),
        Error::Unsupported(_) | Error::Internal(_) => consts::ERR_INTERN(),
    }
}

/// Raise `code` on the user's communicator (its error handler decides: return or abort).
pub(super) fn raise(comm: MPI_Comm, code: c_int) -> c_int {
    // SAFETY: `comm` was validated as a communicator before any error can come from us.
    unsafe { PMPI_Comm_call_errhandler(comm, code) };
    code
}
