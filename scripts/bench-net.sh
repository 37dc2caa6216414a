#!/usr/bin/env bash
# make bench-net: pcoll-bench over the emulated cluster (scripts/netcluster.sh), MPICH
# (BENCH_NET_MPI=openmpi for Open MPI).
#   Configurations (BENCH_NET_CONFIGS, default "4x1 8x1 2x2" = nodes x ranks per node), all
#   four collectives, 1 KiB .. 16 MiB, native, auto and every algorithm, interleaved (ABBA),
#   every result checked (--check). Links: BENCH_NET_RATE (500mbit), burst 32 KB, acknowledgements first (netcluster.sh --queue acks).
# Writes results/net/bench.<mpi>.<N>x<K>.{txt,csv,json,svg,ratio.svg} and .links.txt (the
# link check of `up`); each configuration
# brings its own cluster up ("bn", or BENCH_NET_NAME) and takes it down. Bandwidth-bound cells are slow (16 MiB
# at 500 Mbit/s: 0.27 s per operation and link), so iterations are few: BENCH_NET_ARGS adds
# or overrides pcoll-bench options (later ones win). About 10 min for 4x1 on 2 cores.
# Exit 77 where network namespaces cannot be made.
set -uo pipefail
cd "$(dirname "$0")/.."
NC=scripts/netcluster.sh
BN=${BENCH_NET_NAME:-bn}   # cluster name (scripts/netcluster.sh --name)
MPI=${BENCH_NET_MPI:-mpich}
BIN=build/$MPI/pcoll-bench
RATE=${BENCH_NET_RATE:-500mbit}
CONFIGS=${BENCH_NET_CONFIGS:-4x1 8x1 2x2}
EXTRA=${BENCH_NET_ARGS:-}
[ -x "$BIN" ] || { echo "bench-net: $BIN not built (make MPI=$MPI build)" >&2; exit 1; }
mkdir -p results/net
CHILD=""
trap '"$NC" --name "$BN" down >/dev/null 2>&1' EXIT
trap 'echo "bench-net: interrupted"; [ -z "$CHILD" ] || { kill -TERM $CHILD; wait $CHILD; }; exit 130' INT TERM HUP
rc=0
for cfg in $CONFIGS; do
  n=${cfg%x*} k=${cfg#*x}
  out=results/net/bench.$MPI.${n}x$k
  "$NC" --name "$BN" down >/dev/null 2>&1
  "$NC" --name "$BN" up "$n" --rate "$RATE" --ppn "$k" > >(tee "$out.links.txt")
  r=$?
  [ $r = 77 ] && exit 77
  [ $r = 0 ] || { rc=1; continue; }
  echo "== $MPI, $n nodes x $k ranks, $RATE ($(date -u +%Y-%m-%d))"
  # shellcheck disable=SC2086
  "$NC" --name "$BN" run --mpi "$MPI" --timeout 3000 -- "$BIN" --collectives reduce,allreduce,reduce_scatter,allgatherv \
    --sizes 1k..16m --iters 10 --min-iters 2 --warmup 1 --budget 6 --check \
    --csv "$out.csv" --json "$out.json" --plot "$out.svg" --plot-ratio "$out.ratio.svg" $EXTRA \
    > >(tee "$out.txt") 2>"$out.log" &
  CHILD=$!
  wait $CHILD || rc=1
  CHILD=""
  "$NC" --name "$BN" down >/dev/null
done
echo "bench-net: results in results/net/"
exit $rc
