//! MPICH's `use mpi_f08` completion calls. Its f08 collectives reach the C entries (`MPI_Iallreduce`,
//! …, through `MPIR_*_cdesc`), so pcoll serves them, but its f08 `MPI_Wait`, `MPI_Test`, … call
//! `PMPI_Wait`, `PMPI_Test`, … directly (`mpi_wait_f08_` in `libmpichfort`): without these
//! entries the MPI would complete pcoll's stand-in request at once, its schedule never run, and
//! a Fortran 2008 program would read its buffers before the collective is done. Each entry is
//! what MPICH's own f08 wrapper does: the request is the C handle (an `INTEGER` component),
//! the status the C struct (`TYPE(MPI_Status)` is `BIND(C)` and laid out alike), the ignore
//! markers the addresses of `MPIR_F08_MPI_STATUS(ES)_IGNORE_OBJ`, indices counted from 1,
//! `LOGICAL` as 0 / 1 (gfortran), `ierror` optional (null when absent). (Open MPI's f08
//! wrappers are served in `fortran_nbc`.)
// The safety contract of each export is the MPI standard's for that call in Fortran 2008.
#![allow(non_snake_case, clippy::missing_safety_doc)]

use super::complete as c;
use super::fortran_set_ierr as set_ierr;
use crate::consts;
use mpi_sys::*;
use std::os::raw::c_int;

// MPICH's request handle is a C int, as the f08 `MPI_VAL` component.
const _: () = assert!(std::mem::size_of::<MPI_Request>() == std::mem::size_of::<c_int>());

extern "C" {
    static MPIR_F08_MPI_STATUS_IGNORE_OBJ: u8;
    static MPIR_F08_MPI_STATUSES_IGNORE_OBJ: u8;
}

fn status(s: *mut MPI_Status) -> *mut MPI_Status {
    // Only the address of the extern static is taken, never its value.
    if s as *const u8 == std::ptr::addr_of!(MPIR_F08_MPI_STATUS_IGNORE_OBJ) {
        // SAFETY: the MPI's marker constant.
        unsafe { RSMPI_STATUS_IGNORE }
    } else {
        s
    }
}

fn statuses(s: *mut MPI_Status) -> *mut MPI_Status {
    // Only the address of the extern static is taken, never its value.
    if s as *const u8 == std::ptr::addr_of!(MPIR_F08_MPI_STATUSES_IGNORE_OBJ) {
        // SAFETY: the MPI's marker constant.
        unsafe { RSMPI_STATUSES_IGNORE }
    } else {
        s
    }
}

/// `LOGICAL` out of a C flag, after a successful call.
///
/// # Safety
/// `f` is writable.
unsafe fn logical(rc: c_int, fl: c_int, f: *mut c_int) {
    if rc == consts::SUCCESS() {
        // SAFETY: the caller's guarantee.
        unsafe { *f = (fl != 0) as c_int };
    }
}

/// A C index (or `MPI_UNDEFINED`) as Fortran counts it.
fn from1(i: c_int) -> c_int {
    if i == consts::UNDEFINED() || i < 0 {
        i
    } else {
        i + 1
    }
}

type R = *mut MPI_Request;
type S = *mut MPI_Status;
type I = *mut c_int;

/// Export `$body` (the return code) as an f08 entry with an optional `ierror`.
macro_rules! f08 {
    ($name:ident ($($arg:ident : $ty:ty),*) $body:block) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $ty,)* ierror: I) {
            let rc = super::guard(stringify!($name), || $body);
            // SAFETY: Fortran's optional ierror (null when absent).
            unsafe { set_ierr(ierror, rc) };
        }
    };
}

f08!(mpi_wait_f08_(request: R, st: S) {
    // SAFETY: the C entry with the caller's handle and status.
    unsafe { c::MPI_Wait(request, status(st)) }
});
f08!(mpi_test_f08_(request: R, flag: I, st: S) {
    let mut fl = 0;
    // SAFETY: the C entry with the caller's handle, flag and status.
    unsafe {
        let rc = c::MPI_Test(request, &mut fl, status(st));
        logical(rc, fl, flag);
        rc
    }
});
f08!(mpi_waitall_f08_(count: I, reqs: R, sts: S) {
    // SAFETY: the C entry with the caller's arrays.
    unsafe { c::MPI_Waitall(*count, reqs, statuses(sts)) }
});
f08!(mpi_testall_f08_(count: I, reqs: R, flag: I, sts: S) {
    let mut fl = 0;
    // SAFETY: the C entry with the caller's arrays and flag.
    unsafe {
        let rc = c::MPI_Testall(*count, reqs, &mut fl, statuses(sts));
        logical(rc, fl, flag);
        rc
    }
});
f08!(mpi_waitany_f08_(count: I, reqs: R, index: I, st: S) {
    let mut i = 0;
    // SAFETY: the C entry with the caller's array, index and status.
    unsafe {
        let rc = c::MPI_Waitany(*count, reqs, &mut i, status(st));
        *index = from1(i);
        rc
    }
});
f08!(mpi_testany_f08_(count: I, reqs: R, index: I, flag: I, st: S) {
    let (mut i, mut fl) = (0, 0);
    // SAFETY: the C entry with the caller's array, index, flag and status.
    unsafe {
        let rc = c::MPI_Testany(*count, reqs, &mut i, &mut fl, status(st));
        *index = from1(i);
        logical(rc, fl, flag);
        rc
    }
});
f08!(mpi_waitsome_f08_(incount: I, reqs: R, outcount: I, indices: I, sts: S) {
    // SAFETY: the C entry with the caller's arrays; indices shifted as MPICH's wrapper does.
    unsafe { some(false, *incount, reqs, outcount, indices, statuses(sts)) }
});
f08!(mpi_testsome_f08_(incount: I, reqs: R, outcount: I, indices: I, sts: S) {
    // SAFETY: as for waitsome.
    unsafe { some(true, *incount, reqs, outcount, indices, statuses(sts)) }
});
f08!(mpi_request_get_status_f08_(request: R, flag: I, st: S) {
    let mut fl = 0;
    // SAFETY: the C entry with the caller's handle, flag and status.
    unsafe {
        let rc = c::MPI_Request_get_status(*request, &mut fl, status(st));
        logical(rc, fl, flag);
        rc
    }
});
f08!(mpi_start_f08_(request: R) {
    // SAFETY: the C entry with the caller's handle.
    unsafe { c::MPI_Start(request) }
});
f08!(mpi_startall_f08_(count: I, reqs: R) {
    // SAFETY: the C entry with the caller's array.
    unsafe { c::MPI_Startall(*count, reqs) }
});
f08!(mpi_request_free_f08_(request: R) {
    // SAFETY: the C entry with the caller's handle.
    unsafe { c::MPI_Request_free(request) }
});
f08!(mpi_cancel_f08_(request: R) {
    // SAFETY: the C entry with the caller's handle.
    unsafe { c::MPI_Cancel(request) }
});
// Its f08 type and op frees call `PMPI_Type_free` / `PMPI_Op_free` alike: a type or op a
// pending call pcoll serves holds would be freed under it (`crate::held`). The handles are
// C ints, as the f08 `MPI_VAL` components.
const _: () = assert!(std::mem::size_of::<MPI_Datatype>() == std::mem::size_of::<c_int>());
const _: () = assert!(std::mem::size_of::<MPI_Op>() == std::mem::size_of::<c_int>());
f08!(mpi_type_free_f08_(datatype: *mut MPI_Datatype) {
    // SAFETY: the caller's handle.
    unsafe { crate::held::type_free(datatype) }
});
f08!(mpi_op_free_f08_(op: *mut MPI_Op) {
    // SAFETY: the caller's handle.
    unsafe { crate::held::op_free(op) }
});

/// Waitsome / Testsome with indices from 1.
///
/// # Safety
/// The caller's arrays of `n` requests and indices, and `outcount`.
unsafe fn some(test: bool, n: c_int, reqs: R, outcount: I, indices: I, sts: S) -> c_int {
    // SAFETY: the caller's guarantee.
    unsafe {
        let rc = if test {
            c::MPI_Testsome(n, reqs, outcount, indices, sts)
        } else {
            c::MPI_Waitsome(n, reqs, outcount, indices, sts)
        };
        if *outcount != consts::UNDEFINED() {
            for k in 0..(*outcount).max(0) as usize {
                *indices.add(k) += 1;
            }
        }
        rc
    }
}
