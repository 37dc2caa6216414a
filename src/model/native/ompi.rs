//! Open MPI 4.1 `coll/tuned`: the fixed decision tables and the algorithms they name, priced
//! (see the parent module for units, sources and assumptions).
//!
//! # Open MPI 4.1 `coll/tuned` fixed rules
//!
//! `coll/tuned` (priority 30) serves intra-communicators unless `han`/`hcoll`/`ucc` is enabled;
//! with no dynamic-rules file it runs the fixed rules below, the same intra- and inter-node.
//! Thresholds are strict (`<`) upper bounds in bytes, rows are `p` ranges. **Segment sizes:**
//! 4.1's fixed rules pass `segsize = 0` (and fan-in/out 0) to every algorithm; with segsize 0
//! `COLL_BASE_COMPUTED_SEGCOUNT` leaves one segment, so chain/pipeline/binary/binomial/
//! in-order-binary trees and bcasts run **unsegmented** (n = 1), chain's fan-out 0 becomes 1
//! (a pipeline), and "segmented ring" falls through to the plain ring (`count < p·count`).
//! (4.0's rules used 1–128 KiB segments; 4.1 dropped them.)
//!
//! allreduce, commutative (RD = recursive doubling, Rab = Rabenseifner reduce_scatter +
//! allgather, NO = nonoverlapping = tuned reduce to 0 + tuned bcast):
//!
//! | p | algorithm by bytes |
//! |---|---|
//! | 2–3 | <8 ring¹, <4K RD, <8K ring, <16K RD, <64K ring, <256K seg. ring², else Rab³ |
//! | 4–7 | <16 ring¹, <8K RD, else Rab |
//! | 8–15 | <8K RD, else Rab |
//! | 16–31 | <64 seg. ring², <4K RD, else Rab |
//! | 32–63 | <128 seg. ring², else Rab |
//! | 64–127 | <256K RD, else Rab |
//! | 128–255 | <128K NO, <256K RD, else Rab |
//! | 256–511 | <4K NO, else Rab |
//! | 512–2047 | <2K NO, <16K RD, else Rab |
//! | 2048–4095 | <2K NO, <4K seg. ring², <16K RD, else Rab |
//! | ≥4096 | <2K NO, <16K seg. ring², <32K RD, else Rab |
//!
//! ¹ ring with `count < p` runs recursive doubling. ² segsize 0: the plain ring (¹ applies).
//! ³ Rab with `count < 2^⌊log2 p⌋` or a non-commutative op runs basic_linear (linear reduce +
//! linear bcast). Non-commutative: p 2–3 <128K RD else basic_linear; 4–7 RD; 8–15 <1M RD else
//! NO; 16–127 RD; 128–255 <128K NO, <512K RD, else NO; 256–511 <4K NO, <512K RD, else NO;
//! ≥512 <2K NO else RD.
//!
//! reduce, commutative (linear = root receives p−1 messages; chain = pipeline, both fan-out 1):
//!
//! | p | algorithm by bytes |
//! |---|---|
//! | 2–3 | <8 Rab³, <16 binary, <32 pipeline, <256K linear, <512K pipeline, <1M chain, else pipeline |
//! | 4–7 | <4K binary, <64K chain, <256K binomial, <512K linear, <1M binomial, else linear |
//! | 8–15 | <8K binary, else binomial |
//! | 16–31 | <4K binary, else binomial |
//! | 32–255, 512–2047 | binomial |
//! | 256–511 | <8K binomial, <16K in-order binary, else binomial |
//! | 2048–4095 | in-order binary in [512,1K) and [8K,16K), else binomial |
//! | ≥4096 | in-order binary in [16,32), [1K,2K), [8K,16K), else binomial |
//!
//! ³ here: Rabenseifner reduce_scatter + binomial gather, falling back to linear when
//! `count < 2^⌊log2 p⌋` (always, below 8 bytes). Non-commutative: only linear and in-order
//! binary (root p−1, then one extra send to the root): p 2–3 <8 in-order binary else linear;
//! 4–7 linear; 8–15 in-order binary in [0,1K), [8K,16K), ≥256K, linear otherwise; 16–127
//! in-order binary; 128–255 linear in [512,1K), in-order binary otherwise; ≥256 in-order binary.
//!
//! reduce_scatter, commutative (NO = tuned reduce to 0 + linear scatterv; RH = recursive
//! halving; butterfly = Träff's butterfly; any non-commutative op: NO):
//!
//! | p | algorithm by total bytes |
//! |---|---|
//! | 2–3 | <64K ring, <128K butterfly, else ring |
//! | 4–7 | <8 NO, <256K RH, else ring |
//! | 8–31 | <256K RH, else ring |
//! | 32–63 | <64 NO, <2K RH, <512K butterfly, else ring |
//! | 64–127 | <256 NO, <512 RH, <2K butterfly, <4K RH, else butterfly |
//! | 128–255 | <256 NO, <512 RH, else butterfly |
//! | 256–511 | <256 NO, <1K RH, else butterfly |
//! | 512–1023 | <512 NO, <2K RH, <8K butterfly, <16K RH, else butterfly |
//! | 1024–2047 | <512 NO, <4K RH, <16K butterfly, <32K RH, else butterfly |
//! | 2048–4095 | <512 NO, <4K RH, else butterfly |
//! | ≥4096 | <1K NO, <8K RH, else butterfly |
//!
//! allgatherv (keyed on **per-rank** bytes = total / p; default = linear gatherv to 0 + tuned
//! bcast of the whole; neighbor = neighbor exchange, odd p runs the ring; two_proc: p = 2):
//!
//! | p | algorithm by per-rank bytes |
//! |---|---|
//! | 2 | <2K ring, <4K two_proc, <8K ring, else two_proc |
//! | 3–7 | <256 default, <4K neighbor, <8K ring, <16K neighbor, <256K bruck, else neighbor |
//! | 8–15 | <1K default, else bruck |
//! | 16–31 | <128 default, <256K bruck, else ring |
//! | 32–63 | <256 default, <8K bruck, else ring |
//! | 64–127 | <256 default, <4K bruck, else ring |
//! | 128–255 | <1K bruck, <64K neighbor, else ring |
//! | 256–511 | <1K bruck, else ring |
//! | 512–1023 | <512 bruck, <1K default, <4K bruck, <1M neighbor, else ring |
//! | ≥1024 | <4K bruck, else neighbor |
//!
//! The bcast inside NO allreduce and default allgatherv is the tuned bcast (its own fixed table,
//! [`OMPI_BCAST`]: linear, chain, binary, binomial, k-nomial radix 4, split binary,
//! scatter-allgather, all unsegmented); the allgatherv one sends one element of a derived type.

use super::*;

/// Open MPI's default k-nomial bcast radix (`coll_tuned_bcast_algorithm_knomial_radix`).
pub const OMPI_KNOMIAL_RADIX: usize = 4;

// ---------------------------------------------------------------------------------------------
// Open MPI 4.1 fixed decision tables, transcribed from coll_tuned_decision_fixed.c (v4.1.4).
// One row per communicator-size range: (p < bound, [(key < bound, algorithm)...], otherwise).
// ---------------------------------------------------------------------------------------------

/// One p range of a fixed decision function.
pub type Row = (usize, &'static [(usize, u8)], u8);
pub(super) const ANY: usize = usize::MAX;

/// allreduce, commutative. 1 basic_linear, 2 nonoverlapping, 3 recursive_doubling, 4 ring,
/// 5 segmented_ring, 6 rabenseifner.
pub const OMPI_ALLREDUCE: &[Row] = &[
    (
        4,
        &[
            (8, 4),
            (4096, 3),
            (8192, 4),
            (16384, 3),
            (65536, 4),
            (262144, 5),
        ],
        6,
    ),
    (8, &[(16, 4), (8192, 3)], 6),
    (16, &[(8192, 3)], 6),
    (32, &[(64, 5), (4096, 3)], 6),
    (64, &[(128, 5)], 6),
    (128, &[(262144, 3)], 6),
    (256, &[(131072, 2), (262144, 3)], 6),
    (512, &[(4096, 2)], 6),
    (2048, &[(2048, 2), (16384, 3)], 6),
    (4096, &[(2048, 2), (4096, 5), (16384, 3)], 6),
    (ANY, &[(2048, 2), (16384, 5), (32768, 3)], 6),
];

/// allreduce, non-commutative (same numbering).
pub const OMPI_ALLREDUCE_NONCOMMUTATIVE: &[Row] = &[
    (4, &[(131072, 3)], 1),
    (8, &[], 3),
    (16, &[(1048576, 3)], 2),
    (128, &[], 3),
    (256, &[(131072, 2), (524288, 3)], 2),
    (512, &[(4096, 2), (524288, 3)], 2),
    (ANY, &[(2048, 2)], 3),
];

/// reduce, commutative. 1 linear, 2 chain, 3 pipeline, 4 binary, 5 binomial,
/// 6 in-order_binary, 7 rabenseifner.
pub const OMPI_REDUCE: &[Row] = &[
    (
        4,
        &[
            (8, 7),
            (16, 4),
            (32, 3),
            (262144, 1),
            (524288, 3),
            (1048576, 2),
        ],
        3,
    ),
    (
        8,
        &[
            (4096, 4),
            (65536, 2),
            (262144, 5),
            (524288, 1),
            (1048576, 5),
        ],
        1,
    ),
    (16, &[(8192, 4)], 5),
    (32, &[(4096, 4)], 5),
    (256, &[], 5),
    (512, &[(8192, 5), (16384, 6)], 5),
    (2048, &[], 5),
    (4096, &[(512, 5), (1024, 6), (8192, 5), (16384, 6)], 5),
    (
        ANY,
        &[
            (16, 5),
            (32, 6),
            (1024, 5),
            (2048, 6),
            (8192, 5),
            (16384, 6),
        ],
        5,
    ),
];

/// reduce, non-commutative (same numbering; only 1 and 6 occur).
pub const OMPI_REDUCE_NONCOMMUTATIVE: &[Row] = &[
    (4, &[(8, 6)], 1),
    (8, &[], 1),
    (16, &[(1024, 6), (8192, 1), (16384, 6), (262144, 1)], 6),
    (128, &[], 6),
    (256, &[(512, 6), (1024, 1)], 6),
    (ANY, &[], 6),
];

/// reduce_scatter, commutative (non-commutative: always 1). 1 non-overlapping,
/// 2 recursive_halving, 3 ring, 4 butterfly.
pub const OMPI_REDUCE_SCATTER: &[Row] = &[
    (4, &[(65536, 3), (131072, 4)], 3),
    (8, &[(8, 1), (262144, 2)], 3),
    (32, &[(262144, 2)], 3),
    (64, &[(64, 1), (2048, 2), (524288, 4)], 3),
    (128, &[(256, 1), (512, 2), (2048, 4), (4096, 2)], 4),
    (256, &[(256, 1), (512, 2)], 4),
    (512, &[(256, 1), (1024, 2)], 4),
    (1024, &[(512, 1), (2048, 2), (8192, 4), (16384, 2)], 4),
    (2048, &[(512, 1), (4096, 2), (16384, 4), (32768, 2)], 4),
    (4096, &[(512, 1), (4096, 2)], 4),
    (ANY, &[(1024, 1), (8192, 2)], 4),
];

/// allgatherv, keyed on per-rank bytes (total / p). The first row is `p == 2`.
/// 1 default (gatherv + bcast), 2 bruck, 3 ring, 4 neighbor, 5 two_proc.
pub const OMPI_ALLGATHERV: &[Row] = &[
    (3, &[(2048, 3), (4096, 5), (8192, 3)], 5),
    (
        8,
        &[(256, 1), (4096, 4), (8192, 3), (16384, 4), (262144, 2)],
        4,
    ),
    (16, &[(1024, 1)], 2),
    (32, &[(128, 1), (262144, 2)], 3),
    (64, &[(256, 1), (8192, 2)], 3),
    (128, &[(256, 1), (4096, 2)], 3),
    (256, &[(1024, 2), (65536, 4)], 3),
    (512, &[(1024, 2)], 3),
    (1024, &[(512, 2), (1024, 1), (4096, 2), (1048576, 4)], 3),
    (ANY, &[(4096, 2)], 4),
];

/// bcast, the second half of nonoverlapping allreduce and of default allgatherv.
/// 1 basic_linear, 2 chain, 3 pipeline, 4 split_binary_tree, 5 binary_tree, 6 binomial,
/// 7 knomial, 8 scatter_allgather.
pub const OMPI_BCAST: &[Row] = &[
    (
        4,
        &[
            (32, 3),
            (256, 5),
            (512, 3),
            (1024, 7),
            (32768, 1),
            (131072, 5),
            (262144, 2),
            (524288, 1),
            (1048576, 6),
        ],
        5,
    ),
    (
        8,
        &[(64, 5), (128, 6), (2048, 5), (8192, 6), (1048576, 1)],
        2,
    ),
    (16, &[(8, 7), (64, 5), (4096, 7), (16384, 5), (32768, 6)], 1),
    (32, &[(4096, 7), (1048576, 6)], 8),
    (64, &[(2048, 6)], 7),
    (128, &[], 7),
    (256, &[(2, 6), (16384, 5), (32768, 1), (65536, 5)], 7),
    (1024, &[(16384, 7), (32768, 4)], 7),
    (2048, &[(524288, 7)], 8),
    (4096, &[(262144, 7)], 8),
    (ANY, &[(8192, 7), (16384, 5), (262144, 7)], 8),
];

/// The algorithm number a fixed table gives for communicator size `p` and key `key`.
pub fn lookup(table: &[Row], p: usize, key: usize) -> u8 {
    let (_, cuts, otherwise) = table
        .iter()
        .find(|(bound, _, _)| p < *bound)
        .copied()
        .unwrap_or((ANY, &[], 0));
    cuts.iter()
        .find(|(bound, _)| key < *bound)
        .map(|(_, alg)| *alg)
        .unwrap_or(otherwise)
}

/// Rounds of an unsegmented Open MPI binary tree (heap shape: children 2i+1, 2i+2) in units
/// of one message, single port: a bcast node sends to its first child, then its second; a
/// reduce node receives (and reduces) its first child's data, then its second's.
pub fn heap_tree_rounds(p: usize, bcast: bool) -> usize {
    fn rounds(i: usize, p: usize, bcast: bool) -> usize {
        let c1 = 2 * i + 1;
        if c1 >= p {
            return 0;
        }
        // Levels below and including i: the leftmost descendant at depth d is (i+1)·2^d − 1.
        let ratio = p / (i + 1);
        let d = (usize::BITS - 1 - ratio.leading_zeros()) as usize; // deepest level present
        if ((i + 2) << d) - 2 < p {
            return 2 * d; // perfect subtree of d + 1 levels
        }
        let t1 = rounds(c1, p, bcast);
        let c2 = c1 + 1;
        if c2 >= p {
            return t1 + 1;
        }
        let t2 = rounds(c2, p, bcast);
        if bcast {
            (t1 + 1).max(t2 + 2)
        } else {
            (t1 + 2).max(t2 + 1)
        }
    }
    rounds(0, p, bcast)
}

/// Sends on the critical path of Open MPI's k-nomial bcast: children are served farthest
/// first, so the root's own send count ((k−1) per lower level + the top level's) is the path.
pub fn knomial_rounds(p: usize, radix: usize) -> usize {
    if p <= 1 {
        return 0;
    }
    let k = radix.max(2);
    let mut levels = 0usize;
    let mut span = 1usize; // k^(levels-1) once levels >= 1
    let mut reach = 1usize;
    while reach < p {
        span = reach;
        reach = reach.saturating_mul(k);
        levels += 1;
    }
    (k - 1) * (levels - 1) + p.div_ceil(span) - 1
}

// ---------------------------------------------------------------------------------------------
// Open MPI algorithms.
// ---------------------------------------------------------------------------------------------

/// Linear reduce: the root receives and reduces p − 1 whole vectors, one after another.
fn ompi_linear_reduce(x: &Cx) -> f64 {
    (x.pf - 1.0) * x.red(x.m)
}

/// Linear bcast: the root sends p − 1 whole vectors.
fn ompi_linear_bcast(x: &Cx) -> f64 {
    (x.pf - 1.0) * x.msg(x.m)
}

/// A reduce algorithm number of [`OMPI_REDUCE`] priced, after its fallbacks.
fn ompi_reduce_alg(x: &Cx, alg: u8) -> (&'static str, f64) {
    match alg {
        2 => ("chain", x.scheme(Collective::Reduce, Scheme::Pipeline, 1)),
        3 => (
            "pipeline",
            x.scheme(Collective::Reduce, Scheme::Pipeline, 1),
        ),
        4 => ("binary", heap_tree_rounds(x.p, false) as f64 * x.red(x.m)),
        5 => (
            "binomial",
            x.scheme(Collective::Reduce, Scheme::Binomial, 1),
        ),
        6 => (
            "in_order_binary",
            // root p − 1, then the result goes to root 0
            heap_tree_rounds(x.p, false) as f64 * x.red(x.m) + x.msg(x.m),
        ),
        7 if x.count >= x.pow2_floor && x.pow2_floor >= 2 => {
            ("rabenseifner", rabenseifner_reduce(x, ompi_fold_in(x)))
        }
        _ => ("linear", ompi_linear_reduce(x)),
    }
}

pub(super) fn ompi_reduce(x: &Cx, commutative: bool) -> (&'static str, f64) {
    let table = if commutative {
        OMPI_REDUCE
    } else {
        OMPI_REDUCE_NONCOMMUTATIVE
    };
    ompi_reduce_alg(x, lookup(table, x.p, x.bytes))
}

/// Open MPI's tuned bcast ([`OMPI_BCAST`], unsegmented) of `bytes` bytes from root 0 on `p`
/// ranks, the message being `elems` elements (1 for default allgatherv's derived type): the
/// second half of `nonoverlapping` allreduce and of `default` allgatherv.
pub fn ompi_bcast(p: usize, bytes: usize, elems: usize, c: &CostParams) -> NativeChoice {
    if p <= 1 {
        return NativeChoice {
            algorithm: "local",
            time: 0.0,
        };
    }
    let (algorithm, time) = ompi_bcast_cx(&Cx::new(p, bytes, c), elems);
    NativeChoice { algorithm, time }
}

/// The tuned bcast of `x.bytes` from root 0, the message being `elems` elements.
pub(super) fn ompi_bcast_cx(x: &Cx, elems: usize) -> (&'static str, f64) {
    let one = x.msg(x.m);
    match lookup(OMPI_BCAST, x.p, x.bytes) {
        2 => ("chain", (x.pf - 1.0) * one),
        3 => ("pipeline", (x.pf - 1.0) * one),
        4 if elems >= 2 => {
            // halves down the two subtrees of the binary tree, then swapped across
            let levels = ceil_log2(x.p + 1) as f64;
            ("split_binary_tree", (2.0 * levels - 1.0) * x.msg(x.m / 2.0))
        }
        4 => ("chain", (x.pf - 1.0) * one),
        5 => ("binary_tree", heap_tree_rounds(x.p, true) as f64 * one),
        6 => ("binomial", x.q * one),
        7 => (
            "knomial",
            knomial_rounds(x.p, OMPI_KNOMIAL_RADIX) as f64 * one,
        ),
        8 if elems >= x.p => {
            // binomial scatter + recursive-doubling allgather
            let frac = (x.pf - 1.0) / x.pf;
            ("scatter_allgather", 2.0 * (x.q * x.a + frac * x.b * x.m))
        }
        _ => ("basic_linear", ompi_linear_bcast(x)),
    }
}

pub(super) fn ompi_allreduce(x: &Cx, commutative: bool) -> (&'static str, f64) {
    let table = if commutative {
        OMPI_ALLREDUCE
    } else {
        OMPI_ALLREDUCE_NONCOMMUTATIVE
    };
    let basic_linear = || ("basic_linear", ompi_linear_reduce(x) + ompi_linear_bcast(x));
    match lookup(table, x.p, x.bytes) {
        2 => {
            let reduce = ompi_reduce(x, commutative).1;
            let bcast = ompi_bcast_cx(x, x.count).1;
            ("nonoverlapping", reduce + bcast)
        }
        3 => ("recursive_doubling", recursive_doubling_allreduce(x)),
        // 5 = segmented ring with segsize 0: the plain ring.
        4 | 5 if x.count < x.p => ("recursive_doubling", recursive_doubling_allreduce(x)),
        4 | 5 => ("ring", x.scheme(Collective::Allreduce, Scheme::Ring, 1)),
        6 if commutative && x.count >= x.pow2_floor => {
            ("rabenseifner", rabenseifner_allreduce(x, ompi_fold_in(x)))
        }
        _ => basic_linear(),
    }
}

pub(super) fn ompi_reduce_scatter(x: &Cx, commutative: bool) -> (&'static str, f64) {
    let alg = if commutative {
        lookup(OMPI_REDUCE_SCATTER, x.p, x.bytes)
    } else {
        1
    };
    match alg {
        2 => ("recursive_halving", recursive_halving_reduce_scatter(x)),
        3 => ("ring", x.scheme(Collective::ReduceScatter, Scheme::Ring, 1)),
        4 => ("butterfly", ompi_butterfly_reduce_scatter(x)),
        _ => {
            // tuned reduce of the whole vector to 0, then the linear scatterv
            let reduce = ompi_reduce(x, commutative).1;
            ("non-overlapping", reduce + (x.pf - 1.0) * x.msg(x.m / x.pf))
        }
    }
}

pub(super) fn ompi_allgatherv(x: &Cx) -> (&'static str, f64) {
    let ring = || ("ring", x.scheme(Collective::Allgatherv, Scheme::Ring, 1));
    match lookup(OMPI_ALLGATHERV, x.p, x.bytes / x.p) {
        1 => {
            // linear gatherv to 0, then the tuned bcast of one derived-type element
            let gatherv = (x.pf - 1.0) * x.msg(x.m / x.pf);
            ("default", gatherv + ompi_bcast_cx(x, 1).1)
        }
        // Bruck: ⌈log2 p⌉ rounds, (p−1)/p of the data: pcoll's circulant closed form.
        2 => (
            "bruck",
            x.scheme(Collective::Allgatherv, Scheme::Circulant, 1),
        ),
        4 if x.p.is_multiple_of(2) => {
            let half = (x.pf / 2.0) * x.a + (x.pf - 1.0) / x.pf * x.b * x.m;
            ("neighbor", half)
        }
        5 if x.p == 2 => ("two_proc", x.msg(x.m / 2.0)),
        _ => ring(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_first_matching_row_and_cut() {
        assert_eq!(lookup(OMPI_ALLREDUCE, 2, 0), 4);
        assert_eq!(lookup(OMPI_ALLREDUCE, 3, 262143), 5);
        assert_eq!(lookup(OMPI_ALLREDUCE, 3, 262144), 6);
        assert_eq!(lookup(OMPI_ALLREDUCE, 1 << 20, 20000), 3);
        assert_eq!(lookup(OMPI_REDUCE_NONCOMMUTATIVE, 5000, 1), 6);
    }

    #[test]
    fn knomial_small_cases_by_hand() {
        // Open MPI's own example (p = 10, radix 4): root serves 4, 8, 1, 2, 3.
        assert_eq!(knomial_rounds(10, 4), 5);
        assert_eq!(knomial_rounds(2, 4), 1);
        assert_eq!(knomial_rounds(4, 4), 3);
        assert_eq!(knomial_rounds(16, 2), 4);
    }
}
