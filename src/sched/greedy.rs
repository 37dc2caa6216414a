//! Lowery–Langou greedy reduction schedules (ALGORITHMS.md §3, §4; paper Algorithms 1–2).
//!
//! Pure generators: plain numbers in, a list of [`Transfer`]s out. Every rank computes the
//! whole schedule locally (no communication), so the inputs (segment costs, tie-breaks) must
//! be identical on every rank (§8 pitfall 8): callers pass quantised integer costs.
//!
//! * [`uni_greedy`] — half-duplex (one port per process), segments processed in order on
//!   every process, each step pairs the two processes of the current segment that become free
//!   first. Ties are broken by rank (heap key `(free, rank)`), the first popped one sends
//!   unless it is the root. Cost O(nseg·p·log p). Optimal among in-order algorithms (paper
//!   Theorem 5); no closed form.
//! * [`bi_greedy`] — full-duplex, integer time, equal segments. The root never sends (§8
//!   pitfall 7). Conjectured completion `(⌈log2 p⌉ + nseg − 1)(tcomm + tcomp)`, the time of a
//!   reversed round-optimal broadcast.
//!
//! Invariants of every schedule produced here (checked by [`validate`], property-tested):
//! 1. each non-root process sends each segment exactly once, the root never sends;
//! 2. a process sends segment j only after all its receives of segment j (including their
//!    reductions) have completed;
//! 3. ports are never double-booked (half-duplex: one operation at a time; full-duplex: one
//!    send and one receive+reduce at a time), and no communication overlaps the process's
//!    own computation;
//! 4. per segment, the transfers form a tree rooted at the root: every contribution reaches
//!    the root exactly once.

use crate::sched::blocks::ceil_log2;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// One message of a greedy schedule: `sender` sends its partial of `segment` to `receiver`,
/// starting at `time`. The receiver reduces it right after the transfer.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Transfer<T> {
    pub time: T,
    pub sender: usize,
    pub receiver: usize,
    pub segment: usize,
}

/// A whole greedy schedule (identical on every rank).
#[derive(Clone, Debug, PartialEq)]
pub struct Schedule<T> {
    pub p: usize,
    pub root: usize,
    pub nseg: usize,
    /// In generation order: non-decreasing `time` for bi-greedy, segment by segment for
    /// uni-greedy. Use [`Schedule::events_of`] for one rank's operations in start order.
    pub transfers: Vec<Transfer<T>>,
    /// Time at which the root finished reducing the last segment.
    pub completion: T,
}

/// Schedule times: `u64` (bi-greedy) or `f64` (uni-greedy).
pub trait Time: Copy + PartialOrd {
    fn as_f64(self) -> f64;
}
impl Time for u64 {
    fn as_f64(self) -> f64 {
        self as f64
    }
}
impl Time for f64 {
    fn as_f64(self) -> f64 {
        self
    }
}

/// One operation of one rank, as seen by that rank.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Event<T> {
    Send {
        time: T,
        to: usize,
        segment: usize,
    },
    Recv {
        time: T,
        from: usize,
        segment: usize,
    },
}

impl<T: Copy + PartialOrd> Event<T> {
    pub fn time(&self) -> T {
        match *self {
            Event::Send { time, .. } | Event::Recv { time, .. } => time,
        }
    }
    pub fn segment(&self) -> usize {
        match *self {
            Event::Send { segment, .. } | Event::Recv { segment, .. } => segment,
        }
    }
}

impl<T: Time> Schedule<T> {
    /// `(time, sender, receiver, segment)` tuples in generation order (input of [`validate`]).
    pub fn tuples(&self) -> Vec<(f64, usize, usize, usize)> {
        self.transfers
            .iter()
            .map(|t| (t.time.as_f64(), t.sender, t.receiver, t.segment))
            .collect()
    }

    /// The operations of `rank` sorted by start time; at equal times receives come before
    /// sends (the order that makes blocking execution deadlock-free, see `algo::greedy`).
    pub fn events_of(&self, rank: usize) -> Vec<Event<T>> {
        let mut ev: Vec<Event<T>> = Vec::new();
        for t in &self.transfers {
            if t.sender == rank {
                ev.push(Event::Send {
                    time: t.time,
                    to: t.receiver,
                    segment: t.segment,
                });
            }
            if t.receiver == rank {
                ev.push(Event::Recv {
                    time: t.time,
                    from: t.sender,
                    segment: t.segment,
                });
            }
        }
        let key = |e: &Event<T>| matches!(e, Event::Send { .. }) as u8;
        ev.sort_by(|a, b| {
            a.time()
                .partial_cmp(&b.time())
                .unwrap_or(Ordering::Equal)
                .then(key(a).cmp(&key(b)))
        });
        ev
    }
}

/// Cost of one segment for uni-greedy: `tcomm = α + β s_j`, `tcomp = γ s_j`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SegCost {
    pub tcomm: f64,
    pub tcomp: f64,
}

/// Heap entry: smallest `(free, rank)` first.
#[derive(PartialEq)]
struct Free(f64, usize);
impl Eq for Free {}
impl PartialOrd for Free {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Free {
    fn cmp(&self, o: &Self) -> Ordering {
        // Reversed: BinaryHeap is a max-heap.
        o.0.total_cmp(&self.0).then(o.1.cmp(&self.1))
    }
}

/// Uni-greedy (half-duplex) schedule, ALGORITHMS.md §3 / paper Algorithm 1. `segs[j]` is
/// the cost of segment j (segments may differ in size). Deterministic: ties by rank.
/// Times are exact when the costs are integers (the program builder quantises them).
pub fn uni_greedy(p: usize, root: usize, segs: &[SegCost]) -> Schedule<f64> {
    assert!(root < p.max(1));
    let mut free = vec![0.0f64; p];
    let mut transfers = Vec::with_capacity(segs.len() * p.saturating_sub(1));
    for (j, c) in segs.iter().enumerate() {
        let mut heap: BinaryHeap<Free> = (0..p).map(|i| Free(free[i], i)).collect();
        for _ in 1..p {
            let Free(f1, g1) = heap.pop().unwrap();
            let Free(f2, g2) = heap.pop().unwrap();
            let t = f1.max(f2);
            let (sender, receiver) = if g1 == root { (g2, g1) } else { (g1, g2) };
            transfers.push(Transfer {
                time: t,
                sender,
                receiver,
                segment: j,
            });
            free[sender] = t + c.tcomm;
            free[receiver] = t + c.tcomm + c.tcomp;
            heap.push(Free(free[receiver], receiver));
        }
    }
    let completion = if p > 1 { free[root] } else { 0.0 };
    Schedule {
        p,
        root,
        nseg: segs.len(),
        transfers,
        completion,
    }
}

/// Bi-greedy (full-duplex) schedule, ALGORITHMS.md §4 / paper Algorithm 2, with the root
/// excluded from the senders (§8 pitfall 7). Integer time; `tcomm >= 1`.
///
/// Cost of the computation: O(T·p·active segments) with T = completion; instants at which
/// nothing can change (no port or computation ends) are skipped, which does not change the
/// schedule (pairings only become possible when something becomes free).
pub fn bi_greedy(p: usize, root: usize, nseg: usize, tcomm: u64, tcomp: u64) -> Schedule<u64> {
    assert!(tcomm >= 1, "bi_greedy needs tcomm >= 1");
    assert!(root < p.max(1));
    let mut transfers = Vec::new();
    if p <= 1 || nseg == 0 {
        return Schedule {
            p,
            root,
            nseg,
            transfers,
            completion: 0,
        };
    }
    let mut st = Bi::new(p, root, nseg, tcomm, tcomp);
    let mut done = 0; // segments finished at the root
    let mut t: u64 = 0;
    while done < nseg {
        let j0 = (0..nseg).find(|&j| st.sent[root][j] == 0).unwrap();
        for j in j0..nseg {
            st.classify(j, t);
            st.balance();
            st.pair(j, t, &mut transfers);
            if st.npending[j] == 1 && st.sent[root][j] == 0 {
                st.sent[root][j] = (0..p).map(|i| st.sent[i][j]).max().unwrap() + tcomp;
                done += 1;
            }
            if st.few_free(t) || j == nseg - 1 {
                break;
            }
        }
        t = st.next_instant(t);
    }
    let completion = st.sent[root].iter().copied().max().unwrap_or(0);
    Schedule {
        p,
        root,
        nseg,
        transfers,
        completion,
    }
}

/// The state of the bi-greedy simulation: ports, computations, what has been sent.
struct Bi {
    p: usize,
    root: usize,
    tcomm: u64,
    tcomp: u64,
    /// When each process's send port, receive port become free; its current computation.
    sfree: Vec<u64>,
    rfree: Vec<u64>,
    c0: Vec<u64>,
    c1: Vec<u64>,
    /// sent[i][j]: time i finished sending j (0 = not yet); root: end of its last reduction.
    sent: Vec<Vec<u64>>,
    /// Number of processes (incl. the root) that still hold an unsent partial of segment j.
    npending: Vec<usize>,
    /// For the segment being paired: ready to send only, to receive only, to do either.
    s: Vec<usize>,
    r: Vec<usize>,
    f: Vec<usize>,
}

impl Bi {
    fn new(p: usize, root: usize, nseg: usize, tcomm: u64, tcomp: u64) -> Bi {
        Bi {
            p,
            root,
            tcomm,
            tcomp,
            sfree: vec![0; p],
            rfree: vec![0; p],
            c0: vec![0; p],
            c1: vec![0; p],
            sent: vec![vec![0; nseg]; p],
            npending: vec![p; nseg],
            s: Vec::new(),
            r: Vec::new(),
            f: Vec::new(),
        }
    }

    /// Sorts the processes pending for segment `j` and not computing at `t` by the ports
    /// they have free.
    fn classify(&mut self, j: usize, t: u64) {
        self.s.clear();
        self.r.clear();
        self.f.clear();
        for i in 0..self.p {
            if self.sent[i][j] != 0 || (i == self.root && self.npending[j] == 1) {
                continue; // not pending (the root is pending until its final reduction)
            }
            let busy = t < self.c1[i] && t + self.tcomm > self.c0[i];
            if busy {
                continue;
            }
            let cs = self.sfree[i] <= t && i != self.root;
            let cr = self.rfree[i] <= t;
            match (cs, cr) {
                (true, true) => self.f.push(i),
                (true, false) => self.s.push(i),
                (false, true) => self.r.push(i),
                _ => {}
            }
        }
    }

    /// Gives the processes free for both to the senders and receivers so as to balance
    /// them (the highest ranks send); both lists sorted.
    fn balance(&mut self) {
        let (s, r, f) = (&mut self.s, &mut self.r, &self.f);
        let (ns, nr, nf) = (s.len(), r.len(), f.len());
        if ns == nr {
            let y = nf / 2;
            s.extend_from_slice(&f[nf - y..]);
            r.extend_from_slice(&f[..y]);
        } else if ns < nr {
            let d = nf.min(nr - ns);
            let x = (nf - d) / 2;
            s.extend_from_slice(&f[nf - (d + x)..]);
            r.extend_from_slice(&f[..x]);
        } else {
            let d = nf.min(ns - nr);
            let x = (nf - d) / 2;
            r.extend_from_slice(&f[..d + x]);
            s.extend_from_slice(&f[nf - x..]);
        }
        s.sort_unstable();
        r.sort_unstable();
    }

    /// Pairs the k-th sender with the k-th receiver for segment `j` at `t`.
    fn pair(&mut self, j: usize, t: u64, transfers: &mut Vec<Transfer<u64>>) {
        let (tcomm, tcomp) = (self.tcomm, self.tcomp);
        for k in 0..self.s.len().min(self.r.len()) {
            let (a, b) = (self.s[k], self.r[k]);
            transfers.push(Transfer {
                time: t,
                sender: a,
                receiver: b,
                segment: j,
            });
            self.sent[a][j] = t + tcomm;
            self.sfree[a] = t + tcomm;
            self.rfree[b] = t + tcomm + tcomp;
            self.c0[b] = t + tcomm;
            self.c1[b] = t + tcomm + tcomp;
            self.npending[j] -= 1;
        }
    }

    /// (#{sfree <= t} + #{rfree <= t}) < 2, counting only up to 2.
    fn few_free(&self, t: u64) -> bool {
        let free = self.sfree.iter().chain(self.rfree.iter());
        free.filter(|&&x| x <= t).take(2).count() < 2
    }

    /// Next instant at which a port or a computation becomes free (see `bi_greedy`'s doc).
    fn next_instant(&self, t: u64) -> u64 {
        let next = self
            .sfree
            .iter()
            .chain(self.rfree.iter())
            .chain(self.c1.iter())
            .copied()
            .filter(|&x| x > t)
            .min();
        next.unwrap_or(t + 1)
    }
}

/// The conjectured bi-greedy completion `(⌈log2 p⌉ + nseg − 1)(tcomm + tcomp)` (paper
/// §VI-B, ALGORITHMS.md §4), which is also the time of a reversed optimal broadcast.
pub fn bi_greedy_conjecture(p: usize, nseg: usize, tcomm: u64, tcomp: u64) -> u64 {
    if p <= 1 || nseg == 0 {
        return 0;
    }
    (ceil_log2(p) + nseg - 1) as u64 * (tcomm + tcomp)
}

/// Quantise real costs to integers with `res` units per `tcomm + tcomp` (`tcomm >= 1`),
/// deterministically (same inputs give the same integers on every rank). Non-finite or
/// non-positive inputs give `(1, 0)`.
pub fn quantise(tcomm: f64, tcomp: f64, res: u64) -> (u64, u64) {
    let tot = tcomm + tcomp;
    if !(tot > 0.0 && tot.is_finite()) || tcomm < 0.0 || tcomp < 0.0 {
        return (1, 0);
    }
    let r = res.max(1) as f64;
    let tc = ((r * tcomm / tot).round() as u64).max(1);
    let tp = (r * tcomp / tot).round() as u64;
    (tc, tp)
}

/// Independent validator of a greedy schedule (invariants 1–4 of the module docs) for
/// per-segment costs `cost(j) = (tcomm, tcomp)`. `half_duplex`: one port per process (uni);
/// otherwise one send port and one receive port (bi). Returns the completion time it derives
/// (the end of the root's last reduction).
pub fn validate<C: Fn(usize) -> (f64, f64)>(
    p: usize,
    root: usize,
    nseg: usize,
    transfers: &[(f64, usize, usize, usize)],
    cost: C,
    half_duplex: bool,
) -> Result<f64, String> {
    let iv = Intervals::of(p, root, nseg, transfers, cost)?;
    let mut completion = 0.0f64;
    for i in 0..p {
        for j in 0..nseg {
            if i != root && iv.out[i][j].is_none() {
                return Err(format!("{i} never sends segment {j}"));
            }
        }
        iv.check_process(i, half_duplex)?;
        if i == root {
            for c in &iv.comps[i] {
                completion = completion.max(c.1);
            }
        }
    }
    // (4) tree per segment: following sends from any process ends at the root.
    for j in 0..nseg {
        for start in 0..p {
            let (mut v, mut hops) = (start, 0);
            while v != root {
                v = iv.out[v][j].unwrap().0;
                hops += 1;
                if hops > p {
                    return Err(format!("segment {j}: cycle from {start}"));
                }
            }
        }
    }
    Ok(completion)
}

/// An interval of a process's time: (start, end, segment).
type Span = (f64, f64, usize);
const EPS: f64 = 1e-9;

/// What each process does in a schedule, for [`validate`].
struct Intervals {
    sends: Vec<Vec<Span>>,
    recvs: Vec<Vec<Span>>,
    comps: Vec<Vec<Span>>,
    /// (receiver, time) of i's send of j.
    out: Vec<Vec<Option<(usize, f64)>>>,
}

impl Intervals {
    /// The intervals of sending, receiving and computing of every process; each
    /// non-root process sends each segment at most once, never to itself.
    fn of<C: Fn(usize) -> (f64, f64)>(
        p: usize,
        root: usize,
        nseg: usize,
        transfers: &[(f64, usize, usize, usize)],
        cost: C,
    ) -> Result<Intervals, String> {
        let mut iv = Intervals {
            sends: vec![Vec::new(); p],
            recvs: vec![Vec::new(); p],
            comps: vec![Vec::new(); p],
            out: vec![vec![None; nseg]; p],
        };
        for &(t, a, b, j) in transfers {
            if a >= p || b >= p || j >= nseg || a == b {
                return Err(format!("bad transfer {a}->{b} seg {j}"));
            }
            if a == root {
                return Err(format!("root sends segment {j} at {t}"));
            }
            if iv.out[a][j].is_some() {
                return Err(format!("{a} sends segment {j} twice"));
            }
            iv.out[a][j] = Some((b, t));
            let (tc, tp) = cost(j);
            iv.sends[a].push((t, t + tc, j));
            iv.recvs[b].push((t, t + tc, j));
            iv.comps[b].push((t + tc, t + tc + tp, j));
        }
        Ok(iv)
    }

    /// Invariants (2) and (3) for process `i`: a segment is sent after its reductions; ports
    /// and computation are never double-booked.
    fn check_process(&self, i: usize, half_duplex: bool) -> Result<(), String> {
        let overlap = |x: &Span, y: &Span| x.0 < y.1 - EPS && y.0 < x.1 - EPS;
        // (2) send of j after all receives+reductions of j.
        for &(ts, _, j) in &self.sends[i] {
            for &(_, ce, jj) in &self.comps[i] {
                if jj == j && ce > ts + EPS {
                    return Err(format!(
                        "{i} sends segment {j} at {ts} before reducing it ({ce})"
                    ));
                }
            }
        }
        // (3) ports and computation.
        let mut all_comm: Vec<Span> = Vec::new();
        all_comm.extend(&self.sends[i]);
        all_comm.extend(&self.recvs[i]);
        let mut groups: Vec<Vec<Span>> = Vec::new();
        if half_duplex {
            let mut g = all_comm.clone();
            g.extend(&self.comps[i]);
            groups.push(g);
        } else {
            groups.push(self.sends[i].clone());
            // A receive port is busy during receive + reduction of the message.
            let busy: Vec<_> = self.recvs[i]
                .iter()
                .zip(&self.comps[i])
                .map(|(r, c)| (r.0, c.1, r.2))
                .collect();
            groups.push(busy);
            for c in &self.comps[i] {
                for x in &all_comm {
                    if overlap(c, x) {
                        return Err(format!("{i} communicates during its computation {c:?}"));
                    }
                }
            }
        }
        for g in &groups {
            for (k, x) in g.iter().enumerate() {
                for y in &g[k + 1..] {
                    if overlap(x, y) {
                        return Err(format!("{i}: port double-booked {x:?} {y:?}"));
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn p1_and_p2() {
        let s = bi_greedy(1, 0, 3, 2, 1);
        assert_eq!(s.completion, 0);
        assert!(s.transfers.is_empty());
        let s = bi_greedy(2, 1, 3, 2, 1);
        assert_eq!(s.completion, 9);
        let u = uni_greedy(
            2,
            0,
            &[SegCost {
                tcomm: 2.0,
                tcomp: 1.0,
            }],
        );
        assert_eq!(u.completion, 3.0);
    }
}
