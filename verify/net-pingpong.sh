#!/usr/bin/env bash
# Latency and bandwidth of MPICH over the emulated cluster, with and without the idle-wait part
# of scripts/netcluster/ucx_finalize_progress.c (PCOLL_NET_SPIN=0 = MPICH's own busy polling).
#   verify/net-pingpong.sh [NODES (4)] [RATE (500mbit)] [ROUNDS (2)]
# Brings up cluster "pp" (link check printed), runs verify/netpingpong.c ROUNDS times per
# setting, alternating (spin, sleep, spin, sleep ...), takes the cluster down on any exit.
# Exit 77 where namespaces cannot be made.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
NC=$ROOT/scripts/netcluster.sh
NODES=${1:-4} RATE=${2:-500mbit} ROUNDS=${3:-2}
BIN=$ROOT/build/net/netpingpong
mkdir -p "$ROOT/build/net"
if [ ! -x "$BIN" ] || [ "$ROOT/verify/netpingpong.c" -nt "$BIN" ]; then
  mpicc.mpich -O2 -Wall -o "$BIN" "$ROOT/verify/netpingpong.c" || exit 1
fi
trap '"$NC" --name pp down >/dev/null 2>&1' EXIT
trap 'exit 130' INT TERM HUP
"$NC" --name pp down >/dev/null 2>&1
"$NC" --name pp up "$NODES" --rate "$RATE"
r=$?
[ $r = 77 ] && exit 77
[ $r = 0 ] || exit 1
rc=0
for ((i = 1; i <= ROUNDS; i++)); do
  for spin in 0 default; do
    echo "== round $i, $([ $spin = 0 ] && echo 'PCOLL_NET_SPIN=0 (busy polling, as before)' || echo 'idle ranks sleep on the UCX event fd (default)')"
    env=()
    [ $spin = 0 ] && env=(--env PCOLL_NET_SPIN=0)
    "$NC" --name pp run --timeout 120 "${env[@]}" -- "$BIN" 1048576 20 || rc=1
  done
done
exit $rc
