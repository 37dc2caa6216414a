#!/usr/bin/env bash
# verify/nbprogress.sh <openmpi|mpich|openmpi5|mpich5|impi> <libpcoll.so>: MPI's progress rule
# for the non-blocking collectives (verify/nbprogress.c): rank 0 is blocked in MPI_Recv,
# MPI_Probe, MPI_Sendrecv, MPI_Mprobe, MPI_Ssend, MPI_Rsend, MPI_Sendrecv_replace (and
# receives from MPI_PROC_NULL, whose status is checked), MPI_Barrier, a blocking
# MPI_Allreduce / MPI_Reduce_scatter_block, MPI_Gather, MPI_Comm_split, MPI_Win_create,
# MPI_Cart_create or MPI_File_open on the same communicator, polls MPI_Iprobe / MPI_Improbe
# for their messages, or blocks in an MPI_Neighbor_allgather on a periodic ring or the
# MPI_Intercomm_create joining two halves with the collective on that ring or half (session
# 47), while the other ranks wait
# for its part of an MPI_Ibcast, MPI_Ireduce, MPI_Iallreduce or MPI_Iallgather (2 MiB of
# doubles), at p = 3 and 4 with the four forced to `binomial` (a relaying schedule whose later
# steps pcoll advances only inside its intercepted calls); rank 0's stats must show pcoll
# served them; at p = 3 with the four forced to `shm`, which must have served them too, and to
# `native`, whose stats must count the same calls and bytes as `binomial`'s. Before
# session 18 every run hung; before session 19 the Mprobe, Ssend, Barrier and blocking
# collective rounds did (MPICH 4.0); before session 20 the Gather and Comm_split rounds, and
# the rounds whose collective is the first call on a new communicator (its shadow's
# PMPI_Comm_dup blocked in the initiation); before session 51 the NEWCOMM rounds (rank 0
# makes the first call on a new communicator and frees it: pcoll's shadow, window and its
# free) and a raced allreduce on another communicator (below). Where the MPI has a Fortran wrapper,
# verify/nbprogress_f.f90 too (p = 3, and its MPI_INTERCOMM_CREATE rounds at p = 5; Debian's two
# and Intel MPI), whose rank 0 also blocks in MPI_GATHER(V), MPI_ALLTOALL(V,W), MPI_COMM_SPLIT
# and MPI_COMM_DUP (Open MPI 4.1 hung there before session 46), the topology, window and file
# constructors, MPI_INTERCOMM_CREATE and the neighbourhood collectives (hung there before
# session 47). Last line `nbprogress: PASS ...` or `nbprogress: FAIL ...`.
set -uo pipefail
# shellcheck source=setup.sh
source "$(dirname "$0")/setup.sh" 2 2 "$@"
BIN=$OUT/nbprogress-$MPI
$MPICC -O2 -Wall -o "$BIN" "$ROOT/verify/nbprogress.c" || { echo "nbprogress: FAIL (build)"; exit 1; }
fails=0
# run LABEL P ALG [ARGS]: the four I-collectives forced to ALG at p = P; every round must pass and
# rank 0's stats show ALG serving all four.
run() {
  local label=$1 p=$2 alg=$3 out rc served
  shift 3
  out=$(timeout -k 5 120 bash -c 'source "$0"; mpi_setup "$1" && shift 2 && mpi_run "$@"' \
    "$ROOT/scripts/mpi.sh" "$MPI" -- "$p" LD_PRELOAD="$LIB" PCOLL_STATS=1 PCOLL_REDUCE="$alg" \
    PCOLL_ALLREDUCE="$alg" PCOLL_BCAST="$alg" PCOLL_ALLGATHER="$alg" -- "$BIN" "$@" </dev/null 2>&1)
  rc=$?
  LAST_OUT=$out
  served=$(grep -cE "^pcoll: stats i(bcast|reduce|allreduce|allgather) $alg" <<<"$out")
  if [ $rc = 0 ] && grep -q '^nbprogress: ok' <<<"$out" && [ "$served" = 4 ]; then
    echo "  $label: ok (4 I-collectives served by $alg)"
  else
    fails=$((fails + 1))
    echo "  $label: FAILED (exit $rc, $served of 4 served by $alg)"
    grep -E 'nbprogress|FAILED|signal' <<<"$out" | head -5 | sed 's/^/    /'
  fi
}
# counts: rank 0's calls and bytes of each of the four I-collectives in the last run's stats,
# summed over the algorithms that served them (a forced algorithm leaves some calls native)
counts() {
  grep -oE "^pcoll: stats i(bcast|reduce|allreduce|allgather) [a-z_]+ calls=[0-9]+ bytes=[0-9]+" \
    <<<"$LAST_OUT" | tr '=' ' ' |
    awk '{ c[$3] += $6; b[$3] += $8 } END { for (k in c) print k, c[k], b[k] }' | sort
}
run p=3 3 binomial
served=$(counts)
# The same calls forced to `native` (the MPI's own progress): the stats count them with the
# same bytes (before session 55 a non-blocking call sent to the MPI counted 0 bytes).
run "p=3 native" 3 native
if [ -n "$served" ] && [ "$(counts)" = "$served" ]; then
  echo "  p=3 native stats: ok (calls and bytes as under binomial)"
else
  fails=$((fails + 1))
  echo "  p=3 native stats: FAILED (calls and bytes differ from binomial's)"
  diff <(echo "$served") <(counts) | head -8 | sed 's/^/    /'
fi
run p=4 4 binomial
# The INTERCOMM rounds (kind 20) at p = 5, where the even half has 3 ranks (Open MPI 5 hung
# there with a library before 47c8e35; at p = 3, 4 its halves' collectives needed no relay)
run "p=5 intercomm_create" 5 binomial 262144 20
# The four forced to `shm`: the window is made by a blocking call or at an MPI_Barrier, never
# inside a non-blocking initiation (the FIRST rounds would hang: their other ranks are blocked
# in a 1 MiB MPI_Send that rank 0 receives after it started the collective on a new
# communicator); the rounds on MPI_COMM_WORLD run `shm` once its window is made.
run "p=3 shm" 3 shm
# A raced rule (`race = true`) on the blocking allreduce, and a table rule for its I-form: in
# the DUP_ALLREDUCE rounds (kind 9) rank 0's raced calls on the duplicate start from a
# barrier on its shadow and end in an agreement there, while the others wait for its part of
# an MPI_Iallreduce on MPI_COMM_WORLD: both must advance pcoll's schedules (hung before
# session 51).
RACE=$OUT/nbprogress-race.toml
printf '[[allreduce]]\nbytes = [0, "inf"]\nform = "nonblocking"\nalgorithm = "binomial"\n[[allreduce]]\nbytes = [0, "inf"]\nform = "blocking"\nalgorithm = "ring"\nrace = true\n' >"$RACE"
out=$(timeout -k 5 120 bash -c 'source "$0"; mpi_setup "$1" && shift 2 && mpi_run "$@"' \
  "$ROOT/scripts/mpi.sh" "$MPI" -- 3 LD_PRELOAD="$LIB" PCOLL_STATS=1 PCOLL_TUNING="$RACE" \
  -- "$BIN" 262144 9 </dev/null 2>&1)
rc=$?
if [ $rc = 0 ] && grep -q '^nbprogress: ok' <<<"$out" && grep -q '^pcoll: stats iallreduce binomial' <<<"$out" &&
  grep -q '^pcoll: stats allreduce ring' <<<"$out"; then
  echo "  p=3 raced: ok (iallreduce by binomial beside a raced allreduce)"
else
  fails=$((fails + 1))
  echo "  p=3 raced: FAILED (exit $rc)"
  grep -E 'nbprogress|FAILED|signal|stats i?allreduce' <<<"$out" | head -5 | sed 's/^/    /'
fi
# The same rule from Fortran (mpif.h), where the MPI has a Fortran wrapper: Open MPI's
# Fortran MPI_RECV, MPI_BARRIER, ... call PMPI_ directly (pcoll's Fortran entries take them).
ftxt=""
if [ -n "${MPIFC:-}" ]; then
  FBIN=$OUT/nbprogress_f-$MPI
  if ! (cd "$OUT" && $MPIFC -O1 -fallow-argument-mismatch -o "$FBIN" "$ROOT/verify/nbprogress_f.f90") >"$OUT/nbprogress_f-$MPI.err" 2>&1; then
    fails=$((fails + 1)); echo "  fortran: FAILED (build: $OUT/nbprogress_f-$MPI.err)"
  else
    # frun LABEL P [KIND]: every kind (or KIND's rounds) at p = P, both I-collectives served
    frun() {
      local label=$1 p=$2 out rc served
      shift 2
      out=$(timeout -k 5 120 bash -c 'source "$0"; mpi_setup "$1" && shift 2 && mpi_run "$@"' \
        "$ROOT/scripts/mpi.sh" "$MPI" -- "$p" LD_PRELOAD="$LIB" PCOLL_STATS=1 \
        PCOLL_BCAST=binomial PCOLL_REDUCE=binomial -- "$FBIN" "$@" </dev/null 2>&1)
      rc=$?
      served=$(grep -cE '^pcoll: stats i(bcast|reduce) binomial' <<<"$out")
      if [ $rc = 0 ] && grep -q '^nbprogress_f: ok' <<<"$out" && [ "$served" = 2 ]; then
        echo "  fortran $label: ok (2 I-collectives served by binomial)"
      else
        fails=$((fails + 1)); echo "  fortran $label: FAILED (exit $rc, $served of 2 served)"
        grep -E 'nbprogress|FAILED|signal' <<<"$out" | head -5 | sed 's/^/    /'
      fi
    }
    frun p=3 3
    # MPI_INTERCOMM_CREATE's local communicator (a half) has 3 ranks at p = 5: a relaying
    # schedule there (at p = 3 its 2 ranks' binomial needs no later step)
    frun "p=5 intercomm_create" 5 35
    ftxt=", Fortran"
  fi
fi
if [ $fails = 0 ]; then echo "nbprogress: PASS ($MPI, p = 3, 4, 5$ftxt)"; else echo "nbprogress: FAIL ($MPI, $fails runs)"; exit 1; fi
