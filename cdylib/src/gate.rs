//! The native gate (`shim/pcoll_gate.c`): the C entry points of the four collectives ask it
//! first, and it forwards a call to the MPI's own collective without entering the Rust code
//! when the decision is `native` for the call's (collective, p, bytes) and the arguments are
//! plain. This module publishes the decision it needs — for each collective and p up to
//! [`GATE_P`], the byte ranges that go native ([`pcoll::tuning::Table::native_ranges`]) —
//! and adds the gate's counts to pcoll's stats. The gate stays closed (every call takes the
//! Rust path) with `PCOLL_DISABLE=1` (the Rust path is a plain forward then), with
//! `PCOLL_STATS=1` (timing is done there) and with debug logging (`PCOLL_LOG=debug` shows
//! every decision, native ones included).

use mpi_sys::{MPI_Comm, MPI_Datatype, MPI_Op};
use pcoll::config::Config;
use pcoll::tuning::Table;
use pcoll::{Algorithm, Collective};
use std::os::raw::{c_int, c_uchar, c_ulonglong, c_void};
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};

/// Largest communicator the gate serves (`PCOLL_GATE_P` in the C file).
pub const GATE_P: usize = 64;
/// Ranges per (collective, p) the gate holds (`PCOLL_GATE_R`); a cell with more declines.
const GATE_R: usize = 8;
/// What a gate function returns when it did not make the call (`PCOLL_GATE_DECLINED`).
pub const DECLINED: c_int = -0x7ffe1234;

extern "C" {
    fn pcoll_gate_close();
    fn pcoll_gate_open();
    fn pcoll_gate_set(
        coll: c_int,
        p: c_int,
        n: c_int,
        lo: *const c_ulonglong,
        hi: *const c_ulonglong,
    );
    pub fn pcoll_gate_reduce(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        count: c_int,
        dt: MPI_Datatype,
        op: MPI_Op,
        root: c_int,
        comm: MPI_Comm,
    ) -> c_int;
    pub fn pcoll_gate_allreduce(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        count: c_int,
        dt: MPI_Datatype,
        op: MPI_Op,
        comm: MPI_Comm,
    ) -> c_int;
    pub fn pcoll_gate_reduce_scatter(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        recvcounts: *const c_int,
        dt: MPI_Datatype,
        op: MPI_Op,
        comm: MPI_Comm,
    ) -> c_int;
    #[allow(clippy::too_many_arguments)]
    pub fn pcoll_gate_allgatherv(
        sendbuf: *const c_void,
        sendcount: c_int,
        sendtype: MPI_Datatype,
        recvbuf: *mut c_void,
        recvcounts: *const c_int,
        displs: *const c_int,
        recvtype: MPI_Datatype,
        comm: MPI_Comm,
    ) -> c_int;
    static mut pcoll_gate_calls: [c_ulonglong; 4];
    static mut pcoll_gate_bytes: [c_ulonglong; 4];
    static mut pcoll_gate_hit: [c_uchar; 4];
}

/// (Re)publish the gate's table from the configuration, the table and the run-time forced
/// algorithms (`forced(coll)`), and open it (unless disabled or timing stats are on).
pub fn publish(cfg: &Config, table: &Table, forced: impl Fn(Collective) -> Option<Algorithm>) {
    // SAFETY: plain C calls on the gate's own static table; closed while it is rewritten.
    unsafe { pcoll_gate_close() };
    if !wanted(cfg) {
        return;
    }
    for coll in Collective::ALL {
        set_cells(cfg, table, coll, forced(coll));
    }
    // SAFETY: as above.
    unsafe { pcoll_gate_open() };
}

/// Republish one collective's cells after its run-time forced algorithm changed.
pub fn republish(cfg: &Config, table: &Table, coll: Collective, forced: Option<Algorithm>) {
    if !wanted(cfg) {
        return;
    }
    // SAFETY: as in `publish`.
    unsafe { pcoll_gate_close() };
    set_cells(cfg, table, coll, forced);
    // SAFETY: as in `publish`.
    unsafe { pcoll_gate_open() };
}

/// The gate opens unless the Rust path must see every call.
fn wanted(cfg: &Config) -> bool {
    !(cfg.disable || cfg.stats || log::max_level() >= log::LevelFilter::Debug)
}

fn set_cells(cfg: &Config, table: &Table, coll: Collective, forced: Option<Algorithm>) {
    let force = forced.or(cfg.forced(coll));
    for p in 1..=GATE_P {
        let r = table.native_ranges(coll, p, force);
        let n = if r.len() > GATE_R { 0 } else { r.len() };
        let mut lo = [0 as c_ulonglong; GATE_R];
        let mut hi = [0 as c_ulonglong; GATE_R];
        for (k, x) in r.iter().take(n).enumerate() {
            (lo[k], hi[k]) = (x.0 as c_ulonglong, x.1 as c_ulonglong);
        }
        // SAFETY: `lo`/`hi` hold GATE_R >= n values; the C side copies them.
        unsafe {
            pcoll_gate_set(
                coll.index() as c_int,
                p as c_int,
                n as c_int,
                lo.as_ptr(),
                hi.as_ptr(),
            )
        };
    }
}

/// The gate's counters as atomics (the C side updates them with `__atomic` builtins).
fn cell(a: *mut c_ulonglong) -> &'static AtomicU64 {
    // SAFETY: a C global of 8 aligned bytes, alive for the process, only accessed atomically.
    unsafe { &*(a as *const AtomicU64) }
}

/// Calls and bytes the gate forwarded for `coll`.
pub fn counts(coll: Collective) -> (u64, u64) {
    let i = coll.index();
    // SAFETY: addresses of elements of the C arrays (no reference to the `static mut`).
    let (c, b) = unsafe {
        (
            std::ptr::addr_of_mut!(pcoll_gate_calls[i]),
            std::ptr::addr_of_mut!(pcoll_gate_bytes[i]),
        )
    };
    (
        cell(c).load(Ordering::Relaxed),
        cell(b).load(Ordering::Relaxed),
    )
}

/// Zero the gate's counts.
pub fn reset() {
    for i in 0..4 {
        // SAFETY: as in `counts`.
        let (c, b) = unsafe {
            (
                std::ptr::addr_of_mut!(pcoll_gate_calls[i]),
                std::ptr::addr_of_mut!(pcoll_gate_bytes[i]),
            )
        };
        cell(c).store(0, Ordering::Relaxed);
        cell(b).store(0, Ordering::Relaxed);
    }
}

/// Whether the last call of `coll` went through the gate; `clear`: the Rust path is recording
/// a call, which is now the last.
pub fn last_hit(coll: Collective, clear: bool) -> bool {
    // SAFETY: address of a byte of the C array, accessed atomically on both sides.
    let f = unsafe { &*(std::ptr::addr_of_mut!(pcoll_gate_hit[coll.index()]) as *const AtomicU8) };
    if clear {
        f.store(0, Ordering::Relaxed);
        false
    } else {
        f.load(Ordering::Relaxed) != 0
    }
}
