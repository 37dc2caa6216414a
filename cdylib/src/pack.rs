//! Packing through the MPI, the one implementation pcoll has: `MPI_Pack` / `MPI_Unpack` of a
//! datatype's data (in order, holes skipped; on a homogeneous system exactly the data bytes),
//! and the copy between two layouts of one type signature through a packed buffer. Used for
//! allgatherv's staging buffer and its send block converted to the receive type
//! (`dispatch::serve`), and for copies of elements with holes (`pmpi`).

use crate::consts;
use mpi_sys::*;
use pcoll::Error;
use std::os::raw::{c_int, c_void};

fn check(rc: c_int, what: &str) -> Result<(), Error> {
    if rc == consts::SUCCESS() {
        Ok(())
    } else {
        Err(Error::Mpi(rc, what.to_string()))
    }
}

/// `MPI_Pack` `n` elements of `t` from `src` into the `bytes` bytes at `dst`.
///
/// # Safety
/// `src` holds `n` elements of `t`; `dst` has `bytes` writable bytes, at least the packed
/// size of the block (its signature's size).
pub unsafe fn pack(
    src: *const c_void,
    n: c_int,
    t: MPI_Datatype,
    dst: *mut c_void,
    bytes: c_int,
    comm: MPI_Comm,
) -> Result<(), Error> {
    let mut pos: c_int = 0;
    // SAFETY: the caller's guarantee; `pos` is an out-pointer to a local.
    from_bottom(src as *mut c_void, n, t, |src, n, t| {
        check(
            unsafe { PMPI_Pack(src, n, t, dst, bytes, &mut pos, comm) },
            "MPI_Pack",
        )
    })
}

/// Run `f` on a user buffer (`buf`, `n` elements of `t`), where `buf` may be `MPI_BOTTOM`
/// (NULL in both ABIs, with a type of absolute addresses): MPICH 4.0's `MPI_Pack` and
/// `MPI_Unpack` refuse a NULL buffer ("Null pointer in parameter inbuf"), so there the same
/// data are described from a non-NULL base `B` by a type holding the `n` elements at `-B`.
fn from_bottom(
    buf: *mut c_void,
    n: c_int,
    t: MPI_Datatype,
    f: impl FnOnce(*mut c_void, c_int, MPI_Datatype) -> Result<(), Error>,
) -> Result<(), Error> {
    if !buf.is_null() || n == 0 {
        return f(buf, n, t);
    }
    const B: MPI_Aint = 4096;
    let mut shifted = std::mem::MaybeUninit::<MPI_Datatype>::uninit();
    // SAFETY: one block of `n` elements of the valid type `t` at displacement -B, committed,
    // used, freed here.
    unsafe {
        check(
            PMPI_Type_create_hindexed(1, &n, &-B, t, shifted.as_mut_ptr()),
            "MPI_Type_create_hindexed",
        )?;
        let mut shifted = shifted.assume_init();
        let out = check(PMPI_Type_commit(&mut shifted), "MPI_Type_commit")
            .and_then(|()| f(B as usize as *mut c_void, 1, shifted));
        PMPI_Type_free(&mut shifted);
        out
    }
}

/// `MPI_Unpack` the `bytes` bytes at `src` into `n` elements of `t` at `dst` (no call for
/// 0 bytes).
///
/// # Safety
/// `src` holds `bytes` packed bytes of the block; `dst` is writable where `n` elements of `t`
/// have data.
pub unsafe fn unpack(
    src: *const c_void,
    bytes: c_int,
    dst: *mut c_void,
    n: c_int,
    t: MPI_Datatype,
    comm: MPI_Comm,
) -> Result<(), Error> {
    if bytes == 0 {
        return Ok(());
    }
    let mut pos: c_int = 0;
    // SAFETY: the caller's guarantee; `pos` is an out-pointer to a local.
    from_bottom(dst, n, t, |dst, n, t| {
        check(
            unsafe { PMPI_Unpack(src, bytes, &mut pos, dst, n, t, comm) },
            "MPI_Unpack",
        )
    })
}

/// Bytes `MPI_Pack` needs for `n` elements of `t`.
fn packed_size(n: c_int, t: MPI_Datatype, comm: MPI_Comm) -> Result<c_int, Error> {
    let mut size: c_int = 0;
    // SAFETY: out-pointer to a local; an invalid handle yields an error code.
    check(
        unsafe { PMPI_Pack_size(n, t, comm, &mut size) },
        "MPI_Pack_size",
    )?;
    Ok(size)
}

/// Copy `sn` elements of `st` at `src` into `dn` elements of `dt` at `dst` (the same type
/// signature, or the same type for a copy of elements with holes): pack into a scratch buffer
/// of `MPI_Pack_size` bytes, then unpack, which reads and writes data bytes only.
///
/// # Safety
/// `src` holds `sn` elements of `st`; `dst` is writable where `dn` elements of `dt` have data.
pub unsafe fn convert(
    src: *const c_void,
    sn: c_int,
    st: MPI_Datatype,
    dst: *mut c_void,
    dn: c_int,
    dt: MPI_Datatype,
    comm: MPI_Comm,
) -> Result<(), Error> {
    let size = packed_size(sn, st, comm)?;
    let len = size.max(1) as usize;
    let mut buf: Vec<u8> = Vec::new();
    buf.try_reserve_exact(len).map_err(|_| Error::NoMem(len))?;
    buf.resize(len, 0);
    // SAFETY: the caller's guarantee for the user's buffers; `buf` holds the packed size.
    unsafe {
        pack(src, sn, st, buf.as_mut_ptr() as *mut c_void, size, comm)?;
        unpack(buf.as_ptr() as *const c_void, size, dst, dn, dt, comm)
    }
}
