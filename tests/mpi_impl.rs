//! The running MPI (`pcoll::mpi::Mpi`): which table, native model and defects each of the five
//! measured implementations and an unmeasured one get.

use pcoll::algo::{Algorithm, Collective};
use pcoll::decide::defects;
use pcoll::decide::{CallFacts, NativeFacts, PlainFacts};
use pcoll::model::native::{native, Rules};
use pcoll::model::predict;
use pcoll::mpi::{Abi, Mpi};
use pcoll::tuning::Table;
use pcoll::CostParams;

struct Shape {
    /// The datatype has holes (size != true extent).
    holes: bool,
    /// Its true lower bound (> 0: data after a leading hole; < 0: before the origin).
    true_lb: i64,
    user_op: bool,
}

/// A datatype with holes, the op user-defined or not.
fn holey(user_op: bool) -> Shape {
    Shape {
        holes: true,
        true_lb: 0,
        user_op,
    }
}

/// A datatype whose true lower bound is `true_lb`, the op user-defined or not.
fn lower_bound(true_lb: i64, user_op: bool) -> Shape {
    Shape {
        holes: false,
        true_lb,
        user_op,
    }
}

impl NativeFacts for Shape {
    fn holes(&self) -> bool {
        self.holes
    }
    fn true_lb(&self) -> i64 {
        self.true_lb
    }
    fn unequal_counts(&self) -> bool {
        false
    }
    fn user_op(&self) -> bool {
        self.user_op
    }
}

#[test]
fn every_mpi_has_its_own_builtin_table() {
    let mut origins = Vec::new();
    for m in Mpi::KNOWN
        .into_iter()
        .chain([Mpi::Other(Abi::OpenMpi), Mpi::Other(Abi::Mpich)])
    {
        let t = Table::builtin_for(m);
        origins.push(t.origin().to_string());
        // The two unmeasured ones share one table: no rules.
        let unmeasured = matches!(m, Mpi::Other(_));
        assert_eq!(
            t.lookup(Collective::Reduce, 2, 1 << 20).is_none(),
            unmeasured,
            "{m}"
        );
    }
    origins.dedup();
    assert_eq!(origins.len(), 6, "{origins:?}");
}

#[test]
fn unmodelled_natives_are_priced_as_the_best_textbook_algorithm() {
    let c = CostParams {
        alpha: 1.4e-6,
        beta: 7.7e-11,
        gamma: 1.3e-11,
    };
    for m in [Mpi::Mpich5, Mpi::IntelMpi, Mpi::Other(Abi::OpenMpi)] {
        assert_eq!(m.rules(), Rules::Textbook);
        for coll in Collective::ALL {
            for p in [2, 3, 5, 8, 64] {
                for bytes in [8, 4096, 1 << 20, 1 << 24] {
                    let n = native(m, coll, p, bytes, true, &c);
                    let best = [
                        Algorithm::Binomial,
                        Algorithm::Pipeline,
                        Algorithm::Butterfly,
                        Algorithm::Ring,
                        Algorithm::ScatterAllgather,
                    ]
                    .into_iter()
                    .filter(|a| Algorithm::available(coll).contains(a))
                    .map(|a| predict(coll, a, p, bytes, &c).time)
                    .fold(f64::INFINITY, f64::min);
                    assert_eq!(n.time, best, "{m} {coll} p={p} {bytes}");
                    // pcoll's greedy and circulant are never the native's algorithm.
                    assert!(!["greedy", "greedy_uni", "circulant"].contains(&n.algorithm));
                }
            }
        }
    }
    assert_eq!(Mpi::OpenMpi5.rules(), Rules::OpenMpi);
    assert_eq!(Mpi::Mpich.rules(), Rules::Mpich);
}

#[test]
fn defects_apply_to_their_family_or_to_their_implementation() {
    let reduce = CallFacts {
        root: 1,
        ..CallFacts::new(Collective::Reduce, 3, 1 << 20)
    };
    // MPICH 4.0's in-place-at-nonzero-root defect: avoided under the MPICH-ABI MPIs not
    // checked free of it (MPICH 5.0 and Intel MPI were: native serves them).
    for m in [Mpi::Mpich, Mpi::Other(Abi::Mpich)] {
        assert_eq!(
            defects::fired(m, &reduce, &PlainFacts).map(|d| d.name),
            Some("mpich-reduce-inplace-root"),
            "{m}"
        );
    }
    for m in [Mpi::OpenMpi, Mpi::OpenMpi5, Mpi::Mpich5, Mpi::IntelMpi] {
        assert!(defects::fired(m, &reduce, &PlainFacts).is_none(), "{m}");
    }
    // Intel MPI's user-op-on-holes reduce: there only, and only with a user op.
    let root0 = CallFacts::new(Collective::Reduce, 3, 40_000);
    let user = holey(true);
    assert_eq!(
        defects::fired(Mpi::IntelMpi, &root0, &user).map(|d| d.name),
        Some("impi-reduce-userop-holes")
    );
    assert!(defects::fired(Mpi::IntelMpi, &root0, &holey(false)).is_none());
    for m in [Mpi::Mpich, Mpi::Mpich5, Mpi::OpenMpi] {
        assert!(defects::fired(m, &root0, &user).is_none(), "{m}");
    }
    // Its allreduce alike.
    let all = CallFacts::new(Collective::Allreduce, 2, 24);
    assert_eq!(
        defects::fired(Mpi::IntelMpi, &all, &user).map(|d| d.name),
        Some("impi-allreduce-userop-holes")
    );
    assert!(defects::fired(Mpi::IntelMpi, &all, &holey(false)).is_none());
    for m in [Mpi::Mpich, Mpi::Mpich5, Mpi::OpenMpi5] {
        assert!(defects::fired(m, &all, &user).is_none(), "{m}");
    }
    // MPICH 5's release_gather reduce: a commutative user op on a type whose true lower bound
    // is not 0 (a leading hole, or data before the origin) at a root other than 0, under MPICH
    // 5 only.
    let mut small = CallFacts::new(Collective::Reduce, 3, 80);
    small.root = 2;
    for lb in [4, -8] {
        let shape = lower_bound(lb, true);
        assert_eq!(
            defects::fired(Mpi::Mpich5, &small, &shape).map(|d| d.name),
            Some("mpich5-reduce-userop-true-lb"),
            "true_lb {lb}"
        );
        assert!(defects::fired(Mpi::Mpich5, &small, &lower_bound(lb, false)).is_none());
        let mut noncomm = small;
        noncomm.commutative = false;
        assert!(defects::fired(Mpi::Mpich5, &noncomm, &shape).is_none());
        let at0 = CallFacts::new(Collective::Reduce, 3, 80);
        assert!(defects::fired(Mpi::Mpich5, &at0, &shape).is_none());
        for m in [Mpi::Mpich, Mpi::IntelMpi, Mpi::OpenMpi, Mpi::OpenMpi5] {
            assert!(defects::fired(m, &small, &shape).is_none(), "{m}");
        }
    }
    assert!(defects::fired(Mpi::Mpich5, &small, &lower_bound(0, true)).is_none());
    // Its allreduce: a commutative user op on a type with a negative true lower bound, any
    // size; a positive one is served natively.
    let big = CallFacts::new(Collective::Allreduce, 3, 1 << 20);
    let neg = lower_bound(-8, true);
    assert_eq!(
        defects::fired(Mpi::Mpich5, &big, &neg).map(|d| d.name),
        Some("mpich5-allreduce-userop-negative-lb")
    );
    assert!(defects::fired(Mpi::Mpich5, &big, &lower_bound(8, true)).is_none());
    assert!(defects::fired(Mpi::Mpich5, &big, &lower_bound(-8, false)).is_none());
    let mut noncomm = big;
    noncomm.commutative = false;
    assert!(defects::fired(Mpi::Mpich5, &noncomm, &neg).is_none());
    for m in [Mpi::Mpich, Mpi::IntelMpi] {
        assert!(defects::fired(m, &big, &neg).is_none(), "{m}");
    }
    // Open MPI's own ring allreduce has a defect of its own for such types (session 43).
    assert_eq!(
        defects::fired(Mpi::OpenMpi5, &big, &neg).map(|d| d.name),
        Some("openmpi-allreduce-true-lb")
    );
}
