//! The completion calls with pcoll's requests among the user's: one engine ([`drive`]) for
//! the Wait and Test forms of one, all, any and some requests. Each turn advances every
//! running schedule, hands the MPI a copy of the array in which running schedules' stand-ins
//! are `MPI_REQUEST_NULL` (finished ones are their started stand-ins), and maps what the MPI
//! completed back: the user's handles as the MPI left them, pcoll's stand-ins freed (or left
//! inactive, persistent), their statuses made empty. The Wait forms block in the MPI only
//! when no schedule runs; otherwise they test and turn again.

use super::{find, progress, running, Kind, Phase, ENTRIES, RUNNING, TABLE};
use crate::consts;
use mpi_sys::*;
use std::os::raw::c_int;
use std::sync::atomic::Ordering;

extern "C" {
    fn pcoll_c_status_empty(s: *mut MPI_Status);
}

fn null() -> MPI_Request {
    // SAFETY: a constant of the MPI.
    unsafe { RSMPI_REQUEST_NULL }
}

/// Status `i` of an array of statuses (or the ignore marker itself).
pub fn nth(statuses: *mut MPI_Status, i: usize) -> *mut MPI_Status {
    // SAFETY: comparing with the MPI's marker constant.
    if statuses.is_null() || statuses == unsafe { RSMPI_STATUSES_IGNORE } {
        return statuses;
    }
    statuses.wrapping_add(i)
}

/// The array as the MPI gets it, which of its requests are pcoll's, and whether one of
/// those still runs.
struct Prep {
    copy: Vec<MPI_Request>,
    ours: Vec<bool>,
    pending: bool,
}

fn prep(reqs: &[MPI_Request]) -> Prep {
    let t = TABLE.lock();
    let mut p = Prep {
        copy: reqs.to_vec(),
        ours: vec![false; reqs.len()],
        pending: false,
    };
    for (i, r) in reqs.iter().enumerate() {
        if let Some(k) = find(&t, *r) {
            p.ours[i] = true;
            // Running: nothing to complete yet; finished: its token; inactive (persistent):
            // null, as the standard treats an inactive request.
            p.copy[i] = match t[k].phase {
                Phase::Finished(_) => t[k].token,
                _ => null(),
            };
            p.pending |= t[k].phase == Phase::Running;
        }
    }
    p
}

/// After the MPI's call: a token it did not complete stays the entry's (unchanged handle).
fn keep_tokens(reqs: &[MPI_Request], p: &Prep) {
    let mut t = TABLE.lock();
    for (i, r) in reqs.iter().enumerate() {
        if p.ours[i] {
            if let Some(k) = find(&t, *r) {
                if matches!(t[k].phase, Phase::Finished(_)) {
                    t[k].token = p.copy[i];
                }
            }
        }
    }
}

/// pcoll's request `reqs[i]` was completed by the MPI (its stand-in): empty status; a
/// non-blocking one is freed (the handle becomes `MPI_REQUEST_NULL`), a persistent one is
/// inactive again. Returns the schedule's return code.
fn settle(reqs: &mut [MPI_Request], i: usize, s: *mut MPI_Status) -> c_int {
    // SAFETY: `s` is one of the caller's statuses or an ignore marker (checked in C).
    unsafe { pcoll_c_status_empty(s) };
    let mut t = TABLE.lock();
    let Some(k) = find(&t, reqs[i]) else {
        return consts::SUCCESS();
    };
    let Phase::Finished(rc) = t[k].phase else {
        return consts::SUCCESS(); // inactive: an empty status, nothing else
    };
    log::debug!(
        "request {:x} completed ({:?})",
        crate::mpi_types::handle_bits(reqs[i]),
        t[k].kind
    );
    t[k].token = null(); // completed (and freed) by the MPI
    match t[k].kind {
        Kind::Nonblocking => {
            let mut e = t.swap_remove(k);
            ENTRIES.fetch_sub(1, Ordering::Relaxed);
            // SAFETY: our stand-in, completed by the MPI just now, freed once.
            unsafe { PMPI_Request_free(&mut e.handle) };
            reqs[i] = null();
            super::left(&t, e.planned.st);
        }
        Kind::Persistent => t[k].phase = Phase::Inactive,
    }
    rc
}

/// What the MPI's call on the copy completed: `None` nothing (a test); `Some(list)` these
/// requests with their statuses (empty: no active request in the array).
pub type Done = Option<Vec<(usize, *mut MPI_Status)>>;

/// The MPI's completion call on the copy of the array (`bool`: its Wait form).
pub type Native<'a> = dyn FnMut(&mut [MPI_Request], bool) -> (c_int, Done) + 'a;

/// The engine. `all`: nothing completes while one of pcoll's requests in the array runs
/// (Wait/Test, Waitall/Testall). `native(copy, block)` is the MPI's call (the Wait form if
/// `block`, else the Test form). Returns the return code and whether the call completed
/// (always for `block`).
pub fn drive(
    reqs: &mut [MPI_Request],
    block: bool,
    all: bool,
    native: &mut Native<'_>,
) -> (c_int, bool) {
    let mut pause = Pause::default();
    loop {
        progress();
        let mut p = prep(reqs);
        if !(all && p.pending) {
            let (rc, done) = native(&mut p.copy, block && !running());
            for (i, r) in reqs.iter_mut().enumerate() {
                if !p.ours[i] {
                    *r = p.copy[i];
                }
            }
            keep_tokens(reqs, &p);
            match done {
                // "No active request" while one of ours runs: not complete.
                Some(list) if list.is_empty() && p.pending => {}
                Some(list) => {
                    let mut out = rc;
                    for (i, s) in list {
                        if p.ours[i] {
                            let r = settle(reqs, i, s);
                            if out == consts::SUCCESS() {
                                out = r;
                            }
                        }
                    }
                    return (out, true);
                }
                None if rc != consts::SUCCESS() => return (rc, true),
                None => {}
            }
        }
        if !block {
            return (consts::SUCCESS(), false);
        }
        pause.pause();
    }
}

/// The wait between two turns of a loop that waits for pcoll's schedules ([`drive`],
/// [`super::drain`], `MPI_Probe`): spin [`SPINS`] turns, then yield the core at every turn —
/// with more ranks than cores a spinning rank holds the core the rank it waits for needs
/// (the blocking `shm` waits alike).
#[derive(Default)]
pub(crate) struct Pause(u32);

impl Pause {
    pub(crate) fn pause(&mut self) {
        if self.0 < SPINS {
            self.0 += 1;
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
    }
}

/// Turns of a [`Pause`] spent spinning before it yields the core at every turn.
const SPINS: u32 = 200;

/// `MPI_Request_get_status`: complete without freeing (pcoll's requests are answered here).
///
/// # Safety
///
/// `status` is valid for writing one `MPI_Status`, or is the MPI's `MPI_STATUS_IGNORE` or
/// `MPI_STATUSES_IGNORE`; `req` is a request handle of the caller's (as for the MPI's call).
pub unsafe fn get_status(req: MPI_Request, flag: &mut c_int, status: *mut MPI_Status) -> c_int {
    progress();
    let phase = {
        let t = TABLE.lock();
        find(&t, req).map(|k| t[k].phase)
    };
    let Some(phase) = phase else {
        // SAFETY: the caller's handle and out-pointers (this function's contract).
        return unsafe { PMPI_Request_get_status(req, flag, status) };
    };
    *flag = (phase != Phase::Running) as c_int;
    if *flag != 0 {
        // SAFETY: the caller's status or an ignore marker (this function's contract).
        unsafe { pcoll_c_status_empty(status) };
    }
    match phase {
        Phase::Finished(rc) => rc,
        _ => consts::SUCCESS(),
    }
}

/// `MPI_Start` of one of pcoll's persistent requests (`None`: not pcoll's).
pub fn start(req: MPI_Request) -> Option<c_int> {
    let mut t = TABLE.lock();
    let k = find(&t, req)?;
    let e = &mut t[k];
    log::debug!(
        "start {:x} ({:?})",
        crate::mpi_types::handle_bits(req),
        e.phase
    );
    if e.kind != Kind::Persistent || e.phase != Phase::Inactive {
        // Starting an active or a non-persistent request is erroneous.
        return Some(consts::ERR_REQUEST());
    }
    Some(match super::begin(e) {
        Ok(()) => consts::SUCCESS(),
        Err(rc) => rc,
    })
}

/// `MPI_Request_free` of one of pcoll's requests (`None`: not pcoll's). On a non-blocking or
/// active persistent collective request the MPIs differ (Open MPI frees it, MPICH 4.0 returns
/// an error and leaves it): pcoll answers as the MPI answers for a collective request of its
/// own ([`native_answer`]). A running schedule freed completes later (advanced by the
/// completion calls), as the MPI's own requests do.
pub fn free(req: &mut MPI_Request) -> Option<c_int> {
    let mut t = TABLE.lock();
    let k = find(&t, *req)?;
    log::debug!(
        "free {:x} ({:?})",
        crate::mpi_types::handle_bits(*req),
        t[k].phase
    );
    if t[k].kind == Kind::Nonblocking || t[k].phase == Phase::Running {
        // SAFETY: the MPI's own call on its own request.
        let rc = native_answer(|d| unsafe { PMPI_Request_free(d) });
        if rc != consts::SUCCESS() {
            return Some(rc);
        }
    }
    if t[k].phase == Phase::Running {
        t[k].detached = true;
    } else {
        let mut e = t.swap_remove(k);
        ENTRIES.fetch_sub(1, Ordering::Relaxed);
        // SAFETY: our stand-in (never started) and token (complete, or null), freed once.
        unsafe {
            if e.token != null() {
                PMPI_Request_free(&mut e.token);
            }
            PMPI_Request_free(&mut e.handle);
        }
        super::left(&t, e.planned.st);
    }
    *req = null();
    Some(consts::SUCCESS())
}

/// What the MPI answers when `f` is applied to a collective request of its own (a barrier on
/// `MPI_COMM_SELF`, complete at once; completed here if `f` left it).
fn native_answer(f: impl FnOnce(&mut MPI_Request) -> c_int) -> c_int {
    let mut d = null();
    // SAFETY: a barrier of one process; out-pointer.
    if unsafe { PMPI_Ibarrier(consts::comm_self(), &mut d) } != consts::SUCCESS() {
        return consts::SUCCESS();
    }
    let rc = f(&mut d);
    if d != null() {
        // SAFETY: the barrier's request, still ours.
        unsafe { PMPI_Wait(&mut d, RSMPI_STATUS_IGNORE) };
    }
    rc
}

/// `MPI_Cancel` of one of pcoll's requests: erroneous for a collective request; answered as
/// the MPI answers it for one of its own (Open MPI 4.1: success, no effect; MPICH 4.0: an
/// error). The schedule goes on either way.
pub fn cancel(_req: &mut MPI_Request) -> c_int {
    // SAFETY: the MPI's own call on its own request.
    native_answer(|d| unsafe { PMPI_Cancel(d) })
}

/// Is `req` one of pcoll's requests?
pub fn is_ours(req: MPI_Request) -> bool {
    find(&TABLE.lock(), req).is_some()
}

/// Running schedules (for tests and logs).
pub fn running_count() -> usize {
    RUNNING.load(Ordering::Relaxed)
}
