//! `model`: the cost model's choice for a call, and its memo.
//!
//! Every algorithm eligible for the call is priced with its best segment count
//! ([`crate::model::predict`], full duplex, the table's `[model]` α, β, γ); native is priced
//! as the algorithm the MPI itself runs for that (p, bytes) ([`crate::model::native`]). A pcoll
//! algorithm is chosen only when predicted faster than native by the margin:
//! `t_pcoll < (1 − margin) · t_native`; otherwise native.
//!
//! The decision is made per **size class** (8 classes per octave of bytes, priced at the
//! class's geometric middle), so it is a step function of the size with known steps: the
//! native gate's ranges are exact ([`super::Resolver::native_ranges`]) and a memo of one
//! entry per (collective, commutativity, class) makes the hot path a table read. Within a
//! class the sizes differ by at most 2^(1/8) ≈ 1.09x, so a decision is never more than
//! 1.09 / (1 − margin) ≈ 1.28x (margin 0.15) off the cheapest option at any size in it
//! (every modelled time grows with the size, at most linearly).
//!
//! Uni-directional greedy is not priced: its time comes from simulating its schedule (O(p·n)
//! per segment count tried, milliseconds per call), and in the full-duplex model the
//! bi-directional greedy, eligible for exactly the same calls, is never slower.

use crate::algo::{Algorithm, Collective, CostParams};
use crate::model::native::{self, Mpi};
use crate::model::nodes::{self, Levels};
use crate::model::predict;
use crate::nodes::NodeShape;
use std::sync::atomic::{AtomicU16, Ordering};

/// Size classes per octave of bytes.
pub const PER_OCTAVE: usize = 8;
/// Number of size classes (class 0 is 0 bytes; then 8 per octave up to 2^64).
pub const NCLASS: usize = 1 + PER_OCTAVE * 64;

/// The size class of `bytes`: 0 for 0; else `1 + 8·⌊log2 b⌋ + f`, with `f` the three bits
/// after the leading one.
#[inline]
pub fn class_of(bytes: usize) -> usize {
    if bytes == 0 {
        return 0;
    }
    let e = (usize::BITS - 1 - bytes.leading_zeros()) as usize;
    let f = if e >= 3 {
        (bytes >> (e - 3)) & 7
    } else {
        (bytes << (3 - e)) & 7
    };
    1 + PER_OCTAVE * e + f
}

/// Smallest byte count of class `k` (k ≥ 1; classes below 8 bytes may be empty, and then
/// this is the next class's first size).
pub fn class_lo(k: usize) -> usize {
    if k == 0 {
        return 0;
    }
    let (e, f) = ((k - 1) / PER_OCTAVE, (k - 1) % PER_OCTAVE);
    // In u128: the last classes start beyond usize (saturated).
    let lo = ((8 + f as u128) << e).div_ceil(8);
    usize::try_from(lo).unwrap_or(usize::MAX)
}

/// Every class's first size, ascending (the cut points of a model decision).
pub fn class_bounds() -> impl Iterator<Item = usize> {
    (1..NCLASS)
        .map(class_lo)
        .take_while(|&b| b < usize::MAX / 2)
}

/// The sub-range of `bytes`'s size class over which native runs one algorithm: the class,
/// or the part of it on one side of a threshold of the MPI's own selection (found by
/// bisection; thresholds at powers of two and at most other round sizes fall on class bounds
/// and need none). The model's answer is constant on it and priced at its geometric middle.
pub fn span(
    mpi: Mpi,
    params: &CostParams,
    coll: Collective,
    p: usize,
    commutative: bool,
    bytes: usize,
) -> (usize, usize) {
    let k = class_of(bytes);
    let lo = class_lo(k);
    let hi = class_lo(k + 1).max(lo + 1);
    let name = |b: usize| native::native(mpi, coll, p, b, commutative, params).algorithm;
    let mut start = lo;
    // At most a few thresholds per class; each step finds the next one after `start`.
    let last = name(hi - 1);
    for _ in 0..4 {
        let a = name(start);
        // `bytes == start` (every span `cut_points` asks for) needs no third pricing.
        if last == a && (bytes == start || name(bytes) == a) {
            break;
        }
        // First size after `start` where native's algorithm is not `a`.
        let (mut l, mut h) = (start, hi - 1);
        while h - l > 1 {
            let m = l + (h - l) / 2;
            if name(m) == a {
                l = m;
            } else {
                h = m;
            }
        }
        if bytes < h {
            return (start, h);
        }
        start = h;
    }
    (start, hi)
}

/// The size the answer for a span is computed at.
pub fn span_representative((lo, hi): (usize, usize)) -> usize {
    if hi - lo <= 1 || lo < 8 {
        return lo;
    }
    ((lo as f64) * (hi as f64)).sqrt().round() as usize
}

/// The size-class bounds plus, for `p` and both kinds of ops, the thresholds of native's own
/// selection inside classes: every size at which a model decision can change.
pub fn cut_points(
    mpi: Mpi,
    params: &CostParams,
    coll: Collective,
    p: usize,
    below: usize,
) -> Vec<usize> {
    let mut cuts: Vec<usize> = class_bounds().take_while(|&b| b < below).collect();
    let n = cuts.len();
    for i in 0..n {
        let (lo, hi) = (cuts[i], cuts.get(i + 1).copied().unwrap_or(below));
        for commutative in [true, false] {
            let mut b = lo;
            while b < hi {
                let (_, end) = span(mpi, params, coll, p, commutative, b);
                if end >= hi {
                    break;
                }
                cuts.push(end);
                b = end;
            }
        }
    }
    cuts.sort_unstable();
    cuts.dedup();
    cuts
}

/// The model's answer for one call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ModelPick {
    /// The decision: a pcoll algorithm predicted faster than native by the margin, or native.
    pub best: Algorithm,
    /// The cheapest eligible pcoll algorithm (what runs when native must be avoided).
    pub best_pcoll: Algorithm,
}

/// Is `alg` priced for this call (eligible, and not too costly to price)? `shm` is priced
/// for a communicator on one node ([`pick`], [`prices`]), never over several
/// ([`node_prices`]).
fn priced(alg: Algorithm, coll: Collective, commutative: bool) -> bool {
    alg != Algorithm::Native
        && alg.eligible(coll, commutative).is_ok()
        && alg != Algorithm::GreedyUni
        && !alg.node_aware()
}

/// Predicted seconds of every priced pcoll algorithm for the call, in
/// [`Algorithm::available`] order, and native's own choice.
pub fn prices(
    mpi: Mpi,
    params: &CostParams,
    coll: Collective,
    p: usize,
    bytes: usize,
    commutative: bool,
) -> (Vec<(Algorithm, f64)>, native::NativeChoice) {
    let algs = Algorithm::available(coll)
        .iter()
        .copied()
        .filter(|&a| priced(a, coll, commutative))
        .map(|a| (a, predict(coll, a, p, bytes, params).time))
        .collect();
    (
        algs,
        native::native(mpi, coll, p, bytes, commutative, params),
    )
}

/// Where a communicator's ranks are, as far as the model's choice among pcoll algorithms
/// goes (the memo keeps the three apart).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// One node; `shm`: whether `shm` may serve (false once the communicator's window was
    /// refused).
    Node { shm: bool },
    /// More than one node.
    Nodes,
}

impl Place {
    fn index(self) -> usize {
        match self {
            Place::Node { shm } => shm as usize,
            Place::Nodes => 2,
        }
    }
}

/// Between nodes a chain (`pipeline`: one steady stream into and one out of each rank) is
/// taken when predicted within this factor of the cheapest algorithm. On the emulated cluster
/// (4 and 5 nodes x 1 rank, MPICH, TCP, 500 Mbit/s; docs/emulated-cluster.md) the chain ran
/// 0.60-0.97x the time of `greedy` and `circulant` (whose partners change every round) at
/// 512 KiB-16 MiB, blocking and not, where the model prices it 1.0-6.6 % slower; those trees
/// ran 0.71-0.94x the chain where the model prices it 10-12 % slower (4 nodes: reduce
/// 128 KiB, bcast 256 KiB).
pub const CHAIN_TIE: f64 = 1.07;

/// The cheapest of `prices` (the algorithm to run, and the cheapest time, which is what is
/// weighed against native); between nodes `pipeline` within [`CHAIN_TIE`] of it.
fn cheapest(prices: impl Iterator<Item = (Algorithm, f64)>, nodes: bool) -> (Algorithm, f64) {
    let (mut best, mut chain) = ((Algorithm::Binomial, f64::INFINITY), f64::INFINITY);
    for (a, t) in prices {
        if t < best.1 {
            best = (a, t);
        }
        if a == Algorithm::Pipeline {
            chain = t;
        }
    }
    if nodes && chain <= CHAIN_TIE * best.1 {
        (Algorithm::Pipeline, best.1)
    } else {
        best
    }
}

/// The model's answer at exactly `bytes` (the library asks it at the middle of a
/// [`span`]: [`super::Resolver::model_pick`]) with one rank per node or all on one node.
/// No allocation.
#[allow(clippy::too_many_arguments)]
pub fn pick(
    mpi: Mpi,
    params: &CostParams,
    margin: f64,
    coll: Collective,
    p: usize,
    bytes: usize,
    commutative: bool,
    place: Place,
) -> ModelPick {
    let shm = place == Place::Node { shm: true };
    let best_pcoll = cheapest(
        Algorithm::available(coll)
            .iter()
            .copied()
            .filter(|&a| priced(a, coll, commutative) && (a != Algorithm::Shm || shm))
            .map(|a| (a, predict(coll, a, p, bytes, params).time)),
        place == Place::Nodes,
    );
    let best = if p <= 1 || bytes == 0 {
        Algorithm::Native
    } else {
        let t_native = native::native(mpi, coll, p, bytes, commutative, params).time;
        if best_pcoll.1 < (1.0 - margin) * t_native {
            best_pcoll.0
        } else {
            Algorithm::Native
        }
    };
    ModelPick {
        best,
        best_pcoll: best_pcoll.0,
    }
}

/// The model's answer for a communicator over several nodes with several ranks on some
/// ([`NodeShape::multi`]): the two-level model ([`crate::model::nodes`]) prices the flat
/// algorithms, `hier` / `hier_ml` (where the nodes' order allows the op) and native.
#[allow(clippy::too_many_arguments)]
pub fn pick_nodes(
    mpi: Mpi,
    levels: &Levels,
    margin: f64,
    coll: Collective,
    p: usize,
    bytes: usize,
    commutative: bool,
    shape: &NodeShape,
) -> ModelPick {
    let best_pcoll = cheapest(
        node_prices(levels, coll, p, bytes, commutative, shape).into_iter(),
        true,
    );
    let best = if p <= 1 || bytes == 0 {
        Algorithm::Native
    } else {
        let np = nodes::flat_params(levels, shape, Algorithm::Native);
        let t_native = native::native(mpi, coll, p, bytes, commutative, &np).time;
        if best_pcoll.1 < (1.0 - margin) * t_native {
            best_pcoll.0
        } else {
            Algorithm::Native
        }
    };
    ModelPick {
        best,
        best_pcoll: best_pcoll.0,
    }
}

/// Predicted seconds of every pcoll algorithm for a call over `shape`'s nodes (two levels).
pub fn node_prices(
    levels: &Levels,
    coll: Collective,
    p: usize,
    bytes: usize,
    commutative: bool,
    shape: &NodeShape,
) -> Vec<(Algorithm, f64)> {
    let mut out = Vec::new();
    for &a in Algorithm::available(coll) {
        if a.node_aware() {
            if a.eligible(coll, commutative).is_ok() && shape.order_ok(commutative) {
                let t = nodes::node_aware_time(coll, a, shape, bytes, commutative, levels).total();
                out.push((a, t));
            }
        } else if priced(a, coll, commutative) && a != Algorithm::Shm {
            out.push((a, nodes::flat_time(coll, a, p, shape, bytes, levels)));
        }
    }
    out
}

/// The parts of split size classes, per cell: each as (first size, end, packed answer).
type SplitParts = std::collections::HashMap<usize, Vec<(usize, usize, u16)>>;

/// Memo of model answers for one communicator size: one cell per (collective,
/// commutativity, [`Place`], size class), filled on first use. Cells are
/// atomics: threads may race to fill one, with the same value. Valid for one table and one MPI
/// (the process's).
pub struct Memo {
    p: usize,
    cells: Box<[AtomicU16]>,
    /// The answers of classes native's own selection splits ([`span`]): per cell, each part
    /// as (first size, end, answer); few, filled on first use, read under a shared lock.
    split: std::sync::RwLock<SplitParts>,
}

impl Memo {
    pub fn new(p: usize) -> Memo {
        Memo {
            p,
            cells: (0..Collective::ALL.len() * 2 * 3 * NCLASS)
                .map(|_| AtomicU16::new(0))
                .collect(),
            split: Default::default(),
        }
    }
    /// The communicator size it holds answers for.
    pub fn p(&self) -> usize {
        self.p
    }
    fn index(coll: Collective, commutative: bool, place: Place, class: usize) -> usize {
        let row = (coll.index() * 2 + commutative as usize) * 3 + place.index();
        row * NCLASS + class
    }
    fn cell(&self, coll: Collective, commutative: bool, place: Place, class: usize) -> &AtomicU16 {
        &self.cells[Self::index(coll, commutative, place, class)]
    }
    /// The answer stored for the part of a split size class that holds `bytes`, if any.
    pub fn get_split(
        &self,
        coll: Collective,
        commutative: bool,
        place: Place,
        bytes: usize,
    ) -> Option<ModelPick> {
        let i = Self::index(coll, commutative, place, class_of(bytes));
        let split = self.split.read().ok()?;
        split
            .get(&i)?
            .iter()
            .find(|(lo, hi, _)| *lo <= bytes && bytes < *hi)
            .map(|&(_, _, v)| unpack(v))
    }
    /// Store the answer for `span`, a part of a split size class.
    pub fn put_split(
        &self,
        coll: Collective,
        commutative: bool,
        place: Place,
        span: (usize, usize),
        m: ModelPick,
    ) {
        let i = Self::index(coll, commutative, place, class_of(span.0));
        if let Ok(mut split) = self.split.write() {
            let parts = split.entry(i).or_default();
            if !parts.iter().any(|&(lo, _, _)| lo == span.0) {
                parts.push((span.0, span.1, pack(m)));
            }
        }
    }
    /// The answer stored for a size class, if any.
    #[inline]
    pub fn get(
        &self,
        coll: Collective,
        commutative: bool,
        place: Place,
        class: usize,
    ) -> Option<ModelPick> {
        let v = self
            .cell(coll, commutative, place, class)
            .load(Ordering::Relaxed);
        (v != 0).then(|| unpack(v))
    }
    /// Store the answer for a size class.
    pub fn put(
        &self,
        coll: Collective,
        commutative: bool,
        place: Place,
        class: usize,
        m: ModelPick,
    ) {
        let v = pack(m);
        self.cell(coll, commutative, place, class)
            .store(v, Ordering::Relaxed);
    }
}

/// A [`ModelPick`] in a memo cell (0: empty).
fn pack(m: ModelPick) -> u16 {
    ((m.best.index() as u16 + 1) << 8) | m.best_pcoll.index() as u16
}

fn unpack(v: u16) -> ModelPick {
    ModelPick {
        best: Algorithm::ALL[((v >> 8) - 1) as usize],
        best_pcoll: Algorithm::ALL[(v & 0xff) as usize],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_are_monotone_and_bounds_exact() {
        let mut last = 0;
        for b in 0..100_000usize {
            let k = class_of(b);
            assert!(k >= last, "b={b}");
            last = k;
            if b > 0 {
                assert!(class_lo(k) <= b, "b={b} k={k} lo={}", class_lo(k));
                assert!(
                    class_lo(k + 1) > b || class_lo(k + 1) == class_lo(k),
                    "b={b}"
                );
            }
        }
        for k in 1..NCLASS - 1 {
            let lo = class_lo(k);
            if (k - 1) / PER_OCTAVE >= 3 {
                assert_eq!(class_of(lo), k, "k={k}");
                assert!(class_of(lo - 1) < k, "k={k}");
            }
        }
        for b in [1usize << 30, (1 << 30) + 12345, usize::MAX / 4] {
            let k = class_of(b);
            let r = span_representative((class_lo(k), class_lo(k + 1))) as f64;
            assert!(r / (b as f64) < 1.1 && (b as f64) / r < 1.1, "b={b}");
        }
    }

    #[test]
    fn memo_returns_what_was_stored() {
        let m = Memo::new(5);
        let a = ModelPick {
            best: Algorithm::Native,
            best_pcoll: Algorithm::Ring,
        };
        let k = class_of(100);
        let (shm, plain) = (Place::Node { shm: true }, Place::Node { shm: false });
        assert_eq!(m.get(Collective::Allreduce, true, shm, k), None);
        m.put(Collective::Allreduce, true, shm, k, a);
        assert_eq!(m.get(Collective::Allreduce, true, shm, k), Some(a));
        assert_eq!(m.get(Collective::Allreduce, true, plain, k), None);
        assert_eq!(m.get(Collective::Allreduce, true, Place::Nodes, k), None);
        assert_eq!(m.get(Collective::Allreduce, false, shm, k), None);
        assert_eq!(m.get(Collective::Reduce, true, shm, k), None);
        // A split class: answers per part, found by any size inside it.
        let k = class_of(4096);
        m.put_split(Collective::Reduce, true, shm, (4096, 4200), a);
        assert_eq!(m.get_split(Collective::Reduce, true, shm, 4100), Some(a));
        assert_eq!(m.get_split(Collective::Reduce, true, shm, 4200), None);
        assert_eq!(m.get_split(Collective::Reduce, true, plain, 4100), None);
        assert_eq!(m.get(Collective::Reduce, true, shm, k), None);
        let last = class_of(usize::MAX);
        m.put(
            Collective::ALL[Collective::ALL.len() - 1],
            false,
            Place::Nodes,
            last,
            a,
        );
        assert_eq!(
            m.get(
                Collective::ALL[Collective::ALL.len() - 1],
                false,
                Place::Nodes,
                last
            ),
            Some(a)
        );
    }

    #[test]
    fn between_nodes_the_chain_wins_within_its_tie() {
        let c = CostParams::default();
        let mut chains = 0;
        for coll in [Collective::Reduce, Collective::Bcast, Collective::Allreduce] {
            for p in [3, 4, 5, 8, 16, 64] {
                for b in (10..26).map(|e| 1usize << e) {
                    let (mut prices, _) = prices(Mpi::Mpich, &c, coll, p, b, true);
                    prices.retain(|x| x.0 != Algorithm::Shm);
                    let low = prices.iter().map(|x| x.1).fold(f64::INFINITY, f64::min);
                    let chain = prices.iter().find(|x| x.0 == Algorithm::Pipeline);
                    let at = |place| pick(Mpi::Mpich, &c, 0.15, coll, p, b, true, place);
                    let plain = at(Place::Node { shm: false }).best_pcoll;
                    let t = |a| prices.iter().find(|x| x.0 == a).unwrap().1;
                    assert_eq!(
                        t(plain),
                        low,
                        "{coll} p={p} b={b}: one node takes the cheapest"
                    );
                    let nodes = at(Place::Nodes).best_pcoll;
                    match chain {
                        Some(&(_, tc)) if tc <= CHAIN_TIE * low => {
                            assert_eq!(nodes, Algorithm::Pipeline, "{coll} p={p} b={b}");
                            chains += (plain != Algorithm::Pipeline) as usize;
                        }
                        _ => assert_eq!(nodes, plain, "{coll} p={p} b={b}"),
                    }
                }
            }
        }
        // The tie decides somewhere (reduce and bcast at small p, large sizes), not everywhere.
        assert!(chains > 0);
        let m = 4 << 20;
        let at = |coll, p, place| pick(Mpi::Mpich, &c, 0.15, coll, p, m, true, place).best_pcoll;
        assert_eq!(at(Collective::Reduce, 4, Place::Nodes), Algorithm::Pipeline);
        assert_ne!(
            at(Collective::Reduce, 4, Place::Node { shm: false }),
            Algorithm::Pipeline
        );
        assert_ne!(
            at(Collective::Reduce, 64, Place::Nodes),
            Algorithm::Pipeline
        );
    }

    #[test]
    fn spans_split_classes_at_native_thresholds() {
        let c = CostParams::default();
        for mpi in Mpi::ALL {
            for coll in Collective::ALL {
                for p in [3, 674, 1000] {
                    for b in (10..30).map(|e| (1usize << e) * 5 / 4 + 17) {
                        let (lo, hi) = span(mpi, &c, coll, p, true, b);
                        assert!(lo <= b && b < hi, "{lo} {b} {hi}");
                        let name = |x| native::native(mpi, coll, p, x, true, &c).algorithm;
                        for x in [lo, b, hi - 1, (lo + hi) / 2] {
                            assert_eq!(name(x), name(b), "{mpi:?} {coll} p={p} [{lo},{hi}) at {x}");
                        }
                    }
                }
            }
        }
    }
}
