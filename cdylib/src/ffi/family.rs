//! C entry points of the rest of the family (issue 15): `MPI_Bcast`, `MPI_Allgather`,
//! `MPI_Reduce_scatter_block`, and their MPI-4 large-count `_c` variants where the MPI has
//! them. Allgather and reduce_scatter_block are the regular-count forms of allgatherv and
//! reduce_scatter: their native fast path needs no count array ([`regular_native`]), and the
//! full path describes them with p equal counts (allgather: displacements `j·recvcount`).
#![allow(non_snake_case)]

use super::c::comm_size;
use super::guard;
use crate::consts;
use crate::dispatch::{collective, regular_native, Args, Counts};
use mpi_sys::*;
use pcoll::Collective;
use std::os::raw::{c_int, c_void};

/// The `Args` of a bcast: the buffer is both `sendbuf` and `recvbuf`.
pub(crate) fn bcast_args(
    buf: *mut c_void,
    count: i64,
    dt: MPI_Datatype,
    root: i64,
    comm: MPI_Comm,
    large_count: bool,
) -> Args {
    Args {
        coll: Collective::Bcast,
        sendbuf: buf as *const c_void,
        recvbuf: buf,
        counts: Counts::One([count]),
        displs: Counts::EMPTY,
        sendcount: count,
        sendtype: dt,
        dt,
        op: consts::op_null(),
        root,
        comm,
        large_count,
    }
}

/// p copies of `count` (the regular counts of allgather / reduce_scatter_block).
fn regular(count: i64, p: usize) -> Counts {
    std::iter::repeat_n(count, p).collect()
}

/// The `Args` of an allgather: p counts `recvcount`, displacements `j·recvcount`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn allgather_args(
    sendbuf: *const c_void,
    sendcount: i64,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: i64,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
    large_count: bool,
) -> Args {
    let p = comm_size(comm);
    Args {
        coll: Collective::Allgather,
        sendbuf,
        recvbuf,
        counts: regular(recvcount, p),
        displs: (0..p as i64).map(|j| j.wrapping_mul(recvcount)).collect(),
        sendcount,
        sendtype,
        dt: recvtype,
        op: consts::op_null(),
        root: 0,
        comm,
        large_count,
    }
}

/// The `Args` of a reduce_scatter_block: p counts `recvcount`.
pub(crate) fn reduce_scatter_block_args(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcount: i64,
    dt: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
    large_count: bool,
) -> Args {
    Args {
        coll: Collective::ReduceScatterBlock,
        sendbuf,
        recvbuf,
        counts: regular(recvcount, comm_size(comm)),
        displs: Counts::EMPTY,
        sendcount: 0,
        sendtype: dt,
        dt,
        op,
        root: 0,
        comm,
        large_count,
    }
}

/// Allgather (C, large-count, Fortran): the native fast path, else the full path.
#[allow(clippy::too_many_arguments)]
pub(crate) fn allgather_entry(
    sendbuf: *const c_void,
    sendcount: i64,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: i64,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
    large_count: bool,
    native: &mut dyn FnMut() -> c_int,
) -> c_int {
    let coll = Collective::Allgather;
    if comm == consts::comm_null() {
        // Open MPI 4.1.4's own MPI_Allgather crashes on MPI_COMM_NULL: report the class the
        // standard names, through MPI_COMM_WORLD's error handler (no communicator to use).
        log::error!("allgather: invalid argument: MPI_COMM_NULL");
        // SAFETY: MPI_COMM_WORLD is valid while MPI is initialised.
        unsafe { PMPI_Comm_call_errhandler(consts::comm_world(), consts::ERR_COMM()) };
        return consts::ERR_COMM();
    }
    let op = consts::op_null();
    let fast = (sendbuf, recvbuf as *const c_void, recvcount, sendcount);
    if let Some(rc) = regular_native(coll, fast, recvtype, op, comm, native) {
        return rc;
    }
    let a = allgather_args(
        sendbuf,
        sendcount,
        sendtype,
        recvbuf,
        recvcount,
        recvtype,
        comm,
        large_count,
    );
    collective(&a, native)
}

/// Reduce_scatter_block (C, large-count, Fortran): the native fast path, else the full path.
#[allow(clippy::too_many_arguments)]
pub(crate) fn reduce_scatter_block_entry(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcount: i64,
    dt: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
    large_count: bool,
    native: &mut dyn FnMut() -> c_int,
) -> c_int {
    let coll = Collective::ReduceScatterBlock;
    let fast = (sendbuf, recvbuf as *const c_void, recvcount, 0);
    if let Some(rc) = regular_native(coll, fast, dt, op, comm, native) {
        return rc;
    }
    let a = reduce_scatter_block_args(sendbuf, recvbuf, recvcount, dt, op, comm, large_count);
    collective(&a, native)
}

/// `MPI_Bcast` when the gate declined it (shim/pcoll_entry.c calls this): pcoll's Rust path.
///
/// # Safety
///
/// The arguments are valid for `MPI_Bcast` as the MPI standard requires.
#[no_mangle]
pub unsafe extern "C" fn pcoll_rs_bcast(
    buffer: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    guard("MPI_Bcast", || {
        let a = bcast_args(buffer, count as i64, datatype, root as i64, comm, false);
        // SAFETY: the caller's own arguments, forwarded unchanged.
        collective(&a, &mut || unsafe {
            PMPI_Bcast(buffer, count, datatype, root, comm)
        })
    })
}

/// `MPI_Allgather` when the gate declined it (shim/pcoll_entry.c calls this): pcoll's Rust path.
///
/// # Safety
///
/// The arguments are valid for `MPI_Allgather` as the MPI standard requires.
#[no_mangle]
pub unsafe extern "C" fn pcoll_rs_allgather(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> c_int {
    guard("MPI_Allgather", || {
        let (sc, rc) = (sendcount as i64, recvcount as i64);
        allgather_entry(
            sendbuf,
            sc,
            sendtype,
            recvbuf,
            rc,
            recvtype,
            comm,
            false,
            &mut || {
                // SAFETY: forwarded unchanged.
                unsafe {
                    PMPI_Allgather(
                        sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                    )
                }
            },
        )
    })
}

/// `MPI_Reduce_scatter_block` when the gate declined it (shim/pcoll_entry.c calls this): pcoll's Rust path.
///
/// # Safety
///
/// The arguments are valid for `MPI_Reduce_scatter_block` as the MPI standard requires.
#[no_mangle]
pub unsafe extern "C" fn pcoll_rs_reduce_scatter_block(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcount: c_int,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
) -> c_int {
    guard("MPI_Reduce_scatter_block", || {
        let n = recvcount as i64;
        reduce_scatter_block_entry(sendbuf, recvbuf, n, datatype, op, comm, false, &mut || {
            // SAFETY: forwarded unchanged.
            unsafe { PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm) }
        })
    })
}

#[cfg(pcoll_large_count)]
mod large {
    use super::*;

    #[no_mangle]
    pub unsafe extern "C" fn MPI_Bcast_c(
        buffer: *mut c_void,
        count: MPI_Count,
        datatype: MPI_Datatype,
        root: c_int,
        comm: MPI_Comm,
    ) -> c_int {
        guard("MPI_Bcast_c", || {
            let a = bcast_args(buffer, count, datatype, root as i64, comm, true);
            // SAFETY: forwarded unchanged.
            collective(&a, &mut || unsafe {
                PMPI_Bcast_c(buffer, count, datatype, root, comm)
            })
        })
    }

    #[no_mangle]
    pub unsafe extern "C" fn MPI_Allgather_c(
        sendbuf: *const c_void,
        sendcount: MPI_Count,
        sendtype: MPI_Datatype,
        recvbuf: *mut c_void,
        recvcount: MPI_Count,
        recvtype: MPI_Datatype,
        comm: MPI_Comm,
    ) -> c_int {
        guard("MPI_Allgather_c", || {
            allgather_entry(
                sendbuf,
                sendcount,
                sendtype,
                recvbuf,
                recvcount,
                recvtype,
                comm,
                true,
                &mut || {
                    // SAFETY: forwarded unchanged.
                    unsafe {
                        PMPI_Allgather_c(
                            sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                        )
                    }
                },
            )
        })
    }

    #[no_mangle]
    pub unsafe extern "C" fn MPI_Reduce_scatter_block_c(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        recvcount: MPI_Count,
        datatype: MPI_Datatype,
        op: MPI_Op,
        comm: MPI_Comm,
    ) -> c_int {
        guard("MPI_Reduce_scatter_block_c", || {
            reduce_scatter_block_entry(
                sendbuf,
                recvbuf,
                recvcount,
                datatype,
                op,
                comm,
                true,
                &mut || {
                    // SAFETY: forwarded unchanged.
                    unsafe {
                        PMPI_Reduce_scatter_block_c(sendbuf, recvbuf, recvcount, datatype, op, comm)
                    }
                },
            )
        })
    }
}
