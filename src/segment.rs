//! Which algorithms are segmented, how many segments (blocks) they use for a call, and the
//! segment sizes `pcoll-tune` measures around the cost model's optimum.
//!
//! A segment size `s` bytes becomes `CallSpec::seg_elems = s / elem_bytes` (at least 1). The
//! builders turn it into a segment (block) count over the length they split:
//!
//! | collective | algorithm | length split | count from `seg_elems = 0` (the model) |
//! |---|---|---|---|
//! | reduce | pipeline | m | `√(m(β+γ)/((p−2)α))` (ALGORITHMS.md §2) |
//! | reduce, allreduce | greedy | m | Lowery–Langou bi-greedy optimum, at most 256 |
//! | reduce | greedy_uni | m | uni-greedy optimum, at most 256 |
//! | reduce | circulant | m | `√((q−1)(β+γ)m/α)` (§5.7) |
//! | allreduce | circulant | ⌈m/p⌉ | 1 (§5.8) |
//! | reduce_scatter, reduce_scatter_block | circulant | largest count | `√((q−1)(β+γ)c_max/α)` (§8.12) |
//! | bcast | pipeline | m | `√((p−2)βm/α)` |
//! | bcast | circulant | m | `√((q−1)βm/α)` (§5.6) |
//! | reduce, allreduce, bcast | binary, fibonacci | m | the tree's model optimum ([`crate::algo::trees`]) |
//!
//! Every other (collective, algorithm) ignores the segment (circulant allgatherv always uses
//! whole contributions, §8.12).

use crate::algo::{bcast, circulant, greedy, pipeline, trees, Algorithm, CallSpec, Collective};

/// Does `alg` of `coll` read `CallSpec::seg_elems`?
pub fn uses_segment(alg: Algorithm, coll: Collective) -> bool {
    use Algorithm::*;
    use Collective::*;
    matches!(
        (coll, alg),
        (Reduce, Pipeline | Greedy | GreedyUni | Circulant)
            | (Allreduce, Greedy | Circulant)
            | (ReduceScatter | ReduceScatterBlock, Circulant)
            | (Bcast, Pipeline | Circulant)
            | (Reduce | Allreduce | Bcast, Binary | Fibonacci)
    )
}

/// The segmented algorithms of `coll`, in `Algorithm::available` order.
pub fn segmented(coll: Collective) -> Vec<Algorithm> {
    Algorithm::available(coll)
        .iter()
        .copied()
        .filter(|a| uses_segment(*a, coll))
        .collect()
}

/// Elements of the length the algorithm splits into segments (see the module table).
fn split_len(alg: Algorithm, s: &CallSpec) -> usize {
    match (s.coll, alg) {
        (Collective::Allreduce, Algorithm::Circulant) => s.counts[0].div_ceil(s.p.max(1)),
        (Collective::ReduceScatter | Collective::ReduceScatterBlock, _) => {
            s.counts.iter().copied().max().unwrap_or(0)
        }
        _ => s.counts[0],
    }
}

/// The segment (block) count `alg` uses for `s` (with `s.seg_elems` as given; 0 = the
/// model's choice). `None` for algorithms without segments.
pub fn segment_count(alg: Algorithm, s: &CallSpec) -> Option<usize> {
    if !uses_segment(alg, s.coll) {
        return None;
    }
    Some(match alg {
        Algorithm::Pipeline if s.coll == Collective::Bcast => bcast::pipeline_segments(s),
        Algorithm::Pipeline => pipeline::segments(s),
        Algorithm::Greedy => greedy::segments(s, true),
        Algorithm::GreedyUni => greedy::segments(s, false),
        Algorithm::Binary | Algorithm::Fibonacci => trees::segments(s, trees::shape(alg)),
        _ => circulant::block_count(s),
    })
}

/// The segment size in bytes the cost model picks for `alg` on this call (the size of the
/// largest of its `segment_count` segments). `None` for algorithms without segments or an
/// empty call.
pub fn model_segment_bytes(alg: Algorithm, s: &CallSpec) -> Option<usize> {
    let s0 = CallSpec {
        seg_elems: 0,
        ..s.clone()
    };
    let n = segment_count(alg, &s0)?;
    let len = split_len(alg, s);
    (len > 0).then(|| len.div_ceil(n.max(1)) * s.elem_bytes.max(1))
}

/// Nearest power of two of `x` on a log scale (at least 1).
fn pow2_near(x: f64) -> usize {
    if x <= 1.0 {
        return 1;
    }
    let k = x.log2().round().min(62.0);
    1usize << (k as u32)
}

/// Segment sizes (bytes) to measure for `alg` on this call: the model's segment scaled by each
/// of `factors`, rounded to a power of two, kept between one element and the whole split
/// length (= one segment), and left out when the segment count it gives equals the model's own or an earlier
/// candidate's (the builders clamp counts, e.g. greedy to 256 segments). Ascending. Empty for
/// algorithms without segments.
pub fn candidates(alg: Algorithm, s: &CallSpec, factors: &[f64]) -> Vec<usize> {
    let Some(model) = model_segment_bytes(alg, s) else {
        return vec![];
    };
    let eb = s.elem_bytes.max(1);
    let whole = split_len(alg, s) * eb;
    let count = |bytes: usize| {
        let t = CallSpec {
            seg_elems: (bytes / eb).max(1),
            ..s.clone()
        };
        segment_count(alg, &t)
    };
    let mut seen = vec![count(model)];
    let mut out = Vec::new();
    for &f in factors {
        let b = pow2_near(model as f64 * f).clamp(eb, whole.max(eb));
        let n = count(b);
        if !seen.contains(&n) {
            seen.push(n);
            out.push(b);
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algo::CostParams;

    fn spec(coll: Collective, p: usize, n: usize, eb: usize) -> CallSpec {
        let counts = match coll {
            Collective::Reduce | Collective::Allreduce | Collective::Bcast => vec![n],
            Collective::Allgather | Collective::ReduceScatterBlock => vec![n / p; p],
            _ => (0..p).map(|j| n / p + (j < n % p) as usize).collect(),
        };
        CallSpec {
            coll,
            p,
            rank: 0,
            root: 0,
            counts,
            displs: vec![],
            commutative: true,
            elem_bytes: eb,
            seg_elems: 0,
            params: CostParams::default(),
            in_place: false,
        }
    }

    /// The one segmented list serves the model too: a modelled time that varies with the
    /// segment count belongs to an algorithm whose builder reads the segment size (else the
    /// model would price a segmentation the library never runs).
    #[test]
    fn the_model_segments_only_what_the_builders_segment() {
        use crate::model::{time_with_segments, Duplex, Scheme};
        let c = CostParams::default();
        for coll in Collective::ALL {
            for &alg in Algorithm::available(coll) {
                let Some(scheme) = Scheme::of(alg) else {
                    continue;
                };
                for (p, bytes) in [(5, 1usize << 20), (16, 1 << 16), (64, 1 << 24)] {
                    let t = |n| time_with_segments(coll, scheme, p, bytes, &c, Duplex::Full, n);
                    if t(1) != t(8) || t(1) != t(64) {
                        assert!(uses_segment(alg, coll), "{coll} {alg}: model varies with n");
                    }
                    if !uses_segment(alg, coll) {
                        let pr = crate::model::predict(coll, alg, p, bytes, &c);
                        assert_eq!(pr.segments, 1, "{coll} {alg}");
                    }
                }
            }
        }
    }

    /// `uses_segment` agrees with the builders: a segmented algorithm's program changes with
    /// the segment size, every other program ignores it (every rank, several p).
    #[test]
    fn uses_segment_matches_the_builders() {
        for coll in Collective::ALL {
            for &alg in Algorithm::available(coll) {
                // The node-aware ones are built over a layout (their steps take the model's
                // segments: tests/hier_sim.rs).
                if alg == Algorithm::Native || alg.node_aware() || alg == Algorithm::Shm {
                    continue;
                }
                let mut differs = false;
                for p in [2, 3, 5] {
                    let s = spec(coll, p, 997, 8);
                    let s = CallSpec {
                        displs: if coll.base() == Collective::Allgatherv {
                            (0..p).map(|j| s.counts[..j].iter().sum()).collect()
                        } else {
                            vec![]
                        },
                        ..s
                    };
                    for rank in 0..p {
                        let a = crate::algo::build(alg, &s.for_rank(rank)).unwrap();
                        let t = CallSpec {
                            seg_elems: 7,
                            ..s.for_rank(rank)
                        };
                        let b = crate::algo::build(alg, &t).unwrap();
                        differs |= a != b;
                    }
                }
                assert_eq!(differs, uses_segment(alg, coll), "{coll} {alg}");
            }
        }
    }

    #[test]
    fn pow2() {
        assert_eq!(pow2_near(0.3), 1);
        assert_eq!(pow2_near(5.0), 4);
        assert_eq!(pow2_near(6.0), 8);
        assert_eq!(pow2_near(65536.0), 65536);
    }

    #[test]
    fn candidates_are_distinct_counts_within_bounds() {
        for coll in Collective::ALL {
            for alg in segmented(coll) {
                for (p, n) in [(2, 1 << 17), (4, 1 << 20), (7, 12345), (3, 5)] {
                    let s = spec(coll, p, n, 8);
                    let model = model_segment_bytes(alg, &s).unwrap();
                    assert!(model >= 8, "{coll} {alg} p={p} n={n}");
                    let c = candidates(alg, &s, &[1.0 / 16.0, 0.25, 4.0]);
                    let whole = split_len(alg, &s) * 8;
                    let mut counts = vec![segment_count(alg, &s).unwrap()];
                    for &b in &c {
                        assert!((8..=whole.max(8)).contains(&b), "{coll} {alg} {b}");
                        // A power of two, or the whole length (one segment).
                        assert!(b.is_power_of_two() || b == whole, "{coll} {alg} {b}");
                        let t = CallSpec {
                            seg_elems: b / 8,
                            ..s.clone()
                        };
                        let k = segment_count(alg, &t).unwrap();
                        assert!(!counts.contains(&k), "{coll} {alg} {b}: count {k} twice");
                        counts.push(k);
                    }
                }
            }
        }
        // Without segments there is nothing to try.
        let s = spec(Collective::Allgatherv, 4, 1 << 20, 8);
        assert!(candidates(Algorithm::Circulant, &s, &[0.25, 4.0]).is_empty());
        assert!(candidates(
            Algorithm::Ring,
            &spec(Collective::Allreduce, 4, 1000, 8),
            &[4.0]
        )
        .is_empty());
    }
}
