//! Process-wide state: configuration (environment, read once), the tuning table, run-time
//! overrides from the C API, statistics, and the logger.

use crate::consts;
use mpi_sys::*;
use once_cell::sync::{Lazy, OnceCell};
use pcoll::config::Config;
use pcoll::tuning::Table;
use pcoll::{Algorithm, Collective};
use std::io::Write;
use std::os::raw::{c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};

pub struct Global {
    pub cfg: Config,
    pub table: Table,
    pub world_rank: usize,
}

static GLOBAL: OnceCell<Global> = OnceCell::new();

/// `PCOLL_DISABLE=1`, read without initialising anything else (pure passthrough).
pub fn disabled() -> bool {
    static D: Lazy<bool> = Lazy::new(|| {
        matches!(
            std::env::var("PCOLL_DISABLE").as_deref(),
            Ok("1") | Ok("true") | Ok("yes")
        )
    });
    *D
}

fn world_rank() -> usize {
    let mut r: c_int = 0;
    // SAFETY: out-pointer; MPI is initialised (we are inside a collective call).
    unsafe { PMPI_Comm_rank(consts::comm_world(), &mut r) };
    r as usize
}

/// The global state, created at the first intercepted call (after `MPI_Init`).
pub fn global() -> &'static Global {
    GLOBAL.get_or_init(|| {
        let world_rank = world_rank();
        let (cfg, mut warnings) = Config::from_env();
        init_logger(world_rank, cfg.log.as_deref());
        let (table, w2) = cfg.load_table_or(builtin_table());
        warnings.extend(w2);
        for w in &warnings {
            // Configuration mistakes are always shown (once per process, from rank 0 only
            // to keep the output readable), whatever the log level.
            if world_rank == 0 {
                eprintln!("pcoll: warning: {w}");
            } else {
                log::debug!("{w}");
            }
        }
        log::debug!("configuration: {cfg:?}");
        install_finalize_hook();
        crate::gate::publish(&cfg, &table, forced);
        Global {
            cfg,
            table,
            world_rank,
        }
    })
}

/// The table embedded for the MPI this library is built against (`tuning.toml` for Open MPI,
/// `tuning.mpich.toml` for MPICH: the two MPIs' native collectives win at different sizes).
pub fn builtin_table() -> Table {
    #[cfg(pcoll_mpich)]
    const TEXT: &str = include_str!("../../tuning.mpich.toml");
    #[cfg(not(pcoll_mpich))]
    const TEXT: &str = pcoll::tuning::BUILTIN_TOML;
    Table::parse(TEXT, "built-in table").unwrap_or_else(|e| {
        eprintln!("pcoll: warning: built-in table invalid ({e}); using the core default");
        Table::builtin()
    })
}

fn init_logger(rank: usize, filter: Option<&str>) {
    let mut b = env_logger::Builder::new();
    b.parse_filters(filter.unwrap_or("warn"));
    b.format(move |buf, rec| {
        // One write per line so that lines of several ranks do not interleave mid-line.
        let line = format!("pcoll[{rank}] {}: {}\n", rec.level(), rec.args());
        buf.write_all(line.as_bytes())
    });
    b.target(env_logger::Target::Stderr);
    let _ = b.try_init();
}

// ---------------------------------------------------------------- run-time overrides

const NONE: u8 = u8::MAX;
static FORCED: [AtomicU8; 4] = [
    AtomicU8::new(NONE),
    AtomicU8::new(NONE),
    AtomicU8::new(NONE),
    AtomicU8::new(NONE),
];

/// Force `alg` for `coll` from now on (`None`: back to env/table). Every rank must do the same.
pub fn force(coll: Collective, alg: Option<Algorithm>) {
    let v = alg.map_or(NONE, |a| {
        Algorithm::ALL.iter().position(|x| *x == a).unwrap() as u8
    });
    let old = FORCED[coll.index()].swap(v, Ordering::Relaxed);
    if old != v {
        if let Some(g) = GLOBAL.get() {
            crate::gate::republish(&g.cfg, &g.table, coll, alg);
        }
    }
}

pub fn forced(coll: Collective) -> Option<Algorithm> {
    let v = FORCED[coll.index()].load(Ordering::Relaxed);
    (v != NONE).then(|| Algorithm::ALL[v as usize])
}

/// Run-time segment size in bytes (0: none, back to `PCOLL_SEGMENT`, the table and the model).
static SEGMENT: AtomicUsize = AtomicUsize::new(0);

/// Set the segment size of segmented algorithms from now on (`None`: back to
/// `PCOLL_SEGMENT` > the rule's segment > the cost model). Every rank must do the same.
pub fn set_segment(bytes: Option<usize>) {
    SEGMENT.store(bytes.unwrap_or(0), Ordering::Relaxed);
}

pub fn segment() -> Option<usize> {
    let v = SEGMENT.load(Ordering::Relaxed);
    (v != 0).then_some(v)
}

// ---------------------------------------------------------------- statistics

#[derive(Clone, Copy, Default, Debug)]
pub struct Stat {
    pub calls: u64,
    pub bytes: u64,
    pub time_us: f64,
}

/// One counter cell per (collective, algorithm). Time is kept in nanoseconds.
struct Cell {
    calls: AtomicU64,
    bytes: AtomicU64,
    time_ns: AtomicU64,
}

#[allow(clippy::declare_interior_mutable_const)]
const CELL: Cell = Cell {
    calls: AtomicU64::new(0),
    bytes: AtomicU64::new(0),
    time_ns: AtomicU64::new(0),
};
#[allow(clippy::declare_interior_mutable_const)]
const ROW: [Cell; 8] = [CELL, CELL, CELL, CELL, CELL, CELL, CELL, CELL];
type Cells = [[Cell; 8]; 4];

/// Every thread that ever recorded a call owns one set of cells (taken from `FREE` when a
/// thread that had one exits, else leaked once): only its owner writes a set, with a plain
/// relaxed load and store (no locked read-modify-write on the hot path, which cost ~8 ns of
/// pcoll's ~25 ns per native call); readers sum over all sets.
static SETS: parking_lot::Mutex<Vec<&'static Cells>> = parking_lot::Mutex::new(Vec::new());
static FREE: parking_lot::Mutex<Vec<&'static Cells>> = parking_lot::Mutex::new(Vec::new());

struct Owner(&'static Cells);

impl Drop for Owner {
    fn drop(&mut self) {
        FREE.lock().push(self.0);
    }
}

thread_local! {
    static MINE: Owner = Owner(FREE.lock().pop().unwrap_or_else(|| {
        let c: &'static Cells = Box::leak(Box::new([ROW, ROW, ROW, ROW]));
        SETS.lock().push(c);
        c
    }));
}

fn bump(a: &AtomicU64, by: u64) {
    a.store(
        a.load(Ordering::Relaxed).wrapping_add(by),
        Ordering::Relaxed,
    );
}

/// The algorithm of the last call per collective (for tests and the C API).
static LAST: [AtomicU8; 4] = [
    AtomicU8::new(NONE),
    AtomicU8::new(NONE),
    AtomicU8::new(NONE),
    AtomicU8::new(NONE),
];

fn alg_index(alg: Algorithm) -> usize {
    alg as usize
}

/// Count one call (`secs` is 0 unless `PCOLL_STATS=1`).
pub fn record(coll: Collective, alg: Algorithm, bytes: usize, secs: f64) {
    let ai = alg_index(alg);
    let counted = MINE.try_with(|m| {
        let c = &m.0[coll.index()][ai];
        bump(&c.calls, 1);
        bump(&c.bytes, bytes as u64);
        if secs > 0.0 {
            bump(&c.time_ns, (secs * 1e9) as u64);
        }
    });
    if counted.is_err() {
        // A collective from a thread-local destructor after MINE is gone: count it in a set
        // of its own.
        let c: &'static Cells = Box::leak(Box::new([ROW, ROW, ROW, ROW]));
        let cell = &c[coll.index()][ai];
        bump(&cell.calls, 1);
        bump(&cell.bytes, bytes as u64);
        bump(&cell.time_ns, (secs.max(0.0) * 1e9) as u64);
        SETS.lock().push(c);
    }
    LAST[coll.index()].store(ai as u8, Ordering::Relaxed);
    crate::gate::last_hit(coll, true);
}

/// A snapshot of one counter, summed over all threads.
pub fn stat(coll: Collective, alg: Algorithm) -> Stat {
    let (ci, ai) = (coll.index(), alg_index(alg));
    let mut st = Stat::default();
    let mut ns = 0u64;
    for set in SETS.lock().iter() {
        let c = &set[ci][ai];
        st.calls += c.calls.load(Ordering::Relaxed);
        st.bytes += c.bytes.load(Ordering::Relaxed);
        ns += c.time_ns.load(Ordering::Relaxed);
    }
    st.time_us = ns as f64 / 1e3;
    if alg == Algorithm::Native {
        let (calls, bytes) = crate::gate::counts(coll);
        st.calls += calls;
        st.bytes += bytes;
    }
    st
}

/// Zero every counter (racy against calls running concurrently on other threads, as any
/// reset is).
pub fn reset_stats() {
    crate::gate::reset();
    for set in SETS.lock().iter() {
        for row in set.iter() {
            for c in row {
                c.calls.store(0, Ordering::Relaxed);
                c.bytes.store(0, Ordering::Relaxed);
                c.time_ns.store(0, Ordering::Relaxed);
            }
        }
    }
}

pub fn last(coll: Collective) -> Option<Algorithm> {
    if crate::gate::last_hit(coll, false) {
        return Some(Algorithm::Native);
    }
    let v = LAST[coll.index()].load(Ordering::Relaxed);
    (v != NONE).then(|| Algorithm::ALL[v as usize])
}

/// The stats report: one line per collective and algorithm that ran.
pub fn report() -> String {
    let mut out = String::new();
    for coll in Collective::ALL {
        for alg in Algorithm::ALL.iter() {
            let c = stat(coll, *alg);
            if c.calls > 0 {
                out.push_str(&format!(
                    "pcoll: stats {} {} calls={} bytes={} time_us={:.3}\n",
                    coll.name(),
                    alg.name(),
                    c.calls,
                    c.bytes,
                    c.time_us
                ));
            }
        }
    }
    out
}

static REPORTED: AtomicBool = AtomicBool::new(false);

/// Print the stats report (rank 0 of MPI_COMM_WORLD, `PCOLL_STATS=1`), once.
pub fn finalize_report() {
    let Some(g) = GLOBAL.get() else { return };
    if REPORTED.swap(true, Ordering::SeqCst) {
        return;
    }
    if g.cfg.stats && g.world_rank == 0 {
        let r = report();
        let _ = std::io::stderr().write_all(r.as_bytes());
        let _ = std::io::stderr().flush();
    }
}

unsafe extern "C" fn on_self_delete(
    _c: MPI_Comm,
    _k: c_int,
    _a: *mut c_void,
    _e: *mut c_void,
) -> c_int {
    let _ = std::panic::catch_unwind(finalize_report);
    consts::SUCCESS()
}

/// `MPI_Finalize` deletes the attributes of `MPI_COMM_SELF` first, from every language
/// binding (Open MPI's Fortran `MPI_FINALIZE` calls `PMPI_Finalize` directly), so the report
/// hangs off an attribute there.
pub fn install_finalize_hook() {
    static DONE: AtomicBool = AtomicBool::new(false);
    if DONE.swap(true, Ordering::SeqCst) {
        return;
    }
    let mut kv: c_int = consts::KEYVAL_INVALID();
    // SAFETY: registers a delete callback and sets an attribute with a dummy value.
    unsafe {
        if PMPI_Comm_create_keyval(
            consts::comm_null_copy_fn(),
            Some(on_self_delete),
            &mut kv,
            std::ptr::null_mut(),
        ) == consts::SUCCESS()
        {
            PMPI_Comm_set_attr(consts::comm_self(), kv, std::ptr::null_mut());
        }
    }
}
