//! Segmented pipeline baselines (ALGORITHMS.md §2): the chain and the binary tree.
//!
//! Pure generators: a rank's position in the tree (parent, children, operand order). The
//! program builder ([`crate::algo::pipeline`]) turns a position into a segmented program.
//!
//! * **Chain**. The partial travels along the chain; every node combines its own input with
//!   the partial of its child and forwards it. Full-duplex time `(p + nseg − 2)(α + (β+γ)s)`,
//!   half-duplex `(p − 1 + 2(nseg − 1))(α + (β+γ)s)`, `s = m / nseg`.
//!   Order: a chain can only keep canonical rank order if every partial covers a contiguous
//!   rank range, so the chain must visit ranks monotonically and must end at rank 0 or p−1.
//!   Hence, for non-commutative ops: root = p−1 → chain 0 → 1 → … → p−1 (`recv ⊕ own`);
//!   otherwise chain p−1 → … → 1 → 0 (`own ⊕ recv`) and, if root ≠ 0, rank 0 forwards each
//!   finished segment to the root (one more pipeline stage: `+ (α + βs)` per the model,
//!   `p + nseg − 1` rounds). Commutative ops use the chain of relative ranks ending at the
//!   root (no extra stage).
//! * **Binary tree** (heap order on relative ranks, children `2v+1, 2v+2`; commutative ops —
//!   the in-order variant for non-commutative ops is not prototyped, §2). Full-duplex,
//!   complete tree `p = 2^N − 1`: `2(N + nseg − 2)(α + (β+γ)s)`.

/// One rank's place in a pipelined chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChainNode {
    /// Rank this rank receives partials from (None: head of the chain).
    pub child: Option<usize>,
    /// Rank this rank sends its partials to (None: chain end).
    pub parent: Option<usize>,
    /// The child's partial covers ranks above this rank: combine `own ⊕ recv`
    /// (else `recv ⊕ own`). Meaningless for commutative ops.
    pub child_higher: bool,
    /// Chain end only: forward each finished segment to this rank (the root).
    pub forward_to: Option<usize>,
    /// Root only (when it is not the chain end): receive each finished segment from here.
    pub final_from: Option<usize>,
}

/// The ranks in the order the partial travels (head first, chain end last). O(p); the
/// reference for [`chain_node`].
pub fn chain_order(p: usize, root: usize, commutative: bool) -> Vec<usize> {
    if commutative {
        (0..p).rev().map(|v| (v + root) % p).collect()
    } else if root == p - 1 && p > 1 {
        (0..p).collect()
    } else {
        (0..p).rev().collect()
    }
}

/// O(1) position of `rank` in the chain of [`chain_order`].
pub fn chain_node(p: usize, rank: usize, root: usize, commutative: bool) -> ChainNode {
    let mut n = ChainNode {
        child: None,
        parent: None,
        child_higher: true,
        forward_to: None,
        final_from: None,
    };
    if p <= 1 {
        return n;
    }
    if commutative {
        let v = (rank + p - root) % p;
        n.parent = (v > 0).then(|| (rank + p - 1) % p);
        n.child = (v + 1 < p).then(|| (rank + 1) % p);
    } else if root == p - 1 {
        n.parent = (rank + 1 < p).then_some(rank + 1);
        n.child = (rank > 0).then(|| rank - 1);
        n.child_higher = false;
    } else {
        n.parent = (rank > 0).then(|| rank - 1);
        n.child = (rank + 1 < p).then_some(rank + 1);
        if root != 0 {
            if rank == 0 {
                n.forward_to = Some(root);
            }
            if rank == root {
                n.final_from = Some(0);
            }
        }
    }
    n
}

/// Rounds of the segmented chain with `nseg` segments in the full-duplex round model:
/// `p + nseg − 2`, plus one for the forwarding hop.
pub fn chain_rounds(p: usize, root: usize, commutative: bool, nseg: usize) -> usize {
    if p <= 1 {
        return 0;
    }
    let hop = usize::from(!commutative && root != 0 && root != p - 1);
    p + nseg.max(1) - 2 + hop
}

/// Heap-ordered binary tree on relative ranks `v = (rank − root) mod p`: (parent, children).
pub fn binary_node(p: usize, rank: usize, root: usize) -> (Option<usize>, Vec<usize>) {
    let v = (rank + p - root) % p;
    let abs = |x: usize| (x + root) % p;
    let parent = (v > 0).then(|| abs((v - 1) / 2));
    let children = [2 * v + 1, 2 * v + 2]
        .into_iter()
        .filter(|&c| c < p)
        .map(abs)
        .collect();
    (parent, children)
}

/// Parent of every rank (None for the tree's end) of the chain — input for
/// [`crate::model::simulate_tree`].
pub fn chain_parents(p: usize, root: usize, commutative: bool) -> Vec<Option<usize>> {
    (0..p)
        .map(|r| chain_node(p, r, root, commutative).parent)
        .collect()
}

/// Parent of every rank of the heap-ordered binary tree.
pub fn binary_parents(p: usize, root: usize) -> Vec<Option<usize>> {
    (0..p).map(|r| binary_node(p, r, root).0).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chain_node_matches_order() {
        for p in 1..40 {
            for root in 0..p {
                for comm in [true, false] {
                    let order = chain_order(p, root, comm);
                    let mut seen = vec![false; p];
                    for (i, &r) in order.iter().enumerate() {
                        seen[r] = true;
                        let n = chain_node(p, r, root, comm);
                        assert_eq!(n.child, (i > 0).then(|| order[i - 1]));
                        assert_eq!(n.parent, order.get(i + 1).copied());
                        if !comm {
                            if let Some(c) = n.child {
                                assert_eq!(n.child_higher, c > r);
                            }
                        }
                    }
                    assert!(seen.iter().all(|&x| x));
                    let end = *order.last().unwrap();
                    if comm {
                        assert_eq!(end, root);
                    } else {
                        // monotone chain: canonical order
                        assert!(end == 0 || end == p - 1);
                        let fwd = chain_node(p, end, root, comm).forward_to;
                        assert_eq!(fwd, (end != root).then_some(root));
                    }
                }
            }
        }
    }

    #[test]
    fn binary_is_a_tree() {
        for p in 1..50 {
            for root in [0, p / 2, p - 1] {
                crate::sched::assert_tree(&binary_parents(p, root), root);
            }
        }
    }
}
