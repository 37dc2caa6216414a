//! One cell's state: its exploration, agreements, confirmation and decided winner, and the
//! count of the winner's calls that says when the cell is raced again (see the module doc of
//! [`super`]).

use super::{
    confirm_calls, lower_quartile, median, race_winner, winner, Candidate, CLEAR_MIN_NS, CLEAR_WIN,
    CONFIRM_BLOCK, CONFIRM_NATIVE, RACE_AGAIN_GROWTH,
};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Count one call of a decided cell's winner on `count`, unless it reached `until` (the cell
/// is due to be raced again: `false`, the call must reach [`Cell::step`]).
fn take(count: &AtomicU64, until: u64) -> bool {
    let n = count.load(Ordering::Relaxed);
    if n >= until {
        return false;
    }
    count.store(n + 1, Ordering::Relaxed);
    true
}

/// A decided cell's count of its winner's calls ([`Cell::settled`]) and the count at which it
/// is raced again, for the paths that run such a call without [`Cell::step`] (the library's
/// native fast paths, its served-again path, the gate's memo): every call of a cell is counted
/// once, whichever path runs it, so that every rank races the cell again at the same call.
#[derive(Clone, Debug)]
pub struct Tally {
    count: Arc<AtomicU64>,
    /// The count at which the cell is raced again.
    pub until: u64,
}

impl Tally {
    /// Count a call the path runs, if the cell is not due to be raced again (`false`: it is;
    /// the call must take the full path).
    pub fn take(&self) -> bool {
        take(&self.count, self.until)
    }
    /// The counter, for the gate's memo, which counts the calls it forwards itself.
    pub fn counter(&self) -> *mut u64 {
        self.count.as_ptr()
    }
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
    /// Agreed times (the maximum over ranks of each rank's [`Cell::times`]), nanoseconds.
    pub agreed: Vec<u64>,
}

/// The confirmation of a pcoll winner (see the module doc): the exploration's outcome and,
/// once agreed, the confirmation's times.
#[derive(Clone, Debug, PartialEq)]
pub struct Confirm {
    /// The exploration's winner (a pcoll candidate) and its agreed times.
    pub explored: Outcome,
    /// The confirmation's agreed times of native and of the exploration's winner, ns
    /// (`None` until its agreement).
    pub times: Option<[u64; 2]>,
}

/// One cell of one communicator: its candidates, calls, this rank's times, its outcome.
#[derive(Clone, Debug)]
pub struct Cell {
    pub cands: Vec<Candidate>,
    /// Timed calls per candidate ([`Params::timed_for`](super::Params::timed_for)).
    pub timed: usize,
    /// Calls of the cell's current race (exploration, agreements, confirmation) so far.
    pub calls: u64,
    /// Calls of the decided winner so far, over every race of the cell: counted by
    /// [`Cell::step`] and by the paths that run a decided cell's call without it (the fast
    /// paths, the gate's memo: [`Cell::fast`]). Only grows; shared with them by address.
    pub settled: Arc<AtomicU64>,
    /// The `settled` count at which the cell is raced again (`u64::MAX`: never).
    pub until: u64,
    /// Winner calls between races: the first period ([`Cell::racing_again`]; 0: never) and
    /// the current one.
    again: (u64, u64),
    /// Agreements that decided the cell (races: the first and every one after it).
    pub races: u32,
    /// The winner of the last race (to reset the period when it changes).
    last: Option<usize>,
    /// The last race was the first, or changed the winner.
    pub changed: bool,
    samples: Vec<Vec<u64>>,
    /// The final outcome (after the confirmation, if the exploration's winner was pcoll's).
    pub outcome: Option<Outcome>,
    /// The confirmation, from the exploration's agreement on.
    pub confirm: Option<Confirm>,
    /// The library's index of the cell's record (kept across the two agreements).
    pub record: Option<usize>,
    /// The table the run decides with races this cell (a `race = true` rule): a learned
    /// table keeps racing it ([`table::rule_of`](super::table::rule_of)).
    pub raced_rule: bool,
    /// A race: the rule's algorithm is kept if it, with its path, is no slower than native
    /// ([`race_winner`]).
    pub incumbent: bool,
    /// Exploration in blocks of this many consecutive calls of one candidate, the first not
    /// timed ([`Cell::blocked`]); 1: the candidates rotate call by call.
    pub block: u64,
    /// The cell is on a node with more ranks than cores ([`Cell::crowded`]).
    pub crowded: bool,
}

impl Cell {
    /// A new cell; with one candidate (native alone) it is decided at once, without an
    /// agreement (every rank finds the same single candidate). `timed`: timed calls per
    /// candidate.
    pub fn new(cands: Vec<Candidate>, timed: usize) -> Cell {
        let n = cands.len();
        let outcome = (n == 1).then(|| Outcome {
            winner: 0,
            agreed: vec![0],
        });
        Cell {
            cands,
            timed,
            calls: 0,
            samples: vec![Vec::new(); n],
            outcome,
            confirm: None,
            record: None,
            raced_rule: false,
            incumbent: false,
            block: 1,
            crowded: false,
            settled: Arc::new(AtomicU64::new(0)),
            until: u64::MAX,
            again: (0, 0),
            races: 0,
            last: None,
            changed: false,
        }
    }

    /// The cell raced again after `every` calls of its winner (0: never), the period doubling
    /// while the winner stays ([`RACE_AGAIN_GROWTH`], [`DEFAULT_RACE_AGAIN`](super::DEFAULT_RACE_AGAIN)). Every input is
    /// agreed: every rank races again at the same call of the cell.
    pub fn racing_again(mut self, every: u64) -> Cell {
        self.again = (every, every);
        self
    }

    /// The winner a path that does not call [`Cell::step`] may run for the cell's next call:
    /// the decided one unless the cell is due to be raced again (then the call must reach
    /// `step`). A path that runs it counts the call (`settled`, +1).
    pub fn fast(&self) -> Option<Candidate> {
        let o = self.outcome.as_ref()?;
        (self.settled.load(Ordering::Relaxed) < self.until).then(|| self.cands[o.winner])
    }

    /// The cell's [`Tally`] for the paths that run its winner's calls without `step`.
    pub fn tally(&self) -> Tally {
        Tally {
            count: self.settled.clone(),
            until: self.until,
        }
    }

    /// A decided cell due to be raced again starts over: exploration, agreement (and a pcoll
    /// winner's confirmation), as its first race.
    fn restart(&mut self) {
        self.outcome = None;
        self.confirm = None;
        self.calls = 0;
        self.samples.iter_mut().for_each(|s| s.clear());
    }

    /// An outcome was agreed: when the cell is raced again.
    fn decided_now(&mut self, winner: usize) {
        self.races += 1;
        let before = self.last.replace(winner);
        self.changed = before != Some(winner);
        let (first, cur) = self.again;
        if first == 0 {
            return;
        }
        let next = match before {
            Some(w) if w == winner => cur
                .saturating_mul(2)
                .min(first.saturating_mul(RACE_AGAIN_GROWTH)),
            Some(_) => first,
            None => cur,
        };
        self.again.1 = next;
        self.until = self.settled.load(Ordering::Relaxed).saturating_add(next);
    }

    /// The cell is a race of its rule's algorithm (the second candidate) against native,
    /// decided by [`race_winner`].
    pub fn incumbent(mut self) -> Cell {
        self.incumbent = true;
        self
    }

    /// The cell is served by a `race = true` rule of the table (see [`Cell::raced_rule`]).
    pub fn from_raced_rule(mut self, raced: bool) -> Cell {
        self.raced_rule = raced;
        self
    }

    /// The cell explored in blocks of `len` (> 1) consecutive calls per candidate, each
    /// block's first call a warm-up, until every candidate has at least `timed` timed calls:
    /// each candidate is timed after a call of its own, as the confirmation times them (a
    /// raced rule's cell: `shm` right after a native call measured 4.1 us at 16 KiB where it
    /// takes 3.0-3.3 back to back, Open MPI 4.1, p = 2). The blocks start with the last
    /// candidate (in a race the rule's own algorithm), then native: a race called fewer times than
    /// its race lasts runs mostly what the table chose (IMB-MPI1 calls its 2 MiB reduce 20
    /// times, its 8 MiB one 5: with native's block first they ran native alone).
    pub fn blocked(mut self, len: u64) -> Cell {
        self.block = len.max(1);
        self
    }

    /// The cell is on a node with more ranks than cores, if `on` (agreed at `MPI_Init`): each
    /// rank's time of a candidate is the median of its timed calls, not the lower quartile,
    /// and every pcoll winner is confirmed, clear ([`CLEAR_WIN`]) or not. With ranks taking
    /// turns on the cores a call's time is where the time slices fell, and `shm`'s luckiest
    /// calls (every rank on a core at once) are far below its typical one: Intel MPI, 4 ranks
    /// on 2 cores, reduce_scatter 128-256 KiB, three processes each, read 1.00-1.19x native
    /// by lower quartiles (3 cells of 6 above 1.1) and 0.93-1.02 by medians. `verify/ab.c`
    /// at p = 4, 100 iterations (session 42): six collectives at 4 KiB-1 MiB, two processes
    /// each, Intel MPI: cells above 1.2x native 13 -> 0 by medians; every collective 8 B-8 MiB hot and
    /// cold, one process: Intel MPI 9 -> 3 (5 -> 1 from 4 KiB, where races are), Open MPI 4.1
    /// 2 -> 0. A block of native calls can also fall in another rank's time slice at once.
    pub fn crowded(mut self, on: bool) -> Cell {
        self.crowded = on;
        self
    }

    /// Is candidate `w` a clear winner by the agreed times ([`CLEAR_WIN`]), to be kept
    /// unconfirmed (never on a crowded node)?
    fn clear_win(&self, agreed: &[u64], w: usize) -> bool {
        let native = agreed[0];
        !self.crowded
            && self.block > 1
            && native >= CLEAR_MIN_NS
            && agreed[w].saturating_mul(CLEAR_WIN) <= native
    }

    /// Calls of exploration: one warm-up round and `timed` rounds over the candidates, or
    /// in blocks ([`Cell::blocked`]) as many rounds of blocks as give `timed` timed calls.
    pub fn explore_calls(&self) -> u64 {
        let k = self.cands.len() as u64;
        if self.block > 1 {
            let rounds = (self.timed as u64).div_ceil(self.block - 1);
            return k * rounds * self.block;
        }
        k * (1 + self.timed as u64)
    }

    /// Calls of the confirmation (between its two agreements): [`CONFIRM_ROUNDS`](super::CONFIRM_ROUNDS) per timed
    /// call, or for a cell explored in blocks (each candidate already timed after its own
    /// calls) [`CONFIRM_BLOCKED`](super::CONFIRM_BLOCKED) blocks.
    pub fn confirm_calls(&self) -> u64 {
        confirm_calls(self.block, self.timed)
    }

    /// The next call: counted, and what it does. Exploration (`explore_calls`), the
    /// agreement; for a pcoll winner then the confirmation (`confirm_calls`) and a second
    /// agreement; then the outcome on every call.
    pub fn step(&mut self) -> Step {
        if let Some(o) = &self.outcome {
            if take(&self.settled, self.until) {
                return Step::Settled(o.winner);
            }
            self.restart();
        }
        let n = self.calls;
        self.calls += 1;
        let k = self.cands.len() as u64;
        let e = self.explore_calls();
        if n < e && self.block > 1 {
            // The last candidate's block first (a raced rule's own algorithm; native is 0).
            return Step::Run {
                cand: ((n / self.block + k - 1) % k) as usize,
                timed: !n.is_multiple_of(self.block),
            };
        }
        if n < e {
            return Step::Run {
                cand: (n % k) as usize,
                timed: n >= k,
            };
        }
        if let Some(c) = &self.confirm {
            let i = n - e - 1;
            if i < self.confirm_calls() {
                let (j, first_native) = (i % CONFIRM_BLOCK, CONFIRM_BLOCK - CONFIRM_NATIVE);
                let native = j >= first_native;
                return Step::Run {
                    cand: if native { 0 } else { c.explored.winner },
                    timed: j != 0 && j != first_native,
                };
            }
        }
        Step::Agree
    }

    /// This rank's time of one timed call of candidate `cand`, in nanoseconds.
    pub fn record(&mut self, cand: usize, ns: u64) {
        if let Some(s) = self.samples.get_mut(cand) {
            s.push(ns);
        }
    }

    /// This rank's time per candidate: the lower quartile of its timed calls, the median on a
    /// crowded node ([`Cell::crowded`]) (nanoseconds; `u64::MAX` for one never timed).
    pub fn times(&self) -> Vec<u64> {
        let of: fn(&[u64]) -> u64 = if self.crowded { median } else { lower_quartile };
        self.samples.iter().map(|s| of(s)).collect()
    }

    /// Fix the outcome of an agreement from the agreed times (the same on every rank); the
    /// winner's index (the candidate this call runs). The exploration's agreement starts the
    /// confirmation if the winner is pcoll's, not a clear one ([`CLEAR_WIN`]), and
    /// `confirm` is on; the confirmation's keeps
    /// that winner only if it still beats native ([`winner`] of the two; a race's cell,
    /// [`Cell::incumbent`], decides both by [`race_winner`]).
    pub fn settle(&mut self, agreed: Vec<u64>, margin: f64, confirm: bool) -> usize {
        let incumbent = self.incumbent;
        let pick = |a: &[u64], m: f64| {
            if incumbent {
                race_winner(a)
            } else {
                winner(a, m)
            }
        };
        if let Some(c) = &mut self.confirm {
            let w = c.explored.winner;
            let (nat, cand) = (agreed[0], agreed.get(w).copied().unwrap_or(u64::MAX));
            c.times = Some([nat, cand]);
            let kept = pick(&[nat, cand], margin) == 1;
            let mut o = c.explored.clone();
            o.winner = if kept { w } else { 0 };
            let won = o.winner;
            self.outcome = Some(o);
            self.decided_now(won);
            return won;
        }
        let w = pick(&agreed, margin);
        let clear = w != 0 && self.clear_win(&agreed, w);
        let o = Outcome { winner: w, agreed };
        if w != 0 && confirm && !clear {
            self.confirm = Some(Confirm {
                explored: o,
                times: None,
            });
            self.samples.iter_mut().for_each(|s| s.clear());
        } else {
            self.outcome = Some(o);
            self.decided_now(w);
        }
        w
    }

    /// The decided candidate, if any (the final outcome: a cell being confirmed is not).
    pub fn decided(&self) -> Option<Candidate> {
        self.outcome.as_ref().map(|o| self.cands[o.winner])
    }
}
