//! Segmented tree programs: one rank's part in a pipelined reduction or broadcast over any
//! tree, given as the rank's parent and children. The chain of [`super::pipeline`] (one
//! child per node) and the binary and Fibonacci trees of [`super::trees`] (two) run on it.
//!
//! **Reduce** ([`reduce`]): segment j of every child's partial is received into a segment
//! buffer (two per child: segments alternate between them), folded in the children's order,
//! and sent on as soon as the last child's segment is in. A node posts the receives of
//! segment j+1 before it sends segment j, so the send of j and the receives of j+1 overlap;
//! at most two sends are in flight. A leaf streams its input (`stream`). The tree's end may
//! forward each finished segment to the root (`forward_to`, non-commutative ops at a root the
//! rank-ordered tree cannot end at), which then receives it into `Out` (`final_from`).
//!
//! **Bcast** ([`bcast`]): segment j is received from the parent into `Out`, the receive of
//! j+1 posted, and j sent to each child in turn (two sends per child in flight at most).
//!
//! Request slots: receives `2k + j % 2` for child k, sends `S + j % 2` with
//! `S = 2·max(children, 1)` (bcast: `2 + 2k + j % 2`), final receives from `S + 2` on.

use crate::plan::{Buf, Piece, Program};

/// One rank's place in a segmented reduction tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReduceNode {
    /// Ranks whose partials this rank receives, in the order they fold.
    pub children: Vec<usize>,
    /// The children's partials cover ranks above this rank's own: `own ⊕ c₀ ⊕ c₁ …`; else
    /// (one child only) `c₀ ⊕ own`. Meaningless for commutative ops.
    pub child_higher: bool,
    /// Rank this rank sends its partials to: its parent, or at the tree's end the root it
    /// forwards the result to (None: the result stays here, in `Out`).
    pub out_peer: Option<usize>,
    /// Root only, when it is not the tree's end: receive each finished segment from here.
    pub final_from: Option<usize>,
    /// Final receives kept posted (the root's final segment j arrives about this many
    /// segments after it sent its own partial of j); at least 1.
    pub final_window: usize,
}

/// Receive slot of child k for segment j.
fn rq(k: usize, j: usize) -> u32 {
    (2 * k + j % 2) as u32
}

/// The segment buffer of `buf` for segment j (`b`: boundaries).
fn seg(buf: Buf, b: &[usize], j: usize) -> Piece {
    Piece::new(buf, b[j], b[j + 1] - b[j])
}

/// Append this rank's part of the segmented reduction of `In` (segments `b`) to `prog`.
pub fn reduce(prog: &mut Program, b: &[usize], node: &ReduceNode) {
    let m = b[b.len() - 1];
    if node.children.is_empty() {
        match node.out_peer {
            Some(to) => stream(prog, to, b, node),
            // A tree of one: the result is the input.
            None => prog.copy(Piece::new(Buf::In, 0, m), Piece::new(Buf::Out, 0, m)),
        }
        return;
    }
    relay(prog, b, node);
}

/// The request slot base of the sends (see the module docs).
fn send_base(node: &ReduceNode) -> usize {
    2 * node.children.len().max(1)
}

/// Final receives into `Out`, at most `final_window` posted: slot of segment j, and the
/// wait that frees it first.
struct Finals {
    from: usize,
    base: usize,
    window: usize,
}

impl Finals {
    fn of(node: &ReduceNode, nseg: usize) -> Option<Finals> {
        node.final_from.map(|from| Finals {
            from,
            base: send_base(node) + 2,
            window: node.final_window.clamp(1, nseg.max(1)),
        })
    }
    fn slot(&self, j: usize) -> u32 {
        (self.base + j % self.window) as u32
    }
    /// Post the final receive of segment j (its `In` has been read).
    fn post(&self, prog: &mut Program, b: &[usize], j: usize) {
        if j >= self.window {
            prog.wait(self.slot(j - self.window));
        }
        prog.irecv(self.slot(j), self.from, vec![seg(Buf::Out, b, j)]);
    }
    fn drain(&self, prog: &mut Program, nseg: usize) {
        for j in nseg.saturating_sub(self.window)..nseg {
            prog.wait(self.slot(j));
        }
    }
}

/// A leaf sends its input segment by segment to `to`, two sends in flight; a leaf that is the
/// root (final receives into `Out`, which may alias `In`) posts segment j's final receive once
/// the send of j has completed.
fn stream(prog: &mut Program, to: usize, b: &[usize], node: &ReduceNode) {
    let nseg = b.len() - 1;
    let sq = |j: usize| (send_base(node) + j % 2) as u32;
    let fin = Finals::of(node, nseg);
    let done = |prog: &mut Program, j: usize| {
        prog.wait(sq(j));
        if let Some(f) = &fin {
            f.post(prog, b, j);
        }
    };
    for j in 0..nseg {
        if j >= 2 {
            done(prog, j - 2);
        }
        prog.isend(sq(j), to, vec![seg(Buf::In, b, j)]);
    }
    for j in nseg.saturating_sub(2)..nseg {
        done(prog, j);
    }
    if let Some(f) = &fin {
        f.drain(prog, nseg);
    }
}

/// A node with children: receive each child's segment, fold, send on (or keep: the tree's
/// end), and at a root inside the tree receive the final segments.
fn relay(prog: &mut Program, b: &[usize], node: &ReduceNode) {
    let (m, nseg, nch) = (b[b.len() - 1], b.len() - 1, node.children.len());
    let sq = |j: usize| (send_base(node) + j % 2) as u32;
    let fin = Finals::of(node, nseg);
    let maxseg = b[1] - b[0];
    let tmp = prog.tmp(2 * nch * maxseg);
    // Child k's buffer for segment j.
    let slot = |k: usize, j: usize| Piece::new(tmp, ((j % 2) * nch + k) * maxseg, b[j + 1] - b[j]);
    let result_here = node.out_peer.is_none(); // the tree's end at the root: fold into Out
    if result_here {
        prog.copy(Piece::new(Buf::In, 0, m), Piece::new(Buf::Out, 0, m));
    }
    let mut send_pending = [false; 2];
    for (k, &c) in node.children.iter().enumerate() {
        prog.irecv(rq(k, 0), c, vec![slot(k, 0)]);
    }
    for j in 0..nseg {
        for k in 0..nch {
            prog.wait(rq(k, j));
            if result_here {
                // Out_j := Out_j ⊕ recv (children higher) or recv ⊕ Out_j.
                prog.reduce(slot(k, j), seg(Buf::Out, b, j), !node.child_higher);
            } else if k == 0 {
                // slot := own ⊕ recv (child higher) or recv ⊕ own.
                prog.reduce(seg(Buf::In, b, j), slot(0, j), node.child_higher);
            } else {
                // slot_k := (own ⊕ … ⊕ c_{k−1}) ⊕ c_k.
                prog.reduce(slot(k - 1, j), slot(k, j), true);
            }
        }
        if j + 1 < nseg {
            let e = (j + 1) % 2;
            if send_pending[e] {
                prog.wait(sq(j + 1)); // segment j−1 still in flight from these buffers
                send_pending[e] = false;
            }
            for (k, &c) in node.children.iter().enumerate() {
                prog.irecv(rq(k, j + 1), c, vec![slot(k, j + 1)]);
            }
        }
        if let Some(to) = node.out_peer {
            prog.isend(sq(j), to, vec![slot(nch - 1, j)]);
            send_pending[j % 2] = true;
        }
        if let Some(f) = &fin {
            // In_j (aliased to Out_j when in place) was read above: Out_j may be written now.
            f.post(prog, b, j);
        }
    }
    for (e, pending) in send_pending.into_iter().enumerate() {
        if pending {
            prog.wait((send_base(node) + e) as u32);
        }
    }
    if let Some(f) = &fin {
        f.drain(prog, nseg);
    }
}

/// Append this rank's part of the segmented broadcast of `Out` (segments `b`): receive each
/// segment from `parent` (None: this rank has the data), send it to `children` in order.
pub fn bcast(prog: &mut Program, b: &[usize], parent: Option<usize>, children: &[usize]) {
    let nseg = b.len() - 1;
    let sq = |k: usize, j: usize| (2 + 2 * k + j % 2) as u32;
    if let Some(f) = parent {
        prog.irecv(0, f, vec![seg(Buf::Out, b, 0)]);
    }
    for j in 0..nseg {
        if let Some(f) = parent {
            prog.wait((j % 2) as u32);
            if j + 1 < nseg {
                prog.irecv(((j + 1) % 2) as u32, f, vec![seg(Buf::Out, b, j + 1)]);
            }
        }
        for (k, &c) in children.iter().enumerate() {
            if j >= 2 {
                prog.wait(sq(k, j));
            }
            prog.isend(sq(k, j), c, vec![seg(Buf::Out, b, j)]);
        }
    }
    for k in 0..children.len() {
        for j in nseg.saturating_sub(2)..nseg {
            prog.wait(sq(k, j));
        }
    }
}
