//! The shadow communicator of a [`CommState`] (made when a call first needs it) and what
//! the communicator's next blocking collective makes ([`make_wanted_on`]).

use super::{errors_returned, CommState};
use crate::consts;
use mpi_sys::*;
use std::os::raw::c_int;
use std::sync::atomic::{AtomicBool, Ordering};

/// [`CommState::want`] bits.
const WANT_SHADOW: u8 = 1;
const WANT_WINDOW: u8 = 2;

/// The shadow's handle, written once (under the `dup` lock) before `ready` is set.
pub(super) struct Shadow(pub(super) std::cell::UnsafeCell<MPI_Comm>);
// SAFETY: written only before `ready` is set (release), read after it (acquire).
unsafe impl Send for Shadow {}
// SAFETY: as above.
unsafe impl Sync for Shadow {}

impl CommState {
    /// The shadow communicator, made now if it is not yet. Called where every rank is in
    /// the same blocking collective call, or by a schedule that started once it was made.
    pub fn shadow(&self) -> MPI_Comm {
        if !self.ready.load(Ordering::Acquire) {
            self.make_now();
        }
        // SAFETY: `ready` is set (acquire): written before.
        unsafe { *self.shadow.0.get() }
    }

    /// Makes the shadow: `PMPI_Comm_create` over the communicator's whole group, not
    /// `PMPI_Comm_dup`, which would run the user's attribute copy callbacks (and their delete
    /// callbacks again when the shadow is freed: a double free for a callback pair that
    /// shares a pointer).
    fn make_now(&self) {
        let mut d = self.dup.lock();
        let Some(parent) = *d else {
            return;
        };
        // SAFETY: collective over `parent` (every rank is in the same blocking call); the
        // group is freed after, the new handle written into the state's cell.
        let rc = errors_returned(parent, || unsafe {
            crate::nbc::meet(parent);
            let mut group = std::mem::MaybeUninit::<MPI_Group>::uninit();
            let rc = PMPI_Comm_group(parent, group.as_mut_ptr());
            if rc != consts::SUCCESS() {
                return rc;
            }
            let mut group = group.assume_init();
            let rc = PMPI_Comm_create(parent, group, self.shadow.0.get());
            PMPI_Group_free(&mut group);
            rc
        });
        self.made(&mut d, rc);
    }

    /// The shadow ([`CommState::shadow`], made now if it was not), or None if it could not be
    /// made (on every rank alike: [`CommState::shadow_failed`]). Called where every rank is
    /// in the same blocking collective call.
    pub fn live_shadow(&self) -> Option<MPI_Comm> {
        let s = self.shadow();
        (!self.shadow_failed() && s != consts::comm_null()).then_some(s)
    }

    /// The shadow is not made yet: this communicator's non-blocking calls go native until a
    /// blocking call makes it.
    pub fn shadow_later(&self) -> bool {
        !self.ready.load(Ordering::Acquire)
    }

    /// A non-blocking call needs the shadow ([`state_nb`](super::state_nb); at the same call
    /// on every rank): one not made yet is wanted by the communicator's next blocking
    /// collective ([`make_wanted_on`]); a non-blocking call never waits for the other ranks.
    /// (Not `PMPI_Comm_idup`: it runs the attribute copy callbacks, a pending one keeps a
    /// freed communicator alive, and Open MPI's fails beside other non-blocking collectives.)
    pub(super) fn start_for_nb(&self, comm: MPI_Comm) {
        if !self.ready.load(Ordering::Acquire) {
            self.want_bits(comm, WANT_SHADOW);
        }
    }

    /// Making the shadow returned `rc` (under the `dup` lock): its error handler set, or the
    /// failure logged (the calls on it then fail with the MPI's errors on a null shadow);
    /// made either way.
    fn made(&self, d: &mut Option<MPI_Comm>, rc: c_int) {
        if rc == consts::SUCCESS() {
            // SAFETY: made: the handle is valid.
            unsafe { PMPI_Comm_set_errhandler(*self.shadow.0.get(), consts::errors_return()) };
        } else {
            static SAID: AtomicBool = AtomicBool::new(false);
            if !SAID.swap(true, Ordering::Relaxed) {
                log::warn!("MPI_Comm_create of pcoll's shadow communicator failed (code {rc}; too many communicators?): the calls on it go to the MPI");
            }
            // SAFETY: no MPI call writes the handle any more.
            unsafe { *self.shadow.0.get() = consts::comm_null() };
            self.failed.store(true, Ordering::Release);
        }
        // Calls kept to be served again on this state are not any more (made: non-blocking
        // calls sent native while it was not, `crate::nbc::waiting`, run pcoll's algorithms).
        crate::dispatch::forget_served();
        *d = None;
        self.ready.store(true, Ordering::Release);
    }

    /// The shadow could not be made (after it was tried: [`CommState::shadow`]). It fails on
    /// every rank alike (the MPI agrees on context ids): the calls on the communicator go to
    /// the MPI (`crate::nodes::forward_always`).
    pub fn shadow_failed(&self) -> bool {
        self.failed.load(Ordering::Acquire)
    }

    /// Mark the window wanted by a non-blocking call on `comm` (this state's communicator)
    /// that could not make it ([`CommState::make_wanted`] makes it).
    pub fn want_shm(&self, comm: MPI_Comm) {
        self.want_bits(comm, WANT_WINDOW);
    }

    /// Mark `bits` wanted; the first registers the state by its communicator's handle, and
    /// the gate declines the calls on it until they are made.
    pub(super) fn want_bits(&self, comm: MPI_Comm, bits: u8) {
        let mut list = WANTED_LIST.lock();
        if self.want.fetch_or(bits, Ordering::Relaxed) == 0 {
            list.push(Wanted {
                comm,
                st: self as *const CommState,
            });
            WANTED.fetch_add(1, Ordering::Relaxed);
            crate::gate::want(comm, true);
        }
    }

    /// Nothing is wanted any more on this state (made, or the communicator freed): returns
    /// the bits it had, taken under the list's lock.
    pub(super) fn unwant(&self) -> u8 {
        let mut list = WANTED_LIST.lock();
        let w = self.want.swap(0, Ordering::Relaxed);
        if w != 0 {
            if let Some(i) = list.iter().position(|e| std::ptr::eq(e.st, self)) {
                let e = list.swap_remove(i);
                crate::gate::want(e.comm, false);
            }
            WANTED.fetch_sub(1, Ordering::Relaxed);
        }
        w
    }

    /// A non-blocking call on this one-node communicator wanted the window, which is not made
    /// yet (no blocking collective on it since): until it is, `shm` cannot serve a
    /// non-blocking call, and nothing more is to be recorded (the same on every rank: the
    /// flag was set at the same call everywhere).
    pub fn shm_awaited(&self) -> bool {
        self.want.load(Ordering::Relaxed) & WANT_WINDOW != 0
            && self.shm.get().is_none()
            && self.layout.get().is_some_and(|l| l.shape().nodes <= 1)
    }

    /// At the communicator's next blocking collective (any that pcoll intercepts: the seven,
    /// `MPI_Barrier`, the others `ffi::drained` lists; every rank of the communicator is in
    /// it, and reaches here: the gate declines every blocking call on the communicator
    /// meanwhile): make the shadow left for later, and the nodes and the window a
    /// non-blocking call wanted. All are collective, and the flags were set at the same call
    /// on every rank.
    fn make_wanted(&self, g: &crate::state::Global) {
        let w = self.unwant();
        if w == 0 {
            return;
        }
        let _ = self.shadow();
        if w & WANT_WINDOW != 0 && self.layout(g).shape().nodes <= 1 {
            let _ = self.shm();
        }
    }
}

/// States with something wanted ([`CommState::make_wanted`]; 0: a blocking collective looks
/// for none).
static WANTED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// A state with something wanted, by its communicator's handle.
struct Wanted {
    comm: MPI_Comm,
    st: *const CommState,
}
// SAFETY: a handle and a state pointer, used under the list's lock; the state is removed from
// the list before it is freed (`delete_state` calls [`CommState::unwant`]).
unsafe impl Send for Wanted {}

static WANTED_LIST: parking_lot::Mutex<Vec<Wanted>> = parking_lot::const_mutex(Vec::new());

/// Some communicator's shadow or window is wanted ([`CommState::make_wanted`]).
pub fn any_wanted() -> bool {
    WANTED.load(Ordering::Relaxed) > 0
}

/// Before a blocking collective on `comm` (every rank of it is in the call): what a
/// non-blocking call wanted on it is made ([`CommState::make_wanted`]). The state is found by
/// the handle among the wanted ones, with no MPI call (`comm` may be any handle the user
/// passed). One atomic load when nothing is wanted.
pub fn make_wanted_on(comm: MPI_Comm) {
    if !any_wanted() || crate::state::bypassed() {
        return;
    }
    let b = crate::mpi_types::handle_bits(comm);
    let st = WANTED_LIST
        .lock()
        .iter()
        .find(|e| crate::mpi_types::handle_bits(e.comm) == b)
        .map(|e| e.st);
    if let Some(st) = st {
        // SAFETY: listed, so not freed (see `Wanted`); the user may not free a communicator
        // while calling a collective on it.
        unsafe { &*st }.make_wanted(crate::state::global());
    }
}
