#!/usr/bin/env bash
# make bench: the full measurement behind docs/results.md's numbers.
#   p = 2 on every MPI of BENCH_MPIS (make bench passes MPIS; default openmpi mpich), p = 4
#   and 8 on Debian's Open MPI; all seven collectives; 8 B .. 16 MiB;
#   every algorithm vs native, interleaved (ABBA), results checked.
# Writes results/bench.<mpi>.p<p>.{csv,json,svg} and results/bench.<mpi>.p<p>.ratio.svg.
# Takes a while (tens of minutes on 2 cores). BENCH_ARGS adds or overrides options (later
# ones win), e.g. BENCH_ARGS="--sizes 8,64k,1m --budget 1" for a quick run.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p results
COLLS=reduce,allreduce,reduce_scatter,allgatherv,bcast,allgather,reduce_scatter_block
SIZES=8..16m
EXTRA=${BENCH_ARGS:-}

source scripts/mpi.sh
run() { # run <mpi> <p>
  local mpi=$1 p=$2
  local bin=build/$mpi/pcoll-bench out=results/bench.$mpi.p$p
  if [ ! -x "$bin" ]; then echo "bench: $bin not built; skipping $mpi p=$p" >&2; return 0; fi
  echo "== $mpi, p = $p"
  # shellcheck disable=SC2086
  bash -c 'source scripts/mpi.sh; mpi_setup "$0" && mpi_run "$@"' "$mpi" "$p" -- \
    "$bin" --collectives $COLLS --sizes $SIZES --iters 40 --budget 3 --check \
    --csv "$out.csv" --json "$out.json" --plot "$out.svg" --plot-ratio "$out.ratio.svg" \
    $EXTRA </dev/null | tee "$out.txt"
}

for mpi in ${BENCH_MPIS:-openmpi mpich}; do
  run "$mpi" 2
  if [ "$mpi" = openmpi ]; then run openmpi 4; run openmpi 8; fi
done
echo "bench: results in results/bench.*"
