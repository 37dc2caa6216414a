//! The `shm` protocol over a communicator's window: `pcoll::algo::shm`'s plan, run with
//! copies, `MPI_Reduce_local` and acquire/release counters (module docs there). Waiting spins,
//! then yields the core (`sched_yield`) in its loop: after 200 spins (a spinning rank holds
//! the core, or the hyperthread, the rank it waits for needs), or when the ranks do not
//! outnumber the cores after [`patience`] (default 0; a yield with other jobs on the machine
//! gives the core away for a time slice: a 1 MiB allreduce, p = 2, took 6.6 ms against
//! native's 0.5 ms with other jobs running, but spinning 2 ms lost on a quiet machine).
//! Copies into cells take streaming stores while readers time slow core-to-core transfers
//! ([`super::stream`]).

use super::stream::{copy_stream, mark_probes, probe, probe_due, stream_now};
use super::{Win, FILLED, READ, REDUCED};
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

/// A wait found longer than this (checked every 64th yield) sleeps [`NAP`] between checks.
const LONG_WAIT: std::time::Duration = std::time::Duration::from_millis(1);
const NAP: std::time::Duration = std::time::Duration::from_micros(50);

/// Fewest bytes a rank reduces as a slice of its own.
const MIN_SLICE_BYTES: usize = 16 << 10;

/// Wait until `c` reaches `at_least`; `patient`: the ranks do not outnumber the cores.
fn wait_for(c: &AtomicU64, at_least: u64, patient: bool) {
    let mut n = 0u32;
    let mut since: Option<std::time::Instant> = None;
    let mut long = false;
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
        } else if long
            || (n % 64 == 0
                && since.get_or_insert_with(std::time::Instant::now).elapsed() > LONG_WAIT)
        {
            long = true;
            // A long wait (a node step of `hier` waits for its leader's network step): give
            // the core away for a while instead of yielding in a loop, which takes it back
            // from the ranks doing the work when they outnumber the cores.
            std::thread::sleep(NAP);
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
    /// ([`copy_stream`]) when `stream` ([`super::stream::stream_now`]).
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
    let at = At {
        w,
        bases: &bases,
        call,
        s: &shape,
    };
    for c in 0..shape.chunks() {
        chunk(&at, c, inner.seq + c as u64 + 1)?;
    }
    inner.seq += shape.chunks() as u64;
    Ok(())
}

/// A reduce or allreduce call on a window: what its chunks share.
struct At<'a> {
    w: &'a Win,
    bases: &'a [*mut u8],
    call: &'a Call,
    s: &'a Shape,
}

/// One chunk, global number `g` (from 1).
fn chunk(at: &At, c: usize, g: u64) -> Result<(), Error> {
    let (w, bases, call, s) = (at.w, at.bases, at.call, at.s);
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
    // 1. Copy in the slices others read.
    fill(at, c, g)?;
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
        copy_out(at, c, g, probed)?;
    }
    counter(me, READ).store(g, Ordering::Release);
    Ok(())
}

/// Step 1 of chunk `c` (global number `g`): copy in the slices others read, then publish
/// `filled` (after the probe lines).
fn fill(at: &At, c: usize, g: u64) -> Result<(), Error> {
    let (w, bases, call, s) = (at.w, at.bases, at.call, at.s);
    let me = w.rank;
    let (lo, hi) = s.chunk(c);
    let len = hi - lo;
    let my_in = w.cell_ptr(bases, me, (g as usize) % SLOTS, false);
    let streaming = stream_now(bases, len * call.facts.size);
    for j in 0..s.nslices(len) {
        if s.copies_in(me, j, len, call.in_place) {
            let (a, b) = s.slice(len, j);
            let (from, to) = (call.at(call.input, lo + a), call.cell_at(my_in, a));
            call.copy_in(from, to, b - a, streaming)?;
        }
    }
    mark_probes(bases, me, g);
    Win::word(bases, me, FILLED).store(g, Ordering::Release);
    Ok(())
}

/// Step 3 of chunk `c` (global number `g`): copy the slices out of their owners' cells (the
/// root's own slice of a reduce is already in place), combining `x_root ⊕ partial` where the
/// root comes last; probe an owner unless `probed`.
fn copy_out(at: &At, c: usize, g: u64, mut probed: bool) -> Result<(), Error> {
    let (w, bases, call, s) = (at.w, at.bases, at.call, at.s);
    let me = w.rank;
    let (lo, hi) = s.chunk(c);
    let len = hi - lo;
    let slot = (g as usize) % SLOTS;
    for j in 0..s.nslices(len) {
        if s.direct(me, j) {
            continue;
        }
        let owner = s.owner(j);
        wait_for(Win::word(bases, owner, REDUCED), g, w.p <= cores());
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
    use super::copy_bytes;

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
