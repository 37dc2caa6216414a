//! What the native MPI runs for a collective, and its alpha-beta-gamma price.
//!
//! [`native`] answers "which algorithm does `mpi`'s default selection run for `coll` on `p`
//! ranks with `bytes` bytes, and how long does the model say it takes". It exists so that a
//! pcoll algorithm is compared with what the MPI really runs rather than with an idealised
//! native. Units and the message-size key are those of the parent module: reduce/allreduce key
//! on `count · type size`, reduce_scatter/allgatherv on the total over all ranks, equal counts
//! assumed. Prices are full duplex, single port, one message per round costing `α + β·s`
//! (`+ γ·s` when the receiver reduces it), like [`super::time_with_segments`], and reuse it
//! wherever the native algorithm is one of pcoll's schemes.
//!
//! # Sources read
//!
//! * **Open MPI 4.1.4** (the version installed here; open-mpi/ompi tag `v4.1.4`):
//!   `ompi/mca/coll/tuned/coll_tuned_decision_fixed.c` (the fixed rules,
//!   `ompi_coll_tuned_{allreduce,reduce,reduce_scatter,allgatherv,bcast}_intra_dec_fixed`),
//!   `coll_tuned_{allreduce,reduce,reduce_scatter,allgatherv,bcast}_decision.c` (`do_this`),
//!   `ompi/mca/coll/base/coll_base_{allreduce,reduce,reduce_scatter,allgatherv,bcast,topo}.c`,
//!   `coll_base_functions.h` (`COLL_BASE_COMPUTED_SEGCOUNT`), `coll/basic` scatterv/gatherv.
//!   The decision file is byte-identical from v4.1.0 through v4.1.7 and v5.0.0–v5.0.10 (`git
//!   diff`); open-mpi/ompi main changed the allreduce rules in 2026 (not modelled).
//! * **MPICH 4.0.2** (Debian `libmpich12 4.0.2-3`, `ch4:ucx`, no hcoll): the three selection
//!   JSONs embedded in `libmpich.so.12.2.2` (`strings`), which are identical to
//!   `maint/tuning/coll/{mpir/generic,ch4/generic,ch4/posix_generic}.json` at pmodels/mpich tag
//!   `v4.0.2`; `src/mpi/coll/src/csel.c` (what `avg_msg_size`, `total_msg_size`, `count<pow2`,
//!   `comm_hierarchy` test), `src/mpid/ch4/src/ch4_coll_impl.h` (compositions),
//!   `src/mpid/ch4/netmod/ucx/ucx_coll.h` (netmod → `MPIR_*_impl`),
//!   `src/mpi/comm/commutil.c` (hierarchy kinds) and the algorithm files under
//!   `src/mpi/coll/{allreduce,reduce,reduce_scatter,allgatherv}/`.
//!
//! The rules: Open MPI's fixed decision tables in `ompi`, MPICH's selection in `mpich`.
//!
//! # Assumptions and approximations
//!
//! * Elements are [`ELEMENT_BYTES`] = 8 bytes (`MPI_DOUBLE`, pcoll-bench's default) for the
//!   count-based fallbacks (`count < p`, `count < 2^⌊log2 p⌋`).
//! * Root 0 for reduce (Open MPI's in-order binary tree then pays one extra send p−1 → 0).
//! * Non-power-of-two Rabenseifner follows each MPI's code: Open MPI pairs the 2r extra ranks
//!   with a half-vector exchange (2 messages of m/2), MPICH sends the whole vector (1 message).
//!   Recursive-halving / butterfly reduce_scatter with r extra ranks: the first r blocks are
//!   double, so the rank that keeps the lower half each round is priced (exact in this model).
//! * Binary trees are Open MPI's heap-shaped trees (children 2i+1, 2i+2), priced exactly in the
//!   round model; the in-order binary tree is priced as the same shape (approximation).
//! * The k-nomial bcast sends to its children farthest first, one at a time; its price is the
//!   root's number of sends, which is the critical path for that order.
//! * MPICH's recursive-doubling reduce_scatter on non-powers of two omits its extra
//!   `nprocs_completed` sends (the MPICH comment's own cost formula, with ⌈log2 p⌉ rounds).
//! * Open MPI's split binary and scatter-allgather bcasts: approximate closed forms.
//! * MPI_Bcast, MPI_Allgather, MPI_Reduce_scatter_block: see `family`.

mod family;
mod mpich;
mod ompi;

pub use family::{OMPI_ALLGATHER, OMPI_REDUCE_SCATTER_BLOCK};

use super::{time_with_segments, Duplex, Scheme};
use crate::algo::{Collective, CostParams};
use crate::sched::blocks::ceil_log2;
use mpich::{mpich_allgatherv, mpich_allreduce, mpich_reduce, mpich_reduce_scatter};
pub use ompi::{
    heap_tree_rounds, knomial_rounds, lookup, ompi_bcast, Row, OMPI_ALLGATHERV, OMPI_ALLREDUCE,
    OMPI_ALLREDUCE_NONCOMMUTATIVE, OMPI_BCAST, OMPI_KNOMIAL_RADIX, OMPI_REDUCE,
    OMPI_REDUCE_NONCOMMUTATIVE, OMPI_REDUCE_SCATTER,
};
use ompi::{ompi_allgatherv, ompi_allreduce, ompi_bcast_cx, ompi_reduce, ompi_reduce_scatter, ANY};

/// Element size assumed for the MPIs' count-based tests (`MPI_DOUBLE`).
pub const ELEMENT_BYTES: usize = 8;

pub use crate::mpi::{Abi, Mpi, Rules};

/// The algorithm an MPI's default selection runs, and its predicted time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NativeChoice {
    /// The algorithm that actually runs, after the implementation's own fallbacks (e.g. Open
    /// MPI's ring with `count < p` reports `recursive_doubling`).
    pub algorithm: &'static str,
    /// Predicted seconds.
    pub time: f64,
}

/// What `mpi`'s default selection runs for `coll` on `p` ranks with `bytes` bytes (the table's
/// key: reduce/allreduce = count·type size; reduce_scatter/allgatherv = total over all ranks,
/// equal counts assumed) and `commutative` (MPICH: built-in) op, priced with `c`. `p <= 1`:
/// time 0. O(log p) per call. See the module docs for the rules and assumptions.
pub fn native(
    mpi: Mpi,
    coll: Collective,
    p: usize,
    bytes: usize,
    commutative: bool,
    c: &CostParams,
) -> NativeChoice {
    if p <= 1 {
        return NativeChoice {
            algorithm: "local",
            time: 0.0,
        };
    }
    let x = Cx::new(p, bytes, c);
    let (algorithm, time) = match mpi.rules() {
        Rules::Textbook => textbook(coll, p, bytes, commutative, c),
        Rules::OpenMpi => match coll {
            Collective::Allreduce => ompi_allreduce(&x, commutative),
            Collective::Reduce => ompi_reduce(&x, commutative),
            Collective::ReduceScatter => ompi_reduce_scatter(&x, commutative),
            Collective::Allgatherv => ompi_allgatherv(&x),
            Collective::Bcast => ompi_bcast_cx(&x, x.count),
            Collective::Allgather => family::ompi_allgather(&x),
            Collective::ReduceScatterBlock => family::ompi_reduce_scatter_block(&x, commutative),
        },
        Rules::Mpich => match coll {
            Collective::Allreduce => mpich_allreduce(&x, commutative),
            Collective::Reduce => mpich_reduce(&x, commutative),
            Collective::ReduceScatter => mpich_reduce_scatter(&x, commutative),
            Collective::Allgatherv => mpich_allgatherv(&x),
            Collective::Bcast => family::mpich_bcast(&x),
            Collective::Allgather => family::mpich_allgather(&x),
            Collective::ReduceScatterBlock => family::mpich_reduce_scatter_block(&x, commutative),
        },
    };
    NativeChoice { algorithm, time }
}

/// An MPI whose selection is not modelled ([`Rules::Textbook`]): the fastest of the textbook
/// algorithms every MPI implements (binomial trees, pipelined chains, recursive
/// halving/doubling with Rabenseifner's fold-in, rings, van de Geijn's bcast), priced with
/// pcoll's own closed forms. pcoll's greedy and circulant schedules are not among them, so a
/// pcoll algorithm wins a cell only where it beats all of those (and by the table's margin).
fn textbook(
    coll: Collective,
    p: usize,
    bytes: usize,
    commutative: bool,
    c: &CostParams,
) -> (&'static str, f64) {
    use crate::algo::Algorithm::*;
    [Binomial, Pipeline, Butterfly, Ring, ScatterAllgather]
        .into_iter()
        .filter(|a| crate::Algorithm::available(coll).contains(a))
        .filter(|a| commutative || a.order_preserving(coll))
        .map(|a| (a.name(), crate::model::predict(coll, a, p, bytes, c).time))
        .fold(
            ("binomial", f64::INFINITY),
            |b, x| if x.1 < b.1 { x } else { b },
        )
}

// ---------------------------------------------------------------------------------------------
// Pricing context and the shared closed forms.
// ---------------------------------------------------------------------------------------------

/// Everything the closed forms need, computed once per call.
struct Cx {
    p: usize,
    pf: f64,
    bytes: usize,
    m: f64,
    /// Elements of [`ELEMENT_BYTES`] (at least 1 when bytes > 0).
    count: usize,
    a: f64,
    b: f64,
    g: f64,
    /// ⌈log2 p⌉, ⌊log2 p⌋, P = 2^⌊log2 p⌋, r = p − P.
    q: f64,
    lo: f64,
    pow2_floor: usize,
    pp: f64,
    r: usize,
    pow2: bool,
    c: CostParams,
}

impl Cx {
    fn new(p: usize, bytes: usize, c: &CostParams) -> Cx {
        let lo = (usize::BITS - 1 - p.leading_zeros()) as usize;
        let pow2_floor = 1usize << lo;
        Cx {
            p,
            pf: p as f64,
            bytes,
            m: bytes as f64,
            count: bytes.div_ceil(ELEMENT_BYTES),
            a: c.alpha,
            b: c.beta,
            g: c.gamma,
            q: ceil_log2(p) as f64,
            lo: lo as f64,
            pow2_floor,
            pp: pow2_floor as f64,
            r: p - pow2_floor,
            pow2: p.is_power_of_two(),
            c: *c,
        }
    }
    /// One message of `s` bytes, reduced by the receiver.
    fn red(&self, s: f64) -> f64 {
        self.a + (self.b + self.g) * s
    }
    /// One message of `s` bytes.
    fn msg(&self, s: f64) -> f64 {
        self.a + self.b * s
    }
    /// pcoll's closed form for `scheme` with `n` segments (full duplex).
    fn scheme(&self, coll: Collective, scheme: Scheme, n: usize) -> f64 {
        time_with_segments(coll, scheme, self.p, self.bytes, &self.c, Duplex::Full, n)
    }
}

/// Recursive-doubling allreduce (both MPIs; Open MPI also via ring with count < p). Non-power
/// of two: the 2r extra ranks fold the whole vector in first and get the result back last.
fn recursive_doubling_allreduce(x: &Cx) -> f64 {
    if x.pow2 {
        x.q * x.red(x.m)
    } else {
        (x.lo + 2.0) * x.msg(x.m) + (x.lo + 1.0) * x.g * x.m
    }
}

/// Reduce-scatter by recursive halving followed by the matching allgather / gather over P
/// ranks (Rabenseifner's core): `(rs, gather)` = the two halves of the time.
fn rabenseifner_core(x: &Cx) -> (f64, f64) {
    let frac = 1.0 - 1.0 / x.pp;
    (
        x.lo * x.a + frac * (x.b + x.g) * x.m,
        x.lo * x.a + frac * x.b * x.m,
    )
}

/// Open MPI's non-power-of-two fold-in: even/odd pairs exchange half vectors, reduce, and the
/// odd rank sends its reduced half to the even one (2 messages of m/2).
fn ompi_fold_in(x: &Cx) -> f64 {
    2.0 * x.a + x.b * x.m + x.g * x.m / 2.0
}

/// MPICH's non-power-of-two fold-in: one rank of each pair sends the whole vector.
fn mpich_fold_in(x: &Cx) -> f64 {
    x.red(x.m)
}

/// Rabenseifner allreduce with the given fold-in (0 for powers of two): fold-in,
/// reduce-scatter, allgather, and the result sent back to the r folded ranks.
fn rabenseifner_allreduce(x: &Cx, fold_in: f64) -> f64 {
    let (rs, ag) = rabenseifner_core(x);
    if x.pow2 {
        rs + ag
    } else {
        fold_in + rs + ag + x.msg(x.m)
    }
}

/// Rabenseifner reduce (reduce-scatter + binomial gather) to root 0, which both MPIs keep in
/// the power-of-two group.
fn rabenseifner_reduce(x: &Cx, fold_in: f64) -> f64 {
    let (rs, gather) = rabenseifner_core(x);
    if x.pow2 {
        rs + gather
    } else {
        fold_in + rs + gather
    }
}

/// The halving rounds of recursive-halving / butterfly reduce_scatter over P ranks with p
/// equal blocks, the first r of the P virtual blocks double (two ranks' blocks). Round j
/// splits windows of 2W blocks (W = P/2^j); the rank keeping the lower half of window 0
/// receives (and reduces) W + min(r, W) blocks of m/p, the most of any rank, and partners
/// always share their history, so that rank's sum is the critical path.
fn halving_rounds(x: &Cx) -> f64 {
    let mut w = x.pow2_floor / 2;
    let mut blocks = 0usize;
    let mut rounds = 0usize;
    while w >= 1 {
        blocks += w + x.r.min(w);
        rounds += 1;
        w /= 2;
    }
    rounds as f64 * x.a + (x.b + x.g) * x.m * blocks as f64 / x.pf
}

/// Recursive-halving reduce_scatter (Open MPI's copy of MPICH's): fold-in of the whole
/// vector, halving, then each folded rank gets its block back.
fn recursive_halving_reduce_scatter(x: &Cx) -> f64 {
    let core = halving_rounds(x);
    if x.pow2 {
        core
    } else {
        x.red(x.m) + core + x.msg(x.m / x.pf)
    }
}

/// Open MPI's butterfly reduce_scatter (Träff 2005): whole-vector fold-in, butterfly halving,
/// then blocks move to their owners by the mirror permutation (none at P = 2; a rank serving
/// a folded rank sends twice).
fn ompi_butterfly_reduce_scatter(x: &Cx) -> f64 {
    let core = halving_rounds(x);
    let block = x.msg(x.m / x.pf);
    if x.pow2 {
        core + if x.p > 2 { block } else { 0.0 }
    } else {
        let sends = if x.pow2_floor >= 4 { 2.0 } else { 1.0 };
        x.red(x.m) + core + sends * block
    }
}
