//! Butterfly programs (Rabenseifner; Rabenseifner–Träff 3-2 / 2-1 elimination for p ≠ 2^n),
//! ALGORITHMS.md §6 and the schedules in [`crate::sched::butterfly`]. All four collectives
//! keep canonical rank order with one bracketing for every element, so they serve
//! non-commutative ops; allreduce results are bit-identical on all ranks.
//!
//! Notation: `q = ⌈log2 p⌉`, `n = ⌊log2 p⌋`, `P = 2^n`, m elements (β, γ per element here).
//!
//! * **allreduce**, chosen per call by the α-β-γ model with `s.params` (identical on all ranks):
//!   - latency-optimised (§6.4): `(q + 1)(α + βm) + qγm` (p = 2^n: `n(α + βm + γm)`),
//!     full-vector recursive doubling after a 2-1 pre-step; scratch m.
//!   - bandwidth-optimised (§6.1 + §6.2): `2qα + 2(1.5 − 1/P)βm + (1.5 − 1/P)γm`
//!     (p = 2^n: `2nα + 2(1 − 1/p)βm + (1 − 1/p)γm`); scratch ⌈m/2⌉.
//! * **reduce** (§6.1 + §6.3), any root: `(q + n)α + (2.5 − 2/P)βm + (1.5 − 1/P)γm` with the
//!   root a survivor, `+ α` for an eliminated root (p = 2^n: `2nα + 2(1 − 1/p)βm +
//!   (1 − 1/p)γm`). The root works in `Out` (in place when `In` aliases it); other ranks use
//!   a scratch copy of m plus ⌈m/2⌉.
//! * **reduce_scatter** (irregular recvcounts, zeros allowed): the §6.1 reduction phase on
//!   the whole vector (m = Σ recvcounts), after which the survivors' final blocks partition
//!   `[0, m)` and hold the complete canonical result; then one redistribution step in which
//!   every survivor sends each rank the part of its block that falls in that rank's range
//!   (all messages posted at once). Cost: `qα + (1.5 − 1/P)(β+γ)m` plus the redistribution,
//!   `kα + β·max(m/P, c_max)` where k = the most messages a rank sends or receives in it
//!   (k ≤ 3 for equal counts: a block of ≈ m/P elements meets at most ⌈p/P⌉ + 1 ≤ 3 ranges).
//!   Declared rounds: q + k. Scratch m + ⌈m/2⌉.
//! * **allgatherv**: recursive doubling for p = 2^n, Bruck's dissemination (distance 2^k to
//!   the left, cnt = min(2^k, p − 2^k) blocks) otherwise; both `qα + β(m − c_rank)`. Blocks
//!   move as multi-piece messages straight between their places in `Out` (no rotation, no
//!   scratch), so gaps of `Out` are never written. Empty messages are skipped on both sides.
//!
//! Every exchange is Irecv(s) + Isend(s) + Wait(s) within a round, so the strict rendezvous
//! simulator cannot deadlock; transfers of zero elements are skipped by both endpoints.

use super::util::gatherv_pieces;
use super::{CallSpec, CostParams};
use crate::error::Error;
use crate::plan::{Buf, Piece, Program};
use crate::sched::blocks::ceil_log2;
use crate::sched::butterfly::{self as bf, Layout, Mode, Transfer};

/// Model time of the latency-optimised allreduce (§6.4) for m elements of `eb` bytes.
pub fn cost_allreduce_lat(p: usize, m: usize, eb: usize, c: &CostParams) -> f64 {
    if p <= 1 {
        return 0.0;
    }
    let l = Layout::new(p);
    let bytes = (m * eb) as f64;
    let steps = if l.q == 0 { l.n } else { l.n + 1 } as f64; // = q or q + 1
    let q = ceil_log2(p) as f64;
    steps * (c.alpha + c.beta * bytes) + if l.q == 0 { steps } else { q } * c.gamma * bytes
}

/// Model time of the bandwidth-optimised allreduce (§6.1 + §6.2).
pub fn cost_allreduce_bw(p: usize, m: usize, eb: usize, c: &CostParams) -> f64 {
    if p <= 1 {
        return 0.0;
    }
    let l = Layout::new(p);
    let bytes = (m * eb) as f64;
    let f = if l.q == 0 {
        1.0 - 1.0 / p as f64
    } else {
        1.5 - 1.0 / l.pw as f64
    };
    2.0 * ceil_log2(p) as f64 * c.alpha + 2.0 * f * c.beta * bytes + f * c.gamma * bytes
}

/// Does [`allreduce`] run the latency-optimised variant for this call? Same answer on every
/// rank (depends only on p, count, element size and the shared parameters).
pub fn allreduce_uses_latency_variant(s: &CallSpec) -> bool {
    let m = s.counts[0];
    let eb = s.elem_bytes.max(1);
    cost_allreduce_lat(s.p, m, eb, &s.params) <= cost_allreduce_bw(s.p, m, eb, &s.params)
}

/// Scratch elements `me` needs in one round for reducing receives (L/R modes).
fn scratch_need(me: usize, rounds: &[Vec<Transfer>]) -> usize {
    rounds
        .iter()
        .map(|r| {
            r.iter()
                .filter(|x| x.dst == me && x.mode != Mode::C)
                .map(|x| x.len())
                .sum::<usize>()
        })
        .max()
        .unwrap_or(0)
}

/// Run per-round transfers of `me` on working buffer `w` (element i of the vector at `w[i]`):
/// receives first (C straight into `w`, L/R into scratch), then sends, then waits, then the
/// reductions. Zero-length transfers are skipped (both endpoints know their lengths).
fn exec_rounds(prog: &mut Program, me: usize, rounds: &[Vec<Transfer>], w: Buf) {
    let need = scratch_need(me, rounds);
    let t = (need > 0).then(|| prog.tmp(need));
    for round in rounds {
        let mut req = 0;
        let mut off = 0;
        let mut reds = Vec::new();
        for x in round.iter().filter(|x| x.dst == me && !x.is_empty()) {
            let dst = Piece::new(w, x.lo, x.len());
            if x.mode == Mode::C {
                prog.irecv(req, x.src, vec![dst]);
            } else {
                let tp = Piece::new(t.expect("scratch allocated"), off, x.len());
                off += x.len();
                prog.irecv(req, x.src, vec![tp]);
                // L: own := received ⊕ own; R: own := own ⊕ received.
                reds.push((tp, dst, x.mode == Mode::L));
            }
            req += 1;
        }
        for x in round.iter().filter(|x| x.src == me && !x.is_empty()) {
            prog.isend(req, x.dst, vec![Piece::new(w, x.lo, x.len())]);
            req += 1;
        }
        for r in 0..req {
            prog.wait(r);
        }
        for (tp, dst, src_first) in reds {
            prog.reduce(tp, dst, src_first);
        }
    }
}

/// §6.4 on `Out` (which already holds this rank's input). Both partners of an exchange
/// call the op as op(in = lower, inout = upper) — the lower one into its scratch, then the
/// buffers swap roles — so results are bit-identical even for ops whose commutativity is
/// not bitwise (e.g. max with NaNs).
fn exec_latency(prog: &mut Program, me: usize, rounds: &[Vec<Transfer>], m: usize) {
    let out = Buf::Out;
    let mut acc = out;
    let mut other: Option<Buf> = None;
    for round in rounds {
        let recv = round.iter().find(|x| x.dst == me).copied();
        let send = round.iter().find(|x| x.src == me).copied();
        let (mut req, mut reduce) = (0, None);
        if let Some(x) = recv.filter(|_| m > 0) {
            if x.mode == Mode::C {
                // Post-step: the final result.
                prog.irecv(req, x.src, vec![Piece::new(out, 0, m)]);
            } else {
                let o = *other.get_or_insert_with(|| prog.tmp(m));
                let o = if o == acc { out } else { o };
                prog.irecv(req, x.src, vec![Piece::new(o, 0, m)]);
                reduce = Some((o, x.mode));
            }
            req += 1;
        }
        if let Some(x) = send.filter(|_| m > 0) {
            prog.isend(req, x.dst, vec![Piece::new(acc, 0, m)]);
            req += 1;
        }
        for r in 0..req {
            prog.wait(r);
        }
        if let Some((o, mode)) = reduce {
            let (a, b) = (Piece::new(acc, 0, m), Piece::new(o, 0, m));
            if mode == Mode::L {
                // acc := received(lower) ⊕ acc.
                prog.reduce(b, a, true);
            } else {
                // acc(lower) ⊕ received: computed in the receive buffer, which becomes acc.
                prog.reduce(a, b, true);
                acc = o;
            }
        }
        if recv.is_some_and(|x| x.mode == Mode::C) {
            acc = out;
        }
    }
    if acc != out {
        prog.copy(Piece::new(acc, 0, m), Piece::new(out, 0, m));
    }
}

/// Allreduce: §6.4 for small messages, §6.1 + §6.2 for large ones, chosen by the model
/// ([`allreduce_uses_latency_variant`]). Canonical order; bit-identical on all ranks.
pub fn allreduce(s: &CallSpec) -> Result<Program, Error> {
    let (p, me, m) = (s.p, s.rank, s.counts[0]);
    let mut prog = Program::new();
    prog.copy(Piece::new(Buf::In, 0, m), Piece::new(Buf::Out, 0, m));
    if p == 1 {
        return Ok(prog);
    }
    if allreduce_uses_latency_variant(s) {
        let rounds = bf::latency_allreduce(p, m, me);
        exec_latency(&mut prog, me, &rounds, m);
        prog.rounds = rounds.len();
    } else {
        let rounds = bf::bw_allreduce(p, m, me);
        exec_rounds(&mut prog, me, &rounds, Buf::Out);
        prog.rounds = rounds.len();
    }
    Ok(prog)
}

/// Reduce to any root (§6.1 + §6.3), in place at the root.
pub fn reduce(s: &CallSpec) -> Result<Program, Error> {
    let (p, me, m, root) = (s.p, s.rank, s.counts[0], s.root);
    if root >= p {
        return Err(Error::Unsupported(format!("root {root} outside p = {p}")));
    }
    let mut prog = Program::new();
    let w = if me == root { Buf::Out } else { prog.tmp(m) };
    prog.copy(Piece::new(Buf::In, 0, m), Piece::new(w, 0, m));
    if p == 1 {
        return Ok(prog);
    }
    let rounds = bf::bw_reduce(p, m, root, me);
    exec_rounds(&mut prog, me, &rounds, w);
    prog.rounds = rounds.len();
    Ok(prog)
}

/// One piece of the reduce_scatter redistribution: survivor `from` gives rank `to` the
/// elements `[lo, hi)` of the vector.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Move {
    pub from: usize,
    pub to: usize,
    pub lo: usize,
    pub hi: usize,
}

/// The redistribution after the reduction phase of a reduce_scatter: every non-empty
/// intersection of a survivor's final block with a rank's range `[off_j, off_j + c_j)`,
/// in block order. O(P log p + p).
pub fn redistribution(p: usize, counts: &[usize]) -> Vec<Move> {
    let mut off = Vec::with_capacity(p + 1);
    off.push(0);
    for &c in counts {
        off.push(off.last().unwrap() + c);
    }
    let total = off[p];
    let mut moves = Vec::new();
    for (s, lo, hi) in bf::final_blocks(p, total) {
        if lo == hi {
            continue;
        }
        // First rank whose range ends after lo.
        let mut j = off[1..].partition_point(|&e| e <= lo);
        while j < p && off[j] < hi {
            let (a, b) = (lo.max(off[j]), hi.min(off[j + 1]));
            if a < b {
                moves.push(Move {
                    from: s,
                    to: j,
                    lo: a,
                    hi: b,
                });
            }
            j += 1;
        }
    }
    moves
}

/// Reduce_scatter with irregular counts: §6.1 reduction phase + direct redistribution.
pub fn reduce_scatter(s: &CallSpec) -> Result<Program, Error> {
    let (p, me) = (s.p, s.rank);
    let total = s.total();
    let mine = s.counts[me];
    let my_off: usize = s.counts[..me].iter().sum();
    let mut prog = Program::new();
    if p == 1 {
        prog.copy(Piece::new(Buf::In, 0, mine), Piece::new(Buf::Out, 0, mine));
        return Ok(prog);
    }
    let w = prog.tmp(total);
    prog.copy(Piece::new(Buf::In, 0, total), Piece::new(w, 0, total));
    let rounds = bf::reduction_phase(p, total, me);
    exec_rounds(&mut prog, me, &rounds, w);
    let moves = redistribution(p, &s.counts);
    let (mut sends, mut recvs) = (vec![0usize; p], vec![0usize; p]);
    let mut req = 0;
    for mv in moves.iter().filter(|mv| mv.from != mv.to) {
        sends[mv.from] += 1;
        recvs[mv.to] += 1;
        if mv.to == me {
            let dst = Piece::new(Buf::Out, mv.lo - my_off, mv.hi - mv.lo);
            prog.irecv(req, mv.from, vec![dst]);
            req += 1;
        }
    }
    for mv in moves.iter().filter(|mv| mv.from == me) {
        let src = Piece::new(w, mv.lo, mv.hi - mv.lo);
        if mv.to == me {
            prog.copy(src, Piece::new(Buf::Out, mv.lo - my_off, mv.hi - mv.lo));
        } else {
            prog.isend(req, mv.to, vec![src]);
            req += 1;
        }
    }
    for r in 0..req {
        prog.wait(r);
    }
    let k = sends.iter().chain(&recvs).copied().max().unwrap_or(0);
    prog.rounds = rounds.len() + k;
    Ok(prog)
}

/// Allgatherv: recursive doubling (p = 2^n) or Bruck dissemination (other p), `q` rounds.
pub fn allgatherv(s: &CallSpec) -> Result<Program, Error> {
    let (p, me) = (s.p, s.rank);
    let blocks = gatherv_pieces(&s.counts, &s.displs);
    let mut prog = Program::new();
    prog.copy(Piece::new(Buf::In, 0, s.counts[me]), blocks[me]);
    let q = ceil_log2(p);
    let pick = |ranks: &mut dyn Iterator<Item = usize>| -> Vec<Piece> {
        ranks.map(|j| blocks[j]).filter(|b| b.len > 0).collect()
    };
    for k in 0..q {
        let d = 1usize << k;
        let (to, from, send, recv) = if p.is_power_of_two() {
            // Exchange the 2^k blocks of my aligned group with the partner group.
            let partner = me ^ d;
            let (mg, pg) = (me & !(d - 1), partner & !(d - 1));
            (
                partner,
                partner,
                pick(&mut (mg..mg + d)),
                pick(&mut (pg..pg + d)),
            )
        } else {
            // Bruck: I hold blocks me .. me+d−1; pass cnt of them d to the left.
            let cnt = d.min(p - d);
            (
                (me + p - d) % p,
                (me + d) % p,
                pick(&mut (0..cnt).map(|i| (me + i) % p)),
                pick(&mut (0..cnt).map(|i| (me + d + i) % p)),
            )
        };
        let mut req = 0;
        if !recv.is_empty() {
            prog.irecv(req, from, recv);
            req += 1;
        }
        if !send.is_empty() {
            prog.isend(req, to, send);
            req += 1;
        }
        for r in 0..req {
            prog.wait(r);
        }
    }
    prog.rounds = q;
    Ok(prog)
}
