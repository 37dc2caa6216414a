//! One reduce or allreduce call's data as `shm` moves it: the call ([`Call`]), its copies
//! into and out of cells (plain, with the 4 KiB-aliasing guard, or streaming), its folds (the
//! fused kernel or `MPI_Reduce_local`) and a plan's steps. The protocol that orders them over
//! the window's counters is [`super::run`].

use super::stream::copy_stream;
use crate::consts;
use crate::mpi_types::TypeFacts;
use crate::pack;
use mpi_sys::*;
use pcoll::algo::shm::xfer::{Src, Step};
use pcoll::algo::shm::Shape;
use pcoll::Error;
use std::os::raw::{c_int, c_void};

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
    /// A one-pass `z := x ⊕ y` for the op and type ([`super::kernel`]), if any.
    pub fused: Option<(super::kernel::Fused, usize)>,
}

/// Elements of the call's type in a cell (None: not one).
pub fn cell_elems(cell: usize, f: &TypeFacts) -> Option<usize> {
    let (ext, text) = (f.extent as usize, f.true_extent as usize);
    (cell >= text && ext > 0).then(|| (cell - text) / ext + 1)
}

impl Call {
    pub(super) fn at(&self, base: *const u8, i: usize) -> *mut u8 {
        base.wrapping_offset(i as isize * self.facts.extent) as *mut u8
    }
    /// Bytes of a cell that `n` elements of the call fill (`cell_at` lays them out).
    pub(super) fn span_bytes(&self, n: usize) -> usize {
        match n {
            0 => 0,
            n => (n - 1) * self.facts.extent as usize + self.facts.true_extent as usize,
        }
    }
    /// Element `i` of a cell that starts at `cell`.
    pub(super) fn cell_at(&self, cell: *mut u8, i: usize) -> *mut u8 {
        self.at(cell.wrapping_offset(-self.facts.true_lb), i)
    }
    pub(super) fn copy(&self, src: *const u8, dst: *mut u8, n: usize) -> Result<(), Error> {
        if n == 0 || std::ptr::eq(src, dst) {
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
                // Packed and unpacked in this process: no peer's representation matters
                // (and a persistent call may outlive its communicator's handle).
                consts::comm_self(),
            )
        }
    }
    /// `copy` into a cell another rank reads: contiguous data with non-temporal stores
    /// ([`copy_stream`]) when `stream` ([`super::stream::stream_now`]).
    pub(super) fn copy_in(
        &self,
        src: *const u8,
        cell: *mut u8,
        n: usize,
        stream: bool,
    ) -> Result<(), Error> {
        if n == 0 || !self.facts.contiguous() || !stream {
            return self.copy(src, cell, n);
        }
        // SAFETY: n contiguous elements of the user's buffer into a cell sized for them
        // (`cell_elems`); a cell never aliases a user buffer.
        unsafe { copy_stream(src, cell, n * self.facts.size) };
        Ok(())
    }
    /// `acc := x ⊕ acc` over `n` elements.
    pub(super) fn fold(&self, x: *const u8, acc: *mut u8, n: usize) -> Result<(), Error> {
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
/// waiting; asked here every rank fails alike, before any counter moves. Also asked by every
/// algorithm at p = 1, where no MPI call sees the datatype.
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

/// The fold of one slice of `n` elements into `acc`, inputs `x(k)` in the plan's order
/// (`Shape::fold`).
pub(super) fn fold(
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
            if !std::ptr::eq(x(first), acc) && aligned(size, &[x(first), x(k), acc]) =>
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

/// Slice `j` of a chunk of `len` elements at element `at` of the call, when this rank (`me`)
/// owns it in an allreduce and folds it with the dual-store kernel ([`super::kernel::Dual`])
/// into its output cell and its receive buffer at once: two inputs, its own read from its
/// input (not copied into its cell), every pointer aligned for the kernel. The kernel and the
/// receive buffer's slice; the fold and the copy-out ask alike (the pointers are the call's).
pub(super) fn dual_to(
    call: &Call,
    s: &Shape,
    (me, j): (usize, usize),
    len: usize,
    at: usize,
) -> Option<(super::kernel::Dual, *mut u8)> {
    let (_, size) = call.fused?;
    let z = call.at(call.output, at);
    // An allreduce's fold has p inputs: two at p = 2.
    let ok = s.all
        && s.p == 2
        && s.slice_of(me, len) == Some(j)
        && !s.copies_in(me, j, len, call.in_place)
        && aligned(size, &[call.at(call.input, at), z]);
    if !ok {
        return None;
    }
    super::kernel::dual(call.op, call.dt).map(|d| (d, z))
}

/// The dual store of [`dual_to`] while copies into cells stream (`stream::stream_now`): the
/// sum of each 4 KiB block into a buffer on the stack, then copied into the receive buffer and
/// streamed into the output cell (non-temporal stores: the other ranks read it from memory,
/// not from this core's cache, in a slow spell).
///
/// # Safety
/// `n` aligned elements of the call's fused kernel at each; `w` overlaps nothing else; `z` is
/// `x`, `y` or memory overlapping neither.
pub(super) unsafe fn dual_stream(
    call: &Call,
    (x, y): (*const u8, *const u8),
    z: *mut u8,
    w: *mut u8,
    n: usize,
) {
    let Some((f, size)) = call.fused else {
        return;
    };
    let mut tmp = [0u64; 512];
    let t = tmp.as_mut_ptr() as *mut u8;
    let per = 4096 / size;
    let mut i = 0;
    while i < n {
        let k = per.min(n - i);
        let off = i * size;
        // SAFETY: the caller's guarantee for x, y, z, w; `tmp` holds 4096 bytes, 8-aligned,
        // distinct from all of them.
        unsafe {
            f(x.add(off), y.add(off), t, k);
            std::ptr::copy_nonoverlapping(t, z.add(off), k * size);
            copy_stream(t, w.add(off), k * size);
        }
        i += k;
    }
}

fn aligned(size: usize, ptrs: &[*const u8]) -> bool {
    ptrs.iter().all(|q| (*q as usize).is_multiple_of(size))
}

/// `z := x_root ⊕ partial` over `n` elements at a reduce's root (root last). In place
/// (`z == x_root`) with a non-commutative op the partial's cell takes the result first: only
/// the root reads it.
pub(super) fn combine(
    call: &Call,
    xr: *const u8,
    part: *mut u8,
    z: *mut u8,
    n: usize,
) -> Result<(), Error> {
    if let Some((f, size)) = call.fused {
        if !std::ptr::eq(xr, z) && aligned(size, &[xr, part, z]) {
            // SAFETY: n aligned elements at each; `z` is the root's receive buffer, which is
            // neither its input (not in place) nor a cell.
            unsafe { f(xr, part, z, n) };
            return Ok(());
        }
    }
    if std::ptr::eq(xr, z) {
        if call.commutative {
            return call.fold(part, z, n);
        }
        call.fold(xr, part, n)?;
        return call.copy(part, z, n);
    }
    call.copy(part, z, n)?;
    call.fold(xr, z, n)
}

/// One step of rank `me`'s plan; `cell(k)` is rank k's input cell of this chunk's slot.
/// Elements a step moves.
pub(super) fn step_len(s: &Step) -> usize {
    match *s {
        Step::In { len, .. }
        | Step::Own { len, .. }
        | Step::Out { len, .. }
        | Step::Fold { len, .. } => len,
    }
}

pub(super) fn step(
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
