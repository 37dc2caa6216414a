//! Fortran entries of the non-blocking collectives, of the completion calls and of the blocking
//! calls that advance pcoll's schedules (`MPI_RECV`, `MPI_BARRIER`, ...), for Open MPI,
//! whose `mpif.h` / `use mpi` wrappers (`mpi_ireduce_`, `mpi_wait_`, …) and `use mpi_f08`
//! wrappers (through `ompi_ireduce_f`, `ompi_wait_f`, …) call `PMPI_Ireduce`, `PMPI_Wait`, …
//! directly. Without them a Fortran program would never reach pcoll's non-blocking path, and a
//! request pcoll made for C code (a library) and completed from Fortran would be completed by
//! the MPI alone, its schedule never run. Each entry converts as Open MPI's own wrapper does
//! (`_f2c` / `_c2f`, statuses by `PMPI_Status_c2f`, `LOGICAL` as 0 / 1 as gfortran has them,
//! indices from 1) and calls the C entry (`super::nbc`, `super::complete`), which serves the
//! call or forwards it to the MPI. (MPICH's Fortran bindings call the C entries already; this
//! module is not built there.)
// The safety contract of each export is the MPI standard's for that call in Fortran.
#![allow(non_snake_case, clippy::too_many_arguments, clippy::missing_safety_doc)]

use super::complete as c;
use super::fortran::{buf_in, buf_out, set_ierr, Fint};
use super::{blocking, nbc};
use crate::consts;
use mpi_sys::*;
use std::os::raw::{c_int, c_void};

extern "C" {
    static mpi_fortran_status_ignore_: u8;
    static mpi_fortran_statuses_ignore_: u8;
}

/// Fortran `INTEGER`s in one status (`MPI_STATUS_SIZE`; Open MPI's wrappers count it so).
const STATUS_INTS: usize = std::mem::size_of::<MPI_Status>() / std::mem::size_of::<Fint>();

fn status_ignored(s: *mut Fint) -> bool {
    // Only the address of the extern static is taken, never its value.
    s as *const u8 == std::ptr::addr_of!(mpi_fortran_status_ignore_)
}

fn statuses_ignored(s: *mut Fint) -> bool {
    // Only the address of the extern static is taken, never its value.
    s as *const u8 == std::ptr::addr_of!(mpi_fortran_statuses_ignore_)
}

fn zeroed_status() -> MPI_Status {
    // SAFETY: a plain C struct of integers; all zeros is a valid value.
    unsafe { std::mem::zeroed() }
}

/// The C requests of a Fortran array of `n` (empty for a negative count: the C entry judges).
///
/// # Safety
/// `f` points to `n` readable handles when `n > 0`.
unsafe fn reqs_f2c(n: Fint, f: *const Fint) -> Vec<MPI_Request> {
    if n <= 0 || f.is_null() {
        return Vec::new();
    }
    // SAFETY: the caller's guarantee.
    let f = unsafe { std::slice::from_raw_parts(f, n as usize) };
    // SAFETY: handle conversion of the caller's handles.
    f.iter().map(|h| unsafe { PMPI_Request_f2c(*h) }).collect()
}

/// A Fortran count and the C copy of its array of requests.
///
/// # Safety
/// `count` is readable; `reqs` points to that many readable handles when it is positive.
unsafe fn c_array(count: *const Fint, reqs: *const Fint) -> (c_int, Vec<MPI_Request>) {
    // SAFETY: the caller's guarantee.
    let n = unsafe { *count };
    // SAFETY: the caller's guarantee.
    (n, unsafe { reqs_f2c(n, reqs) })
}

/// The array the C entry gets: the copy, or the caller's own pointer for a count (zero or
/// negative) the entry must judge as the MPI does.
fn c_ptr(r: &mut [MPI_Request], reqs: *mut Fint) -> *mut MPI_Request {
    if r.is_empty() {
        reqs as *mut MPI_Request
    } else {
        r.as_mut_ptr()
    }
}

/// Write the C requests back into the Fortran array.
///
/// # Safety
/// `f` points to `r.len()` writable handles.
unsafe fn reqs_c2f(r: &[MPI_Request], f: *mut Fint) {
    for (i, q) in r.iter().enumerate() {
        // SAFETY: the caller's guarantee; conversion of a valid (or null) request.
        unsafe { *f.add(i) = PMPI_Request_c2f(*q) };
    }
}

/// Statuses for `n` requests: C storage, or null for `MPI_STATUSES_IGNORE`.
fn statuses_for(n: usize, f: *mut Fint) -> (Vec<MPI_Status>, bool) {
    let ignore = statuses_ignored(f) || f.is_null();
    (vec![zeroed_status(); if ignore { 0 } else { n }], ignore)
}

/// Copy C statuses `which` into the Fortran array (`STATUS_INTS` per status).
///
/// # Safety
/// `f` has room for every index in `which`.
unsafe fn statuses_c2f(cs: &[MPI_Status], which: impl Iterator<Item = usize>, f: *mut Fint) {
    for i in which {
        // SAFETY: the caller's guarantee.
        unsafe { PMPI_Status_c2f(&cs[i], f.add(i * STATUS_INTS)) };
    }
}

fn status_ptr(v: &mut [MPI_Status], ignore: bool, single: bool) -> *mut MPI_Status {
    // SAFETY: the MPI's marker constants.
    match (ignore, single) {
        (true, true) => unsafe { RSMPI_STATUS_IGNORE },
        (true, false) => unsafe { RSMPI_STATUSES_IGNORE },
        _ => v.as_mut_ptr(),
    }
}

/// Fortran `LOGICAL` from a C flag (gfortran: .TRUE. is 1).
fn logical(flag: c_int) -> Fint {
    (flag != 0) as Fint
}

// ------------------------------------------------------------------ completion calls
// Open MPI 4.1's `use mpi_f08` wrappers of the Wait forms, Start(all), Request_free and Cancel
// call `ompi_<call>_f`; those of the Test forms and Request_get_status call the `mpif.h`
// profiling symbols (`pmpi_test_`, …), so their own f08 entries (`mpi_test_f08_`, …; the same
// arguments, `ierror` optional: null when absent) are exported here too.

/// The calls on one request.
#[derive(Clone, Copy, PartialEq)]
enum One {
    Wait,
    Test,
    GetStatus,
}

/// Wait, Test (`flag`) and Request_get_status (`flag`; the handle is not written).
unsafe fn single_f(
    k: One,
    request: *mut Fint,
    flag: *mut Fint,
    status: *mut Fint,
    ierr: *mut Fint,
) {
    // SAFETY: by-reference Fortran arguments.
    let mut r = unsafe { PMPI_Request_f2c(*request) };
    let ignore = status_ignored(status);
    let mut s = [zeroed_status()];
    let sp = status_ptr(&mut s, ignore, true);
    let mut fl: c_int = 1;
    // SAFETY: the C entries with converted arguments.
    let rc = unsafe {
        match k {
            One::Wait => c::MPI_Wait(&mut r, sp),
            One::Test => c::MPI_Test(&mut r, &mut fl, sp),
            One::GetStatus => c::MPI_Request_get_status(r, &mut fl, sp),
        }
    };
    if rc == consts::SUCCESS() {
        // SAFETY: the caller's handle, flag and status.
        unsafe {
            if k != One::GetStatus {
                *request = PMPI_Request_c2f(r);
            }
            if k != One::Wait {
                *flag = logical(fl);
            }
            if fl != 0 && !ignore {
                PMPI_Status_c2f(&s[0], status);
            }
        }
    }
    // SAFETY: Fortran's ierr.
    unsafe { set_ierr(ierr, rc) };
}

/// Waitall (`flag` null) and Testall.
unsafe fn all_f(
    count: *const Fint,
    reqs: *mut Fint,
    flag: *mut Fint,
    statuses: *mut Fint,
    ierr: *mut Fint,
) {
    // SAFETY: by-reference Fortran arguments: a count and n handles.
    let (n, mut r) = unsafe { c_array(count, reqs) };
    let (mut s, ignore) = statuses_for(r.len(), statuses);
    let sp = status_ptr(&mut s, ignore, false);
    let rp = c_ptr(&mut r, reqs);
    let mut fl: c_int = 1;
    // SAFETY: the C entries with converted arguments.
    let rc = unsafe {
        if flag.is_null() {
            c::MPI_Waitall(n, rp, sp)
        } else {
            c::MPI_Testall(n, rp, &mut fl, sp)
        }
    };
    if rc == consts::SUCCESS() || rc == consts::ERR_IN_STATUS() {
        // SAFETY: the caller's arrays of n handles and statuses, and flag.
        unsafe {
            reqs_c2f(&r, reqs);
            if !flag.is_null() {
                *flag = logical(fl);
            }
            if !ignore && fl != 0 {
                statuses_c2f(&s, 0..r.len(), statuses);
            }
        }
    }
    // SAFETY: Fortran's ierr.
    unsafe { set_ierr(ierr, rc) };
}

/// Waitany (`flag` null) and Testany; the index counts from 1.
unsafe fn any_f(
    count: *const Fint,
    reqs: *mut Fint,
    index: *mut Fint,
    flag: *mut Fint,
    status: *mut Fint,
    ierr: *mut Fint,
) {
    // SAFETY: by-reference Fortran arguments: a count and n handles.
    let (n, mut r) = unsafe { c_array(count, reqs) };
    let ignore = status_ignored(status);
    let mut s = [zeroed_status()];
    let sp = status_ptr(&mut s, ignore, true);
    let rp = c_ptr(&mut r, reqs);
    let (mut idx, mut fl): (c_int, c_int) = (0, 1);
    // SAFETY: the C entries with converted arguments.
    let rc = unsafe {
        if flag.is_null() {
            c::MPI_Waitany(n, rp, &mut idx, sp)
        } else {
            c::MPI_Testany(n, rp, &mut idx, &mut fl, sp)
        }
    };
    if rc == consts::SUCCESS() {
        // SAFETY: the caller's handles, index, flag and status.
        unsafe {
            reqs_c2f(&r, reqs);
            *index = if idx == consts::UNDEFINED() {
                idx
            } else {
                idx + 1
            };
            if !flag.is_null() {
                *flag = logical(fl);
            }
            if fl != 0 && !ignore {
                PMPI_Status_c2f(&s[0], status);
            }
        }
    }
    // SAFETY: Fortran's ierr.
    unsafe { set_ierr(ierr, rc) };
}

/// Waitsome (`test` false) and Testsome; indices count from 1.
unsafe fn some_f(
    test: bool,
    (incount, reqs): (*const Fint, *mut Fint),
    (outcount, indices, statuses): (*mut Fint, *mut Fint, *mut Fint),
    ierr: *mut Fint,
) {
    // SAFETY: by-reference Fortran arguments: a count and n handles.
    let (n, mut r) = unsafe { c_array(incount, reqs) };
    let (mut s, ignore) = statuses_for(r.len(), statuses);
    let sp = status_ptr(&mut s, ignore, false);
    let rp = c_ptr(&mut r, reqs);
    let mut idx = vec![0 as c_int; r.len()];
    let mut out: c_int = 0;
    // SAFETY: the C entries with converted arguments.
    let rc = unsafe {
        if test {
            c::MPI_Testsome(n, rp, &mut out, idx.as_mut_ptr(), sp)
        } else {
            c::MPI_Waitsome(n, rp, &mut out, idx.as_mut_ptr(), sp)
        }
    };
    if rc == consts::SUCCESS() || rc == consts::ERR_IN_STATUS() {
        // SAFETY: the caller's arrays (n entries each) and outcount.
        unsafe {
            reqs_c2f(&r, reqs);
            *outcount = out;
            if out != consts::UNDEFINED() {
                for (k, i) in idx[..out.max(0) as usize].iter().enumerate() {
                    *indices.add(k) = i + 1;
                }
                if !ignore {
                    statuses_c2f(&s, 0..out.max(0) as usize, statuses);
                }
            }
        }
    }
    // SAFETY: Fortran's ierr.
    unsafe { set_ierr(ierr, rc) };
}

/// Start, Request_free and Cancel: one request, the handle written back.
unsafe fn one_f(
    f: unsafe extern "C" fn(*mut MPI_Request) -> c_int,
    request: *mut Fint,
    ierr: *mut Fint,
) {
    // SAFETY: by-reference Fortran arguments.
    let mut r = unsafe { PMPI_Request_f2c(*request) };
    // SAFETY: the C entry with the converted request.
    let rc = unsafe { f(&mut r) };
    if rc == consts::SUCCESS() {
        // SAFETY: the caller's handle.
        unsafe { *request = PMPI_Request_c2f(r) };
    }
    // SAFETY: Fortran's ierr.
    unsafe { set_ierr(ierr, rc) };
}

/// `MPI_TYPE_FREE`, `MPI_OP_FREE`: Open MPI's Fortran bindings call `PMPI_Type_free` and
/// `PMPI_Op_free` themselves. `free` is [`crate::held`]'s, with the handle converted by
/// `f2c` and back by `c2f`.
unsafe fn free_f<H>(
    h: *mut Fint,
    ierr: *mut Fint,
    f2c: unsafe extern "C" fn(Fint) -> H,
    free: unsafe fn(*mut H) -> c_int,
    c2f: unsafe extern "C" fn(H) -> Fint,
) {
    // SAFETY: by-reference Fortran arguments; the conversions of the MPI.
    let mut c = unsafe { f2c(*h) };
    // SAFETY: the converted handle.
    let rc = unsafe { free(&mut c) };
    // SAFETY: the caller's handle; Fortran's ierr.
    unsafe {
        if rc == consts::SUCCESS() {
            *h = c2f(c);
        }
        set_ierr(ierr, rc);
    }
}

unsafe fn startall_f(count: *const Fint, reqs: *mut Fint, ierr: *mut Fint) {
    // SAFETY: by-reference Fortran arguments: a count and n handles.
    let (n, mut r) = unsafe { c_array(count, reqs) };
    let rp = c_ptr(&mut r, reqs);
    // SAFETY: the C entry with converted arguments.
    let rc = unsafe { c::MPI_Startall(n, rp) };
    // SAFETY: the caller's handles; Fortran's ierr.
    unsafe {
        if rc == consts::SUCCESS() {
            reqs_c2f(&r, reqs);
        }
        set_ierr(ierr, rc);
    }
}

/// Export `$body` under every Fortran name of one call.
macro_rules! fortran_names {
    ($args:tt => $body:expr; $($name:ident),*) => {$(
        fortran_names!(@one $name $args $body);
    )*};
    (@one $name:ident ($($arg:ident : $ty:ty),*) $body:expr) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $ty),*) {
            // SAFETY: Fortran calling convention: all by reference.
            let _ = super::guard(stringify!($name), || { unsafe { $body }; 0 });
        }
    };
}
pub(super) use fortran_names;

pub(super) type F = *mut Fint;
pub(super) type Fc = *const Fint;

fortran_names!((request: F, status: F, ierr: F) =>
    single_f(One::Wait, request, std::ptr::null_mut(), status, ierr);
    mpi_wait_, mpi_wait__, MPI_WAIT, ompi_wait_f);
fortran_names!((request: F, flag: F, status: F, ierr: F) => single_f(One::Test, request, flag, status, ierr);
    mpi_test_, mpi_test__, MPI_TEST, ompi_test_f, mpi_test_f08_);
fortran_names!((count: Fc, reqs: F, statuses: F, ierr: F) =>
    all_f(count, reqs, std::ptr::null_mut(), statuses, ierr);
    mpi_waitall_, mpi_waitall__, MPI_WAITALL, ompi_waitall_f);
fortran_names!((count: Fc, reqs: F, flag: F, statuses: F, ierr: F) =>
    all_f(count, reqs, flag, statuses, ierr);
    mpi_testall_, mpi_testall__, MPI_TESTALL, ompi_testall_f, mpi_testall_f08_);
fortran_names!((count: Fc, reqs: F, index: F, status: F, ierr: F) =>
    any_f(count, reqs, index, std::ptr::null_mut(), status, ierr);
    mpi_waitany_, mpi_waitany__, MPI_WAITANY, ompi_waitany_f);
fortran_names!((count: Fc, reqs: F, index: F, flag: F, status: F, ierr: F) =>
    any_f(count, reqs, index, flag, status, ierr);
    mpi_testany_, mpi_testany__, MPI_TESTANY, ompi_testany_f, mpi_testany_f08_);
fortran_names!((incount: Fc, reqs: F, outcount: F, indices: F, statuses: F, ierr: F) =>
    some_f(false, (incount, reqs), (outcount, indices, statuses), ierr);
    mpi_waitsome_, mpi_waitsome__, MPI_WAITSOME, ompi_waitsome_f);
fortran_names!((incount: Fc, reqs: F, outcount: F, indices: F, statuses: F, ierr: F) =>
    some_f(true, (incount, reqs), (outcount, indices, statuses), ierr);
    mpi_testsome_, mpi_testsome__, MPI_TESTSOME, ompi_testsome_f, mpi_testsome_f08_);
fortran_names!((request: Fc, flag: F, status: F, ierr: F) =>
    single_f(One::GetStatus, request as F, flag, status, ierr);
    mpi_request_get_status_, mpi_request_get_status__,
    MPI_REQUEST_GET_STATUS, ompi_request_get_status_f, mpi_request_get_status_f08_);
fortran_names!((request: F, ierr: F) => one_f(c::MPI_Start, request, ierr);
    mpi_start_, mpi_start__, MPI_START, ompi_start_f);
fortran_names!((count: Fc, reqs: F, ierr: F) => startall_f(count, reqs, ierr);
    mpi_startall_, mpi_startall__, MPI_STARTALL, ompi_startall_f);
fortran_names!((request: F, ierr: F) => one_f(c::MPI_Request_free, request, ierr);
    mpi_request_free_, mpi_request_free__, MPI_REQUEST_FREE,
    ompi_request_free_f);
fortran_names!((t: F, ierr: F) =>
    free_f(t, ierr, PMPI_Type_f2c, crate::held::type_free, PMPI_Type_c2f);
    mpi_type_free_, mpi_type_free__, MPI_TYPE_FREE, ompi_type_free_f);
fortran_names!((op: F, ierr: F) => free_f(op, ierr, PMPI_Op_f2c, crate::held::op_free, PMPI_Op_c2f);
    mpi_op_free_, mpi_op_free__, MPI_OP_FREE, ompi_op_free_f);
fortran_names!((request: F, ierr: F) => one_f(c::MPI_Cancel, request, ierr);
    mpi_cancel_, mpi_cancel__, MPI_CANCEL, ompi_cancel_f);

// ------------------------------------------------------------------ the collectives

/// The request of a C initiation, converted for Fortran, and `ierr`.
///
/// # Safety
/// `request` and `ierr` are writable Fortran arguments.
unsafe fn initiated(rc: c_int, r: MPI_Request, request: *mut Fint, ierr: *mut Fint) {
    // SAFETY: the caller's guarantee.
    unsafe {
        if rc == consts::SUCCESS() {
            *request = PMPI_Request_c2f(r);
        }
        set_ierr(ierr, rc);
    }
}

fn null_request() -> MPI_Request {
    // SAFETY: a constant of the MPI.
    unsafe { RSMPI_REQUEST_NULL }
}

/// Export an initiation: `$name(fortran args..., request, ierr)` calls `$c`, the C entry
/// with the arguments converted, on a C request.
macro_rules! fortran_nb {
    ($args:tt, $c:expr; $($name:ident),*) => {$(
        fortran_nb!(@one $name $args $c);
    )*};
    (@one $name:ident ($($arg:ident : $ty:ty),*) $c:expr) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $ty,)* request: F, ierr: F) {
            let _ = super::guard(stringify!($name), || {
                let mut r = null_request();
                // SAFETY: Fortran passes every argument by reference; converted for C.
                unsafe {
                    let rc = ($c)(&mut r);
                    initiated(rc, r, request, ierr);
                }
                0
            });
        }
    };
}

pub(super) unsafe fn dt(h: Fc) -> MPI_Datatype {
    // SAFETY: a Fortran handle by reference.
    unsafe { PMPI_Type_f2c(*h) }
}
pub(super) unsafe fn op(h: Fc) -> MPI_Op {
    // SAFETY: a Fortran handle by reference.
    unsafe { PMPI_Op_f2c(*h) }
}
pub(super) unsafe fn comm(h: Fc) -> MPI_Comm {
    // SAFETY: a Fortran handle by reference.
    unsafe { PMPI_Comm_f2c(*h) }
}

fortran_nb!(
    (s: *const c_void, r: *mut c_void, n: Fc, t: Fc, o: Fc, root: Fc, cm: Fc),
    |q: *mut MPI_Request| nbc::MPI_Ireduce(buf_in(s), buf_out(r), *n, dt(t), op(o), *root, comm(cm), q);
    mpi_ireduce_, mpi_ireduce__, MPI_IREDUCE, ompi_ireduce_f);
fortran_nb!(
    (s: *const c_void, r: *mut c_void, n: Fc, t: Fc, o: Fc, cm: Fc),
    |q: *mut MPI_Request| nbc::MPI_Iallreduce(buf_in(s), buf_out(r), *n, dt(t), op(o), comm(cm), q);
    mpi_iallreduce_, mpi_iallreduce__, MPI_IALLREDUCE, ompi_iallreduce_f);
fortran_nb!(
    (s: *const c_void, r: *mut c_void, counts: Fc, t: Fc, o: Fc, cm: Fc),
    |q: *mut MPI_Request| nbc::MPI_Ireduce_scatter(buf_in(s), buf_out(r), counts, dt(t), op(o), comm(cm), q);
    mpi_ireduce_scatter_, mpi_ireduce_scatter__, MPI_IREDUCE_SCATTER,
    ompi_ireduce_scatter_f);
fortran_nb!(
    (s: *const c_void, r: *mut c_void, n: Fc, t: Fc, o: Fc, cm: Fc),
    |q: *mut MPI_Request| nbc::MPI_Ireduce_scatter_block(buf_in(s), buf_out(r), *n, dt(t), op(o), comm(cm), q);
    mpi_ireduce_scatter_block_, mpi_ireduce_scatter_block__,
    MPI_IREDUCE_SCATTER_BLOCK, ompi_ireduce_scatter_block_f);
fortran_nb!(
    (s: *const c_void, sn: Fc, st: Fc, r: *mut c_void, counts: Fc, displs: Fc, rt: Fc, cm: Fc),
    |q: *mut MPI_Request| nbc::MPI_Iallgatherv(buf_in(s), *sn, dt(st), buf_out(r), counts, displs, dt(rt), comm(cm), q);
    mpi_iallgatherv_, mpi_iallgatherv__, MPI_IALLGATHERV, ompi_iallgatherv_f);
fortran_nb!(
    (s: *const c_void, sn: Fc, st: Fc, r: *mut c_void, rn: Fc, rt: Fc, cm: Fc),
    |q: *mut MPI_Request| nbc::MPI_Iallgather(buf_in(s), *sn, dt(st), buf_out(r), *rn, dt(rt), comm(cm), q);
    mpi_iallgather_, mpi_iallgather__, MPI_IALLGATHER, ompi_iallgather_f);
fortran_nb!(
    (b: *mut c_void, n: Fc, t: Fc, root: Fc, cm: Fc),
    |q: *mut MPI_Request| nbc::MPI_Ibcast(buf_out(b), *n, dt(t), *root, comm(cm), q);
    mpi_ibcast_, mpi_ibcast__, MPI_IBCAST, ompi_ibcast_f);

// ------------------------------------------------------------------ blocking calls
// Open MPI's Fortran `MPI_RECV`, `MPI_SEND`, ..., `MPI_BARRIER` call `PMPI_Recv`, ...
// directly: without these a Fortran rank blocked in one of them would not advance pcoll's
// schedules ([`super::blocking`]; the collectives pcoll does not serve and the communicator
// constructors: [`super::fortran_drained`]). With no schedule running the C entries go
// straight to the MPI.

/// A blocking call with one status: `call(status)` on C storage (or `MPI_STATUS_IGNORE`),
/// the status written back for Fortran, and `ierr`.
///
/// # Safety
/// `status` is Fortran's `MPI_STATUS_IGNORE` or `STATUS_INTS` writable integers; `ierr` as
/// for every entry.
unsafe fn with_status(status: F, ierr: F, call: impl FnOnce(*mut MPI_Status) -> c_int) {
    let ignore = status_ignored(status) || status.is_null();
    let mut st = [zeroed_status()];
    let rc = call(status_ptr(&mut st, ignore, true));
    // SAFETY: the caller's guarantee.
    unsafe {
        if rc == consts::SUCCESS() && !ignore {
            PMPI_Status_c2f(&st[0], status);
        }
        set_ierr(ierr, rc);
    }
}

fortran_names!((cm: Fc, ierr: F) => set_ierr(ierr, super::drained::MPI_Barrier(comm(cm)));
    mpi_barrier_, mpi_barrier__, MPI_BARRIER, ompi_barrier_f);
fortran_names!((b: *mut c_void, n: Fc, t: Fc, src: Fc, tag: Fc, cm: Fc, status: F, ierr: F) =>
    with_status(status, ierr, |s| blocking::MPI_Recv(buf_out(b), *n, dt(t), *src, *tag, comm(cm), s));
    mpi_recv_, mpi_recv__, MPI_RECV, ompi_recv_f);
fortran_names!((b: *const c_void, n: Fc, t: Fc, dst: Fc, tag: Fc, cm: Fc, ierr: F) =>
    set_ierr(ierr, blocking::MPI_Send(buf_in(b), *n, dt(t), *dst, *tag, comm(cm)));
    mpi_send_, mpi_send__, MPI_SEND, ompi_send_f);
fortran_names!((b: *const c_void, n: Fc, t: Fc, dst: Fc, tag: Fc, cm: Fc, ierr: F) =>
    set_ierr(ierr, blocking::MPI_Ssend(buf_in(b), *n, dt(t), *dst, *tag, comm(cm)));
    mpi_ssend_, mpi_ssend__, MPI_SSEND, ompi_ssend_f);
fortran_names!((b: *const c_void, n: Fc, t: Fc, dst: Fc, tag: Fc, cm: Fc, ierr: F) =>
    set_ierr(ierr, blocking::MPI_Rsend(buf_in(b), *n, dt(t), *dst, *tag, comm(cm)));
    mpi_rsend_, mpi_rsend__, MPI_RSEND, ompi_rsend_f);
fortran_names!((src: Fc, tag: Fc, cm: Fc, status: F, ierr: F) =>
    with_status(status, ierr, |s| blocking::MPI_Probe(*src, *tag, comm(cm), s));
    mpi_probe_, mpi_probe__, MPI_PROBE, ompi_probe_f);
fortran_names!((sb: *const c_void, sn: Fc, st: Fc, dst: Fc, stag: Fc,
                rb: *mut c_void, rn: Fc, rt: Fc, src: Fc, rtag: Fc, cm: Fc, status: F, ierr: F) =>
    with_status(status, ierr, |s| blocking::MPI_Sendrecv(buf_in(sb), *sn, dt(st), *dst, *stag,
        buf_out(rb), *rn, dt(rt), *src, *rtag, comm(cm), s));
    mpi_sendrecv_, mpi_sendrecv__, MPI_SENDRECV, ompi_sendrecv_f);
fortran_names!((b: *mut c_void, n: Fc, t: Fc, dst: Fc, stag: Fc, src: Fc, rtag: Fc, cm: Fc,
                status: F, ierr: F) =>
    with_status(status, ierr, |s| blocking::MPI_Sendrecv_replace(buf_out(b), *n, dt(t), *dst,
        *stag, *src, *rtag, comm(cm), s));
    mpi_sendrecv_replace_, mpi_sendrecv_replace__, MPI_SENDRECV_REPLACE,
    ompi_sendrecv_replace_f);
fortran_names!((src: Fc, tag: Fc, cm: Fc, message: F, status: F, ierr: F) =>
    with_status(status, ierr, |s| {
        let mut m = std::mem::zeroed::<MPI_Message>();
        let rc = blocking::MPI_Mprobe(*src, *tag, comm(cm), &mut m, s);
        if rc == consts::SUCCESS() {
            *message = PMPI_Message_c2f(m) as Fint;
        }
        rc
    });
    mpi_mprobe_, mpi_mprobe__, MPI_MPROBE, ompi_mprobe_f);
