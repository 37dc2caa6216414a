//! A rank that passes a NULL buffer with a non-zero count gets `MPI_ERR_BUFFER` (and a
//! non-root that passes `MPI_IN_PLACE` to a reduce gets the MPI's class for it), but only
//! after it has taken part in the collective with a zeroed scratch buffer standing in for the
//! bad one. The other ranks may have valid arguments (a NULL receive buffer at the root of
//! a reduce is the common case): they go on into the collective, native or pcoll, and would
//! wait for the erring rank forever (native MPICH hangs there above its eager limit; under pcoll
//! a non-root also waits for data from the root in most algorithms). With the stand-in every
//! rank completes; only the erring rank reports the error, which is what the standard asks of a
//! local argument check.

use crate::dispatch::{Args, Counts};
use crate::mpi_types;
use mpi_sys::*;
use pcoll::Collective;
use std::os::raw::{c_int, c_void};

/// Which buffers of a call need a stand-in, and how many bytes each.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct StandIn {
    pub send: Option<usize>,
    pub recv: Option<usize>,
}

/// Bytes of scratch that hold elements `[0, hi)` of `dt` when the buffer pointer is placed
/// `base_offset(dt)` bytes into the scratch (`None` on overflow or a non-positive extent).
fn span(dt: MPI_Datatype, hi: i64) -> Option<usize> {
    let f = mpi_types::type_facts(dt).ok()?;
    if hi <= 0 {
        return Some(0);
    }
    if f.extent <= 0 || f.true_extent < 0 {
        return None;
    }
    let n = usize::try_from(hi).ok()?;
    (n - 1)
        .checked_mul(f.extent as usize)?
        .checked_add(f.true_extent as usize)?
        .checked_add(f.true_lb.unsigned_abs())
}

/// Where the buffer pointer goes inside its scratch: data start at `pointer + true_lb`.
fn base_offset(dt: MPI_Datatype) -> usize {
    mpi_types::type_facts(dt).map_or(0, |f| {
        if f.true_lb < 0 {
            f.true_lb.unsigned_abs()
        } else {
            0
        }
    })
}

/// Bytes a stand-in receive buffer of `a` needs (`None`: cannot be sized, e.g. negative
/// displacements).
pub fn recv_bytes(a: &Args, rank: usize) -> Option<usize> {
    match a.coll.base() {
        Collective::Reduce | Collective::Allreduce | Collective::Bcast => {
            span(a.dt, *a.counts.first()?)
        }
        // In place, the receive buffer holds every block of the input.
        Collective::ReduceScatter if a.sendbuf == crate::consts::in_place() => {
            span(a.dt, a.counts.iter().sum())
        }
        Collective::ReduceScatter => span(a.dt, *a.counts.get(rank)?),
        _ => {
            let mut end = 0i64;
            for (c, d) in a.counts.iter().zip(a.displs.iter()) {
                if *c > 0 {
                    if *d < 0 {
                        return None;
                    }
                    end = end.max(d.checked_add(*c)?);
                }
            }
            span(a.dt, end)
        }
    }
}

/// Bytes a stand-in send buffer of `a` needs.
pub fn send_bytes(a: &Args) -> Option<usize> {
    match a.coll.base() {
        Collective::Allgatherv => span(a.sendtype, a.sendcount),
        Collective::Reduce | Collective::Allreduce => span(a.dt, *a.counts.first()?),
        Collective::Bcast => Some(0),
        _ => span(a.dt, a.counts.iter().sum()),
    }
}

/// Zeroed scratch of `n` bytes (at least 1, 16-byte aligned), or `None` if memory is short.
fn scratch(n: usize) -> Option<Vec<u128>> {
    let words = n.div_ceil(16).max(1);
    let mut v: Vec<u128> = Vec::new();
    v.try_reserve_exact(words).ok()?;
    v.resize(words, 0);
    Some(v)
}

/// Run `a` with the buffers named in `si` (NULL, or `MPI_IN_PLACE` where it is not allowed)
/// replaced by zeroed scratch, through `serve` (the normal dispatch path, given the
/// substituted arguments and the matching native call).
/// Returns `false` if the scratch could not be allocated (the rank then does not take part).
pub fn participate(
    a: &Args,
    si: StandIn,
    serve: impl FnOnce(&Args, &mut dyn FnMut() -> c_int) -> c_int,
) -> bool {
    let mut send_mem = match si.send.map(scratch) {
        Some(None) => return false,
        other => other.flatten(),
    };
    let mut recv_mem = match si.recv.map(scratch) {
        Some(None) => return false,
        other => other.flatten(),
    };
    let send_type = if a.coll.base() == Collective::Allgatherv {
        a.sendtype
    } else {
        a.dt
    };
    let recvbuf = recv_mem.as_mut().map_or(a.recvbuf, |m| {
        (m.as_mut_ptr() as *mut u8).wrapping_add(base_offset(a.dt)) as *mut c_void
    });
    let b = Args {
        coll: a.coll,
        sendbuf: match send_mem.as_mut() {
            // A bcast's one buffer is the receive buffer.
            _ if a.coll == Collective::Bcast => recvbuf as *const c_void,
            None => a.sendbuf,
            Some(m) => {
                (m.as_mut_ptr() as *mut u8).wrapping_add(base_offset(send_type)) as *const c_void
            }
        },
        recvbuf,
        counts: Counts::Many(a.counts.to_vec()),
        displs: a.displs.clone(),
        sendcount: a.sendcount,
        sendtype: a.sendtype,
        dt: a.dt,
        op: a.op,
        root: a.root,
        comm: a.comm,
        large_count: a.large_count,
    };
    let _ = serve(&b, &mut || native(&b));
    true
}

/// The native collective for `a` with the given `PMPI_` functions and count types (used only
/// on this error path, so it may allocate).
macro_rules! forward {
    ($a:expr, $count:ty, $disp:ty, $reduce:ident, $allreduce:ident, $rs:ident, $agv:ident,
     $bcast:ident, $ag:ident, $rsb:ident) => {{
        let a = $a;
        let cnt: Vec<$count> = a.counts.iter().map(|&c| c as $count).collect();
        let dsp: Vec<$disp> = a.displs.iter().map(|&d| d as $disp).collect();
        let root = a.root as c_int;
        // SAFETY: the caller's arguments with a valid scratch buffer standing in for a bad
        // one; the count arrays have one entry per rank as MPI requires (checked by
        // own_error).
        unsafe {
            match a.coll {
                Collective::Reduce => {
                    $reduce(a.sendbuf, a.recvbuf, cnt[0], a.dt, a.op, root, a.comm)
                }
                Collective::Allreduce => {
                    $allreduce(a.sendbuf, a.recvbuf, cnt[0], a.dt, a.op, a.comm)
                }
                Collective::ReduceScatter => {
                    $rs(a.sendbuf, a.recvbuf, cnt.as_ptr(), a.dt, a.op, a.comm)
                }
                Collective::Allgatherv => $agv(
                    a.sendbuf,
                    a.sendcount as $count,
                    a.sendtype,
                    a.recvbuf,
                    cnt.as_ptr(),
                    dsp.as_ptr(),
                    a.dt,
                    a.comm,
                ),
                Collective::Bcast => $bcast(a.recvbuf, cnt[0], a.dt, root, a.comm),
                Collective::Allgather => $ag(
                    a.sendbuf,
                    a.sendcount as $count,
                    a.sendtype,
                    a.recvbuf,
                    cnt[0],
                    a.dt,
                    a.comm,
                ),
                Collective::ReduceScatterBlock => {
                    $rsb(a.sendbuf, a.recvbuf, cnt[0], a.dt, a.op, a.comm)
                }
            }
        }
    }};
}

fn native(a: &Args) -> c_int {
    #[cfg(pcoll_large_count)]
    if a.large_count {
        return forward!(
            a,
            MPI_Count,
            MPI_Aint,
            PMPI_Reduce_c,
            PMPI_Allreduce_c,
            PMPI_Reduce_scatter_c,
            PMPI_Allgatherv_c,
            PMPI_Bcast_c,
            PMPI_Allgather_c,
            PMPI_Reduce_scatter_block_c
        );
    }
    forward!(
        a,
        c_int,
        c_int,
        PMPI_Reduce,
        PMPI_Allreduce,
        PMPI_Reduce_scatter,
        PMPI_Allgatherv,
        PMPI_Bcast,
        PMPI_Allgather,
        PMPI_Reduce_scatter_block
    )
}
