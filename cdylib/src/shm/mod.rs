//! The shared window behind `shm` (the plan is `pcoll::algo::shm`; the protocol that runs it
//! is [`run`]): one `MPI_Win_allocate_shared` segment per rank over a communicator whose ranks
//! all share one node, cached in the communicator's state, freed by its delete callback or,
//! for communicators alive at the end, at the start of `MPI_Finalize` ([`free_all`]).
//!
//! A rank's segment: three counters (`filled`, `reduced`, `read`), each on its own 128-byte
//! line, in the first page, then `PCOLL_SHM_SLOTS` pairs of cells (input, output). The owner writes its
//! counters and cells first (first touch). Counters only grow (chunks since the window was
//! made), so no call resets them.
//!
//! Created by a call that asks for `shm` on the communicator (collective: a request is the
//! same on every rank, and it never goes native before getting here): a forced one at once,
//! one of a table or the model at the [`after`]-th such call or once their predicted loss
//! reaches the window's cost (3.5-4 ms at p = 2, mostly its pages), paid once per
//! communicator; communicators whose calls never ask for `shm` never pay it.
//!
//! `PCOLL_SHM=0` turns it off; `PCOLL_SHM_BYTES` is the segment of each rank and
//! `PCOLL_SHM_SLOTS` its slots (defaults: [`default_slots`], 256 KiB cells), and
//! `PCOLL_SHM_LIMIT` what one process's windows hold at once ([`budget`]). Any refusal
//! (turned off, ranks on several nodes, `/dev/shm` without room for every rank's segment
//! twice over, a rank's windows at their limit, the MPI refusing the window) leaves the
//! communicator without a window, agreed by all its ranks, with one warning per process: the
//! decision then falls back as for any ineligible algorithm.

pub mod budget;
pub mod call;
mod registry;
pub use registry::{all_freed, free_all};
pub mod kernel;
pub mod run;
mod segment;
pub mod stream;

use crate::consts;
use crate::nbc::all as agree;
use mpi_sys::*;
use parking_lot::Mutex;
use segment::{first_touch, page_up, prefault, segments, PAGE};
use std::os::raw::{c_int, c_void};
use std::sync::atomic::AtomicU64;

/// Default cell: 256 KiB (issue #30: 64-256 KiB cells beat 8 KiB ones at 2 MiB).
const DEFAULT_CELL: usize = 256 << 10;

/// Slots (pairs of input and output cells) per rank of a window of `p` ranks by default
/// (`PCOLL_SHM_SLOTS` sets them): chunk g uses slot g mod slots, so a cell is written again
/// only after `slots - 1` other chunks. Writing lines the reading core still holds (it read
/// them one or two chunks ago) waits for their invalidation line by line: on this VM 64 KiB
/// took 7.1 us that way and 1.7 us once the writer rotated over 2 MiB, twice the reader's
/// L2 (verify/probes/xcore.c); a forced `shm` reduce at p = 2 took 50 us at 1 MiB with 8
/// slots against 80-95 with 2 (docs/shm.md, "A longer ring"). 8 slots of 256 KiB cells
/// (4 MiB per rank) while the node's windows stay within 16 MiB (p <= 4), 4 to p = 8, then 2
/// (1 MiB per rank, the size before session 24): /dev/shm must hold them twice over, and
/// containers give it 64 MiB.
pub fn default_slots(p: usize) -> usize {
    match p {
        0..=4 => 8,
        5..=8 => 4,
        _ => 2,
    }
}

/// Segment per rank for `slots` slots of default cells (each with a page of room to stagger).
pub const fn default_bytes(slots: usize) -> usize {
    CTRL + 2 * slots * (DEFAULT_CELL + 4096)
}

/// Slots of a segment given by `PCOLL_SHM_BYTES` alone (its meaning before session 24).
const BYTES_SLOTS: usize = 2;

/// Bytes before the first cell: the counters' page.
const CTRL: usize = 4096;

/// Step between the page offsets of consecutive cells (odd multiple of a cache line).
const STAGGER: usize = 64 * 13;

/// Offsets of the counters in a segment.
pub(crate) const FILLED: usize = 0;
pub(crate) const REDUCED: usize = 128;
pub(crate) const READ: usize = 256;
/// Rank 0's page only: until when (`CLOCK_MONOTONIC` ns) copies into cells stream
/// (`run::stream_now`).
pub(crate) const STREAM_UNTIL: usize = 384;
/// Barriers this rank has entered on the window ([`run::barrier`]).
pub(crate) const SYNC: usize = 512;
/// Lines a rank writes before each `filled`, which a reader loads to time a core-to-core
/// transfer (`run::probe`): 512 bytes apart, so that no prefetcher pairs them.
pub(crate) const PROBES: [usize; 4] = [1024, 1536, 2048, 2560];

/// Settings read once from the environment.
struct Settings {
    on: bool,
    /// `PCOLL_SHM_BYTES` (None: the default for the slots).
    bytes: Option<usize>,
    /// `PCOLL_SHM_SLOTS` (None: [`default_slots`] of the window's ranks, or [`BYTES_SLOTS`]
    /// with `PCOLL_SHM_BYTES`).
    slots: Option<usize>,
}

impl Settings {
    /// Segment bytes and slots per rank of a window of `p` ranks (agreed inputs only).
    fn layout(&self, p: usize) -> (usize, usize) {
        match (self.bytes, self.slots) {
            (Some(b), Some(k)) => (b, k),
            (Some(b), None) => (b, BYTES_SLOTS),
            (None, k) => {
                let k = k.unwrap_or_else(|| default_slots(p));
                (default_bytes(k), k)
            }
        }
    }
}

fn settings() -> &'static Settings {
    static S: once_cell::sync::Lazy<Settings> = once_cell::sync::Lazy::new(|| {
        let on = match crate::agree::var("PCOLL_SHM") {
            Some(v) => pcoll::config::parse_bool(&v).unwrap_or_else(|| {
                log::warn!("PCOLL_SHM={v}: not a boolean (accepted: 0, 1); shm stays on");
                true
            }),
            None => true,
        };
        let slots =
            crate::agree::var("PCOLL_SHM_SLOTS").and_then(|v| match v.trim().parse::<usize>() {
                Ok(n) if (2..=64).contains(&n) => Some(n),
                _ => {
                    log::warn!("PCOLL_SHM_SLOTS={v}: not a number of slots 2..=64; the default");
                    None
                }
            });
        let least = CTRL + 2 * slots.unwrap_or(BYTES_SLOTS) * (4096 + 64);
        let bytes =
            crate::agree::var("PCOLL_SHM_BYTES").and_then(
                |v| match pcoll::tuning::size::parse_size(&v) {
                    Ok(b) if b > least => Some(b),
                    _ => {
                        log::warn!(
                            "PCOLL_SHM_BYTES={v}: not a size above {least} bytes; the default"
                        );
                        None
                    }
                },
            );
        log::debug!("shm: on={on}, {bytes:?} bytes per rank, {slots:?} slots");
        Settings { on, bytes, slots }
    });
    &S
}

/// The blocking call that asked for `shm` on a communicator and makes its window
/// (`PCOLL_SHM_AFTER`, agreed at `MPI_Init`; default 8, 1: the first): the ones before run
/// the decision without `shm`, unless their predicted extra cost reaches the window's first
/// (`pcoll::model::shm::WindowWait`); a non-blocking call counts alike and, where a
/// blocking one would make it, wants it (the next blocking collective on it makes it). The window costs
/// milliseconds (4 MiB a rank to touch at p = 2), what a few hundred 64 KiB calls gain back
/// from it: a communicator made for a handful of calls is better served without it. Eight
/// keeps a benchmark whose warm-up runs seven calls or more timing `shm` from its first
/// timed call. `hier`'s node windows wait alike (`crate::dispatch::resolve::node_windows_wait`).
pub fn after() -> u32 {
    static A: once_cell::sync::Lazy<u32> =
        once_cell::sync::Lazy::new(|| match crate::agree::var("PCOLL_SHM_AFTER") {
            None => 8,
            Some(v) => match v.trim().parse::<u32>() {
                Ok(n) if n >= 1 => n,
                _ => {
                    log::warn!("PCOLL_SHM_AFTER={v}: not a count of calls from 1; 8 it is");
                    8
                }
            },
        });
    *A
}

/// The window of the communicator of `st` may still wait (`shm` on, `PCOLL_SHM_AFTER` above 1,
/// not asked for yet): what `dispatch::resolve` and `learn` ask before counting a call.
pub fn may_wait(st: &crate::comm::CommState) -> bool {
    after() > 1 && enabled() && !st.shm_asked()
}

/// Predicted seconds to make the window of a communicator of `p` ranks (its segments as
/// `PCOLL_SHM_BYTES` / `PCOLL_SHM_SLOTS` make them): `pcoll::model::shm::window_time`.
pub fn window_cost(p: usize) -> f64 {
    pcoll::model::shm::window_time(p, settings().layout(p).0 + PAGE)
}

/// A reduce's root combines `x_root ⊕ partial` as it copies out (`PCOLL_SHM_COMBINE`, on by
/// default; agreed across ranks at `MPI_Init` like every steering variable). At p = 2 the root
/// then streams 3m bytes, the one-core bound, and waits once per chunk (docs/shm.md).
pub fn combine_at_root() -> bool {
    static C: once_cell::sync::Lazy<bool> = once_cell::sync::Lazy::new(|| {
        crate::agree::var("PCOLL_SHM_COMBINE")
            .and_then(|v| pcoll::config::parse_bool(&v))
            .unwrap_or(true)
    });
    *C
}

/// Most bytes an allreduce's rank reads from the others' cells when every rank folds the
/// whole call itself (`PCOLL_SHM_REPLICATE`, a size, agreed at `MPI_Init`; 0: never): one
/// wait per chunk instead of two and no copy-out, which pays while the call is small
/// (docs/shm.md, "Replicated allreduce"). Unset: 16 KiB on a window whose calls under a cell
/// move on within their slot (`fresh`), where the sliced protocol won from 32 KiB (forced,
/// p = 2, 64 KiB: Intel MPI 8.9 -> 4.2 us, Open MPI 4.1 10.8-11.6 -> 7.5-9.7), else 64 KiB.
pub fn replicate_bytes(fresh: bool) -> usize {
    static R: once_cell::sync::Lazy<Option<usize>> = once_cell::sync::Lazy::new(|| {
        let v = crate::agree::var("PCOLL_SHM_REPLICATE")?;
        pcoll::tuning::size::parse_size(&v)
            .map_err(|_| log::warn!("PCOLL_SHM_REPLICATE={v}: not a size; using the default"))
            .ok()
    });
    R.unwrap_or(if fresh { 16 << 10 } else { 64 << 10 })
}

/// How `hier`'s node steps may use the nodes' windows (`PCOLL_HIER_SHM`, agreed at
/// `MPI_Init`): where the model says so (`auto`, the default: `NodeSteps::Shm`), every step
/// (`1`: `ShmAlways`), or never (`0`, or `PCOLL_SHM=0`: None).
pub fn node_mode() -> Option<pcoll::algo::hier::NodeSteps> {
    use pcoll::algo::hier::NodeSteps;
    static MODE: once_cell::sync::Lazy<Option<NodeSteps>> = once_cell::sync::Lazy::new(|| {
        let v = crate::agree::var("PCOLL_HIER_SHM");
        match v.as_deref().map(str::trim) {
            None | Some("") | Some("auto") => Some(NodeSteps::Shm),
            Some(t) => match pcoll::config::parse_bool(t) {
                Some(true) => Some(NodeSteps::ShmAlways),
                Some(false) => None,
                None => {
                    log::warn!("PCOLL_HIER_SHM={t}: not auto, 1 or 0; auto it is");
                    Some(NodeSteps::Shm)
                }
            },
        }
    });
    if !enabled() {
        return None;
    }
    *MODE
}

/// Bytes of one cell of a segment of `bytes` in `slots` slots: each cell has a page of room
/// for its stagger.
fn cell_of(bytes: usize, slots: usize) -> usize {
    ((bytes - CTRL) / (2 * slots) - 4096) & !63 // > 0: `settings` checked it
}

/// Bytes of one cell of the windows this process makes (`PCOLL_SHM_BYTES`,
/// `PCOLL_SHM_SLOTS`, agreed; the same for every p: the default slots keep the default cell).
pub fn cell_bytes() -> usize {
    let (bytes, slots) = settings().layout(2);
    cell_of(bytes, slots)
}

/// `shm` may run (`PCOLL_SHM` is not 0).
pub fn enabled() -> bool {
    settings().on
}

/// A communicator's shared window.
pub struct Win {
    inner: Mutex<Option<Inner>>,
    /// Bytes of one cell.
    pub cell: usize,
    /// Slots (pairs of input and output cells) per rank: chunk g uses slot g mod slots.
    pub slots: usize,
    /// Every rank has a core of its own ([`own_cores`], agreed at creation): a call smaller
    /// than a cell writes fresh lines, the next piece of its slot ([`Win::place`]). With ranks
    /// that outnumber the cores a rank and the one it reads share a core's cache at times,
    /// where the same lines again are cheaper (forced reduce at p = 3 on 2 cores, 64 KiB:
    /// 36-45 us moving on against 5-31 us not, Open MPI 4.1).
    pub(crate) fresh: bool,
    /// A reduce or bcast that fits one cell runs in quarter cells
    /// ([`pcoll::algo::shm::chunk_elems`]): two ranks with a core each (measured at p = 2
    /// only; with ranks that outnumber the cores every chunk's wait may cost a time slice).
    pub split: bool,
    p: usize,
    rank: usize,
    /// The node's communicator (a copy of `Inner::node`, for [`Win::poke`] without the lock).
    node: MPI_Comm,
    /// This rank's bytes of it in the process's [`budget`], given back when it is freed.
    held: usize,
    /// The window's place in [`free_all`]'s order, the same on every rank of it.
    pub(crate) key: u64,
}

struct Inner {
    win: MPI_Win,
    node: MPI_Comm,
    /// Every rank's segment, mapped here.
    bases: Vec<*mut u8>,
    /// Chunks handed out to calls since the window was made (the same on every rank).
    seq: u64,
    /// Chunks this rank has finished: a call runs once every earlier call on the window is
    /// done here ([`run::Cursor`]), so that outstanding non-blocking calls keep issue order.
    done: u64,
    /// Barriers entered on the window ([`run::barrier`]; the same count on every rank).
    syncs: u64,
}

// SAFETY: the window and communicator handles are plain values used as MPI allows for the
// thread level; the segment pointers are only dereferenced by `run` under the mutex.
unsafe impl Send for Win {}
// SAFETY: as above; every mutable part is behind the mutex.
unsafe impl Sync for Win {}

impl Win {
    /// Ranks sharing the window.
    pub fn ranks(&self) -> usize {
        self.p
    }
    /// The window's mutable part, locked (an error once the window is freed).
    fn locked(&self) -> Result<parking_lot::MappedMutexGuard<'_, Inner>, pcoll::Error> {
        parking_lot::MutexGuard::try_map(self.inner.lock(), |i| i.as_mut())
            .map_err(|_| pcoll::Error::Internal("shm window already freed".into()))
    }
    /// Drive the MPI's progress engine once (a probe of the node's communicator, which
    /// receives nothing). A rank waiting on the window's counters makes no MPI call
    /// otherwise, while the rank it waits for may itself wait for a message this one sent
    /// before the call (an eager message still queued here, a rendezvous to answer): MPICH
    /// 4.0 over UCX hung so (allgather then a `hier` reduce, PCOLL_NODES=2, p = 3).
    pub(crate) fn poke(&self) {
        let mut flag: c_int = 0;
        // SAFETY: the node communicator is valid while the window is (a call running on it
        // holds a reference); out-pointers to locals; a probe consumes no message.
        unsafe {
            PMPI_Iprobe(
                RSMPI_ANY_SOURCE,
                RSMPI_ANY_TAG,
                self.node,
                &mut flag,
                RSMPI_STATUS_IGNORE,
            );
        }
    }
    /// A counter (or another 8-byte word of the counters' page) of `rank`'s segment.
    pub(crate) fn word(bases: &[*mut u8], rank: usize, off: usize) -> &AtomicU64 {
        // SAFETY: the segment is at least CTRL bytes from a page boundary, mapped for the window's
        // life; the counter is 8-byte aligned and only accessed atomically.
        unsafe { &*(bases[rank].add(off) as *const AtomicU64) }
    }
    /// Where chunk `g` of a call whose chunks fill at most `span` bytes of a cell sits:
    /// its slot and the offset within the slot's cells ([`pcoll::algo::shm::place`]).
    pub(crate) fn place(&self, g: u64, span: usize) -> (usize, usize) {
        let span = if self.fresh { span } else { 0 };
        pcoll::algo::shm::place(g, self.slots, self.cell, span)
    }
    /// Input (`out == false`) or output cell of `rank`'s segment at `place` (a slot and an
    /// offset within its cells: [`Win::place`]).
    /// Cells start at staggered offsets within a page ([`STAGGER`]), so that the cells one
    /// fold reads and writes do not share their low address bits (4 KiB aliasing).
    fn cell_ptr(
        &self,
        bases: &[*mut u8],
        rank: usize,
        (slot, off): (usize, usize),
        out: bool,
    ) -> *mut u8 {
        let k = 2 * slot + usize::from(out);
        let skew = ((rank * (2 * self.slots) + k) * STAGGER) % 4096;
        bases[rank].wrapping_add(CTRL + k * (self.cell + 4096) + skew + off)
    }
    /// Free the window (collective over the communicator; idempotent).
    pub fn release(&self) {
        let Some(mut inner) = self.inner.lock().take() else {
            return;
        };
        registry::remove(self);
        budget::give_back(self.held);
        crate::nbc::meet(inner.node);
        // SAFETY: made by `create`, freed exactly once (taken out of the mutex above).
        unsafe {
            PMPI_Win_free(&mut inner.win);
            PMPI_Comm_free(&mut inner.node);
        }
    }
}

fn ok(rc: c_int) -> bool {
    rc == consts::SUCCESS()
}

/// Does every rank of `node` (`p` ranks) have a core of its own? The CPUs any of them may
/// run on ([`crate::nodes::node_load`]: the union of their affinity masks, so ranks bound one
/// to a core each count one core apiece) number at least p. Collective; the same answer on
/// every rank.
fn own_cores(node: MPI_Comm, p: usize) -> bool {
    crate::nodes::node_load(node).is_some_and(|(_, cores)| cores >= p)
}

/// Room in /dev/shm for every rank's segment twice over (an mmap'd file larger than the free
/// space maps, then faults at first touch: a crash, not an error).
fn room(p: usize, bytes: usize) -> bool {
    // SAFETY: zeroed statvfs is a valid out-value; the path is a NUL-terminated literal.
    unsafe {
        let mut s: libc::statvfs = std::mem::zeroed();
        if libc::statvfs(c"/dev/shm".as_ptr(), &mut s) != 0 {
            return true; // no /dev/shm to ask: let the MPI decide
        }
        let free = (s.f_bavail as u128) * (s.f_frsize as u128);
        free >= 2 * (p as u128) * ((bytes + PAGE) as u128)
    }
}

/// Why this rank refuses a window of `p` segments of `bytes` (None: it does not): `shm`
/// turned off, its ranks not sharing memory (`apart`, the reason), /dev/shm without room for
/// the segments ([`room`]), or this process's windows at `PCOLL_SHM_LIMIT` (`held`: its
/// segment was reserved in the [`budget`]). One rank needs no window.
fn refusal(
    s: &Settings,
    apart: Option<&'static str>,
    (p, bytes): (usize, usize),
    held: bool,
) -> Option<&'static str> {
    if !s.on {
        Some("turned off (PCOLL_SHM=0)")
    } else if apart.is_some() {
        apart
    } else if p == 1 {
        None
    } else if !room(p, bytes) {
        Some("/dev/shm lacks room for the window (PCOLL_SHM_BYTES)")
    } else if !held {
        Some("this process's shared windows would pass PCOLL_SHM_LIMIT")
    } else {
        None
    }
}

/// The warning of a window refused by another rank of its communicator.
const ANOTHER: &str =
    "another rank refused the window (its /dev/shm room, or its windows at PCOLL_SHM_LIMIT)";

fn warn_once(why: &str) {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| log::warn!("shm: {why}; point-to-point algorithms serve instead"));
}

/// The window of a communicator (`shadow`, `p` ranks, this one `rank`), or None if refused.
/// Collective over the communicator.
pub fn create(shadow: MPI_Comm, p: usize, rank: usize) -> Option<Box<Win>> {
    let t0 = std::time::Instant::now();
    crate::nbc::meet(shadow);
    let s = settings();
    let mut node: MPI_Comm = consts::comm_null();
    // SAFETY: collective split of a valid communicator; out-pointer.
    let split = ok(unsafe {
        PMPI_Comm_split_type(
            shadow,
            consts::COMM_TYPE_SHARED(),
            0,
            consts::info_null(),
            &mut node,
        )
    });
    let mut nsize: c_int = 0;
    // SAFETY: out-pointer; `node` is valid when the split succeeded.
    let one_node = split && ok(unsafe { PMPI_Comm_size(node, &mut nsize) }) && nsize as usize == p;
    let (bytes, slots) = s.layout(p);
    let held = budget::reserve(bytes + PAGE);
    let apart = (!one_node).then_some("the communicator spans several nodes");
    let why = refusal(s, apart, (p, bytes), held.is_some());
    if !agree(shadow, why.is_none()) {
        warn_once(why.unwrap_or(ANOTHER));
        if split {
            // SAFETY: made by the split above, freed once.
            unsafe { PMPI_Comm_free(&mut node) };
        }
        return None;
    }
    log::debug!(
        "shm: the window's node communicator and checks: {:.2} ms",
        t0.elapsed().as_secs_f64() * 1e3
    );
    let w = held.and_then(|h| allocate(node, p, rank, (bytes, slots), h));
    if w.is_none() {
        warn_once("the MPI refused a shared window, or /dev/shm had no room for its pages");
        // SAFETY: made by the split above, freed once (every rank of the shadow is here).
        unsafe { PMPI_Comm_free(&mut node) };
    }
    w
}

/// The window of this rank's node of `layout` (the nodes of `shadow`, pcoll's grouping,
/// agreed on every rank), for `hier`'s node steps: `Ok(None)` on a node of one rank (it
/// needs none), `Err(())` if any node's window was refused — every rank of `shadow` gets
/// an `Err` then, so the node steps fall back alike. Collective over `shadow`.
#[allow(clippy::result_unit_err)] // a refusal has nothing more to say: the steps fall back
pub fn create_node(
    shadow: MPI_Comm,
    layout: &pcoll::nodes::Layout,
    rank: usize,
) -> Result<Option<Box<Win>>, ()> {
    crate::nbc::meet(shadow);
    let s = settings();
    let n = layout.node_of[rank];
    let k = layout.members[n].len();
    let me = layout.local_index(rank);
    let mut node: MPI_Comm = consts::comm_null();
    // SAFETY: collective split of a valid communicator (key: the rank, so members keep the
    // layout's order); out-pointer.
    let split = ok(unsafe { PMPI_Comm_split(shadow, n as c_int, rank as c_int, &mut node) });
    // The node's ranks must really share memory (PCOLL_NODES may group any ranks).
    let mut shared: MPI_Comm = consts::comm_null();
    let mut size: c_int = 0;
    // SAFETY: collective over `node` (valid when the split succeeded); out-pointers.
    let one = split
        && ok(unsafe {
            PMPI_Comm_split_type(
                node,
                consts::COMM_TYPE_SHARED(),
                0,
                consts::info_null(),
                &mut shared,
            )
        })
        && ok(unsafe { PMPI_Comm_size(shared, &mut size) })
        && size as usize == k;
    if shared != consts::comm_null() {
        // SAFETY: made by the split above, freed once.
        unsafe { PMPI_Comm_free(&mut shared) };
    }
    let free = |mut c: MPI_Comm| {
        if c != consts::comm_null() {
            // SAFETY: made by the split above, freed once.
            unsafe { PMPI_Comm_free(&mut c) };
        }
    };
    let (bytes, slots) = s.layout(k);
    let held = (k > 1).then(|| budget::reserve(bytes + PAGE)).flatten();
    let apart = (!one).then_some("a node of pcoll's grouping does not share memory (PCOLL_NODES)");
    let why = refusal(s, apart, (k, bytes), held.is_some());
    if !agree(shadow, why.is_none()) {
        warn_once(why.unwrap_or(ANOTHER));
        free(node);
        return Err(());
    }
    if k == 1 {
        free(node);
        return if agree(shadow, true) {
            Ok(None)
        } else {
            Err(())
        };
    }
    let w = held.and_then(|h| allocate(node, k, me, (bytes, slots), h));
    if !agree(shadow, w.is_some()) {
        warn_once("the MPI refused a node's shared window, or /dev/shm had no room for its pages");
        match w {
            Some(w) => w.release(), // collective over the node, whose ranks all have it
            None => free(node),
        }
        return Err(());
    }
    Ok(w)
}

/// How long a window took from `t0`, and its parts (each ends at the given time since `t0`).
fn made_in(t0: std::time::Instant, ends: [std::time::Duration; 4]) -> String {
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    let [alloc, own, agree, others] = ends;
    format!(
        "made in {:.2} ms (MPI_Win_allocate_shared {:.2}, own pages {:.2}, agreement {:.2}, \
         the others' pages {:.2})",
        ms(t0.elapsed()),
        ms(alloc),
        ms(own - alloc),
        ms(agree - own),
        ms(others - agree)
    )
}

/// `MPI_Win_allocate_shared` of `bytes` on this rank over `node` (collective): whether it was
/// made, this rank's base and the window.
fn allocate_shared(node: MPI_Comm, bytes: usize) -> (bool, *mut u8, MPI_Win) {
    let mut base: *mut u8 = std::ptr::null_mut();
    // SAFETY: a zeroed handle is a valid out-value.
    let mut win: MPI_Win = unsafe { std::mem::zeroed() };
    let mut info: MPI_Info = consts::info_null();
    // SAFETY: collective over `node` (every rank is here: `agree` said yes everywhere);
    // out-pointers to locals; the info object is freed here.
    let made = unsafe {
        PMPI_Info_create(&mut info);
        PMPI_Info_set(info, c"alloc_shared_noncontig".as_ptr(), c"true".as_ptr());
        let rc = PMPI_Win_allocate_shared(
            bytes as MPI_Aint,
            1,
            info,
            node,
            &mut base as *mut *mut u8 as *mut c_void,
            &mut win,
        );
        PMPI_Info_free(&mut info);
        ok(rc)
    };
    (made, base, win)
}

/// `MPI_Win_allocate_shared` of `bytes` per rank over `node` (ranks in the shadow's order),
/// every segment looked up, the own one first-touched, `held` kept in the [`budget`] until
/// it is freed; None if any rank failed. Its parts are timed for the debug log (docs/shm.md,
/// Lifetime and limits: what it costs).
fn allocate(
    node: MPI_Comm,
    p: usize,
    rank: usize,
    (bytes, slots): (usize, usize),
    held: budget::Reserved,
) -> Option<Box<Win>> {
    let t0 = std::time::Instant::now();
    let (made, base, mut win) = allocate_shared(node, bytes + PAGE);
    let (bases, mut found) = if made {
        segments(win, p, bytes)
    } else {
        (vec![std::ptr::null_mut(); p], false)
    };
    let base = page_up(base);
    let t_alloc = t0.elapsed();
    // First touch by the owner (pages on its memory), counters zero.
    found = found && first_touch(base, bytes);
    let t_own = t0.elapsed();
    // Every rank's counters are zero before anybody reads them.
    if !agree(node, found) {
        // Made everywhere (some rank's pages could not be had: a full tmpfs), it is freed on
        // every rank; a window some rank lacks cannot be freed collectively: left.
        if agree(node, made) {
            // SAFETY: made on every rank of `node` (agreed), freed once, collectively.
            unsafe { PMPI_Win_free(&mut win) };
        }
        return None;
    }
    let key = registry::agreed_key(node, rank);
    let t_agree = t0.elapsed();
    prefault(&bases, rank, bytes);
    let t_others = t0.elapsed();
    let fresh = own_cores(node, p);
    let w = Box::new(Win {
        inner: Mutex::new(Some(Inner {
            win,
            node,
            bases,
            seq: 0,
            done: 0,
            syncs: 0,
        })),
        cell: cell_of(bytes, slots),
        slots,
        fresh,
        split: fresh && p == 2,
        p,
        rank,
        node,
        held: held.keep(),
        key,
    });
    registry::add(&w);
    log::debug!(
        "shm: window of {bytes} bytes per rank, {}-byte cells, {slots} slots; calls under \
         a cell on fresh lines: {fresh}; one-cell reduces and bcasts in quarter cells: {}; \
         {}",
        w.cell,
        w.split,
        made_in(t0, [t_alloc, t_own, t_agree, t_others])
    );
    Some(w)
}
