//! What this process's shared windows may hold at once (`PCOLL_SHM_LIMIT`): each window a
//! communicator makes (and each of `hier`'s node windows) reserves its own segment here before
//! it is made and gives it back when it is freed. A window the budget has no room for is
//! refused like one /dev/shm has no room for: agreed by the communicator's ranks, one warning,
//! and its calls fall back. A program that keeps many communicators (each one's window 4 MiB
//! and more a rank at p <= 4) then holds a bounded part of the node's memory in /dev/shm,
//! where every segment counts against the node's RAM (MPICH's own shared-memory collectives
//! stop at `MPIR_CVAR_COLL_SHM_LIMIT_PER_NODE`, 64 MiB a node, alike).

use std::sync::atomic::{AtomicUsize, Ordering};

/// The default: 256 MiB, about 60 windows of 4 MiB (p <= 4) or 250 of 1 MiB (p > 8).
pub const DEFAULT_LIMIT: usize = 256 << 20;

/// Bytes of segments this process holds (reserved, made or being made).
static HELD: AtomicUsize = AtomicUsize::new(0);

/// `PCOLL_SHM_LIMIT` (a size; agreed at `MPI_Init`), or [`DEFAULT_LIMIT`].
pub fn limit() -> usize {
    static L: once_cell::sync::Lazy<usize> = once_cell::sync::Lazy::new(|| {
        crate::agree::var("PCOLL_SHM_LIMIT").map_or(DEFAULT_LIMIT, |v| {
            pcoll::tuning::size::parse_size(&v).unwrap_or_else(|e| {
                log::warn!("PCOLL_SHM_LIMIT={v}: {e}; the default, {DEFAULT_LIMIT} bytes");
                DEFAULT_LIMIT
            })
        })
    });
    *L
}

/// A reservation of `bytes` in the budget, given back when dropped (a window that was not
/// made) or kept by [`Reserved::keep`] (one that was: [`give_back`] at its release).
#[must_use]
pub struct Reserved(usize);

impl Reserved {
    /// The window was made: its bytes stay held until it is freed.
    pub fn keep(self) -> usize {
        let b = self.0;
        std::mem::forget(self);
        b
    }
}

impl Drop for Reserved {
    fn drop(&mut self) {
        give_back(self.0);
    }
}

/// Reserve `bytes` if the process's windows stay within the limit; None if not.
pub fn reserve(bytes: usize) -> Option<Reserved> {
    HELD.fetch_update(Ordering::AcqRel, Ordering::Acquire, |h| {
        h.checked_add(bytes).filter(|&n| n <= limit())
    })
    .ok()
    .map(|_| Reserved(bytes))
}

/// A freed window's bytes ([`Reserved::keep`]) leave the budget.
pub fn give_back(bytes: usize) {
    HELD.fetch_sub(bytes, Ordering::AcqRel);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservations_stay_within_the_limit_and_come_back() {
        let l = limit();
        let a = reserve(l / 2).expect("half the budget");
        let b = reserve(l / 2).expect("the other half");
        assert!(reserve(1).is_none(), "nothing beyond the limit");
        drop(b); // not made: back at once
        let kept = reserve(l / 4).expect("room again").keep();
        assert!(reserve(l / 2).is_none());
        give_back(kept);
        drop(a);
        assert_eq!(HELD.load(Ordering::Acquire), 0);
    }
}
