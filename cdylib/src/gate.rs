//! The native gate (`shim/pcoll_gate.c`): the C entry points of the collectives ask it
//! first, and it forwards a call to the MPI's own collective without entering the Rust code
//! when the decision is `native` for the call's (collective, p, bytes) and the arguments are
//! plain. This module publishes the decision it needs — for each collective and p up to
//! [`GATE_P`], the byte ranges that go native ([`pcoll::decide::Resolver::native_ranges`],
//! at root 0; published the first time a call of that collective and size takes the Rust
//! path), and the native-defect guards ([`pcoll::decide::defects`]; a table that reads the
//! root adds one that declines every other root) — and adds the gate's counts to pcoll's
//! stats. The gate stays closed (every call takes the Rust path) with `PCOLL_DISABLE=1`
//! (the Rust path is a plain forward then), with `PCOLL_STATS=1` (timing is done there),
//! with `PCOLL_LEARN` (the learner counts calls) and with debug logging (`PCOLL_LOG=debug`
//! shows every decision, native ones included).

use crate::state::Global;
use mpi_sys::{MPI_Comm, MPI_Datatype, MPI_Op};
use pcoll::config::Config;
use pcoll::decide::defects::{self, Guard};
use pcoll::{Algorithm, Collective, Pick};
use std::os::raw::{c_int, c_uint, c_ulonglong, c_void};
use std::sync::atomic::{AtomicBool, Ordering};

/// Largest communicator the gate serves (`PCOLL_GATE_P` in the C file).
pub const GATE_P: usize = 64;
/// Ranges per (collective, p) the gate holds (`PCOLL_GATE_R`); a cell with more declines.
const GATE_R: usize = 8;
/// What a gate function returns when it did not make the call (`PCOLL_GATE_DECLINED`).
pub const DECLINED: c_int = -0x7ffe1234;
/// The gate's modes per collective (`PCOLL_MODE_*`): see [`set_forced`].
const MODE_CELLS: c_int = 0;
const MODE_NATIVE: c_int = 1;
const MODE_DECLINE: c_int = 2;

extern "C" {
    fn pcoll_gate_passthrough();
    fn pcoll_gate_close();
    fn pcoll_gate_open();
    fn pcoll_gate_hold(held: c_int);
    fn pcoll_gate_want(comm: MPI_Comm, on: c_int);
    fn pcoll_gate_guard(coll: c_int, flags: c_uint, root_above: c_ulonglong);
    fn pcoll_gate_mode(coll: c_int, mode: c_int);
    #[cfg(test)]
    fn pcoll_gate_abi(what: c_int) -> i64;
    fn pcoll_gate_set(
        coll: c_int,
        p: c_int,
        n: c_int,
        lo: *const c_ulonglong,
        hi: *const c_ulonglong,
    );
    fn pcoll_gate_set_nb(
        coll: c_int,
        p: c_int,
        n: c_int,
        lo: *const c_ulonglong,
        hi: *const c_ulonglong,
    );
    fn pcoll_gate_memo_gen() -> c_uint;
    fn pcoll_gate_nb_reduce_like(
        coll: c_int,
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        count: c_int,
        dt: MPI_Datatype,
        op: MPI_Op,
        root: c_int,
        comm: MPI_Comm,
    ) -> c_int;
    fn pcoll_gate_keep(
        coll: c_int,
        sendbuf: *const c_void,
        sendcount: c_int,
        recvbuf: *mut c_void,
        counts: *const c_int,
        count: c_int,
        dt: MPI_Datatype,
        op: MPI_Op,
        root: c_int,
        comm: MPI_Comm,
        gen: c_uint,
        tally: *mut c_ulonglong,
        limit: c_ulonglong,
    ) -> c_int;
    pub(crate) fn pcoll_gate_nb_reduce_scatter(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        counts: *const c_int,
        dt: MPI_Datatype,
        op: MPI_Op,
        comm: MPI_Comm,
    ) -> c_int;
    pub(crate) fn pcoll_gate_nb_reduce_scatter_block(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        count: c_int,
        dt: MPI_Datatype,
        op: MPI_Op,
        comm: MPI_Comm,
    ) -> c_int;
    pub(crate) fn pcoll_gate_nb_allgatherv(
        sendbuf: *const c_void,
        sendcount: c_int,
        recvbuf: *mut c_void,
        counts: *const c_int,
        recvtype: MPI_Datatype,
        comm: MPI_Comm,
    ) -> c_int;
    pub(crate) fn pcoll_gate_nb_allgather(
        sendbuf: *const c_void,
        sendcount: c_int,
        recvbuf: *mut c_void,
        recvcount: c_int,
        recvtype: MPI_Datatype,
        comm: MPI_Comm,
    ) -> c_int;
    pub(crate) fn pcoll_gate_nb_bcast(
        buf: *mut c_void,
        count: c_int,
        dt: MPI_Datatype,
        root: c_int,
        comm: MPI_Comm,
    ) -> c_int;
    fn pcoll_gate_counts(coll: c_int, calls: *mut c_ulonglong, bytes: *mut c_ulonglong);
    fn pcoll_gate_reset_counts(coll: c_int);
    fn pcoll_gate_hit(coll: c_int) -> c_int;
    fn pcoll_gate_clear_hit(coll: c_int);
}

/// Bits of the guards a collective's gate cell checks (`PCOLL_GUARD_*` in the C file): one per
/// [`Guard`] kind.
fn guard_bit(g: Guard) -> u32 {
    match g {
        Guard::RootNonzeroAbove(_) => 1,
        Guard::OneRank => 2,
        Guard::TrueLbNonzero => 4,
        Guard::UserOp => 8,
        Guard::InPlace => 16,
    }
}

/// The (collective, communicator size) cells published (the Rust path publishes one the first
/// time it sees it: [`ensure`]).
static PUBLISHED: [[AtomicBool; GATE_P + 1]; Collective::ALL.len()] =
    [const { [const { AtomicBool::new(false) }; GATE_P + 1] }; Collective::ALL.len()];
/// One publisher at a time.
static WRITER: parking_lot::Mutex<()> = parking_lot::Mutex::new(());

/// At start-up: publish the native-defect guards of every collective (from
/// [`pcoll::decide::defects`], the only list of them) and open the gate, unless the Rust path
/// must see every call. Cells of every p start empty (declined) until [`ensure`] fills them.
pub fn open(cfg: &Config, mpi: pcoll::mpi::Mpi, table: &pcoll::tuning::Table) {
    // SAFETY: plain C calls on the gate's own static state.
    unsafe { pcoll_gate_close() };
    if !wanted(cfg) {
        return;
    }
    for coll in Collective::ALL {
        let mut flags = 0u32;
        let mut root_above: c_ulonglong = 0;
        for g in defects::guards(mpi, coll) {
            flags |= guard_bit(g);
            if let Guard::RootNonzeroAbove(b) = g {
                root_above = b as c_ulonglong;
            }
        }
        // The cells hold root 0's native sizes (`Resolver::native_ranges`): from the size
        // where a rule reads the root, a root other than 0 is declined (`bytes > root_above`).
        if let Some(lo) = table.root_from(coll) {
            let above = lo.saturating_sub(1) as c_ulonglong;
            let bit = guard_bit(Guard::RootNonzeroAbove(0));
            root_above = if flags & bit != 0 {
                root_above.min(above)
            } else {
                above
            };
            flags |= bit;
        }
        // SAFETY: as above.
        unsafe { pcoll_gate_guard(coll.index() as c_int, flags, root_above) };
    }
    // SAFETY: as above.
    unsafe { pcoll_gate_open() };
}

/// Decline every call while `held` (one of pcoll's non-blocking schedules runs:
/// [`crate::nbc::before_blocking`] must see the blocking calls).
pub fn hold(held: bool) {
    // SAFETY: a plain C call on the gate's own static state.
    unsafe { pcoll_gate_hold(held as c_int) };
}

/// Decline every blocking call on `comm` while `on` (`shim/pcoll_want.c`: a non-blocking
/// call wanted its shadow or window made at its next blocking collective, which must reach
/// the Rust path on every rank: `CommState::make_wanted`). Called under the wanted list's
/// lock, one writer at a time.
pub fn want(comm: MPI_Comm, on: bool) {
    // SAFETY: a plain C call on the gate's own static state; the handle is only compared.
    unsafe { pcoll_gate_want(comm, on as c_int) };
}

/// Publish the cells of `coll` at communicator size `p` (once; the first call of each through
/// the Rust path does it, later calls can take the gate). One collective at a time: the
/// model's search of native's thresholds behind a cell (3.3 M instructions by callgrind,
/// MPICH 5, p = 2) is paid by a communicator of a new size for the collectives it calls only.
#[inline]
pub fn ensure(g: &'static Global, coll: Collective, p: usize) {
    let done = || PUBLISHED[coll.index()][p].load(Ordering::Acquire);
    if p == 0 || p > GATE_P || done() || !wanted(&g.cfg) {
        return;
    }
    let _w = WRITER.lock();
    if done() {
        return;
    }
    set_cell(g, coll, p);
    PUBLISHED[coll.index()][p].store(true, Ordering::Release);
}

/// What the gate does with `coll` under the run-time forced pick (`pcoll_force`): the cells
/// decide (none), every plain call goes native (`native`), or every call is declined (any
/// other algorithm, `model`: the Rust path decides). One byte store: pcoll-bench switches the
/// forced algorithm between every timed call, and republishing the cells there (the model
/// over every size class) cost milliseconds that disturbed the next call's timing.
pub fn set_forced(coll: Collective, pick: Option<Pick>) {
    let mode = match pick {
        None => MODE_CELLS,
        Some(Pick::Alg(Algorithm::Native)) => MODE_NATIVE,
        Some(_) => MODE_DECLINE,
    };
    // SAFETY: a plain C call on the gate's own static state.
    unsafe { pcoll_gate_mode(coll.index() as c_int, mode) };
}

/// The gate opens unless the Rust path must see every call (`PCOLL_LEARN`: the learner
/// counts every call of a cell it explores, on every rank).
fn wanted(cfg: &Config) -> bool {
    !(cfg.disable
        || cfg.stats
        || cfg.learn.is_some()
        || log::max_level() >= log::LevelFilter::Debug)
}

/// Write the cells of (`coll`, `p`), the blocking and the non-blocking one: the byte ranges
/// the resolver (without the run-time force, which [`set_forced`] handles) sends to native
/// ([`pcoll::decide::Resolver::native_ranges`]); more than [`GATE_R`] ranges: none (the gate
/// declines the cell).
fn set_cell(g: &'static Global, coll: Collective, p: usize) {
    let mut resolver = crate::state::resolver(g, coll, p);
    resolver.over.algorithm = None; // the run-time force is the gate's mode byte
    for (nb, r) in [false, true]
        .into_iter()
        .zip(resolver.native_ranges(coll, p))
    {
        let n = if r.len() > GATE_R { 0 } else { r.len() };
        let mut lo = [0 as c_ulonglong; GATE_R];
        let mut hi = [0 as c_ulonglong; GATE_R];
        for (k, x) in r.iter().take(n).enumerate() {
            (lo[k], hi[k]) = (x.0 as c_ulonglong, x.1 as c_ulonglong);
        }
        let set = if nb {
            pcoll_gate_set_nb
        } else {
            pcoll_gate_set
        };
        // SAFETY: `lo`/`hi` hold GATE_R >= n values; the C side copies them.
        unsafe {
            set(
                coll.index() as c_int,
                p as c_int,
                n as c_int,
                lo.as_ptr(),
                hi.as_ptr(),
            )
        };
    }
}

/// Does a non-blocking reduce or allreduce (`MPI_Ireduce`, `MPI_Iallreduce`; the root is
/// read for a reduce only) go native by the gate's non-blocking cells? (The other five
/// I-forms ask `pcoll_gate_nb_<coll>` and [`forwarded`].) Its caller forwards
/// it at once: a forwarded non-blocking call cost ~1 µs of validation and decision (8 B
/// `MPI_Iallreduce`, p = 2: 1.25-1.7x native on the five MPIs, session 16). Asked only while
/// none of pcoll's schedules runs (an initiation advances them otherwise).
pub fn nb_native(
    coll: Collective,
    (sendbuf, recvbuf): (*const c_void, *mut c_void),
    (count, dt, op, root): (c_int, MPI_Datatype, MPI_Op, c_int),
    comm: MPI_Comm,
) -> bool {
    // SAFETY: the caller's arguments, read by the gate as by the blocking entries (handles
    // queried through PMPI, buffers compared with MPI_IN_PLACE and NULL only).
    let native = unsafe {
        pcoll_gate_nb_reduce_like(
            coll.index() as c_int,
            sendbuf,
            recvbuf,
            count,
            dt,
            op,
            root,
            comm,
        ) != 0
    };
    forwarded(coll, native)
}

/// The gate's answer for a non-blocking call of `coll` (`native`: a `pcoll_gate_nb_*` of the
/// C file said it goes native; the caller forwards it at once), recorded for
/// `pcoll_last_algorithm`.
pub fn forwarded(coll: Collective, native: bool) -> bool {
    if native {
        crate::state::set_last_nb(coll, Algorithm::Native);
    }
    native
}

/// Calls and bytes the gate forwarded for `coll`.
pub fn counts(coll: Collective) -> (u64, u64) {
    let (mut calls, mut bytes): (c_ulonglong, c_ulonglong) = (0, 0);
    // SAFETY: two valid out-pointers; the C side checks the index.
    unsafe { pcoll_gate_counts(coll.index() as c_int, &mut calls, &mut bytes) };
    (calls, bytes)
}

/// Zero the gate's counts.
pub fn reset() {
    for coll in Collective::ALL {
        // SAFETY: a plain C call on the gate's own static state.
        unsafe { pcoll_gate_reset_counts(coll.index() as c_int) };
    }
}

/// Whether the last call of `coll` went through the gate.
pub fn last_hit(coll: Collective) -> bool {
    // SAFETY: as above.
    unsafe { pcoll_gate_hit(coll.index() as c_int) != 0 }
}

/// The Rust path is recording a call of `coll`, which is now the last.
pub fn clear_hit(coll: Collective) {
    // SAFETY: as above.
    unsafe { pcoll_gate_clear_hit(coll.index() as c_int) };
}

/// `PCOLL_DISABLE=1`: the gate functions of the seven blocking collectives forward every call
/// to the MPI from now on, without entering Rust.
pub fn passthrough() {
    // SAFETY: an atomic store in the gate's own state.
    unsafe { pcoll_gate_passthrough() };
}

/// The gate's memo lines (`pcoll_gate.h`, G_NHOT): one per collective, and a second for
/// reduce's and bcast's calls at a root other than 0.
pub const MEMO_LINES: usize = Collective::ALL.len() + 2;

/// The memo line a blocking call of `coll` at `root` is kept in (`memo_line` in
/// `pcoll_gate.h`).
pub fn memo_line(coll: Collective, root: i64) -> usize {
    match coll {
        Collective::Reduce if root > 0 => Collective::ALL.len(),
        Collective::Bcast if root > 0 => Collective::ALL.len() + 1,
        _ => coll.index(),
    }
}

/// The gate memo's generation, read at the start of a call the Rust path decides (for
/// [`keep_native`]).
pub fn memo_gen() -> c_uint {
    // SAFETY: an atomic load in the gate's own state.
    unsafe { pcoll_gate_memo_gen() }
}

/// Keep a blocking call the Rust path sent to native for good (its cell's race settled
/// native) in the gate's memo of the last forwarded call of its collective, so that the next
/// call repeating it (same communicator, type, op, counts, root, in-place-ness) is forwarded
/// from C without entering Rust (0.2-0.45 µs less a call). The C side checks what
/// it checks before forwarding any call (a plain call of a cached communicator and a named
/// type, the guards) and drops the memo if anything the gate decides by changed since `gen`.
/// Not for the large-count forms (the gate forwards `int` counts only).
///
/// The memo counts each call it forwards in `*counter` and forwards none once it reaches
/// `limit`: a raced cell's count of its winner's calls and the count at which the cell is due
/// to be raced again (that call reaches the Rust path, which races it; `Tally`), or the calls
/// a communicator's `shm` window lets wait (`CommState::wait_memo`). The counter must live as
/// long as the communicator (the memo is cleared with it).
pub fn keep_native(
    a: &crate::dispatch::Args,
    gen: c_uint,
    (counter, limit): (*mut u64, u64),
) -> bool {
    if a.large_count {
        return false;
    }
    let Some(counts) = a.counts.iter().map(|&c| c_int::try_from(c).ok()).collect() else {
        return false;
    };
    let call = Kept {
        coll: a.coll,
        bufs: (a.sendbuf, a.recvbuf),
        sendcount: a.sendcount,
        counts,
        dt: a.dt,
        op: a.op,
        root: a.root,
        comm: a.comm,
    };
    keep(&call, gen, (counter, limit))
}

/// A blocking call as [`keep`] hands it to the gate: the collective's own arguments, `counts`
/// one per rank for reduce_scatter and allgatherv, else the count (reduce, allreduce, bcast),
/// or the receive count (allgather, reduce_scatter_block) first.
pub struct Kept {
    pub coll: Collective,
    pub bufs: (*const c_void, *mut c_void),
    pub sendcount: i64,
    pub counts: Vec<c_int>,
    pub dt: MPI_Datatype,
    pub op: MPI_Op,
    pub root: i64,
    pub comm: MPI_Comm,
}

/// [`keep_native`] for a call the fast paths describe without `Args`. True if the memo now
/// holds the call (false: the gate would not forward it, or a clear or another thread came
/// between; the memo keeps what it held).
pub fn keep(k: &Kept, gen: c_uint, (counter, limit): (*mut u64, u64)) -> bool {
    let int = |x: i64| c_int::try_from(x).ok();
    let (Some(&count), Some(root), Some(sendcount)) =
        (k.counts.first(), int(k.root), int(k.sendcount))
    else {
        return false;
    };
    // SAFETY: the caller's arguments, read by the gate as for its own forwarding (handles
    // queried through PMPI, buffers compared with MPI_IN_PLACE and NULL only, `counts` read
    // for the communicator's size where the collective takes an array: one per rank there).
    unsafe {
        pcoll_gate_keep(
            k.coll.index() as c_int,
            k.bufs.0,
            sendcount,
            k.bufs.1,
            k.counts.as_ptr(),
            count,
            k.dt,
            k.op,
            root,
            k.comm,
            gen,
            counter as *mut c_ulonglong,
            limit as c_ulonglong,
        ) != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The constants the C file and this module both use agree (the C file answers
    /// `pcoll_gate_abi`).
    #[test]
    fn c_and_rust_constants_agree() {
        // SAFETY: a pure function of its argument.
        let abi = |w| unsafe { pcoll_gate_abi(w) };
        assert_eq!(abi(0), GATE_P as i64);
        assert_eq!(abi(1), GATE_R as i64);
        assert_eq!(abi(2), DECLINED as i64);
        assert_eq!(abi(3), Collective::ALL.len() as i64);
        assert_eq!(abi(4), MEMO_LINES as i64);
        assert_eq!(abi(40), memo_line(Collective::Reduce, 1) as i64);
        assert_eq!(abi(41), memo_line(Collective::Bcast, 2) as i64);
        assert_eq!(abi(42), memo_line(Collective::Reduce, 0) as i64);
        assert_eq!(abi(43), memo_line(Collective::Allreduce, -1) as i64);
        for coll in Collective::ALL {
            assert_eq!(abi(10 + coll.index() as i32), coll.index() as i64, "{coll}");
        }
        for (k, g) in [
            Guard::RootNonzeroAbove(0),
            Guard::OneRank,
            Guard::TrueLbNonzero,
            Guard::UserOp,
            Guard::InPlace,
        ]
        .into_iter()
        .enumerate()
        {
            assert_eq!(abi(20 + k as i32), guard_bit(g) as i64, "{g:?}");
        }
        assert_eq!(abi(30), MODE_CELLS as i64);
        assert_eq!(abi(31), MODE_NATIVE as i64);
        assert_eq!(abi(32), MODE_DECLINE as i64);
    }
}
