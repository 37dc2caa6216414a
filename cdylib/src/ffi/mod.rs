//! The only `#[no_mangle]` exports: C, Fortran and large-count entry points, and pcoll's own
//! C API (`include/pcoll.h`). Entry points only convert arguments; every panic is caught here
//! and turned into `PMPI_Abort` (the other ranks would otherwise wait forever).

pub mod api;
pub mod blocking;
pub mod c;
pub mod complete;
pub mod drained;
pub mod entry;
pub mod family;
#[cfg(pcoll_openmpi)]
pub mod fortran;
#[cfg(pcoll_openmpi)]
pub mod fortran_drained;
#[cfg(pcoll_mpich)]
pub mod fortran_f08;
#[cfg(pcoll_openmpi)]
pub mod fortran_family;
#[cfg(pcoll_openmpi)]
pub mod fortran_nbc;
pub mod init;
pub mod nbc;

use crate::consts;
use std::os::raw::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// A Fortran `ierr` / optional `ierror` (null: absent).
///
/// # Safety
/// `ierr` is null or writable.
pub(crate) unsafe fn fortran_set_ierr(ierr: *mut mpi_sys::RSMPI_Fint, rc: c_int) {
    if !ierr.is_null() {
        // SAFETY: checked non-null; Fortran passes a writable INTEGER.
        unsafe { *ierr = rc as mpi_sys::RSMPI_Fint };
    }
}

/// Run an entry point; a panic is logged and aborts the job with `MPI_ERR_INTERN`.
pub fn guard(name: &str, f: impl FnOnce() -> c_int) -> c_int {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(rc) => rc,
        Err(p) => {
            let msg = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            let line = format!("pcoll: internal error (panic) in {name}: {msg}; aborting\n");
            let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
            // SAFETY: aborting the job is the documented response to an internal error.
            unsafe { mpi_sys::PMPI_Abort(consts::comm_world(), consts::ERR_INTERN()) };
            consts::ERR_INTERN()
        }
    }
}
