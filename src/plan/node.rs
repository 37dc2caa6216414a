//! Node steps: collective steps among the ranks of one node through the node's shared
//! window, as program ops ([`super::Op::Node`]). The transport runs them (`PmpiTransport` on
//! the node's window with `shm`'s protocol; the simulated transport by messages).

use super::{Buf, Piece};

/// What one node step does; every member runs the same step at the same point of its
/// program. Local indices (`root`, positions in `counts`) are positions among the members.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NodeStep {
    /// Every member gives `input`; member `root` gets `input_0 ⊕ … ⊕ input_{k−1}` in member
    /// order into `output` (None on the others). `input` may be `output` (in place).
    Reduce {
        root: usize,
        input: Piece,
        output: Option<Piece>,
    },
    /// `data` of member `root` to every member's `data`.
    Bcast { root: usize, data: Piece },
    /// Every member gives `input` (the sum of `counts` elements); member j gets block j of
    /// the member-order reduction (`counts[j]` elements, blocks side by side) into `output`.
    ReduceScatter {
        counts: Vec<usize>,
        input: Piece,
        output: Piece,
    },
    /// In place: member j's block lies at `data` + `displs[j]` (`counts[j]` elements) on every
    /// member; afterwards every member holds every block there.
    Allgatherv {
        counts: Vec<usize>,
        displs: Vec<usize>,
        data: Piece,
    },
}

impl NodeStep {
    /// Every piece the step reads or writes.
    pub fn pieces(&self) -> impl Iterator<Item = &Piece> {
        let (a, b): (&Piece, Option<&Piece>) = match self {
            NodeStep::Reduce { input, output, .. } => (input, output.as_ref()),
            NodeStep::Bcast { data, .. } | NodeStep::Allgatherv { data, .. } => (data, None),
            NodeStep::ReduceScatter { input, output, .. } => (input, Some(output)),
        };
        std::iter::once(a).chain(b)
    }
    /// The pieces it reads.
    pub fn reads(&self) -> &Piece {
        match self {
            NodeStep::Reduce { input, .. } | NodeStep::ReduceScatter { input, .. } => input,
            NodeStep::Bcast { data, .. } | NodeStep::Allgatherv { data, .. } => data,
        }
    }
    /// The piece it writes (None: a reduce's non-root).
    pub fn writes(&self) -> Option<&Piece> {
        match self {
            NodeStep::Reduce { output, .. } => output.as_ref(),
            NodeStep::ReduceScatter { output, .. } => Some(output),
            NodeStep::Bcast { data, .. } | NodeStep::Allgatherv { data, .. } => Some(data),
        }
    }
    /// The same step with every piece mapped by `f`.
    pub fn map(&self, f: impl Fn(&Piece) -> Piece) -> NodeStep {
        match self {
            NodeStep::Reduce {
                root,
                input,
                output,
            } => NodeStep::Reduce {
                root: *root,
                input: f(input),
                output: output.as_ref().map(&f),
            },
            NodeStep::Bcast { root, data } => NodeStep::Bcast {
                root: *root,
                data: f(data),
            },
            NodeStep::ReduceScatter {
                counts,
                input,
                output,
            } => NodeStep::ReduceScatter {
                counts: counts.clone(),
                input: f(input),
                output: f(output),
            },
            NodeStep::Allgatherv {
                counts,
                displs,
                data,
            } => NodeStep::Allgatherv {
                counts: counts.clone(),
                displs: displs.clone(),
                data: f(data),
            },
        }
    }
    /// Its own consistency over `members` (ranks in increasing order; pieces inside their
    /// buffers are checked by [`super::Program::validate`]).
    pub fn check(&self, members: &[usize]) -> Result<(), String> {
        let k = members.len();
        if members.windows(2).any(|w| w[0] >= w[1]) {
            return Err(format!("node step members out of order: {members:?}"));
        }
        if self.writes().is_some_and(|p| p.buf == Buf::In) {
            return Err(format!("node step writes into In: {self:?}"));
        }
        let ok = match self {
            NodeStep::Reduce {
                root,
                input,
                output,
            } => *root < k && output.is_none_or(|o| o.len == input.len),
            NodeStep::Bcast { root, .. } => *root < k,
            NodeStep::ReduceScatter {
                counts,
                input,
                output,
            } => {
                counts.len() == k && input.len == counts.iter().sum::<usize>() && {
                    // The output is this rank's block: some member's count.
                    counts.contains(&output.len)
                }
            }
            NodeStep::Allgatherv {
                counts,
                displs,
                data,
            } => {
                counts.len() == k
                    && displs.len() == k
                    && counts.iter().zip(displs).all(|(c, d)| c + d <= data.len)
            }
        };
        if ok {
            Ok(())
        } else {
            Err(format!("node step of {k} members: {self:?}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{Op, Program};

    fn prog(members: Vec<usize>, step: NodeStep) -> Program {
        Program {
            ops: vec![Op::Node { members, step }],
            tmp: vec![4],
            rounds: 1,
        }
    }

    #[test]
    fn validate_checks_node_steps() {
        let pc = |buf, off, len| Piece::new(buf, off, len);
        let ok = |p: Program| p.validate(Some(8), Some(8)).is_ok();
        let reduce = |root, output| NodeStep::Reduce {
            root,
            input: pc(Buf::In, 0, 4),
            output,
        };
        assert!(ok(prog(vec![1, 3], reduce(1, Some(pc(Buf::Out, 4, 4))))));
        assert!(ok(prog(vec![1, 3], reduce(0, None))));
        assert!(
            !ok(prog(vec![3, 1], reduce(0, None))),
            "members out of order"
        );
        assert!(
            !ok(prog(vec![1, 3], reduce(2, None))),
            "root beyond the members"
        );
        assert!(
            !ok(prog(vec![1, 3], reduce(0, Some(pc(Buf::In, 0, 4))))),
            "into In"
        );
        assert!(
            !ok(prog(vec![1, 3], reduce(0, Some(pc(Buf::Out, 0, 3))))),
            "lengths"
        );
        assert!(
            !ok(prog(vec![1, 3], reduce(0, Some(pc(Buf::Out, 6, 4))))),
            "beyond Out"
        );
        let rs = |counts: Vec<usize>, out| NodeStep::ReduceScatter {
            counts,
            input: pc(Buf::In, 0, 5),
            output: pc(Buf::Tmp(0), 0, out),
        };
        assert!(ok(prog(vec![0, 1], rs(vec![2, 3], 3))));
        assert!(
            !ok(prog(vec![0, 1], rs(vec![2, 2], 2))),
            "counts do not sum to input"
        );
        assert!(
            !ok(prog(vec![0, 1], rs(vec![2, 3], 4))),
            "no member's block"
        );
        let ag = |displs: Vec<usize>| NodeStep::Allgatherv {
            counts: vec![3, 2],
            displs,
            data: pc(Buf::Out, 0, 6),
        };
        assert!(ok(prog(vec![0, 2], ag(vec![3, 0]))));
        assert!(!ok(prog(vec![0, 2], ag(vec![4, 0]))), "a block beyond data");
        let bc = NodeStep::Bcast {
            root: 1,
            data: pc(Buf::Out, 2, 6),
        };
        assert!(ok(prog(vec![0, 2], bc.clone())));
        assert!(!ok(prog(vec![0], bc)), "root beyond one member");
    }

    #[test]
    fn map_moves_every_piece() {
        let step = NodeStep::ReduceScatter {
            counts: vec![1, 2],
            input: Piece::new(Buf::In, 0, 3),
            output: Piece::new(Buf::Out, 0, 2),
        };
        let moved = step.map(|p| Piece::new(Buf::Tmp(7), p.off + 10, p.len));
        assert!(moved.pieces().all(|p| p.buf == Buf::Tmp(7) && p.off == 10));
        assert_eq!(moved.reads().len, 3);
        assert_eq!(moved.writes().map(|p| p.len), Some(2));
    }
}
