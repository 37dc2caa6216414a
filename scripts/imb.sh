#!/usr/bin/env bash
# Intel's MPI Benchmarks (IMB-MPI1, shipped in the registry's impi-rt: mpis/impi/bin) native and
# under pcoll, side by side from IMB's own output: RUNS runs per side alternated (native, pcoll,
# native, pcoll, ...); per collective and size the median of pcoll run r / native run r, then
# each side's best and median t_avg.
# IMB-MPI1 is linked against libmpi.so.12, the MPICH ABI: it runs under MPICH 4.0 (Debian's
# libmpich.so.12, through a symlink this script makes), MPICH 5.0 and Intel MPI.
#
#   scripts/imb.sh <mpich|mpich5|impi> [libpcoll.so] [options]
#     --np N            ranks (default 2)
#     --colls LIST      IMB names, comma-separated (default: the seven pcoll serves:
#                       Reduce,Allreduce,Reduce_scatter,Reduce_scatter_block,Allgatherv,Allgather,Bcast)
#     --msglog A:B      sizes 2^A..2^B bytes (default 2:22)
#     --off-cache       IMB's -off_cache -1 (cold buffers)
#     --runs N          runs per side (default 10; pairs alternate ABBA)
#     --out FILE        also write the table there
#     --raw DIR         also keep IMB's own output of every run there (native.N, pcoll.N)
#     --nbc             IMB-NBC instead (the I-collectives, e.g. --colls Iallreduce,Ireduce):
#                       per size the paired ratio of t_pure, each side's best t_pure and
#                       median overlap[%] (IMB-NBC computes nothing between the calls' tests:
#                       pcoll's schedules advance only inside MPI calls)
# Environment: IMB_ARGS adds IMB options (e.g. "-iter 200 -time 2"); IMB_PCOLL_ENV adds
# VAR=VALUE words to the pcoll side only (e.g. "PCOLL_TUNING=learned.toml"; with
# "PCOLL_LEARN=t.toml" and --runs 1 the pcoll run learns a table).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=mpi.sh
source "$ROOT/scripts/mpi.sh"
[ $# -ge 1 ] || { sed -n '2,22p' "$0"; exit 2; }
MPI=$1; shift
LIB=$ROOT/build/$MPI/libpcoll.so
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then LIB=$1; shift; fi
NP=2 COLLS=Reduce,Allreduce,Reduce_scatter,Reduce_scatter_block,Allgatherv,Allgather,Bcast
MSGLOG=2:22 OFF=() RUNS=10 OUTF= NBC= RAW=
while [ $# -gt 0 ]; do
  case $1 in
  --np) NP=$2; shift ;; --colls) COLLS=$2; shift ;; --msglog) MSGLOG=$2; shift ;;
  --off-cache) OFF=(-off_cache -1) ;; --runs) RUNS=$2; shift ;; --out) OUTF=$2; shift ;;
  --nbc) NBC=1 ;; --raw) RAW=$2; shift ;;
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
echo "imb.sh: $MPI, p = $NP, $COLLS, 2^$MSGLOG B${OFF:+, -off_cache -1}, $RUNS runs per side (alternated); pcoll = $LIB ${IMB_PCOLL_ENV:-}" >&2
for r in $(seq "$RUNS"); do
  # ABBA: odd runs native first, even runs pcoll first (neither side always runs second)
  sides="native pcoll"; [ $((r % 2)) = 0 ] && sides="pcoll native"
  for side in $sides; do echo "  run $r/$RUNS: $side" >&2; one "$side" "$r"; done
done
[ -z "$RAW" ] || { mkdir -p "$RAW" && cp "$TMP"/native.* "$TMP"/pcoll.* "$RAW"/; }
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
def median(v):
    v = sorted(v)
    return (v[(len(v) - 1) // 2] + v[len(v) // 2]) / 2
def runs_by(pick):
    """Per side, per (benchmark, bytes), {run: what pick takes}."""
    out = {}
    for side in ("native", "pcoll"):
        for r in range(1, runs + 1):
            for k, v in parse(f"{tmp}/{side}.{r}", pick).items():
                out.setdefault(side, {}).setdefault(k, {})[r] = v
    return out.get("native", {}), out.get("pcoll", {})
def paired(nr, cr):
    """The median over runs of pcoll run r / native run r (None without a pair)."""
    pairs = [cr[r] / nr[r] for r in nr if r in cr and nr[r] > 0]
    return median(pairs) if pairs else None
# This VM's IMB runs differ 2-3x by when they ran, native as much as pcoll (docs/benchmarking.md):
# the headline is the median over the runs of pcoll's run / the native run next to it (a slow
# spell longer than a pair slows both); then each side's best and median run.
head = f"# {'IMB-NBC' if nbc else 'IMB-MPI1'} {mpi} p={np} {'cold (-off_cache -1)' if cold else 'hot'}"
if nbc:
    nat, pc = runs_by(lambda f: (float(f[3]), float(f[5])))
    print(f"{head}: t_pure usec and overlap[%], {runs} runs per side alternated")
    print("# paired = median over runs of pcoll t_pure run r / native run r; best t_pure of each side; median overlap of each side;")
    print("# ovl diff = median over runs of pcoll overlap run r - native overlap run r (points)")
    print(f"{'collective':14} {'bytes':>9} {'paired':>7} {'native':>10} {'pcoll':>10} {'ovl nat':>8} {'ovl pcoll':>9} {'ovl diff':>8}")
    for (name, b) in sorted(nat):
        if (name, b) not in pc or b == 0:
            continue
        nr, cr = nat[(name, b)], pc[(name, b)]
        rp = paired({r: v[0] for r, v in nr.items()}, {r: v[0] for r, v in cr.items()})
        if rp is None:
            continue
        tn, tp = min(v[0] for v in nr.values()), min(v[0] for v in cr.values())
        on, op = median([v[1] for v in nr.values()]), median([v[1] for v in cr.values()])
        od = median([cr[r][1] - nr[r][1] for r in nr if r in cr])
        print(f"{name:14} {b:9d} {rp:7.3f} {tn:10.2f} {tp:10.2f} {on:8.1f} {op:9.1f} {od:8.1f}")
    sys.exit(0)
nat, pc = runs_by(lambda f: float(f[4]))
print(f"{head}: t_avg usec, {runs} runs per side alternated")
print("# paired = median over runs of pcoll run r / native run r; best / median = of each side's runs")
print(f"{'collective':22} {'bytes':>9} {'paired':>7} {'native':>10} {'pcoll':>10} {'ratio':>7} {'med nat':>10} {'med pcoll':>10} {'ratio':>7}")
logs = {}
for (name, b) in sorted(nat, key=lambda k: (k[0], k[1])):
    if (name, b) not in pc or b == 0:
        continue
    nr, cr = nat[(name, b)], pc[(name, b)]
    rp = paired(nr, cr)
    if rp is None:
        continue
    n, c = min(nr.values()), min(cr.values())
    mn, mc = median(nr.values()), median(cr.values())
    r = c / n if n > 0 else float("nan")
    rm = mc / mn if mn > 0 else float("nan")
    logs.setdefault(name, []).append(math.log(rp))
    print(f"{name:22} {b:9d} {rp:7.3f} {n:10.2f} {c:10.2f} {r:7.3f} {mn:10.2f} {mc:10.2f} {rm:7.3f}")
for name, l in logs.items():
    print(f"# {name}: geomean of the paired ratios {math.exp(sum(l) / len(l)):.3f} over {len(l)} sizes, worst {math.exp(max(l)):.3f}")
PY
