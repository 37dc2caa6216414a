//! The tree report's reduction trees (`tree-reductions-report.txt`, §1–§2): the complete
//! binary tree `T_k` (a root with two `T_{k−1}`: 2^(k+1) − 1 nodes, depth k) and the
//! Fibonacci tree `F_k` (a root with `F_{k−2}` and `F_{k−1}`: fib(k+3) − 1 nodes, depth k),
//! with **rank-ordered subtrees**: nodes are numbered in preorder, so every subtree is a
//! contiguous range of indices that starts at its root, the first child's range (lower
//! indices) before the second child's. A node's partial result `own ⊕ first ⊕ second` is
//! therefore the fold of its range in index order, and a non-commutative op folds in
//! canonical rank order when index = rank (root 0).
//!
//! Which Fibonacci subtree comes first: as in the report's code (`fib_reduce.c`), the smaller
//! `F_{k−2}` takes the lower indices; it is also the one whose partial is ready first, so a
//! node receiving its children in index order is round-optimal (`F_k` reduces in k rounds,
//! one receive per round; `T_k` takes 2k).
//!
//! Any p: the smallest tree with at least p nodes, cut to its first p nodes in preorder (the
//! report's `r + 1 < p`, `r + left < p` tests): a child exists when its index is below p. Only
//! the subtrees along one root-to-leaf path are cut; every other subtree is whole.
//!
//! Everything a rank needs ([`node`]) takes O(log p): the order of the tree and one descent
//! from the root. [`parents`] (O(p)) is for the simulator, the drawings and the tests.

/// The two tree shapes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Shape {
    Binary,
    Fibonacci,
}

/// Orders are below this (a binary tree of order 63 or a Fibonacci tree of order 91 already
/// holds more than 2^63 nodes).
const MAXK: usize = 96;

/// One subtree: the index of its root, its order and how many of its nodes exist (below p).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sub {
    pub index: usize,
    pub order: usize,
    pub len: usize,
}

/// One node's place in the tree of p nodes (indices relative to the tree's root).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Node {
    /// The node itself: its subtree is `[index, index + len)`.
    pub me: Sub,
    pub parent: Option<usize>,
    /// Children in index order (`None`: absent).
    pub children: [Option<Sub>; 2],
    /// Edges from the root.
    pub depth: usize,
}

impl Node {
    /// The children that exist, in index order (the order their partials fold in).
    pub fn kids(&self) -> impl Iterator<Item = Sub> + '_ {
        self.children.iter().flatten().copied()
    }
}

impl Shape {
    pub const ALL: [Shape; 2] = [Shape::Binary, Shape::Fibonacci];

    pub fn name(self) -> &'static str {
        match self {
            Shape::Binary => "binary",
            Shape::Fibonacci => "fibonacci",
        }
    }

    /// Orders of the two subtrees of an order-k tree, in index order (`None`: empty).
    pub fn child_orders(self, k: usize) -> [Option<usize>; 2] {
        match self {
            Shape::Binary => [k.checked_sub(1), k.checked_sub(1)],
            Shape::Fibonacci => [k.checked_sub(2), k.checked_sub(1)],
        }
    }

    /// The sizes of the whole trees of orders `0..=k` (saturating; later entries 0).
    fn table(self, k: usize) -> [usize; MAXK] {
        let mut s = [0usize; MAXK];
        s[0] = 1;
        for i in 1..=k {
            let [a, b] = self.child_orders(i).map(|o| o.map_or(0, |o| s[o]));
            s[i] = a.saturating_add(b).saturating_add(1);
        }
        s
    }

    /// `(k, sizes)`: the order for p ranks (the smallest whose tree holds p nodes) and
    /// [`Shape::table`] up to it. O(log p).
    fn sizes(self, p: usize) -> (usize, [usize; MAXK]) {
        let mut s = [0usize; MAXK];
        s[0] = 1;
        let mut k = 0;
        while s[k] < p {
            k += 1;
            let [a, b] = self.child_orders(k).map(|o| o.map_or(0, |o| s[o]));
            s[k] = a.saturating_add(b).saturating_add(1);
        }
        (k, s)
    }

    /// Nodes of the whole tree of order k.
    pub fn size(self, k: usize) -> usize {
        self.table(k)[k]
    }

    /// The order of the tree that serves p ranks: the smallest with at least p nodes.
    pub fn order(self, p: usize) -> usize {
        self.sizes(p).0
    }
}

/// The place of index `v` in the tree of `p` nodes (`v < p`). O(log p).
pub fn node(shape: Shape, p: usize, v: usize) -> Node {
    debug_assert!(v < p.max(1));
    let (k, s) = shape.sizes(p);
    let mut me = Sub {
        index: 0,
        order: k,
        len: p.max(1),
    };
    let (mut parent, mut depth) = (None, 0);
    loop {
        let kids = children(shape, &s, me);
        if me.index == v {
            return Node {
                me,
                parent,
                children: kids,
                depth,
            };
        }
        // The child whose range holds v (the ranges tile [index + 1, index + len)).
        let next = kids
            .into_iter()
            .flatten()
            .find(|c| v >= c.index && v < c.index + c.len)
            .expect("v lies in one child's range");
        parent = Some(me.index);
        depth += 1;
        me = next;
    }
}

/// The children of subtree `t` that exist below p.
fn children(shape: Shape, s: &[usize; MAXK], t: Sub) -> [Option<Sub>; 2] {
    let mut at = t.index + 1;
    let end = t.index + t.len;
    shape.child_orders(t.order).map(|o| {
        let o = o?;
        let start = at;
        at = at.saturating_add(s[o]);
        (start < end).then(|| Sub {
            index: start,
            order: o,
            len: s[o].min(end - start),
        })
    })
}

/// Rounds of the unsegmented reduction of the tree of p nodes in the single-port round model
/// (one message received per round, children in index order, the report's algorithm 1):
/// `F_k`: k, `T_k`: 2k; a cut tree at most its whole tree's. O(log p).
pub fn reduce_rounds(shape: Shape, p: usize) -> usize {
    let (k, s) = shape.sizes(p);
    if p <= 1 {
        return 0;
    }
    rounds_of(shape, &s, k, p, false)
}

/// Rounds of the unsegmented broadcast (one message sent per round; a node sends to the child
/// whose subtree needs more rounds first, the first child on a tie): `F_k`: k, `T_k`: 2k.
pub fn bcast_rounds(shape: Shape, p: usize) -> usize {
    let (k, s) = shape.sizes(p);
    if p <= 1 {
        return 0;
    }
    rounds_of(shape, &s, k, p, true)
}

/// Rounds of a subtree of order k with `len` of its nodes (its first `len` in preorder):
/// reduce (children in index order) or bcast (the slower child first). Only one child of a
/// cut subtree is cut, so the recursion follows one path: O(k).
fn rounds_of(shape: Shape, s: &[usize; MAXK], k: usize, len: usize, bcast: bool) -> usize {
    let t = Sub {
        index: 0,
        order: k,
        len,
    };
    let r = children(shape, s, t).map(|c| {
        c.map(|c| {
            if c.len == s[c.order] {
                whole_rounds(shape, c.order)
            } else {
                rounds_of(shape, s, c.order, c.len, bcast)
            }
        })
    });
    let r: Vec<usize> = r.into_iter().flatten().collect();
    node_rounds(&r, bcast)
}

/// Rounds of a node whose children's subtrees take `r[i]` rounds (index order): a reduction
/// receives them in index order, one per round; a broadcast sends in [`serve_order`].
pub fn node_rounds(r: &[usize], bcast: bool) -> usize {
    if bcast {
        serve_order(r)
            .iter()
            .enumerate()
            .map(|(i, &j)| i + 1 + r[j])
            .max()
            .unwrap_or(0)
    } else {
        r.iter().fold(0, |t, &rc| t.max(rc) + 1)
    }
}

/// Rounds of the whole tree of order k (reduce and bcast alike).
pub fn whole_rounds(shape: Shape, k: usize) -> usize {
    match shape {
        Shape::Binary => 2 * k,
        Shape::Fibonacci => k,
    }
}

/// The order a broadcast serves children whose subtrees need `r[i]` rounds: the slower first,
/// index order on a tie (positions into `r`).
pub fn serve_order(r: &[usize]) -> Vec<usize> {
    let mut ix: Vec<usize> = (0..r.len()).collect();
    ix.sort_by_key(|&i| (std::cmp::Reverse(r[i]), i));
    ix
}

/// Broadcast rounds of a child subtree (for [`serve_order`] at a node). O(log p).
pub fn sub_bcast_rounds(shape: Shape, c: &Sub) -> usize {
    if c.len == shape.size(c.order) {
        return whole_rounds(shape, c.order);
    }
    rounds_of(shape, &shape.table(c.order), c.order, c.len, true)
}

/// Depth of the tree of p nodes (edges on its longest root-to-leaf path). O(log p).
pub fn depth(shape: Shape, p: usize) -> usize {
    // The deepest node of a preorder prefix is on the cut path or in a whole subtree beside
    // it; the whole tree's depth is reached as soon as the first leaf at depth k exists.
    if p <= 1 {
        return 0;
    }
    let (k, s) = shape.sizes(p);
    let mut t = Sub {
        index: 0,
        order: k,
        len: p,
    };
    let mut d = 0;
    let mut best = 0;
    loop {
        let kids = children(shape, &s, t);
        let mut cut = None;
        for c in kids.into_iter().flatten() {
            if c.len == s[c.order] {
                best = best.max(d + 1 + c.order);
            } else {
                cut = Some(c);
            }
        }
        match cut {
            Some(c) => {
                d += 1;
                best = best.max(d);
                t = c;
            }
            None => return best,
        }
    }
}

/// Parent of every rank in the tree rooted at `root` on relative indices
/// `v = (rank − root) mod p`. O(p log p): for simulations, drawings and tests, not for calls.
pub fn parents(shape: Shape, p: usize, root: usize) -> Vec<Option<usize>> {
    (0..p)
        .map(|r| {
            let v = (r + p - root) % p;
            node(shape, p, v).parent.map(|u| (u + root) % p)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tree built recursively, as the report defines it: `(parent, children)` per index.
    fn reference(shape: Shape, p: usize) -> Vec<(Option<usize>, Vec<usize>)> {
        fn build(
            shape: Shape,
            k: Option<usize>,
            at: &mut usize,
            parent: Option<usize>,
            out: &mut Vec<(Option<usize>, Vec<usize>)>,
        ) {
            let Some(k) = k else { return };
            let me = *at;
            *at += 1;
            out.push((parent, vec![]));
            if let Some(u) = parent {
                out[u].1.push(me);
            }
            for o in shape.child_orders(k) {
                build(shape, o, at, Some(me), out);
            }
        }
        let mut out = Vec::new();
        build(shape, Some(shape.order(p)), &mut 0, None, &mut out);
        // The preorder prefix of p nodes: drop the rest and their links.
        out.truncate(p);
        for e in out.iter_mut() {
            e.1.retain(|&c| c < p);
        }
        out
    }

    #[test]
    fn sizes_are_the_reports() {
        // T_k: 2^(k+1) − 1; F_k: fib(k+3) − 1.
        let fib = |n: usize| {
            let (mut a, mut b) = (0usize, 1usize);
            for _ in 0..n {
                (a, b) = (b, a + b);
            }
            a
        };
        for k in 0..40 {
            assert_eq!(Shape::Binary.size(k), (1usize << (k + 1)) - 1);
            assert_eq!(Shape::Fibonacci.size(k), fib(k + 3) - 1, "k={k}");
        }
        assert_eq!(Shape::Binary.order(usize::MAX), 63);
        assert!(Shape::Fibonacci.order(usize::MAX) < MAXK);
    }

    #[test]
    fn node_matches_the_recursive_tree() {
        for shape in Shape::ALL {
            for p in 1..200 {
                let want = reference(shape, p);
                for (v, (par, kids)) in want.iter().enumerate() {
                    let n = node(shape, p, v);
                    assert_eq!(n.parent, *par, "{shape:?} p={p} v={v}");
                    let got: Vec<usize> = n.kids().map(|c| c.index).collect();
                    assert_eq!(&got, kids, "{shape:?} p={p} v={v}");
                    // Ranges: contiguous, start at the node, children tile the rest.
                    let mut at = v + 1;
                    for c in n.kids() {
                        assert_eq!(c.index, at);
                        at += c.len;
                    }
                    assert_eq!(at, v + n.me.len, "{shape:?} p={p} v={v}");
                }
            }
        }
    }

    /// Rounds by brute force over the reference tree, against the O(log p) forms.
    #[test]
    fn rounds_and_depth() {
        for shape in Shape::ALL {
            for p in 1..300 {
                let t = reference(shape, p);
                fn red(t: &[(Option<usize>, Vec<usize>)], v: usize) -> usize {
                    t[v].1.iter().fold(0, |acc, &c| acc.max(red(t, c)) + 1)
                }
                fn bc(t: &[(Option<usize>, Vec<usize>)], v: usize) -> usize {
                    let r: Vec<usize> = t[v].1.iter().map(|&c| bc(t, c)).collect();
                    node_rounds(&r, true)
                }
                fn dep(t: &[(Option<usize>, Vec<usize>)], v: usize) -> usize {
                    t[v].1.iter().map(|&c| 1 + dep(t, c)).max().unwrap_or(0)
                }
                assert_eq!(reduce_rounds(shape, p), red(&t, 0), "{shape:?} p={p}");
                assert_eq!(bcast_rounds(shape, p), bc(&t, 0), "{shape:?} p={p}");
                assert_eq!(depth(shape, p), dep(&t, 0), "{shape:?} p={p}");
                let k = shape.order(p);
                if p == shape.size(k) {
                    assert_eq!(reduce_rounds(shape, p), whole_rounds(shape, k));
                    assert_eq!(bcast_rounds(shape, p), whole_rounds(shape, k));
                    assert_eq!(depth(shape, p), k);
                }
                for v in 0..p {
                    let n = node(shape, p, v);
                    for c in n.kids() {
                        assert_eq!(sub_bcast_rounds(shape, &c), bc(&t, c.index));
                    }
                }
            }
        }
    }

    #[test]
    fn parents_form_a_tree_at_any_root() {
        for shape in Shape::ALL {
            for p in 1..40 {
                for root in 0..p {
                    let par = parents(shape, p, root);
                    assert_eq!(par[root], None);
                    crate::sched::assert_tree(&par, root);
                }
            }
        }
    }
}
