//! `MPI_Reduce`, `MPI_Allreduce`, `MPI_Reduce_scatter`, `MPI_Allgatherv`, `MPI_Bcast`,
//! `MPI_Allgather` and `MPI_Reduce_scatter_block`: one jump each to their C entry
//! (`shim/pcoll_entry.c`), which forwards a repeat of the last native call to the MPI and
//! sends everything else through the gate and pcoll's Rust path (`pcoll_rs_<coll>` in
//! [`super::c`] and [`super::family`]). The symbols must be defined by Rust to be exported
//! from the cdylib; on x86-64 each is a naked `jmp` placed beside the C entries
//! (`.text.hot.*`), so a forwarded call touches one page of code (see the C file for the
//! measurement), elsewhere a plain call. Open MPI's Fortran entries ([`super::fortran`]) call
//! the same C entries once they have converted their arguments.
#![allow(non_snake_case)]

use mpi_sys::{MPI_Comm, MPI_Datatype, MPI_Op};
use std::os::raw::{c_int, c_void};

macro_rules! entry {
    ($(#[$doc:meta])* $name:ident => $target:ident ($($arg:ident : $ty:ty),* $(,)?)) => {
        extern "C" {
            pub(crate) fn $target($($arg: $ty),*) -> c_int;
        }
        $(#[$doc])*
        ///
        /// # Safety
        ///
        /// The arguments are valid for this MPI call as the MPI standard requires.
        #[cfg(target_arch = "x86_64")]
        #[unsafe(naked)]
        #[no_mangle]
        #[link_section = ".text.hot.pcoll"]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> c_int {
            core::arch::naked_asm!("jmp {t}", t = sym $target)
        }
        $(#[$doc])*
        ///
        /// # Safety
        ///
        /// The arguments are valid for this MPI call as the MPI standard requires.
        #[cfg(not(target_arch = "x86_64"))]
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> c_int {
            // SAFETY: the caller's arguments, passed on unchanged.
            unsafe { $target($($arg),*) }
        }
    };
}

entry!(
    /// C `MPI_Reduce`.
    MPI_Reduce => pcoll_entry_reduce(s: *const c_void, r: *mut c_void, n: c_int, dt: MPI_Datatype,
        op: MPI_Op, root: c_int, comm: MPI_Comm)
);
entry!(
    /// C `MPI_Allreduce`.
    MPI_Allreduce => pcoll_entry_allreduce(s: *const c_void, r: *mut c_void, n: c_int,
        dt: MPI_Datatype, op: MPI_Op, comm: MPI_Comm)
);
entry!(
    /// C `MPI_Reduce_scatter`.
    MPI_Reduce_scatter => pcoll_entry_reduce_scatter(s: *const c_void, r: *mut c_void,
        counts: *const c_int, dt: MPI_Datatype, op: MPI_Op, comm: MPI_Comm)
);
entry!(
    /// C `MPI_Allgatherv`.
    MPI_Allgatherv => pcoll_entry_allgatherv(s: *const c_void, sn: c_int, st: MPI_Datatype,
        r: *mut c_void, counts: *const c_int, displs: *const c_int, rt: MPI_Datatype, comm: MPI_Comm)
);
entry!(
    /// C `MPI_Bcast`.
    MPI_Bcast => pcoll_entry_bcast(b: *mut c_void, n: c_int, dt: MPI_Datatype, root: c_int,
        comm: MPI_Comm)
);
entry!(
    /// C `MPI_Allgather`.
    MPI_Allgather => pcoll_entry_allgather(s: *const c_void, sn: c_int, st: MPI_Datatype,
        r: *mut c_void, rn: c_int, rt: MPI_Datatype, comm: MPI_Comm)
);
entry!(
    /// C `MPI_Reduce_scatter_block`.
    MPI_Reduce_scatter_block => pcoll_entry_reduce_scatter_block(s: *const c_void,
        r: *mut c_void, n: c_int, dt: MPI_Datatype, op: MPI_Op, comm: MPI_Comm)
);
