//! Closed forms and printed tables of the papers, for `pcoll-sim paper` and the tests.
//!
//! Rabenseifner & Träff, "More efficient reduction algorithms for non-power-of-two numbers of
//! processors" (EuroPVM/MPI 2004), §3 and Table 1 (ALGORITHMS.md §6.5): allreduce protocols
//! for odd p, times in units of α.

use crate::sched::blocks::ceil_log2;
use crate::sched::trees::{self, Shape};

/// The four protocols of Rabenseifner–Träff Table 1, in column order.
pub const RT_PROTOCOLS: [&str; 4] = [
    "Ring, latency-opt.",
    "Elimination, lat.-opt.",
    "Ring, bandwidth-opt.",
    "Elimination, bw-opt.",
];

/// `[t_ring,lat, t_elim,lat, t_ring,bw, t_elim,bw]` for `p` processes, latency `alpha`,
/// transfer time of the whole vector `beta_m` and its reduction time `gamma_m`:
/// * t_ring,lat = α⌈log2 p⌉ + βm(p−1) + γm(p−1)
/// * t_elim,lat = α(⌈log2 p⌉+1) + βm(⌈log2 p⌉+1) + γm⌈log2 p⌉
/// * t_ring,bw  = α(⌈log2 p⌉+p−1) + 2βm(1−1/p) + γm(1−1/p)
/// * t_elim,bw  = 2α⌈log2 p⌉ + 2βm(1.5−1/P) + γm(1.5−1/P),  P = 2^⌊log2 p⌋
pub fn rt_protocols(p: usize, alpha: f64, beta_m: f64, gamma_m: f64) -> [f64; 4] {
    let q = ceil_log2(p) as f64;
    let pf = p as f64;
    let big_p = (1usize << (usize::BITS - 1 - p.leading_zeros())) as f64;
    [
        alpha * q + beta_m * (pf - 1.0) + gamma_m * (pf - 1.0),
        alpha * (q + 1.0) + beta_m * (q + 1.0) + gamma_m * q,
        alpha * (q + pf - 1.0) + 2.0 * beta_m * (1.0 - 1.0 / pf) + gamma_m * (1.0 - 1.0 / pf),
        2.0 * alpha * q + 2.0 * beta_m * (1.5 - 1.0 / big_p) + gamma_m * (1.5 - 1.0 / big_p),
    ]
}

/// Message sizes of Table 1: (name, βm, γm) with α = 1.
pub const RT_SIZES: [(&str, f64, f64); 4] = [
    ("S", 0.1, 0.01),
    ("M", 1.0, 0.1),
    ("L", 10.0, 1.0),
    ("XL", 100.0, 10.0),
];

/// Table 1 as printed (p, size, four totals as printed strings). Transcribed from the paper.
pub const RT_TABLE1: &[(usize, &str, [&str; 4])] = &[
    (3, "S", ["2.22", "3.32", "4.14", "4.21"]),
    (3, "M", ["4.20", "6.20", "5.40", "6.10"]),
    (3, "L", ["24.0", "35.0", "18.0", "25.0"]),
    (5, "S", ["3.44", "4.43", "7.17", "6.26"]),
    (5, "M", ["7.40", "8.30", "8.68", "8.63"]),
    (5, "L", ["47.0", "47.0", "23.8", "32.3"]),
    (7, "S", ["3.66", "4.43", "9.18", "6.26"]),
    (7, "M", ["9.60", "8.30", "10.8", "8.63"]),
    (7, "L", ["69.0", "47.0", "27.0", "32.3"]),
    (13, "S", ["5.32", "5.54", "16.2", "8.29"]),
    (13, "M", ["17.2", "10.4", "18.0", "10.9"]),
    (13, "L", ["136.", "59.0", "35.4", "36.9"]),
    (15, "S", ["5.54", "5.54", "18.2", "8.29"]),
    (15, "M", ["19.4", "10.4", "20.0", "10.9"]),
    (15, "L", ["158.", "59.0", "37.6", "36.9"]),
    (23, "S", ["7.42", "6.65", "27.2", "10.3"]),
    (23, "M", ["29.2", "12.5", "29.0", "13.0"]),
    (23, "L", ["247.", "71.0", "47.1", "40.2"]),
    (23, "XL", ["2425", "656.", "228.", "312."]),
    (63, "S", ["12.8", "7.66", "68.2", "12.3"]),
    (63, "M", ["74.2", "13.6", "70.1", "15.1"]),
    (63, "L", ["688.", "73.0", "88.7", "42.9"]),
    (63, "XL", ["6826", "667.", "275.", "321."]),
];

/// Decimals shown in a printed value ("4.20" → 2, "136." → 0, "2425" → 0).
pub fn printed_decimals(s: &str) -> usize {
    s.find('.').map_or(0, |i| s.len() - i - 1)
}

/// Does `value` round to the printed string (same number of decimals)?
pub fn matches_printed(value: f64, printed: &str) -> bool {
    let d = printed_decimals(printed);
    let want: f64 = printed.trim_end_matches('.').parse().unwrap();
    let scale = 10f64.powi(d as i32);
    ((value * scale).round() - want * scale).abs() < 0.5
}

/// One cell of Table 1 compared with the closed form.
#[derive(Clone, Debug)]
pub struct RtCell {
    pub p: usize,
    pub size: &'static str,
    pub protocol: usize,
    pub printed: &'static str,
    pub computed: f64,
    pub matches: bool,
    /// Why a mismatch is a typo of the paper (ALGORITHMS.md §8 pitfall 11).
    pub note: &'static str,
}

/// Every cell of Table 1 with the closed-form value and the explanation of mismatches.
pub fn rt_table1_cells() -> Vec<RtCell> {
    let mut v = Vec::new();
    for &(p, size, printed) in RT_TABLE1 {
        let &(_, bm, gm) = RT_SIZES.iter().find(|s| s.0 == size).unwrap();
        let t = rt_protocols(p, 1.0, bm, gm);
        for k in 0..4 {
            let matches = matches_printed(t[k], printed[k]);
            let note = if matches {
                ""
            } else if k == 1 && p == 63 {
                // The paper's β term uses ⌈log2 p⌉ = 6 instead of ⌈log2 p⌉+1 = 7.
                let q = ceil_log2(p) as f64;
                let typo = (q + 1.0) + bm * q + gm * q;
                if matches_printed(typo, printed[k]) {
                    "paper uses βm·⌈log2 p⌉ instead of βm·(⌈log2 p⌉+1)"
                } else {
                    "unexplained"
                }
            } else {
                "last printed digit (the paper sums rounded terms)"
            };
            v.push(RtCell {
                p,
                size,
                protocol: k,
                printed: printed[k],
                computed: t[k],
                matches,
                note,
            });
        }
    }
    v
}

/// Lowery–Langou Figure 4/5 parameters (unidirectional): α = 10, β = 1, γ = 0, m = 2^2..2^16.
pub const LL_FIG45: (f64, f64, f64) = (10.0, 1.0, 0.0);
/// Lowery–Langou Figure 6 parameters (bidirectional, p = 64): α = 50000, β = 6, γ = 1.
pub const LL_FIG6: (f64, f64, f64) = (50000.0, 6.0, 1.0);

// ---------------------------------------------------------------------------------------------
// Winklehner & Friedl, "Reduction trees for MPI reductions" (TU Wien HPC project report, 2016;
// `tree-reductions-report.txt`): binomial, Fibonacci and binary trees, measured on 36 nodes ×
// 16 ranks against the vendor's MPI_Reduce.
// ---------------------------------------------------------------------------------------------

/// The report's three trees.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReportTree {
    Binomial,
    Fibonacci,
    Binary,
}

impl ReportTree {
    pub const ALL: [ReportTree; 3] = [
        ReportTree::Binomial,
        ReportTree::Fibonacci,
        ReportTree::Binary,
    ];
    pub fn name(self) -> &'static str {
        match self {
            ReportTree::Binomial => "binomial",
            ReportTree::Fibonacci => "fibonacci",
            ReportTree::Binary => "binary",
        }
    }
}

/// Ranks per node and nodes of the report's runs (16 ranks on each of 1..36 nodes).
pub const REPORT_PPN: usize = 16;
pub const REPORT_NODES: usize = 36;
/// Elements per rank of the first experiment, and the element size assumed (the report does
/// not name its type).
pub const REPORT_COUNT: usize = 1000;
pub const REPORT_ELEM: usize = 8;

/// Assumed α, β, γ of the report's cluster (an InfiniBand-class network and a 2016 CPU; the
/// report gives none): α = 2 µs, β = 1/(3 GB/s), γ = 1 ns per 8-byte element reduced.
/// Orderings are given as conditions on ratios wherever they can be, so that they do not rest
/// on these numbers.
pub const REPORT_PARAMS: (f64, f64, f64) = (2.0e-6, 3.3e-10, 1.25e-10);

/// The children of every rank of `tree` over p ranks rooted at 0, each list in the order the
/// rank receives them: binomial as [`crate::algo::util::binomial_reduce`] (smallest subtree
/// first), the report's trees in index order. O(p log p).
pub fn report_children(tree: ReportTree, p: usize) -> Vec<Vec<usize>> {
    let mut ch = vec![Vec::new(); p];
    for (v, kids) in ch.iter_mut().enumerate() {
        match tree {
            ReportTree::Binomial => {
                let mut mask = 1;
                while mask < p && v & mask == 0 {
                    if v + mask < p {
                        kids.push(v + mask);
                    }
                    mask <<= 1;
                }
            }
            ReportTree::Fibonacci | ReportTree::Binary => {
                let shape = if tree == ReportTree::Binary {
                    Shape::Binary
                } else {
                    Shape::Fibonacci
                };
                kids.extend(trees::node(shape, p, v).kids().map(|c| c.index));
            }
        }
    }
    ch
}

/// Completion time of an unsegmented tree reduction in which a child's partial reaches its
/// parent `l` after the child finished, and the parent handles arrived partials one at a time
/// in its receive order, `o` each: `T(v) = fold over children c: t := max(t, T(c) + l) + o`.
/// `l = 0, o = α + (β+γ)m` is the single-port round model (one message per round, what
/// pcoll's α-β-γ model prices); `l = α + βm, o = γm (+ receive overhead)` lets messages of
/// different children travel at the same time (eager sends, several ports), only their
/// handling serialised.
pub fn tree_time(children: &[Vec<usize>], l: f64, o: f64) -> f64 {
    // Children have higher indices than their parent in all three trees: one backward pass.
    let mut t = vec![0.0f64; children.len()];
    for v in (0..children.len()).rev() {
        t[v] = children[v]
            .iter()
            .fold(0.0f64, |acc, &c| acc.max(t[c] + l) + o);
    }
    t.first().copied().unwrap_or(0.0)
}

/// Depth (edges) and the largest number of edges between nodes (blocks of `ppn` consecutive
/// ranks) on any rank's path to the root.
pub fn depth_and_hops(children: &[Vec<usize>], ppn: usize) -> (usize, usize) {
    let p = children.len();
    let (mut depth, mut hops) = (vec![0usize; p], vec![0usize; p]);
    for v in 0..p {
        for &c in &children[v] {
            depth[c] = depth[v] + 1;
            hops[c] = hops[v] + usize::from(c / ppn.max(1) != v / ppn.max(1));
        }
    }
    (
        depth.iter().copied().max().unwrap_or(0),
        hops.iter().copied().max().unwrap_or(0),
    )
}

/// The ratios `ρ = o/l` (of [`tree_time`]; on a grid of 2^(i/8), ρ from 2^-10 to 2^4) at
/// which the report's measured ordering, binomial < binary < Fibonacci, holds at every p of
/// `ps`: the smallest and largest such ρ, or None.
pub fn report_order_window(ps: &[usize]) -> Option<(f64, f64)> {
    let kids: Vec<[Vec<Vec<usize>>; 3]> = ps
        .iter()
        .map(|&p| ReportTree::ALL.map(|t| report_children(t, p)))
        .collect();
    let ok: Vec<f64> = (-80..=32)
        .map(|i| 2f64.powf(i as f64 / 8.0))
        .filter(|&rho| {
            kids.iter().all(|k| {
                let [bin, fib, bt] = [&k[0], &k[1], &k[2]].map(|c| tree_time(c, 1.0, rho));
                bin < bt && bt < fib
            })
        })
        .collect();
    Some((*ok.first()?, *ok.last()?))
}
