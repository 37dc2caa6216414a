//! The `shm` protocol over a communicator's window: `pcoll::algo::shm`'s plan, run with
//! copies, `MPI_Reduce_local` and acquire/release counters (module docs there). Waiting spins,
//! then yields the core (`sched_yield`) in its loop: after 200 spins (a spinning rank holds
//! the core, or the hyperthread, the rank it waits for needs), or when the ranks do not
//! outnumber the cores after [`patience`] (default 0; a yield with other jobs on the machine
//! gives the core away for a time slice: a 1 MiB allreduce, p = 2, took 6.6 ms against
//! native's 0.5 ms with other jobs running, but spinning 2 ms lost on a quiet machine).
//! Copies into cells take streaming stores while readers time slow core-to-core transfers
//! ([`stream_mode`], [`probe`]).

use super::{Win, FILLED, PROBES, READ, REDUCED, STREAM_UNTIL};
use crate::consts;
use crate::mpi_types::TypeFacts;
use crate::pack;
use mpi_sys::*;
use pcoll::algo::shm::xfer::{Plan, Src, Step};
use pcoll::algo::shm::{Shape, SLOTS};
use pcoll::Error;
use std::os::raw::{c_int, c_void};
use std::sync::atomic::{AtomicU64, Ordering};

/// One reduce or allreduce call as `shm` runs it.
pub struct Call {
    /// This rank's input (the receive buffer for `MPI_IN_PLACE`).
    pub input: *const u8,
    /// The receive buffer (read only at a reduce's root or in an allreduce).
    pub output: *mut u8,
    pub count: usize,
    pub dt: MPI_Datatype,
    pub op: MPI_Op,
    pub facts: TypeFacts,
    pub commutative: bool,
    /// Root of a reduce.
    pub root: usize,
    /// Allreduce.
    pub all: bool,
    /// `MPI_IN_PLACE` on this rank.
    pub in_place: bool,
    /// For `MPI_Pack` of types with holes.
    pub comm: MPI_Comm,
    /// A one-pass `z := x ⊕ y` for the op and type ([`super::kernel`]), if any.
    pub fused: Option<(super::kernel::Fused, usize)>,
}

/// Spins before the first yield when the ranks outnumber the cores.
const SPINS: u32 = 200;

/// Spinning before the first yield otherwise (`PCOLL_SHM_PATIENCE_US`, default 0: on a quiet
/// machine 2000 made a p = 2 reduce 1.4-1.8x native against 0.45-0.71x, allreduce alike).
fn patience() -> std::time::Duration {
    static D: once_cell::sync::Lazy<std::time::Duration> = once_cell::sync::Lazy::new(|| {
        let us = std::env::var("PCOLL_SHM_PATIENCE_US")
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(0);
        std::time::Duration::from_micros(us)
    });
    *D
}

/// Fewest bytes a rank reduces as a slice of its own.
const MIN_SLICE_BYTES: usize = 16 << 10;

/// Wait until `c` reaches `at_least`; `patient`: the ranks do not outnumber the cores.
fn wait_for(c: &AtomicU64, at_least: u64, patient: bool) {
    let mut n = 0u32;
    let mut since: Option<std::time::Instant> = None;
    while c.load(Ordering::Acquire) < at_least {
        n = n.wrapping_add(1);
        if n < SPINS {
            std::hint::spin_loop();
        } else if patient && n % 256 != 0 {
            std::hint::spin_loop();
        } else if patient
            && since.get_or_insert_with(std::time::Instant::now).elapsed() < patience()
        {
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
    }
}

/// Cores this process may run on.
fn cores() -> usize {
    static N: once_cell::sync::Lazy<usize> =
        once_cell::sync::Lazy::new(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    *N
}

/// Elements of the call's type in a cell (None: not one).
pub fn cell_elems(cell: usize, f: &TypeFacts) -> Option<usize> {
    let (ext, text) = (f.extent as usize, f.true_extent as usize);
    (cell >= text && ext > 0).then(|| (cell - text) / ext + 1)
}

impl Call {
    fn at(&self, base: *const u8, i: usize) -> *mut u8 {
        base.wrapping_offset(i as isize * self.facts.extent) as *mut u8
    }
    /// Element `i` of a cell that starts at `cell`.
    fn cell_at(&self, cell: *mut u8, i: usize) -> *mut u8 {
        self.at(cell.wrapping_offset(-self.facts.true_lb), i)
    }
    fn copy(&self, src: *const u8, dst: *mut u8, n: usize) -> Result<(), Error> {
        if n == 0 || src == dst as *const u8 {
            return Ok(());
        }
        if self.facts.contiguous() {
            // SAFETY: n contiguous elements inside the user's buffer or a cell (sized by
            // `cell_elems`), distinct memory (a cell never aliases a user buffer).
            unsafe { copy_bytes(src, dst, n * self.facts.size) };
            return Ok(());
        }
        let n = n as c_int;
        // SAFETY: both describe n elements of `dt` (user buffer or cell laid out like it).
        unsafe {
            pack::convert(
                src as *const c_void,
                n,
                self.dt,
                dst as *mut c_void,
                n,
                self.dt,
                self.comm,
            )
        }
    }
    /// `copy` into a cell another rank reads: contiguous data with non-temporal stores
    /// ([`copy_stream`]) when `stream` ([`stream_now`]).
    fn copy_in(&self, src: *const u8, cell: *mut u8, n: usize, stream: bool) -> Result<(), Error> {
        if n == 0 || !self.facts.contiguous() || !stream {
            return self.copy(src, cell, n);
        }
        // SAFETY: n contiguous elements of the user's buffer into a cell sized for them
        // (`cell_elems`); a cell never aliases a user buffer.
        unsafe { copy_stream(src, cell, n * self.facts.size) };
        Ok(())
    }
    /// `acc := x ⊕ acc` over `n` elements.
    fn fold(&self, x: *const u8, acc: *mut u8, n: usize) -> Result<(), Error> {
        if n == 0 {
            return Ok(());
        }
        // SAFETY: n elements of `dt` at each, in the user's buffers or the window.
        let rc = unsafe {
            PMPI_Reduce_local(
                x as *const c_void,
                acc as *mut c_void,
                n as c_int,
                self.dt,
                self.op,
            )
        };
        if rc == consts::SUCCESS() {
            Ok(())
        } else {
            Err(Error::Mpi(rc, "MPI_Reduce_local".into()))
        }
    }
}

/// `n` bytes from `src` to `dst`. When `dst` lies 1-63 bytes past `src` modulo 4 KiB a forward
/// copy stalls on every store (4 KiB aliasing: each load matches the low 12 address bits of
/// the store just before it): measured here, 256 KiB in 86-96 µs against 5.8 µs; a cell at
/// a page start and a malloc'd buffer at page + 16 are that case (an MPICH bcast of 256 KiB,
/// p = 2, took 115 µs against native's 31). Then the copy runs backward in 64-byte blocks
/// (5.8 µs), which no load follows a store it aliases.
///
/// # Safety
/// `src` and `dst` point to `n` bytes each that do not overlap.
unsafe fn copy_bytes(src: *const u8, dst: *mut u8, n: usize) {
    let dist = (dst as usize).wrapping_sub(src as usize) % 4096;
    if !(1..64).contains(&dist) || n < 4096 {
        // SAFETY: the caller's guarantee.
        unsafe { std::ptr::copy_nonoverlapping(src, dst, n) };
        return;
    }
    let mut i = n - n % 64;
    // SAFETY: every block lies inside the `n` bytes of each (the caller's guarantee).
    unsafe {
        std::ptr::copy_nonoverlapping(src.add(i), dst.add(i), n % 64);
        while i > 0 {
            i -= 64;
            std::ptr::copy_nonoverlapping(src.add(i), dst.add(i), 64);
        }
    }
}

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
/// slow: 42-57 ns (p10-p90) outside the spells on this VM, 123-155 inside them.
const SLOW_LINE_NS: u64 = 90;

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
fn stream_now(bases: &[*mut u8], bytes: usize) -> bool {
    match stream_mode() {
        Some(on) => on,
        None => {
            bytes >= STREAM_MIN
                && mono_ns() < Win::word(bases, 0, STREAM_UNTIL).load(Ordering::Relaxed)
        }
    }
}

/// Write the own probe lines (before publishing `filled`).
fn mark_probes(bases: &[*mut u8], me: usize, g: u64) {
    for off in PROBES {
        Win::word(bases, me, off).store(g, Ordering::Relaxed);
    }
}

/// Does a call that reads `bytes` from other ranks' cells probe? Every call of 64 KiB or more
/// (a probe costs 0.2-0.6 µs), every eighth from 16 KiB, none below.
fn probe_due(bytes: usize) -> bool {
    static TICK: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    stream_mode().is_none()
        && (bytes >= 64 << 10
            || (bytes >= STREAM_MIN && TICK.fetch_add(1, Ordering::Relaxed) % 8 == 0))
}

/// Time loads of rank `k`'s probe lines, each address depending on the last load (so that
/// they do not overlap); a mean above [`SLOW_LINE_NS`] keeps copies streaming for
/// [`STREAM_HOLD_NS`] on every rank of the window (only with `PCOLL_SHM_STREAM` unset).
fn probe(bases: &[*mut u8], k: usize) {
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
    if (t1 - t0) / (PROBES.len() as u64) <= SLOW_LINE_NS {
        STREAK.store(0, Ordering::Relaxed);
        return;
    }
    if STREAK.fetch_add(1, Ordering::Relaxed) + 1 >= SLOW_STREAK {
        let until = Win::word(bases, 0, STREAM_UNTIL);
        if until.load(Ordering::Relaxed) < t1 {
            log::debug!(
                "shm: slow core-to-core transfers ({} ns a line): streaming copies",
                (t1 - t0) / PROBES.len() as u64
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
unsafe fn copy_stream(src: *const u8, dst: *mut u8, n: usize) {
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

/// Can `MPI_Reduce_local` run on `dt` with `op` at all? Asked on every rank before a reducing
/// call touches the window, with count 0, for a derived datatype (a named one always can, the
/// validation checked the op on it): only the owners of slices reduce, so an error there
/// (an uncommitted datatype: Open MPI and MPICH both refuse count 0 too) would leave the others
/// waiting; asked here every rank fails alike, before any counter moves.
pub fn reducible(dt: MPI_Datatype, op: MPI_Op) -> Result<(), Error> {
    if crate::mpi_types::is_named(dt) {
        return Ok(());
    }
    let mut scratch = [0u8; 16];
    let at = scratch.as_mut_ptr() as *mut c_void;
    // SAFETY: count 0: no element is read or written.
    let rc = unsafe { PMPI_Reduce_local(at as *const c_void, at, 0, dt, op) };
    if rc == consts::SUCCESS() {
        Ok(())
    } else {
        Err(Error::Mpi(rc, "MPI_Reduce_local".into()))
    }
}

/// A communicator of one rank: the input is the result.
pub fn alone(call: &Call) -> Result<(), Error> {
    if call.in_place || call.output.is_null() {
        return Ok(());
    }
    call.copy(call.input, call.output, call.count)
}

/// Run `call` over `w` (every rank of the communicator with the same shape).
pub fn run(w: &Win, call: &Call) -> Result<(), Error> {
    let mut guard = w.inner.lock();
    let inner = guard
        .as_mut()
        .ok_or_else(|| Error::Internal("shm window already freed".into()))?;
    let ce = cell_elems(w.cell, &call.facts)
        .ok_or_else(|| Error::Unsupported("an element larger than a shm cell".into()))?;
    let shape = Shape {
        p: w.p,
        root: call.root,
        count: call.count,
        cell_elems: ce,
        min_slice: (MIN_SLICE_BYTES / call.facts.size.max(1)).max(1),
        all: call.all,
        commutative: call.commutative,
        combine_at_root: super::combine_at_root(),
    };
    let bases = inner.bases.clone();
    for c in 0..shape.chunks() {
        let g = inner.seq + c as u64 + 1;
        chunk(w, &bases, call, &shape, c, g)?;
    }
    inner.seq += shape.chunks() as u64;
    Ok(())
}

/// One chunk, global number `g` (from 1).
fn chunk(
    w: &Win,
    bases: &[*mut u8],
    call: &Call,
    s: &Shape,
    c: usize,
    g: u64,
) -> Result<(), Error> {
    let (me, p) = (w.rank, w.p);
    let (lo, hi) = s.chunk(c);
    let len = hi - lo;
    let slot = (g as usize) % SLOTS;
    let counter = |k: usize, off: usize| Win::word(bases, k, off);
    let patient = p <= cores();
    // The slot is free once every rank has read chunk g - SLOTS.
    if g > SLOTS as u64 {
        for k in 0..p {
            wait_for(counter(k, READ), g - SLOTS as u64, patient);
        }
    }
    let mine = s.slice_of(me, len);
    let own_cell = mine.map_or(true, |j| s.copies_in(me, j, len, call.in_place));
    let my_in = w.cell_ptr(bases, me, slot, false);
    // 1. Copy in the slices others read.
    let streaming = stream_now(bases, len * call.facts.size);
    for j in 0..s.nslices(len) {
        if s.copies_in(me, j, len, call.in_place) {
            let (a, b) = s.slice(len, j);
            call.copy_in(
                call.at(call.input, lo + a),
                call.cell_at(my_in, a),
                b - a,
                streaming,
            )?;
        }
    }
    mark_probes(bases, me, g);
    counter(me, FILLED).store(g, Ordering::Release);
    // A reader times one transfer per call (`probe_due`).
    let mut probed = c > 0 || !probe_due(s.count * call.facts.size);
    // 2. Reduce the own slice (unless its partial is the copied-in input itself).
    if let Some(j) = mine.filter(|&j| !s.partial_in_input(j)) {
        let (first, rest) = s.fold(me, j);
        for &k in std::iter::once(&first).chain(&rest) {
            if k != me {
                wait_for(counter(k, FILLED), g, patient);
                if !probed {
                    probe(bases, k);
                    probed = true;
                }
            }
        }
        let (a, b) = s.slice(len, j);
        let x = |k: usize| -> *const u8 {
            if k == me && !own_cell {
                call.at(call.input, lo + a)
            } else {
                call.cell_at(w.cell_ptr(bases, k, slot, false), a)
            }
        };
        let acc = if s.direct(me, j) {
            call.at(call.output, lo + a)
        } else {
            call.cell_at(w.cell_ptr(bases, me, slot, true), a)
        };
        fold(call, (first, rest), &x, acc, b - a)?;
    }
    if mine.is_some() {
        counter(me, REDUCED).store(g, Ordering::Release);
    }
    // 3. Copy out (root last: x_root ⊕ partial).
    if s.copies_out(me) {
        for j in 0..s.nslices(len) {
            if s.direct(me, j) {
                continue;
            }
            let owner = s.owner(j);
            wait_for(counter(owner, REDUCED), g, patient);
            if !probed && owner != me {
                probe(bases, owner);
                probed = true;
            }
            let (a, b) = s.slice(len, j);
            let cell = w.cell_ptr(bases, owner, slot, !s.partial_in_input(j));
            let from = call.cell_at(cell, a);
            let to = call.at(call.output, lo + a);
            if s.combines(j) {
                combine(call, call.at(call.input, lo + a), from, to, b - a)?;
            } else {
                call.copy(from, to, b - a)?;
            }
        }
    }
    counter(me, READ).store(g, Ordering::Release);
    Ok(())
}

/// The fold of one slice of `n` elements into `acc`, inputs `x(k)` in the plan's order
/// (`Shape::fold`).
fn fold(
    call: &Call,
    (first, rest): (usize, Vec<usize>),
    x: &dyn Fn(usize) -> *const u8,
    acc: *mut u8,
    n: usize,
) -> Result<(), Error> {
    let mut rest = rest.into_iter();
    match (call.fused, rest.as_slice().first()) {
        // acc := x_k ⊕ x_first in one pass (never in place: then the copy is free).
        (Some((f, size)), Some(&k))
            if x(first) != acc as *const u8 && aligned(size, &[x(first), x(k), acc]) =>
        {
            rest.next();
            // SAFETY: n aligned elements at each; `acc` (an output cell or the root's receive
            // buffer) is neither input: cells are distinct, and the receive buffer is an
            // input only in place, where `acc == x(first)`.
            unsafe { f(x(k), x(first), acc, n) };
        }
        _ => call.copy(x(first), acc, n)?,
    }
    for k in rest {
        call.fold(x(k), acc, n)?;
    }
    Ok(())
}

fn aligned(size: usize, ptrs: &[*const u8]) -> bool {
    ptrs.iter().all(|q| (*q as usize) % size == 0)
}

/// `z := x_root ⊕ partial` over `n` elements at a reduce's root (root last). In place
/// (`z == x_root`) with a non-commutative op the partial's cell takes the result first: only
/// the root reads it.
fn combine(call: &Call, xr: *const u8, part: *mut u8, z: *mut u8, n: usize) -> Result<(), Error> {
    if let Some((f, size)) = call.fused {
        if xr != z as *const u8 && aligned(size, &[xr, part, z]) {
            // SAFETY: n aligned elements at each; `z` is the root's receive buffer, which is
            // neither its input (not in place) nor a cell.
            unsafe { f(xr, part, z, n) };
            return Ok(());
        }
    }
    if xr == z as *const u8 {
        if call.commutative {
            return call.fold(part, z, n);
        }
        call.fold(xr, part, n)?;
        return call.copy(part, z, n);
    }
    call.copy(part, z, n)?;
    call.fold(xr, z, n)
}

/// Run a bcast, allgatherv or reduce_scatter plan (`pcoll::algo::shm::xfer`) over `w` (None:
/// one rank, whose plan reads no cell): `call.input` and `call.output` are the bases its
/// `src` and `dst` offsets count from, in elements of `call.facts`.
pub fn run_plan(w: Option<&Win>, call: &Call, plan: &Plan) -> Result<(), Error> {
    let Some(w) = w else {
        for c in 0..plan.chunks() {
            for s in plan.steps(0, c) {
                step(call, 0, &s, &|_| std::ptr::null_mut(), false)?;
            }
        }
        return Ok(());
    };
    let mut guard = w.inner.lock();
    let inner = guard
        .as_mut()
        .ok_or_else(|| Error::Internal("shm window already freed".into()))?;
    let bases = inner.bases.clone();
    let (me, p) = (w.rank, w.p);
    let patient = p <= cores();
    let counter = |k: usize, off: usize| Win::word(&bases, k, off);
    for c in 0..plan.chunks() {
        let g = inner.seq + c as u64 + 1;
        let slot = (g as usize) % SLOTS;
        let steps = plan.steps(me, c);
        let fills = steps.iter().take_while(|s| s.fills()).count();
        // The slot is free once every rank has read chunk g - SLOTS.
        if fills > 0 && g > SLOTS as u64 {
            for k in 0..p {
                wait_for(counter(k, READ), g - SLOTS as u64, patient);
            }
        }
        let cell = |k: usize| w.cell_ptr(&bases, k, slot, false);
        let bytes =
            |v: &[Step]| -> usize { v.iter().map(step_len).sum::<usize>() * call.facts.size };
        let streaming = stream_now(&bases, bytes(&steps[..fills]));
        for s in &steps[..fills] {
            step(call, me, s, &cell, streaming)?;
        }
        mark_probes(&bases, me, g);
        counter(me, FILLED).store(g, Ordering::Release);
        // A reader times one transfer per call (`probe_due`).
        let mut probed = c > 0 || !probe_due(bytes(&steps[fills..]));
        for s in &steps[fills..] {
            for k in s.reads() {
                if k != me {
                    wait_for(counter(k, FILLED), g, patient);
                    if !probed {
                        probe(&bases, k);
                        probed = true;
                    }
                }
            }
            step(call, me, s, &cell, false)?;
        }
        counter(me, READ).store(g, Ordering::Release);
    }
    inner.seq += plan.chunks() as u64;
    Ok(())
}

/// One step of rank `me`'s plan; `cell(k)` is rank k's input cell of this chunk's slot.
/// Elements a step moves.
fn step_len(s: &Step) -> usize {
    match *s {
        Step::In { len, .. }
        | Step::Own { len, .. }
        | Step::Out { len, .. }
        | Step::Fold { len, .. } => len,
    }
}

fn step(
    call: &Call,
    me: usize,
    s: &Step,
    cell: &dyn Fn(usize) -> *mut u8,
    streaming: bool,
) -> Result<(), Error> {
    match *s {
        Step::In { src, cell: at, len } => call.copy_in(
            call.at(call.input, src),
            call.cell_at(cell(me), at),
            len,
            streaming,
        ),
        Step::Own { src, dst, len } => {
            call.copy(call.at(call.input, src), call.at(call.output, dst), len)
        }
        Step::Out {
            from,
            cell: at,
            dst,
            len,
        } => call.copy(call.cell_at(cell(from), at), call.at(call.output, dst), len),
        Step::Fold {
            dst,
            len,
            first,
            ref rest,
        } => {
            // Input i of the fold: `first`, then `rest` in turn.
            let x = |i: usize| -> *const u8 {
                match if i == 0 { first } else { rest[i - 1] } {
                    Src::Cell { rank, at } => call.cell_at(cell(rank), at),
                    Src::Mine { at } => call.at(call.input, at),
                }
            };
            let order = (0, (1..=rest.len()).collect());
            fold(call, order, &x, call.at(call.output, dst), len)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{copy_bytes, copy_stream};

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

    /// Every distance modulo 4 KiB (the backward path included) and lengths around the
    /// 64-byte blocks copy exactly the bytes asked for, nothing around them.
    #[test]
    fn copy_bytes_copies_exactly() {
        let src: Vec<u8> = (0..3 * 4096 + 300).map(|i| (i * 7 + 3) as u8).collect();
        let mut dst = vec![0u8; 4 * 4096 + 600];
        for dist in [0usize, 1, 16, 40, 63, 64, 65, 2048, 4095] {
            for n in [0usize, 63, 4096, 4097, 4096 + 63, 3 * 4096 + 17] {
                dst.iter_mut().for_each(|b| *b = 0xEE);
                // dst - src ≡ dist (mod 4096), both inside their vectors.
                let s = src.as_ptr();
                let base = dst.as_mut_ptr();
                let off = ((s as usize + dist).wrapping_sub(base as usize)) % 4096;
                // SAFETY: `n` bytes fit in both vectors (off < 4096, n < 3·4096 + 300).
                unsafe { copy_bytes(s, base.add(off), n) };
                assert_eq!(&dst[off..off + n], &src[..n], "dist {dist} n {n}");
                assert!(
                    dst[..off].iter().all(|&b| b == 0xEE),
                    "before, dist {dist} n {n}"
                );
                assert!(
                    dst[off + n..].iter().all(|&b| b == 0xEE),
                    "after, dist {dist} n {n}"
                );
            }
        }
    }
}
