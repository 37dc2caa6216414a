//! Blocking point-to-point calls (`MPI_Recv`, `MPI_Send`, `MPI_Sendrecv`, their `_c` forms,
//! `MPI_Probe`) while one of pcoll's non-blocking schedules runs: MPI's progress rule says a
//! rank blocked in `MPI_Recv` still advances its outstanding non-blocking collectives, and
//! the other ranks may wait for this rank's next step. pcoll's schedules advance only inside
//! intercepted calls, so these calls take the MPI's non-blocking form and complete it through
//! [`crate::nbc::drive`], which advances the schedules (the same loop as `MPI_Wait`). With no
//! schedule running they go straight to the MPI (one atomic load). A point-to-point call
//! matches its peer's whatever form either side takes; a blocking collective would not match
//! a non-blocking one on the ranks where no schedule runs, so `MPI_Barrier` and the other
//! blocking collectives pcoll forwards still block inside the MPI.
// The safety contract of each export is the MPI standard's for that call.
#![allow(non_snake_case, clippy::missing_safety_doc, clippy::too_many_arguments)]

use super::guard;
use crate::consts;
use crate::nbc;
use mpi_sys::*;
use std::os::raw::{c_int, c_void};

/// Complete `reqs` (the MPI's own requests) through pcoll's `MPI_Wait`, which advances the
/// schedules while it waits; `statuses` gets each request's status (or is ignored).
fn complete(reqs: &mut [MPI_Request], statuses: &mut [*mut MPI_Status]) -> c_int {
    let mut rc = consts::SUCCESS();
    for (r, s) in reqs.iter_mut().zip(statuses.iter()) {
        // SAFETY: our own request (a local); the caller's status or MPI_STATUS_IGNORE.
        let x = unsafe { super::complete::MPI_Wait(r, *s) };
        if rc == consts::SUCCESS() {
            rc = x;
        }
    }
    rc
}

fn null() -> MPI_Request {
    // SAFETY: a constant of the MPI.
    unsafe { RSMPI_REQUEST_NULL }
}

fn ignore() -> *mut MPI_Status {
    // SAFETY: a constant of the MPI.
    unsafe { RSMPI_STATUS_IGNORE }
}

/// A blocking call served as its non-blocking form: `post` starts it (the MPI's request
/// written to its argument), and it is completed while pcoll's schedules advance.
fn posted(
    name: &str,
    post: impl FnOnce(&mut MPI_Request) -> c_int,
    status: *mut MPI_Status,
) -> c_int {
    guard(name, || {
        let mut r = null();
        let rc = post(&mut r);
        if rc != consts::SUCCESS() {
            return rc;
        }
        complete(&mut [r], &mut [status])
    })
}

/// `MPI_Sendrecv` as a receive and a send posted together (`recv` first, as the MPI may
/// match either first), completed while pcoll's schedules advance.
fn sendrecv(
    recv: impl FnOnce(&mut MPI_Request) -> c_int,
    send: impl FnOnce(&mut MPI_Request) -> c_int,
    status: *mut MPI_Status,
) -> c_int {
    guard("MPI_Sendrecv", || {
        let (mut rr, mut sr) = (null(), null());
        let rc = recv(&mut rr);
        if rc != consts::SUCCESS() {
            return rc;
        }
        let rc = send(&mut sr);
        if rc != consts::SUCCESS() {
            // SAFETY: our own receive, cancelled and completed before returning.
            unsafe {
                PMPI_Cancel(&mut rr);
                PMPI_Wait(&mut rr, ignore());
            }
            return rc;
        }
        complete(&mut [sr, rr], &mut [ignore(), status])
    })
}

/// `MPI_Recv`, `MPI_Send`, `MPI_Sendrecv` with count type `$count` (`int`, or `MPI_Count` in
/// the large-count `_c` forms) and the MPI's non-blocking calls of that type.
macro_rules! p2p {
    ($recv:ident => $precv:ident, $send:ident => $psend:ident, $sr:ident => $psr:ident,
     $count:ty, $irecv:ident, $isend:ident) => {
        #[no_mangle]
        pub unsafe extern "C" fn $recv(
            buf: *mut c_void,
            count: $count,
            dt: MPI_Datatype,
            source: c_int,
            tag: c_int,
            comm: MPI_Comm,
            status: *mut MPI_Status,
        ) -> c_int {
            if !nbc::running() {
                // SAFETY: forwarded unchanged.
                return unsafe { $precv(buf, count, dt, source, tag, comm, status) };
            }
            // SAFETY: the caller's arguments, posted as the non-blocking form.
            let post =
                |r: &mut MPI_Request| unsafe { $irecv(buf, count, dt, source, tag, comm, r) };
            posted(stringify!($recv), post, status)
        }

        #[no_mangle]
        pub unsafe extern "C" fn $send(
            buf: *const c_void,
            count: $count,
            dt: MPI_Datatype,
            dest: c_int,
            tag: c_int,
            comm: MPI_Comm,
        ) -> c_int {
            if !nbc::running() {
                // SAFETY: forwarded unchanged.
                return unsafe { $psend(buf, count, dt, dest, tag, comm) };
            }
            // SAFETY: the caller's arguments, posted as the non-blocking form.
            let post = |r: &mut MPI_Request| unsafe { $isend(buf, count, dt, dest, tag, comm, r) };
            posted(stringify!($send), post, ignore())
        }

        #[no_mangle]
        pub unsafe extern "C" fn $sr(
            sbuf: *const c_void,
            scount: $count,
            sdt: MPI_Datatype,
            dest: c_int,
            stag: c_int,
            rbuf: *mut c_void,
            rcount: $count,
            rdt: MPI_Datatype,
            source: c_int,
            rtag: c_int,
            comm: MPI_Comm,
            status: *mut MPI_Status,
        ) -> c_int {
            if !nbc::running() {
                // SAFETY: forwarded unchanged.
                return unsafe {
                    $psr(
                        sbuf, scount, sdt, dest, stag, rbuf, rcount, rdt, source, rtag, comm,
                        status,
                    )
                };
            }
            sendrecv(
                // SAFETY: the caller's arguments, posted as the non-blocking forms.
                |r| unsafe { $irecv(rbuf, rcount, rdt, source, rtag, comm, r) },
                // SAFETY: as above.
                |r| unsafe { $isend(sbuf, scount, sdt, dest, stag, comm, r) },
                status,
            )
        }
    };
}

p2p!(MPI_Recv => PMPI_Recv, MPI_Send => PMPI_Send, MPI_Sendrecv => PMPI_Sendrecv,
    c_int, PMPI_Irecv, PMPI_Isend);
#[cfg(pcoll_large_count)]
p2p!(MPI_Recv_c => PMPI_Recv_c, MPI_Send_c => PMPI_Send_c, MPI_Sendrecv_c => PMPI_Sendrecv_c,
    MPI_Count, PMPI_Irecv_c, PMPI_Isend_c);

#[no_mangle]
pub unsafe extern "C" fn MPI_Probe(
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    status: *mut MPI_Status,
) -> c_int {
    if !nbc::running() {
        // SAFETY: forwarded unchanged.
        return unsafe { PMPI_Probe(source, tag, comm, status) };
    }
    guard("MPI_Probe", || {
        let mut spins = 0u32;
        loop {
            nbc::progress();
            if !nbc::running() {
                // SAFETY: forwarded unchanged.
                return unsafe { PMPI_Probe(source, tag, comm, status) };
            }
            let mut flag = 0;
            // SAFETY: the caller's arguments; out-pointer to a local.
            let rc = unsafe { PMPI_Iprobe(source, tag, comm, &mut flag, status) };
            if rc != consts::SUCCESS() || flag != 0 {
                return rc;
            }
            spins += 1;
            if spins < nbc::SPINS {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
    })
}
