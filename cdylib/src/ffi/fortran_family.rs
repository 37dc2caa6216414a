//! Open MPI Fortran entry points of `MPI_BCAST`, `MPI_ALLGATHER` and
//! `MPI_REDUCE_SCATTER_BLOCK` (`mpif.h`, `use mpi`: `mpi_bcast_` and friends; `use mpi_f08`:
//! `ompi_bcast_f`), for the reason given in [`super::fortran`]: Open MPI's wrappers call the
//! `PMPI_` functions directly. Not built for MPICH, whose Fortran bindings call the C
//! functions.
#![allow(non_snake_case)]

use super::entry;
use super::fortran::{buf_in, buf_out, set_ierr, Fint};
use mpi_sys::*;
use std::os::raw::{c_int, c_void};

// As in [`super::fortran`]: convert, then the collective's C entry.

unsafe fn bcast_f(
    buffer: *mut c_void,
    count: *const Fint,
    datatype: *const Fint,
    root: *const Fint,
    comm: *const Fint,
    ierr: *mut Fint,
) {
    // SAFETY: Fortran passes every argument by reference.
    let (count, dt, root, comm) = unsafe {
        (
            *count as c_int,
            PMPI_Type_f2c(*datatype),
            *root as c_int,
            PMPI_Comm_f2c(*comm),
        )
    };
    // SAFETY: the caller's arguments, converted.
    let rc = unsafe { entry::pcoll_entry_bcast(buf_out(buffer), count, dt, root, comm) };
    // SAFETY: Fortran's ierr.
    unsafe { set_ierr(ierr, rc) };
}

#[allow(clippy::too_many_arguments)]
unsafe fn allgather_f(
    sendbuf: *const c_void,
    sendcount: *const Fint,
    sendtype: *const Fint,
    recvbuf: *mut c_void,
    recvcount: *const Fint,
    recvtype: *const Fint,
    comm: *const Fint,
    ierr: *mut Fint,
) {
    // SAFETY: by-reference Fortran arguments.
    let (sc, st, rcnt, rt, comm) = unsafe {
        (
            *sendcount as c_int,
            PMPI_Type_f2c(*sendtype),
            *recvcount as c_int,
            PMPI_Type_f2c(*recvtype),
            PMPI_Comm_f2c(*comm),
        )
    };
    let (s, r) = (buf_in(sendbuf), buf_out(recvbuf));
    // SAFETY: the caller's arguments, converted.
    let rc = unsafe { entry::pcoll_entry_allgather(s, sc, st, r, rcnt, rt, comm) };
    // SAFETY: Fortran's ierr.
    unsafe { set_ierr(ierr, rc) };
}

unsafe fn reduce_scatter_block_f(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcount: *const Fint,
    datatype: *const Fint,
    op: *const Fint,
    comm: *const Fint,
    ierr: *mut Fint,
) {
    // SAFETY: by-reference Fortran arguments.
    let (n, dt, op, comm) = unsafe {
        (
            *recvcount as c_int,
            PMPI_Type_f2c(*datatype),
            PMPI_Op_f2c(*op),
            PMPI_Comm_f2c(*comm),
        )
    };
    let (s, r) = (buf_in(sendbuf), buf_out(recvbuf));
    // SAFETY: the caller's arguments, converted.
    let rc = unsafe { entry::pcoll_entry_reduce_scatter_block(s, r, n, dt, op, comm) };
    // SAFETY: Fortran's ierr.
    unsafe { set_ierr(ierr, rc) };
}

macro_rules! export_bcast {
    ($($name:ident),*) => {$(
        /// # Safety
        ///
        /// As Fortran calls it: every argument by reference, each valid as the MPI standard
        /// requires for this call.
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            buffer: *mut c_void, count: *const Fint, datatype: *const Fint, root: *const Fint,
            comm: *const Fint, ierr: *mut Fint,
        ) {
            // SAFETY: Fortran calling convention: all by reference.
            unsafe { bcast_f(buffer, count, datatype, root, comm, ierr) }
        }
    )*};
}

macro_rules! export_allgather {
    ($($name:ident),*) => {$(
        /// # Safety
        ///
        /// As Fortran calls it: every argument by reference, each valid as the MPI standard
        /// requires for this call.
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            sendbuf: *const c_void, sendcount: *const Fint, sendtype: *const Fint, recvbuf: *mut c_void,
            recvcount: *const Fint, recvtype: *const Fint, comm: *const Fint, ierr: *mut Fint,
        ) {
            // SAFETY: Fortran calling convention: all by reference.
            unsafe { allgather_f(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, ierr) }
        }
    )*};
}

macro_rules! export_reduce_scatter_block {
    ($($name:ident),*) => {$(
        /// # Safety
        ///
        /// As Fortran calls it: every argument by reference, each valid as the MPI standard
        /// requires for this call.
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            sendbuf: *const c_void, recvbuf: *mut c_void, recvcount: *const Fint, datatype: *const Fint,
            op: *const Fint, comm: *const Fint, ierr: *mut Fint,
        ) {
            // SAFETY: Fortran calling convention: all by reference.
            unsafe { reduce_scatter_block_f(sendbuf, recvbuf, recvcount, datatype, op, comm, ierr) }
        }
    )*};
}

export_bcast!(mpi_bcast_, mpi_bcast__, MPI_BCAST, ompi_bcast_f);
export_allgather!(
    mpi_allgather_,
    mpi_allgather__,
    MPI_ALLGATHER,
    ompi_allgather_f
);
export_reduce_scatter_block!(
    mpi_reduce_scatter_block_,
    mpi_reduce_scatter_block__,
    MPI_REDUCE_SCATTER_BLOCK,
    ompi_reduce_scatter_block_f
);
