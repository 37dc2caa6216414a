//! Round counts and message sizes of the circulant programs (ALGORITHMS.md §5.6–5.9, §9),
//! measured on the simulated transport (Lamport rounds) or read off the built programs.

use pcoll::algo::{build, Algorithm, CallSpec, Collective, CostParams};
use pcoll::plan::Op;
use pcoll::transport::sim::{run, RankIo, SumU64};
use std::sync::Arc;

fn q_of(p: usize) -> usize {
    (0..).find(|&q| (1usize << q) >= p).unwrap()
}

fn spec(coll: Collective, p: usize, counts: Vec<usize>, seg: usize, root: usize) -> CallSpec {
    let displs = if coll == Collective::Allgatherv {
        counts
            .iter()
            .scan(0, |acc, &c| {
                let d = *acc;
                *acc += c;
                Some(d)
            })
            .collect()
    } else {
        vec![]
    };
    CallSpec {
        coll,
        p,
        rank: 0,
        root,
        counts,
        displs,
        commutative: true,
        elem_bytes: 8,
        seg_elems: seg,
        params: CostParams::default(),
        in_place: false,
    }
}

fn words(v: &[u64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Runs the circulant program on the simulator with input x_r[i] = (r+1)·1000 + i and checks
/// the result against the sum; returns the measured rounds of every rank.
fn run_checked(s: &CallSpec) -> Vec<u64> {
    let p = s.p;
    let input = |r: usize| -> Vec<u64> {
        (0..s.for_rank(r).in_len())
            .map(|i| (r as u64 + 1) * 1000 + i as u64)
            .collect()
    };
    let io: Vec<RankIo> = (0..p)
        .map(|r| RankIo {
            input: words(&input(r)),
            out: s.for_rank(r).out_len().map(|n| vec![0; n * 8]),
            in_alias: None,
        })
        .collect();
    let res = run(Algorithm::Circulant, s, Arc::new(SumU64), io).unwrap();
    // Sum over ranks of element i of the reduce input.
    let sum = |i: usize| -> u64 { (0..p).map(|r| (r as u64 + 1) * 1000 + i as u64).sum() };
    for (r, rr) in res.iter().enumerate() {
        let want: Option<Vec<u64>> = match s.coll {
            Collective::Allreduce => Some((0..s.counts[0]).map(sum).collect()),
            Collective::Reduce if r == s.root => Some((0..s.counts[0]).map(sum).collect()),
            Collective::ReduceScatter => {
                let lo: usize = s.counts[..r].iter().sum();
                Some((lo..lo + s.counts[r]).map(sum).collect())
            }
            Collective::Allgatherv => Some((0..p).flat_map(input).collect()),
            _ => None,
        };
        if let Some(w) = want {
            assert_eq!(rr.out.as_ref().unwrap(), &words(&w), "{s:?} rank {r}");
        }
        assert_eq!(rr.declared_rounds, res[0].declared_rounds);
    }
    res.iter().map(|r| r.rounds).collect()
}

/// §5.9: allreduce with one block takes exactly 2⌈log2 p⌉ rounds, for every p.
#[test]
fn allreduce_one_block_takes_2q_rounds() {
    for p in 2..=40 {
        for count in [p, 3 * p + 1] {
            let s = spec(Collective::Allreduce, p, vec![count], 0, 0);
            let rounds = run_checked(&s);
            let want = 2 * q_of(p) as u64;
            assert_eq!(*rounds.iter().max().unwrap(), want, "p={p} count={count}");
            assert_eq!(
                build(Algorithm::Circulant, &s).unwrap().rounds,
                want as usize
            );
        }
    }
}

/// §5.6/5.7: reduce with n blocks takes n−1+q rounds (any root); the root never sends.
#[test]
fn reduce_n_blocks_takes_n_minus_1_plus_q_rounds() {
    for p in (2..=20).chain([31, 33]) {
        for n in [1usize, 2, 3, 5, 8] {
            for root in [0, p / 2, p - 1] {
                let count: usize = 4 * n - 1;
                // block size so that ceil(count / seg) = n
                let seg = 4;
                assert_eq!(count.div_ceil(seg), n);
                let s = spec(Collective::Reduce, p, vec![count], seg, root);
                let rounds = run_checked(&s);
                let want = (n - 1 + q_of(p)) as u64;
                // Lamport rounds do not count receive-only rounds (p = 3, n = 1: the root
                // receives in two rounds, both messages stamped 1), so only a bound holds.
                assert!(
                    *rounds.iter().max().unwrap() <= want,
                    "p={p} n={n} root={root}"
                );
                let prog = build(Algorithm::Circulant, &s.for_rank(root)).unwrap();
                assert_eq!(prog.rounds, want as usize);
                // the root only receives, at most once per round
                let recvs = prog
                    .ops
                    .iter()
                    .filter(|o| matches!(o, Op::Irecv { .. }))
                    .count();
                assert!(recvs <= want as usize && prog.sent_elems() == 0);
            }
        }
    }
}

/// §5.8/5.9: allgatherv (n = 1) and reduce_scatter with equal counts and n blocks: n−1+q rounds, one
/// message per round and direction; allgatherv receives exactly Σc − c_rank elements.
#[test]
fn allgatherv_and_reduce_scatter_rounds() {
    for p in (2..=17).chain([24, 33]) {
        for n in [1, 2, 4] {
            for coll in [Collective::Allgatherv, Collective::ReduceScatter] {
                let c = 3 * n;
                let s = spec(coll, p, vec![c; p], 3, 0);
                let rounds = run_checked(&s);
                // allgatherv always uses one block per root (block boundaries inside a
                // contribution could differ between ranks with different receive types).
                let nb = if coll == Collective::Allgatherv { 1 } else { n };
                let want = nb - 1 + q_of(p);
                assert_eq!(
                    *rounds.iter().max().unwrap(),
                    want as u64,
                    "{coll} p={p} n={n}"
                );
                for r in 0..p {
                    let prog = build(Algorithm::Circulant, &s.for_rank(r)).unwrap();
                    let sends = prog
                        .ops
                        .iter()
                        .filter(|o| matches!(o, Op::Isend { .. }))
                        .count();
                    assert!(sends <= want, "{coll} p={p} n={n} r={r}: {sends} sends");
                }
            }
        }
    }
}

fn recv_elems(s: &CallSpec) -> usize {
    let prog = build(Algorithm::Circulant, s).unwrap();
    prog.ops
        .iter()
        .map(|o| match o {
            Op::Irecv { pieces, .. } => pieces.iter().map(|pc| pc.len).sum(),
            _ => 0,
        })
        .sum()
}

/// §5.8: with irregular counts (zeros, one big contributor) every rank receives exactly
/// Σ c_j − c_rank elements (each block once), for several block counts.
#[test]
fn allgatherv_receives_each_element_once() {
    for p in [2, 5, 9, 17, 30] {
        let patterns: Vec<Vec<usize>> = vec![
            (0..p).map(|j| (j * 7) % 5).collect(),
            (0..p).map(|j| if j == p / 3 { 50 } else { 0 }).collect(),
            (0..p).map(|j| j + 1).collect(),
        ];
        for counts in patterns {
            for seg in [0, 1, 2, 7] {
                let s = spec(Collective::Allgatherv, p, counts.clone(), seg, 0);
                let total: usize = counts.iter().sum();
                for r in 0..p {
                    assert_eq!(
                        recv_elems(&s.for_rank(r)),
                        total - counts[r],
                        "p={p} seg={seg} r={r} counts={counts:?}"
                    );
                }
                run_checked(&s);
            }
        }
    }
}

/// §9: circulant reduce_scatter, n = 1, equal counts c: largest message of each round
/// (in execution order) — p=16,c=8: 64 32 16 8; p=17,c=60: 480 240 120 60 60;
/// p=100,c=60: 3000 1500 720 360 180 120 60.
#[test]
fn reduce_scatter_round_sizes_match_vectors() {
    let cases: [(usize, usize, &[usize]); 3] = [
        (16, 8, &[64, 32, 16, 8]),
        (17, 60, &[480, 240, 120, 60, 60]),
        (100, 60, &[3000, 1500, 720, 360, 180, 120, 60]),
    ];
    for (p, c, want) in cases {
        let s = spec(Collective::ReduceScatter, p, vec![c; p], c, 0);
        let mut largest = vec![0; want.len()];
        for r in 0..p {
            let prog = build(Algorithm::Circulant, &s.for_rank(r)).unwrap();
            let sizes: Vec<usize> = prog
                .ops
                .iter()
                .filter_map(|o| match o {
                    Op::Isend { pieces, .. } => Some(pieces.iter().map(|pc| pc.len).sum()),
                    _ => None,
                })
                .collect();
            assert_eq!(sizes.len(), want.len(), "p={p} r={r}");
            for (l, x) in largest.iter_mut().zip(sizes) {
                *l = (*l).max(x);
            }
        }
        assert_eq!(largest, want, "p={p} c={c}");
        // and the sum is exactly (p−1)/p · m
        assert_eq!(largest.iter().sum::<usize>(), (p - 1) * c);
    }
}

/// Model choice of n (seg_elems = 0) is identical on all ranks and grows with the message.
#[test]
fn model_block_count() {
    use pcoll::algo::circulant::block_count;
    let small = spec(Collective::Reduce, 64, vec![16], 0, 0);
    assert_eq!(block_count(&small), 1);
    let big = spec(Collective::Reduce, 64, vec![1 << 22], 0, 0);
    let n = block_count(&big);
    // √((q−1)(β+γ)m/α) with q = 6, m = 2^25 bytes, defaults α = 2e-6, β+γ = 4.5e-10
    let want = ((5.0 * 4.5e-10 * (1u64 << 25) as f64) / 2.0e-6)
        .sqrt()
        .round() as usize;
    assert_eq!(n, want);
    for r in 0..64 {
        assert_eq!(block_count(&big.for_rank(r)), n);
    }
    let ar = spec(Collective::Allreduce, 64, vec![1 << 22], 0, 0);
    assert_eq!(block_count(&ar), 1);
}
