//! `shm` for bcast, allgather(v) and reduce_scatter(_block): the plan, pure integers, over the
//! same window and counters as reduce and allreduce ([`super`]). Only the input cells are
//! used: chunk `c` of a call (global number `g`) uses slot `g mod S` of every rank.
//!
//! Per chunk a rank runs [`Plan::steps`] in order:
//!
//! 1. [`Step::In`]: copy parts of its input into its input cell (after every rank published
//!    `read` for chunk `g - S`, so that nobody still reads the slot), then publish
//!    `filled`;
//! 2. [`Step::Own`], [`Step::Out`], [`Step::Fold`]: copy its own part, copy the parts of other
//!    ranks out of their input cells (each after that rank's `filled`), or reduce its own
//!    block from every rank's cell (after every rank's `filled`);
//! 3. publish `read` (every rank, every chunk, even with nothing to read: the counters stay
//!    the chunk count on every rank).
//!
//! What each collective does (m bytes in all; b the memory bandwidth of one core):
//!
//! * **bcast**: chunks of one cell over the buffer; the root copies the chunk in, every other
//!   rank copies it out (root `2m/b`, the others `2m/b` each, in parallel).
//! * **allgatherv** (in bytes, as pcoll serves it): chunk `c` is part `c` (one cell) of every
//!   rank's block; each rank copies its part in, then the parts of all other ranks out into
//!   their places, and its own (unless in place). Chunks: the largest block's.
//! * **reduce_scatter**: chunks of one cell over the whole input; each rank copies in the parts
//!   of its chunk that belong to other ranks' blocks (and, in place, its own: its result
//!   overwrites the start of the receive buffer, which holds other ranks' inputs), then
//!   reduces the part of its own block straight into its receive buffer, inputs folded as
//!   `x_0 ⊕ (x_1 ⊕ (… ⊕ x_{p-1}))` for a non-commutative op (canonical order; commutative: its
//!   own input first). The ranks reduce their blocks in parallel.

/// The collective a [`Plan`] serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Bcast { root: usize },
    Allgatherv,
    ReduceScatter { commutative: bool },
}

/// One call's plan, the same on every rank but for `in_place`. Offsets are elements (bytes
/// for bcast and allgatherv as pcoll serves them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plan<'a> {
    pub kind: Kind,
    pub p: usize,
    /// bcast: `[count]`; allgatherv and reduce_scatter: one count per rank.
    pub counts: &'a [usize],
    /// allgatherv: where each block goes in the receive buffer (others: unused).
    pub displs: &'a [usize],
    /// Elements per cell (> 0).
    pub cell_elems: usize,
    /// This rank's `MPI_IN_PLACE` (reduce_scatter: the input is the receive buffer).
    pub in_place: bool,
}

/// Where a fold reads an input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Src {
    /// Rank `rank`'s input cell at element `at`.
    Cell { rank: usize, at: usize },
    /// The rank's own input at element `at`.
    Mine { at: usize },
}

/// One step of a rank in a chunk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// Copy `len` elements of the own input from `src` into the own input cell at `cell`.
    In { src: usize, cell: usize, len: usize },
    /// Copy `len` elements of the own input from `src` to the own output at `dst`.
    Own { src: usize, dst: usize, len: usize },
    /// Copy `len` elements from rank `from`'s input cell at `cell` to the own output at `dst`.
    Out {
        from: usize,
        cell: usize,
        dst: usize,
        len: usize,
    },
    /// `len` elements of the output at `dst`: a copy of `first`, then `acc := x ⊕ acc` for
    /// each `x` of `rest` in turn (all sources advance with the element).
    Fold {
        dst: usize,
        len: usize,
        first: Src,
        rest: Vec<Src>,
    },
}

impl Step {
    /// Does the step write the rank's input cell (before `filled`)?
    pub fn fills(&self) -> bool {
        matches!(self, Step::In { .. })
    }
    /// The ranks whose cells the step reads (it waits for their `filled`); no allocation.
    pub fn reads(&self) -> impl Iterator<Item = usize> + '_ {
        let (one, fold): (Option<usize>, &[Src]) = match self {
            Step::In { .. } | Step::Own { .. } => (None, &[]),
            Step::Out { from, .. } => (Some(*from), &[]),
            Step::Fold { first, rest, .. } => (
                match first {
                    Src::Cell { rank, .. } => Some(*rank),
                    Src::Mine { .. } => None,
                },
                rest,
            ),
        };
        one.into_iter().chain(fold.iter().filter_map(|s| match s {
            Src::Cell { rank, .. } => Some(*rank),
            Src::Mine { .. } => None,
        }))
    }
}

impl Plan<'_> {
    /// Chunks of the call (0: nothing to do; every rank computes the same number).
    pub fn chunks(&self) -> usize {
        let ce = self.cell_elems.max(1);
        match self.kind {
            Kind::Bcast { .. } => self.counts.first().copied().unwrap_or(0).div_ceil(ce),
            Kind::Allgatherv => self
                .counts
                .iter()
                .map(|c| c.div_ceil(ce))
                .max()
                .unwrap_or(0),
            Kind::ReduceScatter { .. } => self.counts.iter().sum::<usize>().div_ceil(ce),
        }
    }

    /// Elements of a cell the call's chunks fill at most, on any rank (for
    /// [`super::place`]; every rank computes the same).
    pub fn span(&self) -> usize {
        self.extent().min(self.cell_elems.max(1))
    }

    /// Elements the chunks are cut from: the buffer (bcast), the largest block (allgatherv),
    /// the whole input (reduce_scatter).
    fn extent(&self) -> usize {
        match self.kind {
            Kind::Bcast { .. } => self.counts.first().copied().unwrap_or(0),
            Kind::Allgatherv => self.counts.iter().copied().max().unwrap_or(0),
            Kind::ReduceScatter { .. } => self.counts.iter().sum(),
        }
    }

    /// The plan with chunks of [`super::chunk_elems`] (`split`: quarter cells for a call
    /// that fits one cell; the same on every rank for the same `split`).
    pub fn chunked(self, split: bool) -> Self {
        Plan {
            cell_elems: super::chunk_elems(self.extent(), self.cell_elems, split),
            ..self
        }
    }

    /// Elements `[lo, hi)` of `[0, n)` that chunk `c` covers.
    fn part(&self, c: usize, n: usize) -> (usize, usize) {
        let ce = self.cell_elems.max(1);
        ((c * ce).min(n), ((c + 1) * ce).min(n))
    }

    /// Where each rank's block of a reduce_scatter starts in the input.
    fn starts(&self) -> Vec<usize> {
        let mut at = 0;
        self.counts
            .iter()
            .map(|&c| {
                at += c;
                at - c
            })
            .collect()
    }

    /// The steps of `rank` in chunk `c`, in order: every [`Step::In`] first.
    pub fn steps(&self, rank: usize, c: usize) -> Vec<Step> {
        match self.kind {
            Kind::Bcast { root } => self.bcast_steps(root, rank, c),
            Kind::Allgatherv => self.allgatherv_steps(rank, c),
            Kind::ReduceScatter { commutative } => self.reduce_scatter_steps(commutative, rank, c),
        }
    }

    fn bcast_steps(&self, root: usize, rank: usize, c: usize) -> Vec<Step> {
        let (lo, hi) = self.part(c, self.counts.first().copied().unwrap_or(0));
        if hi <= lo || self.p <= 1 {
            return vec![];
        }
        vec![if rank == root {
            Step::In {
                src: lo,
                cell: 0,
                len: hi - lo,
            }
        } else {
            Step::Out {
                from: root,
                cell: 0,
                dst: lo,
                len: hi - lo,
            }
        }]
    }

    fn allgatherv_steps(&self, rank: usize, c: usize) -> Vec<Step> {
        let mut v = vec![];
        let (lo, hi) = self.part(c, self.counts[rank]);
        if hi > lo && self.p > 1 {
            v.push(Step::In {
                src: lo,
                cell: 0,
                len: hi - lo,
            });
        }
        for k in 0..self.p {
            let (a, b) = self.part(c, self.counts[k]);
            if b == a {
                continue;
            }
            let dst = self.displs[k] + a;
            v.push(if k == rank {
                Step::Own {
                    src: a,
                    dst,
                    len: b - a,
                }
            } else {
                Step::Out {
                    from: k,
                    cell: 0,
                    dst,
                    len: b - a,
                }
            });
        }
        v
    }

    fn reduce_scatter_steps(&self, commutative: bool, rank: usize, c: usize) -> Vec<Step> {
        let p = self.p;
        let mut v = vec![];
        let n: usize = self.counts.iter().sum();
        let (lo, hi) = self.part(c, n);
        let starts = self.starts();
        let (mlo, mhi) = (starts[rank], starts[rank] + self.counts[rank]);
        // The own block's part of the chunk.
        let (olo, ohi) = (lo.max(mlo), hi.min(mhi));
        let own = ohi > olo;
        if p > 1 {
            // Copy in what others read: the chunk but the own part (in place: all).
            let ins = if self.in_place || !own {
                vec![(lo, hi)]
            } else {
                vec![(lo, olo), (ohi, hi)]
            };
            for (a, b) in ins.into_iter().filter(|(a, b)| b > a) {
                v.push(Step::In {
                    src: a,
                    cell: a - lo,
                    len: b - a,
                });
            }
        }
        if own {
            let src = |k: usize| -> Src {
                if k == rank && (p == 1 || !self.in_place) {
                    Src::Mine { at: olo }
                } else {
                    Src::Cell {
                        rank: k,
                        at: olo - lo,
                    }
                }
            };
            let (first, rest) = if commutative {
                (rank, (0..p).filter(|&k| k != rank).collect::<Vec<_>>())
            } else {
                (p - 1, (0..p - 1).rev().collect())
            };
            v.push(Step::Fold {
                dst: olo - mlo,
                len: ohi - olo,
                first: src(first),
                rest: rest.into_iter().map(src).collect(),
            });
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Val = Vec<usize>;

    /// Run the plan for every rank in phase order on symbolic data: element `i` of rank `r`'s
    /// input is `[r, i]`-coded (`r * 1_000_000 + i`); the op is concatenation (associative,
    /// not commutative). A cell element nobody copied in reads as a poison value. Returns
    /// every rank's output. Checks that no step reads outside a cell or a buffer.
    fn simulate(plan: &Plan, inputs: &[Vec<Val>], outputs: &mut [Vec<Val>]) {
        let p = plan.p;
        let ce = plan.cell_elems;
        let poison = vec![usize::MAX];
        for c in 0..plan.chunks() {
            let mut cells: Vec<Vec<Val>> = vec![vec![poison.clone(); ce]; p];
            let steps: Vec<Vec<Step>> = (0..p).map(|r| plan.steps(r, c)).collect();
            // In-steps come first.
            for s in &steps {
                let k = s.iter().take_while(|x| x.fills()).count();
                assert!(s[k..].iter().all(|x| !x.fills()), "{plan:?} chunk {c}");
            }
            // The input a rank reads: in place, its output buffer as it is now.
            let input = |r: usize, outputs: &[Vec<Val>]| -> Vec<Val> {
                if plan.in_place && matches!(plan.kind, Kind::ReduceScatter { .. }) {
                    outputs[r].clone()
                } else {
                    inputs[r].clone()
                }
            };
            for r in 0..p {
                let me = input(r, outputs);
                for s in steps[r].iter().filter(|x| x.fills()) {
                    let Step::In { src, cell, len } = s else {
                        unreachable!()
                    };
                    assert!(cell + len <= ce, "cell overflow {plan:?}");
                    cells[r][*cell..cell + len].clone_from_slice(&me[*src..src + len]);
                }
            }
            for r in 0..p {
                for s in steps[r].iter().filter(|x| !x.fills()) {
                    let me = input(r, outputs);
                    match s {
                        Step::In { .. } => unreachable!(),
                        Step::Own { src, dst, len } => {
                            let v = me[*src..src + len].to_vec();
                            outputs[r][*dst..dst + len].clone_from_slice(&v);
                        }
                        Step::Out {
                            from,
                            cell,
                            dst,
                            len,
                        } => {
                            assert!(cell + len <= ce);
                            let v = cells[*from][*cell..cell + len].to_vec();
                            outputs[r][*dst..dst + len].clone_from_slice(&v);
                        }
                        Step::Fold {
                            dst,
                            len,
                            first,
                            rest,
                        } => {
                            for e in 0..*len {
                                // Read every input of this element before writing it (as
                                // MPI_Reduce_local reads x and acc of one element, and the
                                // executor never reads an output element it wrote).
                                let get = |s: &Src, outputs: &[Vec<Val>]| -> Val {
                                    match *s {
                                        Src::Cell { rank, at } => {
                                            assert!(at + e < ce);
                                            cells[rank][at + e].clone()
                                        }
                                        Src::Mine { at } => input(r, outputs)[at + e].clone(),
                                    }
                                };
                                let mut acc = get(first, outputs);
                                for x in rest {
                                    let mut v = get(x, outputs);
                                    v.extend_from_slice(&acc);
                                    acc = v;
                                }
                                outputs[r][dst + e] = acc;
                            }
                        }
                    }
                }
            }
        }
    }

    fn code(r: usize, i: usize) -> Val {
        vec![r * 1_000_000 + i]
    }

    fn counts_for(p: usize, pat: usize) -> Vec<usize> {
        (0..p)
            .map(|k| match pat {
                0 => 0,
                1 => 7,
                2 => (k * 5 + 3) % 11,
                _ => {
                    if k == p / 2 {
                        23
                    } else {
                        1
                    }
                }
            })
            .collect()
    }

    #[test]
    fn bcast_every_root() {
        for p in 1..=9 {
            for n in [0, 1, 5, 16, 17, 40] {
                for (ce, split) in [(1, false), (4, false), (16, false), (16, true), (40, true)] {
                    for root in 0..p {
                        let counts = [n];
                        let plan = Plan {
                            kind: Kind::Bcast { root },
                            p,
                            counts: &counts,
                            displs: &[],
                            cell_elems: ce,
                            in_place: false,
                        }
                        .chunked(split);
                        if split && (ce / 2..=ce).contains(&n) {
                            assert_eq!(plan.chunks(), n.div_ceil(ce / 4), "quarter chunks");
                        }
                        let mut out: Vec<Vec<Val>> = (0..p)
                            .map(|r| (0..n).map(|i| code(r, i)).collect())
                            .collect();
                        let inputs = out.clone();
                        simulate(&plan, &inputs, &mut out);
                        for (r, o) in out.iter().enumerate() {
                            for (i, e) in o.iter().enumerate() {
                                assert_eq!(e, &code(root, i), "{plan:?} rank {r}");
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn allgatherv_places_every_block() {
        for p in 1..=9 {
            for pat in 0..4 {
                for ce in [1, 3, 8] {
                    for in_place in [false, true] {
                        let counts = counts_for(p, pat);
                        // Blocks in reverse order with gaps of 2.
                        let mut displs = vec![0; p];
                        let mut at = 0;
                        for k in (0..p).rev() {
                            displs[k] = at;
                            at += counts[k] + 2;
                        }
                        let plan = Plan {
                            kind: Kind::Allgatherv,
                            p,
                            counts: &counts,
                            displs: &displs,
                            cell_elems: ce,
                            in_place,
                        };
                        let gap = vec![7usize];
                        let mut out: Vec<Vec<Val>> = vec![vec![gap.clone(); at]; p];
                        let inputs: Vec<Vec<Val>> = (0..p)
                            .map(|r| (0..counts[r]).map(|i| code(r, i)).collect())
                            .collect();
                        if in_place {
                            for r in 0..p {
                                for i in 0..counts[r] {
                                    out[r][displs[r] + i] = code(r, i);
                                }
                            }
                        }
                        simulate(&plan, &inputs, &mut out);
                        for (r, o) in out.iter().enumerate() {
                            let mut want = vec![gap.clone(); at];
                            for k in 0..p {
                                for i in 0..counts[k] {
                                    want[displs[k] + i] = code(k, i);
                                }
                            }
                            assert_eq!(o, &want, "{plan:?} rank {r}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn reduce_scatter_folds_in_rank_order() {
        for p in 1..=9 {
            for pat in 0..4 {
                for ce in [1, 4, 9, 64] {
                    for in_place in [false, true] {
                        for commutative in [false, true] {
                            let counts = counts_for(p, pat);
                            let n: usize = counts.iter().sum();
                            let plan = Plan {
                                kind: Kind::ReduceScatter { commutative },
                                p,
                                counts: &counts,
                                displs: &[],
                                cell_elems: ce,
                                in_place,
                            };
                            let inputs: Vec<Vec<Val>> = (0..p)
                                .map(|r| (0..n).map(|i| code(r, i)).collect())
                                .collect();
                            let mut out: Vec<Vec<Val>> = if in_place {
                                inputs.clone()
                            } else {
                                vec![vec![vec![]; n]; p]
                            };
                            simulate(&plan, &inputs, &mut out);
                            let mut start = 0;
                            for r in 0..p {
                                for (i, e) in out[r][..counts[r]].iter().enumerate() {
                                    let want: Val = (0..p).map(|k| code(k, start + i)[0]).collect();
                                    if commutative {
                                        let (mut a, mut b) = (e.clone(), want.clone());
                                        a.sort();
                                        b.sort();
                                        assert_eq!(a, b, "{plan:?} rank {r} elem {i}");
                                    } else {
                                        assert_eq!(e, &want, "{plan:?} rank {r} elem {i}");
                                    }
                                }
                                start += counts[r];
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn every_rank_runs_the_same_chunks_and_waits_only_on_fillers() {
        let plan = Plan {
            kind: Kind::ReduceScatter { commutative: false },
            p: 4,
            counts: &[3, 0, 9, 2],
            displs: &[],
            cell_elems: 4,
            in_place: false,
        };
        assert_eq!(plan.chunks(), 4);
        for c in 0..plan.chunks() {
            let fills: Vec<bool> = (0..4)
                .map(|r| plan.steps(r, c).iter().any(Step::fills))
                .collect();
            for r in 0..4 {
                for s in plan.steps(r, c) {
                    for k in s.reads() {
                        assert!(fills[k], "rank {r} waits on {k}, which fills nothing");
                    }
                }
            }
        }
        let empty = Plan {
            counts: &[0; 4],
            ..plan
        };
        assert_eq!(empty.chunks(), 0);
    }
}
