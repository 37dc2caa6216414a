//! Lowery–Langou greedy reduce programs (ALGORITHMS.md §3 uni-greedy, §4 bi-greedy) and
//! allreduce = greedy reduce to rank 0 + binomial broadcast. Commutative ops only (the
//! pairings combine arbitrary rank subsets); dispatch enforces it.
//!
//! Every rank computes the whole schedule locally on relative ranks (root 0) and maps
//! relative rank r to `(r + root) mod p`. The schedule depends only on integers identical on
//! all ranks (§8 pitfall 8): segments are whole elements ([`split`] of `m` into `nseg`), and
//! `tcomm = α + βs`, `tcomp = γs` (s in bytes, from `s.params`) are quantised to integers
//! ([`quantise`] with [`BI_RES`] units per round for bi-greedy; uni-greedy uses a common unit
//! of 1/[`UNI_RES`] of the largest segment's round).
//!
//! Execution (per rank, its events in start-time order, receives before sends at equal
//! times): receives are posted nonblocking into one of [`RECV_SLOTS`] segment buffers (when
//! all are busy, the oldest receive is completed and reduced first); before sending segment j
//! all receives of segment j are completed and reduced into the accumulator; at most two
//! sends are in flight. Every blocking wait is on an operation whose schedule time is
//! strictly earlier than the operation being started, and the partner posts its side of a
//! transfer no later than that time, so the program is deadlock-free under rendezvous sends.
//!
//! Cost: bi-greedy `(⌈log2 p⌉ + nseg − 1)(α + (β+γ)s)` (conjectured, verified by simulation);
//! uni-greedy: simulated (≤ binomial, chain and binary with the same segments).
//! Memory: accumulator m (the root's `Out`; non-roots with receives: a scratch m, or `Out`
//! for allreduce) + `RECV_SLOTS` segment buffers.

use super::util::segments_for;
use super::{CallSpec, Collective};
use crate::error::Error;
use crate::model::{Duplex, Scheme};
use crate::plan::{Buf, Piece, Program};
use crate::sched::blocks::{ceil_log2, split};
use crate::sched::greedy::{bi_greedy, quantise, uni_greedy, Event, SegCost};
use std::collections::VecDeque;

/// Integer time units per `tcomm + tcomp` for bi-greedy.
pub const BI_RES: u64 = 8;
/// Integer time units per largest-segment round for uni-greedy.
pub const UNI_RES: f64 = 64.0;
/// Receive buffers (and receive requests) in flight per rank.
pub const RECV_SLOTS: usize = 4;
/// Cap on the number of segments (bounds the schedule computation: bi-greedy for p = 1024
/// and 256 segments takes about 1 s, so schedules must be cached per (p, nseg, costs)).
pub const MAX_SEGS: usize = 256;

/// Number of segments the greedy reduce uses for this call (identical on all ranks).
pub fn segments(s: &CallSpec, bidirectional: bool) -> usize {
    let (scheme, duplex) = if bidirectional {
        (Scheme::Greedy, Duplex::Full)
    } else {
        (Scheme::GreedyUni, Duplex::Half)
    };
    segments_for(s, Collective::Reduce, scheme, duplex, MAX_SEGS)
}

/// The events of relative rank `v` of the greedy schedule (times as f64) for this call.
fn events(s: &CallSpec, v: usize, b: &[usize], bidirectional: bool) -> Vec<Event<f64>> {
    let nseg = b.len() - 1;
    let eb = s.elem_bytes.max(1) as f64;
    let (a, be, g) = (s.params.alpha, s.params.beta, s.params.gamma);
    let smax = (b[1] - b[0]) as f64 * eb;
    if bidirectional {
        let (tc, tp) = quantise(a + be * smax, g * smax, BI_RES);
        let sched = bi_greedy(s.p, 0, nseg, tc, tp);
        sched
            .events_of(v)
            .into_iter()
            .map(|e| match e {
                Event::Send { time, to, segment } => Event::Send {
                    time: time as f64,
                    to,
                    segment,
                },
                Event::Recv {
                    time,
                    from,
                    segment,
                } => Event::Recv {
                    time: time as f64,
                    from,
                    segment,
                },
            })
            .collect()
    } else {
        let round = a + (be + g) * smax;
        let unit = if round > 0.0 && round.is_finite() {
            round / UNI_RES
        } else {
            1.0
        };
        let costs: Vec<SegCost> = (0..nseg)
            .map(|j| {
                let sj = (b[j + 1] - b[j]) as f64 * eb;
                let (tc, tp) = if round > 0.0 && round.is_finite() {
                    (
                        ((a + be * sj) / unit).round().max(1.0),
                        (g * sj / unit).round().max(0.0),
                    )
                } else {
                    (1.0, 0.0)
                };
                SegCost {
                    tcomm: tc,
                    tcomp: tp,
                }
            })
            .collect();
        uni_greedy(s.p, 0, &costs).events_of(v)
    }
}

/// Append the greedy reduction of `In` to `root` to `prog`. `acc_out`: non-roots may use
/// `Out` as accumulator (allreduce). The result lands in `Out` at the root.
fn greedy_reduce(
    prog: &mut Program,
    s: &CallSpec,
    root: usize,
    bidirectional: bool,
    acc_out: bool,
) {
    let (p, rank, m) = (s.p, s.rank, s.counts[0]);
    let all_in = Piece::new(Buf::In, 0, m);
    let all_out = Piece::new(Buf::Out, 0, m);
    if p == 1 {
        prog.copy(all_in, all_out);
        return;
    }
    if m == 0 {
        return;
    }
    let nseg = segments(s, bidirectional);
    let b = split(m, nseg);
    let v = (rank + p - root) % p;
    let abs = |r: usize| (r + root) % p;
    let ev = events(s, v, &b, bidirectional);
    prog.rounds = if bidirectional {
        ceil_log2(p) + nseg - 1
    } else {
        ev.len()
    };
    let nrecv = ev
        .iter()
        .filter(|e| matches!(e, Event::Recv { .. }))
        .count();
    // Accumulator: Out at the root (initialised up front: the root receives every segment).
    let acc = if v == 0 || acc_out {
        Buf::Out
    } else if nrecv > 0 {
        prog.tmp(m)
    } else {
        Buf::In // leaf: never written
    };
    let mut acc_init = vec![false; nseg];
    if v == 0 {
        prog.copy(all_in, all_out);
        acc_init.iter_mut().for_each(|x| *x = true);
    }
    let maxseg = b[1] - b[0];
    let slots = RECV_SLOTS.min(nrecv.max(1));
    let tmp = if nrecv > 0 {
        Some(prog.tmp(slots * maxseg))
    } else {
        None
    };
    let mut em = Emit {
        b: &b,
        acc,
        tmp,
        maxseg,
        slots,
        acc_init,
        free: (0..slots).rev().collect(),
        inflight: VecDeque::new(),
        sends: VecDeque::new(),
        next_send: 0,
    };
    for e in ev {
        match e {
            Event::Recv { from, segment, .. } => em.recv(prog, abs(from), segment),
            Event::Send { to, segment, .. } => em.send(prog, abs(to), segment),
        }
    }
    em.finish(prog);
}

/// Emits one rank's greedy events: receives go into `slots` slots of `tmp` and are reduced
/// into the accumulator before their segment is sent on; at most two sends in flight.
struct Emit<'a> {
    /// Segment boundaries (elements).
    b: &'a [usize],
    acc: Buf,
    tmp: Option<Buf>,
    maxseg: usize,
    slots: usize,
    /// Segments of the accumulator that hold a partial result.
    acc_init: Vec<bool>,
    free: Vec<usize>,
    /// (slot, segment) of the posted receives, in posting order.
    inflight: VecDeque<(usize, usize)>,
    sends: VecDeque<u32>,
    next_send: u32,
}

impl Emit<'_> {
    fn seg(&self, buf: Buf, j: usize) -> Piece {
        Piece::new(buf, self.b[j], self.b[j + 1] - self.b[j])
    }
    fn slot_piece(&self, k: usize, j: usize) -> Piece {
        Piece::new(
            self.tmp.unwrap(),
            k * self.maxseg,
            self.b[j + 1] - self.b[j],
        )
    }
    /// Complete (wait + reduce) the in-flight receive at position `i`.
    fn complete(&mut self, prog: &mut Program, i: usize) {
        let (k, j) = self.inflight.remove(i).unwrap();
        prog.wait(k as u32);
        if !self.acc_init[j] {
            prog.copy(self.seg(Buf::In, j), self.seg(self.acc, j));
            self.acc_init[j] = true;
        }
        prog.reduce(self.slot_piece(k, j), self.seg(self.acc, j), false);
        self.free.push(k);
    }
    fn recv(&mut self, prog: &mut Program, from: usize, segment: usize) {
        if self.free.is_empty() {
            self.complete(prog, 0);
        }
        let k = self.free.pop().unwrap();
        prog.irecv(k as u32, from, vec![self.slot_piece(k, segment)]);
        self.inflight.push_back((k, segment));
    }
    fn send(&mut self, prog: &mut Program, to: usize, segment: usize) {
        while let Some(i) = self.inflight.iter().position(|&(_, j)| j == segment) {
            self.complete(prog, i);
        }
        if self.sends.len() >= 2 {
            prog.wait(self.sends.pop_front().unwrap());
        }
        let req = self.slots as u32 + self.next_send % 2;
        self.next_send += 1;
        let src = if self.acc_init[segment] {
            self.seg(self.acc, segment)
        } else {
            self.seg(Buf::In, segment)
        };
        prog.isend(req, to, vec![src]);
        self.sends.push_back(req);
    }
    fn finish(mut self, prog: &mut Program) {
        while !self.inflight.is_empty() {
            self.complete(prog, 0);
        }
        for r in std::mem::take(&mut self.sends) {
            prog.wait(r);
        }
    }
}

pub fn reduce(s: &CallSpec, bidirectional: bool) -> Result<Program, Error> {
    if !s.commutative {
        return Err(Error::Unsupported(
            "greedy reduce needs a commutative op".into(),
        ));
    }
    let mut prog = Program::new();
    greedy_reduce(&mut prog, s, s.root, bidirectional, false);
    Ok(prog)
}

/// Allreduce = bi-greedy reduce to rank 0 + binomial broadcast (ALGORITHMS.md §4, §1).
/// Cost: `(⌈log2 p⌉ + nseg − 1)(α + (β+γ)s) + ⌈log2 p⌉(α + βm)`.
pub fn allreduce(s: &CallSpec) -> Result<Program, Error> {
    if !s.commutative {
        return Err(Error::Unsupported(
            "greedy allreduce needs a commutative op".into(),
        ));
    }
    let m = s.counts[0];
    let mut prog = Program::new();
    greedy_reduce(&mut prog, s, 0, true, true);
    let r1 = prog.rounds;
    if s.p > 1 && m > 0 {
        // Broadcast with the same block count as the reduction: circulant n-block broadcast
        // (§5.6), (nseg − 1 + q) rounds, the reversed-reduction counterpart.
        let n = segments(s, true);
        prog.rounds =
            r1 + super::circulant::bcast(&mut prog, s.p, s.rank, 0, n, Piece::new(Buf::Out, 0, m));
    }
    Ok(prog)
}
