//! Open MPI Fortran entry points of `MPI_BCAST`, `MPI_ALLGATHER` and
//! `MPI_REDUCE_SCATTER_BLOCK` (`mpif.h`, `use mpi`: `mpi_bcast_` and friends; `use mpi_f08`:
//! `ompi_bcast_f`), for the reason given in [`super::fortran`]: Open MPI's wrappers call the
//! `PMPI_` functions directly. Not built for MPICH, whose Fortran bindings call the C
//! functions.
#![allow(non_snake_case)]

use super::family::{allgather_entry, bcast_args, reduce_scatter_block_entry};
use super::fortran::{buf_in, buf_out, set_ierr, Fint};
use super::guard;
use crate::dispatch::collective;
use mpi_sys::*;
use std::os::raw::{c_int, c_void};

unsafe fn bcast_f(
    buffer: *mut c_void,
    count: *const Fint,
    datatype: *const Fint,
    root: *const Fint,
    comm: *const Fint,
    ierr: *mut Fint,
) {
    let rc = guard("Fortran MPI_BCAST", || {
        // SAFETY: Fortran passes every argument by reference.
        let (count, dt, root, comm) = unsafe {
            (
                *count as c_int,
                PMPI_Type_f2c(*datatype),
                *root as c_int,
                PMPI_Comm_f2c(*comm),
            )
        };
        let b = buf_out(buffer);
        let a = bcast_args(b, count as i64, dt, root as i64, comm, false);
        // SAFETY: the converted arguments of the caller.
        collective(&a, &mut || unsafe { PMPI_Bcast(b, count, dt, root, comm) })
    });
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
    let rc = guard("Fortran MPI_ALLGATHER", || {
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
        let (sc64, rc64) = (sc as i64, rcnt as i64);
        allgather_entry(s, sc64, st, r, rc64, rt, comm, false, &mut || {
            // SAFETY: the converted arguments of the caller.
            unsafe { PMPI_Allgather(s, sc, st, r, rcnt, rt, comm) }
        })
    });
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
    let rc = guard("Fortran MPI_REDUCE_SCATTER_BLOCK", || {
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
        reduce_scatter_block_entry(s, r, n as i64, dt, op, comm, false, &mut || {
            // SAFETY: the converted arguments of the caller.
            unsafe { PMPI_Reduce_scatter_block(s, r, n, dt, op, comm) }
        })
    });
    // SAFETY: Fortran's ierr.
    unsafe { set_ierr(ierr, rc) };
}

macro_rules! export_bcast {
    ($($name:ident),*) => {$(
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

export_bcast!(mpi_bcast_, mpi_bcast__, mpi_bcast, MPI_BCAST, ompi_bcast_f);
export_allgather!(
    mpi_allgather_,
    mpi_allgather__,
    mpi_allgather,
    MPI_ALLGATHER,
    ompi_allgather_f
);
export_reduce_scatter_block!(
    mpi_reduce_scatter_block_,
    mpi_reduce_scatter_block__,
    mpi_reduce_scatter_block,
    MPI_REDUCE_SCATTER_BLOCK,
    ompi_reduce_scatter_block_f
);
