#!/usr/bin/env bash
# pcoll-tune over the emulated cluster, then pcoll-bench with the table it wrote:
#   4 nodes x 1 rank (TUNE_NET_NODES), 500 Mbit/s (TUNE_NET_RATE), MPICH, p = 4,
#   1K/64K/1M/4M/16M, all four collectives, no segment search -> results/tuning.net.toml and
#   results/net/tune.mpich.<N>x1.{txt,csv,log}; then reduce + allreduce 1..16 MiB, auto beside
#   every algorithm, --check -> results/net/auto.mpich.<N>x1.{txt,csv,json,log}.
# Binaries: TUNE_NET_BIN (default build/mpich). Run it alone (flock -x /work/cpu.lock).
# The cluster ("tn", or TUNE_NET_NAME) is removed on exit, also on failure.
set -uo pipefail
cd "$(dirname "$0")/.."
NC=scripts/netcluster.sh
NAME=${TUNE_NET_NAME:-tn}
N=${TUNE_NET_NODES:-4}
RATE=${TUNE_NET_RATE:-500mbit}
BIN=${TUNE_NET_BIN:-build/mpich}
OUT=results/net
[ -x "$BIN/pcoll-tune" ] && [ -x "$BIN/pcoll-bench" ] || { echo "tune-net: $BIN/pcoll-tune, pcoll-bench not built" >&2; exit 1; }
trap '"$NC" --name "$NAME" down >/dev/null 2>&1' EXIT
"$NC" --name "$NAME" down >/dev/null 2>&1
"$NC" --name "$NAME" up "$N" --rate "$RATE" | tee "$OUT/tune.mpich.${N}x1.links.txt"
r=${PIPESTATUS[0]}
[ "$r" = 0 ] || exit "$r"
# Two passes: the segmented algorithms split a message by the table's [model] (pcoll-tune
# measures with the library's table, the built-in shared-memory one), so first the fit alone
# (and a one-cell grid), then the grid with that fit in force (--no-model keeps it as the
# written table's [model]): the rules are measured as the written table will run them.
echo "tune-net: fit start $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg)"
FIT=$OUT/fit.mpich.${N}x1.toml
"$NC" --name "$NAME" run --timeout 300 -- "$BIN/pcoll-tune" --p 4 --collectives reduce --sizes 1k \
  --iters 4 --min-iters 2 --warmup 1 --budget 1 --segment-min off --out "$FIT" \
  >"$OUT/tune.mpich.${N}x1.log" 2>&1 || { echo "tune-net: pcoll-tune (fit) failed" >&2; exit 1; }
echo "tune-net: tune start $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg)"
"$NC" --name "$NAME" run --timeout 900 --env PCOLL_TUNING="$PWD/$FIT" -- "$BIN/pcoll-tune" --p 4 \
  --sizes 1k,64k,1m,4m,16m --no-model \
  --iters 6 --min-iters 2 --warmup 1 --budget 4 --remeasure-iters 6 --segment-min off \
  --out results/tuning.net.toml --csv "$OUT/tune.mpich.${N}x1.csv" \
  >>"$OUT/tune.mpich.${N}x1.log" 2>&1 || { echo "tune-net: pcoll-tune failed" >&2; exit 1; }
# --no-model writes no [model]: the first pass's (its samples' comment lines and the section).
python3 - "$FIT" results/tuning.net.toml <<'PY' || exit 1
import sys
fit = open(sys.argv[1]).read().split("\n")
cmt = [l for l in fit if l.startswith("# [model]") or l.startswith("# and MPI_Reduce_local")]
i = fit.index("[model]")
model = fit[i:i + 4]
table = open(sys.argv[2]).read()
assert "\n[model]\n" not in table and model[3].startswith("gamma"), "unexpected table layout"
head, rest = table.split("\n\n", 1)
text = head + "\n" + "\n".join(cmt) + "\n\n" + "\n".join(model) + "\n\n" + rest
open(sys.argv[2], "w").write(text)
PY
cp results/tuning.net.toml "$OUT/tune.mpich.${N}x1.txt"
echo "tune-net: auto run start $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg)"
"$NC" --name "$NAME" run --timeout 900 --env PCOLL_TUNING="$PWD/results/tuning.net.toml" -- \
  "$BIN/pcoll-bench" --collectives reduce,allreduce --sizes 1m..16m \
  --iters 10 --min-iters 2 --warmup 1 --budget 6 --check \
  --csv "$OUT/auto.mpich.${N}x1.csv" --json "$OUT/auto.mpich.${N}x1.json" \
  >"$OUT/auto.mpich.${N}x1.txt" 2>"$OUT/auto.mpich.${N}x1.log" || { echo "tune-net: pcoll-bench failed" >&2; exit 1; }
echo "tune-net: done $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg)"
"$NC" --name "$NAME" measure
