//! Buffer pools for cold-cache timing (`pcoll-bench --cold`, and the floor's cold kernel): the
//! buffers of one call (a "set": e.g. send and receive buffer) are laid out again and again
//! over a pool of at least [`COLD_POOL_BYTES`], and consecutive calls use consecutive sets, so
//! no set comes back before the whole pool has been streamed through the caches (as IMB's
//! `-off_cache`; this machine's last-level cache is 32 MiB). The layout and the rotation are
//! pure ([`Layout`], unit-tested); [`Pool`] owns the memory.

/// The least a cold pool spans (per rank): three times the 32 MiB last-level cache here.
pub const COLD_POOL_BYTES: usize = 96 << 20;

/// Sets start on a page (no two sets share a page: neither adjacent-line prefetching nor a
/// page's TLB entry carries one call's data into the next).
const PAGE: usize = 4096;

/// Part `i` of a set starts `i` times this many bytes after a page boundary (five cache
/// lines), so that the parts one kernel streams together never share their low 12 address
/// bits (4 KiB aliasing; see docs/shm.md).
const STAGGER: usize = 320;

/// Where the parts of every set lie: set `k` spans `[k·stride, (k+1)·stride)` and its part
/// `i` starts at `k·stride + offs[i]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Bytes of each part.
    pub parts: Vec<usize>,
    /// Start of each part within a set.
    pub offs: Vec<usize>,
    /// Bytes from one set to the next (a multiple of the page size).
    pub stride: usize,
    /// Sets in the pool.
    pub sets: usize,
}

impl Layout {
    /// Sets of `parts` (bytes each) repeated until they span at least `min_total` bytes, and
    /// at least two sets when `min_total > 0`; `min_total == 0`: one set (hot buffers).
    pub fn new(parts: &[usize], min_total: usize) -> Layout {
        let mut offs = Vec::with_capacity(parts.len());
        let mut cur = 0;
        for (i, &len) in parts.iter().enumerate() {
            let off = cur + STAGGER * (i % (PAGE / STAGGER));
            offs.push(off);
            cur = (off + len).next_multiple_of(PAGE);
        }
        let stride = cur.max(PAGE);
        let sets = if min_total == 0 {
            1
        } else {
            min_total.div_ceil(stride).max(2)
        };
        Layout {
            parts: parts.to_vec(),
            offs,
            stride,
            sets,
        }
    }

    /// Bytes the pool spans.
    pub fn total(&self) -> usize {
        self.stride * self.sets
    }

    /// Byte offset of part `part` of set `set` from the pool's start.
    pub fn offset(&self, set: usize, part: usize) -> usize {
        (set % self.sets) * self.stride + self.offs[part]
    }
}

/// A pool's memory (page-aligned) and its rotation: [`Pool::advance`] moves every part to
/// the next set, cyclically.
pub struct Pool {
    layout: Layout,
    mem: Vec<u64>,
    /// Byte offset of the first page boundary in `mem`.
    base: usize,
    cur: usize,
}

impl Pool {
    /// The pool for `layout`, every byte written with `fill` (so every page is mapped and
    /// none reads as the shared zero page).
    pub fn new(layout: Layout, fill: u8) -> Pool {
        let words = (layout.total() + PAGE) / 8;
        let mem = vec![0u64; words];
        let addr = mem.as_ptr() as usize;
        let base = addr.next_multiple_of(PAGE) - addr;
        let mut p = Pool {
            layout,
            mem,
            base,
            cur: 0,
        };
        p.bytes_mut().fill(fill);
        p
    }

    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The set in use.
    pub fn current(&self) -> usize {
        self.cur
    }

    /// Moves to the next set (cyclically); returns its index.
    pub fn advance(&mut self) -> usize {
        self.cur = (self.cur + 1) % self.layout.sets;
        self.cur
    }

    /// The whole pool as bytes (from the first page boundary).
    fn bytes_mut(&mut self) -> &mut [u8] {
        let len = self.layout.total();
        // SAFETY: `mem` holds `total + PAGE` bytes and `base < PAGE` (Vec<u64> is 8-aligned,
        // so the next page boundary is at most PAGE - 8 bytes in); u8 has no alignment or
        // validity requirements.
        unsafe {
            std::slice::from_raw_parts_mut((self.mem.as_mut_ptr() as *mut u8).add(self.base), len)
        }
    }

    /// Part `part` of set `set`.
    pub fn part_mut(&mut self, set: usize, part: usize) -> &mut [u8] {
        let (off, len) = (self.layout.offset(set, part), self.layout.parts[part]);
        &mut self.bytes_mut()[off..off + len]
    }

    /// Part `part` of the current set.
    pub fn cur_mut(&mut self, part: usize) -> &mut [u8] {
        self.part_mut(self.cur, part)
    }

    /// Copies `data` to the start of part `part` of every set.
    pub fn fill_part(&mut self, part: usize, data: &[u8]) {
        for s in 0..self.layout.sets {
            self.part_mut(s, part)[..data.len()].copy_from_slice(data);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_covers_the_pool_and_parts_stay_apart() {
        for parts in [
            vec![8, 8],
            vec![0, 1 << 20],
            vec![1 << 20, 1 << 20, 1 << 20],
            vec![8 << 20, 8 << 20, 8 << 20],
            vec![100_000, 13],
            vec![16 << 20, 16 << 20],
            vec![64 << 20, 64 << 20],
        ] {
            let l = Layout::new(&parts, COLD_POOL_BYTES);
            assert!(l.total() >= COLD_POOL_BYTES, "{parts:?}: {l:?}");
            assert!(l.sets >= 2, "{parts:?}");
            assert_eq!(l.stride % PAGE, 0);
            // Parts of one set: in order, disjoint, inside the stride, staggered mod 4 KiB.
            for i in 0..parts.len() {
                assert!(l.offs[i] + parts[i] <= l.stride, "{parts:?}: {l:?}");
                if i > 0 {
                    assert!(l.offs[i - 1] + parts[i - 1] <= l.offs[i]);
                    assert_ne!(l.offs[i] % PAGE, l.offs[i - 1] % PAGE);
                }
            }
            // Sets are disjoint and the last one ends inside the pool.
            let last = l.sets - 1;
            assert!(l.offset(last, parts.len() - 1) + parts[parts.len() - 1] <= l.total());
            assert_eq!(l.offset(1, 0) - l.offset(0, 0), l.stride);
            // Without rounding the pool would not be larger than needed by a whole set.
            assert!(l.total() < COLD_POOL_BYTES + l.stride || l.sets == 2);
        }
        // Hot: one set, however large.
        assert_eq!(Layout::new(&[8 << 20, 8 << 20], 0).sets, 1);
    }

    #[test]
    fn rotation_never_reuses_a_set_within_a_cycle() {
        let l = Layout::new(&[64 << 10, 64 << 10], COLD_POOL_BYTES);
        let n = l.sets;
        let mut pool = Pool::new(l, 1);
        let mut seen: Vec<usize> = vec![pool.current()];
        for _ in 1..3 * n {
            seen.push(pool.advance());
        }
        // Any n consecutive calls use n different sets; call k and call k + n the same one.
        for w in seen.windows(n) {
            let mut s = w.to_vec();
            s.sort_unstable();
            s.dedup();
            assert_eq!(s.len(), n);
        }
        for k in 0..2 * n {
            assert_eq!(seen[k], seen[k + n]);
        }
        // The bytes one cycle touches span the pool: ≥ 96 MiB of distinct addresses.
        let spanned: usize =
            (0..n).map(|s| pool.layout().offset(s, 0)).max().unwrap() + pool.layout().stride;
        assert!(spanned >= COLD_POOL_BYTES);
    }

    #[test]
    fn pool_memory_is_page_aligned_and_filled() {
        let mut pool = Pool::new(Layout::new(&[10, 5000], 1 << 20), 7);
        assert!(pool.layout().sets >= 2);
        let d: Vec<u8> = (0..10).collect();
        pool.fill_part(0, &d);
        for s in 0..pool.layout().sets {
            let p = pool.part_mut(s, 0);
            assert_eq!(p.as_ptr() as usize % PAGE, 0);
            assert_eq!(p, &d[..]);
            assert!(pool.part_mut(s, 1).iter().all(|&b| b == 7));
        }
        pool.advance();
        assert_eq!(pool.cur_mut(1).len(), 5000);
    }
}
