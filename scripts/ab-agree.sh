#!/usr/bin/env bash
# pcoll-bench against a benchmark that shares none of its code (verify/ab.c: plain C, native
# PMPI_X alternated with the preloaded MPI_X, barrier before each call, max over ranks,
# median): the default decision's ratio to native for reduce and allreduce below 4 KiB, the
# way `make demo` runs pcoll-bench (every algorithm interleaved, forced between calls).
# Prints both ratios per size and the difference; exit 1 if any differs by more than
# AB_TOLERANCE (default 0.10). Timing on a shared machine: run it when the machine is quiet.
#   scripts/ab-agree.sh [openmpi|mpich] [p]        (default: openmpi 4)
set -euo pipefail
cd "$(dirname "$0")/.."
MPI=${1:-openmpi}
P=${2:-4}
TOL=${AB_TOLERANCE:-0.10}
SIZES="8 64 512 2048"
# The shipped build (make build), or else / if newer the release build of the same tree
# (MPICC=mpicc.$MPI CARGO_TARGET_DIR=target-$MPI cargo build --release -p pcoll-mpi -p pcoll-tools).
newest() { { ls -t "$@" 2>/dev/null || true; } | head -1; }
LIB=${AB_LIB:-$(newest build/$MPI/libpcoll.so target-$MPI/release/libpcoll_mpi.so)}
BENCH=${AB_BENCH:-$(newest build/$MPI/pcoll-bench target-$MPI/release/pcoll-bench)}
[ -n "$LIB" ] && [ -f "$LIB" ] && [ -x "$BENCH" ] || { echo "ab-agree: build first (make MPI=$MPI build)" >&2; exit 2; }
LIB=$(realpath "$LIB")
echo "ab-agree: $LIB, $BENCH"
mkdir -p build/verify
AB=build/verify/ab-$MPI
mpicc.$MPI -O2 -o "$AB" verify/ab.c
if [ "$MPI" = openmpi ]; then
  run() { timeout -k 5 600 mpirun.openmpi --allow-run-as-root --oversubscribe -np "$P" "$@" </dev/null; }
  pre() { run -x LD_PRELOAD="$LIB" "$@"; }
else
  run() { timeout -k 5 600 mpiexec.mpich -n "$P" "$@" </dev/null; }
  pre() { run -genv LD_PRELOAD "$LIB" "$@"; }
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for coll in reduce allreduce; do
  pre "$AB" "$coll" 400 $SIZES >>"$tmp/ab.txt"
done
run "$BENCH" --collectives reduce,allreduce --sizes "$(echo $SIZES | tr ' ' ,)" \
  --iters 40 --min-iters 4 --warmup 2 --budget 2 --csv "$tmp/bench.csv" --quiet >/dev/null
python3 - "$tmp/ab.txt" "$tmp/bench.csv" "$TOL" "$MPI" "$P" <<'PY'
import csv, sys
ab_file, bench_file, tol, mpi, p = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4], sys.argv[5]
ab = {}
for line in open(ab_file):
    f = line.split()
    if f and f[0] == "ab":
        ab[(f[1], int(f[3]))] = float(f[6])
bench = {(r["collective"], int(r["bytes"])): float(r["ratio"])
         for r in csv.DictReader(open(bench_file)) if r["variant"] == "auto"}
bad = 0
print(f"ab-agree: {mpi} p={p}, auto/native: pcoll-bench (all algorithms interleaved) vs verify/ab.c")
print(f"{'collective':<12} {'bytes':>6} {'pcoll-bench':>11} {'ab.c':>6} {'diff':>6}")
for key in sorted(ab):
    if key not in bench:
        print(f"{key[0]:<12} {key[1]:>6}  (no pcoll-bench row)")
        bad = 1
        continue
    b, a = bench[key], ab[key]
    d = abs(b - a) / a
    flag = "" if d <= tol else "  <-- differs"
    bad |= d > tol
    print(f"{key[0]:<12} {key[1]:>6} {b:>11.3f} {a:>6.3f} {d:>6.1%}{flag}")
print("ab-agree: " + ("FAIL (differ by more than %.0f%%)" % (tol * 100) if bad else "PASS (within %.0f%%)" % (tol * 100)))
sys.exit(1 if bad else 0)
PY
