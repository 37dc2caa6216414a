//! Fortran entry points for Open MPI, whose `mpif.h`/`use mpi` wrappers (`mpi_reduce_` and
//! friends) and `use mpi_f08` wrappers (through `ompi_reduce_f`) call `PMPI_Reduce`
//! directly, so a C-only interposer would never see them. Arguments arrive by reference as
//! Fortran handles (`MPI_Fint`), converted with the `_f2c` functions; Fortran's
//! `MPI_IN_PLACE`/`MPI_BOTTOM` are the addresses of Open MPI's common blocks.
//! (MPICH's Fortran bindings call the C `MPI_Reduce`, which the C export already serves; this
//! module is not built for MPICH, so no call is served twice.)
#![allow(non_snake_case)]

use super::entry;
use crate::consts;
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
    if std::ptr::eq(p, consts::fortran::bottom()) {
        consts::bottom() as *mut c_void
    } else {
        p
    }
}

pub(super) use super::fortran_set_ierr as set_ierr;

// Each entry converts its arguments and calls the C entry of the collective
// (`shim/pcoll_entry.c`), exactly as a C program calling `MPI_<Coll>` would: the memo, the
// native gate, pcoll's Rust path. INTEGER count arrays go as they are (`Fint` is `c_int`
// here, checked by the compiler through these calls).

#[allow(clippy::too_many_arguments)]
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
    // SAFETY: the caller's arguments, converted.
    let rc = unsafe {
        if coll == Collective::Reduce {
            entry::pcoll_entry_reduce(s, r, count, dt, op, root, comm)
        } else {
            entry::pcoll_entry_allreduce(s, r, count, dt, op, comm)
        }
    };
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
    // SAFETY: by-reference Fortran arguments.
    let (dt, op, comm) = unsafe {
        (
            PMPI_Type_f2c(*datatype),
            PMPI_Op_f2c(*op),
            PMPI_Comm_f2c(*comm),
        )
    };
    let (s, r) = (buf_in(sendbuf), buf_out(recvbuf));
    // SAFETY: the caller's arguments, converted; recvcounts as MPI's rule has it.
    let rc = unsafe { entry::pcoll_entry_reduce_scatter(s, r, recvcounts, dt, op, comm) };
    // SAFETY: Fortran's ierr.
    unsafe { set_ierr(ierr, rc) };
}

#[allow(clippy::too_many_arguments)]
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
    // SAFETY: the caller's arguments, converted; the arrays as MPI's rule has them.
    let rc = unsafe { entry::pcoll_entry_allgatherv(s, sc, st, r, recvcounts, displs, rt, comm) };
    // SAFETY: Fortran's ierr.
    unsafe { set_ierr(ierr, rc) };
}

macro_rules! export_reduce {
    ($coll:expr, $($name:ident),*) => {$(
        /// # Safety
        ///
        /// As Fortran calls it: every argument by reference, each valid as the MPI standard
        /// requires for this call.
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
        /// # Safety
        ///
        /// As Fortran calls it: every argument by reference, each valid as the MPI standard
        /// requires for this call.
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
        /// # Safety
        ///
        /// As Fortran calls it: every argument by reference, each valid as the MPI standard
        /// requires for this call.
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
        /// # Safety
        ///
        /// As Fortran calls it: every argument by reference, each valid as the MPI standard
        /// requires for this call.
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
    MPI_REDUCE,
    ompi_reduce_f
);
export_allreduce!(
    mpi_allreduce_,
    mpi_allreduce__,
    MPI_ALLREDUCE,
    ompi_allreduce_f
);
export_reduce_scatter!(
    mpi_reduce_scatter_,
    mpi_reduce_scatter__,
    MPI_REDUCE_SCATTER,
    ompi_reduce_scatter_f
);
export_allgatherv!(
    mpi_allgatherv_,
    mpi_allgatherv__,
    MPI_ALLGATHERV,
    ompi_allgatherv_f
);
