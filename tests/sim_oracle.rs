//! Every algorithm of every collective, end to end on the simulated transport, against a
//! sequential oracle that folds contributions in rank order. Commutative (wrapping sum) and
//! non-commutative (affine composition) ops, in-place and not, all roots that matter,
//! awkward counts (0, 1, p−1, p+1, primes, counts not divisible by segments).

use pcoll::algo::{Algorithm, CallSpec, Collective, CostParams};
use pcoll::transport::sim::{run, Affine, RankIo, SimOp, SumU64};
use std::sync::Arc;

/// xorshift, so inputs are reproducible without a dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

const SENTINEL: u8 = 0x5C;

fn elem(op: &dyn SimOp, rng: &mut Rng) -> Vec<u8> {
    let mut v = rng.next().to_le_bytes().to_vec();
    if op.elem_bytes() == 16 {
        v[0] |= 1; // odd multiplier keeps the affine maps invertible and informative
        v.extend_from_slice(&rng.next().to_le_bytes());
    }
    v
}

/// Sequential reference: fold(x_0, ..., x_{p-1}) in rank order, element by element.
fn fold(op: &dyn SimOp, inputs: &[Vec<u8>]) -> Vec<u8> {
    let mut acc = inputs[0].clone();
    for x in &inputs[1..] {
        // acc := acc ⊕ x  ==  op(in = acc, inout = x) then take x.
        let mut t = x.clone();
        op.apply(&acc, &mut t);
        acc = t;
    }
    acc
}

#[derive(Clone, Copy, Debug)]
struct Case {
    coll: Collective,
    alg: Algorithm,
    p: usize,
    count: usize,
    root: usize,
    in_place: bool,
    commutative: bool,
    seg: usize,
    seed: u64,
}

fn counts_for(c: &Case, rng: &mut Rng) -> (Vec<usize>, Vec<usize>) {
    match c.coll {
        Collective::Reduce | Collective::Allreduce | Collective::Bcast => (vec![c.count], vec![]),
        // Regular counts: p blocks of count / p (allgather: packed, displs j·n).
        Collective::ReduceScatterBlock => (vec![c.count / c.p; c.p], vec![]),
        Collective::Allgather => {
            let n = c.count / c.p;
            (vec![n; c.p], (0..c.p).map(|j| j * n).collect())
        }
        _ => {
            // Irregular counts with zeros; around `count` in total.
            let counts: Vec<usize> = (0..c.p)
                .map(|j| {
                    if c.count == 0 || rng.next().is_multiple_of(4) {
                        0
                    } else {
                        (rng.next() as usize) % (c.count.max(1) * 2 / c.p.max(1) + 2) + (j % 2)
                    }
                })
                .collect();
            // displs: a permutation of the blocks with gaps (allgatherv only).
            let mut order: Vec<usize> = (0..c.p).collect();
            for i in (1..c.p).rev() {
                order.swap(i, (rng.next() as usize) % (i + 1));
            }
            let mut displs = vec![0; c.p];
            let mut at = (rng.next() % 3) as usize;
            for &j in &order {
                displs[j] = at;
                at += counts[j] + (rng.next() % 3) as usize;
            }
            (counts, displs)
        }
    }
}

fn check(c: Case) {
    let op: Arc<dyn SimOp> = if c.commutative {
        Arc::new(SumU64)
    } else {
        Arc::new(Affine)
    };
    let eb = op.elem_bytes();
    let mut rng = Rng(c.seed | 1);
    let (counts, displs) = counts_for(&c, &mut rng);
    let spec = CallSpec {
        coll: c.coll,
        p: c.p,
        rank: 0,
        root: c.root,
        counts: counts.clone(),
        displs: displs.clone(),
        commutative: c.commutative,
        elem_bytes: eb,
        seg_elems: c.seg,
        params: CostParams::default(),
        in_place: c.in_place,
    };
    if c.alg.check(&spec).is_err() {
        return;
    }
    let inputs: Vec<Vec<u8>> = (0..c.p)
        .map(|r| {
            let len = if c.coll == Collective::Bcast {
                counts[0] // the root's data, in Out before the call
            } else {
                spec.for_rank(r).in_len()
            };
            (0..len).flat_map(|_| elem(&*op, &mut rng)).collect()
        })
        .collect();
    let mut io = Vec::new();
    for r in 0..c.p {
        let s = spec.for_rank(r);
        let out_len = s.out_len();
        let mut out = out_len.map(|n| vec![SENTINEL; n * eb]);
        let mut in_alias = None;
        if c.coll == Collective::Bcast && r == c.root {
            out = Some(inputs[r].clone());
        }
        if c.in_place {
            // MPI_IN_PLACE: the input lives in the receive buffer.
            match c.coll {
                Collective::Reduce if r == c.root => {
                    out = Some(inputs[r].clone());
                    in_alias = Some(0);
                }
                Collective::Allreduce => {
                    out = Some(inputs[r].clone());
                    in_alias = Some(0);
                }
                Collective::ReduceScatter | Collective::ReduceScatterBlock => {
                    out = Some(inputs[r].clone());
                    in_alias = Some(0);
                }
                Collective::Allgatherv | Collective::Allgather => {
                    let o = out.as_mut().unwrap();
                    o[displs[r] * eb..(displs[r] + counts[r]) * eb].copy_from_slice(&inputs[r]);
                    in_alias = Some(displs[r]);
                }
                _ => {}
            }
        }
        io.push(RankIo {
            input: inputs[r].clone(),
            out,
            in_alias,
        });
    }
    let res = run(c.alg, &spec, op.clone(), io).unwrap_or_else(|e| panic!("{c:?}: {e}"));
    let total_fold = if c.coll.reduces() && !inputs.is_empty() && !inputs[0].is_empty() {
        fold(&*op, &inputs)
    } else {
        vec![]
    };
    for (r, rr) in res.iter().enumerate() {
        match c.coll {
            Collective::Reduce => {
                if r == c.root {
                    assert_eq!(
                        rr.out.as_ref().unwrap(),
                        &total_fold,
                        "{c:?}: wrong result at root"
                    );
                }
            }
            Collective::Allreduce => {
                assert_eq!(
                    rr.out.as_ref().unwrap(),
                    &total_fold,
                    "{c:?}: wrong result at rank {r}"
                );
            }
            Collective::Bcast => {
                let got = rr.out.as_ref().unwrap();
                assert_eq!(got, &inputs[c.root], "{c:?}: wrong data at rank {r}");
            }
            Collective::ReduceScatter | Collective::ReduceScatterBlock => {
                let lo: usize = counts[..r].iter().sum();
                let want = &total_fold
                    .get(lo * eb..(lo + counts[r]) * eb)
                    .unwrap_or(&[]);
                let got = rr.out.as_ref().unwrap();
                assert_eq!(
                    &got[..counts[r] * eb],
                    *want,
                    "{c:?}: wrong block at rank {r}"
                );
                if !c.in_place {
                    assert!(got[counts[r] * eb..].iter().all(|&b| b == SENTINEL));
                }
            }
            Collective::Allgatherv | Collective::Allgather => {
                let got = rr.out.as_ref().unwrap();
                let mut covered = vec![false; got.len() / eb];
                for j in 0..c.p {
                    let d = displs[j];
                    assert_eq!(
                        &got[d * eb..(d + counts[j]) * eb],
                        &inputs[j][..],
                        "{c:?}: block {j} wrong at rank {r}"
                    );
                    covered[d..d + counts[j]].iter_mut().for_each(|x| *x = true);
                }
                for (i, cov) in covered.iter().enumerate() {
                    if !cov {
                        assert!(
                            got[i * eb..(i + 1) * eb].iter().all(|&b| b == SENTINEL),
                            "{c:?}: gap element {i} written at rank {r}"
                        );
                    }
                }
            }
        }
        if let Some(cap) = max_rounds(&c) {
            assert!(
                rr.rounds as usize <= cap,
                "{c:?}: rank {r} took {} rounds > {cap}",
                rr.rounds
            );
        }
    }
}

/// The spec of a one-count case (rank 0) that the builders' segment counts are read from.
fn case_spec(c: &Case) -> CallSpec {
    CallSpec {
        coll: c.coll,
        p: c.p,
        rank: 0,
        root: c.root,
        counts: vec![c.count],
        displs: vec![],
        commutative: c.commutative,
        elem_bytes: if c.commutative { 8 } else { 16 },
        seg_elems: c.seg,
        params: CostParams::default(),
        in_place: c.in_place,
    }
}

/// Upper bounds on measured rounds that the schedules promise (None: not asserted here).
fn max_rounds(c: &Case) -> Option<usize> {
    let q = pcoll::sched::blocks::ceil_log2(c.p);
    match (c.coll, c.alg) {
        (Collective::Reduce, Algorithm::Binomial) => {
            Some(q + usize::from(!c.commutative && c.root != 0))
        }
        // Segmented chain: p + nseg − 2 rounds (+1 forwarding hop), ALGORITHMS.md §2.
        (Collective::Reduce, Algorithm::Pipeline) => {
            let spec = case_spec(c);
            let nseg = pcoll::algo::pipeline::segments(&spec);
            Some(pcoll::sched::pipeline::chain_rounds(
                c.p,
                c.root,
                c.commutative,
                nseg,
            ))
        }
        // Bi-greedy: ⌈log2 p⌉ + nseg − 1 rounds (ALGORITHMS.md §4).
        (Collective::Reduce | Collective::Allreduce, Algorithm::Greedy) => {
            let spec = case_spec(c);
            let nseg = pcoll::algo::greedy::segments(&spec, true);
            // allreduce: + circulant n-block broadcast, nseg − 1 + q rounds (§5.6).
            let bcast = if c.coll == Collective::Allreduce {
                nseg - 1 + q
            } else {
                0
            };
            Some(q + nseg - 1 + bcast)
        }
        (_, Algorithm::Binary | Algorithm::Fibonacci) => Some(tree_rounds(c)),
        (Collective::Bcast, alg) => Some(bcast_rounds(c, alg, q)),
        (coll, Algorithm::Circulant) => {
            // n as ALGORITHMS.md §5.6–5.9 chooses it; rounds n−1+q (allreduce: twice that).
            let d = pcoll::CostParams::default();
            let model = |c: usize, per: f64, eb: usize| -> usize {
                let x = ((q.max(1) - 1) as f64 * per * (c * eb) as f64 / d.alpha).sqrt();
                (x.round() as usize).clamp(1, c.max(1))
            };
            let nb = |len: usize, auto: usize| if c.seg > 0 { len.div_ceil(c.seg) } else { auto };
            let n = match coll {
                Collective::Reduce => nb(c.count, model(c.count, d.beta + d.gamma, 8)),
                Collective::Allreduce => nb(c.count.div_ceil(c.p), 1),
                // counts_for draws every count below count*2/p + 3
                _ => {
                    let cmax = c.count * 2 / c.p + 2;
                    nb(cmax, model(cmax, d.beta + d.gamma, 16))
                }
            }
            .max(1);
            let r = if q == 0 { 0 } else { n - 1 + q };
            Some(if coll == Collective::Allreduce {
                2 * r
            } else {
                r
            })
        }
        // Butterfly (ALGORITHMS.md §6): the simulator's clock counts one round per send.
        (Collective::Allreduce, Algorithm::Butterfly) => {
            let spec = CallSpec {
                root: 0,
                ..case_spec(c)
            };
            if pcoll::algo::butterfly::allreduce_uses_latency_variant(&spec) {
                // §6.4: n rounds for p = 2^n, ⌈log2 p⌉ + 1 otherwise.
                Some(if c.p.is_power_of_two() { q } else { q + 1 })
            } else {
                Some(2 * q)
            }
        }
        (Collective::Reduce, Algorithm::Butterfly) => {
            // §6.1 + §6.3: ⌈log2 p⌉ + (n − 1) + 1, one more for an eliminated root.
            Some(q + pcoll::sched::butterfly::reduce_routing_rounds(c.p, c.root))
        }
        (Collective::ReduceScatter, Algorithm::Butterfly) => {
            // Reduction phase + redistribution (a survivor sends to at most p − 1 ranks).
            Some(q + c.p.saturating_sub(1))
        }
        (Collective::Allgatherv, Algorithm::Butterfly) => Some(q),
        _ => None,
    }
}

/// Rounds the broadcast programs promise: binomial ⌈log2 p⌉, chain p + n − 2,
/// scatter + ring allgather ⌈log2 p⌉ + p − 1, circulant n − 1 + ⌈log2 p⌉ (n blocks).
fn bcast_rounds(c: &Case, alg: Algorithm, q: usize) -> usize {
    let spec = CallSpec {
        coll: Collective::Bcast,
        p: c.p,
        rank: 0,
        root: c.root,
        counts: vec![c.count],
        displs: vec![],
        commutative: true,
        elem_bytes: if c.commutative { 8 } else { 16 },
        seg_elems: c.seg,
        params: CostParams::default(),
        in_place: false,
    };
    if c.p == 1 || c.count == 0 {
        return 0;
    }
    match alg {
        Algorithm::Binomial => q,
        Algorithm::Pipeline => c.p + pcoll::algo::bcast::pipeline_segments(&spec) - 2,
        Algorithm::ScatterAllgather => q + c.p - 1,
        _ => pcoll::algo::bcast::circulant_blocks(&spec) - 1 + q,
    }
}

/// Rounds the tree report's trees promise (single-port, `pcoll::algo::trees`): the
/// unsegmented rounds R (reduce) or B (bcast), then 2 per further segment (1 at p = 2); a
/// non-commutative reduce to a root other than 0 one more (rank 0 forwards); allreduce both.
fn tree_rounds(c: &Case) -> usize {
    use pcoll::sched::trees::{bcast_rounds, reduce_rounds};
    let shape = pcoll::algo::trees::shape(c.alg);
    let spec = case_spec(c);
    if c.p == 1 || c.count == 0 {
        return 0;
    }
    let n = pcoll::algo::trees::segments(&spec, shape);
    let per = if c.p >= 3 { 2 } else { 1 };
    let red = reduce_rounds(shape, c.p) + per * (n - 1);
    let bc = bcast_rounds(shape, c.p) + per * (n - 1);
    match c.coll {
        Collective::Reduce => red + usize::from(!c.commutative && c.root != 0),
        Collective::Bcast => bc,
        _ => red + bc,
    }
}

fn algs(coll: Collective) -> Vec<Algorithm> {
    let only: Option<Vec<Algorithm>> = std::env::var("PCOLL_SIM_ALGS")
        .ok()
        .map(|s| s.split(',').map(|a| a.parse().unwrap()).collect());
    Algorithm::available(coll)
        .iter()
        .copied()
        // The node-aware algorithms are built over a node layout: tests/hier_sim.rs.
        .filter(|a| {
            *a != Algorithm::Native
                && !a.node_aware()
                // shm runs over a shared window, not a program (verify/run-difftest.sh --shm).
                && *a != Algorithm::Shm
                && only.as_ref().is_none_or(|o| o.contains(a))
        })
        .collect()
}

/// Every algorithm of `coll` at each p: counts 0, 1, p - 1, p + 1, 7, 13, 101, both kinds of
/// op, roots 0, p - 1 and p / 2 (reduce, bcast), in place or not, unsegmented and in
/// 3-element segments. Up to p = 17 every combination; above it (76% of the cases' cost: a
/// simulated rank is a thread, and the switches grow as p²) each case takes one of the
/// (in place, segments) pairs in turn, so that every pair still runs at every p.
const EVERY_PAIR_TO: usize = 17;

fn sweep(coll: Collective, ps: impl Iterator<Item = usize>) {
    // A broadcast has no in-place form (its root's buffer is the data).
    let places: &[bool] = if coll == Collective::Bcast {
        &[false]
    } else {
        &[false, true]
    };
    let pairs: Vec<(bool, usize)> = places
        .iter()
        .flat_map(|&ip| [0, 3].map(|seg| (ip, seg)))
        .collect();
    for p in ps {
        let counts = [0, 1, p.saturating_sub(1), p + 1, 7, 13, 101];
        let mut roots: Vec<usize> = if matches!(coll, Collective::Reduce | Collective::Bcast) {
            vec![0, p - 1, p / 2]
        } else {
            vec![0]
        };
        roots.dedup();
        let mut turn = 0usize;
        for alg in algs(coll) {
            for (ci, &count) in counts.iter().enumerate() {
                for commutative in [true, false] {
                    for &root in &roots {
                        let these = if p <= EVERY_PAIR_TO {
                            &pairs[..]
                        } else {
                            turn += 1;
                            let i = turn % pairs.len();
                            &pairs[i..=i]
                        };
                        for &(in_place, seg) in these {
                            check(Case {
                                coll,
                                alg,
                                p,
                                count,
                                root,
                                in_place,
                                commutative,
                                seg,
                                seed: (p * 1000 + ci * 10 + root) as u64 * 7919,
                            });
                        }
                    }
                }
            }
        }
    }
}

fn ps() -> impl Iterator<Item = usize> {
    (1..=EVERY_PAIR_TO).chain([20, 24, 31, 32, 33, 40])
}

#[test]
fn reduce_all_algorithms() {
    sweep(Collective::Reduce, ps());
}
#[test]
fn allreduce_all_algorithms() {
    sweep(Collective::Allreduce, ps());
}
#[test]
fn reduce_scatter_all_algorithms() {
    sweep(Collective::ReduceScatter, ps());
}
#[test]
fn allgatherv_all_algorithms() {
    sweep(Collective::Allgatherv, ps());
}
#[test]
fn bcast_all_algorithms() {
    sweep(Collective::Bcast, ps());
}
#[test]
fn allgather_all_algorithms() {
    sweep(Collective::Allgather, ps());
}
#[test]
fn reduce_scatter_block_all_algorithms() {
    sweep(Collective::ReduceScatterBlock, ps());
}

/// The tree report's trees (issue 25): p = 1..17 and around the shapes' boundaries above it
/// (Fibonacci's 21, binary's 32: 20, 21, 22, 24, 31, 32, 33; every p to 33 cost 18 s of
/// `make test`), both kinds of op; every root up to p = 12,
/// above it roots 0, 1, p / 2, p − 2 and p − 1 (the trees are the same shape relabelled from
/// the root; the sweep of every root at every p took 140 s of `make test`); per root one
/// element, 13 in one-element segments, 101 with the model's segments and in 5-element
/// segments; in place and not by turns (the sweeps above add counts 0, p ± 1, 7).
#[test]
fn trees_every_p_and_root() {
    for p in (1..=17usize).chain([20, 21, 22, 24, 31, 32, 33]) {
        for alg in [Algorithm::Binary, Algorithm::Fibonacci] {
            for coll in [Collective::Reduce, Collective::Bcast, Collective::Allreduce] {
                let roots: Vec<usize> = match coll {
                    Collective::Allreduce => vec![0],
                    _ if p <= 12 => (0..p).collect(),
                    _ => vec![0, 1, p / 2, p - 2, p - 1],
                };
                for root in roots {
                    for (ci, (count, seg)) in [(1, 0), (13, 1), (101, 0), (101, 5)]
                        .into_iter()
                        .enumerate()
                    {
                        for commutative in [true, false] {
                            check(Case {
                                coll,
                                alg,
                                p,
                                count,
                                root,
                                in_place: (root + ci) % 2 == 1,
                                commutative,
                                seg,
                                seed: (p * 7000 + root * 31 + ci * 7 + seg) as u64 * 104729,
                            });
                        }
                    }
                }
            }
        }
    }
}
