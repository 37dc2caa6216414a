//! Algorithm builders: one call's description ([`CallSpec`]) + an [`Algorithm`] -> the
//! [`Program`] of one rank. Builders are pure: integers in, ops out.
//!
//! Every builder of every algorithm is run end to end on the simulated transport against a
//! sequential rank-order oracle (see `tests` in [`crate::transport::sim`]).

pub mod bcast;
pub mod binomial;
pub mod butterfly;
pub mod circulant;
pub mod greedy;
pub mod hier;
pub mod pipeline;
pub mod ring;
pub mod segtree;
pub mod shm;
pub mod trees;
pub mod util;

use crate::error::Error;
use crate::plan::Program;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// The collectives pcoll serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum Collective {
    Reduce,
    Allreduce,
    ReduceScatter,
    Allgatherv,
    Bcast,
    Allgather,
    ReduceScatterBlock,
}

impl Collective {
    pub const ALL: [Collective; 7] = [
        Collective::Reduce,
        Collective::Allreduce,
        Collective::ReduceScatter,
        Collective::Allgatherv,
        Collective::Bcast,
        Collective::Allgather,
        Collective::ReduceScatterBlock,
    ];
    pub fn name(self) -> &'static str {
        match self {
            Collective::Reduce => "reduce",
            Collective::Allreduce => "allreduce",
            Collective::ReduceScatter => "reduce_scatter",
            Collective::Allgatherv => "allgatherv",
            Collective::Bcast => "bcast",
            Collective::Allgather => "allgather",
            Collective::ReduceScatterBlock => "reduce_scatter_block",
        }
    }
    /// The collective has a root (reduce, bcast).
    pub fn has_root(self) -> bool {
        matches!(self, Collective::Reduce | Collective::Bcast)
    }
    /// Environment variable that forces an algorithm for this collective.
    pub fn env_var(self) -> &'static str {
        match self {
            Collective::Reduce => "PCOLL_REDUCE",
            Collective::Allreduce => "PCOLL_ALLREDUCE",
            Collective::ReduceScatter => "PCOLL_REDUCE_SCATTER",
            Collective::Allgatherv => "PCOLL_ALLGATHERV",
            Collective::Bcast => "PCOLL_BCAST",
            Collective::Allgather => "PCOLL_ALLGATHER",
            Collective::ReduceScatterBlock => "PCOLL_REDUCE_SCATTER_BLOCK",
        }
    }
    pub fn index(self) -> usize {
        self as usize
    }
    /// True for the collectives that combine data with an op.
    pub fn reduces(self) -> bool {
        !matches!(
            self,
            Collective::Allgatherv | Collective::Allgather | Collective::Bcast
        )
    }
    /// The collective whose programs serve this one: the regular-count forms run the
    /// allgatherv / reduce_scatter builders (their `CallSpec` has p equal counts).
    pub fn base(self) -> Collective {
        match self {
            Collective::Allgather => Collective::Allgatherv,
            Collective::ReduceScatterBlock => Collective::ReduceScatter,
            c => c,
        }
    }
}

impl fmt::Display for Collective {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Collective {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Collective::ALL
            .into_iter()
            .find(|c| c.name() == s)
            .ok_or_else(|| format!("unknown collective '{s}' (accepted: reduce, allreduce, reduce_scatter, allgatherv, bcast, allgather, reduce_scatter_block)"))
    }
}

/// The algorithms, one name each, used everywhere (tuning.toml, env vars, logs, stats).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum Algorithm {
    Native,
    Binomial,
    Pipeline,
    Greedy,
    GreedyUni,
    Circulant,
    Butterfly,
    Ring,
    Hier,
    HierMl,
    ScatterAllgather,
    /// Through a shared-memory window of a communicator on one node ([`shm`]).
    Shm,
    /// The tree report's complete binary tree, rank-ordered subtrees ([`trees`]).
    Binary,
    /// The tree report's Fibonacci tree, rank-ordered subtrees ([`trees`]).
    Fibonacci,
}

impl Algorithm {
    pub const ALL: [Algorithm; 14] = [
        Algorithm::Native,
        Algorithm::Binomial,
        Algorithm::Pipeline,
        Algorithm::Greedy,
        Algorithm::GreedyUni,
        Algorithm::Circulant,
        Algorithm::Butterfly,
        Algorithm::Ring,
        Algorithm::Hier,
        Algorithm::HierMl,
        Algorithm::ScatterAllgather,
        Algorithm::Shm,
        Algorithm::Binary,
        Algorithm::Fibonacci,
    ];
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Native => "native",
            Algorithm::Binomial => "binomial",
            Algorithm::Pipeline => "pipeline",
            Algorithm::Greedy => "greedy",
            Algorithm::GreedyUni => "greedy_uni",
            Algorithm::Circulant => "circulant",
            Algorithm::Butterfly => "butterfly",
            Algorithm::Ring => "ring",
            Algorithm::Hier => "hier",
            Algorithm::HierMl => "hier_ml",
            Algorithm::ScatterAllgather => "scatter_allgather",
            Algorithm::Shm => "shm",
            Algorithm::Binary => "binary",
            Algorithm::Fibonacci => "fibonacci",
        }
    }
    pub fn accepted() -> String {
        Algorithm::ALL
            .iter()
            .map(|a| a.name())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Which algorithms exist for a collective (native always).
    pub fn available(coll: Collective) -> &'static [Algorithm] {
        use Algorithm::*;
        match coll {
            Collective::Reduce => &[
                Native, Binomial, Pipeline, Greedy, GreedyUni, Circulant, Butterfly, Hier, HierMl,
                Shm, Binary, Fibonacci,
            ],
            Collective::Allreduce => &[
                Native, Binomial, Greedy, Circulant, Butterfly, Ring, Hier, HierMl, Shm, Binary,
                Fibonacci,
            ],
            Collective::ReduceScatter => &[Native, Binomial, Circulant, Butterfly, Ring, Hier, Shm],
            Collective::Allgatherv => &[Native, Binomial, Circulant, Butterfly, Ring, Hier, Shm],
            Collective::Allgather => &[Native, Binomial, Circulant, Butterfly, Ring, Shm],
            Collective::ReduceScatterBlock => &[Native, Binomial, Circulant, Butterfly, Ring, Shm],
            Collective::Bcast => &[
                Native,
                Binomial,
                Pipeline,
                ScatterAllgather,
                Circulant,
                Shm,
                Binary,
                Fibonacci,
            ],
        }
    }

    /// Does this algorithm keep canonical rank order (valid for non-commutative ops)? The
    /// node-aware ones do where the nodes are blocks of consecutive ranks
    /// ([`crate::nodes::NodeShape::order_ok`], checked by their builder and the resolver).
    pub fn order_preserving(self, coll: Collective) -> bool {
        use Algorithm::*;
        match self {
            Native | Binomial | Pipeline | Butterfly | ScatterAllgather | Hier | HierMl | Shm
            | Binary | Fibonacci => true,
            Ring | Circulant => !coll.reduces(),
            Greedy | GreedyUni => false,
        }
    }

    /// Checks the algorithm's preconditions for a call; `Err` names the failed one.
    pub fn check(self, spec: &CallSpec) -> Result<(), String> {
        self.eligible(spec.coll, spec.commutative)
            .map_err(|e| e.to_string())
    }

    /// The preconditions from the facts every rank shares: the collective has this algorithm,
    /// and a non-commutative op needs an order-preserving one.
    pub fn eligible(self, coll: Collective, commutative: bool) -> Result<(), Ineligible> {
        if !Algorithm::available(coll).contains(&self) {
            return Err(self.ineligible(coll, Why::NotAvailable));
        }
        if coll.reduces() && !commutative && !self.order_preserving(coll) {
            return Err(self.ineligible(coll, Why::NeedsCommutative));
        }
        Ok(())
    }

    /// This algorithm cannot serve a call of `coll`, for `why`.
    pub fn ineligible(self, coll: Collective, why: Why) -> Ineligible {
        Ineligible {
            coll,
            alg: self,
            why,
        }
    }

    /// `hier` or `hier_ml`: built over the communicator's nodes ([`hier::build_hier`]).
    pub fn node_aware(self) -> bool {
        matches!(self, Algorithm::Hier | Algorithm::HierMl)
    }

    /// Position in [`Algorithm::ALL`] (array index of per-algorithm counters).
    pub fn index(self) -> usize {
        self as usize
    }
}

/// Why an algorithm cannot serve a call: a value, so that a decision that falls back (a
/// table asking for `shm` before its window is made, on every such call) formats no message
/// unless one is printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ineligible {
    pub coll: Collective,
    pub alg: Algorithm,
    pub why: Why,
}

/// The precondition that failed ([`Ineligible`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Why {
    /// The collective has no such algorithm.
    NotAvailable,
    /// The op is not commutative and the algorithm does not keep rank order.
    NeedsCommutative,
    /// A node-aware algorithm, a non-commutative op, and nodes that are not blocks of
    /// consecutive ranks.
    NodeOrder,
    /// `shm`, and the communicator's ranks span this many nodes.
    SpansNodes(usize),
    /// `shm` for a non-blocking call: the window is not made yet (or was refused).
    WindowNotMade,
    /// `shm`, and the window was refused.
    WindowRefused,
}

impl fmt::Display for Ineligible {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (coll, alg) = (self.coll, self.alg);
        match self.why {
            Why::NotAvailable => write!(f, "{coll} has no {alg} algorithm"),
            Why::NeedsCommutative => write!(f, "{coll} {alg} needs a commutative op"),
            Why::NodeOrder => write!(
                f,
                "{coll} {alg} needs nodes of consecutive ranks for a non-commutative op"
            ),
            shm => {
                write!(f, "{coll} {alg}: no shared window for this communicator (")?;
                match shm {
                    Why::SpansNodes(n) => write!(f, "its ranks span {n} nodes")?,
                    // A non-blocking call never makes the window (making it blocks): its
                    // common reason there.
                    Why::WindowNotMade => write!(
                        f,
                        "not made yet (the communicator's next blocking collective makes it), \
                         or refused"
                    )?,
                    _ => write!(f, "refused: see the shm warning")?,
                }
                write!(f, ")")
            }
        }
    }
}

/// What a table rule, `PCOLL_<COLL>` or `pcoll_force` asks for: one algorithm, or `model`,
/// the cost model's choice among the algorithms eligible for the call, native included
/// ([`crate::decide`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Pick {
    Alg(Algorithm),
    Model,
}

impl Pick {
    pub fn name(self) -> &'static str {
        match self {
            Pick::Alg(a) => a.name(),
            Pick::Model => "model",
        }
    }
    /// Can `coll` be asked for this (`model` always can)?
    pub fn available(self, coll: Collective) -> bool {
        match self {
            Pick::Alg(a) => Algorithm::available(coll).contains(&a),
            Pick::Model => true,
        }
    }
    /// The accepted names for `coll`, for messages.
    pub fn accepted(coll: Collective) -> String {
        let mut s: Vec<&str> = Algorithm::available(coll)
            .iter()
            .map(|a| a.name())
            .collect();
        s.push("model");
        s.join(", ")
    }
}

impl From<Algorithm> for Pick {
    fn from(a: Algorithm) -> Pick {
        Pick::Alg(a)
    }
}

impl fmt::Display for Pick {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Pick {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if s.trim().eq_ignore_ascii_case("model") {
            return Ok(Pick::Model);
        }
        s.parse::<Algorithm>().map(Pick::Alg).map_err(|_| {
            format!(
                "unknown algorithm '{s}' (accepted: {}, model)",
                Algorithm::accepted()
            )
        })
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Algorithm {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let t = s.trim().to_ascii_lowercase();
        Algorithm::ALL
            .into_iter()
            .find(|a| a.name() == t)
            .ok_or_else(|| {
                format!(
                    "unknown algorithm '{s}' (accepted: {})",
                    Algorithm::accepted()
                )
            })
    }
}

/// Cost parameters in the alpha-beta-gamma model (seconds, seconds per byte). Greedy
/// schedules are computed from these, so they must be identical on every rank: they come
/// from the tuning table or the built-in constants, never from a local measurement.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct CostParams {
    pub alpha: f64,
    pub beta: f64,
    pub gamma: f64,
}

impl Default for CostParams {
    /// Shared-memory numbers measured on the development machine (see README).
    fn default() -> Self {
        CostParams {
            alpha: 2.0e-6,
            beta: 2.0e-10,
            gamma: 2.5e-10,
        }
    }
}

/// Everything a builder needs to know about one call. Identical on all ranks except `rank`
/// and `in_place`. Programs of ranks that differ in `in_place` still match: it only changes
/// local buffer use, never messages.
#[derive(Clone, Debug, PartialEq)]
pub struct CallSpec {
    pub coll: Collective,
    /// Communicator size and this process's rank.
    pub p: usize,
    pub rank: usize,
    /// Root of a reduce or bcast (0 otherwise).
    pub root: usize,
    /// reduce/allreduce/bcast: `[count]`; reduce_scatter: `recvcounts` (p entries);
    /// allgatherv: `recvcounts` (p entries); allgather / reduce_scatter_block: p equal
    /// counts (and allgather's displs `j·count`). Elements.
    pub counts: Vec<usize>,
    /// allgatherv: `displs` (p entries, elements); empty otherwise.
    pub displs: Vec<usize>,
    pub commutative: bool,
    /// Bytes of data in one element (MPI type size); used for segmenting and the model.
    pub elem_bytes: usize,
    /// Segment (block) size in elements; 0 = let the algorithm choose from the model.
    pub seg_elems: usize,
    pub params: CostParams,
    /// Does `In` alias `Out` on this rank (`MPI_IN_PLACE`, or an allgatherv block converted
    /// into the receive buffer)? When false, `In` is never written during the call, which
    /// lets [`build`] receive straight into the result ([`crate::elide`]).
    pub in_place: bool,
}

impl CallSpec {
    /// Element count of a reduce/allreduce, or the sum of counts otherwise.
    pub fn total(&self) -> usize {
        match self.coll {
            Collective::Reduce | Collective::Allreduce | Collective::Bcast => self.counts[0],
            _ => self.counts.iter().sum(),
        }
    }
    /// Message size in bytes as the tuning table keys it.
    pub fn bytes(&self) -> usize {
        self.total() * self.elem_bytes
    }
    /// Length of `In` on this rank.
    /// Bcast has no `In`: the root's data is in `Out` before the call.
    pub fn in_len(&self) -> usize {
        match self.coll.base() {
            Collective::Bcast => 0,
            Collective::Reduce | Collective::Allreduce | Collective::ReduceScatter => self.total(),
            _ => self.counts[self.rank],
        }
    }
    /// Length of `Out` on this rank (None: not bound).
    pub fn out_len(&self) -> Option<usize> {
        match self.coll.base() {
            Collective::Reduce => (self.rank == self.root).then_some(self.counts[0]),
            Collective::Allreduce | Collective::Bcast => Some(self.counts[0]),
            Collective::ReduceScatter => Some(self.counts[self.rank]),
            _ => Some(
                (0..self.p)
                    .map(|j| self.displs[j] + self.counts[j])
                    .max()
                    .unwrap_or(0),
            ),
        }
    }
    /// A copy of this spec for another rank.
    pub fn for_rank(&self, rank: usize) -> CallSpec {
        CallSpec {
            rank,
            ..self.clone()
        }
    }
}

/// Build the program of `spec.rank` for `alg`. `Native` has no program. When the call is
/// not in place on this rank, the first received partial lands straight in the accumulator
/// instead of a copy of the input ([`crate::elide::elide_in_copies`]).
pub fn build(alg: Algorithm, spec: &CallSpec) -> Result<Program, Error> {
    let mut prog = build_plain(alg, spec)?;
    if spec.coll.reduces() && !spec.in_place {
        // Butterfly allreduce computes every result on several ranks, with the op's operands
        // in the same roles everywhere (bit-identical results): keep them.
        let keep_roles = (spec.coll, alg) == (Collective::Allreduce, Algorithm::Butterfly);
        crate::elide::elide_in_copies(&mut prog, spec.commutative, keep_roles);
    }
    Ok(prog)
}

/// The builder's program as written, without [`crate::elide`]'s rewrite.
pub fn build_plain(alg: Algorithm, spec: &CallSpec) -> Result<Program, Error> {
    alg.check(spec).map_err(Error::Unsupported)?;
    use Algorithm::*;
    use Collective::*;
    match (spec.coll.base(), alg) {
        (_, Native) => Err(Error::Unsupported("native has no program".into())),
        (_, Hier | HierMl) => Err(Error::Unsupported(format!(
            "{alg} is built over the node layout (algo::hier::build_hier)"
        ))),
        (_, Shm) => Err(Error::Unsupported(
            "shm has no program: it runs over a shared window (algo::shm)".into(),
        )),
        (Bcast, Binomial) => Ok(bcast::binomial(spec)),
        (Bcast, Pipeline) => Ok(bcast::pipeline(spec)),
        (Bcast, ScatterAllgather) => Ok(bcast::scatter_allgather(spec)),
        (Bcast, Circulant) => Ok(bcast::circulant(spec)),
        (Reduce, Binomial) => Ok(binomial::reduce(spec)),
        (Allreduce, Binomial) => Ok(binomial::allreduce(spec)),
        (ReduceScatter, Binomial) => Ok(binomial::reduce_scatter(spec)),
        (Allgatherv, Binomial) => Ok(binomial::allgatherv(spec)),
        (Allgatherv, Ring) => Ok(ring::allgatherv(spec)),
        (Allreduce, Ring) => Ok(ring::allreduce(spec)),
        (ReduceScatter, Ring) => Ok(ring::reduce_scatter(spec)),
        (Reduce, Pipeline) => Ok(pipeline::reduce(spec)),
        (Reduce, Binary | Fibonacci) => Ok(trees::reduce(spec, trees::shape(alg))),
        (Allreduce, Binary | Fibonacci) => Ok(trees::allreduce(spec, trees::shape(alg))),
        (Bcast, Binary | Fibonacci) => Ok(trees::bcast(spec, trees::shape(alg))),
        (Reduce, Greedy) => greedy::reduce(spec, true),
        (Reduce, GreedyUni) => greedy::reduce(spec, false),
        (Allreduce, Greedy) => greedy::allreduce(spec),
        (Reduce, Circulant) => circulant::reduce(spec),
        (Allreduce, Circulant) => circulant::allreduce(spec),
        (ReduceScatter, Circulant) => circulant::reduce_scatter(spec),
        (Allgatherv, Circulant) => circulant::allgatherv(spec),
        (Reduce, Butterfly) => butterfly::reduce(spec),
        (Allreduce, Butterfly) => butterfly::allreduce(spec),
        (ReduceScatter, Butterfly) => butterfly::reduce_scatter(spec),
        (Allgatherv, Butterfly) => butterfly::allgatherv(spec),
        (c, a) => Err(Error::Unsupported(format!("{c} has no {a} algorithm"))),
    }
}
