//! Segmented pipelined chain reduce (ALGORITHMS.md §2), order-preserving, any root,
//! in place at the root.
//!
//! Chain shape (see [`crate::sched::pipeline`]): commutative ops use the chain of relative
//! ranks ending at the root; non-commutative ops use the monotone chain ending at rank 0
//! (`own ⊕ recv`) or, for root = p−1, at p−1 (`recv ⊕ own`), so every partial covers a
//! contiguous rank range and one bracketing is used for every element; for any other root,
//! rank 0 forwards each finished segment to the root (one more pipeline stage).
//!
//! Execution ([`super::segtree`], full-duplex overlap): a node posts the receive of segment
//! j+1 before it sends segment j, so the send of j and the receive of j+1 share a round; two
//! receive and two send requests at most are in flight, two segment buffers (the root inside
//! the chain also keeps up to root+2 final receives posted).
//!
//! Cost: `(p + nseg − 2)(α + (β+γ)s)` (+ `α + βs` for the forwarding hop), `s = ⌈m/nseg⌉`;
//! `nseg` from `s.seg_elems`, or (0) the model optimum ≈ `√(m(β+γ)/((p−2)α))` segments.
//! Memory: two segment buffers.

use super::segtree::{self, ReduceNode};
use super::util::segments_for;
use super::{CallSpec, Collective};
use crate::model::{Duplex, Scheme};
use crate::plan::{Buf, Piece, Program};
use crate::sched::blocks::split;
use crate::sched::pipeline::{chain_node, chain_rounds};

/// Number of segments the pipeline uses for this call (identical on all ranks).
pub fn segments(s: &CallSpec) -> usize {
    segments_for(
        s,
        Collective::Reduce,
        Scheme::Pipeline,
        Duplex::Full,
        usize::MAX,
    )
}

pub fn reduce(s: &CallSpec) -> Program {
    let (p, rank, root, m) = (s.p, s.rank, s.root, s.counts[0]);
    let mut prog = Program::new();
    if p == 1 {
        prog.copy(Piece::new(Buf::In, 0, m), Piece::new(Buf::Out, 0, m));
        return prog;
    }
    if m == 0 {
        return prog;
    }
    let nseg = segments(s);
    prog.rounds = chain_rounds(p, root, s.commutative, nseg);
    let node = chain_node(p, rank, root, s.commutative);
    let tree = ReduceNode {
        children: node.child.into_iter().collect(),
        child_higher: node.child_higher,
        out_peer: node.parent.or(node.forward_to),
        final_from: node.final_from,
        // The root's final segment j arrives about `root + 1` rounds after the root forwarded
        // its own partial of j, so it keeps `root + 2` final receives posted and only then
        // waits for the oldest one; waiting earlier would stall its chain sends.
        final_window: root + 2,
    };
    segtree::reduce(&mut prog, &split(m, nseg), &tree);
    prog
}
