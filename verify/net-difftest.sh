#!/usr/bin/env bash
# The randomized differential tester (verify/difftest.c) over the emulated cluster
# (scripts/netcluster.sh): MPICH (or Open MPI), N nodes x 1 rank on shaped links, pcoll preloaded, every
# algorithm of every collective forced in turn (difftest --coll C --alg A), plus a run with a
# random algorithm per case.
#
#   verify/net-difftest.sh [<libpcoll.so>]     (default build/<NET_MPI>/libpcoll.so)
#
# Environment: NET_MPI (mpich, or openmpi), NET_NODES (4), NET_RATE (500mbit), NET_CASES (cases per collective and
# algorithm, 120), NET_MAX_COUNT (20000 elements), DIFFTEST_SEED (random, printed),
# NET_TIMEOUT (seconds per run, 300). Brings its own cluster up (name "ndt") and always takes
# it down. Exit 77 (with one line) where namespaces cannot be made. Last line: "N passed,
# M failed" (cases; a run that crashed or hung counts as one failure).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
MPI=${NET_MPI:-mpich}
case $MPI in mpich|openmpi) ;; *) echo "net-difftest: NET_MPI must be mpich or openmpi"; exit 2 ;; esac
LIB=$(readlink -f "${1:-$ROOT/build/$MPI/libpcoll.so}")
NC=$ROOT/scripts/netcluster.sh
NAME=ndt
NODES=${NET_NODES:-4}
RATE=${NET_RATE:-500mbit}
CASES=${NET_CASES:-120}
MAXC=${NET_MAX_COUNT:-20000}
TMO=${NET_TIMEOUT:-300}
SEED=${DIFFTEST_SEED:-$(( $(date +%s) % 1000000007 ))}
OUT=$ROOT/build/verify
mkdir -p "$OUT/logs"
[ -f "$LIB" ] || { echo "net-difftest: no library $LIB (make MPI=$MPI build)"; echo "0 passed, 1 failed"; exit 1; }
BIN=$OUT/difftest-$MPI
if [ ! -x "$BIN" ] || [ "$ROOT/verify/difftest.c" -nt "$BIN" ]; then
  mpicc.$MPI -O2 -g -Wall -o "$BIN" "$ROOT/verify/difftest.c" -ldl -lm || { echo "0 passed, 1 failed"; exit 1; }
fi

cleanup() { "$NC" --name $NAME down >/dev/null 2>&1; }
trap cleanup EXIT
# runs are waited for in the background, so that a signal stops them (and the ranks) at once
CHILD=""
trap 'echo "net-difftest: interrupted"; [ -z "$CHILD" ] || { kill -TERM $CHILD; wait $CHILD; }; exit 130' INT TERM HUP
"$NC" --name $NAME down >/dev/null 2>&1   # a cluster left by a killed run
"$NC" --name $NAME up "$NODES" --rate "$RATE" --no-measure >/dev/null
rc=$?
if [ $rc = 77 ]; then echo "net-difftest: SKIPPED: network namespaces cannot be made here"; exit 77; fi
[ $rc = 0 ] || { echo "net-difftest: cannot bring the cluster up"; echo "0 passed, 1 failed"; exit 1; }

echo "net-difftest: $MPI, $NODES nodes x 1 rank, $RATE, pcoll=$LIB seed=$SEED cases=$CASES max-count=$MAXC"
passed=0 failed=0 runs=0 t_all=$SECONDS
one() {  # one(label, difftest args...)
  local label=$1; shift
  local log=$OUT/logs/net-difftest-$MPI-${label//\//-}.log t0=$SECONDS
  "$NC" --name $NAME run --mpi $MPI --timeout "$TMO" --preload "$LIB" -- "$BIN" --seed "$SEED" \
    --cases "$CASES" --max-count "$MAXC" "$@" >"$log" 2>&1 &
  CHILD=$!
  wait $CHILD
  local rc=$? summary
  CHILD=""
  runs=$((runs + 1))
  summary=$(grep -E '^difftest: [0-9]+ cases, [0-9]+ mismatches' "$log" | tail -1)
  if [ -z "$summary" ]; then
    failed=$((failed + 1))
    echo "  $label: CRASHED or HUNG (exit $rc after $((SECONDS - t0)) s), log $log"
    tail -5 "$log" | sed 's/^/    | /'
    return
  fi
  local c m
  c=$(sed -E 's/^difftest: ([0-9]+) cases, ([0-9]+) mismatches.*/\1/' <<<"$summary")
  m=$(sed -E 's/^difftest: ([0-9]+) cases, ([0-9]+) mismatches.*/\2/' <<<"$summary")
  passed=$((passed + c - m)); failed=$((failed + m))
  [ "$rc" != 0 ] && [ "$m" = 0 ] && { failed=$((failed + 1)); echo "  $label: exit status $rc without mismatches"; }
  printf '  %-26s %4d cases, %d mismatches (%3d s)  served: %s\n' "$label" "$c" "$m" $((SECONDS - t0)) \
    "$(grep -h '^difftest: served' "$log" | sed -E 's/.*: //; s/[a-z_]+\[\] ?//g')"
  [ "$m" != 0 ] && grep '^MISMATCH' "$log" | head -5 | sed 's/^/    /'
}
# every algorithm pcoll has for each collective (README's table); a missing one is a failure
declare -A ALGS=(
  [reduce]="native binomial pipeline greedy greedy_uni circulant butterfly binary fibonacci"
  [allreduce]="native binomial greedy circulant butterfly ring binary fibonacci"
  [reduce_scatter]="native binomial circulant butterfly ring"
  [allgatherv]="native binomial circulant butterfly ring")
for coll in reduce allreduce reduce_scatter allgatherv; do
  for alg in ${ALGS[$coll]}; do
    one "$coll/$alg" --coll "$coll" --alg "$alg"
  done
done
one "all/random" --alg random
echo "net-difftest: $runs runs in $((SECONDS - t_all)) s"
echo "$passed passed, $failed failed"
[ $failed = 0 ]
