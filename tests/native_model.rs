//! The native-choice model (`pcoll::model::native`) against references worked out by hand from
//! the MPIs' sources (Open MPI 4.1.4 `coll_tuned_decision_fixed.c`, MPICH 4.0.2 csel JSON) and
//! against brute-force O(p) simulations of the trees and of recursive halving.

use pcoll::algo::{Collective, CostParams};
use pcoll::model::native::{
    heap_tree_rounds, knomial_rounds, native, ompi_bcast, Mpi, NativeChoice,
};
use std::time::Instant;

use Collective::*;
use Mpi::*;

/// Round numbers so that hand calculations stay exact: α = 10, β = 1, γ = 0.5 per byte.
const C: CostParams = CostParams {
    alpha: 10.0,
    beta: 1.0,
    gamma: 0.5,
};

fn nat(mpi: Mpi, coll: Collective, p: usize, bytes: usize) -> NativeChoice {
    native(mpi, coll, p, bytes, true, &C)
}

fn nat_nc(mpi: Mpi, coll: Collective, p: usize, bytes: usize) -> NativeChoice {
    native(mpi, coll, p, bytes, false, &C)
}

#[track_caller]
fn check(got: NativeChoice, algorithm: &str, time: f64) {
    assert_eq!(got.algorithm, algorithm, "{got:?}");
    let tol = 1e-9 * time.abs().max(1.0);
    assert!(
        (got.time - time).abs() <= tol,
        "{}: time {} expected {}",
        algorithm,
        got.time,
        time
    );
}

const MIB: usize = 1 << 20;

#[test]
fn p_one_costs_nothing() {
    for mpi in Mpi::ALL {
        for coll in Collective::ALL {
            for bytes in [0, 8, MIB] {
                for comm in [true, false] {
                    let n = native(mpi, coll, 1, bytes, comm, &C);
                    assert_eq!(n.time, 0.0);
                    let n = native(mpi, coll, 0, bytes, comm, &C);
                    assert_eq!(n.time, 0.0);
                }
            }
        }
    }
}

#[test]
fn mpi_names_round_trip() {
    for mpi in Mpi::ALL {
        assert_eq!(mpi.name().parse::<Mpi>().unwrap(), mpi);
        assert_eq!(mpi.to_string(), mpi.name());
    }
    assert_eq!("ompi".parse::<Mpi>().unwrap(), OpenMpi);
    assert_eq!("MPICH".parse::<Mpi>().unwrap(), Mpich);
    // Intel MPI is one of the five measured MPIs now; an unknown name is still an error.
    assert_eq!("intel".parse::<Mpi>().unwrap(), Mpi::IntelMpi);
    assert!("lam".parse::<Mpi>().is_err());
}

// ----- Open MPI 4.1, cells read off the fixed rules and priced by hand ----------------------

#[test]
fn openmpi_allreduce_cells() {
    // p < 8, 8 B < 16: ring, count 1 < p: recursive doubling; p = 4: 2 rounds of α+βm+γm.
    check(
        nat(OpenMpi, Allreduce, 4, 8),
        "recursive_doubling",
        2.0 * 22.0,
    );
    // p < 8, >= 8 KiB: Rabenseifner, p = 4: 2·2α + (3/4)(2β+γ)m.
    check(
        nat(OpenMpi, Allreduce, 4, 8192),
        "rabenseifner",
        40.0 + 0.75 * 2.5 * 8192.0,
    );
    // p = 6: P = 4, fold-in 2α + βm + γm/2, core, result back α + βm.
    let m = MIB as f64;
    check(
        nat(OpenMpi, Allreduce, 6, MIB),
        "rabenseifner",
        (20.0 + m + 0.25 * m) + (40.0 + 0.75 * 2.5 * m) + (10.0 + m),
    );
    // p < 4, [64K, 256K): segmented ring with segsize 0 = ring.
    check(
        nat(OpenMpi, Allreduce, 2, 100_000),
        "ring",
        20.0 + 0.5 * 2.5 * 100_000.0,
    );
    assert_eq!(nat(OpenMpi, Allreduce, 3, 4096).algorithm, "ring");
    assert_eq!(
        nat(OpenMpi, Allreduce, 3, 4095).algorithm,
        "recursive_doubling"
    );
    assert_eq!(nat(OpenMpi, Allreduce, 64, MIB).algorithm, "rabenseifner");
    assert_eq!(
        nat(OpenMpi, Allreduce, 100, 100_000).algorithm,
        "recursive_doubling"
    );
    // p >= 4096, [2K, 16K): segmented ring = ring, but 1024 doubles < p: recursive doubling.
    assert_eq!(
        nat(OpenMpi, Allreduce, 5000, 8192).algorithm,
        "recursive_doubling"
    );
    assert_eq!(
        nat(OpenMpi, Allreduce, 20, 32).algorithm,
        "recursive_doubling"
    );
    assert_eq!(nat(OpenMpi, Allreduce, 2, 5000).algorithm, "ring");
    // Rabenseifner with count < 2^floor(log2 p) falls back to basic_linear (p = 2^20, 64 KiB
    // = 8192 doubles): linear reduce + linear bcast.
    let pl = (1usize << 20) as f64;
    check(
        nat(OpenMpi, Allreduce, 1 << 20, 65536),
        "basic_linear",
        (pl - 1.0) * (10.0 + 1.5 * 65536.0) + (pl - 1.0) * (10.0 + 65536.0),
    );
    // Non-commutative: p < 4, >= 128 KiB: basic_linear.
    check(
        nat_nc(OpenMpi, Allreduce, 2, MIB),
        "basic_linear",
        (10.0 + 1.5 * m) + (10.0 + m),
    );
    assert_eq!(
        nat_nc(OpenMpi, Allreduce, 10, MIB).algorithm,
        "nonoverlapping"
    );
}

#[test]
fn openmpi_nonoverlapping_is_tuned_reduce_plus_tuned_bcast() {
    for (p, bytes) in [
        (200, 1000),
        (200, 20000),
        (300, 1000),
        (1000, 1000),
        (9000, 100),
    ] {
        let all = nat(OpenMpi, Allreduce, p, bytes);
        assert_eq!(all.algorithm, "nonoverlapping", "p {p} bytes {bytes}");
        let red = nat(OpenMpi, Reduce, p, bytes);
        let bc = ompi_bcast(p, bytes, bytes / 8, &C);
        assert!((all.time - red.time - bc.time).abs() <= 1e-9 * all.time);
    }
    // p = 200, 1000 B: binomial reduce (8 rounds), binary-tree bcast.
    assert_eq!(nat(OpenMpi, Reduce, 200, 1000).algorithm, "binomial");
    let bc = ompi_bcast(200, 1000, 125, &C);
    assert_eq!(bc.algorithm, "binary_tree");
    check(
        bc,
        "binary_tree",
        heap_tree_rounds(200, true) as f64 * 1010.0,
    );
    // p = 200, 20000 B: linear bcast region [16K, 32K).
    assert_eq!(ompi_bcast(200, 20000, 2500, &C).algorithm, "basic_linear");
    // p = 300: k-nomial.
    assert_eq!(ompi_bcast(300, 1000, 125, &C).algorithm, "knomial");
}

#[test]
fn openmpi_reduce_cells() {
    // p 4..7, < 4 KiB: binary tree; p = 4 heap tree 0:(1,2), 1:(3): 3 rounds.
    check(
        nat(OpenMpi, Reduce, 4, 1024),
        "binary",
        3.0 * (10.0 + 1.5 * 1024.0),
    );
    // p < 4, < 8 B: Rabenseifner, count 1 < 2: linear.
    check(nat(OpenMpi, Reduce, 2, 4), "linear", 10.0 + 1.5 * 4.0);
    // p 8..15, >= 8 KiB: binomial, p = 16 → p 16..31, >= 4 KiB: binomial, 4 rounds.
    let m = MIB as f64;
    check(
        nat(OpenMpi, Reduce, 16, MIB),
        "binomial",
        4.0 * (10.0 + 1.5 * m),
    );
    // p < 4, >= 1 MiB: pipeline, unsegmented: p − 1 rounds.
    check(
        nat(OpenMpi, Reduce, 3, MIB),
        "pipeline",
        2.0 * (10.0 + 1.5 * m),
    );
    assert_eq!(nat(OpenMpi, Reduce, 3, 600_000).algorithm, "chain");
    assert_eq!(nat(OpenMpi, Reduce, 6, 10_000).algorithm, "chain");
    assert_eq!(
        nat(OpenMpi, Reduce, 300, 10_000).algorithm,
        "in_order_binary"
    );
    assert_eq!(nat(OpenMpi, Reduce, 5000, 20).algorithm, "in_order_binary");
    assert_eq!(nat(OpenMpi, Reduce, 5000, 40).algorithm, "binomial");
    // Non-commutative: in-order binary (root p−1 plus one send to root 0) or linear.
    let t = heap_tree_rounds(32, false) as f64 * (10.0 + 1.5 * 64.0) + (10.0 + 64.0);
    check(nat_nc(OpenMpi, Reduce, 32, 64), "in_order_binary", t);
    assert_eq!(nat_nc(OpenMpi, Reduce, 6, 64).algorithm, "linear");
    assert_eq!(nat_nc(OpenMpi, Reduce, 10, 2000).algorithm, "linear");
    assert_eq!(
        nat_nc(OpenMpi, Reduce, 10, 300_000).algorithm,
        "in_order_binary"
    );
}

#[test]
fn openmpi_reduce_scatter_cells() {
    // p 8..31, < 256 KiB: recursive halving, p = 8: 3α + (7/8)(β+γ)m.
    check(
        nat(OpenMpi, ReduceScatter, 8, 1024),
        "recursive_halving",
        30.0 + 0.875 * 1.5 * 1024.0,
    );
    // >= 256 KiB: ring, 7 rounds of m/8.
    let m = MIB as f64;
    check(
        nat(OpenMpi, ReduceScatter, 8, MIB),
        "ring",
        70.0 + 7.0 * 1.5 * m / 8.0,
    );
    // p 32..63, [2K, 512K): butterfly; p = 48: P = 32, r = 16. Fold-in α + (β+γ)m; 5 halving
    // rounds of W + min(r, W) blocks, W = 16..1 (62 blocks of m/48); two block sends at the end.
    let m = 65536.0;
    check(
        nat(OpenMpi, ReduceScatter, 48, 65536),
        "butterfly",
        (10.0 + 1.5 * m) + (50.0 + 1.5 * m * 62.0 / 48.0) + 2.0 * (10.0 + m / 48.0),
    );
    // p = 2: butterfly region [64K, 128K), no final exchange (mirror permutation identity).
    check(
        nat(OpenMpi, ReduceScatter, 2, 100_000),
        "butterfly",
        10.0 + 0.5 * 1.5 * 100_000.0,
    );
    // Non-commutative: tuned reduce (p = 8, 1 KiB non-commutative: linear) + linear scatterv.
    check(
        nat_nc(OpenMpi, ReduceScatter, 8, 1024),
        "non-overlapping",
        7.0 * (10.0 + 1.5 * 1024.0) + 7.0 * (10.0 + 128.0),
    );
    assert_eq!(
        nat(OpenMpi, ReduceScatter, 4, 4).algorithm,
        "non-overlapping"
    );
}

#[test]
fn openmpi_allgatherv_cells() {
    // Keyed on per-rank bytes. p = 2, 512 B each: ring.
    check(nat(OpenMpi, Allgatherv, 2, 1024), "ring", 10.0 + 512.0);
    // p = 2, 3000 B each: two_proc.
    check(nat(OpenMpi, Allgatherv, 2, 6000), "two_proc", 10.0 + 3000.0);
    // p = 6, 1000 B each: neighbor exchange, p/2 rounds.
    check(
        nat(OpenMpi, Allgatherv, 6, 6000),
        "neighbor",
        30.0 + 5.0 / 6.0 * 6000.0,
    );
    // p = 5: neighbor exchange needs even p: ring.
    check(
        nat(OpenMpi, Allgatherv, 5, 5000),
        "ring",
        4.0 * (10.0 + 1000.0),
    );
    // p = 12, 100 B each: default = linear gatherv + tuned bcast of 1200 B (k-nomial radix 4:
    // the root serves 4, 8, 1, 2, 3 → 5 sends).
    check(
        nat(OpenMpi, Allgatherv, 12, 1200),
        "default",
        11.0 * (10.0 + 100.0) + 5.0 * (10.0 + 1200.0),
    );
    // p = 16, 1 KiB each: Bruck, 4 rounds.
    check(
        nat(OpenMpi, Allgatherv, 16, 16384),
        "bruck",
        40.0 + 15.0 / 16.0 * 16384.0,
    );
    assert_eq!(nat(OpenMpi, Allgatherv, 40, 40 * 100_000).algorithm, "ring");
    assert_eq!(
        nat(OpenMpi, Allgatherv, 2000, 2000 * 8192).algorithm,
        "neighbor"
    );
    // Commutativity does not matter.
    assert_eq!(
        nat(OpenMpi, Allgatherv, 12, 1200),
        nat_nc(OpenMpi, Allgatherv, 12, 1200)
    );
}

// ----- MPICH 4.0.2 MPIR selection ------------------------------------------------------------

#[test]
fn mpich_allreduce_cells() {
    check(
        nat(Mpich, Allreduce, 4, 8),
        "recursive_doubling",
        2.0 * 22.0,
    );
    // 16 B = 2 doubles < pof2 = 4: recursive doubling.
    assert_eq!(nat(Mpich, Allreduce, 4, 16).algorithm, "recursive_doubling");
    assert_eq!(
        nat(Mpich, Allreduce, 4, 32).algorithm,
        "reduce_scatter_allgather"
    );
    check(
        nat(Mpich, Allreduce, 4, 1024),
        "reduce_scatter_allgather",
        40.0 + 0.75 * 2.5 * 1024.0,
    );
    // p = 6: whole-vector fold-in α + (β+γ)m, core over 4, result back α + βm.
    let m = MIB as f64;
    check(
        nat(Mpich, Allreduce, 6, MIB),
        "reduce_scatter_allgather",
        (10.0 + 1.5 * m) + (40.0 + 0.75 * 2.5 * m) + (10.0 + m),
    );
    // User (non-commutative) op: recursive doubling; non-power of two: ⌊log2 p⌋ + 2 messages.
    check(
        nat_nc(Mpich, Allreduce, 4, MIB),
        "recursive_doubling",
        2.0 * (10.0 + 1.5 * m),
    );
    check(
        nat_nc(Mpich, Allreduce, 6, MIB),
        "recursive_doubling",
        4.0 * (10.0 + m) + 3.0 * 0.5 * m,
    );
}

#[test]
fn mpich_reduce_cells() {
    check(
        nat(Mpich, Reduce, 8, 2048),
        "binomial",
        3.0 * (10.0 + 1.5 * 2048.0),
    );
    check(
        nat(Mpich, Reduce, 8, 4096),
        "reduce_scatter_gather",
        60.0 + 0.875 * 2.5 * 4096.0,
    );
    // p = 3: P = 2; fold-in of the whole vector, then reduce-scatter and gather over 2.
    let m = MIB as f64;
    check(
        nat(Mpich, Reduce, 3, MIB),
        "reduce_scatter_gather",
        (10.0 + 1.5 * m) + (10.0 + 0.5 * 1.5 * m) + (10.0 + 0.5 * m),
    );
    assert_eq!(nat_nc(Mpich, Reduce, 8, MIB).algorithm, "binomial");
    // count (2048+8)/8 = 257 < 512: binomial even above 2 KiB.
    assert_eq!(nat(Mpich, Reduce, 600, 2056).algorithm, "binomial");
}

#[test]
fn mpich_reduce_scatter_cells() {
    check(
        nat(Mpich, ReduceScatter, 8, 1024),
        "recursive_halving",
        30.0 + 0.875 * 1.5 * 1024.0,
    );
    assert_eq!(
        nat(Mpich, ReduceScatter, 8, 524_287).algorithm,
        "recursive_halving"
    );
    check(
        nat(Mpich, ReduceScatter, 8, 524_288),
        "pairwise",
        70.0 + 7.0 * 1.5 * 65536.0,
    );
    check(
        nat_nc(Mpich, ReduceScatter, 8, 1024),
        "noncommutative",
        30.0 + 0.875 * 1.5 * 1024.0,
    );
    check(
        nat_nc(Mpich, ReduceScatter, 6, 1024),
        "recursive_doubling",
        30.0 + (3.0 - 5.0 / 6.0) * 1.5 * 1024.0,
    );
}

#[test]
fn mpich_allgatherv_cells() {
    check(
        nat(Mpich, Allgatherv, 8, 262_144),
        "recursive_doubling",
        30.0 + 0.875 * 262_144.0,
    );
    check(
        nat(Mpich, Allgatherv, 8, 524_288),
        "ring",
        7.0 * (10.0 + 65536.0),
    );
    check(
        nat(Mpich, Allgatherv, 6, 65536),
        "brucks",
        30.0 + 5.0 / 6.0 * 65536.0,
    );
    check(
        nat(Mpich, Allgatherv, 6, 81920),
        "ring",
        5.0 * (10.0 + 81920.0 / 6.0),
    );
}

// ----- The tree and halving closed forms against O(p) simulations ----------------------------

/// Heap-shaped binary tree, one message per round, single port, by a bottom-up sweep.
fn heap_brute(p: usize, bcast: bool) -> usize {
    if p == 0 {
        return 0;
    }
    if bcast {
        // top-down: child 1 gets it one round after its parent, child 2 two rounds after
        let mut t = vec![0usize; p];
        for i in 0..p {
            for (k, c) in [2 * i + 1, 2 * i + 2].into_iter().enumerate() {
                if c < p {
                    t[c] = t[i] + k + 1;
                }
            }
        }
        t.into_iter().max().unwrap()
    } else {
        let mut t = vec![0usize; p];
        for i in (0..p).rev() {
            let mut done = 0usize;
            for c in [2 * i + 1, 2 * i + 2] {
                if c < p {
                    done = done.max(t[c]) + 1;
                }
            }
            t[i] = done;
        }
        t[0]
    }
}

#[test]
fn heap_tree_rounds_match_simulation() {
    for p in 1..=600 {
        for bcast in [false, true] {
            assert_eq!(
                heap_tree_rounds(p, bcast),
                heap_brute(p, bcast),
                "p {p} bcast {bcast}"
            );
        }
    }
    for p in [1 << 20, (1 << 20) - 1, (1 << 20) + 1, 1_000_003] {
        for bcast in [false, true] {
            assert_eq!(heap_tree_rounds(p, bcast), heap_brute(p, bcast));
        }
    }
}

/// Open MPI's k-nomial tree (ompi_coll_base_topo_build_kmtree, root 0), children served one
/// after the other in the tree's order; the time the last rank has the data.
fn knomial_brute(p: usize, k: usize) -> usize {
    let children = |v: usize| {
        let mut mask = 1usize;
        while mask < p {
            if !v.is_multiple_of(k * mask) {
                break;
            }
            mask *= k;
        }
        mask /= k;
        let mut out = Vec::new();
        while mask > 0 {
            for r in 1..k {
                if v + mask * r < p {
                    out.push(v + mask * r);
                }
            }
            mask /= k;
        }
        out
    };
    let mut t = vec![0usize; p];
    let mut stack = vec![0usize];
    let mut last = 0;
    while let Some(v) = stack.pop() {
        for (j, c) in children(v).into_iter().enumerate() {
            t[c] = t[v] + j + 1;
            last = last.max(t[c]);
            stack.push(c);
        }
    }
    last
}

#[test]
fn knomial_rounds_match_simulation() {
    for k in 2..=5 {
        for p in 1..=700 {
            assert_eq!(knomial_rounds(p, k), knomial_brute(p, k), "p {p} k {k}");
        }
    }
}

/// Recursive-halving reduce_scatter (MPICH's, copied by Open MPI) simulated rank by rank:
/// fold-in, halving exchanges with the doubled blocks of the folded pairs, the blocks sent
/// back; each exchange starts when both partners are ready and lasts α + β·max(send, recv) +
/// γ·recv.
fn recursive_halving_brute(p: usize, m: f64, c: &CostParams) -> f64 {
    let pof2 = 1usize << (usize::BITS - 1 - p.leading_zeros());
    let rem = p - pof2;
    let blk = m / p as f64;
    let mut t = vec![0.0f64; p];
    // fold-in: even ranks < 2·rem send everything to rank + 1
    for r in (0..2 * rem).step_by(2) {
        t[r] = c.alpha + c.beta * m;
        t[r + 1] = c.alpha + (c.beta + c.gamma) * m;
    }
    let real = |v: usize| if v < rem { 2 * v + 1 } else { v + rem };
    let size = |i: usize| if i < rem { 2.0 * blk } else { blk };
    // per virtual rank: the window of virtual blocks it still holds
    let mut win: Vec<(usize, usize)> = vec![(0, pof2); pof2];
    let mut mask = pof2 / 2;
    while mask > 0 {
        let mut nt = t.clone();
        let mut nwin = win.clone();
        for v in 0..pof2 {
            let peer = v ^ mask;
            let (lo, hi) = win[v];
            let mid = lo + mask;
            let (keep, give) = if v < peer {
                ((lo, mid), (mid, hi))
            } else {
                ((mid, hi), (lo, mid))
            };
            let recv: f64 = (keep.0..keep.1).map(size).sum();
            let send: f64 = (give.0..give.1).map(size).sum();
            let start = t[real(v)].max(t[real(peer)]);
            nt[real(v)] = start + c.alpha + c.beta * recv.max(send) + c.gamma * recv;
            nwin[v] = keep;
        }
        t = nt;
        win = nwin;
        mask /= 2;
    }
    // blocks back to the folded even ranks
    for r in (0..2 * rem).step_by(2) {
        t[r] = t[r].max(t[r + 1]) + c.alpha + c.beta * blk;
    }
    t.into_iter().fold(0.0, f64::max)
}

#[test]
fn recursive_halving_matches_simulation() {
    let c = CostParams {
        alpha: 3.0,
        beta: 0.7,
        gamma: 0.2,
    };
    for p in 2..=130 {
        let bytes = p * 64;
        let got = native(Mpich, ReduceScatter, p, bytes, true, &c);
        assert_eq!(got.algorithm, "recursive_halving");
        let want = recursive_halving_brute(p, bytes as f64, &c);
        assert!(
            (got.time - want).abs() <= 1e-9 * want,
            "p {p}: model {} simulation {want}",
            got.time
        );
    }
}

// ----- Properties over the whole grid --------------------------------------------------------

fn grid_bytes() -> Vec<usize> {
    let mut v = Vec::new();
    let mut b = 8usize;
    while b <= 1 << 30 {
        v.push(b);
        v.push(b + b / 2);
        v.push(b + b / 4 + 8);
        b *= 2;
    }
    v.sort_unstable();
    v.dedup();
    v
}

#[test]
fn finite_and_positive_for_p_at_least_two() {
    let cs = [
        C,
        CostParams::default(),
        CostParams {
            alpha: 1e-6,
            beta: 1e-10,
            gamma: 0.0,
        },
    ];
    for c in &cs {
        for mpi in Mpi::ALL {
            for coll in Collective::ALL {
                for comm in [true, false] {
                    for k in 1..=20 {
                        for p in [1usize << k, (1 << k) + 1, (1 << k) * 3 / 2] {
                            for &bytes in &grid_bytes() {
                                let n = native(mpi, coll, p, bytes, comm, c);
                                assert!(
                                    n.time.is_finite() && n.time > 0.0,
                                    "{mpi} {coll:?} p {p} bytes {bytes}: {n:?}"
                                );
                            }
                        }
                    }
                }
            }
        }
    }
}

/// For a fixed algorithm the time never falls as the message grows (nonoverlapping/default:
/// fixed reduce and bcast halves, which the tuned tables switch on their own).
#[test]
fn monotone_in_bytes_for_a_fixed_algorithm() {
    let c = CostParams::default();
    let mut ps: Vec<usize> = (2..=40).collect();
    ps.extend([
        63, 64, 65, 100, 127, 128, 200, 255, 256, 300, 511, 512, 1000, 2047, 3000, 5000,
    ]);
    ps.extend([1 << 14, (1 << 14) + 3, 1 << 20]);
    for mpi in Mpi::ALL {
        for coll in Collective::ALL {
            for comm in [true, false] {
                for &p in &ps {
                    let mut prev: Option<(String, usize, f64)> = None;
                    for &bytes in &grid_bytes() {
                        let n = native(mpi, coll, p, bytes, comm, &c);
                        let mut key = n.algorithm.to_string();
                        if mpi == OpenMpi
                            && matches!(
                                key.as_str(),
                                "nonoverlapping"
                                    | "non-overlapping"
                                    | "default"
                                    | "basic_linear"
                                    | "linear"
                            )
                        {
                            let red = native(mpi, Reduce, p, bytes, comm, &c).algorithm;
                            let elems = if key == "default" { 1 } else { bytes / 8 };
                            let bc = ompi_bcast(p, bytes, elems, &c).algorithm;
                            key = format!("{key}/{red}/{bc}");
                        }
                        if let Some((k, b0, t0)) = &prev {
                            if *k == key {
                                assert!(
                                    n.time >= *t0,
                                    "{mpi} {coll:?} comm {comm} p {p}: {key} {b0} B {t0} > {bytes} B {}",
                                    n.time
                                );
                            }
                        }
                        prev = Some((key, bytes, n.time));
                    }
                }
            }
        }
    }
}

/// The native algorithms that are pcoll schemes cost what pcoll's model says.
#[test]
fn agrees_with_pcoll_schemes_where_the_algorithm_is_the_same() {
    use pcoll::model::{time_with_segments, Duplex, Scheme};
    let c = CostParams::default();
    let t = |coll, s, p, bytes| time_with_segments(coll, s, p, bytes, &c, Duplex::Full, 1);
    // Rabenseifner = pcoll's butterfly (bandwidth variant) on powers of two.
    for p in [4usize, 64, 1024] {
        let bytes = 64 * MIB;
        let n = native(OpenMpi, Allreduce, p, bytes, true, &c);
        assert_eq!(n.algorithm, "rabenseifner");
        let m = bytes as f64;
        let q = p.trailing_zeros() as f64;
        let bw = 2.0 * q * c.alpha + (1.0 - 1.0 / p as f64) * (2.0 * c.beta + c.gamma) * m;
        assert!((n.time - bw).abs() <= 1e-12 * bw);
        assert!(n.time >= t(Allreduce, Scheme::Butterfly, p, bytes) * (1.0 - 1e-12));
        let n = native(Mpich, Allreduce, p, bytes, true, &c);
        assert!((n.time - bw).abs() <= 1e-12 * bw);
        // recursive halving = pcoll butterfly reduce_scatter, powers of two
        let n = native(Mpich, ReduceScatter, p, 256 * p, true, &c);
        assert_eq!(n.algorithm, "recursive_halving");
        let want = t(ReduceScatter, Scheme::Butterfly, p, 256 * p);
        assert!(
            (n.time - want).abs() <= 1e-12 * want,
            "p {p}: {} vs {want}",
            n.time
        );
        // reduce: Rabenseifner = pcoll butterfly reduce, powers of two
        let n = native(Mpich, Reduce, p, bytes, true, &c);
        let want = t(Reduce, Scheme::Butterfly, p, bytes);
        assert!((n.time - want).abs() <= 1e-12 * want);
    }
    // Ring allreduce and ring allgatherv.
    let n = native(OpenMpi, Allreduce, 2, 100_000, true, &c);
    assert_eq!(n.time, t(Allreduce, Scheme::Ring, 2, 100_000));
    let n = native(Mpich, Allgatherv, 6, MIB, true, &c);
    assert_eq!(n.time, t(Allgatherv, Scheme::Ring, 6, MIB));
}

#[test]
fn whole_grid_is_fast() {
    let c = CostParams::default();
    let start = Instant::now();
    let mut cells = 0usize;
    let mut sink = 0.0f64;
    for mpi in Mpi::ALL {
        for coll in Collective::ALL {
            for comm in [true, false] {
                for k in 1..=20 {
                    let p = 1usize << k;
                    for e in 3..=30 {
                        sink += native(mpi, coll, p, 1 << e, comm, &c).time;
                        cells += 1;
                    }
                }
            }
        }
    }
    let took = start.elapsed();
    assert_eq!(cells, 2 * Collective::ALL.len() * 2 * 20 * 28);
    assert!(sink.is_finite());
    assert!(
        took.as_secs_f64() < 0.25,
        "{cells} cells took {took:?} (must be well under a second)"
    );
    eprintln!("{cells} native() cells in {took:?}");
}
