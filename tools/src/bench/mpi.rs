//! The few MPI calls the benchmark tools make themselves (all `PMPI_`, never intercepted),
//! wrapped once so the rest of `bench` has no `unsafe` of its own except the collective calls
//! in [`super::case`].

use mpi_sys::*;
use pcoll_mpi::consts;
use std::os::raw::{c_char, c_int, c_void};

/// Panics with the MPI error string when a `PMPI_` call fails (the tools treat any MPI error
/// as fatal: all ranks abort through the panic -> `MPI_Abort` in `main`).
pub fn check(rc: c_int, what: &str) {
    if rc != consts::SUCCESS() {
        panic!("{what} failed with MPI error {rc}");
    }
}

/// `MPI_Init` (threads: single). Idempotent.
pub fn init() {
    let mut flag: c_int = 0;
    // SAFETY: out-pointer; MPI_Initialized may be called at any time.
    unsafe { PMPI_Initialized(&mut flag) };
    if flag == 0 {
        // SAFETY: argc/argv may be null (MPI-2).
        check(
            unsafe { PMPI_Init(std::ptr::null_mut(), std::ptr::null_mut()) },
            "MPI_Init",
        );
        // The library's settings, compared across ranks as its MPI_Init export does.
        pcoll_mpi::agree::at_init();
    }
}

/// `MPI_Finalize` through pcoll's own export (prints `PCOLL_STATS=1` statistics).
pub fn finalize() {
    // SAFETY: called once at the end of main, after every communicator of ours is freed.
    unsafe { pcoll_mpi::ffi::c::MPI_Finalize() };
}

pub fn abort(code: c_int) -> ! {
    // SAFETY: terminates the job.
    unsafe { PMPI_Abort(consts::comm_world(), code) };
    std::process::exit(code)
}

pub fn world() -> MPI_Comm {
    consts::comm_world()
}

pub fn rank(comm: MPI_Comm) -> usize {
    let mut r: c_int = 0;
    // SAFETY: out-pointer, valid communicator.
    check(unsafe { PMPI_Comm_rank(comm, &mut r) }, "MPI_Comm_rank");
    r as usize
}

pub fn size(comm: MPI_Comm) -> usize {
    let mut r: c_int = 0;
    // SAFETY: out-pointer, valid communicator.
    check(unsafe { PMPI_Comm_size(comm, &mut r) }, "MPI_Comm_size");
    r as usize
}

pub fn wtime() -> f64 {
    // SAFETY: no arguments.
    unsafe { PMPI_Wtime() }
}

pub fn barrier(comm: MPI_Comm) {
    // SAFETY: valid communicator.
    check(unsafe { PMPI_Barrier(comm) }, "MPI_Barrier");
}

/// Ranks `0..p` of MPI_COMM_WORLD in a new communicator (`None` on the other ranks).
/// Collective over MPI_COMM_WORLD. Errors on it return codes instead of aborting, so a
/// failing pcoll algorithm is reported by the benchmark rather than killing the job.
pub fn sub_comm(p: usize) -> Option<MPI_Comm> {
    let me = rank(world());
    let color = if me < p { 0 } else { consts::UNDEFINED() };
    let mut c: MPI_Comm = consts::comm_null();
    // SAFETY: out-pointer; collective over world, every rank calls it.
    check(
        unsafe { PMPI_Comm_split(world(), color, me as c_int, &mut c) },
        "MPI_Comm_split",
    );
    if c == consts::comm_null() {
        return None;
    }
    // SAFETY: valid communicator and predefined error handler.
    check(
        unsafe { PMPI_Comm_set_errhandler(c, consts::errors_return()) },
        "MPI_Comm_set_errhandler",
    );
    Some(c)
}

pub fn free_comm(mut c: MPI_Comm) {
    // SAFETY: a communicator we created; collective over it.
    check(unsafe { PMPI_Comm_free(&mut c) }, "MPI_Comm_free");
}

/// In-place elementwise maximum over `comm` (all ranks pass vectors of equal length).
pub fn allreduce_max_f64(comm: MPI_Comm, v: &mut [f64]) {
    if v.is_empty() {
        return;
    }
    // SAFETY: in-place allreduce on a live slice of v.len() doubles.
    check(
        unsafe {
            PMPI_Allreduce(
                consts::in_place(),
                v.as_mut_ptr() as *mut c_void,
                v.len() as c_int,
                consts::dt_double(),
                consts::op_max(),
                comm,
            )
        },
        "MPI_Allreduce",
    );
}

/// In-place elementwise sum of `i64` counters over `comm`.
pub fn allreduce_sum_i64(comm: MPI_Comm, v: &mut [i64]) {
    if v.is_empty() {
        return;
    }
    // SAFETY: in-place allreduce on a live slice of v.len() 64-bit integers.
    check(
        unsafe {
            PMPI_Allreduce(
                consts::in_place(),
                v.as_mut_ptr() as *mut c_void,
                v.len() as c_int,
                consts::dt_long(),
                consts::op_sum(),
                comm,
            )
        },
        "MPI_Allreduce",
    );
}

/// Broadcast `v` from rank 0 of `comm` (all ranks pass the same length).
pub fn bcast_f64(comm: MPI_Comm, v: &mut [f64]) {
    if v.is_empty() {
        return;
    }
    // SAFETY: live slice of v.len() doubles on every rank.
    check(
        unsafe {
            PMPI_Bcast(
                v.as_mut_ptr() as *mut c_void,
                v.len() as c_int,
                consts::dt_double(),
                0,
                comm,
            )
        },
        "MPI_Bcast",
    );
}

/// One-way time of a `bytes`-byte message between ranks 0 and 1 of `comm` (half the
/// median ping-pong round trip over `reps`), valid on rank 0; other ranks return 0.
/// Every rank of `comm` must call it (ranks >= 2 only wait at the closing barrier).
pub fn pingpong(comm: MPI_Comm, bytes: usize, reps: usize) -> f64 {
    let me = rank(comm);
    let mut buf = vec![0u8; bytes.max(1)];
    let ptr = buf.as_mut_ptr() as *mut c_void;
    let n = bytes as c_int;
    let mut times = Vec::with_capacity(reps);
    barrier(comm);
    for _ in 0..reps + 2 {
        let t0 = wtime();
        // SAFETY: a live buffer of at least `bytes` bytes, MPI_BYTE, ranks 0 and 1 only.
        unsafe {
            if me == 0 {
                check(
                    PMPI_Send(ptr, n, consts::dt_byte(), 1, 77, comm),
                    "MPI_Send",
                );
                check(
                    PMPI_Recv(ptr, n, consts::dt_byte(), 1, 77, comm, RSMPI_STATUS_IGNORE),
                    "MPI_Recv",
                );
            } else if me == 1 {
                check(
                    PMPI_Recv(ptr, n, consts::dt_byte(), 0, 77, comm, RSMPI_STATUS_IGNORE),
                    "MPI_Recv",
                );
                check(
                    PMPI_Send(ptr, n, consts::dt_byte(), 0, 77, comm),
                    "MPI_Send",
                );
            }
        }
        times.push(wtime() - t0);
    }
    barrier(comm);
    // The first two round trips warm up the connection.
    let mut t = times.split_off(2);
    t.sort_by(f64::total_cmp);
    if me == 0 {
        t[t.len() / 2] / 2.0
    } else {
        0.0
    }
}

/// Median time of `MPI_Reduce_local(MPI_SUM)` over `bytes` bytes of doubles.
pub fn reduce_local_time(bytes: usize, reps: usize) -> f64 {
    let n = (bytes / 8).max(1);
    let a = vec![1.0f64; n];
    let mut b = vec![2.0f64; n];
    let mut times = Vec::with_capacity(reps);
    for _ in 0..reps + 1 {
        let t0 = wtime();
        // SAFETY: two live buffers of n doubles.
        check(
            unsafe {
                PMPI_Reduce_local(
                    a.as_ptr() as *const c_void,
                    b.as_mut_ptr() as *mut c_void,
                    n as c_int,
                    consts::dt_double(),
                    consts::op_sum(),
                )
            },
            "MPI_Reduce_local",
        );
        times.push(wtime() - t0);
    }
    let mut t = times.split_off(1);
    t.sort_by(f64::total_cmp);
    t[t.len() / 2]
}

/// The MPI library's version string (first line), e.g. "Open MPI v4.1.4, ...".
pub fn library_version() -> String {
    let mut buf = vec![0 as c_char; 8192];
    let mut len: c_int = 0;
    // SAFETY: buffer of MPI_MAX_LIBRARY_VERSION_STRING (<= 8192 in both MPIs) characters.
    unsafe { PMPI_Get_library_version(buf.as_mut_ptr(), &mut len) };
    let bytes: Vec<u8> = buf[..(len.max(0) as usize).min(buf.len())]
        .iter()
        .map(|&c| c as u8)
        .take_while(|&c| c != 0)
        .collect();
    short_version(&String::from_utf8_lossy(&bytes))
}

/// `"Open MPI v4.1.4, package: ..."` -> `"Open MPI v4.1.4"`; `"MPICH Version:\t4.0.2\n..."`
/// -> `"MPICH Version: 4.0.2"`.
pub fn short_version(full: &str) -> String {
    let first = full.lines().next().unwrap_or("");
    let head = first.split(',').next().unwrap_or("");
    head.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Which MPI runs (`openmpi`, `mpich`, `openmpi5`, `mpich5`, `impi`, `other-...`: the
/// library's [`pcoll::mpi::Mpi`] name, `PCOLL_MPI` included). MPI must be initialised.
pub fn mpi_name() -> &'static str {
    pcoll_mpi::state::global().mpi.name()
}

/// Which ABI this binary is built against (`openmpi` / `mpich`).
pub fn abi_name() -> &'static str {
    consts::MPI_NAME
}

#[cfg(test)]
mod tests {
    #[test]
    fn versions() {
        assert_eq!(
            super::short_version("Open MPI v4.1.4, package: Debian OpenMPI, ident: 4.1.4"),
            "Open MPI v4.1.4"
        );
        assert_eq!(
            super::short_version("MPICH Version:\t4.0.2\nMPICH Release date: ..."),
            "MPICH Version: 4.0.2"
        );
    }
}
