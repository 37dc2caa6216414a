#!/usr/bin/env bash
# The default table's automatic choice vs native, all seven collectives (CHECK_COLLS), 8 B .. 4 MiB,
# interleaved in one process: by default p = 2 on Debian's two MPIs and p = 4 on Open MPI (issue 6's
# check); CHECK_CONFIGS="openmpi5:2 mpich5:2 impi:2" for others.
# Writes results/auto.<mpi>.p<p>.csv and prints geometric mean and worst ratio per collective.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p results
ARGS="--collectives ${CHECK_COLLS:-reduce,allreduce,reduce_scatter,allgatherv,bcast,allgather,reduce_scatter_block} --sizes 8..4m --algorithms auto --iters 400 --budget 3 --check ${CHECK_ARGS:-}"
source scripts/mpi.sh
# CHECK_CONFIGS="mpi:p ..." picks the runs (any of the five MPIs of scripts/mpi.sh).
for cfg in ${CHECK_CONFIGS:-openmpi:2 mpich:2 openmpi:4}; do
  mpi=${cfg%:*} p=${cfg#*:}
  [ -x build/$mpi/pcoll-bench ] || { echo "check-default: build/$mpi/pcoll-bench missing (make MPI=$mpi build)" >&2; continue; }
  # shellcheck disable=SC2086
  bash -c 'source scripts/mpi.sh; mpi_setup "$0" && mpi_run "$@"' "$mpi" "$p" -- \
    build/$mpi/pcoll-bench $ARGS --csv results/auto.$mpi.p$p.csv --quiet </dev/null >/dev/null
done
python3 - <<'PY'
import csv, math, glob
def human(b):
    for u, s in ((1 << 20, "MiB"), (1 << 10, "KiB")):
        if b >= u:
            return f"{b // u} {s}"
    return f"{b} B"
print("| MPI | p | collective | geo-mean pcoll/native | worst size | best size |")
print("|---|---|---|---|---|---|")
for f in sorted(glob.glob("results/auto.*.csv")):
    mpi, p = f.split(".")[1], f.split(".")[2][1:]
    rows = [r for r in csv.DictReader(open(f)) if r["variant"] == "auto"]
    for coll in ["reduce", "allreduce", "reduce_scatter", "allgatherv", "bcast", "allgather", "reduce_scatter_block"]:
        v = [(int(r["bytes"]), float(r["ratio"]), r["algorithm"]) for r in rows if r["collective"] == coll]
        if not v:
            continue
        gm = math.exp(sum(math.log(x[1]) for x in v) / len(v))
        w = max(v, key=lambda x: x[1])
        b = min(v, key=lambda x: x[1])
        print(f"| {mpi} | {p} | {coll} | {gm:.2f} | {w[1]:.2f} at {human(w[0])} ({w[2]}) "
              f"| {b[1]:.2f} at {human(b[0])} ({b[2]}) |")
# Cells above 1.2x with their means: oversubscribed runs (p = 4 on 2 cores) give bimodal
# times (two scheduler modes), where the median can flip between modes on one side only.
allrows = {}
for f in sorted(glob.glob("results/auto.*.csv")):
    mpi, p = f.split(".")[1], f.split(".")[2][1:]
    for r in csv.DictReader(open(f)):
        allrows[(mpi, p, r["collective"], int(r["bytes"]), r["variant"])] = r
for (mpi, p, coll, b, v), r in sorted(allrows.items()):
    if v == "auto" and float(r["ratio"]) > 1.2:
        n = allrows[(mpi, p, coll, b, "native")]
        print(f"note: {mpi} p={p} {coll} {human(b)} ({r['algorithm']}): median ratio {float(r['ratio']):.2f}, "
              f"mean ratio {float(r['mean_us']) / float(n['mean_us']):.2f} (medians {float(n['median_us']):.2f} / "
              f"{float(r['median_us']):.2f} us, p90 {float(n['p90_us']):.2f} / {float(r['p90_us']):.2f} us)")
PY
