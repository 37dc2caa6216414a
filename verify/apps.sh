#!/usr/bin/env bash
# verify/apps.sh <openmpi|mpich|mpich5|impi> <libpcoll.so> [--quick]: real applications from
# Debian's packages, each run natively and under pcoll (LD_PRELOAD) with the defaults and with
# the blocking reduce, allreduce and bcast forced to each of pcoll's algorithms. Every run's own
# checks must pass and its result lines must equal the native run's (the reference: the same
# program on the same MPI without pcoll); a forced run's stats must show the algorithm served.
#  * ScaLAPACK's BLACS tester, Fortran (xFbtest) and C (xCbtest): point-to-point, broadcast and
#    combine (sum, absolute max and min over row, column and all scopes, with and without
#    repeatability) in five precisions; BLACS calls MPI_Bcast on vector types and MPI_Reduce /
#    MPI_Allreduce with its own user-defined ops. Compared: its per-family pass/skip/fail lines.
#  * ScaLAPACK's drivers (LU, QR, inverse, least squares, Hessenberg, tridiagonal, bidiagonal,
#    band Cholesky, complex LU), thousands of collectives each on row, column and grid
#    communicators: their "tests completed and passed / failed / skipped" counts.
#  * Open MPI 4.1 only (Debian builds LAMMPS and PETSc for it): LAMMPS' Lennard-Jones melt
#    (thermo lines at its printed digits) and verify/apps_petsc.py (a CG solve: iterations, the
#    solution's norm to 1e-9; assembly from off-process entries, checked in the program).
# p = 4 (APPS_NP, at least 4: the BLACS tester's 2 x 2 grids; oversubscribed on a 2-core
# machine: correctness only, nothing here is timed). MPICH 5 and Intel MPI run Debian's
# MPICH build of ScaLAPACK through their libmpi.so.12 (the MPICH ABI; symlinks named
# libmpich.so.12 in a temporary directory; MPICH 5 with Debian's Fortran library, it has
# none). Open MPI 5 is not covered: Debian's Open MPI 4.1 Fortran library under
# it fails in opal_init. --quick: the defaults and `shm`, three drivers, no LAMMPS/PETSc; the
# MPICH family's full run has four drivers (its p = 4 busy-polls on 2 cores).
# First, that the checks can fail: xFbtest under verify/apps_mutant.c (rank 0's or the root's
# result of every MPI_Reduce / MPI_Allreduce with one byte flipped, no pcoll) must report
# failures.
# Installs scalapack-mpi-test (and for openmpi lammps, lammps-examples, python3-petsc4py-real)
# with apt-get when missing. Last line `apps: PASS ...` or `apps: FAIL ...`.
set -uo pipefail
VERIFY_USAGE="[--quick]"
# shellcheck source=setup.sh
source "$(dirname "$0")/setup.sh" 2 3 "$@"
QUICK=$([ "${3:-}" = --quick ] && echo 1 || echo 0)
NP=${APPS_NP:-4}
[ "$NP" -ge 4 ] 2>/dev/null || { echo "apps: APPS_NP=$NP: at least 4 (the BLACS tester aborts on a 2 x 2 grid with fewer)" >&2; exit 2; }
case "$MPI_ABI" in openmpi) BUILD=openmpi ;; *) BUILD=mpich ;; esac
[ "$MPI" = openmpi5 ] && { echo "apps: SKIP (Debian's Open MPI 4.1 Fortran library does not run under Open MPI 5)"; exit 0; }

pkgs=(scalapack-mpi-test)
[ "$MPI" = openmpi ] && [ "$QUICK" = 0 ] && pkgs+=(lammps lammps-examples python3-petsc4py-real)
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  echo "apps: installing ${missing[*]} (apt-get)"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}"; } >"$OUT/apps-apt.log" 2>&1 ||
    { echo "apps: FAIL (apt-get install ${missing[*]}: $OUT/apps-apt.log)"; exit 1; }
fi

WORK=$(mktemp -d /tmp/pcoll-apps.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
# The tests read their .dat files from the working directory; BLACS' auxiliary tests end in
# BLACS_ABORT (the job is killed by design), so they are turned off.
cp -rL "/usr/lib/x86_64-linux-gnu/scalapack/$BUILD-tests" "$WORK/scal"
sed -i "7s/'T'/'F'/" "$WORK/scal/BLACS/bt.dat"
if [ "$MPI" = mpich5 ] || [ "$MPI" = impi ]; then
  mkdir -p "$WORK/abi"
  ln -s "$MPI_VENV/lib/libmpi.so.12" "$WORK/abi/libmpich.so.12"
  [ -e "$MPI_VENV/lib/libmpifort.so.12" ] && ln -s "$MPI_VENV/lib/libmpifort.so.12" "$WORK/abi/libmpichfort.so.12"
  # the symlink's directory is its $ORIGIN: MPICH 5's libfabric is found in lib/mpich
  export LD_LIBRARY_PATH=$WORK/abi:$MPI_VENV/lib/mpich:$LD_LIBRARY_PATH
fi

fails=0 runs=0
# launch DIR OUT VAR=value... -- PROG...: PROG at p = NP in DIR with those variables on every
# rank, its output in OUT; 10 minutes at most.
launch() {
  local dir=$1 out=$2
  shift 2
  (cd "$dir" && timeout -k 5 600 bash -c 'source "$0"; mpi_setup "$1" >/dev/null && shift 2 && mpi_run "$@"' \
    "$ROOT/scripts/mpi.sh" "$MPI" -- "$NP" "$@" </dev/null >"$out" 2>&1)
}
# summary KIND FILE: the result lines a run is judged by.
summary() {
  case $1 in
    blacs) grep -E 'TESTS:.*FAILED' "$2" | sed 's/^ *//' ;;
    driver) grep -E 'tests completed and|tests skipped because' "$2" | sed 's/^ *//' ;;
    lammps) grep -A12 -E '^ *Step ' "$2" | grep -E '^ *[0-9]+ ' | sed 's/^ *//' ;;
    petsc) grep '^petsc:' "$2" ;;
  esac
}
# judged KIND FILE: the run's own checks passed.
judged() {
  case $1 in
    blacs) [ "$(summary blacs "$2" | grep -c ' 0 FAILED')" -ge 20 ] && [ "$(summary blacs "$2" | grep -vc ' 0 FAILED')" = 0 ] ;;
    driver) grep -q '^0 tests completed and failed' <(summary driver "$2") && grep -qE '^[1-9][0-9]* tests completed and passed' <(summary driver "$2") ;;
    lammps) [ "$(summary lammps "$2" | wc -l)" -ge 5 ] ;;
    petsc) grep -q 'stash ok$' "$2" ;;
  esac
}
# same KIND A B: B's result lines equal A's (petsc: iterations and reason equal, norm to 1e-9).
same() {
  if [ "$1" = petsc ]; then
    python3 - "$(summary petsc "$2")" "$(summary petsc "$3")" <<'EOF'
import sys
a, b = (s.split() for s in sys.argv[1:3])
sys.exit(0 if len(a) == len(b) == 9 and a[2] == b[2] and a[4] == b[4]
         and abs(float(a[6]) - float(b[6])) <= 1e-9 * abs(float(a[6])) else 1)
EOF
  else
    [ "$(summary "$1" "$2")" = "$(summary "$1" "$3")" ]
  fi
}
# run NAME KIND DIR CONFIG PROG...: one run in DIR; CONFIG is native, default or an algorithm
# (reduce, allreduce and bcast forced to it where it exists for them, else a close one).
run() {
  local name=$1 kind=$2 dir=$3 cfg=$4 out env=() rc served
  shift 4
  out=$WORK/$name.$cfg.out
  case $cfg in
    native) ;;
    default) env=(LD_PRELOAD="$LIB" PCOLL_STATS=1) ;;
    *) env=(LD_PRELOAD="$LIB" PCOLL_STATS=1 PCOLL_REDUCE="$cfg" PCOLL_ALLREDUCE="$(allreduce_of "$cfg")" PCOLL_BCAST="$(bcast_of "$cfg")") ;;
  esac
  [ "$kind" = petsc ] && env+=(PETSC_DIR=/usr/lib/petscdir/petsc3.18/x86_64-linux-gnu-real)
  launch "$dir" "$out" "${env[@]}" -- "$@"
  rc=$?
  runs=$((runs + 1))
  local why=""
  [ $rc = 0 ] || why="exit $rc"
  [ -z "$why" ] && ! judged "$kind" "$out" && why="its own checks failed"
  [ -z "$why" ] && [ "$cfg" != native ] && ! same "$kind" "$WORK/$name.native.out" "$out" && why="results differ from native's"
  [ -z "$why" ] && [ "$cfg" != native ] && ! grep -q '^pcoll: stats on ' "$out" && why="pcoll not loaded (no stats)"
  if [ -z "$why" ] && [ "$cfg" != native ] && [ "$cfg" != default ]; then
    local c alg
    for c in reduce allreduce bcast; do
      alg=$cfg; [ $c = allreduce ] && alg=$(allreduce_of "$cfg"); [ $c = bcast ] && alg=$(bcast_of "$cfg")
      grep -q "^pcoll: stats $c " "$out" && ! grep -qE "^pcoll: stats $c $alg calls=[1-9]" "$out" && why="$why$c not served by $alg; "
    done
    grep -qE "^pcoll: stats [a-z]+ ($cfg|$(allreduce_of "$cfg")|$(bcast_of "$cfg")) calls=[1-9]" "$out" || why="nothing served by $cfg"
  fi
  if [ -z "$why" ]; then
    served=$(grep -E '^pcoll: stats [a-z]+ [a-z_]+ calls' "$out" | grep -v ' native ' | awk '{printf "%s%s %s %s", sep, $3, $4, $5; sep=", "}')
    echo "  $name $cfg: ok${served:+ ($served)}"
  else
    fails=$((fails + 1))
    cp "$out" "$OUT/apps-$MPI-$name.$cfg.out"
    echo "  $name $cfg: FAILED ($why; output: $OUT/apps-$MPI-$name.$cfg.out)"
  fi
}
allreduce_of() { case $1 in pipeline | greedy_uni) echo ring ;; *) echo "$1" ;; esac; }
bcast_of() { case $1 in greedy | greedy_uni | butterfly) echo scatter_allgather ;; *) echo "$1" ;; esac; }

if [ "$QUICK" = 1 ]; then
  CONFIGS=(default shm) DCONFIGS=(default shm) DRIVERS=(xdlu xdqr xdinv)
else
  CONFIGS=(default binomial pipeline greedy greedy_uni circulant butterfly shm binary fibonacci)
  DCONFIGS=(default shm circulant butterfly)
  DRIVERS=(xdlu xdqr xdinv xdls xdhrd xdtrd xdbrd xdpbllt xzlu)
  # the MPICH family busy-polls at p = 4 on 2 cores (1-2 min a driver run): fewer drivers
  [ "$MPI_ABI" = mpich ] && DCONFIGS=(default shm circulant) DRIVERS=(xdlu xdqr xdinv xzlu)
fi
echo "apps: $MPI, p = $NP, ScaLAPACK's $BUILD build$([ "$QUICK" = 1 ] && echo ' (quick)')"
$MPICC -shared -fPIC -o "$WORK/libmutant.so" "$ROOT/verify/apps_mutant.c" || { echo "apps: FAIL (build of the mutant)"; exit 1; }
launch "$WORK/scal/BLACS" "$WORK/mutant.out" LD_PRELOAD="$WORK/libmutant.so" -- ./xFbtest
if judged blacs "$WORK/mutant.out"; then
  fails=$((fails + 1)); echo "  mutant: FAILED (the BLACS tester passed results with flipped bytes)"
else
  echo "  mutant: ok (flipped reductions caught: $(summary blacs "$WORK/mutant.out" | grep -vc ' 0 FAILED') families failed)"
fi
for t in xFbtest xCbtest; do
  run "$t" blacs "$WORK/scal/BLACS" native "./$t"
  for cfg in "${CONFIGS[@]}"; do run "$t" blacs "$WORK/scal/BLACS" "$cfg" "./$t"; done
done
for t in "${DRIVERS[@]}"; do
  run "$t" driver "$WORK/scal" native "./$t"
  for cfg in "${DCONFIGS[@]}"; do run "$t" driver "$WORK/scal" "$cfg" "./$t"; done
done
if [ "$MPI" = openmpi ] && [ "$QUICK" = 0 ]; then
  mkdir -p "$WORK/lammps" && cp /usr/share/lammps/examples/melt/in.melt "$WORK/lammps/"
  for cfg in native default shm circulant butterfly; do
    run lammps lammps "$WORK/lammps" "$cfg" lmp -in in.melt -log none -nocite
  done
  for cfg in native default shm circulant butterfly; do
    run petsc petsc "$WORK" "$cfg" /usr/bin/python3 "$ROOT/verify/apps_petsc.py" 48
  done
fi
if [ $fails = 0 ]; then echo "apps: PASS ($runs runs on $MPI)"; else echo "apps: FAIL ($fails of $runs runs on $MPI)"; exit 1; fi
