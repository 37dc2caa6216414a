//! Träff's circulant-graph schedules (ALGORITHMS.md §5, pitfalls §8, vectors §9; paper
//! "Optimal broadcast schedules in logarithmic time with applications to broadcast,
//! all-broadcast, reduction and all-reduction", arXiv 2407.18004, Algorithms 2–6).
//!
//! Pure integer code: `p` processes, relative rank `r` (the root is 0), `q = ceil(log2 p)`
//! rounds per phase. In round `k` every process `r` sends to `(r + s[k]) mod p` and receives
//! from `(r − s[k]) mod p` (a circulant graph with the skips `s[0..q]`).
//!
//! * [`skips`]: `s[q] = p`, `s[k] = ceil(s[k+1] / 2)` (§5.1), O(log p).
//! * [`baseblock`]: smallest index of the greedy (canonical) skip sequence of `r`, `q` for the
//!   root (§5.2), O(log p).
//! * [`recv_schedule`]: `R_r[0..q]`, the block `r` receives in round `k` of the first phase
//!   (paper Algorithms 4–5: depth-first search over canonical skip sequences with removal of
//!   accepted skip indices, with the `k < q` / `k == q` guard of §5.3 / §8.4), O(log p) time
//!   and space.
//! * [`send_schedule`]: `S_r[0..q]` (paper Algorithm 6), O(log p) time with at most four
//!   look-ups of a neighbour's receive schedule.
//!
//! Block numbers are phase-relative: a negative entry `j − q` means "block `j` of the previous
//! phase"; the n-block broadcast ([`bcast_rounds`], [`block_at`]) adds the phase offset
//! `q·floor(i/q) − x` with `x` virtual rounds (§5.6, pitfall 1) and caps blocks at `n − 1`
//! (pitfall 2); negative blocks are not communicated.
//!
//! # Correctness conditions (§5.5), for every `p ≥ 2`, every relative rank `r`, every round `k`
//!
//! 1. **Receiver and sender agree**: `R_r[k] = S_{(r−s[k]) mod p}[k]` for `r ≠ 0`.
//! 2. **Sender knows the receiver**: `S_r[k] = R_{(r+s[k]) mod p}[k]` when the to-process is
//!    not the root (it also holds for the root, but that send is never executed).
//! 3. **All blocks arrive**: for `r ≠ 0`, `{R_r[0..q]} = {b_r} ∪ {j − q : 0 ≤ j < q, j ≠ b_r}`:
//!    exactly one non-negative entry (the baseblock `b_r`) and all residues mod q distinct.
//!    The root's R is a permutation of `{−q..−1}` (unused).
//! 4. **Only owned blocks are sent**: for `r ≠ 0`, `S_r[k] = b_r − q` or `S_r[k] = R_r[j]` for
//!    some `j < k`; in particular `S_r[0] = b_r − q`. The root sends `S_0[k] = k`.
//!
//! Each condition has its own test (`tests/circulant_sched.rs`: exhaustive for p ≤ 4096,
//! sampled ranks of sampled p up to 2^30), plus the vectors of `vectors.json` and an n-block
//! broadcast simulation (every process gets every block exactly once in `n − 1 + q` rounds).
//!
//! Cost of the n-block broadcast: `(n−1+q)(α + β⌈m/n⌉)`, best `n ≈ √((q−1)βm/α)`.

/// `q = ceil(log2 p)` (0 for p ≤ 1).
pub fn rounds_per_phase(p: usize) -> usize {
    crate::sched::blocks::ceil_log2(p)
}

/// Skips `s[0..=q]` with `s[q] = p` and `s[k] = ceil(s[k+1]/2)` (§5.1). `p = 1` → `[1]`.
pub fn skips(p: usize) -> Vec<usize> {
    let p = p.max(1);
    let q = rounds_per_phase(p);
    let mut s = vec![0; q + 1];
    s[q] = p;
    for k in (0..q).rev() {
        s[k] = s[k + 1].div_ceil(2);
    }
    s
}

/// Baseblock of relative rank `r` (§5.2): the smallest skip index of the canonical (greedy,
/// largest skip first) sequence summing to `r`; `q` for `r = 0`. O(log p).
pub fn baseblock(p: usize, r: usize) -> usize {
    let s = skips(p);
    baseblock_with(&s, r)
}

fn baseblock_with(s: &[usize], r: usize) -> usize {
    let q = s.len() - 1;
    let mut b = q;
    let mut acc = 0;
    for k in (0..q).rev() {
        if acc + s[k] <= r {
            acc += s[k];
            b = k;
            if acc == r {
                break;
            }
        }
    }
    debug_assert!(acc == r || r == 0);
    b
}

/// Largest q: p < 2^64, so at most 64 rounds; list slots for indices −1..=q.
const MAXQ: usize = 64;

/// Depth-first search state of Algorithm 4 (`allblocks`). Indices `e ∈ −1..=q` are stored at
/// `e + 1`; `−1` is the sentinel of the circular doubly linked list of remaining skip indices.
/// Fixed-size arrays: O(log p) space without heap allocation.
struct Dfs<'a> {
    s: &'a [usize],
    q: usize,
    target: i64,
    next: [i8; MAXQ + 2],
    prev: [i8; MAXQ + 2],
    k: usize,
    r: [i8; MAXQ],
}

impl Dfs<'_> {
    fn sk(&self, e: usize) -> i64 {
        self.s[e] as i64
    }
    fn next(&self, e: i64) -> i64 {
        self.next[(e + 1) as usize] as i64
    }
    /// Unlink `e`; its own `next` pointer stays valid (it still leads to smaller indices).
    fn unlink(&mut self, e: i64) {
        let (n, pr) = (self.next[(e + 1) as usize], self.prev[(e + 1) as usize]);
        self.next[(pr + 1) as usize] = n;
        self.prev[(n + 1) as usize] = pr;
    }
    fn run(&mut self, cur: i64, mut bound: i64, mut e: i64) {
        let (t, q) = (self.target, self.q);
        // The `k < q` guard (pitfall 4): never evaluate s[k + 1] with k = q.
        while e != -1 && self.k < q {
            let c = cur + self.sk(e as usize);
            if c <= t - self.sk(self.k) && c < bound {
                if c <= t - self.sk(self.k + 1) {
                    // c lies below round k's window: go deeper (same e, re-tested inside).
                    self.run(c, bound, e);
                    if self.k == q {
                        return;
                    }
                }
                if cur > t - self.sk(self.k + 1) {
                    return;
                }
                bound = c;
                self.r[self.k] = e as i8;
                self.k += 1;
                self.unlink(e);
            }
            e = self.next(e);
        }
    }
}

fn recv_with(s: &[usize], r: usize) -> Vec<i64> {
    let q = s.len() - 1;
    if q == 0 {
        return Vec::new();
    }
    let p = s[q] as i64;
    let b = baseblock_with(s, r) as i64;
    // L = q, q−1, ..., 0, −1 (sentinel), circular.
    let mut d = Dfs {
        s,
        q,
        target: r as i64 + p,
        next: [0; MAXQ + 2],
        prev: [0; MAXQ + 2],
        k: 0,
        r: [0; MAXQ],
    };
    for e in -1..=(q as i64) {
        d.next[(e + 1) as usize] = if e == -1 { q as i8 } else { (e - 1) as i8 };
        d.prev[(e + 1) as usize] = if e == q as i64 { -1 } else { (e + 1) as i8 };
    }
    d.unlink(b);
    d.run(0, 2 * p, q as i64);
    debug_assert_eq!(d.k, q, "allblocks did not fill all rounds (p={p}, r={r})");
    let qi = q as i64;
    d.r[..q]
        .iter()
        .map(|&e| if e as i64 == qi { b } else { e as i64 - qi })
        .collect()
}

/// Receive schedule `R_r[0..q]` of relative rank `r` (paper Algorithms 4–5, §5.3).
/// O(log p) time and space.
pub fn recv_schedule(p: usize, r: usize) -> Vec<i64> {
    assert!(r < p.max(1), "rank {r} out of range for p = {p}");
    recv_with(&skips(p), r)
}

/// Algorithm 6 with the look-up rounds reported (`lookups`: the rounds `k` in which the
/// to-process's receive schedule had to be computed).
fn send_with(s: &[usize], r: usize, mut lookups: Option<&mut Vec<usize>>) -> Vec<i64> {
    let q = s.len() - 1;
    if q == 0 {
        return Vec::new();
    }
    let qi = q as i64;
    if r == 0 {
        return (0..qi).collect();
    }
    let p = s[q];
    let b = baseblock_with(s, r) as i64;
    let mut out = vec![0i64; q];
    let look = |k: usize, lookups: &mut Option<&mut Vec<usize>>| -> i64 {
        if let Some(l) = lookups.as_deref_mut() {
            l.push(k);
        }
        recv_with(s, (r + s[k]) % p)[k]
    };
    let (mut v, mut c, mut e) = (r, b, p);
    for k in (1..q).rev() {
        if v < s[k] {
            // Lower part.
            out[k] = if v + s[k] < e || e < s[k - 1] || (k == 1 && b > 0) {
                c
            } else {
                look(k, &mut lookups)
            };
            e = e.min(s[k]);
        } else {
            // Upper part.
            c = k as i64 - qi;
            e -= s[k];
            out[k] = if v > s[k] || v <= e || k == 1 || e < s[k - 1] {
                c
            } else {
                look(k, &mut lookups)
            };
            v -= s[k];
        }
    }
    out[0] = b - qi;
    out
}

/// Send schedule `S_r[0..q]` of relative rank `r` (paper Algorithm 6, §5.4): O(log p) time,
/// at most four O(log p) look-ups of the to-process's receive schedule.
pub fn send_schedule(p: usize, r: usize) -> Vec<i64> {
    assert!(r < p.max(1), "rank {r} out of range for p = {p}");
    send_with(&skips(p), r, None)
}

/// [`send_schedule`] together with the rounds in which Algorithm 6 looked up the
/// to-process's receive schedule (for tests: the paper proves at most 4).
pub fn send_schedule_traced(p: usize, r: usize) -> (Vec<i64>, Vec<usize>) {
    let mut l = Vec::new();
    let s = send_with(&skips(p), r, Some(&mut l));
    (s, l)
}

/// Everything one (relative) rank needs for circulant communication.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Schedule {
    pub p: usize,
    pub q: usize,
    pub skips: Vec<usize>,
    /// Phase-relative receive schedule `R_r[0..q]`.
    pub recv: Vec<i64>,
    /// Phase-relative send schedule `S_r[0..q]`.
    pub send: Vec<i64>,
}

impl Schedule {
    /// Schedule of relative rank `r` (root = 0). O(log p).
    pub fn new(p: usize, r: usize) -> Schedule {
        let s = skips(p);
        Schedule {
            p: p.max(1),
            q: s.len() - 1,
            recv: recv_with(&s, r),
            send: send_with(&s, r, None),
            skips: s,
        }
    }
    /// Process this rank sends to in round `k` (relative ranks).
    pub fn to(&self, r: usize, k: usize) -> usize {
        (r + self.skips[k]) % self.p
    }
    /// Process this rank receives from in round `k` (relative ranks).
    pub fn from(&self, r: usize, k: usize) -> usize {
        (r + self.p - self.skips[k] % self.p) % self.p
    }
}

/// Receive schedules of all relative ranks, `O(p log p)` (for all-broadcast / reduce-scatter,
/// where process `rank` plays relative rank `(rank − j) mod p` for every root `j`).
pub fn all_recv(p: usize) -> Vec<Vec<i64>> {
    let s = skips(p);
    (0..p.max(1)).map(|r| recv_with(&s, r)).collect()
}

/// Virtual (skipped) rounds `x = (q − (n−1) mod q) mod q` of an n-block broadcast (§5.6,
/// pitfall 1); 0 for q = 0.
pub fn virtual_rounds(q: usize, n: usize) -> usize {
    if q == 0 {
        0
    } else {
        (q - (n.max(1) - 1) % q) % q
    }
}

/// Number of real rounds of an n-block broadcast on p processes: `n − 1 + q` (0 for p = 1).
pub fn bcast_round_count(p: usize, n: usize) -> usize {
    let q = rounds_per_phase(p);
    if q == 0 {
        0
    } else {
        n.max(1) - 1 + q
    }
}

/// The real rounds of an n-block broadcast, in order: `(k, off)` with round-in-phase
/// `k = i mod q` and block offset `off = q·floor(i/q) − x` for global rounds
/// `i = x ..= n − 2 + q + x` (§5.6). Entry `e` of R or S means block [`block_at`]`(e, off, n)`.
/// Empty for p = 1. Reduce / reduce-scatter run these rounds in reverse.
pub fn bcast_rounds(p: usize, n: usize) -> Vec<(usize, i64)> {
    let q = rounds_per_phase(p);
    let n = n.max(1);
    if q == 0 {
        return Vec::new();
    }
    let x = virtual_rounds(q, n);
    (x..n - 1 + q + x)
        .map(|i| (i % q, (q * (i / q)) as i64 - x as i64))
        .collect()
}

/// Block addressed by schedule entry `e` at phase offset `off`: `None` if negative (nothing
/// is communicated), else `min(e + off, n − 1)` (capping, pitfall 2).
pub fn block_at(e: i64, off: i64, n: usize) -> Option<usize> {
    let b = e + off;
    (b >= 0).then(|| (b as usize).min(n.max(1) - 1))
}

/// Element range `[lo, lo + len)` of block `b` when `c` elements are split into `n` blocks
/// whose sizes differ by at most one, larger blocks first (same as [`crate::sched::blocks::split`]).
pub fn block_range(c: usize, n: usize, b: usize) -> (usize, usize) {
    let n = n.max(1);
    let (base, rem) = (c / n, c % n);
    (b * base + b.min(rem), base + usize::from(b < rem))
}

fn json_list<T: std::fmt::Display>(v: &[T]) -> String {
    let items: Vec<String> = v.iter().map(|x| x.to_string()).collect();
    format!("[{}]", items.join(","))
}

/// The schedules of all p relative ranks as one JSON object (phase-relative entries, before
/// the virtual-round offset, as in the paper):
/// `{"p":P,"blocks":N,"skips":[q+1],"baseblock":[p],"recv":[[q] per rank],"send":[[q] per rank]}`.
pub fn schedule_json(p: usize, n: usize) -> String {
    let p = p.max(1);
    let s = skips(p);
    let bb: Vec<usize> = (0..p).map(|r| baseblock_with(&s, r)).collect();
    let rows = |f: &dyn Fn(usize) -> Vec<i64>| -> String {
        let v: Vec<String> = (0..p).map(|r| json_list(&f(r))).collect();
        format!("[{}]", v.join(","))
    };
    format!(
        "{{\"p\":{},\"blocks\":{},\"skips\":{},\"baseblock\":{},\"recv\":{},\"send\":{}}}",
        p,
        n,
        json_list(&s),
        json_list(&bb),
        rows(&|r| recv_with(&s, r)),
        rows(&|r| send_with(&s, r, None)),
    )
}

/// Human-readable table like the paper's Table 1 (p = 17): a header, the baseblocks, then one
/// row per round `R0..R(q−1)` and `S0..S(q−1)`, one column per relative rank.
pub fn schedule_table(p: usize) -> String {
    let p = p.max(1);
    let s = skips(p);
    let q = s.len() - 1;
    let recv: Vec<Vec<i64>> = (0..p).map(|r| recv_with(&s, r)).collect();
    let send: Vec<Vec<i64>> = (0..p).map(|r| send_with(&s, r, None)).collect();
    let bb: Vec<i64> = (0..p).map(|r| baseblock_with(&s, r) as i64).collect();
    let w = [p as i64 - 1, -(q as i64)]
        .iter()
        .map(|x| x.to_string().len())
        .max()
        .unwrap_or(1)
        .max(2);
    let lw = format!("R{}:", q.saturating_sub(1)).len();
    let mut out = format!(
        "p={p} q={q} skips: {}\n",
        s.iter()
            .map(|x| x.to_string())
            .collect::<Vec<_>>()
            .join(" ")
    );
    let mut row = |label: String, vals: &mut dyn Iterator<Item = i64>| {
        out.push_str(&format!("{label:<lw$}"));
        for v in vals {
            out.push_str(&format!(" {v:>w$}"));
        }
        out.push('\n');
    };
    row("r:".into(), &mut (0..p as i64));
    row("b:".into(), &mut bb.iter().copied());
    for k in 0..q {
        row(format!("R{k}:"), &mut recv.iter().map(|v| v[k]));
    }
    for k in 0..q {
        row(format!("S{k}:"), &mut send.iter().map(|v| v[k]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paper_p17_table() {
        // §9 (identical to the paper's Table 1).
        let want_r: [[i64; 17]; 5] = [
            [
                -4, 0, -5, -4, -3, -5, -2, -5, -4, -3, -1, -5, -4, -3, -5, -2, -5,
            ],
            [
                -5, -4, 1, -5, -4, -3, -3, -2, -5, -4, -3, -1, -5, -4, -3, -3, -2,
            ],
            [
                -2, -2, -2, 2, 0, -4, -4, -3, -2, -2, -4, -3, -1, -1, -4, -4, -3,
            ],
            [
                -1, -3, -3, -2, -2, 3, 0, 1, 2, -5, -2, -2, -2, -2, -1, -1, -1,
            ],
            [-3, -1, -1, -1, -1, -1, -1, -1, -1, 4, 0, 1, 2, 0, 3, 0, 1],
        ];
        let want_s: [[i64; 17]; 5] = [
            [
                0, -5, -4, -3, -5, -2, -5, -4, -3, -1, -5, -4, -3, -5, -2, -5, -4,
            ],
            [
                1, -5, -4, -3, -3, -2, -5, -4, -3, -1, -5, -4, -3, -3, -2, -5, -4,
            ],
            [
                2, 0, -4, -4, -3, -2, -2, -4, -3, -1, -1, -4, -4, -3, -2, -2, -2,
            ],
            [
                3, 0, 1, 2, -5, -2, -2, -2, -2, -1, -1, -1, -1, -3, -3, -2, -2,
            ],
            [4, 0, 1, 2, 0, 3, 0, 1, -3, -1, -1, -1, -1, -1, -1, -1, -1],
        ];
        for r in 0..17 {
            let rs = recv_schedule(17, r);
            let ss = send_schedule(17, r);
            for k in 0..5 {
                assert_eq!(rs[k], want_r[k][r], "R r={r} k={k}");
                assert_eq!(ss[k], want_s[k][r], "S r={r} k={k}");
            }
        }
    }

    #[test]
    fn p1_is_trivial() {
        assert_eq!(skips(1), vec![1]);
        assert_eq!(baseblock(1, 0), 0);
        assert!(recv_schedule(1, 0).is_empty() && send_schedule(1, 0).is_empty());
        assert!(bcast_rounds(1, 5).is_empty());
    }
}
