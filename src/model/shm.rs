//! Cost of `shm` ([`crate::algo::shm`]): no message, only memory traffic and one handshake
//! of cache-line counters per chunk. A rank's time is the bytes it streams (read plus
//! written) over one core's bandwidth, plus the handshakes of the chunks:
//!
//! `t = W / b(m) + chunks(m) · p · σ`, `chunks(m) = max(1, m / CELL)` (real, not rounded up),
//! `b(m)`: the hot bandwidth for the first [`HOT_BYTES`] of the message, the cold one beyond,
//!
//! with W the bytes streamed by the busiest rank (the ranks work in parallel: slices of a
//! reduction, blocks of a reduce_scatter, readers of a bcast), m the message bytes:
//!
//! * reduce (root), allreduce: copy in `2m(p−1)/p`, fold one slice `(p+1)m/p`, copy out
//!   `2m(p−1)/p`;
//! * reduce_scatter: copy in `2m(p−1)/p`, fold the own block `(p+1)m/p`;
//! * bcast: `2m` (the root copies in, every other rank copies out, a chunk behind);
//! * allgather(v): copy in the own block `2m/p`, copy out the others `2m(p−1)/p`: `2m`.
//!
//! The constants were measured once on the development machine (2 cores, other jobs running:
//! read them as the order of magnitude) with `verify/bound.c` (one core, `z = x + y` over
//! doubles, 3m bytes streamed, median of 200): hot (the same buffers each time) 64 KiB
//! 5.4 µs, 256 KiB 22.2, 1 MiB 85.4, 2 MiB 190 — about 35 GB/s; cold (rotated over 96 MiB)
//! 1 MiB 161 µs, 2 MiB 349, 8 MiB 1257 — about 19 GB/s (hot 8 MiB: 1285). The handshake: a
//! forced p = 2 reduce of 4 KiB took 1.17-1.82 µs (docs/shm.md), about 2σ.
//!
//! Ranks beyond the cores (oversubscription) are not priced: the waits yield the core, and
//! p = 4 on 2 cores measured 0.23-1.01x native (docs/shm.md).

use crate::algo::Collective;

/// One core's streaming bandwidth (bytes read plus written per second) while the data stay
/// in the caches: `verify/bound.c` hot, 64 KiB-2 MiB, 33-37 GB/s.
pub const BW_HOT: f64 = 35.0e9;
/// The same from memory: `verify/bound.c` cold 1-8 MiB (and hot 8 MiB), 18-20 GB/s.
pub const BW_COLD: f64 = 19.0e9;
/// The bytes of a message priced at [`BW_HOT`] (the hot rate held to 2 MiB); the rest at
/// [`BW_COLD`].
pub const HOT_BYTES: usize = 2 << 20;
/// Seconds per chunk and rank for the counters' handshake (p = 2, 4 KiB: 1.17-1.82 µs).
pub const SIGMA: f64 = 0.5e-6;
/// Bytes of a cell (the default window, `PCOLL_SHM_BYTES` unset): a chunk of the call.
pub const CELL: usize = 256 << 10;
/// Smallest message priced (below it `shm` is never the model's pick): at 8 B forced `shm`
/// measured 0.5-2.5x native at p = 2, most cells above 1 (Open MPI, MPICH, Intel MPI;
/// docs/shm.md), at 4 KiB 0.27-1.17x; the built-in tables' `shm` rules start at 4 KiB too. A power of two: a bound
/// of the model's size classes, so a decision per class stays exact.
pub const MIN_BYTES: usize = 4096;

/// Bytes the busiest rank streams for `bytes` on `p` ranks.
pub fn streamed(coll: Collective, p: usize, bytes: usize) -> f64 {
    let (m, pf) = (bytes as f64, p.max(1) as f64);
    let copy = 2.0 * m * (pf - 1.0) / pf;
    let fold = (pf + 1.0) * m / pf;
    match coll.base() {
        Collective::Reduce | Collective::Allreduce => 2.0 * copy + fold,
        Collective::ReduceScatter => copy + fold,
        Collective::Bcast | Collective::Allgatherv => 2.0 * m,
        _ => unreachable!("base() maps every collective to one of five"),
    }
}

/// Predicted seconds of `shm` for `coll` on `p` ranks of one node, `bytes` as the tables key
/// them (0 for p ≤ 1 or no bytes; infinite below [`MIN_BYTES`]).
pub fn time(coll: Collective, p: usize, bytes: usize) -> f64 {
    if p <= 1 || bytes == 0 {
        return 0.0;
    }
    if bytes < MIN_BYTES {
        return f64::INFINITY;
    }
    // The first HOT_BYTES of the message at the hot rate, the rest at the cold one: continuous
    // in the size (a decision per size class needs times that grow smoothly within a class).
    let hot = bytes.min(HOT_BYTES) as f64 / bytes as f64;
    let per_byte = hot / BW_HOT + (1.0 - hot) / BW_COLD;
    // Chunks as a real number, at least one: no step at each cell (see above).
    let chunks = (bytes as f64 / CELL as f64).max(1.0);
    streamed(coll, p, bytes) * per_byte + chunks * p as f64 * SIGMA
}

/// Making a communicator's window (`MPI_Comm_split_type`, `MPI_Win_allocate_shared`, the
/// agreements), apart from its pages: the second VM, p = 2, 20 windows each: Open MPI 4.1
/// 0.3 ms, MPICH 5 0.4, Intel MPI 1.4, MPICH 4.0 1.9 (docs/shm.md, Lifetime and limits).
pub const WIN_FIXED: f64 = 0.5e-3;
/// Seconds per byte of a rank's own segment, first touched by it (`MADV_POPULATE_WRITE`, then
/// every byte written: the ranks touch theirs at once). The second VM populated 4 MiB in
/// 2.9 ms; on session 37's VM writing after populating made the window 0.65 ms longer (3.5 ->
/// 4.2-4.3 ms at p = 2).
pub const WIN_TOUCH: f64 = 0.8e-9;
/// Seconds per byte of each other rank's segment, mapped (`MADV_POPULATE_READ`: 4 MiB in
/// 0.3-0.4 ms).
pub const WIN_MAP: f64 = 0.09e-9;

/// Predicted seconds to make a window of `p` ranks with `seg` bytes each (p = 2, 4 MiB: 4.2
/// predicted; measured 3.5-3.9 ms on the second VM before the write after populating, 4.2-4.3
/// with it on session 37's VM).
pub fn window_time(p: usize, seg: usize) -> f64 {
    let seg = seg as f64;
    WIN_FIXED + seg * WIN_TOUCH + seg * WIN_MAP * p.saturating_sub(1) as f64
}

/// A communicator's calls that asked for `shm` before its window is made run the decision
/// without it (the window is "rented", a ski rental): what each such call costs more,
/// predicted: its next pick's time above `shm`'s, and at least `shm`'s own (a table rule
/// took `shm` where it measured it faster, which the model may not see).
pub fn rent(t_shm: f64, t_next: f64) -> f64 {
    (t_next - t_shm).max(t_shm)
}

/// The calls a window made before its rent is paid must repay it within, at their mean rent:
/// the `after`-th call makes it only then. A communicator that stops soon after pays the
/// window for nothing (a dup, ten 4 KiB allreduces and its free at p = 2: ~100x native's time
/// by the model's costs; session 54's bug hunt), a bet worth making where a benchmark's one size
/// step (1000 iterations and more) repays it; calls that gain less (the 4-16 KiB allreduces
/// at p = 2: 1.4-2.6 us predicted, repaid in 1400-2700 calls) wait for their rent.
pub const REPAY_CALLS: u64 = 1000;

/// Calls of one shape in a row (a loop) past the `after`-th make the window once the rent
/// paid reaches this many times its cost (numerator, denominator: 2.5), so that a loop pays
/// at most 3.5 times the best choice made knowing how long it runs. More than twice the
/// cost: a benchmark times calls of one size at the end of a loop (IMB-MPI1 makes 2101 calls
/// a size, the last 1000 timed: measured by delaying single calls 5 ms), and a loop of
/// calls whose mean rent does not repay the cost within [`REPAY_CALLS`] (those that do make
/// it at the `after`-th) needs more than 2.5 x [`REPAY_CALLS`] calls to reach 2.5 times it.
/// At twice the cost an Intel MPI reduce of 32 KiB at p = 2 (4.28 us a call, the cost 4.30
/// ms) made it at its 2010th call, in IMB's timed loop when its sizes started at 32 KiB.
pub const LOOP_COSTS: (u128, u128) = (5, 2);

/// Seconds as the whole picoseconds [`WindowWait`] counts in: exact sums, the same on every
/// rank in whatever order and grouping its calls are added.
fn ps(seconds: f64) -> u64 {
    (seconds.max(0.0) * 1e12).round() as u64
}

/// The calls that asked for `shm` on a communicator whose window is not made yet ([`rent`]:
/// what each loses without it). The window is made
/// * at the `after`-th call if their mean rent repays the window's cost ([`window_time`])
///   within [`REPAY_CALLS`], or before it at the call that brings the rent paid to the cost
///   (a benchmark does not time a size's first calls);
/// * at a call of another rent than the one before it (another size or collective) if the
///   rent paid, plus this call's as many times as the last rent's run of calls was long,
///   reaches the cost: the new shape is predicted to run as long as the last one did (a
///   benchmark's sizes are loops of equal length; the window is made in a size's first
///   call, its warm-up, not in its timed loop; until session 57 the call that brought the
///   sum to the cost made it, inside IMB-MPI1's timed loop for 16 of 44 windows measured);
/// * else at the call that brings the rent paid to [`LOOP_COSTS`] times the cost.
///
/// `after` = 1 (a forced `shm`, `PCOLL_SHM_AFTER=1`): at once. Every rank of the
/// communicator sees the same calls and prices them alike (the model is agreed), so they
/// make it in the same call. Counted in integers, so that calls counted in bulk
/// ([`WindowWait::add`]: the gate's memo forwards waiting calls from C and counts them) sum
/// to what counting them one by one gives.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct WindowWait {
    /// Calls that ran without the window.
    pub calls: u64,
    /// Their rent, summed (picoseconds).
    pub rent_ps: u64,
    /// The rent of the last of them (picoseconds; None before the first) ...
    pub last_ps: Option<u64>,
    /// ... and how many calls in a row, up to the last, had it.
    pub run: u64,
}

impl WindowWait {
    /// A call asking for `shm` whose rent is `rent`: true to make the window now; false to
    /// run the call without it (counted). Asked again with the same rent after a true, the
    /// answer is true again (nothing was counted).
    pub fn ask(&mut self, rent: f64, cost: f64, after: u32) -> bool {
        if self.makes(ps(rent), ps(cost), after) {
            return true;
        }
        self.add(1, rent);
        false
    }

    /// `n` calls of rent `rent` that ran without the window (none of them the one that makes
    /// it: [`WindowWait::waiting`]).
    pub fn add(&mut self, n: u64, rent: f64) {
        if n == 0 {
            return;
        }
        let r = ps(rent);
        self.calls += n;
        self.rent_ps += n * r;
        if self.last_ps == Some(r) {
            self.run += n;
        } else {
            (self.last_ps, self.run) = (Some(r), n);
        }
    }

    /// The calls of rent `rent` that run without the window from now on, one after another,
    /// before the one that makes it: [`WindowWait::ask`] answers false to that many and true
    /// to the next (`u64::MAX`: never, a rent of 0 below the `after`-th call).
    pub fn waiting(&self, rent: f64, cost: f64, after: u32) -> u64 {
        let (r, cost) = (u128::from(ps(rent)), u128::from(ps(cost)));
        let (c, s) = (u128::from(self.calls), u128::from(self.rent_ps));
        let div_ceil = |a: u128, b: u128| a.div_ceil(b);
        // The first j >= 1 whose call brings the sum to num / den times the cost.
        let reach = |(num, den): (u128, u128)| match () {
            _ if den * (s + r) >= num * cost => 1,
            _ if r == 0 => u128::MAX,
            _ => div_ceil(num * cost - den * s, den * r),
        };
        // The first makes it if its rent is another and the sum predicted reaches the cost;
        // any, the one that brings the sum to LOOP_COSTS times the cost (after the first, the
        // calls' rent is the last call's) ...
        let mut by_sum = match () {
            _ if self.another(r) && s + self.predicted(r) >= cost => 1,
            _ => reach(LOOP_COSTS),
        };
        // ... or the one before the `after`-th that brings the sum to the cost ...
        let early = reach((1, 1));
        if c.saturating_add(early) < u128::from(after) {
            by_sum = by_sum.min(early);
        }
        // ... or it is at least the `after`-th and the mean repays the cost:
        // (s + j r) R >= cost (c + j), i.e. j (r R - cost) >= cost c - s R.
        let first = u128::from(after).saturating_sub(c).max(1);
        let (rr, need) = (r * u128::from(REPAY_CALLS), cost * c);
        let have = s * u128::from(REPAY_CALLS);
        let by_mean = if after <= 1 {
            1
        } else if rr > cost {
            first.max(div_ceil(need.saturating_sub(have), rr - cost))
        } else if have < need {
            u128::MAX // the mean is below and never rises
        } else if rr == cost {
            first
        } else {
            // The mean is above and falls: only while j <= (s R - cost c) / (cost - r R).
            let last = (have - need) / (cost - rr);
            if first <= last {
                first
            } else {
                u128::MAX
            }
        };
        let j = by_sum.min(by_mean);
        u64::try_from(j - 1).unwrap_or(u64::MAX)
    }

    /// The next call, of rent `r` (ps), makes the window.
    fn makes(&self, r: u64, cost: u64, after: u32) -> bool {
        let r = u128::from(r);
        let (calls, s) = (u128::from(self.calls) + 1, u128::from(self.rent_ps));
        let cost = u128::from(cost);
        let repaid = after <= 1 || (s + r) * u128::from(REPAY_CALLS) >= cost * calls;
        let (num, den) = LOOP_COSTS;
        (calls >= u128::from(after) && repaid)
            || (calls < u128::from(after) && s + r >= cost)
            || (self.another(r) && s + self.predicted(r) >= cost)
            || den * (s + r) >= num * cost
    }

    /// A call of rent `r` (ps) is of another shape than the last.
    fn another(&self, r: u128) -> bool {
        self.last_ps.map(u128::from) != Some(r)
    }

    /// The rent a call of another shape, of rent `r` (ps), is predicted to bring: as many
    /// calls as the last shape's run (at least this one).
    fn predicted(&self, r: u128) -> u128 {
        r * u128::from(self.run.max(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_is_made_at_the_after_th_call_or_once_the_rent_reaches_its_cost() {
        // Small rents that repay the window within REPAY_CALLS: the `after`-th call makes it.
        let mut w = WindowWait::default();
        let made: Vec<bool> = (0..10).map(|_| w.ask(5e-6, 4e-3, 8)).collect();
        assert_eq!(made.iter().position(|&m| m), Some(7));
        assert_eq!(w.calls, 7);
        assert_eq!(w.rent_ps, 35_000_000);
        // Rents too small for that, all of one shape: made once they sum to 2.5 times the
        // cost (10 000 calls of 1 us; the window's cost is not laid on one size's timed loop).
        let mut w = WindowWait::default();
        let first = (0..12_000).position(|_| w.ask(1e-6, 4e-3, 8));
        assert!(matches!(first, Some(9998..=10_000)), "{first:?}");
        assert_eq!((w.run, w.last_ps), (w.calls, Some(1_000_000)));
        // Another shape after a run of 1500 calls of 1 us, predicted to run as long: 1.5 ms
        // paid + 1500 x 2 us reaches 4 ms, so its first call makes it (a benchmark's next
        // size, in its warm-up) ...
        let mut w = WindowWait::default();
        assert!((0..1500).all(|_| !w.ask(1e-6, 4e-3, 8)));
        assert!(w.ask(2e-6, 4e-3, 8));
        // ... after 1000 (1 ms + 2 ms) not, and its calls then wait for 2.5 times the cost
        // (4500 of them); a call of a third rent on the way makes it once 1 ms + j x 2 us +
        // j x 3 us reaches 4 ms (j = 600), not before (j = 500).
        let mut w = WindowWait::default();
        assert!((0..1000).all(|_| !w.ask(1e-6, 4e-3, 8)));
        let mut two = w;
        let first = (0..5000).position(|_| two.ask(2e-6, 4e-3, 8));
        assert_eq!(first, Some(4499));
        assert!((0..500).all(|_| !w.ask(2e-6, 4e-3, 8)));
        let mut third = w;
        assert!(!third.ask(3e-6, 4e-3, 8));
        assert!((0..100).all(|_| !w.ask(2e-6, 4e-3, 8)));
        assert!(w.ask(3e-6, 4e-3, 8));
        assert_eq!(w.run, 600);
        // A large call among small ones lifts the mean: 7 calls of 1 us, then one of 3 ms
        // (the sum still below the cost) is the `after`-th and makes it.
        let mut w = WindowWait::default();
        let made: Vec<bool> = [1e-6; 7]
            .iter()
            .chain(&[3e-3, 1e-6])
            .map(|&r| w.ask(r, 4e-3, 8))
            .collect();
        assert_eq!(made.iter().position(|&m| m), Some(7));
        // `after` = 1: at once, nothing counted, whatever the rent (a forced non-blocking
        // call of a few bytes wants it at once).
        let mut w = WindowWait::default();
        assert!(w.ask(1.0, 4e-3, 1));
        assert!(w.ask(1e-9, 4e-3, 1));
        assert_eq!(w, WindowWait::default());
        // Large rents: before the `after`-th call, the call that brings the sum to the cost
        // (1.5 ms each against 4 ms: the third; a benchmark's first calls of a size are not
        // timed).
        let mut w = WindowWait::default();
        let made: Vec<bool> = (0..4).map(|_| w.ask(1.5e-3, 4e-3, 8)).collect();
        assert_eq!(made, [false, false, true, true]);
        // A benchmark's sizes, 2101 calls each (IMB-MPI1: the last 1000 timed), the first
        // waiting one just below the mean's line (4.28 us against 4.3 ms / 1000): not made
        // in its loop, but at the next size's first call; just above it: at the eighth.
        let mut w = WindowWait::default();
        assert!((0..2101).all(|_| !w.ask(4.28e-6, 4.3e-3, 8)));
        assert!(w.ask(7.5e-6, 4.3e-3, 8));
        let mut w = WindowWait::default();
        let first = (0..2101).position(|_| w.ask(4.31e-6, 4.3e-3, 8));
        assert_eq!(first, Some(7));
        // A rent as large as the window: at once.
        assert!(WindowWait::default().ask(4e-3, 4e-3, 8));
    }

    /// [`WindowWait::waiting`] against asking call by call, from states reached by runs of
    /// calls of other rents and of the same (mean above and below the repaid line, before and
    /// after `after`, the sum below and above the cost, runs short and long).
    #[test]
    fn waiting_counts_the_calls_ask_answers_false_to() {
        use proptest::prelude::*;
        let rent = || prop_oneof![0.0..20e-6, 0.0..6e-3, Just(0.0), Just(4.3e-6)];
        proptest!(ProptestConfig::with_cases(3000), |(
            before in proptest::collection::vec((rent(), 1usize..2000), 0..5),
            r in rent(),
            cost in prop_oneof![1e-3..6e-3, Just(4.3e-3)],
            after in 1u32..12,
            repeats in 0usize..4,
        )| {
            // Runs of calls of other rents, then some of rent r (the sum may pass the cost
            // in them).
            let mut w = WindowWait::default();
            let calls = before.iter().flat_map(|&(b, n)| std::iter::repeat_n(b, n));
            for b in calls.chain(std::iter::repeat_n(r, repeats)) {
                if w.ask(b, cost, after) {
                    return Ok(()); // made already: nothing waits
                }
            }
            let k = w.waiting(r, cost, after);
            let mut sim = w;
            let limit = 20_000u64;
            let asked = (0..limit).position(|_| sim.ask(r, cost, after)).map(|i| i as u64);
            match asked {
                Some(n) => prop_assert_eq!(k, n),
                None => prop_assert!(k >= limit, "waiting {} but no call made it in {}", k, limit),
            }
            // Counted in bulk, the state is the one of counting them one by one.
            let n = k.min(500);
            let (mut bulk, mut one) = (w, w);
            bulk.add(n, r);
            for _ in 0..n {
                prop_assert!(!one.ask(r, cost, after));
            }
            prop_assert_eq!(bulk, one);
        });
    }

    #[test]
    fn rent_is_the_difference_and_at_least_shm_itself() {
        assert_eq!(rent(1.0, 5.0), 4.0);
        assert_eq!(rent(1.0, 1.5), 1.0);
        assert_eq!(rent(2.0, 1.0), 2.0); // the model prices the next pick faster
    }

    #[test]
    fn window_time_of_the_default_segment_at_two_ranks_is_a_few_milliseconds() {
        let t = window_time(2, 4 << 20);
        assert!((4.0e-3..4.6e-3).contains(&t), "{t}");
        assert_eq!(window_time(1, 0), WIN_FIXED);
        assert!(window_time(8, 2 << 20) > window_time(2, 2 << 20));
    }

    #[test]
    fn grows_with_bytes_from_min_bytes_and_is_zero_alone() {
        for coll in Collective::ALL {
            assert_eq!(time(coll, 1, 1 << 20), 0.0);
            assert_eq!(time(coll, 4, 0), 0.0);
            for p in [2, 3, 8] {
                assert_eq!(time(coll, p, MIN_BYTES - 1), f64::INFINITY);
                let mut last = 0.0;
                for e in 12..26 {
                    let t = time(coll, p, 1 << e);
                    assert!(t > last, "{coll} p={p} 2^{e}");
                    last = t;
                }
            }
        }
    }

    #[test]
    fn reduce_at_two_ranks_streams_three_and_a_half_m() {
        // Root at p = 2: copy in m, fold 1.5m, copy out m; 2 MiB at 35 GB/s: 210 µs + 8 chunks.
        assert_eq!(streamed(Collective::Reduce, 2, 1000), 3500.0);
        let t = time(Collective::Reduce, 2, 2 << 20); // 8 chunks
        assert!((t - (3.5 * 2097152.0 / BW_HOT + 8.0 * 2.0 * SIGMA)).abs() < 1e-12);
        assert_eq!(streamed(Collective::Bcast, 5, 1000), 2000.0);
        assert_eq!(streamed(Collective::ReduceScatter, 2, 1000), 2500.0);
    }
}
