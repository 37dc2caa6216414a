//! The decision of one call, in one place: which algorithm serves it, where that came from,
//! and with which segment size. The library (its Rust path and the native gate's published
//! ranges), `pcoll-sim choose`, `pcoll-bench` and `pcoll-tune` all ask [`Resolver::resolve`];
//! nothing else restates its precedence.
//!
//! Precedence of the request:
//!
//! 1. `PCOLL_DISABLE=1`: native, nothing else is consulted.
//! 2. `pcoll_force` (run time), else `PCOLL_<COLL>`, else the pick of `PCOLL_LEARN` for the
//!    call ([`Resolver::learned`]: a candidate while the cell is explored, then the agreed
//!    winner; [`crate::learn`]), else the table's first matching rule, else `model` (a cell
//!    without a rule: the table never extrapolates).
//! 3. A request for an algorithm that cannot serve the call (a non-commutative op and an
//!    algorithm that needs a commutative one) falls back to `model` among the eligible ones:
//!    silently (debug log) when a table rule asked, under `PCOLL_FALLBACK` (warn, silent,
//!    error) when the user forced it.
//! 4. `model` ([`model`]): every eligible algorithm priced under the table's `[model]`,
//!    native priced as the algorithm that MPI itself runs ([`crate::model::native`]); a pcoll
//!    algorithm only when predicted faster than native by `[model] margin`.
//! 5. A `native` decision whose call matches a known native defect ([`defects::DEFECTS`]) runs
//!    the model's best pcoll algorithm instead; the decision names the defect.
//!
//! Segment bytes: run time (`pcoll_segment`) > `PCOLL_SEGMENT` > the rule's `segment` (only
//! when the rule's own algorithm runs) > 0 (the algorithm takes the cost model's).
//!
//! Every input is a fact all ranks share (collective, p, bytes, commutativity, and for the
//! defects the datatype, reduce_scatter's in-place flag and counts, the reduce root), so all
//! ranks decide alike.

pub mod defects;
pub mod model;

use crate::algo::{Algorithm, Collective, Ineligible, Pick, Why};
use crate::config::{Config, FallbackPolicy};
use crate::error::Error;
use crate::model::native::Mpi;
use crate::nodes::NodeShape;
use crate::tuning::Table;
use defects::Defect;
pub use model::{Memo, ModelPick};

/// The facts of one call that every rank shares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallFacts {
    pub coll: Collective,
    /// Communicator size.
    pub p: usize,
    /// Message bytes as the table keys them ([`crate::CallSpec::bytes`]).
    pub bytes: usize,
    /// The op is commutative (always true for allgatherv).
    pub commutative: bool,
    /// `MPI_IN_PLACE` (reduce_scatter and allreduce: every rank passes it or none does; for a
    /// reduce only the root knows, so no rule reads it there).
    pub in_place: bool,
    /// Root of a reduce (0 otherwise).
    pub root: usize,
    /// The communicator's nodes (default: not known, one node).
    pub nodes: NodeShape,
    /// `shm` cannot serve the communicator: its shared window was refused or turned off, or
    /// its ranks span nodes (default: not known to fail; learnt when `shm` is first asked).
    pub shm_refused: bool,
    /// Every node of the communicator has a shared window for `hier`'s node steps (default:
    /// assumed, as with `shm` on; false once the windows were refused or `shm` is off).
    pub node_shm: bool,
    /// A non-blocking or persistent form (`MPI_Iallreduce`, `MPI_Allreduce_init`): table rules
    /// with `form = ...` read it ([`crate::tuning::Cond`]).
    pub nonblocking: bool,
}

impl CallFacts {
    /// A call with a commutative op, not in place, root 0.
    pub fn new(coll: Collective, p: usize, bytes: usize) -> CallFacts {
        CallFacts {
            coll,
            p,
            bytes,
            commutative: true,
            in_place: false,
            root: 0,
            nodes: NodeShape::default(),
            shm_refused: false,
            node_shm: true,
            nonblocking: false,
        }
    }

    /// Can `alg` serve this call (the collective has it, the op's commutativity, and for a
    /// node-aware algorithm the nodes' order)?
    pub fn eligible(&self, alg: Algorithm) -> Result<(), Ineligible> {
        alg.eligible(self.coll, self.commutative)?;
        if alg.node_aware() && !self.nodes.order_ok(self.commutative) {
            return Err(alg.ineligible(self.coll, Why::NodeOrder));
        }
        if alg == Algorithm::Shm && !self.shm_ok() {
            let why = match (self.nodes.nodes, self.nonblocking) {
                (n, _) if n > 1 => Why::SpansNodes(n),
                (_, true) => Why::WindowNotMade,
                (_, false) => Why::WindowRefused,
            };
            return Err(alg.ineligible(self.coll, why));
        }
        Ok(())
    }

    /// `shm` may serve the call: its window was not refused, and pcoll's node grouping (agreed
    /// by every rank) puts the communicator on one node. The MPI's shared split alone is not
    /// enough: on the emulated cluster MPICH shares memory across the namespaces that pcoll
    /// counts as nodes, and a window there would carry the traffic around the links.
    pub fn shm_ok(&self) -> bool {
        !self.shm_refused && self.nodes.nodes <= 1
    }
}

/// Facts about a call that cost MPI queries, asked only when a native-defect rule needs them
/// (the decision is `native` and the defect's cheap conditions hold).
pub trait NativeFacts {
    /// The datatype is not one plain block from its origin: holes (size != extent or true
    /// extent), or a lower bound or true lower bound other than 0 (the MPI's own copies then
    /// shift buffers, where Intel MPI's user-op reductions go wrong: docs/mpis.md).
    fn holes(&self) -> bool;
    /// The datatype's true lower bound (bytes; < 0 where data lies before the type's origin).
    fn true_lb(&self) -> i64;
    /// Reduce_scatter's counts are not all equal.
    fn unequal_counts(&self) -> bool;
    /// The op is user-defined (`MPI_Op_create`); a plain call's is not.
    fn user_op(&self) -> bool {
        false
    }
    /// An allgatherv's first block (rank 0's), not empty and not in place, lies away from the
    /// start of the receive buffer (`displs[0]` != 0); no other call's is.
    fn displaced(&self) -> bool {
        false
    }
}

/// A plain call: contiguous type, true lower bound 0, equal counts.
pub struct PlainFacts;

impl NativeFacts for PlainFacts {
    fn holes(&self) -> bool {
        false
    }
    fn true_lb(&self) -> i64 {
        0
    }
    fn unequal_counts(&self) -> bool {
        false
    }
}

/// Run-time overrides of one process (the C API's `pcoll_force` and `pcoll_segment`); each
/// ranks above its environment variable.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Overrides {
    /// Algorithm (or `model`) for the call's collective (above `PCOLL_<COLL>`).
    pub algorithm: Option<Pick>,
    /// Segment bytes (> 0; above `PCOLL_SEGMENT`).
    pub segment: Option<usize>,
}

/// Where the request came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// `PCOLL_DISABLE=1`: native, no checks.
    Disabled,
    /// `pcoll_force`.
    Runtime,
    /// `PCOLL_<COLL>`.
    Env,
    /// A table rule: index among the collective's rules and line in its file (0 if none).
    Table { rule: usize, line: usize },
    /// `PCOLL_LEARN`: a candidate being measured, or the winner agreed across ranks.
    Learned,
    /// No rule matched: `model`.
    NoRule,
}

impl Source {
    /// The user forced the request (fallbacks follow `PCOLL_FALLBACK`).
    pub fn forced(self) -> bool {
        matches!(self, Source::Runtime | Source::Env)
    }
    /// Human description for messages (`pcoll_force`, `PCOLL_REDUCE`, `file:line (...)`).
    pub fn describe(&self, coll: Collective, table: &Table) -> String {
        match *self {
            Source::Disabled => "PCOLL_DISABLE".into(),
            Source::Runtime => "pcoll_force".into(),
            Source::Env => coll.env_var().into(),
            Source::Learned => "PCOLL_LEARN or a raced rule".into(),
            Source::Table { rule, line } => {
                let at = table.describe(
                    coll,
                    &crate::tuning::Choice {
                        algorithm: Pick::Model,
                        segment: None,
                        rule,
                        origin_line: line,
                        race: false,
                    },
                );
                match table.rules(coll).get(rule) {
                    Some(r) if r.race => format!("{at}, raced against native in the run"),
                    _ => at,
                }
            }
            Source::NoRule => "no rule matched".into(),
        }
    }
    /// Short name for JSON and tables: `env`, `runtime`, `file:line`, `default`, `disabled`.
    pub fn short(&self, table: &Table) -> String {
        match *self {
            Source::Disabled => "disabled".into(),
            Source::Runtime => "runtime".into(),
            Source::Env => "env".into(),
            Source::Learned => "learned".into(),
            Source::Table { line, rule } if line > 0 => {
                let _ = rule;
                format!("{}:{line}", table.origin())
            }
            Source::Table { rule, .. } => format!("{} rule {}", table.origin(), rule + 1),
            Source::NoRule => "default".into(),
        }
    }
}

/// A request that could not be honoured.
#[derive(Clone, Debug, PartialEq)]
pub struct Fallback {
    /// What was asked for.
    pub asked: Algorithm,
    /// Why it cannot serve the call.
    pub why: Ineligible,
}

/// The outcome of [`Resolver::resolve`].
#[derive(Clone, Debug, PartialEq)]
pub struct Decision {
    /// The algorithm that runs (its preconditions hold for the call).
    pub algorithm: Algorithm,
    /// Where the request came from.
    pub source: Source,
    /// The cost model chose the algorithm (`model` asked, or a fallback, or a defect).
    pub by_model: bool,
    /// Segment bytes (0: the algorithm takes the cost model's).
    pub segment: usize,
    /// The request that could not serve the call, if any.
    pub fallback: Option<Fallback>,
    /// The caller should warn (a user-forced algorithm fell back under `PCOLL_FALLBACK=warn`).
    pub warn: bool,
    /// The native defect that kept the call away from native.
    pub defect: Option<&'static Defect>,
    /// The model's pick was a pcoll algorithm, and the call is kept native because some node
    /// is crowded and the call too small to race ([`Resolver::crowded`]).
    pub crowded: bool,
}

impl Decision {
    /// `segment` in elements of `elem_bytes` bytes for [`crate::CallSpec::seg_elems`] (0 stays
    /// 0; otherwise at least 1 element).
    pub fn seg_elems(&self, elem_bytes: usize) -> usize {
        if self.segment == 0 {
            0
        } else {
            (self.segment / elem_bytes.max(1)).max(1)
        }
    }

    /// Where the decision came from, for `pcoll-sim choose` and logs: `env`, `runtime`,
    /// `file:line`, `model`, `model (file:line)`, `default`... (`model` alone: no rule matched).
    pub fn source_label(&self, table: &Table) -> String {
        let src = self.source.short(table);
        match (self.by_model, self.source) {
            (true, Source::NoRule) => "model".into(),
            (true, _) => format!("model ({src})"),
            (false, _) => src,
        }
    }

    /// One line for logs: the source, any fallback and defect, with their reasons.
    pub fn reason(&self, call: &CallFacts, table: &Table) -> String {
        let coll = call.coll;
        let src = self.source.describe(coll, table);
        let mut s = if self.by_model {
            format!("model ({src})")
        } else {
            src
        };
        if let Some(f) = &self.fallback {
            s = format!(
                "{} (from {}) cannot serve this call: {}; the model chose among the eligible algorithms",
                f.asked,
                self.source.describe(coll, table),
                f.why
            );
        }
        if self.crowded {
            s.push_str(&format!(
                "; native: a node runs more ranks than cores, and below {} the model's pick is not raced",
                crate::tuning::size::format_size(crate::learn::CROWDED_MIN_BYTES)
            ));
        }
        if let Some(d) = self.defect {
            s.push_str(&format!("; native avoided: {} ({})", d.name, d.reason));
        }
        s
    }
}

/// Everything a decision reads besides the call: configuration, table, run-time overrides,
/// the MPI whose native collectives are modelled, an optional memo of model decisions
/// (for one communicator size), and the pick of `PCOLL_LEARN` for this call.
#[derive(Clone, Copy)]
pub struct Resolver<'a> {
    pub cfg: &'a Config,
    pub table: &'a Table,
    pub mpi: Mpi,
    pub over: Overrides,
    pub memo: Option<&'a Memo>,
    /// `PCOLL_LEARN`'s pick for the call (its cell's candidate or agreed winner), above the
    /// table; the same on every rank of the call ([`crate::learn`]).
    pub learned: Option<crate::learn::Candidate>,
    /// Some node of the job runs more ranks than cores (agreed at `MPI_Init`): the model's
    /// pcoll picks, which do not price ranks waiting for a core, race native from
    /// [`crate::learn::CROWDED_MIN_BYTES`] ([`crate::learn::raced`]) and give way to it below.
    pub crowded: bool,
}

impl<'a> Resolver<'a> {
    pub fn new(cfg: &'a Config, table: &'a Table, mpi: Mpi) -> Resolver<'a> {
        Resolver {
            cfg,
            table,
            mpi,
            over: Overrides::default(),
            memo: None,
            learned: None,
            crowded: false,
        }
    }
    pub fn with_crowded(self, crowded: bool) -> Self {
        Resolver { crowded, ..self }
    }
    pub fn with_learned(self, learned: Option<crate::learn::Candidate>) -> Self {
        Resolver { learned, ..self }
    }
    pub fn with_overrides(self, over: Overrides) -> Self {
        Resolver { over, ..self }
    }
    pub fn with_memo(self, memo: Option<&'a Memo>) -> Self {
        Resolver { memo, ..self }
    }

    /// What is asked for the call, and where it came from, before preconditions: run time >
    /// environment > learned > table > `model`; the rule's (or the learned) segment rides
    /// along.
    pub fn request(&self, call: &CallFacts) -> (Pick, Source, Option<usize>) {
        let (coll, p, bytes) = (call.coll, call.p, call.bytes);
        if self.cfg.disable {
            return (Pick::Alg(Algorithm::Native), Source::Disabled, None);
        }
        if let Some(a) = self.over.algorithm {
            return (a, Source::Runtime, None);
        }
        if let Some(a) = self.cfg.forced(coll) {
            return (a, Source::Env, None);
        }
        if let Some(l) = self.learned {
            return (
                Pick::Alg(l.alg),
                Source::Learned,
                (l.segment > 0).then_some(l.segment),
            );
        }
        match self.table.lookup_call(
            coll,
            p,
            bytes,
            call.commutative,
            call.root,
            call.nonblocking,
        ) {
            Some(c) => (
                c.algorithm,
                Source::Table {
                    rule: c.rule,
                    line: c.origin_line,
                },
                c.segment,
            ),
            None => (Pick::Model, Source::NoRule, None),
        }
    }

    /// The model's answer for the call: constant over the call's size class, or over the
    /// part of it where native runs one algorithm ([`model::span`]); memoized per class
    /// when a memo is set (a class native's selection splits: per part).
    pub fn model_pick(&self, call: &CallFacts) -> ModelPick {
        let params = self.table.model();
        let margin = self.table.margin();
        if call.nodes.multi() {
            // Several nodes, several ranks on some: the two-level model (not memoized: the
            // memo is per communicator size, the nodes are per communicator).
            let levels = crate::model::nodes::Levels {
                intra: params,
                inter: self.table.model_net(),
                node_shm: call.node_shm,
            };
            return model::pick_nodes(
                self.mpi,
                &levels,
                margin,
                call.coll,
                call.p,
                call.bytes,
                call.commutative,
                &call.nodes,
            );
        }
        // With and without `shm` (its window refused), and over several nodes (one rank on
        // each), the answers are kept apart.
        let place = if call.nodes.nodes > 1 {
            model::Place::Nodes
        } else {
            model::Place::Node { shm: call.shm_ok() }
        };
        let at = |bytes| {
            model::pick(
                self.mpi,
                &params,
                margin,
                call.coll,
                call.p,
                bytes,
                call.commutative,
                place,
            )
        };
        let k = model::class_of(call.bytes);
        let memo = self.memo.filter(|m| m.p() == call.p);
        if let Some(m) = memo {
            if let Some(hit) = m.get(call.coll, call.commutative, place, k) {
                return hit;
            }
            if let Some(hit) = m.get_split(call.coll, call.commutative, place, call.bytes) {
                return hit;
            }
        }
        let span = model::span(
            self.mpi,
            &params,
            call.coll,
            call.p,
            call.commutative,
            call.bytes,
        );
        let whole = span
            == (
                model::class_lo(k),
                model::class_lo(k + 1).max(model::class_lo(k) + 1),
            );
        let answer = at(model::span_representative(span));
        match memo {
            Some(m) if whole => m.put(call.coll, call.commutative, place, k, answer),
            Some(m) => m.put_split(call.coll, call.commutative, place, span, answer),
            None => {}
        }
        answer
    }

    /// What a call that asked for `shm` costs more on `next`, its decision without the
    /// communicator's window ([`crate::model::shm::rent`]), as the one-node model prices
    /// them. Below `shm`'s smallest priced size, `next`'s whole time.
    pub fn shm_rent(&self, call: &CallFacts, next: Algorithm) -> f64 {
        let params = self.table.model();
        let (coll, p, bytes) = (call.coll, call.p, call.bytes);
        let t_next = if next == Algorithm::Native {
            crate::model::native::native(self.mpi, coll, p, bytes, call.commutative, &params).time
        } else {
            crate::model::predict(coll, next, p, bytes, &params).time
        };
        let t_shm = crate::model::shm::time(coll, p, bytes);
        if t_shm.is_finite() {
            crate::model::shm::rent(t_shm, t_next)
        } else {
            t_next
        }
    }

    /// What a call of the node-aware `alg` over the call's nodes costs more with its node
    /// steps point-to-point than through the nodes' windows (`hier`'s node level) while the
    /// windows are not made: the predicted difference, and at least the window steps' own
    /// time (they were measured faster than the point-to-point model inside a node prices
    /// them: [`crate::algo::hier::node_shm_pays`]); 0 where no node step would use them.
    pub fn node_shm_rent(&self, call: &CallFacts, alg: Algorithm) -> f64 {
        let parts = |node_shm| {
            let levels = crate::model::nodes::Levels {
                intra: self.table.model(),
                inter: self.table.model_net(),
                node_shm,
            };
            crate::model::nodes::node_aware_time(
                call.coll,
                alg,
                &call.nodes,
                call.bytes,
                call.commutative,
                &levels,
            )
        };
        let with = parts(true);
        if with.windows <= 0.0 || !with.total().is_finite() {
            return 0.0;
        }
        (parts(false).total() - with.total()).max(with.windows)
    }

    /// The decision for one call. `Err` only under `PCOLL_FALLBACK=error` for a forced
    /// algorithm that cannot serve the call. Allocation-free unless a fallback happens.
    pub fn resolve(&self, call: &CallFacts, nf: &dyn NativeFacts) -> Result<Decision, Error> {
        let coll = call.coll;
        let seg_over = self.over.segment.filter(|&b| b > 0).or(self.cfg.segment);
        let (pick, source, rule_seg) = self.request(call);
        let mut d = Decision {
            algorithm: Algorithm::Native,
            source,
            by_model: false,
            segment: seg_over.unwrap_or(0),
            fallback: None,
            warn: false,
            defect: None,
            crowded: false,
        };
        if source == Source::Disabled {
            return Ok(d);
        }
        match pick {
            Pick::Alg(a) => match call.eligible(a) {
                Ok(()) => {
                    d.algorithm = a;
                    d.segment = seg_over.or(rule_seg).unwrap_or(0);
                }
                Err(why) => {
                    if source.forced() && self.cfg.fallback == FallbackPolicy::Error {
                        return Err(Error::Unsupported(format!(
                            "{coll} p={} bytes={}: {a} (from {}) cannot serve this call: {why} (PCOLL_FALLBACK=error)",
                            call.p,
                            call.bytes,
                            source.describe(coll, self.table)
                        )));
                    }
                    d.warn = source.forced() && self.cfg.fallback == FallbackPolicy::Warn;
                    d.fallback = Some(Fallback { asked: a, why });
                    d.algorithm = self.model_pick(call).best;
                    d.by_model = true;
                }
            },
            Pick::Model => {
                d.algorithm = self.model_pick(call).best;
                d.by_model = true;
            }
        }
        // On a crowded node the model prices no rank waiting for a core, and a call below
        // `CROWDED_MIN_BYTES` is not raced (its timings are the scheduler's): the model's pcoll
        // pick gives way to native. Open MPI 5, 4 ranks on 2 cores, 64 B-2 KiB: `binomial`
        // reduce 1.25-1.37x native in two processes of three, `circulant` allgatherv 1.3-2.0x,
        // reduce_scatter_block 1.16-3.1x (session 39; oversubscribed: a statement of cost).
        if d.by_model
            && d.algorithm != Algorithm::Native
            && self.crowded
            && call.bytes < crate::learn::CROWDED_MIN_BYTES
        {
            d.algorithm = Algorithm::Native;
            d.crowded = true;
        }
        if d.algorithm == Algorithm::Native {
            if let Some(defect) = defects::fired(self.mpi, call, nf) {
                d.defect = Some(defect);
                d.algorithm = self.model_pick(call).best_pcoll;
                d.by_model = true;
            }
        }
        Ok(d)
    }

    /// The message sizes (half-open byte ranges, merged, ascending, below
    /// [`crate::tuning::MAX_BYTES`]) at which `coll` on `p` ranks goes to native for every op
    /// (commutative or not) at root 0, before the native-defect rules (the gate checks their
    /// conditions itself, and declines a root other than 0 from the size where a rule reads
    /// the root: [`crate::tuning::Table::root_from`]): exactly [`Resolver::resolve`]'s answer, size by
    /// size. The answer can only change at a rule
    /// bound or a size-class bound of the model, which are the cut points tried.
    /// Index 0: the blocking forms; 1: the non-blocking and persistent ones (rules with
    /// `form = ...`). Both from one set of cut points: the model's search of native's
    /// thresholds is most of the work.
    pub fn native_ranges(&self, coll: Collective, p: usize) -> [Vec<(usize, usize)>; 2] {
        let mut cuts: Vec<usize> = vec![0];
        if self.crowded {
            cuts.push(crate::learn::CROWDED_MIN_BYTES);
        }
        cuts.extend(self.table.cuts(coll, p));
        cuts.extend(model::cut_points(
            self.mpi,
            &self.table.model(),
            coll,
            p,
            crate::tuning::MAX_BYTES,
        ));
        cuts.sort_unstable();
        cuts.dedup();
        [false, true].map(|nonblocking| self.native_over(&cuts, coll, p, nonblocking))
    }

    /// The merged ranges between consecutive `cuts` whose lower bound goes native.
    fn native_over(
        &self,
        cuts: &[usize],
        coll: Collective,
        p: usize,
        nonblocking: bool,
    ) -> Vec<(usize, usize)> {
        // Root 0 only: a table that reads the root (a learned reduce cell names it) sends a
        // root other than 0 past the gate, and its root-0 native ranges stay whole.
        let native = |bytes: usize| {
            [true, false].iter().all(|&commutative| {
                let call = CallFacts {
                    commutative,
                    nonblocking,
                    ..CallFacts::new(coll, p, bytes)
                };
                matches!(self.resolve(&call, &PlainFacts), Ok(d) if d.algorithm == Algorithm::Native && d.defect.is_none())
            })
        };
        let mut out: Vec<(usize, usize)> = Vec::new();
        for (i, &lo) in cuts.iter().enumerate() {
            let hi = cuts.get(i + 1).copied().unwrap_or(usize::MAX);
            if !native(lo) {
                continue;
            }
            match out.last_mut() {
                Some(last) if last.1 == lo => last.1 = hi,
                _ => out.push((lo, hi)),
            }
        }
        out
    }
}
