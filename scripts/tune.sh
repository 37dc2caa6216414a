#!/usr/bin/env bash
# make tune: measure every algorithm against native on sub-communicators p = 2..4 (Open MPI)
# and p = 2 (MPICH: it busy-polls when oversubscribed), write results/tuning.<mpi>.toml.
# Use a result with: PCOLL_TUNING=results/tuning.openmpi.toml (or copy it to tuning.toml).
# TUNE_ARGS adds or overrides options (later ones win), e.g. TUNE_ARGS="--coarse" for a quick grid.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p results
EXTRA=${TUNE_ARGS:-}
ran=0
if [ -x build/openmpi/pcoll-tune ]; then
  echo "== Open MPI, p = 2..4"
  # shellcheck disable=SC2086
  mpirun.openmpi --allow-run-as-root --oversubscribe -np 4 build/openmpi/pcoll-tune \
    --p 2..4 --out results/tuning.openmpi.toml --csv results/tune.openmpi.csv $EXTRA </dev/null
  ran=1
fi
if [ -x build/mpich/pcoll-tune ]; then
  echo "== MPICH, p = 2"
  # shellcheck disable=SC2086
  mpiexec.mpich -n 2 build/mpich/pcoll-tune \
    --p 2 --out results/tuning.mpich.toml --csv results/tune.mpich.csv $EXTRA </dev/null
  ran=1
fi
[ "$ran" = 1 ] || { echo "tune: nothing built (make build)" >&2; exit 1; }
