//! Butterfly schedules (Rabenseifner; Rabenseifner–Träff 3-2 / 2-1 elimination for p ≠ 2^n),
//! ALGORITHMS.md §6, paper "More efficient reduction algorithms for non-power-of-two number
//! of processors" (Rabenseifner & Träff, EuroPVM/MPI 2004), §3.1 and §3.3 (non-overlapping
//! elimination protocol).
//!
//! Pure: plain integers in, per-round transfer lists out. A [`Transfer`] moves the element
//! range `[lo, hi)` from `src` to `dst`; its [`Mode`] says what `dst` does with it. All
//! transfers of a round read round-start data.
//!
//! Notation: `n = floor(log2 p)`, `P = 2^n`, `Q = p − P`, `h = mid(0, m) = ceil(m/2)`,
//! `mid(lo, hi) = lo + ceil((hi − lo)/2)`.
//!
//! Structure ([`Layout`]): if Q is odd, ranks 0,1,2 form the *triple* (3-2 elimination: rank 2
//! is absorbed into 0 and 1); the remaining ranks form *pairs* (a, a+1) starting at
//! `a0 = 3` (Q odd) or `a0 = 0`. The first `2·floor(Q/2)` pairs are coupled as (A, B) =
//! (pair 2c, pair 2c+1); B is absorbed into A in round 1 (2-1 elimination of half vectors).
//! The surviving *groups*, in rank order — the triple's (0,1), the A pair of every couple,
//! the remaining pairs — number exactly P/2; group g's lower-half owner is survivor
//! `v = 2g`, its upper-half owner `v = 2g + 1`. Every group's contributors are a contiguous
//! rank interval, and groups are in rank order, so distance-doubling exchanges between
//! survivors keep every partial a contiguous rank interval combined lower ⊕ higher: canonical
//! order and one bracketing for all elements, valid for non-commutative ops.
//!
//! Invariants (each checked in `tests/butterfly_sched.rs` for p = 1..=64 and several m):
//! 1. every transfer listed for a rank involves that rank, and appears identically in the
//!    lists of both its endpoints (so per-rank generation is globally consistent);
//! 2. one-port full duplex: per round every rank sends at most one and receives at most one
//!    message;
//! 3. symbolic execution yields `x_0 ⊕ … ⊕ x_{p−1}` with one bracketing on every element
//!    of every rank (allreduce) or of the root (reduce), combining only adjacent intervals;
//! 4. the final blocks of the reduction phase partition `[0, m)`.
//!
//! Costs (full duplex, Hockney): reduction phase `⌈log2 p⌉α + (1.5 − 1/P)(β+γ)m`
//! (`nα + (1 − 1/p)(β+γ)m` for p = 2^n); allreduce (§6.1 + §6.2) `2⌈log2 p⌉α +
//! 2(1.5 − 1/P)βm + (1.5 − 1/P)γm`; reduce (§6.1 + §6.3) `(⌈log2 p⌉ + n)α + (2.5 − 2/P)βm
//! + (1.5 − 1/P)γm` with the root a survivor (one round more otherwise); latency-optimised
//! allreduce (§6.4) `(⌈log2 p⌉ + 1)(α + βm) + ⌈log2 p⌉γm` (`n(α + βm + γm)` for p = 2^n).
//!
//! Per-rank generation is O(log p).

use super::blocks::ceil_log2;

/// What the receiver does with a transfer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Mode {
    /// `own := received ⊕ own` (the sender holds the LOWER ranks).
    L,
    /// `own := own ⊕ received` (the sender holds the HIGHER ranks).
    R,
    /// `own := received` (copy).
    C,
}

/// One message: elements `[lo, hi)` from `src` to `dst`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Transfer {
    pub src: usize,
    pub dst: usize,
    pub lo: usize,
    pub hi: usize,
    pub mode: Mode,
}

impl Transfer {
    pub fn len(&self) -> usize {
        self.hi - self.lo
    }
    pub fn is_empty(&self) -> bool {
        self.hi == self.lo
    }
}

fn t(src: usize, dst: usize, lo: usize, hi: usize, mode: Mode) -> Transfer {
    Transfer {
        src,
        dst,
        lo,
        hi,
        mode,
    }
}

/// `lo + ceil((hi − lo)/2)`.
pub fn mid(lo: usize, hi: usize) -> usize {
    lo + (hi - lo).div_ceil(2)
}

/// Kind of a pair in the elimination layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PairKind {
    /// Lower pair of a couple: survives and absorbs B in round 1.
    A,
    /// Upper pair of a couple: eliminated in round 1.
    B,
    /// Not coupled: survives.
    Plain,
}

/// Where a rank sits in the elimination layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pos {
    /// p = 1.
    Solo,
    /// Member 0, 1 or 2 of the triple (Q odd only).
    Triple(usize),
    /// Member of the pair (a, a+1); `upper` = this rank is a+1.
    Pair {
        a: usize,
        upper: bool,
        kind: PairKind,
    },
}

/// The elimination layout of p processes (O(1) to build).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    pub p: usize,
    /// floor(log2 p).
    pub n: usize,
    /// 2^n.
    pub pw: usize,
    /// p − 2^n.
    pub q: usize,
    /// Q odd: ranks 0,1,2 form the triple.
    pub triple: bool,
    /// First rank of the first pair.
    pub a0: usize,
    /// floor(Q/2): number of (A, B) couples.
    pub couples: usize,
}

impl Layout {
    pub fn new(p: usize) -> Layout {
        assert!(p >= 1, "butterfly layout of an empty communicator");
        let n = (usize::BITS - 1 - p.leading_zeros()) as usize;
        let pw = 1usize << n;
        let q = p - pw;
        let triple = q % 2 == 1;
        Layout {
            p,
            n,
            pw,
            q,
            triple,
            a0: if triple { 3 } else { 0 },
            couples: q / 2,
        }
    }

    /// Number of survivor groups: P/2 (0 for p = 1).
    pub fn groups(&self) -> usize {
        self.pw / 2
    }

    pub fn pos(&self, rank: usize) -> Pos {
        debug_assert!(rank < self.p);
        if self.p == 1 {
            return Pos::Solo;
        }
        if self.triple && rank < 3 {
            return Pos::Triple(rank);
        }
        let k = (rank - self.a0) / 2;
        let a = self.a0 + 2 * k;
        let kind = if k < 2 * self.couples {
            if k.is_multiple_of(2) {
                PairKind::A
            } else {
                PairKind::B
            }
        } else {
            PairKind::Plain
        };
        Pos::Pair {
            a,
            upper: rank == a + 1,
            kind,
        }
    }

    /// Survivors (lower-half owner, upper-half owner) of group g.
    pub fn survivors(&self, g: usize) -> (usize, usize) {
        debug_assert!(g < self.groups());
        let e = usize::from(self.triple);
        if self.triple && g == 0 {
            return (0, 1);
        }
        let k = if g - e < self.couples {
            2 * (g - e)
        } else {
            2 * self.couples + (g - e - self.couples)
        };
        let a = self.a0 + 2 * k;
        (a, a + 1)
    }

    /// Rank of survivor v (= 2g + half).
    pub fn survivor_rank(&self, v: usize) -> usize {
        let (lo, hi) = self.survivors(v / 2);
        if v.is_multiple_of(2) {
            lo
        } else {
            hi
        }
    }

    /// The group a rank belongs to (for eliminated ranks: the group that absorbed it).
    pub fn group_of(&self, rank: usize) -> usize {
        let e = usize::from(self.triple);
        match self.pos(rank) {
            Pos::Solo => 0,
            Pos::Triple(_) => 0,
            Pos::Pair { a, .. } => {
                let k = (a - self.a0) / 2;
                if k < 2 * self.couples {
                    e + k / 2
                } else {
                    e + self.couples + (k - 2 * self.couples)
                }
            }
        }
    }

    /// Survivor index of a rank after the reduction phase (None: eliminated or p = 1).
    pub fn survivor(&self, rank: usize) -> Option<usize> {
        let g = self.group_of(rank);
        match self.pos(rank) {
            Pos::Solo | Pos::Triple(2) => None,
            Pos::Triple(i) => Some(2 * g + i),
            Pos::Pair {
                kind: PairKind::B, ..
            } => None,
            Pos::Pair { upper, .. } => Some(2 * g + usize::from(upper)),
        }
    }

    /// Rounds of the reduction phase: n for p = 2^n, ⌈log2 p⌉ otherwise (0 for p = 1).
    pub fn reduction_rounds(&self) -> usize {
        ceil_log2(self.p)
    }

    /// The other half of `levels[z−1]` beside `levels[z]` (`levels` of survivor v): what
    /// survivor `v XOR 2^z` holds
    /// after halving round z.
    pub fn sibling(levels: &[(usize, usize)], v: usize, z: usize) -> (usize, usize) {
        let (parent, mine) = (levels[z - 1], levels[z]);
        if (v >> z) & 1 == 0 {
            (mine.1, parent.1)
        } else {
            (parent.0, mine.0)
        }
    }

    /// Block of survivor v after halving rounds 0..=z (z = 0: its half of `[0, m)`).
    /// Returns the n blocks for z = 0..n−1.
    pub fn levels(&self, m: usize, v: usize) -> Vec<(usize, usize)> {
        let h = mid(0, m);
        let mut b = if v.is_multiple_of(2) { (0, h) } else { (h, m) };
        let mut out = Vec::with_capacity(self.n);
        out.push(b);
        for z in 1..self.n {
            let md = mid(b.0, b.1);
            b = if (v >> z) & 1 == 0 {
                (b.0, md)
            } else {
                (md, b.1)
            };
            out.push(b);
        }
        out
    }
}

/// §6.1: bandwidth-optimised reduction phase; the transfers involving `rank`, per round
/// (`Layout::reduction_rounds` rounds; empty ranges are listed, executors skip them).
///
/// Cost: `⌈log2 p⌉α + (1.5 − 1/P)(β+γ)m` (`nα + (1 − 1/p)(β+γ)m` for p = 2^n).
pub fn reduction_phase(p: usize, m: usize, rank: usize) -> Vec<Vec<Transfer>> {
    use Mode::*;
    let l = Layout::new(p);
    let h = mid(0, m);
    let mut rounds: Vec<Vec<Transfer>> = vec![Vec::new(); l.reduction_rounds()];
    if p == 1 {
        return rounds;
    }
    // Round 0: 3-2 step part one in the triple, butterfly exchange in every pair.
    rounds[0] = match l.pos(rank) {
        Pos::Triple(0) | Pos::Solo => vec![],
        Pos::Triple(_) => vec![t(1, 2, 0, h, L), t(2, 1, h, m, R)],
        Pos::Pair { a, .. } => vec![t(a + 1, a, 0, h, R), t(a, a + 1, h, m, L)],
    };
    let mut r = 1;
    if l.q > 0 {
        // Round 1: 3-2 step part two (2 eliminated), 2-1 eliminations of half vectors B -> A.
        rounds[1] = match l.pos(rank) {
            Pos::Triple(0) => vec![t(2, 0, 0, h, R), t(0, 1, h, m, L)],
            Pos::Triple(1) => vec![t(0, 1, h, m, L)],
            Pos::Triple(_) => vec![t(2, 0, 0, h, R)],
            Pos::Pair {
                a,
                upper,
                kind: PairKind::A,
            } => {
                if upper {
                    vec![t(a + 3, a + 1, h, m, R)]
                } else {
                    vec![t(a + 2, a, 0, h, R)]
                }
            }
            Pos::Pair {
                a,
                upper,
                kind: PairKind::B,
            } => {
                if upper {
                    vec![t(a + 1, a - 1, h, m, R)]
                } else {
                    vec![t(a, a - 2, 0, h, R)]
                }
            }
            _ => vec![],
        };
        r = 2;
    }
    // Rounds z = 1..n−1: recursive halving with distance doubling among survivors.
    if let Some(v) = l.survivor(rank) {
        let lv = l.levels(m, v);
        for z in 1..l.n {
            let w = v ^ (1 << z);
            let pr = l.survivor_rank(w);
            let (lo, hi) = lv[z - 1];
            let md = mid(lo, hi);
            rounds[r + z - 1] = if (v >> z) & 1 == 0 {
                vec![t(pr, rank, lo, md, R), t(rank, pr, md, hi, L)]
            } else {
                vec![t(pr, rank, md, hi, L), t(rank, pr, lo, md, R)]
            };
        }
    }
    rounds
}

/// Final block `[lo, hi)` of `rank` after the reduction phase (None: eliminated, p = 1).
pub fn final_block(p: usize, m: usize, rank: usize) -> Option<(usize, usize)> {
    let l = Layout::new(p);
    l.survivor(rank).map(|v| *l.levels(m, v).last().unwrap())
}

/// All survivors' final blocks `(rank, lo, hi)` after the reduction phase, in position
/// order (they partition `[0, m)`; p = 1: the single block `(0, 0, m)`). O(P).
pub fn final_blocks(p: usize, m: usize) -> Vec<(usize, usize, usize)> {
    let l = Layout::new(p);
    if p == 1 {
        return vec![(0, 0, m)];
    }
    // Halving round z splits by bit z of v (0: lower part), so walking the halving tree
    // lower part first lists the blocks by position.
    fn walk(
        l: &Layout,
        lo: usize,
        hi: usize,
        z: usize,
        v: usize,
        out: &mut Vec<(usize, usize, usize)>,
    ) {
        if z == l.n {
            out.push((l.survivor_rank(v), lo, hi));
            return;
        }
        let md = mid(lo, hi);
        walk(l, lo, md, z + 1, v, out);
        walk(l, md, hi, z + 1, v | (1 << z), out);
    }
    let mut out = Vec::with_capacity(l.pw);
    walk(&l, 0, m, 0, 0, &mut out);
    out
}

/// §6.2: allreduce routing phase after [`reduction_phase`]; transfers involving `rank`, per
/// round (`(n − 1) + [Q > 0] + 1` rounds). Copies only.
///
/// Cost: `⌈log2 p⌉α + (1.5 − 1/P)βm` (`nα + (1 − 1/p)βm` for p = 2^n).
pub fn allreduce_routing(p: usize, m: usize, rank: usize) -> Vec<Vec<Transfer>> {
    use Mode::*;
    let l = Layout::new(p);
    if p == 1 {
        return vec![];
    }
    let h = mid(0, m);
    let mut rounds: Vec<Vec<Transfer>> = Vec::new();
    let sv = l.survivor(rank);
    let lv = sv.map(|v| l.levels(m, v)).unwrap_or_default();
    for z in (1..l.n).rev() {
        rounds.push(match sv {
            Some(v) => {
                let pr = l.survivor_rank(v ^ (1 << z));
                let mine = lv[z];
                let theirs = Layout::sibling(&lv, v, z);
                vec![
                    t(rank, pr, mine.0, mine.1, C),
                    t(pr, rank, theirs.0, theirs.1, C),
                ]
            }
            None => vec![],
        });
    }
    if l.q > 0 {
        rounds.push(match l.pos(rank) {
            Pos::Triple(0) => vec![t(0, 2, 0, h, C), t(1, 0, h, m, C)],
            Pos::Triple(1) => vec![t(1, 0, h, m, C)],
            Pos::Triple(_) => vec![t(0, 2, 0, h, C)],
            Pos::Pair {
                a,
                upper,
                kind: PairKind::A,
            } => {
                if upper {
                    vec![t(a + 1, a + 3, h, m, C)]
                } else {
                    vec![t(a, a + 2, 0, h, C)]
                }
            }
            Pos::Pair {
                a,
                upper,
                kind: PairKind::B,
            } => {
                if upper {
                    vec![t(a - 1, a + 1, h, m, C)]
                } else {
                    vec![t(a - 2, a, 0, h, C)]
                }
            }
            _ => vec![],
        });
    }
    rounds.push(match l.pos(rank) {
        Pos::Triple(0) | Pos::Solo => vec![],
        Pos::Triple(_) => vec![t(1, 2, h, m, C), t(2, 1, 0, h, C)],
        Pos::Pair { a, .. } => vec![t(a, a + 1, 0, h, C), t(a + 1, a, h, m, C)],
    });
    rounds
}

/// The group whose survivors collect a reduce's result: the root's group, or for an
/// eliminated root the group that absorbed it (§6.3).
pub fn target_group(p: usize, root: usize) -> usize {
    Layout::new(p).group_of(root)
}

/// Does the root survive the reduction phase (then the reduce needs one delivery round,
/// otherwise two)?
pub fn root_survives(p: usize, root: usize) -> bool {
    p == 1 || Layout::new(p).survivor(root).is_some()
}

/// §6.3: reduce routing phase after [`reduction_phase`]; transfers involving `rank`, per
/// round: `n − 1` binomial gather rounds towards the target group, then one delivery round
/// if the root is a survivor, two otherwise (the root receives one half per round).
///
/// Cost (root a survivor): `nα + (1 − 1/P)βm` (`nα + (1 − 1/p)βm` for p = 2^n); one
/// more `α` for an eliminated root.
pub fn reduce_routing(p: usize, m: usize, root: usize, rank: usize) -> Vec<Vec<Transfer>> {
    use Mode::*;
    let l = Layout::new(p);
    if p == 1 {
        return vec![];
    }
    let h = mid(0, m);
    let gt = l.group_of(root);
    let mut rounds: Vec<Vec<Transfer>> = Vec::new();
    let sv = l.survivor(rank);
    let lv = sv.map(|v| l.levels(m, v)).unwrap_or_default();
    for z in (1..l.n).rev() {
        let d = 1usize << (z - 1);
        let mut round = vec![];
        if let Some(v) = sv {
            let x = (v / 2) ^ gt;
            if x >> z == 0 {
                let pr = l.survivor_rank(v ^ (1 << z));
                if x & d != 0 {
                    let b = lv[z];
                    round.push(t(rank, pr, b.0, b.1, C));
                } else {
                    let b = Layout::sibling(&lv, v, z);
                    round.push(t(pr, rank, b.0, b.1, C));
                }
            }
        }
        rounds.push(round);
    }
    let (lo, hi) = l.survivors(gt);
    let keep = |tr: Transfer| -> Vec<Transfer> {
        if tr.src == rank || tr.dst == rank {
            vec![tr]
        } else {
            vec![]
        }
    };
    if root == lo {
        rounds.push(keep(t(hi, root, h, m, C)));
    } else if root == hi {
        rounds.push(keep(t(lo, root, 0, h, C)));
    } else {
        rounds.push(keep(t(lo, root, 0, h, C)));
        rounds.push(keep(t(hi, root, h, m, C)));
    }
    rounds
}

/// Rounds of [`reduce_routing`].
pub fn reduce_routing_rounds(p: usize, root: usize) -> usize {
    if p == 1 {
        0
    } else {
        let l = Layout::new(p);
        l.n - 1 + if root_survives(p, root) { 1 } else { 2 }
    }
}

/// §6.4: latency-optimised allreduce (full vectors); transfers involving `rank`, per round
/// (n rounds for p = 2^n, n + 2 = ⌈log2 p⌉ + 1 otherwise).
///
/// Pre-step: `2i → 2i+1` (L) for i < Q; survivors 2i+1 (i < Q) and 2Q..p−1 numbered
/// v = 0..P−1 in rank order run recursive doubling (both partners compute lower ⊕ upper, so
/// results are bit-identical); post-step `2i+1 → 2i` (C).
///
/// Cost: `(⌈log2 p⌉ + 1)(α + βm) + ⌈log2 p⌉γm`; p = 2^n: `n(α + βm + γm)`.
pub fn latency_allreduce(p: usize, m: usize, rank: usize) -> Vec<Vec<Transfer>> {
    use Mode::*;
    let l = Layout::new(p);
    let q = l.q;
    let srank = |v: usize| if v < q { 2 * v + 1 } else { v + q };
    let mut rounds: Vec<Vec<Transfer>> = Vec::new();
    if q > 0 {
        rounds.push(if rank < 2 * q {
            let b = rank & !1;
            vec![t(b, b + 1, 0, m, L)]
        } else {
            vec![]
        });
    }
    let v = if rank < 2 * q {
        (rank % 2 == 1).then_some(rank / 2)
    } else {
        Some(rank - q)
    };
    for z in 0..l.n {
        rounds.push(match v {
            Some(v) => {
                let w = v ^ (1 << z);
                let pr = srank(w);
                let (mine, theirs) = if v < w { (R, L) } else { (L, R) };
                vec![t(pr, rank, 0, m, mine), t(rank, pr, 0, m, theirs)]
            }
            None => vec![],
        });
    }
    if q > 0 {
        rounds.push(if rank < 2 * q {
            let b = rank & !1;
            vec![t(b + 1, b, 0, m, C)]
        } else {
            vec![]
        });
    }
    rounds
}

/// Bandwidth-optimised allreduce (§6.1 + §6.2) for `rank`.
pub fn bw_allreduce(p: usize, m: usize, rank: usize) -> Vec<Vec<Transfer>> {
    let mut r = reduction_phase(p, m, rank);
    r.extend(allreduce_routing(p, m, rank));
    r
}

/// Reduce to `root` (§6.1 + §6.3) for `rank`.
pub fn bw_reduce(p: usize, m: usize, root: usize, rank: usize) -> Vec<Vec<Transfer>> {
    let mut r = reduction_phase(p, m, rank);
    r.extend(reduce_routing(p, m, root, rank));
    r
}

/// The global schedule: per round, every transfer once (collected from each rank's sends).
pub fn global(p: usize, per_rank: impl Fn(usize) -> Vec<Vec<Transfer>>) -> Vec<Vec<Transfer>> {
    let mut rounds: Vec<Vec<Transfer>> = Vec::new();
    for rank in 0..p {
        for (i, round) in per_rank(rank).into_iter().enumerate() {
            if rounds.len() <= i {
                rounds.resize_with(i + 1, Vec::new);
            }
            rounds[i].extend(round.into_iter().filter(|tr| tr.src == rank));
        }
    }
    rounds
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[allow(clippy::needless_range_loop)]
    fn groups_partition_ranks_in_order() {
        for p in 2..200 {
            let l = Layout::new(p);
            let mut seen = vec![false; p];
            let mut last_g = 0;
            for r in 0..p {
                let g = l.group_of(r);
                assert!(g >= last_g && g < l.groups(), "p={p} r={r}");
                last_g = g;
                if let Some(v) = l.survivor(r) {
                    assert_eq!(l.survivor_rank(v), r);
                    assert!(!seen[r]);
                    seen[r] = true;
                }
            }
            assert_eq!(seen.iter().filter(|&&s| s).count(), l.pw, "p={p}");
        }
    }

    #[test]
    fn sibling_matches_partner_levels() {
        for p in 2..130 {
            let l = Layout::new(p);
            for m in [0, 1, 2, 7, 64, 1000] {
                for v in 0..l.pw {
                    let lv = l.levels(m, v);
                    for z in 1..l.n {
                        let w = v ^ (1 << z);
                        assert_eq!(Layout::sibling(&lv, v, z), l.levels(m, w)[z], "p={p} m={m}");
                    }
                }
            }
        }
    }

    #[test]
    fn final_blocks_match_levels() {
        for p in 2..130 {
            let l = Layout::new(p);
            for m in [0, 1, 2, 7, 64, 1000] {
                let fb = final_blocks(p, m);
                assert_eq!(fb.len(), l.pw);
                for (r, lo, hi) in fb {
                    assert_eq!(final_block(p, m, r), Some((lo, hi)), "p={p} m={m} r={r}");
                }
            }
        }
    }

    #[test]
    fn round_counts() {
        for p in 1..100 {
            let q = ceil_log2(p);
            let l = Layout::new(p);
            for r in 0..p {
                assert_eq!(reduction_phase(p, 10, r).len(), q, "p={p} r={r}");
                let lat = latency_allreduce(p, 10, r).len();
                assert_eq!(lat, if p == l.pw { l.n } else { q + 1 });
                if p > 1 {
                    assert_eq!(allreduce_routing(p, 10, r).len(), q);
                }
            }
        }
    }
}
