#!/usr/bin/env bash
# verify/gate.sh <openmpi|mpich> <libpcoll.so>: the native gate against the table it stands in
# for (verify/gate.c), on sub-communicators of 1..4 ranks that are split and freed over and
# over. Last line: `gate: PASS ...` or `gate: FAIL ...`; exit status non-zero on failure.
set -uo pipefail
[ $# -eq 2 ] || { echo "usage: $0 <openmpi|mpich> <libpcoll.so>" >&2; exit 2; }
MPI=$1
LIB=$(readlink -f "$2")
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=$ROOT/build/verify
mkdir -p "$OUT"
BIN=$OUT/gate-$MPI
mpicc.$MPI -O2 -Wall -o "$BIN" "$ROOT/verify/gate.c" -ldl || { echo "gate: FAIL (build)"; exit 1; }
TABLE=$OUT/gate.toml
# verify/gate.c's table: native at p = 2 below 1 KiB and at p = 4, a pcoll algorithm elsewhere.
for ca in reduce:binomial allreduce:binomial reduce_scatter:binomial allgatherv:ring bcast:binomial \
  allgather:ring reduce_scatter_block:binomial; do
  printf '[[%s]]\np = 2\nbytes = [0, 1024]\nalgorithm = "native"\n[[%s]]\np = 4\nalgorithm = "native"\n' "${ca%:*}" "${ca%:*}"
  printf '[[%s]]\nalgorithm = "%s"\n' "${ca%:*}" "${ca#*:}"
done >"$TABLE"
if [ "$MPI" = openmpi ]; then
  out=$(timeout -k 5 150 mpirun.openmpi --allow-run-as-root --oversubscribe -np 5 -x LD_PRELOAD="$LIB" \
    -x PCOLL_TUNING="$TABLE" "$BIN" 200 </dev/null 2>&1)
else
  out=$(timeout -k 5 150 mpiexec.mpich -n 5 -genv LD_PRELOAD "$LIB" -genv PCOLL_TUNING "$TABLE" \
    "$BIN" 15 </dev/null 2>&1)
fi
rc=$?
echo "$out" | grep -E '^gate: ' | head -20
[ $rc = 0 ] && echo "$out" | grep -q '^gate: PASS' && exit 0
echo "$out" | tail -5
echo "gate: FAIL (exit $rc)"
exit 1
