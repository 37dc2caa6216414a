//! Streaming copies into cells while a slow spell lasts (`PCOLL_SHM_STREAM`): the probe
//! lines a rank writes before each `filled`, the reader's timed loads of them, and the copy
//! with non-temporal stores. Each rank chooses alone: the protocol is the same either way.

use super::{Win, PROBES, STREAM_UNTIL};
use std::sync::atomic::Ordering;

/// How copies into cells are made (`PCOLL_SHM_STREAM`): `Some(true)` always streaming
/// (non-temporal) stores, `Some(false)` never, `None` (unset, the default) while a reader saw
/// slow core-to-core transfers ([`probe`]).
///
/// A cell written with ordinary stores sits dirty in the writer's cache and the reader pulls it
/// core to core. On this 2-vCPU VM that transfer is 24-39 ns a line most of the time and
/// 123-155 ns in spells of seconds (the host runs the two vCPUs on cores that share no cache:
/// docs/shm.md, The slow runs), when a forced p = 2 reduce (Open MPI 4.1) at 16 KiB-2 MiB
/// measured 1.1-2.2x native with ordinary stores (7 of 20 runs) and 0.50-0.96x with streaming
/// ones (all 20 runs alternated with them). Outside the spells streaming costs (Open MPI 4.1
/// 0.34-0.70x becomes 0.50-0.92x; Intel MPI's reduce loses to native), hence the probe.
fn stream_mode() -> Option<bool> {
    static S: once_cell::sync::Lazy<Option<bool>> = once_cell::sync::Lazy::new(|| {
        std::env::var("PCOLL_SHM_STREAM")
            .ok()
            .and_then(|v| pcoll::config::parse_bool(&v))
    });
    *S
}

/// Fewest bytes a rank copies into a cell before streaming pays (and a clock read with it).
const STREAM_MIN: usize = 16 << 10;

/// A probed line slower than this (ns, the mean of [`PROBES`], two clock reads included) is
/// slow at least: 42-57 ns (p10-p90) outside the spells on the Ice Lake VMs, 123-155 inside
/// them. A machine whose ordinary line is near it raises it ([`slow_line_ns`]).
const SLOW_LINE_NS: u64 = 90;

/// How much slower than the process's typical probed line a slow one is: the ordinary
/// transfer times this, at least [`SLOW_LINE_NS`]. Twice the Ice Lake VMs' ordinary 45 ns is
/// the 90 ns measured there. On session 37's VM an ordinary probed line takes 80-88 ns (p25-p90
/// in a forced `shm` reduce, Open MPI 4.1, p = 2, 64 KiB-256 KiB), 1% above 148 ns, and a few
/// find the line still in the reader's cache (49-64 ns); streaming copies cost there (forced
/// `shm` reduce, 256 KiB: 61-70 µs streaming against 22-27 not): docs/shm.md, A third
/// machine.
const SLOW_OVER_TYPICAL: u64 = 2;

/// The threshold of a slow probed line: [`SLOW_LINE_NS`], or [`SLOW_OVER_TYPICAL`] times the
/// typical line (`typical`, ns), whichever is larger.
fn slow_line_ns(typical: u64) -> u64 {
    SLOW_LINE_NS.max(typical.saturating_mul(SLOW_OVER_TYPICAL))
}

/// Slow probes in a row that start (or renew) streaming.
const SLOW_STREAK: u32 = 3;

/// Probed lines whose median is one measure of the typical line.
const BLOCK: usize = 16;

/// This process's probed lines: the typical line is the lowest median of a block of
/// [`BLOCK`] probes seen so far, so that neither a spell (every line slow for seconds) nor a
/// few lines found in the reader's cache move it. No probe is slow before the first block.
struct Lines {
    block: [u64; BLOCK],
    n: usize,
    typical: u64,
    streak: u32,
}

impl Lines {
    const fn new() -> Self {
        Lines {
            block: [0; BLOCK],
            n: 0,
            typical: u64::MAX,
            streak: 0,
        }
    }

    /// Count a probed line of `line` ns; true where it is the [`SLOW_STREAK`]-th slow one in
    /// a row (or a later one).
    fn record(&mut self, line: u64) -> bool {
        self.block[self.n] = line;
        self.n += 1;
        if self.n == BLOCK {
            self.block.sort_unstable();
            self.typical = self.typical.min(self.block[BLOCK / 2]);
            self.n = 0;
        }
        if self.typical == u64::MAX || line <= slow_line_ns(self.typical) {
            self.streak = 0;
            return false;
        }
        self.streak += 1;
        self.streak >= SLOW_STREAK
    }
}

/// How long a slow probe keeps copies streaming (ns): spells last seconds; a probe every
/// call of 64 KiB or more renews it.
const STREAM_HOLD_NS: u64 = 250_000_000;

/// `CLOCK_MONOTONIC` in ns (the same clock in every process of the node).
fn mono_ns() -> u64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: an out-pointer to a local.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// Does a copy of `bytes` into a cell stream now?
pub(crate) fn stream_now(bases: &[*mut u8], bytes: usize) -> bool {
    match stream_mode() {
        Some(on) => on,
        None => {
            bytes >= STREAM_MIN
                && mono_ns() < Win::word(bases, 0, STREAM_UNTIL).load(Ordering::Relaxed)
        }
    }
}

/// Write the own probe lines (before publishing `filled`).
pub(crate) fn mark_probes(bases: &[*mut u8], me: usize, g: u64) {
    for off in PROBES {
        Win::word(bases, me, off).store(g, Ordering::Relaxed);
    }
}

/// Does a call that reads `bytes` from other ranks' cells probe? Every call of 64 KiB or more
/// (a probe costs 0.2-0.6 µs), every eighth from 16 KiB, none below.
pub(crate) fn probe_due(bytes: usize) -> bool {
    static TICK: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    stream_mode().is_none()
        && (bytes >= 64 << 10
            || (bytes >= STREAM_MIN && TICK.fetch_add(1, Ordering::Relaxed).is_multiple_of(8)))
}

/// Time loads of rank `k`'s probe lines, each address depending on the last load (so that
/// they do not overlap); three slow means in a row ([`Lines`]) keep copies streaming for
/// [`STREAM_HOLD_NS`] on every rank of the window (only with `PCOLL_SHM_STREAM` unset).
pub(crate) fn probe(bases: &[*mut u8], k: usize) {
    if stream_mode().is_some() {
        return;
    }
    let zero = std::hint::black_box(0u64);
    let t0 = mono_ns();
    let mut acc = 0u64;
    for off in PROBES {
        acc = acc
            .wrapping_add(Win::word(bases, k, off + (acc & zero) as usize).load(Ordering::Relaxed));
    }
    std::hint::black_box(acc);
    let t1 = mono_ns();
    // Three slow probes in a row (this process's, across windows): a lone slow one is a
    // preemption or an interrupt (outside the spells 42-57 ns, p10-p90, with 1-2% above 80).
    static LINES: parking_lot::Mutex<Lines> = parking_lot::const_mutex(Lines::new());
    let line = (t1 - t0) / (PROBES.len() as u64);
    let (slow, typical) = {
        let mut lines = LINES.lock();
        (lines.record(line), lines.typical)
    };
    if slow {
        let until = Win::word(bases, 0, STREAM_UNTIL);
        if until.load(Ordering::Relaxed) < t1 {
            log::debug!(
                "shm: slow core-to-core transfers ({line} ns a line, typically {typical}): streaming copies"
            );
        }
        until.fetch_max(t1 + STREAM_HOLD_NS, Ordering::Relaxed);
    }
}

/// Copy `n` bytes with non-temporal stores (16-byte `movntdq` on x86-64, after a head that
/// aligns `dst`; an ordinary copy elsewhere), then `sfence`, so that the data is in memory,
/// not in this core's cache, before the counter that publishes it.
///
/// # Safety
/// `src` and `dst` are valid for `n` bytes and do not overlap.
pub(crate) unsafe fn copy_stream(src: *const u8, dst: *mut u8, n: usize) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the caller's guarantee; every access lies inside the n bytes; SSE2 is part of
    // x86-64; the stores are 16-byte aligned (the head aligned `dst`).
    unsafe {
        use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_sfence, _mm_stream_si128};
        let head = ((16 - (dst as usize) % 16) % 16).min(n);
        std::ptr::copy_nonoverlapping(src, dst, head);
        let mut i = head;
        while i + 64 <= n {
            for k in (0..64).step_by(16) {
                let v = _mm_loadu_si128(src.add(i + k) as *const __m128i);
                _mm_stream_si128(dst.add(i + k) as *mut __m128i, v);
            }
            i += 64;
        }
        while i + 16 <= n {
            let v = _mm_loadu_si128(src.add(i) as *const __m128i);
            _mm_stream_si128(dst.add(i) as *mut __m128i, v);
            i += 16;
        }
        std::ptr::copy_nonoverlapping(src.add(i), dst.add(i), n - i);
        _mm_sfence();
    }
    #[cfg(not(target_arch = "x86_64"))]
    // SAFETY: the caller's guarantee.
    unsafe {
        std::ptr::copy_nonoverlapping(src, dst, n)
    }
}

#[cfg(test)]
mod tests {
    use super::{copy_stream, slow_line_ns, Lines, BLOCK};

    #[test]
    fn the_slow_threshold_is_90_ns_or_twice_the_typical_line() {
        // The Ice Lake VMs: typically 45 ns, spells at 123-155: 90.
        assert_eq!(slow_line_ns(42), 90);
        assert_eq!(slow_line_ns(45), 90);
        // Session 37's VM: ordinary lines 80-88 ns, 1% at 148-160: not slow.
        assert_eq!(slow_line_ns(82), 164);
    }

    /// The typical line ignores cached probes and spells; three slow ones in a row stream.
    #[test]
    fn slow_lines_are_three_in_a_row_above_twice_the_lowest_block_median() {
        let mut l = Lines::new();
        // No baseline yet: even slow lines do not stream.
        for _ in 0..BLOCK - 1 {
            assert!(!l.record(500));
        }
        // A block of a spell (500 ns) then ordinary lines of session 37's VM, a quarter
        // of them found in the reader's cache (49 ns).
        assert!(!l.record(500));
        assert_eq!(l.typical, 500);
        for i in 0..4 * BLOCK {
            assert!(!l.record(if i % 4 == 0 { 49 } else { 84 }));
        }
        assert_eq!(l.typical, 84);
        // 1% spikes, even three in a row, stay under 168.
        for _ in 0..3 {
            assert!(!l.record(160));
        }
        // A spell: the third slow line in a row streams, and the ones after it.
        assert!(!l.record(200));
        assert!(!l.record(200));
        assert!(l.record(200));
        for _ in 0..3 * BLOCK {
            assert!(l.record(200));
        }
        // The spell does not raise the typical line; an ordinary line ends the streak.
        assert_eq!(l.typical, 84);
        assert!(!l.record(84));
        assert!(!l.record(200));
        // The Ice Lake VMs: typically 45 ns, a spell at 123 ns streams.
        let mut l = Lines::new();
        for _ in 0..BLOCK {
            l.record(45);
        }
        assert_eq!(l.typical, 45);
        assert!(!l.record(123) && !l.record(123) && l.record(123));
    }

    /// Streaming copies: every alignment of source and destination and lengths around the
    /// 16- and 64-byte steps copy exactly the bytes asked for, nothing around them.
    #[test]
    fn copy_stream_copies_exactly() {
        let src: Vec<u8> = (0..5000).map(|i| (i * 13 + 5) as u8).collect();
        let mut dst = vec![0u8; 5200];
        for so in [0usize, 1, 7, 16, 33] {
            for d in [0usize, 3, 8, 15, 16, 60] {
                for n in [0usize, 1, 15, 16, 17, 63, 64, 65, 100, 4096, 4097 + 13] {
                    dst.iter_mut().for_each(|b| *b = 0xEE);
                    // SAFETY: both ranges lie inside their vectors, which do not overlap.
                    unsafe { copy_stream(src.as_ptr().add(so), dst.as_mut_ptr().add(d), n) };
                    assert_eq!(&dst[d..d + n], &src[so..so + n], "so {so} d {d} n {n}");
                    assert!(dst[..d].iter().all(|&b| b == 0xEE));
                    assert!(dst[d + n..].iter().all(|&b| b == 0xEE));
                }
            }
        }
    }
}
