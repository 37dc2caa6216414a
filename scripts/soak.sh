#!/usr/bin/env bash
# make soak: the long verification runs of issue 7 (about an hour on 2 cores).
#
#   scripts/soak.sh            both MPIs (MPIS="openmpi mpich" to choose)
#
#   1. difftest --soak         p = 1..9, thousands of random cases per p (verify/run-difftest.sh)
#   2. mpi4py, full            mpi4py's collective test modules, native vs pcoll, Open MPI
#                              p = 1..5, MPICH p = 1, 2 (verify/mpi4py.sh)
#   3. threads                 MPI_THREAD_MULTIPLE stress, default and forced algorithms
#   4. rss                     resident memory flat over 100 000 calls
#   5. bigcount                > 2^31-byte allreduce/reduce/bcast at p = 2 (SOAK_BIGCOUNT=0 skips;
#                              needs ~9 GB, the program skips itself if memory is short)
#   6. badinput                error classes native vs pcoll, malformed tuning files (both MPIs)
#   7. valgrind                memcheck with pcoll preloaded (MPICH)
# Environment: MPIS, DIFFTEST_SEED, DIFFTEST_CASES (see verify/run-difftest.sh), SOAK_BIGCOUNT.
# Last line: "N passed, M failed" (one test per step and MPI).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
MPIS=${MPIS:-openmpi mpich}
OUT=$ROOT/build/verify
mkdir -p "$OUT/soak"
passed=0
failed=0
summary=()

step() { # name, command...
  local name=$1 t0=$SECONDS rc log
  shift
  log=$OUT/soak/${name//[ \/=]/_}.log
  echo "=== $name: $*"
  "$@" >"$log" 2>&1
  rc=$?
  tail -n 40 "$log" | grep -vE '^\s*$' | tail -n 25
  if [ $rc = 0 ]; then passed=$((passed + 1)); summary+=("ok     $name ($((SECONDS - t0)) s)");
  else failed=$((failed + 1)); summary+=("FAILED $name ($((SECONDS - t0)) s, exit $rc, log $log)"); fi
}


for mpi in $MPIS; do
  lib=$ROOT/build/$mpi/libpcoll.so
  [ -f "$lib" ] || { echo "no $lib: run make build"; failed=$((failed + 1)); continue; }
  for prog in threads rss bigcount; do
    flags=(); [ $prog = threads ] && flags=(-lpthread)
    mpicc.$mpi -O2 -g -Wall -o "$OUT/$prog-$mpi" "verify/$prog.c" "${flags[@]}" || failed=$((failed + 1))
  done

  step "difftest $mpi" bash verify/run-difftest.sh $mpi "$lib" --soak
  step "mpi4py $mpi" bash verify/mpi4py.sh $mpi "$lib"

  if [ $mpi = openmpi ]; then
    step "threads $mpi p=2" timeout 900 mpirun.openmpi --allow-run-as-root --oversubscribe -np 2 \
      -x LD_PRELOAD="$lib" "$OUT/threads-$mpi" -t 6 -n 3000 </dev/null
    step "threads $mpi p=4 forced" timeout 900 mpirun.openmpi --allow-run-as-root --oversubscribe -np 4 \
      -x LD_PRELOAD="$lib" -x PCOLL_REDUCE=pipeline -x PCOLL_ALLREDUCE=ring -x PCOLL_REDUCE_SCATTER=ring \
      -x PCOLL_ALLGATHERV=ring "$OUT/threads-$mpi" -t 4 -n 2000 </dev/null
    step "rss $mpi p=2" timeout 900 mpirun.openmpi --allow-run-as-root -np 2 -x LD_PRELOAD="$lib" "$OUT/rss-$mpi" </dev/null
    step "rss $mpi p=4" timeout 900 mpirun.openmpi --allow-run-as-root --oversubscribe -np 4 -x LD_PRELOAD="$lib" "$OUT/rss-$mpi" </dev/null
    [ "${SOAK_BIGCOUNT:-1}" = 1 ] && step "bigcount $mpi p=2" timeout 1800 mpirun.openmpi --allow-run-as-root -np 2 \
      -x LD_PRELOAD="$lib" -x PCOLL_STATS=1 -x PCOLL_BCAST=pipeline -x PCOLL_SEGMENT=100000 "$OUT/bigcount-$mpi" </dev/null
  else
    # MPICH busy-polls when oversubscribed: p = 2 only.
    step "threads $mpi p=2" timeout 900 mpiexec.mpich -n 2 -genv LD_PRELOAD "$lib" "$OUT/threads-$mpi" -t 4 -n 2000 </dev/null
    step "threads $mpi p=2 forced" timeout 900 mpiexec.mpich -n 2 -genv LD_PRELOAD "$lib" -genv PCOLL_REDUCE pipeline \
      -genv PCOLL_ALLREDUCE ring -genv PCOLL_REDUCE_SCATTER ring -genv PCOLL_ALLGATHERV ring "$OUT/threads-$mpi" -t 4 -n 2000 </dev/null
    step "rss $mpi p=2" timeout 900 mpiexec.mpich -n 2 -genv LD_PRELOAD "$lib" "$OUT/rss-$mpi" </dev/null
    [ "${SOAK_BIGCOUNT:-1}" = 1 ] && step "bigcount $mpi p=2" timeout 1800 mpiexec.mpich -n 2 \
      -genv LD_PRELOAD "$lib" -genv PCOLL_STATS 1 -genv PCOLL_BCAST pipeline -genv PCOLL_SEGMENT 100000 "$OUT/bigcount-$mpi" </dev/null
  fi
done
# Short checks that belong to the same issue: error classes and malformed configuration
# (both MPIs), memory errors under valgrind (MPICH).
libs=()
for mpi in $MPIS; do libs+=("$mpi" "$ROOT/build/$mpi/libpcoll.so"); done
step "badinput" bash verify/badinput.sh "${libs[@]}"
if [[ " $MPIS " == *" mpich "* ]] && command -v valgrind >/dev/null; then
  step "valgrind mpich" bash verify/valgrind.sh "$ROOT/build/mpich/libpcoll.so"
fi
echo
echo "=== soak summary"
for s in "${summary[@]}"; do echo "  $s"; done
echo "$passed passed, $failed failed"
[ $failed = 0 ]
