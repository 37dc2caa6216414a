//! What the native MPIs run for MPI_Bcast, MPI_Allgather and MPI_Reduce_scatter_block
//! (issue 15), in the style of the parent module. Keys: bcast on `count · type size`;
//! allgather and reduce_scatter_block on the total over all ranks (`bytes`), equal counts.
//!
//! # Sources read
//!
//! * **Open MPI 4.1.4** `ompi/mca/coll/tuned/coll_tuned_decision_fixed.c`:
//!   `ompi_coll_tuned_bcast_intra_dec_fixed` (already [`super::OMPI_BCAST`]),
//!   `ompi_coll_tuned_allgather_intra_dec_fixed` ([`OMPI_ALLGATHER`], keyed on the
//!   **per-rank** bytes `sdtype size · scount`), `ompi_coll_tuned_reduce_scatter_block_intra_dec_fixed`
//!   ([`OMPI_REDUCE_SCATTER_BLOCK`], keyed on the per-rank bytes `dtype size · rcount`;
//!   non-commutative ops: basic_linear); `ompi/mca/coll/base/coll_base_allgather.c`
//!   (recursive doubling on a non-power of two switches to Bruck; neighbor exchange on an
//!   odd p to the ring), `coll_base_reduce_scatter_block.c` (basic_linear = reduce to 0 +
//!   scatter; recursive halving and butterfly fold the extra ranks in first).
//! * **MPICH 4.0.2** `maint/tuning/coll/mpir/generic.json` (ch4 `generic.json` sends bcast
//!   without a node hierarchy, allgather and reduce_scatter_block to the netmod, i.e. MPIR):
//!   bcast: p < 8 binomial; p = 2^k: avg ≤ 12288 binomial, ≤ 524288 scatter +
//!   recursive-doubling allgather, else scatter + ring allgather; other p: ≤ 12288 binomial,
//!   else scatter + ring allgather. allgather: p = 2^k: total < 524288 recursive doubling, else
//!   ring; other p: total < 81920 Bruck, else ring. reduce_scatter_block: commutative: total <
//!   524288 recursive halving, else pairwise; non-commutative: p = 2^k noncommutative
//!   butterfly, else recursive doubling.

use super::{
    halving_rounds, lookup, ompi_bcast_cx, ompi_butterfly_reduce_scatter, ompi_reduce,
    recursive_halving_reduce_scatter, Cx, Row, ANY,
};
use crate::algo::Collective;
use crate::model::Scheme;

/// allgather, by per-rank bytes. 1 linear, 2 bruck, 3 recursive_doubling, 4 ring,
/// 5 neighbor, 6 two_proc (`communicator_size == 2`).
pub const OMPI_ALLGATHER: &[Row] = &[
    (3, &[], 6),
    (32, &[], 3),
    (64, &[(1024, 3), (65536, 5)], 4),
    (128, &[(512, 3), (65536, 5)], 4),
    (256, &[(512, 3), (131072, 5), (524288, 4), (1048576, 5)], 4),
    (
        512,
        &[
            (32, 3),
            (128, 2),
            (1024, 3),
            (131072, 5),
            (524288, 4),
            (1048576, 5),
        ],
        4,
    ),
    (1024, &[(64, 3), (256, 2), (2048, 3)], 5),
    (
        2048,
        &[
            (4, 3),
            (8, 2),
            (16, 3),
            (32, 2),
            (256, 3),
            (512, 2),
            (4096, 3),
        ],
        5,
    ),
    (4096, &[(32, 2), (128, 3), (512, 2), (4096, 3)], 5),
    (ANY, &[(2, 3), (8, 2), (16, 3), (512, 2), (4096, 3)], 5),
];

/// reduce_scatter_block, commutative, by per-rank bytes. 1 basic_linear,
/// 2 recursive_doubling, 3 recursive_halving, 4 butterfly.
pub const OMPI_REDUCE_SCATTER_BLOCK: &[Row] = &[
    (
        4,
        &[
            (4, 2),
            (8, 4),
            (16, 3),
            (128, 4),
            (256, 3),
            (4096, 4),
            (8192, 3),
            (131072, 4),
        ],
        1,
    ),
    (
        8,
        &[
            (8, 3),
            (32, 2),
            (256, 4),
            (8192, 3),
            (16384, 4),
            (1048576, 3),
        ],
        1,
    ),
    (
        16,
        &[(4, 1), (32, 3), (128, 4), (524288, 3), (4194304, 1)],
        4,
    ),
    (32, &[(32, 1), (524288, 3), (2097152, 1), (4194304, 3)], 4),
    (ANY, &[(4, 3), (16, 1), (65536, 4), (262144, 1)], 4),
];

/// MPICH's avg_msg_size / total_msg_size cuts.
const MPICH_BCAST_SHORT: usize = 12288;
const MPICH_LONG: usize = 524288;
const MPICH_BRUCK: usize = 81920;

pub(super) fn ompi_allgather(x: &Cx) -> (&'static str, f64) {
    let ring = || ("ring", x.scheme(Collective::Allgatherv, Scheme::Ring, 1));
    let bruck = || {
        let t = x.scheme(Collective::Allgatherv, Scheme::Circulant, 1);
        ("bruck", t)
    };
    match lookup(OMPI_ALLGATHER, x.p, x.bytes / x.p) {
        1 => {
            // linear gather to 0, then the tuned bcast of the whole
            let gather = (x.pf - 1.0) * x.msg(x.m / x.pf);
            ("linear", gather + ompi_bcast_cx(x, x.count).1)
        }
        2 => bruck(),
        3 if x.pow2 => (
            "recursive_doubling",
            x.scheme(Collective::Allgatherv, Scheme::Butterfly, 1),
        ),
        3 => bruck(),
        5 if x.p.is_multiple_of(2) => {
            let t = (x.pf / 2.0) * x.a + (x.pf - 1.0) / x.pf * x.b * x.m;
            ("neighbor", t)
        }
        6 if x.p == 2 => ("two_proc", x.msg(x.m / 2.0)),
        _ => ring(),
    }
}

pub(super) fn ompi_reduce_scatter_block(x: &Cx, commutative: bool) -> (&'static str, f64) {
    let alg = if commutative {
        lookup(OMPI_REDUCE_SCATTER_BLOCK, x.p, x.bytes / x.p)
    } else {
        1
    };
    match alg {
        2 => ("recursive_doubling", recursive_doubling_rs(x)),
        3 => ("recursive_halving", recursive_halving_reduce_scatter(x)),
        4 => ("butterfly", ompi_butterfly_reduce_scatter(x)),
        _ => {
            // tuned reduce of the whole vector to 0, then a linear scatter
            let reduce = ompi_reduce(x, commutative).1;
            ("basic_linear", reduce + (x.pf - 1.0) * x.msg(x.m / x.pf))
        }
    }
}

/// Recursive-doubling reduce_scatter: round k sends all but the 2^k blocks of its subtree.
fn recursive_doubling_rs(x: &Cx) -> f64 {
    let frac = x.q - (x.pf - 1.0) / x.pf;
    x.q * x.a + frac * (x.b + x.g) * x.m
}

pub(super) fn mpich_bcast(x: &Cx) -> (&'static str, f64) {
    let frac = (x.pf - 1.0) / x.pf;
    // binomial scatter: ⌈log2 p⌉ rounds, (p−1)/p of the data leaves the root
    let scatter = x.q * x.a + frac * x.b * x.m;
    if x.p < 8 || x.bytes <= MPICH_BCAST_SHORT {
        ("binomial", x.q * x.msg(x.m))
    } else if x.pow2 && x.bytes <= MPICH_LONG {
        let rd = x.q * x.a + frac * x.b * x.m;
        ("scatter_recursive_doubling_allgather", scatter + rd)
    } else {
        let ring = (x.pf - 1.0) * x.msg(x.m / x.pf);
        ("scatter_ring_allgather", scatter + ring)
    }
}

pub(super) fn mpich_allgather(x: &Cx) -> (&'static str, f64) {
    let ring = || ("ring", x.scheme(Collective::Allgatherv, Scheme::Ring, 1));
    if x.pow2 {
        if x.bytes < MPICH_LONG {
            let t = x.scheme(Collective::Allgatherv, Scheme::Butterfly, 1);
            ("recursive_doubling", t)
        } else {
            ring()
        }
    } else if x.bytes < MPICH_BRUCK {
        let t = x.scheme(Collective::Allgatherv, Scheme::Circulant, 1);
        ("brucks", t)
    } else {
        ring()
    }
}

pub(super) fn mpich_reduce_scatter_block(x: &Cx, commutative: bool) -> (&'static str, f64) {
    if commutative {
        if x.bytes < MPICH_LONG {
            ("recursive_halving", recursive_halving_reduce_scatter(x))
        } else {
            let t = x.scheme(Collective::ReduceScatter, Scheme::Ring, 1);
            ("pairwise", t)
        }
    } else if x.pow2 {
        ("noncommutative", halving_rounds(x))
    } else {
        ("recursive_doubling", recursive_doubling_rs(x))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::native::{native, Mpi};
    use crate::CostParams;

    #[test]
    fn tables_follow_the_source() {
        // communicator_size == 2: two_proc; < 32: recursive doubling.
        assert_eq!(lookup(OMPI_ALLGATHER, 2, 1 << 20), 6);
        assert_eq!(lookup(OMPI_ALLGATHER, 31, 1 << 20), 3);
        assert_eq!(lookup(OMPI_ALLGATHER, 40, 1023), 3);
        assert_eq!(lookup(OMPI_ALLGATHER, 40, 1024), 5);
        assert_eq!(lookup(OMPI_ALLGATHER, 5000, 1), 3);
        assert_eq!(lookup(OMPI_REDUCE_SCATTER_BLOCK, 2, 3), 2);
        assert_eq!(lookup(OMPI_REDUCE_SCATTER_BLOCK, 3, 131072), 1);
        assert_eq!(lookup(OMPI_REDUCE_SCATTER_BLOCK, 4, 100), 4);
        assert_eq!(lookup(OMPI_REDUCE_SCATTER_BLOCK, 12, 1 << 22), 4);
    }

    #[test]
    fn named_algorithms() {
        let c = CostParams::default();
        let name = |mpi, coll, p, bytes, comm| native(mpi, coll, p, bytes, comm, &c).algorithm;
        assert_eq!(
            name(Mpi::OpenMpi, Collective::Allgather, 2, 64, true),
            "two_proc"
        );
        // p = 6 < 32: recursive doubling, not a power of two: Bruck.
        assert_eq!(
            name(Mpi::OpenMpi, Collective::Allgather, 6, 64, true),
            "bruck"
        );
        assert_eq!(
            name(Mpi::OpenMpi, Collective::Allgather, 4, 64, true),
            "recursive_doubling"
        );
        let rsb = Collective::ReduceScatterBlock;
        assert_eq!(name(Mpi::OpenMpi, rsb, 4, 4 * 100, true), "butterfly");
        assert_eq!(name(Mpi::OpenMpi, rsb, 4, 4 * 100, false), "basic_linear");
        assert_eq!(
            name(Mpi::Mpich, Collective::Bcast, 4, 1 << 20, true),
            "binomial"
        );
        let big = name(Mpi::Mpich, Collective::Bcast, 8, 1 << 16, true);
        assert_eq!(big, "scatter_recursive_doubling_allgather");
        assert_eq!(
            name(Mpi::Mpich, Collective::Bcast, 9, 1 << 16, true),
            "scatter_ring_allgather"
        );
        assert_eq!(
            name(Mpi::Mpich, Collective::Allgather, 3, 1 << 10, true),
            "brucks"
        );
        assert_eq!(
            name(Mpi::Mpich, rsb, 3, 1 << 10, false),
            "recursive_doubling"
        );
    }
}
