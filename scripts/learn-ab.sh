#!/usr/bin/env bash
# scripts/learn-ab.sh <mpi> [p] [iters]: what PCOLL_LEARN costs and what it wins, with the
# in-process A/B (verify/ab.c: native PMPI_X and the interposed MPI_X alternated per
# iteration, medians, AB_MEAN=1: means too). Per collective (LEARN_COLLS, default all seven;
# LEARN_SIZES overrides the sizes) three runs of
# the same program: plain (the built-in table), learning (PCOLL_LEARN=t.toml) and replaying
# (PCOLL_TUNING=t.toml), and a control without pcoll (`null`: both sides are the MPI's own
# call, so its ratios are the A/B's own resolution: at sub-microsecond sizes one process
# reads up to ~1.1 with nothing interposed). Prints the A/B lines of each run, then per run the geometric mean
# and the worst cell of pcoll/native (medians), and the learning run's overhead: the mean
# time of the interposed calls over all timed calls (exploration included) against the
# plain run's, per size and as a geometric mean. Output in build/learn-ab/<mpi>-p<p>/.
set -uo pipefail
MPI=${1:?usage: $0 <mpi> [p] [iters]}
P=${2:-2}
ITERS=${3:-200}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=mpi.sh
source "$ROOT/scripts/mpi.sh"
mpi_setup "$MPI" || exit 2
LIB=$ROOT/build/$MPI/libpcoll.so
OUT=$ROOT/build/learn-ab/$MPI-p$P
mkdir -p "$OUT"
BIN=$OUT/ab
$MPICC -O2 -o "$BIN" "$ROOT/verify/ab.c" || exit 1
SIZES=${LEARN_SIZES:-"8 64 512 4096 32768 262144 1048576 4194304"}
EXTRA=()
[ "$MPI" = impi ] && EXTRA=(I_MPI_FABRICS=shm)
for coll in ${LEARN_COLLS:-reduce allreduce reduce_scatter reduce_scatter_block allgather allgatherv bcast}; do
  T=$OUT/$coll.toml
  rm -f "$T"
  for run in plain learn replay null; do
    kv=(LD_PRELOAD="$LIB")
    [ $run = learn ] && kv+=(PCOLL_LEARN="$T")
    [ $run = replay ] && kv+=(PCOLL_TUNING="$T")
    [ $run = null ] && kv=()
    mpi_run "$P" AB_MEAN=1 "${EXTRA[@]}" "${kv[@]}" -- "$BIN" "$coll" "$ITERS" $SIZES \
      >"$OUT/$coll.$run.txt" 2>"$OUT/$coll.$run.err" </dev/null
    grep -h 'PCOLL_LEARN:' "$OUT/$coll.$run.err"
  done
  for run in plain learn replay null; do
    awk -v run="$run" '/^ab /{n++; l+=log($7); if ($7>w){w=$7; ws=$4}} END{if(n) printf "%s %s p=%s: geomean %.3f, worst %.3f at %s B (%d sizes)\n", $2, run, $3, exp(l/n), w, ws, n}' "$OUT/$coll.$run.txt"
  done
  paste "$OUT/$coll.plain.txt" "$OUT/$coll.learn.txt" |
    awk '/^ab /{n++; r=$24/$12; l+=log(r); printf "  %s %s B: mean interposed call, learning / plain run %.3f (%.1f / %.1f us)\n", $2, $4, r, $24, $12} END{if(n) printf "  %s overhead of the learning run (geomean of the means): %.3f\n", $2, exp(l/n)}'
done
