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
//! Why the lower quartile and not the median: interference only ever adds time, and on a
//! loaded node it hits more than half of a few calls (a descheduled rank of a busy-polling
//! MPI loses a whole scheduler quantum, milliseconds, in whichever candidate it was running).
//! Measured on this 2-core machine under load, medians of 5 inflated native 3-10x in some
//! cells and sent them to a pcoll algorithm that replayed 1.4-3.5x slower than native; the
//! second best of 5 calls stands three such outliers and still is not the single luckiest
//! call.
//!
//! Every rank counts the calls of a cell alike (the calls of a communicator are the same
//! sequence on every rank, and the cell is a function of facts every rank shares), so the
//! candidate of each call and the agreement's call are the same on every rank.

pub mod table;

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
/// Default margin: a pcoll algorithm must measure at least 10% faster than native (the
/// lower quartile of 5 interleaved calls varies by a few percent on a quiet node; the A/B
/// bar of issue 24 is 1.1x native per cell).
pub const DEFAULT_MARGIN: f64 = 0.10;
/// The model's next best pcoll algorithms explored besides native and the current decision.
pub const DEFAULT_EXTRA: usize = 2;

/// How a cell is explored (agreed across ranks: `PCOLL_LEARN_CALLS`, `PCOLL_LEARN_MARGIN`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Params {
    /// Timed calls per candidate (after one warm-up call each).
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

/// The table has a rule naming an algorithm (not `model`) that may match a call of the cell
/// (its p, op kind, root, and some size of its octave): a learned rule never hides it.
fn measured(r: &Resolver, call: &CallFacts) -> bool {
    let Some(key) = CellKey::of(call) else {
        return false;
    };
    let (lo, hi) = key.bytes();
    r.table.rules(call.coll).iter().any(|rule| {
        rule.algorithm != crate::Pick::Model
            && rule.p.contains(call.p)
            && rule.cond.matches(call.commutative, call.root)
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

/// What a call of a cell does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Run candidate `cand`; time it if `timed` (not a warm-up call).
    Run { cand: usize, timed: bool },
    /// Agree on the winner now (every rank is at this call), then run it.
    Agree,
    /// The cell is decided: run candidate `cand`, the winner.
    Settled(usize),
}

/// The agreed outcome of a cell.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    /// Index of the winner among the candidates.
    pub winner: usize,
    /// Agreed times (the maximum over ranks of each rank's lower quartile), nanoseconds.
    pub agreed: Vec<u64>,
}

/// One cell of one communicator: its candidates, calls, this rank's times, its outcome.
#[derive(Clone, Debug)]
pub struct Cell {
    pub cands: Vec<Candidate>,
    /// Calls of the cell seen so far (the agreement's included).
    pub calls: u64,
    samples: Vec<Vec<u64>>,
    pub outcome: Option<Outcome>,
}

impl Cell {
    /// A new cell; with one candidate (native alone) it is decided at once, without an
    /// agreement (every rank finds the same single candidate).
    pub fn new(cands: Vec<Candidate>) -> Cell {
        let n = cands.len();
        let outcome = (n == 1).then(|| Outcome {
            winner: 0,
            agreed: vec![0],
        });
        Cell {
            cands,
            calls: 0,
            samples: vec![Vec::new(); n],
            outcome,
        }
    }

    /// Calls of exploration: one warm-up round and `timed` rounds over the candidates.
    pub fn explore_calls(&self, p: &Params) -> u64 {
        (self.cands.len() * (1 + p.timed)) as u64
    }

    /// The next call: counted, and what it does.
    pub fn step(&mut self, p: &Params) -> Step {
        let n = self.calls;
        self.calls += 1;
        if let Some(o) = &self.outcome {
            return Step::Settled(o.winner);
        }
        let k = self.cands.len() as u64;
        if n < self.explore_calls(p) {
            Step::Run {
                cand: (n % k) as usize,
                timed: n >= k,
            }
        } else {
            Step::Agree
        }
    }

    /// This rank's time of one timed call of candidate `cand`, in nanoseconds.
    pub fn record(&mut self, cand: usize, ns: u64) {
        if let Some(s) = self.samples.get_mut(cand) {
            s.push(ns);
        }
    }

    /// This rank's time per candidate: the lower quartile of its timed calls (nanoseconds;
    /// `u64::MAX` for one never timed).
    pub fn times(&self) -> Vec<u64> {
        self.samples.iter().map(|s| lower_quartile(s)).collect()
    }

    /// Fix the outcome from the agreed times (the same on every rank); the winner's index.
    pub fn settle(&mut self, agreed: Vec<u64>, margin: f64) -> usize {
        let w = winner(&agreed, margin);
        self.outcome = Some(Outcome { winner: w, agreed });
        w
    }

    /// The decided candidate, if any.
    pub fn decided(&self) -> Option<Candidate> {
        self.outcome.as_ref().map(|o| self.cands[o.winner])
    }
}

/// The lower quartile of `v`: its `(n - 1) / 4`-th smallest value (the best of 1-4 calls,
/// the second best of 5-8, ...; `u64::MAX` for none).
pub fn lower_quartile(v: &[u64]) -> u64 {
    if v.is_empty() {
        return u64::MAX;
    }
    let mut s = v.to_vec();
    s.sort_unstable();
    s[(s.len() - 1) / 4]
}

/// The winner among candidates whose agreed times are `agreed` (index 0 is native): the
/// fastest pcoll candidate if its time is below `(1 - margin)` × native's, else native.
/// Ties go to the earlier candidate. Integer inputs, so every rank computes the same.
pub fn winner(agreed: &[u64], margin: f64) -> usize {
    let Some(&native) = agreed.first() else {
        return 0;
    };
    let best = (1..agreed.len()).min_by_key(|&i| (agreed[i], i));
    match best {
        Some(i) if (agreed[i] as f64) < (1.0 - margin) * native as f64 => i,
        _ => 0,
    }
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
