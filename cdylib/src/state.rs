//! Process-wide state: configuration (environment, read once), the tuning table, run-time
//! overrides from the C API, statistics, and the logger.

use crate::consts;
use mpi_sys::*;
use once_cell::sync::{Lazy, OnceCell};
use pcoll::config::Config;
use pcoll::decide::{Memo, Overrides, Resolver};
use pcoll::mpi::{Abi, Mpi};
use pcoll::tuning::Table;
use pcoll::{Algorithm, Collective, Pick};
use std::io::Write;
use std::os::raw::{c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};

pub struct Global {
    pub cfg: Config,
    pub table: Table,
    pub world_rank: usize,
    /// The MPI that runs (`PCOLL_MPI`, else [`running`]): whose built-in table is used,
    /// whose native collectives the model prices, whose defects are avoided.
    pub mpi: Mpi,
    /// Some rule of the table races (`race = true`) and racing is on (`PCOLL_RACE`).
    pub races: bool,
}

static GLOBAL: OnceCell<Global> = OnceCell::new();

/// The ABI this library is compiled for.
pub const ABI: Abi = if cfg!(pcoll_mpich) {
    Abi::Mpich
} else {
    Abi::OpenMpi
};

/// The MPI implementation that runs, and the first line of its `MPI_Get_library_version`
/// (asked once; the standard allows the call before `MPI_Init`).
pub fn running() -> (Mpi, &'static str) {
    static R: OnceCell<(Mpi, String)> = OnceCell::new();
    let r = R.get_or_init(|| {
        let v = crate::agree::library_version();
        (
            Mpi::detect(&v, ABI),
            v.lines().next().unwrap_or("").trim().to_string(),
        )
    });
    (r.0, &r.1)
}

/// `PCOLL_DISABLE=1`, read without initialising anything else (pure passthrough); the same
/// parser as the configuration's.
pub fn disabled() -> bool {
    static D: Lazy<bool> = Lazy::new(|| {
        crate::agree::var("PCOLL_DISABLE")
            .and_then(|v| pcoll::config::parse_bool(&v))
            .unwrap_or(false)
    });
    *D
}

/// pcoll's `MPI_Init` exports saw the world model start (set before its settings are agreed).
static INIT_SEEN: AtomicBool = AtomicBool::new(false);
/// pcoll's `MPI_Finalize` returned: the world model has ended.
static WORLD_ENDED: AtomicBool = AtomicBool::new(false);

pub fn init_seen() {
    INIT_SEEN.store(true, Ordering::Release);
}

pub fn world_ended() {
    WORLD_ENDED.store(true, Ordering::Release);
}

/// Whether the world model is initialised: `MPI_COMM_WORLD` and `MPI_COMM_SELF` exist. Not in
/// an MPI-4 sessions program (`MPI_Session_init`, communicators from
/// `MPI_Comm_create_from_group`) that never called `MPI_Init`, nor after `MPI_Finalize` (a
/// session may outlive it). pcoll needs both (its settings are agreed over the world, its
/// windows are freed from a hook on `MPI_COMM_SELF`), so there it forwards every call to the
/// MPI; once `MPI_Init` comes it serves every communicator, the sessions' ones too.
/// `MPI_Initialized` is asked only when pcoll's own `MPI_Init` was not seen (a library loaded
/// after it).
pub fn world_model() -> bool {
    if WORLD_ENDED.load(Ordering::Acquire) {
        return false;
    }
    if INIT_SEEN.load(Ordering::Acquire) {
        return true;
    }
    let (mut init, mut fin): (c_int, c_int) = (0, 0);
    // SAFETY: out-pointers to locals; both calls are allowed at any time.
    unsafe {
        PMPI_Initialized(&mut init);
        PMPI_Finalized(&mut fin);
    }
    init != 0 && fin == 0
}

/// pcoll stays out of a call: `PCOLL_DISABLE=1`, or no world model ([`world_model`]).
pub fn bypassed() -> bool {
    disabled() || !world_model()
}

/// This process's rank in `MPI_COMM_WORLD` (MPI is initialised).
pub fn world_rank() -> usize {
    let mut r: c_int = 0;
    // SAFETY: out-pointer; MPI is initialised (we are inside a collective call or MPI_Init).
    unsafe { PMPI_Comm_rank(consts::comm_world(), &mut r) };
    r as usize
}

/// The global state, created at the first intercepted call (after `MPI_Init`).
/// At `MPI_Init`, once the settings are agreed: the global state (the table parsed, the MPI
/// named) and the native gate's cells of every collective for `MPI_COMM_WORLD`'s size, which
/// each collective's first call otherwise pays for (all seven 5-10 ms, session 16: an IMB-NBC
/// run at p = 2 read it as +3 µs a call at its first size, 4 KiB; by callgrind, MPICH 5 at
/// p = 2: 58 M instructions before session 55, 23 M since).
pub fn prepare() {
    let g = global();
    let mut size: std::os::raw::c_int = 1;
    // SAFETY: out-pointer to a local; MPI is initialised.
    unsafe { mpi_sys::PMPI_Comm_size(crate::consts::comm_world(), &mut size) };
    for coll in pcoll::Collective::ALL {
        crate::gate::ensure(g, coll, size.max(1) as usize);
    }
}

pub fn global() -> &'static Global {
    GLOBAL.get_or_init(|| {
        let world_rank = world_rank();
        // Settled across ranks at MPI_Init (agree.rs): the same on every rank.
        let (cfg, table, mut warnings) =
            crate::agree::settings(&|c| Table::builtin_for(choose_mpi(c).0));
        init_logger(world_rank, cfg.log.as_deref());
        let (mpi, mpi_warnings) = choose_mpi(&cfg);
        warnings.extend(mpi_warnings);
        // A `PCOLL_` name the library does not read (a misspelling), from this rank's own
        // environment: a warning only, nothing decides by it.
        let names: Vec<String> = std::env::vars_os()
            .filter_map(|(k, _)| k.into_string().ok())
            .collect();
        warnings.extend(pcoll::envvars::unknown(names.iter().map(String::as_str)));
        log::info!(
            "running {} ({}; {}), table: {}",
            mpi.describe(),
            running().1,
            if cfg.mpi.is_some() {
                "PCOLL_MPI"
            } else {
                "MPI_Get_library_version"
            },
            table.origin()
        );
        for w in &warnings {
            // Configuration mistakes are always shown (once per process, from rank 0 only
            // to keep the output readable), whatever the log level.
            if world_rank == 0 {
                say(format_args!("pcoll: warning: {w}"));
            } else {
                log::debug!("{w}");
            }
        }
        log::debug!("configuration: {cfg:?}");
        install_finalize_hook();
        crate::gate::open(&cfg, mpi, &table);
        let races = !cfg.race_off && !cfg.disable && table.races();
        Global {
            cfg,
            table,
            world_rank,
            mpi,
            races,
        }
    })
}

/// The global state if it was made (no MPI call).
pub fn try_global() -> Option<&'static Global> {
    GLOBAL.get()
}

/// The table embedded for the MPI that runs.
pub fn builtin_table() -> Table {
    Table::builtin_for(global().mpi)
}

/// The MPI whose table, model and defaults apply: `PCOLL_MPI` (of this library's ABI), else
/// the one that runs; with a warning for an override of the wrong ABI or an unmeasured MPI.
fn choose_mpi(cfg: &Config) -> (Mpi, Vec<String>) {
    let (detected, version) = running();
    let mut warnings = Vec::new();
    let mpi = match cfg.mpi {
        Some(m) if m.abi() != ABI => {
            warnings.push(format!(
                "PCOLL_MPI={m} ignored: this library is built for the {} ABI; using {detected}",
                ABI.name()
            ));
            detected
        }
        Some(m) => m,
        None => detected,
    };
    if let Mpi::Other(_) = mpi {
        warnings.push(format!(
            "{version:?} is not an MPI pcoll has measured (Open MPI 4.1/5.0, MPICH 4.0/5.0, Intel MPI 2021): no table rules; the cost model decides, pricing native as the best textbook algorithm, with a margin of {:.0}% (PCOLL_MPI names a measured one to use its table)",
            100.0 * Table::builtin_for(mpi).margin()
        ));
    }
    (mpi, warnings)
}

/// The resolver of one call on a communicator of `p` ranks: this process's configuration,
/// table, run-time overrides, and the model memo for `p`.
pub fn resolver(g: &'static Global, coll: Collective, p: usize) -> Resolver<'static> {
    Resolver::new(&g.cfg, &g.table, g.mpi)
        .with_overrides(Overrides {
            algorithm: forced(coll),
            segment: segment(),
        })
        .with_memo(Some(memo(p)))
        .with_crowded(crate::nodes::crowded())
}

/// Model memos of small communicator sizes, by p (no lock on the hot path).
static SMALL_MEMOS: [OnceCell<Memo>; 129] = [const { OnceCell::new() }; 129];
/// Memos of larger communicator sizes (one per size seen, kept for the process).
static BIG_MEMOS: parking_lot::RwLock<Vec<(usize, &'static Memo)>> =
    parking_lot::RwLock::new(Vec::new());

/// The model memo for communicators of `p` ranks.
pub fn memo(p: usize) -> &'static Memo {
    if let Some(cell) = SMALL_MEMOS.get(p) {
        return cell.get_or_init(|| Memo::new(p));
    }
    if let Some(m) = BIG_MEMOS.read().iter().find(|e| e.0 == p) {
        return m.1;
    }
    let mut w = BIG_MEMOS.write();
    if let Some(m) = w.iter().find(|e| e.0 == p) {
        return m.1;
    }
    let m: &'static Memo = Box::leak(Box::new(Memo::new(p)));
    w.push((p, m));
    m
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
static FORCED: [AtomicU8; NCOLL] = [const { AtomicU8::new(NONE) }; NCOLL];

/// `model` in [`FORCED`].
const MODEL: u8 = u8::MAX - 1;

/// Force `pick` for `coll` from now on (`None`: back to env/table). Every rank must do the same.
pub fn force(coll: Collective, pick: Option<Pick>) {
    let v = match pick {
        None => NONE,
        Some(Pick::Model) => MODEL,
        Some(Pick::Alg(a)) => a.index() as u8,
    };
    FORCED[coll.index()].store(v, Ordering::Relaxed);
    crate::dispatch::forget_served();
    crate::gate::set_forced(coll, pick);
}

pub fn forced(coll: Collective) -> Option<Pick> {
    match FORCED[coll.index()].load(Ordering::Relaxed) {
        NONE => None,
        MODEL => Some(Pick::Model),
        v => Some(Pick::Alg(Algorithm::ALL[v as usize])),
    }
}

/// Run-time segment size in bytes (0: none, back to `PCOLL_SEGMENT`, the table and the model).
static SEGMENT: AtomicUsize = AtomicUsize::new(0);

/// Set the segment size of segmented algorithms from now on (`None`: back to
/// `PCOLL_SEGMENT` > the rule's segment > the cost model). Every rank must do the same.
pub fn set_segment(bytes: Option<usize>) {
    SEGMENT.store(bytes.unwrap_or(0), Ordering::Relaxed);
    crate::dispatch::forget_served();
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
const ROW: [Cell; NALG] = [CELL; NALG];
type Cells = [[Cell; NALG]; NCOLL];
/// Algorithms and collectives (array sizes of the counters).
const NALG: usize = Algorithm::ALL.len();
const NCOLL: usize = Collective::ALL.len();

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
        let c: &'static Cells = Box::leak(Box::new([ROW; NCOLL]));
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
static LAST: [AtomicU8; NCOLL] = [const { AtomicU8::new(NONE) }; NCOLL];

fn alg_index(alg: Algorithm) -> usize {
    alg.index()
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
        let c: &'static Cells = Box::leak(Box::new([ROW; NCOLL]));
        let cell = &c[coll.index()][ai];
        bump(&cell.calls, 1);
        bump(&cell.bytes, bytes as u64);
        bump(&cell.time_ns, (secs.max(0.0) * 1e9) as u64);
        SETS.lock().push(c);
    }
    LAST[coll.index()].store(ai as u8, Ordering::Relaxed);
    crate::gate::clear_hit(coll);
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

/// The algorithm of the last non-blocking or persistent call per collective (`ireduce`, ...:
/// the C API's `pcoll_last_algorithm("ireduce")`), gate-forwarded ones included.
static LAST_NB: [AtomicU8; NCOLL] = [const { AtomicU8::new(NONE) }; NCOLL];

/// A non-blocking or persistent call of `coll` went to `alg`.
pub fn set_last_nb(coll: Collective, alg: Algorithm) {
    LAST_NB[coll.index()].store(alg_index(alg) as u8, Ordering::Relaxed);
}

/// The algorithm of the last non-blocking or persistent call of `coll` (None: none yet).
pub fn last_nb(coll: Collective) -> Option<Algorithm> {
    let v = LAST_NB[coll.index()].load(Ordering::Relaxed);
    (v != NONE).then(|| Algorithm::ALL[v as usize])
}

pub fn last(coll: Collective) -> Option<Algorithm> {
    if crate::gate::last_hit(coll) {
        return Some(Algorithm::Native);
    }
    let v = LAST[coll.index()].load(Ordering::Relaxed);
    (v != NONE).then(|| Algorithm::ALL[v as usize])
}

/// Node steps of `hier`/`hier_ml` run through a node's shared window: reduces, broadcasts,
/// reduce_scatters, allgathervs, bytes.
static NODE_STEPS: [AtomicU64; 5] = [const { AtomicU64::new(0) }; 5];

/// Count one node step through the node's window (`PCOLL_STATS`).
pub fn record_node_step(step: &pcoll::plan::NodeStep, bytes: usize) {
    use pcoll::plan::NodeStep;
    let i = match step {
        NodeStep::Reduce { .. } => 0,
        NodeStep::Bcast { .. } => 1,
        NodeStep::ReduceScatter { .. } => 2,
        NodeStep::Allgatherv { .. } => 3,
    };
    NODE_STEPS[i].fetch_add(1, Ordering::Relaxed);
    NODE_STEPS[4].fetch_add(bytes as u64, Ordering::Relaxed);
}

/// One line to stderr in one write (`eprintln!` writes a formatted line in pieces, which a
/// launcher forwarding several streams interleaves with other output mid-line).
pub fn say(line: std::fmt::Arguments) {
    let mut s = line.to_string();
    s.push('\n');
    let _ = std::io::stderr().write_all(s.as_bytes());
}

/// The stats report: a header naming the MPI and the table, then one line per collective
/// and algorithm that ran, and a line of `hier`'s node steps through shared windows.
pub fn report() -> String {
    let mut out = String::new();
    if let Some(g) = GLOBAL.get() {
        out.push_str(&format!(
            "pcoll: stats on {} ({}; {}), table {}\n",
            g.mpi.describe(),
            g.mpi.name(),
            running().1,
            g.table.origin()
        ));
    }
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
    let [r, b, rs, ag, bytes] = NODE_STEPS.each_ref().map(|c| c.load(Ordering::Relaxed));
    if r + b + rs + ag > 0 {
        out.push_str(&format!(
            "pcoll: stats node-steps shm reduce={r} bcast={b} reduce_scatter={rs} allgatherv={ag} bytes={bytes}\n"
        ));
    }
    crate::nbc::stats::report(&mut out);
    crate::learn::race_report(&mut out);
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
    // Collective over MPI_COMM_WORLD when learning (every rank installed this hook at init).
    let _ = std::panic::catch_unwind(crate::learn::at_finalize);
    let _ = std::panic::catch_unwind(crate::shm::free_all);
    // The world model ends here (also for Fortran's `MPI_FINALIZE`, which Open MPI's bindings
    // send to `PMPI_Finalize` past pcoll's C export).
    world_ended();
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
