//! The node layout of a communicator (`PCOLL_NODES`), asked of MPI once per communicator and
//! kept in its state (`comm::CommState::layout`): one key per rank, gathered on the shadow
//! communicator, grouped by `pcoll::nodes::Layout::from_keys`.
//!
//! * `shared` (default): `MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)`; the key is the lowest
//!   rank of the rank's shared-memory group (the group's communicator is freed at once).
//! * `hostname`: `MPI_Get_processor_name`, all names gathered (exact, no hashing).
//! * `K`: `MPI_COMM_WORLD` rank / K.
//!
//! Collective over the communicator: called where every rank of it is (see the callers). If
//! an MPI call fails, the layout is one node (node-aware algorithms then run node-local).
//! The same layout on every rank (issue 29): `PCOLL_NODES` is settled across ranks at
//! `MPI_Init` (`agree.rs`), every rank gathers the same keys, and `Layout::from_keys` is a
//! pure function of them; no host name or world rank is used unshared.

use crate::consts;
use mpi_sys::*;
use pcoll::nodes::{Layout, NodeMode};
use std::os::raw::{c_int, c_void};

/// Bytes of a host name as gathered (names are cut there).
const NAME_BYTES: usize = 256;

/// The layout of `shadow` (a communicator of `size` ranks; this process is `rank`).
pub fn layout(shadow: MPI_Comm, size: usize, rank: usize, mode: NodeMode) -> Layout {
    let keys = match mode {
        NodeMode::Hostname => names(shadow, size),
        NodeMode::Shared => shared_key(shadow, rank).and_then(|k| gather_keys(shadow, size, k)),
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

/// The lowest rank (in `shadow`) of this rank's shared-memory group.
fn shared_key(shadow: MPI_Comm, rank: usize) -> Option<u64> {
    let mut node: MPI_Comm = consts::comm_null();
    let (me, mut low) = (rank as c_int, 0 as c_int);
    // SAFETY: collective split of a valid communicator, out-pointers to locals; the node
    // communicator is freed here and nowhere else.
    unsafe {
        ok(PMPI_Comm_split_type(
            shadow,
            consts::COMM_TYPE_SHARED(),
            0,
            consts::info_null(),
            &mut node,
        ))?;
        let rc = PMPI_Allreduce(
            &me as *const c_int as *const c_void,
            &mut low as *mut c_int as *mut c_void,
            1,
            consts::dt_int(),
            consts::op_min(),
            node,
        );
        PMPI_Comm_free(&mut node);
        ok(rc)?;
    }
    Some(low as u64)
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
