//! `PCOLL_LEARN`: the algorithm of a cell measured inside the running application (issue 24).
//! The pure part: cells, candidates, the exploration schedule, the winner, the learned table
//! ([`table`]). The library (`cdylib/src/learn.rs`) times the calls, runs the one agreement
//! per cell and writes the table at `MPI_Finalize`.
//!
//! A **cell** ([`CellKey`]) is what a decision may depend on and every rank of a call shares:
//! the collective, the communicator size, the octave of the message bytes (`[2^e, 2^(e+1))`),
//! the op's kind (commutative or not) and, for a reduce, whether the root is 0. Cells are
//! kept per communicator: calls on another communicator of the same size are other calls.
//!
//! A cell's **candidates** ([`candidates`]): native, the decision pcoll would make without
//! learning, and the cost model's next best pcoll algorithms that can serve the call
//! ([`Params::extra`], 2 by default), each with the model's segment. Its first calls
//! rotate among them round-robin ([`Cell::step`]): one round of warm-up (not timed: a
//! program is built, a window made, caches filled), then [`Params::timed`] timed rounds. The
//! call after the last round is the **agreement**: every rank gives its per-candidate time
//! (the lower quartile of its timed calls, [`lower_quartile`]), one `MAX` reduction shows
//! every rank the same vector (each candidate's time on its slowest rank: a collective is as
//! slow as its slowest rank), and [`winner`] picks from it — the same on every rank,
//! whatever each rank measured. A pcoll algorithm wins only if faster than native by
//! [`Params::margin`].
//!
//! A pcoll winner is **confirmed** before it is kept: the cell's next
//! [`CONFIRM_ROUNDS`] × `timed` calls run it in blocks of [`CONFIRM_BLOCK`] calls whose last
//! [`CONFIRM_NATIVE`] run native instead, every call timed but the first of each run, and a
//! second agreement keeps it only if it still beats native by the margin ([`Cell::step`],
//! [`Confirm`]). The exploration lasts a few milliseconds at the start of a cell and rotates
//! the candidates call by call; the confirmation compares the two over 16 times as many
//! calls, later, each after a call of its own (a collective can be slower right after
//! another algorithm's traffic: Intel MPI's native reduce at 512 KiB measured 214-322 us
//! between `binomial` calls in an IMB loop, 54 us back to back, where `binomial` took 228).
//! An exploration in blocks that found a pcoll winner at most half native's time keeps it
//! unconfirmed ([`CLEAR_WIN`]), unless the node is crowded ([`Cell::crowded`]).
//!
//! Why the lower quartile and not the median: interference only ever adds time, and on a
//! loaded node it hits more than half of a few calls (a descheduled rank of a busy-polling
//! MPI loses a whole scheduler quantum, milliseconds, in whichever candidate it was running).
//! Measured on this 2-core machine under load, medians of 5 inflated native 3-10x in some
//! cells and sent them to a pcoll algorithm that replayed 1.4-3.5x slower than native; the
//! second best of 5 calls stands three such outliers and still is not the single luckiest
//! call. On a node with more ranks than cores the time slices, not interference, set a
//! call's time, and there the luckiest calls are no candidate's typical one: the median
//! ([`Cell::crowded`]).
//!
//! Every rank counts the calls of a cell alike (the calls of a communicator are the same
//! sequence on every rank, and the cell is a function of facts every rank shares), so the
//! candidate of each call and the agreement's call are the same on every rank.

mod cell;
pub mod table;
mod verdict;

pub use cell::{Cell, Confirm, Outcome, Step, Tally};
pub use verdict::{confirm_calls, lower_quartile, median, race_winner, winner, RACE_PCOLL_COST_NS};

use crate::algo::{Algorithm, Collective};
use crate::decide::model::{node_prices, prices};
use crate::decide::{CallFacts, Resolver};
use crate::model::nodes::Levels;

/// Timed rounds per candidate by default: the lower quartile of 5 (the second best) stands
/// three outliers (a page fault, a descheduled rank), and 4 candidates then cost 24 calls of
/// a cell (4 warm-up + 20 timed) before its winner runs on every call.
pub const DEFAULT_TIMED: usize = 5;
/// Largest accepted `PCOLL_LEARN_CALLS`.
pub const MAX_TIMED: usize = 100;
/// Cells below this many bytes take [`SMALL_FACTOR`] times the timed calls: their calls last
/// a few microseconds, where the skew of ranks leaving the previous call is as large as the
/// differences between candidates, and more calls cost next to nothing.
pub const SMALL_CELL: usize = 64 << 10;
/// See [`SMALL_CELL`]: 4 x 5 = 20 timed calls per candidate.
pub const SMALL_FACTOR: usize = 4;
/// Cells from this many bytes take half the timed calls, rounded up (3 of 5): a call lasts
/// hundreds of microseconds there, long beside the ranks' skew, and each call a race gives
/// the loser costs that much. One such call also passes every slot of `shm`'s default window
/// (8 slots of 256 KiB), so the C-ABI crate races these cells in blocks of 4 again (16 from
/// 128 KiB below this). A race of 32 calls is what a benchmark timing few calls sees: IMB-MPI1
/// calls a 4 MiB reduce 31 times in all and timed its last 10 in native's block, each from a
/// barrier (Intel MPI, p = 2, session 38: 1.12x native hot, 1.17x cold).
pub const HUGE_CELL: usize = 2 << 20;
/// A pcoll algorithm must also win by this many nanoseconds. Measured (Intel MPI, p = 2,
/// 2026-11-25): cells learned at 0.2-0.3 us below native's ~1-2 us (`binomial` bcast at 64 B
/// and 4 KiB) replayed 1.3-1.4x slower than native; a gain that small is within the noise of
/// a few timed calls, and worth nothing to the program.
pub const MIN_GAIN_NS: u64 = 500;
/// Confirmation calls per timed call of the exploration (see the module doc): 16 x 5 = 80
/// calls for a large cell, 16 x 20 = 320 for a small one.
pub const CONFIRM_ROUNDS: usize = 16;
/// The confirmation runs in blocks of this many calls: the exploration's winner, then
/// [`CONFIRM_NATIVE`] calls of native; a block's first call of each is not timed.
pub const CONFIRM_BLOCK: u64 = 8;
/// Confirmation blocks of a cell explored in blocks ([`Cell::blocked`]): 32 calls, so that
/// a raced rule's cell is settled within its first ~90 calls (~50 from 64 KiB).
pub const CONFIRM_BLOCKED: u64 = 4;
/// Native calls at the end of each confirmation block (a quarter of the calls).
pub const CONFIRM_NATIVE: u64 = 2;
/// A pcoll winner of an exploration in blocks ([`Cell::blocked`]) at most 1 / `CLEAR_WIN`
/// of native's time, native taking at least [`CLEAR_MIN_NS`], is kept without confirmation.
/// Blocks already time each candidate after a call of its own (what the confirmation guards
/// against in a call-by-call exploration), and a confirmation runs native on 8 of its 32
/// calls: where native is far slower that is the race's cost (MPICH 5, p = 2, reduce 8 MiB:
/// native 2.5-5.7 ms a call against `shm`'s 0.7-1.2, a race every 512+ calls).
pub const CLEAR_WIN: u64 = 2;
/// See [`CLEAR_WIN`]: below this native time a confirmation costs little, and a call's time
/// is nearer the noise of a few timed calls.
pub const CLEAR_MIN_NS: u64 = 50_000;
/// Default margin: a pcoll algorithm must measure at least 10% faster than native (the
/// lower quartile of 5 interleaved calls varies by a few percent on a quiet node; the A/B
/// bar of issue 24 is 1.1x native per cell).
pub const DEFAULT_MARGIN: f64 = 0.10;
/// The model's next best pcoll algorithms explored besides native and the current decision.
pub const DEFAULT_EXTRA: usize = 2;
/// A raced cell is raced again after this many calls of its winner by default
/// (`PCOLL_RACE_AGAIN`; [`Cell::racing_again`]): a native or a machine that changes its mode
/// later in the run (this VM's Intel MPI and its core-to-core transfers do, for seconds at a
/// time) is caught within a few thousand calls, and a race of 16-56 calls, half of them the
/// loser's, costs 2-5% of 512 calls at most, less as the period grows.
pub const DEFAULT_RACE_AGAIN: u64 = 512;
/// While races keep their winner the period doubles, up to this many times the first one
/// (8192 calls by default); a race that changes the winner starts from the first again.
pub const RACE_AGAIN_GROWTH: u64 = 16;

/// With more ranks on a node than cores (agreed at `MPI_Init`), cells below this many bytes
/// are not learned: they keep the table's decision. Their calls take a few microseconds, and
/// with ranks taking turns on the cores a candidate's time is where the time slices fell:
/// Open MPI 4.1, 4 ranks on 2 cores, bcast 8 B measured native at 0.2, 3.3 and 4.9 us and
/// `binomial` at 0.4-3.0 in three processes, and the same native call on both sides of an
/// A/B read 1.12-3.56x at 8-64 B (session 27): such a cell's winner is noise written down.
pub const CROWDED_MIN_BYTES: usize = 4 << 10;

/// Is the cell `key` learned on a node with more ranks than cores? From
/// [`CROWDED_MIN_BYTES`] on.
pub fn learned_when_crowded(key: &CellKey) -> bool {
    key.bytes().0 >= CROWDED_MIN_BYTES
}

/// How a cell is explored (agreed across ranks: `PCOLL_LEARN_CALLS`, `PCOLL_LEARN_MARGIN`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Params {
    /// Timed calls per candidate (after one warm-up call each) in a cell of at least
    /// [`SMALL_CELL`] bytes; smaller cells take [`SMALL_FACTOR`] times as many
    /// ([`Params::timed_for`]).
    pub timed: usize,
    /// A pcoll algorithm wins only if its agreed time is below `(1 - margin)` × native's.
    pub margin: f64,
    /// The model's next best pcoll algorithms tried.
    pub extra: usize,
}

impl Default for Params {
    fn default() -> Params {
        Params {
            timed: DEFAULT_TIMED,
            margin: DEFAULT_MARGIN,
            extra: DEFAULT_EXTRA,
        }
    }
}

impl Params {
    /// Timed calls per candidate in the cell `key`: more for small cells ([`SMALL_CELL`]),
    /// at most [`MAX_TIMED`], fewer for huge ones ([`HUGE_CELL`]). A function of agreed facts:
    /// the same on every rank.
    pub fn timed_for(&self, key: &CellKey) -> usize {
        let lo = key.bytes().0;
        if lo < SMALL_CELL {
            self.timed_small()
        } else if lo >= HUGE_CELL {
            self.timed.div_ceil(2)
        } else {
            self.timed
        }
    }
    /// Timed calls per candidate in a cell below [`SMALL_CELL`] bytes.
    pub fn timed_small(&self) -> usize {
        (self.timed * SMALL_FACTOR).min(MAX_TIMED.max(self.timed))
    }
}

/// One cell: what a decision may depend on that every rank of a call shares.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CellKey {
    pub coll: Collective,
    pub p: usize,
    /// `e` of the octave `[2^e, 2^(e+1))` of the message bytes.
    pub octave: u8,
    pub commutative: bool,
    /// A reduce's root is not 0 (false for the other collectives).
    pub root_nonzero: bool,
}

impl CellKey {
    /// The cell of a call; `None` for calls with nothing to learn (one rank, no bytes).
    pub fn of(call: &CallFacts) -> Option<CellKey> {
        if call.p <= 1 || call.bytes == 0 {
            return None;
        }
        Some(CellKey {
            coll: call.coll,
            p: call.p,
            octave: (usize::BITS - 1 - call.bytes.leading_zeros()) as u8,
            commutative: call.commutative || !call.coll.reduces(),
            root_nonzero: call.coll == Collective::Reduce && call.root != 0,
        })
    }
    /// The cell's bytes, half-open.
    pub fn bytes(&self) -> (usize, usize) {
        let lo = 1usize << self.octave;
        (lo, lo.saturating_mul(2))
    }
    /// A short name for logs: `reduce p=4 [1MiB, 2MiB) commutative root 0`.
    pub fn describe(&self) -> String {
        let (lo, hi) = self.bytes();
        let f = crate::tuning::size::format_size;
        let mut s = format!("{} p={} [{}, {})", self.coll, self.p, f(lo), f(hi));
        if self.coll.reduces() {
            s.push_str(if self.commutative {
                " commutative"
            } else {
                " non-commutative"
            });
        }
        if self.coll == Collective::Reduce {
            s.push_str(if self.root_nonzero {
                " root != 0"
            } else {
                " root 0"
            });
        }
        s
    }
}

/// An algorithm with its segment bytes (0: the cost model's optimum for the call).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Candidate {
    pub alg: Algorithm,
    pub segment: usize,
}

/// Can the learner decide this call? Not when the user forced an algorithm (`PCOLL_DISABLE`,
/// `pcoll_force`, `PCOLL_<COLL>`), nor when the table given by `PCOLL_TUNING` (`user_table`)
/// measured the cell: a rule naming an algorithm matches the call. Every input is agreed.
pub fn learnable(r: &Resolver, call: &CallFacts, user_table: bool) -> bool {
    if r.cfg.disable || r.over.algorithm.is_some() || r.cfg.forced(call.coll).is_some() {
        return false;
    }
    if CellKey::of(call).is_none() {
        return false;
    }
    !(user_table && measured(r, call))
}

/// Is the call raced: does the rule the table serves it by say `race = true`, or, on a
/// crowded node ([`Resolver::crowded`]), does the model choose a pcoll algorithm for it
/// (no rule, or `algorithm = "model"`; cells from [`CROWDED_MIN_BYTES`]) — and nothing
/// outranks the table: `PCOLL_DISABLE`, `pcoll_force`, `PCOLL_<COLL>`, `PCOLL_RACE=0`? Such
/// a call's cell is explored as `PCOLL_LEARN` explores one, with two candidates — native and
/// the rule's (or the model's) algorithm — whether or not `PCOLL_LEARN` is set, and nothing
/// is written. Blocking calls only. Every input is agreed.
///
/// The model prices no rank waiting for a core: 4 ranks on 2 cores, its `shm` reduce at
/// 16-64 KiB measured 1.3-1.8x native on Open MPI 5 and Intel MPI (session 38).
pub fn raced(r: &Resolver, call: &CallFacts) -> bool {
    if r.cfg.disable || r.cfg.race_off || r.over.algorithm.is_some() {
        return false;
    }
    // Non-blocking calls are not timed (their clock would stop at the completion call): a
    // raced rule runs its algorithm for them.
    if call.nonblocking || r.cfg.forced(call.coll).is_some() || CellKey::of(call).is_none() {
        return false;
    }
    let c = r.table.lookup_call(
        call.coll,
        call.p,
        call.bytes,
        call.commutative,
        call.root,
        call.nonblocking,
    );
    match c {
        Some(c) if c.algorithm != crate::Pick::Model => c.race,
        _ => {
            r.crowded
                && CellKey::of(call).is_some_and(|k| learned_when_crowded(&k))
                && r.model_pick(call).best != Algorithm::Native
        }
    }
}

/// The table has a rule naming an algorithm (not `model`) that may match a call of the cell
/// (its p, op kind, root, and some size of its octave), a measurement (not a carried default,
/// `measured = false`): a learned rule never hides it.
fn measured(r: &Resolver, call: &CallFacts) -> bool {
    let Some(key) = CellKey::of(call) else {
        return false;
    };
    let (lo, hi) = key.bytes();
    r.table.rules(call.coll).iter().any(|rule| {
        rule.algorithm != crate::Pick::Model
            && rule.measured
            && rule.p.contains(call.p)
            && rule
                .cond
                .matches(call.commutative, call.root, call.nonblocking)
            && rule.bytes.lo < hi
            && lo < rule.bytes.hi
    })
}

/// The model's predicted seconds of every pcoll algorithm it prices for the call (two
/// levels over several nodes, as [`Resolver::model_pick`] does).
fn model_prices(r: &Resolver, call: &CallFacts) -> Vec<(Algorithm, f64)> {
    let params = r.table.model();
    if call.nodes.multi() {
        let levels = Levels {
            intra: params,
            inter: r.table.model_net(),
            node_shm: call.node_shm,
        };
        let (c, p, b) = (call.coll, call.p, call.bytes);
        node_prices(&levels, c, p, b, call.commutative, &call.nodes)
    } else {
        prices(
            r.mpi,
            &params,
            call.coll,
            call.p,
            call.bytes,
            call.commutative,
        )
        .0
    }
}

/// The candidates of a call's cell, in the order they rotate: native, the decision without
/// learning (`current`, if not native), then the model's cheapest other pcoll algorithms
/// that can serve the call (`extra` of them, each with the model's segment). The same on
/// every rank: every input is a shared fact of the call.
pub fn candidates(
    r: &Resolver,
    call: &CallFacts,
    current: Candidate,
    extra: usize,
) -> Vec<Candidate> {
    let mut out = vec![Candidate {
        alg: Algorithm::Native,
        segment: 0,
    }];
    if current.alg != Algorithm::Native {
        out.push(current);
    }
    let mut priced = model_prices(r, call);
    priced.retain(|(a, _)| call.eligible(*a).is_ok() && out.iter().all(|c| c.alg != *a));
    // Stable: equal predictions keep the algorithms' own order.
    priced.sort_by(|x, y| x.1.total_cmp(&y.1));
    out.extend(
        priced
            .iter()
            .take(extra)
            .map(|&(alg, _)| Candidate { alg, segment: 0 }),
    );
    out
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;

#[cfg(test)]
#[path = "table_tests.rs"]
mod table_tests;
