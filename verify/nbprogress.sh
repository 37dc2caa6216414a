#!/usr/bin/env bash
# verify/nbprogress.sh <openmpi|mpich|openmpi5|mpich5|impi> <libpcoll.so>: MPI's progress rule
# for the non-blocking collectives (verify/nbprogress.c): rank 0 is blocked in MPI_Recv,
# MPI_Probe, MPI_Sendrecv, MPI_Mprobe, MPI_Ssend, MPI_Rsend, MPI_Barrier or a blocking
# MPI_Allreduce / MPI_Reduce_scatter_block on the same communicator while the other ranks wait
# for its part of an MPI_Ibcast, MPI_Ireduce, MPI_Iallreduce or MPI_Iallgather (2 MiB of
# doubles), at p = 3 and 4 with the four forced to `binomial` (a relaying schedule whose later
# steps pcoll advances only inside its intercepted calls); rank 0's stats must show pcoll
# served them. Before session 18 every run hung; before session 19 the Mprobe, Ssend,
# Barrier and blocking collective rounds did (MPICH 4.0). Where the MPI has a Fortran wrapper,
# verify/nbprogress_f.f90 too (p = 3; Debian's two and Intel MPI). Last line `nbprogress: PASS ...` or `nbprogress: FAIL ...`.
set -uo pipefail
# shellcheck source=setup.sh
source "$(dirname "$0")/setup.sh" 2 2 "$@"
BIN=$OUT/nbprogress-$MPI
$MPICC -O2 -Wall -o "$BIN" "$ROOT/verify/nbprogress.c" || { echo "nbprogress: FAIL (build)"; exit 1; }
FORCED=(PCOLL_REDUCE=binomial PCOLL_ALLREDUCE=binomial PCOLL_BCAST=binomial PCOLL_ALLGATHER=binomial)
fails=0
for p in 3 4; do
  out=$(timeout -k 5 120 bash -c 'source "$0"; mpi_setup "$1" && shift 2 && mpi_run "$@"' \
    "$ROOT/scripts/mpi.sh" "$MPI" -- "$p" LD_PRELOAD="$LIB" PCOLL_STATS=1 "${FORCED[@]}" -- "$BIN" \
    </dev/null 2>&1)
  rc=$?
  served=$(echo "$out" | grep -cE '^pcoll: stats i(bcast|reduce|allreduce|allgather) binomial')
  if [ $rc = 0 ] && echo "$out" | grep -q '^nbprogress: ok' && [ "$served" = 4 ]; then
    echo "  p=$p: ok (4 I-collectives served by binomial)"
  else
    fails=$((fails + 1))
    echo "  p=$p: FAILED (exit $rc, $served of 4 served)"
    echo "$out" | grep -E 'nbprogress|FAILED|signal' | head -5 | sed 's/^/    /'
  fi
done
# The same rule from Fortran (mpif.h), where the MPI has a Fortran wrapper: Open MPI's
# Fortran MPI_RECV, MPI_BARRIER, ... call PMPI_ directly (pcoll's Fortran entries take them).
ftxt=""
if [ -n "${MPIFC:-}" ]; then
  FBIN=$OUT/nbprogress_f-$MPI
  if ! (cd "$OUT" && $MPIFC -O1 -fallow-argument-mismatch -o "$FBIN" "$ROOT/verify/nbprogress_f.f90") >"$OUT/nbprogress_f-$MPI.err" 2>&1; then
    fails=$((fails + 1)); echo "  fortran: FAILED (build: $OUT/nbprogress_f-$MPI.err)"
  else
    out=$(timeout -k 5 120 bash -c 'source "$0"; mpi_setup "$1" && shift 2 && mpi_run "$@"' \
      "$ROOT/scripts/mpi.sh" "$MPI" -- 3 LD_PRELOAD="$LIB" PCOLL_STATS=1 PCOLL_BCAST=binomial \
      PCOLL_REDUCE=binomial -- "$FBIN" </dev/null 2>&1)
    rc=$?
    served=$(echo "$out" | grep -cE '^pcoll: stats i(bcast|reduce) binomial')
    if [ $rc = 0 ] && echo "$out" | grep -q '^nbprogress_f: ok' && [ "$served" = 2 ]; then
      echo "  fortran p=3: ok (2 I-collectives served by binomial)"; ftxt=", Fortran"
    else
      fails=$((fails + 1)); echo "  fortran p=3: FAILED (exit $rc, $served of 2 served)"
      echo "$out" | grep -E 'nbprogress|FAILED|signal' | head -5 | sed 's/^/    /'
    fi
  fi
fi
if [ $fails = 0 ]; then echo "nbprogress: PASS ($MPI, p = 3, 4$ftxt)"; else echo "nbprogress: FAIL ($MPI, $fails runs)"; exit 1; fi
