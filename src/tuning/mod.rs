//! The tuning table: which algorithm (and segment size) serves a call of a collective on a
//! communicator of `p` ranks moving `bytes` bytes. Parsed and validated from `tuning.toml`;
//! the repository's `tuning.toml` is embedded as the built-in default ([`Table::builtin`]).
//!
//! Message size (the `bytes` key): reduce/allreduce `count * type_size`; reduce_scatter and
//! allgatherv the total over all ranks ([`crate::CallSpec::bytes`]).
//!
//! # Format of `tuning.toml`
//!
//! ```toml
//! # Optional. Cost-model parameters (alpha-beta-gamma model): greedy schedules are computed
//! # from them, so every rank must see the same numbers. Omitted keys take the built-in
//! # defaults (pcoll::CostParams::default()).
//! [model]
//! alpha = 2.0e-6    # s per message (latency), > 0
//! beta  = 2.0e-10   # s per byte transferred, > 0
//! gamma = 2.5e-10   # s per byte reduced, >= 0
//! margin = 0.15     # `model` picks a pcoll algorithm only if predicted this much faster
//!                   # than native, 0 <= margin < 1 (default 0.15)
//!
//! # One array of tables per collective: [[reduce]], [[allreduce]], [[reduce_scatter]],
//! # [[allgatherv]]. For each call the FIRST rule whose ranges contain (p, bytes) wins.
//! [[reduce]]
//! p = [2, 9]            # communicator sizes 2 <= p < 9 (half-open); omitted = any p
//! bytes = [0, "64KiB"]  # message bytes 0 <= bytes < 65536; omitted = any size
//! algorithm = "binomial"
//! segment = 16384       # optional: segment size in bytes (> 0); omitted = algorithm chooses
//! race = true           # optional: race the algorithm against native in the running
//!                       # program, keep the faster (agreed by every rank; blocking calls)
//!
//! # measured: pipeline 1.8x faster than native at 1 MiB, p = 8
//! [[reduce]]
//! bytes = ["64KiB"]     # [lo] = no upper bound; same as [65536, "inf"]
//! algorithm = "pipeline"
//! ```
//!
//! * Ranges (`p`, `bytes`) are half-open `[lo, hi)`: `[lo, hi]`, `[lo]` or `[lo, "inf"]` (no
//!   upper bound), or a single number `n` meaning exactly `n` (`[n, n + 1)`). Bounds are
//!   non-negative integers or, for bytes, size strings with a binary unit (`"64KiB"`,
//!   `"4MiB"`, `"1GiB"`). Limits: `p` bounds up to 2^31, byte bounds up to 2^48 (256 TiB),
//!   segments 1 byte ..= 2 GiB.
//! * `algorithm`: one of `native`, `binomial`, `pipeline`, `greedy`, `greedy_uni`,
//!   `circulant`, `butterfly`, `ring`, and available for that collective
//!   ([`crate::algo::Algorithm::available`]); or `model`: the cost model prices every algorithm eligible
//!   for the call and native's own algorithm ([`crate::decide`]).
//! * Rules may overlap partially (first match decides), but a rule that can never match
//!   because earlier rules of the same collective cover all of its cells is an error.
//! * A cell without a rule is decided by the model, as if a last rule said `model`
//!   ([`Resolver::resolve`](crate::decide::Resolver::resolve)). Measured rules should cover only the `p` that was
//!   measured and leave the rest to the model: a table never extrapolates.
//! * Comments are free; the auto-tuner writes the measurement behind each rule above it.
//!
//! Every error names the file, line and column, what was found and what is accepted.
//! Unknown keys and sections are errors (typos must not silently change nothing).
//!
//! Lookups ([`Table::lookup`]) run on every MPI call: a linear first-match scan over the
//! rules of one collective, no allocation.

pub mod cond;
mod parse;
mod shadow;
pub mod size;

use crate::algo::{Collective, CostParams, Pick};
use crate::model::native::Mpi;
pub use cond::Cond;
pub(crate) use shadow::shadowed;
use std::fmt::Write as _;
use std::ops::{Bound, RangeBounds};

/// "No upper bound" for [`Bounds::hi`].
pub const INF: usize = usize::MAX;
/// Largest finite bound of a `p` range.
pub const MAX_P: usize = 1 << 31;
/// Largest finite bound of a `bytes` range (256 TiB).
pub const MAX_BYTES: usize = 1 << 48;
/// Largest segment size in bytes (2 GiB).
pub const MAX_SEGMENT: usize = 1 << 31;

/// The file embedded as the built-in default table for Open MPI.
pub const BUILTIN_TOML: &str = include_str!("../../tuning.toml");
/// The file embedded as the built-in default table for MPICH.
pub const BUILTIN_MPICH_TOML: &str = include_str!("../../tuning.mpich.toml");
/// The built-in tables of the MPIs from the Python package registry and for the
/// implementations pcoll has not measured (`tables/`).
pub const BUILTIN_OPENMPI5_TOML: &str = include_str!("../../tables/tuning.openmpi5.toml");
pub const BUILTIN_MPICH5_TOML: &str = include_str!("../../tables/tuning.mpich5.toml");
pub const BUILTIN_IMPI_TOML: &str = include_str!("../../tables/tuning.impi.toml");
pub const BUILTIN_OTHER_TOML: &str = include_str!("../../tables/tuning.other.toml");
/// `[model] margin` when the table does not set one: a pcoll algorithm is chosen by the model
/// only when predicted at least this much faster than native.
pub const DEFAULT_MARGIN: f64 = 0.15;

/// A half-open range `[lo, hi)`; `hi == INF` means no upper bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Bounds {
    pub lo: usize,
    pub hi: usize,
}

impl Bounds {
    /// Every value.
    pub const ANY: Bounds = Bounds { lo: 0, hi: INF };

    pub fn new(lo: usize, hi: usize) -> Bounds {
        Bounds { lo, hi }
    }
    /// From any Rust range (`2..9`, `65536..`, `..=8`, `..`).
    pub fn from_range(r: impl RangeBounds<usize>) -> Bounds {
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
    /// `lo <= x < hi` (the one range test, [`crate::sched::blocks::contains`]).
    #[inline]
    pub fn contains(&self, x: usize) -> bool {
        crate::sched::blocks::contains(self.lo, self.hi, x)
    }
    pub fn is_any(&self) -> bool {
        *self == Bounds::ANY
    }
    fn intersects(&self, o: &Bounds) -> bool {
        self.lo.max(o.lo) < self.hi.min(o.hi)
    }
    /// TOML spelling (`[2, 9]`, `[65536, "inf"]`).
    fn to_toml(self) -> String {
        if self.hi == INF {
            format!("[{}, \"inf\"]", self.lo)
        } else {
            format!("[{}, {}]", self.lo, self.hi)
        }
    }
}

/// One rule of one collective.
#[derive(Clone, Debug)]
pub struct Rule {
    /// Communicator sizes it applies to.
    pub p: Bounds,
    /// Message bytes it applies to.
    pub bytes: Bounds,
    /// An algorithm, or `model` (the cost model decides among the eligible ones).
    pub algorithm: Pick,
    /// Segment size in bytes (None: the algorithm chooses from the model).
    pub segment: Option<usize>,
    /// The op's kind and the reduce's root it applies to ([`Cond`]; default: any).
    pub cond: Cond,
    /// A measurement (the default), or a default carried over from another table (`measured =
    /// false`: a learned table's copy of the built-in rules). Decides alike; `PCOLL_LEARN`
    /// explores the cells only such rules cover.
    pub measured: bool,
    /// `race = true`: the rule's algorithm is raced against native inside the running
    /// program (timed, agreed across ranks, the faster kept: [`crate::learn::raced`]) where
    /// the measurement behind the rule was split (docs/learning.md, "Raced rules").
    pub race: bool,
    /// Line of the rule's `[[coll]]` header in its file; 0 when built in code.
    pub line: usize,
    /// Comment written above the rule by [`Table::to_toml`] (not read back).
    pub note: String,
}

impl Rule {
    /// A rule for any `p` and any size.
    pub fn new(algorithm: impl Into<Pick>) -> Rule {
        Rule {
            p: Bounds::ANY,
            bytes: Bounds::ANY,
            algorithm: algorithm.into(),
            segment: None,
            cond: Cond::ANY,
            measured: true,
            race: false,
            line: 0,
            note: String::new(),
        }
    }
    /// Only for commutative (`true`) or non-commutative ops (`op = ...`).
    pub fn commutative(mut self, c: bool) -> Rule {
        self.cond.commutative = Some(c);
        self
    }
    /// Only for a reduce at root 0 (`true`) or at another root (`root = ...`).
    pub fn root_zero(mut self, z: bool) -> Rule {
        self.cond.root_zero = Some(z);
        self
    }
    pub fn p(mut self, r: impl RangeBounds<usize>) -> Rule {
        self.p = Bounds::from_range(r);
        self
    }
    pub fn bytes(mut self, r: impl RangeBounds<usize>) -> Rule {
        self.bytes = Bounds::from_range(r);
        self
    }
    pub fn segment(mut self, bytes: usize) -> Rule {
        self.segment = Some(bytes);
        self
    }
    pub fn note(mut self, text: impl Into<String>) -> Rule {
        self.note = text.into();
        self
    }
    /// Marked as a carried default (`measured = false`), or as a measurement.
    pub fn measured(mut self, m: bool) -> Rule {
        self.measured = m;
        self
    }
    /// Raced against native in the running program (`race = true`).
    pub fn race(mut self, r: bool) -> Rule {
        self.race = r;
        self
    }
    #[inline]
    fn matches(
        &self,
        p: usize,
        bytes: usize,
        commutative: bool,
        root: usize,
        nonblocking: bool,
    ) -> bool {
        self.p.contains(p)
            && self.bytes.contains(bytes)
            && self.cond.matches(commutative, root, nonblocking)
    }
    /// Equal as far as lookups are concerned (ignores `line` and `note`).
    pub fn same_as(&self, o: &Rule) -> bool {
        self.p == o.p
            && self.bytes == o.bytes
            && self.algorithm == o.algorithm
            && self.segment == o.segment
            && self.cond == o.cond
    }
}

/// Result of a lookup.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Choice {
    pub algorithm: Pick,
    /// Segment bytes from the rule (None: the algorithm chooses).
    pub segment: Option<usize>,
    /// Index of the matching rule among the collective's rules (0-based), for logs.
    pub rule: usize,
    /// Line of the rule in its file (0 when built in code).
    pub origin_line: usize,
    /// The rule is raced against native ([`Rule::race`]).
    pub race: bool,
}

/// A validated tuning table.
#[derive(Clone, Debug)]
pub struct Table {
    origin: String,
    model: Option<CostParams>,
    /// `[model.net]` (None: one level, `model` holds between nodes too).
    model_net: Option<CostParams>,
    margin: Option<f64>,
    rules: [Vec<Rule>; Collective::ALL.len()],
    header: Vec<String>,
}

impl PartialEq for Table {
    /// Same model and same rules in the same order (origin, lines and comments ignored).
    fn eq(&self, o: &Table) -> bool {
        self.model == o.model
            && self.model_net == o.model_net
            && self.margin == o.margin
            && self
                .rules
                .iter()
                .zip(&o.rules)
                .all(|(a, b)| a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.same_as(y)))
    }
}

impl Table {
    /// Parses and validates `text`; `origin` (a path, or "builtin") names it in errors.
    /// `Err` holds one line per problem, each `origin:line:col: message`.
    pub fn parse(text: &str, origin: &str) -> Result<Table, String> {
        parse::parse(text, origin)
    }

    /// The embedded default for Open MPI (the repository's `tuning.toml`).
    pub fn builtin() -> Table {
        Table::builtin_for(Mpi::OpenMpi)
    }

    /// The embedded default for `mpi` (`tuning.toml`, `tuning.mpich.toml`, `tables/`: the
    /// MPIs' native collectives win at different sizes; an unmeasured MPI gets no rules).
    pub fn builtin_for(mpi: Mpi) -> Table {
        let (text, name) = Table::builtin_text(mpi);
        // The embedded files are checked by a test; a broken one is a build defect.
        Table::parse(text, name).unwrap_or_else(|e| panic!("the embedded {name} is invalid:\n{e}"))
    }

    /// The embedded text of `mpi`'s built-in table and its name.
    pub fn builtin_text(mpi: Mpi) -> (&'static str, &'static str) {
        match mpi {
            Mpi::OpenMpi => (BUILTIN_TOML, "built-in tuning.toml"),
            Mpi::Mpich => (BUILTIN_MPICH_TOML, "built-in tuning.mpich.toml"),
            Mpi::OpenMpi5 => (
                BUILTIN_OPENMPI5_TOML,
                "built-in tables/tuning.openmpi5.toml",
            ),
            Mpi::Mpich5 => (BUILTIN_MPICH5_TOML, "built-in tables/tuning.mpich5.toml"),
            Mpi::IntelMpi => (BUILTIN_IMPI_TOML, "built-in tables/tuning.impi.toml"),
            Mpi::Other(_) => (BUILTIN_OTHER_TOML, "built-in tables/tuning.other.toml"),
        }
    }

    /// Starts a table built in code (the auto-tuner's way to write one).
    pub fn builder() -> TableBuilder {
        TableBuilder {
            table: Table {
                origin: "table built in code".into(),
                model: None,
                model_net: None,
                margin: None,
                rules: Default::default(),
                header: Vec::new(),
            },
        }
    }

    /// First rule of `coll` containing `(p, bytes)` for a blocking call with a commutative op
    /// at root 0 ([`Table::lookup_call`] for any call). No allocation.
    #[inline]
    pub fn lookup(&self, coll: Collective, p: usize, bytes: usize) -> Option<Choice> {
        self.lookup_call(coll, p, bytes, true, 0, false)
    }

    /// First rule of `coll` containing `(p, bytes)` whose conditions ([`Cond`]) hold for the
    /// op's kind, the root (0 for the collectives without one) and the call's form. No
    /// allocation.
    #[inline]
    pub fn lookup_call(
        &self,
        coll: Collective,
        p: usize,
        bytes: usize,
        commutative: bool,
        root: usize,
        nonblocking: bool,
    ) -> Option<Choice> {
        self.rules[coll.index()]
            .iter()
            .position(|r| r.matches(p, bytes, commutative, root, nonblocking))
            .map(|i| {
                let r = &self.rules[coll.index()][i];
                Choice {
                    algorithm: r.algorithm,
                    segment: r.segment,
                    rule: i,
                    origin_line: r.line,
                    race: r.race,
                }
            })
    }

    /// The smallest size at which a rule of `coll` reads the root (`root = ...`): below it
    /// every root is decided as root 0 (nothing else in a table reads the root).
    pub fn root_from(&self, coll: Collective) -> Option<usize> {
        let rules = self.rules[coll.index()].iter();
        rules
            .filter_map(|r| r.cond.root_zero.map(|_| r.bytes.lo))
            .min()
    }

    /// The byte bounds of the rules of `coll` that apply to `p` (finite ones, unsorted): the
    /// only sizes at which the table's answer for `p` can change.
    pub fn cuts(&self, coll: Collective, p: usize) -> impl Iterator<Item = usize> + '_ {
        self.rules[coll.index()]
            .iter()
            .filter(move |r| r.p.contains(p))
            .flat_map(|r| [r.bytes.lo, r.bytes.hi])
            .filter(|&b| b < INF)
    }

    /// The cost-model parameters: the table's `[model]`, else the built-in constants.
    pub fn model(&self) -> CostParams {
        self.model.unwrap_or_default()
    }
    /// Cost parameters between nodes (`[model.net]`; unset: the `[model]` parameters, one
    /// level), for the inter-node steps of `hier` / `hier_ml` and the two-level model.
    pub fn model_net(&self) -> CostParams {
        self.model_net.unwrap_or_else(|| self.model())
    }
    /// The `[model.net]` section as written (None if absent).
    pub fn model_net_section(&self) -> Option<CostParams> {
        self.model_net
    }
    /// The `[model]` section as written (None if absent).
    pub fn model_section(&self) -> Option<CostParams> {
        self.model
    }
    /// `[model] margin`: how much faster than native the model must predict a pcoll algorithm
    /// before it chooses it ([`DEFAULT_MARGIN`] when not set).
    pub fn margin(&self) -> f64 {
        self.margin.unwrap_or(DEFAULT_MARGIN)
    }
    /// Where the table came from (path, "builtin tuning.toml", ...).
    pub fn origin(&self) -> &str {
        &self.origin
    }
    /// Some rule says `race = true`.
    pub fn races(&self) -> bool {
        self.rules.iter().flatten().any(|r| r.race)
    }
    /// The rules of one collective, in match order.
    pub fn rules(&self, coll: Collective) -> &[Rule] {
        &self.rules[coll.index()]
    }
    /// `origin:line` of a rule for messages (or `origin rule #k` without a line).
    pub fn describe(&self, coll: Collective, c: &Choice) -> String {
        if c.origin_line > 0 {
            format!(
                "{}:{} ([[{coll}]] rule {})",
                self.origin,
                c.origin_line,
                c.rule + 1
            )
        } else {
            format!("{} ({coll} rule {})", self.origin, c.rule + 1)
        }
    }

    /// Writes the table as `tuning.toml` text; `Table::parse` of it gives an equal table.
    /// Notes and header comments become `#` comment lines.
    pub fn to_toml(&self) -> String {
        let mut s = String::new();
        for h in &self.header {
            push_comment(&mut s, h);
        }
        if !self.header.is_empty() {
            s.push('\n');
        }
        if self.model.is_some() || self.margin.is_some() {
            // `{:?}` of an f64 is its shortest round-trip form (`2e-6`, `0.5`), valid TOML.
            s.push_str("[model]\n");
            if let Some(m) = self.model {
                let _ = writeln!(
                    s,
                    "alpha = {:?}\nbeta = {:?}\ngamma = {:?}",
                    m.alpha, m.beta, m.gamma
                );
            }
            if let Some(g) = self.margin {
                let _ = writeln!(s, "margin = {g:?}");
            }
            s.push('\n');
        }
        if let (Some(_), Some(m)) = (self.model, self.model_net) {
            let _ = writeln!(
                s,
                "[model.net]\nalpha = {:?}\nbeta = {:?}\ngamma = {:?}\n",
                m.alpha, m.beta, m.gamma
            );
        }
        for coll in Collective::ALL {
            for r in &self.rules[coll.index()] {
                push_comment(&mut s, &r.note);
                let _ = writeln!(s, "[[{coll}]]");
                if !r.p.is_any() {
                    let _ = writeln!(s, "p = {}", r.p.to_toml());
                }
                if !r.bytes.is_any() {
                    let _ = writeln!(s, "bytes = {}", r.bytes.to_toml());
                }
                s.push_str(&r.cond.to_toml());
                let _ = writeln!(s, "algorithm = \"{}\"", r.algorithm);
                if let Some(g) = r.segment {
                    let _ = writeln!(s, "segment = {g}");
                }
                if !r.measured {
                    s.push_str("measured = false\n");
                }
                if r.race {
                    s.push_str("race = true\n");
                }
                s.push('\n');
            }
        }
        s
    }
}

/// `# text` lines (control characters dropped so the comment stays one TOML comment).
fn push_comment(s: &mut String, text: &str) {
    for line in text.lines() {
        let clean: String = line
            .chars()
            .filter(|c| !c.is_control() || *c == '\t')
            .collect();
        let _ = writeln!(s, "# {}", clean.trim_end());
    }
}

/// Builds a [`Table`] in code; [`TableBuilder::build`] validates exactly like the parser.
#[derive(Clone, Debug)]
pub struct TableBuilder {
    table: Table,
}

impl TableBuilder {
    /// Name used in error messages and `Table::origin`.
    pub fn origin(mut self, origin: impl Into<String>) -> Self {
        self.table.origin = origin.into();
        self
    }
    pub fn model(mut self, m: CostParams) -> Self {
        self.table.model = Some(m);
        self
    }
    /// `[model.net]` (see [`Table::model_net`]; written only with `[model]`).
    pub fn model_net(mut self, m: CostParams) -> Self {
        self.table.model_net = Some(m);
        self
    }
    /// `[model] margin` (see [`Table::margin`]).
    pub fn margin(mut self, g: f64) -> Self {
        self.table.margin = Some(g);
        self
    }
    /// A comment line for the top of `to_toml`'s output.
    pub fn comment(mut self, text: impl Into<String>) -> Self {
        self.table.header.push(text.into());
        self
    }
    /// Appends a rule (rules match in the order added).
    pub fn rule(mut self, coll: Collective, rule: Rule) -> Self {
        self.table.rules[coll.index()].push(rule);
        self
    }
    pub fn build(self) -> Result<Table, String> {
        let t = self.table;
        let mut errs = Vec::new();
        if let Some(m) = &t.model {
            for (key, msg) in check_model(m) {
                errs.push(format!("{}: [model] {key}: {msg}", t.origin));
            }
        }
        if let Some(msg) = t.margin.and_then(check_margin) {
            errs.push(format!("{}: [model] margin: {msg}", t.origin));
        }
        for coll in Collective::ALL {
            let rules = &t.rules[coll.index()];
            for (i, r) in rules.iter().enumerate() {
                let at = format!("{}: {coll} rule {}", t.origin, i + 1);
                for (key, msg) in check_rule(coll, r) {
                    errs.push(format!("{at}: {key}: {msg}"));
                }
                if let Some(msg) = shadowed(coll, rules, i, &t.origin) {
                    errs.push(format!("{at}: {msg}"));
                }
            }
        }
        if errs.is_empty() {
            Ok(t)
        } else {
            Err(errs.join("\n"))
        }
    }
}

/// Semantic checks of one rule: `(key, message)` per problem.
pub(crate) fn check_rule(coll: Collective, r: &Rule) -> Vec<(&'static str, String)> {
    let mut errs = Vec::new();
    if !r.algorithm.available(coll) {
        errs.push((
            "algorithm",
            format!(
                "'{}' is not available for {coll} (accepted for {coll}: {})",
                r.algorithm,
                Pick::accepted(coll)
            ),
        ));
    }
    for (key, b, max) in [("p", r.p, MAX_P), ("bytes", r.bytes, MAX_BYTES)] {
        if let Some(msg) = check_bounds(b, max) {
            errs.push((key, msg));
        }
    }
    if let Some(g) = r.segment {
        if let Some(msg) = check_segment(g) {
            errs.push(("segment", msg));
        }
    }
    errs.extend(r.cond.check(coll));
    if r.race {
        errs.extend(cond::check_race(r.algorithm, &r.cond).map(|m| ("race", m)));
    }
    errs
}

pub(crate) fn check_bounds(b: Bounds, max: usize) -> Option<String> {
    if b.lo > max || (b.hi != INF && b.hi > max) {
        Some(format!(
            "bound too large (at most {max}; use \"inf\" or [lo] for no upper bound)"
        ))
    } else if b.lo == b.hi {
        Some(format!(
            "empty range [{}, {}) (ranges are half-open [lo, hi): lo < hi needed)",
            b.lo, b.hi
        ))
    } else if b.lo > b.hi {
        Some(format!(
            "inverted range [{}, {}) (ranges are half-open [lo, hi): lo < hi needed)",
            b.lo, b.hi
        ))
    } else {
        None
    }
}

pub(crate) fn check_segment(g: usize) -> Option<String> {
    if g == 0 {
        Some(format!("segment must be > 0 bytes (accepted: 1..={MAX_SEGMENT}; omit it to let the algorithm choose)"))
    } else if g > MAX_SEGMENT {
        Some(format!(
            "segment {g} too large (accepted: 1..={MAX_SEGMENT} bytes)"
        ))
    } else {
        None
    }
}

/// `[model] margin`: a fraction, `0 <= margin < 1`.
pub(crate) fn check_margin(g: f64) -> Option<String> {
    (!(g.is_finite() && (0.0..1.0).contains(&g))).then(|| {
        format!(
            "{g} out of range (accepted: a fraction, 0 <= margin < 1; default {DEFAULT_MARGIN})"
        )
    })
}

pub(crate) fn check_model(m: &CostParams) -> Vec<(&'static str, String)> {
    let mut errs = Vec::new();
    for (key, v, zero_ok) in [
        ("alpha", m.alpha, false),
        ("beta", m.beta, false),
        ("gamma", m.gamma, true),
    ] {
        let ok = v.is_finite() && v < 1.0 && (v > 0.0 || (zero_ok && v == 0.0));
        if !ok {
            let want = if zero_ok { "0 <= x < 1" } else { "0 < x < 1" };
            errs.push((
                key,
                format!("{v} out of range (accepted: a number of seconds, {want})"),
            ));
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_from_ranges() {
        assert_eq!(Bounds::from_range(2..9), Bounds::new(2, 9));
        assert_eq!(Bounds::from_range(2..=8), Bounds::new(2, 9));
        assert_eq!(Bounds::from_range(5..), Bounds::new(5, INF));
        assert_eq!(Bounds::from_range(..), Bounds::ANY);
        assert!(Bounds::new(2, 9).contains(2) && !Bounds::new(2, 9).contains(9));
    }

    #[test]
    fn shadow_by_union_only() {
        use crate::algo::Algorithm::*;
        let rules = vec![
            Rule::new(Binomial).p(0..5),
            Rule::new(Binomial).p(5..),
            Rule::new(Pipeline).bytes(10..20),
        ];
        assert!(shadowed(Collective::Reduce, &rules, 2, "t").is_some());
        let rules = vec![
            Rule::new(Binomial).p(0..5),
            Rule::new(Binomial).p(6..),
            Rule::new(Pipeline).bytes(10..20),
        ];
        assert!(shadowed(Collective::Reduce, &rules, 2, "t").is_none());
        // Conditions: a rule for non-commutative ops is not shadowed by one for commutative.
        let rules = vec![
            Rule::new(Binomial).commutative(true),
            Rule::new(Pipeline).commutative(false),
            Rule::new(Ring),
        ];
        assert!(shadowed(Collective::Allreduce, &rules, 1, "t").is_none());
        assert!(shadowed(Collective::Allreduce, &rules, 2, "t").is_some());
    }
}
