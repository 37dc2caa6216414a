//! The pages of a window's segments: found in the window, first-touched by their owner,
//! mapped into the other ranks before the window's first calls.

use super::ok;
use mpi_sys::*;
use std::os::raw::{c_int, c_void};

/// Map every page of the other ranks' segments into this process now, once, instead of in
/// the window's first calls: each first read of a peer's page is a minor fault, and with 8
/// slots the first eight calls read fresh cells (a raced cell times such calls). Forced `shm`
/// reduce at 256 KiB, Open MPI 4.1, p = 2, the first 8 calls: mean 3 us above the median
/// mapped, 7-10 us above it unmapped. `MADV_POPULATE_READ` (Linux 5.14), else a read per page.
pub(super) fn prefault(bases: &[*mut u8], me: usize, bytes: usize) {
    const MADV_POPULATE_READ: c_int = 22;
    for (k, &b) in bases.iter().enumerate() {
        if k == me || b.is_null() {
            continue;
        }
        // SAFETY: the pages of a segment the MPI mapped here, from a page boundary
        // ([`page_up`]); the advice only maps pages, reading nothing.
        let rc = unsafe { libc::madvise(b as *mut c_void, bytes, MADV_POPULATE_READ) };
        if rc != 0 {
            for off in (0..bytes).step_by(PAGE) {
                // SAFETY: inside the peer's segment of `bytes` bytes, mapped readable.
                unsafe { std::ptr::read_volatile(b.add(off)) };
            }
        }
    }
}

/// A page more than the segment is asked of the MPI, whose segments need not start on a page:
/// Open MPI 4.1's start 264 bytes into one (the others' on one), which put every cell 8 bytes
/// off a cache line. Each rank's segment is used from its first page boundary, the same
/// bytes in every process (a mapping keeps the offset within a page).
pub(super) const PAGE: usize = 4096;

pub(super) fn page_up(b: *mut u8) -> *mut u8 {
    b.wrapping_add((PAGE - (b as usize) % PAGE) % PAGE)
}

/// The owner's first touch of its segment (`bytes` at `base`, page aligned): every page made
/// present for writing by `MADV_POPULATE_WRITE` (Linux 5.14), then every byte written (zero).
/// False if the pages cannot be had: a tmpfs without room for them fails at the advice, with
/// `EFAULT`, where a write would have raised `SIGBUS` (without the advice, on older kernels:
/// `EINVAL`, the write alone). The write is not left to the cells' first use: session 36
/// zeroed only the counters' page, and each page's first write then cost the window's first
/// calls (forced `shm` reduce of 64 KiB, Open MPI 4.1, p = 2, session 37's VM: the first 32
/// calls, presumably one per cell region, 12-15 µs, every later one 8-9), which a raced rule's race timed
/// as `shm`'s own and lost to native.
pub(super) fn first_touch(base: *mut u8, bytes: usize) -> bool {
    const MADV_POPULATE_WRITE: c_int = 23;
    // SAFETY: our own segment of `bytes` bytes, mapped writable by the MPI; the advice only
    // faults its pages in (their contents stay).
    let rc = unsafe { libc::madvise(base as *mut c_void, bytes, MADV_POPULATE_WRITE) };
    if rc != 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINVAL) {
        log::debug!(
            "shm: the segment's pages could not be populated ({})",
            std::io::Error::last_os_error()
        );
        return false;
    }
    // SAFETY: our own segment of `bytes` bytes, its pages present (or, without the advice,
    // a tmpfs with room: checked by `room`).
    unsafe { std::ptr::write_bytes(base, 0, bytes) };
    true
}

/// The `p` segments of `win` (each from its first page boundary, [`page_up`]), and whether
/// every one was found with room for `bytes`.
pub(super) fn segments(win: MPI_Win, p: usize, bytes: usize) -> (Vec<*mut u8>, bool) {
    let mut bases = vec![std::ptr::null_mut::<u8>(); p];
    let mut found = true;
    for (k, b) in bases.iter_mut().enumerate() {
        let (mut size, mut unit): (MPI_Aint, c_int) = (0, 0);
        // SAFETY: valid window; out-pointers to locals.
        let rc = unsafe {
            PMPI_Win_shared_query(
                win,
                k as c_int,
                &mut size,
                &mut unit,
                b as *mut *mut u8 as *mut c_void,
            )
        };
        found &= ok(rc) && size as usize >= bytes + PAGE && !b.is_null();
        *b = page_up(*b);
    }
    (bases, found)
}
