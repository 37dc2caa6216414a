//! Communicators freed while pcoll's requests on them remain: persistent requests (which
//! may be started again after `MPI_Comm_free`: the MPI frees a communicator once nothing
//! refers to it any more) and non-blocking ones done but not completed by the user yet. Their
//! state — the shadow, the window, the scratch and programs the requests' calls run on —
//! outlives the communicator: it is freed when the last such request leaves
//! ([`orphan_gone`]), or, if it holds windows, at `MPI_Finalize` (`crate::shm::free_all`: a
//! window's free is collective, while ranks free their requests at moments of their own).
//! Where `MPI_Comm_free` came through pcoll, the ranks agreed there (`super::before_free`).

use super::CommState;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Orphaned states without windows (addresses of leaked `Box<CommState>`s).
static ORPHANS: Mutex<Vec<usize>> = parking_lot::const_mutex(Vec::new());
/// Entries in [`ORPHANS`] (0: [`orphan_gone`] returns at once).
static COUNT: AtomicUsize = AtomicUsize::new(0);

/// In the communicator's delete callback (every rank of it is there; its schedules are
/// done): free the state, or keep it for the requests that outlive the communicator. With
/// windows the ranks agree (any rank's requests keep them on every rank); a window kept
/// stays until `MPI_Finalize`.
pub(super) fn free_or_keep(st: Box<CommState>) {
    let mine = crate::nbc::holds(&st);
    if st.has_windows() && !crate::shm::all_freed() {
        // Kept unless every rank says it holds none (an MPI error keeps it too), as agreed
        // in `MPI_Comm_free` where the free came through it (`super::before_free`).
        let kept =
            (st.freeing.get().copied()).unwrap_or_else(|| !crate::nbc::all(st.shadow(), !mine));
        if kept {
            Box::leak(st); // its windows are freed by `crate::shm::free_all`
            return;
        }
    } else if mine {
        ORPHANS.lock().push(Box::into_raw(st) as usize);
        COUNT.fetch_add(1, Ordering::Relaxed);
        return;
    }
    st.free();
}

/// The last of pcoll's requests on the state `st` left: if its communicator was freed
/// before (an orphan without windows), the state goes now (its shadow's free is local).
pub fn orphan_gone(st: *const CommState) {
    if COUNT.load(Ordering::Relaxed) == 0 {
        return;
    }
    let mut o = ORPHANS.lock();
    let Some(i) = o.iter().position(|&a| a == st as usize) else {
        return;
    };
    o.swap_remove(i);
    COUNT.fetch_sub(1, Ordering::Relaxed);
    drop(o);
    // SAFETY: leaked by `free_or_keep`, listed once, taken out of the list above; nothing
    // refers to it any more (its communicator is freed, its last request gone).
    unsafe { Box::from_raw(st as *mut CommState) }.free();
}
