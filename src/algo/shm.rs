//! `shm`: reduce and allreduce through a shared-memory window of the communicator (every rank
//! on one node). This module is the plan, pure integers: which rank copies, reduces and copies
//! out which elements of which chunk, and in which order. The window, its counters and the
//! moving of bytes are in the C-ABI crate (`cdylib/src/shm/`).
//!
//! Per rank the window holds `S` slots (the library's setting, 2 or more), each an input cell
//! and an output cell of `cell_elems` elements. Chunk `c` (elements `[c·ce, min((c+1)·ce,
//! n))`) uses slot `c mod S`, so that copying chunk `c+1` in overlaps reducing chunk `c`:
//!
//! 1. every rank copies into its input cell the slices of its chunk that others read
//!    ([`Shape::copies_in`]); then it publishes `filled`;
//! 2. slice `j` of the chunk (a balanced split into [`Shape::nslices`] ≤ p slices) is reduced
//!    by rank `(root + j) mod p` ([`Shape::owner`]) over the inputs of [`Shape::fold`], in
//!    that order, into its output cell, or for a reduce's slice 0 (the root's own) straight
//!    into the root's receive buffer; it publishes `reduced`;
//! 3. the root (reduce) or every rank (allreduce) copies the slices from their owners' output
//!    cells into its receive buffer, and publishes `read` (a rank that copies nothing out
//!    publishes it after step 2).
//!
//! **Root last** ([`Shape::root_last`]: a reduce with a commutative op, or root 0): the root
//! copies nothing in; the owners of the other slices fold every input but the root's (a fold
//! of one input is the owner's copied-in input itself: [`Shape::partial_in_input`]), and the
//! root combines `x_root ⊕ partial` into its receive buffer as it copies out. At p = 2 the
//! root then streams 3m bytes (read two, write one), the one-core `z = x + y` bound, and waits
//! once per chunk.
//!
//! A rank writes slot `c mod S` only after every rank published `read` for chunk
//! `c - S`: the copy-out ranks read only after every owner reduced, and the owners reduce
//! only after every input was filled, so that chunk's cells are no longer read by anybody.
//!
//! Order: each slice is folded by one rank as `x_0 ⊕ (x_1 ⊕ (… ⊕ x_{p-1}))` for a
//! non-commutative op (canonical rank order, the same bracketing for every element; root last
//! only at root 0, as `x_0 ⊕ partial`), and every rank of an allreduce copies that one result:
//! bit-identical everywhere.
//!
//! Cost at p ranks for m bytes (memory bandwidth b of one core, the reductions of the slices
//! in parallel): copy-in `2m/b` per rank, reduction of a slice `(p+1)·(m/p)/b`, copy-out
//! `2m/b` at each copy-out rank (root last: `3m/b` at the root, no copy-in); no message, and
//! one cache-line handshake per chunk.

pub mod xfer;

/// A reduce that fits one cell runs in chunks of `1 / SPLIT` of a cell ([`chunk_elems`]).
pub const SPLIT: usize = 4;

/// Elements per chunk of a call of `count` elements over cells of `cell_elems` (the
/// [`Shape::cell_elems`] of the call; the same on every rank). With `split` (a reduce, not
/// an allreduce, or a bcast ([`xfer::Plan::chunked`]), on a window where it pays: the
/// caller's agreed rule) a call that fits one
/// cell and holds at least two quarter cells runs in chunks of a quarter cell: the root folds
/// chunk c while the others copy chunk c + 1 in, where one chunk made it wait for the whole
/// copy (forced `shm`, p = 2, 256 KiB: 16.0-19.6 -> 12.2-15.7 us on Open MPI 4.1, Intel MPI
/// and MPICH 5; at 512 KiB-1 MiB, which pipeline whole cells, quarter chunks measured even or
/// slower, as did an allreduce's slices of them at 128 KiB-1 MiB).
pub fn chunk_elems(count: usize, cell_elems: usize, split: bool) -> usize {
    let q = cell_elems / SPLIT;
    if split && q > 0 && (2 * q..=cell_elems).contains(&count) {
        q
    } else {
        cell_elems
    }
}

/// Fewest bytes a call's chunk must span for its cells to move within their slot
/// ([`place`]): below it a chunk is a few lines, which cost a core-to-core transfer whether
/// they are fresh or not.
pub const ROTATE_MIN: usize = 8 << 10;

/// Where chunk `g` (the window's chunk number, the same on every rank) sits: slot `g mod
/// slots`, at a byte offset within each of the slot's cells. A call whose chunks span at
/// most `span` bytes of a cell (a call smaller than a cell: `span` < `cell`) would otherwise
/// write the same first bytes of every slot, lines the reading core still holds after
/// `slots` calls (8 slots of 64 KiB calls: 512 KiB, within a core's L2), and a write to a line
/// another core holds waits for its invalidation. So each use of a slot by such a call takes
/// the next page-aligned piece of the cell: successive calls rotate over every slot's whole
/// cells, and a line is written again only after the ring's bytes (8 slots of 256 KiB:
/// 2 MiB) were. The slot's reuse rule (every rank has read chunk `g - slots`) covers every
/// piece of it, so any offset is safe; the offset keeps the chunk inside the cell
/// (`offset + span <= cell` for `span <= cell`).
pub fn place(g: u64, slots: usize, cell: usize, span: usize) -> (usize, usize) {
    let slots = slots.max(1);
    let slot = (g % slots as u64) as usize;
    if span < ROTATE_MIN || span >= cell {
        return (slot, 0);
    }
    let stride = span.div_ceil(4096) * 4096;
    let pieces = (cell / stride).max(1);
    let turn = g / slots as u64;
    (slot, (turn % pieces as u64) as usize * stride)
}

/// One call's shape, the same on every rank.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    pub p: usize,
    /// Root of a reduce (0 for allreduce).
    pub root: usize,
    /// Elements of the call.
    pub count: usize,
    /// Elements per cell (> 0).
    pub cell_elems: usize,
    /// Fewest elements worth a slice of their own (> 0): below it fewer ranks reduce.
    pub min_slice: usize,
    /// Allreduce: every rank copies the result out (reduce: the root only).
    pub all: bool,
    /// The op commutes.
    pub commutative: bool,
    /// Let a reduce's root combine last where it may ([`Shape::root_last`]).
    pub combine_at_root: bool,
    /// An allreduce every rank folds whole ([`Shape::replicated`]).
    pub replicate: bool,
}

impl Shape {
    /// Number of chunks (0 for count 0).
    pub fn chunks(&self) -> usize {
        self.count.div_ceil(self.cell_elems.max(1))
    }
    /// Elements of a cell the call's chunks fill at most (for [`place`]).
    pub fn span(&self) -> usize {
        self.count.min(self.cell_elems.max(1))
    }
    /// Elements `[lo, hi)` of chunk `c`.
    pub fn chunk(&self, c: usize) -> (usize, usize) {
        let ce = self.cell_elems.max(1);
        (c * ce, ((c + 1) * ce).min(self.count))
    }
    /// Slices a chunk of `len` elements is split into: one per `min_slice` elements, at most
    /// p, at least 1.
    pub fn nslices(&self, len: usize) -> usize {
        if self.replicated() {
            return 1;
        }
        (len / self.min_slice.max(1)).clamp(1, self.p.max(1))
    }
    /// Elements `[lo, hi)` of slice `j` of a chunk of `len` elements, relative to the chunk
    /// (balanced: the first `len mod n` slices have one element more).
    pub fn slice(&self, len: usize, j: usize) -> (usize, usize) {
        let n = self.nslices(len);
        let (q, r) = (len / n, len % n);
        let lo = j * q + j.min(r);
        (lo, lo + q + usize::from(j < r))
    }
    /// The rank that reduces slice `j`: the root reduces slice 0 (straight into its receive
    /// buffer for a reduce), the next ranks the next slices.
    pub fn owner(&self, j: usize) -> usize {
        (self.root + j) % self.p
    }
    /// The slice `rank` reduces in a chunk of `len` elements, if any.
    pub fn slice_of(&self, rank: usize, len: usize) -> Option<usize> {
        if self.replicated() {
            return Some(0);
        }
        let j = (rank + self.p - self.root) % self.p;
        (j < self.nslices(len)).then_some(j)
    }
    /// Does `rank` get the result (a reduce's root, every rank of an allreduce)?
    pub fn has_result(&self, rank: usize) -> bool {
        self.all || rank == self.root
    }
    /// Does `rank` copy the result out of the window?
    pub fn copies_out(&self, rank: usize) -> bool {
        (self.all && !self.replicated()) || rank == self.root
    }
    /// Is the slice `rank` reduces written straight into its receive buffer (a reduce's root)
    /// rather than into its output cell?
    pub fn direct(&self, rank: usize, j: usize) -> bool {
        self.replicated() || (!self.all && rank == self.root && j == 0)
    }
    /// An allreduce whose every rank folds the whole chunk from every rank's input cell
    /// straight into its receive buffer, in canonical rank order for any op (bit-identical
    /// everywhere): one wait per chunk instead of two (inputs filled, then the owners' slices
    /// reduced), no output cell and no copy-out. Every rank reads p - 1 inputs instead of
    /// 2 (p - 1) / p: chosen by the caller for small chunks and few ranks.
    pub fn replicated(&self) -> bool {
        self.replicate && self.all && self.p > 1
    }
    /// A reduce whose root combines `x_root ⊕ partial` as it copies out (module docs).
    pub fn root_last(&self) -> bool {
        self.combine_at_root && !self.all && self.p > 1 && (self.commutative || self.root == 0)
    }
    /// Does `rank` copy slice `j` of its input into its input cell? Every slice others read:
    /// all but its own — and its own too when the result goes into a buffer that holds that
    /// input (`MPI_IN_PLACE` at a reduce's root) with a non-commutative op (the right fold
    /// writes the result before it reads the own input), or when its own input is the whole
    /// partial the root reads (root last, p = 2). Root last: the root copies no other slice.
    pub fn copies_in(&self, rank: usize, j: usize, len: usize, in_place: bool) -> bool {
        if self.replicated() {
            return true;
        }
        if self.slice_of(rank, len) != Some(j) {
            return !(self.root_last() && rank == self.root);
        }
        (in_place && self.direct(rank, j) && !self.commutative) || self.partial_in_input(j)
    }
    /// The partial of slice `j` is its owner's copied-in input (root last, a fold of one
    /// input: p = 2), not its output cell.
    pub fn partial_in_input(&self, j: usize) -> bool {
        self.root_last() && j != 0 && self.p == 2
    }
    /// Does the root combine slice `j` as `x_root ⊕ partial` as it copies it out?
    pub fn combines(&self, j: usize) -> bool {
        self.root_last() && j != 0
    }
    /// The inputs the owner `me` of slice `j` folds: the result starts as a copy of input
    /// `first`, then `acc := x_k ⊕ acc` (`MPI_Reduce_local(in = x_k, inout = acc)`) for each
    /// `k` of `rest` in turn. Non-commutative: from the right, `x_0 ⊕ (x_1 ⊕ (… ⊕ x_{p-1}))`
    /// (root last: without `x_0`). Commutative: the owner's own input first (no copy when the
    /// result buffer holds it); replicated: the right fold for any op, so that every rank
    /// computes the same expression. Root last leaves out the root's input.
    pub fn fold(&self, me: usize, j: usize) -> (usize, Vec<usize>) {
        let skip = (self.combines(j)).then_some(self.root);
        let inputs = (0..self.p).filter(|&k| Some(k) != skip);
        if self.commutative && !self.replicated() {
            (me, inputs.filter(|&k| k != me).collect())
        } else {
            let mut v: Vec<usize> = inputs.collect();
            let first = v.pop().unwrap_or(me);
            v.reverse();
            (first, v)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(p: usize, root: usize, count: usize, ce: usize, all: bool) -> Shape {
        Shape {
            p,
            root,
            count,
            cell_elems: ce,
            min_slice: 3,
            all,
            commutative: false,
            combine_at_root: true,
            replicate: false,
        }
    }

    /// Only a call that may split, fits one cell and has two quarters of data or more is split.
    #[test]
    fn chunk_elems_splits_a_one_cell_reduce() {
        let ce = 1000;
        assert_eq!(chunk_elems(1000, ce, true), 250);
        assert_eq!(chunk_elems(500, ce, true), 250);
        assert_eq!(chunk_elems(499, ce, true), ce);
        assert_eq!(chunk_elems(1001, ce, true), ce);
        assert_eq!(chunk_elems(800, ce, false), ce);
        assert_eq!(chunk_elems(3, 3, true), 3);
        for count in 0..3000 {
            let c = chunk_elems(count, ce, true);
            assert!(c == ce || (c == ce / SPLIT && count.div_ceil(c) <= SPLIT));
        }
    }

    /// A chunk stays inside its cell; a small call's successive chunks rotate over every
    /// piece of every slot before a piece comes again; slot `g mod slots` as before.
    #[test]
    fn place_rotates_small_calls_over_the_ring() {
        let cell = 256 << 10;
        for slots in [2, 4, 8, 64] {
            for span in [
                0usize,
                1,
                64,
                4095,
                8 << 10,
                10_000,
                64 << 10,
                100_000,
                128 << 10,
                cell,
            ] {
                let stride = span.div_ceil(4096) * 4096;
                let pieces = if (ROTATE_MIN..cell).contains(&span) {
                    cell / stride
                } else {
                    1
                };
                let ring = slots * pieces;
                let mut seen = std::collections::HashSet::new();
                for g in 0..(3 * ring as u64) {
                    let (slot, off) = place(g, slots, cell, span);
                    assert_eq!(slot, (g % slots as u64) as usize);
                    assert!(off + span <= cell, "span {span} at {off}");
                    assert_eq!(off % 4096, 0);
                    if g < ring as u64 {
                        assert!(seen.insert((slot, off)), "g {g}: ({slot}, {off}) again");
                    } else {
                        assert_eq!((slot, off), place(g - ring as u64, slots, cell, span));
                    }
                }
            }
        }
        // 64 KiB calls on 8 slots of 256 KiB: 32 pieces, a line written again after 2 MiB.
        let offs: std::collections::HashSet<_> =
            (0..32).map(|g| place(g, 8, cell, 64 << 10)).collect();
        assert_eq!(offs.len(), 32);
    }

    #[test]
    fn chunks_and_slices_partition_the_call() {
        for p in 1..=9 {
            for count in [0, 1, 2, 5, 17, 64, 100] {
                for ce in [1, 4, 7, 64] {
                    let s = shape(p, p / 2, count, ce, false);
                    let mut next = 0;
                    for c in 0..s.chunks() {
                        let (lo, hi) = s.chunk(c);
                        assert_eq!(lo, next);
                        assert!(hi > lo && hi - lo <= ce);
                        let len = hi - lo;
                        let mut at = 0;
                        let mut owners = vec![];
                        for j in 0..s.nslices(len) {
                            let (a, b) = s.slice(len, j);
                            assert_eq!(a, at);
                            at = b;
                            owners.push(s.owner(j));
                            assert_eq!(s.slice_of(s.owner(j), len), Some(j));
                        }
                        assert_eq!(at, len);
                        owners.sort();
                        owners.dedup();
                        assert_eq!(owners.len(), s.nslices(len), "owners distinct");
                        assert_eq!(s.owner(0), s.root);
                        next = hi;
                    }
                    assert_eq!(next, count);
                }
            }
        }
    }

    /// The whole protocol run in phase order on sequences (op: concatenation, which is
    /// associative and not commutative): every element of the result must list the ranks in
    /// order, at the root of a reduce and on every rank of an allreduce, in place or not. An
    /// input a rank did not copy in reads as 999.
    fn simulate(s: Shape, in_place: bool) -> Vec<Vec<Vec<usize>>> {
        type Buf = Vec<Vec<usize>>;
        let p = s.p;
        let input = |r: usize| -> Buf { vec![vec![r]; s.count] };
        // The receive buffers (in place: the root's (reduce) or every rank's input).
        let mut recv: Vec<Buf> = (0..p)
            .map(|r| {
                if in_place && s.has_result(r) {
                    input(r)
                } else {
                    vec![vec![]; s.count]
                }
            })
            .collect();
        let op = |x: &Vec<usize>, acc: &mut Vec<usize>| {
            let mut v = x.clone();
            v.extend_from_slice(acc);
            *acc = v;
        };
        for c in 0..s.chunks() {
            let (lo, hi) = s.chunk(c);
            let len = hi - lo;
            let src = |r: usize, recv: &Vec<Buf>| -> Buf {
                if in_place && s.has_result(r) {
                    recv[r][lo..hi].to_vec()
                } else {
                    input(r)[lo..hi].to_vec()
                }
            };
            // 1. copy-in.
            let mut cell: Vec<Buf> = vec![vec![vec![999]; len]; p];
            for (r, cr) in cell.iter_mut().enumerate() {
                let own = src(r, &recv);
                for j in 0..s.nslices(len) {
                    if s.copies_in(r, j, len, in_place) {
                        let (a, b) = s.slice(len, j);
                        cr[a..b].clone_from_slice(&own[a..b]);
                    }
                }
            }
            // 2. reduce, slice by slice, on the live buffers (the result buffer may hold the
            // own input: what the fold writes first must not be read afterwards).
            let mut out: Vec<Buf> = vec![vec![vec![]; len]; p];
            for (me, j) in (0..p).filter_map(|r| s.slice_of(r, len).map(|j| (r, j))) {
                if s.partial_in_input(j) {
                    continue;
                }
                let (a, b) = s.slice(len, j);
                let own_cell = s.copies_in(me, j, len, in_place);
                let x = |k: usize, e: usize, recv: &Vec<Buf>| -> Vec<usize> {
                    if k == me && !own_cell {
                        src(me, recv)[e].clone()
                    } else {
                        cell[k][e].clone()
                    }
                };
                let direct = s.direct(me, j);
                let (first, rest) = s.fold(me, j);
                for e in a..b {
                    let v = x(first, e, &recv);
                    if direct {
                        recv[me][lo + e] = v;
                    } else {
                        out[me][e] = v;
                    }
                }
                for k in rest {
                    for e in a..b {
                        let v = x(k, e, &recv);
                        if direct {
                            op(&v, &mut recv[me][lo + e]);
                        } else {
                            op(&v, &mut out[me][e]);
                        }
                    }
                }
            }
            // 3. copy-out (root last: x_root ⊕ partial).
            for r in (0..p).filter(|&r| s.copies_out(r)) {
                let own = src(r, &recv);
                for j in 0..s.nslices(len) {
                    if s.direct(r, j) {
                        continue;
                    }
                    let (a, b) = s.slice(len, j);
                    let o = s.owner(j);
                    for e in a..b {
                        let mut v = if s.partial_in_input(j) {
                            cell[o][e].clone()
                        } else {
                            out[o][e].clone()
                        };
                        if s.combines(j) {
                            op(&own[e], &mut v);
                        }
                        recv[r][lo + e] = v;
                    }
                }
            }
        }
        recv
    }

    #[test]
    fn protocol_folds_in_rank_order() {
        for p in 1..=9 {
            for count in [0, 1, 4, 13, 40] {
                for ce in [1, 5, 16] {
                    for all in [false, true] {
                        for root in 0..p {
                            let s = shape(p, if all { 0 } else { root }, count, ce, all);
                            for (in_place, cr) in
                                [(false, false), (false, true), (true, false), (true, true)]
                            {
                                for rep in [false, true] {
                                    let s = Shape {
                                        combine_at_root: cr,
                                        replicate: rep,
                                        ..s
                                    };
                                    let recv = simulate(s, in_place);
                                    let want: Vec<usize> = (0..p).collect();
                                    for r in (0..p).filter(|&r| s.has_result(r)) {
                                        for (i, e) in recv[r].iter().enumerate() {
                                            assert_eq!(
                                                e, &want,
                                                "{s:?} rank {r} elem {i} ip {in_place}"
                                            );
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn commutative_fold_reads_every_input_once() {
        for p in 1..=9 {
            for (root, all) in (0..p).map(|r| (r, false)).chain([(0, true)]) {
                let s = shape(p, root, 20, 7, all);
                for (in_place, rep) in [(false, false), (true, false), (false, true), (true, true)]
                {
                    let t = Shape {
                        commutative: true,
                        replicate: rep,
                        ..s
                    };
                    let recv = simulate(t, in_place);
                    for r in (0..p).filter(|&r| s.has_result(r)) {
                        for e in &recv[r] {
                            // Replicated: the canonical order on every rank, whatever the op.
                            if t.replicated() {
                                assert_eq!(e, &(0..p).collect::<Vec<_>>(), "{t:?} ip {in_place}");
                            }
                            let mut v = e.clone();
                            v.sort();
                            assert_eq!(v, (0..p).collect::<Vec<_>>(), "{s:?} ip {in_place}");
                        }
                    }
                }
            }
        }
    }
}
