//! The process's live windows, freed at `MPI_Finalize` in an order every rank shares.

use super::Win;
use crate::consts;
use mpi_sys::*;
use parking_lot::Mutex;
use std::os::raw::c_void;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Live windows (addresses of boxed `Win`s), for [`free_all`].
static REGISTRY: Mutex<Vec<usize>> = parking_lot::const_mutex(Vec::new());

/// Free every live window (at the start of `MPI_Finalize`, where every rank is), in the
/// order of their keys ([`agreed_key`]). Each `MPI_Win_free` waits for the window's other
/// ranks, so every rank must free the windows it shares in one order; creation order is not
/// that when threads made windows on several communicators at once (two ranks then waited
/// in the frees of different windows: session 51's bug hunt). Keys are unique in the
/// job and the same on every rank of a window, so the smallest key not yet freed always has
/// all its ranks at it.
pub fn free_all() {
    ALL_FREED.store(true, Ordering::Release);
    let mut live: Vec<(u64, usize)> = REGISTRY
        .lock()
        .iter()
        // SAFETY: a registered Win is alive: it is unregistered by `release`, which its
        // communicator's delete callback runs before freeing it.
        .map(|&w| (unsafe { (*(w as *const Win)).key }, w))
        .collect();
    live.sort_unstable();
    for (_, w) in live {
        // SAFETY: as above.
        unsafe { (*(w as *const Win)).release() };
    }
}

static ALL_FREED: AtomicBool = AtomicBool::new(false);

/// [`free_all`] ran (`MPI_Finalize` began): the windows of the communicators still alive are
/// freed.
pub fn all_freed() -> bool {
    ALL_FREED.load(Ordering::Acquire)
}

/// A key for a new window over `node`, the same on its every rank and unique in the job:
/// its rank 0's `MPI_COMM_WORLD` rank and how many windows that process keyed before.
/// Collective over `node`.
pub(super) fn agreed_key(node: MPI_Comm, rank: usize) -> u64 {
    static MADE: AtomicU64 = AtomicU64::new(0);
    let mut key = if rank == 0 {
        let n = MADE.fetch_add(1, Ordering::Relaxed);
        ((crate::state::global().world_rank as u64) << 32) | (n & 0xffff_ffff)
    } else {
        0
    };
    // SAFETY: one u64 from rank 0 of `node`, where every rank is.
    unsafe {
        PMPI_Bcast(
            &mut key as *mut u64 as *mut c_void,
            1,
            consts::dt_uint64(),
            0,
            node,
        )
    };
    key
}

/// A window made (its key agreed): freed by [`free_all`] unless released before.
pub(super) fn add(w: &Win) {
    REGISTRY.lock().push(w as *const Win as usize);
}

/// A window released.
pub(super) fn remove(w: &Win) {
    REGISTRY.lock().retain(|&a| a != w as *const Win as usize);
}
