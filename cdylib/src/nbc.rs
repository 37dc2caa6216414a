//! Non-blocking and persistent collectives (issue 27): the requests pcoll serves itself, and
//! their progress through the user's own completion calls (no progress thread).
//!
//! The user gets a real MPI request as a stand-in: an inactive persistent receive from itself
//! on `MPI_COMM_SELF` (`PMPI_Recv_init`), never started ([`stand_in`]). It is a valid handle everywhere (Fortran
//! conversion, comparison with `MPI_REQUEST_NULL`, arrays mixed with the user's own
//! requests). Once pcoll's schedule is done, a *token* stands for it in the arrays handed to
//! the MPI: a receive from `MPI_PROC_NULL` (`PMPI_Irecv`), active and complete at once, so
//! the MPI's own completion call completes it with the user's other requests and fills
//! indices, counts and flags as it always does. (Starting the stand-in itself would do on
//! Open MPI, but MPICH 4.0's Waitany / Testany / Waitsome / Testsome skip a started
//! persistent receive from MPI_PROC_NULL as if inactive: measured.) A non-blocking request's
//! stand-in is freed when the user completes it (the handle becomes `MPI_REQUEST_NULL`); a
//! persistent one stays until `MPI_Request_free`. Statuses are the empty status (a collective
//! request's source and tag are undefined in the standard).
//!
//! The table maps stand-ins to their schedules ([`crate::dispatch::nb`]: the planned call and
//! its running program). Every intercepted completion call first advances every running
//! schedule without blocking ([`progress`]), and never blocks inside the MPI while one is
//! running: another rank may be waiting for this rank's part. See docs/nonblocking.md.

mod complete;
pub mod waiting;
pub use complete::*;

use crate::consts;
use crate::dispatch::nb::{self, Active, Planned};
use crate::dispatch::Args;
use crate::mpi_types::handle_bits;
use mpi_sys::*;
use parking_lot::Mutex;
use pcoll::Algorithm;
use std::os::raw::c_int;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Non-blocking (`MPI_Ireduce`, ...) or persistent (`MPI_Reduce_init`, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Nonblocking,
    Persistent,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// The schedule runs.
    Running,
    /// The schedule is done (with this return code) and the stand-in started: the next
    /// completion call that is given the request completes it.
    Finished(c_int),
    /// A persistent request not started (or completed since).
    Inactive,
}

struct Entry {
    /// The stand-in: the user's handle.
    handle: MPI_Request,
    planned: Planned,
    kind: Kind,
    tag: c_int,
    act: Option<Active>,
    phase: Phase,
    /// The user freed the request while its schedule ran (`MPI_Request_free`): removed once
    /// done.
    detached: bool,
    /// `Finished`: the token that stands for the request in the MPI's completion calls.
    token: MPI_Request,
}

// SAFETY: the stand-in handle and the transport's pointers are only passed to MPI by the
// thread in a completion call; the table is behind a mutex.
unsafe impl Send for Entry {}

static TABLE: Mutex<Vec<Entry>> = parking_lot::const_mutex(Vec::new());
/// Entries in the table (0: every completion call goes straight to the MPI).
static ENTRIES: AtomicUsize = AtomicUsize::new(0);
/// Entries whose schedule runs.
static RUNNING: AtomicUsize = AtomicUsize::new(0);

/// pcoll has no request outstanding or inactive: completion calls pass straight through.
pub fn none() -> bool {
    ENTRIES.load(Ordering::Relaxed) == 0
}

/// A schedule is running: no completion call may block inside the MPI.
pub fn running() -> bool {
    RUNNING.load(Ordering::Relaxed) > 0
}

fn find(t: &[Entry], h: MPI_Request) -> Option<usize> {
    let b = handle_bits(h);
    t.iter().position(|e| handle_bits(e.handle) == b)
}

/// The first tag of non-blocking collectives (the blocking ones use 7411), and how many.
const TAG_BASE: c_int = 8192;

/// The number of distinct tags: up to `MPI_TAG_UB` (the standard guarantees 32767).
fn tag_span() -> u64 {
    static SPAN: once_cell::sync::OnceCell<u64> = once_cell::sync::OnceCell::new();
    *SPAN.get_or_init(|| {
        let mut val: *mut c_int = std::ptr::null_mut();
        let mut flag: c_int = 0;
        // SAFETY: MPI_TAG_UB's value is a pointer to an int owned by MPI.
        let ub = unsafe {
            let rc = PMPI_Comm_get_attr(
                consts::comm_world(),
                consts::TAG_UB_KEY(),
                &mut val as *mut *mut c_int as *mut std::os::raw::c_void,
                &mut flag,
            );
            if rc == consts::SUCCESS() && flag != 0 && !val.is_null() {
                *val
            } else {
                32767
            }
        };
        ((ub.max(32767) - TAG_BASE) as u64 + 1).min(1 << 24)
    })
}

/// The tag of the next call pcoll serves on the state's communicator: from its count of such
/// calls, the same on every rank, so that outstanding calls never match each other.
fn next_tag(st: &crate::comm::CommState) -> c_int {
    let seq = st.nb_seq.fetch_add(1, Ordering::Relaxed);
    TAG_BASE + (seq % tag_span()) as c_int
}

/// A new stand-in request (inactive): a persistent receive from this process itself on
/// `MPI_COMM_SELF`, never started, so it never matches a message. Not from `MPI_PROC_NULL`:
/// once such a persistent request has been made and freed, Debian's MPICH 4.0.2 never
/// completes the next persistent collective of its own (`verify/nbdifftest.c` and mpi4py's
/// `test_cco_pr_vec` hung so when pcoll forwarded one).
fn stand_in() -> Result<MPI_Request, c_int> {
    let mut r = null();
    // SAFETY: a zero-count receive touches no buffer; out-pointer.
    let rc = unsafe {
        PMPI_Recv_init(
            std::ptr::null_mut(),
            0,
            consts::dt_byte(),
            0,
            0,
            consts::comm_self(),
            &mut r,
        )
    };
    if rc == consts::SUCCESS() {
        Ok(r)
    } else {
        Err(rc)
    }
}

/// Serve a non-blocking or persistent call: pcoll's schedule behind a stand-in written to
/// `*req`, or `native()` (which writes `*req` itself).
pub fn initiate(
    a: Args,
    kind: Kind,
    req: &mut MPI_Request,
    native: &mut dyn FnMut() -> c_int,
) -> c_int {
    let coll = a.coll;
    if inside_native() {
        return native();
    }
    // A repeat of a call sent to native for a while (`waiting`; while none of pcoll's
    // schedules runs, as the gate's forwarding) is not decided again.
    let repeat = match kind {
        Kind::Nonblocking if !running() => waiting::forwards(&a),
        _ => None,
    };
    let decided = match repeat {
        Some(bytes) => Err(bytes),
        None => {
            progress();
            nb::plan(a)
        }
    };
    let planned = match decided {
        Ok(planned) => planned,
        Err(bytes) => {
            stats::record(coll, kind, Algorithm::Native, bytes);
            crate::state::set_last_nb(coll, Algorithm::Native);
            return in_native(native);
        }
    };
    crate::state::set_last_nb(coll, planned.alg);
    let handle = match stand_in() {
        Ok(h) => h,
        Err(rc) => return rc,
    };
    let tag = next_tag(planned.st);
    stats::record(coll, kind, planned.alg, planned.bytes());
    let mut e = Entry {
        handle,
        planned,
        kind,
        tag,
        act: None,
        phase: Phase::Inactive,
        detached: false,
        token: null(),
    };
    if kind == Kind::Nonblocking {
        if let Err(rc) = begin(&mut e) {
            let mut h = e.handle;
            // SAFETY: our own inactive stand-in, freed once.
            unsafe { PMPI_Request_free(&mut h) };
            return rc;
        }
    }
    *req = e.handle;
    log::debug!(
        "{} {:?}: request {:x}, tag {tag}",
        stats::name(coll, kind),
        e.phase,
        handle_bits(e.handle)
    );
    TABLE.lock().push(e);
    ENTRIES.fetch_add(1, Ordering::Relaxed);
    consts::SUCCESS()
}

thread_local! {
    /// Depth of calls into the MPI during which a non-blocking collective goes native.
    static NATIVE: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// Run `f`, a call into the MPI, with every non-blocking collective it makes through the
/// public symbols going native. MPICH 4.0 starts a persistent collective of its own by
/// calling `MPI_Iallgather` etc. (seen: `PMPI_Start` -> pcoll's `MPI_Iallgather`); served by
/// pcoll, its stand-in would be waited for inside the MPI, where pcoll never runs: a hang.
pub fn in_native<R>(f: impl FnOnce() -> R) -> R {
    let _ = NATIVE.try_with(|d| d.set(d.get() + 1));
    let r = f();
    let _ = NATIVE.try_with(|d| d.set(d.get().saturating_sub(1)));
    r
}

fn inside_native() -> bool {
    NATIVE.try_with(|d| d.get() > 0).unwrap_or(false)
}

/// Start an entry: it runs from now on; its schedule starts and advances as far as it goes
/// at once (the communicator's shadow is made: `dispatch::nb` plans no schedule before).
fn begin(e: &mut Entry) -> Result<(), c_int> {
    e.phase = Phase::Running;
    RUNNING.fetch_add(1, Ordering::Relaxed);
    hold_gate();
    let r = launch(e);
    if r.is_err() {
        e.phase = Phase::Inactive;
        RUNNING.fetch_sub(1, Ordering::Relaxed);
        hold_gate();
    }
    r
}

/// Start a running entry's schedule on the communicator's shadow.
fn launch(e: &mut Entry) -> Result<(), c_int> {
    match e.planned.start(e.tag) {
        Ok(act) => {
            e.act = Some(act);
            step(e);
            Ok(())
        }
        Err(err) => {
            log::error!("{} (non-blocking): {err}", e.planned.a.coll);
            Err(crate::dispatch::error_code(&err))
        }
    }
}

/// Advance one running entry; when its schedule is done, start the stand-in (it completes at
/// once) and record the outcome.
fn step(e: &mut Entry) {
    let Some(act) = e.act.as_mut() else {
        return;
    };
    let rc = match act.advance(&e.planned) {
        Ok(false) => return,
        Ok(true) => consts::SUCCESS(),
        Err(err) => {
            log::error!(
                "{} {} (non-blocking): {err}",
                e.planned.a.coll,
                e.planned.alg
            );
            crate::dispatch::error_code(&err)
        }
    };
    finish(e, rc);
}

/// A running entry is done with `rc`: start its token, or free it if the user freed it.
fn finish(e: &mut Entry, rc: c_int) {
    e.act = None;
    e.phase = Phase::Finished(rc);
    RUNNING.fetch_sub(1, Ordering::Relaxed);
    hold_gate();
    e.token = token();
    if e.detached {
        // SAFETY: our own token (complete) and stand-in (inactive), each freed once.
        unsafe {
            PMPI_Request_free(&mut e.token);
            PMPI_Request_free(&mut e.handle);
        }
    }
}

pub(crate) fn null() -> MPI_Request {
    // SAFETY: a constant of the MPI.
    unsafe { RSMPI_REQUEST_NULL }
}

/// A request that is complete at once: a receive from `MPI_PROC_NULL`.
fn token() -> MPI_Request {
    let mut r = null();
    // SAFETY: a zero-count receive from MPI_PROC_NULL touches no buffer; out-pointer.
    unsafe {
        PMPI_Irecv(
            std::ptr::null_mut(),
            0,
            consts::dt_byte(),
            consts::PROC_NULL(),
            0,
            consts::comm_self(),
            &mut r,
        )
    };
    r
}

/// Advance every running schedule as far as it goes without blocking. A call from inside a
/// schedule (a blocking wait of a failed one) finds the table locked and returns.
pub fn progress() {
    if !running() {
        return;
    }
    let Some(mut t) = TABLE.try_lock() else {
        return;
    };
    let _inside = Advancing::enter();
    for e in t.iter_mut().filter(|e| e.phase == Phase::Running) {
        step(e);
    }
    let gone = |e: &Entry| e.detached && e.phase != Phase::Running;
    let states: Vec<*const crate::comm::CommState> = t
        .iter()
        .filter(|e| gone(e))
        .map(|e| e.planned.st as *const _)
        .collect();
    t.retain(|e| !gone(e));
    ENTRIES.fetch_sub(states.len(), Ordering::Relaxed);
    for st in states {
        left(&t, st);
    }
}

thread_local! {
    /// This thread is inside [`progress`] (holding the table): a blocking collective reached
    /// from there (an MPI calling its own public symbols) must not wait for the table.
    static ADVANCING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// This thread holds the table inside [`progress`] (or cannot tell: thread exit), where
/// waiting for the table would deadlock.
fn advancing() -> bool {
    ADVANCING.try_with(|a| a.get()).unwrap_or(true)
}

/// [`ADVANCING`] set for the guard's life.
struct Advancing(bool);

impl Advancing {
    fn enter() -> Advancing {
        Advancing(ADVANCING.try_with(|a| a.replace(true)).unwrap_or(true))
    }
}

impl Drop for Advancing {
    fn drop(&mut self) {
        let _ = ADVANCING.try_with(|a| a.set(self.0));
    }
}

/// Complete every schedule running on the communicator whose state is `st`: before a
/// blocking collective on it ([`before_blocking`]) and in its `MPI_Comm_free`. Both are
/// collective, so every rank of the communicator drives its own part of them here.
pub fn drain(st: *const crate::comm::CommState) {
    if advancing() {
        return;
    }
    let on = |t: &[Entry]| {
        t.iter()
            .any(|e| e.phase == Phase::Running && std::ptr::eq(e.planned.st, st))
    };
    let mut pause = Pause::default();
    while running() && on(&TABLE.lock()) {
        progress();
        pause.pause();
    }
}

/// Wait for `req` (an MPI request of pcoll's own), advancing the running schedules meanwhile
/// (inside `PMPI_Wait` they would not move, and another rank may wait for this one's part of
/// them before it gets here). Returns the MPI's code.
pub fn wait_advancing(req: &mut MPI_Request) -> c_int {
    let mut pause = Pause::default();
    loop {
        if !running() || advancing() {
            // SAFETY: the caller's request, completed once.
            return unsafe { PMPI_Wait(req, RSMPI_STATUS_IGNORE) };
        }
        let mut done: c_int = 0;
        // SAFETY: as above; out-pointer to a local.
        let rc = unsafe { PMPI_Test(req, &mut done, RSMPI_STATUS_IGNORE) };
        if rc != consts::SUCCESS() || done != 0 {
            return rc;
        }
        progress();
        pause.pause();
    }
}

/// Do all ranks of `comm` say yes? (Collective; a non-blocking allreduce waited for with
/// [`wait_advancing`]; an MPI error counts as a no.)
pub fn all(comm: MPI_Comm, yes: bool) -> bool {
    let mut v = [c_int::from(yes)];
    // SAFETY: one int, reduced in place.
    let rc = unsafe { allreduce(&mut v, consts::dt_int(), consts::op_min(), comm) };
    rc == consts::SUCCESS() && v[0] == 1
}

/// `MPI_Allreduce` of `v` in place on `comm`, non-blocking and waited for with
/// [`wait_advancing`] (pcoll's own agreements inside a blocking call). Returns the MPI's code.
///
/// # Safety
///
/// `dt` describes one element of `T`; `op` is valid for it; every rank of `comm` calls this
/// at the same point.
pub unsafe fn allreduce<T>(v: &mut [T], dt: MPI_Datatype, op: MPI_Op, comm: MPI_Comm) -> c_int {
    let mut req = null();
    // SAFETY: `v` outlives the request, waited for here; the caller vouches for the type.
    let rc = unsafe {
        PMPI_Iallreduce(
            consts::in_place(),
            v.as_mut_ptr() as *mut std::os::raw::c_void,
            v.len() as c_int,
            dt,
            op,
            comm,
            &mut req,
        )
    };
    if rc != consts::SUCCESS() {
        return rc;
    }
    wait_advancing(&mut req)
}

/// Does one of pcoll's requests (any phase) run on the communicator whose state is `st`?
pub fn holds(st: &crate::comm::CommState) -> bool {
    if none() || advancing() {
        return false;
    }
    TABLE.lock().iter().any(|e| std::ptr::eq(e.planned.st, st))
}

/// An entry on the state `st` left the table `t`: if it was the state's last, a state whose
/// communicator was freed before goes ([`crate::comm::orphan_gone`]).
fn left(t: &[Entry], st: *const crate::comm::CommState) {
    if !t.iter().any(|e| std::ptr::eq(e.planned.st, st)) {
        crate::comm::orphan_gone(st);
    }
}

/// Every rank of `comm` is here (a non-blocking barrier, waited for with
/// [`wait_advancing`]): before the collectives pcoll makes inside a blocking call for itself —
/// the shadow, a window and its free, the nodes, a learned cell's agreement — which have no
/// non-blocking form. Once every rank is in the call, they need nothing of any rank's
/// schedules; before, a rank blocked in them held the schedules others waited for (a
/// blocking allreduce's first call on one communicator beside a pending `MPI_Iallreduce` on
/// another, waited for first elsewhere: session 51's bug hunt). Every rank calls it
/// at the same point (the calls that reach it are agreed), whether or not it runs schedules.
pub fn meet(comm: MPI_Comm) {
    let mut req = null();
    // SAFETY: a collective over `comm`, where every rank comes; out-pointer to a local.
    if unsafe { PMPI_Ibarrier(comm, &mut req) } == consts::SUCCESS() {
        wait_advancing(&mut req);
    }
}

/// Before a blocking collective on `comm` (one pcoll serves or forwards, `MPI_Barrier`, the
/// others of `crate::ffi::drained`): the schedules pcoll runs on `comm` complete first. The
/// MPI's progress rule lets a rank blocked in the collective advance its earlier non-blocking
/// ones on that communicator, which other ranks may be waiting for; inside the MPI's blocking
/// call pcoll's schedules would not move. Every rank calls its collectives on `comm` in one
/// order, so each rank that reaches the blocking call has started the same schedules and
/// drives them here (or in a completion call, or a blocking point-to-point call). Then what a
/// non-blocking call wanted made on `comm` (its shadow, its window) is made
/// ([`crate::comm::make_wanted_on`]). Two atomic loads when nothing runs or is wanted.
pub fn before_blocking(comm: MPI_Comm) {
    let (run, want) = (running(), crate::comm::any_wanted());
    if !(run || want) || inside_native() || advancing() {
        return;
    }
    if run {
        // The state from the table (no MPI call: `comm` may be any handle the user passed).
        let b = handle_bits(comm);
        let st = TABLE
            .lock()
            .iter()
            .find(|e| e.phase == Phase::Running && handle_bits(e.planned.a.comm) == b)
            .map(|e| e.planned.st as *const crate::comm::CommState);
        if let Some(st) = st {
            drain(st);
        }
    }
    if want {
        crate::comm::make_wanted_on(comm);
    }
}

/// While a schedule runs the native gate declines every call, so that blocking calls reach
/// [`before_blocking`]. Under a lock, each update stores what [`running`] says then, so two
/// threads changing it at once leave the last word to the current count.
fn hold_gate() {
    static HOLD: Mutex<()> = parking_lot::const_mutex(());
    let _h = HOLD.lock();
    crate::gate::hold(running());
}

pub mod stats {
    //! Calls per (collective, form, algorithm), reported with the blocking ones'
    //! (`PCOLL_STATS=1`) as `ireduce`, `reduce_init`, ...
    use super::Kind;
    use parking_lot::Mutex;
    use pcoll::{Algorithm, Collective};

    /// (collective, form, algorithm, calls, bytes).
    type Row = (Collective, Kind, Algorithm, u64, u64);

    static CALLS: Mutex<Vec<Row>> = parking_lot::const_mutex(Vec::new());

    /// Count a call (only with `PCOLL_STATS=1`, the report's only reader: a lock and a
    /// search otherwise paid by every initiation).
    pub(super) fn record(coll: Collective, kind: Kind, alg: Algorithm, bytes: usize) {
        if !crate::state::try_global().is_some_and(|g| g.cfg.stats) {
            return;
        }
        let mut c = CALLS.lock();
        match c.iter_mut().find(|x| (x.0, x.1, x.2) == (coll, kind, alg)) {
            Some(x) => {
                x.3 += 1;
                x.4 += bytes as u64;
            }
            None => c.push((coll, kind, alg, 1, bytes as u64)),
        }
    }

    /// The name of a form of a collective: `ireduce`, `reduce_init`, ...
    pub fn name(coll: Collective, kind: Kind) -> String {
        match kind {
            Kind::Nonblocking => format!("i{}", coll.name()),
            Kind::Persistent => format!("{}_init", coll.name()),
        }
    }

    /// The stats lines of the non-blocking and persistent calls.
    pub fn report(out: &mut String) {
        let mut c = CALLS.lock().clone();
        c.sort_by_key(|x| (x.0.index(), x.1 as u8, x.2.index()));
        for (coll, kind, alg, calls, bytes) in c {
            out.push_str(&format!(
                "pcoll: stats {} {} calls={calls} bytes={bytes}\n",
                name(coll, kind),
                alg.name()
            ));
        }
    }
}
