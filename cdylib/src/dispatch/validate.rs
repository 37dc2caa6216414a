//! Validation of a call's arguments into a [`Valid`] call pcoll can serve itself (its
//! [`CallSpec`] and the layout of its elements), or `None`: the native collective takes the
//! call (it reports bad input with its own error class, and serves what pcoll does not).

use super::call::{nonneg, Args};
use crate::comm;
use crate::consts;
use crate::mpi_types::{self, TypeFacts};
use crate::state::Global;
use pcoll::algo::{CallSpec, Collective};
use std::os::raw::{c_int, c_void};

/// A validated call pcoll can serve itself.
#[derive(Clone)]
pub(super) struct Valid {
    pub spec: CallSpec,
    /// Layout of the elements the program moves (bcast and allgather(v): of `MPI_BYTE`).
    pub facts: TypeFacts,
    pub in_place: bool,
    /// Bcast and allgather(v), served in bytes (see [`in_bytes`]): `Some(staging)`, where
    /// `staging` says the blocks are packed into a scratch buffer first (a receive type with
    /// holes, or displacements not usable as they are); reductions: `None`.
    pub bytes: Option<bool>,
    /// Layout of the user's datatype (`facts` before the switch to bytes).
    pub user: TypeFacts,
}

/// Facts of `MPI_BYTE`.
const BYTE: TypeFacts = TypeFacts {
    size: 1,
    lb: 0,
    extent: 1,
    true_lb: 0,
    true_extent: 1,
    permuted: false,
};

/// Allgather(v) and bcast are served in bytes (their total fits an MPI int count: calls beyond
/// it went to the MPI, [`elements`]): MPI lets every
/// rank describe the same data with its own receive type (equal type signatures, different
/// element sizes), so only byte offsets mean the same on every rank. A receive type without
/// holes is used as bytes in place; one with holes is packed into a scratch buffer
/// (`MPI_Pack`, which on a homogeneous system is the data bytes in order), the blocks are
/// exchanged there and unpacked at the end. Then messages may be split anywhere (chunks,
/// segments) and every rank splits them alike. Counts and displacements become bytes;
/// returns the staging flag. `placed`: the displacements are usable as they are (else
/// staged: the user's are read at unpacking).
pub(super) fn in_bytes(
    counts: &mut [usize],
    displs: &mut [usize],
    f: &TypeFacts,
    placed: bool,
) -> bool {
    let staging = !f.contiguous() || !placed;
    let mut off = 0;
    for (c, d) in counts.iter_mut().zip(displs.iter_mut()) {
        *c *= f.size;
        if staging {
            *d = off;
            off += *c;
        } else {
            *d *= f.size; // extent == size
        }
    }
    staging
}

/// Counts and displacements of a call as `usize`, and whether the displacements are the
/// user's (allgatherv's outside `0..=INT_MAX` are not: the call is staged).
type Shape = (Vec<usize>, Vec<usize>, bool);

/// `None`: hand the call to the native collective (bad input is reported by it, with its
/// error class; calls pcoll cannot serve are served by it).
pub(super) fn validate(g: &Global, a: &Args) -> Option<Valid> {
    let (p, rank) = comm::facts(a.comm).ok()??;
    let facts = mpi_types::type_facts(a.dt).ok()?;
    if a.coll.reduces() && degenerate(&facts) || !a.coll.reduces() && elements(a, &facts) {
        return None;
    }
    if std::ptr::eq(a.recvbuf, consts::in_place()) {
        return None;
    }
    let shape = shape(a, p)?;
    if !a.coll.reduces() && !types_sendable(a, &shape.0) {
        return None;
    }
    let commutative = op_facts(a, &facts)?;
    if !buffers_ok(a, p, rank, &shape.0, &facts) {
        return None;
    }
    Some(valid(g, a, (p, rank), shape, commutative, facts))
}

/// A datatype pcoll's programs cannot address by element (an extent <= 0, no data): a
/// reduction's is the same on every rank, which all go to the MPI. Bcast's and
/// allgather(v)'s ranks may each describe the data with another type (a root's type of
/// extent 0 sends one element `count` times), so a rank's own type must not send it to the
/// MPI alone while the others run pcoll's algorithm (it hung): such types are packed into
/// the staging buffer (`in_bytes`, as types with holes).
fn degenerate(f: &TypeFacts) -> bool {
    f.extent <= 0 || f.true_extent < 0 || f.size == 0
}

/// Bcast's or allgather(v)'s data beyond an int count of bytes, the same on every rank
/// (equal type signatures): such a call goes to the MPI on every rank. pcoll serves these
/// two in bytes only (`in_bytes`): in elements, ranks whose types differ in size would
/// split segments and blocks at different bytes (a truncation error), and a rank whose
/// count needs the `_c` form would go to the MPI alone (a hang; session 52's bug hunt).
fn elements(a: &Args, f: &TypeFacts) -> bool {
    int_total(a.counts.iter().map(|&c| c.max(0) as usize), f.size).is_none()
}

/// The bytes of `counts` elements of `size` bytes, if they fit an MPI int count.
fn int_total(counts: impl Iterator<Item = usize>, size: usize) -> Option<usize> {
    let mut total = 0usize;
    for c in counts {
        total = total.checked_add(c.checked_mul(size)?)?;
    }
    (total <= c_int::MAX as usize).then_some(total)
}

/// The counts (and allgatherv's displacements) as `usize` (`None`: a negative or too large
/// count, or per-rank arrays that do not have one entry per rank).
fn shape(a: &Args, p: usize) -> Option<Shape> {
    let counts = nonneg(&a.counts)?;
    Some(match a.coll {
        Collective::Reduce | Collective::Allreduce => (counts, vec![], true),
        // The buffer as one block (`in_bytes` makes it bytes).
        Collective::Bcast => (counts, vec![0], true),
        _ => {
            if counts.len() != p {
                return None;
            }
            if a.coll.base() != Collective::Allgatherv {
                return Some((counts, vec![], true));
            }
            if a.displs.len() != p {
                return None;
            }
            // Displacements outside 0..=INT_MAX are valid (each rank's own, from its receive
            // buffer): a rank with such must not go to the MPI alone (it hung, session 52's
            // bug hunt); staged, `in_bytes` sets packed ones.
            match nonneg(&a.displs) {
                Some(d) => (counts, d, true),
                None => (counts, vec![0; p], false),
            }
        }
    })
}

/// Bcast's and allgather(v)'s datatypes pass the MPI's own send check (an uncommitted one is
/// then reported by the MPI's collective; the reductions' `MPI_Reduce_local` checks see to
/// theirs).
fn types_sendable(a: &Args, counts: &[usize]) -> bool {
    let n = counts.iter().fold(0usize, |m, &c| m.max(c));
    mpi_types::sendable(a.dt, n)
        && (a.coll == Collective::Bcast
            || a.in_place()
            || mpi_types::sendable(a.sendtype, a.sendcount.max(0) as usize))
}

/// Whether the op commutes (`true` for allgatherv); `None` if the MPI rejects the op or its
/// use with the datatype.
fn op_facts(a: &Args, facts: &TypeFacts) -> Option<bool> {
    if !a.coll.reduces() {
        return Some(true);
    }
    let commutative = mpi_types::op_commutative(a.op).ok()?;
    mpi_types::op_accepts(a.op, a.dt, facts).ok()?;
    Some(commutative)
}

/// The buffers and the root fit the call: no NULL buffer with data, no input aliasing the
/// output without `MPI_IN_PLACE`, `MPI_IN_PLACE` only where allowed.
fn buffers_ok(a: &Args, p: usize, rank: usize, counts: &[usize], facts: &TypeFacts) -> bool {
    let in_place = a.in_place();
    let null = |ptr: *const c_void, n: usize| ptr.is_null() && n > 0;
    // The same buffer as input and output without MPI_IN_PLACE is erroneous; the MPI decides
    // how to report it (Open MPI: MPI_ERR_BUFFER for allreduce). A bcast has one buffer.
    if a.coll != Collective::Bcast
        && !in_place
        && std::ptr::eq(a.sendbuf, a.recvbuf)
        && !a.sendbuf.is_null()
    {
        let is_root_or_all = a.coll != Collective::Reduce || a.root == rank as i64;
        if is_root_or_all {
            return false;
        }
    }
    match a.coll.base() {
        Collective::Bcast => {
            (0..p as i64).contains(&a.root) && !unplaced(a.recvbuf, counts[0], facts)
        }
        Collective::Reduce => {
            if a.root < 0 || a.root >= p as i64 {
                return false;
            }
            let is_root = a.root as usize == rank;
            if in_place && !is_root {
                return false;
            }
            !((!in_place && null(a.sendbuf, counts[0])) || (is_root && null(a.recvbuf, counts[0])))
        }
        Collective::Allreduce => {
            !((!in_place && null(a.sendbuf, counts[0])) || null(a.recvbuf, counts[0]))
        }
        Collective::ReduceScatter => {
            let total: usize = counts.iter().sum();
            !(total > c_int::MAX as usize
                || (!in_place && null(a.sendbuf, total))
                || null(a.recvbuf, counts[rank]))
        }
        _ => allgatherv_ok(a, rank, counts, facts),
    }
}

/// A NULL buffer with data that the type does not place elsewhere: an error, which the MPI
/// reports. NULL is `MPI_BOTTOM` in both ABIs, and with a type whose data start away from 0
/// (absolute addresses, `MPI_Get_address`) it is a valid buffer, which bcast and
/// allgather(v) serve through `MPI_Pack` / `MPI_Unpack` (such a type has holes or an offset,
/// so it is staged). Those two must: their ranks may describe the data with different types,
/// so one rank's `MPI_BOTTOM` sent to native while the others ran a pcoll algorithm hung.
fn unplaced(buf: *const c_void, n: usize, f: &TypeFacts) -> bool {
    // A type of no data (size 0) touches no buffer: NULL is as good as any (until session
    // 51 that rank went native alone with a forced algorithm and the others hung).
    buf.is_null() && n > 0 && f.size > 0 && f.true_lb == 0
}

/// Allgatherv's receive buffer NULL with a block of data below the lowest address a process
/// can map (Linux's `vm.mmap_min_addr`, 64 KiB by default): an error. A NULL receive buffer
/// is placed by the displacements too (`MPI_BOTTOM` with absolute ones, in units of the
/// type's extent: until session 52 that rank went to the MPI alone, or reported
/// `MPI_ERR_BUFFER`).
pub(super) fn recv_unplaced_v(a: &Args, f: &TypeFacts) -> bool {
    const LOWEST: i128 = 65536;
    let at = |d: i64| d as i128 * f.extent as i128 + f.true_lb as i128;
    a.recvbuf.is_null()
        && f.size > 0
        && (a.counts.iter().zip(a.displs.iter())).any(|(&c, &d)| c > 0 && at(d) < LOWEST)
}

/// Allgatherv's buffers, and its send block matching this rank's receive block.
fn allgatherv_ok(a: &Args, rank: usize, counts: &[usize], facts: &TypeFacts) -> bool {
    if recv_unplaced_v(a, facts) {
        return false;
    }
    if a.in_place() {
        return true;
    }
    let Ok(sf) = mpi_types::type_facts(a.sendtype) else {
        return false;
    };
    if a.sendcount < 0 || unplaced(a.sendbuf, a.sendcount as usize, &sf) {
        return false;
    }
    // Type signatures that differ: the MPI reports it.
    (a.sendcount as usize) * sf.size == counts[rank] * facts.size
}

/// The validated call: allgatherv switched to bytes where it can be (see [`in_bytes`]).
fn valid(
    g: &Global,
    a: &Args,
    (p, rank): (usize, usize),
    (mut counts, mut displs, placed): Shape,
    commutative: bool,
    facts: TypeFacts,
) -> Valid {
    let in_place = a.in_place();
    // Allgather(v) and bcast: ranks may describe the same bytes with different types.
    let bytes = if !a.coll.reduces() {
        Some(in_bytes(&mut counts, &mut displs, &facts, placed))
    } else {
        None
    };
    if a.coll == Collective::Bcast {
        displs.clear();
    }
    let spec = CallSpec {
        coll: a.coll,
        p,
        rank,
        root: if a.coll.has_root() {
            a.root as usize
        } else {
            0
        },
        counts,
        displs,
        commutative,
        elem_bytes: if bytes.is_some() { 1 } else { facts.size },
        seg_elems: 0,
        params: g.table.model(),
        // `In` aliases `Out`: MPI_IN_PLACE, or (allgatherv) our block converted into the
        // receive buffer because the send type differs, or packed into the staging buffer
        // (see `serve::run`).
        in_place: in_place
            || (a.coll.base() == Collective::Allgatherv
                && (a.sendtype != a.dt || bytes == Some(true))),
    };
    Valid {
        spec,
        facts: if bytes.is_some() { BYTE } else { facts },
        in_place,
        bytes,
        user: facts,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(size: usize, extent: isize) -> TypeFacts {
        TypeFacts {
            size,
            lb: 0,
            extent,
            true_lb: 0,
            true_extent: extent,
            permuted: false,
        }
    }

    #[test]
    fn allgatherv_in_bytes() {
        // No holes: bytes in place, displacements scaled.
        let (mut c, mut d) = (vec![3, 0, 5], vec![10, 2, 0]);
        assert!(!in_bytes(&mut c, &mut d, &facts(8, 8), true));
        assert_eq!((c, d), (vec![24, 0, 40], vec![80, 16, 0]));
        // Holes: packed one after another in rank order.
        let (mut c, mut d) = (vec![3, 0, 5], vec![10, 2, 0]);
        assert!(in_bytes(&mut c, &mut d, &facts(6, 8), true));
        assert_eq!((c, d), (vec![18, 0, 30], vec![0, 18, 18]));
        // Two ranks describing the same bytes with different types agree on every block.
        let (mut a, mut da) = (vec![12, 6], vec![0, 12]);
        let (mut b, mut db) = (vec![2, 1], vec![0, 2]);
        in_bytes(&mut a, &mut da, &facts(6, 8), true);
        in_bytes(&mut b, &mut db, &facts(36, 40), true);
        assert_eq!(a, b);
        // Displacements not usable as they are (outside 0..=INT_MAX): staged, packed.
        let (mut c, mut d) = (vec![3, 0, 5], vec![0, 0, 0]);
        assert!(in_bytes(&mut c, &mut d, &facts(8, 8), false));
        assert_eq!((c, d), (vec![24, 0, 40], vec![0, 24, 24]));
    }
}
