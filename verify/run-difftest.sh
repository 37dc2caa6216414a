#!/usr/bin/env bash
# Run the randomized differential tester (verify/difftest.c) under one MPI with pcoll preloaded.
#
#   verify/run-difftest.sh <openmpi|mpich|openmpi5|mpich5|impi> <libpcoll.so> [--quick|--soak|--shm|--learn] [--native]
#
#   --quick (default): Open MPI p = 1,2,3,5 and MPICH p = 1,2,3, a few hundred cases each
#                      (for `make test`, < 3 minutes per MPI on 2 cores)
#   --soak           : p = 1..9 on both MPIs, thousands of cases per p
#   --native         : run without pcoll (checks the tester and shows native defects)
#   --shm            : every collective forced to shm, p = 1..9 on Debian's two MPIs (p = 1..3
#                      on the registry's), default and tiny windows (many chunks, counts near
#                      cell and window boundaries), and the fallback when the window is refused
#                      (/dev/shm too small for PCOLL_SHM_BYTES) or off
#   --trees          : reduce, allreduce and bcast forced to binary, then to fibonacci, through
#                      PCOLL_REDUCE / PCOLL_ALLREDUCE / PCOLL_BCAST (the tester forces nothing:
#                      --alg none), p = 1..9 on Debian's two MPIs (1..3 on the registry's);
#                      rank 0's served line must show the tree serving all three (--quick runs
#                      each tree once, at p = 3)
#   --learn          : PCOLL_LEARN (issue 24), pcoll's own decisions (--alg none), p = 1,2,3 (Open
#                      MPI also 5): a learning run (1 timed call per candidate, so that cells
#                      settle within the cases), then the same cases replaying the table it
#                      wrote (PCOLL_TUNING); both with --same-alg (every rank ran the same
#                      algorithm for every call), and the table must be valid
# Environment: DIFFTEST_SEED (default: random, printed), DIFFTEST_CASES (cases per p),
# DIFFTEST_MAX_COUNT, DIFFTEST_ARGS (extra difftest flags, e.g. "--alg ring").
# Each p runs seed+p. Exit status non-zero on any mismatch or crash; the last line is
# "N passed, M failed" (cases; a run that crashed or hung counts as one failure).
set -uo pipefail

usage() { echo "usage: $0 <openmpi|mpich|openmpi5|mpich5|impi> <libpcoll.so> [--quick|--soak|--shm|--trees|--learn] [--native]" >&2; exit 2; }
[ $# -ge 2 ] || usage
MPI=$1
LIB=$(readlink -f "$2" 2>/dev/null || echo "$2")
shift 2
MODE=quick
NATIVE=0
for a in "$@"; do
  case $a in --quick) MODE=quick ;; --soak) MODE=soak ;; --shm) MODE=shm ;; --trees) MODE=trees ;; --learn) MODE=learn ;; --native) NATIVE=1 ;; *) usage ;; esac
done
# shellcheck source=../scripts/mpi.sh
source "$(dirname "$0")/../scripts/mpi.sh"
mpi_setup "$MPI" || usage
if [ $NATIVE = 0 ] && [ ! -f "$LIB" ]; then echo "no library: $LIB" >&2; echo "0 passed, 1 failed"; exit 1; fi

ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUTDIR=$ROOT/build/verify
mkdir -p "$OUTDIR/logs"
BIN=$OUTDIR/difftest-$MPI
if [ ! -x "$BIN" ] || [ "$ROOT/verify/difftest.c" -nt "$BIN" ]; then
  $MPICC -O2 -g -Wall -o "$BIN" "$ROOT/verify/difftest.c" -ldl -lm || { echo "0 passed, 1 failed"; exit 1; }
fi

SEED=${DIFFTEST_SEED:-$(( $(date +%s) % 1000000007 ))}
if [ $MODE = quick ]; then
  if [ "$MPI_ABI" = openmpi ]; then PS=(1 2 3 5); CASES=${DIFFTEST_CASES:-1500}; else PS=(1 2 3); CASES=${DIFFTEST_CASES:-1000}; fi
  MAXC=${DIFFTEST_MAX_COUNT:-100000}
  TMO=240
elif [ $MODE = shm ]; then
  case $MPI in openmpi|mpich) PS=(1 2 3 4 5 6 7 8 9) ;; *) PS=(1 2 3) ;; esac
  # DIFFTEST_PS narrows the sizes (make test: MPICH p = 1..5, whose ranks busy-poll when
  # oversubscribed; make shm-test-<mpi> runs them all).
  [ -n "${DIFFTEST_PS:-}" ] && read -r -a PS <<<"$DIFFTEST_PS"
  CASES=${DIFFTEST_CASES:-250}
  MAXC=${DIFFTEST_MAX_COUNT:-300000}
  TMO=300
  SHM_COLLS=reduce,allreduce,reduce_scatter,reduce_scatter_block,allgatherv,allgather,bcast
  DIFFTEST_ARGS="${DIFFTEST_ARGS:-} --alg shm --coll $SHM_COLLS"
elif [ $MODE = trees ]; then
  case $MPI in openmpi|mpich) PS=(1 2 3 4 5 6 7 8 9) ;; *) PS=(1 2 3) ;; esac
  CASES=${DIFFTEST_CASES:-400}
  MAXC=${DIFFTEST_MAX_COUNT:-100000}
  TMO=600
elif [ $MODE = learn ]; then
  if [ "$MPI_ABI" = openmpi ]; then PS=(1 2 3 5); else PS=(1 2 3); fi
  CASES=${DIFFTEST_CASES:-400}
  MAXC=${DIFFTEST_MAX_COUNT:-30000}
  TMO=300
  DIFFTEST_ARGS="${DIFFTEST_ARGS:-} --alg none --same-alg"
else
  PS=(1 2 3 4 5 6 7 8 9)
  CASES=${DIFFTEST_CASES:-3000}
  MAXC=${DIFFTEST_MAX_COUNT:-1000000}
  TMO=3600
fi

passed=0
failed=0

# Self-test: the tester must catch a deliberately wrong interposer (verify/mutant.c): a flipped
# result byte, a write past the receive buffer, a write into an allgatherv gap, a reduce in
# reversed rank order (wrong for non-commutative ops). Each mutant must produce mismatches.
selftest() {
  local so=$OUTDIR/mutant-$MPI.so np=3 m out
  $MPICC -shared -fPIC -O2 -o "$so" "$ROOT/verify/mutant.c" || { failed=$((failed + 1)); return; }
  local try s
  for m in 1 2 3 4; do
    # A mutant's defect shows only in some cases (mutant 4: non-commutative reduces on two
    # or more ranks), which a seed's 300 cases may lack (MPICH 4.0, p = 3: seed 150866267
    # has none, 1 of ~40 seeds tried; the CI run of 65c8254 drew such a seed): up to three
    # seeds before it counts as undetected.
    for try in 0 1 2; do
      s=$((SEED + 7919 * try))
      out=$(timeout -k 5 120 bash -c 'source "$0"; mpi_setup "$1" && shift 2 && mpi_run "$@"' \
        "$ROOT/scripts/mpi.sh" "$MPI" -- $np MUTANT=$m LD_PRELOAD="$so" -- \
        "$BIN" --seed "$s" --cases 300 --max-count 1000 </dev/null 2>&1)
      grep -Eq '^difftest: [0-9]+ cases, [1-9][0-9]* mismatches|MISMATCH|Segmentation fault|signal 11|Aborted' <<<"$out" && break
      echo "  self-test: mutant $m not seen with seed $s (none of its cases shows the defect)"
    done
    if grep -Eq '^difftest: [0-9]+ cases, [1-9][0-9]* mismatches' <<<"$out"; then
      passed=$((passed + 1))
    elif grep -Eq 'MISMATCH|Segmentation fault|signal 11|Aborted' <<<"$out"; then
      # A wrong interposer that makes the run crash is caught too (the run fails); the
      # mutants hand wrong arguments to the MPI, which may crash before a case completes.
      passed=$((passed + 1))
      echo "  self-test: mutant $m detected (the run crashed)"
    else
      failed=$((failed + 1))
      echo "  self-test: mutant $m was NOT detected:"
      echo "$out" | tail -3 | sed 's/^/    /'
    fi
  done
  echo "  self-test: $([ $failed = 0 ] && echo "all 4 mutants detected" || echo "FAILED")"
}
echo "run-difftest: $MPI $([ $NATIVE = 1 ] && echo native || echo "pcoll=$LIB") mode=$MODE seed=$SEED (p adds to it) cases/p=$CASES max-count=$MAXC"
[ "${DIFFTEST_SELFTEST:-1}" = 1 ] && [ $MODE = quick ] && [ $NATIVE = 0 ] && selftest
first=1
# One run at p with n cases; $3 (optional) is one extra NAME=VALUE for pcoll's environment.
run_one() {
  local p=$1 n=$2 s=$((SEED + $1)) maxc=$MAXC tag="" kv
  shift 2
  local kvs=("$@") # environment settings NAME=value for this run
  # MPICH busy-polls when oversubscribed (MPI-NOTES.md): fewer cases, smaller counts above p=2.
  if [ "$MPI_ABI" = mpich ] && [ "$p" -gt 2 ]; then
    n=$(( n * 2 / (p + 2) )); [ $n -lt 50 ] && n=50
    [ "$maxc" -gt 100000 ] && maxc=100000
  fi
  [ ${#kvs[@]} -gt 0 ] && tag="-${kvs[0]%%=*}"
  tag=${LOGTAG:-$tag}
  local log=$OUTDIR/logs/difftest-$MPI-$([ $NATIVE = 1 ] && echo native- || true)p$p$tag.log
  local args=(--seed "$s" --cases "$n" --max-count "$maxc" ${DIFFTEST_ARGS:-})
  local t0=$SECONDS
  local envs=("${kvs[@]}")
  [ $NATIVE = 0 ] && envs=(LD_PRELOAD="$LIB" "${kvs[@]}")
  mpi_np "$p"
  mpi_env_args "${envs[@]}"
  timeout -k 10 $TMO "$MPIRUN" "${MPI_NP_ARGS[@]}" "${MPI_ENV_ARGS[@]}" \
    "$BIN" "${args[@]}" </dev/null >"$log" 2>&1
  local rc=$?
  local dt=$((SECONDS - t0))
  local summary
  summary=$(grep -E '^difftest: [0-9]+ cases, [0-9]+ mismatches' "$log" | tail -1)
  local repro="mpirun -np $p ${kvs[*]:+${kvs[*]} }$([ $NATIVE = 0 ] && echo "LD_PRELOAD=$LIB ")$BIN ${args[*]}"
  local label="p=$p${kvs[*]:+ (${kvs[*]})}"
  if [ -z "$summary" ]; then
    failed=$((failed + 1))
    echo "  $label: CRASHED or HUNG (exit $rc after ${dt}s); log $log"
    echo "    rerun: $repro"
    grep -E 'MISMATCH|FATAL|ERROR|Segmentation|signal' "$log" | head -10 | sed 's/^/    /'
    tail -5 "$log" | sed 's/^/    | /'
    return
  fi
  local cases mism
  cases=$(echo "$summary" | sed -E 's/^difftest: ([0-9]+) cases, ([0-9]+) mismatches.*/\1/')
  mism=$(echo "$summary" | sed -E 's/^difftest: ([0-9]+) cases, ([0-9]+) mismatches.*/\2/')
  passed=$((passed + cases - mism))
  failed=$((failed + mism))
  echo "  $label: $cases cases, $mism mismatches (${dt}s)"
  grep -E '^difftest: (served|note)' "$log" | sed 's/^/    /'
  [ $first = 1 ] && grep -E '^difftest: NOT TESTED' "$log" | sed 's/^/    /'
  first=0
  if [ "$mism" != 0 ] || [ $rc != 0 ]; then
    [ "$mism" = 0 ] && { failed=$((failed + 1)); echo "    exit status $rc without mismatches"; }
    grep '^MISMATCH' "$log" | head -20 | sed 's/^/    /'
    grep '^difftest: rerun' "$log" | head -5 | sed "s|difftest: rerun: difftest|    rerun: mpirun -np $p ${kvs[*]:+${kvs[*]} }$([ $NATIVE = 0 ] && echo "LD_PRELOAD=$LIB ")$BIN|"
    echo "    log: $log"
  fi
}
# shm: every run must show shm serving (rank 0's stats line), except the fallback runs, which
# must show it refused at p > 1 and still pass.
# A collective the run's cases did not call on rank 0 (`c[]`: the cases are drawn at random,
# and a run of 50 drew no bcast at p = 3 once) is reported, not failed; each must be served
# by shm in some run of the mode (checked at the end).
declare -A SHM_SEEN=()
shm_served() {
  local log=$OUTDIR/logs/difftest-$MPI-p$1$2.log want=$3
  local line c got
  line=$(grep -E '^difftest: served' "$log")
  for c in ${SHM_COLLS//,/ }; do
    got=0
    grep -Eq "[: ]$c\[[^]]*shm=" <<<"$line" && got=1
    if [ "$want" = 1 ] && grep -Eq "[: ]$c\[\]" <<<"$line"; then
      echo "    $c: not called in this run (the cases drawn)"
      continue
    fi
    [ $got = 1 ] && SHM_SEEN[$c]=1
    # One rank: served only where p = 1 keeps shm (no window needed): every collective.
    if [ $got != "$want" ]; then
      failed=$((failed + 1))
      echo "    $c: shm $([ "$want" = 1 ] && echo "did not serve" || echo "served though refused") (log $log)"
    fi
  done
}
if [ $MODE = shm ]; then
  for p in "${PS[@]}"; do
    # Odd p: cells of 1 KiB (a 24 KiB window: a page of counters, a page of stagger per cell),
    # so that most calls run many chunks; even p: the default 256 KiB cells. 40% of the
    # counts lie within two elements of 1..5 cells (--near; 2 cells fill the window).
    if [ $((p % 2)) = 1 ]; then
      DIFFTEST_ARGS="$DIFFTEST_ARGS --near 1024" run_one "$p" "$CASES" PCOLL_SHM_BYTES=24576
      shm_served "$p" -PCOLL_SHM_BYTES 1
    else
      DIFFTEST_ARGS="$DIFFTEST_ARGS --near 262144" run_one "$p" "$CASES"; shm_served "$p" "" 1
    fi
  done
  # p = 2 and 4 with many chunks, every owner folding a slice and the root copying out (PCOLL_SHM_COMBINE=0).
  run_one 2 "$CASES" PCOLL_SHM_BYTES=22528 PCOLL_SHM_COMBINE=0; shm_served 2 -PCOLL_SHM_BYTES 1
  run_one 4 $(( CASES / 2 )) PCOLL_SHM_BYTES=24576 PCOLL_SHM_COMBINE=0; shm_served 4 -PCOLL_SHM_BYTES 1
  # The two allreduce protocols outside their default sizes (PCOLL_SHM_REPLICATE): every
  # rank folding the whole call from every cell at every size, and one slice each at every size;
  # both with many chunks.
  run_one 2 $(( CASES / 2 )) PCOLL_SHM_REPLICATE=1T PCOLL_SHM_BYTES=22528; shm_served 2 -PCOLL_SHM_REPLICATE 1
  run_one 3 $(( CASES / 2 )) PCOLL_SHM_REPLICATE=0 PCOLL_SHM_BYTES=24576; shm_served 3 -PCOLL_SHM_REPLICATE 1
  # Copies into cells with streaming stores (PCOLL_SHM_STREAM=1), many chunks and unaligned cells.
  run_one 2 "$CASES" PCOLL_SHM_BYTES=22528 PCOLL_SHM_STREAM=1; shm_served 2 -PCOLL_SHM_BYTES 1
  run_one 3 $(( CASES / 2 )) PCOLL_SHM_STREAM=1; shm_served 3 -PCOLL_SHM_STREAM 1
  # Five slots (PCOLL_SHM_SLOTS) of 1 KiB cells: chunks wrap around an odd ring.
  run_one 3 $(( CASES / 2 )) PCOLL_SHM_SLOTS=5 PCOLL_SHM_BYTES=55296; shm_served 3 -PCOLL_SHM_SLOTS 1
  # Three slots of 40 KiB cells, counts near 12 KiB multiples: calls smaller than a cell take
  # the next piece of their slot (pcoll::algo::shm::place), of mixed sizes, wrapping oddly,
  # and reduces of half a cell or more run in quarter cells. p = 2: both need a core per rank.
  LOGTAG=-place DIFFTEST_ARGS="$DIFFTEST_ARGS --near 12288" run_one 2 "$CASES" PCOLL_SHM_SLOTS=3 PCOLL_SHM_BYTES=274432
  shm_served 2 -place 1
  # Fallback: a window larger than /dev/shm, and shm turned off: served by the others.
  # (--may-fall-back: the forced shm falls back, maybe to native: steer around its defects.)
  DIFFTEST_ARGS="$DIFFTEST_ARGS --may-fall-back" run_one 3 $(( CASES / 2 )) PCOLL_SHM_BYTES=1T PCOLL_FALLBACK=silent
  grep -q 'WARN: shm: /dev/shm lacks room' "$OUTDIR/logs/difftest-$MPI-p3-PCOLL_SHM_BYTES.log" ||
    { failed=$((failed + 1)); echo "    no refusal warning"; }
  DIFFTEST_ARGS="$DIFFTEST_ARGS --may-fall-back" run_one 2 $(( CASES / 2 )) PCOLL_SHM=0 PCOLL_FALLBACK=silent
  shm_served 2 -PCOLL_SHM 0
  for c in ${SHM_COLLS//,/ }; do
    [ -n "${SHM_SEEN[$c]:-}" ] || { failed=$((failed + 1)); echo "  $c: shm served in no run"; }
  done
  echo "$passed passed, $failed failed"
  [ $failed = 0 ]
  exit
fi
# Trees (issue 25): the three collectives forced to one tree by the environment; every run
# must show it serving each of them in rank 0's served line.
TREE_COLLS=(reduce allreduce bcast)
trees_run() { # trees_run <p> <cases> <binary|fibonacci>
  local p=$1 n=$2 alg=$3 line c
  DIFFTEST_ARGS="${DIFFTEST_ARGS:-} --alg none --coll reduce,allreduce,bcast" LOGTAG="-trees-$alg" \
    run_one "$p" "$n" PCOLL_REDUCE="$alg" PCOLL_ALLREDUCE="$alg" PCOLL_BCAST="$alg"
  line=$(grep -E '^difftest: served' "$OUTDIR/logs/difftest-$MPI-p$p-trees-$alg.log")
  for c in "${TREE_COLLS[@]}"; do
    if ! grep -Eq "[: ]$c\[[^]]*$alg=[1-9]" <<<"$line"; then
      failed=$((failed + 1))
      echo "    $c: $alg did not serve (log $OUTDIR/logs/difftest-$MPI-p$p-trees-$alg.log)"
    fi
  done
}
if [ $MODE = trees ]; then
  for alg in binary fibonacci; do
    for p in "${PS[@]}"; do trees_run "$p" "$CASES" "$alg"; done
  done
  echo "$passed passed, $failed failed"
  [ $failed = 0 ]
  exit
fi
if [ $MODE = learn ]; then
  for p in "${PS[@]}"; do
    tab=$OUTDIR/learn-$MPI-p$p.toml
    rm -f "$tab"
    run_one "$p" "$CASES" PCOLL_LEARN="$tab" PCOLL_LEARN_CALLS=1
    log=$OUTDIR/logs/difftest-$MPI-p$p-PCOLL_LEARN.log
    if ! grep -q "pcoll: PCOLL_LEARN: .* written to $tab" "$log" || [ ! -s "$tab" ]; then
      failed=$((failed + 1)); echo "    no learned table written (log $log)"; continue
    fi
    echo "    $(grep -o 'PCOLL_LEARN: .* cells learned ([0-9]* on pcoll.s algorithms)' "$log")"
    run_one "$p" "$CASES" PCOLL_TUNING="$tab"
    if grep -q 'pcoll: warning' "$OUTDIR/logs/difftest-$MPI-p$p-PCOLL_TUNING.log"; then
      failed=$((failed + 1)); echo "    the learned table did not load: $(grep 'pcoll: warning' "$OUTDIR/logs/difftest-$MPI-p$p-PCOLL_TUNING.log" | head -2)"
    fi
  done
  echo "$passed passed, $failed failed"
  [ $failed = 0 ]
  exit
fi
for p in "${PS[@]}"; do
  run_one "$p" "$CASES"
done
# pcoll splits messages into chunks (PCOLL_CHUNK); tiny chunks split nearly every message,
# across pieces and mid-block, so that any disagreement between sender and receiver shows
# (PCOLL_CHUNK_MAX: bcast and allgather(v) split only a few chunks' worth by default).
# Buffers of at most 256 KiB there (6,554 chunks): a 7.4 MB allgatherv cut into 185,000
# chunks of 40 B took 86 s of one run's 97 at p = 3 on 2 cores (Open MPI 5, session 32).
if [ $NATIVE = 0 ]; then
  DIFFTEST_ARGS="${DIFFTEST_ARGS:-} --max-bytes 262144" run_one 3 $(( CASES / 3 )) PCOLL_CHUNK=40 PCOLL_CHUNK_MAX=1073741824
  # Two nodes (ranks 0-1, 2): bcast and allgather(v) chunk by the peer's node (a few chunks'
  # worth on the node, up to PCOLL_CHUNK_MAX between nodes); both sides must agree.
  DIFFTEST_ARGS="${DIFFTEST_ARGS:-} --max-bytes 262144" run_one 3 $(( CASES / 5 )) PCOLL_NODES=2 PCOLL_CHUNK=40
  [ $MODE = quick ] && for alg in binary fibonacci; do trees_run 3 $(( CASES / 5 )) "$alg"; done
  # PCOLL_DISABLE=1: a pure passthrough (the blocking calls forwarded by the C entry from
  # the first one on): right results, and pcoll served none of the calls.
  if [ $MODE = quick ]; then
    run_one 3 $(( CASES / 5 )) PCOLL_DISABLE=1
    served=$(grep -E '^difftest: served' "$OUTDIR/logs/difftest-$MPI-p3-PCOLL_DISABLE.log")
    algs=$(grep -oE '[a-z_]+=[0-9]+' <<<"$served" | cut -d= -f1 | sort -u | tr '\n' ' ')
    if [ "$algs" != "none " ]; then
      failed=$((failed + 1))
      echo "    PCOLL_DISABLE=1: pcoll served calls: $served"
    fi
  fi
fi
echo "$passed passed, $failed failed"
[ $failed = 0 ]
