//! C entry points of the non-blocking collectives (`MPI_Ireduce`, `MPI_Iallreduce`,
//! `MPI_Ireduce_scatter`, `MPI_Ireduce_scatter_block`, `MPI_Iallgatherv`, `MPI_Iallgather`,
//! `MPI_Ibcast`), their large-count `_c` forms and the MPI-4 persistent `_init` forms (and
//! their `_init_c` forms) where the MPI has them. Each builds the call's `Args` as the
//! blocking entry does and hands it to [`crate::nbc::initiate`] with the same call to the MPI
//! for native.
// The safety contract of each export is the MPI standard's for that call.
#![allow(non_snake_case, clippy::too_many_arguments, clippy::missing_safety_doc)]

use super::c::{comm_size, read_array, reduce_args};
use super::family::{allgather_args, bcast_args, reduce_scatter_block_args};
use super::guard;
use crate::dispatch::Args;
use crate::gate;
use crate::nbc::{self, Kind};
use mpi_sys::*;
use pcoll::Collective;
use std::os::raw::{c_int, c_void};

/// One entry: `$name(args..., request)` builds `$build` and serves it as `$kind`, else calls
/// `$pmpi` with the same arguments.
macro_rules! nb_entry {
    ($name:ident => $pmpi:ident, $kind:ident, ($($arg:ident : $ty:ty),*), $build:expr) => {
        nb_entry!($name => $pmpi, $kind, ($($arg : $ty),*), $build, false);
    };
    // `$gate`: the native gate sends the call to native at once (evaluated while none of
    // pcoll's schedules runs).
    ($name:ident => $pmpi:ident, $kind:ident, ($($arg:ident : $ty:ty),*), $build:expr, $gate:expr) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $ty,)* request: *mut MPI_Request) -> c_int {
            guard(stringify!($name), || {
                // SAFETY: the caller's arguments, forwarded unchanged.
                let mut native = || unsafe { $pmpi($($arg,)* request) };
                if request.is_null() || (!nbc::running() && $gate) {
                    return native();
                }
                let a: Args = $build;
                // SAFETY: checked non-null: the caller's request out-pointer.
                nbc::initiate(a, Kind::$kind, unsafe { &mut *request }, &mut native)
            })
        }
    };
}

/// `Args` of a reduce or allreduce, large-count or not.
pub(crate) fn reduction(
    coll: Collective,
    (s, r): (*const c_void, *mut c_void),
    (n, dt, op, root): (i64, MPI_Datatype, MPI_Op, i64),
    comm: MPI_Comm,
    large: bool,
) -> Args {
    let mut a = reduce_args(coll, s, r, n, dt, op, root, comm);
    a.large_count = large;
    a
}

/// `Args` of a reduce_scatter (`counts`: comm-size entries, MPI's rule).
///
/// # Safety
/// `counts` is null or has comm-size readable entries.
pub(crate) unsafe fn vreduce<C: Copy + Into<i64>>(
    (s, r): (*const c_void, *mut c_void),
    counts: *const C,
    (dt, op): (MPI_Datatype, MPI_Op),
    comm: MPI_Comm,
    large: bool,
) -> Args {
    let mut a = reduce_args(Collective::ReduceScatter, s, r, 0, dt, op, 0, comm);
    // SAFETY: the caller's guarantee.
    a.counts = unsafe { read_array(counts, comm_size(comm)) };
    a.large_count = large;
    a
}

/// `Args` of an allgatherv (`counts`, `displs`: comm-size entries).
///
/// # Safety
/// `counts` and `displs` are null or have comm-size readable entries.
pub(crate) unsafe fn gatherv<C: Copy + Into<i64>, D: Copy + Into<i64>>(
    (s, sn, st): (*const c_void, i64, MPI_Datatype),
    r: *mut c_void,
    (counts, displs, rt): (*const C, *const D, MPI_Datatype),
    comm: MPI_Comm,
    large: bool,
) -> Args {
    let p = comm_size(comm);
    // SAFETY: the caller's guarantee.
    let (c, d) = unsafe { (read_array(counts, p), read_array(displs, p)) };
    super::c::allgatherv_args(s, sn, st, r, c, d, rt, comm, large)
}

nb_entry!(MPI_Ireduce => PMPI_Ireduce, Nonblocking,
    (s: *const c_void, r: *mut c_void, n: c_int, dt: MPI_Datatype, op: MPI_Op, root: c_int, comm: MPI_Comm),
    reduction(Collective::Reduce, (s, r), (n as i64, dt, op, root as i64), comm, false),
    crate::gate::nb_native(Collective::Reduce, (s, r), (n, dt, op, root), comm));
nb_entry!(MPI_Iallreduce => PMPI_Iallreduce, Nonblocking,
    (s: *const c_void, r: *mut c_void, n: c_int, dt: MPI_Datatype, op: MPI_Op, comm: MPI_Comm),
    reduction(Collective::Allreduce, (s, r), (n as i64, dt, op, 0), comm, false),
    crate::gate::nb_native(Collective::Allreduce, (s, r), (n, dt, op, 0), comm));
nb_entry!(MPI_Ireduce_scatter => PMPI_Ireduce_scatter, Nonblocking,
    (s: *const c_void, r: *mut c_void, counts: *const c_int, dt: MPI_Datatype, op: MPI_Op, comm: MPI_Comm),
    unsafe { vreduce((s, r), counts, (dt, op), comm, false) },
    gate::forwarded(Collective::ReduceScatter,
        unsafe { gate::pcoll_gate_nb_reduce_scatter(s, r, counts, dt, op, comm) } != 0));
nb_entry!(MPI_Ireduce_scatter_block => PMPI_Ireduce_scatter_block, Nonblocking,
    (s: *const c_void, r: *mut c_void, n: c_int, dt: MPI_Datatype, op: MPI_Op, comm: MPI_Comm),
    reduce_scatter_block_args(s, r, n as i64, dt, op, comm, false),
    gate::forwarded(Collective::ReduceScatterBlock,
        unsafe { gate::pcoll_gate_nb_reduce_scatter_block(s, r, n, dt, op, comm) } != 0));
nb_entry!(MPI_Iallgatherv => PMPI_Iallgatherv, Nonblocking,
    (s: *const c_void, sn: c_int, st: MPI_Datatype, r: *mut c_void, counts: *const c_int,
     displs: *const c_int, rt: MPI_Datatype, comm: MPI_Comm),
    unsafe { gatherv((s, sn as i64, st), r, (counts, displs, rt), comm, false) },
    gate::forwarded(Collective::Allgatherv,
        unsafe { gate::pcoll_gate_nb_allgatherv(s, sn, r, counts, rt, comm) } != 0));
nb_entry!(MPI_Iallgather => PMPI_Iallgather, Nonblocking,
    (s: *const c_void, sn: c_int, st: MPI_Datatype, r: *mut c_void, rn: c_int, rt: MPI_Datatype,
     comm: MPI_Comm),
    allgather_args(s, sn as i64, st, r, rn as i64, rt, comm, false),
    gate::forwarded(Collective::Allgather,
        unsafe { gate::pcoll_gate_nb_allgather(s, sn, r, rn, rt, comm) } != 0));
nb_entry!(MPI_Ibcast => PMPI_Ibcast, Nonblocking,
    (b: *mut c_void, n: c_int, dt: MPI_Datatype, root: c_int, comm: MPI_Comm),
    bcast_args(b, n as i64, dt, root as i64, comm, false),
    gate::forwarded(Collective::Bcast,
        unsafe { gate::pcoll_gate_nb_bcast(b, n, dt, root, comm) } != 0));

#[cfg(pcoll_large_count)]
mod large {
    use super::*;

    nb_entry!(MPI_Ireduce_c => PMPI_Ireduce_c, Nonblocking,
        (s: *const c_void, r: *mut c_void, n: MPI_Count, dt: MPI_Datatype, op: MPI_Op, root: c_int,
         comm: MPI_Comm),
        reduction(Collective::Reduce, (s, r), (n as i64, dt, op, root as i64), comm, true));
    nb_entry!(MPI_Iallreduce_c => PMPI_Iallreduce_c, Nonblocking,
        (s: *const c_void, r: *mut c_void, n: MPI_Count, dt: MPI_Datatype, op: MPI_Op, comm: MPI_Comm),
        reduction(Collective::Allreduce, (s, r), (n as i64, dt, op, 0), comm, true));
    nb_entry!(MPI_Ireduce_scatter_c => PMPI_Ireduce_scatter_c, Nonblocking,
        (s: *const c_void, r: *mut c_void, counts: *const MPI_Count, dt: MPI_Datatype, op: MPI_Op,
         comm: MPI_Comm),
        unsafe { vreduce((s, r), counts, (dt, op), comm, true) });
    nb_entry!(MPI_Ireduce_scatter_block_c => PMPI_Ireduce_scatter_block_c, Nonblocking,
        (s: *const c_void, r: *mut c_void, n: MPI_Count, dt: MPI_Datatype, op: MPI_Op, comm: MPI_Comm),
        reduce_scatter_block_args(s, r, n as i64, dt, op, comm, true));
    nb_entry!(MPI_Iallgatherv_c => PMPI_Iallgatherv_c, Nonblocking,
        (s: *const c_void, sn: MPI_Count, st: MPI_Datatype, r: *mut c_void, counts: *const MPI_Count,
         displs: *const MPI_Aint, rt: MPI_Datatype, comm: MPI_Comm),
        unsafe { gatherv((s, sn as i64, st), r, (counts, displs, rt), comm, true) });
    nb_entry!(MPI_Iallgather_c => PMPI_Iallgather_c, Nonblocking,
        (s: *const c_void, sn: MPI_Count, st: MPI_Datatype, r: *mut c_void, rn: MPI_Count,
         rt: MPI_Datatype, comm: MPI_Comm),
        allgather_args(s, sn as i64, st, r, rn as i64, rt, comm, true));
    nb_entry!(MPI_Ibcast_c => PMPI_Ibcast_c, Nonblocking,
        (b: *mut c_void, n: MPI_Count, dt: MPI_Datatype, root: c_int, comm: MPI_Comm),
        bcast_args(b, n as i64, dt, root as i64, comm, true));
}

/// MPI-4 persistent collectives (`info` is accepted and not read).
#[cfg(pcoll_persistent)]
mod persistent {
    use super::*;

    nb_entry!(MPI_Reduce_init => PMPI_Reduce_init, Persistent,
        (s: *const c_void, r: *mut c_void, n: c_int, dt: MPI_Datatype, op: MPI_Op, root: c_int,
         comm: MPI_Comm, info: MPI_Info),
        reduction(Collective::Reduce, (s, r), (n as i64, dt, op, root as i64), comm, false));
    nb_entry!(MPI_Allreduce_init => PMPI_Allreduce_init, Persistent,
        (s: *const c_void, r: *mut c_void, n: c_int, dt: MPI_Datatype, op: MPI_Op, comm: MPI_Comm,
         info: MPI_Info),
        reduction(Collective::Allreduce, (s, r), (n as i64, dt, op, 0), comm, false));
    nb_entry!(MPI_Reduce_scatter_init => PMPI_Reduce_scatter_init, Persistent,
        (s: *const c_void, r: *mut c_void, counts: *const c_int, dt: MPI_Datatype, op: MPI_Op,
         comm: MPI_Comm, info: MPI_Info),
        unsafe { vreduce((s, r), counts, (dt, op), comm, false) });
    nb_entry!(MPI_Reduce_scatter_block_init => PMPI_Reduce_scatter_block_init, Persistent,
        (s: *const c_void, r: *mut c_void, n: c_int, dt: MPI_Datatype, op: MPI_Op, comm: MPI_Comm,
         info: MPI_Info),
        reduce_scatter_block_args(s, r, n as i64, dt, op, comm, false));
    nb_entry!(MPI_Allgatherv_init => PMPI_Allgatherv_init, Persistent,
        (s: *const c_void, sn: c_int, st: MPI_Datatype, r: *mut c_void, counts: *const c_int,
         displs: *const c_int, rt: MPI_Datatype, comm: MPI_Comm, info: MPI_Info),
        unsafe { gatherv((s, sn as i64, st), r, (counts, displs, rt), comm, false) });
    nb_entry!(MPI_Allgather_init => PMPI_Allgather_init, Persistent,
        (s: *const c_void, sn: c_int, st: MPI_Datatype, r: *mut c_void, rn: c_int, rt: MPI_Datatype,
         comm: MPI_Comm, info: MPI_Info),
        allgather_args(s, sn as i64, st, r, rn as i64, rt, comm, false));
    nb_entry!(MPI_Bcast_init => PMPI_Bcast_init, Persistent,
        (b: *mut c_void, n: c_int, dt: MPI_Datatype, root: c_int, comm: MPI_Comm, info: MPI_Info),
        bcast_args(b, n as i64, dt, root as i64, comm, false));
}

/// The persistent collectives' large-count forms (`MPI_Reduce_init_c`, ...; MPICH 4.x/5.x and
/// Intel MPI 2021 declare them).
#[cfg(all(pcoll_persistent, pcoll_large_count))]
mod persistent_large {
    use super::*;

    nb_entry!(MPI_Reduce_init_c => PMPI_Reduce_init_c, Persistent,
        (s: *const c_void, r: *mut c_void, n: MPI_Count, dt: MPI_Datatype, op: MPI_Op, root: c_int,
         comm: MPI_Comm, info: MPI_Info),
        reduction(Collective::Reduce, (s, r), (n as i64, dt, op, root as i64), comm, true));
    nb_entry!(MPI_Allreduce_init_c => PMPI_Allreduce_init_c, Persistent,
        (s: *const c_void, r: *mut c_void, n: MPI_Count, dt: MPI_Datatype, op: MPI_Op,
         comm: MPI_Comm, info: MPI_Info),
        reduction(Collective::Allreduce, (s, r), (n as i64, dt, op, 0), comm, true));
    nb_entry!(MPI_Reduce_scatter_init_c => PMPI_Reduce_scatter_init_c, Persistent,
        (s: *const c_void, r: *mut c_void, counts: *const MPI_Count, dt: MPI_Datatype, op: MPI_Op,
         comm: MPI_Comm, info: MPI_Info),
        unsafe { vreduce((s, r), counts, (dt, op), comm, true) });
    nb_entry!(MPI_Reduce_scatter_block_init_c => PMPI_Reduce_scatter_block_init_c, Persistent,
        (s: *const c_void, r: *mut c_void, n: MPI_Count, dt: MPI_Datatype, op: MPI_Op,
         comm: MPI_Comm, info: MPI_Info),
        reduce_scatter_block_args(s, r, n as i64, dt, op, comm, true));
    nb_entry!(MPI_Allgatherv_init_c => PMPI_Allgatherv_init_c, Persistent,
        (s: *const c_void, sn: MPI_Count, st: MPI_Datatype, r: *mut c_void,
         counts: *const MPI_Count, displs: *const MPI_Aint, rt: MPI_Datatype, comm: MPI_Comm,
         info: MPI_Info),
        unsafe { gatherv((s, sn as i64, st), r, (counts, displs, rt), comm, true) });
    nb_entry!(MPI_Allgather_init_c => PMPI_Allgather_init_c, Persistent,
        (s: *const c_void, sn: MPI_Count, st: MPI_Datatype, r: *mut c_void, rn: MPI_Count,
         rt: MPI_Datatype, comm: MPI_Comm, info: MPI_Info),
        allgather_args(s, sn as i64, st, r, rn as i64, rt, comm, true));
    nb_entry!(MPI_Bcast_init_c => PMPI_Bcast_init_c, Persistent,
        (b: *mut c_void, n: MPI_Count, dt: MPI_Datatype, root: c_int, comm: MPI_Comm,
         info: MPI_Info),
        bcast_args(b, n as i64, dt, root as i64, comm, true));
}
