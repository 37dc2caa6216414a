//! The one path every intercepted collective takes:
//! validate -> (invalid or unservable: the native `PMPI_` call, which reports errors exactly as
//! the MPI does) -> choose an algorithm (forced > table > default, preconditions, fallback
//! policy) -> build (or reuse) the program -> run it over `PmpiTransport` on the shadow
//! communicator -> stats.

use crate::comm;
use crate::consts;
use crate::mpi_types::{self, TypeFacts};
use crate::pmpi::PmpiTransport;
use crate::state;
use mpi_sys::*;
use pcoll::algo::{build, Algorithm, CallSpec, Collective};
use pcoll::{exec, Error};
use std::os::raw::{c_int, c_void};

/// Counts of a call without a heap allocation for the common single-count case.
pub enum Counts {
    One([i64; 1]),
    Many(Vec<i64>),
}

impl std::ops::Deref for Counts {
    type Target = [i64];
    fn deref(&self) -> &[i64] {
        match self {
            Counts::One(c) => c,
            Counts::Many(v) => v,
        }
    }
}

impl From<Vec<i64>> for Counts {
    fn from(v: Vec<i64>) -> Counts {
        Counts::Many(v)
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
    pub displs: Vec<i64>,
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
    facts: TypeFacts,
    in_place: bool,
}

fn nonneg(v: &[i64]) -> Option<Vec<usize>> {
    v.iter()
        .map(|&x| {
            if x < 0 || x > c_int::MAX as i64 {
                None
            } else {
                Some(x as usize)
            }
        })
        .collect()
}

/// Bad input that some native MPI does not check and crashes on (MPICH 4.0.2: a negative
/// count in reduce/allreduce; Open MPI 4.1.4: NULL buffers with count > 0, negative
/// allgatherv counts): pcoll reports it with the error class the standard names, through
/// the communicator's error handler, instead of passing it on. Only for a valid
/// intracommunicator; everything else is left to the MPI.
fn own_error(a: &Args) -> Option<(c_int, String)> {
    let (p, rank) = comm::facts(a.comm).ok()??;
    if let Some(c) = a.counts.iter().find(|&&c| c < 0) {
        return Some((consts::ERR_COUNT(), format!("negative count {c}")));
    }
    let in_place = a.sendbuf == consts::in_place();
    if a.coll == Collective::Allgatherv && !in_place && a.sendcount < 0 {
        return Some((
            consts::ERR_COUNT(),
            format!("negative sendcount {}", a.sendcount),
        ));
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
    if !counts_ok {
        return None;
    }
    let total: i64 = a.counts.iter().sum();
    let (send_n, recv_n, send_dt) = match a.coll {
        Collective::Reduce => (total, if a.root == rank as i64 { total } else { 0 }, a.dt),
        Collective::Allreduce => (total, total, a.dt),
        Collective::ReduceScatter => (total, a.counts[rank], a.dt),
        Collective::Allgatherv => (a.sendcount, total, a.sendtype),
    };
    if !in_place && null(a.sendbuf, send_n, send_dt) {
        return Some((
            consts::ERR_BUFFER(),
            "NULL send buffer with a non-zero count".into(),
        ));
    }
    if null(a.recvbuf as *const c_void, recv_n, a.dt) {
        return Some((
            consts::ERR_BUFFER(),
            "NULL receive buffer with a non-zero count".into(),
        ));
    }
    None
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
        elem_bytes: facts.size,
        seg_elems: 0,
        params: state::global().table.model(),
        // `In` aliases `Out`: MPI_IN_PLACE, or (allgatherv) our block converted into the
        // receive buffer because the send type differs (see `run`).
        in_place: in_place || (a.coll == Collective::Allgatherv && a.sendtype != a.dt),
    };
    Some(Valid {
        spec,
        facts,
        in_place,
    })
}

/// The algorithm asked for before preconditions (run-time force > environment > table >
/// binomial). Depends only on facts every rank shares (collective, p, bytes).
fn requested(coll: Collective, p: usize, bytes: usize) -> Algorithm {
    let g = state::global();
    state::forced(coll)
        .or(g.cfg.forced(coll))
        .or_else(|| g.table.lookup(coll, p, bytes).map(|c| c.algorithm))
        .unwrap_or(pcoll::config::DEFAULT_ALGORITHM)
}

/// Native defects pcoll routes around (found by c-tests/ and verify/; see their READMEs). A
/// call matching one never goes to native, even if the table says so. Decided from facts
/// every rank shares (collective, root, size, datatype, op, in-place for reduce_scatter), so
/// all ranks agree.
/// * MPICH 4.0.2: `MPI_Reduce` with `MPI_IN_PLACE` at a root other than 0 above 2048 bytes
///   crashes (any reduce of that shape is kept away from native).
/// * MPICH 4.0.2: `MPI_Reduce_scatter` with a non-commutative op on a datatype with holes
///   corrupts the heap; in place with unequal counts above ~512 KiB it fails an assertion.
/// * MPICH 4.0.2: `MPI_Allgatherv` on a one-process communicator ignores `displs[0]`.
/// * Open MPI 4.1.4: `MPI_Allreduce` of a datatype whose true lower bound is > 0 writes past
///   its scratch buffer (ring algorithm).
fn native_unsafe(a: &Args, bytes: usize) -> bool {
    let facts = || mpi_types::type_facts(a.dt).ok();
    if cfg!(pcoll_mpich) {
        match a.coll {
            Collective::Reduce => a.root != 0 && bytes > 2048,
            // MPICH 4.0.2 ignores displs[0] on a one-process communicator.
            Collective::Allgatherv => {
                let mut p: c_int = 0;
                // SAFETY: out-pointer; an invalid communicator leaves p = 0 (no match).
                unsafe { PMPI_Comm_size(a.comm, &mut p) };
                p == 1
            }
            Collective::ReduceScatter => {
                let holes = facts().map_or(false, |f| !f.contiguous());
                let noncomm = mpi_types::op_commutative(a.op).map_or(false, |c| !c);
                let unequal = a.counts.windows(2).any(|w| w[0] != w[1]);
                (holes && noncomm)
                    || (a.sendbuf == consts::in_place() && unequal && bytes > (512 << 10))
            }
            _ => false,
        }
    } else {
        a.coll == Collective::Allreduce && facts().map_or(false, |f| f.true_lb > 0)
    }
}

/// Which algorithm runs, and why (for the debug log): preconditions and fallback policy
/// (`pcoll::config::choose_forced`), then the native-defect rule.
fn choose(a: &Args, spec: &mut CallSpec) -> Result<(Algorithm, String), c_int> {
    let g = state::global();
    let coll = spec.coll;
    let d = match pcoll::config::choose_forced(&g.cfg, &g.table, spec, state::forced(coll)) {
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
    let mut alg = d.algorithm;
    let mut why = d
        .reason
        .clone()
        .unwrap_or_else(|| d.source.describe(coll, &g.table));
    if d.warn {
        warn_once(coll, d.rejected.map_or(alg, |r| r.0), &why);
    }
    if alg == Algorithm::Native && native_unsafe(a, spec.bytes()) {
        alg = Algorithm::Binomial;
        why =
            "native MPICH reduce at root != 0 is unsafe (in-place defect); binomial instead".into();
    }
    spec.seg_elems = d.seg_elems(spec.elem_bytes);
    Ok((alg, why))
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
    let alg = requested(a.coll, p as usize, bytes);
    (alg == Algorithm::Native && !native_unsafe(a, bytes)).then_some(bytes)
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
    if let Some((code, what)) = own_error(a) {
        log::error!("{}: invalid argument: {what}", a.coll);
        // The other ranks may have valid arguments and go on into pcoll, whose first call on
        // a communicator makes its shadow (a collective PMPI_Comm_dup): take part in that
        // first, so that an error on one rank does not hang the others there.
        if let Ok(Some((p, rank))) = comm::facts(a.comm) {
            let _ = comm::state(a.comm, p, rank);
        }
        return raise(a.comm, code);
    }
    let Some(mut v) = validate(a) else {
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
    match run(a, &v, alg) {
        Ok(rounds) => {
            let dt = stat_time() - t0;
            state::record(a.coll, alg, bytes, dt);
            log::debug!(
                "{} p={} rank={} bytes={bytes} root={}: {alg} ({why}), {rounds} rounds, {:.1} us",
                a.coll,
                v.spec.p,
                v.spec.rank,
                v.spec.root,
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
    let key = comm::ProgKey {
        alg,
        coll: spec.coll,
        root: spec.root,
        seg_elems: spec.seg_elems,
        commutative: spec.commutative,
        elem_bytes: spec.elem_bytes,
        counts: spec.counts.clone(),
        displs: spec.displs.clone(),
        in_place: spec.in_place,
    };
    let prog = st.program(key, || {
        if spec.total() == 0 {
            return Ok(pcoll::Program::new());
        }
        build(alg, spec)
    })?;
    let ext = v.facts.extent;
    let (in_base, out_base): (*const c_void, *mut c_void) = match spec.coll {
        Collective::Allgatherv => {
            let own = (a.recvbuf as *mut u8).wrapping_offset(spec.displs[spec.rank] as isize * ext)
                as *mut c_void;
            if v.in_place {
                (own as *const c_void, a.recvbuf)
            } else if a.sendtype != a.dt {
                // Different (but matching) type signatures: convert our block into the receive
                // buffer's layout once, then serve the call as in-place.
                convert_into(
                    a.sendbuf,
                    a.sendcount,
                    a.sendtype,
                    own,
                    spec.counts[spec.rank],
                    a.dt,
                    st.shadow,
                )?;
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
        a.dt,
        a.op,
        v.facts,
        spec.commutative,
        in_base,
        out_base,
    );
    exec::run(&prog, &mut t)?;
    Ok(prog.rounds)
}

/// Copy `scount` elements of `stype` into `rcount` elements of `rtype` (same signature).
fn convert_into(
    src: *const c_void,
    scount: i64,
    stype: MPI_Datatype,
    dst: *mut c_void,
    rcount: usize,
    rtype: MPI_Datatype,
    comm: MPI_Comm,
) -> Result<(), Error> {
    let (sc, rc) = (scount as c_int, rcount as c_int);
    let mut size: c_int = 0;
    // SAFETY: sizes and pack/unpack over the user's buffers with their own datatypes; the
    // packed buffer has MPI_Pack_size bytes.
    unsafe {
        let r = PMPI_Pack_size(sc, stype, comm, &mut size);
        if r != consts::SUCCESS() {
            return Err(Error::Mpi(r, "MPI_Pack_size".into()));
        }
        let mut buf = vec![0u8; size.max(1) as usize];
        let mut pos: c_int = 0;
        let r = PMPI_Pack(
            src,
            sc,
            stype,
            buf.as_mut_ptr() as *mut c_void,
            size,
            &mut pos,
            comm,
        );
        if r != consts::SUCCESS() {
            return Err(Error::Mpi(r, "MPI_Pack".into()));
        }
        let mut pos2: c_int = 0;
        let r = PMPI_Unpack(
            buf.as_ptr() as *const c_void,
            size,
            &mut pos2,
            dst,
            rc,
            rtype,
            comm,
        );
        if r != consts::SUCCESS() {
            return Err(Error::Mpi(r, "MPI_Unpack".into()));
        }
    }
    Ok(())
}
