//! The arithmetic of a cell's decisions: each rank's time per candidate (the lower quartile),
//! the winner of an agreement (learning's and a race's), and the confirmation's length.
use super::{CONFIRM_BLOCK, CONFIRM_BLOCKED, CONFIRM_ROUNDS, MIN_GAIN_NS};

/// The lower quartile of `v`: its `(n - 1) / 4`-th smallest value (the best of 1-4 calls,
/// the second best of 5-8, ...; `u64::MAX` for none).
pub fn lower_quartile(v: &[u64]) -> u64 {
    if v.is_empty() {
        return u64::MAX;
    }
    let mut s = v.to_vec();
    s.sort_unstable();
    s[(s.len() - 1) / 4]
}

/// [`Cell::confirm_calls`](super::Cell::confirm_calls) of a cell explored in blocks of `block` with `timed` timed calls
/// per candidate (also what a learned table's note says of it).
pub fn confirm_calls(block: u64, timed: usize) -> u64 {
    if block > 1 {
        return CONFIRM_BLOCKED * CONFIRM_BLOCK;
    }
    (CONFIRM_ROUNDS * timed) as u64
}

/// What a call of a raced cell decided native costs beyond native's own time where the native
/// gate's memo does not take it: the Rust path (0.2-0.45 us measured, MPICH 5 and Intel MPI,
/// p = 2, 8 B-16 KiB).
pub const RACE_NATIVE_COST_NS: u64 = 300;

/// Native's extra cost in a race is at most its time divided by this (5%): since session 31 a
/// raced cell settled native is kept in the gate's memo for every collective, so a call that
/// repeats the last one of its collective costs next to nothing beyond native; 300 ns on a
/// 0.6 us call kept `binomial` bcast at 8 B (0.8 us), then 2-3x native in a loop.
pub const RACE_NATIVE_SHARE: u64 = 20;

/// A race's winner ([`Cell::incumbent`](super::Cell::incumbent)): the faster, counting
/// [`RACE_NATIVE_COST_NS`], at most a [`RACE_NATIVE_SHARE`]th of native's time, on native's
/// side (index 1, the rule's algorithm, unless native plus that is faster). No
/// margin: a race decides between its rule's algorithm and native alone, and a margin on
/// either side sends it to the slower one (with pcoll's 10% + 0.5 us, a race at MPICH 5's
/// allgatherv 8 B kept native at 1.8 us against `butterfly`'s 1.6-1.7, and its calls then
/// took 2.17; with native's 10%, MPICH 5's reduce at 16 KiB cold kept `shm` at 1.23x).
pub fn race_winner(agreed: &[u64]) -> usize {
    match agreed {
        [native, rule, ..]
            if *rule
                <= native.saturating_add(RACE_NATIVE_COST_NS.min(native / RACE_NATIVE_SHARE)) =>
        {
            1
        }
        _ => 0,
    }
}

/// The winner among candidates whose agreed times are `agreed` (nanoseconds, index 0 is
/// native): the fastest pcoll candidate if its time is below `(1 - margin)` × native's and
/// at least [`MIN_GAIN_NS`] below it, else native.
/// Ties go to the earlier candidate. Integer inputs, so every rank computes the same.
pub fn winner(agreed: &[u64], margin: f64) -> usize {
    let Some(&native) = agreed.first() else {
        return 0;
    };
    let best = (1..agreed.len()).min_by_key(|&i| (agreed[i], i));
    match best {
        Some(i)
            if (agreed[i] as f64) < (1.0 - margin) * native as f64
                && agreed[i].saturating_add(MIN_GAIN_NS) <= native =>
        {
            i
        }
        _ => 0,
    }
}
