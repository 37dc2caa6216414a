//! Ring algorithms: allgatherv (p−1 rounds, each rank forwards the block it got last),
//! reduce_scatter (p−1 rounds, commutative ops), allreduce = ring reduce_scatter over p
//! equal blocks + ring allgather.
//!
//! Cost: allgatherv `(p−1)α + (p−1)/p·βm` (equal counts); reduce_scatter
//! `(p−1)(α + (β+γ)m/p)`; allreduce `2(p−1)α + 2(p−1)/p·βm + (p−1)/p·γm`.

use super::util::{gatherv_pieces, prefix_pieces};
use super::CallSpec;
use crate::plan::{Buf, Piece, Program};
use crate::sched::blocks::split;

/// Ring allgather of `blocks` (block j valid at rank j before, everywhere after).
fn ring_allgather(prog: &mut Program, p: usize, rank: usize, blocks: &[Piece]) {
    let (right, left) = ((rank + 1) % p, (rank + p - 1) % p);
    for i in 0..p.saturating_sub(1) {
        let sb = blocks[(rank + p - i) % p];
        let rb = blocks[(rank + 2 * p - i - 1) % p];
        prog.sendrecv(right, vec![sb], left, vec![rb]);
    }
}

/// Ring reduce-scatter in place on `blocks` (all valid partials before; block j complete at
/// rank j after). `tmp` must hold the largest block.
fn ring_reduce_scatter(prog: &mut Program, p: usize, rank: usize, blocks: &[Piece], tmp: Buf) {
    let (right, left) = ((rank + 1) % p, (rank + p - 1) % p);
    for st in 0..p.saturating_sub(1) {
        let sb = blocks[(rank + 2 * p - st - 1) % p];
        let rb = blocks[(rank + 2 * p - st - 2) % p];
        let t = Piece::new(tmp, 0, rb.len);
        prog.sendrecv(right, vec![sb], left, vec![t]);
        prog.reduce(t, rb, true);
    }
}

pub fn allgatherv(s: &CallSpec) -> Program {
    let mut prog = Program::new();
    let blocks = gatherv_pieces(&s.counts, &s.displs);
    prog.copy(Piece::new(Buf::In, 0, s.counts[s.rank]), blocks[s.rank]);
    ring_allgather(&mut prog, s.p, s.rank, &blocks);
    prog.rounds = s.p - 1;
    prog
}

pub fn reduce_scatter(s: &CallSpec) -> Program {
    let total = s.total();
    let mut prog = Program::new();
    let w = prog.tmp(total);
    prog.copy(Piece::new(Buf::In, 0, total), Piece::new(w, 0, total));
    let blocks = prefix_pieces(w, 0, &s.counts);
    let tmp = prog.tmp(s.counts.iter().copied().max().unwrap_or(0));
    ring_reduce_scatter(&mut prog, s.p, s.rank, &blocks, tmp);
    prog.copy(blocks[s.rank], Piece::new(Buf::Out, 0, s.counts[s.rank]));
    prog.rounds = s.p - 1;
    prog
}

pub fn allreduce(s: &CallSpec) -> Program {
    let m = s.counts[0];
    let mut prog = Program::new();
    prog.copy(Piece::new(Buf::In, 0, m), Piece::new(Buf::Out, 0, m));
    let b = split(m, s.p);
    let blocks: Vec<Piece> = (0..s.p)
        .map(|j| Piece::new(Buf::Out, b[j], b[j + 1] - b[j]))
        .collect();
    let tmp = prog.tmp(b[1] - b[0]);
    ring_reduce_scatter(&mut prog, s.p, s.rank, &blocks, tmp);
    ring_allgather(&mut prog, s.p, s.rank, &blocks);
    prog.rounds = 2 * (s.p - 1);
    prog
}
