//! The one path every intercepted collective takes:
//! validate -> (invalid or unservable: the native `PMPI_` call, which reports errors exactly as
//! the MPI does) -> choose an algorithm (forced > table > default, preconditions, fallback
//! policy) -> build (or reuse) the program -> run it over `PmpiTransport` on the shadow
//! communicator -> stats.

use crate::comm;
use crate::consts;
use crate::mpi_types::{self, TypeFacts};
use crate::pack;
use crate::pmpi::PmpiTransport;
use crate::standin::{self, StandIn};
use crate::state;
use mpi_sys::*;
use pcoll::algo::{build, Algorithm, CallSpec, Collective};
use pcoll::decide::{CallFacts, Decision, NativeFacts};
use pcoll::{exec, Error};
use std::os::raw::{c_int, c_void};

/// Counts (or displacements) of a call, without a heap allocation for up to [`SMALL`]
/// entries (a single count, or per-rank arrays of small communicators).
#[derive(Clone)]
pub enum Counts {
    One([i64; 1]),
    Small([i64; SMALL], usize),
    Many(Vec<i64>),
}

/// Entries kept inline by [`Counts`].
pub const SMALL: usize = 16;

impl Counts {
    /// No entries.
    pub const EMPTY: Counts = Counts::Small([0; SMALL], 0);
}

impl std::ops::Deref for Counts {
    type Target = [i64];
    fn deref(&self) -> &[i64] {
        match self {
            Counts::One(c) => c,
            Counts::Small(c, n) => &c[..*n],
            Counts::Many(v) => v,
        }
    }
}

impl From<Vec<i64>> for Counts {
    fn from(v: Vec<i64>) -> Counts {
        Counts::Many(v)
    }
}

impl<T: Copy + Into<i64>> FromIterator<T> for Counts {
    fn from_iter<I: IntoIterator<Item = T>>(it: I) -> Counts {
        let mut small = [0i64; SMALL];
        let mut it = it.into_iter();
        for n in 0..=SMALL {
            match it.next() {
                None => return Counts::Small(small, n),
                Some(x) if n < SMALL => small[n] = x.into(),
                Some(x) => {
                    let mut v = small.to_vec();
                    v.push(x.into());
                    v.extend(it.map(Into::into));
                    return Counts::Many(v);
                }
            }
        }
        unreachable!("the loop returns by its last turn")
    }
}

/// One collective call as the C (or Fortran, or large-count) entry point received it.
pub struct Args {
    pub coll: Collective,
    pub sendbuf: *const c_void,
    pub recvbuf: *mut c_void,
    /// reduce/allreduce: `[count]`; reduce_scatter/allgatherv: `recvcounts`.
    pub counts: Counts,
    /// allgatherv: `displs`.
    pub displs: Counts,
    /// allgatherv: `sendcount` and `sendtype`.
    pub sendcount: i64,
    pub sendtype: MPI_Datatype,
    /// The datatype of the data (allgatherv: `recvtype`).
    pub dt: MPI_Datatype,
    pub op: MPI_Op,
    pub root: i64,
    pub comm: MPI_Comm,
    /// Where `counts` came from (for the program reading them): only a reporting aid.
    pub large_count: bool,
}

/// Wall-clock time for the stats (only with `PCOLL_STATS=1`, so that a native call pays
/// no timer reads otherwise; `time_us` then stays 0).
fn stat_time() -> f64 {
    if state::global().cfg.stats {
        wtime()
    } else {
        0.0
    }
}

fn wtime() -> f64 {
    // SAFETY: no arguments.
    unsafe { PMPI_Wtime() }
}

/// A validated call pcoll can serve itself.
struct Valid {
    spec: CallSpec,
    /// Layout of the elements the program moves (allgatherv in bytes: of `MPI_BYTE`).
    facts: TypeFacts,
    in_place: bool,
    /// Allgatherv served in bytes (see [`in_bytes`]): `Some(staging)`, where `staging` says
    /// the receive type has holes, so the blocks are packed into a scratch buffer first.
    bytes: Option<bool>,
    /// Layout of the user's datatype (`facts` before the switch to bytes).
    user: TypeFacts,
}

/// Facts of `MPI_BYTE`.
const BYTE: TypeFacts = TypeFacts {
    size: 1,
    lb: 0,
    extent: 1,
    true_lb: 0,
    true_extent: 1,
};

/// Allgatherv is served in bytes whenever the total fits an MPI int count: MPI lets every
/// rank describe the same data with its own receive type (equal type signatures, different
/// element sizes), so only byte offsets mean the same on every rank. A receive type without
/// holes is used as bytes in place; one with holes is packed into a scratch buffer
/// (`MPI_Pack`, which on a homogeneous system is the data bytes in order), the blocks are
/// exchanged there and unpacked at the end. Then messages may be split anywhere (chunks,
/// segments) and every rank splits them alike. Counts and displacements become bytes;
/// returns the staging flag, or None (the total is too large; served in elements, unsplit).
fn in_bytes(counts: &mut [usize], displs: &mut [usize], f: &TypeFacts) -> Option<bool> {
    let total = counts
        .iter()
        .try_fold(0usize, |t, &c| t.checked_add(c.checked_mul(f.size)?))?;
    if total > c_int::MAX as usize {
        return None;
    }
    let staging = !f.contiguous();
    let mut off = 0;
    for (c, d) in counts.iter_mut().zip(displs.iter_mut()) {
        *c *= f.size;
        if staging {
            *d = off;
            off += *c;
        } else {
            *d *= f.size; // extent == size
        }
    }
    Some(staging)
}

thread_local! {
    /// Vectors of finished calls, kept for their capacity (a loop of calls allocates none).
    static SPARE: std::cell::RefCell<Vec<Vec<usize>>> = const { std::cell::RefCell::new(Vec::new()) };
}

fn spare_vec() -> Vec<usize> {
    SPARE
        .try_with(|s| s.borrow_mut().pop())
        .ok()
        .flatten()
        .unwrap_or_default()
}

/// Give a vector back for [`spare_vec`] (small ones only, a few at most).
fn recycle(mut v: Vec<usize>) {
    if v.capacity() == 0 || v.capacity() > 4096 {
        return;
    }
    v.clear();
    let _ = SPARE.try_with(|s| {
        let mut s = s.borrow_mut();
        if s.len() < 4 {
            s.push(v);
        }
    });
}

/// The counts as `usize`, or None if one is negative or above `c_int::MAX`.
fn nonneg(v: &[i64]) -> Option<Vec<usize>> {
    let mut out = spare_vec();
    for &x in v {
        if x < 0 || x > c_int::MAX as i64 {
            recycle(out);
            return None;
        }
        out.push(x as usize);
    }
    Some(out)
}

/// A rank's own bad argument, found before any communication.
struct OwnError {
    code: c_int,
    what: String,
    /// NULL buffers: the rank still takes part with scratch standing in for them.
    stand_in: Option<StandIn>,
}

/// Bad input that some native MPI does not check and crashes on (MPICH 4.0.2: a negative
/// count in reduce/allreduce; Open MPI 4.1.4: NULL buffers with count > 0, negative
/// allgatherv counts): pcoll reports it with the error class the standard names, through
/// the communicator's error handler, instead of passing it on. Only for a valid
/// intracommunicator; everything else is left to the MPI.
fn own_error(a: &Args) -> Option<OwnError> {
    let (p, rank) = comm::facts(a.comm).ok()??;
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
    let in_place = a.sendbuf == consts::in_place();
    if a.coll == Collective::Allgatherv && !in_place && a.sendcount < 0 {
        return count_err(format!("negative sendcount {}", a.sendcount));
    }
    // MPI_IN_PLACE at a non-root of a reduce (only the root may pass it): Open MPI reports
    // MPI_ERR_ARG there, but the root then waits for this rank's data and crashes.
    if a.coll == Collective::Reduce && in_place && (0..p as i64).contains(&a.root) {
        if a.root != rank as i64 {
            let count = *a.counts.first()?;
            return Some(OwnError {
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
            });
        }
    }
    // A NULL buffer is MPI_BOTTOM, legal only with absolute-address datatypes: flag it only
    // for types whose data starts at offset 0.
    let plain = |dt: MPI_Datatype| {
        mpi_types::type_facts(dt).map_or(false, |f| f.lb == 0 && f.true_lb == 0 && f.size > 0)
    };
    let null = |ptr: *const c_void, n: i64, dt: MPI_Datatype| ptr.is_null() && n > 0 && plain(dt);
    let counts_ok = a.counts.len()
        == if matches!(a.coll, Collective::Reduce | Collective::Allreduce) {
            1
        } else {
            p
        };
    if !counts_ok || (a.coll == Collective::Allgatherv && a.displs.len() != p) {
        return None;
    }
    let total: i64 = a.counts.iter().sum();
    let (send_n, recv_n, send_dt) = match a.coll {
        Collective::Reduce => (total, if a.root == rank as i64 { total } else { 0 }, a.dt),
        Collective::Allreduce => (total, total, a.dt),
        // In place, the input (all blocks) lives in the receive buffer.
        Collective::ReduceScatter => (total, if in_place { total } else { a.counts[rank] }, a.dt),
        Collective::Allgatherv => (a.sendcount, total, a.sendtype),
    };
    let null_send = !in_place && null(a.sendbuf, send_n, send_dt);
    let null_recv = null(a.recvbuf as *const c_void, recv_n, a.dt);
    if !null_send && !null_recv {
        return None;
    }
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

/// A predefined op applied to a datatype it is not defined for (found by `MPI_Reduce_local`
/// on one element): its error class, reported by pcoll for every rank alike (the probe is
/// made by every rank with the same op and type, so no rank is left waiting).
fn op_type_error(a: &Args) -> Option<c_int> {
    if !a.coll.reduces() {
        return None;
    }
    comm::facts(a.comm).ok()??;
    let facts = mpi_types::type_facts(a.dt).ok()?;
    if facts.size == 0 || facts.extent <= 0 {
        return None;
    }
    mpi_types::op_commutative(a.op).ok()?;
    mpi_types::op_accepts(a.op, a.dt, &facts).err()
}

/// `None`: hand the call to the native collective (bad input is reported by it, with its
/// error class; calls pcoll cannot serve are served by it).
fn validate(a: &Args) -> Option<Valid> {
    let (p, rank) = comm::facts(a.comm).ok()??;
    let facts = mpi_types::type_facts(a.dt).ok()?;
    if facts.extent <= 0 || facts.true_extent < 0 || facts.size == 0 {
        return None;
    }
    let in_place = a.sendbuf == consts::in_place();
    if a.recvbuf as *const c_void == consts::in_place() {
        return None;
    }
    let counts = nonneg(&a.counts)?;
    let (counts, displs) = match a.coll {
        Collective::Reduce | Collective::Allreduce => (counts, vec![]),
        _ => {
            if counts.len() != p {
                return None;
            }
            let displs = if a.coll == Collective::Allgatherv {
                nonneg(&a.displs)?
            } else {
                vec![]
            };
            (counts, displs)
        }
    };
    let mut commutative = true;
    if a.coll.reduces() {
        commutative = mpi_types::op_commutative(a.op).ok()?;
        mpi_types::op_accepts(a.op, a.dt, &facts).ok()?;
    }
    let null = |ptr: *const c_void, n: usize| ptr.is_null() && n > 0;
    // The same buffer as input and output without MPI_IN_PLACE is erroneous; the MPI decides
    // how to report it (Open MPI: MPI_ERR_BUFFER for allreduce).
    if !in_place && a.sendbuf == a.recvbuf as *const c_void && !a.sendbuf.is_null() {
        let is_root_or_all = a.coll != Collective::Reduce || a.root == rank as i64;
        if is_root_or_all {
            return None;
        }
    }
    match a.coll {
        Collective::Reduce => {
            if a.root < 0 || a.root >= p as i64 {
                return None;
            }
            let is_root = a.root as usize == rank;
            if in_place && !is_root {
                return None;
            }
            if (!in_place && null(a.sendbuf, counts[0])) || (is_root && null(a.recvbuf, counts[0]))
            {
                return None;
            }
        }
        Collective::Allreduce => {
            if (!in_place && null(a.sendbuf, counts[0])) || null(a.recvbuf, counts[0]) {
                return None;
            }
        }
        Collective::ReduceScatter => {
            let total: usize = counts.iter().sum();
            if total > c_int::MAX as usize
                || (!in_place && null(a.sendbuf, total))
                || null(a.recvbuf, counts[rank])
            {
                return None;
            }
        }
        Collective::Allgatherv => {
            let total: usize = counts.iter().sum();
            if total > 0 && a.recvbuf.is_null() {
                return None;
            }
            if !in_place {
                if a.sendcount < 0 || null(a.sendbuf, a.sendcount as usize) {
                    return None;
                }
                let sf = mpi_types::type_facts(a.sendtype).ok()?;
                if (a.sendcount as usize) * sf.size != counts[rank] * facts.size {
                    return None; // type signatures differ: the MPI reports it
                }
            }
        }
    }
    let (mut counts, mut displs) = (counts, displs);
    let bytes = if a.coll == Collective::Allgatherv {
        in_bytes(&mut counts, &mut displs, &facts)
    } else {
        None
    };
    let spec = CallSpec {
        coll: a.coll,
        p,
        rank,
        root: if a.coll == Collective::Reduce {
            a.root as usize
        } else {
            0
        },
        counts,
        displs,
        commutative,
        elem_bytes: if bytes.is_some() { 1 } else { facts.size },
        seg_elems: 0,
        params: state::global().table.model(),
        // `In` aliases `Out`: MPI_IN_PLACE, or (allgatherv) our block converted into the
        // receive buffer because the send type differs, or packed into the staging buffer
        // (see `run`).
        in_place: in_place
            || (a.coll == Collective::Allgatherv && (a.sendtype != a.dt || bytes == Some(true))),
    };
    Some(Valid {
        spec,
        facts: if bytes.is_some() { BYTE } else { facts },
        in_place,
        bytes,
        user: facts,
    })
}

/// The defect facts of a call, asked of the MPI only when a defect rule needs them.
struct ArgFacts<'a> {
    dt: MPI_Datatype,
    unequal: &'a dyn Fn() -> bool,
}

impl NativeFacts for ArgFacts<'_> {
    fn holes(&self) -> bool {
        mpi_types::type_facts(self.dt).map_or(false, |f| !f.contiguous())
    }
    fn true_lb_positive(&self) -> bool {
        mpi_types::true_lb(self.dt).map_or(false, |lb| lb > 0)
    }
    fn unequal_counts(&self) -> bool {
        (self.unequal)()
    }
}

/// The resolver's decision for a call (publishing the gate's cells for `p` on first use).
fn decide(call: &CallFacts, nf: &dyn NativeFacts) -> Result<Decision, Error> {
    let g = state::global();
    crate::gate::ensure(g, call.p);
    state::resolver(g, call.coll, call.p).resolve(call, nf)
}

/// The facts of a call every rank shares, from its arguments (`None`: an op the MPI rejects;
/// the full path reports it).
fn call_facts(a: &Args, p: usize, bytes: usize) -> Option<CallFacts> {
    let commutative = if a.coll.reduces() {
        mpi_types::op_commutative(a.op).ok()?
    } else {
        true
    };
    Some(CallFacts {
        coll: a.coll,
        p,
        bytes,
        commutative,
        in_place: a.sendbuf == consts::in_place(),
        root: if a.coll == Collective::Reduce {
            a.root.max(0) as usize
        } else {
            0
        },
    })
}

/// Which algorithm runs, and why (for the debug log and warnings): the resolver with this
/// process's overrides; a forced algorithm that cannot serve the call warns once under
/// `PCOLL_FALLBACK=warn` (a table rule's fallback is only logged at debug level).
fn choose(a: &Args, spec: &mut CallSpec) -> Result<(Algorithm, String), c_int> {
    let call = CallFacts {
        coll: spec.coll,
        p: spec.p,
        bytes: spec.bytes(),
        commutative: spec.commutative,
        in_place: a.sendbuf == consts::in_place(),
        root: spec.root,
    };
    let unequal = || a.counts.windows(2).any(|w| w[0] != w[1]);
    let nf = ArgFacts {
        dt: a.dt,
        unequal: &unequal,
    };
    let d = match decide(&call, &nf) {
        Ok(d) => d,
        Err(e) => {
            log::error!("{e}");
            return Err(if spec.commutative {
                consts::ERR_ARG()
            } else {
                consts::ERR_OP()
            });
        }
    };
    // The reason is only formatted when somebody reads it (a warning, the debug log).
    let why = if d.warn || log::log_enabled!(log::Level::Debug) {
        d.reason(&call, &state::global().table)
    } else {
        String::new()
    };
    if d.warn {
        warn_once(
            spec.coll,
            d.fallback.as_ref().map_or(d.algorithm, |f| f.asked),
            &why,
        );
    }
    spec.seg_elems = d.seg_elems(spec.elem_bytes);
    Ok((d.algorithm, why))
}

/// Debug log of a call sent to native on a fast path.
fn log_native(call: &CallFacts, d: &Decision) {
    if log::log_enabled!(log::Level::Debug) {
        log::debug!(
            "{} p={} bytes={}: native ({}; arguments not examined)",
            call.coll,
            call.p,
            call.bytes,
            d.reason(call, &state::global().table)
        );
    }
}

/// Fast path: if the request is `native`, serve it without validating anything (the MPI
/// validates its own arguments). Needs only the communicator size and the type size.
fn native_requested(a: &Args) -> Option<usize> {
    let (mut p, mut size): (c_int, MPI_Count) = (0, 0);
    // SAFETY: out-pointers to locals; invalid handles give error codes, which send the call
    // to the full path (and from there to native).
    unsafe {
        if PMPI_Comm_size(a.comm, &mut p) != consts::SUCCESS()
            || PMPI_Type_size_x(a.dt, &mut size) != consts::SUCCESS()
        {
            return None;
        }
    }
    let elems: i64 = match a.coll {
        Collective::Reduce | Collective::Allreduce => *a.counts.first()?,
        _ => a.counts.iter().sum(),
    };
    if elems < 0
        || size < 0
        || a.counts.iter().any(|&c| c < 0)
        || (a.coll == Collective::Allgatherv && a.sendcount < 0)
    {
        return None; // bad counts: the full path reports them (some MPIs crash on them)
    }
    if cfg!(pcoll_mpich) && a.coll.reduces() && mpi_types::logical_op_on_float(a.op, a.dt) {
        return None; // MPICH aborts on it: the full path reports MPI_ERR_OP
    }
    if a.coll == Collective::Reduce && a.sendbuf == consts::in_place() {
        let mut rank: c_int = -1;
        // SAFETY: out-pointer; the communicator answered PMPI_Comm_size above.
        unsafe { PMPI_Comm_rank(a.comm, &mut rank) };
        if a.root != rank as i64 {
            return None; // in place at a non-root: erroneous, the full path reports it
        }
    }
    if elems > 0 && (a.sendbuf.is_null() || a.recvbuf.is_null()) {
        // Possibly a NULL buffer error (or MPI_BOTTOM): the full path decides. A NULL
        // receive buffer at a non-root of a reduce is fine and common.
        let mut rank: c_int = -1;
        // SAFETY: out-pointer; the communicator answered PMPI_Comm_size above.
        unsafe { PMPI_Comm_rank(a.comm, &mut rank) };
        let recv_matters = a.coll != Collective::Reduce || a.root == rank as i64;
        if a.sendbuf.is_null() || (recv_matters && a.recvbuf.is_null()) {
            return None;
        }
    }
    let bytes = elems as usize * size as usize;
    let call = call_facts(a, p as usize, bytes)?;
    let unequal = || a.counts.windows(2).any(|w| w[0] != w[1]);
    let nf = ArgFacts {
        dt: a.dt,
        unequal: &unequal,
    };
    let d = decide(&call, &nf).ok()?;
    (d.algorithm == Algorithm::Native).then(|| {
        log_native(&call, &d);
        bytes
    })
}

/// The native fast path of `MPI_Reduce_scatter` / `MPI_Allgatherv` (C, large-count and
/// Fortran entries), taken before any `Args` exists: the per-rank counts are read where the
/// caller keeps them (no copy, no allocation) and only `PMPI_Comm_test_inter`,
/// `PMPI_Comm_size` and `PMPI_Type_size_x` are asked. `Some(rc)`: the call went to native
/// (exactly when [`native_requested`] on the full path would have sent it there, with the
/// same stats record); `None`: build the `Args` and call [`collective`], which decides
/// everything else (bad input, intercommunicators, pcoll's algorithms).
///
/// # Safety
/// `recvcounts` is null or points to comm-size readable values (MPI's rule for both calls).
#[allow(clippy::too_many_arguments)]
pub unsafe fn vector_native<T: Copy + Into<i64>>(
    coll: Collective,
    sendbuf: *const c_void,
    recvbuf: *const c_void,
    recvcounts: *const T,
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
    if comm == consts::comm_null() || recvcounts.is_null() {
        return None;
    }
    let t0 = stat_time();
    let (mut inter, mut p, mut size): (c_int, c_int, MPI_Count) = (0, 0, 0);
    // SAFETY: out-pointers to locals; an invalid handle gives an error code (full path).
    unsafe {
        if PMPI_Comm_test_inter(comm, &mut inter) != consts::SUCCESS()
            || inter != 0
            || PMPI_Comm_size(comm, &mut p) != consts::SUCCESS()
            || PMPI_Type_size_x(dt, &mut size) != consts::SUCCESS()
        {
            return None;
        }
    }
    if p <= 0 || size < 0 || (coll == Collective::Allgatherv && sendcount < 0) {
        return None;
    }
    if cfg!(pcoll_mpich)
        && coll == Collective::ReduceScatter
        && mpi_types::logical_op_on_float(op, dt)
    {
        return None; // MPICH aborts on it: the full path reports MPI_ERR_OP
    }
    // SAFETY: the caller's guarantee: p readable counts.
    let counts = unsafe { std::slice::from_raw_parts(recvcounts, p as usize) };
    let mut elems: i64 = 0;
    for &c in counts {
        let c: i64 = c.into();
        if c < 0 {
            return None; // bad counts: the full path reports them (some MPIs crash on them)
        }
        elems = elems.wrapping_add(c);
    }
    if elems < 0 || (elems > 0 && (sendbuf.is_null() || recvbuf.is_null())) {
        return None; // possibly a NULL buffer error (or MPI_BOTTOM): the full path decides
    }
    let bytes = elems as usize * size as usize;
    let commutative = if coll.reduces() {
        mpi_types::op_commutative(op).ok()?
    } else {
        true
    };
    let call = CallFacts {
        coll,
        p: p as usize,
        bytes,
        commutative,
        in_place: sendbuf == consts::in_place(),
        root: 0,
    };
    let unequal = || counts.windows(2).any(|w| w[0].into() != w[1].into());
    let nf = ArgFacts {
        dt,
        unequal: &unequal,
    };
    let d = decide(&call, &nf).ok()?;
    if d.algorithm != Algorithm::Native {
        return None;
    }
    let rc = native();
    state::record(coll, Algorithm::Native, bytes, stat_time() - t0);
    log_native(&call, &d);
    Some(rc)
}

fn warn_once(coll: Collective, alg: Algorithm, msg: &str) {
    use std::sync::atomic::{AtomicU64, Ordering};
    static SEEN: AtomicU64 = AtomicU64::new(0);
    let bit = 1u64 << (coll.index() * 8 + Algorithm::ALL.iter().position(|a| *a == alg).unwrap());
    if SEEN.fetch_or(bit, Ordering::Relaxed) & bit == 0 {
        log::warn!("{coll}: {msg}");
    }
}

fn error_code(e: &Error) -> c_int {
    match e {
        Error::Mpi(c, _) => *c,
        Error::NoMem(_) => consts::ERR_NO_MEM(),
        Error::Arg(..) => consts::ERR_ARG(),
        Error::Unsupported(_) | Error::Internal(_) => consts::ERR_INTERN(),
    }
}

/// Raise `code` on the user's communicator (its error handler decides: return or abort).
fn raise(comm: MPI_Comm, code: c_int) -> c_int {
    // SAFETY: `comm` was validated as a communicator before any error can come from us.
    unsafe { PMPI_Comm_call_errhandler(comm, code) };
    code
}

/// Serve one collective call. `native` performs the same call with `PMPI_`.
pub fn collective(a: &Args, native: &mut dyn FnMut() -> c_int) -> c_int {
    if state::disabled() {
        return native();
    }
    let t0 = stat_time();
    if let Some(bytes) = native_requested(a) {
        let rc = native();
        state::record(a.coll, Algorithm::Native, bytes, stat_time() - t0);
        return rc;
    }
    if let Some(e) = own_error(a) {
        log::error!("{}: invalid argument: {}", a.coll, e.what);
        // The other ranks may have valid arguments and go on into the collective (native or
        // pcoll) and wait for this one: take part with scratch standing in for the NULL
        // buffer, then report the error here only.
        if let Some(si) = e.stand_in {
            if standin::participate(a, si, collective) {
                log::debug!("{}: took part with a stand-in buffer", a.coll);
            }
        }
        return raise(a.comm, e.code);
    }
    let Some(mut v) = validate(a) else {
        if let Some(code) = op_type_error(a) {
            // Every rank passes the same op and type, so every rank returns here.
            log::error!("{}: the op is not defined for this datatype", a.coll);
            return raise(a.comm, code);
        }
        log::debug!("{}: arguments pcoll does not serve; native call", a.coll);
        return native();
    };
    let bytes = v.spec.bytes();
    let (alg, why) = match choose(a, &mut v.spec) {
        Ok(x) => x,
        Err(code) => return raise(a.comm, code),
    };
    if alg == Algorithm::Native {
        let rc = native();
        state::record(a.coll, alg, bytes, stat_time() - t0);
        log::debug!("{} p={} bytes={bytes}: native ({why})", a.coll, v.spec.p);
        return rc;
    }
    let result = run(a, &v, alg);
    recycle(std::mem::take(&mut v.spec.counts));
    recycle(std::mem::take(&mut v.spec.displs));
    match result {
        Ok(rounds) => {
            let dt = stat_time() - t0;
            state::record(a.coll, alg, bytes, dt);
            log::debug!(
                "{} p={} rank={} bytes={bytes} root={}: {alg} ({why}), segment {}, {rounds} rounds, {:.1} us",
                a.coll,
                v.spec.p,
                v.spec.rank,
                v.spec.root,
                match v.spec.seg_elems {
                    _ if !pcoll::segment::uses_segment(alg, a.coll) => "not used".to_string(),
                    0 => "from the model".to_string(),
                    n => format!("{} B", n * v.spec.elem_bytes),
                },
                dt * 1e6
            );
            consts::SUCCESS()
        }
        Err(e) => {
            log::error!("{} {alg}: {e}", a.coll);
            raise(a.comm, error_code(&e))
        }
    }
}

fn run(a: &Args, v: &Valid, alg: Algorithm) -> Result<usize, Error> {
    let st = comm::state(a.comm, v.spec.p, v.spec.rank)
        .map_err(|c| Error::Mpi(c, "communicator setup".into()))?;
    let spec = &v.spec;
    let prog = st.program(alg, spec, || {
        if spec.total() == 0 {
            return Ok(pcoll::Program::new());
        }
        build(alg, spec)
    })?;
    let ext = v.facts.extent;
    let dt = if v.bytes.is_some() {
        consts::dt_byte()
    } else {
        a.dt
    };
    // Allgatherv with a receive type with holes: the blocks meet in a packed staging buffer.
    let mut staging = None;
    let (in_base, out_base): (*const c_void, *mut c_void) = match spec.coll {
        Collective::Allgatherv if v.bytes == Some(true) => {
            let mut buf = st.pool.take(spec.total())?;
            let base = buf.ptr();
            let own = base.wrapping_add(spec.displs[spec.rank]) as *mut c_void;
            let (src, n, t) = if v.in_place {
                let at = (a.recvbuf as *mut u8)
                    .wrapping_offset(a.displs[spec.rank] as isize * v.user.extent)
                    as *const c_void;
                (at, a.counts[spec.rank], a.dt)
            } else {
                (a.sendbuf, a.sendcount, a.sendtype)
            };
            let bytes = spec.counts[spec.rank] as c_int;
            // SAFETY: `src` holds `n` elements of `t` (validated arguments); `own` has `bytes`
            // bytes, the packed size of the block (its signature's size).
            unsafe { pack::pack(src, n as c_int, t, own, bytes, st.shadow)? };
            staging = Some(buf);
            (own as *const c_void, base as *mut c_void)
        }
        Collective::Allgatherv => {
            let own = (a.recvbuf as *mut u8).wrapping_offset(spec.displs[spec.rank] as isize * ext)
                as *mut c_void;
            if v.in_place {
                (own as *const c_void, a.recvbuf)
            } else if a.sendtype != a.dt {
                // Different (but matching) type signatures: convert our block into the receive
                // buffer's layout once, then serve the call as in-place.
                // SAFETY: validated arguments: the send buffer holds `sendcount` elements of
                // `sendtype`, our receive block `counts[rank]` elements of the receive type.
                unsafe {
                    pack::convert(
                        a.sendbuf,
                        a.sendcount as c_int,
                        a.sendtype,
                        own,
                        a.counts[spec.rank] as c_int,
                        a.dt,
                        st.shadow,
                    )?
                };
                (own as *const c_void, a.recvbuf)
            } else {
                (a.sendbuf, a.recvbuf)
            }
        }
        _ => (
            if v.in_place {
                a.recvbuf as *const c_void
            } else {
                a.sendbuf
            },
            a.recvbuf,
        ),
    };
    let mut t = PmpiTransport::new(
        &st.pool,
        st.shadow,
        dt,
        a.op,
        v.facts,
        spec.commutative,
        in_base,
        out_base,
        chunking(&v.facts),
    );
    let r = exec::run(&prog, &mut t);
    drop(t);
    if let Some(buf) = staging {
        let out = r.and_then(|()| {
            for j in 0..spec.p {
                let from = buf.ptr_const().wrapping_add(spec.displs[j]);
                let to = (a.recvbuf as *mut u8)
                    .wrapping_offset(a.displs[j] as isize * v.user.extent)
                    as *mut c_void;
                // SAFETY: `from` holds the block's packed bytes; `to` the user's receive block.
                unsafe {
                    pack::unpack(
                        from as *const c_void,
                        spec.counts[j] as c_int,
                        to,
                        a.counts[j] as c_int,
                        a.dt,
                        st.shadow,
                    )?
                };
            }
            Ok(())
        });
        st.pool.give(buf);
        out?;
    } else {
        r?;
    }
    Ok(prog.rounds)
}

/// Chunk bytes and the largest chunked message when the environment does not say: below
/// the eager limit of the MPI's shared-memory transport (Open MPI 4.1 vader: 4 KiB with the
/// header; MPICH 4.0 ch4 posix: 16 KiB cells, where chunks of half a cell measured fastest),
/// and as far as chunks measured faster than one rendezvous message on this machine.
const CHUNK_DEFAULT: (usize, usize) = if cfg!(pcoll_mpich) {
    (7680, 2 << 20)
} else {
    (3840, 256 << 10)
};

/// How this call's messages are split (`PmpiTransport::post`). Every rank must split a
/// message at the same bytes: reductions pass the same datatype everywhere (the standard
/// says so), and allgatherv runs in bytes (see [`in_bytes`]).
fn chunking(f: &TypeFacts) -> crate::pmpi::Chunking {
    let g = state::global();
    let chunk = g.cfg.chunk.unwrap_or(CHUNK_DEFAULT.0);
    let max_bytes = g.cfg.chunk_max.unwrap_or(CHUNK_DEFAULT.1);
    let size = f.size;
    if chunk == 0 || size == 0 || size > chunk {
        return Default::default();
    }
    crate::pmpi::Chunking {
        elems: chunk / size,
        max_bytes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(size: usize, extent: isize) -> TypeFacts {
        TypeFacts {
            size,
            lb: 0,
            extent,
            true_lb: 0,
            true_extent: extent,
        }
    }

    #[test]
    fn counts_keep_small_arrays_inline() {
        for n in [0usize, 1, 5, SMALL, SMALL + 1, 40] {
            let v: Vec<i64> = (0..n as i64).map(|x| x * 3 - 7).collect();
            let c: Counts = v.iter().copied().collect();
            assert_eq!(&*c, &v[..], "n={n}");
            assert_eq!(matches!(c, Counts::Many(_)), n > SMALL, "n={n}");
            let from_i32: Counts = v.iter().map(|&x| x as i32).collect();
            assert_eq!(&*from_i32, &v[..]);
        }
        assert!(Counts::EMPTY.is_empty());
    }

    #[test]
    fn allgatherv_in_bytes() {
        // No holes: bytes in place, displacements scaled.
        let (mut c, mut d) = (vec![3, 0, 5], vec![10, 2, 0]);
        assert_eq!(in_bytes(&mut c, &mut d, &facts(8, 8)), Some(false));
        assert_eq!((c, d), (vec![24, 0, 40], vec![80, 16, 0]));
        // Holes: packed one after another in rank order.
        let (mut c, mut d) = (vec![3, 0, 5], vec![10, 2, 0]);
        assert_eq!(in_bytes(&mut c, &mut d, &facts(6, 8)), Some(true));
        assert_eq!((c, d), (vec![18, 0, 30], vec![0, 18, 18]));
        // Two ranks describing the same bytes with different types agree on every block.
        let (mut a, mut da) = (vec![12, 6], vec![0, 12]);
        let (mut b, mut db) = (vec![2, 1], vec![0, 2]);
        in_bytes(&mut a, &mut da, &facts(6, 8));
        in_bytes(&mut b, &mut db, &facts(36, 40));
        assert_eq!(a, b);
        // Too many bytes for an int count: served in elements.
        let (mut c, mut d) = (vec![1 << 30, 1 << 30], vec![0, 1 << 30]);
        assert_eq!(in_bytes(&mut c, &mut d, &facts(2, 2)), None);
    }
}
