#!/usr/bin/env bash
# scripts/agree-cost.sh <openmpi|mpich> <libpcoll.so> [other libpcoll.so] [runs]: start-up
# time (issue 29) of a program of one MPI_Init and one 8-byte MPI_Allreduce on MPI_COMM_WORLD,
# at p = 2 and 3: native, under the first library and under the second (e.g. one built
# without the agreement). Per run, the maximum over ranks of MPI_Init's time and of the first
# collective's (which builds pcoll's state); medians over the runs (default 15), in ms. Then
# the cold PMPI_Allreduce (MPI_MAX) of 60 u64 alone (what the agreement adds to MPI_Init when
# the ranks' settings are alike: each of the 30 digests and its complement), in us.
set -uo pipefail
[ $# -ge 2 ] || { echo "usage: $0 <openmpi|mpich> <lib> [lib2] [runs]" >&2; exit 2; }
MPI=$1; LIB=$(readlink -f "$2"); LIB2=${3:+$(readlink -f "$3")}; RUNS=${4:-15}
OUT=$(cd "$(dirname "$0")/.." && pwd)/build/agree-cost; mkdir -p "$OUT"
cat >"$OUT/cost.c" <<'C'
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
int main(int argc, char **argv) {
    double t0 = now();
    if (getenv("COST_GATHER")) PMPI_Init(&argc, &argv); else MPI_Init(&argc, &argv);
    double t1 = now();
    double x = 1, y, t[2], m[2];
    if (getenv("COST_GATHER")) {
        uint64_t a[60] = {0}, b[60];
        PMPI_Allreduce(a, b, 60, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    } else {
        MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
    double t2 = now();
    t[0] = t1 - t0; t[1] = t2 - t1;
    PMPI_Reduce(t, m, 2, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    int r; PMPI_Comm_rank(MPI_COMM_WORLD, &r);
    if (r == 0) printf("%.6f %.6f\n", m[0], m[1]);
    PMPI_Finalize();
    return 0;
}
C
mpicc.$MPI -O2 -o "$OUT/cost-$MPI" "$OUT/cost.c" || exit 1
run() { # <p> <preload or ""> [env]
  local p=$1 pre=$2 e=${3:-X=1}
  if [ $MPI = openmpi ]; then
    mpirun.openmpi --allow-run-as-root --oversubscribe -np $p ${pre:+-x LD_PRELOAD=$pre} -x "$e" "$OUT/cost-$MPI" </dev/null 2>/dev/null
  else
    mpiexec.mpich -n $p ${pre:+-genv LD_PRELOAD $pre} -genv "${e%%=*}" "${e#*=}" "$OUT/cost-$MPI" </dev/null 2>/dev/null
  fi
}
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
for p in 2 3; do
  for which in native lib lib2 gather; do
    case $which in
      native) pre=""; e=X=1 ;; lib) pre=$LIB; e=X=1 ;; lib2) [ -n "$LIB2" ] || continue; pre=$LIB2; e=X=1 ;;
      gather) pre=""; e=COST_GATHER=1 ;;
    esac
    : >"$OUT/$which.txt"
    for ((i = 0; i < RUNS; i++)); do run $p "$pre" "$e" >>"$OUT/$which.txt"; done
    init=$(awk '{print $1 * 1000}' "$OUT/$which.txt" | median)
    first=$(awk '{print $2 * 1000}' "$OUT/$which.txt" | median)
    if [ $which = gather ]; then
      printf '%s p=%d  cold PMPI_Allreduce of 60 u64: %.1f us (median of %d)\n' $MPI $p "$(echo "$first * 1000" | bc -l)" $RUNS
    else
      printf '%s p=%d  %-6s  MPI_Init %7.2f ms   first MPI_Allreduce %7.3f ms  (medians of %d)\n' $MPI $p $which "$init" "$first" $RUNS
    fi
  done
done
