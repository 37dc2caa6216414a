//! The tree report's trees in the cost model (issue 25): the closed forms of
//! `pcoll::model` for `binary` and `fibonacci` against an independent ASAP event simulation
//! of the same trees (`simulate_tree`), and the round counts they are built from.

use pcoll::algo::{Collective, CostParams};
use pcoll::model::{simulate_tree, time_with_segments, Duplex, Scheme};
use pcoll::sched::trees::{bcast_rounds, parents, reduce_rounds, Shape};

fn scheme(shape: Shape) -> Scheme {
    match shape {
        Shape::Binary => Scheme::Binary,
        Shape::Fibonacci => Scheme::Fibonacci,
    }
}

/// Full duplex: the simulation of the pipelined tree takes exactly `R + 2(n − 1)` rounds of
/// `tcomm + tcomp` (p ≥ 3), R the unsegmented rounds; half duplex at most `R + 4(n − 1)`.
#[test]
fn pipelined_trees_by_simulation() {
    for shape in Shape::ALL {
        for p in 2..130usize {
            let par = parents(shape, p, 0);
            let r = reduce_rounds(shape, p);
            for nseg in 1..9usize {
                for (tc, tp) in [(1.0, 0.0), (2.0, 1.0), (3.0, 2.0)] {
                    let c = if p >= 3 { 2 } else { 1 };
                    let want = (r + c * (nseg - 1)) as f64 * (tc + tp);
                    let full = simulate_tree(&par, nseg, tc, tp, Duplex::Full);
                    assert_eq!(full, want, "{shape:?} p={p} n={nseg} tc={tc} tp={tp}");
                    let half = simulate_tree(&par, nseg, tc, tp, Duplex::Half);
                    let bound = (r + 4 * (nseg - 1)) as f64 * (tc + tp);
                    assert!(
                        half <= bound,
                        "{shape:?} half p={p} n={nseg}: {half} > {bound}"
                    );
                }
            }
        }
    }
}

/// The model's times are those round counts: α = 1, β = γ = 0 gives rounds; one segment is
/// the report's unsegmented algorithm, `R(α + (β+γ)m)`.
#[test]
fn model_round_counts() {
    let unit = CostParams {
        alpha: 1.0,
        beta: 0.0,
        gamma: 0.0,
    };
    for shape in Shape::ALL {
        for p in 2..200usize {
            let c = if p >= 3 { 2 } else { 1 };
            let (r, b) = (reduce_rounds(shape, p), bcast_rounds(shape, p));
            for n in 1..6usize {
                let t =
                    |coll| time_with_segments(coll, scheme(shape), p, 4096, &unit, Duplex::Full, n);
                assert_eq!(
                    t(Collective::Reduce),
                    (r + c * (n - 1)) as f64,
                    "{shape:?} p={p}"
                );
                assert_eq!(
                    t(Collective::Bcast),
                    (b + c * (n - 1)) as f64,
                    "{shape:?} p={p}"
                );
                assert_eq!(t(Collective::Allreduce), (r + b + 2 * c * (n - 1)) as f64);
            }
            let x = CostParams {
                alpha: 3e-6,
                beta: 1e-9,
                gamma: 5e-10,
            };
            let plain = time_with_segments(
                Collective::Reduce,
                scheme(shape),
                p,
                8000,
                &x,
                Duplex::Full,
                1,
            );
            let want = r as f64 * (x.alpha + (x.beta + x.gamma) * 8000.0);
            assert!((plain - want).abs() <= 1e-12 * want, "{shape:?} p={p}");
        }
    }
}

/// The report's comparison in rounds: per p, binomial ⌈log2 p⌉ ≤ Fibonacci ≤ binary, and a
/// whole Fibonacci tree of order k reduces in k rounds like a binomial tree of 2^k nodes
/// while holding fewer nodes (the report: "the binomial tree can handle more processes in the
/// same number of rounds").
#[test]
fn trees_against_binomial_in_rounds() {
    for p in 2..5000usize {
        let q = pcoll::sched::blocks::ceil_log2(p);
        let (f, b) = (
            reduce_rounds(Shape::Fibonacci, p),
            reduce_rounds(Shape::Binary, p),
        );
        assert!(
            q <= f && f <= b,
            "p={p}: binomial {q} fibonacci {f} binary {b}"
        );
    }
    for k in 1..30 {
        assert!(Shape::Fibonacci.size(k) <= 1 << k);
        assert_eq!(reduce_rounds(Shape::Fibonacci, Shape::Fibonacci.size(k)), k);
        assert_eq!(reduce_rounds(Shape::Binary, Shape::Binary.size(k)), 2 * k);
    }
}

/// The numbers `pcoll-sim paper trees` prints and docs/algorithms.md quotes (p = 576, the
/// report's 36 nodes × 16 ranks): rounds, depth, node boundaries on the worst path, and the
/// overlap model's window of o/l for the report's measured ordering.
#[test]
fn report_numbers() {
    use pcoll::model::paper::{
        depth_and_hops, report_children, report_order_window, tree_time, ReportTree,
    };
    let kids = ReportTree::ALL.map(|t| report_children(t, 576));
    let rounds = kids.clone().map(|k| tree_time(&k, 0.0, 1.0) as usize);
    assert_eq!(rounds, [10, 12, 18]);
    let dh = kids.clone().map(|k| depth_and_hops(&k, 16));
    assert_eq!(dh, [(9, 5), (11, 6), (9, 5)]);
    // Binomial's children list and rounds agree with the library's round count.
    assert_eq!(rounds[0], pcoll::sched::blocks::ceil_log2(576));
    let ps: Vec<usize> = (4..=36).map(|k| 16 * k).collect();
    let (lo, hi) = report_order_window(&ps).expect("a window");
    assert!(lo < 0.002 && (0.2..0.25).contains(&hi), "{lo} {hi}");
    assert_eq!(report_order_window(&[16, 32]), None);
    // The overlap model at o = 0 is the depth (l per edge); single port is rounds.
    for (k, d) in kids.iter().zip([9.0, 11.0, 9.0]) {
        assert_eq!(tree_time(k, 1.0, 0.0), d);
    }
}
