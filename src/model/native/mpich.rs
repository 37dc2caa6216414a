//! MPICH 4.0.2: the MPIR algorithms its default selection runs, priced (see the parent module
//! for units, sources and assumptions).
//!
//! # MPICH 4.0.2 (`ch4:ucx`) default selection
//!
//! The ch4 JSON picks a composition: allreduce/reduce on a communicator spanning several nodes
//! with more than one rank on some node (`comm_hierarchy=parent`) run intra-node SHM (POSIX
//! release-gather) steps around an MPIR collective on the node leaders; a communicator inside
//! one node runs the SHM allreduce; with one rank per node (no hierarchy) they call the netmod,
//! which for UCX (no hcoll) is `MPIR_*_impl` with the MPIR JSON. reduce_scatter and
//! allgatherv always go to the netmod, i.e. the MPIR JSON, even inside a node. **This module
//! models the MPIR (inter-node) algorithms**: for a hierarchical communicator read `p` as the
//! number of nodes (the node-leader communicator); the SHM steps are not priced.
//!
//! | collective | rule (bytes as keyed above; P = 2^⌊log2 p⌋, count = bytes / 8) |
//! |---|---|
//! | allreduce | bytes ≤ 8 RD; built-in op: count < P RD, else Rab (reduce_scatter_allgather); user op: RD |
//! | reduce | bytes ≤ 2048 binomial; built-in op: count < P binomial, else Rab (reduce_scatter_gather); user op: binomial |
//! | reduce_scatter | commutative: total < 512K recursive halving, else pairwise; non-commutative (equal counts): p = 2^k noncommutative butterfly, else recursive doubling |
//! | allgatherv | p = 2^k: total < 512K recursive doubling, else ring; other p: total < 80K (81920) Bruck, else ring |
//!
//! MPICH keys on whether the op is *built in*, not on commutativity: every non-commutative op
//! is a user op, and a commutative op is assumed built in (a commutative user op gets RD /
//! binomial, not modelled). MPICH segments nothing in these algorithms.

use super::*;

// ---------------------------------------------------------------------------------------------
// MPICH 4.0.2 MPIR algorithms (the csel JSON `maint/tuning/coll/mpir/generic.json`).
// ---------------------------------------------------------------------------------------------

/// `avg_msg_size<=8` for allreduce, `<=2048` for reduce.
const MPICH_ALLREDUCE_SHORT: usize = 8;
const MPICH_REDUCE_SHORT: usize = 2048;
/// `total_msg_size<524288` (reduce_scatter, power-of-two allgatherv), `<81920` (allgatherv).
const MPICH_LONG: usize = 524288;
const MPICH_ALLGATHERV_BRUCK: usize = 81920;

pub(super) fn mpich_allreduce(x: &Cx, builtin: bool) -> (&'static str, f64) {
    if x.bytes <= MPICH_ALLREDUCE_SHORT || !builtin || x.count < x.pow2_floor {
        ("recursive_doubling", recursive_doubling_allreduce(x))
    } else {
        (
            "reduce_scatter_allgather",
            rabenseifner_allreduce(x, mpich_fold_in(x)),
        )
    }
}

pub(super) fn mpich_reduce(x: &Cx, builtin: bool) -> (&'static str, f64) {
    if x.bytes <= MPICH_REDUCE_SHORT || !builtin || x.count < x.pow2_floor {
        (
            "binomial",
            x.scheme(Collective::Reduce, Scheme::Binomial, 1),
        )
    } else {
        (
            "reduce_scatter_gather",
            rabenseifner_reduce(x, mpich_fold_in(x)),
        )
    }
}

pub(super) fn mpich_reduce_scatter(x: &Cx, commutative: bool) -> (&'static str, f64) {
    if commutative {
        if x.bytes < MPICH_LONG {
            ("recursive_halving", recursive_halving_reduce_scatter(x))
        } else {
            // p − 1 steps of m/p each way, reduced: the ring's closed form
            (
                "pairwise",
                x.scheme(Collective::ReduceScatter, Scheme::Ring, 1),
            )
        }
    } else if x.pow2 {
        // Träff's butterfly over halving buffers, no fold-in
        ("noncommutative", halving_rounds(x))
    } else {
        // round k sends all but the 2^k blocks of its own subtree
        let frac = x.q - (x.pf - 1.0) / x.pf;
        ("recursive_doubling", x.q * x.a + frac * (x.b + x.g) * x.m)
    }
}

pub(super) fn mpich_allgatherv(x: &Cx) -> (&'static str, f64) {
    let ring = || ("ring", x.scheme(Collective::Allgatherv, Scheme::Ring, 1));
    if x.pow2 {
        if x.bytes < MPICH_LONG {
            // log2 p exchanges of doubling size: pcoll's butterfly closed form (p = 2^k)
            (
                "recursive_doubling",
                x.scheme(Collective::Allgatherv, Scheme::Butterfly, 1),
            )
        } else {
            ring()
        }
    } else if x.bytes < MPICH_ALLGATHERV_BRUCK {
        (
            "brucks",
            x.scheme(Collective::Allgatherv, Scheme::Circulant, 1),
        )
    } else {
        ring()
    }
}
