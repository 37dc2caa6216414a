//! The resumable executor (`exec::Run::advance`): several collectives outstanding at once on
//! p simulated ranks, all driven from one thread in a random order of (rank, collective)
//! polls, each advanced only as far as it goes without blocking. Every result is checked
//! against a sequential oracle (fold in rank order), independent of the blocking executor.
//! One matching space per collective (`SimWorld`) stands for the distinct tag each
//! outstanding collective gets under MPI.

use pcoll::algo::{build, Algorithm, CallSpec, Collective, CostParams};
use pcoll::exec::Run;
use pcoll::transport::sim::{Affine, RankIo, SimOp, SimTransport, SimWorld, SumU64};
use std::sync::Arc;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

const SENTINEL: u8 = 0x5C;

/// Collectives checked (so that a run that checks nothing fails).
static TOTAL: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

fn fold(op: &dyn SimOp, xs: &[&[u8]]) -> Vec<u8> {
    let mut acc = xs[0].to_vec();
    for x in &xs[1..] {
        let mut t = x.to_vec();
        op.apply(&acc, &mut t);
        acc = t;
    }
    acc
}

/// One outstanding collective: its spec, op, inputs, and per rank its run and transport.
struct Coll {
    alg: Algorithm,
    spec: CallSpec,
    op: Arc<dyn SimOp>,
    inputs: Vec<Vec<u8>>,
    ranks: Vec<(
        pcoll::Program,
        Run<pcoll::transport::sim::SimReq>,
        SimTransport,
    )>,
}

fn spec_for(coll: Collective, p: usize, rng: &mut Rng, commutative: bool, eb: usize) -> CallSpec {
    let n = rng.below(40);
    let (counts, displs) = match coll {
        Collective::Reduce | Collective::Allreduce | Collective::Bcast => (vec![n], vec![]),
        Collective::ReduceScatter => ((0..p).map(|_| rng.below(9)).collect(), vec![]),
        _ => {
            let counts: Vec<usize> = (0..p).map(|_| rng.below(9)).collect();
            let mut at = 0;
            let mut displs = vec![];
            for c in &counts {
                at += rng.below(3);
                displs.push(at);
                at += c;
            }
            (counts, displs)
        }
    };
    CallSpec {
        coll,
        p,
        rank: 0,
        root: if coll.base() == Collective::Allreduce {
            0
        } else {
            rng.below(p)
        },
        counts,
        displs,
        commutative,
        elem_bytes: eb,
        seg_elems: rng.below(5),
        params: CostParams::default(),
        in_place: false,
    }
}

/// A random collective on `p` ranks with an algorithm that serves it (None: none fits).
fn make(p: usize, rng: &mut Rng) -> Option<Coll> {
    let colls = [
        Collective::Reduce,
        Collective::Allreduce,
        Collective::Bcast,
        Collective::ReduceScatter,
        Collective::Allgatherv,
    ];
    let coll = colls[rng.below(colls.len())];
    let commutative = coll.reduces() && rng.below(2) == 0;
    let op: Arc<dyn SimOp> = if commutative || !coll.reduces() {
        Arc::new(SumU64)
    } else {
        Arc::new(Affine)
    };
    let eb = op.elem_bytes();
    let mut spec = spec_for(coll, p, rng, commutative || !coll.reduces(), eb);
    if coll == Collective::Reduce {
        spec.root = rng.below(p);
    }
    let algs: Vec<Algorithm> = Algorithm::available(coll)
        .iter()
        .copied()
        .filter(|a| *a != Algorithm::Native && !a.node_aware() && *a != Algorithm::Shm)
        .filter(|a| a.check(&spec).is_ok())
        .collect();
    if algs.is_empty() {
        return None;
    }
    let alg = algs[rng.below(algs.len())];
    let world = SimWorld::new(p);
    let mut inputs = vec![];
    let mut ranks = vec![];
    for r in 0..p {
        let s = spec.for_rank(r);
        let in_len = s.in_len();
        let input: Vec<u8> = (0..in_len * eb)
            .map(|i| (rng.next() as u8) | ((i % eb == 0) as u8))
            .collect();
        let mut out = s.out_len().map(|n| vec![SENTINEL; n * eb]);
        if coll == Collective::Bcast && r == spec.root {
            let data: Vec<u8> = (0..spec.total() * eb).map(|_| rng.next() as u8).collect();
            out = Some(data.clone());
            inputs.push(data);
        } else {
            inputs.push(input.clone());
        }
        let prog = build(alg, &s).expect("build");
        let io = RankIo {
            input,
            out,
            in_alias: None,
        };
        ranks.push((prog, Run::new(), world.rank(r, op.clone(), io)));
    }
    Some(Coll {
        alg,
        spec,
        op,
        inputs,
        ranks,
    })
}

/// The oracle's `Out` of `rank` (None: not bound).
fn expected(c: &Coll, rank: usize) -> Option<Vec<u8>> {
    let s = c.spec.for_rank(rank);
    let eb = c.op.elem_bytes();
    let all: Vec<&[u8]> = c.inputs.iter().map(|v| &v[..]).collect();
    match c.spec.coll {
        Collective::Reduce => (rank == s.root).then(|| fold(&*c.op, &all)),
        Collective::Allreduce => Some(fold(&*c.op, &all)),
        Collective::Bcast => Some(c.inputs[s.root].clone()),
        Collective::ReduceScatter => {
            let lo: usize = s.counts[..rank].iter().sum::<usize>() * eb;
            let hi = lo + s.counts[rank] * eb;
            let blocks: Vec<&[u8]> = all.iter().map(|x| &x[lo..hi]).collect();
            Some(if hi > lo {
                fold(&*c.op, &blocks)
            } else {
                vec![]
            })
        }
        _ => {
            let mut out = vec![SENTINEL; s.out_len().unwrap() * eb];
            for j in 0..s.p {
                let at = s.displs[j] * eb;
                out[at..at + c.inputs[j].len()].copy_from_slice(&c.inputs[j]);
            }
            Some(out)
        }
    }
}

/// `k` collectives outstanding on `p` ranks, polled in a random order until all complete.
fn interleave(p: usize, k: usize, seed: u64) {
    let mut rng = Rng(seed | 1);
    let mut colls: Vec<Coll> = (0..k * 3)
        .filter_map(|_| make(p, &mut rng))
        .take(k)
        .collect();
    let mut polls = 0usize;
    TOTAL.fetch_add(colls.len(), std::sync::atomic::Ordering::Relaxed);
    loop {
        let open: Vec<(usize, usize)> = colls
            .iter()
            .enumerate()
            .flat_map(|(i, c)| {
                c.ranks
                    .iter()
                    .enumerate()
                    .filter(|(_, r)| !r.1.done())
                    .map(move |(r, _)| (i, r))
            })
            .collect();
        if open.is_empty() {
            break;
        }
        let (i, r) = open[rng.below(open.len())];
        let c = &mut colls[i];
        let what = format!("p={p} seed={seed} {} {}", c.spec.coll, c.alg);
        let (prog, run, t) = &mut c.ranks[r];
        let done = run
            .advance(prog, t)
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(done, run.done());
        polls += 1;
        assert!(
            polls < 1_000_000,
            "p={p} seed={seed}: no completion (deadlock?)"
        );
    }
    for c in &colls {
        for (r, (_, _, t)) in c.ranks.iter().enumerate() {
            let want = expected(c, r);
            let got = t.out.clone();
            let got = match (&c.spec.coll, got) {
                (Collective::Reduce, g) if r != c.spec.root => g.filter(|_| false),
                (_, g) => g,
            };
            assert_eq!(
                got, want,
                "p={p} seed={seed} {} {} rank {r}: {:?}",
                c.spec.coll, c.alg, c.spec
            );
        }
    }
}

#[test]
fn outstanding_collectives_complete_in_any_poll_order() {
    for p in 1..=6 {
        for seed in 0..60u64 {
            interleave(p, 1 + (seed as usize % 5), seed * 7919 + p as u64);
        }
    }
    let n = TOTAL.load(std::sync::atomic::Ordering::Relaxed);
    eprintln!("{n} collectives checked");
    assert!(n > 800, "only {n} collectives checked");
}

#[test]
fn a_lone_rank_completes_at_the_first_advance() {
    let mut rng = Rng(99);
    for _ in 0..20 {
        let Some(mut c) = make(1, &mut rng) else {
            continue;
        };
        let (prog, run, t) = &mut c.ranks[0];
        assert!(run.advance(prog, t).unwrap());
        assert!(
            run.advance(prog, t).unwrap(),
            "a finished run stays finished"
        );
    }
}
