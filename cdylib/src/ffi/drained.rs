//! The other blocking collectives (`MPI_Barrier`, `MPI_Gather(v)`, `MPI_Scatter(v)`,
//! `MPI_Alltoall(v,w)`, `MPI_Scan`, `MPI_Exscan`, their `_c` forms) and the communicator
//! constructors (`MPI_Comm_dup`, `MPI_Comm_split`, `MPI_Comm_split_type`, `MPI_Comm_create`):
//! pcoll neither serves nor decides them, but a rank blocked in one must still advance its
//! non-blocking collectives on that communicator, which the other ranks may be waiting for
//! before they reach it (MPI's progress rule). So the schedules pcoll runs on the call's
//! communicator complete first, and what a non-blocking call wanted made on it is made
//! ([`nbc::before_blocking`]); then the MPI's call. With no schedule running and nothing
//! wanted: two atomic loads, then the MPI. (A barrier cannot be swapped for `MPI_Ibarrier`:
//! it would not match the blocking barrier of a rank where nothing runs.)
// The safety contract of each export is the MPI standard's for that call.
#![allow(non_snake_case, clippy::missing_safety_doc, clippy::too_many_arguments)]

use super::guard;
use crate::consts;
use crate::nbc;
use mpi_sys::*;
use std::os::raw::{c_int, c_void};

/// `$name(args)`: pcoll's schedules on `$comm` complete, then `$pmpi(args)`.
macro_rules! drained {
    ($name:ident => $pmpi:ident, $comm:ident, ($($arg:ident : $ty:ty),*)) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> c_int {
            if nbc::running() || crate::comm::any_wanted() {
                guard(stringify!($name), || {
                    nbc::before_blocking($comm);
                    consts::SUCCESS()
                });
            }
            // SAFETY: the caller's arguments, forwarded unchanged.
            unsafe { $pmpi($($arg),*) }
        }
    };
}

drained!(MPI_Barrier => PMPI_Barrier, comm, (comm: MPI_Comm));
drained!(MPI_Gather => PMPI_Gather, comm, (s: *const c_void, sn: c_int, st: MPI_Datatype,
    r: *mut c_void, rn: c_int, rt: MPI_Datatype, root: c_int, comm: MPI_Comm));
drained!(MPI_Gatherv => PMPI_Gatherv, comm, (s: *const c_void, sn: c_int, st: MPI_Datatype,
    r: *mut c_void, rn: *const c_int, d: *const c_int, rt: MPI_Datatype, root: c_int, comm: MPI_Comm));
drained!(MPI_Scatter => PMPI_Scatter, comm, (s: *const c_void, sn: c_int, st: MPI_Datatype,
    r: *mut c_void, rn: c_int, rt: MPI_Datatype, root: c_int, comm: MPI_Comm));
drained!(MPI_Scatterv => PMPI_Scatterv, comm, (s: *const c_void, sn: *const c_int, d: *const c_int,
    st: MPI_Datatype, r: *mut c_void, rn: c_int, rt: MPI_Datatype, root: c_int, comm: MPI_Comm));
drained!(MPI_Alltoall => PMPI_Alltoall, comm, (s: *const c_void, sn: c_int, st: MPI_Datatype,
    r: *mut c_void, rn: c_int, rt: MPI_Datatype, comm: MPI_Comm));
drained!(MPI_Alltoallv => PMPI_Alltoallv, comm, (s: *const c_void, sn: *const c_int,
    sd: *const c_int, st: MPI_Datatype, r: *mut c_void, rn: *const c_int, rd: *const c_int,
    rt: MPI_Datatype, comm: MPI_Comm));
drained!(MPI_Alltoallw => PMPI_Alltoallw, comm, (s: *const c_void, sn: *const c_int,
    sd: *const c_int, st: *const MPI_Datatype, r: *mut c_void, rn: *const c_int, rd: *const c_int,
    rt: *const MPI_Datatype, comm: MPI_Comm));
drained!(MPI_Scan => PMPI_Scan, comm, (s: *const c_void, r: *mut c_void, n: c_int,
    dt: MPI_Datatype, op: MPI_Op, comm: MPI_Comm));
drained!(MPI_Exscan => PMPI_Exscan, comm, (s: *const c_void, r: *mut c_void, n: c_int,
    dt: MPI_Datatype, op: MPI_Op, comm: MPI_Comm));
drained!(MPI_Comm_dup => PMPI_Comm_dup, comm, (comm: MPI_Comm, newcomm: *mut MPI_Comm));
drained!(MPI_Comm_split => PMPI_Comm_split, comm, (comm: MPI_Comm, color: c_int, key: c_int,
    newcomm: *mut MPI_Comm));
drained!(MPI_Comm_split_type => PMPI_Comm_split_type, comm, (comm: MPI_Comm, kind: c_int,
    key: c_int, info: MPI_Info, newcomm: *mut MPI_Comm));
drained!(MPI_Comm_create => PMPI_Comm_create, comm, (comm: MPI_Comm, group: MPI_Group,
    newcomm: *mut MPI_Comm));

/// The large-count forms (MPI 4).
#[cfg(pcoll_large_count)]
mod large {
    use super::*;

    drained!(MPI_Gather_c => PMPI_Gather_c, comm, (s: *const c_void, sn: MPI_Count,
        st: MPI_Datatype, r: *mut c_void, rn: MPI_Count, rt: MPI_Datatype, root: c_int,
        comm: MPI_Comm));
    drained!(MPI_Gatherv_c => PMPI_Gatherv_c, comm, (s: *const c_void, sn: MPI_Count,
        st: MPI_Datatype, r: *mut c_void, rn: *const MPI_Count, d: *const MPI_Aint,
        rt: MPI_Datatype, root: c_int, comm: MPI_Comm));
    drained!(MPI_Scatter_c => PMPI_Scatter_c, comm, (s: *const c_void, sn: MPI_Count,
        st: MPI_Datatype, r: *mut c_void, rn: MPI_Count, rt: MPI_Datatype, root: c_int,
        comm: MPI_Comm));
    drained!(MPI_Scatterv_c => PMPI_Scatterv_c, comm, (s: *const c_void, sn: *const MPI_Count,
        d: *const MPI_Aint, st: MPI_Datatype, r: *mut c_void, rn: MPI_Count, rt: MPI_Datatype,
        root: c_int, comm: MPI_Comm));
    drained!(MPI_Alltoall_c => PMPI_Alltoall_c, comm, (s: *const c_void, sn: MPI_Count,
        st: MPI_Datatype, r: *mut c_void, rn: MPI_Count, rt: MPI_Datatype, comm: MPI_Comm));
    drained!(MPI_Alltoallv_c => PMPI_Alltoallv_c, comm, (s: *const c_void, sn: *const MPI_Count,
        sd: *const MPI_Aint, st: MPI_Datatype, r: *mut c_void, rn: *const MPI_Count,
        rd: *const MPI_Aint, rt: MPI_Datatype, comm: MPI_Comm));
    drained!(MPI_Alltoallw_c => PMPI_Alltoallw_c, comm, (s: *const c_void, sn: *const MPI_Count,
        sd: *const MPI_Aint, st: *const MPI_Datatype, r: *mut c_void, rn: *const MPI_Count,
        rd: *const MPI_Aint, rt: *const MPI_Datatype, comm: MPI_Comm));
    drained!(MPI_Scan_c => PMPI_Scan_c, comm, (s: *const c_void, r: *mut c_void, n: MPI_Count,
        dt: MPI_Datatype, op: MPI_Op, comm: MPI_Comm));
    drained!(MPI_Exscan_c => PMPI_Exscan_c, comm, (s: *const c_void, r: *mut c_void,
        n: MPI_Count, dt: MPI_Datatype, op: MPI_Op, comm: MPI_Comm));
}
