//! `binary` and `fibonacci`: the tree report's reduction trees
//! (`tree-reductions-report.txt`; shapes in [`crate::sched::trees`]) as reduce, bcast and
//! allreduce programs, unsegmented (one segment: the report's algorithm 1) or pipelined over
//! segments ([`super::segtree`]).
//!
//! * **Reduce**: every node receives its children's partials in index order and sends
//!   `own ⊕ first ⊕ second` to its parent. Subtrees are rank ranges in preorder, so with the
//!   tree rooted at rank 0 every partial is the fold of a contiguous rank range in rank order:
//!   a non-commutative op runs on that tree, and rank 0 forwards each finished segment to a
//!   root other than 0 (one more hop, pipelined). A commutative op runs the tree on relative
//!   ranks `(rank − root) mod p`, rooted at the root.
//! * **Bcast**: the same tree on relative ranks, a node sending to the child whose subtree
//!   needs more rounds first (the Fibonacci tree's larger `F_{k−1}`).
//! * **Allreduce**: reduce to rank 0, then bcast from rank 0 on the same tree, with the same
//!   segments (any op: rank 0 is the tree's root).
//!
//! Cost (full duplex, n segments of s bytes, [`crate::model`]): reduce `(R + c(n−1))(α +
//! (β+γ)s)`, bcast `(B + c(n−1))(α + βs)`, R and B the unsegmented single-port rounds
//! (`F_k`: k, `T_k`: 2k), c = 2 for p ≥ 3 (two receives or two sends per segment at a node
//! with two children); n from `seg_elems` or the model's optimum. Each rank computes its
//! parent and children in O(log p). Memory: two segment buffers per child.

use super::segtree::{self, ReduceNode};
use super::util::segments_for;
use super::{Algorithm, CallSpec};
use crate::model::{Duplex, Scheme};
use crate::plan::{Buf, Piece, Program};
use crate::sched::blocks::split;
use crate::sched::trees::{self, serve_order, sub_bcast_rounds, Shape};

/// The tree of a tree algorithm (`Binary` or `Fibonacci`).
pub fn shape(alg: Algorithm) -> Shape {
    if alg == Algorithm::Binary {
        Shape::Binary
    } else {
        Shape::Fibonacci
    }
}

fn scheme(shape: Shape) -> Scheme {
    match shape {
        Shape::Binary => Scheme::Binary,
        Shape::Fibonacci => Scheme::Fibonacci,
    }
}

/// Segments for this call (identical on all ranks): `ceil(m / seg_elems)`, or the model's
/// optimum for the call's collective.
pub fn segments(s: &CallSpec, shape: Shape) -> usize {
    segments_for(s, s.coll, scheme(shape), Duplex::Full, usize::MAX)
}

/// Rounds promised for one phase: `R + c(n − 1)` (see the module docs).
fn phase_rounds(shape: Shape, p: usize, nseg: usize, bcast: bool) -> usize {
    let r = if bcast {
        trees::bcast_rounds(shape, p)
    } else {
        trees::reduce_rounds(shape, p)
    };
    let per_segment = if p >= 3 { 2 } else { 1 };
    r + per_segment * (nseg - 1)
}

/// `rank`'s place in the reduction to `root`: the tree is rooted at `root` (commutative) or
/// at rank 0 (rank order), which then forwards to the root.
fn reduce_node(shape: Shape, p: usize, rank: usize, root: usize, commutative: bool) -> ReduceNode {
    let troot = if commutative { root } else { 0 };
    let v = (rank + p - troot) % p;
    let abs = |u: usize| (u + troot) % p;
    let n = trees::node(shape, p, v);
    ReduceNode {
        children: n.kids().map(|c| abs(c.index)).collect(),
        child_higher: true,
        out_peer: n
            .parent
            .map(abs)
            .or((v == 0 && troot != root).then_some(root)),
        final_from: (rank == root && troot != root).then_some(troot),
        // The final segment j reaches the root about R rounds after its own partial of j left.
        final_window: trees::reduce_rounds(shape, p) + 2,
    }
}

/// Append the reduction of `In` to `root` (result in `Out` there) with `nseg` segments.
fn reduce_into(prog: &mut Program, s: &CallSpec, shape: Shape, root: usize, nseg: usize) {
    let node = reduce_node(shape, s.p, s.rank, root, s.commutative);
    segtree::reduce(prog, &split(s.counts[0], nseg), &node);
}

/// Append the broadcast of `Out` from `root` with `nseg` segments.
fn bcast_from(prog: &mut Program, s: &CallSpec, shape: Shape, root: usize, nseg: usize) {
    let p = s.p;
    let abs = |u: usize| (u + root) % p;
    let n = trees::node(shape, p, (s.rank + p - root) % p);
    let kids: Vec<trees::Sub> = n.kids().collect();
    let r: Vec<usize> = kids.iter().map(|c| sub_bcast_rounds(shape, c)).collect();
    let children: Vec<usize> = serve_order(&r)
        .into_iter()
        .map(|i| abs(kids[i].index))
        .collect();
    segtree::bcast(
        prog,
        &split(s.counts[0], nseg),
        n.parent.map(abs),
        &children,
    );
}

/// The program of a reduction without messages: one rank (the result is the input) or
/// nothing to reduce.
fn local(s: &CallSpec) -> Option<Program> {
    let m = s.counts[0];
    let mut prog = Program::new();
    if s.p == 1 {
        prog.copy(Piece::new(Buf::In, 0, m), Piece::new(Buf::Out, 0, m));
    }
    (s.p == 1 || m == 0).then_some(prog)
}

pub fn reduce(s: &CallSpec, shape: Shape) -> Program {
    if let Some(prog) = local(s) {
        return prog;
    }
    let (p, mut prog) = (s.p, Program::new());
    let nseg = segments(s, shape);
    reduce_into(&mut prog, s, shape, s.root, nseg);
    prog.rounds = phase_rounds(shape, p, nseg, false) + usize::from(!s.commutative && s.root != 0);
    prog
}

pub fn bcast(s: &CallSpec, shape: Shape) -> Program {
    let mut prog = Program::new();
    if s.p == 1 || s.counts[0] == 0 {
        return prog;
    }
    let nseg = segments(s, shape);
    bcast_from(&mut prog, s, shape, s.root, nseg);
    prog.rounds = phase_rounds(shape, s.p, nseg, true);
    prog
}

pub fn allreduce(s: &CallSpec, shape: Shape) -> Program {
    if let Some(prog) = local(s) {
        return prog;
    }
    let (p, mut prog) = (s.p, Program::new());
    let nseg = segments(s, shape);
    reduce_into(&mut prog, s, shape, 0, nseg);
    bcast_from(&mut prog, s, shape, 0, nseg);
    prog.rounds = phase_rounds(shape, p, nseg, false) + phase_rounds(shape, p, nseg, true);
    prog
}
