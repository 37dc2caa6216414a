//! The one place `pcoll-tune` touches the tuning-table API.
//!
//! TEMPORARY SHIM (delete when the real `pcoll::tuning` lands): the core's `src/tuning` is a
//! stub without `Table::builder`, `Rule`, `Table::to_toml` or `Table::parse`. This module
//! mirrors that announced API (same names, same argument types, same TOML spelling) so the
//! tuner is written against it. To switch, replace this whole file with:
//!
//! ```ignore
//! pub use pcoll::tuning::{Rule, Table, TableBuilder};
//! pub fn builder() -> TableBuilder { Table::builder() }
//! pub fn parse(text: &str, origin: &str) -> Result<Table, String> { Table::parse(text, origin) }
//! ```

use pcoll::{Algorithm, Collective, CostParams};
use std::fmt::Write as _;
use std::ops::{Bound, RangeBounds};

/// "No upper bound".
pub const INF: usize = usize::MAX;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bounds {
    pub lo: usize,
    pub hi: usize,
}

impl Bounds {
    pub const ANY: Bounds = Bounds { lo: 0, hi: INF };
    fn from_range(r: impl RangeBounds<usize>) -> Bounds {
        let lo = match r.start_bound() {
            Bound::Included(&x) => x,
            Bound::Excluded(&x) => x.saturating_add(1),
            Bound::Unbounded => 0,
        };
        let hi = match r.end_bound() {
            Bound::Included(&x) => x.saturating_add(1),
            Bound::Excluded(&x) => x,
            Bound::Unbounded => INF,
        };
        Bounds { lo, hi }
    }
    fn to_toml(self) -> String {
        if self.hi == INF {
            format!("[{}, \"inf\"]", self.lo)
        } else {
            format!("[{}, {}]", self.lo, self.hi)
        }
    }
}

#[derive(Clone, Debug)]
pub struct Rule {
    pub p: Bounds,
    pub bytes: Bounds,
    pub algorithm: Algorithm,
    pub segment: Option<usize>,
    pub note: String,
}

impl Rule {
    pub fn new(algorithm: Algorithm) -> Rule {
        Rule {
            p: Bounds::ANY,
            bytes: Bounds::ANY,
            algorithm,
            segment: None,
            note: String::new(),
        }
    }
    pub fn p(mut self, r: impl RangeBounds<usize>) -> Rule {
        self.p = Bounds::from_range(r);
        self
    }
    pub fn bytes(mut self, r: impl RangeBounds<usize>) -> Rule {
        self.bytes = Bounds::from_range(r);
        self
    }
    #[allow(dead_code)]
    pub fn segment(mut self, bytes: usize) -> Rule {
        self.segment = Some(bytes);
        self
    }
    pub fn note(mut self, text: impl Into<String>) -> Rule {
        self.note = text.into();
        self
    }
}

#[derive(Clone, Debug, Default)]
pub struct TableBuilder {
    origin: String,
    model: Option<CostParams>,
    header: Vec<String>,
    rules: [Vec<Rule>; 4],
}

pub fn builder() -> TableBuilder {
    TableBuilder::default()
}

impl TableBuilder {
    pub fn origin(mut self, origin: impl Into<String>) -> Self {
        self.origin = origin.into();
        self
    }
    pub fn model(mut self, m: CostParams) -> Self {
        self.model = Some(m);
        self
    }
    pub fn comment(mut self, text: impl Into<String>) -> Self {
        self.header.push(text.into());
        self
    }
    pub fn rule(mut self, coll: Collective, rule: Rule) -> Self {
        self.rules[coll.index()].push(rule);
        self
    }
    /// The shim checks only what the tuner could get wrong (empty ranges, algorithms not
    /// available for the collective); the real builder validates like the parser.
    pub fn build(self) -> Result<Table, String> {
        for coll in Collective::ALL {
            for (i, r) in self.rules[coll.index()].iter().enumerate() {
                if r.p.lo >= r.p.hi || r.bytes.lo >= r.bytes.hi {
                    return Err(format!(
                        "{}: {coll} rule {}: empty range",
                        self.origin,
                        i + 1
                    ));
                }
                if !Algorithm::available(coll).contains(&r.algorithm) {
                    return Err(format!(
                        "{}: {coll} rule {}: no {} algorithm",
                        self.origin,
                        i + 1,
                        r.algorithm
                    ));
                }
            }
        }
        Ok(Table { b: self })
    }
}

#[derive(Clone, Debug)]
pub struct Table {
    b: TableBuilder,
}

impl Table {
    /// Same spelling as the real `Table::to_toml`.
    pub fn to_toml(&self) -> String {
        let mut s = String::new();
        for h in &self.b.header {
            push_comment(&mut s, h);
        }
        if !self.b.header.is_empty() {
            s.push('\n');
        }
        if let Some(m) = self.b.model {
            let _ = writeln!(
                s,
                "[model]\nalpha = {:?}\nbeta = {:?}\ngamma = {:?}\n",
                m.alpha, m.beta, m.gamma
            );
        }
        for coll in Collective::ALL {
            for r in &self.b.rules[coll.index()] {
                push_comment(&mut s, &r.note);
                let _ = writeln!(s, "[[{coll}]]");
                if r.p != Bounds::ANY {
                    let _ = writeln!(s, "p = {}", r.p.to_toml());
                }
                if r.bytes != Bounds::ANY {
                    let _ = writeln!(s, "bytes = {}", r.bytes.to_toml());
                }
                let _ = writeln!(s, "algorithm = \"{}\"", r.algorithm);
                if let Some(g) = r.segment {
                    let _ = writeln!(s, "segment = {g}");
                }
                s.push('\n');
            }
        }
        s
    }
}

fn push_comment(s: &mut String, text: &str) {
    for line in text.lines() {
        let clean: String = line
            .chars()
            .filter(|c| !c.is_control() || *c == '\t')
            .collect();
        let _ = writeln!(s, "# {}", clean.trim_end());
    }
}

/// Shim: accepts anything (the stub cannot parse); the real `Table::parse` validates.
pub fn parse(_text: &str, _origin: &str) -> Result<(), String> {
    Ok(())
}
