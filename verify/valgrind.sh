#!/usr/bin/env bash
# Memory errors under valgrind memcheck with pcoll preloaded (issue 7).
#
#   verify/valgrind.sh [<libpcoll.so for MPICH>]   (default build/mpich/libpcoll.so)
#
# MPICH at p = 2 (Open MPI's PMIx reports errors of its own, MPI-NOTES.md). Each program runs
# natively first (its errors are the MPI's, shown for comparison) and then with pcoll:
#   difftest  (60 random cases, forced algorithms, counts up to 3000)
#   rss       (3000 calls, communicator churn every 100 calls)
#   threads   (MPI_THREAD_MULTIPLE, 2 threads x 40 iterations)
# with --error-exitcode, --leak-check=full (definite leaks count as errors) and the
# suppressions of verify/valgrind.supp (native MPICH noise only). An error is attributed to
# pcoll when its stack has a frame in libpcoll.so or a pcoll / pcoll_mpi symbol. Expected: 0.
# Last line: "N passed, M failed" (one test per program).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
LIB=$(readlink -f "${1:-$ROOT/build/mpich/libpcoll.so}")
OUT=$ROOT/build/verify
VG=$OUT/valgrind
rm -rf "$VG"
mkdir -p "$VG"
command -v valgrind >/dev/null || { echo "valgrind not installed (apt-get install valgrind)"; echo "0 passed, 1 failed"; exit 1; }
[ -f "$LIB" ] || { echo "no library $LIB"; echo "0 passed, 1 failed"; exit 1; }

build() { # name, extra flags
  local src=$ROOT/verify/$1.c bin=$OUT/$1-mpich
  if [ ! -x "$bin" ] || [ "$src" -nt "$bin" ]; then
    mpicc.mpich -O1 -g -Wall -o "$bin" "$src" "${@:2}" || return 1
  fi
}
build difftest -ldl -lm && build rss && build threads -lpthread || { echo "0 passed, 1 failed"; exit 1; }

# Errors in a valgrind log: blocks between blank "==pid== " lines that start with an error.
# Prints "total attributed" for one log.
count_errors() {
  awk '
    /^==[0-9]+== *$/ { if (inblk) { total++; if (ours) pc++ } inblk = 0; ours = 0; next }
    /^==[0-9]+== (Invalid|Conditional|Use of uninit|Syscall param|Mismatched|Source and destination|Argument|[0-9,]+ (\([0-9,]+ direct, [0-9,]+ indirect\) )?bytes in [0-9,]+ blocks are definitely)/ { inblk = 1 }
    inblk && /(libpcoll|pcoll::|pcoll_mpi::|pcoll_)/ { ours = 1 }
    END { if (inblk) { total++; if (ours) pc++ } printf "%d %d\n", total + 0, pc + 0 }
  ' "$1"
}

passed=0
failed=0
printf '| program | native errors (all ranks) | pcoll errors (all ranks) | attributed to pcoll | valgrind exit | result |\n'
printf '|---------|---------------------------|--------------------------|---------------------|---------------|--------|\n'
run() { # name args...
  local name=$1
  shift
  local mode res=ok n_tot n_pc p_tot p_pc rc_p=0
  for mode in native pcoll; do
    local env=()
    [ $mode = pcoll ] && env=(-genv LD_PRELOAD "$LIB")
    timeout -k 10 900 mpiexec.mpich -n 2 "${env[@]}" valgrind -q --error-exitcode=97 --leak-check=full \
      --errors-for-leak-kinds=definite --show-leak-kinds=definite --num-callers=40 \
      --suppressions="$ROOT/verify/valgrind.supp" --log-file="$VG/$name-$mode-%p.log" \
      "$OUT/$name-mpich" "$@" </dev/null >"$VG/$name-$mode.out" 2>&1
    local rc=$?
    local tot=0 pc=0 f t c
    for f in "$VG/$name-$mode"-*.log; do
      read -r t c < <(count_errors "$f")
      tot=$((tot + t)); pc=$((pc + c))
    done
    if [ $mode = native ]; then n_tot=$tot; n_pc=$pc; else p_tot=$tot; p_pc=$pc; rc_p=$rc; fi
  done
  # pcoll fails the test if an error has a pcoll frame, or if it adds errors the native run
  # does not have, or if the program itself failed.
  if [ "$p_pc" != 0 ] || [ "$p_tot" -gt "$n_tot" ]; then res=FAIL; fi
  if [ "$rc_p" != 0 ] && [ "$rc_p" != 97 ]; then res="FAIL (exit $rc_p)"; fi
  if [ "$rc_p" = 97 ] && [ "$p_tot" -le "$n_tot" ] && [ "$p_pc" = 0 ]; then res="ok (native errors only)"; fi
  if [ "${res%% *}" = ok ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
  printf '| %s %s | %s | %s | %s | %s | %s |\n' "$name" "$*" "$n_tot" "$p_tot" "$p_pc" "$rc_p" "$res"
}
run difftest --seed 11 --cases 60 --max-count 3000
run rss -n 3000 -w 500 -d 100 -k 100000
run threads -t 2 -n 40 -c 50
echo
echo "logs: $VG (pcoll errors, if any: grep -l pcoll $VG/*-pcoll-*.log)"
for f in "$VG"/*-pcoll-*.log; do
  if grep -qE 'libpcoll|pcoll::|pcoll_mpi::' "$f"; then echo "--- $f"; grep -B3 -A25 -E 'Invalid|uninit|definitely' "$f" | head -60; fi
done
echo "$passed passed, $failed failed"
[ $failed = 0 ]
