//! Butterfly programs end to end on the strict simulator, beyond tests/sim_oracle.rs: both
//! allreduce variants forced through the cost parameters, every reduce root, skewed
//! reduce_scatter counts, allgatherv with gaps and permuted displacements, bit-identical
//! allreduce results for an op whose declared commutativity is not bitwise, and measured
//! rounds never above the declared ones. Reference: sequential rank-order fold.

use pcoll::algo::butterfly::{allreduce_uses_latency_variant, redistribution};
use pcoll::algo::{build, Algorithm, CallSpec, Collective, CostParams};
use pcoll::sched::blocks::ceil_log2;
use pcoll::transport::sim::{run, Affine, RankIo, RankResult, SimOp, SumU64};
use std::sync::Arc;

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

/// Affine composition that claims to be commutative (it is not): a butterfly never
/// reorders, but the transport may swap operands for "commutative" ops, so results need
/// not match the fold — they must still be identical on every rank.
struct LyingAffine;
impl SimOp for LyingAffine {
    fn elem_bytes(&self) -> usize {
        16
    }
    fn commutative(&self) -> bool {
        true
    }
    fn apply(&self, inp: &[u8], inout: &mut [u8]) {
        Affine.apply(inp, inout)
    }
}

fn elem(eb: usize, rng: &mut Rng) -> Vec<u8> {
    let mut v = rng.next().to_le_bytes().to_vec();
    if eb == 16 {
        v[0] |= 1;
        v.extend_from_slice(&rng.next().to_le_bytes());
    }
    v
}

fn fold(op: &dyn SimOp, inputs: &[Vec<u8>]) -> Vec<u8> {
    let mut acc = inputs[0].clone();
    for x in &inputs[1..] {
        let mut t = x.clone();
        op.apply(&acc, &mut t);
        acc = t;
    }
    acc
}

fn spec(
    coll: Collective,
    p: usize,
    counts: Vec<usize>,
    displs: Vec<usize>,
    op: &dyn SimOp,
) -> CallSpec {
    CallSpec {
        coll,
        p,
        rank: 0,
        root: 0,
        counts,
        displs,
        commutative: op.commutative(),
        elem_bytes: op.elem_bytes(),
        seg_elems: 0,
        params: CostParams::default(),
        in_place: false,
    }
}

/// Params that make the model pick the bandwidth (true) or latency (false) variant.
fn params(bw: bool) -> CostParams {
    if bw {
        CostParams {
            alpha: 0.0,
            beta: 1e-9,
            gamma: 1e-9,
        }
    } else {
        CostParams {
            alpha: 1.0,
            beta: 1e-12,
            gamma: 1e-12,
        }
    }
}

/// Runs the case; returns inputs and results. Checks declared >= measured rounds.
fn go(
    s: &CallSpec,
    op: Arc<dyn SimOp>,
    in_place: bool,
    seed: u64,
) -> (Vec<Vec<u8>>, Vec<RankResult>) {
    let eb = op.elem_bytes();
    let mut rng = Rng(seed | 1);
    let inputs: Vec<Vec<u8>> = (0..s.p)
        .map(|r| {
            (0..s.for_rank(r).in_len())
                .flat_map(|_| elem(eb, &mut rng))
                .collect()
        })
        .collect();
    let io = (0..s.p)
        .map(|r| {
            let sr = s.for_rank(r);
            let mut out = sr.out_len().map(|n| vec![SENTINEL; n * eb]);
            let mut in_alias = None;
            if in_place {
                match s.coll {
                    Collective::Reduce if r == s.root => {
                        out = Some(inputs[r].clone());
                        in_alias = Some(0);
                    }
                    Collective::Allreduce | Collective::ReduceScatter => {
                        out = Some(inputs[r].clone());
                        in_alias = Some(0);
                    }
                    Collective::Allgatherv => {
                        let o = out.as_mut().unwrap();
                        let d = s.displs[r];
                        o[d * eb..(d + s.counts[r]) * eb].copy_from_slice(&inputs[r]);
                        in_alias = Some(d);
                    }
                    _ => {}
                }
            }
            RankIo {
                input: inputs[r].clone(),
                out,
                in_alias,
            }
        })
        .collect();
    let res = run(Algorithm::Butterfly, s, op, io)
        .unwrap_or_else(|e| panic!("{:?} p={} counts={:?}: {e}", s.coll, s.p, s.counts));
    for (r, rr) in res.iter().enumerate() {
        assert!(
            rr.rounds as usize <= rr.declared_rounds,
            "{:?} p={} rank {r}: measured {} > declared {}",
            s.coll,
            s.p,
            rr.rounds,
            rr.declared_rounds
        );
    }
    (inputs, res)
}

fn ops() -> Vec<Arc<dyn SimOp>> {
    vec![Arc::new(SumU64), Arc::new(Affine)]
}

fn ps() -> Vec<usize> {
    (1..=20).chain([24, 31, 32, 33, 63, 64, 65]).collect()
}

#[test]
fn allreduce_both_variants() {
    for p in ps() {
        for m in [0, 1, 2, 3, p.saturating_sub(1), p, p + 1, 2 * p + 1, 100] {
            for bw in [true, false] {
                for op in ops() {
                    let mut s = spec(Collective::Allreduce, p, vec![m], vec![], &*op);
                    s.params = params(bw);
                    if m > 0 && p > 1 {
                        assert_eq!(allreduce_uses_latency_variant(&s), !bw, "p={p} m={m}");
                    }
                    for in_place in [false, true] {
                        let (inputs, res) = go(&s, op.clone(), in_place, (p * 1000 + m) as u64);
                        let want = if m > 0 { fold(&*op, &inputs) } else { vec![] };
                        for (r, rr) in res.iter().enumerate() {
                            assert_eq!(
                                rr.out.as_ref().unwrap(),
                                &want,
                                "allreduce bw={bw} p={p} m={m} in_place={in_place} rank {r}"
                            );
                        }
                        let q = ceil_log2(p);
                        let declared = res[0].declared_rounds;
                        if p > 1 {
                            let want_rounds = if bw && m > 0 {
                                2 * q
                            } else if p.is_power_of_two() {
                                q
                            } else {
                                q + 1
                            };
                            assert_eq!(declared, want_rounds, "p={p} m={m} bw={bw}");
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn allreduce_identical_on_all_ranks_for_non_bitwise_commutative_op() {
    for p in ps() {
        for m in [1, 5, 2 * p + 1] {
            for bw in [true, false] {
                let op: Arc<dyn SimOp> = Arc::new(LyingAffine);
                let mut s = spec(Collective::Allreduce, p, vec![m], vec![], &*op);
                s.params = params(bw);
                let (_, res) = go(&s, op, false, p as u64 * 77 + m as u64);
                for rr in &res[1..] {
                    assert_eq!(rr.out, res[0].out, "p={p} m={m} bw={bw}");
                }
            }
        }
    }
}

#[test]
fn reduce_every_root() {
    for p in ps() {
        let roots: Vec<usize> = if p <= 13 {
            (0..p).collect()
        } else {
            vec![0, 1, 2, 3, 4, p / 2, p - 2, p - 1]
        };
        for m in [0, 1, p + 1, 37] {
            for &root in &roots {
                for op in ops() {
                    let mut s = spec(Collective::Reduce, p, vec![m], vec![], &*op);
                    s.root = root;
                    for in_place in [false, true] {
                        let (inputs, res) =
                            go(&s, op.clone(), in_place, (p * 100 + root * 7 + m) as u64);
                        let want = if m > 0 { fold(&*op, &inputs) } else { vec![] };
                        assert_eq!(
                            res[root].out.as_ref().unwrap(),
                            &want,
                            "reduce p={p} m={m} root={root} in_place={in_place}"
                        );
                    }
                }
            }
        }
    }
}

fn skewed_counts(p: usize, rng: &mut Rng) -> Vec<Vec<usize>> {
    let mut v = vec![vec![0; p], vec![3; p], (0..p).map(|j| j % 3).collect()];
    for j in [0, p / 2, p - 1] {
        let mut c = vec![0; p];
        c[j] = 2 * p + 5;
        v.push(c);
    }
    v.push(
        (0..p)
            .map(|_| (rng.next() % 9) as usize * (rng.next() % 2) as usize)
            .collect(),
    );
    v.push((0..p).map(|j| if j % 2 == 0 { 17 } else { 0 }).collect());
    v
}

#[test]
fn reduce_scatter_skewed_counts() {
    for p in ps() {
        let mut rng = Rng(p as u64 * 31 + 7);
        for counts in skewed_counts(p, &mut rng) {
            // The redistribution covers [0, total) exactly once, each piece inside the
            // receiver's range.
            let total: usize = counts.iter().sum();
            let mut moves = redistribution(p, &counts);
            moves.sort_by_key(|mv| mv.lo);
            let mut at = 0;
            for mv in &moves {
                assert_eq!(mv.lo, at, "p={p} counts={counts:?}");
                let off: usize = counts[..mv.to].iter().sum();
                assert!(mv.lo >= off && mv.hi <= off + counts[mv.to] && mv.lo < mv.hi);
                at = mv.hi;
            }
            assert_eq!(at, total);
            for op in ops() {
                let s = spec(Collective::ReduceScatter, p, counts.clone(), vec![], &*op);
                for in_place in [false, true] {
                    let (inputs, res) = go(&s, op.clone(), in_place, (p * 13 + total) as u64);
                    let eb = op.elem_bytes();
                    let all = if total > 0 {
                        fold(&*op, &inputs)
                    } else {
                        vec![]
                    };
                    let mut off = 0;
                    for (r, rr) in res.iter().enumerate() {
                        let got = rr.out.as_ref().unwrap();
                        assert_eq!(
                            &got[..counts[r] * eb],
                            &all[off * eb..(off + counts[r]) * eb],
                            "reduce_scatter p={p} counts={counts:?} in_place={in_place} rank {r}"
                        );
                        if !in_place {
                            assert!(got[counts[r] * eb..].iter().all(|&b| b == SENTINEL));
                        }
                        off += counts[r];
                    }
                }
            }
        }
    }
}

#[test]
fn allgatherv_gaps_and_permuted_displs() {
    for p in ps() {
        let mut rng = Rng(p as u64 * 57 + 3);
        for counts in skewed_counts(p, &mut rng) {
            let mut order: Vec<usize> = (0..p).collect();
            for i in (1..p).rev() {
                order.swap(i, (rng.next() as usize) % (i + 1));
            }
            let mut displs = vec![0; p];
            let mut at = (rng.next() % 3) as usize;
            for &j in &order {
                displs[j] = at;
                at += counts[j] + (rng.next() % 3) as usize;
            }
            let op: Arc<dyn SimOp> = Arc::new(SumU64);
            let s = spec(
                Collective::Allgatherv,
                p,
                counts.clone(),
                displs.clone(),
                &*op,
            );
            for in_place in [false, true] {
                let (inputs, res) = go(&s, op.clone(), in_place, p as u64 + at as u64);
                let eb = 8;
                for (r, rr) in res.iter().enumerate() {
                    let got = rr.out.as_ref().unwrap();
                    let mut covered = vec![false; got.len() / eb];
                    for j in 0..p {
                        let d = displs[j];
                        assert_eq!(
                            &got[d * eb..(d + counts[j]) * eb],
                            &inputs[j][..],
                            "allgatherv p={p} block {j} at rank {r}"
                        );
                        covered[d..d + counts[j]].iter_mut().for_each(|c| *c = true);
                    }
                    for (i, c) in covered.iter().enumerate() {
                        if !c {
                            assert!(
                                got[i * eb..(i + 1) * eb].iter().all(|&b| b == SENTINEL),
                                "allgatherv p={p}: gap {i} written at rank {r}"
                            );
                        }
                    }
                    assert_eq!(rr.declared_rounds, ceil_log2(p));
                }
            }
        }
    }
}

/// Programs only ever talk to valid peers and allocate modest scratch (no O(p·m)).
#[test]
fn scratch_is_bounded() {
    for p in [5, 12, 64, 100] {
        let m = 1000;
        let op = SumU64;
        for bw in [true, false] {
            let mut s = spec(Collective::Allreduce, p, vec![m], vec![], &op);
            s.params = params(bw);
            for r in 0..p {
                let prog = build(Algorithm::Butterfly, &s.for_rank(r)).unwrap();
                let scratch: usize = prog.tmp.iter().sum();
                let cap = if bw { m.div_ceil(2) } else { m };
                assert!(scratch <= cap, "p={p} bw={bw} rank {r}: scratch {scratch}");
            }
        }
    }
}
