//! Whether the program's completion calls reach pcoll. A non-blocking or persistent call pcoll
//! serves hands the program a stand-in request that only pcoll's `MPI_Wait`, `MPI_Test`, ...
//! complete ([`crate::nbc`]). A library loaded or linked before pcoll that defines one of
//! them itself (a profiling tool in the PMPI manner: its `MPI_Wait` calls `PMPI_Wait`) has the
//! MPI complete the stand-in at once, before pcoll's schedule ran: wrong results, and the
//! schedule writing into the buffers afterwards (session 53's bug hunt, every MPI). So where
//! any of these names resolves outside libpcoll, non-blocking and persistent collectives go to
//! the MPI (one warning); the blocking ones are served as before.
//!
//! At `MPI_Init` ([`at_init`]) every rank's finding is combined (one `PMPI_Allreduce`, the
//! maximum), so every rank decides alike; without `MPI_Init` seen (a tool's `MPI_Init` wrapper
//! calls `PMPI_Init`) each rank's own is used (all ranks of a job load the same libraries).

use once_cell::sync::OnceCell;
use std::ffi::CStr;
use std::os::raw::c_void;

/// The calls that complete, start or free pcoll's requests, and free what they hold.
const NAMES: [&CStr; 17] = [
    c"MPI_Wait",
    c"MPI_Test",
    c"MPI_Waitall",
    c"MPI_Testall",
    c"MPI_Waitany",
    c"MPI_Testany",
    c"MPI_Waitsome",
    c"MPI_Testsome",
    c"MPI_Request_get_status",
    c"MPI_Start",
    c"MPI_Startall",
    c"MPI_Request_free",
    c"MPI_Cancel",
    c"MPI_Op_free",
    c"MPI_Request_get_status_all",
    c"MPI_Request_get_status_any",
    c"MPI_Request_get_status_some",
];

/// Non-blocking and persistent collectives go to the MPI.
static NB_NATIVE: OnceCell<bool> = OnceCell::new();

/// The base address of the object that holds `addr` (`None`: not in a loaded object).
fn object_of(addr: *const c_void) -> Option<usize> {
    // SAFETY: dladdr fills a local struct; any address may be asked about.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    (unsafe { libc::dladdr(addr, &mut info) } != 0).then_some(info.dli_fbase as usize)
}

/// The names among [`NAMES`] whose definition the program reaches lies outside libpcoll
/// (a name not found globally — libpcoll loaded privately — counts as pcoll's).
fn shadowed() -> Vec<&'static str> {
    let ours = object_of(&NB_NATIVE as *const _ as *const c_void);
    NAMES
        .iter()
        .filter(|n| {
            // SAFETY: a NUL-terminated name.
            let f = unsafe { libc::dlsym(libc::RTLD_DEFAULT, n.as_ptr()) };
            !f.is_null() && ours.is_some() && object_of(f) != ours
        })
        .map(|n| n.to_str().unwrap_or("?"))
        .collect()
}

fn warn(names: &[&str], whose: &str) {
    crate::state::say(format_args!(
        "pcoll: warning: {} defined by a library before pcoll ({whose}; a profiling tool?): \
         non-blocking and persistent collectives go to the MPI (their requests are completed \
         only by pcoll's own calls); load pcoll first to have them served",
        if names.is_empty() {
            "MPI_Wait and the like".to_string()
        } else {
            names.join(", ")
        },
    ));
}

/// At `MPI_Init`, on `MPI_COMM_WORLD`: every rank's finding combined, so all decide alike.
pub fn at_init() {
    let local = shadowed();
    let mine = !local.is_empty();
    let native = crate::agree::on_any_rank(mine).unwrap_or(mine);
    if NB_NATIVE.set(native).is_ok() && native && crate::state::world_rank() == 0 {
        warn(&local, if mine { "rank 0" } else { "on another rank" });
    }
}

/// Non-blocking and persistent collectives go to the MPI: settled at `MPI_Init`, or without
/// it seen this rank's own finding (said once).
pub fn nb_native() -> bool {
    *NB_NATIVE.get_or_init(|| {
        let local = shadowed();
        if !local.is_empty() && crate::state::world_rank() == 0 {
            warn(&local, "rank 0");
        }
        !local.is_empty()
    })
}
