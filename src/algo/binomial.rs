//! Binomial-tree algorithms (ALGORITHMS.md §1), and the simple compositions built on them:
//! allreduce = reduce to 0 + broadcast, reduce_scatter = reduce to 0 + scatterv,
//! allgatherv = gatherv to 0 + broadcast. All keep canonical rank order.
//!
//! Cost: reduce `ceil(log2 p)(α + βm + γm)` (+ `α + βm` for a non-commutative op at a root
//! other than 0); allreduce twice that without γ in the second half.

use super::util::{
    binomial_bcast, binomial_reduce, gatherv_pieces, linear_gather, linear_scatter, prefix_pieces,
};
use super::CallSpec;
use crate::plan::{Buf, Piece, Program};

pub fn reduce(s: &CallSpec) -> Program {
    let m = s.counts[0];
    let mut prog = Program::new();
    let input = Piece::new(Buf::In, 0, m);
    prog.rounds = binomial_reduce(
        &mut prog,
        s.p,
        s.rank,
        s.root,
        s.commutative,
        input,
        Piece::new(Buf::Out, 0, m),
    );
    prog
}

pub fn allreduce(s: &CallSpec) -> Program {
    let m = s.counts[0];
    let mut prog = Program::new();
    let out = Piece::new(Buf::Out, 0, m);
    let r1 = binomial_reduce(
        &mut prog,
        s.p,
        s.rank,
        0,
        s.commutative,
        Piece::new(Buf::In, 0, m),
        out,
    );
    let r2 = binomial_bcast(&mut prog, s.p, s.rank, 0, &[out]);
    prog.rounds = r1 + r2;
    prog
}

pub fn reduce_scatter(s: &CallSpec) -> Program {
    let total = s.total();
    let mut prog = Program::new();
    let acc = if s.rank == 0 {
        Piece::new(prog.tmp(total), 0, total)
    } else {
        Piece::new(Buf::In, 0, 0)
    };
    let r1 = binomial_reduce(
        &mut prog,
        s.p,
        s.rank,
        0,
        s.commutative,
        Piece::new(Buf::In, 0, total),
        acc,
    );
    let blocks = prefix_pieces(acc.buf, 0, &s.counts);
    linear_scatter(
        &mut prog,
        s.p,
        s.rank,
        0,
        &blocks,
        Piece::new(Buf::Out, 0, s.counts[s.rank]),
    );
    prog.rounds = r1 + 1;
    prog
}

pub fn allgatherv(s: &CallSpec) -> Program {
    let mut prog = Program::new();
    let dest = gatherv_pieces(&s.counts, &s.displs);
    linear_gather(
        &mut prog,
        s.p,
        s.rank,
        0,
        Piece::new(Buf::In, 0, s.counts[s.rank]),
        &dest,
    );
    let nonempty: Vec<Piece> = dest.into_iter().filter(|p| p.len > 0).collect();
    prog.rounds = 1 + binomial_bcast(&mut prog, s.p, s.rank, 0, &nonempty);
    prog
}
