//! The completion calls (`MPI_Wait`, `MPI_Test`, their `all`, `any` and `some` forms,
//! `MPI_Request_get_status`) and `MPI_Start`, `MPI_Startall`, `MPI_Request_free`,
//! `MPI_Cancel`: straight to the MPI while pcoll has no request of its own (one atomic
//! load), else through [`crate::nbc`], which progresses pcoll's schedules and maps its
//! stand-ins.
// The safety contract of each export is the MPI standard's for that call.
#![allow(non_snake_case, clippy::missing_safety_doc)]

use super::guard;
use crate::consts;
use crate::nbc::{self, nth, Done};
use mpi_sys::*;
use std::os::raw::c_int;

/// The caller's array of `n` requests (None: a count or pointer the MPI must judge).
///
/// # Safety
/// `reqs` points to `n` requests when non-null and `n > 0`.
unsafe fn array<'a>(n: c_int, reqs: *mut MPI_Request) -> Option<&'a mut [MPI_Request]> {
    if n < 0 || (n > 0 && reqs.is_null()) {
        return None;
    }
    if n == 0 {
        return Some(&mut []);
    }
    // SAFETY: the caller's guarantee.
    Some(unsafe { std::slice::from_raw_parts_mut(reqs, n as usize) })
}

/// The caller's array when pcoll has requests of its own and the out-pointers are usable
/// (`args_ok`); `None`: forward the call unchanged.
///
/// # Safety
/// As [`array()`].
unsafe fn ours<'a>(
    n: c_int,
    reqs: *mut MPI_Request,
    args_ok: bool,
) -> Option<&'a mut [MPI_Request]> {
    if nbc::none() || !args_ok {
        return None;
    }
    // SAFETY: the caller's guarantee.
    unsafe { array(n, reqs) }
}

/// `Some(list)` of every index of `c` with its status (Waitall, Testall).
fn every(c: &[MPI_Request], statuses: *mut MPI_Status) -> Done {
    Some((0..c.len()).map(|i| (i, nth(statuses, i))).collect())
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Wait(req: *mut MPI_Request, status: *mut MPI_Status) -> c_int {
    if nbc::none() || req.is_null() {
        // SAFETY: forwarded unchanged.
        return unsafe { PMPI_Wait(req, status) };
    }
    guard("MPI_Wait", || {
        // SAFETY: non-null: the caller's request.
        let reqs = unsafe { std::slice::from_raw_parts_mut(req, 1) };
        nbc::drive(reqs, true, true, &mut |c, block| {
            let mut flag = 1;
            // SAFETY: a copy of the caller's request; the caller's status.
            let rc = unsafe {
                if block {
                    PMPI_Wait(&mut c[0], status)
                } else {
                    PMPI_Test(&mut c[0], &mut flag, status)
                }
            };
            (rc, (flag != 0).then(|| vec![(0, status)]))
        })
        .0
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Test(
    req: *mut MPI_Request,
    flag: *mut c_int,
    status: *mut MPI_Status,
) -> c_int {
    if nbc::none() || req.is_null() || flag.is_null() {
        // SAFETY: forwarded unchanged.
        return unsafe { PMPI_Test(req, flag, status) };
    }
    guard("MPI_Test", || {
        // SAFETY: non-null: the caller's request.
        let reqs = unsafe { std::slice::from_raw_parts_mut(req, 1) };
        let (rc, done) = nbc::drive(reqs, false, true, &mut |c, _| {
            let mut f = 0;
            // SAFETY: a copy of the caller's request; the caller's status.
            let rc = unsafe { PMPI_Test(&mut c[0], &mut f, status) };
            (rc, (f != 0).then(|| vec![(0, status)]))
        });
        // SAFETY: non-null out-pointer.
        unsafe { *flag = done as c_int };
        rc
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Waitall(
    n: c_int,
    reqs: *mut MPI_Request,
    statuses: *mut MPI_Status,
) -> c_int {
    // SAFETY: the caller's array of n requests.
    let arr = if nbc::none() {
        None
    } else {
        unsafe { array(n, reqs) }
    };
    let Some(arr) = arr else {
        // SAFETY: forwarded unchanged.
        return unsafe { PMPI_Waitall(n, reqs, statuses) };
    };
    guard("MPI_Waitall", || {
        nbc::drive(arr, true, true, &mut |c, block| {
            let mut flag = 1;
            let m = c.len() as c_int;
            // SAFETY: a copy of the caller's array; the caller's statuses.
            let rc = unsafe {
                if block {
                    PMPI_Waitall(m, c.as_mut_ptr(), statuses)
                } else {
                    PMPI_Testall(m, c.as_mut_ptr(), &mut flag, statuses)
                }
            };
            (rc, if flag != 0 { every(c, statuses) } else { None })
        })
        .0
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Testall(
    n: c_int,
    reqs: *mut MPI_Request,
    flag: *mut c_int,
    statuses: *mut MPI_Status,
) -> c_int {
    // SAFETY: the caller's array of n requests.
    let arr = unsafe { ours(n, reqs, !flag.is_null()) };
    let Some(arr) = arr else {
        // SAFETY: forwarded unchanged.
        return unsafe { PMPI_Testall(n, reqs, flag, statuses) };
    };
    guard("MPI_Testall", || {
        let (rc, done) = nbc::drive(arr, false, true, &mut |c, _| {
            let mut f = 0;
            // SAFETY: a copy of the caller's array; the caller's statuses.
            let rc = unsafe { PMPI_Testall(c.len() as c_int, c.as_mut_ptr(), &mut f, statuses) };
            (rc, if f != 0 { every(c, statuses) } else { None })
        });
        // SAFETY: non-null out-pointer.
        unsafe { *flag = done as c_int };
        rc
    })
}

/// Waitany / Testany on the copy: what completed.
fn any(rc: c_int, flag: c_int, idx: c_int, status: *mut MPI_Status) -> (c_int, Done) {
    if flag == 0 {
        (rc, None)
    } else if idx == consts::UNDEFINED() || idx < 0 {
        (rc, Some(vec![]))
    } else {
        (rc, Some(vec![(idx as usize, status)]))
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Waitany(
    n: c_int,
    reqs: *mut MPI_Request,
    idx: *mut c_int,
    status: *mut MPI_Status,
) -> c_int {
    // SAFETY: the caller's array of n requests.
    let arr = unsafe { ours(n, reqs, !idx.is_null()) };
    let Some(arr) = arr else {
        // SAFETY: forwarded unchanged.
        return unsafe { PMPI_Waitany(n, reqs, idx, status) };
    };
    guard("MPI_Waitany", || {
        nbc::drive(arr, true, false, &mut |c, block| {
            let (m, mut flag) = (c.len() as c_int, 1);
            // SAFETY: a copy of the caller's array; the caller's out-pointers.
            let rc = unsafe {
                if block {
                    PMPI_Waitany(m, c.as_mut_ptr(), idx, status)
                } else {
                    PMPI_Testany(m, c.as_mut_ptr(), idx, &mut flag, status)
                }
            };
            // SAFETY: non-null out-pointer, written by the MPI.
            any(rc, flag, unsafe { *idx }, status)
        })
        .0
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Testany(
    n: c_int,
    reqs: *mut MPI_Request,
    idx: *mut c_int,
    flag: *mut c_int,
    status: *mut MPI_Status,
) -> c_int {
    let bad = idx.is_null() || flag.is_null();
    // SAFETY: the caller's array of n requests.
    let arr = unsafe { ours(n, reqs, !bad) };
    let Some(arr) = arr else {
        // SAFETY: forwarded unchanged.
        return unsafe { PMPI_Testany(n, reqs, idx, flag, status) };
    };
    guard("MPI_Testany", || {
        let (rc, done) = nbc::drive(arr, false, false, &mut |c, _| {
            let mut f = 0;
            // SAFETY: a copy of the caller's array; the caller's out-pointers.
            let rc = unsafe { PMPI_Testany(c.len() as c_int, c.as_mut_ptr(), idx, &mut f, status) };
            // SAFETY: non-null out-pointer, written by the MPI.
            any(rc, f, unsafe { *idx }, status)
        });
        // SAFETY: non-null out-pointers.
        unsafe {
            *flag = done as c_int;
            if !done {
                *idx = consts::UNDEFINED();
            }
        }
        rc
    })
}

/// Waitsome / Testsome on the copy: what completed (`outcount` 0: nothing).
///
/// # Safety
/// `indices` holds `outcount` entries written by the MPI when `outcount > 0`.
unsafe fn some(
    rc: c_int,
    outcount: c_int,
    indices: *const c_int,
    st: *mut MPI_Status,
) -> (c_int, Done) {
    if outcount == consts::UNDEFINED() {
        return (rc, Some(vec![]));
    }
    if outcount <= 0 {
        return (rc, None);
    }
    // SAFETY: the caller's guarantee.
    let ix = unsafe { std::slice::from_raw_parts(indices, outcount as usize) };
    let list = ix
        .iter()
        .enumerate()
        .map(|(k, &i)| (i as usize, nth(st, k)))
        .collect();
    (rc, Some(list))
}

/// Waitsome (`block`) and Testsome through the engine.
///
/// # Safety
/// The caller's arguments of either call, checked as far as the fast path needs.
unsafe fn some_of(
    block: bool,
    arr: &mut [MPI_Request],
    outcount: *mut c_int,
    indices: *mut c_int,
    statuses: *mut MPI_Status,
) -> c_int {
    let (rc, done) = nbc::drive(arr, block, false, &mut |c, block| {
        let m = c.len() as c_int;
        // SAFETY: a copy of the caller's array; the caller's out-arrays of n entries.
        unsafe {
            let rc = if block {
                PMPI_Waitsome(m, c.as_mut_ptr(), outcount, indices, statuses)
            } else {
                PMPI_Testsome(m, c.as_mut_ptr(), outcount, indices, statuses)
            };
            some(rc, *outcount, indices, statuses)
        }
    });
    if !done {
        // SAFETY: non-null out-pointer.
        unsafe { *outcount = 0 };
    }
    rc
}

/// The array of a Waitsome / Testsome call pcoll must look at (None: straight to the MPI).
///
/// # Safety
/// `reqs` holds `n` requests when non-null.
unsafe fn some_array<'a>(
    n: c_int,
    reqs: *mut MPI_Request,
    outcount: *mut c_int,
    indices: *mut c_int,
) -> Option<&'a mut [MPI_Request]> {
    let bad = outcount.is_null() || (n > 0 && indices.is_null());
    if nbc::none() || bad {
        return None;
    }
    // SAFETY: the caller's guarantee.
    unsafe { array(n, reqs) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Waitsome(
    n: c_int,
    reqs: *mut MPI_Request,
    outcount: *mut c_int,
    indices: *mut c_int,
    statuses: *mut MPI_Status,
) -> c_int {
    // SAFETY: the caller's array of n requests.
    let Some(arr) = (unsafe { some_array(n, reqs, outcount, indices) }) else {
        // SAFETY: forwarded unchanged.
        return unsafe { PMPI_Waitsome(n, reqs, outcount, indices, statuses) };
    };
    // SAFETY: the caller's arguments.
    guard("MPI_Waitsome", || unsafe {
        some_of(true, arr, outcount, indices, statuses)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Testsome(
    n: c_int,
    reqs: *mut MPI_Request,
    outcount: *mut c_int,
    indices: *mut c_int,
    statuses: *mut MPI_Status,
) -> c_int {
    // SAFETY: the caller's array of n requests.
    let Some(arr) = (unsafe { some_array(n, reqs, outcount, indices) }) else {
        // SAFETY: forwarded unchanged.
        return unsafe { PMPI_Testsome(n, reqs, outcount, indices, statuses) };
    };
    // SAFETY: the caller's arguments.
    guard("MPI_Testsome", || unsafe {
        some_of(false, arr, outcount, indices, statuses)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Request_get_status(
    req: MPI_Request,
    flag: *mut c_int,
    status: *mut MPI_Status,
) -> c_int {
    if nbc::none() || flag.is_null() {
        // SAFETY: forwarded unchanged.
        return unsafe { PMPI_Request_get_status(req, flag, status) };
    }
    // SAFETY: non-null out-pointer; the caller's request and status (or an ignore marker).
    guard("MPI_Request_get_status", || unsafe {
        nbc::get_status(req, &mut *flag, status)
    })
}

/// MPI-4.1's `MPI_Request_get_status_all`, `_any` and `_some`, where the MPI declares them:
/// each request answered as [`MPI_Request_get_status`] answers it (pcoll's from its table,
/// which a native call would see as an inactive stand-in, complete at once: MPICH's
/// `coll/nonblocking3` then freed a running `MPI_Iallreduce` and read its buffer unwritten).
#[cfg(pcoll_get_status_multi)]
mod get_status_multi {
    use super::*;
    use std::mem::MaybeUninit;

    /// One request's status (`flag`), its status written to `status`.
    ///
    /// Safety: as [`nbc::get_status`]'s (`status` writable or an ignore marker).
    unsafe fn one(r: MPI_Request, status: *mut MPI_Status) -> (c_int, bool) {
        let mut f = 0;
        // SAFETY: this function's contract.
        let rc = unsafe { nbc::get_status(r, &mut f, status) };
        (rc, f != 0)
    }

    /// A status nobody reads.
    fn scratch() -> MaybeUninit<MPI_Status> {
        MaybeUninit::zeroed()
    }

    // The array is `const` in MPICH 5's header and not in Intel MPI's: the same ABI.
    #[no_mangle]
    pub unsafe extern "C" fn MPI_Request_get_status_all(
        n: c_int,
        reqs: *mut MPI_Request,
        flag: *mut c_int,
        statuses: *mut MPI_Status,
    ) -> c_int {
        // SAFETY: the caller's array of n requests.
        let arr = unsafe { ours(n, reqs, !flag.is_null()) };
        let Some(arr) = arr else {
            // SAFETY: forwarded unchanged.
            return unsafe { PMPI_Request_get_status_all(n, reqs as _, flag, statuses) };
        };
        guard("MPI_Request_get_status_all", || {
            let mut rc = consts::SUCCESS();
            let mut all = true;
            for r in arr.iter() {
                let mut s = scratch();
                // SAFETY: a status of our own.
                let (c, f) = unsafe { one(*r, s.as_mut_ptr()) };
                if c != consts::SUCCESS() && rc == consts::SUCCESS() {
                    rc = c;
                }
                all &= f;
            }
            // Statuses only once every request is complete (complete stays complete).
            if all {
                for (i, r) in arr.iter().enumerate() {
                    // SAFETY: the caller's statuses hold n entries (or are an ignore marker).
                    unsafe { one(*r, nth(statuses, i)) };
                }
            }
            // SAFETY: non-null out-pointer.
            unsafe { *flag = all as c_int };
            rc
        })
    }

    #[no_mangle]
    pub unsafe extern "C" fn MPI_Request_get_status_any(
        n: c_int,
        reqs: *mut MPI_Request,
        index: *mut c_int,
        flag: *mut c_int,
        status: *mut MPI_Status,
    ) -> c_int {
        // SAFETY: the caller's array of n requests.
        let arr = unsafe { ours(n, reqs, !(flag.is_null() || index.is_null())) };
        let Some(arr) = arr else {
            // SAFETY: forwarded unchanged.
            return unsafe { PMPI_Request_get_status_any(n, reqs as _, index, flag, status) };
        };
        guard("MPI_Request_get_status_any", || {
            let mut active = false;
            for (i, r) in arr.iter().enumerate() {
                if *r == nbc::null() {
                    continue;
                }
                active = true;
                // SAFETY: the caller's status (or an ignore marker).
                let (rc, f) = unsafe { one(*r, status) };
                if f || rc != consts::SUCCESS() {
                    // SAFETY: non-null out-pointers.
                    unsafe {
                        *index = i as c_int;
                        *flag = f as c_int;
                    }
                    return rc;
                }
            }
            // No active request: flag set, index undefined, status empty (as Testany).
            // SAFETY: non-null out-pointers; the caller's status.
            unsafe {
                *index = consts::UNDEFINED();
                *flag = (!active) as c_int;
                if !active {
                    one(nbc::null(), status);
                }
            }
            consts::SUCCESS()
        })
    }

    #[no_mangle]
    pub unsafe extern "C" fn MPI_Request_get_status_some(
        n: c_int,
        reqs: *mut MPI_Request,
        outcount: *mut c_int,
        indices: *mut c_int,
        statuses: *mut MPI_Status,
    ) -> c_int {
        // SAFETY: the caller's array of n requests.
        let arr = unsafe {
            ours(
                n,
                reqs,
                !(outcount.is_null() || (n > 0 && indices.is_null())),
            )
        };
        let Some(arr) = arr else {
            // SAFETY: forwarded unchanged.
            return unsafe {
                PMPI_Request_get_status_some(n, reqs as _, outcount, indices, statuses)
            };
        };
        guard("MPI_Request_get_status_some", || {
            let (mut rc, mut k, mut active) = (consts::SUCCESS(), 0usize, false);
            for (i, r) in arr.iter().enumerate() {
                if *r == nbc::null() {
                    continue;
                }
                active = true;
                // SAFETY: the caller's statuses hold n entries (or are an ignore marker).
                let (c, f) = unsafe { one(*r, nth(statuses, k)) };
                if c != consts::SUCCESS() && rc == consts::SUCCESS() {
                    rc = c;
                }
                if f {
                    // SAFETY: the caller's indices hold n entries.
                    unsafe { *indices.add(k) = i as c_int };
                    k += 1;
                }
            }
            // SAFETY: non-null out-pointer.
            unsafe {
                *outcount = if active {
                    k as c_int
                } else {
                    consts::UNDEFINED()
                }
            };
            rc
        })
    }
}

/// `PMPI_Start` with the MPI's own non-blocking collectives inside it kept native
/// ([`nbc::in_native`]).
///
/// # Safety
/// The caller's request.
unsafe fn native_start(req: *mut MPI_Request) -> c_int {
    // SAFETY: forwarded unchanged.
    nbc::in_native(|| unsafe { PMPI_Start(req) })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Start(req: *mut MPI_Request) -> c_int {
    if nbc::none() || req.is_null() {
        // SAFETY: the caller's request.
        return unsafe { native_start(req) };
    }
    guard("MPI_Start", || {
        // SAFETY: non-null: the caller's request.
        match nbc::start(unsafe { *req }) {
            Some(rc) => rc,
            // SAFETY: the caller's request.
            None => unsafe { native_start(req) },
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Startall(n: c_int, reqs: *mut MPI_Request) -> c_int {
    // SAFETY: the caller's array of n requests.
    let arr = if nbc::none() {
        None
    } else {
        unsafe { array(n, reqs) }
    };
    let Some(arr) = arr else {
        // SAFETY: forwarded unchanged (see `native_start`).
        return nbc::in_native(|| unsafe { PMPI_Startall(n, reqs) });
    };
    guard("MPI_Startall", || {
        // pcoll's requests start here; the others together in the MPI (in their order).
        let mut rc = consts::SUCCESS();
        let mut theirs: Vec<MPI_Request> = Vec::new();
        for r in arr.iter() {
            match nbc::start(*r) {
                Some(c) if rc == consts::SUCCESS() => rc = c,
                Some(_) => {}
                None => theirs.push(*r),
            }
        }
        if !theirs.is_empty() {
            // SAFETY: the caller's persistent requests (handles do not change on start).
            let c = nbc::in_native(|| unsafe {
                PMPI_Startall(theirs.len() as c_int, theirs.as_mut_ptr())
            });
            if rc == consts::SUCCESS() {
                rc = c;
            }
        }
        rc
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Request_free(req: *mut MPI_Request) -> c_int {
    if nbc::none() || req.is_null() {
        // SAFETY: forwarded unchanged.
        return unsafe { PMPI_Request_free(req) };
    }
    guard("MPI_Request_free", || {
        // SAFETY: non-null: the caller's request.
        match nbc::free(unsafe { &mut *req }) {
            Some(rc) => rc,
            // SAFETY: forwarded unchanged.
            None => unsafe { PMPI_Request_free(req) },
        }
    })
}

/// A derived type a pending call pcoll serves still uses is freed when that call is done
/// ([`crate::held`]).
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_free(t: *mut MPI_Datatype) -> c_int {
    // SAFETY: the caller's argument.
    guard("MPI_Type_free", || unsafe { crate::held::type_free(t) })
}

/// A user op, as [`MPI_Type_free`].
#[no_mangle]
pub unsafe extern "C" fn MPI_Op_free(op: *mut MPI_Op) -> c_int {
    // SAFETY: the caller's argument.
    guard("MPI_Op_free", || unsafe { crate::held::op_free(op) })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Cancel(req: *mut MPI_Request) -> c_int {
    // SAFETY: non-null: the caller's request.
    if nbc::none() || req.is_null() || !nbc::is_ours(unsafe { *req }) {
        // SAFETY: forwarded unchanged.
        return unsafe { PMPI_Cancel(req) };
    }
    guard("MPI_Cancel", || nbc::cancel(unsafe { &mut *req }))
}
