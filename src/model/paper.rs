//! Closed forms and printed tables of the papers, for `pcoll-sim paper` and the tests.
//!
//! Rabenseifner & Träff, "More efficient reduction algorithms for non-power-of-two numbers of
//! processors" (EuroPVM/MPI 2004), §3 and Table 1 (ALGORITHMS.md §6.5): allreduce protocols
//! for odd p, times in units of α.

use crate::sched::blocks::ceil_log2;

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
