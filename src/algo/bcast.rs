//! Broadcast programs (issue 15). The data lives in `Out` on every rank (the root's before the
//! call, everybody's after); `In` is not used. Any root (relative ranks `v = (rank − root) mod p`).
//!
//! * `binomial`: the binomial tree (ALGORITHMS.md §1), `⌈log2 p⌉(α + βm)`.
//! * `pipeline`: a segmented chain root → root+1 → … (ALGORITHMS.md §2 without the reduction):
//!   `(p + n − 2)(α + βm/n)`, best `n ≈ √((p−2)βm/α)`. A node posts the receive of segment
//!   j+1 before it sends segment j (two receives and two sends in flight at most).
//! * `scatter_allgather` (van de Geijn): binomial scatter of p blocks (block j belongs to
//!   relative rank j), then a ring allgather: `(⌈log2 p⌉ + p − 1)α + 2(p−1)/p·βm`.
//! * `circulant`: Träff's n-block broadcast (§5.6, [`super::circulant::bcast`]),
//!   `(n − 1 + ⌈log2 p⌉)(α + βm/n)`, best `n ≈ √((⌈log2 p⌉−1)βm/α)`.
//!
//! Messages whose pieces are empty are skipped on both sides (both compute the same lengths).

use super::util::binomial_bcast;
use super::{circulant, segtree, CallSpec};
use crate::plan::{Buf, Piece, Program};
use crate::sched::blocks::{ceil_log2, nsegs, split};

/// The whole buffer.
fn data(s: &CallSpec) -> Piece {
    Piece::new(Buf::Out, 0, s.counts[0])
}

/// Absolute rank of relative rank `v`.
fn abs(s: &CallSpec, v: usize) -> usize {
    (v + s.root) % s.p
}

/// This rank's relative rank.
fn rel(s: &CallSpec) -> usize {
    (s.rank + s.p - s.root) % s.p
}

pub fn binomial(s: &CallSpec) -> Program {
    let mut prog = Program::new();
    if s.p > 1 && s.counts[0] > 0 {
        prog.rounds = binomial_bcast(&mut prog, s.p, s.rank, s.root, &[data(s)]);
    }
    prog
}

/// Model-optimal segment count `round(√(stages·βm/α))` in `1..=m`, or `ceil(m / seg_elems)`.
fn model_segments(s: &CallSpec, stages: usize) -> usize {
    let m = s.counts[0];
    if s.seg_elems > 0 {
        return nsegs(m, s.seg_elems).clamp(1, m.max(1));
    }
    let bytes = (m * s.elem_bytes.max(1)) as f64;
    let x = (stages as f64 * s.params.beta * bytes / s.params.alpha).sqrt();
    let n = if x.is_finite() && x >= 1.0 {
        x.round().min(m as f64) as usize
    } else {
        1
    };
    n.clamp(1, m.max(1))
}

/// Segments of the chain broadcast (identical on all ranks).
pub fn pipeline_segments(s: &CallSpec) -> usize {
    model_segments(s, s.p.saturating_sub(2))
}

pub fn pipeline(s: &CallSpec) -> Program {
    let (p, m) = (s.p, s.counts[0]);
    let mut prog = Program::new();
    if p == 1 || m == 0 {
        return prog;
    }
    let nseg = pipeline_segments(s);
    let v = rel(s);
    let prev = (v > 0).then(|| abs(s, v - 1));
    let next: Vec<usize> = (v + 1 < p).then(|| abs(s, v + 1)).into_iter().collect();
    segtree::bcast(&mut prog, &split(m, nseg), prev, &next);
    prog.rounds = p + nseg - 2;
    prog
}

/// Blocks of relative ranks `[lo, hi)` (contiguous in the buffer: block j of relative rank j).
fn span(b: &[usize], lo: usize, hi: usize) -> Piece {
    Piece::new(Buf::Out, b[lo], b[hi] - b[lo])
}

/// Binomial scatter of the p blocks `b` from relative rank 0: relative rank v ends up with
/// the blocks of its subtree `[v, v + lowbit(v))`, in particular its own.
fn binomial_scatter(prog: &mut Program, s: &CallSpec, b: &[usize]) {
    let (p, v) = (s.p, rel(s));
    let mut mask = 1;
    while mask < p {
        if v & mask != 0 {
            let pc = span(b, v, (v + mask).min(p));
            if pc.len > 0 {
                prog.recv(abs(s, v - mask), vec![pc]);
            }
            break;
        }
        mask <<= 1;
    }
    mask >>= 1;
    while mask > 0 {
        if v + mask < p {
            let pc = span(b, v + mask, (v + 2 * mask).min(p));
            if pc.len > 0 {
                prog.send(abs(s, v + mask), vec![pc]);
            }
        }
        mask >>= 1;
    }
}

/// Ring allgather over relative ranks: in step i, relative rank v sends block `v − i` to
/// `v + 1` and receives block `v − i − 1` from `v − 1`.
fn ring_allgather(prog: &mut Program, s: &CallSpec, b: &[usize]) {
    let (p, v) = (s.p, rel(s));
    let (right, left) = (abs(s, v + 1), abs(s, v + p - 1));
    for i in 0..p - 1 {
        let sj = (v + p - i) % p;
        let rj = (v + 2 * p - i - 1) % p;
        let (sp, rp) = (span(b, sj, sj + 1), span(b, rj, rj + 1));
        if rp.len > 0 {
            prog.irecv(0, left, vec![rp]);
        }
        if sp.len > 0 {
            prog.isend(1, right, vec![sp]);
        }
        if rp.len > 0 {
            prog.wait(0);
        }
        if sp.len > 0 {
            prog.wait(1);
        }
    }
}

pub fn scatter_allgather(s: &CallSpec) -> Program {
    let (p, m) = (s.p, s.counts[0]);
    let mut prog = Program::new();
    if p == 1 || m == 0 {
        return prog;
    }
    let b = split(m, p);
    binomial_scatter(&mut prog, s, &b);
    ring_allgather(&mut prog, s, &b);
    prog.rounds = ceil_log2(p) + p - 1;
    prog
}

/// Blocks of the circulant broadcast (identical on all ranks).
pub fn circulant_blocks(s: &CallSpec) -> usize {
    model_segments(s, ceil_log2(s.p).saturating_sub(1))
}

pub fn circulant(s: &CallSpec) -> Program {
    let mut prog = Program::new();
    if s.p > 1 && s.counts[0] > 0 {
        let n = circulant_blocks(s);
        prog.rounds = circulant::bcast(&mut prog, s.p, s.rank, s.root, n, data(s));
    }
    prog
}
