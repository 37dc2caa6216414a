#!/usr/bin/env bash
# verify/ab.c (plain C, no pcoll code: native PMPI_X alternated with the preloaded MPI_X,
# barrier before each call, max over ranks, median) over the emulated cluster: every
# collective, 1..16 MiB, MPICH, 4 nodes x 1 rank, 500 Mbit/s (AB_NET_NODES, AB_NET_RATE),
# pcoll with its built-in table unless PCOLL_TUNING is given in AB_NET_ENV ("VAR=VALUE ...");
# AB_NET_COLLS names the collectives (default all seven), AB_NET_SIZES the bytes.
#   scripts/ab-net.sh LIB [iters=4] [out=results/net/ab.mpich.4x1.txt]
# Run it alone (flock -x /work/cpu.lock). Its cluster ("ab") is removed on exit.
set -uo pipefail
cd "$(dirname "$0")/.."
LIB=$(realpath "${1:?usage: scripts/ab-net.sh LIB [iters] [out]}")
ITERS=${2:-4}
N=${AB_NET_NODES:-4}
OUT=${3:-results/net/ab.mpich.${N}x1.txt}
NC=scripts/netcluster.sh
AB=build/verify/ab-mpich
mkdir -p build/verify
mpicc.mpich -O2 -o "$AB" verify/ab.c || exit 1
trap '"$NC" --name ab down >/dev/null 2>&1' EXIT
"$NC" --name ab down >/dev/null 2>&1
"$NC" --name ab up "$N" --rate "${AB_NET_RATE:-500mbit}" | tee "$OUT" || exit 1
envs=()
for e in ${AB_NET_ENV:-}; do envs+=(--env "$e"); done
echo "# ab.c $ITERS iterations (ABBA: x2 per side), lib $LIB ${AB_NET_ENV:-(built-in table)}, $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT"
rc=0
for c in ${AB_NET_COLLS:-reduce allreduce reduce_scatter allgatherv bcast allgather reduce_scatter_block}; do
  "$NC" --name ab run --timeout 600 --preload "$LIB" "${envs[@]}" -- "$AB" "$c" "$ITERS" \
    ${AB_NET_SIZES:-1048576 2097152 4194304 8388608 16777216} </dev/null | grep '^ab ' | tee -a "$OUT" || rc=1
done
echo "# end $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT"
exit $rc
