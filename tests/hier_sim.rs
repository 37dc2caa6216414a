//! The node-aware algorithms (`hier`, `hier_ml`) end to end on the strict simulated
//! transport against a sequential rank-order fold: every layout of up to 4 nodes x 5 ranks
//! (even, uneven, one rank per node, nodes of consecutive ranks), and random interleaved
//! layouts (ranks of a node not consecutive; commutative ops only, where the builders must
//! decline a non-commutative one). Counts, roots, in-place and op vary with the case.

use pcoll::algo::hier::{build_hier, Ctx, NodeSteps};
use pcoll::algo::{Algorithm, CallSpec, Collective, CostParams};
use pcoll::nodes::Layout;
use pcoll::transport::sim::{run_programs, Affine, RankIo, SimOp, SumU64};
use pcoll::Program;
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
        (self.next() % n.max(1) as u64) as usize
    }
}

const SENTINEL: u8 = 0xA7;

const COMBOS: [(Collective, Algorithm); 6] = [
    (Collective::Reduce, Algorithm::Hier),
    (Collective::Reduce, Algorithm::HierMl),
    (Collective::Allreduce, Algorithm::Hier),
    (Collective::Allreduce, Algorithm::HierMl),
    (Collective::ReduceScatter, Algorithm::Hier),
    (Collective::Allgatherv, Algorithm::Hier),
];

fn fold(op: &dyn SimOp, inputs: &[Vec<u8>]) -> Vec<u8> {
    let mut acc = inputs[0].clone();
    for x in &inputs[1..] {
        let mut t = x.clone();
        op.apply(&acc, &mut t);
        acc = t;
    }
    acc
}

fn elem(op: &dyn SimOp, rng: &mut Rng) -> Vec<u8> {
    let mut v = rng.next().to_le_bytes().to_vec();
    if op.elem_bytes() == 16 {
        v[0] |= 1;
        v.extend_from_slice(&rng.next().to_le_bytes());
    }
    v
}

/// The call's counts and displacements (allgatherv: blocks permuted, with gaps).
fn shape(coll: Collective, p: usize, count: usize, rng: &mut Rng) -> (Vec<usize>, Vec<usize>) {
    if matches!(coll, Collective::Reduce | Collective::Allreduce) {
        return (vec![count], vec![]);
    }
    let counts: Vec<usize> = (0..p)
        .map(|_| {
            if rng.below(4) == 0 {
                0
            } else {
                rng.below(count / p.max(1) + 3)
            }
        })
        .collect();
    let mut order: Vec<usize> = (0..p).collect();
    for i in (1..p).rev() {
        order.swap(i, rng.below(i + 1));
    }
    let mut displs = vec![0; p];
    let mut at = rng.below(3);
    for &j in &order {
        displs[j] = at;
        at += counts[j] + rng.below(3);
    }
    (counts, displs)
}

/// Each rank's buffers (in place: the input inside `Out` as MPI_IN_PLACE puts it).
fn io_of(spec: &CallSpec, inputs: &[Vec<u8>], in_place: bool, eb: usize) -> Vec<RankIo> {
    (0..spec.p)
        .map(|r| {
            let s = spec.for_rank(r);
            let mut out = s.out_len().map(|n| vec![SENTINEL; n * eb]);
            let mut in_alias = None;
            if in_place {
                match spec.coll {
                    Collective::Reduce if r == spec.root => {
                        out = Some(inputs[r].clone());
                        in_alias = Some(0);
                    }
                    Collective::Allreduce | Collective::ReduceScatter => {
                        out = Some(inputs[r].clone());
                        in_alias = Some(0);
                    }
                    Collective::Allgatherv => {
                        let d = spec.displs[r];
                        out.as_mut().unwrap()[d * eb..(d + spec.counts[r]) * eb]
                            .copy_from_slice(&inputs[r]);
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
        .collect()
}

struct Case<'a> {
    layout: &'a Layout,
    coll: Collective,
    alg: Algorithm,
    commutative: bool,
    in_place: bool,
    count: usize,
    root: usize,
    seed: u64,
    /// How node steps run (`ShmAlways`: every one through the simulated node window).
    node: NodeSteps,
}

fn check(c: &Case) {
    let p = c.layout.p();
    let op: Arc<dyn SimOp> = if c.commutative {
        Arc::new(SumU64)
    } else {
        Arc::new(Affine)
    };
    let eb = op.elem_bytes();
    let mut rng = Rng(c.seed | 1);
    let (counts, displs) = shape(c.coll, p, c.count, &mut rng);
    let spec = CallSpec {
        coll: c.coll,
        p,
        rank: 0,
        root: c.root,
        counts: counts.clone(),
        displs: displs.clone(),
        commutative: c.commutative,
        elem_bytes: eb,
        seg_elems: 0,
        params: CostParams::default(),
        in_place: false,
    };
    let inputs: Vec<Vec<u8>> = (0..p)
        .map(|r| {
            (0..spec.for_rank(r).in_len())
                .flat_map(|_| elem(&*op, &mut rng))
                .collect()
        })
        .collect();
    let io = io_of(&spec, &inputs, c.in_place, eb);
    let aliased: Vec<bool> = io.iter().map(|x| x.in_alias.is_some()).collect();
    let has_out: Vec<bool> = io.iter().map(|x| x.out.is_some()).collect();
    let (layout, s0, alg, node) = (Arc::new(c.layout.clone()), spec.clone(), c.alg, c.node);
    // Inter-node parameters unlike the node's own, so that the two levels can pick differently.
    let inter = CostParams {
        alpha: 2e-5,
        beta: 8e-9,
        gamma: 2.5e-10,
    };
    let make = move |rank: usize| -> Result<Program, pcoll::Error> {
        let s = CallSpec {
            in_place: aliased[rank],
            ..s0.for_rank(rank)
        };
        let prog = build_hier(
            alg,
            &s,
            &Ctx {
                layout: &layout,
                inter,
                node,
            },
        )?;
        prog.validate(Some(s.in_len()), s.out_len().filter(|_| has_out[rank]))
            .map_err(|e| pcoll::Error::Internal(format!("rank {rank}: {e}")))?;
        Ok(prog)
    };
    let what = format!(
        "{} {} nodes={:?} comm={} in_place={} count={} root={} seed={} {:?}",
        c.coll, c.alg, c.layout.members, c.commutative, c.in_place, c.count, c.root, c.seed, c.node
    );
    let res =
        run_programs(p, Arc::new(make), op.clone(), io).unwrap_or_else(|e| panic!("{what}: {e}"));
    let total = if c.coll.reduces() {
        fold(&*op, &inputs)
    } else {
        vec![]
    };
    for (r, rr) in res.iter().enumerate() {
        let got = rr.out.as_deref();
        match c.coll {
            Collective::Reduce if r == c.root => {
                assert_eq!(got.unwrap(), &total[..], "{what}: root")
            }
            Collective::Reduce => {}
            Collective::Allreduce => assert_eq!(got.unwrap(), &total[..], "{what}: rank {r}"),
            Collective::ReduceScatter => {
                let lo: usize = counts[..r].iter().sum();
                let want = &total[lo * eb..(lo + counts[r]) * eb];
                assert_eq!(&got.unwrap()[..counts[r] * eb], want, "{what}: rank {r}");
            }
            Collective::Allgatherv => {
                let g = got.unwrap();
                let mut covered = vec![false; g.len() / eb];
                for j in 0..p {
                    let d = displs[j];
                    assert_eq!(
                        &g[d * eb..(d + counts[j]) * eb],
                        &inputs[j][..],
                        "{what}: block {j} at {r}"
                    );
                    covered[d..d + counts[j]].iter_mut().for_each(|x| *x = true);
                }
                for (i, cov) in covered.iter().enumerate() {
                    assert!(
                        *cov || g[i * eb..(i + 1) * eb].iter().all(|&b| b == SENTINEL),
                        "{what}: gap {i} written at {r}"
                    );
                }
            }
            // hier serves the four collectives above only.
            Collective::Bcast | Collective::Allgather | Collective::ReduceScatterBlock => {
                panic!("{what}: hier does not serve {}", c.coll)
            }
        }
    }
}

/// Every vector of node sizes with 1..=4 nodes of 1..=5 ranks.
fn all_sizes() -> Vec<Vec<usize>> {
    let mut out = vec![vec![]];
    let mut all = Vec::new();
    for _ in 0..4 {
        out = out
            .iter()
            .flat_map(|v: &Vec<usize>| (1..=5).map(move |s| [v.clone(), vec![s]].concat()))
            .collect();
        all.extend(out.clone());
    }
    all
}

const COUNTS: [usize; 6] = [0, 1, 3, 7, 13, 101];

/// The node steps a case runs with: point-to-point, and for the reductions (the ones with
/// node steps) every step through the (simulated) node window too.
fn node_steps(coll: Collective) -> Vec<NodeSteps> {
    if coll.reduces() {
        vec![NodeSteps::PointToPoint, NodeSteps::ShmAlways]
    } else {
        vec![NodeSteps::PointToPoint]
    }
}

#[test]
fn every_layout_up_to_4_nodes_of_5() {
    let layouts = all_sizes();
    assert_eq!(layouts.len(), 5 + 25 + 125 + 625);
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for (li, sizes) in layouts.iter().enumerate() {
        let layout = Layout::from_sizes(sizes);
        let p = layout.p();
        for (ci, &(coll, alg)) in COMBOS.iter().enumerate() {
            // Every op kind and in-place flag at every layout of up to 3 nodes; on 4 nodes
            // (625 layouts of up to 20 ranks, 85% of the test's 23 s) one of them per
            // layout and combination in turn. Count and root rotate.
            let variants = if sizes.len() < 4 {
                0..4
            } else {
                let v = (li + ci) % 4;
                v..v + 1
            };
            for variant in variants {
                let k = li * 31 + ci * 7 + variant;
                for node in node_steps(coll) {
                    check(&Case {
                        layout: &layout,
                        coll,
                        alg,
                        commutative: variant & 1 == 0,
                        in_place: variant & 2 != 0,
                        count: COUNTS[k % COUNTS.len()],
                        root: rng.below(p),
                        seed: rng.next(),
                        node,
                    });
                }
            }
        }
    }
}

#[test]
fn interleaved_layouts_commutative() {
    let mut rng = Rng(0x1234_5678_9ABC_DEF1);
    for round in 0..300 {
        let nodes = 1 + rng.below(4);
        let p = 1 + rng.below(12);
        let keys: Vec<usize> = (0..p).map(|_| rng.below(nodes)).collect();
        let layout = Layout::from_keys(&keys);
        for &(coll, alg) in &COMBOS {
            for node in node_steps(coll) {
                check(&Case {
                    layout: &layout,
                    coll,
                    alg,
                    commutative: true,
                    in_place: round % 2 == 1,
                    count: COUNTS[round % COUNTS.len()],
                    root: rng.below(p),
                    seed: rng.next(),
                    node,
                });
            }
        }
    }
}

#[test]
fn non_commutative_needs_consecutive_nodes() {
    let layout = Layout::from_keys(&[0, 1, 0, 1]);
    let spec = CallSpec {
        coll: Collective::Allreduce,
        p: 4,
        rank: 0,
        root: 0,
        counts: vec![8],
        displs: vec![],
        commutative: false,
        elem_bytes: 16,
        seg_elems: 0,
        params: CostParams::default(),
        in_place: false,
    };
    let ctx = Ctx {
        layout: &layout,
        inter: CostParams::default(),
        node: NodeSteps::PointToPoint,
    };
    for alg in [Algorithm::Hier, Algorithm::HierMl] {
        assert!(matches!(
            build_hier(alg, &spec, &ctx),
            Err(pcoll::Error::Unsupported(_))
        ));
    }
    let ok = Layout::from_sizes(&[2, 2]);
    let ctx = Ctx {
        layout: &ok,
        inter: CostParams::default(),
        node: NodeSteps::PointToPoint,
    };
    assert!(build_hier(Algorithm::HierMl, &spec, &ctx).is_ok());
}

/// One rank per node: `hier` is the inter-node algorithm alone (no node-local messages).
#[test]
fn one_rank_per_node_sends_only_between_nodes() {
    let layout = Layout::from_sizes(&[1, 1, 1, 1]);
    let ctx = Ctx {
        layout: &layout,
        inter: CostParams::default(),
        node: NodeSteps::PointToPoint,
    };
    for r in 0..4 {
        let spec = CallSpec {
            coll: Collective::Allreduce,
            p: 4,
            rank: r,
            root: 0,
            counts: vec![1000],
            displs: vec![],
            commutative: true,
            elem_bytes: 8,
            seg_elems: 0,
            params: CostParams::default(),
            in_place: false,
        };
        let prog = build_hier(Algorithm::Hier, &spec, &ctx).unwrap();
        let flat = pcoll::algo::hier::pick_sub(
            Collective::Allreduce,
            4,
            8000,
            true,
            &CostParams::default(),
        );
        assert_eq!(
            prog.sent_elems(),
            pcoll::algo::build(flat, &spec).unwrap().sent_elems()
        );
    }
}

/// With node windows (`NodeSteps::Shm`) and a message large enough for the model to price
/// `shm` below point-to-point inside a node, `hier`'s node-local reduce and broadcast are
/// node steps (no node-local message), the leaders' step stays point-to-point, and the
/// two-level model prices the same steps; below `shm`'s smallest priced size they stay
/// point-to-point.
#[test]
fn node_steps_through_the_window_where_the_model_says() {
    use pcoll::model::nodes::{node_aware_time, Levels};
    use pcoll::plan::Op;
    let layout = Layout::from_sizes(&[3, 3]);
    let intra = CostParams {
        alpha: 1e-6,
        beta: 2e-10,
        gamma: 1e-10,
    };
    let inter = CostParams {
        alpha: 2e-5,
        beta: 8e-9,
        gamma: 1e-10,
    };
    let spec = |r: usize, count: usize| CallSpec {
        coll: Collective::Allreduce,
        p: 6,
        rank: r,
        root: 0,
        counts: vec![count],
        displs: vec![],
        commutative: true,
        elem_bytes: 8,
        seg_elems: 0,
        params: intra,
        in_place: false,
    };
    let ctx = Ctx {
        layout: &layout,
        inter,
        node: NodeSteps::Shm,
    };
    let big = 1 << 17; // 1 MiB
    assert!(pcoll::algo::hier::node_shm_pays(3, big * 8));
    for r in 0..6 {
        let prog = build_hier(Algorithm::Hier, &spec(r, big), &ctx).unwrap();
        let nodes: Vec<&Op> = prog
            .ops
            .iter()
            .filter(|o| matches!(o, Op::Node { .. }))
            .collect();
        assert_eq!(nodes.len(), 2, "rank {r}: a node reduce and a node bcast");
        let local = layout.local_index(r);
        // Only leaders send (to the other node's leader).
        for o in &prog.ops {
            if let Op::Isend { peer, .. } = o {
                assert_eq!(local, 0, "rank {r} sends");
                assert_ne!(layout.node_of[*peer], layout.node_of[r]);
            }
        }
        // Below shm's smallest priced size: point-to-point inside the node.
        let small = build_hier(Algorithm::Hier, &spec(r, 64), &ctx).unwrap();
        assert!(!small.ops.iter().any(|o| matches!(o, Op::Node { .. })));
    }
    let shape = layout.shape();
    let price = |node_shm| {
        node_aware_time(
            Collective::Allreduce,
            Algorithm::Hier,
            &shape,
            big * 8,
            true,
            &Levels {
                intra,
                inter,
                node_shm,
            },
        )
        .total()
    };
    assert!(
        price(true) < price(false),
        "{} vs {}",
        price(true),
        price(false)
    );
}
