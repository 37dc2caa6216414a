//! The last calls pcoll served itself, [`KEPT`] per collective: a loop that calls the same
//! collective with the same arguments (buffers aside) is served from them, without the fast path's
//! queries, the bad-input checks, the validation, the decision and the program lookup, which
//! together cost more than the messages of a small call (a forced 8 B bcast at p = 2 spent
//! ~0.75 us in pcoll besides its one send; ~0.25 us when served again).
//!
//! A call is served again only if everything the full path decided by is the same: the
//! handles (communicator, datatypes, op), the counts, displacements, send count and root,
//! and what the checks read of the buffers (`MPI_IN_PLACE`, NULL, the send buffer aliasing
//! the receive buffer). Handles are compared by value, which is only sound for handles that
//! cannot be freed and reused for another object meanwhile: the datatypes must be named
//! (predefined) and the op predefined; the communicator holds pcoll's state, whose delete
//! callback ([`forget_all`]) clears every entry. The run-time overrides clear them too.
//! An entry is kept only when the decision had the communicator's nodes to go by (it does not
//! change afterwards), never with debug logging (whose lines the full path writes) and never
//! for a decision that warned.
//!
//! The non-blocking and persistent forms keep their own entries (`nb` set: a
//! served `MPI_Ireduce` of 4 KiB spent ~0.3 us of its 1.2-1.6 us validating and deciding),
//! only without `PCOLL_LEARN` (whose verdicts change a cell's decision over time). What else
//! their decision reads changes only in collective calls that forget every entry: a
//! communicator's window or nodes' windows made (at a blocking call).
//!
//! Several entries, not one: programs alternate between a few shapes of a call, and with one
//! entry each call of such a loop misses it. A reduce whose root rotates (IMB-NBC's overlap
//! loop, `i % p`) paid the full path at every call: MPICH 5, p = 2, `MPI_Ireduce` of 4 KiB
//! through `shm`, 1.1 us to start with the root fixed, 2.0-2.1 rotating (session 28).

use super::call::Args;
use super::resolve::Wait;
use super::validate::Valid;
use crate::comm::CommState;
use crate::consts;
use crate::mpi_types::{self, handle_bits};
use parking_lot::Mutex;
use pcoll::algo::{Algorithm, Collective};
use pcoll::learn::CellKey;
use pcoll::Program;
use std::os::raw::c_void;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// What the full path decided for a call, and the call it decided for: its validation, the
/// algorithm, the communicator's state and the program (used only while `gen` is current, so
/// never after the communicator was freed).
pub(super) struct Entry {
    key: CallKey,
    gen: u64,
    pub v: Valid,
    pub alg: Algorithm,
    pub st: &'static CommState,
    pub prog: Arc<Program>,
    /// What each call served from the entry is counted in.
    track: Track,
}

/// What each call served from an entry is counted in.
#[derive(Default)]
pub(super) struct Track {
    /// The call's raced (or learned) cell once decided: each call served from the entry is
    /// counted in it, and none once the cell is due to be raced again.
    pub tally: Option<crate::learn::Tally>,
    /// The cell, if this path steps its calls itself while it explores (its race and
    /// confirmation) or is due to be raced again: `crate::learn::step_kept`.
    pub cell: Option<CellKey>,
    /// The call asked for `shm` and runs without it while its communicator's window waits:
    /// each call served again is counted in the wait, and the one that makes the window takes
    /// the full path (which decides `shm`). Such calls cost the full path's decisions
    /// (~1.3 us) otherwise: Open MPI 4.1, p = 2, 8 KiB reduce 1.70x native (session 55).
    pub wait: Option<Wait>,
}

/// What a call served from an entry runs: the entry's algorithm, or (a call of a cell the
/// entry steps, [`Entry::cell`]) native; `explore`: the call explores its cell (timed or not).
pub(super) struct Pick {
    pub alg: Algorithm,
    pub explore: Option<crate::learn::Explore>,
}

// SAFETY: as for `comm::Known`: the state is shared between threads already (its mutable parts
// behind locks; its shadow communicator a plain handle, used as MPI allows for the thread
// level), and the entry is only reached through its mutex.
unsafe impl Send for Entry {}

/// The scalars of a call's key (its counts and displacements are kept beside it).
#[derive(PartialEq)]
struct Key {
    comm: u64,
    dt: u64,
    sendtype: u64,
    op: u64,
    sendcount: i64,
    root: i64,
    /// `MPI_IN_PLACE` as send buffer, as receive buffer, NULL send, NULL receive buffer, the
    /// send buffer aliasing the receive buffer.
    bufs: [bool; 5],
}

impl Key {
    fn of(a: &Args) -> Key {
        let in_place = a.in_place();
        let regular = a.coll.base() == Collective::Allgatherv && !in_place;
        Key {
            comm: handle_bits(a.comm),
            dt: handle_bits(a.dt),
            sendtype: if regular { handle_bits(a.sendtype) } else { 0 },
            op: if a.coll.reduces() {
                handle_bits(a.op)
            } else {
                0
            },
            sendcount: if regular { a.sendcount } else { 0 },
            root: a.root,
            bufs: bufs(a),
        }
    }
}

/// Everything of a call but its buffers' addresses: what a kept call and its repeats share.
pub(crate) struct CallKey {
    key: Key,
    counts: Vec<i64>,
    displs: Vec<i64>,
}

impl CallKey {
    pub fn of(a: &Args) -> CallKey {
        CallKey {
            key: Key::of(a),
            counts: a.counts.to_vec(),
            displs: a.displs.to_vec(),
        }
    }

    /// `a` is the call this key was made of (buffers aside).
    pub fn is(&self, a: &Args) -> bool {
        self.key == Key::of(a) && self.counts[..] == a.counts[..] && self.displs[..] == a.displs[..]
    }
}

impl Entry {
    /// `a` is the call this entry was kept for (buffers aside).
    fn is(&self, a: &Args) -> bool {
        self.key.is(a)
    }
}

fn bufs(a: &Args) -> [bool; 5] {
    let recv = a.recvbuf as *const c_void;
    [
        a.in_place(),
        recv == consts::in_place(),
        a.sendbuf.is_null(),
        a.recvbuf.is_null(),
        a.sendbuf == recv,
    ]
}

/// Bumped by everything that may change a decision or free a handle an entry holds.
static GEN: AtomicU64 = AtomicU64::new(0);

/// Entries kept per collective and form: the calls of a loop over the roots of four ranks,
/// or a solver's few sizes on a couple of communicators, each served again; looking through
/// them costs a few comparisons of scalars where a miss costs the full path (~0.5-1 us).
pub(super) const KEPT: usize = 4;

/// The entries per collective, the most recently used first: `[false]` the blocking calls',
/// `[true]` those of the non-blocking and persistent forms (`MPI_Ireduce`, ...; a `shm`
/// entry's program is empty, as the blocking one's).
static LAST: [[Mutex<Vec<Entry>>; Collective::ALL.len()]; 2] =
    [const { [const { Mutex::new(Vec::new()) }; Collective::ALL.len()] }; 2];

/// Entries made before this call are not used again (an override changed, or a communicator
/// pcoll served is being freed).
pub fn forget_all() {
    GEN.fetch_add(1, Ordering::AcqRel);
}

/// Serve `a` with `run` if it is the same call as one of the last [`KEPT`] pcoll served of
/// its kind, blocking or (`nb`) non-blocking and persistent (`None`: it is not; take the full
/// path). The entries stay locked while the call runs: a second thread in the same collective
/// meanwhile takes the full path. A call of a raced cell that is not settled on the entry's
/// algorithm (exploring, or due to be raced again) is stepped in its cell here if the entry
/// has the cell, else it takes the full path.
pub(super) fn again<R>(
    g: &'static crate::state::Global,
    nb: bool,
    a: &Args,
    run: impl FnOnce(&Entry, Pick) -> R,
) -> Option<R> {
    if log::log_enabled!(log::Level::Debug) {
        return None;
    }
    let mut kept = LAST[usize::from(nb)][a.coll.index()].try_lock()?;
    let gen = GEN.load(Ordering::Acquire);
    let i = kept.iter().position(|e| e.gen == gen && e.is(a))?;
    let e = &mut kept[i];
    let mut pick = Pick {
        alg: e.alg,
        explore: None,
    };
    if let Some(w) = e.track.wait {
        let memo_gen = crate::gate::memo_gen();
        if w.window_now(e.st, crate::shm::after()) {
            kept.remove(i);
            return None;
        }
        if e.alg == Algorithm::Native {
            Wait { gen: memo_gen, ..w }.memo(a, e.st);
        }
    }
    match (&e.track.tally, e.track.cell) {
        (Some(t), _) if t.take() => {}
        (None, None) => {}
        (_, None) => return None,
        (_, Some(key)) => {
            let (alg, explore, tally) = crate::learn::step_kept(g, e.st, key, e.alg)?;
            pick = Pick { alg, explore };
            // Settled on native: the fast paths forward the cell's next calls.
            if tally.is_some() && alg != e.alg {
                let e = kept.remove(i);
                return Some(run(&e, pick));
            }
            e.track.tally = tally;
        }
    }
    // Most recently used first: a loop of one call finds it at once.
    kept[..=i].rotate_right(1);
    Some(run(&kept[0], pick))
}

/// The generation a decision starts in (see [`keep`]).
pub(super) fn begin() -> u64 {
    GEN.load(Ordering::Acquire)
}

/// Keep the full path's decision `alg` for `a` (validated as `v`, decided in generation
/// `gen` with the communicator's nodes known, run as `prog` on the communicator of `st`;
/// what its calls are counted in: `track`), if its handles cannot be reused.
pub(super) fn keep(
    nb: bool,
    a: &Args,
    v: &Valid,
    (alg, st, prog): (Algorithm, &'static CommState, &Arc<Program>),
    gen: u64,
    track: Track,
) {
    if log::log_enabled!(log::Level::Debug) || !stable_handles(a) {
        return;
    }
    let Some(mut kept) = LAST[usize::from(nb)][a.coll.index()].try_lock() else {
        return;
    };
    // Entries of an earlier generation are never used again, nor one of the same call (a
    // raced cell's, due to be raced again); the least recently used goes.
    let now = GEN.load(Ordering::Acquire);
    kept.retain(|e| e.gen == now && !e.is(a));
    kept.truncate(KEPT - 1);
    kept.insert(
        0,
        Entry {
            key: CallKey::of(a),
            gen,
            v: v.clone(),
            alg,
            st,
            prog: prog.clone(),
            track,
        },
    );
}

/// The call's datatypes are named and its op predefined (neither can be freed): its handles
/// may be compared with a later call's.
pub(crate) fn stable_handles(a: &Args) -> bool {
    (!a.coll.reduces() || mpi_types::op_is_predefined(a.op))
        && mpi_types::is_named(a.dt)
        && (a.coll.base() != Collective::Allgatherv
            || a.in_place()
            || mpi_types::is_named(a.sendtype))
}
