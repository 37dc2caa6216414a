//! Fortran entry points for Open MPI, whose `mpif.h`/`use mpi` wrappers (`mpi_reduce_` and
//! friends) and `use mpi_f08` wrappers (through `ompi_reduce_f`) call `PMPI_Reduce`
//! directly, so a C-only interposer would never see them. Arguments arrive by reference as
//! Fortran handles (`MPI_Fint`), converted with the `_f2c` functions; Fortran's
//! `MPI_IN_PLACE`/`MPI_BOTTOM` are the addresses of Open MPI's common blocks.
//! (MPICH's Fortran bindings call the C `MPI_Reduce`, which the C export already serves; this
//! module is not built for MPICH, so no call is served twice.)
#![allow(non_snake_case)]

use super::c::{allgatherv_args, comm_size, reduce_args};
use super::guard;
use crate::consts;
use crate::dispatch::{collective, vector_native};
use mpi_sys::*;
use pcoll::Collective;
use std::os::raw::{c_int, c_void};

pub(super) type Fint = RSMPI_Fint;

pub(super) fn buf_in(p: *const c_void) -> *const c_void {
    if p == consts::fortran::in_place() {
        consts::in_place()
    } else if p == consts::fortran::bottom() {
        consts::bottom()
    } else {
        p
    }
}

pub(super) fn buf_out(p: *mut c_void) -> *mut c_void {
    if p as *const c_void == consts::fortran::bottom() {
        consts::bottom() as *mut c_void
    } else {
        p
    }
}

/// # Safety
/// `ierr` is null or writable.
pub(super) unsafe fn set_ierr(ierr: *mut Fint, rc: c_int) {
    if !ierr.is_null() {
        // SAFETY: checked non-null; Fortran passes a writable INTEGER.
        unsafe { *ierr = rc as Fint };
    }
}

unsafe fn reduce_f(
    coll: Collective,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: *const Fint,
    datatype: *const Fint,
    op: *const Fint,
    root: *const Fint,
    comm: *const Fint,
    ierr: *mut Fint,
) {
    let rc = guard("Fortran reduce/allreduce", || {
        // SAFETY: Fortran passes every argument by reference; `root` is null for allreduce.
        let (count, dt, op, comm, root) = unsafe {
            (
                *count as c_int,
                PMPI_Type_f2c(*datatype),
                PMPI_Op_f2c(*op),
                PMPI_Comm_f2c(*comm),
                if root.is_null() { 0 } else { *root as c_int },
            )
        };
        let (s, r) = (buf_in(sendbuf), buf_out(recvbuf));
        let a = reduce_args(coll, s, r, count as i64, dt, op, root as i64, comm);
        if coll == Collective::Reduce {
            // SAFETY: the converted arguments of the caller.
            collective(&a, &mut || unsafe {
                PMPI_Reduce(s, r, count, dt, op, root, comm)
            })
        } else {
            // SAFETY: as above.
            collective(&a, &mut || unsafe {
                PMPI_Allreduce(s, r, count, dt, op, comm)
            })
        }
    });
    // SAFETY: Fortran's ierr.
    unsafe { set_ierr(ierr, rc) };
}

unsafe fn reduce_scatter_f(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcounts: *const Fint,
    datatype: *const Fint,
    op: *const Fint,
    comm: *const Fint,
    ierr: *mut Fint,
) {
    let rc = guard("Fortran MPI_REDUCE_SCATTER", || {
        // SAFETY: by-reference Fortran arguments.
        let (dt, op, comm) = unsafe {
            (
                PMPI_Type_f2c(*datatype),
                PMPI_Op_f2c(*op),
                PMPI_Comm_f2c(*comm),
            )
        };
        let (s, r) = (buf_in(sendbuf), buf_out(recvbuf));
        // Fast native path: the INTEGER counts are C ints here (`Fint` = `c_int`, checked by
        // the compiler through this call), so they go to PMPI as they are.
        // SAFETY: recvcounts has comm-size INTEGERs (MPI's rule); converted arguments.
        let fast = unsafe {
            vector_native(
                Collective::ReduceScatter,
                s,
                r,
                recvcounts,
                0,
                dt,
                op,
                comm,
                &mut || PMPI_Reduce_scatter(s, r, recvcounts, dt, op, comm),
            )
        };
        if let Some(rc) = fast {
            return rc;
        }
        let p = comm_size(comm);
        // SAFETY: recvcounts has comm-size INTEGERs (MPI's rule).
        let c_counts: Vec<c_int> = if recvcounts.is_null() {
            vec![]
        } else {
            unsafe { std::slice::from_raw_parts(recvcounts, p) }
                .iter()
                .map(|&x| x as c_int)
                .collect()
        };
        let mut a = reduce_args(Collective::ReduceScatter, s, r, 0, dt, op, 0, comm);
        a.counts = c_counts
            .iter()
            .map(|&x| x as i64)
            .collect::<Vec<_>>()
            .into();
        let cp = if recvcounts.is_null() {
            std::ptr::null()
        } else {
            c_counts.as_ptr()
        };
        // SAFETY: converted arguments; `cp` lives for the call.
        collective(&a, &mut || unsafe {
            PMPI_Reduce_scatter(s, r, cp, dt, op, comm)
        })
    });
    // SAFETY: Fortran's ierr.
    unsafe { set_ierr(ierr, rc) };
}

unsafe fn allgatherv_f(
    sendbuf: *const c_void,
    sendcount: *const Fint,
    sendtype: *const Fint,
    recvbuf: *mut c_void,
    recvcounts: *const Fint,
    displs: *const Fint,
    recvtype: *const Fint,
    comm: *const Fint,
    ierr: *mut Fint,
) {
    let rc = guard("Fortran MPI_ALLGATHERV", || {
        // SAFETY: by-reference Fortran arguments.
        let (sc, st, rt, comm) = unsafe {
            (
                *sendcount as c_int,
                PMPI_Type_f2c(*sendtype),
                PMPI_Type_f2c(*recvtype),
                PMPI_Comm_f2c(*comm),
            )
        };
        let (s, r) = (buf_in(sendbuf), buf_out(recvbuf));
        // Fast native path (see reduce_scatter_f).
        // SAFETY: recvcounts has comm-size INTEGERs (MPI's rule); converted arguments.
        let fast = unsafe {
            vector_native(
                Collective::Allgatherv,
                s,
                r,
                recvcounts,
                sc as i64,
                rt,
                consts::op_null(),
                comm,
                &mut || PMPI_Allgatherv(s, sc, st, r, recvcounts, displs, rt, comm),
            )
        };
        if let Some(rc) = fast {
            return rc;
        }
        let p = comm_size(comm);
        let read = |ptr: *const Fint| -> Vec<c_int> {
            if ptr.is_null() {
                vec![]
            } else {
                // SAFETY: comm-size INTEGERs (MPI's rule).
                unsafe { std::slice::from_raw_parts(ptr, p) }
                    .iter()
                    .map(|&x| x as c_int)
                    .collect()
            }
        };
        let (cc, cd) = (read(recvcounts), read(displs));
        let a = allgatherv_args(
            s,
            sc as i64,
            st,
            r,
            cc.iter().copied().collect(),
            cd.iter().copied().collect(),
            rt,
            comm,
            false,
        );
        let (cp, dp) = if p == 0 {
            (std::ptr::null(), std::ptr::null())
        } else {
            (cc.as_ptr(), cd.as_ptr())
        };
        // SAFETY: converted arguments; arrays live for the call.
        collective(&a, &mut || unsafe {
            PMPI_Allgatherv(s, sc, st, r, cp, dp, rt, comm)
        })
    });
    // SAFETY: Fortran's ierr.
    unsafe { set_ierr(ierr, rc) };
}

macro_rules! export_reduce {
    ($coll:expr, $($name:ident),*) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            sendbuf: *const c_void, recvbuf: *mut c_void, count: *const Fint, datatype: *const Fint,
            op: *const Fint, root: *const Fint, comm: *const Fint, ierr: *mut Fint,
        ) {
            // SAFETY: Fortran calling convention: all by reference.
            unsafe { reduce_f($coll, sendbuf, recvbuf, count, datatype, op, root, comm, ierr) }
        }
    )*};
}

macro_rules! export_allreduce {
    ($($name:ident),*) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            sendbuf: *const c_void, recvbuf: *mut c_void, count: *const Fint, datatype: *const Fint,
            op: *const Fint, comm: *const Fint, ierr: *mut Fint,
        ) {
            // SAFETY: Fortran calling convention: all by reference.
            unsafe { reduce_f(Collective::Allreduce, sendbuf, recvbuf, count, datatype, op, std::ptr::null(), comm, ierr) }
        }
    )*};
}

macro_rules! export_reduce_scatter {
    ($($name:ident),*) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            sendbuf: *const c_void, recvbuf: *mut c_void, recvcounts: *const Fint, datatype: *const Fint,
            op: *const Fint, comm: *const Fint, ierr: *mut Fint,
        ) {
            // SAFETY: Fortran calling convention: all by reference.
            unsafe { reduce_scatter_f(sendbuf, recvbuf, recvcounts, datatype, op, comm, ierr) }
        }
    )*};
}

macro_rules! export_allgatherv {
    ($($name:ident),*) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            sendbuf: *const c_void, sendcount: *const Fint, sendtype: *const Fint, recvbuf: *mut c_void,
            recvcounts: *const Fint, displs: *const Fint, recvtype: *const Fint, comm: *const Fint, ierr: *mut Fint,
        ) {
            // SAFETY: Fortran calling convention: all by reference.
            unsafe { allgatherv_f(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm, ierr) }
        }
    )*};
}

export_reduce!(
    Collective::Reduce,
    mpi_reduce_,
    mpi_reduce__,
    mpi_reduce,
    MPI_REDUCE,
    ompi_reduce_f
);
export_allreduce!(
    mpi_allreduce_,
    mpi_allreduce__,
    mpi_allreduce,
    MPI_ALLREDUCE,
    ompi_allreduce_f
);
export_reduce_scatter!(
    mpi_reduce_scatter_,
    mpi_reduce_scatter__,
    mpi_reduce_scatter,
    MPI_REDUCE_SCATTER,
    ompi_reduce_scatter_f
);
export_allgatherv!(
    mpi_allgatherv_,
    mpi_allgatherv__,
    mpi_allgatherv,
    MPI_ALLGATHERV,
    ompi_allgatherv_f
);
