//! The native fast paths: a call the resolver sends to native is served by the MPI's own
//! collective without validating anything (the MPI validates its own arguments), asking the
//! MPI only for the communicator size and the type size. Calls with arguments some native
//! MPI crashes on take the full path, which reports them.

use super::call::Args;
use super::resolve::{call_facts, decide, ArgFacts};
use super::stat_time;
use crate::consts;
use crate::learn::{Tally, Verdict};
use crate::mpi_types;
use crate::state::{self, Global};
use mpi_sys::*;
use pcoll::algo::{Algorithm, Collective};
use pcoll::decide::{CallFacts, Decision};
use pcoll::learn::Candidate;
use std::os::raw::{c_int, c_void};

/// Debug log of a call sent to native on a fast path.
fn log_native(g: &Global, call: &CallFacts, d: &Decision) {
    if log::log_enabled!(log::Level::Debug) {
        log::debug!(
            "{} p={} bytes={}: native ({}; arguments not examined)",
            call.coll,
            call.p,
            call.bytes,
            d.reason(call, &g.table)
        );
    }
}

/// Fast path: if the request is `native`, serve it without validating anything (the MPI
/// validates its own arguments). Needs only the communicator size and the type size.
/// `Some(bytes)`: send the call to native.
pub(super) fn native_requested(g: &'static Global, a: &Args) -> Option<usize> {
    let (p, size) = sizes(a)?;
    let elems = plain_elems(a, size)?;
    if needs_full_path(a, elems) {
        return None;
    }
    let bytes = elems as usize * size as usize;
    let call = call_facts(a, p as usize, bytes)?;
    let gen = crate::gate::memo_gen();
    let (learned, tally) = learned(g, a.comm, &call)?;
    let unequal = || a.unequal_counts();
    let nf = ArgFacts::of(a, &unequal);
    let d = decide(g, &call, &nf, learned).ok()?;
    (d.algorithm == Algorithm::Native).then(|| {
        // A cell decided native (a raced rule's, or PCOLL_LEARN's, whose gate is closed):
        // counted in its cell, and the next call repeating this one is forwarded from C
        // (counted there) until the cell is due to be raced again.
        // (`verdict` found it not due to be raced again: `take` counts it.)
        if let Some(t) = tally.filter(|t| t.take()) {
            crate::gate::keep_native(a, gen, (t.counter(), t.until));
        }
        log_native(g, &call, &d);
        bytes
    })
}

/// The learner's pick for a fast path (`PCOLL_LEARN`, raced rules): `Some((None, None))` when
/// the learner does not decide the call, `Some((Some(winner), Some(tally)))` when its cell on
/// `comm` is decided (a path that runs the call counts it in the tally), `None` while it is
/// explored or due to be raced again (the full path counts the call; every rank's call of
/// such a cell goes there).
fn learned(
    g: &'static Global,
    comm: MPI_Comm,
    call: &CallFacts,
) -> Option<(Option<Candidate>, Option<Tally>)> {
    match crate::learn::verdict(g, comm, call) {
        Verdict::Off => Some((None, None)),
        Verdict::Explore => None,
        Verdict::Settled(c, t) => Some((Some(c), Some(t))),
    }
}

/// The communicator size and the type size (`None`: an invalid handle; the full path, and
/// from there native, reports it).
fn sizes(a: &Args) -> Option<(c_int, MPI_Count)> {
    let size = mpi_types::type_size(a.dt)?;
    let mut p: c_int = 0;
    // SAFETY: an out-pointer to a local; an invalid handle gives an error code, which sends
    // the call to the full path (and from there to native).
    (unsafe { PMPI_Comm_size(a.comm, &mut p) } == consts::SUCCESS()).then_some((p, size))
}

/// The elements of the call (`None`: bad counts or type size; the full path reports them,
/// some MPIs crash on them).
fn plain_elems(a: &Args, size: MPI_Count) -> Option<i64> {
    let elems: i64 = match a.coll {
        Collective::Reduce | Collective::Allreduce | Collective::Bcast => *a.counts.first()?,
        _ => a.counts.iter().sum(),
    };
    if elems < 0
        || size < 0
        || a.counts.iter().any(|&c| c < 0)
        || (a.coll.base() == Collective::Allgatherv && a.sendcount < 0)
    {
        return None;
    }
    Some(elems)
}

/// This rank's arguments may be erroneous in a way the full path must report: an op MPICH
/// aborts on, `MPI_IN_PLACE` at a non-root of a reduce, a NULL buffer with data.
fn needs_full_path(a: &Args, elems: i64) -> bool {
    if cfg!(pcoll_mpich) && a.coll.reduces() && mpi_types::logical_op_on_float(a.op, a.dt) {
        return true; // MPICH aborts on it: the full path reports MPI_ERR_OP
    }
    if a.coll == Collective::Reduce && a.in_place() && a.root != rank(a.comm) {
        return true; // in place at a non-root: erroneous, the full path reports it
    }
    if elems > 0 && (a.sendbuf.is_null() || a.recvbuf.is_null()) {
        // Possibly a NULL buffer error (or MPI_BOTTOM): the full path decides. A NULL
        // receive buffer at a non-root of a reduce is fine and common.
        let recv_matters = a.coll != Collective::Reduce || a.root == rank(a.comm);
        if a.sendbuf.is_null() || (recv_matters && a.recvbuf.is_null()) {
            return true;
        }
    }
    false
}

/// This rank in `comm` (which answered `PMPI_Comm_size`).
fn rank(comm: MPI_Comm) -> i64 {
    let mut rank: c_int = -1;
    // SAFETY: out-pointer; the communicator answered PMPI_Comm_size before.
    unsafe { PMPI_Comm_rank(comm, &mut rank) };
    rank as i64
}

/// The native fast path of `MPI_Reduce_scatter` / `MPI_Allgatherv` (C, large-count and
/// Fortran entries), taken before any `Args` exists: the per-rank counts are read where the
/// caller keeps them (no copy, no allocation) and only `PMPI_Comm_test_inter`,
/// `PMPI_Comm_size` and `PMPI_Type_size_x` are asked. `Some(rc)`: the call went to native
/// (exactly when [`native_requested`] on the full path would have sent it there, with the
/// same stats record); `None`: build the `Args` and call [`collective`](super::collective),
/// which decides everything else (bad input, intercommunicators, pcoll's algorithms).
///
/// # Safety
/// `recvcounts` (and allgatherv's `displs`) are null or point to comm-size readable values
/// (MPI's rule for both calls).
#[allow(clippy::too_many_arguments)]
pub unsafe fn vector_native<T: Copy + Into<i64>, D: Copy + Into<i64>>(
    coll: Collective,
    sendbuf: *const c_void,
    recvbuf: *const c_void,
    (recvcounts, displs): (*const T, *const D),
    sendcount: i64,
    dt: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
    native: &mut dyn FnMut() -> c_int,
) -> Option<c_int> {
    debug_assert!(matches!(
        coll,
        Collective::ReduceScatter | Collective::Allgatherv
    ));
    if state::disabled() {
        return Some(native());
    }
    if let Some(rc) = super::no_world(coll, native) {
        return Some(rc);
    }
    crate::nbc::before_blocking(comm);
    if comm == consts::comm_null() || recvcounts.is_null() {
        return None;
    }
    let g = state::global();
    let t0 = stat_time(g);
    let (p, size) = vector_sizes(coll, sendcount, dt, op, comm)?;
    // SAFETY: the caller's guarantee: p readable counts.
    let counts = unsafe { std::slice::from_raw_parts(recvcounts, p) };
    let elems = total(counts)?;
    if elems > 0 && (sendbuf.is_null() || recvbuf.is_null()) {
        return None; // possibly a NULL buffer error (or MPI_BOTTOM): the full path decides
    }
    let unequal = || counts.windows(2).any(|w| w[0].into() != w[1].into());
    let nf = ArgFacts {
        dt,
        op,
        unequal: &unequal,
        // SAFETY: as above, for displs (its first entry read for a one-rank allgatherv).
        displaced: p == 1 && {
            let displ0 = (coll == Collective::Allgatherv && !displs.is_null())
                .then(|| unsafe { *displs }.into());
            let count0 = counts.first().map(|&c| c.into());
            super::call::displaced(coll, sendbuf == consts::in_place(), count0, displ0)
        },
    };
    let fast = (sendbuf, elems as usize * size, t0);
    let kept = || {
        let counts: Option<Vec<c_int>> = counts
            .iter()
            .map(|&c| c_int::try_from(c.into()).ok())
            .collect();
        let bufs = (sendbuf, recvbuf as *mut c_void);
        Some(fast_kept(coll, bufs, sendcount, counts?, (dt, op, comm)))
    };
    native_decided(g, (coll, p), fast, (comm, &nf), &kept, native)
}

/// One rank's side of an allgather / reduce_scatter_block: `(sendbuf, recvbuf, recvcount,
/// sendcount)` (sendcount 0 for reduce_scatter_block).
pub type Regular = (*const c_void, *const c_void, i64, i64);

/// The native fast path of the regular-count forms `MPI_Allgather` /
/// `MPI_Reduce_scatter_block`, as [`vector_native`] with p equal counts: no count array is
/// read or built. `Some(rc)`: the call went to native.
pub fn regular_native(
    coll: Collective,
    (sendbuf, recvbuf, count, sendcount): Regular,
    dt: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
    native: &mut dyn FnMut() -> c_int,
) -> Option<c_int> {
    debug_assert!(matches!(
        coll,
        Collective::ReduceScatterBlock | Collective::Allgather
    ));
    if state::disabled() {
        return Some(native());
    }
    if let Some(rc) = super::no_world(coll, native) {
        return Some(rc);
    }
    crate::nbc::before_blocking(comm);
    if comm == consts::comm_null() || count < 0 {
        return None;
    }
    let g = state::global();
    let t0 = stat_time(g);
    let (p, size) = vector_sizes(coll, sendcount, dt, op, comm)?;
    let elems = count.checked_mul(p as i64)?;
    if elems > 0 && (sendbuf.is_null() || recvbuf.is_null()) {
        return None; // possibly a NULL buffer error (or MPI_BOTTOM): the full path decides
    }
    let fast = (sendbuf, elems as usize * size, t0);
    let kept = || {
        let bufs = (sendbuf, recvbuf as *mut c_void);
        let counts = vec![c_int::try_from(count).ok()?];
        Some(fast_kept(coll, bufs, sendcount, counts, (dt, op, comm)))
    };
    let nf = ArgFacts {
        dt,
        op,
        unequal: &|| false,
        displaced: false,
    };
    native_decided(g, (coll, p), fast, (comm, &nf), &kept, native)
}

/// A fast path's call as the gate's memo keeps it ([`crate::gate::keep`]).
fn fast_kept(
    coll: Collective,
    bufs: (*const c_void, *mut c_void),
    sendcount: i64,
    counts: Vec<c_int>,
    (dt, op, comm): (MPI_Datatype, MPI_Op, MPI_Comm),
) -> crate::gate::Kept {
    crate::gate::Kept {
        coll,
        bufs,
        sendcount,
        counts,
        dt,
        op,
        root: 0,
        comm,
    }
}

/// The shared end of the fast paths: `fast` = (send buffer, bytes, start time). If the
/// resolver says native, make the call and record it; a raced cell's native call is kept in
/// the gate's memo (`kept`: the call as the memo keys it) as [`native_requested`] keeps it.
fn native_decided(
    g: &'static Global,
    (coll, p): (Collective, usize),
    (sendbuf, bytes, t0): (*const c_void, usize, f64),
    (comm, nf): (MPI_Comm, &ArgFacts),
    kept: &dyn Fn() -> Option<crate::gate::Kept>,
    native: &mut dyn FnMut() -> c_int,
) -> Option<c_int> {
    let commutative = if coll.reduces() {
        mpi_types::op_commutative(nf.op).ok()?
    } else {
        true
    };
    let call = CallFacts {
        coll,
        p,
        bytes,
        commutative,
        in_place: sendbuf == consts::in_place(),
        root: 0,
        nodes: Default::default(),
        shm_refused: false,
        node_shm: true,
        nonblocking: false,
    };
    let gen = crate::gate::memo_gen();
    let (learned, tally) = learned(g, comm, &call)?;
    let d = decide(g, &call, nf, learned).ok()?;
    if d.algorithm != Algorithm::Native {
        return None;
    }
    // Not due to be raced again (`verdict`): counted, and kept as `native_requested` keeps it.
    if let Some(t) = tally.filter(|t| t.take()) {
        if let Some(k) = kept() {
            crate::gate::keep(&k, gen, (t.counter(), t.until));
        }
    }
    let rc = native();
    state::record(coll, Algorithm::Native, bytes, stat_time(g) - t0);
    log_native(g, &call, &d);
    Some(rc)
}

/// The size of an intracommunicator and of the type (`None`: an intercommunicator, an
/// invalid handle, a negative send count, or an op MPICH aborts on; the full path decides).
fn vector_sizes(
    coll: Collective,
    sendcount: i64,
    dt: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
) -> Option<(usize, usize)> {
    let size = mpi_types::type_size(dt)?;
    let (mut inter, mut p): (c_int, c_int) = (0, 0);
    // SAFETY: out-pointers to locals; an invalid handle gives an error code (full path).
    unsafe {
        if PMPI_Comm_test_inter(comm, &mut inter) != consts::SUCCESS()
            || inter != 0
            || PMPI_Comm_size(comm, &mut p) != consts::SUCCESS()
        {
            return None;
        }
    }
    if p <= 0 || size < 0 || (coll.base() == Collective::Allgatherv && sendcount < 0) {
        return None;
    }
    if cfg!(pcoll_mpich)
        && coll.base() == Collective::ReduceScatter
        && mpi_types::logical_op_on_float(op, dt)
    {
        return None; // MPICH aborts on it: the full path reports MPI_ERR_OP
    }
    Some((p as usize, size as usize))
}

/// The sum of the per-rank counts (`None`: a negative count or sum; the full path reports
/// them, some MPIs crash on them).
fn total<T: Copy + Into<i64>>(counts: &[T]) -> Option<i64> {
    let mut elems: i64 = 0;
    for &c in counts {
        let c: i64 = c.into();
        if c < 0 {
            return None;
        }
        elems = elems.wrapping_add(c);
    }
    (elems >= 0).then_some(elems)
}
