#!/usr/bin/env bash
# The differential tester (verify/difftest.c) with the node-aware algorithms forced:
# p = 1..9, PCOLL_NODES = 2 and 3 (nodes of 2 / 3 consecutive world ranks), --alg hier and
# --alg hier_ml (hier_ml exists for reduce and allreduce; the other collectives take pcoll's
# own decision in those runs), and --alg random (every algorithm or pcoll's own decision at
# random: the model then weighs hier / hier_ml over the nodes), with PCOLL_STATS=1; and
# --alg hier and hier_ml with PCOLL_HIER_SHM=1 (every node step through the node's shared
# window: the stats' node-steps line must show them), then once with the windows
# refused (PCOLL_SHM_BYTES beyond /dev/shm: a warning, point-to-point node steps, 0 mismatches).
#
#   verify/hier-difftest.sh <openmpi|mpich|openmpi5|mpich5|impi> <libpcoll.so> [cases per run, default 200]
#   HIER_PS="4" limits the world sizes (make test: p = 4, i.e. nodes 2+2 and 3+1, 40 cases a run).
# Last line: "N passed, M failed" (cases; a run that crashed or hung counts as one failure).
set -uo pipefail
[ $# -ge 2 ] || { echo "usage: $0 <openmpi|mpich|openmpi5|mpich5|impi> <libpcoll.so> [cases]" >&2; exit 2; }
MPI=$1; LIB=$(readlink -f "$2"); CASES=${3:-200}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=$ROOT/build/verify; mkdir -p "$OUT/logs"
# shellcheck source=../scripts/mpi.sh
source "$ROOT/scripts/mpi.sh"
mpi_setup "$MPI" || exit 2
BIN=$OUT/difftest-$MPI
if [ ! -x "$BIN" ] || [ "$ROOT/verify/difftest.c" -nt "$BIN" ]; then
  $MPICC -O2 -g -Wall -o "$BIN" "$ROOT/verify/difftest.c" -ldl -lm || exit 1
fi
SEED=${DIFFTEST_SEED:-$(( $(date +%s) % 1000000007 ))}
echo "hier-difftest: $MPI seed=$SEED cases/run=$CASES"
passed=0; failed=0
run_one() { # <label> <alg> <nodes> <p> <cases> [VAR=value ...]: one run, counted
  local label=$1 alg=$2 nodes=$3 p=$4 n=$5; shift 5
  local log=$OUT/logs/hier-$MPI-$label-n$nodes-p$p.log
  local args=(--seed $((SEED + p)) --cases $n --max-count 100000 --alg $alg)
  mpi_np $p
  mpi_env_args LD_PRELOAD="$LIB" PCOLL_NODES=$nodes PCOLL_STATS=1 PCOLL_FALLBACK=silent "$@"
  timeout -k 10 600 "$MPIRUN" "${MPI_NP_ARGS[@]}" "${MPI_ENV_ARGS[@]}" "$BIN" "${args[@]}" </dev/null >"$log" 2>&1
  local rc=$? s c m st ns
  s=$(grep -E '^difftest: [0-9]+ cases, [0-9]+ mismatches' "$log" | tail -1)
  if [ -z "$s" ]; then
    failed=$((failed + 1)); echo "  $label nodes=$nodes p=$p: CRASHED or HUNG (exit $rc); log $log"; return 1
  fi
  c=$(echo "$s" | sed -E 's/^difftest: ([0-9]+) cases, ([0-9]+) mismatches.*/\1/')
  m=$(echo "$s" | sed -E 's/^difftest: ([0-9]+) cases, ([0-9]+) mismatches.*/\2/')
  passed=$((passed + c - m)); failed=$((failed + m))
  st=$(grep -E "^pcoll: stats (reduce|allreduce|reduce_scatter) $alg " "$log" | awk '{print $3"="$5}' | tr '\n' ' ')
  ns=$(grep -E '^pcoll: stats node-steps' "$log" | sed -E 's/^pcoll: stats node-steps shm //')
  echo "  $label nodes=$nodes p=$p: $c cases, $m mismatches; stats: $st${ns:+; node steps: $ns}"
  [ "$m" != 0 ] && grep '^MISMATCH' "$log" | head -5 | sed 's/^/    /'
  LAST_LOG=$log
  return 0
}
for alg in hier hier_ml random; do
  for nodes in 2 3; do
    for p in ${HIER_PS:-1 2 3 4 5 6 7 8 9}; do
      n=$CASES; [ "$MPI_ABI" = mpich ] && [ $p -gt 2 ] && n=$(( CASES * 4 / (p + 2) ))
      run_one $alg $alg $nodes $p $n
    done
  done
done
# hier and hier_ml with every node step through the nodes' windows (p >= 2: node 0, rank 0's,
# has two ranks): rank 0's stats must count node steps (hier: reduce, hier_ml: reduce_scatter).
for alg in hier hier_ml; do
  want=reduce; [ $alg = hier_ml ] && want=reduce_scatter
  for nodes in 2 3; do
    for p in ${HIER_PS:-1 2 3 4 5 6 7 8 9}; do
      n=$CASES; [ "$MPI_ABI" = mpich ] && [ $p -gt 2 ] && n=$(( CASES * 4 / (p + 2) ))
      run_one $alg-shm $alg $nodes $p $n PCOLL_HIER_SHM=1 || continue
      if [ $p -ge 2 ] && ! grep -qE "^pcoll: stats node-steps shm (.* )?$want=[1-9]" "$LAST_LOG"; then
        failed=$((failed + 1)); echo "    no $want node step ran through a window (log $LAST_LOG)"
      fi
    done
  done
done
# The windows refused (more than /dev/shm holds): one warning, point-to-point node steps.
run_one hier-shm-refused hier 2 4 $CASES PCOLL_HIER_SHM=1 PCOLL_SHM_BYTES=1099511627776 &&
  if ! grep -q 'lacks room' "$LAST_LOG" || grep -q '^pcoll: stats node-steps' "$LAST_LOG"; then
    failed=$((failed + 1)); echo "    refused windows: no warning, or node steps ran (log $LAST_LOG)"
  fi
echo "$passed passed, $failed failed"
[ $failed = 0 ]
