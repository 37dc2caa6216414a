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
/// slow: 42-57 ns (p10-p90) outside the spells on this VM, 123-155 inside them. A machine
/// whose ordinary line is near it raises it ([`slow_line_ns`]).
const SLOW_LINE_NS: u64 = 90;

/// How much slower than the fastest probe this process has seen a slow line is: the ordinary
/// transfer times this, at least [`SLOW_LINE_NS`]. On session 37's VM an ordinary probed line
/// took 80-95 ns (a core-to-core flag round trip: 146-154 ns), so the fixed 90 ns streamed
/// copies there most of the time, where they cost (forced `shm` reduce, Open MPI 4.1, p = 2,
/// 256 KiB: 61-70 µs streaming against 22-27 not): docs/shm.md, A third machine. On the Ice
/// Lake VMs (fastest 42 ns or less) the threshold stays 90.
const SLOW_OVER_FASTEST: f64 = 1.5;

/// The threshold of a slow probed line: [`SLOW_LINE_NS`], or [`SLOW_OVER_FASTEST`] times the
/// fastest probe seen (`fastest`, ns), whichever is larger.
fn slow_line_ns(fastest: u64) -> u64 {
    SLOW_LINE_NS.max((fastest as f64 * SLOW_OVER_FASTEST) as u64)
}

/// Slow probes in a row that start (or renew) streaming.
const SLOW_STREAK: u32 = 3;

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
            || (bytes >= STREAM_MIN && TICK.fetch_add(1, Ordering::Relaxed) % 8 == 0))
}

/// Time loads of rank `k`'s probe lines, each address depending on the last load (so that
/// they do not overlap); a mean above [`SLOW_LINE_NS`] keeps copies streaming for
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
    static STREAK: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    static FASTEST: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(u64::MAX);
    let line = (t1 - t0) / (PROBES.len() as u64);
    let fastest = FASTEST.fetch_min(line, Ordering::Relaxed).min(line);
    if line <= slow_line_ns(fastest) {
        STREAK.store(0, Ordering::Relaxed);
        return;
    }
    if STREAK.fetch_add(1, Ordering::Relaxed) + 1 >= SLOW_STREAK {
        let until = Win::word(bases, 0, STREAM_UNTIL);
        if until.load(Ordering::Relaxed) < t1 {
            log::debug!(
                "shm: slow core-to-core transfers ({line} ns a line, fastest {fastest}): streaming copies"
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
    use super::{copy_stream, slow_line_ns};

    #[test]
    fn the_slow_threshold_is_90_ns_or_half_again_the_fastest_line() {
        // The Ice Lake VMs: fastest 42 ns, spells at 123-155: still 90.
        assert_eq!(slow_line_ns(42), 90);
        assert_eq!(slow_line_ns(60), 90);
        // Session 37's VM: ordinary lines 80-95 ns, not slow; a spell at twice that is.
        assert_eq!(slow_line_ns(80), 120);
        assert!(slow_line_ns(80) > 95 && slow_line_ns(80) < 160);
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
