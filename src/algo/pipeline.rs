//! Segmented pipelined chain reduce (ALGORITHMS.md §2), order-preserving, any root,
//! in place at the root.
//!
//! Chain shape (see [`crate::sched::pipeline`]): commutative ops use the chain of relative
//! ranks ending at the root; non-commutative ops use the monotone chain ending at rank 0
//! (`own ⊕ recv`) or, for root = p−1, at p−1 (`recv ⊕ own`), so every partial covers a
//! contiguous rank range and one bracketing is used for every element; for any other root,
//! rank 0 forwards each finished segment to the root (one more pipeline stage).
//!
//! Execution (full-duplex overlap): a node posts the receive of segment j+1 before it sends
//! segment j, so the send of j and the receive of j+1 share a round; two receive and two
//! send requests at most are in flight, two segment buffers (the root inside the chain also keeps up to root+2 final
//! receives posted).
//!
//! Cost: `(p + nseg − 2)(α + (β+γ)s)` (+ `α + βs` for the forwarding hop), `s = ⌈m/nseg⌉`;
//! `nseg` from `s.seg_elems`, or (0) the model optimum ≈ `√(m(β+γ)/((p−2)α))` segments.
//! Memory: two segment buffers.

use super::{CallSpec, Collective};
use crate::model::{self, Duplex, Scheme};
use crate::plan::{Buf, Piece, Program};
use crate::sched::blocks::{nsegs, split};
use crate::sched::pipeline::{chain_node, chain_rounds, ChainNode};

/// Number of segments the pipeline uses for this call (identical on all ranks).
pub fn segments(s: &CallSpec) -> usize {
    let m = s.counts[0];
    if m == 0 {
        return 1;
    }
    let n = if s.seg_elems > 0 {
        nsegs(m, s.seg_elems)
    } else {
        model::best_segments(
            Collective::Reduce,
            Scheme::Pipeline,
            s.p,
            m * s.elem_bytes.max(1),
            &s.params,
            Duplex::Full,
        )
    };
    n.clamp(1, m)
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
    let b = split(m, nseg);
    let node = chain_node(p, rank, root, s.commutative);
    let out_peer = node.parent.or(node.forward_to);
    match node.child {
        // Head of the chain: stream the input, two sends in flight.
        None => stream_head(
            &mut prog,
            out_peer.expect("p > 1: the head has a parent"),
            &b,
        ),
        Some(child) => relay(&mut prog, s, &b, &node, child, out_peer),
    }
    prog
}

/// Request slots: receives 0/1, sends 2/3, final receives (root inside the chain) 4...
fn rq(j: usize) -> u32 {
    (j % 2) as u32
}
fn sq(j: usize) -> u32 {
    2 + (j % 2) as u32
}

/// The head of the chain sends its input segment by segment to `to`.
fn stream_head(prog: &mut Program, to: usize, b: &[usize]) {
    let nseg = b.len() - 1;
    for j in 0..nseg {
        if j >= 2 {
            prog.wait(sq(j - 2));
        }
        prog.isend(sq(j), to, vec![Piece::new(Buf::In, b[j], b[j + 1] - b[j])]);
    }
    for j in nseg.saturating_sub(2)..nseg {
        prog.wait(sq(j));
    }
}

/// A chain member with a child: receive each segment from `child`, reduce it with its own,
/// send it on to `out_peer` (or keep it: the chain end at the root), and at a root inside
/// the chain receive the final segments.
fn relay(
    prog: &mut Program,
    s: &CallSpec,
    b: &[usize],
    node: &ChainNode,
    child: usize,
    out_peer: Option<usize>,
) {
    let (m, nseg) = (s.counts[0], b.len() - 1);
    let seg = |buf: Buf, j: usize| Piece::new(buf, b[j], b[j + 1] - b[j]);
    let input = |j: usize| seg(Buf::In, j);
    let out = |j: usize| seg(Buf::Out, j);
    // The root's final segment j arrives about `root + 1` rounds after the root forwarded its
    // own partial of j, so it keeps `root + 2` final receives posted and only then waits for
    // the oldest one; waiting earlier would stall its chain sends (and the whole pipeline).
    let fwin = (s.root + 2).min(nseg);
    let fq = |j: usize| 4 + (j % fwin) as u32;
    let maxseg = b[1] - b[0];
    let tmp = prog.tmp(2 * maxseg);
    let slot = |j: usize| Piece::new(tmp, (j % 2) * maxseg, b[j + 1] - b[j]);
    let result_here = out_peer.is_none(); // chain end at the root: accumulate into Out
    if result_here {
        prog.copy(Piece::new(Buf::In, 0, m), Piece::new(Buf::Out, 0, m));
    }
    let mut send_pending = [false; 2];
    prog.irecv(rq(0), child, vec![slot(0)]);
    for j in 0..nseg {
        prog.wait(rq(j));
        if result_here {
            // Out_j := Out_j ⊕ recv (child higher) or recv ⊕ Out_j.
            prog.reduce(slot(j), out(j), !node.child_higher);
        } else {
            // slot := own ⊕ recv (child higher) or recv ⊕ own.
            prog.reduce(input(j), slot(j), node.child_higher);
        }
        if j + 1 < nseg {
            let k = (j + 1) % 2;
            if send_pending[k] {
                prog.wait(sq(j + 1)); // the slot of j+1 still holds segment j−1 in flight
                send_pending[k] = false;
            }
            prog.irecv(rq(j + 1), child, vec![slot(j + 1)]);
        }
        if let Some(to) = out_peer {
            prog.isend(sq(j), to, vec![slot(j)]);
            send_pending[j % 2] = true;
        }
        if let Some(from) = node.final_from {
            // In_j (aliased to Out_j when in place) was read above: Out_j may be written now.
            if j >= fwin {
                prog.wait(fq(j - fwin));
            }
            prog.irecv(fq(j), from, vec![out(j)]);
        }
    }
    for k in 0..2 {
        if send_pending[k] {
            prog.wait(2 + k as u32);
        }
    }
    if node.final_from.is_some() {
        for j in nseg.saturating_sub(fwin)..nseg {
            prog.wait(fq(j));
        }
    }
}
