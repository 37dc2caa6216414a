//! Non-blocking calls sent to native for a while, sent to native at their initiation when
//! repeated. A non-blocking call runs native (1) while its communicator's `shm` window waits:
//! it asked for `shm` on a communicator whose window is not made, runs without it and counts
//! in the window's wait (`CommState::window_now`; one of 4-64 KiB waits thousands of calls at
//! p = 2), or (2) until pcoll's shadow communicator is made, at the communicator's next
//! blocking collective (a program of non-blocking collectives and barriers never makes it),
//! or (3) once such calls wanted the window, until that collective makes it; and for good
//! (4) where `shm` is off (`PCOLL_SHM=0`) or the communicator's window was refused (a table
//! rule's `shm` then falls back on every call: `MPI_Ireduce` 1.13-1.39x native at 4-64 KiB
//! on Open MPI 4.1 until session 60).
//! Each such call took the full path (validation, two decisions: ~1.5 us above native; Open
//! MPI 4.1, p = 2, verify/ab.c 100 iterations: `MPI_Ireduce` 1.52-1.65x at 4-16 KiB,
//! `MPI_Iallreduce` 1.15-1.25x, `MPI_Ibcast` 1.62x at 4 KiB, the other four 1.13-1.33x at
//! 8-64 KiB; in case (3) until session 60 a 64 KiB `MPI_Ireduce`'s initiation took 3.7 us
//! against native's 1.0). The blocking forms' repeats are forwarded by the C gate's memo; these are kept
//! here, the last such call per collective: a repeat of it (everything but its buffers'
//! addresses: `dispatch::CallKey`) goes native. One that waits for the window is counted in a
//! counter of the communicator's that the wait adds up at its next ask
//! (`CommState::wait_memo`), up to the call that makes the window (the limit), which takes the
//! full path on every rank alike. A kept call is used only while the served-again generation
//! it was kept in holds: a window or shadow made, a freed communicator or an override ends it
//! (`crate::dispatch::forget_served`).

use crate::dispatch::{Args, CallKey};
use parking_lot::Mutex;
use pcoll::Collective;
use std::sync::atomic::{AtomicU64, Ordering};

/// Counters a communicator keeps for this module (`CommState::wait_memo`'s slots after the
/// gate's memo lines): one per collective.
pub const LINES: usize = Collective::ALL.len();

struct Kept {
    key: CallKey,
    gen: u64,
    /// A call waiting for the window: the communicator's counter (`CommState::wait_memo`,
    /// valid while `gen` holds) and the calls it may count.
    count: Option<(*const AtomicU64, u64)>,
    bytes: usize,
}

// SAFETY: the counter is an atomic inside a communicator's state, which lives while the
// generation the entry was kept in holds (checked before every use); the key holds handles
// only compared.
unsafe impl Send for Kept {}

static KEPT: [Mutex<Option<Kept>>; LINES] = [const { Mutex::new(None) }; LINES];

/// The non-blocking call `a` repeats the kept one (and, waiting for the window, still waits):
/// its bytes, to send it to native now (counted in its communicator's wait). Asked at
/// initiation while none of pcoll's schedules runs.
pub fn forwards(a: &Args) -> Option<usize> {
    let kept = KEPT[a.coll.index()].try_lock()?;
    let k = kept.as_ref()?;
    if k.gen != crate::dispatch::served_gen() || !k.key.is(a) {
        return None;
    }
    if let Some((counter, limit)) = k.count {
        // SAFETY: the generation holds, so the communicator's state (and its counter) lives.
        let counter = unsafe { &*counter };
        // Counted as the gate's memo counts (calls on one communicator come one at a time).
        let n = counter.load(Ordering::Acquire);
        if n >= limit {
            return None;
        }
        counter.store(n + 1, Ordering::Release);
    }
    Some(k.bytes)
}

/// Keep the call `a` sent to native (`bytes`, decided in served-again generation `gen`; a call
/// waiting for the window: with its communicator's counter and limit, `CommState::wait_memo`),
/// if its handles cannot be reused. True if kept (false: what was kept stays).
pub fn keep(a: &Args, bytes: usize, gen: u64, count: Option<(*mut u64, u64)>) -> bool {
    if !crate::dispatch::stable_handles(a) {
        return false;
    }
    let Some(mut kept) = KEPT[a.coll.index()].try_lock() else {
        return false;
    };
    *kept = Some(Kept {
        key: CallKey::of(a),
        gen,
        count: count.map(|(c, limit)| (c as *const AtomicU64, limit)),
        bytes,
    });
    true
}
