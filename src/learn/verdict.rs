//! The arithmetic of a cell's decisions: each rank's time per candidate (the lower quartile,
//! the median on a crowded node),
//! the winner of an agreement (learning's and a race's), and the confirmation's length.
use super::{CONFIRM_BLOCK, CONFIRM_BLOCKED, CONFIRM_ROUNDS, MIN_GAIN_NS};

/// The lower quartile of `v`: its `(n - 1) / 4`-th smallest value (the best of 1-4 calls,
/// the second best of 5-8, ...; `u64::MAX` for none).
pub fn lower_quartile(v: &[u64]) -> u64 {
    smallest_at(v, |n| (n - 1) / 4)
}

/// The (lower) median of `v`: its `(n - 1) / 2`-th smallest value (`u64::MAX` for none).
pub fn median(v: &[u64]) -> u64 {
    smallest_at(v, |n| (n - 1) / 2)
}

/// The `at(n)`-th smallest of the `n` values of `v` (`u64::MAX` for none).
fn smallest_at(v: &[u64], at: fn(usize) -> usize) -> u64 {
    if v.is_empty() {
        return u64::MAX;
    }
    let mut s = v.to_vec();
    s.sort_unstable();
    s[at(s.len())]
}

/// [`Cell::confirm_calls`](super::Cell::confirm_calls) of a cell explored in blocks of `block` with `timed` timed calls
/// per candidate (also what a learned table's note says of it).
pub fn confirm_calls(block: u64, timed: usize) -> u64 {
    if block > 1 {
        return CONFIRM_BLOCKED * CONFIRM_BLOCK;
    }
    (CONFIRM_ROUNDS * timed) as u64
}

/// What a call of a raced cell settled on the rule's pcoll algorithm costs beyond the part a
/// race times: the C entry, the served-again lookup and the accounting around the run (perf,
/// Open MPI 4.1, p = 2, a loop of `binomial` bcasts of 8 B: 12% of the samples there against
/// the run's 16%, about 0.1-0.14 us of its 0.56 us). A race starts its timer after the
/// dispatch for both candidates, and a native winner's calls are forwarded by the C gate's
/// memo at the MPI's own cost (8 B allgather: 407-437 ns against PMPI's 391-438), so only
/// pcoll's side pays it. Until session 32 native's side paid min(300 ns, 5%) instead (its
/// Rust path before the memo): with pcoll's path uncounted, that kept pcoll's algorithm in
/// cells where it was up to ~0.5 us slower, the 1.10-1.18x raced cells of 8-32 KiB.
pub const RACE_PCOLL_COST_NS: u64 = 150;

/// A race's winner ([`Cell::incumbent`](super::Cell::incumbent)): the faster, counting
/// [`RACE_PCOLL_COST_NS`] on pcoll's side (index 1, the rule's algorithm, if it plus that
/// is no slower than native; else native). No margin: a race decides between its rule's
/// algorithm and native alone, and a margin on either side sends it to the slower one (with
/// pcoll's 10% + 0.5 us, a race at MPICH 5's allgatherv 8 B kept native at 1.8 us against
/// `butterfly`'s 1.6-1.7; with native's 10%, MPICH 5's reduce at 16 KiB cold kept `shm` at
/// 1.23x).
pub fn race_winner(agreed: &[u64]) -> usize {
    match agreed {
        [native, rule, ..] if rule.saturating_add(RACE_PCOLL_COST_NS) <= *native => 1,
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
