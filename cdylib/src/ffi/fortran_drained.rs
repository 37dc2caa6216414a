//! Fortran entries of the blocking calls pcoll neither serves nor decides but must see
//! ([`super::drained`]: `MPI_GATHER(V)`, `MPI_SCATTER(V)`, `MPI_ALLTOALL(V,W)`, `MPI_SCAN`,
//! `MPI_EXSCAN`, `MPI_COMM_DUP`, `MPI_COMM_SPLIT(_TYPE)`, `MPI_COMM_CREATE`; and
//! `MPI_COMM_FREE`, `MPI_COMM_DISCONNECT`), for Open MPI,
//! whose `mpif.h` / `use mpi` wrappers and `use mpi_f08`'s `ompi_*_f` call `PMPI_Gather`, ...
//! directly: a Fortran rank blocked in one of them would not advance pcoll's non-blocking
//! schedules on the communicator, which the other ranks may be waiting for before they reach
//! it (MPI's progress rule; `verify/nbprogress_f.f90` hung here before session 46), nor make
//! what a non-blocking call wanted made. Each converts as Open MPI's own wrapper does
//! (`MPI_IN_PLACE` / `MPI_BOTTOM` by address, handles by `_f2c` / `_c2f`) and calls the C
//! entry, which drains and then calls the MPI: with nothing running or wanted, two atomic
//! loads and the MPI's call. The topology, window and file constructors,
//! `MPI_INTERCOMM_CREATE` and the neighbourhood collectives drain and then call Open MPI's own
//! Fortran entry (`forwarded!`: no conversion of pcoll's to keep in step with it).
// The safety contract of each export is the MPI standard's for that call in Fortran.
#![allow(non_snake_case, clippy::too_many_arguments, clippy::missing_safety_doc)]

use super::drained as d;
use super::fortran::{buf_in, buf_out, set_ierr, Fint};
use super::fortran_nbc::{comm, dt, fortran_names, op, Fc, F};
use crate::consts;
use crate::nbc;
use mpi_sys::*;
use once_cell::sync::OnceCell;
use std::os::raw::{c_int, c_void};

/// A receive buffer that may also be `MPI_IN_PLACE` (`MPI_SCATTER(V)`'s at the root).
fn buf_inout(p: *mut c_void) -> *mut c_void {
    buf_in(p) as *mut c_void
}

/// The C datatypes of a Fortran array of handles, one per rank of `c` (its remote group's for
/// an intercommunicator); empty where the array is absent or `c`'s size cannot be read (the
/// C entry then reports the MPI's error).
///
/// # Safety
/// `f` points to at least that many readable handles when not null.
unsafe fn types_f2c(f: Fc, c: MPI_Comm) -> Vec<MPI_Datatype> {
    let (mut inter, mut n) = (0, 0);
    // SAFETY: plain queries on the caller's communicator, results into locals.
    let ok = unsafe {
        PMPI_Comm_test_inter(c, &mut inter) == consts::SUCCESS()
            && if inter != 0 {
                PMPI_Comm_remote_size(c, &mut n)
            } else {
                PMPI_Comm_size(c, &mut n)
            } == consts::SUCCESS()
    };
    if !ok || n <= 0 || f.is_null() {
        return Vec::new();
    }
    // SAFETY: the caller's guarantee: n handles.
    let f = unsafe { std::slice::from_raw_parts(f, n as usize) };
    // SAFETY: handle conversion of the caller's handles.
    f.iter().map(|h| unsafe { PMPI_Type_f2c(*h) }).collect()
}

fn types_ptr(v: &[MPI_Datatype]) -> *const MPI_Datatype {
    if v.is_empty() {
        std::ptr::null()
    } else {
        v.as_ptr()
    }
}

/// A communicator written back for Fortran on success (a constructor's new one, or
/// `MPI_COMM_NULL` after a free), and `ierr`.
///
/// # Safety
/// `newcomm` and `ierr` are writable Fortran arguments.
unsafe fn made(rc: c_int, c: MPI_Comm, newcomm: F, ierr: F) {
    // SAFETY: the caller's guarantee.
    unsafe {
        if rc == consts::SUCCESS() {
            *newcomm = PMPI_Comm_c2f(c) as Fint;
        }
        set_ierr(ierr, rc);
    }
}

fortran_names!((s: *const c_void, sn: Fc, st: Fc, r: *mut c_void, rn: Fc, rt: Fc, root: Fc,
                cm: Fc, ierr: F) =>
    set_ierr(ierr, d::MPI_Gather(buf_in(s), *sn, dt(st), buf_out(r), *rn, dt(rt), *root, comm(cm)));
    mpi_gather_, mpi_gather__, MPI_GATHER, ompi_gather_f);
fortran_names!((s: *const c_void, sn: Fc, st: Fc, r: *mut c_void, rn: Fc, ds: Fc, rt: Fc,
                root: Fc, cm: Fc, ierr: F) =>
    set_ierr(ierr, d::MPI_Gatherv(buf_in(s), *sn, dt(st), buf_out(r), rn, ds, dt(rt), *root,
        comm(cm)));
    mpi_gatherv_, mpi_gatherv__, MPI_GATHERV, ompi_gatherv_f);
fortran_names!((s: *const c_void, sn: Fc, st: Fc, r: *mut c_void, rn: Fc, rt: Fc, root: Fc,
                cm: Fc, ierr: F) =>
    set_ierr(ierr, d::MPI_Scatter(buf_in(s), *sn, dt(st), buf_inout(r), *rn, dt(rt), *root,
        comm(cm)));
    mpi_scatter_, mpi_scatter__, MPI_SCATTER, ompi_scatter_f);
fortran_names!((s: *const c_void, sn: Fc, ds: Fc, st: Fc, r: *mut c_void, rn: Fc, rt: Fc,
                root: Fc, cm: Fc, ierr: F) =>
    set_ierr(ierr, d::MPI_Scatterv(buf_in(s), sn, ds, dt(st), buf_inout(r), *rn, dt(rt), *root,
        comm(cm)));
    mpi_scatterv_, mpi_scatterv__, MPI_SCATTERV, ompi_scatterv_f);
fortran_names!((s: *const c_void, sn: Fc, st: Fc, r: *mut c_void, rn: Fc, rt: Fc, cm: Fc,
                ierr: F) =>
    set_ierr(ierr, d::MPI_Alltoall(buf_in(s), *sn, dt(st), buf_out(r), *rn, dt(rt), comm(cm)));
    mpi_alltoall_, mpi_alltoall__, MPI_ALLTOALL, ompi_alltoall_f);
fortran_names!((s: *const c_void, sn: Fc, sd: Fc, st: Fc, r: *mut c_void, rn: Fc, rd: Fc,
                rt: Fc, cm: Fc, ierr: F) =>
    set_ierr(ierr, d::MPI_Alltoallv(buf_in(s), sn, sd, dt(st), buf_out(r), rn, rd, dt(rt),
        comm(cm)));
    mpi_alltoallv_, mpi_alltoallv__, MPI_ALLTOALLV, ompi_alltoallv_f);
fortran_names!((s: *const c_void, sn: Fc, sd: Fc, st: Fc, r: *mut c_void, rn: Fc, rd: Fc,
                rt: Fc, cm: Fc, ierr: F) => {
        let (c, s) = (comm(cm), buf_in(s));
        // The send types are not read for MPI_IN_PLACE (Open MPI's wrapper leaves them too).
        let sts = if s == consts::in_place() { Vec::new() } else { types_f2c(st, c) };
        let rts = types_f2c(rt, c);
        set_ierr(ierr, d::MPI_Alltoallw(s, sn, sd, types_ptr(&sts), buf_out(r), rn, rd,
            types_ptr(&rts), c))
    };
    mpi_alltoallw_, mpi_alltoallw__, MPI_ALLTOALLW, ompi_alltoallw_f);
fortran_names!((s: *const c_void, r: *mut c_void, n: Fc, t: Fc, o: Fc, cm: Fc, ierr: F) =>
    set_ierr(ierr, d::MPI_Scan(buf_in(s), buf_out(r), *n, dt(t), op(o), comm(cm)));
    mpi_scan_, mpi_scan__, MPI_SCAN, ompi_scan_f);
fortran_names!((s: *const c_void, r: *mut c_void, n: Fc, t: Fc, o: Fc, cm: Fc, ierr: F) =>
    set_ierr(ierr, d::MPI_Exscan(buf_in(s), buf_out(r), *n, dt(t), op(o), comm(cm)));
    mpi_exscan_, mpi_exscan__, MPI_EXSCAN, ompi_exscan_f);
fortran_names!((cm: Fc, newcomm: F, ierr: F) => {
        let mut c = consts::comm_null();
        made(d::MPI_Comm_dup(comm(cm), &mut c), c, newcomm, ierr)
    };
    mpi_comm_dup_, mpi_comm_dup__, MPI_COMM_DUP, ompi_comm_dup_f);
fortran_names!((cm: Fc, color: Fc, key: Fc, newcomm: F, ierr: F) => {
        let mut c = consts::comm_null();
        made(d::MPI_Comm_split(comm(cm), *color, *key, &mut c), c, newcomm, ierr)
    };
    mpi_comm_split_, mpi_comm_split__, MPI_COMM_SPLIT, ompi_comm_split_f);
fortran_names!((cm: Fc, kind: Fc, key: Fc, info: Fc, newcomm: F, ierr: F) => {
        let mut c = consts::comm_null();
        made(d::MPI_Comm_split_type(comm(cm), *kind, *key, PMPI_Info_f2c(*info), &mut c), c,
            newcomm, ierr)
    };
    mpi_comm_split_type_, mpi_comm_split_type__, MPI_COMM_SPLIT_TYPE,
    ompi_comm_split_type_f);
fortran_names!((cm: Fc, group: Fc, newcomm: F, ierr: F) => {
        let mut c = consts::comm_null();
        made(d::MPI_Comm_create(comm(cm), PMPI_Group_f2c(*group), &mut c), c, newcomm, ierr)
    };
    mpi_comm_create_, mpi_comm_create__, MPI_COMM_CREATE, ompi_comm_create_f);
// Open MPI's `MPI_COMM_FREE` and `MPI_COMM_DISCONNECT` (and `use mpi_f08`'s, through
// `ompi_*_f`) call `PMPI_Comm_free` / `PMPI_Comm_disconnect`: through pcoll's C entries
// instead, whose collective part must run before the MPI's delete callbacks
// (`crate::comm::before_free`). The handle is written back (`MPI_COMM_NULL`) on success.
fortran_names!((cm: F, ierr: F) => {
        let mut c = comm(cm);
        let rc = super::c::MPI_Comm_free(&mut c);
        made(rc, c, cm, ierr)
    };
    mpi_comm_free_, mpi_comm_free__, MPI_COMM_FREE, ompi_comm_free_f);
fortran_names!((cm: F, ierr: F) => {
        let mut c = comm(cm);
        let rc = super::c::MPI_Comm_disconnect(&mut c);
        made(rc, c, cm, ierr)
    };
    mpi_comm_disconnect_, mpi_comm_disconnect__, MPI_COMM_DISCONNECT,
    ompi_comm_disconnect_f);

/// Open MPI's own definition of the Fortran entry `name` (NUL-terminated): the next one after
/// pcoll in the search order, looked up once; null where the MPI has none.
fn next_entry(cell: &OnceCell<usize>, name: &'static str) -> usize {
    // SAFETY: a symbol lookup with a NUL-terminated name.
    *cell.get_or_init(|| unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr().cast()) } as usize)
}

/// No definition of `name` after pcoll's: `MPI_ERR_INTERN` with a message, as pcoll's own
/// internal errors (a program that calls an entry its MPI lacks cannot have been linked).
///
/// # Safety
/// `ierr` is null (an absent `mpi_f08` `ierror`) or writable.
unsafe fn missing(name: &str, ierr: F) {
    log::error!("pcoll: {name}: the MPI's own definition was not found (dlsym)");
    // SAFETY: the caller's guarantee.
    unsafe { set_ierr(ierr, consts::ERR_INTERN()) };
}

/// The topology, window and file constructors, `MPI_INTERCOMM_CREATE` and the neighbourhood
/// collectives: the schedules on the communicator argument complete (as their C entries
/// in [`super::drained`] do), then Open MPI's own Fortran entry of the same name takes the
/// arguments as they came, so its conversions (LOGICAL arrays, `MPI_UNWEIGHTED`, the file
/// name's hidden length, `TYPE(C_PTR)` or `INTEGER(KIND=MPI_ADDRESS_KIND)` base pointers)
/// stay its own. Exported under the `mpif.h` / `use mpi` names, and under the names through
/// which `use mpi_f08` reaches them where those would bypass the first: `ompi_*_f` (windows,
/// files, neighbourhood collectives, `MPI_Intercomm_create`) or, where its wrapper calls
/// `pmpi_*_` (topologies), the `mpi_*_f08_` entry itself (a `TYPE(MPI_Comm)` is its handle).
/// `(drain cm)` completes the schedules on the communicator argument `cm`; `(progress)` (the
/// polling probes) advances every schedule as far as it goes without blocking.
macro_rules! forwarded {
    ($how:tt, $args:tt, $ierr:ident; $($name:ident),*) => {$(
        forwarded!(@one $name $how $args $ierr);
    )*};
    (@before (drain $cm:ident)) => {
        // SAFETY: a Fortran handle by reference.
        nbc::before_blocking(unsafe { comm($cm) })
    };
    (@before (progress)) => {
        nbc::progress()
    };
    (@one $name:ident $how:tt ($($arg:ident : $ty:ty),*) $ierr:ident) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $ty),*) {
            static NEXT: OnceCell<usize> = OnceCell::new();
            if nbc::running() || crate::comm::any_wanted() {
                super::guard(stringify!($name), || {
                    forwarded!(@before $how);
                    0
                });
            }
            let f = next_entry(&NEXT, concat!(stringify!($name), "\0"));
            if f == 0 {
                // SAFETY: the caller's `ierr`.
                return unsafe { missing(stringify!($name), $ierr) };
            }
            // SAFETY: Open MPI's definition of this very entry, with the caller's arguments.
            unsafe { std::mem::transmute::<usize, unsafe extern "C" fn($($ty),*)>(f)($($arg),*) }
        }
    };
}

type P = *mut c_void;
forwarded!((drain cm), (cm: Fc, nd: Fc, dims: Fc, periods: Fc, reorder: Fc, newcomm: F,
             ierr: F), ierr;
    mpi_cart_create_, mpi_cart_create__, MPI_CART_CREATE, mpi_cart_create_f08_);
forwarded!((drain cm), (cm: Fc, remain: Fc, newcomm: F, ierr: F), ierr;
    mpi_cart_sub_, mpi_cart_sub__, MPI_CART_SUB, mpi_cart_sub_f08_);
forwarded!((drain cm), (cm: Fc, nn: Fc, index: Fc, edges: Fc, reorder: Fc, newcomm: F,
             ierr: F), ierr;
    mpi_graph_create_, mpi_graph_create__, MPI_GRAPH_CREATE,
    mpi_graph_create_f08_);
forwarded!((drain cm), (cm: Fc, n: Fc, nodes: Fc, deg: Fc, tg: Fc, w: Fc, info: Fc,
             reorder: Fc, newcomm: F, ierr: F), ierr;
    mpi_dist_graph_create_, mpi_dist_graph_create__,
    MPI_DIST_GRAPH_CREATE, mpi_dist_graph_create_f08_);
forwarded!((drain cm), (cm: Fc, ind: Fc, src: Fc, sw: Fc, outd: Fc, dst: Fc, dw: Fc,
             info: Fc, reorder: Fc, newcomm: F, ierr: F), ierr;
    mpi_dist_graph_create_adjacent_, mpi_dist_graph_create_adjacent__,
    MPI_DIST_GRAPH_CREATE_ADJACENT,
    mpi_dist_graph_create_adjacent_f08_);
forwarded!((drain cm), (cm: Fc, leader: Fc, bridge: Fc, rleader: Fc, tag: Fc, newcomm: F,
             ierr: F), ierr;
    mpi_intercomm_create_, mpi_intercomm_create__, MPI_INTERCOMM_CREATE,
    ompi_intercomm_create_f);
forwarded!((drain cm), (base: P, size: P, unit: Fc, info: Fc, cm: Fc, win: F, ierr: F), ierr;
    mpi_win_create_, mpi_win_create__, MPI_WIN_CREATE, ompi_win_create_f);
forwarded!((drain cm), (size: P, unit: Fc, info: Fc, cm: Fc, base: P, win: F, ierr: F), ierr;
    mpi_win_allocate_, mpi_win_allocate__, MPI_WIN_ALLOCATE,
    ompi_win_allocate_f);
forwarded!((drain cm), (size: P, unit: Fc, info: Fc, cm: Fc, base: P, win: F, ierr: F), ierr;
    mpi_win_allocate_shared_, mpi_win_allocate_shared__,
    MPI_WIN_ALLOCATE_SHARED, ompi_win_allocate_shared_f);
forwarded!((drain cm), (info: Fc, cm: Fc, win: F, ierr: F), ierr;
    mpi_win_create_dynamic_, mpi_win_create_dynamic__,
    MPI_WIN_CREATE_DYNAMIC, ompi_win_create_dynamic_f);
// The file name's hidden length last (gfortran passes a `size_t`, Open MPI reads an `int`).
forwarded!((drain cm), (cm: Fc, name: P, amode: Fc, info: Fc, fh: F, ierr: F, len: usize), ierr;
    mpi_file_open_, mpi_file_open__, MPI_FILE_OPEN, ompi_file_open_f);
forwarded!((drain cm), (s: P, sn: Fc, st: Fc, r: P, rn: Fc, rt: Fc, cm: Fc, ierr: F), ierr;
    mpi_neighbor_allgather_, mpi_neighbor_allgather__,
    MPI_NEIGHBOR_ALLGATHER, ompi_neighbor_allgather_f);
forwarded!((drain cm), (s: P, sn: Fc, st: Fc, r: P, rn: Fc, d: Fc, rt: Fc, cm: Fc, ierr: F), ierr;
    mpi_neighbor_allgatherv_, mpi_neighbor_allgatherv__,
    MPI_NEIGHBOR_ALLGATHERV, ompi_neighbor_allgatherv_f);
forwarded!((drain cm), (s: P, sn: Fc, st: Fc, r: P, rn: Fc, rt: Fc, cm: Fc, ierr: F), ierr;
    mpi_neighbor_alltoall_, mpi_neighbor_alltoall__,
    MPI_NEIGHBOR_ALLTOALL, ompi_neighbor_alltoall_f);
forwarded!((drain cm), (s: P, sn: Fc, sd: Fc, st: Fc, r: P, rn: Fc, rd: Fc, rt: Fc, cm: Fc,
             ierr: F), ierr;
    mpi_neighbor_alltoallv_, mpi_neighbor_alltoallv__,
    MPI_NEIGHBOR_ALLTOALLV, ompi_neighbor_alltoallv_f);
forwarded!((drain cm), (s: P, sn: Fc, sd: P, st: Fc, r: P, rn: Fc, rd: P, rt: Fc, cm: Fc,
             ierr: F), ierr;
    mpi_neighbor_alltoallw_, mpi_neighbor_alltoallw__,
    MPI_NEIGHBOR_ALLTOALLW, ompi_neighbor_alltoallw_f);
// The polling probes (a loop on one may wait for a rank that waits for this one's schedule):
// the schedules advance a step first, as the C entries in `super::blocking` do.
forwarded!((progress), (src: Fc, tag: Fc, cm: Fc, flag: F, st: F, ierr: F), ierr;
    mpi_iprobe_, mpi_iprobe__, MPI_IPROBE, mpi_iprobe_f08_);
forwarded!((progress), (src: Fc, tag: Fc, cm: Fc, flag: F, msg: F, st: F, ierr: F), ierr;
    mpi_improbe_, mpi_improbe__, MPI_IMPROBE, mpi_improbe_f08_);
