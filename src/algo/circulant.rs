//! Circulant (Träff) programs (ALGORITHMS.md §5.6–5.9, pitfalls §8.1–8.3, 8.10, 8.12), built
//! on the schedules of [`crate::sched::circulant`]:
//!
//! * `reduce` = the n-block broadcast run backwards (§5.7), commutative ops, any root
//!   (relative ranks): `(n−1+q)(α + (β+γ)⌈m/n⌉)`, best `n ≈ √((q−1)(β+γ)m/α)`.
//! * `allgatherv` = all-broadcast (§5.8, Algorithm 7): every process is the root of its own
//!   `c_j` elements split into n blocks; one packed message per round. `n−1+q` rounds;
//!   `qα + (p−1)/p·βm` for n = 1 and equal counts. n from the largest contribution (§8.12).
//! * `reduce_scatter` = the all-broadcast run backwards (§5.9) on a working copy W (Tmp):
//!   `qα + (p−1)/p·(β+γ)m` for n = 1 and equal counts, any p.
//! * `allreduce` = circulant reduce_scatter over p equal blocks + circulant allgather (§5.9
//!   last bullet): `2qα + 2(p−1)/p·βm + (p−1)/p·γm`, exactly `2q` rounds at n = 1, any p;
//!   every block is finished at one rank and broadcast, so all ranks get identical bits.
//!
//! Every round is `Irecv + Isend + Wait both` (never a queue of sends: §8.10 rendezvous
//! deadlock). Messages whose pieces are all empty are skipped on both sides (both sides build
//! the same (root, block) list, §5.8). Reductions need a commutative op: contributions
//! arrive in arbitrary rank subsets.

use super::util::{gatherv_pieces, prefix_pieces};
use super::{CallSpec, CostParams};
use crate::error::Error;
use crate::plan::{Buf, Piece, Program};
use crate::sched::circulant::{
    all_recv, bcast_round_count, bcast_rounds, block_at, block_range, rounds_per_phase, skips,
    Schedule,
};

/// Linear-model block count `round(√((q−1)·per_byte·bytes/α))`, clamped to `1..=max_n`
/// (§5.6–5.8). Identical on all ranks (same inputs, same float operations).
fn model_blocks(q: usize, bytes: usize, per_byte: f64, alpha: f64, max_n: usize) -> usize {
    let n = if q <= 1 || alpha <= 0.0 {
        1.0
    } else {
        (((q - 1) as f64) * per_byte * bytes as f64 / alpha)
            .sqrt()
            .round()
    };
    let n = if n.is_finite() && n >= 1.0 {
        n.min(max_n as f64) as usize
    } else {
        1
    };
    n.clamp(1, max_n.max(1))
}

/// Blocks per segment of `c` elements: `ceil(c / seg_elems)` if a block size is given, else
/// `auto`; clamped to `1..=c` so no block is empty.
fn blocks_for(seg_elems: usize, c: usize, auto: impl FnOnce() -> usize) -> usize {
    let n = if seg_elems > 0 {
        c.div_ceil(seg_elems)
    } else {
        auto()
    };
    n.clamp(1, c.max(1))
}

/// The number of blocks n each circulant program of this call uses (identical on all ranks).
/// reduce: `√((q−1)(β+γ)m/α)` (m bytes); allgatherv / reduce_scatter: the same rule with β
/// resp. β+γ on the largest contribution c_max (§8.12); allreduce: 1 (best for equal counts,
/// §5.8). `seg_elems > 0` overrides: `ceil(c / seg_elems)`.
pub fn block_count(s: &CallSpec) -> usize {
    use super::Collective::*;
    let q = rounds_per_phase(s.p);
    let CostParams { alpha, beta, gamma } = s.params;
    let eb = s.elem_bytes.max(1);
    match s.coll.base() {
        Bcast => super::bcast::circulant_blocks(s),
        Reduce => {
            let m = s.counts[0];
            blocks_for(s.seg_elems, m, || {
                model_blocks(q, m * eb, beta + gamma, alpha, m)
            })
        }
        Allreduce => blocks_for(s.seg_elems, s.counts[0].div_ceil(s.p.max(1)), || 1),
        // Allgatherv: one block per root. MPI lets every rank describe the same bytes with its
        // own receive type (equal signatures, different counts), so block boundaries inside a
        // contribution could differ between ranks; whole contributions cannot. n = 1 is also
        // the model's optimum for regular counts (ALGORITHMS.md §5.8).
        Allgatherv => 1,
        ReduceScatter | ReduceScatterBlock | Allgather => {
            let cmax = s.counts.iter().copied().max().unwrap_or(0);
            let per = beta + gamma;
            blocks_for(s.seg_elems, cmax, || {
                model_blocks(q, cmax * eb, per, alpha, cmax)
            })
        }
    }
}

fn need_commutative(s: &CallSpec) -> Result<(), Error> {
    if s.commutative {
        Ok(())
    } else {
        Err(Error::Unsupported(format!(
            "circulant {} needs a commutative op",
            s.coll
        )))
    }
}

/// Block `b` of a segment split into n blocks.
fn block(seg: Piece, n: usize, b: usize) -> Piece {
    let (lo, len) = block_range(seg.len, n, b);
    seg.sub(lo, lo + len)
}

/// Post one full-duplex round: receive `recv` from `from` (request 0), send `send` to `to`
/// (request 1); empty sides are left out. The caller waits for what it posted.
fn post(prog: &mut Program, to: usize, send: Vec<Piece>, from: usize, recv: Vec<Piece>) {
    if !recv.is_empty() {
        prog.irecv(0, from, recv);
    }
    if !send.is_empty() {
        prog.isend(1, to, send);
    }
}

/// Reduce = reversed n-block broadcast (§5.7). Cost `(n−1+q)(α + (β+γ)⌈m/n⌉)`.
pub fn reduce(s: &CallSpec) -> Result<Program, Error> {
    need_commutative(s)?;
    let (p, m) = (s.p, s.counts[0]);
    let mut prog = Program::new();
    if m == 0 {
        return Ok(prog);
    }
    let input = Piece::new(Buf::In, 0, m);
    let r = (s.rank + p - s.root) % p;
    // Accumulator: Out at the root (In may alias it: the copy reads all of In first).
    let acc = if r == 0 {
        Piece::new(Buf::Out, 0, m)
    } else {
        Piece::new(prog.tmp(m), 0, m)
    };
    prog.copy(input, acc);
    if p == 1 {
        return Ok(prog);
    }
    let n = block_count(s);
    let sch = Schedule::new(p, r);
    let tmp = prog.tmp(m.div_ceil(n));
    for (k, off) in bcast_rounds(p, n).into_iter().rev() {
        let sk = sch.skips[k];
        let (f, t) = ((s.rank + p - sk % p) % p, (s.rank + sk) % p);
        // The broadcast's receive becomes our send of the finished partial (never the root).
        let send = match block_at(sch.recv[k], off, n) {
            Some(b) if r != 0 => vec![block(acc, n, b)],
            _ => vec![],
        };
        // The broadcast's send becomes a receive + reduce (never from the root).
        let recv = match block_at(sch.send[k], off, n) {
            Some(b) if t != s.root => Some(block(acc, n, b)),
            _ => None,
        };
        let rt = recv.map(|d| Piece::new(tmp, 0, d.len));
        post(&mut prog, f, send.clone(), t, rt.into_iter().collect());
        if let (Some(d), Some(tp)) = (recv, rt) {
            prog.wait(0);
            // Different block from the one in flight to f (it was finished earlier).
            prog.reduce(tp, d, true);
        }
        if !send.is_empty() {
            prog.wait(1);
        }
    }
    prog.rounds = bcast_round_count(p, n);
    Ok(prog)
}

/// n-block broadcast of `seg` from `root` (§5.6, Algorithm 1 with virtual rounds): every
/// rank receives each block exactly once, straight into `seg`, in exactly `n − 1 + q`
/// rounds. Cost `(n−1+q)(α + β⌈m/n⌉)`. Returns the rounds.
pub fn bcast(
    prog: &mut Program,
    p: usize,
    rank: usize,
    root: usize,
    n: usize,
    seg: Piece,
) -> usize {
    if p == 1 || seg.len == 0 {
        return 0;
    }
    let n = n.clamp(1, seg.len);
    let r = (rank + p - root) % p;
    let sch = Schedule::new(p, r);
    for (k, off) in bcast_rounds(p, n) {
        let sk = sch.skips[k];
        let (f, t) = ((rank + p - sk % p) % p, (rank + sk) % p);
        let send = match block_at(sch.send[k], off, n) {
            Some(b) if t != root => vec![block(seg, n, b)],
            _ => vec![],
        };
        let recv = match block_at(sch.recv[k], off, n) {
            Some(b) if r != 0 => vec![block(seg, n, b)],
            _ => vec![],
        };
        let (has_s, has_r) = (!send.is_empty(), !recv.is_empty());
        post(prog, t, send, f, recv);
        if has_r {
            prog.wait(0);
        }
        if has_s {
            prog.wait(1);
        }
    }
    bcast_round_count(p, n)
}

/// `(root j, block b)` pairs of one message, in packing order.
type RootBlocks = Vec<(usize, usize)>;

/// (root, block) lists of one all-broadcast round for `rank` (§5.8): what it sends to
/// `t = rank + s[k]` and what it receives from `f = rank − s[k]`, in the same root order on
/// both ends of every edge. Roots with no elements are skipped.
#[allow(clippy::too_many_arguments)]
fn allbcast_round(
    p: usize,
    rank: usize,
    sk: usize,
    k: usize,
    off: i64,
    n: usize,
    rs: &[Vec<i64>],
    counts: &[usize],
) -> (RootBlocks, RootBlocks) {
    let t = (rank + sk) % p;
    let mut send = Vec::new();
    let mut recv = Vec::new();
    for j in (0..p).filter(|&j| counts[j] > 0) {
        if j != t {
            if let Some(b) = block_at(rs[(t + p - j) % p][k], off, n) {
                send.push((j, b));
            }
        }
        if j != rank {
            if let Some(b) = block_at(rs[(rank + p - j) % p][k], off, n) {
                recv.push((j, b));
            }
        }
    }
    (send, recv)
}

fn pieces(list: &[(usize, usize)], segs: &[Piece], n: usize) -> Vec<Piece> {
    list.iter()
        .map(|&(j, b)| block(segs[j], n, b))
        .filter(|pc| pc.len > 0)
        .collect()
}

/// All-broadcast (Algorithm 7): `segs[j]` valid at rank j before, everywhere after. Blocks
/// are received straight into their place (each exactly once, never sent before it arrived).
fn allgather(prog: &mut Program, p: usize, rank: usize, n: usize, segs: &[Piece]) -> usize {
    if p == 1 {
        return 0;
    }
    let rs = all_recv(p);
    let s = skips(p);
    let counts: Vec<usize> = segs.iter().map(|pc| pc.len).collect();
    for (k, off) in bcast_rounds(p, n) {
        let (sl, rl) = allbcast_round(p, rank, s[k], k, off, n, &rs, &counts);
        let (send, recv) = (pieces(&sl, segs, n), pieces(&rl, segs, n));
        let (t, f) = ((rank + s[k]) % p, (rank + p - s[k] % p) % p);
        let (hs, hr) = (!send.is_empty(), !recv.is_empty());
        post(prog, t, send, f, recv);
        if hr {
            prog.wait(0);
        }
        if hs {
            prog.wait(1);
        }
    }
    bcast_round_count(p, n)
}

/// Reversed all-broadcast (§5.9): partials `segs[j]` on every rank before; `segs[rank]` holds
/// the full reduction after. Received partials land in a packed scratch buffer and are
/// reduced into their blocks.
fn reduce_scatter_on(prog: &mut Program, p: usize, rank: usize, n: usize, segs: &[Piece]) -> usize {
    if p == 1 {
        return 0;
    }
    let rs = all_recv(p);
    let s = skips(p);
    let counts: Vec<usize> = segs.iter().map(|pc| pc.len).collect();
    let rounds: Vec<(usize, Vec<Piece>, Vec<Piece>)> = bcast_rounds(p, n)
        .into_iter()
        .rev()
        .map(|(k, off)| {
            let (sl, rl) = allbcast_round(p, rank, s[k], k, off, n, &rs, &counts);
            // Reversed: send what the broadcast receives, receive what it sends.
            (k, pieces(&rl, segs, n), pieces(&sl, segs, n))
        })
        .collect();
    let most = rounds
        .iter()
        .map(|(_, _, r)| r.iter().map(|pc| pc.len).sum::<usize>())
        .max()
        .unwrap_or(0);
    let tmp = prog.tmp(most);
    for (k, send, into) in rounds {
        let (f, t) = ((rank + p - s[k] % p) % p, (rank + s[k]) % p);
        let len: usize = into.iter().map(|pc| pc.len).sum();
        let recv: Vec<Piece> = if len > 0 {
            vec![Piece::new(tmp, 0, len)]
        } else {
            vec![]
        };
        let hs = !send.is_empty();
        post(prog, f, send, t, recv);
        if len > 0 {
            prog.wait(0);
            let mut at = 0;
            for d in into {
                prog.reduce(Piece::new(tmp, at, d.len), d, true);
                at += d.len;
            }
        }
        if hs {
            prog.wait(1);
        }
    }
    bcast_round_count(p, n)
}

/// Allgatherv = all-broadcast (§5.8). Writes only `Out[displs[j] .. displs[j] + counts[j]]`.
pub fn allgatherv(s: &CallSpec) -> Result<Program, Error> {
    let mut prog = Program::new();
    if s.total() == 0 {
        return Ok(prog);
    }
    let segs = gatherv_pieces(&s.counts, &s.displs);
    prog.copy(Piece::new(Buf::In, 0, s.counts[s.rank]), segs[s.rank]);
    let n = block_count(s);
    prog.rounds = allgather(&mut prog, s.p, s.rank, n, &segs);
    Ok(prog)
}

/// Reduce_scatter = reversed all-broadcast (§5.9) on a working copy W of the input (Tmp).
pub fn reduce_scatter(s: &CallSpec) -> Result<Program, Error> {
    need_commutative(s)?;
    let total = s.total();
    let mut prog = Program::new();
    if total == 0 {
        return Ok(prog);
    }
    let w = prog.tmp(total);
    // All of In is read here, before Out (which In may alias) is written at the end.
    prog.copy(Piece::new(Buf::In, 0, total), Piece::new(w, 0, total));
    let segs = prefix_pieces(w, 0, &s.counts);
    let n = block_count(s);
    prog.rounds = reduce_scatter_on(&mut prog, s.p, s.rank, n, &segs);
    prog.copy(segs[s.rank], Piece::new(Buf::Out, 0, s.counts[s.rank]));
    Ok(prog)
}

/// Allreduce = circulant reduce_scatter over p equal blocks of Out + circulant allgather
/// (§5.9): `2(n−1+q)` rounds, `2q` at n = 1.
pub fn allreduce(s: &CallSpec) -> Result<Program, Error> {
    need_commutative(s)?;
    let (p, m) = (s.p, s.counts[0]);
    let mut prog = Program::new();
    if m == 0 {
        return Ok(prog);
    }
    let out = Piece::new(Buf::Out, 0, m);
    prog.copy(Piece::new(Buf::In, 0, m), out);
    let b = crate::sched::blocks::split(m, p);
    let segs: Vec<Piece> = (0..p).map(|j| out.sub(b[j], b[j + 1])).collect();
    let n = block_count(s);
    let r1 = reduce_scatter_on(&mut prog, p, s.rank, n, &segs);
    let r2 = allgather(&mut prog, p, s.rank, n, &segs);
    prog.rounds = r1 + r2;
    Ok(prog)
}
