#!/usr/bin/env bash
# verify/stacked.sh <mpi> <libpcoll.so>: pcoll stacked with a profiling tool of the PMPI kind
# (verify/tool.c: wraps MPI_Wait, MPI_Test, MPI_Waitall, MPI_Start, MPI_Request_free and
# MPI_Type_free, forwarding to PMPI_; reduces its counts in its MPI_Finalize wrapper), running
# verify/stacked.c (non-blocking and persistent collectives, checked against closed forms).
#  * the tool loaded before pcoll: its wrappers complete requests without pcoll, so pcoll must
#    see that at MPI_Init (cdylib/src/foreign.rs) and send non-blocking and persistent calls to
#    the MPI: PASS, the warning on rank 0, the stats show them native (until session 53: wrong
#    results on every MPI, segfaults with forced algorithms);
#  * the tool after pcoll: pcoll serves them (stats), PASS.
# Both with the defaults and with algorithms forced, p = 2 and 3; the tool alone (no pcoll)
# first, as the reference that the program passes. Then a C library's functions named as
# bare Fortran entries (verify/nameclash.c). Last line `stacked: PASS (n runs)` or
# `stacked: FAIL (...)`.
set -uo pipefail
# shellcheck source=setup.sh
source "$(dirname "$0")/setup.sh" 2 2 "$@"
mkdir -p "$OUT/logs"
BIN=$OUT/stacked-$MPI TOOL=$OUT/tool-$MPI.so
for src in stacked tool; do
  dst=$BIN; [ $src = tool ] && dst=$TOOL
  if [ ! -e "$dst" ] || [ "$ROOT/verify/$src.c" -nt "$dst" ]; then
    flags=(-O2 -Wall); [ $src = tool ] && flags+=(-shared -fPIC)
    $MPICC "${flags[@]}" -o "$dst" "$ROOT/verify/$src.c" || { echo "stacked: FAIL (build $src)"; exit 1; }
  fi
done
FORCED=(PCOLL_ALLREDUCE=ring PCOLL_BCAST=binomial PCOLL_ALLGATHER=ring PCOLL_REDUCE=binomial)
fails=0; runs=0
# run NAME NP PRELOAD EXPECT VAR=val...: EXPECT is `native` (the I-calls' stats say native and
# rank 0 warned), `served` (the forced iallreduce ran ring), or `-`.
run() {
  local name=$1 p=$2 pre=$3 expect=$4; shift 4
  local log=$OUT/logs/stacked-$MPI-$name-p$p.log why=""
  runs=$((runs + 1))
  mpi_np "$p"
  mpi_env_args LD_PRELOAD="$pre" PCOLL_STATS=1 "$@"
  timeout -k 5 120 "$MPIRUN" "${MPI_NP_ARGS[@]}" "${MPI_ENV_ARGS[@]}" "$BIN" </dev/null >"$log" 2>&1 ||
    why="the run failed or hung"
  grep -aq '^stacked: PASS' "$log" || why="${why:+$why; }no PASS"
  grep -aq '^tool: [0-9]* wrapped calls' "$log" || [ "${pre%% *}" != "$TOOL" ] || why="${why:+$why; }no tool report"
  case $expect in
  native)
    grep -aq 'pcoll: warning: MPI_Wait.* defined by a library before pcoll' "$log" || why="${why:+$why; }no warning"
    grep -aE 'stats (iallreduce|ibcast|iallgather|ireduce|allreduce_init) ' "$log" | grep -avq ' native ' &&
      why="${why:+$why; }a non-blocking call served by pcoll" ;;
  served)
    grep -aq 'stats iallreduce ring ' "$log" || why="${why:+$why; }iallreduce not served by ring"
    grep -aq 'defined by a library before pcoll' "$log" && why="${why:+$why; }a warning" ;;
  esac
  if [ -n "$why" ]; then echo "  $name p=$p: $why; log $log"; fails=$((fails + 1)); else echo "  $name p=$p: ok"; fi
}
for p in 2 3; do
  run tool-alone "$p" "$TOOL" -
  run tool-first "$p" "$TOOL $LIB" native
  run tool-first-forced "$p" "$TOOL $LIB" native "${FORCED[@]}"
  run pcoll-first-forced "$p" "$LIB $TOOL" served "${FORCED[@]}"
done
# Names a C library may define for itself: pcoll exports no Fortran entry without its
# underscore (`mpi_bcast`; Rmpi defines 27 such and crashed under pcoll's Open MPI builds
# until session 54), checked in the symbol table and by verify/nameclash.c, linked with
# verify/namelib.c, whose calls must reach namelib's functions, p = 2.
runs=$((runs + 1))
bare=$(nm -D --defined-only "$LIB" | awk '{print $3}' | grep -E '^mpi_[a-z0-9_]*[a-z0-9]$' | head -5)
[ -z "$bare" ] || { echo "  exports: bare lower-case Fortran names: $bare"; fails=$((fails + 1)); }
runs=$((runs + 1))
log=$OUT/logs/nameclash-$MPI.log
if gcc -shared -fPIC -o "$OUT/libnamelib-$MPI.so" "$ROOT/verify/namelib.c" &&
  $MPICC -O2 -Wall -o "$OUT/nameclash-$MPI" "$ROOT/verify/nameclash.c" -L"$OUT" -Wl,-rpath,"$OUT" -lnamelib-$MPI &&
  mpi_np 2 && mpi_env_args LD_PRELOAD="$LIB" &&
  timeout -k 5 60 "$MPIRUN" "${MPI_NP_ARGS[@]}" "${MPI_ENV_ARGS[@]}" "$OUT/nameclash-$MPI" </dev/null >"$log" 2>&1 &&
  grep -aq '^nameclash: PASS' "$log"; then
  echo "  nameclash p=2: ok"
else
  echo "  nameclash p=2: failed; log $log"; fails=$((fails + 1))
fi
if [ $fails -eq 0 ]; then echo "stacked: PASS ($runs runs)"; else echo "stacked: FAIL ($fails of $runs runs)"; exit 1; fi
