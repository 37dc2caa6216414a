//! Node-aware algorithms: `hier` (two levels: node-local step to a leader, an inter-node
//! algorithm among the leaders, node-local step back) and `hier_ml` (multi-leader: node-local
//! reduce_scatter, k concurrent inter-node reductions of 1/k of the vector among the ranks
//! with the same local index, node-local allgatherv or gather), over a [`Layout`].
//!
//! Each step is an ordinary pcoll program built for a virtual sub-communicator (a node, the
//! leaders, or the ranks with one local index) and *embedded* into the rank's program:
//! sub-ranks become communicator ranks, the sub-program's `In`/`Out` become pieces of the
//! call's buffers or scratch, its scratch buffers are appended. Every rank runs its steps in
//! the same order, so messages between any two ranks are posted in the same order on both
//! sides (one tag, MPI's non-overtaking rule). The sub-algorithms are pcoll's cheapest under
//! the cost model for the sub-communicator ([`pick_sub`]): `inter` parameters between nodes,
//! the call's own parameters inside one. Non-commutative ops: only for contiguous nodes (node
//! order is then rank order) with order-preserving sub-algorithms.

use super::util::{binomial_bcast, gatherv_pieces, linear_gather, linear_scatter};
use super::{build, Algorithm, CallSpec, Collective, CostParams};
use crate::error::Error;
use crate::nodes::Layout;
use crate::plan::{Buf, Op, Piece, Program};
use crate::sched::blocks::split;

mod node;
use node::{node_allgatherv, node_bcast, node_reduce, node_reduce_scatter};
pub use node::{node_shm_pays, NodeSteps};

/// The cheapest pcoll algorithm the model prices for a sub-communicator of `p` ranks (never
/// native or a node-aware one; binomial for p <= 1).
pub fn pick_sub(
    coll: Collective,
    p: usize,
    bytes: usize,
    commutative: bool,
    params: &CostParams,
) -> Algorithm {
    let mut best = (Algorithm::Binomial, f64::INFINITY);
    if p <= 1 {
        return best.0;
    }
    for &a in Algorithm::available(coll) {
        let flat = !matches!(
            a,
            Algorithm::Native
                | Algorithm::GreedyUni
                | Algorithm::Hier
                | Algorithm::HierMl
                | Algorithm::Shm
        );
        if flat && a.eligible(coll, commutative).is_ok() {
            let t = crate::model::predict(coll, a, p, bytes, params).time;
            if t < best.1 {
                best = (a, t);
            }
        }
    }
    best.0
}

/// Where one step's `In` and `Out` start in the rank's program.
#[derive(Clone, Copy)]
struct Map {
    input: (Buf, usize),
    output: (Buf, usize),
}

fn at(buf: Buf, off: usize) -> (Buf, usize) {
    (buf, off)
}

/// Append `sub` (a program over the sub-communicator `ranks`) to `prog`, its buffers placed
/// by `map` (None: its pieces are already this rank's own, only peers are renamed).
fn embed(prog: &mut Program, sub: &Program, ranks: &[usize], map: Option<Map>) {
    let base = prog.tmp.len() as u32;
    prog.tmp.extend_from_slice(&sub.tmp);
    let mp = |p: &Piece| -> Piece {
        let Some(map) = map else { return *p };
        let (buf, off) = match p.buf {
            Buf::In => map.input,
            Buf::Out => map.output,
            Buf::Tmp(k) => (Buf::Tmp(base + k), 0),
        };
        Piece::new(buf, off + p.off, p.len)
    };
    let mps = |v: &[Piece]| v.iter().map(mp).collect::<Vec<_>>();
    for op in &sub.ops {
        prog.ops.push(match op {
            Op::Irecv { req, peer, pieces } => Op::Irecv {
                req: *req,
                peer: ranks[*peer],
                pieces: mps(pieces),
            },
            Op::Isend { req, peer, pieces } => Op::Isend {
                req: *req,
                peer: ranks[*peer],
                pieces: mps(pieces),
            },
            Op::Wait { req } => Op::Wait { req: *req },
            Op::Reduce {
                src,
                dst,
                src_first,
            } => Op::Reduce {
                src: mp(src),
                dst: mp(dst),
                src_first: *src_first,
            },
            Op::Copy { src, dst } => Op::Copy {
                src: mp(src),
                dst: mp(dst),
            },
            Op::Node { members, step } => Op::Node {
                members: members.iter().map(|&q| ranks[q]).collect(),
                step: step.map(mp),
            },
        });
    }
    prog.rounds += sub.rounds;
}

/// One step: `coll` among `ranks` (this rank is `ranks[me]`), built with the cheapest
/// sub-algorithm and embedded with `map`.
struct Step<'a> {
    coll: Collective,
    ranks: &'a [usize],
    root: usize,
    counts: Vec<usize>,
    displs: Vec<usize>,
    in_place: bool,
    params: CostParams,
}

impl Step<'_> {
    fn run(self, prog: &mut Program, spec: &CallSpec, map: Map) -> Result<(), Error> {
        let me = self.ranks.iter().position(|&r| r == spec.rank);
        let Some(me) = me else {
            return Err(Error::Internal("hier: rank not in its step".into()));
        };
        let sub = CallSpec {
            coll: self.coll,
            p: self.ranks.len(),
            rank: me,
            root: self.root,
            counts: self.counts,
            displs: self.displs,
            commutative: spec.commutative,
            elem_bytes: spec.elem_bytes,
            seg_elems: 0,
            params: self.params,
            in_place: self.in_place,
        };
        let alg = pick_sub(sub.coll, sub.p, sub.bytes(), sub.commutative, &self.params);
        let p = build(alg, &sub)?;
        embed(prog, &p, self.ranks, Some(map));
        Ok(())
    }
}

/// What a node-aware builder reads besides the call.
pub struct Ctx<'a> {
    pub layout: &'a Layout,
    /// Cost parameters between nodes (the call's own `params` hold inside a node).
    pub inter: CostParams,
    /// How a node's reduce and broadcast steps run.
    pub node: NodeSteps,
}

/// Build `alg` (`Hier` or `HierMl`) for `spec` over `ctx.layout`.
pub fn build_hier(alg: Algorithm, spec: &CallSpec, ctx: &Ctx) -> Result<Program, Error> {
    alg.check(spec).map_err(Error::Unsupported)?;
    if ctx.layout.p() != spec.p {
        return Err(Error::Internal(
            "node layout of another communicator".into(),
        ));
    }
    if !ctx.layout.shape().order_ok(spec.commutative) {
        let no = alg.ineligible(spec.coll, super::Why::NodeOrder);
        return Err(Error::Unsupported(no.to_string()));
    }
    let mut prog = Program::new();
    match (spec.coll, alg) {
        (Collective::Reduce, Algorithm::Hier) => reduce(&mut prog, spec, ctx)?,
        (Collective::Allreduce, Algorithm::Hier) => allreduce(&mut prog, spec, ctx)?,
        (Collective::Reduce, Algorithm::HierMl) => ml(&mut prog, spec, ctx, true)?,
        (Collective::Allreduce, Algorithm::HierMl) => ml(&mut prog, spec, ctx, false)?,
        (Collective::ReduceScatter, Algorithm::Hier) => reduce_scatter(&mut prog, spec, ctx)?,
        (Collective::Allgatherv, Algorithm::Hier) => allgatherv(&mut prog, spec, ctx)?,
        (c, a) => return Err(Error::Unsupported(format!("{c} has no {a} algorithm"))),
    }
    Ok(prog)
}

/// This rank's node members, its node index and local index.
fn whereami(l: &Layout, rank: usize) -> (&[usize], usize, usize) {
    let n = l.node_of[rank];
    (&l.members[n], n, l.local_index(rank))
}

/// The leader of every node: local index 0, except `root` on its own node.
fn leaders(l: &Layout, root: Option<usize>) -> Vec<usize> {
    l.members
        .iter()
        .map(|m| match root {
            Some(r) if m.contains(&r) => r,
            _ => m[0],
        })
        .collect()
}

/// Reduce: node-local reduce to each node's leader (the root on its node), reduce among the
/// leaders to the root's node.
fn reduce(prog: &mut Program, s: &CallSpec, ctx: &Ctx) -> Result<(), Error> {
    let l = ctx.layout;
    let m = s.counts[0];
    let (node, n, _) = whereami(l, s.rank);
    let lead = leaders(l, Some(s.root));
    let is_root = s.rank == s.root;
    // Where this rank's node partial lives (for a leader).
    let mut acc = at(Buf::In, 0);
    let mut acc_in_place = s.in_place && is_root;
    if node.len() > 1 {
        acc = if is_root {
            at(Buf::Out, 0)
        } else if s.rank == lead[n] {
            at(prog.tmp(m), 0)
        } else {
            at(Buf::Tmp(u32::MAX), 0) // never read: only a leader has a partial
        };
        let local_root = node.iter().position(|&r| r == lead[n]).unwrap_or(0);
        node_reduce(
            prog,
            s,
            ctx,
            (node, local_root),
            (at(Buf::In, 0), acc),
            (m, s.in_place && is_root),
        )?;
        acc_in_place = is_root;
    }
    if s.rank == lead[n] && l.nodes() > 1 {
        Step {
            coll: Collective::Reduce,
            ranks: &lead,
            root: l.node_of[s.root],
            counts: vec![m],
            displs: vec![],
            in_place: acc_in_place,
            params: ctx.inter,
        }
        .run(
            prog,
            s,
            Map {
                input: acc,
                output: at(Buf::Out, 0),
            },
        )?;
    } else if l.nodes() == 1 && node.len() == 1 && is_root {
        prog.copy(Piece::new(Buf::In, 0, m), Piece::new(Buf::Out, 0, m));
    }
    Ok(())
}

/// Allreduce: node-local reduce to local rank 0, allreduce among the leaders, node-local
/// binomial broadcast.
fn allreduce(prog: &mut Program, s: &CallSpec, ctx: &Ctx) -> Result<(), Error> {
    let l = ctx.layout;
    let m = s.counts[0];
    let (node, _, li) = whereami(l, s.rank);
    let lead = leaders(l, None);
    let mut acc = (at(Buf::In, 0), s.in_place);
    if node.len() > 1 {
        node_reduce(
            prog,
            s,
            ctx,
            (node, 0),
            (at(Buf::In, 0), at(Buf::Out, 0)),
            (m, s.in_place && li == 0),
        )?;
        acc = (at(Buf::Out, 0), true);
    }
    if li == 0 {
        Step {
            coll: Collective::Allreduce,
            ranks: &lead,
            root: 0,
            counts: vec![m],
            displs: vec![],
            in_place: acc.1,
            params: ctx.inter,
        }
        .run(
            prog,
            s,
            Map {
                input: acc.0,
                output: at(Buf::Out, 0),
            },
        )?;
    }
    node_bcast(prog, s, ctx, (node, li), Piece::new(Buf::Out, 0, m));
    Ok(())
}

/// Binomial broadcast of `pieces` from local rank 0 over `node`.
fn bcast(prog: &mut Program, node: &[usize], li: usize, pieces: &[Piece]) {
    if node.len() <= 1 || pieces.is_empty() {
        return;
    }
    let mut sub = Program::new();
    sub.rounds = binomial_bcast(&mut sub, node.len(), li, 0, pieces);
    embed(prog, &sub, node, None);
}

/// Multi-leader reduce (`to_root`) or allreduce: node-local reduce_scatter of k = the smallest
/// node's size blocks, block j reduced (to the root's node) or allreduced among the ranks of
/// local index j, then gathered to the root or allgathered inside every node.
fn ml(prog: &mut Program, s: &CallSpec, ctx: &Ctx, to_root: bool) -> Result<(), Error> {
    let l = ctx.layout;
    let m = s.counts[0];
    let k = l.width();
    let b = split(m, k);
    let (node, _, j) = whereami(l, s.rank);
    let blk = |j: usize| {
        if j < k {
            (b[j], b[j + 1] - b[j])
        } else {
            (0, 0)
        }
    };
    let counts: Vec<usize> = (0..node.len()).map(|j| blk(j).1).collect();
    let (off, c) = blk(j);
    // Step 1: this rank's block j of the node's sum, in scratch (a one-rank node: In itself).
    let mut part = (at(Buf::In, 0), s.in_place && (!to_root || s.rank == s.root));
    if node.len() > 1 {
        let t = prog.tmp(c);
        node_reduce_scatter(prog, s, ctx, node, &counts, (at(Buf::In, 0), at(t, 0)))?;
        part = (at(t, 0), false);
    }
    if to_root {
        return ml_reduce_tail(prog, s, ctx, (part, off, c), &counts);
    }
    if j < k {
        Step {
            coll: Collective::Allreduce,
            ranks: &l.peers(j),
            root: 0,
            counts: vec![c],
            displs: vec![],
            in_place: part.1,
            params: crate::model::nodes::multi_leaders(&ctx.inter, k),
        }
        .run(
            prog,
            s,
            Map {
                input: part.0,
                output: at(Buf::Out, off),
            },
        )?;
    }
    if node.len() > 1 {
        let displs: Vec<usize> = (0..node.len()).map(|j| blk(j).0).collect();
        node_allgatherv(prog, s, ctx, node, (counts, displs))?;
    }
    Ok(())
}

/// The reduce half of [`ml`] after step 1: block j reduced among the ranks of local index j
/// to the root's node, then gathered to the root inside its node.
fn ml_reduce_tail(
    prog: &mut Program,
    s: &CallSpec,
    ctx: &Ctx,
    (part, off, c): (((Buf, usize), bool), usize, usize),
    counts: &[usize],
) -> Result<(), Error> {
    let l = ctx.layout;
    let (node, n, j) = whereami(l, s.rank);
    let rn = l.node_of[s.root];
    let k = l.width();
    // Where block j of the result lands on the root's node.
    let mut mine = Piece::new(Buf::In, 0, 0);
    if j < k {
        let dest = if s.rank == s.root {
            at(Buf::Out, off)
        } else if n == rn {
            at(prog.tmp(c), 0)
        } else {
            at(Buf::Tmp(u32::MAX), 0) // unbound: not on the root's node
        };
        Step {
            coll: Collective::Reduce,
            ranks: &l.peers(j),
            root: rn,
            counts: vec![c],
            displs: vec![],
            in_place: part.1 && s.rank == s.root,
            params: crate::model::nodes::multi_leaders(&ctx.inter, k),
        }
        .run(
            prog,
            s,
            Map {
                input: part.0,
                output: dest,
            },
        )?;
        mine = Piece::new(dest.0, dest.1, c);
    }
    if n == rn && node.len() > 1 {
        let b: Vec<usize> = counts
            .iter()
            .scan(0, |acc, &x| {
                let o = *acc;
                *acc += x;
                Some(o)
            })
            .collect();
        let dest: Vec<Piece> = (0..node.len())
            .map(|i| Piece::new(Buf::Out, b[i], counts[i]))
            .collect();
        let root_local = node.iter().position(|&r| r == s.root).unwrap_or(0);
        let mut sub = Program::new();
        linear_gather(&mut sub, node.len(), j, root_local, mine, &dest);
        sub.rounds = 1;
        embed(prog, &sub, node, None);
    }
    Ok(())
}

/// Reduce_scatter: node-local reduce of the whole vector to local rank 0, reduce_scatter
/// among the leaders of each node's blocks (rearranged by node first unless the nodes are
/// blocks of consecutive ranks), node-local linear scatter.
fn reduce_scatter(prog: &mut Program, s: &CallSpec, ctx: &Ctx) -> Result<(), Error> {
    let l = ctx.layout;
    let total = s.total();
    let (node, n, li) = whereami(l, s.rank);
    let lead = leaders(l, None);
    let mut acc = (at(Buf::In, 0), s.in_place);
    if node.len() > 1 {
        let t = if li == 0 {
            at(prog.tmp(total), 0)
        } else {
            at(Buf::Tmp(u32::MAX), 0)
        };
        node_reduce(prog, s, ctx, (node, 0), (at(Buf::In, 0), t), (total, false))?;
        acc = (t, false);
    }
    if li != 0 {
        scatter(prog, s, node, li, at(Buf::In, 0));
        return Ok(());
    }
    if !l.shape().contiguous {
        acc = (by_node(prog, s, l, acc.0), false);
    }
    let node_counts: Vec<usize> = l
        .members
        .iter()
        .map(|m| m.iter().map(|&q| s.counts[q]).sum())
        .collect();
    let mine = node_counts[n];
    let dest = if node.len() > 1 {
        at(prog.tmp(mine), 0)
    } else {
        at(Buf::Out, 0)
    };
    Step {
        coll: Collective::ReduceScatter,
        ranks: &lead,
        root: 0,
        counts: node_counts,
        displs: vec![],
        in_place: acc.1,
        params: ctx.inter,
    }
    .run(
        prog,
        s,
        Map {
            input: acc.0,
            output: dest,
        },
    )?;
    if node.len() > 1 {
        scatter(prog, s, node, 0, dest);
    }
    Ok(())
}

/// Node-local linear scatter from local rank 0 of each member's block (at the leader: side
/// by side from `from`, in rank order) into its `Out`.
fn scatter(prog: &mut Program, s: &CallSpec, node: &[usize], li: usize, from: (Buf, usize)) {
    let mut blocks = Vec::new();
    if li == 0 {
        let mut off = from.1;
        for &q in node {
            blocks.push(Piece::new(from.0, off, s.counts[q]));
            off += s.counts[q];
        }
    }
    let mut sub = Program::new();
    let own = Piece::new(Buf::Out, 0, s.counts[s.rank]);
    linear_scatter(&mut sub, node.len(), li, 0, &blocks, own);
    sub.rounds = 1;
    embed(prog, &sub, node, None);
}

/// The leader's reduced vector rearranged: node i's blocks side by side, nodes in order.
fn by_node(prog: &mut Program, s: &CallSpec, l: &Layout, acc: (Buf, usize)) -> (Buf, usize) {
    let start = prefix(&s.counts);
    let out = prog.tmp(s.total());
    let mut to = 0;
    for &q in l.members.iter().flatten() {
        let c = s.counts[q];
        prog.copy(
            Piece::new(acc.0, acc.1 + start[q], c),
            Piece::new(out, to, c),
        );
        to += c;
    }
    (out, 0)
}

fn prefix(counts: &[usize]) -> Vec<usize> {
    let mut acc = 0;
    counts
        .iter()
        .map(|&c| {
            let o = acc;
            acc += c;
            o
        })
        .collect()
}

/// Allgatherv: node-local linear gather to local rank 0 into a buffer of every block by node,
/// allgatherv of the nodes' parts among the leaders, the leader places every block, and a
/// node-local binomial broadcast of all blocks.
fn allgatherv(prog: &mut Program, s: &CallSpec, ctx: &Ctx) -> Result<(), Error> {
    let l = ctx.layout;
    let (node, n, li) = whereami(l, s.rank);
    let lead = leaders(l, None);
    let out = gatherv_pieces(&s.counts, &s.displs);
    let own = Piece::new(Buf::In, 0, s.counts[s.rank]);
    let mut sub = Program::new();
    if li != 0 {
        linear_gather(&mut sub, node.len(), li, 0, own, &[]);
        embed(prog, &sub, node, None);
        prog.rounds += 1;
    } else {
        let total = s.total();
        let all = prog.tmp(total);
        // Node i's blocks side by side, nodes in order: where each rank's block sits.
        let mut at_of = vec![0; s.p];
        let mut seg = Vec::with_capacity(l.nodes());
        let mut to = 0;
        for m in &l.members {
            seg.push(to);
            for &q in m {
                at_of[q] = to;
                to += s.counts[q];
            }
        }
        let dest: Vec<Piece> = node
            .iter()
            .map(|&q| Piece::new(all, at_of[q], s.counts[q]))
            .collect();
        linear_gather(&mut sub, node.len(), 0, 0, own, &dest);
        embed(prog, &sub, node, None);
        prog.rounds += 1;
        let node_counts: Vec<usize> = (0..l.nodes())
            .map(|i| l.members[i].iter().map(|&q| s.counts[q]).sum())
            .collect();
        Step {
            coll: Collective::Allgatherv,
            ranks: &lead,
            root: 0,
            counts: node_counts,
            displs: seg.clone(),
            in_place: true,
            params: ctx.inter,
        }
        .run(
            prog,
            s,
            Map {
                input: at(all, seg[n]),
                output: at(all, 0),
            },
        )?;
        for q in 0..s.p {
            prog.copy(Piece::new(all, at_of[q], s.counts[q]), out[q]);
        }
    }
    let nonempty: Vec<Piece> = out.into_iter().filter(|p| p.len > 0).collect();
    bcast(prog, node, li, &nonempty);
    Ok(())
}
