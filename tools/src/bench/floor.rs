//! The floor of a case: ONE CORE's memory-stream bound for the bytes the call must move on
//! the busiest rank, measured in-process (issue #30: "the one-core `z = x + y` time next to
//! native and pcoll"). Rank 0 runs a plain kernel over the same bytes while the others wait
//! at a barrier: `z = x + y` over m bytes (3m streamed) for the reductions, one `memcpy`
//! (2m streamed) for bcast and allgather(v). Hot: the same buffers every repetition; cold:
//! rotated over a pool of at least 96 MiB ([`super::pool`]), as the case's own buffers.
//! Each (work, hot/cold) is measured once per run and cached.
//!
//! It is one core's bound, not the node's: a collective whose ranks stream in parallel on
//! several cores can come below it (x_floor < 1) when one core does not saturate memory;
//! on the 2-core development VM the two ranks share one memory bandwidth.

use super::mpi;
use super::pool::{Layout, Pool, COLD_POOL_BYTES};
use pcoll::Collective;
use std::sync::Mutex;
use std::time::Instant;

/// What the floor's kernel does, over how many bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Work {
    /// `z = x + y` over m bytes of doubles: read 2m, write m.
    Add(usize),
    /// `memcpy` of m bytes: read m, write m.
    Copy(usize),
}

impl Work {
    /// Bytes the kernel streams through memory.
    pub fn streamed(self) -> usize {
        match self {
            Work::Add(m) => 3 * m,
            Work::Copy(m) => 2 * m,
        }
    }

    /// The kernel's buffers (bytes, rounded up to whole doubles): x, y, z or src, dst.
    fn parts(self) -> Vec<usize> {
        match self {
            Work::Add(m) => vec![m.next_multiple_of(8); 3],
            Work::Copy(m) => vec![m; 2],
        }
    }

    /// `z = x + y` or `memcpy` (the label in the table's header).
    pub fn kernel(self) -> &'static str {
        match self {
            Work::Add(_) => "z = x + y",
            Work::Copy(_) => "memcpy",
        }
    }
}

/// The floor's work for a call of `coll` on `p` ranks with `counts` (elements per rank: the
/// blocks of reduce_scatter(_block) and allgather(v)) of `es`-byte elements and a message of
/// `bytes` (the tuning table's size: the vector, or the total over ranks). The busiest rank:
/// * reduce, allreduce: combine two m-byte vectors into the result, `Add(m)`. For allreduce
///   this is the same yardstick as reduce (the result every rank holds is that reduction); an
///   allreduce moves more in total (p results written), so its real floor is not lower.
/// * reduce_scatter(_block): the rank with the largest block must combine its own input
///   block with at least one other rank's, `Add(largest block)`; blocks are reduced in
///   parallel, so one rank's share is the bound.
/// * bcast: a non-root receives the whole message, `Copy(m)`.
/// * allgather(v): the rank with the smallest own block receives all the others',
///   `Copy(m − smallest block)`.
///
/// p = 1: the call's own copy (send to receive buffer) for all but bcast, which moves
/// nothing (`None`); `None` too for an empty message.
pub fn work(coll: Collective, p: usize, bytes: usize, counts: &[usize], es: usize) -> Option<Work> {
    let largest = counts.iter().copied().max().unwrap_or(0) * es;
    let smallest = counts.iter().copied().min().unwrap_or(0) * es;
    let w = match (coll, p) {
        (Collective::Bcast, 1) => return None,
        (Collective::Bcast, _) => Work::Copy(bytes),
        (Collective::Reduce | Collective::Allreduce, 1) => Work::Copy(bytes),
        (Collective::Reduce | Collective::Allreduce, _) => Work::Add(bytes),
        (Collective::ReduceScatter | Collective::ReduceScatterBlock, 1) => Work::Copy(largest),
        (Collective::ReduceScatter | Collective::ReduceScatterBlock, _) => Work::Add(largest),
        (Collective::Allgather | Collective::Allgatherv, 1) => Work::Copy(bytes),
        (Collective::Allgather | Collective::Allgatherv, _) => Work::Copy(bytes - smallest),
    };
    match w {
        Work::Add(0) | Work::Copy(0) => None,
        w => Some(w),
    }
}

/// The floor (µs) of `work` with hot or cold buffers, measured on rank 0 of `comm` while
/// the other ranks wait at a barrier (once per run for each work and mode: cached); valid
/// on every rank. Collective over `comm`.
pub fn on_rank0(comm: mpi_sys::MPI_Comm, work: Option<Work>, cold: bool) -> Option<f64> {
    let work = work?;
    mpi::barrier(comm);
    let mut t = [0.0f64];
    if mpi::rank(comm) == 0 {
        t[0] = cached(work, cold);
    }
    mpi::barrier(comm);
    mpi::bcast_f64(comm, &mut t);
    Some(t[0])
}

static CACHE: Mutex<Vec<((Work, bool), f64)>> = Mutex::new(Vec::new());

fn cached(work: Work, cold: bool) -> f64 {
    let key = (work, cold);
    let hit = CACHE
        .lock()
        .ok()
        .and_then(|c| c.iter().find(|(k, _)| *k == key).map(|(_, t)| *t));
    if let Some(t) = hit {
        return t;
    }
    let t = measure(work, cold);
    if let Ok(mut c) = CACHE.lock() {
        c.push((key, t));
    }
    t
}

/// Seconds of one batch of samples: enough repetitions for a stable median, about this long.
const BUDGET_S: f64 = 0.04;

/// The median time (µs) of `work` on this core: a sample times `k` kernels in a row (each on
/// the next set of the pool when cold), `k` large enough for a sample of ≥ 2 µs (timer
/// resolution), 15..=201 samples within about [`BUDGET_S`].
pub fn measure(work: Work, cold: bool) -> f64 {
    let parts = work.parts();
    let layout = Layout::new(&parts, if cold { COLD_POOL_BYTES } else { 0 });
    // 0x3F bytes read as the double 0.49…: normal numbers, no denormal or NaN slow path.
    let mut pool = Pool::new(layout, 0x3F);
    let mut one = || {
        let t0 = Instant::now();
        run(&mut pool, work, cold);
        t0.elapsed().as_secs_f64()
    };
    let est = (0..3)
        .map(|_| one())
        .fold(f64::INFINITY, f64::min)
        .max(1e-9);
    let k = ((2e-6 / est).ceil() as usize).clamp(1, 1000);
    let samples = ((BUDGET_S / (k as f64 * est)) as usize).clamp(15, 201);
    let mut t: Vec<f64> = (0..samples)
        .map(|_| (0..k).map(|_| one()).sum::<f64>() / k as f64)
        .collect();
    t.sort_by(f64::total_cmp);
    t[t.len() / 2] * 1e6
}

/// One kernel on the current set, then (cold) the next set.
fn run(pool: &mut Pool, work: Work, cold: bool) {
    let set = pool.current();
    match work {
        Work::Add(_) => {
            let x = as_f64(pool.part_mut(set, 0)).as_ptr();
            let y = as_f64(pool.part_mut(set, 1)).as_ptr();
            let z = as_f64(pool.part_mut(set, 2));
            // SAFETY: x, y and z are three disjoint parts of the pool's current set (the
            // layout keeps parts apart), of equal length; nothing else touches them here.
            let (x, y) = unsafe {
                (
                    std::slice::from_raw_parts(x, z.len()),
                    std::slice::from_raw_parts(y, z.len()),
                )
            };
            add(std::hint::black_box(z), x, y);
        }
        Work::Copy(m) => {
            let src = pool.part_mut(set, 0).as_ptr();
            let dst = pool.part_mut(set, 1);
            // SAFETY: src and dst are two disjoint parts of m bytes of the current set.
            let src = unsafe { std::slice::from_raw_parts(src, m) };
            std::hint::black_box(dst).copy_from_slice(src);
        }
    }
    if cold {
        pool.advance();
    }
}

/// A part as doubles (parts are page- or 320-byte-aligned and whole doubles long).
fn as_f64(b: &mut [u8]) -> &mut [f64] {
    // SAFETY: the part starts 8-aligned (Layout: page + multiples of 320) and holds whole
    // doubles (Work::parts rounds up); every bit pattern is a valid f64.
    unsafe { std::slice::from_raw_parts_mut(b.as_mut_ptr() as *mut f64, b.len() / 8) }
}

/// `z = x + y`, vectorised with AVX2 where the CPU has it (a floor from a slower kernel
/// than the machine can run would flatter every call measured against it).
fn add(z: &mut [f64], x: &[f64], y: &[f64]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2 (checked just above).
        return unsafe { add_avx2(z, x, y) };
    }
    add_plain(z, x, y)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn add_avx2(z: &mut [f64], x: &[f64], y: &[f64]) {
    add_plain(z, x, y)
}

#[inline(always)]
fn add_plain(z: &mut [f64], x: &[f64], y: &[f64]) {
    for ((z, x), y) in z.iter_mut().zip(x).zip(y) {
        *z = *x + *y;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Collective::*;

    #[test]
    fn byte_accounting_per_collective() {
        let m = 1 << 20;
        // p = 2, doubles: blocks of 64Ki elements each.
        let two = [m / 16, m / 16];
        assert_eq!(work(Reduce, 2, m, &[m / 8], 8), Some(Work::Add(m)));
        assert_eq!(work(Allreduce, 2, m, &[m / 8], 8), Some(Work::Add(m)));
        assert_eq!(work(ReduceScatter, 2, m, &two, 8), Some(Work::Add(m / 2)));
        assert_eq!(
            work(ReduceScatterBlock, 2, m, &two, 8),
            Some(Work::Add(m / 2))
        );
        assert_eq!(work(Bcast, 2, m, &[m / 8], 8), Some(Work::Copy(m)));
        assert_eq!(work(Allgatherv, 2, m, &two, 8), Some(Work::Copy(m / 2)));
        assert_eq!(work(Allgather, 2, m, &two, 8), Some(Work::Copy(m / 2)));
        assert_eq!(Work::Add(m).streamed(), 3 * m);
        assert_eq!(Work::Copy(m).streamed(), 2 * m);
        // Uneven blocks: 10 elements over 3 ranks = 4, 3, 3: the busiest rank reduces 4 and
        // receives 10 - 3 = 7.
        let c = [4, 3, 3];
        assert_eq!(work(ReduceScatter, 3, 80, &c, 8), Some(Work::Add(32)));
        assert_eq!(work(Allgatherv, 3, 80, &c, 8), Some(Work::Copy(56)));
        // One byte elements: bytes, not elements.
        assert_eq!(work(Allgatherv, 2, 13, &[7, 6], 1), Some(Work::Copy(7)));
        // p = 1: the call's own copy; bcast nothing; empty messages nothing.
        assert_eq!(work(Reduce, 1, 64, &[8], 8), Some(Work::Copy(64)));
        assert_eq!(work(Allgatherv, 1, 64, &[8], 8), Some(Work::Copy(64)));
        assert_eq!(work(ReduceScatter, 1, 64, &[8], 8), Some(Work::Copy(64)));
        assert_eq!(work(Bcast, 1, 64, &[8], 8), None);
        assert_eq!(work(Allgather, 2, 0, &[0, 0], 8), None);
        assert_eq!(work(ReduceScatterBlock, 3, 16, &[0, 0, 0], 8), None);
    }

    #[test]
    fn kernels_compute_and_time() {
        // The kernel adds (parts filled with 0x3F bytes: every double is the same value v).
        let mut pool = Pool::new(Layout::new(&Work::Add(4096).parts(), 0), 0x3F);
        run(&mut pool, Work::Add(4096), false);
        let v = f64::from_ne_bytes([0x3F; 8]);
        assert!(as_f64(pool.part_mut(0, 2)).iter().all(|&z| z == 2.0 * v));
        // Odd sizes round up to whole doubles; times are positive and finite.
        for w in [Work::Add(13), Work::Copy(13), Work::Copy(1 << 16)] {
            let t = measure(w, false);
            assert!(t > 0.0 && t.is_finite(), "{w:?}: {t}");
        }
    }
}
