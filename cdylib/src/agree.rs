//! One decision on every rank (issue 29): at `MPI_Init` / `MPI_Init_thread` (`ffi/init.rs`),
//! where every rank of `MPI_COMM_WORLD` is, each rank reads its decision inputs (the tuning
//! table's bytes, the steering `PCOLL_*` variables, `MPI_Get_library_version`), one
//! `PMPI_Allreduce` of their digests on `MPI_COMM_WORLD` tells every rank whether they are
//! alike; when they are not, a `PMPI_Allgather` of the digests shows every rank the same facts,
//! and rank 0's inputs are broadcast and every rank decides from them; rank 0
//! prints one warning naming what differs on which ranks (`pcoll::agree`, the pure part).
//! This runs before the first collective, so before the native gate opens.
//!
//! Without `MPI_Init` seen (an MPI initialised some other way), the inputs cannot be compared
//! safely (the first collective may be on a communicator that not every rank calls), so
//! every rank drops its steering settings but `PCOLL_DISABLE`: the built-in table, nothing
//! forced, with one warning on rank 0 when something was dropped.

use crate::consts;
use mpi_sys::*;
use once_cell::sync::OnceCell;
use pcoll::agree::TableRead;
use pcoll::agree::{compare, warning, Inputs};
use pcoll::config::Config;
use pcoll::tuning::Table;
use std::os::raw::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicBool, Ordering};

/// The inputs every rank decides from, settled at `MPI_Init`.
static SETTLED: OnceCell<Inputs> = OnceCell::new();
/// `PCOLL_TUNING` differed and rank 0's warning said so (with why rank 0 cannot read it).
static TUNING_NAMED: AtomicBool = AtomicBool::new(false);

fn env_get(k: &str) -> Option<String> {
    std::env::var_os(k).map(|v| v.to_string_lossy().into_owned())
}

fn read_local() -> Inputs {
    Inputs::read(&env_get, &pcoll::agree::read_table, &library_version())
}

/// `MPI_Get_library_version` (empty if it fails).
pub fn library_version() -> String {
    // MPICH's MPI_MAX_LIBRARY_VERSION_STRING is 8192, Open MPI's 256.
    let mut buf = vec![0u8; 8192 + 1];
    let mut len: c_int = 0;
    // SAFETY: the buffer holds MPI_MAX_LIBRARY_VERSION_STRING bytes of either MPI.
    let rc = unsafe { PMPI_Get_library_version(buf.as_mut_ptr() as *mut c_char, &mut len) };
    if rc != consts::SUCCESS() {
        return String::new();
    }
    let n = (len.max(0) as usize).min(buf.len());
    let end = buf[..n].iter().position(|&b| b == 0).unwrap_or(n);
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// Called by the `MPI_Init` exports once `PMPI_Init(_thread)` succeeded: collective over
/// `MPI_COMM_WORLD` (one allreduce; an allgather and a broadcast more when the inputs differ).
pub fn at_init() {
    if SETTLED.get().is_some() {
        return;
    }
    let inputs = exchange(read_local());
    let _ = SETTLED.set(inputs);
    if !crate::state::disabled() {
        crate::foreign::at_init();
        let (_, size) = world();
        let mode = crate::state::global().cfg.nodes;
        crate::nodes::at_init(mode, size.max(1) as usize);
    }
    crate::learn::at_init();
}

fn world() -> (c_int, c_int) {
    let (mut rank, mut size) = (0, 1);
    // SAFETY: out-pointers to locals; MPI is initialised.
    unsafe {
        PMPI_Comm_rank(consts::comm_world(), &mut rank);
        PMPI_Comm_size(consts::comm_world(), &mut size);
    }
    (rank, size)
}

fn exchange(local: Inputs) -> Inputs {
    let (rank, size) = world();
    let mine = local.digest();
    // Alike everywhere (the usual case): one allreduce, O(log p) steps of a few hundred bytes;
    // the allgather of every rank's digests (O(p) bytes per rank), which names who differs in
    // what, only when they are not.
    if alike(&mine) == Some(true) {
        return local;
    }
    let Some(all) = crate::nodes::allgather_u64(consts::comm_world(), size.max(1) as usize, &mine)
    else {
        return local;
    };
    let diffs = compare(&all);
    if diffs.is_empty() {
        return local;
    }
    let r0 = bcast_from_rank0(&local, rank);
    let named = diffs.iter().any(|d| d.component == "PCOLL_TUNING");
    TUNING_NAMED.store(named, Ordering::Relaxed);
    if rank == 0 {
        crate::state::say(format_args!("pcoll: warning: {}", warning(&diffs, &r0)));
    }
    r0
}

/// Whether `mine` holds on any rank of `MPI_COMM_WORLD`: one `PMPI_Allreduce` on it, made
/// at `MPI_Init` where every rank calls it; `None` when the MPI refuses the call.
pub fn on_any_rank(mine: bool) -> Option<bool> {
    let mine = mine as c_int;
    let mut any: c_int = 0;
    // SAFETY: one int each way on MPI_COMM_WORLD, collective as MPI_Init is.
    let rc = unsafe {
        PMPI_Allreduce(
            &mine as *const c_int as *const c_void,
            &mut any as *mut c_int as *mut c_void,
            1,
            consts::dt_int(),
            consts::op_max(),
            consts::comm_world(),
        )
    };
    (rc == consts::SUCCESS()).then_some(any != 0)
}

/// Whether every rank of `MPI_COMM_WORLD` holds `mine`: the maximum over the ranks of each
/// component and of its complement (so its minimum) are this rank's own, which gives every
/// rank the same answer; `None` when the MPI refuses the call.
fn alike(mine: &[u64]) -> Option<bool> {
    let both: Vec<u64> = mine
        .iter()
        .copied()
        .chain(mine.iter().map(|d| !d))
        .collect();
    let mut max = vec![0u64; both.len()];
    // SAFETY: both.len() u64 in and out, on MPI_COMM_WORLD, where every rank calls it.
    let rc = unsafe {
        PMPI_Allreduce(
            both.as_ptr() as *const c_void,
            max.as_mut_ptr() as *mut c_void,
            both.len() as c_int,
            consts::dt_uint64(),
            consts::op_max(),
            consts::comm_world(),
        )
    };
    (rc == consts::SUCCESS()).then(|| max == both)
}

/// Rank 0's inputs on every rank (its encoding's length, then the bytes).
fn bcast_from_rank0(local: &Inputs, rank: c_int) -> Inputs {
    let mut bytes = if rank == 0 {
        local.encode()
    } else {
        Vec::new()
    };
    let mut len = bytes.len() as u64;
    // SAFETY: one u64, then `len` bytes into a buffer of that size, on MPI_COMM_WORLD.
    unsafe {
        PMPI_Bcast(
            &mut len as *mut u64 as *mut c_void,
            1,
            consts::dt_uint64(),
            0,
            consts::comm_world(),
        );
        bytes.resize(len as usize, 0);
        PMPI_Bcast(
            bytes.as_mut_ptr() as *mut c_void,
            len as c_int,
            consts::dt_byte(),
            0,
            consts::comm_world(),
        );
    }
    // The bytes come from the same code on rank 0; should they not decode, no setting is
    // used on this rank (as without MPI_Init seen).
    Inputs::decode(&bytes).unwrap_or_else(|| local.without_settings().0)
}

/// A variable as settled: a steering one from the settled inputs, any other from this
/// process's environment.
pub fn var(name: &str) -> Option<String> {
    match SETTLED.get().and_then(|i| i.var(name)) {
        Some(v) => v,
        None => env_get(name),
    }
}

/// The configuration, the table and the warnings (rank 0 prints them) every rank decides
/// from: the settled inputs, or, without `MPI_Init` seen, this rank's without its steering
/// settings. `builtin` gives the built-in table for the agreed configuration (`PCOLL_MPI`).
pub fn settings(builtin: &dyn Fn(&Config) -> Table) -> (Config, Table, Vec<String>) {
    let mut warns = Vec::new();
    let inputs = match SETTLED.get() {
        Some(i) => i.clone(),
        None => {
            let (i, dropped) = read_local().without_settings();
            if !dropped.is_empty() {
                warns.push(format!(
                    "MPI_Init was not seen by pcoll (the MPI was started past it: by PMPI_Init, or by Intel MPI's first MPI-4 session), so the settings could not be compared across ranks: {} ignored (every rank uses the built-in table, nothing forced)",
                    dropped.join(", ")
                ));
            }
            i
        }
    };
    let lookup = |k: &str| match inputs.var(k) {
        Some(v) => v,
        None => env_get(k),
    };
    let (cfg, w) = Config::from_lookup(&lookup);
    warns.extend(w);
    let (table, w) = cfg.table_from(&inputs.table, builtin(&cfg));
    // Rank 0's unreadable table was named in the warning at MPI_Init already: one warning.
    let said =
        TUNING_NAMED.load(Ordering::Relaxed) && matches!(inputs.table, TableRead::Unreadable(_));
    if !said {
        warns.extend(w);
    }
    (cfg, table, warns)
}
