//! Per-communicator state, cached on the user's communicator with an attribute keyval.
//!
//! pcoll's messages run on a shadow of the user's communicator, made with `PMPI_Comm_create`
//! over its whole group (collective, so every rank does it in the same call; not
//! `PMPI_Comm_dup`, which runs the user's attribute copy callbacks), so that they can never
//! match a user's receive (even with `MPI_ANY_SOURCE`/`MPI_ANY_TAG`). A blocking call makes the state
//! without it: the shadow is made by the first blocking call that needs it
//! ([`CommState::shadow`]: one that runs a pcoll algorithm, makes the window or asks MPI for
//! the nodes), so a communicator whose calls run native (a few calls while `shm`'s window
//! waits, say) costs no shadow and no context id. A non-blocking call must not wait for the
//! other ranks ([`state_nb`]): the shadow is left for the communicator's next blocking
//! collective (any pcoll intercepts, served or forwarded: [`make_wanted_on`]), and
//! non-blocking calls go native until then. The shadow's
//! error handler is `MPI_ERRORS_RETURN`; errors are raised on the user's communicator. The
//! attribute's delete callback (run by `MPI_Comm_free` and at `MPI_Finalize`) frees the shadow.
//! Dups of a user communicator do not inherit the attribute (null copy function).

use crate::consts;
use crate::gate::MEMO_LINES;
use mpi_sys::*;
use once_cell::sync::OnceCell;
use parking_lot::Mutex;
use pcoll::model::shm::WindowWait;
use pcoll::plan::Program;
use std::collections::HashMap;
use std::os::raw::{c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// Counters of calls forwarded while `shm`'s window waits: one per gate memo line, then
/// `crate::nbc::waiting`'s.
pub const WAIT_SLOTS: usize = MEMO_LINES + crate::nbc::waiting::LINES;

mod orphan;
mod shadow;
pub use orphan::orphan_gone;
use shadow::Shadow;
pub use shadow::{any_wanted, make_wanted_on};

pub struct CommState {
    /// The shadow communicator ([`CommState::shadow`]).
    shadow: Shadow,
    /// The user's communicator while the shadow is not made (`None` once made).
    dup: Mutex<Option<MPI_Comm>>,
    /// The shadow is made.
    ready: AtomicBool,
    /// Making it failed (the MPI's context ids used up): [`CommState::shadow_failed`].
    failed: AtomicBool,
    /// What the communicator's next blocking collective makes ([`make_wanted_on`]):
    /// `WANT_SHADOW` (made later), `WANT_WINDOW` (a non-blocking call would have run
    /// `shm` had the window been made). Set at the same call on every rank (the decisions are
    /// agreed).
    want: std::sync::atomic::AtomicU8,
    /// What `MPI_Comm_free` agreed of the windows ([`before_free`]): kept for requests
    /// (`true`) or released (`false`); unset where the free did not come through it.
    freeing: OnceCell<bool>,
    pub size: usize,
    pub rank: usize,
    /// Programs built for this communicator, keyed by everything they depend on.
    pub cache: Mutex<HashMap<ProgKey, Arc<Program>>>,
    /// Scratch buffers reused across calls.
    pub pool: crate::pmpi::ScratchPool,
    /// The program of the last call, checked before the cache (no key built, no hashing):
    /// a loop calling the same collective with the same arguments hits it every time.
    last: Mutex<Option<(ProgKey, Arc<Program>)>>,
    /// The communicator's nodes: read from `MPI_COMM_WORLD`'s when the state is made
    /// (`crate::nodes::from_world`), else gathered the first time a decision needs them
    /// ([`CommState::layout`]).
    layout: OnceCell<pcoll::nodes::Layout>,
    /// The shared window of `shm`, made when a call first asks for it ([`CommState::shm`]).
    shm: OnceCell<Option<Box<crate::shm::Win>>>,
    /// The calls that asked for `shm` before the window was made
    /// ([`CommState::window_now`]), and the rent of the calls each slot counts.
    wait: Mutex<(WindowWait, [f64; WAIT_SLOTS])>,
    /// Per gate memo line (and `crate::nbc::waiting` line after them), the calls its memo
    /// forwarded while the window waits ([`CommState::wait_memo`]; `u64::MAX`: none counts
    /// here), added to `wait` by every call that asks for the window in Rust.
    wait_memo: [AtomicU64; WAIT_SLOTS],
    /// The calls whose node steps asked for `hier`'s node windows before they were made
    /// ([`CommState::node_windows_now`]).
    node_wait: Mutex<WindowWait>,
    /// The window of this rank's node for `hier`'s node steps ([`CommState::node_shm`]).
    node_shm: OnceCell<NodeWin>,
    /// `PCOLL_LEARN`'s cells on this communicator (`crate::learn`).
    pub learn: Mutex<HashMap<pcoll::learn::CellKey, pcoll::learn::Cell>>,
    /// Non-blocking and persistent calls pcoll served on this communicator (`crate::nbc`:
    /// their tags; the same count on every rank, as collectives are called in one order).
    pub nb_seq: std::sync::atomic::AtomicU64,
}

/// A node's window: `Ok(None)` on a node of one rank, `Err(())` refused (on every rank).
type NodeWin = Result<Option<Box<crate::shm::Win>>, ()>;

/// Everything a program depends on besides the rank (the cost parameters come from the
/// process-wide table, fixed for the life of the process).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ProgKey {
    pub alg: pcoll::Algorithm,
    pub coll: pcoll::Collective,
    pub root: usize,
    pub seg_elems: usize,
    pub commutative: bool,
    pub elem_bytes: usize,
    pub counts: Vec<usize>,
    pub displs: Vec<usize>,
    /// The program of a call that is not in place receives into `Out` where an in-place one
    /// copies (`CallSpec::in_place`).
    pub in_place: bool,
}

/// Most programs kept per communicator.
const CACHE_MAX: usize = 64;

impl ProgKey {
    /// The key of `alg` serving `spec`.
    pub fn of(alg: pcoll::Algorithm, spec: &pcoll::CallSpec) -> ProgKey {
        ProgKey {
            alg,
            coll: spec.coll,
            root: spec.root,
            seg_elems: spec.seg_elems,
            commutative: spec.commutative,
            elem_bytes: spec.elem_bytes,
            counts: spec.counts.clone(),
            displs: spec.displs.clone(),
            in_place: spec.in_place,
        }
    }
    /// `self == ProgKey::of(alg, spec)`, without building the key.
    fn is(&self, alg: pcoll::Algorithm, spec: &pcoll::CallSpec) -> bool {
        self.alg == alg
            && self.coll == spec.coll
            && self.root == spec.root
            && self.seg_elems == spec.seg_elems
            && self.commutative == spec.commutative
            && self.elem_bytes == spec.elem_bytes
            && self.in_place == spec.in_place
            && self.counts == spec.counts
            && self.displs == spec.displs
    }
}

impl CommState {
    /// The window was asked for (made or refused).
    pub fn shm_asked(&self) -> bool {
        self.shm.get().is_some()
    }

    /// The window was asked for and refused (on every rank alike): for good.
    pub fn shm_refused(&self) -> bool {
        self.shm.get().is_some_and(|w| w.is_none())
    }

    /// A call asks for `shm` on this one-node communicator with rent `rent`
    /// (`pcoll::model::shm::WindowWait`): true if the window is asked for already or is to be
    /// made now, false to serve the call without it. No MPI call; every rank counts alike.
    pub fn window_now(&self, rent: f64, cost: f64, after: u32) -> bool {
        if self.shm.get().is_some() {
            return true;
        }
        let mut w = self.wait.lock();
        self.fold(&mut w);
        ask(&mut w.0, "window", (rent, cost, after))
    }

    /// A call that asked for `shm` and ran without it (`window_now` answered false) is kept
    /// in the memo of `slot` (a gate memo line, or a `crate::nbc::waiting` line after them) by
    /// `keep`, whose repeats of it, forwarded without the full path, count themselves in the
    /// counter it is given, as many as wait before the one that makes the window (the limit):
    /// that one takes the full path and makes it. Not kept if no call of this rent waits.
    /// Every slot's count stops first (`u64::MAX`, at or above any limit) and is added to the
    /// wait: one memo at a time may count, so that its limit holds (calls of this communicator
    /// are made one at a time: collectives in one order). The slot counts again, with this
    /// rent, only if `keep` answers that the memo now holds the call: a memo may decline a
    /// call (a reduce in place at its root, a derived type, a lock held by another thread)
    /// and keep the slot's earlier call, whose repeats must then not count with this call's
    /// rent (they reach the full path, counted there, as they are on a rank whose memo holds
    /// another call: until session 58 such a root counted them here with the wrong rent and
    /// limit, made the window calls after the other ranks, and the job hung).
    pub fn wait_memo(
        &self,
        slot: usize,
        (rent, cost, after): (f64, f64, u32),
        keep: impl FnOnce((*mut u64, u64)) -> bool,
    ) {
        let mut w = self.wait.lock();
        self.fold(&mut w);
        let limit = w.0.waiting(rent, cost, after);
        if limit == 0 || self.shm.get().is_some() {
            return;
        }
        if keep((self.wait_memo[slot].as_ptr(), limit)) {
            w.1[slot] = rent;
            self.wait_memo[slot].store(0, Ordering::Release);
        }
    }

    /// Add the calls the gate's memos forwarded to the wait, and stop their counting.
    fn fold(&self, (wait, rents): &mut (WindowWait, [f64; WAIT_SLOTS])) {
        for (count, &rent) in self.wait_memo.iter().zip(rents.iter()) {
            if count.load(Ordering::Relaxed) != u64::MAX {
                let n = count.swap(u64::MAX, Ordering::AcqRel);
                wait.add(n, rent);
            }
        }
    }

    /// [`CommState::window_now`] for `hier`'s node windows: a node-aware call whose node
    /// steps would run through them, rent `rent` (`pcoll::decide::Resolver::node_shm_rent`).
    pub fn node_windows_now(&self, rent: f64, cost: f64, after: u32) -> bool {
        self.node_shm.get().is_some()
            || ask(
                &mut self.node_wait.lock(),
                "node windows",
                (rent, cost, after),
            )
    }

    /// The window if made and the communicator is one node's (no MPI call): what a
    /// non-blocking call may run `shm` on.
    pub fn known_shm(&self) -> Option<&crate::shm::Win> {
        if self.layout.get()?.shape().nodes > 1 {
            return None;
        }
        self.shm.get()?.as_deref()
    }

    /// The nodes of this communicator (`PCOLL_NODES`); collective on first use when not read
    /// from the world's at the state's making, so it is called only where every rank of the
    /// communicator is in the same call.
    pub fn layout(&self, g: &crate::state::Global) -> &pcoll::nodes::Layout {
        self.layout.get_or_init(|| {
            // Without a shadow (the MPI's context ids used up) the calls go to the MPI
            // (`crate::dispatch`); the nodes are then not asked.
            let Some(shadow) = self.live_shadow() else {
                return pcoll::nodes::Layout::single(self.size);
            };
            let l = crate::nodes::layout(shadow, self.size, g.cfg.nodes);
            log::debug!(target: "pcoll::nodes", "a communicator of {} ranks: nodes {:?} (gathered)", self.size, l.members);
            l
        })
    }
    /// The shared window of `shm` (None: refused); collective on first use, so it is called
    /// only where every rank of the communicator is in the same call.
    pub fn shm(&self) -> Option<&crate::shm::Win> {
        self.shm
            .get_or_init(|| {
                // Non-blocking decisions kept without the window are stale now.
                crate::dispatch::forget_served();
                crate::shm::create(self.live_shadow()?, self.size, self.rank)
            })
            .as_deref()
    }
    /// The window of this rank's node for `hier`'s node steps: `Ok(None)` on a node of one
    /// rank, `Err(())` if refused on any node (then on every rank). Collective on first use
    /// (it asks for the nodes first), so it is called only where every rank of the
    /// communicator is in the same call.
    #[allow(clippy::result_unit_err)] // a refusal has nothing more to say: the steps fall back
    pub fn node_shm(&self, g: &crate::state::Global) -> Result<Option<&crate::shm::Win>, ()> {
        self.node_shm
            .get_or_init(|| {
                // Decisions kept and node-aware programs built without the windows (their
                // node steps point-to-point) are stale now.
                crate::dispatch::forget_served();
                self.cache.lock().retain(|k, _| !k.alg.node_aware());
                *self.last.lock() = None;
                let l = self.layout(g);
                crate::shm::create_node(self.live_shadow().ok_or(())?, l, self.rank)
            })
            .as_ref()
            .map(|w| w.as_deref())
            .map_err(|_| ())
    }
    /// The node's window if it was asked for already (no MPI call): None if not asked.
    pub fn known_node_shm(&self) -> Option<Result<Option<&crate::shm::Win>, ()>> {
        self.node_shm
            .get()
            .map(|r| r.as_ref().map(|w| w.as_deref()).map_err(|_| ()))
    }
    /// The nodes if known (no MPI call): read from the world's when the state was made, or
    /// asked already.
    pub fn known_layout(&self) -> Option<&pcoll::nodes::Layout> {
        self.layout.get()
    }

    /// The program of `alg` for `spec`: the last call's if it is the same, else from the cache,
    /// else built (and cached).
    pub fn program(
        &self,
        alg: pcoll::Algorithm,
        spec: &pcoll::CallSpec,
        build: impl FnOnce() -> Result<Program, pcoll::Error>,
    ) -> Result<Arc<Program>, pcoll::Error> {
        if let Some((k, p)) = self.last.lock().as_ref() {
            if k.is(alg, spec) {
                return Ok(p.clone());
            }
        }
        let key = ProgKey::of(alg, spec);
        let cached = self.cache.lock().get(&key).cloned();
        let p = match cached {
            Some(p) => p,
            None => {
                let p = Arc::new(build()?);
                let mut c = self.cache.lock();
                if c.len() >= CACHE_MAX {
                    c.clear();
                }
                c.insert(key.clone(), p.clone());
                p
            }
        };
        *self.last.lock() = Some((key, p.clone()));
        Ok(p)
    }
}

/// A call asks for a window not made yet (`what`, for the debug log): true to make it now
/// (`pcoll::model::shm::WindowWait`).
fn ask(w: &mut WindowWait, what: &str, (rent, cost, after): (f64, f64, u32)) -> bool {
    let now = w.ask(rent, cost, after);
    let (n, r) = (w.calls, w.rent_ps as f64 * 1e-6);
    // Made: at info level (the gate stays open, so a benchmark's run shows where it fell).
    let level = if now {
        log::Level::Info
    } else {
        log::Level::Debug
    };
    log::log!(
        level,
        "shm: {what} now {now} ({n} calls waited, rent {r:.1} of {:.1} us; this call's {:.2})",
        cost * 1e6,
        rent * 1e6
    );
    now
}

/// A state by its communicator's handle, so that a call on a communicator pcoll has served
/// before finds its state (and its size and rank) without asking MPI: `PMPI_Comm_get_attr`
/// takes a lock and a hash lookup in Open MPI, about a thousand instructions. Entries are
/// added when a state is created or first found through the attribute, and removed by the
/// attribute's delete callback before the state is freed, so a handle reused for a new
/// communicator never finds an old state.
struct Known(MPI_Comm, &'static CommState);
// SAFETY: the handle is a plain value (pointer or int) only compared, and `CommState` is Sync.
unsafe impl Send for Known {}
// SAFETY: as above.
unsafe impl Sync for Known {}

static KNOWN: parking_lot::RwLock<Vec<Known>> = parking_lot::const_rwlock(Vec::new());

/// Most communicators found without the attribute (programs with more live communicators
/// than this fall back to `PMPI_Comm_get_attr` for the rest).
const KNOWN_MAX: usize = 64;

/// The state of `comm` if pcoll has one (no MPI call).
pub fn known(comm: MPI_Comm) -> Option<&'static CommState> {
    KNOWN.read().iter().find(|k| k.0 == comm).map(|k| k.1)
}

fn remember(comm: MPI_Comm, st: &'static CommState) {
    let mut k = KNOWN.write();
    if k.len() < KNOWN_MAX && !k.iter().any(|e| e.0 == comm) {
        k.push(Known(comm, st));
    }
}

fn forget(st: *const CommState) {
    KNOWN.write().retain(|k| !std::ptr::eq(k.1, st));
}

static KEYVAL: OnceCell<c_int> = OnceCell::new();

unsafe extern "C" fn delete_state(
    _comm: MPI_Comm,
    _keyval: c_int,
    attr: *mut c_void,
    _extra: *mut c_void,
) -> c_int {
    let r = std::panic::catch_unwind(|| {
        if !attr.is_null() {
            // No lookup may find the state from here on (the handle may be reused), nor a
            // call served again by handle.
            forget(attr as *const CommState);
            crate::dispatch::forget_served();
            // MPI_Comm_free is collective and lets pending operations complete: pcoll's
            // schedules on this communicator complete before its state goes.
            crate::nbc::drain(attr as *const CommState);
            // SAFETY: `attr` is the Box we leaked in `state()`; MPI calls this exactly once.
            let st = unsafe { Box::from_raw(attr as *mut CommState) };
            st.unwant();
            orphan::free_or_keep(st);
        }
    });
    if r.is_err() {
        crate::state::say(format_args!(
            "pcoll: panic while freeing communicator state (ignored)"
        ));
    }
    consts::SUCCESS()
}

/// `MPI_Comm_free`, before the MPI's: the collective part of freeing the communicator's
/// state — its schedules driven to their end, the ranks' agreement on its windows and their
/// release — runs here, where every rank of the communicator is at the same point of its
/// program. The delete callback the MPI runs next (`delete_state`) comes in an order each
/// rank's own attributes decide, among the program's callbacks, which may call collectives
/// on other communicators: a collective step of pcoll's there hung (session 53's bug hunt).
/// `MPI_Comm_disconnect` and the Fortran entries come here too; where a free does not (a
/// tool calling `PMPI_Comm_free`, pcoll not first in the search order) the callback does it
/// all, as before.
pub fn before_free(comm: MPI_Comm) {
    if comm == consts::comm_null() || comm == consts::comm_world() || comm == consts::comm_self() {
        return;
    }
    let Some(st) = existing(comm) else {
        return;
    };
    if !st.has_windows() || crate::shm::all_freed() {
        return;
    }
    crate::nbc::drain(st);
    let kept = !crate::nbc::all(st.shadow(), !crate::nbc::holds(st));
    let _ = st.freeing.set(kept);
    if !kept {
        st.release_windows();
    }
}

impl CommState {
    /// Release the windows (collective over the communicator's ranks; idempotent).
    fn release_windows(&self) {
        if let Some(Some(w)) = self.shm.get() {
            w.release();
        }
        if let Some(Ok(Some(w))) = self.node_shm.get() {
            w.release();
        }
    }
    /// Free the windows and the shadow (the windows collectively, over the communicator's
    /// ranks, which are all freeing it) and the state.
    fn free(self: Box<Self>) {
        self.release_windows();
        // Unless never made (or its making failed).
        if !self.shadow_later() && self.shadow() != consts::comm_null() {
            let mut shadow = self.shadow();
            // SAFETY: made by PMPI_Comm_create, freed exactly once here.
            unsafe { PMPI_Comm_free(&mut shadow) };
        }
    }
    /// The communicator made windows (`shm`'s or the nodes'), on every rank alike: their
    /// free is collective.
    fn has_windows(&self) -> bool {
        matches!(self.shm.get(), Some(Some(_))) || matches!(self.node_shm.get(), Some(Ok(_)))
    }
}

fn keyval() -> Result<c_int, c_int> {
    KEYVAL
        .get_or_try_init(|| {
            let mut kv: c_int = consts::KEYVAL_INVALID();
            // SAFETY: registers our callbacks; `kv` is an out-pointer.
            let rc = unsafe {
                PMPI_Comm_create_keyval(
                    consts::comm_null_copy_fn(),
                    Some(delete_state),
                    &mut kv,
                    std::ptr::null_mut(),
                )
            };
            if rc == consts::SUCCESS() {
                Ok(kv)
            } else {
                Err(rc)
            }
        })
        .copied()
}

/// Size of an intracommunicator and this process's rank in it; `Err(code)` for an invalid
/// communicator, `Ok(None)` for an intercommunicator or one with processes from outside
/// `MPI_COMM_WORLD` (`crate::nodes::outside_world`; both served natively).
pub fn facts(comm: MPI_Comm) -> Result<Option<(usize, usize)>, c_int> {
    if let Some(st) = known(comm) {
        // A state whose shadow could not be made serves nothing more.
        return Ok((!st.shadow_failed()).then_some((st.size, st.rank)));
    }
    Ok(intra(comm)?.filter(|&(size, _)| size <= 1 || !crate::nodes::outside_world(comm, size)))
}

/// [`facts`] for any intracommunicator, from outside the world too (bad input is checked
/// there alike: the MPI's checks are the same).
pub fn intra(comm: MPI_Comm) -> Result<Option<(usize, usize)>, c_int> {
    if comm == consts::comm_null() {
        return Err(consts::ERR_COMM());
    }
    if let Some(st) = known(comm) {
        return Ok(Some((st.size, st.rank)));
    }
    let (mut inter, mut size, mut rank) = (0, 0, 0);
    // SAFETY: out-pointers to locals; an invalid handle yields an error code.
    unsafe {
        let rc = PMPI_Comm_test_inter(comm, &mut inter);
        if rc != consts::SUCCESS() {
            return Err(rc);
        }
        if inter != 0 {
            return Ok(None);
        }
        let rc = PMPI_Comm_size(comm, &mut size);
        if rc != consts::SUCCESS() {
            return Err(rc);
        }
        let rc = PMPI_Comm_rank(comm, &mut rank);
        if rc != consts::SUCCESS() {
            return Err(rc);
        }
    }
    Ok(Some((size as usize, rank as usize)))
}

/// `f` with `comm`'s error handler set to `MPI_ERRORS_RETURN`, restored after: an MPI call
/// of pcoll's own on the user's communicator whose failure pcoll handles itself.
pub fn errors_returned<R>(comm: MPI_Comm, f: impl FnOnce() -> R) -> R {
    let mut saved: MPI_Errhandler = consts::errors_return();
    // SAFETY: errhandler get/set on a valid communicator with valid handles; restored below.
    // (The saved handler's reference is not freed: freeing a predefined handler is an error
    // in some MPIs, and a reference count is all it costs.)
    unsafe {
        PMPI_Comm_get_errhandler(comm, &mut saved);
        PMPI_Comm_set_errhandler(comm, consts::errors_return());
    }
    let r = f();
    // SAFETY: as above.
    unsafe { PMPI_Comm_set_errhandler(comm, saved) };
    r
}

/// The value of `comm`'s attribute `kv`, if set (one attribute query).
pub fn get_attr(comm: MPI_Comm, kv: c_int) -> Result<Option<*mut c_void>, c_int> {
    let mut val: *mut c_void = std::ptr::null_mut();
    let mut flag: c_int = 0;
    // SAFETY: out-pointers to locals.
    let rc = unsafe {
        PMPI_Comm_get_attr(
            comm,
            kv,
            &mut val as *mut *mut c_void as *mut c_void,
            &mut flag,
        )
    };
    if rc != consts::SUCCESS() {
        return Err(rc);
    }
    Ok((flag != 0).then_some(val))
}

/// The state pcoll attached to `comm` under `kv`, if any (one attribute query).
fn attached(comm: MPI_Comm, kv: c_int) -> Result<Option<&'static CommState>, c_int> {
    // For an attribute set by us the value is a `*mut CommState`.
    let Some(val) = get_attr(comm, kv)?.filter(|v| !v.is_null()) else {
        return Ok(None);
    };
    // SAFETY: the attribute lives until the delete callback runs, which happens only when
    // the communicator is freed; the user may not use a freed communicator.
    Ok(Some(unsafe { &*(val as *const CommState) }))
}

/// The state of `comm` if it has one (never creates one; not collective).
pub fn existing(comm: MPI_Comm) -> Option<&'static CommState> {
    if let Some(st) = known(comm) {
        return Some(st);
    }
    attached(comm, *KEYVAL.get()?).ok().flatten()
}

/// The state of `comm`, created (collectively) on first use.
pub fn state(comm: MPI_Comm, size: usize, rank: usize) -> Result<&'static CommState, c_int> {
    find_or_make(comm, size, rank)
}

/// [`state`] for a non-blocking call: a shadow not made yet is wanted by the communicator's
/// next blocking collective (marked at the same call on every rank).
pub fn state_nb(comm: MPI_Comm, size: usize, rank: usize) -> Result<&'static CommState, c_int> {
    let st = find_or_make(comm, size, rank)?;
    st.start_for_nb(comm);
    Ok(st)
}

/// A new state's nodes, read from `MPI_COMM_WORLD`'s (no communication); empty without them.
fn world_layout(comm: MPI_Comm, size: usize) -> OnceCell<pcoll::nodes::Layout> {
    let layout = OnceCell::new();
    if let Some(l) = crate::nodes::from_world(comm, size) {
        log::debug!(target: "pcoll::nodes", "a communicator of {size} ranks: nodes {:?} (read from MPI_COMM_WORLD's)", l.members);
        let _ = layout.set(l);
    }
    layout
}

fn find_or_make(comm: MPI_Comm, size: usize, rank: usize) -> Result<&'static CommState, c_int> {
    if let Some(st) = known(comm) {
        return Ok(st);
    }
    let kv = keyval()?;
    if let Some(st) = attached(comm, kv)? {
        remember(comm, st);
        return Ok(st);
    }
    // The shadow is left for later: made by the first blocking call that needs it.
    let shadow = Shadow(std::cell::UnsafeCell::new(consts::comm_null()));
    let st = Box::into_raw(Box::new(CommState {
        shadow,
        dup: Mutex::new(Some(comm)),
        ready: AtomicBool::new(false),
        failed: AtomicBool::new(false),
        want: Default::default(),
        freeing: OnceCell::new(),
        size,
        rank,
        cache: Mutex::new(HashMap::new()),
        pool: Default::default(),
        last: Mutex::new(None),
        layout: world_layout(comm, size),
        shm: OnceCell::new(),
        wait: Mutex::new(Default::default()),
        wait_memo: [const { AtomicU64::new(u64::MAX) }; WAIT_SLOTS],
        node_wait: Mutex::new(Default::default()),
        node_shm: OnceCell::new(),
        learn: Mutex::new(HashMap::new()),
        nb_seq: Default::default(),
    }));
    // SAFETY: hands ownership of the Box to the attribute; reclaimed in `delete_state`.
    let rc = unsafe { PMPI_Comm_set_attr(comm, kv, st as *mut c_void) };
    if rc != consts::SUCCESS() {
        // SAFETY: not attached (and no shadow made), so still ours.
        drop(unsafe { Box::from_raw(st) });
        return Err(rc);
    }
    // SAFETY: as above: lives until the communicator is freed.
    let st = unsafe { &*st };
    remember(comm, st);
    Ok(st)
}
