#!/usr/bin/env bash
# The default decision against native with a benchmark that shares no code with pcoll
# (verify/ab.c: PMPI_X alternated with the preloaded MPI_X, barrier before each call, max over
# ranks, median): every collective, 8 B .. 16 MiB (powers of two), p = 2 on all five MPIs and
# p = 4 on Open MPI 4.1 (oversubscribed on 2 cores). Writes results/ab.<mpi>.p<p>.txt and
# prints the geometric mean and the worst size per collective. Run it on a quiet machine.
#   scripts/ab-default.sh [iterations, default 200]
# AB_CONFIGS="mpi:p ..." picks the runs (default "openmpi:2 mpich:2 openmpi:4 openmpi5:2
# mpich5:2 impi:2"); AB_COLLS the collectives.
set -euo pipefail
cd "$(dirname "$0")/.."
ITERS=${1:-200}
COLLS=${AB_COLLS:-reduce allreduce reduce_scatter allgatherv bcast allgather reduce_scatter_block}
source scripts/mpi.sh
SIZES=$(python3 -c 'print(" ".join(str(8 << k) for k in range(22)))')
mkdir -p build/verify results
for cfg in ${AB_CONFIGS:-openmpi:2 mpich:2 openmpi:4 openmpi5:2 mpich5:2 impi:2}; do
  mpi=${cfg%:*} p=${cfg#*:}
  lib=$PWD/build/$mpi/libpcoll.so
  [ -f "$lib" ] || { echo "ab-default: $lib missing (make MPI=$mpi build)" >&2; continue; }
  ( mpi_setup "$mpi" || exit 1
    $MPICC -O2 -o build/verify/ab-$mpi verify/ab.c
    out=results/ab.$mpi.p$p.txt
    : >"$out"
    for coll in $COLLS; do
      timeout -k 5 900 bash -c 'source scripts/mpi.sh; mpi_setup "$0" && mpi_run "$@"' "$mpi" \
        "$p" LD_PRELOAD="$lib" -- build/verify/ab-$mpi "$coll" "$ITERS" $SIZES </dev/null >>"$out"
    done )
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
