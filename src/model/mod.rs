//! Alpha-beta-gamma (Hockney) cost model of every algorithm of every collective
//! (ALGORITHMS.md §0, §2, §5–§7; Lowery–Langou Tables I–III; Rabenseifner–Träff §3).
//!
//! Units: `α` seconds per message, `β` seconds per byte, `γ` seconds per byte reduced
//! ([`CostParams`]); `bytes` = message size `m` as the tuning table keys it (reduce/allreduce:
//! the vector; reduce_scatter/allgatherv: the total over all ranks, equal counts assumed).
//! A segment of a message split into `n` segments has `s = m / n` bytes (the papers'
//! equi-segmentation; the builders split whole elements, which differs by < 1 element).
//!
//! * [`time_with_segments`]: closed form (or event simulation for uni-greedy) with `n` given.
//! * [`best_segments`] / [`predict_scheme`] / [`predict`]: the optimum over `n`.
//! * [`lower_bound`]: sum of the per-term lower bounds (latency, bandwidth, computation;
//!   Lowery–Langou Table II, the reference line of their Figure 6). Each term alone is a
//!   true bound; their sum is the usual "ideal" reference, not a proven bound on the total.
//! * [`simulate_tree`]: ASAP event simulation of a pipelined tree (chain, binary) in the
//!   full- or half-duplex model, to check the closed forms.
//! * [`fit`]: least-squares α, β, γ from algorithm-independent samples.
//!
//! Half-duplex (one port per process): binomial, pipeline and binary use the Lowery–Langou
//! unidirectional formulas (upper bounds when γ > 0, §8 pitfall 11); greedy_uni is
//! simulated; bi-greedy is not defined; exchange algorithms (circulant, butterfly, ring),
//! which send and receive in every round, pay `2α + 2βs` per round.

mod closed;
mod fit;
pub mod native;
pub mod nodes;
pub mod paper;
pub mod shm;

pub use fit::{fit, Sample};

use closed::Terms;

use crate::algo::{Algorithm, Collective, CostParams};
use crate::sched::blocks::ceil_log2;
use crate::sched::greedy::{uni_greedy, SegCost};

/// Communication model: full-duplex (send and receive at the same time) or half-duplex.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Duplex {
    Full,
    Half,
}

/// The modelled algorithms: the library's algorithms plus the heap-ordered binary tree of
/// Lowery–Langou's comparisons (children `2v+1, 2v+2`, [`crate::sched::pipeline`]; the
/// library's `binary` is the tree report's preorder tree, [`crate::sched::trees`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scheme {
    Binomial,
    Pipeline,
    HeapBinary,
    Greedy,
    GreedyUni,
    Circulant,
    Butterfly,
    Ring,
    ScatterAllgather,
    Binary,
    Fibonacci,
}

impl Scheme {
    pub const ALL: [Scheme; 11] = [
        Scheme::Binomial,
        Scheme::Pipeline,
        Scheme::HeapBinary,
        Scheme::Greedy,
        Scheme::GreedyUni,
        Scheme::Circulant,
        Scheme::Butterfly,
        Scheme::Ring,
        Scheme::ScatterAllgather,
        Scheme::Binary,
        Scheme::Fibonacci,
    ];
    pub fn name(self) -> &'static str {
        match self {
            Scheme::Binomial => "binomial",
            Scheme::Pipeline => "pipeline",
            Scheme::HeapBinary => "heap_binary",
            Scheme::Binary => "binary",
            Scheme::Fibonacci => "fibonacci",
            Scheme::Greedy => "greedy",
            Scheme::GreedyUni => "greedy_uni",
            Scheme::Circulant => "circulant",
            Scheme::Butterfly => "butterfly",
            Scheme::Ring => "ring",
            Scheme::ScatterAllgather => "scatter_allgather",
        }
    }
    /// The scheme modelling a library algorithm (None for `Native`).
    pub fn of(alg: Algorithm) -> Option<Scheme> {
        Some(match alg {
            Algorithm::Native | Algorithm::Hier | Algorithm::HierMl | Algorithm::Shm => {
                return None
            }
            Algorithm::Binomial => Scheme::Binomial,
            Algorithm::Pipeline => Scheme::Pipeline,
            Algorithm::Greedy => Scheme::Greedy,
            Algorithm::GreedyUni => Scheme::GreedyUni,
            Algorithm::Circulant => Scheme::Circulant,
            Algorithm::Butterfly => Scheme::Butterfly,
            Algorithm::Ring => Scheme::Ring,
            Algorithm::ScatterAllgather => Scheme::ScatterAllgather,
            Algorithm::Binary => Scheme::Binary,
            Algorithm::Fibonacci => Scheme::Fibonacci,
        })
    }
    /// Is the best segment/block count `n` searched for? For the library's algorithms exactly
    /// when the builder reads the segment size ([`crate::segment::uses_segment`], the one
    /// list); the heap binary-tree baseline (no library algorithm) is pipelined. A formula that
    /// does not depend on `n` (circulant allreduce, reduce_scatter) keeps `n = 1`.
    pub fn segmented(self, coll: Collective) -> bool {
        match Algorithm::ALL
            .into_iter()
            .find(|&a| Scheme::of(a) == Some(self))
        {
            Some(alg) => crate::segment::uses_segment(alg, coll),
            None => true,
        }
    }
}

impl std::str::FromStr for Scheme {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Scheme::ALL
            .into_iter()
            .find(|a| a.name() == s)
            .ok_or_else(|| format!("unknown scheme '{s}'"))
    }
}

/// A predicted time (seconds) and the segment count it was obtained with.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Prediction {
    pub time: f64,
    pub segments: usize,
}

/// Largest segment count searched: one byte per segment, and at most 2^16.
fn max_segments(bytes: usize) -> usize {
    bytes.clamp(1, 1 << 16)
}

/// Time of `scheme` for `coll` with `n` segments (blocks); `f64::INFINITY` where the
/// scheme does not exist for the collective or the duplex model.
pub fn time_with_segments(
    coll: Collective,
    scheme: Scheme,
    p: usize,
    bytes: usize,
    c: &CostParams,
    duplex: Duplex,
    n: usize,
) -> f64 {
    if p <= 1 {
        return 0.0;
    }
    let x = Terms::new(p, bytes, c, duplex, n);
    // allgather / reduce_scatter_block run the allgatherv / reduce_scatter programs.
    match coll.base() {
        Collective::Reduce => x.reduce(scheme),
        Collective::Allreduce => x.allreduce(scheme),
        Collective::ReduceScatter => x.reduce_scatter(scheme),
        Collective::Allgatherv => x.allgatherv(scheme),
        Collective::Bcast => x.bcast(scheme),
        Collective::Allgather | Collective::ReduceScatterBlock => f64::INFINITY, // not a base
    }
}

/// Uni-greedy reduce time by simulating its schedule (§3) with `n` equal segments of
/// `bytes / n` bytes.
pub fn uni_greedy_time(p: usize, n: usize, bytes: usize, c: &CostParams) -> f64 {
    let s = bytes as f64 / n.max(1) as f64;
    let cost = SegCost {
        tcomm: c.alpha + c.beta * s,
        tcomp: c.gamma * s,
    };
    uni_greedy(p, 0, &vec![cost; n.max(1)]).completion
}

/// Integer minimisation of `f` over `1..=nmax`: scan powers of two, then a ternary search
/// between the neighbours of the best power (the cost functions here are unimodal in n).
pub fn minimise<F: FnMut(usize) -> f64>(nmax: usize, mut f: F) -> (usize, f64) {
    let nmax = nmax.max(1);
    let mut best = (1, f(1));
    let mut k = 2;
    while k <= nmax {
        let t = f(k);
        if t < best.1 {
            best = (k, t);
        } else if t > best.1 * 1.5 && k > 4 * best.0 {
            break; // well past the minimum
        }
        k *= 2;
    }
    let (mut lo, mut hi) = ((best.0 / 2).max(1), (best.0 * 2).min(nmax));
    while hi - lo > 2 {
        let m1 = lo + (hi - lo) / 3;
        let m2 = hi - (hi - lo) / 3;
        if f(m1) <= f(m2) {
            hi = m2;
        } else {
            lo = m1;
        }
    }
    for n in lo..=hi {
        let t = f(n);
        if t < best.1 || (t == best.1 && n < best.0) {
            best = (n, t);
        }
    }
    best
}

/// Cheaper search for simulated schemes (uni-greedy): powers of two (as the Lowery–Langou
/// experiments), stopping once clearly past the minimum, then the two `1.5·2^k` neighbours.
pub fn minimise_coarse<F: FnMut(usize) -> f64>(nmax: usize, mut f: F) -> (usize, f64) {
    let nmax = nmax.max(1);
    let mut best = (1, f(1));
    let mut k = 2;
    while k <= nmax {
        let t = f(k);
        if t < best.1 {
            best = (k, t);
        } else if k >= 4 * best.0 {
            break;
        }
        k *= 2;
    }
    for n in [best.0 * 3 / 4, best.0 * 3 / 2] {
        if n > 1 && n <= nmax {
            let t = f(n);
            if t < best.1 {
                best = (n, t);
            }
        }
    }
    best
}

/// The segment count minimising [`time_with_segments`] (1 for unsegmented schemes).
pub fn best_segments(
    coll: Collective,
    scheme: Scheme,
    p: usize,
    bytes: usize,
    c: &CostParams,
    duplex: Duplex,
) -> usize {
    predict_scheme(coll, scheme, p, bytes, c, duplex).segments
}

/// Predicted time of `scheme` with its best segment count.
pub fn predict_scheme(
    coll: Collective,
    scheme: Scheme,
    p: usize,
    bytes: usize,
    c: &CostParams,
    duplex: Duplex,
) -> Prediction {
    if !scheme.segmented(coll) || p <= 1 || bytes == 0 {
        let time = time_with_segments(coll, scheme, p, bytes, c, duplex, 1);
        return Prediction { time, segments: 1 };
    }
    let f = |n| time_with_segments(coll, scheme, p, bytes, c, duplex, n);
    let (segments, time) = if scheme == Scheme::GreedyUni {
        minimise_coarse(max_segments(bytes), f)
    } else {
        minimise(max_segments(bytes), f)
    };
    Prediction { time, segments }
}

/// Predicted full-duplex time of a library algorithm (`Native`: infinite, not modelled;
/// `Shm`: [`shm::time`], a communicator on one node).
pub fn predict(
    coll: Collective,
    alg: Algorithm,
    p: usize,
    bytes: usize,
    params: &CostParams,
) -> Prediction {
    if alg == Algorithm::Shm {
        // Memory traffic, not messages: its own constants ([`shm`]), not α, β, γ.
        return Prediction {
            time: shm::time(coll, p, bytes),
            segments: 1,
        };
    }
    match Scheme::of(alg) {
        Some(s) => predict_scheme(coll, s, p, bytes, params, Duplex::Full),
        None => Prediction {
            time: f64::INFINITY,
            segments: 1,
        },
    }
}

/// Sum of the per-term lower bounds (see module docs): latency `⌈log2 p⌉α`; bandwidth
/// reduce `βm` (half-duplex p ≥ 3: `2βm`, Lowery–Langou §III), allreduce `2(p−1)/p·βm`,
/// reduce_scatter / allgatherv `(p−1)/p·βm`; computation `(p−1)/p·γm` (none for allgatherv).
pub fn lower_bound(
    coll: Collective,
    p: usize,
    bytes: usize,
    c: &CostParams,
    duplex: Duplex,
) -> f64 {
    if p <= 1 {
        return 0.0;
    }
    let m = bytes as f64;
    let pf = p as f64;
    let lat = ceil_log2(p) as f64 * c.alpha;
    let frac = (pf - 1.0) / pf;
    let comp = frac * c.gamma * m;
    let half = duplex == Duplex::Half;
    match coll.base() {
        Collective::Reduce => {
            let bw = if half && p >= 3 { 2.0 } else { 1.0 } * c.beta * m;
            lat + bw + comp
        }
        Collective::Bcast => lat + c.beta * m,
        Collective::Allreduce => lat + 2.0 * frac * c.beta * m + comp,
        Collective::ReduceScatter => lat + frac * c.beta * m + comp,
        _ => lat + frac * c.beta * m,
    }
}

/// ASAP event simulation of a segmented pipelined tree reduce (ALGORITHMS.md §2): every node
/// receives segment j from each child in order (reducing each), then sends j to its parent.
/// `parents[i]` = parent of i (None: the root); children are taken in rank order. Transfers
/// start when both partners are ready (rendezvous); computation never overlaps the node's
/// own communication. Returns the root's completion time.
pub fn simulate_tree(
    parents: &[Option<usize>],
    nseg: usize,
    tcomm: f64,
    tcomp: f64,
    duplex: Duplex,
) -> f64 {
    simulate_tree_events(parents, nseg, tcomm, tcomp, duplex).0
}

/// [`simulate_tree`] that also returns the transfers `(start, sender, receiver, segment)`.
pub fn simulate_tree_events(
    parents: &[Option<usize>],
    nseg: usize,
    tcomm: f64,
    tcomp: f64,
    duplex: Duplex,
) -> (f64, Vec<(f64, usize, usize, usize)>) {
    let p = parents.len();
    let mut events = Vec::new();
    let root = match (0..p).find(|&i| parents[i].is_none()) {
        Some(r) => r,
        None => return (0.0, events),
    };
    let mut children = vec![Vec::new(); p];
    for (i, par) in parents.iter().enumerate() {
        if let Some(u) = par {
            children[*u].push(i);
        }
    }
    // Post-order.
    let mut order = Vec::with_capacity(p);
    let mut stack = vec![(root, false)];
    while let Some((v, expanded)) = stack.pop() {
        if expanded {
            order.push(v);
        } else {
            stack.push((v, true));
            for &c in children[v].iter().rev() {
                stack.push((c, false));
            }
        }
    }
    let mut sfree = vec![0.0f64; p]; // full duplex: send port; half: the port
    let mut rfree = vec![0.0f64; p]; // full duplex: receive port incl. reduction
    let mut ready = vec![0.0f64; p]; // node's partial of the current segment complete
    let mut completion = 0.0f64;
    for j in 0..nseg {
        for r in ready.iter_mut() {
            *r = 0.0;
        }
        for &v in &order {
            for &c in &children[v] {
                if duplex == Duplex::Half {
                    let start = ready[c].max(sfree[c]).max(sfree[v]);
                    events.push((start, c, v, j));
                    sfree[c] = start + tcomm;
                    sfree[v] = start + tcomm + tcomp;
                    ready[v] = sfree[v];
                } else {
                    let start = ready[c].max(sfree[c]).max(rfree[v]);
                    events.push((start, c, v, j));
                    sfree[c] = start + tcomm;
                    let comp_start = (start + tcomm).max(sfree[v]);
                    rfree[v] = comp_start + tcomp;
                    ready[v] = rfree[v];
                }
            }
            // Leaves are ready at once; a node's send also waits for its send port.
            if v == root {
                completion = completion.max(ready[v]);
            }
        }
    }
    (completion, events)
}
