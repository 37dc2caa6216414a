#!/usr/bin/env bash
# Bad input: pcoll must report exactly what the native MPI reports (issue 7).
#
#   verify/badinput.sh [<openmpi|mpich> <libpcoll.so>]... [--no-tuning|--only-tuning]
#   (default: openmpi build/openmpi/libpcoll.so mpich build/mpich/libpcoll.so)
#
# Part 1: every case of verify/badinput.c runs in its own launcher at p = 2, natively and with
# LD_PRELOAD=libpcoll.so; a markdown table per MPI shows case | native class | pcoll class.
# Classes are per rank ("A/B" when the ranks differ); CRASH = a rank died without reporting,
# HANG = timeout. Verdicts (see verdict()): yes, better (native crashes or hangs, pcoll
# reports), stricter (native accepts an erroneous call that pcoll reports) pass; NO fails.
# Part 1b: the cases where only one rank passes a bad buffer, at p = 3 with every algorithm
# forced: all ranks must return (the erring one with an error class).
# Part 2: malformed tuning.toml files and bad PCOLL_* values: difftest (default algorithm
# choice, i.e. the table decides) must give correct results and pcoll must print a warning.
# Last line: "N passed, M failed".
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=$ROOT/build/verify
mkdir -p "$OUT/badinput"
TUNING=1
CASES=1
pairs=()
while [ $# -gt 0 ]; do
  case $1 in
    --no-tuning) TUNING=0; shift ;;
    --only-tuning) CASES=0; shift ;;
    openmpi|mpich) [ $# -ge 2 ] || { echo "usage: $0 [<openmpi|mpich> <libpcoll.so>]... [--no-tuning]" >&2; exit 2; }
      pairs+=("$1" "$(readlink -f "$2")"); shift 2 ;;
    *) echo "usage: $0 [<openmpi|mpich> <libpcoll.so>]... [--no-tuning]" >&2; exit 2 ;;
  esac
done
[ ${#pairs[@]} = 0 ] && pairs=(openmpi "$ROOT/build/openmpi/libpcoll.so" mpich "$ROOT/build/mpich/libpcoll.so")

passed=0
failed=0
TMO=10

# launch MPI NP LIB(or "") cmd... -> stdout+stderr of the run in $RUNLOG, exit code returned
launch() {
  local mpi=$1 np=$2 lib=$3
  shift 3
  local env=()
  if [ $mpi = openmpi ]; then
    [ -n "$lib" ] && env=(-x LD_PRELOAD="$lib")
    timeout -k 5 $TMO mpirun.openmpi --allow-run-as-root --oversubscribe -np "$np" "${env[@]}" "${EXTRA_ENV_OMPI[@]}" "$@" </dev/null >"$RUNLOG" 2>&1
  else
    [ -n "$lib" ] && env=(-genv LD_PRELOAD "$lib")
    timeout -k 5 $TMO mpiexec.mpich -n "$np" "${env[@]}" "${EXTRA_ENV_MPICH[@]}" "$@" </dev/null >"$RUNLOG" 2>&1
  fi
}
EXTRA_ENV_OMPI=()
EXTRA_ENV_MPICH=()
ONE_RANK_CASES=(reduce_null_recvbuf_root_big allreduce_null_sendbuf_one_big rs_null_recvbuf_one_big
                rs_inplace_null_recvbuf_one_big agv_null_recvbuf_one_big reduce_inplace_nonroot)

# The error class(es) one run reported: one class if all ranks agree, else per rank joined by '/'.
classes() {
  local case=$1 rc=$2 np=$3 out="" r c all_same=1 first=""
  for ((r = 0; r < np; r++)); do
    # Not anchored: stdout and stderr share the log, so another rank's stderr line may
    # precede ours on the same line.
    c=$(grep -aoE "BADINPUT $case rank=$r [A-Za-z0-9_-]+" "$RUNLOG" | head -1 | awk '{print $4}')
    if [ -z "$c" ]; then
      if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then c=HANG; else c=CRASH; fi
    fi
    [ -z "$first" ] && first=$c
    [ "$c" != "$first" ] && all_same=0
    out="$out${out:+/}$c"
  done
  if [ $all_same = 1 ]; then echo "$first"; else echo "$out"; fi
}

# verdict NATIVE PCOLL NP: compare per rank (a single class means: the same on all ranks).
#   yes      same class on every rank
#   better   native crashed or hung on some rank; pcoll did neither and reported a class
#   stricter native accepted the (erroneous) call on a rank where pcoll reports an error
#            class, and elsewhere they agree (e.g. Open MPI returns MPI_SUCCESS for a NULL
#            receive buffer at the root; pcoll and MPICH return MPI_ERR_BUFFER)
#   NO       anything else: pcoll crashed or hung, or reported another class than native
verdict() {
  local n=$1 c=$2 np=$3 r nr cr better=0 stricter=0
  [ "$n" = "$c" ] && { echo yes; return; }
  case "/$c/" in */CRASH/*|*/HANG/*) echo "**NO**"; return ;; esac
  for ((r = 0; r < np; r++)); do
    nr=$(rank_class "$n" $r); cr=$(rank_class "$c" $r)
    [ "$nr" = "$cr" ] && continue
    case $nr in
      CRASH|HANG) better=1 ;;
      MPI_SUCCESS) stricter=1 ;;
      *) echo "**NO**"; return ;;
    esac
  done
  if [ $better = 1 ]; then echo "better (native crashes/hangs)"; else echo "stricter"; fi
}
rank_class() { # rank_class "A/B/C" r -> the class of rank r ("A" alone: every rank)
  local IFS=/ parts
  read -r -a parts <<<"$1"
  if [ ${#parts[@]} = 1 ]; then echo "${parts[0]}"; else echo "${parts[$2]}"; fi
}

set -- "${pairs[@]}"
while [ $# -ge 2 ]; do
  MPI=$1 LIB=$2
  shift 2
  BIN=$OUT/badinput-$MPI
  mpicc.$MPI -O1 -g -Wall -o "$BIN" "$ROOT/verify/badinput.c" || { failed=$((failed + 1)); continue; }
  [ -f "$LIB" ] || { echo "no library $LIB"; failed=$((failed + 1)); continue; }
  if [ $CASES = 1 ]; then
  echo
  echo "### Bad input, $MPI, p = 2"
  echo
  echo "| case | native class | pcoll class | verdict |"
  echo "|------|--------------|-------------|------|"
  for case in $("$BIN" --list); do
    RUNLOG=$OUT/badinput/$MPI-$case-native.log
    launch $MPI 2 "" "$BIN" "$case"
    n=$(classes "$case" $? 2)
    RUNLOG=$OUT/badinput/$MPI-$case-pcoll.log
    launch $MPI 2 "$LIB" "$BIN" "$case"
    c=$(classes "$case" $? 2)
    same=$(verdict "$n" "$c" 2)
    if grep -q "panicked" "$RUNLOG"; then same="**NO** (pcoll panicked)"; fi
    case $same in yes*|better*|stricter*) passed=$((passed + 1)) ;; *) failed=$((failed + 1)) ;; esac
    echo "| $case | $n | $c | $same |"
  done
  fi

  if [ $CASES = 1 ]; then
  # One rank's bad buffer, the others' arguments valid, p = 3, each algorithm forced: every
  # rank must return (no hang), the erring rank with an error class, the others MPI_SUCCESS.
  echo
  echo "### One rank's bad buffer under each forced algorithm, $MPI, p = 3"
  echo
  echo "| algorithm | $(echo "${ONE_RANK_CASES[@]}" | sed 's/ / | /g') |"
  echo "|---$(printf '|---%.0s' "${ONE_RANK_CASES[@]}")|"
  for alg in binomial pipeline greedy greedy_uni circulant butterfly ring native; do
    row="| $alg |"
    for case in "${ONE_RANK_CASES[@]}"; do
      if [ $MPI = openmpi ]; then
        EXTRA_ENV_OMPI=(-x PCOLL_FALLBACK=silent)
        for v in PCOLL_REDUCE PCOLL_ALLREDUCE PCOLL_REDUCE_SCATTER PCOLL_ALLGATHERV; do EXTRA_ENV_OMPI+=(-x "$v=$alg"); done
      else
        EXTRA_ENV_MPICH=(-genv PCOLL_FALLBACK silent)
        for v in PCOLL_REDUCE PCOLL_ALLREDUCE PCOLL_REDUCE_SCATTER PCOLL_ALLGATHERV; do EXTRA_ENV_MPICH+=(-genv "$v" "$alg"); done
      fi
      RUNLOG=$OUT/badinput/$MPI-$case-$alg-p3.log
      launch $MPI 3 "$LIB" "$BIN" "$case"
      c=$(classes "$case" $? 3)
      EXTRA_ENV_OMPI=()
      EXTRA_ENV_MPICH=()
      nerr=$(echo "$c" | tr / '\n' | grep -c '^MPI_ERR_')
      nok=$(echo "$c" | tr / '\n' | grep -c '^MPI_SUCCESS$')
      if [ "$nerr" -ge 1 ] && [ $((nerr + nok)) = 3 ] && ! grep -q panicked "$RUNLOG"; then
        row="$row ok |"; passed=$((passed + 1))
      else
        row="$row **$c** |"; failed=$((failed + 1))
      fi
    done
    echo "$row"
  done
  fi

  [ $TUNING = 1 ] || continue
  # ---------------------------------------------------------------- part 2: tuning / env
  DT=$OUT/difftest-$MPI
  if [ ! -x "$DT" ] || [ "$ROOT/verify/difftest.c" -nt "$DT" ]; then
    mpicc.$MPI -O2 -g -Wall -o "$DT" "$ROOT/verify/difftest.c" -ldl -lm || { failed=$((failed + 1)); continue; }
  fi
  TD=$OUT/badinput/tuning
  mkdir -p "$TD"
  printf '[[allreduce]]\nbytes = [0, "64KiB"\nalgorithm = "ring"\n' >"$TD/syntax.toml"
  printf '[[allreduce]\nalgorithm = "ring"\n' >"$TD/syntax2.toml"
  printf '[[allreduce]]\nalgorithm = "quantum"\n' >"$TD/unknown-alg.toml"
  printf '[[allgatherv]]\nalgorithm = "pipeline"\n[[reduce]]\nalgorithm = "ring"\n' >"$TD/alg-not-for-coll.toml"
  printf '[[reduce]]\nbytes = [65536, 1024]\nalgorithm = "binomial"\n[[allreduce]]\np = [8, 2]\nalgorithm = "ring"\n' >"$TD/inverted.toml"
  printf '[[reduce]]\nbytes = [0, 99999999999999999999999999]\nalgorithm = "binomial"\n[[allreduce]]\np = [1, 1e300]\nsegment = 18446744073709551617\nalgorithm = "ring"\n' >"$TD/huge.toml"
  printf '[[reduce]]\nbytes = [-5, 10]\nalgorithm = "binomial"\n[[allreduce]]\nsegment = 0\nalgorithm = "ring"\n' >"$TD/negative.toml"
  printf '[[reduce]]\nalgoritm = "ring"\n[turbo]\nx = 1\n' >"$TD/unknown-key.toml"
  printf '[[reduce]]\nalgorithm = 5\nbytes = "lots"\n' >"$TD/wrong-type.toml"
  printf '[model]\nalpha = -1.0\nbeta = nan\ngamma = inf\n' >"$TD/bad-model.toml"
  head -c 3000 /dev/urandom >"$TD/binary.toml"
  : >"$TD/empty.toml"
  echo
  echo "### Malformed tuning files and bad PCOLL_* values, $MPI (difftest, default algorithm choice)"
  echo
  echo "| input | exit | cases/mismatches | pcoll warning | verdict |"
  echo "|-------|------|------------------|---------------|---------|"
  if [ $MPI = openmpi ]; then NP=3; else NP=2; fi
  inputs=(syntax syntax2 unknown-alg alg-not-for-coll inverted huge negative unknown-key wrong-type bad-model binary empty
          missing-file directory env-alg env-segment env-fallback)
  for t in "${inputs[@]}"; do
    var=PCOLL_TUNING val=""
    case $t in
      missing-file) val=$TD/does-not-exist.toml ;;
      directory) val=$TD ;;
      env-alg) var=PCOLL_ALLREDUCE val=quantum ;;
      env-segment) var=PCOLL_SEGMENT val=-12x ;;
      env-fallback) var=PCOLL_FALLBACK val=sometimes ;;
      *) val=$TD/$t.toml ;;
    esac
    if [ $MPI = openmpi ]; then EXTRA_ENV_OMPI=(-x "$var=$val"); else EXTRA_ENV_MPICH=(-genv "$var" "$val"); fi
    RUNLOG=$OUT/badinput/$MPI-tuning-$t.log
    launch $MPI $NP "$LIB" "$DT" --seed 7 --cases 150 --max-count 20000 --alg none
    rc=$?
    EXTRA_ENV_OMPI=()
    EXTRA_ENV_MPICH=()
    sum=$(grep -E '^difftest: [0-9]+ cases' "$RUNLOG" | tail -1 | sed -E 's/^difftest: ([0-9]+) cases, ([0-9]+) mismatches.*/\1\/\2/')
    # A warning that names the culprit: the file (its base name) or the variable.
    if [ $var = PCOLL_TUNING ]; then pat=$(basename "$val"); else pat=$var; fi
    warn=no
    grep -Fq -- "$pat" <<<"$(grep -Ei 'pcoll(\[[0-9]+\])?:? (warning|WARN)' "$RUNLOG")" && warn=yes
    verdict=ok
    [ -z "$sum" ] && verdict=CRASH
    [ -n "$sum" ] && [ "${sum#*/}" != 0 ] && verdict=WRONG-RESULTS
    [ $rc != 0 ] && [ $verdict = ok ] && verdict="exit $rc"
    grep -q panicked "$RUNLOG" && verdict="PANIC"
    if [ $t != empty ] && [ $warn = no ] && [ "$verdict" = ok ]; then verdict="NO WARNING"; fi
    if [ "$verdict" = ok ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
    echo "| $var=${val#$ROOT/} | $rc | ${sum:-none} | $warn | $verdict |"
  done
  echo
  echo "(pcoll warning = a 'pcoll: warning' or 'pcoll[r] WARN' line naming the file or variable;"
  echo " logs: $OUT/badinput/$MPI-tuning-*.log)"
done
echo
echo "$passed passed, $failed failed"
[ $failed = 0 ]
