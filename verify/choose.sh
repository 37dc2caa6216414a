#!/usr/bin/env bash
# verify/choose.sh <openmpi|mpich|openmpi5|mpich5|impi> <libpcoll.so>: the library's decision under MPI
# (pcoll_last_algorithm after each call, verify/choose.c) equals `pcoll-sim choose` for the
# same table, at p = 1..5 (and over p nodes at p = 4, 5), every collective, commutative and non-commutative ops, sizes
# 8 B..4 MiB: table rules, fallbacks to the model, model cells and native ones (through the
# gate). Last line: `choose: PASS ...` or `choose: FAIL ...`.
set -uo pipefail
# shellcheck source=setup.sh
source "$(dirname "$0")/setup.sh" 2 2 "$@"
BIN=$OUT/choose-$MPI
$MPICC -O2 -Wall -o "$BIN" "$ROOT/verify/choose.c" -ldl || { echo "choose: FAIL (build)"; exit 1; }
# PCOLL_SIM: a pcoll-sim already built (make test builds it with the core tests).
if [ -n "${PCOLL_SIM:-}" ] && [ -x "$PCOLL_SIM" ]; then
  SIM=$PCOLL_SIM
else
  (cd "$ROOT" && cargo build --release -q -p pcoll-sim) || { echo "choose: FAIL (pcoll-sim build)"; exit 1; }
  SIM=${CARGO_TARGET_DIR:-$ROOT/target}/release/pcoll-sim
fi
TABLE=$OUT/choose.toml
cat >"$TABLE" <<'T'
# verify/choose.sh: measured-looking rules at small p, a fallback (greedy, non-commutative),
# an explicit model rule, and cells with no rule (model).
[[reduce]]
p = [2, 4]
bytes = [0, 4096]
algorithm = "native"
[[reduce]]
p = 3
bytes = ["64KiB", "inf"]
root = "nonzero"
algorithm = "binomial"
[[reduce]]
p = 3
bytes = [4096, "1MiB"]
algorithm = "greedy"
[[allreduce]]
p = 2
bytes = ["1KiB", "64KiB"]
algorithm = "ring"
[[allreduce]]
algorithm = "model"
[[reduce_scatter]]
p = 4
algorithm = "butterfly"
[[allgatherv]]
bytes = [0, "1KiB"]
algorithm = "native"
T
SIZES="8 64 1024 4096 32768 262144 1048576 4194304"
fails=0; checked=0
# p = 1..5 with the table alone; then p = 3 again with environment overrides, which
# pcoll-sim reads too: a forced algorithm that cannot serve non-commutative calls (fallback
# to the model, with a warning), `model` forced over a table rule, a forced native; and p = 4
# and 5 with every rank a node of its own (PCOLL_NODES=1; pcoll-sim --nodes p); and p = 3
# with the reduces at root 1 (a rule reads the root from 64 KiB; pcoll-sim --root 1). Over nodes
# the MPICH-ABI MPIs stop at 1 MiB: their 4 ranks and more busy-poll the 2 cores, and the
# 4 MiB calls took 17 of the 22 s of MPICH 5's p = 5 run (Open MPI's runs keep 4 MiB).
ALL_SIZES=$SIZES
for run in 1 2 3 4 5 env3 nodes4 nodes5 root3; do
  p=${run#env}; p=${p#nodes}; p=${p#root}
  ENVV=(); SIMV=()
  SIZES=$ALL_SIZES
  [ "${run#nodes}" != "$run" ] && [ "$MPI_ABI" = mpich ] && SIZES=${ALL_SIZES% 4194304}
  [ "$run" = env3 ] && ENVV=(PCOLL_REDUCE=greedy PCOLL_ALLREDUCE=model PCOLL_ALLGATHERV=native PCOLL_FALLBACK=silent)
  [ "${run#nodes}" != "$run" ] && ENVV=(PCOLL_NODES=1) && SIMV=(--nodes $p)
  [ "${run#root}" != "$run" ] && ENVV=(CHOOSE_ROOT=1) && SIMV=(--root 1)
  # More ranks than this machine's cores: the library finds its node crowded at MPI_Init.
  [ "$p" -gt "$(nproc)" ] && SIMV+=(--crowded)
  mpi_np $p
  # PCOLL_SHM_AFTER=1: the decisions of a communicator whose window is made, which pcoll-sim
  # shows (without it the first calls asking for `shm` run without it: verify/window.c).
  mpi_env_args LD_PRELOAD="$LIB" PCOLL_TUNING="$TABLE" PCOLL_SHM_AFTER=1 "${ENVV[@]}"
  got=$(timeout -k 5 200 "$MPIRUN" "${MPI_NP_ARGS[@]}" "${MPI_ENV_ARGS[@]}" "$BIN" $SIZES </dev/null 2>&1)
  rc=$?
  if [ $rc != 0 ]; then
    echo "$got" | tail -5; echo "choose: FAIL ($run: exit $rc)"; exit 1
  fi
  want=$(for op in commutative noncommutative; do
    env "${ENVV[@]}" "$SIM" choose --table "$TABLE" --mpi "$MPI" --p $p "${SIMV[@]}" --bytes "$(echo $SIZES | tr ' ' ,)" --op $op --format json
  done)
  res=$(python3 - "$p" <<PY
import json, sys
want = {}
for line in """$want""".splitlines():
    o = json.loads(line)
    want[(o["collective"], o["bytes"], o["op"])] = (o["algorithm"], o["source"])
bad = n = 0
for line in """$got""".splitlines():
    f = line.split()
    if len(f) != 5 or f[0] not in ("reduce", "allreduce", "reduce_scatter", "allgatherv"):
        continue
    coll, _, b, op, alg = f
    n += 1
    w = want.get((coll, int(b), op))
    if w is None or w[0] != alg:
        bad += 1
        print(f"  p=$p {coll} {b} B {op}: library {alg}, pcoll-sim {w}", file=sys.stderr)
print(n, bad)
PY

)
  set -- $res
  checked=$((checked + $1)); fails=$((fails + $2))
  # 8 a size (4 collectives, 2 kinds of op), some of which the program skips: at least 6.
  min=$(($(wc -w <<<"$SIZES") * 6))
  [ "$1" -ge $min ] || { echo "choose: FAIL (p=$p: only $1 decisions read, $min expected)"; echo "$got" | tail -3; exit 1; }
done
if [ $fails = 0 ]; then
  echo "choose: PASS ($checked decisions at p = 1..5, with environment overrides, over nodes and at root 1 equal pcoll-sim choose)"
  exit 0
fi
echo "choose: FAIL ($fails of $checked decisions differ from pcoll-sim choose)"
exit 1
