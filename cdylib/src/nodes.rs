//! The node layout of a communicator (`PCOLL_NODES`), kept in its state
//! (`comm::CommState::layout`): one key per rank, grouped by `pcoll::nodes::Layout::from_keys`.
//! `MPI_COMM_WORLD`'s keys are gathered once, at `MPI_Init` ([`at_init`]); every other
//! communicator's are read from them through its group ([`from_world`]: local MPI calls, no
//! communication, so a non-blocking call may ask too). Without them (`MPI_Init` not seen, a
//! rank from outside the world) they are gathered on the communicator's shadow ([`layout`]).
//!
//! * `shared` (default): `MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)`; the key is the lowest
//!   rank of the rank's shared-memory group (the group's communicator is freed at once).
//! * `hostname`: `MPI_Get_processor_name`, all names gathered (exact, no hashing).
//! * `K`: `MPI_COMM_WORLD` rank / K.
//!
//! [`layout`] is collective over the communicator: called where every rank of it is. If
//! an MPI call fails, the layout is one node (node-aware algorithms then run node-local).
//! The same layout on every rank (issue 29): `PCOLL_NODES` is settled across ranks at
//! `MPI_Init` (`agree.rs`), every rank gathers the same keys, and `Layout::from_keys` is a
//! pure function of them; no host name or world rank is used unshared.

use crate::consts;
use mpi_sys::*;
use once_cell::sync::OnceCell;
use pcoll::nodes::{Layout, NodeMode};
use std::mem::MaybeUninit;
use std::os::raw::{c_int, c_void};

/// `MPI_COMM_WORLD`'s layout, gathered at `MPI_Init` ([`at_init`]): the same on every rank.
static WORLD: OnceCell<Layout> = OnceCell::new();

/// How crowded the nodes are, found at `MPI_Init` ([`at_init`]).
static CROWDING: OnceCell<Crowding> = OnceCell::new();

/// More ranks on a node than the cores they may run on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Crowding {
    /// Some node of `MPI_COMM_WORLD` is crowded: the same on every rank (agreed).
    pub any: bool,
    /// This rank's node (its own view, for messages): its ranks, and the cores they may run
    /// on (the union of their affinity masks; a rank bound to one core counts that core).
    pub ranks: usize,
    pub cores: usize,
}

/// Some node of `MPI_COMM_WORLD` has more ranks than cores (agreed at `MPI_Init`; false
/// without it).
pub fn crowded() -> bool {
    CROWDING.get().is_some_and(|c| c.any)
}

/// [`Crowding`] as found at `MPI_Init` (`None`: not found).
pub fn crowding() -> Option<Crowding> {
    CROWDING.get().copied()
}

/// At `MPI_Init`, once `PCOLL_NODES` is agreed (`agree.rs`, which passes the world's
/// size): `MPI_COMM_WORLD`'s layout (collective over it, as `MPI_Init` is),
/// and how crowded its nodes are (the shared-memory node of the default `PCOLL_NODES`
/// gives it; other modes split `MPI_COMM_WORLD` by shared memory for it).
pub fn at_init(mode: NodeMode, size: usize) {
    let world = consts::comm_world();
    let mut load = None;
    let _ = WORLD.set(layout_and_load(world, size.max(1), mode, &mut load));
    if mode != NodeMode::Shared {
        load = shared_node(world).and_then(|mut node| {
            let l = node_load(node);
            // SAFETY: the node communicator made just now, freed once.
            unsafe { PMPI_Comm_free(&mut node) };
            l
        });
    }
    let mine = load.is_some_and(|(ranks, cores)| ranks > cores);
    let (ranks, cores) = load.unwrap_or((0, 0));
    let any = crate::agree::on_any_rank(mine) == Some(true);
    let _ = CROWDING.set(Crowding { any, ranks, cores });
    if any {
        log::info!("a node runs more ranks than cores (this one: {ranks} ranks on {cores} cores)");
    }
}

/// The layout of `comm` (an intracommunicator of `size` ranks) read from the world's through
/// the two groups: local MPI calls only, the same answer on every rank. None without the
/// world's layout or when a rank of `comm` is not in `MPI_COMM_WORLD` (spawned, connected).
pub fn from_world(comm: MPI_Comm, size: usize) -> Option<Layout> {
    let world = WORLD.get()?;
    let keys = world_ranks(comm, size)?
        .iter()
        .map(|&w| {
            usize::try_from(w)
                .ok()
                .and_then(|w| world.node_of.get(w).copied())
        })
        .collect::<Option<Vec<usize>>>()?;
    Some(Layout::from_keys(&keys))
}

/// The `MPI_COMM_WORLD` rank of each rank of `comm` (`MPI_UNDEFINED` for one outside it);
/// local MPI calls only. None if the MPI cannot translate them.
fn world_ranks(comm: MPI_Comm, size: usize) -> Option<Vec<c_int>> {
    let ranks: Vec<c_int> = (0..size as c_int).collect();
    translate(comm, &ranks, consts::comm_world())
}

/// The ranks in `to` of the ranks `ranks` of `from` (`MPI_UNDEFINED` for one outside it);
/// local MPI calls only. None if the MPI cannot translate them.
fn translate(from: MPI_Comm, ranks: &[c_int], to: MPI_Comm) -> Option<Vec<c_int>> {
    let mut out = vec![consts::UNDEFINED(); ranks.len()];
    // SAFETY: groups of two valid communicators into locals, freed here; `ranks.len()` ranks
    // translated from `ranks` into `out` (both of that length).
    unsafe {
        let (mut g, mut tg) = (MaybeUninit::uninit(), MaybeUninit::uninit());
        ok(PMPI_Comm_group(from, g.as_mut_ptr()))?;
        let mut g: MPI_Group = g.assume_init();
        if PMPI_Comm_group(to, tg.as_mut_ptr()) != consts::SUCCESS() {
            PMPI_Group_free(&mut g);
            return None;
        }
        let mut tg: MPI_Group = tg.assume_init();
        let rc = PMPI_Group_translate_ranks(
            g,
            ranks.len() as c_int,
            ranks.as_ptr(),
            tg,
            out.as_mut_ptr(),
        );
        PMPI_Group_free(&mut g);
        PMPI_Group_free(&mut tg);
        ok(rc)?;
    }
    Some(out)
}

/// [`outside_world`]'s answers as kept on a communicator.
const INSIDE: usize = 1;
const OUTSIDE: usize = 2;

/// Whether `comm` (an intracommunicator of `size` ranks) has a rank outside this process's
/// `MPI_COMM_WORLD`: processes spawned (`MPI_Comm_spawn`) or connected (`MPI_Comm_connect` /
/// `accept` / `join`) and merged into it. pcoll forwards every call on such a communicator:
/// its other processes may not run pcoll (Open MPI 5's `prterun -x LD_PRELOAD` does not reach
/// spawned processes: a parent ran a pcoll algorithm, a child the MPI's, and both hung) or
/// may have agreed other settings in their own world. Every process of it that runs pcoll
/// finds a rank outside its own world, so all forward alike. The answer is kept on the
/// communicator (an attribute, dropped with it; not copied by `MPI_Comm_dup`, whose copy is
/// asked again): one attribute query per call after the first.
pub fn outside_world(comm: MPI_Comm, size: usize) -> bool {
    let Some(kv) = verdict_keyval() else {
        return false;
    };
    // The attribute, if set, is one of the two constants.
    if let Ok(Some(val)) = crate::comm::get_attr(comm, kv) {
        return val as usize == OUTSIDE;
    }
    // A communicator the MPI cannot translate counts as inside (as before this check).
    let outside = world_ranks(comm, size).is_some_and(|w| w.contains(&consts::UNDEFINED()));
    if outside {
        log::info!("a communicator of {size} ranks with processes from outside MPI_COMM_WORLD (spawned or connected): its collectives go to the MPI");
    }
    // SAFETY: a plain value stored as the attribute (nothing to free).
    unsafe {
        PMPI_Comm_set_attr(
            comm,
            kv,
            (if outside { OUTSIDE } else { INSIDE }) as *mut c_void,
        )
    };
    outside
}

/// Every later call on `comm` goes to the MPI, as on a communicator outside the world
/// ([`outside_world`] says so from now on): pcoll could not make its shadow of `comm` (the
/// MPI's context ids used up; the dup fails on every rank alike, as the MPI agrees on them).
pub fn forward_always(comm: MPI_Comm) {
    if let Some(kv) = verdict_keyval() {
        // SAFETY: a plain value stored as the attribute (nothing to free).
        unsafe { PMPI_Comm_set_attr(comm, kv, OUTSIDE as *mut c_void) };
    }
}

/// The keyval of [`outside_world`]'s answer (`None` if the MPI refuses one: no check).
fn verdict_keyval() -> Option<c_int> {
    static KV: OnceCell<Option<c_int>> = OnceCell::new();
    unsafe extern "C" fn keep(_: MPI_Comm, _: c_int, _: *mut c_void, _: *mut c_void) -> c_int {
        consts::SUCCESS()
    }
    *KV.get_or_init(|| {
        let mut kv = consts::KEYVAL_INVALID();
        // SAFETY: registers a copy function of the MPI's and a no-op delete function.
        let rc = unsafe {
            PMPI_Comm_create_keyval(
                consts::comm_null_copy_fn(),
                Some(keep),
                &mut kv,
                std::ptr::null_mut(),
            )
        };
        (rc == consts::SUCCESS()).then_some(kv)
    })
}

/// Bytes of a host name as gathered (names are cut there).
const NAME_BYTES: usize = 256;

/// The layout of `shadow` (a communicator of `size` ranks).
pub fn layout(shadow: MPI_Comm, size: usize, mode: NodeMode) -> Layout {
    crate::nbc::meet(shadow);
    layout_and_load(shadow, size, mode, &mut None)
}

/// [`layout`], and in mode `shared` the load of this rank's node ([`node_load`]).
fn layout_and_load(
    shadow: MPI_Comm,
    size: usize,
    mode: NodeMode,
    load: &mut Option<(usize, usize)>,
) -> Layout {
    let keys = match mode {
        NodeMode::Hostname => names(shadow, size),
        NodeMode::Shared => shared_key(shadow, load).and_then(|k| gather_keys(shadow, size, k)),
        NodeMode::Block(k) => world_rank().and_then(|w| gather_keys(shadow, size, (w / k) as u64)),
    };
    match keys {
        Some(k) => k,
        None => {
            log::warn!("node layout ({mode:?}) failed; treating the communicator as one node");
            Layout::single(size)
        }
    }
}

fn ok(rc: c_int) -> Option<()> {
    (rc == consts::SUCCESS()).then_some(())
}

fn world_rank() -> Option<usize> {
    let mut r: c_int = 0;
    // SAFETY: out-pointer to a local.
    ok(unsafe { PMPI_Comm_rank(consts::comm_world(), &mut r) })?;
    Some(r as usize)
}

/// This rank's shared-memory group of `comm` (collective over `comm`; the caller frees it).
fn shared_node(comm: MPI_Comm) -> Option<MPI_Comm> {
    let mut node: MPI_Comm = consts::comm_null();
    // SAFETY: collective split of a valid communicator into a local.
    ok(unsafe {
        PMPI_Comm_split_type(
            comm,
            consts::COMM_TYPE_SHARED(),
            0,
            consts::info_null(),
            &mut node,
        )
    })?;
    Some(node)
}

/// Words of a CPU mask (`cpu_set_t`: 1024 CPUs).
const MASK_WORDS: usize = 16;

/// The ranks of the shared-memory node `node` and the cores they may run on: the union of
/// their affinity masks (collective over `node`). Binding-proof: ranks bound one per core
/// count one core each, unbound ranks the node's cores, a cpuset its CPUs.
pub(crate) fn node_load(node: MPI_Comm) -> Option<(usize, usize)> {
    let mut mine = [0u64; MASK_WORDS];
    // SAFETY: a cpu_set_t is MASK_WORDS u64 (1024 bits) on Linux; this thread's mask.
    let got = unsafe {
        libc::sched_getaffinity(
            0,
            std::mem::size_of::<libc::cpu_set_t>().min(8 * MASK_WORDS),
            mine.as_mut_ptr() as *mut libc::cpu_set_t,
        )
    } == 0;
    if !got {
        let n = std::thread::available_parallelism().map_or(1, |n| n.get());
        for c in 0..n.min(64 * MASK_WORDS) {
            mine[c / 64] |= 1 << (c % 64);
        }
    }
    let (mut all, mut ranks) = ([0u64; MASK_WORDS], 0 as c_int);
    // SAFETY: MASK_WORDS u64 each way on a valid communicator; out-pointer to a local.
    unsafe {
        ok(PMPI_Comm_size(node, &mut ranks))?;
        ok(PMPI_Allreduce(
            mine.as_ptr() as *const c_void,
            all.as_mut_ptr() as *mut c_void,
            MASK_WORDS as c_int,
            consts::dt_uint64(),
            consts::op_bor(),
            node,
        ))?;
    }
    let cores = all.iter().map(|w| w.count_ones() as usize).sum::<usize>();
    Some((ranks.max(1) as usize, cores.max(1)))
}

/// The lowest rank (in `shadow`) of this rank's shared-memory group, and the group's
/// [`node_load`] into `load`. The group's rank 0 is that rank (the split keeps `shadow`'s
/// order), read through the groups: one collective on the group, not two. Intel MPI 2021 ran
/// a process's first ~200 pairs of alternated `PMPI_`/`MPI_` 8-byte allgathers at 3 µs
/// instead of 0.5 after the second collective on a communicator freed at `MPI_Init` (an
/// `MPI_Allreduce` of the lowest rank; `verify/probes/ramp.c`, docs/shm.md, A third machine).
fn shared_key(shadow: MPI_Comm, load: &mut Option<(usize, usize)>) -> Option<u64> {
    let mut node = shared_node(shadow)?;
    *load = node_load(node);
    let low = translate(node, &[0], shadow);
    // SAFETY: the node communicator made above, freed here and nowhere else.
    unsafe { PMPI_Comm_free(&mut node) };
    let low = *low?.first()?;
    (low >= 0).then_some(low as u64)
}

/// Every rank's key, grouped into nodes.
fn gather_keys(shadow: MPI_Comm, size: usize, key: u64) -> Option<Layout> {
    Some(Layout::from_keys(&allgather_u64(shadow, size, &[key])?))
}

/// `mine` from every rank of `comm` (`size` ranks, each the same length), rank by rank; `None`
/// when the MPI refuses the call.
pub(crate) fn allgather_u64(comm: MPI_Comm, size: usize, mine: &[u64]) -> Option<Vec<u64>> {
    let n = mine.len();
    let mut all = vec![0u64; n * size.max(1)];
    // SAFETY: n u64 sent, n per rank received into `all` (size × n).
    ok(unsafe {
        PMPI_Allgather(
            mine.as_ptr() as *const c_void,
            n as c_int,
            consts::dt_uint64(),
            all.as_mut_ptr() as *mut c_void,
            n as c_int,
            consts::dt_uint64(),
            comm,
        )
    })?;
    Some(all)
}

/// Every rank's processor name, grouped into nodes.
fn names(shadow: MPI_Comm, size: usize) -> Option<Layout> {
    let cap = (consts::MAX_PROCESSOR_NAME().max(0) as usize).max(NAME_BYTES) + 1;
    let mut name = vec![0u8; cap];
    let mut len: c_int = 0;
    // SAFETY: the buffer holds MPI_MAX_PROCESSOR_NAME bytes and more.
    ok(unsafe { PMPI_Get_processor_name(name.as_mut_ptr() as *mut _, &mut len) })?;
    let mut mine = [0u8; NAME_BYTES];
    let n = (len.max(0) as usize).min(NAME_BYTES);
    mine[..n].copy_from_slice(&name[..n]);
    let mut all = vec![0u8; NAME_BYTES * size];
    // SAFETY: NAME_BYTES chars sent, NAME_BYTES per rank received into `all`.
    ok(unsafe {
        PMPI_Allgather(
            mine.as_ptr() as *const c_void,
            NAME_BYTES as c_int,
            consts::dt_char(),
            all.as_mut_ptr() as *mut c_void,
            NAME_BYTES as c_int,
            consts::dt_char(),
            shadow,
        )
    })?;
    let keys: Vec<&[u8]> = all.chunks(NAME_BYTES).collect();
    Some(Layout::from_keys(&keys))
}
