//! The shadow communicator of a [`CommState`] (made when a call first needs it) and what
//! the communicator's next blocking collective makes ([`make_wanted_on`]).

use super::{errors_returned, CommState};
use crate::consts;
use mpi_sys::*;
use std::os::raw::c_int;
use std::sync::atomic::{AtomicBool, Ordering};

/// How a shadow not made yet is being made.
pub(super) enum Making {
    /// `PMPI_Comm_idup` (started by a non-blocking call: [`CommState::start_for_nb`]) runs.
    Idup(MPI_Request),
    /// Not started: the dup of this communicator is made by the next blocking collective
    /// that needs it ([`CommState::shadow`]), or, once a non-blocking call wanted it where
    /// idup is not used ([`idup_ok`]), by its next blocking collective of any kind
    /// ([`make_wanted_on`]); its non-blocking calls go native until then. Where idup is
    /// used, a non-blocking call starts it ([`state_nb`](super::state_nb)).
    Later(MPI_Comm),
}
// SAFETY: plain handles, used under the state's lock.
unsafe impl Send for Making {}

/// [`CommState::want`] bits.
const WANT_SHADOW: u8 = 1;
const WANT_WINDOW: u8 = 2;

/// The shadow's handle, boxed so that its address stays put while `PMPI_Comm_idup` runs.
pub(super) struct Shadow(pub(super) Box<std::cell::UnsafeCell<MPI_Comm>>);
// SAFETY: written only by the MPI before `ready` is set (release), read after it (acquire).
unsafe impl Send for Shadow {}
// SAFETY: as above.
unsafe impl Sync for Shadow {}

impl CommState {
    /// The shadow communicator. Made now if it was left for later (`PMPI_Comm_dup`); if its
    /// `PMPI_Comm_idup` still runs, waits for it, advancing pcoll's schedules meanwhile.
    /// Called where every rank is in the same blocking collective call, or by a schedule
    /// that started once the shadow was made.
    pub fn shadow(&self) -> MPI_Comm {
        if !self.ready.load(Ordering::Acquire) {
            self.make_now();
        }
        // SAFETY: `ready` is set (acquire): the MPI wrote the handle before.
        unsafe { *self.shadow.0.get() }
    }

    fn make_now(&self) {
        {
            let mut d = self.dup.lock();
            if let Some(Making::Later(parent)) = *d {
                // SAFETY: collective dup of the user's communicator (every rank is in the same
                // blocking call) into the boxed handle.
                let rc = errors_returned(parent, || unsafe {
                    PMPI_Comm_dup(parent, self.shadow.0.get())
                });
                self.made(&mut d, rc, "MPI_Comm_dup");
                return;
            }
        }
        let mut pause = crate::nbc::Pause::default();
        while !self.dup_done() {
            crate::nbc::progress();
            pause.pause();
        }
    }

    /// The shadow ([`CommState::shadow`], made now if it was not), or None if it could not be
    /// made (on every rank alike: [`CommState::shadow_failed`]). Called where every rank is
    /// in the same blocking collective call.
    pub fn live_shadow(&self) -> Option<MPI_Comm> {
        let s = self.shadow();
        (!self.shadow_failed() && s != consts::comm_null()).then_some(s)
    }

    /// The shadow was left for later ([`Making::Later`]): this communicator's non-blocking
    /// calls go native until a blocking call makes it.
    pub fn shadow_later(&self) -> bool {
        !self.ready.load(Ordering::Acquire) && matches!(*self.dup.lock(), Some(Making::Later(_)))
    }

    /// A non-blocking call needs the shadow ([`state_nb`](super::state_nb); at the same call on every rank):
    /// one left for later is started with `PMPI_Comm_idup` where idup is used, else wanted
    /// by the next blocking collective ([`make_wanted_on`]).
    pub(super) fn start_for_nb(&self, comm: MPI_Comm) -> Result<(), c_int> {
        if self.ready.load(Ordering::Acquire) {
            return Ok(());
        }
        let mut d = self.dup.lock();
        if !matches!(*d, Some(Making::Later(_))) {
            return Ok(());
        }
        if !idup_ok() {
            drop(d);
            self.want_bits(comm, WANT_SHADOW);
            return Ok(());
        }
        // SAFETY: a constant of the MPI.
        let mut req = unsafe { RSMPI_REQUEST_NULL };
        // SAFETY: collective idup (every rank is in this call) into the boxed handle, whose
        // address stays put until the idup completes.
        let rc = errors_returned(comm, || unsafe {
            PMPI_Comm_idup(comm, self.shadow.0.get(), &mut req)
        });
        if rc != consts::SUCCESS() {
            // As a failed dup: the calls on the communicator go to the MPI.
            self.made(&mut d, rc, "MPI_Comm_idup");
            return Err(rc);
        }
        *d = Some(Making::Idup(req));
        Ok(())
    }

    /// The shadow is made: tests a running `PMPI_Comm_idup` once (no wait).
    pub fn dup_done(&self) -> bool {
        if self.ready.load(Ordering::Acquire) {
            return true;
        }
        let mut d = self.dup.lock();
        let Some(Making::Idup(req)) = d.as_mut() else {
            return self.ready.load(Ordering::Acquire);
        };
        let mut flag: c_int = 0;
        // SAFETY: the idup's request, tested under the lock; the status is ignored.
        let rc = unsafe { PMPI_Test(req, &mut flag, RSMPI_STATUS_IGNORE) };
        if rc == consts::SUCCESS() && flag == 0 {
            return false;
        }
        self.made(&mut d, rc, "MPI_Comm_idup");
        true
    }

    /// The shadow's dup returned `rc` (under the `dup` lock): its error handler set, or the
    /// failure logged (the calls on it then fail with the MPI's errors on a null shadow);
    /// made either way.
    fn made(&self, d: &mut Option<Making>, rc: c_int, call: &str) {
        if rc == consts::SUCCESS() {
            // SAFETY: the dup is done: the handle is valid.
            unsafe { PMPI_Comm_set_errhandler(*self.shadow.0.get(), consts::errors_return()) };
        } else {
            static SAID: AtomicBool = AtomicBool::new(false);
            if !SAID.swap(true, Ordering::Relaxed) {
                log::warn!("{call} of pcoll's shadow communicator failed (code {rc}; too many communicators?): the calls on it go to the MPI");
            }
            // SAFETY: no MPI call writes the handle any more.
            unsafe { *self.shadow.0.get() = consts::comm_null() };
            self.failed.store(true, Ordering::Release);
            // Calls kept to be served again on this state are not any more.
            crate::dispatch::forget_served();
        }
        *d = None;
        self.ready.store(true, Ordering::Release);
    }

    /// The shadow could not be made (after it was tried: [`CommState::dup_done`] or
    /// [`CommState::shadow`]). It fails on every rank alike (the MPI agrees on context ids):
    /// the calls on the communicator go to the MPI (`crate::nodes::forward_always`), and one
    /// that was started on the shadow finishes with the dup's error.
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

/// Whether a first non-blocking call may make its shadow with `PMPI_Comm_idup`. Not on Open
/// MPI: its idup fails inside libnbc ("error 15", a truncation) beside other non-blocking
/// collectives on the same communicator (4.1 and 5.0 without pcoll: `verify/idup_threads.c`;
/// with pcoll `verify/nbdifftest.c` p = 3 hung, `verify/threads.sh` segfaulted). There the
/// shadow is left for later ([`Making::Later`]).
fn idup_ok() -> bool {
    crate::state::global().mpi.abi() != pcoll::mpi::Abi::OpenMpi
}
