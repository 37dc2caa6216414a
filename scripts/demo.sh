#!/usr/bin/env bash
# make demo: native MPI vs every pcoll algorithm, interleaved in one job, results checked.
#   1. Open MPI, p = 4 (oversubscribed on small machines), reduce + allreduce, 8 B .. 4 MiB:
#      table on stdout, results/demo.csv, results/demo.svg (latency), results/demo-ratio.svg.
#   2. MPICH, p = 2 (MPICH busy-polls when oversubscribed, so no more ranks), a few sizes.
# Builds nothing itself (make demo builds first). About 1-3 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p results
OMPI_BENCH=build/openmpi/pcoll-bench
MPICH_BENCH=build/mpich/pcoll-bench
ran=0

if [ -x "$OMPI_BENCH" ] && command -v mpirun.openmpi >/dev/null; then
  echo "== Open MPI, p = 4: reduce and allreduce, 8 B .. 4 MiB (--check)"
  mpirun.openmpi --allow-run-as-root --oversubscribe -np 4 "$OMPI_BENCH" \
    --collectives reduce,allreduce --sizes 8..4m \
    --iters 40 --min-iters 4 --warmup 2 --budget 2 --check \
    --csv results/demo.csv --plot results/demo.svg --plot-ratio results/demo-ratio.svg \
    </dev/null
  ran=1
else
  echo "demo: $OMPI_BENCH not built (make MPI=openmpi build); skipping Open MPI" >&2
fi

if [ -x "$MPICH_BENCH" ] && command -v mpiexec.mpich >/dev/null; then
  echo
  echo "== MPICH, p = 2: reduce and allreduce, 8 B .. 1 MiB (--check)"
  mpiexec.mpich -n 2 "$MPICH_BENCH" \
    --collectives reduce,allreduce --sizes 8,1k,64k,1m \
    --iters 30 --min-iters 4 --warmup 2 --budget 1 --check \
    </dev/null
  ran=1
else
  echo "demo: $MPICH_BENCH not built (make MPI=mpich build); skipping MPICH" >&2
fi

[ "$ran" = 1 ] || { echo "demo: nothing to run: build first (make build)" >&2; exit 1; }
[ -f results/demo.svg ] && echo && echo "demo: plots in results/demo.svg and results/demo-ratio.svg, data in results/demo.csv"
