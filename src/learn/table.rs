//! The learned table: each decided cell as a [`Record`] (one line of text, so that the ranks'
//! records can be gathered to rank 0 of `MPI_COMM_WORLD` at `MPI_Finalize`), merged over the
//! run's communicators ([`merge`]) and written as a `tuning.toml` ([`learned_table`]) whose
//! rules `PCOLL_TUNING` replays: one rule per cell (exact `p`, the cell's octave of bytes,
//! `op` and `root` conditions where the collective has them), its measurement as comments.

use super::{Candidate, Cell, CellKey};
use crate::algo::{Algorithm, Collective};
use crate::tuning::size::format_size;
use crate::tuning::{shadowed, Rule, Table};

/// One decided cell of one communicator.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    pub key: CellKey,
    pub cands: Vec<Candidate>,
    /// Agreed times per candidate (each rank's lower quartile, the median on a crowded node;
    /// the maximum over ranks), ns.
    pub agreed: Vec<u64>,
    pub winner: usize,
    /// Calls of the cell explored before the winner was fixed (the agreement's included).
    pub calls: u64,
    /// Timed calls per candidate.
    pub timed: usize,
    pub margin: f64,
    /// A pcoll winner's confirmation: the exploration's winner and, once agreed, the
    /// confirmation's times of native and of it (ns).
    pub confirm: Option<(usize, Option<[u64; 2]>)>,
    /// The table the run used races the cell ([`Cell::raced_rule`]; its algorithm is the
    /// second candidate, the decision without learning).
    pub raced: bool,
    /// The cell explored in blocks of this many calls per candidate (1: call by call).
    pub block: u64,
    /// Learned where a node has more ranks than cores (a fact of the run, not of the line:
    /// set when the table is written): a native winner below [`super::SMALL_CELL`] is not
    /// raced however close its best pcoll candidate came ([`Record::near`]). There two
    /// candidates' times of some 20-40 us are where the time slices fell: Open MPI 4.1, 4
    /// ranks on 2 cores, allgather 32 KiB learned native at 23.3 us against `shm`'s 21.7,
    /// raced in the replay, which chose `shm` and measured 1.13x native in its A/B; larger
    /// cells keep their races, without which 256 KiB-1 MiB reduces that `shm` serves at
    /// 0.6x native were replayed native (session 28).
    pub crowded: bool,
}

impl Record {
    /// One line: `coll p octave commutative root_nonzero winner calls timed margin` then
    /// `alg:segment:ns` per candidate, space-separated.
    pub fn to_line(&self) -> String {
        let k = &self.key;
        let mut s = format!(
            "{} {} {} {} {} {} {} {} {:?}",
            k.coll.name(),
            k.p,
            k.octave,
            k.commutative as u8,
            k.root_nonzero as u8,
            self.winner,
            self.calls,
            self.timed,
            self.margin
        );
        for (c, t) in self.cands.iter().zip(&self.agreed) {
            s.push_str(&format!(" {}:{}:{t}", c.alg.name(), c.segment));
        }
        match self.confirm {
            Some((w, Some([n, c]))) => s.push_str(&format!(" confirm:{w}:{n}:{c}")),
            Some((w, None)) => s.push_str(&format!(" confirm:{w}:-:-")),
            None => {}
        }
        if self.raced {
            s.push_str(" raced");
        }
        if self.block > 1 {
            s.push_str(&format!(" block:{}", self.block));
        }
        s
    }

    /// The record of a cell after its exploration's agreement (`None` before): its final
    /// winner, or while it is being confirmed the exploration's.
    pub fn of(key: CellKey, cell: &Cell, margin: f64) -> Option<Record> {
        let (explored, winner) = match (&cell.confirm, &cell.outcome) {
            (Some(c), Some(o)) => (&c.explored, o.winner),
            (Some(c), None) => (&c.explored, c.explored.winner),
            (None, Some(o)) => (o, o.winner),
            (None, None) => return None,
        };
        Some(Record {
            key,
            cands: cell.cands.clone(),
            agreed: explored.agreed.clone(),
            winner,
            calls: cell.calls,
            timed: cell.timed,
            margin,
            confirm: cell.confirm.as_ref().map(|c| (c.explored.winner, c.times)),
            raced: cell.raced_rule,
            block: cell.block,
            crowded: false,
        })
    }

    /// The inverse of [`Record::to_line`] (`None` for a line it did not make).
    pub fn from_line(line: &str) -> Option<Record> {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 10 {
            return None;
        }
        let num = |i: usize| f[i].parse::<u64>().ok();
        let flag = |i: usize| match f[i] {
            "0" => Some(false),
            "1" => Some(true),
            _ => None,
        };
        let key = CellKey {
            coll: f[0].parse::<Collective>().ok()?,
            p: num(1)? as usize,
            octave: u8::try_from(num(2)?).ok().filter(|&e| e < 64)?,
            commutative: flag(3)?,
            root_nonzero: flag(4)?,
        };
        let (mut cands, mut agreed, mut confirm, mut raced) = (Vec::new(), Vec::new(), None, false);
        let mut block = 1;
        for c in &f[9..] {
            if *c == "raced" {
                raced = true;
                continue;
            }
            if let Some(b) = c.strip_prefix("block:") {
                block = b.parse::<u64>().ok().filter(|&b| b > 1)?;
                continue;
            }
            if let Some(rest) = c.strip_prefix("confirm:") {
                let v: Vec<&str> = rest.split(':').collect();
                let w = v.first()?.parse::<usize>().ok()?;
                let t = match (v.get(1), v.get(2)) {
                    (Some(&"-"), Some(&"-")) => None,
                    (Some(n), Some(c)) => Some([n.parse().ok()?, c.parse().ok()?]),
                    _ => return None,
                };
                confirm = Some((w, t));
                continue;
            }
            let mut it = c.split(':');
            let alg = it.next()?.parse::<Algorithm>().ok()?;
            let segment = it.next()?.parse::<usize>().ok()?;
            agreed.push(it.next()?.parse::<u64>().ok()?);
            cands.push(Candidate { alg, segment });
        }
        let winner = num(5)? as usize;
        let ok = winner < cands.len() && confirm.is_none_or(|(w, _)| w < cands.len());
        ok.then_some(Record {
            key,
            cands,
            agreed,
            winner,
            calls: num(6)?,
            timed: num(7)? as usize,
            margin: f[8].parse().ok()?,
            confirm,
            raced,
            block,
            crowded: false,
        })
    }

    /// The winner.
    pub fn chosen(&self) -> Candidate {
        self.cands[self.winner]
    }

    /// The comment above the cell's rule: calls, each candidate's time, the margin.
    pub fn note(&self) -> String {
        let us = |ns: u64| format!("{:.1} us", ns as f64 / 1e3);
        let meds: Vec<String> = self
            .cands
            .iter()
            .zip(&self.agreed)
            .map(|(c, &t)| format!("{} {}", label(c), us(t)))
            .collect();
        let native = self.agreed[0].max(1) as f64;
        let explored = self.confirm.map_or(self.winner, |(w, _)| w);
        let how = if self.block > 1 {
            format!(
                "in blocks of {} calls, the first of each a warm-up, at least {} timed calls each",
                self.block, self.timed
            )
        } else {
            format!("1 warm-up + {} timed calls each", self.timed)
        };
        let mut s = format!(
            "{}: {} calls explored ({} candidates, {how}); {} (slowest rank): {}; margin {:.0}% and {:.1} us: {} ({:.2}x native)",
            self.key.describe(),
            self.calls,
            self.cands.len(),
            if self.crowded {
                "medians (a crowded node)"
            } else {
                "lower quartiles"
            },
            meds.join(", "),
            100.0 * self.margin,
            super::MIN_GAIN_NS as f64 / 1e3,
            label(&self.cands[explored]),
            self.agreed[explored] as f64 / native
        );
        match self.confirm {
            Some((w, Some([n, c]))) => s.push_str(&format!(
                "\nconfirmed over the next {} calls (blocks of {}, the last {} native): native {}, {} {}: {} ({:.2}x native)",
                super::confirm_calls(self.block, self.timed),
                super::CONFIRM_BLOCK,
                super::CONFIRM_NATIVE,
                us(n),
                label(&self.cands[w]),
                us(c),
                label(&self.chosen()),
                if self.winner == 0 { 1.0 } else { c as f64 / n.max(1) as f64 }
            )),
            Some((_, None)) => {
                s.push_str("\nits confirmation did not finish before the run ended")
            }
            None if self.winner != 0 => s.push_str(&format!(
                "\nkept unconfirmed: at most 1/{} of native's time, explored in blocks",
                super::CLEAR_WIN
            )),
            None => {}
        }
        match self.raced_alg() {
            Some(c) if self.raced => s.push_str(&format!(
                "\nthe table this run used races the cell: replayed raced, {} against native",
                label(&c)
            )),
            Some(c) if self.winner == 0 => {
                let (l, r) = (label(&c), self.near().map_or(0.0, |(_, r)| r));
                s.push_str(&format!(
                    "\nnative won, {l} measured {r:.2}x native (within {NEAR_FACTOR}x): replayed raced, {l} against native (race = true; PCOLL_RACE=0: {l}, unraced)"
                ))
            }
            Some(c) => s.push_str(&format!(
                "\nreplayed raced, {} against native (race = true; PCOLL_RACE=0: unraced)",
                label(&c)
            )),
            None => {}
        }
        s
    }

    /// The algorithm the cell's rule races against native where it is replayed: a pcoll
    /// winner (the replay keeps it only where it still beats native in its own process); for
    /// a cell the table the run used races, where native won here, that rule's algorithm; for
    /// another native winner whose best pcoll candidate came close ([`Record::near`]), that
    /// candidate. `None`: native, replayed unraced.
    pub fn raced_alg(&self) -> Option<Candidate> {
        let w = self.chosen();
        if w.alg != Algorithm::Native {
            return Some(w);
        }
        let rule = self
            .cands
            .get(1)
            .filter(|c| self.raced && c.alg != Algorithm::Native);
        rule.copied().or_else(|| self.near().map(|(c, _)| c))
    }

    /// A native winner's best pcoll candidate if it measured within [`NEAR_FACTOR`] of
    /// native, where native took at least [`NEAR_MIN_NS`] (the confirmation's times where a
    /// confirmation sent the cell back to native, else the exploration's), with its time over
    /// native's. A decision that close is a property of the process on this VM: the replay
    /// races the two in its own process rather than trusting the learning run's. Not for a
    /// small cell learned on a crowded node ([`Record::crowded`]).
    pub fn near(&self) -> Option<(Candidate, f64)> {
        if self.winner != 0 || (self.crowded && self.key.bytes().0 < super::SMALL_CELL) {
            return None;
        }
        let (native, cand, t) = match self.confirm {
            Some((w, Some([n, c]))) => (n, w, c),
            Some((_, None)) => return None,
            None => {
                let best = (1..self.agreed.len())
                    .filter(|&i| self.cands[i].alg != Algorithm::Native)
                    .min_by_key(|&i| (self.agreed[i], i))?;
                (self.agreed[0], best, self.agreed[best])
            }
        };
        // `cand` is pcoll's: the exploration's winner that was confirmed, or filtered above.
        let ratio = t as f64 / native.max(1) as f64;
        let ok = native >= NEAR_MIN_NS && t != u64::MAX && ratio <= NEAR_FACTOR;
        ok.then_some((self.cands[cand], ratio))
    }
}

/// A cell learned native whose best pcoll candidate measured within this factor of native is
/// replayed raced ([`Record::near`]). Measured: this VM's natives differ up to 2x from one
/// process to the next (Open MPI 4.1, p = 4: the learning run's native reduce at 1 MiB took
/// 478 us against `shm`'s 557, 1.17x, where the plain run measured `shm` at 0.66x native),
/// so a learned native that close is a missed win in the next process as often as not.
pub const NEAR_FACTOR: f64 = 1.2;
/// ... for cells whose native took at least this long. Chosen when a raced cell settled
/// native paid the Rust path on every call (~0.3 us: at most 1.5% of 20 us); since session 32
/// such calls are forwarded from the C gate's memo at the MPI's own cost; the floor was kept.
pub const NEAR_MIN_NS: u64 = 20_000;

/// `greedy`, `greedy (segment 64KiB)`.
fn label(c: &Candidate) -> String {
    if c.segment > 0 {
        format!("{} (segment {})", c.alg, format_size(c.segment))
    } else {
        c.alg.to_string()
    }
}

/// One record per cell: of the records of the same cell (other communicators, gathered from
/// other ranks), the one explored in the most calls (ties: the first in `to_line` order),
/// with the winners of the others named in its note. Sorted by cell; independent of the
/// order of `records`.
pub fn merge(mut records: Vec<Record>) -> Vec<(Record, Vec<Algorithm>)> {
    records.sort_by(|a, b| {
        (a.key, std::cmp::Reverse(a.calls), a.to_line()).cmp(&(
            b.key,
            std::cmp::Reverse(b.calls),
            b.to_line(),
        ))
    });
    let mut out: Vec<(Record, Vec<Algorithm>)> = Vec::new();
    for r in records {
        match out.last_mut() {
            Some((first, others)) if first.key == r.key => others.push(r.chosen().alg),
            _ => out.push((r, Vec::new())),
        }
    }
    out
}

/// The rule replaying a record's winner for its cell. A cell won by native names its op kind
/// only where the learned cells of its octave need it (`learned`: every merged cell): native
/// serves every op, and is what the program gets without pcoll, so a native cell covers the
/// kind nobody explored. That keeps the native ranges whole for the native gate, which does
/// not see the op's kind. The root stays named: a root other than 0 is where some MPIs'
/// native reduce has a defect pcoll steers around (`decide::defects`), and such a cell is
/// never explored.
pub fn rule_of(r: &Record, learned: &[CellKey]) -> Rule {
    let (lo, hi) = r.key.bytes();
    let raced = r.raced_alg();
    let w = raced.unwrap_or(r.chosen());
    let native = w.alg == Algorithm::Native;
    let k = &r.key;
    let other = |f: &dyn Fn(&CellKey) -> bool| {
        learned
            .iter()
            .any(|o| o.coll == k.coll && o.p == k.p && o.octave == k.octave && o != k && f(o))
    };
    let mut rule = Rule::new(w.alg).p(k.p..=k.p).bytes(lo..hi);
    if k.coll.reduces() && (!native || other(&|o| o.commutative != k.commutative)) {
        rule = rule.commutative(k.commutative);
    }
    if k.coll == Collective::Reduce {
        rule = rule.root_zero(!k.root_nonzero);
    }
    if w.segment > 0 {
        rule = rule.segment(w.segment);
    }
    // Raced where replayed (`Record::raced_alg`): a pcoll winner is a measurement of one
    // process, and on this VM another process of the same program may find it slower than
    // native (Open MPI 4.1 p = 4, oversubscribed: `binomial` bcast at 64 B confirmed at 0.15x
    // native, replayed at 26.6x; `shm` reduce at 32 KiB explored at 0.63x, replayed at 1.24x);
    // a cell the table races, whose winner is a property of the process; and a native winner
    // whose best pcoll candidate came within `NEAR_FACTOR` of it (`Record::near`).
    rule.race(raced.is_some())
}

/// The learned table as `tuning.toml` text: `header` lines as comments, the `[model]`
/// section of `used` (the table the run decided with: the segments and the model's choices
/// of the replay are then the learning run's), one rule per merged cell, then `used`'s rules
/// (those the learned rules cover entirely dropped), so that a cell never decided keeps the
/// learning run's decision: as they are when `used` came from `PCOLL_TUNING` (`user_table`),
/// else (the built-in table) marked `measured = false`, cells a later learning run with
/// this table still explores. `Err` only if the table does not validate (a defect).
pub fn learned_table(
    records: Vec<Record>,
    used: &Table,
    user_table: bool,
    header: &[String],
) -> Result<String, String> {
    let mut b = Table::builder().origin("the learned table");
    for h in header {
        b = b.comment(h.clone());
    }
    if let Some(m) = used.model_section() {
        b = b.model(m).margin(used.margin());
        if let Some(n) = used.model_net_section() {
            b = b.model_net(n);
        }
    }
    let mut lists: Vec<Vec<Rule>> = vec![Vec::new(); Collective::ALL.len()];
    let merged = merge(records);
    let keys: Vec<CellKey> = merged.iter().map(|(r, _)| r.key).collect();
    for (r, others) in merged {
        let mut note = r.note();
        if !others.is_empty() {
            let names: Vec<&str> = others.iter().map(|a| a.name()).collect();
            note.push_str(&format!(
                "\nalso decided on {} other communicator(s) of this size: {}",
                others.len(),
                names.join(", ")
            ));
        }
        lists[r.key.coll.index()].push(rule_of(&r, &keys).note(note));
    }
    for coll in Collective::ALL {
        let list = &mut lists[coll.index()];
        let learned = list.len();
        for rule in used.rules(coll) {
            let mut rule = rule.clone().measured(rule.measured && user_table);
            if list.len() == learned && rule.note.is_empty() {
                rule.note = format!(
                    "the rules of {} (for the cells not learned){}",
                    used.origin(),
                    if user_table {
                        ""
                    } else {
                        ": defaults, explored by a learning run with this table"
                    }
                );
            }
            list.push(rule);
            if shadowed(coll, list, list.len() - 1, "").is_some() {
                list.pop();
            }
        }
        for rule in list.drain(..) {
            b = b.rule(coll, rule);
        }
    }
    Ok(b.build()?.to_toml())
}
