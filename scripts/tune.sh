#!/usr/bin/env bash
# make tune: measure every algorithm against native on sub-communicators p = 2..4 (Open MPI
# ABI) and p = 2 (MPICH ABI: it busy-polls when oversubscribed), write
# results/tuning.<mpi>.toml, for each MPI of TUNE_MPIS (make tune passes MPIS).
# Use a result with: PCOLL_TUNING=results/tuning.openmpi.toml (or copy it to tuning.toml).
# TUNE_ARGS adds or overrides options (later ones win), e.g. TUNE_ARGS="--coarse" for a quick grid.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p results
EXTRA=${TUNE_ARGS:-}
source scripts/mpi.sh
ran=0
for mpi in ${TUNE_MPIS:-openmpi mpich}; do
  [ -x build/$mpi/pcoll-tune ] || continue
  ( mpi_setup "$mpi" || exit 1
    # MPICH-ABI MPIs busy-poll when oversubscribed: p = 2 only.
    if [ "$MPI_ABI" = openmpi ]; then np=4 ps=2..4; else np=2 ps=2; fi
    echo "== $mpi, p = $ps"
    # shellcheck disable=SC2086
    mpi_run $np -- build/$mpi/pcoll-tune --p $ps --out results/tuning.$mpi.toml \
      --csv results/tune.$mpi.csv $EXTRA </dev/null ) || exit 1
  ran=1
done
[ "$ran" = 1 ] || { echo "tune: nothing built (make build)" >&2; exit 1; }
