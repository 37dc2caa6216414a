//! `MPI_Init` and `MPI_Init_thread` (C; and the Fortran symbols whose bindings call
//! `PMPI_Init` directly): forwarded, then the decision inputs are
//! settled across `MPI_COMM_WORLD` (`crate::agree`), where every rank is.
#![allow(non_snake_case)]

use super::guard;
use crate::{agree, consts};
use mpi_sys::*;
use std::os::raw::{c_char, c_int};

fn settle(rc: c_int) -> c_int {
    if rc == consts::SUCCESS() {
        crate::state::init_seen();
        agree::at_init();
        crate::state::prepare();
    }
    rc
}

/// `MPI_Init`, then pcoll's own setup.
///
/// # Safety
///
/// `argc` and `argv` are NULL or valid as the MPI standard requires (`main`'s arguments).
#[no_mangle]
pub unsafe extern "C" fn MPI_Init(argc: *mut c_int, argv: *mut *mut *mut c_char) -> c_int {
    // SAFETY: the caller's arguments, forwarded.
    guard("MPI_Init", || settle(unsafe { PMPI_Init(argc, argv) }))
}

/// `MPI_Init_thread`, then pcoll's own setup.
///
/// # Safety
///
/// As for [`MPI_Init`]; `provided` is valid for writing one int.
#[no_mangle]
pub unsafe extern "C" fn MPI_Init_thread(
    argc: *mut c_int,
    argv: *mut *mut *mut c_char,
    required: c_int,
    provided: *mut c_int,
) -> c_int {
    // SAFETY: the caller's arguments, forwarded.
    guard("MPI_Init_thread", || {
        settle(unsafe { PMPI_Init_thread(argc, argv, required, provided) })
    })
}

/// The Fortran entries that reach `PMPI_Init` without the C `MPI_Init`: all of Open MPI's
/// (mpif.h / `use mpi`, and `ompi_init_f`, which `use mpi_f08` calls); MPICH's `use mpi_f08`
/// ones (its mpif.h / `use mpi` call the C `MPI_Init`, served above).
mod fortran {
    use super::*;
    type Fint = RSMPI_Fint;

    /// # Safety
    /// `ierr` is null (`use mpi_f08`'s optional argument) or a writable INTEGER.
    unsafe fn done(ierr: *mut Fint, rc: c_int) {
        if !ierr.is_null() {
            // SAFETY: checked non-null.
            unsafe { *ierr = rc as Fint };
        }
    }

    macro_rules! export_init {
        ($($name:ident),*) => {$(
            #[no_mangle]
            pub unsafe extern "C" fn $name(ierr: *mut Fint) {
                // SAFETY: MPI-2 allows null argc/argv (the MPIs' own bindings pass none).
                let rc = guard("MPI_INIT", || {
                    settle(unsafe { PMPI_Init(std::ptr::null_mut(), std::ptr::null_mut()) })
                });
                // SAFETY: Fortran's INTEGER ierr.
                unsafe { done(ierr, rc) };
            }
        )*};
    }

    macro_rules! export_init_thread {
        ($($name:ident),*) => {$(
            #[no_mangle]
            pub unsafe extern "C" fn $name(required: *const Fint, provided: *mut Fint, ierr: *mut Fint) {
                let rc = guard("MPI_INIT_THREAD", || {
                    let mut got: c_int = 0;
                    // SAFETY: Fortran passes `required` by reference; null argc/argv.
                    let rc = unsafe {
                        PMPI_Init_thread(std::ptr::null_mut(), std::ptr::null_mut(), *required as c_int, &mut got)
                    };
                    if !provided.is_null() {
                        // SAFETY: Fortran's INTEGER provided.
                        unsafe { *provided = got as Fint };
                    }
                    settle(rc)
                });
                // SAFETY: Fortran's INTEGER ierr.
                unsafe { done(ierr, rc) };
            }
        )*};
    }

    #[cfg(pcoll_openmpi)]
    export_init!(mpi_init_, mpi_init__, MPI_INIT, ompi_init_f);
    #[cfg(pcoll_openmpi)]
    export_init_thread!(
        mpi_init_thread_,
        mpi_init_thread__,
        MPI_INIT_THREAD,
        ompi_init_thread_f
    );
    #[cfg(pcoll_mpich)]
    export_init!(mpi_init_f08_);
    #[cfg(pcoll_mpich)]
    export_init_thread!(mpi_init_thread_f08_);
}
