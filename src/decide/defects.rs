//! Native defects pcoll routes around: call shapes whose native collective crashes, corrupts
//! memory or computes a wrong result in the MPI versions of this project (found by
//! `c-tests/` and `verify/`; see their READMEs). A call matching one never goes to native,
//! whatever the table says (only `PCOLL_DISABLE` does that): the model's best pcoll algorithm
//! serves it. This list is the only statement of these rules; the native gate in C checks
//! each defect's [`Guard`] (a cheap, coarser condition) from what Rust publishes.

use super::{CallFacts, NativeFacts};
use crate::algo::Collective;
use crate::model::native::Mpi;

/// The cheap condition under which the native gate declines a call (and lets the Rust path
/// apply the full rule): a superset of the defect's shape, from the call's arguments alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Guard {
    /// A reduce whose root is not 0 above this many bytes.
    RootNonzeroAbove(usize),
    /// A communicator of one process (the gate of a blocking allgatherv checks `displs[0]`
    /// too; the non-blocking form's, which does not see it, declines every one-rank call).
    OneRank,
    /// A datatype whose true lower bound is not 0 (data after a leading hole, or before the
    /// type's origin).
    TrueLbNonzero,
    /// A user-defined op (predefined ops are commutative).
    UserOp,
    /// `MPI_IN_PLACE`.
    InPlace,
}

/// One defect: which MPI and collective, why, and the exact rule.
pub struct Defect {
    /// Short identifier for logs and tests.
    pub name: &'static str,
    pub mpi: Mpi,
    pub coll: Collective,
    /// What goes wrong natively.
    pub reason: &'static str,
    /// What the native gate checks.
    pub guard: Guard,
    /// The exact rule (all ranks see the same facts).
    pub fires: fn(&CallFacts, &dyn NativeFacts) -> bool,
    /// Members of the family checked free of it (by the test named in `reason`), where
    /// native keeps serving the shape.
    pub absent: &'static [Mpi],
}

impl std::fmt::Debug for Defect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

impl Defect {
    /// Whether the defect is routed around under `mpi`. One found in Debian's Open MPI 4.1
    /// or MPICH 4.0 is avoided under every implementation of that ABI: the other versions of
    /// the family were not all checked for it, and avoiding native for one call shape costs
    /// little where the defect is gone; running into it costs a crash or a wrong result,
    /// except in the members checked free of it ([`Defect::absent`]). One found in another
    /// implementation (Intel MPI) is avoided there only.
    pub fn applies(&self, mpi: Mpi) -> bool {
        if self.absent.contains(&mpi) {
            return false;
        }
        match self.mpi {
            Mpi::OpenMpi | Mpi::Mpich => self.mpi.abi() == mpi.abi(),
            m => m == mpi,
        }
    }
}

impl PartialEq for Defect {
    fn eq(&self, o: &Defect) -> bool {
        self.name == o.name
    }
}

/// The known native defects.
pub static DEFECTS: [Defect; 11] = [
    Defect {
        name: "mpich-reduce-inplace-root",
        mpi: Mpi::Mpich,
        coll: Collective::Reduce,
        reason: "MPICH 4.0.2 MPI_Reduce with MPI_IN_PLACE at a root other than 0 crashes above 2048 bytes; only the root knows it is in place, so every reduce of that shape avoids native. Absent in MPICH 5.0 and Intel MPI 2021 (c-tests/reduce.c without avoid-native-defects, native, p = 2-4: passes there, segfaults under MPICH 4.0; session 26)",
        guard: Guard::RootNonzeroAbove(2048),
        fires: |c, _| c.root != 0 && c.bytes > 2048,
        absent: &[Mpi::Mpich5, Mpi::IntelMpi],
    },
    Defect {
        name: "mpich-reduce-scatter-noncommutative-holes",
        mpi: Mpi::Mpich,
        coll: Collective::ReduceScatter,
        reason: "MPICH 4.0.2 MPI_Reduce_scatter with a non-commutative op on a datatype with holes corrupts the heap",
        guard: Guard::UserOp,
        fires: |c, f| !c.commutative && f.holes(),
        absent: &[],
    },
    Defect {
        name: "mpich-reduce-scatter-block-noncommutative-holes",
        mpi: Mpi::Mpich,
        coll: Collective::ReduceScatterBlock,
        reason: "MPICH 4.0.2 MPI_Reduce_scatter_block with a non-commutative op on a datatype with holes computes wrong blocks or crashes (verify/difftest.c, p = 2 and 4); Intel MPI 2021.19's computes wrong blocks too (verify/difftest.c --seed 634566210 --case 268 at p = 3 without pcoll: 4 elements of resized(MPI_UINT32_T) a rank, in place, on a split of 2 ranks; session 43)",
        guard: Guard::UserOp,
        fires: |c, f| !c.commutative && f.holes(),
        absent: &[],
    },
    Defect {
        name: "mpich-reduce-scatter-inplace-unequal",
        mpi: Mpi::Mpich,
        coll: Collective::ReduceScatter,
        reason: "MPICH 4.0.2 MPI_Reduce_scatter in place with unequal counts above 512 KiB fails an assertion",
        guard: Guard::InPlace,
        fires: |c, f| c.in_place && c.bytes > (512 << 10) && f.unequal_counts(),
        absent: &[],
    },
    Defect {
        name: "impi-reduce-scatter-inplace-unequal",
        mpi: Mpi::IntelMpi,
        coll: Collective::ReduceScatter,
        reason: "Intel MPI 2021.19 MPI_Reduce_scatter in place with unequal counts returns MPI_ERR_TYPE (MPIR_Localcopy in its pairwise algorithm) for a contiguous derived or pair type (MPI_FLOAT_INT, a contiguous type of 3 ints; not the basic types) from ~128 KiB in total at p = 2 (~230 KiB at p = 3 and 4, ~512 KiB at p = 5; without pcoll too: a fresh-clone make test's difftest, seed 795945665 case 44, 51982 MPI_FLOAT_INT at p = 2; session 43). Half the smallest size seen, any type",
        guard: Guard::InPlace,
        fires: |c, f| c.in_place && c.bytes > (64 << 10) && f.unequal_counts(),
        absent: &[],
    },
    Defect {
        name: "mpich-allgatherv-one-rank",
        mpi: Mpi::Mpich,
        coll: Collective::Allgatherv,
        reason: "MPICH 4.0.2 MPI_Allgatherv on a one-process communicator ignores displs[0]. Absent in MPICH 5.0 and Intel MPI 2021 (c-tests/allgatherv.c without avoid-native-defects, native, p = 1-3, whose split communicators include one-rank ones: passes there, fails under MPICH 4.0; session 40)",
        guard: Guard::OneRank,
        fires: |c, f| c.p == 1 && f.displaced(),
        absent: &[Mpi::Mpich5, Mpi::IntelMpi],
    },
    Defect {
        name: "openmpi-allreduce-true-lb",
        mpi: Mpi::OpenMpi,
        coll: Collective::Allreduce,
        reason: "Open MPI 4.1.4 MPI_Allreduce of a datatype whose true lower bound is not 0 writes past its scratch buffer (ring algorithm): > 0 found first; < 0 too, Open MPI 4.1 and 5.0 alike (c-tests/derived.c's neg24, 20011 elements in place at p = 2: glibc's double free or a hang in malloc, without pcoll's routing too; session 43)",
        guard: Guard::TrueLbNonzero,
        fires: |_, f| f.true_lb() != 0,
        absent: &[],
    },
    Defect {
        name: "mpich5-reduce-userop-true-lb",
        mpi: Mpi::Mpich5,
        coll: Collective::Reduce,
        reason: "MPICH 5.0.2 MPI_Reduce with a commutative user-defined op on a datatype whose true lower bound is not 0, at a root other than 0, frees a pointer true_lb bytes off its scratch block in its shared-memory release_gather reduce (used from a communicator's 6th collective; valgrind: invalid free in PMPI_Reduce; glibc aborts with free(): invalid pointer when the heap is laid out so: verify/difftest.c seed 795854441 at p = 3, without pcoll too; 2000 bytes and less here, any size avoided; session 34; a negative true lower bound alike, c-tests/derived.c's neg24, session 35)",
        guard: Guard::TrueLbNonzero,
        fires: |c, f| c.root != 0 && c.commutative && f.user_op() && f.true_lb() != 0,
        absent: &[],
    },
    Defect {
        name: "mpich5-allreduce-userop-negative-lb",
        mpi: Mpi::Mpich5,
        coll: Collective::Allreduce,
        reason: "MPICH 5.0.2 MPI_Allreduce with a commutative user-defined op on a datatype whose true lower bound is < 0 segfaults in its shared-memory release_gather allreduce (from a communicator's 6th or so collective; not with MPIR_CVAR_ALLREDUCE_POSIX_INTRA_ALGORITHM=mpir, a non-commutative op or a true lower bound > 0; 20 to 50000 elements of a 24-byte type at p = 2, 3 and 4, without pcoll too: c-tests/derived.c's neg24, session 35)",
        guard: Guard::TrueLbNonzero,
        fires: |c, f| c.commutative && f.user_op() && f.true_lb() < 0,
        absent: &[],
    },
    Defect {
        name: "impi-reduce-userop-holes",
        mpi: Mpi::IntelMpi,
        coll: Collective::Reduce,
        reason: "Intel MPI 2021.19 MPI_Reduce with a user-defined op on a datatype with holes computes a wrong result (c-tests/derived.c, p = 3, in place at root 0, 1000 elements of a struct type); only the root knows it is in place, so every reduce of that shape avoids native",
        guard: Guard::UserOp,
        fires: |_, f| f.user_op() && f.holes(),
        absent: &[],
    },
    Defect {
        name: "impi-allreduce-userop-holes",
        mpi: Mpi::IntelMpi,
        coll: Collective::Allreduce,
        reason: "Intel MPI 2021.19 MPI_Allreduce with a user-defined op on a datatype with holes computes a wrong result (verify/difftest.c: holestart(MPI_UNSIGNED) and holestart(MPI_2INT), p = 2 and 3, in place or not, without pcoll too); the datatype and op are the same on every rank, so every rank decides alike",
        guard: Guard::UserOp,
        fires: |_, f| f.user_op() && f.holes(),
        absent: &[],
    },
];

/// The first defect of `mpi` the call matches.
pub fn fired(mpi: Mpi, call: &CallFacts, nf: &dyn NativeFacts) -> Option<&'static Defect> {
    DEFECTS
        .iter()
        .find(|d| d.applies(mpi) && d.coll == call.coll && (d.fires)(call, nf))
}

/// The guards the native gate checks for `coll` under `mpi`.
pub fn guards(mpi: Mpi, coll: Collective) -> impl Iterator<Item = Guard> {
    DEFECTS
        .iter()
        .filter(move |d| d.applies(mpi) && d.coll == coll)
        .map(|d| d.guard)
}
