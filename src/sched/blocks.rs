//! Splitting element ranges into blocks and segments. Ranges are half-open `[lo, hi)`.

/// Split `m` elements into `n` blocks whose sizes differ by at most one (larger first).
/// Returns `n + 1` boundaries `b` with block `i` = `[b[i], b[i+1])`. `n = 0` is treated as 1.
pub fn split(m: usize, n: usize) -> Vec<usize> {
    let n = n.max(1);
    let (q, r) = (m / n, m % n);
    let mut b = Vec::with_capacity(n + 1);
    let mut acc = 0;
    b.push(0);
    for i in 0..n {
        acc += q + usize::from(i < r);
        b.push(acc);
    }
    b
}

/// Number of segments of at most `seg` elements covering `m` elements (at least 1).
pub fn nsegs(m: usize, seg: usize) -> usize {
    if seg == 0 || m == 0 {
        1
    } else {
        m.div_ceil(seg)
    }
}

/// `lo <= x < hi`: the one range test used everywhere.
pub fn contains(lo: usize, hi: usize, x: usize) -> bool {
    lo <= x && x < hi
}

/// ceil(log2 p); 0 for p <= 1.
pub fn ceil_log2(p: usize) -> usize {
    if p <= 1 {
        0
    } else {
        (usize::BITS - (p - 1).leading_zeros()) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn split_covers_evenly(m in 0usize..10_000, n in 0usize..300) {
            let b = split(m, n);
            prop_assert_eq!(b.len(), n.max(1) + 1);
            prop_assert_eq!(b[0], 0);
            prop_assert_eq!(*b.last().unwrap(), m);
            let sizes: Vec<usize> = b.windows(2).map(|w| w[1] - w[0]).collect();
            let (mn, mx) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
            prop_assert!(mx - mn <= 1);
        }
    }

    #[test]
    fn ceil_log2_small() {
        let want = [0, 0, 1, 2, 2, 3, 3, 3, 3, 4];
        for (p, w) in want.iter().enumerate() {
            assert_eq!(ceil_log2(p), *w, "p={p}");
        }
        assert_eq!(ceil_log2(1 << 30), 30);
        assert_eq!(ceil_log2((1 << 30) + 1), 31);
    }
}
