//! The learned table: each decided cell as a [`Record`] (one line of text, so that the ranks'
//! records can be gathered to rank 0 of `MPI_COMM_WORLD` at `MPI_Finalize`), merged over the
//! run's communicators ([`merge`]) and written as a `tuning.toml` ([`learned_table`]) whose
//! rules `PCOLL_TUNING` replays: one rule per cell (exact `p`, the cell's octave of bytes,
//! `op` and `root` conditions where the collective has them), its measurement as comments.

use super::{Candidate, CellKey};
use crate::algo::{Algorithm, Collective};
use crate::tuning::size::format_size;
use crate::tuning::{shadowed, Rule, Table};

/// One decided cell of one communicator.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    pub key: CellKey,
    pub cands: Vec<Candidate>,
    /// Agreed times per candidate (each rank's lower quartile, maximum over ranks), ns.
    pub agreed: Vec<u64>,
    pub winner: usize,
    /// Calls of the cell explored before the winner was fixed (the agreement's included).
    pub calls: u64,
    /// Timed calls per candidate.
    pub timed: usize,
    pub margin: f64,
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
        s
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
        let (mut cands, mut agreed) = (Vec::new(), Vec::new());
        for c in &f[9..] {
            let mut it = c.split(':');
            let alg = it.next()?.parse::<Algorithm>().ok()?;
            let segment = it.next()?.parse::<usize>().ok()?;
            agreed.push(it.next()?.parse::<u64>().ok()?);
            cands.push(Candidate { alg, segment });
        }
        let winner = num(5)? as usize;
        (winner < cands.len()).then_some(Record {
            key,
            cands,
            agreed,
            winner,
            calls: num(6)?,
            timed: num(7)? as usize,
            margin: f[8].parse().ok()?,
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
        let w = self.chosen();
        format!(
            "{}: {} calls explored ({} candidates, 1 warm-up + {} timed calls each); lower quartiles (slowest rank): {}; margin {:.0}%: {} ({:.2}x native)",
            self.key.describe(),
            self.calls,
            self.cands.len(),
            self.timed,
            meds.join(", "),
            100.0 * self.margin,
            label(&w),
            self.agreed[self.winner] as f64 / native
        )
    }
}

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

/// The rule replaying a record's winner for its cell.
pub fn rule_of(r: &Record) -> Rule {
    let (lo, hi) = r.key.bytes();
    let w = r.chosen();
    let mut rule = Rule::new(w.alg).p(r.key.p..=r.key.p).bytes(lo..hi);
    if r.key.coll.reduces() {
        rule = rule.commutative(r.key.commutative);
    }
    if r.key.coll == Collective::Reduce {
        rule = rule.root_zero(!r.key.root_nonzero);
    }
    if w.segment > 0 {
        rule = rule.segment(w.segment);
    }
    rule
}

/// The learned table as `tuning.toml` text: `header` lines as comments, the `[model]`
/// section of `used` (the table the run decided with: the segments and the model's choices
/// of the replay are then the learning run's), one rule per merged cell, and, when `used`
/// came from `PCOLL_TUNING` (`keep_rules`), its rules after them (those the learned rules
/// cover entirely dropped). `Err` only if the table does not validate (a defect).
pub fn learned_table(
    records: Vec<Record>,
    used: &Table,
    keep_rules: bool,
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
    for (r, others) in merge(records) {
        let mut note = r.note();
        if !others.is_empty() {
            let names: Vec<&str> = others.iter().map(|a| a.name()).collect();
            note.push_str(&format!(
                "\nalso decided on {} other communicator(s) of this size: {}",
                others.len(),
                names.join(", ")
            ));
        }
        lists[r.key.coll.index()].push(rule_of(&r).note(note));
    }
    for coll in Collective::ALL {
        let list = &mut lists[coll.index()];
        if keep_rules {
            for rule in used.rules(coll) {
                list.push(rule.clone());
                if shadowed(coll, list, list.len() - 1, "").is_some() {
                    list.pop();
                }
            }
        }
        for rule in list.drain(..) {
            b = b.rule(coll, rule);
        }
    }
    Ok(b.build()?.to_toml())
}
