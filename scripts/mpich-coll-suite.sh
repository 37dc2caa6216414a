#!/usr/bin/env bash
# MPICH's own collective tests (test/mpi/coll of an MPICH source tree) under pcoll: the
# non-blocking, persistent and blocking tests of the seven collectives pcoll serves (and the
# op tests), built against <mpi> and run with LD_PRELOAD as their testlist.in says (np capped
# at NP_MAX, default 5, on this 2-core machine), once with pcoll's own decisions and, with
# FORCE=<alg> (e.g. binomial, shm), every collective forced to that algorithm.
# A test passes when it prints " No Errors" and exits 0 within its time limit; one that fails
# is run again without pcoll, and if it fails there too it is counted as the MPI's own. Left out: the
# tests built on MPICH's DTPools library (allred, allred2, reduce, op_coll), not shipped in
# test/mpi.
#
#   scripts/mpich-coll-suite.sh <mpi> <mpich-source-dir> [libpcoll.so]
#
# The source is not shipped here: a release tarball from mpich.org or a clone of
# github.com/pmodels/mpich (test/mpi/{coll,include,util}). Output: one line per run, then
# "mpich-coll-suite: N passed, M failed".
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=mpi.sh
source "$ROOT/scripts/mpi.sh"
MPI=${1:?usage: $0 <mpi> <mpich-source-dir> [libpcoll.so]}
SRC=${2:?usage: $0 <mpi> <mpich-source-dir> [libpcoll.so]}/test/mpi
LIB=$(readlink -f "${3:-$ROOT/build/$MPI/libpcoll.so}")
NP_MAX=${NP_MAX:-5}
[ -f "$SRC/coll/testlist.in" ] || { echo "mpich-coll-suite: no $SRC/coll/testlist.in" >&2; exit 2; }
[ -f "$LIB" ] || { echo "mpich-coll-suite: no library $LIB" >&2; exit 2; }
mpi_setup "$MPI" || exit 2
OUT=$ROOT/build/mpich-coll-suite/$MPI
rm -rf "$OUT" && mkdir -p "$OUT/inc"
# The generated headers of MPICH's configure, reduced to what these tests read.
cat >"$OUT/inc/mpitestconf.h" <<'EOF'
#define HAVE_STDARG_H 1
#define HAVE_SYS_TIME_H 1
#define HAVE_SYS_RESOURCE_H 1
#define HAVE_STRING_H 1
#define HAVE_UNISTD_H 1
#define HAVE_STDLIB_H 1
#define HAVE_GETRUSAGE 1
#define HAVE_MPI_WIN_CREATE 1
#define HAVE_MPI_INIT_THREAD 1
#define USE_STRICT_MPI 1
#define THREAD_PACKAGE_NAME THREAD_PACKAGE_NONE
EOF
: >"$OUT/inc/mtest_mpix.h"
CFLAGS=(-O1 -w -I"$OUT/inc" -I"$SRC/include")
for u in mtest mtest_common mtest_single run_mpitests; do
  $MPICC "${CFLAGS[@]}" -c "$SRC/util/$u.c" -o "$OUT/$u.o" || { echo "mpich-coll-suite: FAIL (build $u.c)"; exit 1; }
done
TESTS=${TESTS:-"nonblocking nonblocking2 nonblocking3 iallred p_bcast p_bcast2 p_allred p_red p_allgather
  p_allgatherv p_red_scat_block p_redscat p_inactive p_order allred3 allred4 allred5
  allred6 allredmany allred_derived allred_float red3 red4 redscat redscat2 redscat3
  red_scat_block red_scat_block2 redscatblk3 allgather2 allgather3 allgatherv2 allgatherv3
  allgatherv4 allgather_struct bcasttest bcastzerotype op_commutative opsum opprod opmax
  opmin opband opbor opminloc opmaxloc uoplong longuser coll2 coll4 coll5 coll6 coll7 coll8
  coll9 coll10 coll12 coll13"}
pass=0 fail=0 native=0
env_force=()
if [ -n "${FORCE:-}" ]; then
  for c in REDUCE ALLREDUCE REDUCE_SCATTER REDUCE_SCATTER_BLOCK ALLGATHERV ALLGATHER BCAST; do
    env_force+=("PCOLL_$c=$FORCE")
  done
fi
for t in $TESTS; do
  [ -f "$SRC/coll/$t.c" ] || continue
  # A test without main defines run(): util/run_mpitests.c's main calls it.
  single=()
  grep -q "^int main" "$SRC/coll/$t.c" || single=("$OUT/run_mpitests.o")
  if ! $MPICC "${CFLAGS[@]}" "$SRC/coll/$t.c" "$OUT/mtest.o" "$OUT/mtest_common.o" "${single[@]}" \
    "$OUT/mtest_single.o" -lm -o "$OUT/$t" 2>"$OUT/$t.build.log"; then
    echo "  $t: not built for $MPI (see $OUT/$t.build.log)"
    continue
  fi
  # Each testlist line of the test: np and its arguments (arg=...).
  grep -E "^$t( |$)" "$SRC/coll/testlist.in" | while read -r _ np rest; do
    np=$((np > NP_MAX ? NP_MAX : np))
    args=()
    for kv in $rest; do case $kv in arg=*) args+=("${kv#arg=}") ;; esac; done
    echo "$np ${args[*]}"
  done | sort -u >"$OUT/$t.runs"
  while read -r np args; do
    # shellcheck disable=SC2086
    out=$(timeout -k 5 120 bash -c 'source "$0"; mpi_setup "$1" && shift 2 && mpi_run "$@"' \
      "$ROOT/scripts/mpi.sh" "$MPI" -- "$np" LD_PRELOAD="$LIB" "${env_force[@]}" -- "$OUT/$t" $args </dev/null 2>&1)
    rc=$?
    if [ $rc -eq 0 ] && grep -q "No Errors" <<<"$out"; then
      pass=$((pass + 1))
      continue
    fi
    # The same run without pcoll: a failure there too is the MPI's own.
    # shellcheck disable=SC2086
    nat=$(timeout -k 5 120 bash -c 'source "$0"; mpi_setup "$1" && shift 2 && mpi_run "$@"' \
      "$ROOT/scripts/mpi.sh" "$MPI" -- "$np" -- "$OUT/$t" $args </dev/null 2>&1)
    nrc=$?
    if [ $nrc -ne 0 ] || ! grep -q "No Errors" <<<"$nat"; then
      native=$((native + 1))
      echo "  NATIVE $t np=$np $args: fails without pcoll too (rc $nrc): $(echo "$nat" | tail -2 | tr '\n' ' ' | cut -c1-200)"
    else
      fail=$((fail + 1))
      echo "  FAIL $t np=$np $args (rc $rc): $(echo "$out" | tail -3 | tr '\n' ' ' | cut -c1-300)"
    fi
  done <"$OUT/$t.runs"
done
echo "mpich-coll-suite: $MPI${FORCE:+ (forced $FORCE)}: $pass passed, $fail failed, $native failing without pcoll too"
[ "$fail" -eq 0 ]
