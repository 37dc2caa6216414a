//! C entry points: `MPI_Reduce`, `MPI_Allreduce`, `MPI_Reduce_scatter`, `MPI_Allgatherv`,
//! `MPI_Finalize`, and the MPI-4 large-count `_c` variants where the MPI has them.
#![allow(non_snake_case)]

use super::guard;
use crate::dispatch::{collective, vector_native, Args, Counts};
use crate::{consts, state};
use mpi_sys::*;
use pcoll::Collective;
use std::os::raw::{c_int, c_void};

/// Read `n` ints from a C array (null or n <= 0: empty).
///
/// # Safety
/// `p` must point to at least `n` readable values when non-null.
pub(crate) unsafe fn read_array<T: Copy + Into<i64>>(p: *const T, n: usize) -> Counts {
    if p.is_null() {
        return Counts::EMPTY;
    }
    // SAFETY: caller guarantees n readable elements.
    unsafe { std::slice::from_raw_parts(p, n) }
        .iter()
        .copied()
        .collect()
}

/// Communicator size for reading per-rank arrays (0 if the communicator is not valid or an
/// intercommunicator: the arrays are then not read and the call goes native).
pub(crate) fn comm_size(comm: MPI_Comm) -> usize {
    match crate::comm::facts(comm) {
        Ok(Some((p, _))) => p,
        _ => 0,
    }
}

#[allow(clippy::too_many_arguments)] // a reduction call's arguments, one by one
pub(crate) fn reduce_args(
    coll: Collective,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: i64,
    dt: MPI_Datatype,
    op: MPI_Op,
    root: i64,
    comm: MPI_Comm,
) -> Args {
    Args {
        coll,
        sendbuf,
        recvbuf,
        counts: Counts::One([count]),
        displs: Counts::EMPTY,
        sendcount: 0,
        sendtype: dt,
        dt,
        op,
        root,
        comm,
        large_count: false,
    }
}

/// The `Args` of an allgatherv call (C, large-count and Fortran entries alike).
#[allow(clippy::too_many_arguments)]
pub(crate) fn allgatherv_args(
    sendbuf: *const c_void,
    sendcount: i64,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    counts: Counts,
    displs: Counts,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
    large_count: bool,
) -> Args {
    Args {
        coll: Collective::Allgatherv,
        sendbuf,
        recvbuf,
        counts,
        displs,
        sendcount,
        sendtype,
        dt: recvtype,
        op: consts::op_null(),
        root: 0,
        comm,
        large_count,
    }
}

/// The reduce_scatter entries (C and large-count): the native fast path on the caller's own
/// count array, else the counts are copied into `Args` for the full path.
///
/// # Safety
/// `recvcounts` is null or has comm-size entries (MPI's rule); `native` is the same call.
#[allow(clippy::too_many_arguments)]
unsafe fn reduce_scatter_entry<C: Copy + Into<i64>>(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcounts: *const C,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
    large_count: bool,
    native: &mut dyn FnMut() -> c_int,
) -> c_int {
    let coll = Collective::ReduceScatter;
    // SAFETY: the caller's guarantee on recvcounts.
    let fast = unsafe {
        vector_native(
            coll,
            sendbuf,
            recvbuf,
            (recvcounts, std::ptr::null::<c_int>()),
            0,
            datatype,
            op,
            comm,
            native,
        )
    };
    if let Some(rc) = fast {
        return rc;
    }
    let mut a = reduce_args(coll, sendbuf, recvbuf, 0, datatype, op, 0, comm);
    // SAFETY: as above.
    a.counts = unsafe { read_array(recvcounts, comm_size(comm)) };
    a.large_count = large_count;
    collective(&a, native)
}

/// The allgatherv entries (C and large-count), as [`reduce_scatter_entry`].
///
/// # Safety
/// `recvcounts` and `displs` are null or have comm-size entries; `native` is the same call.
#[allow(clippy::too_many_arguments)]
unsafe fn allgatherv_entry<C: Copy + Into<i64>, D: Copy + Into<i64>>(
    sendbuf: *const c_void,
    sendcount: i64,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const C,
    displs: *const D,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
    large_count: bool,
    native: &mut dyn FnMut() -> c_int,
) -> c_int {
    // SAFETY: the caller's guarantee on recvcounts.
    let fast = unsafe {
        vector_native(
            Collective::Allgatherv,
            sendbuf,
            recvbuf,
            (recvcounts, displs),
            sendcount,
            recvtype,
            consts::op_null(),
            comm,
            native,
        )
    };
    if let Some(rc) = fast {
        return rc;
    }
    let p = comm_size(comm);
    // SAFETY: as above, for both arrays.
    let (counts, ds) = unsafe { (read_array(recvcounts, p), read_array(displs, p)) };
    let a = allgatherv_args(
        sendbuf,
        sendcount,
        sendtype,
        recvbuf,
        counts,
        ds,
        recvtype,
        comm,
        large_count,
    );
    collective(&a, native)
}

/// `MPI_Reduce` when the gate declined it (shim/pcoll_entry.c calls this): pcoll's Rust path.
///
/// # Safety
///
/// The arguments are valid for `MPI_Reduce` as the MPI standard requires.
#[no_mangle]
pub unsafe extern "C" fn pcoll_rs_reduce(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    op: MPI_Op,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    guard("MPI_Reduce", || {
        let a = reduce_args(
            Collective::Reduce,
            sendbuf,
            recvbuf,
            count as i64,
            datatype,
            op,
            root as i64,
            comm,
        );
        // SAFETY: the caller's own arguments, forwarded unchanged.
        collective(&a, &mut || unsafe {
            PMPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, comm)
        })
    })
}

/// `MPI_Allreduce` when the gate declined it (shim/pcoll_entry.c calls this): pcoll's Rust path.
///
/// # Safety
///
/// The arguments are valid for `MPI_Allreduce` as the MPI standard requires.
#[no_mangle]
pub unsafe extern "C" fn pcoll_rs_allreduce(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
) -> c_int {
    guard("MPI_Allreduce", || {
        let a = reduce_args(
            Collective::Allreduce,
            sendbuf,
            recvbuf,
            count as i64,
            datatype,
            op,
            0,
            comm,
        );
        // SAFETY: forwarded unchanged.
        collective(&a, &mut || unsafe {
            PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm)
        })
    })
}

/// `MPI_Reduce_scatter` when the gate declined it (shim/pcoll_entry.c calls this): pcoll's Rust path.
///
/// # Safety
///
/// The arguments are valid for `MPI_Reduce_scatter` as the MPI standard requires.
#[no_mangle]
pub unsafe extern "C" fn pcoll_rs_reduce_scatter(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
) -> c_int {
    guard("MPI_Reduce_scatter", || {
        // SAFETY: the caller's arguments, forwarded unchanged; recvcounts has comm-size
        // entries (MPI's rule).
        unsafe {
            reduce_scatter_entry(
                sendbuf,
                recvbuf,
                recvcounts,
                datatype,
                op,
                comm,
                false,
                &mut || PMPI_Reduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op, comm),
            )
        }
    })
}

/// `MPI_Allgatherv` when the gate declined it (shim/pcoll_entry.c calls this): pcoll's Rust path.
///
/// # Safety
///
/// The arguments are valid for `MPI_Allgatherv` as the MPI standard requires.
#[no_mangle]
pub unsafe extern "C" fn pcoll_rs_allgatherv(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    displs: *const c_int,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> c_int {
    guard("MPI_Allgatherv", || {
        // SAFETY: forwarded unchanged; comm-size entries in both arrays (MPI's rule).
        unsafe {
            allgatherv_entry(
                sendbuf,
                sendcount as i64,
                sendtype,
                recvbuf,
                recvcounts,
                displs,
                recvtype,
                comm,
                false,
                &mut || {
                    PMPI_Allgatherv(
                        sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm,
                    )
                },
            )
        }
    })
}

/// The collective part of freeing pcoll's state of the communicator `*comm`
/// ([`crate::comm::before_free`]) ahead of the MPI's `MPI_Comm_free` / `MPI_Comm_disconnect`.
///
/// # Safety
///
/// `comm` is the caller's argument (null or a valid pointer to a handle).
unsafe fn free_state_first(name: &str, comm: *mut MPI_Comm) {
    if !comm.is_null() {
        // SAFETY: non-null: the caller's handle.
        let c = unsafe { *comm };
        guard(name, || {
            crate::comm::before_free(c);
            consts::SUCCESS()
        });
    }
}

/// `MPI_Comm_free`: the collective part of freeing pcoll's state of the communicator first,
/// then the MPI's.
///
/// # Safety
///
/// `comm` is the caller's argument (null or a valid pointer to a handle).
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_free(comm: *mut MPI_Comm) -> c_int {
    // SAFETY: the caller's argument, forwarded unchanged.
    unsafe {
        free_state_first("MPI_Comm_free", comm);
        PMPI_Comm_free(comm)
    }
}

/// `MPI_Comm_disconnect`: as [`MPI_Comm_free`] (it frees the communicator too, after its
/// pending communication completed).
///
/// # Safety
///
/// `comm` is the caller's argument (null or a valid pointer to a handle).
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_disconnect(comm: *mut MPI_Comm) -> c_int {
    // SAFETY: the caller's argument, forwarded unchanged.
    unsafe {
        free_state_first("MPI_Comm_disconnect", comm);
        PMPI_Comm_disconnect(comm)
    }
}

/// `MPI_Finalize`: the MPI's. pcoll's statistics report (`PCOLL_STATS=1`) is printed by its
/// attribute on `MPI_COMM_SELF`, set at `MPI_Init` and so deleted after every attribute the
/// program set there (in the reverse order of setting, MPI-3.1 8.7.1): the report counts the
/// collectives the program's own callbacks call in `MPI_Finalize`. Printed here, after the
/// MPI's finalize, if that attribute was never deleted.
///
/// # Safety
///
/// Called as the MPI standard requires `MPI_Finalize` to be: once, after the MPI's init.
#[no_mangle]
pub unsafe extern "C" fn MPI_Finalize() -> c_int {
    guard("MPI_Finalize", || {
        // SAFETY: plain forward.
        let rc = unsafe { PMPI_Finalize() };
        state::finalize_report();
        state::world_ended();
        rc
    })
}

#[cfg(pcoll_large_count)]
mod large {
    use super::*;

    #[no_mangle]
    pub unsafe extern "C" fn MPI_Reduce_c(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        count: MPI_Count,
        datatype: MPI_Datatype,
        op: MPI_Op,
        root: c_int,
        comm: MPI_Comm,
    ) -> c_int {
        guard("MPI_Reduce_c", || {
            let mut a = reduce_args(
                Collective::Reduce,
                sendbuf,
                recvbuf,
                count,
                datatype,
                op,
                root as i64,
                comm,
            );
            a.large_count = true;
            // SAFETY: forwarded unchanged.
            collective(&a, &mut || unsafe {
                PMPI_Reduce_c(sendbuf, recvbuf, count, datatype, op, root, comm)
            })
        })
    }

    #[no_mangle]
    pub unsafe extern "C" fn MPI_Allreduce_c(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        count: MPI_Count,
        datatype: MPI_Datatype,
        op: MPI_Op,
        comm: MPI_Comm,
    ) -> c_int {
        guard("MPI_Allreduce_c", || {
            let mut a = reduce_args(
                Collective::Allreduce,
                sendbuf,
                recvbuf,
                count,
                datatype,
                op,
                0,
                comm,
            );
            a.large_count = true;
            // SAFETY: forwarded unchanged.
            collective(&a, &mut || unsafe {
                PMPI_Allreduce_c(sendbuf, recvbuf, count, datatype, op, comm)
            })
        })
    }

    #[no_mangle]
    pub unsafe extern "C" fn MPI_Reduce_scatter_c(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        recvcounts: *const MPI_Count,
        datatype: MPI_Datatype,
        op: MPI_Op,
        comm: MPI_Comm,
    ) -> c_int {
        guard("MPI_Reduce_scatter_c", || {
            // SAFETY: forwarded unchanged; comm-size entries (MPI's rule).
            unsafe {
                reduce_scatter_entry(
                    sendbuf,
                    recvbuf,
                    recvcounts,
                    datatype,
                    op,
                    comm,
                    true,
                    &mut || PMPI_Reduce_scatter_c(sendbuf, recvbuf, recvcounts, datatype, op, comm),
                )
            }
        })
    }

    #[no_mangle]
    pub unsafe extern "C" fn MPI_Allgatherv_c(
        sendbuf: *const c_void,
        sendcount: MPI_Count,
        sendtype: MPI_Datatype,
        recvbuf: *mut c_void,
        recvcounts: *const MPI_Count,
        displs: *const MPI_Aint,
        recvtype: MPI_Datatype,
        comm: MPI_Comm,
    ) -> c_int {
        guard("MPI_Allgatherv_c", || {
            // SAFETY: forwarded unchanged; comm-size entries in both arrays (MPI's rule).
            unsafe {
                allgatherv_entry(
                    sendbuf,
                    sendcount,
                    sendtype,
                    recvbuf,
                    recvcounts,
                    displs,
                    recvtype,
                    comm,
                    true,
                    &mut || {
                        PMPI_Allgatherv_c(
                            sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype,
                            comm,
                        )
                    },
                )
            }
        })
    }
}
