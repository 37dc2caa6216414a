#!/usr/bin/env bash
# Smoke test over the emulated cluster (scripts/netcluster.sh), for `make test`: MPICH,
# 3 nodes x 1 rank on 500 Mbit/s shaped links.
#   1. an unmodified MPI program (verify/netprobe.c: allreduce + reduce, 1 KiB .. 256 KiB,
#      results checked) with LD_PRELOAD=libpcoll.so and PCOLL_STATS=1: pcoll must have served
#      calls, and every node's link must have carried the bytes (interface counters);
#   2. pcoll-bench --check: each of the four collectives once (4 KiB and 1 MiB), native, auto and every
#      algorithm, each result compared with native.
#
#   verify/net-smoke.sh [<libpcoll.so>]       (default build/mpich/libpcoll.so)
#
# Prints one SKIPPED line and exits 0 where network namespaces cannot be made (not root, no
# `ip netns`). The cluster ("smk") is removed on exit, failure, Ctrl-C and timeout; one left
# by a killed earlier run is removed first. Last line: "N passed, M failed".
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
LIB=$(readlink -f "${1:-$ROOT/build/mpich/libpcoll.so}")
# pcoll-bench: NET_SMOKE_BENCH (make test: the one its ctest step built), else beside the library.
BENCH=${NET_SMOKE_BENCH:-$(dirname "$LIB")/pcoll-bench}
NC=$ROOT/scripts/netcluster.sh
NAME=smk
T0=$SECONDS
passed=0 failed=0
ok() { passed=$((passed + 1)); echo "  ok   $*"; }
bad() { failed=$((failed + 1)); echo "  FAIL $*"; }

for f in "$LIB" "$BENCH"; do
  [ -f "$f" ] || { echo "net-smoke: $f missing (make MPI=mpich build)"; echo "0 passed, 1 failed"; exit 1; }
done
command -v mpiexec.mpich >/dev/null || { echo "net-smoke: SKIPPED: mpiexec.mpich not installed"; exit 0; }
PROBE=$ROOT/build/net/netprobe-mpich
mkdir -p "$ROOT/build/net"
if [ ! -x "$PROBE" ] || [ "$ROOT/verify/netprobe.c" -nt "$PROBE" ]; then
  mpicc.mpich -O2 -Wall -o "$PROBE" "$ROOT/verify/netprobe.c" || { echo "0 passed, 1 failed"; exit 1; }
fi

"$NC" --name $NAME down >/dev/null 2>&1   # a cluster left by a killed run
cleanup() { "$NC" --name $NAME down >/dev/null 2>&1; rm -f "$TMP"; }
TMP=$(mktemp)
# Each step runs in the background and is waited for, so that a signal (Ctrl-C, make's
# timeout) is handled at once: the step is stopped (netcluster.sh kills its launcher and the
# ranks), then the cluster is removed.
CHILD=""
step() {  # step cmd...: output in $TMP, status returned
  "$@" >"$TMP" 2>&1 &
  CHILD=$!
  wait $CHILD
  local rc=$?
  CHILD=""
  return $rc
}
trap cleanup EXIT
trap 'echo "net-smoke: interrupted"; [ -z "$CHILD" ] || { kill -TERM $CHILD; wait $CHILD; }; exit 130' INT TERM HUP
step "$NC" --name $NAME up 3 --rate 500mbit --no-measure
rc=$?
out=$(cat "$TMP")
if [ $rc = 77 ]; then
  echo "net-smoke: SKIPPED: ${out#netcluster: }"
  exit 0
fi
[ $rc = 0 ] || { echo "$out"; echo "net-smoke: cannot bring the cluster up"; echo "0 passed, 1 failed"; exit 1; }
echo "net-smoke: MPICH, 3 nodes x 1 rank, 500 Mbit/s links, pcoll=$LIB"

txbytes() {  # bytes sent by each node's interface, space separated
  local k
  for k in 0 1 2; do
    ip -n pcoll-$NAME-n$k -s link show pcnet | awk '/TX:/{getline; printf "%s ", $1}'
  done
}

# 1. unmodified program, pcoll preloaded
before=($(txbytes))
step "$NC" --name $NAME run --timeout 40 --preload "$LIB" --env PCOLL_STATS=1 -- "$PROBE" 262144 2
rc=$?
log=$(cat "$TMP")
after=($(txbytes))
if [ $rc = 0 ] && grep -q '^netprobe: ok p=3 nodes=3' <<<"$log"; then
  ok "netprobe with LD_PRELOAD=libpcoll.so: $(grep -o 'bytes=[0-9]* seconds=[0-9.]*' <<<"$log"), 3 host names"
else
  bad "netprobe (exit $rc)"; tail -8 <<<"$log" | sed 's/^/    | /'
fi
if grep -q '^pcoll: stats' <<<"$log"; then
  ok "pcoll served the calls: $(grep '^pcoll: stats' <<<"$log" | awk '{print $3"/"$4}' | sort -u | tr '\n' ' ')"
else
  bad "no 'pcoll: stats' line: pcoll did not serve the program"
fi
low=""
for k in 0 1 2; do
  d=$(( ${after[$k]:-0} - ${before[$k]:-0} ))
  [ $d -ge 200000 ] || low+=" node$k:$d"
done
if [ -z "$low" ]; then
  ok "every node's link carried the traffic (tx bytes $(( ${after[0]} - ${before[0]} )) $(( ${after[1]} - ${before[1]} )) $(( ${after[2]} - ${before[2]} )))"
else
  bad "a link carried (almost) nothing:$low (traffic went around the shaped links)"
fi

# 2. each collective once, every algorithm checked against native
step "$NC" --name $NAME run --timeout 60 -- "$BENCH" --collectives reduce,allreduce,reduce_scatter,allgatherv \
  --sizes 4k,1m --iters 1 --min-iters 1 --warmup 0 --budget 0 --check --quiet
rc=$?
log=$(cat "$TMP")
if [ $rc = 0 ]; then
  ok "pcoll-bench --check, 4 collectives x (native, auto, every algorithm) at 4 KiB and 1 MiB: no mismatch"
else
  bad "pcoll-bench --check (exit $rc)"; tail -12 <<<"$log" | sed 's/^/    | /'
fi
"$NC" --name $NAME down >/dev/null 2>&1
left=$(ip netns list 2>/dev/null | grep -c "^pcoll-$NAME-" || true)
[ "$left" = 0 ] && ok "cluster removed" || bad "$left namespaces left behind"
echo "net-smoke: $((SECONDS - T0)) s"
echo "$passed passed, $failed failed"
[ $failed = 0 ]
