#!/usr/bin/env bash
# The default decision against native with a benchmark that shares no code with pcoll
# (verify/ab.c: PMPI_X alternated with the preloaded MPI_X, barrier before each call, max over
# ranks, median): every collective, 8 B .. 4 MiB (powers of two), p = 2 on both MPIs and p = 4
# on Open MPI (oversubscribed on 2 cores). Writes results/ab.<mpi>.p<p>.txt and prints the
# geometric mean and the worst size per collective. Run it on a quiet machine.
#   scripts/ab-default.sh [iterations, default 200]
set -euo pipefail
cd "$(dirname "$0")/.."
ITERS=${1:-200}
COLLS="reduce allreduce reduce_scatter allgatherv bcast allgather reduce_scatter_block"
SIZES=$(python3 -c 'print(" ".join(str(8 << k) for k in range(20)))')
mkdir -p build/verify results
for cfg in openmpi:2 mpich:2 openmpi:4; do
  mpi=${cfg%:*} p=${cfg#*:}
  lib=$PWD/build/$mpi/libpcoll.so
  [ -f "$lib" ] || { echo "ab-default: $lib missing (make MPI=$mpi build)" >&2; continue; }
  mpicc.$mpi -O2 -o build/verify/ab-$mpi verify/ab.c
  out=results/ab.$mpi.p$p.txt
  : >"$out"
  for coll in $COLLS; do
    if [ "$mpi" = openmpi ]; then
      timeout -k 5 900 mpirun.openmpi --allow-run-as-root --oversubscribe -np "$p" -x LD_PRELOAD="$lib" \
        build/verify/ab-$mpi "$coll" "$ITERS" $SIZES </dev/null >>"$out"
    else
      timeout -k 5 900 mpiexec.mpich -n "$p" -genv LD_PRELOAD "$lib" \
        build/verify/ab-$mpi "$coll" "$ITERS" $SIZES </dev/null >>"$out"
    fi
  done
done
python3 - <<'PY'
import glob, math
print("| MPI | p | collective | geo-mean MPI_X/PMPI_X | worst size | best size |")
print("|---|---|---|---|---|---|")
def human(b):
    for u, s in ((1 << 20, "MiB"), (1 << 10, "KiB")):
        if b >= u:
            return f"{b // u} {s}"
    return f"{b} B"
for f in sorted(glob.glob("results/ab.*.p*.txt")):
    rows = {}
    for line in open(f):
        x = line.split()
        if x and x[0] == "ab":
            rows.setdefault(x[1], []).append((int(x[3]), float(x[6])))
    mpi, p = f.split(".")[1], f.split(".")[2][1:]
    for coll, v in rows.items():
        gm = math.exp(sum(math.log(r) for _, r in v) / len(v))
        w, b = max(v, key=lambda t: t[1]), min(v, key=lambda t: t[1])
        print(f"| {mpi} | {p} | {coll} | {gm:.2f} | {w[1]:.2f} at {human(w[0])} | {b[1]:.2f} at {human(b[0])} |")
PY
