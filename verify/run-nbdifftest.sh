#!/usr/bin/env bash
# The differential test of the non-blocking and persistent collectives (verify/nbdifftest.c,
# issue 27) under one MPI with pcoll preloaded: every p of PS, every algorithm of ALGS forced
# through pcoll_force (`random`: one per collective per round), ROUNDS rounds each.
#
#   verify/run-nbdifftest.sh <openmpi|mpich|openmpi5|mpich5|impi> <libpcoll.so> [--quick|--long] [--native]
#
#   --quick (default): p = 1, 2, 3, ALGS=random, 15 rounds (make test; about 20 s per MPI)
#   either mode adds, on MPICH's ABI, one run at p = 3 with every call through its `_c` entry
#   --long           : p = 1..5, every algorithm name and random, 40 rounds
#   --native         : without pcoll (checks the tester against the MPI alone)
# Environment: NB_PS, NB_ALGS, NB_ROUNDS override. A case passes when the tester ends with
# 0 mismatches; with pcoll, rank 0's stats must also show calls pcoll served itself
# (`ireduce binomial ...`, `allreduce_init ring ...`). Last line: "N passed, M failed".
set -uo pipefail
[ $# -ge 2 ] || { echo "usage: $0 <mpi> <libpcoll.so> [--quick|--long] [--native]" >&2; exit 2; }
MPI=$1
LIB=$(readlink -f "$2" 2>/dev/null || echo "$2")
shift 2
MODE=quick NATIVE=0
for a in "$@"; do case $a in --quick) MODE=quick ;; --long) MODE=long ;; --native) NATIVE=1 ;; *) exit 2 ;; esac; done
source "$(dirname "$0")/../scripts/mpi.sh"
mpi_setup "$MPI" || exit 2
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=$ROOT/build/verify
mkdir -p "$OUT/logs"
BIN=$OUT/nbdifftest-$MPI
if [ ! -x "$BIN" ] || [ "$ROOT/verify/nbdifftest.c" -nt "$BIN" ]; then
  $MPICC -O2 -g -Wall -o "$BIN" "$ROOT/verify/nbdifftest.c" -ldl || { echo "0 passed, 1 failed"; exit 1; }
fi
if [ $MODE = quick ]; then PS=${NB_PS:-"1 2 3"} ALGS=${NB_ALGS:-random} ROUNDS=${NB_ROUNDS:-15}
else
  PS=${NB_PS:-"1 2 3 4 5"} ROUNDS=${NB_ROUNDS:-40}
  ALGS=${NB_ALGS:-"random binomial pipeline greedy greedy_uni circulant butterfly ring binary fibonacci scatter_allgather hier native shm"}
fi
pass=0 fail=0
# One more run on MPICH's ABI (MPI 4 and later): every non-blocking and persistent call through
# its large-count entry (MPI_Ireduce_c, MPI_Reduce_init_c, ...: NB_LARGE=1), binomial forced.
RUNS=()
for alg in $ALGS; do for p in $PS; do RUNS+=("$alg $p"); done; done
[ "$MPI_ABI" = mpich ] && RUNS+=("binomial 3 large")
# One run of the tester: <log> <p> <alg> VAR=value ... (the seed follows p and the name).
tester() {
  local log=$1 p=$2 alg=$3; shift 3
  timeout 600 bash -c 'source "$0/scripts/mpi.sh"; mpi_setup "$1" >/dev/null; shift; n=$1; shift; mpi_run "$n" "$@"' \
    "$ROOT" "$MPI" "$p" "$@" -- "$BIN" --rounds "$ROUNDS" --alg "$alg" --seed $((p * 1009 + ${#alg})) \
    </dev/null >"$log" 2>&1
}
for run in "${RUNS[@]}"; do
  read -r alg p large <<<"$run"
  {
    kv=(PCOLL_STATS=1)
    [ -n "$large" ] && kv+=(NB_LARGE=1)
    [ $NATIVE = 0 ] && kv+=("LD_PRELOAD=$LIB")
    # Debian's MPICH 4.0.2's own persistent collectives fail natively (docs/nonblocking.md):
    # persistent forms only where the forced algorithm serves all seven collectives.
    # Intel MPI 2021.19's too: the tester segfaults natively at p = 1 (seed 1015), and with
    # pcoll a forwarded persistent collective never completed in its MPI_Waitall (session 14).
    case "$MPI:$alg" in mpich:binomial|mpich:circulant) ;; mpich:*|impi:*) kv+=(NB_NO_PERSISTENT=1) ;; esac
    log=$OUT/logs/nbdifftest-$MPI-p$p-$alg${large:+-large}.log
    tester "$log" "$p" "$alg" "${kv[@]}"
    rc=$?
    sum=$(grep -E '^nbdifftest: [0-9]+ ops, [0-9]+ mismatches' "$log" | tail -1)
    served=$(grep -E 'stats (i[a-z_]+|[a-z_]+_init) ' "$log" | grep -v ' native ' | sed -E 's/.*calls=([0-9]+).*/\1/' | awk '{s += $1} END {print s + 0}')
    ok=1
    [ $rc = 0 ] && grep -q ' 0 mismatches' <<<"$sum" || ok=0
    # With pcoll, something must have been served by pcoll (forced native or shm: maybe nothing,
    # shm counts as refused for these forms).
    # hier: a node-aware I-form goes native once the blocking calls made the nodes' windows
    # (docs/nonblocking.md), so a run whose stats show node steps through them may serve none.
    windows=0
    [ "$alg" = hier ] && grep -q '^pcoll: stats node-steps shm' "$log" && windows=1
    [ $NATIVE = 0 ] && [ "$alg" != native ] && [ "$alg" != shm ] && [ $windows = 0 ] && [ "$served" = 0 ] && ok=0
    # The large-count run: pcoll served both forms through their _c entries (persistent ones
    # where the tester draws them).
    if [ -n "$large" ] && [ $NATIVE = 0 ]; then
      grep -qE "stats i[a-z_]+ $alg " "$log" || ok=0
      [[ " ${kv[*]} " == *NB_NO_PERSISTENT* ]] || grep -qE "stats [a-z_]+_init $alg " "$log" || ok=0
    fi
    # Mismatches the MPI makes alone: the tester's reference is the MPI's blocking collective,
    # and Intel MPI 2021.19's is wrong after some non-blocking ones (docs/mpis.md). A run
    # whose every mismatch (round, collective, communicator) also shows in one of up to three
    # runs of the same case without pcoll is the MPI's, reported as such; any other is pcoll's.
    native_note=
    if [ $ok = 0 ] && [ $NATIVE = 0 ] && [ -n "$sum" ] && grep -q '^MISMATCH' "$log"; then
      mine=$(grep '^MISMATCH' "$log" | sed -E 's/.* (round=[0-9]+ coll=[a-z_]+ form=[0-9]+ comm=[0-9]+) .*/\1/' | sort -u)
      kvn=(); for x in "${kv[@]}"; do [[ $x == LD_PRELOAD=* ]] || kvn+=("$x"); done
      for try in 1 2 3; do
        nlog=$log.native$try
        tester "$nlog" "$p" "$alg" "${kvn[@]}"
        theirs=$(grep '^MISMATCH' "$nlog" | sed -E 's/.* (round=[0-9]+ coll=[a-z_]+ form=[0-9]+ comm=[0-9]+) .*/\1/' | sort -u)
        if [ -n "$theirs" ] && [ -z "$(comm -23 <(echo "$mine") <(echo "$theirs"))" ]; then
          ok=1; native_note=" (every mismatch also without pcoll: the MPI's, $nlog)"; break
        fi
      done
    fi
    if [ $ok = 1 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); fi
    echo "  $MPI p=$p alg=$alg${large:+ (large-count entries)}: ${sum:-no summary (rc=$rc)}; non-blocking/persistent calls pcoll served: $served $([ $windows = 1 ] && [ "$served" = 0 ] && echo "(hier native: node windows) ")$([ $ok = 1 ] && echo ok || echo "FAILED: $log")$native_note"
  }
done
echo "$pass passed, $fail failed"
[ $fail = 0 ]
