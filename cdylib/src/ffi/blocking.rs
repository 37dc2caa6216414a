//! Blocking point-to-point calls (`MPI_Recv`, `MPI_Send`, `MPI_Ssend`, `MPI_Rsend`,
//! `MPI_Sendrecv`, `MPI_Sendrecv_replace`, their `_c` forms, `MPI_Probe`, `MPI_Mprobe`; and the
//! polling `MPI_Iprobe` and `MPI_Improbe`, which advance the schedules before they probe)
//! while one of pcoll's non-blocking schedules runs: MPI's progress rule says a rank blocked
//! in `MPI_Recv` still advances its outstanding non-blocking collectives, and the other ranks
//! may wait for this rank's next step. pcoll's schedules advance only inside intercepted
//! calls, so the
//! point-to-point calls take the MPI's non-blocking form and complete it through
//! [`crate::nbc::drive`], which advances the schedules (the same loop as `MPI_Wait`). With no
//! schedule running they go straight to the MPI (one atomic load). A point-to-point call
//! matches its peer's whatever form either side takes; a blocking collective would not match
//! a non-blocking one on the ranks where no schedule runs, so `MPI_Barrier` and the other
//! blocking collectives ([`super::drained`]; those pcoll serves or forwards, in
//! [`crate::dispatch`]) first complete the schedules on their own communicator
//! ([`nbc::before_blocking`]) and then block inside the MPI.
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

extern "C" {
    fn pcoll_c_status_proc_null(s: *mut MPI_Status);
}

/// `MPI_Sendrecv` as a receive from `source` and a send posted together (`recv` first, as
/// the MPI may match either first), completed while pcoll's schedules advance. A receive
/// from `MPI_PROC_NULL` gets the status the blocking call gives (MPICH 4.0.2's non-blocking
/// one leaves source and tag 0: `pcoll_c_status_proc_null`).
fn sendrecv(
    recv: impl FnOnce(&mut MPI_Request) -> c_int,
    send: impl FnOnce(&mut MPI_Request) -> c_int,
    source: c_int,
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
        let rc = complete(&mut [sr, rr], &mut [ignore(), status]);
        if source == consts::PROC_NULL() && rc == consts::SUCCESS() {
            // SAFETY: the caller's status or MPI_STATUS_IGNORE (checked in C).
            unsafe { pcoll_c_status_proc_null(status) };
        }
        rc
    })
}

/// A send (`MPI_Send`, `MPI_Ssend`, `MPI_Rsend`, or their `_c` forms: count type `$count`)
/// served as its non-blocking form `$isend` while a schedule runs. (`MPI_Bsend` completes
/// locally, without the receiver: it never waits for another rank.)
macro_rules! send {
    ($send:ident => $psend:ident, $isend:ident, $count:ty) => {
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
    };
}

send!(MPI_Send => PMPI_Send, PMPI_Isend, c_int);
send!(MPI_Ssend => PMPI_Ssend, PMPI_Issend, c_int);
send!(MPI_Rsend => PMPI_Rsend, PMPI_Irsend, c_int);
#[cfg(pcoll_large_count)]
send!(MPI_Send_c => PMPI_Send_c, PMPI_Isend_c, MPI_Count);
#[cfg(pcoll_large_count)]
send!(MPI_Ssend_c => PMPI_Ssend_c, PMPI_Issend_c, MPI_Count);
#[cfg(pcoll_large_count)]
send!(MPI_Rsend_c => PMPI_Rsend_c, PMPI_Irsend_c, MPI_Count);

/// `MPI_Recv`, `MPI_Sendrecv` with count type `$count` (`int`, or `MPI_Count` in the
/// large-count `_c` forms) and the MPI's non-blocking calls of that type.
macro_rules! p2p {
    ($recv:ident => $precv:ident, $sr:ident => $psr:ident,
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
            // A receive from MPI_PROC_NULL waits for nobody (and its non-blocking form's
            // status is wrong on MPICH 4.0.2: [`sendrecv`]).
            if !nbc::running() || source == consts::PROC_NULL() {
                // SAFETY: forwarded unchanged.
                return unsafe { $precv(buf, count, dt, source, tag, comm, status) };
            }
            // SAFETY: the caller's arguments, posted as the non-blocking form.
            let post =
                |r: &mut MPI_Request| unsafe { $irecv(buf, count, dt, source, tag, comm, r) };
            posted(stringify!($recv), post, status)
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
                source,
                status,
            )
        }
    };
}

p2p!(MPI_Recv => PMPI_Recv, MPI_Sendrecv => PMPI_Sendrecv, c_int, PMPI_Irecv, PMPI_Isend);
#[cfg(pcoll_large_count)]
p2p!(MPI_Recv_c => PMPI_Recv_c, MPI_Sendrecv_c => PMPI_Sendrecv_c, MPI_Count, PMPI_Irecv_c,
    PMPI_Isend_c);

/// `MPI_Sendrecv_replace` while a schedule runs: the send from the buffer and the receive
/// into a separate one, as `MPI_PACKED` (which receives a message of any type), posted
/// together and completed while pcoll's schedules advance; then what arrived is unpacked into
/// the buffer as whole elements of `dt` (the buffer is read by the send until both complete;
/// only the bytes the datatype addresses are written, never its holes). A receive of more than
/// `INT_MAX` bytes, or a datatype whose size cannot be read, takes the MPI's blocking call.
/// With no schedule running, straight to the MPI.
#[no_mangle]
pub unsafe extern "C" fn MPI_Sendrecv_replace(
    buf: *mut c_void,
    count: c_int,
    dt: MPI_Datatype,
    dest: c_int,
    stag: c_int,
    source: c_int,
    rtag: c_int,
    comm: MPI_Comm,
    status: *mut MPI_Status,
) -> c_int {
    let blocking = || {
        // SAFETY: forwarded unchanged.
        unsafe { PMPI_Sendrecv_replace(buf, count, dt, dest, stag, source, rtag, comm, status) }
    };
    if !nbc::running() {
        return blocking();
    }
    let Some(size) = crate::mpi_types::type_size(dt).filter(|_| count >= 0) else {
        return blocking();
    };
    let Some(bytes) = (count as i64)
        .checked_mul(size)
        .filter(|b| *b <= c_int::MAX as i64)
    else {
        return blocking();
    };
    guard("MPI_Sendrecv_replace", || {
        let mut tmp = vec![0u8; bytes as usize];
        let tp = tmp.as_mut_ptr() as *mut c_void;
        // SAFETY: a status the MPI writes (its byte count is read below).
        let mut st: MPI_Status = unsafe { std::mem::zeroed() };
        let rc = sendrecv(
            // SAFETY: `tmp` holds `bytes` bytes and outlives the request (completed below).
            |r| unsafe {
                PMPI_Irecv(
                    tp,
                    bytes as c_int,
                    consts::dt_packed(),
                    source,
                    rtag,
                    comm,
                    r,
                )
            },
            // SAFETY: the caller's arguments.
            |r| unsafe { PMPI_Isend(buf, count, dt, dest, stag, comm, r) },
            source,
            &mut st,
        );
        if rc != consts::SUCCESS() {
            return rc;
        }
        let (mut got, mut pos) = (0, 0);
        // SAFETY: our own status and buffer; the caller's buffer for `got / size` elements of
        // `dt` (at most `count`).
        let rc = unsafe {
            PMPI_Get_count(&st, consts::dt_packed(), &mut got);
            let n = if size > 0 {
                (got as i64 / size) as c_int
            } else {
                0
            };
            if n > 0 {
                PMPI_Unpack(tp, got, &mut pos, buf, n, dt, comm)
            } else {
                consts::SUCCESS()
            }
        };
        if !status.is_null() && !std::ptr::eq(status, ignore()) {
            // SAFETY: the caller's writable status.
            unsafe { *status = st };
        }
        rc
    })
}

/// The large-count form: while a schedule runs, counts that fit an `int` as
/// [`MPI_Sendrecv_replace`], larger ones the MPI's blocking call.
#[cfg(pcoll_large_count)]
#[no_mangle]
pub unsafe extern "C" fn MPI_Sendrecv_replace_c(
    buf: *mut c_void,
    count: MPI_Count,
    dt: MPI_Datatype,
    dest: c_int,
    stag: c_int,
    source: c_int,
    rtag: c_int,
    comm: MPI_Comm,
    status: *mut MPI_Status,
) -> c_int {
    match c_int::try_from(count) {
        // SAFETY: the caller's arguments.
        Ok(n) if nbc::running() => unsafe {
            MPI_Sendrecv_replace(buf, n, dt, dest, stag, source, rtag, comm, status)
        },
        // SAFETY: forwarded unchanged.
        _ => unsafe {
            PMPI_Sendrecv_replace_c(buf, count, dt, dest, stag, source, rtag, comm, status)
        },
    }
}

/// A blocking probe: straight to the MPI (`block`) when no schedule runs; otherwise its
/// non-blocking form `iprobe` (which sets `flag`), tried while pcoll's schedules advance, and
/// `block` once none runs any more.
fn probe(
    name: &str,
    mut iprobe: impl FnMut(&mut c_int) -> c_int,
    block: impl FnOnce() -> c_int,
) -> c_int {
    if !nbc::running() {
        return block();
    }
    guard(name, || {
        let mut pause = nbc::Pause::default();
        loop {
            nbc::progress();
            if !nbc::running() {
                return block();
            }
            let mut flag = 0;
            let rc = iprobe(&mut flag);
            if rc != consts::SUCCESS() || flag != 0 {
                return rc;
            }
            pause.pause();
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Probe(
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    status: *mut MPI_Status,
) -> c_int {
    probe(
        "MPI_Probe",
        // SAFETY: the caller's arguments; out-pointer to a local.
        |flag| unsafe { PMPI_Iprobe(source, tag, comm, flag, status) },
        // SAFETY: forwarded unchanged.
        || unsafe { PMPI_Probe(source, tag, comm, status) },
    )
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Mprobe(
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    message: *mut MPI_Message,
    status: *mut MPI_Status,
) -> c_int {
    probe(
        "MPI_Mprobe",
        // SAFETY: the caller's arguments; out-pointer to a local.
        |flag| unsafe { PMPI_Improbe(source, tag, comm, flag, message, status) },
        // SAFETY: forwarded unchanged.
        || unsafe { PMPI_Mprobe(source, tag, comm, message, status) },
    )
}

/// A polling call (`MPI_Iprobe`, `MPI_Improbe`): a program may loop on it until another rank's
/// message arrives, and that rank may first wait for this one's part of a schedule, so the
/// schedules advance as far as they go without blocking before each probe. With none running:
/// one atomic load, then the MPI.
fn polled(name: &str) {
    if nbc::running() {
        guard(name, || {
            nbc::progress();
            consts::SUCCESS()
        });
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Iprobe(
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    flag: *mut c_int,
    status: *mut MPI_Status,
) -> c_int {
    polled("MPI_Iprobe");
    // SAFETY: the caller's arguments, forwarded unchanged.
    unsafe { PMPI_Iprobe(source, tag, comm, flag, status) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Improbe(
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    flag: *mut c_int,
    message: *mut MPI_Message,
    status: *mut MPI_Status,
) -> c_int {
    polled("MPI_Improbe");
    // SAFETY: the caller's arguments, forwarded unchanged.
    unsafe { PMPI_Improbe(source, tag, comm, flag, message, status) }
}
