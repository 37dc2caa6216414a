#!/usr/bin/env bash
# mpi4py as a real client of pcoll (issue 7).
#
#   verify/mpi4py.sh <openmpi|mpich|openmpi5|mpich5|impi> <libpcoll.so> [--quick|--suite|--setup]
#
# Builds (once, cached) a venv build/venv-<mpi> with mpi4py 4.1.2 compiled from the PyPI sdist
# against that MPI (at -O0 unless MPI4PY_CFLAGS says otherwise; plus numpy), then runs
# mpi4py's own collective test modules from the
# unpacked sdist natively and with LD_PRELOAD=libpcoll.so, per world size p, and compares the
# per-rank results (tests run / failures / errors / skipped, and the names of failing tests).
# They must be equal; tests that fail natively are listed as such. With PCOLL_STATS=1 the pcoll
# run prints pcoll's own statistics, which shows that pcoll served the calls.
#
#   full  : test_cco_buf test_cco_vec test_cco_nb_buf test_cco_nb_vec test_cco_pr_buf
#           test_cco_pr_vec test_op test_cco_obj,
#           p = 1..5 (Open MPI), p = 1, 2 (MPICH)
#   quick : test_cco_buf test_cco_vec (the collective buffer tests; on MPICH's ABI also
#           test_cco_pr_buf test_cco_pr_vec), p = 1, 2, 3 (Debian's Open MPI), p = 1, 2 (the others);
#           the native run (the reference) only where the pcoll run is not clean (a test failed
#           or errored, or the exit status is not 0): a clean run equals native's by definition
#           of mpi4py's own checks, and Open MPI at p = 3 on 2 cores takes 2-3 minutes a run
#   suite : every module of mpi4py's test suite (test_*.py: point-to-point, RMA, I/O, topologies,
#           sessions, ...; pcoll interposes far more than the collectives), one launch per module
#           and p (MPI4PY_PS, default 1 2 3 on Open MPI's ABI, 1 2 on MPICH's), the same forced
#           algorithms; the native run only where
#           the pcoll run is not clean; a module that hangs natively as under pcoll (both time out)
#           is noted, not failed; MPI4PY_MODULES="test_win test_rma" runs those only, MPI4PY_SKIP
#           and MPI4PY_EXCLUDE name the modules and tests left out (see below). Not in make
#           test (5-10 minutes per MPI here): make mpi4py-suite-<mpi>
#   setup : only create the venv
# Last line: "N passed, M failed" (one test = one (p, module set) comparison).
set -uo pipefail

usage() { echo "usage: $0 <openmpi|mpich|openmpi5|mpich5|impi> <libpcoll.so> [--quick|--suite|--setup]" >&2; exit 2; }
[ $# -ge 2 ] || usage
MPI=$1
LIB=$(readlink -f "$2")
MODE=${3:-full}
case $MODE in --quick) MODE=quick ;; --setup) MODE=setup ;; --suite) MODE=suite ;; full|--full) MODE=full ;; *) usage ;; esac
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=../scripts/mpi.sh
source "$ROOT/scripts/mpi.sh"
mpi_setup "$MPI" || usage
BUILD=$ROOT/build
VER=4.1.2
SDIST=$BUILD/mpi4py-$VER.tar.gz
SRC=$BUILD/mpi4py-$VER
VENV=$BUILD/venv-$MPI
mkdir -p "$BUILD"

log() { echo "mpi4py.sh[$MPI]: $*"; }

setup() {
  # The sdist once, also when both MPIs' venvs are set up at the same time (make test).
  exec 9>"$BUILD/.mpi4py-sdist.lock"
  flock 9
  if [ ! -f "$SDIST" ]; then
    log "downloading the mpi4py $VER sdist"
    python3 -m pip download -q --no-deps --no-binary mpi4py "mpi4py==$VER" -d "$BUILD" || return 1
  fi
  if [ ! -f "$SRC/test/main.py" ]; then
    tar xzf "$SDIST" -C "$BUILD" || return 1
  fi
  flock -u 9
  exec 9>&-
  local stamp="$VENV/.pcoll-mpi4py-$VER"
  local want
  # -O0: compiling mpi4py's one big generated C file at -O2 takes ~4 min on 2 cores, at -O0
  # well under 1 min; the tests exercise MPI, not mpi4py's own speed.
  local cflags=${MPI4PY_CFLAGS:--O0 -g0}
  want="$($MPICC -show 2>/dev/null) CFLAGS=$cflags"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x "$VENV/bin/python" ]; then
    return 0
  fi
  log "creating $VENV (mpi4py $VER from source with $MPICC, CFLAGS=$cflags; about a minute)"
  rm -rf "$VENV"
  python3 -m venv "$VENV" || return 1
  CFLAGS=$cflags MPICC=$MPICC "$VENV/bin/pip" install -q --no-cache-dir --no-binary mpi4py numpy "$SDIST" \
    || return 1
  "$VENV/bin/python" -c 'from mpi4py import MPI; print(MPI.Get_library_version().splitlines()[0])' \
    || return 1
  echo "$want" >"$stamp"
}

if ! setup; then
  log "setup failed"
  echo "0 passed, 1 failed"
  exit 1
fi
[ "$MODE" = setup ] && { log "venv ready: $VENV"; exit 0; }
[ -f "$LIB" ] || { log "no library at $2"; echo "0 passed, 1 failed"; exit 1; }

if [ "$MODE" = quick ]; then
  MODS=(test_cco_buf test_cco_vec)
  # MPICH's ABI: the persistent collectives too (mpi4py calls their _init_c forms there; a
  # few seconds; on Debian's MPICH pcoll's stand-in requests once hung them, session 18)
  [ "$MPI_ABI" = mpich ] && MODS+=(test_cco_pr_buf test_cco_pr_vec)
  # p = 3 for Debian's Open MPI only (make test's 30 minutes: each such run ~1 min here)
  if [ "$MPI" = openmpi ]; then PS=(1 2 3); else PS=(1 2); fi
  TMO=300
elif [ "$MODE" = suite ]; then
  if [ -n "${MPI4PY_MODULES:-}" ]; then read -r -a MODS <<<"$MPI4PY_MODULES"; else
    mapfile -t MODS < <(cd "$SRC/test" && ls test_*.py | sed 's/\.py$//')
  fi
  # Modules that hang natively here give no reference: left out (session 48, this VM).
  # Open MPI 4.1.4: test_spawn hung in 2 of 4 runs at p = 1 and at p = 2 (Comm_spawn_multiple);
  # MPICH 4.0.2: test_util_sync's testWaitForNotify (passive-target RMA) hangs at p = 2;
  # Intel MPI 2021.19: test_dynproc times out at p = 2 (300 s, with and without pcoll).
  case $MPI in
    openmpi) skip=${MPI4PY_SKIP-test_spawn} ;;
    mpich) skip=${MPI4PY_SKIP-test_util_sync} ;;
    impi) skip=${MPI4PY_SKIP-test_dynproc} ;;
    *) skip=${MPI4PY_SKIP-} ;;
  esac
  # Tests that call collectives in a different order on different ranks (erroneous, MPI 4.1
  # section 6.12: "in the same order per communicator"), which native MPIs tolerate: mpi4py's
  # Iagree without ULFM is MPI_Iallreduce, and testIAgree on a world duplicate starts it before
  # an MPI_Barrier on one rank and after it on the others; pcoll completes its schedules on a
  # communicator before a blocking collective there (docs/nonblocking.md), so under a forced
  # allreduce algorithm that rank waits for the others' part forever. Left out.
  read -r -a XS <<<"${MPI4PY_EXCLUDE-TestULFMWorld.testIAgree}"
  XARGS=()
  for x in "${XS[@]}"; do XARGS+=(-x "$x"); done
  kept=()
  for m in "${MODS[@]}"; do
    if [[ " $skip " == *" $m "* ]]; then log "$m left out: it hangs without pcoll here (MPI4PY_SKIP= runs it)"
    else kept+=("$m"); fi
  done
  MODS=("${kept[@]}")
  # p = 3 on Open MPI's ABI only: MPICH's oversubscribed ranks busy-poll (its 64 modules at
  # p = 3 would take over an hour on 2 cores)
  if [ "$MPI_ABI" = openmpi ]; then dps="1 2 3"; else dps="1 2"; fi
  read -r -a PS <<<"${MPI4PY_PS:-$dps}"
  TMO=${MPI4PY_TMO:-300}
else
  MODS=(test_cco_buf test_cco_vec test_cco_nb_buf test_cco_nb_vec test_cco_pr_buf test_cco_pr_vec test_op test_cco_obj)
  if [ "$MPI_ABI" = openmpi ]; then PS=(1 2 3 4 5); else PS=(1 2); fi
  TMO=1200
fi
# -i is a regex searched in the test file name: test_cco_buf also selects test_cco_buf_inter
# (intercommunicator collectives, which pcoll hands to the native MPI): kept, as more coverage.
INC=()
for m in "${MODS[@]}"; do INC+=(-i "$m"); done

OUT=$BUILD/mpi4py-$MPI-runs
rm -rf "$OUT"
mkdir -p "$OUT"

# One run: $1 = p, $2 = native|pcoll, $3 = its directory, the rest main.py's test selection.
# Each rank's stderr goes to its own file.
run() {
  local p=$1 mode=$2 dir=$3
  shift 3
  mkdir -p "$dir"
  local wrap="exec \"$VENV/bin/python\" \"$SRC/test/main.py\" ${*@Q} 2>\"$dir/rank.\${OMPI_COMM_WORLD_RANK:-\${PMI_RANK:-0}}\""
  local kvs=()
  if [ "$mode" = pcoll ]; then
    kvs=(LD_PRELOAD="$LIB" PCOLL_STATS=1)
    # The built-in table hands small messages (all of mpi4py's tests) to native: force pcoll's
    # own algorithms so the suite exercises them (non-commutative ops fall back silently to
    # an order-preserving one). MPI4PY_PCOLL_ALGS="" keeps the table's choice.
    local kv
    for kv in ${MPI4PY_PCOLL_ALGS-PCOLL_REDUCE=binomial PCOLL_ALLREDUCE=butterfly PCOLL_REDUCE_SCATTER=circulant PCOLL_ALLGATHERV=circulant PCOLL_BCAST=circulant PCOLL_ALLGATHER=circulant PCOLL_REDUCE_SCATTER_BLOCK=butterfly PCOLL_FALLBACK=silent}; do
      kvs+=("$kv")
    done
  fi
  local t0=$SECONDS rc
  mpi_np "$p"
  mpi_env_args "${kvs[@]}"
  timeout -k 10 $TMO "$MPIRUN" "${MPI_NP_ARGS[@]}" "${MPI_ENV_ARGS[@]}" bash -c "$wrap" </dev/null \
    >"$dir/stdout" 2>"$dir/launcher"
  rc=$?
  echo "$rc" >"$dir/rc"
  echo $((SECONDS - t0)) >"$dir/secs"
}

# Summary of one rank's unittest output: "ran fail err skip".
summary() {
  local f=$1
  local ran fail err skip
  ran=$(grep -Eo '^Ran [0-9]+ test' "$f" | tail -1 | grep -Eo '[0-9]+')
  fail=$(grep -E '^(OK|FAILED)' "$f" | tail -1 | grep -Eo 'failures=[0-9]+' | grep -Eo '[0-9]+')
  err=$(grep -E '^(OK|FAILED)' "$f" | tail -1 | grep -Eo 'errors=[0-9]+' | grep -Eo '[0-9]+')
  skip=$(grep -E '^(OK|FAILED)' "$f" | tail -1 | grep -Eo 'skipped=[0-9]+' | grep -Eo '[0-9]+')
  echo "${ran:-none} ${fail:-0} ${err:-0} ${skip:-0}"
}
# Sorted names of failing tests of one rank.
failing() { grep -E '^(FAIL|ERROR): ' "$1" | sed 's/ *$//' | sort; }

passed=0
failed=0
native_fail_notes=()
printf '| p | tests | rank | native ran/fail/err/skip | pcoll ran/fail/err/skip | native s | pcoll s | same |\n'
printf '|---|-------|------|--------------------------|-------------------------|----------|---------|------|\n'
# A pcoll run ($1 its directory, $2 = p) with exit 0 and, on every rank, tests run and none
# failed or errored.
clean() {
  local dir=$1 p=$2 r s
  [ "$(cat "$dir/rc")" = 0 ] || return 1
  for ((r = 0; r < p; r++)); do
    [ -f "$dir/rank.$r" ] || return 1
    s=$(summary "$dir/rank.$r")
    set -- $s
    [ "$1" != none ] && [ "$2" = 0 ] && [ "$3" = 0 ] || return 1
  done
}
# One comparison, counted in passed/failed: $1 = p, $2 = what runs (for the table), $3 = the
# runs' directory prefix ($3-pcoll, $3-native), $4 = 1 when a clean pcoll run suffices (the
# native run, the reference, only where it is not), the rest main.py's test selection.
check() {
  local p=$1 what=$2 base=$3 lazy=$4 r ok=1 nf pf ns ps same nrc prc
  shift 4
  run "$p" pcoll "$base-pcoll" "$@"
  if [ "$lazy" = 1 ] && clean "$base-pcoll" "$p"; then
    for ((r = 0; r < p; r++)); do
      printf '| %s | %s | %s | (not run: pcoll clean) | %s | - | %s | yes |\n' "$p" "$what" "$r" \
        "$(summary "$base-pcoll/rank.$r" | tr ' ' /)" "$(cat "$base-pcoll/secs")"
    done
    passed=$((passed + 1))
    return
  fi
  run "$p" native "$base-native" "$@"
  nrc=$(cat "$base-native/rc")
  prc=$(cat "$base-pcoll/rc")
  if [ "$MODE" = suite ] && [ "$nrc" = 124 ] && [ "$prc" = 124 ]; then
    printf '| %s | %s | - | (times out) | (times out) | %s | %s | yes |\n' "$p" "$what" \
      "$(cat "$base-native/secs")" "$(cat "$base-pcoll/secs")"
    native_fail_notes+=("p=$p $what: times out natively as under pcoll (${TMO} s)")
    passed=$((passed + 1))
    return
  fi
  for ((r = 0; r < p; r++)); do
    nf=$base-native/rank.$r
    pf=$base-pcoll/rank.$r
    ns=$( [ -f "$nf" ] && summary "$nf" || echo "missing")
    ps=$( [ -f "$pf" ] && summary "$pf" || echo "missing")
    same=yes
    if [ "$ns" != "$ps" ] || [ "${ps%% *}" = none ] || [ "$ps" = missing ]; then same=NO; ok=0; fi
    if [ -f "$nf" ] && [ -f "$pf" ] && [ "$(failing "$nf")" != "$(failing "$pf")" ]; then same=NO; ok=0; fi
    printf '| %s | %s | %s | %s | %s | %s | %s | %s |\n' "$p" "$what" "$r" "${ns// //}" "${ps// //}" \
      "$(cat "$base-native/secs")" "$(cat "$base-pcoll/secs")" "$same"
    if [ -f "$nf" ] && [ -n "$(failing "$nf")" ]; then
      while read -r l; do native_fail_notes+=("p=$p rank=$r natively: $l"); done < <(failing "$nf")
    fi
  done
  # A non-zero exit is only acceptable if native exits the same way (failing tests).
  [ "$nrc" = "$prc" ] || ok=0
  if [ "$nrc" = 124 ] || [ "$prc" = 124 ]; then ok=0; fi
  if [ $ok = 1 ]; then passed=$((passed + 1)); else
    failed=$((failed + 1))
    log "p=$p $what: pcoll run differs from native (rc native $nrc, pcoll $prc); logs in $base-*"
    for ((r = 0; r < p; r++)); do
      diff <(failing "$base-native/rank.$r" 2>/dev/null) <(failing "$base-pcoll/rank.$r" 2>/dev/null) | sed "s/^/  rank $r: /" | head -20
    done
    tail -5 "$base-pcoll/launcher" "$base-pcoll/rank.0" 2>/dev/null | sed 's/^/  /'
  fi
}
# pcoll's statistics (rank 0, at MPI_Finalize) of the pcoll runs in directories $2.. at p = $1:
# proof that pcoll served the calls.
served() {
  local p=$1 stats
  shift
  stats=$(for d in "$@"; do cat "$d"/rank.* "$d/stdout" "$d/launcher" 2>/dev/null; done | grep 'pcoll: stats' | sort -u)
  if [ -z "$stats" ]; then
    log "p=$p: no 'pcoll: stats' lines: pcoll was not loaded or did not serve anything"
    failed=$((failed + 1))
    return
  fi
  # per algorithm and collective, the calls summed over the runs
  awk '{ for (i = 1; i <= NF; i++) if ($i == "stats") { k = $(i+1) " " $(i+2); for (j = i + 3; j <= NF; j++) if ($j ~ /^calls=/) { sub("calls=", "", $j); n[k] += $j } } }
       END { for (k in n) print k " calls=" n[k] }' <<<"$stats" | sort | sed "s/^/  p=$p pcoll: stats /"
  # At least one call served by a pcoll algorithm (not handed to native).
  if ! grep -Eq 'stats [a-z_]+ (binomial|pipeline|greedy|greedy_uni|circulant|butterfly|ring|binary|fibonacci) calls=[1-9]' <<<"$stats"; then
    log "p=$p: pcoll served no call with its own algorithms"
    [ "$p" -gt 1 ] && failed=$((failed + 1))
  fi
}
for p in "${PS[@]}"; do
  if [ "$MODE" = suite ]; then
    dirs=()
    for m in "${MODS[@]}"; do
      check "$p" "$m" "$OUT/p$p-$m" 1 "${XARGS[@]}" "$m"
      dirs+=("$OUT/p$p-$m-pcoll")
    done
    served "$p" "${dirs[@]}"
  else
    check "$p" selected "$OUT/p$p" "$([ "$MODE" = quick ] && echo 1 || echo 0)" "${INC[@]}"
    served "$p" "$OUT/p$p-pcoll"
  fi
done
for n in "${native_fail_notes[@]}"; do log "note: $n"; done
log "modules: ${MODS[*]}; p = ${PS[*]}"
echo "$passed passed, $failed failed"
[ $failed = 0 ]
