//! How `hier`'s node-local reduce and broadcast steps run: point-to-point sub-programs, or
//! program ops ([`Op::Node`]) that the transport runs on the node's
//! shared window where the model prices that cheaper.

use super::{bcast, Ctx, Map, Step};
use crate::algo::{CallSpec, Collective};
use crate::error::Error;
use crate::plan::{Buf, NodeStep, Op, Piece, Program};

/// How `hier`'s node-local reduce and broadcast steps run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeSteps {
    /// pcoll's cheapest point-to-point algorithm for the node (no shared window).
    PointToPoint,
    /// Every node has a shared window (`shm`): a step runs through it
    /// ([`Op::Node`]) where [`node_shm_pays`] says so.
    Shm,
    /// Every step of more than one rank through the window (tests).
    ShmAlways,
}

impl NodeSteps {
    /// Does a node step of `coll` over `k` ranks of `bytes` run through the window?
    pub(super) fn shm(self, k: usize, bytes: usize) -> bool {
        match self {
            NodeSteps::PointToPoint => false,
            NodeSteps::Shm => node_shm_pays(k, bytes),
            NodeSteps::ShmAlways => k > 1,
        }
    }
}

/// Does a node step of `coll` (a reduce, broadcast, reduce_scatter or allgatherv) of `bytes`
/// over `k` ranks run through the node's shared window rather than point-to-point? From
/// `shm`'s smallest priced size ([`crate::model::shm::MIN_BYTES`]) up. Measured rather than
/// priced against the point-to-point algorithms, whose model inside a node is optimistic at
/// large sizes: on one node the tables take `shm` ahead of every point-to-point algorithm
/// from 4–16 KiB on all five MPIs, and on the emulated cluster (2 nodes × 2 ranks, MPICH,
/// session 14) `hier`'s reduce at 16 MiB measured 0.64x native with its node step through the
/// window against 0.97x with the point-to-point step the model had priced cheaper. The same
/// answer on every member of a node, and the model of `hier` ([`crate::model::nodes`])
/// prices the step as `shm` wherever this says so.
pub fn node_shm_pays(k: usize, bytes: usize) -> bool {
    k > 1 && bytes >= crate::model::shm::MIN_BYTES
}

/// A node-local reduce of `input` (`m` elements) to member `root` of `node` into `output`:
/// through the node's window where it pays, else as a point-to-point [`Step`].
pub(super) fn node_reduce(
    prog: &mut Program,
    s: &CallSpec,
    ctx: &Ctx,
    (node, root): (&[usize], usize),
    (input, output): ((Buf, usize), (Buf, usize)),
    (m, in_place): (usize, bool),
) -> Result<(), Error> {
    let bytes = m * s.elem_bytes;
    if ctx.node.shm(node.len(), bytes) {
        let me = node.iter().position(|&r| r == s.rank);
        let step = NodeStep::Reduce {
            root,
            input: Piece::new(input.0, input.1, m),
            output: (me == Some(root)).then(|| Piece::new(output.0, output.1, m)),
        };
        push(prog, node, step);
        return Ok(());
    }
    Step {
        coll: Collective::Reduce,
        ranks: node,
        root,
        counts: vec![m],
        displs: vec![],
        in_place,
        params: s.params,
    }
    .run(prog, s, Map { input, output })
}

/// A node-local broadcast of `data` from member 0 of `node` (this rank is member `li`):
/// through the node's window where it pays, else binomial point-to-point.
pub(super) fn node_bcast(
    prog: &mut Program,
    s: &CallSpec,
    ctx: &Ctx,
    (node, li): (&[usize], usize),
    data: Piece,
) {
    if ctx.node.shm(node.len(), data.len * s.elem_bytes) {
        push(prog, node, NodeStep::Bcast { root: 0, data });
        return;
    }
    bcast(prog, node, li, &[data]);
}

/// Append a node step over `node` (one round).
fn push(prog: &mut Program, node: &[usize], step: NodeStep) {
    prog.ops.push(Op::Node {
        members: node.to_vec(),
        step,
    });
    prog.rounds += 1;
}

/// A node-local reduce_scatter of `input` (the sum of `counts`) into this rank's block at
/// `output`: through the node's window where it pays, else as a point-to-point [`Step`].
pub(super) fn node_reduce_scatter(
    prog: &mut Program,
    s: &CallSpec,
    ctx: &Ctx,
    node: &[usize],
    counts: &[usize],
    (input, output): ((Buf, usize), (Buf, usize)),
) -> Result<(), Error> {
    let total: usize = counts.iter().sum();
    let me = node.iter().position(|&r| r == s.rank).unwrap_or(0);
    if ctx.node.shm(node.len(), total * s.elem_bytes) {
        let step = NodeStep::ReduceScatter {
            counts: counts.to_vec(),
            input: Piece::new(input.0, input.1, total),
            output: Piece::new(output.0, output.1, counts[me]),
        };
        push(prog, node, step);
        return Ok(());
    }
    Step {
        coll: Collective::ReduceScatter,
        ranks: node,
        root: 0,
        counts: counts.to_vec(),
        displs: vec![],
        in_place: false,
        params: s.params,
    }
    .run(prog, s, Map { input, output })
}

/// A node-local allgatherv in place in `Out` of the members' blocks (`counts` at `displs`):
/// through the node's window where it pays, else as a point-to-point [`Step`].
pub(super) fn node_allgatherv(
    prog: &mut Program,
    s: &CallSpec,
    ctx: &Ctx,
    node: &[usize],
    (counts, displs): (Vec<usize>, Vec<usize>),
) -> Result<(), Error> {
    let me = node.iter().position(|&r| r == s.rank).unwrap_or(0);
    let end = counts
        .iter()
        .zip(&displs)
        .map(|(c, d)| c + d)
        .max()
        .unwrap_or(0);
    let total: usize = counts.iter().sum();
    if ctx.node.shm(node.len(), total * s.elem_bytes) {
        let data = Piece::new(Buf::Out, 0, end);
        push(
            prog,
            node,
            NodeStep::Allgatherv {
                counts,
                displs,
                data,
            },
        );
        return Ok(());
    }
    let own = displs[me];
    Step {
        coll: Collective::Allgatherv,
        ranks: node,
        root: 0,
        counts,
        displs,
        in_place: true,
        params: s.params,
    }
    .run(
        prog,
        s,
        Map {
            input: (Buf::Out, own),
            output: (Buf::Out, 0),
        },
    )
}
