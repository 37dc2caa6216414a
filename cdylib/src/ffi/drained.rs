//! The other blocking collectives (`MPI_Barrier`, `MPI_Gather(v)`, `MPI_Scatter(v)`,
//! `MPI_Alltoall(v,w)`, `MPI_Scan`, `MPI_Exscan`, the neighbourhood collectives, their `_c`
//! forms) and the collective constructors on a communicator (`MPI_Comm_dup`,
//! `MPI_Comm_split(_type)`, `MPI_Comm_create`, the topologies' (`MPI_Cart_create`, ...),
//! `MPI_Intercomm_create` on its local communicator, the windows' (`MPI_Win_create`, ...) and
//! `MPI_File_open`):
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
use std::os::raw::{c_char, c_int, c_void};

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
drained!(MPI_Cart_create => PMPI_Cart_create, comm, (comm: MPI_Comm, ndims: c_int,
    dims: *const c_int, periods: *const c_int, reorder: c_int, newcomm: *mut MPI_Comm));
drained!(MPI_Cart_sub => PMPI_Cart_sub, comm, (comm: MPI_Comm, remain: *const c_int,
    newcomm: *mut MPI_Comm));
drained!(MPI_Graph_create => PMPI_Graph_create, comm, (comm: MPI_Comm, nnodes: c_int,
    index: *const c_int, edges: *const c_int, reorder: c_int, newcomm: *mut MPI_Comm));
drained!(MPI_Dist_graph_create => PMPI_Dist_graph_create, comm, (comm: MPI_Comm, n: c_int,
    nodes: *const c_int, degrees: *const c_int, targets: *const c_int, weights: *const c_int,
    info: MPI_Info, reorder: c_int, newcomm: *mut MPI_Comm));
drained!(MPI_Dist_graph_create_adjacent => PMPI_Dist_graph_create_adjacent, comm,
    (comm: MPI_Comm, indegree: c_int, sources: *const c_int, sw: *const c_int, outdegree: c_int,
    dests: *const c_int, dw: *const c_int, info: MPI_Info, reorder: c_int,
    newcomm: *mut MPI_Comm));
drained!(MPI_Intercomm_create => PMPI_Intercomm_create, comm, (comm: MPI_Comm, leader: c_int,
    bridge: MPI_Comm, remote_leader: c_int, tag: c_int, newcomm: *mut MPI_Comm));
drained!(MPI_Win_create => PMPI_Win_create, comm, (base: *mut c_void, size: MPI_Aint,
    unit: c_int, info: MPI_Info, comm: MPI_Comm, win: *mut MPI_Win));
drained!(MPI_Win_allocate => PMPI_Win_allocate, comm, (size: MPI_Aint, unit: c_int,
    info: MPI_Info, comm: MPI_Comm, base: *mut c_void, win: *mut MPI_Win));
drained!(MPI_Win_allocate_shared => PMPI_Win_allocate_shared, comm, (size: MPI_Aint,
    unit: c_int, info: MPI_Info, comm: MPI_Comm, base: *mut c_void, win: *mut MPI_Win));
drained!(MPI_Win_create_dynamic => PMPI_Win_create_dynamic, comm, (info: MPI_Info,
    comm: MPI_Comm, win: *mut MPI_Win));
drained!(MPI_File_open => PMPI_File_open, comm, (comm: MPI_Comm, name: *const c_char,
    amode: c_int, info: MPI_Info, fh: *mut MPI_File));
drained!(MPI_Neighbor_allgather => PMPI_Neighbor_allgather, comm, (s: *const c_void, sn: c_int,
    st: MPI_Datatype, r: *mut c_void, rn: c_int, rt: MPI_Datatype, comm: MPI_Comm));
drained!(MPI_Neighbor_allgatherv => PMPI_Neighbor_allgatherv, comm, (s: *const c_void,
    sn: c_int, st: MPI_Datatype, r: *mut c_void, rn: *const c_int, d: *const c_int,
    rt: MPI_Datatype, comm: MPI_Comm));
drained!(MPI_Neighbor_alltoall => PMPI_Neighbor_alltoall, comm, (s: *const c_void, sn: c_int,
    st: MPI_Datatype, r: *mut c_void, rn: c_int, rt: MPI_Datatype, comm: MPI_Comm));
drained!(MPI_Neighbor_alltoallv => PMPI_Neighbor_alltoallv, comm, (s: *const c_void,
    sn: *const c_int, sd: *const c_int, st: MPI_Datatype, r: *mut c_void, rn: *const c_int,
    rd: *const c_int, rt: MPI_Datatype, comm: MPI_Comm));
drained!(MPI_Neighbor_alltoallw => PMPI_Neighbor_alltoallw, comm, (s: *const c_void,
    sn: *const c_int, sd: *const MPI_Aint, st: *const MPI_Datatype, r: *mut c_void,
    rn: *const c_int, rd: *const MPI_Aint, rt: *const MPI_Datatype, comm: MPI_Comm));

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
    drained!(MPI_Win_create_c => PMPI_Win_create_c, comm, (base: *mut c_void, size: MPI_Aint,
        unit: MPI_Aint, info: MPI_Info, comm: MPI_Comm, win: *mut MPI_Win));
    drained!(MPI_Win_allocate_c => PMPI_Win_allocate_c, comm, (size: MPI_Aint, unit: MPI_Aint,
        info: MPI_Info, comm: MPI_Comm, base: *mut c_void, win: *mut MPI_Win));
    drained!(MPI_Win_allocate_shared_c => PMPI_Win_allocate_shared_c, comm, (size: MPI_Aint,
        unit: MPI_Aint, info: MPI_Info, comm: MPI_Comm, base: *mut c_void, win: *mut MPI_Win));
    drained!(MPI_Neighbor_allgather_c => PMPI_Neighbor_allgather_c, comm, (s: *const c_void,
        sn: MPI_Count, st: MPI_Datatype, r: *mut c_void, rn: MPI_Count, rt: MPI_Datatype,
        comm: MPI_Comm));
    drained!(MPI_Neighbor_allgatherv_c => PMPI_Neighbor_allgatherv_c, comm, (s: *const c_void,
        sn: MPI_Count, st: MPI_Datatype, r: *mut c_void, rn: *const MPI_Count,
        d: *const MPI_Aint, rt: MPI_Datatype, comm: MPI_Comm));
    drained!(MPI_Neighbor_alltoall_c => PMPI_Neighbor_alltoall_c, comm, (s: *const c_void,
        sn: MPI_Count, st: MPI_Datatype, r: *mut c_void, rn: MPI_Count, rt: MPI_Datatype,
        comm: MPI_Comm));
    drained!(MPI_Neighbor_alltoallv_c => PMPI_Neighbor_alltoallv_c, comm, (s: *const c_void,
        sn: *const MPI_Count, sd: *const MPI_Aint, st: MPI_Datatype, r: *mut c_void,
        rn: *const MPI_Count, rd: *const MPI_Aint, rt: MPI_Datatype, comm: MPI_Comm));
    drained!(MPI_Neighbor_alltoallw_c => PMPI_Neighbor_alltoallw_c, comm, (s: *const c_void,
        sn: *const MPI_Count, sd: *const MPI_Aint, st: *const MPI_Datatype, r: *mut c_void,
        rn: *const MPI_Count, rd: *const MPI_Aint, rt: *const MPI_Datatype, comm: MPI_Comm));
}
