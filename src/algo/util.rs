//! Building blocks shared by several algorithms: binomial reduce/broadcast trees, linear
//! gather/scatter. Each appends ops to a program.

use super::{CallSpec, Collective};
use crate::model::{self, Duplex, Scheme};
use crate::plan::{Buf, Piece, Program};
use crate::sched::blocks::{ceil_log2, nsegs};

/// Segments of a call's `counts[0]` elements (identical on all ranks): `ceil(m / seg_elems)`,
/// or the model's optimum for `scheme` on `coll`; at least 1, at most `max` and m.
pub fn segments_for(
    s: &CallSpec,
    coll: Collective,
    scheme: Scheme,
    duplex: Duplex,
    max: usize,
) -> usize {
    let m = s.counts[0];
    if m == 0 {
        return 1;
    }
    let n = if s.seg_elems > 0 {
        nsegs(m, s.seg_elems)
    } else {
        let bytes = m * s.elem_bytes.max(1);
        model::best_segments(coll, scheme, s.p, bytes, &s.params, duplex)
    };
    n.clamp(1, m.min(max))
}

/// Binomial-tree reduction of `input` (this rank's contribution) to `root` (ALGORITHMS.md §1).
///
/// * `acc`: where the partial result accumulates on this rank when it has children, and
///   where the result lands at the root (normally `Out` at the root). `None`: allocate Tmp.
/// * Order: for non-commutative ops pass `commutative = false`; the tree is then rooted at 0,
///   every partial covers a contiguous rank range combined as lower ⊕ higher, and rank 0
///   forwards the result to `root` (one extra hop).
///
/// Returns the piece holding the result at the root (None elsewhere), and the rounds used.
pub fn binomial_reduce(
    prog: &mut Program,
    p: usize,
    rank: usize,
    root: usize,
    commutative: bool,
    input: Piece,
    acc_at_root: Piece,
) -> usize {
    let m = input.len;
    let troot = if commutative { root } else { 0 };
    let v = (rank + p - troot) % p;
    let mut acc: Option<Piece> = None; // None: the partial is still `input`
    let mut tmp: Option<Piece> = None;
    let mut mask = 1;
    let mut sent = false;
    while mask < p {
        if v & mask != 0 {
            let cur = acc.unwrap_or(input);
            prog.send((v - mask + troot) % p, vec![cur]);
            sent = true;
            break;
        }
        let src = v + mask;
        if src < p {
            let a = *acc.get_or_insert_with(|| {
                let a = if rank == troot && troot == root {
                    acc_at_root
                } else {
                    Piece::new(prog.tmp(m), 0, m)
                };
                prog.copy(input, a);
                a
            });
            let t = *tmp.get_or_insert_with(|| Piece::new(prog.tmp(m), 0, m));
            prog.recv((src + troot) % p, vec![t]);
            prog.reduce(t, a, false);
        }
        mask <<= 1;
    }
    let _ = sent;
    let mut rounds = ceil_log2(p);
    if troot != root {
        rounds += 1;
        if rank == troot {
            prog.send(root, vec![acc.unwrap_or(input)]);
        } else if rank == root {
            prog.recv(troot, vec![acc_at_root]);
        }
    } else if rank == root && acc.is_none() {
        // p == 1 or no children: the result is the input itself.
        prog.copy(input, acc_at_root);
    }
    rounds
}

/// Binomial-tree broadcast of `pieces` (valid at `root` before, everywhere after).
/// Returns the rounds used (ceil(log2 p)).
pub fn binomial_bcast(
    prog: &mut Program,
    p: usize,
    rank: usize,
    root: usize,
    pieces: &[Piece],
) -> usize {
    let v = (rank + p - root) % p;
    // Receive from the parent: v minus its lowest set bit.
    let mut mask = 1;
    while mask < p {
        if v & mask != 0 {
            prog.recv((v - mask + root) % p, pieces.to_vec());
            break;
        }
        mask <<= 1;
    }
    // Send to children v + m for m below the lowest set bit (largest subtree first).
    mask >>= 1;
    while mask > 0 {
        if v + mask < p {
            prog.send((v + mask + root) % p, pieces.to_vec());
        }
        mask >>= 1;
    }
    ceil_log2(p)
}

/// Linear scatterv from `root`: `blocks[j]` (valid at the root) goes to `dest[j]` at rank j.
/// At the root, `dest[root]` gets a local copy.
pub fn linear_scatter(
    prog: &mut Program,
    p: usize,
    rank: usize,
    root: usize,
    blocks: &[Piece],
    dest: Piece,
) {
    if rank == root {
        let mut req = 0;
        for j in (0..p).filter(|&j| j != root) {
            prog.isend(req, j, vec![blocks[j]]);
            req += 1;
        }
        prog.copy(blocks[root], dest);
        for r in 0..req {
            prog.wait(r);
        }
    } else {
        prog.recv(root, vec![dest]);
    }
}

/// Linear gatherv to `root`: rank j's `src` lands in `dest[j]` at the root.
pub fn linear_gather(
    prog: &mut Program,
    p: usize,
    rank: usize,
    root: usize,
    src: Piece,
    dest: &[Piece],
) {
    if rank == root {
        let mut req = 0;
        for j in (0..p).filter(|&j| j != root) {
            prog.irecv(req, j, vec![dest[j]]);
            req += 1;
        }
        prog.copy(src, dest[root]);
        for r in 0..req {
            prog.wait(r);
        }
    } else {
        prog.send(root, vec![src]);
    }
}

/// The pieces of `Out` that an allgatherv fills: block j at `displs[j]`, `counts[j]` long.
pub fn gatherv_pieces(counts: &[usize], displs: &[usize]) -> Vec<Piece> {
    counts
        .iter()
        .zip(displs)
        .map(|(&c, &d)| Piece::new(Buf::Out, d, c))
        .collect()
}

/// The pieces of a reduce_scatter input laid out contiguously: block j at the prefix sum.
pub fn prefix_pieces(buf: Buf, base: usize, counts: &[usize]) -> Vec<Piece> {
    let mut off = base;
    counts
        .iter()
        .map(|&c| {
            let pc = Piece::new(buf, off, c);
            off += c;
            pc
        })
        .collect()
}
