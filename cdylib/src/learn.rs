//! `PCOLL_LEARN` in the library (the pure part, cells, candidates, schedule, winner and the
//! learned table, is `pcoll::learn`): the cells of each communicator (in its
//! [`CommState`]), the timing of a cell's explored calls, the one agreement per cell (a
//! non-blocking allreduce `MAX` of the per-candidate times on the communicator's shadow, at the
//! same call on every rank), and at `MPI_Finalize` the records of every rank gathered to
//! rank 0 of `MPI_COMM_WORLD`, which writes the learned table.
//!
//! Which call does what: the fast paths (native, served again) read a cell's verdict
//! ([`verdict`]) and take a call only once its cell is decided; every call of a cell still
//! explored therefore reaches the full path on every rank, where [`step`] counts it (the
//! same count on every rank), names its candidate, and at the agreement's call agrees. The
//! native gate stays closed while learning (it would take calls the learner must count).

use crate::comm::{self, CommState};
use crate::consts;
use crate::state::{self, Global};
use mpi_sys::*;
use parking_lot::Mutex;
use pcoll::decide::{defects, CallFacts, NativeFacts};
use pcoll::learn::table::Record;
pub use pcoll::learn::Tally;
use pcoll::learn::{self as core, Candidate, Cell, CellKey, Step};
use pcoll::Algorithm;

/// A raced rule's cell explores native and the rule's algorithm in blocks of this many calls
/// ([`Cell::blocked`]): 16 calls for a cell of 64 KiB (56 below) ...
const RACE_BLOCK: u64 = 4;
/// ... and of this many from [`LONG_BLOCK_BYTES`] to [`core::HUGE_CELL`] (32 calls): `shm` on its ring of 8 slots
/// runs its first calls after a run of native calls slower than it runs steadily (Open MPI
/// 4.1, p = 2, 256 KiB: the race measured 31-60 us in blocks of 4, 33-41 in blocks of 8,
/// 15-19 in blocks of 16, where a loop of `shm` calls takes 16-19).
const LONG_BLOCK: u64 = 16;
const LONG_BLOCK_BYTES: usize = 128 << 10;

/// What the fast paths may do with a call.
pub enum Verdict {
    /// Not learning, or the call is not the learner's: decide as always.
    Off,
    /// Its cell is still explored (or not seen yet, or due to be raced again): the full path.
    Explore,
    /// Its cell is decided: this candidate; a path that runs it counts the call
    /// ([`Tally::take`]).
    Settled(Candidate, Tally),
}

/// Learning is on (agreed at `MPI_Init`).
#[inline]
pub fn on(g: &Global) -> bool {
    g.cfg.learn.is_some() && !g.cfg.disable
}

/// The table in use came from `PCOLL_TUNING` (the cells it measures are not explored).
fn user_table(g: &Global) -> bool {
    g.cfg.tuning.is_some() && !g.table.origin().starts_with("built-in")
}

/// The call's cell if the learner decides it (`None`: it does not), and how: every
/// candidate (`true`: `PCOLL_LEARN`), or native against the rule's algorithm (`false`: a
/// `race = true` rule, [`core::raced`]; learning or not).
fn cell_of(g: &'static Global, call: &CallFacts) -> Option<(CellKey, bool)> {
    if !on(g) && !g.races {
        return None;
    }
    let r = state::resolver(g, call.coll, call.p);
    let key = CellKey::of(call)?;
    // A crowded node's small cells keep the table's decision (the flag is agreed).
    let timed_fairly = !crate::nodes::crowded() || core::learned_when_crowded(&key);
    if on(g) && timed_fairly && core::learnable(&r, call, user_table(g)) {
        return Some((key, true));
    }
    (g.races && core::raced(&r, call)).then_some((key, false))
}

/// [`cell_of`] for a call no native defect keeps away from native (that call is the
/// resolver's: every rank knows the defect).
fn learner_cell(
    g: &'static Global,
    call: &CallFacts,
    nf: &dyn NativeFacts,
) -> Option<(CellKey, bool)> {
    cell_of(g, call).filter(|_| defects::fired(g.mpi, call, nf).is_none())
}

/// The call's cell races native against the rule's algorithm (not `PCOLL_LEARN`'s cell), and
/// no native defect keeps the call away from native.
pub fn races(g: &'static Global, call: &CallFacts, nf: &dyn NativeFacts) -> bool {
    matches!(learner_cell(g, call, nf), Some((_, false)))
}

/// The verdict of the call's cell on `comm` for a fast path (no MPI call, nothing counted:
/// a path that runs a settled call counts it with the [`Tally`]).
pub fn verdict(g: &'static Global, comm: MPI_Comm, call: &CallFacts) -> Verdict {
    let Some((key, _)) = cell_of(g, call) else {
        return Verdict::Off;
    };
    let Some(st) = comm::existing(comm) else {
        return Verdict::Explore;
    };
    let cells = st.learn.lock();
    match cells
        .get(&key)
        .and_then(|cell| Some((cell.fast()?, cell.tally())))
    {
        Some((c, t)) => Verdict::Settled(c, t),
        None => Verdict::Explore,
    }
}

/// A timed call of a candidate: [`Timer::stop`] records it in its cell.
pub struct Timer {
    st: &'static CommState,
    key: CellKey,
    cand: usize,
    t0: f64,
}

impl Timer {
    /// Record this rank's time of the call.
    pub fn stop(self) {
        let ns = ((wtime() - self.t0).max(0.0) * 1e9) as u64;
        if let Some(c) = self.st.learn.lock().get_mut(&self.key) {
            c.record(self.cand, ns);
        }
    }
}

/// A call that explores its cell (not kept for the served-again path); `timer` is started
/// by [`Explore::start`] if the call is timed.
pub struct Explore {
    timed: Option<(&'static CommState, CellKey, usize)>,
}

impl Explore {
    /// Start the clock just before the call runs, after a barrier on the communicator's
    /// shadow (every rank times the same calls of a cell: [`Cell::step`]). From a common
    /// start a candidate's time is its latency; back to back, an algorithm whose ranks leave
    /// before the data has arrived (`shm`'s bcast root, a reduce's non-roots) overlaps its
    /// calls and measured faster than it runs where calls start together: Intel MPI, p = 2,
    /// bcast 32 KiB, races back to back chose `shm` at 2.1-4.6 us against native's 4.0-4.4 in
    /// processes whose A/B (a barrier before each call) measured it 1.16-1.32x native.
    ///
    /// The barrier is the communicator's window's ([`crate::shm::run::barrier`]) once it is
    /// made (on every rank alike), else `MPI_Barrier` on the shadow: MPICH 5, p = 2, the
    /// calls of a race of `shm` against native at allgatherv 4 KiB took ~0.5 us more with the
    /// MPI's (session 39). Not on a crowded node (agreed), where ranks leave the window's
    /// barrier as they get a core: Open MPI 5, 4 ranks on 2 cores, reduce 4-16 KiB, races
    /// timed `shm` at 1.7-4.7 us against native's 11-18, where the A/B measured it 1.2-1.6x
    /// native (with `MPI_Barrier`: 8.7-20 against 11-19).
    pub fn start(&self) -> Option<Timer> {
        self.timed.map(|(st, key, cand)| {
            let window = st
                .known_shm()
                .filter(|w| w.ranks() == st.size && !crate::nodes::crowded());
            if window.is_some_and(|w| crate::shm::run::barrier(w).is_ok()) {
                // Synchronised through the window.
            } else if let Some(shadow) = st.live_shadow() {
                // Without a shadow (never made: on every rank alike) the call goes to the MPI.
                // A barrier on the shadow, which every rank of the communicator enters at this
                // call (the call is collective and timed on every rank).
                crate::nbc::meet(shadow);
            }
            Timer {
                st,
                key,
                cand,
                t0: wtime(),
            }
        })
    }
}

/// Run `run`, timed for its cell if `explore` says so (from the common start of
/// [`Explore::start`]; recorded by [`Timer::stop`]).
pub fn timed<R>(explore: Option<&Explore>, run: impl FnOnce() -> R) -> R {
    let timer = explore.and_then(Explore::start);
    let r = run();
    if let Some(t) = timer {
        t.stop();
    }
    r
}

fn wtime() -> f64 {
    // SAFETY: no arguments.
    unsafe { PMPI_Wtime() }
}

/// What [`step`] decided for a call of a cell.
pub struct Stepped {
    /// The candidate the call runs.
    pub cand: Candidate,
    /// The call explores its cell (timed or not).
    pub explore: Option<Explore>,
    /// A settled call's tally, for the served-again path that may run the cell's next calls.
    pub tally: Option<Tally>,
    /// The cell, if the served-again path may step its next calls ([`step_kept`]: its one
    /// pcoll candidate is the algorithm this call's entry runs).
    pub kept: Option<CellKey>,
}

/// The full path's step for a call the learner decides: count it in its cell (made on the
/// first call, every rank alike: the communicator's state, nodes and, when `shm` is a
/// candidate, its window are made here, collectively), then its candidate, and whether it
/// explores. `call` gets the nodes and the `shm` facts the candidates were chosen with.
/// `None`: not the learner's call (the resolver decides as without learning).
pub fn step(
    g: &'static Global,
    comm: MPI_Comm,
    rank: usize,
    call: &mut CallFacts,
    nf: &dyn NativeFacts,
) -> Option<Stepped> {
    let (key, full) = learner_cell(g, call, nf)?;
    let st = comm::state(comm, call.p, rank).ok()?;
    let mut cells = st.learn.lock();
    if let std::collections::hash_map::Entry::Vacant(e) = cells.entry(key) {
        // A raced `shm` rule races once the communicator's window is made: until then its
        // calls are decided as any other `shm` call, whose window waits
        // (`crate::shm::after`; the same calls on every rank).
        if !full && window_waits(g, st, call) {
            return None;
        }
        e.insert(new_cell(g, st, call, nf, full)?);
    }
    call.nodes = st.known_layout().map(|l| l.shape()).unwrap_or_default();
    let cell = cells.get_mut(&key)?;
    let (cand, explore) = step_cell(g, st, key, cell);
    let c = cell.cands[cand];
    if c.alg == Algorithm::Shm {
        call.shm_refused = st.shm().is_none();
    }
    Some(Stepped {
        cand: c,
        tally: explore.is_none().then(|| cell.tally()),
        explore,
        kept: (c.alg != Algorithm::Native && servable(cell, c.alg)).then_some(key),
    })
}

/// One call of `cell` (the cell `key` of the communicator of `st`, every rank at the same
/// call): its candidate, and whether it explores.
fn step_cell(
    g: &'static Global,
    st: &'static CommState,
    key: CellKey,
    cell: &mut Cell,
) -> (usize, Option<Explore>) {
    match cell.step() {
        Step::Run { cand, timed } => {
            let timed = timed.then_some((st, key, cand));
            (cand, Some(Explore { timed }))
        }
        Step::Settled(w) => (w, None),
        Step::Agree => {
            let w = agree(g, st, key, cell);
            // A winner still to be confirmed: this call must not be kept for the
            // served-again path either (its next calls are counted here).
            (w, cell.outcome.is_none().then_some(Explore { timed: None }))
        }
    }
}

/// The served-again path may step `cell`, whose entry runs `alg`: every candidate but native
/// is `alg` (a race's cell: native and its rule's algorithm, with the rule's segment, which
/// the entry's program was built with).
fn servable(cell: &Cell, alg: Algorithm) -> bool {
    let mut own = cell.cands.iter().filter(|c| c.alg != Algorithm::Native);
    own.next().is_some_and(|c| c.alg == alg) && own.next().is_none()
}

/// [`step`] for a call the served-again path runs from the entry of an earlier call of the
/// cell `key` on the communicator of `st` that ran `alg` (the call is the same but for its
/// buffers, so its cell and candidates are too): the cell is stepped as the full path steps
/// it, on every rank alike whichever path each rank's call takes. Skips the validation and
/// the decision, ~0.55 us of a small call (MPICH 5, p = 2, a forced `shm` allgatherv of
/// 4 KiB: 1.88 us through them against 1.33 served again). `None`: the cell is gone or not
/// [`servable`] (the full path steps it).
pub fn step_kept(
    g: &'static Global,
    st: &'static CommState,
    key: CellKey,
    alg: Algorithm,
) -> Option<(Algorithm, Option<Explore>, Option<Tally>)> {
    let mut cells = st.learn.lock();
    let cell = cells.get_mut(&key).filter(|c| servable(c, alg))?;
    let (cand, explore) = step_cell(g, st, key, cell);
    let tally = explore.is_none().then(|| cell.tally());
    Some((cell.cands[cand].alg, explore, tally))
}

/// The call's raced rule (or, on a crowded node, the model) asks for `shm` on a communicator
/// whose window may still wait: not asked for yet, the nodes one or not known yet (no MPI
/// call).
fn window_waits(g: &'static Global, st: &CommState, call: &CallFacts) -> bool {
    if !crate::shm::may_wait(st) || st.known_layout().is_some_and(|l| l.shape().nodes > 1) {
        return false;
    }
    // The resolver's own decision (`step` has sent calls a native defect fires for away).
    state::resolver(g, call.coll, call.p)
        .resolve(call, &pcoll::decide::PlainFacts)
        .is_ok_and(|d| d.algorithm == Algorithm::Shm)
}

/// A new cell: the communicator's nodes (asked now: every rank is in this call), the
/// decision without learning, and the candidates (`full`: the model's next best too; else
/// native and that decision, a raced rule's); `shm` among them asks for its window.
fn new_cell(
    g: &'static Global,
    st: &'static CommState,
    call: &mut CallFacts,
    nf: &dyn NativeFacts,
    full: bool,
) -> Option<Cell> {
    call.nodes = st.layout(g).shape();
    call.shm_refused = !crate::shm::enabled();
    let mut params = g.cfg.learn_params();
    if !full {
        params.extra = 0;
    }
    let pick = |call: &CallFacts| -> Option<Vec<Candidate>> {
        let r = state::resolver(g, call.coll, call.p);
        let d = r.resolve(call, nf).ok()?;
        let current = Candidate {
            alg: d.algorithm,
            segment: d.segment,
        };
        Some(core::candidates(&r, call, current, params.extra))
    };
    let mut cands = pick(call)?;
    if cands.iter().any(|c| c.alg == Algorithm::Shm) && st.shm().is_none() {
        call.shm_refused = true;
        cands = pick(call)?;
    }
    let names: Vec<String> = cands.iter().map(|c| c.alg.to_string()).collect();
    let key = CellKey::of(call);
    log::debug!(
        "learn: {}: candidates {}",
        key.map_or(String::new(), |k| k.describe()),
        names.join(", ")
    );
    let timed = key.map_or(params.timed, |k| params.timed_for(&k));
    let cell = Cell::new(cands, timed).crowded(crate::nodes::crowded());
    // From `HUGE_CELL` a call passes every slot of the window: blocks of 4 again.
    let long = key.is_some_and(|k| (LONG_BLOCK_BYTES..core::HUGE_CELL).contains(&k.bytes().0));
    let block = if long { LONG_BLOCK } else { RACE_BLOCK };
    Some(if full {
        // A learned cell explores in blocks too, as a race does: call by call its `shm` ran
        // after the other candidates' calls and lost cells it wins in a loop (Open MPI 4.1
        // reduce 256 KiB: 47.0 us against native's 35.4, where a loop of `shm` takes 16-19;
        // MPICH 5 allgather 32 KiB: 14.2 against 10.1, 0.63-0.67x native in a loop).
        let raced = core::raced(&state::resolver(g, call.coll, call.p), call);
        cell.from_raced_rule(raced).blocked(block)
    } else {
        cell.blocked(block)
            .racing_again(g.cfg.race_again())
            .from_raced_rule(true)
            .incumbent()
    })
}

/// The agreement of a cell (every rank of the communicator is at this call): each rank's
/// times (skewed by the test hook, if set), one `MAX` reduction, the winner. Rank 0 of the
/// communicator keeps the record for the learned table. Returns the winner.
fn agree(g: &'static Global, st: &'static CommState, key: CellKey, cell: &mut Cell) -> usize {
    let local = skew(cell.times(), st.rank, cell.races);
    let n = local.len();
    // Two check words: a hash of the cell and its complement; after MAX both come back
    // unchanged only if every rank agreed on the same cell and candidates.
    let h = check_word(&key, &cell.cands);
    let Some(shadow) = st.live_shadow() else {
        // No shadow (on every rank alike): the communicator's calls go to the MPI.
        return cell.settle(vec![0; n], 0.0, false);
    };
    let mut v = local.clone();
    v.extend([h, !h]);
    // Waited for while the running schedules advance (`nbc::meet`).
    // SAFETY: `v` holds u64, reduced in place on the communicator's shadow, where every
    // rank of it is at this call.
    let rc =
        unsafe { crate::nbc::allreduce(&mut v, consts::dt_uint64(), consts::op_max(), shadow) };
    if rc != consts::SUCCESS() || v[n] != h || v[n + 1] != !h {
        log::error!(
            "learn: {}: the ranks did not agree (rc {rc}); native from now on",
            key.describe()
        );
        return cell.settle(vec![0; n], 0.0, false);
    }
    v.truncate(n);
    let margin = g.cfg.learn_params().margin;
    let mine = core::winner(&local, margin);
    let confirming = cell.confirm.is_some();
    let w = cell.settle(v.clone(), margin, true);
    log::debug!(
        "learn: {}: {} local times {local:?} ns (own winner {}), agreed {v:?} ns: {}{}",
        key.describe(),
        if confirming {
            "confirmation:"
        } else {
            "exploration:"
        },
        cell.cands[mine].alg,
        cell.cands[w].alg,
        if cell.outcome.is_none() {
            " (to be confirmed)"
        } else {
            ""
        }
    );
    if st.rank == 0 && cell.block > 1 && cell.outcome.is_some() {
        race_settled(key, cell, &v);
    }
    if st.rank == 0 {
        if let Some(rec) = Record::of(key, cell, margin) {
            let mut recs = RECORDS.lock();
            match cell.record {
                Some(i) if i < recs.len() => recs[i] = rec,
                _ => {
                    cell.record = Some(recs.len());
                    recs.push(rec);
                }
            }
        }
    }
    w
}

/// The raced cells decided where this process is rank 0 of the communicator: every race in
/// the info log at once; in the `PCOLL_STATS` report at the end the first race of each cell
/// and every later one that changed its winner (at most [`RACE_LINES`] lines).
static RACES: Mutex<Vec<String>> = parking_lot::const_mutex(Vec::new());
const RACE_LINES: usize = 1000;

fn race_settled(key: CellKey, cell: &Cell, agreed: &[u64]) {
    let w = cell.decided().map_or(Algorithm::Native, |c| c.alg);
    let times: Vec<String> = cell
        .cands
        .iter()
        .zip(agreed)
        .filter(|(_, &t)| t != u64::MAX)
        .map(|(c, &t)| format!("{} {:.1} us", c.alg, t as f64 / 1e3))
        .collect();
    let again = match cell.races {
        0 | 1 => String::new(),
        n => format!(" (race {n})"),
    };
    let line = format!("race {}{again}: {w} ({})", key.describe(), times.join(", "));
    log::info!("{line}");
    let mut races = RACES.lock();
    if cell.changed && races.len() < RACE_LINES {
        races.push(line);
    }
}

/// The raced cells' lines of the `PCOLL_STATS` report (not `pcoll: stats ...`, whose lines
/// name a collective and an algorithm): `pcoll: race <cell>: <winner> (<each candidate's
/// agreed time: the slowest rank's lower quartile>)`.
pub fn race_report(out: &mut String) {
    for line in RACES.lock().iter() {
        out.push_str("pcoll: ");
        out.push_str(line);
        out.push('\n');
    }
}

fn check_word(key: &CellKey, cands: &[Candidate]) -> u64 {
    pcoll::agree::digest_of(format!("{key:?}{cands:?}").as_bytes())
}

/// Test hook `PCOLL_LEARN_SKEW=1` (per rank, deliberately not agreed): this rank's times
/// made 1000 times slower for every candidate but one, a different one on each rank (rank r
/// favours candidate r mod k), so that the ranks' own winners differ. `PCOLL_LEARN_SKEW=2`:
/// every rank favours candidate `races mod k` (`races`: the cell's races decided before this
/// agreement), so that a raced cell's winner changes at every race.
fn skew(mut times: Vec<u64>, rank: usize, races: u32) -> Vec<u64> {
    static MODE: once_cell::sync::Lazy<u32> = once_cell::sync::Lazy::new(|| {
        match std::env::var("PCOLL_LEARN_SKEW")
            .ok()
            .as_deref()
            .map(str::trim)
        {
            None | Some("") | Some("0") => 0,
            Some("2") => 2,
            Some(_) => 1,
        }
    });
    let k = times.len();
    let favoured = match *MODE {
        1 => rank % k,
        2 => races as usize % k,
        _ => return times,
    };
    for (i, m) in times.iter_mut().enumerate() {
        if i != favoured {
            *m = m.saturating_mul(1000);
        }
    }
    times
}

/// The cells decided on communicators where this process is rank 0.
static RECORDS: Mutex<Vec<Record>> = parking_lot::const_mutex(Vec::new());

#[path = "learn_finalize.rs"]
mod finalize;
pub use finalize::{at_finalize, at_init};
