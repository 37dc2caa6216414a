//! One call as an entry point received it ([`Args`], its [`Counts`]), and the vectors of
//! finished calls kept for reuse, so that a loop of calls allocates none.

use mpi_sys::*;
use pcoll::Collective;
use std::os::raw::{c_int, c_void};

/// Counts (or displacements) of a call, without a heap allocation for up to [`SMALL`]
/// entries (a single count, or per-rank arrays of small communicators).
#[derive(Clone)]
pub enum Counts {
    One([i64; 1]),
    Small([i64; SMALL], usize),
    Many(Vec<i64>),
}

/// Entries kept inline by [`Counts`].
pub const SMALL: usize = 16;

impl Counts {
    /// No entries.
    pub const EMPTY: Counts = Counts::Small([0; SMALL], 0);
}

impl std::ops::Deref for Counts {
    type Target = [i64];
    fn deref(&self) -> &[i64] {
        match self {
            Counts::One(c) => c,
            Counts::Small(c, n) => &c[..*n],
            Counts::Many(v) => v,
        }
    }
}

impl From<Vec<i64>> for Counts {
    fn from(v: Vec<i64>) -> Counts {
        Counts::Many(v)
    }
}

impl<T: Copy + Into<i64>> FromIterator<T> for Counts {
    fn from_iter<I: IntoIterator<Item = T>>(it: I) -> Counts {
        let mut small = [0i64; SMALL];
        let mut it = it.into_iter();
        for n in 0..=SMALL {
            match it.next() {
                None => return Counts::Small(small, n),
                Some(x) if n < SMALL => small[n] = x.into(),
                Some(x) => {
                    let mut v = small.to_vec();
                    v.push(x.into());
                    v.extend(it.map(Into::into));
                    return Counts::Many(v);
                }
            }
        }
        unreachable!("the loop returns by its last turn")
    }
}

/// One collective call as the C (or Fortran, or large-count) entry point received it.
pub struct Args {
    pub coll: Collective,
    pub sendbuf: *const c_void,
    pub recvbuf: *mut c_void,
    /// reduce/allreduce: `[count]`; reduce_scatter/allgatherv: `recvcounts`.
    pub counts: Counts,
    /// allgatherv: `displs`.
    pub displs: Counts,
    /// allgatherv: `sendcount` and `sendtype`.
    pub sendcount: i64,
    pub sendtype: MPI_Datatype,
    /// The datatype of the data (allgatherv: `recvtype`).
    pub dt: MPI_Datatype,
    pub op: MPI_Op,
    pub root: i64,
    pub comm: MPI_Comm,
    /// Where `counts` came from (for the program reading them): only a reporting aid.
    pub large_count: bool,
}

impl Args {
    /// The send buffer is `MPI_IN_PLACE`.
    pub(crate) fn in_place(&self) -> bool {
        self.sendbuf == crate::consts::in_place()
    }

    /// [`displaced`] for this call (no displacement given counts as displaced).
    pub(crate) fn displaced(&self) -> bool {
        let first = |v: &[i64]| v.first().copied();
        displaced(
            self.coll,
            self.in_place(),
            first(&self.counts),
            first(&self.displs),
        )
    }

    /// Not every rank passes the same count (for the native-defect rules).
    pub(crate) fn unequal_counts(&self) -> bool {
        self.counts.windows(2).any(|w| w[0] != w[1])
    }
}

/// An allgatherv whose first block (`count0` elements at `displ0`) is not empty, not in place
/// and not at the start of the receive buffer (for the native-defect rules, which read it at
/// p = 1 only); a displacement not known (`None`) counts as displaced.
pub(crate) fn displaced(
    coll: Collective,
    in_place: bool,
    count0: Option<i64>,
    displ0: Option<i64>,
) -> bool {
    coll == Collective::Allgatherv
        && !in_place
        && count0.is_some_and(|c| c != 0)
        && displ0 != Some(0)
}

thread_local! {
    /// Vectors of finished calls, kept for their capacity (a loop of calls allocates none).
    static SPARE: std::cell::RefCell<Vec<Vec<usize>>> = const { std::cell::RefCell::new(Vec::new()) };
}

fn spare_vec() -> Vec<usize> {
    SPARE
        .try_with(|s| s.borrow_mut().pop())
        .ok()
        .flatten()
        .unwrap_or_default()
}

/// Give a vector back for [`spare_vec`] (small ones only, a few at most).
pub(super) fn recycle(mut v: Vec<usize>) {
    if v.capacity() == 0 || v.capacity() > 4096 {
        return;
    }
    v.clear();
    let _ = SPARE.try_with(|s| {
        let mut s = s.borrow_mut();
        if s.len() < 4 {
            s.push(v);
        }
    });
}

/// The counts as `usize`, or None if one is negative or above `c_int::MAX`.
pub(super) fn nonneg(v: &[i64]) -> Option<Vec<usize>> {
    let mut out = spare_vec();
    for &x in v {
        if x < 0 || x > c_int::MAX as i64 {
            recycle(out);
            return None;
        }
        out.push(x as usize);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only a non-empty allgatherv block, not in place, away from the start (or not known
    /// to be at it) is displaced.
    #[test]
    fn only_an_allgatherv_block_away_from_the_start_is_displaced() {
        let agv = Collective::Allgatherv;
        assert!(displaced(agv, false, Some(4), Some(5)));
        assert!(displaced(agv, false, Some(4), None));
        assert!(!displaced(agv, false, Some(4), Some(0)));
        assert!(!displaced(agv, false, Some(0), Some(5)));
        assert!(!displaced(agv, false, None, Some(5)));
        assert!(!displaced(agv, true, Some(4), Some(5)));
        assert!(!displaced(
            Collective::ReduceScatter,
            false,
            Some(4),
            Some(5)
        ));
    }

    #[test]
    fn counts_keep_small_arrays_inline() {
        for n in [0usize, 1, 5, SMALL, SMALL + 1, 40] {
            let v: Vec<i64> = (0..n as i64).map(|x| x * 3 - 7).collect();
            let c: Counts = v.iter().copied().collect();
            assert_eq!(&*c, &v[..], "n={n}");
            assert_eq!(matches!(c, Counts::Many(_)), n > SMALL, "n={n}");
            let from_i32: Counts = v.iter().map(|&x| x as i32).collect();
            assert_eq!(&*from_i32, &v[..]);
        }
        assert!(Counts::EMPTY.is_empty());
    }
}
