#!/usr/bin/env bash
# Intel's MPI Benchmarks (IMB-MPI1, shipped in the registry's impi-rt: mpis/impi/bin) native and
# under pcoll, side by side from IMB's own output: per collective and size, the best t_avg of
# RUNS runs per side (the runs alternate native, pcoll, native, pcoll, ...), and pcoll / native.
# IMB-MPI1 is linked against libmpi.so.12, the MPICH ABI: it runs under MPICH 4.0 (Debian's
# libmpich.so.12, through a symlink this script makes), MPICH 5.0 and Intel MPI.
#
#   scripts/imb.sh <mpich|mpich5|impi> [libpcoll.so] [options]
#     --np N            ranks (default 2)
#     --colls LIST      IMB names, comma-separated (default: the seven pcoll serves:
#                       Reduce,Allreduce,Reduce_scatter,Reduce_scatter_block,Allgatherv,Allgather,Bcast)
#     --msglog A:B      sizes 2^A..2^B bytes (default 2:22)
#     --off-cache       IMB's -off_cache -1 (cold buffers)
#     --runs N          runs per side (default 2)
#     --out FILE        also write the table there
#     --nbc             IMB-NBC instead (the I-collectives, e.g. --colls Iallreduce,Ireduce):
#                       per size the best t_pure of each side, its ratio, and each side's
#                       overlap[%] in that run (IMB-NBC computes nothing between the calls' tests:
#                       pcoll's schedules advance only inside MPI calls)
# Environment: IMB_ARGS adds IMB options (e.g. "-iter 200 -time 2"); IMB_PCOLL_ENV adds
# VAR=VALUE words to the pcoll side only (e.g. "PCOLL_TUNING=learned.toml"; with
# "PCOLL_LEARN=t.toml" and --runs 1 the pcoll run learns a table).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=mpi.sh
source "$ROOT/scripts/mpi.sh"
[ $# -ge 1 ] || { sed -n '2,16p' "$0"; exit 2; }
MPI=$1; shift
LIB=$ROOT/build/$MPI/libpcoll.so
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then LIB=$1; shift; fi
NP=2 COLLS=Reduce,Allreduce,Reduce_scatter,Reduce_scatter_block,Allgatherv,Allgather,Bcast
MSGLOG=2:22 OFF=() RUNS=2 OUTF= NBC=
while [ $# -gt 0 ]; do
  case $1 in
  --np) NP=$2; shift ;; --colls) COLLS=$2; shift ;; --msglog) MSGLOG=$2; shift ;;
  --off-cache) OFF=(-off_cache -1) ;; --runs) RUNS=$2; shift ;; --out) OUTF=$2; shift ;;
  --nbc) NBC=1 ;;
  *) echo "imb.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
mpi_setup "$MPI" || exit 2
[ "$MPI_ABI" = mpich ] || { echo "imb.sh: IMB-MPI1 is built for the MPICH ABI; $MPI is not" >&2; exit 2; }
IMB=$ROOT/mpis/impi/bin/IMB-${NBC:+NBC}
[ -n "$NBC" ] || IMB=${IMB}MPI1
[ -x "$IMB" ] || { echo "imb.sh: $IMB not installed (make deps MPI=impi)" >&2; exit 2; }
LIB=$(readlink -f "$LIB")
[ -f "$LIB" ] || { echo "imb.sh: no library $LIB (make MPI=$MPI)" >&2; exit 2; }
LIBDIR=
case $MPI in
mpich) LIBDIR=$ROOT/build/imb-mpich; mkdir -p "$LIBDIR"
  ln -sf "$(ls /usr/lib/x86_64-linux-gnu/libmpich.so.12 2>/dev/null || ls /usr/lib/*/libmpich.so.12 | head -1)" \
    "$LIBDIR/libmpi.so.12" ;;
*) LIBDIR=$MPI_VENV/lib ;;
esac
export LD_LIBRARY_PATH=$LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

one() { # one <side> <run>
  local side=$1 kvs=(LD_LIBRARY_PATH="$LD_LIBRARY_PATH")
  # shellcheck disable=SC2206
  [ "$side" = pcoll ] && kvs+=(LD_PRELOAD="$LIB" ${IMB_PCOLL_ENV:-})
  # shellcheck disable=SC2086
  timeout -k 10 1800 bash -c 'source "$0"; mpi_setup "$1" && shift 2 && mpi_run "$@"' \
    "$ROOT/scripts/mpi.sh" "$MPI" -- "$NP" "${kvs[@]}" -- \
    "$IMB" ${COLLS//,/ } -npmin "$NP" -msglog "$MSGLOG" "${OFF[@]}" ${IMB_ARGS:-} \
    </dev/null >"$TMP/$side.$2" 2>&1 || { echo "imb.sh: $side run $2 failed:" >&2; tail -5 "$TMP/$side.$2" >&2; exit 1; }
}
echo "imb.sh: $MPI, p = $NP, $COLLS, 2^$MSGLOG B${OFF:+, -off_cache -1}, best of $RUNS runs per side (alternated); pcoll = $LIB ${IMB_PCOLL_ENV:-}" >&2
for r in $(seq "$RUNS"); do
  echo "  run $r/$RUNS: native" >&2; one native "$r"
  echo "  run $r/$RUNS: pcoll" >&2; one pcoll "$r"
done
# IMB prints "# Benchmarking <Name>" then rows "bytes reps t_min t_max t_avg ...".
python3 - "$TMP" "$RUNS" "$MPI" "$NP" "${OFF:+cold}" "$NBC" <<'PY' | tee ${OUTF:+"$OUTF"}
import sys, re, glob, math
tmp, runs, mpi, np, cold, nbc = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6]
def parse(path, pick):
    """Per (benchmark, bytes) what `pick` takes of its row's fields."""
    out, name = {}, None
    for line in open(path, errors="replace"):
        m = re.match(r"# Benchmarking (\S+)", line)
        if m:
            name = m.group(1); continue
        f = line.split()
        if name and len(f) >= 5 and f[0].isdigit() and f[1].isdigit():
            try:
                out[(name, int(f[0]))] = pick(f)
            except (ValueError, IndexError):
                pass
    return out
if nbc:
    best = {}
    for side in ("native", "pcoll"):
        for r in range(1, runs + 1):
            for k, v in parse(f"{tmp}/{side}.{r}", lambda f: (float(f[3]), float(f[5]))).items():
                b = best.setdefault(side, {})
                if k not in b or v[0] < b[k][0]:
                    b[k] = v
    nat, pc = best.get("native", {}), best.get("pcoll", {})
    print(f"# IMB-NBC {mpi} p={np} {'cold (-off_cache -1)' if cold else 'hot'}: t_pure usec (best of {runs} runs per side) and that run's overlap[%]")
    print(f"{'collective':14} {'bytes':>9} {'native':>10} {'pcoll':>10} {'ratio':>7} {'ovl nat':>8} {'ovl pcoll':>9}")
    for (name, b) in sorted(nat):
        if (name, b) not in pc or b == 0:
            continue
        (tn, on), (tp, op) = nat[(name, b)], pc[(name, b)]
        print(f"{name:14} {b:9d} {tn:10.2f} {tp:10.2f} {tp / tn if tn > 0 else float('nan'):7.3f} {on:8.1f} {op:9.1f}")
    sys.exit(0)
best = {}
for side in ("native", "pcoll"):
    for r in range(1, runs + 1):
        for k, v in parse(f"{tmp}/{side}.{r}", lambda f: float(f[4])).items():
            best.setdefault(side, {})
            if k not in best[side] or v < best[side][k]:
                best[side][k] = v
nat, pc = best.get("native", {}), best.get("pcoll", {})
print(f"# IMB-MPI1 {mpi} p={np} {'cold (-off_cache -1)' if cold else 'hot'}: t_avg usec, best of {runs} runs per side")
print(f"{'collective':22} {'bytes':>9} {'native':>10} {'pcoll':>10} {'ratio':>7}")
logs = {}
for (name, b) in sorted(nat, key=lambda k: (k[0], k[1])):
    if (name, b) not in pc or b == 0:
        continue
    r = pc[(name, b)] / nat[(name, b)] if nat[(name, b)] > 0 else float("nan")
    logs.setdefault(name, []).append(math.log(r))
    print(f"{name:22} {b:9d} {nat[(name, b)]:10.2f} {pc[(name, b)]:10.2f} {r:7.3f}")
for name, l in logs.items():
    print(f"# {name}: geomean pcoll/native {math.exp(sum(l) / len(l)):.3f} over {len(l)} sizes, worst {math.exp(max(l)):.3f}")
PY
