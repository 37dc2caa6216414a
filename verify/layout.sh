#!/usr/bin/env bash
# verify/layout.sh <mpi> <libpcoll.so>: the nodes pcoll reads for a communicator from
# MPI_COMM_WORLD's (through the groups: cdylib/src/nodes.rs) are the nodes of its ranks.
# verify/layout.c makes a dup, a reversed split, two shuffled splits and a communicator of a
# group (MPI_Comm_create), and on each prints the nodes it expects (world rank / K); the
# library logs the nodes it read (PCOLL_LOG=pcoll::nodes=debug). p = 6 with K = 2 and p = 7
# with K = 3 (a node of one rank). Each rank's expected lines must equal its library lines,
# all read from the world's (none gathered). Last line: `layout: PASS (n runs)` or
# `layout: FAIL (...)`.
set -uo pipefail
[ $# -ge 2 ] || { echo "usage: $0 <mpi> <libpcoll.so>" >&2; exit 2; }
MPI=$1; LIB=$(readlink -f "$2")
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=../scripts/mpi.sh
source "$ROOT/scripts/mpi.sh"
mpi_setup "$MPI" || exit 2
OUT=$ROOT/build/verify; mkdir -p "$OUT/logs"
BIN=$OUT/layout-$MPI
if [ ! -x "$BIN" ] || [ "$ROOT/verify/layout.c" -nt "$BIN" ]; then
  $MPICC -O2 -Wall -o "$BIN" "$ROOT/verify/layout.c" || { echo "layout: FAIL (build)"; exit 1; }
fi
fails=0; runs=0
for pk in "6 2" "7 3"; do
  set -- $pk; p=$1; k=$2; runs=$((runs + 1))
  log=$OUT/logs/layout-$MPI-p$p.log
  mpi_np "$p"
  mpi_env_args LD_PRELOAD="$LIB" PCOLL_NODES="$k" PCOLL_LOG=pcoll::nodes=debug PCOLL_REDUCE=binomial
  if ! timeout -k 5 120 "$MPIRUN" "${MPI_NP_ARGS[@]}" "${MPI_ENV_ARGS[@]}" "$BIN" "$k" </dev/null >"$log" 2>&1; then
    echo "  p=$p K=$k: the run failed or hung; log $log"; fails=$((fails + 1)); continue
  fi
  bad=0
  for ((r = 0; r < p; r++)); do
    want=$(grep -a "^layout-expect\[$r\] " "$log" | sed 's/^[^ ]* //')
    got=$(grep -a "^pcoll\[$r\] DEBUG: a communicator of " "$log" | sed -E 's/.*of ([0-9]+) ranks: nodes (.*) \(read from .*/\1 \2/')
    gathered=$(grep -ac "^pcoll\[$r\] DEBUG: .*(gathered)" "$log")
    if [ "$(echo "$want" | wc -l)" -ne 5 ] || [ "$want" != "$got" ] || [ "$gathered" -ne 0 ]; then
      echo "  p=$p K=$k rank $r: expected / read (gathered: $gathered):"; paste <(echo "$want") <(echo "$got") | sed 's/^/    /'
      bad=1
    fi
  done
  [ $bad -eq 0 ] && echo "  p=$p K=$k: 5 communicators, every rank's nodes as expected" || fails=$((fails + 1))
done
if [ $fails -eq 0 ]; then echo "layout: PASS ($runs runs)"; else echo "layout: FAIL ($fails of $runs runs)"; exit 1; fi
