#!/usr/bin/env bash
# run-tests.sh -- build and run the pcoll c-tests under one MPI.
#
# usage: c-tests/run-tests.sh <openmpi|mpich|openmpi5|mpich5|impi> <path/to/libpcoll.so | native> [--quick]
#
#   native       every program runs on the MPI's own collectives (the baseline: all
#                programs must pass there).
#   libpcoll.so  every program runs with LD_PRELOAD=<lib> PCOLL_STATS=1 and, one run per
#                algorithm, PCOLL_<COLL>=<algorithm> forced; rank 0's stats line
#                `pcoll: stats <coll> <alg> calls=<n> bytes=<n> time_us=<t>` must show that
#                the forced algorithm served the calls (where an algorithm cannot serve a
#                call -- a non-commutative op with a non-order-preserving algorithm, derived
#                datatypes -- any stats line of that collective is accepted). errors.c runs
#                natively and with the library; the ERRCLASS lines must be identical.
#   --quick      smaller matrix (`make test`): programs get their `quick` case list;
#                Debian's MPICH and the registry's three MPIs (openmpi5, mpich5, impi) run
#                each algorithm of the one-collective programs at one p instead of two (make
#                test's 30 minutes).
#
# Process counts: native: every program at 1 2 3 4 5 7 8 (quick: Open MPI 1..5, MPICH
# 1..4). With a library: reduce/allreduce/reduce_scatter/allgatherv.c run every algorithm
# at every p (quick: two p each, rotating over 3 5 2 8 4 7 (Open MPI) / 3 4 2 (MPICH 5, Intel
# MPI; one p each) / 3 2 (Debian's MPICH; one p each), plus
# p = 1 once); the multi-collective programs and the Fortran tests run each algorithm at
# three p (quick: one), rotating. MPICH busy-polls when oversubscribed, so its programs
# get their `quick` case list above p = 4 in the full matrix too.
# Programs built with the MPI's own wrappers into build/<mpi>/c-tests/, logs in
# build/<mpi>/c-tests/logs/. Every run has a timeout. The last line is
# `N passed, M failed`; the exit status is non-zero if anything failed.
#
# Known native defects (Debian MPICH 4.0.2), avoided with the programs' argument
# `avoid-native-defects` whenever the native MPICH collective may serve the call (library
# 'native', algorithm 'native', or an algorithm that may fall back to native):
#   - MPI_Reduce with MPI_IN_PLACE at root != 0 over 2048 bytes segfaults (predefined and
#     commutative user ops);
#   - MPI_Allgatherv on a 1-process communicator ignores displs[0];
#   - MPI_Reduce_scatter with a non-commutative op on a non-contiguous type at p = 2, 4
#     returns wrong blocks / corrupts the heap.
# With a forced pcoll algorithm these cases ARE run (pcoll must get them right).

set -u

usage() {
    echo "usage: $0 <openmpi|mpich|openmpi5|mpich5|impi> <libpcoll.so path|native> [--quick]" >&2
    exit 2
}
[ $# -ge 2 ] || usage
MPI=$1
LIB=$2
QUICK=0
[ "${3:-}" = "--quick" ] && QUICK=1
[ $# -le 3 ] || usage
[ $# -eq 3 ] && [ $QUICK -eq 0 ] && usage

# shellcheck source=../scripts/mpi.sh
source "$(dirname "$0")/../scripts/mpi.sh"
mpi_known "$MPI" || usage
mpi_setup "$MPI" || exit 2
CC=$MPICC FC=$MPIFC
if [ "$LIB" != native ]; then
    [ -f "$LIB" ] || { echo "$0: library '$LIB' not found" >&2; exit 2; }
    LIB=$(cd "$(dirname "$LIB")" && pwd)/$(basename "$LIB")
fi

ROOT=$(cd "$(dirname "$0")/.." && pwd)
SRC=$ROOT/c-tests
OUT=$ROOT/build/$MPI/c-tests
LOGS=$OUT/logs
mkdir -p "$LOGS"
rm -f "$LOGS"/*.out "$LOGS"/*.err
TIMEOUT=${PCOLL_TEST_TIMEOUT:-120}

PASSED=0
FAILED=0
FAILED_LIST=()
T_START=$(date +%s)

# ---------------------------------------------------------------- algorithm tables
ALGS_reduce="native binomial pipeline greedy greedy_uni circulant butterfly shm binary fibonacci"
ALGS_allreduce="native binomial greedy circulant butterfly ring shm binary fibonacci"
ALGS_reduce_scatter="native binomial circulant butterfly ring shm"
ALGS_allgatherv="native binomial circulant butterfly ring shm"
ALGS_bcast="native binomial pipeline scatter_allgather circulant shm binary fibonacci"
ALGS_allgather="native binomial circulant butterfly ring shm"
ALGS_reduce_scatter_block="native binomial circulant butterfly ring shm"
ALL_ALGS="native binomial pipeline greedy greedy_uni circulant butterfly ring scatter_allgather shm binary fibonacci"
ORDER_PRESERVING="native binomial pipeline butterfly shm binary fibonacci" # for the reducing collectives

has_alg() { # has_alg <coll> <alg>
    local list
    eval "list=\$ALGS_$1"
    [[ " $list " == *" $2 "* ]]
}
order_preserving() { [[ " $ORDER_PRESERVING " == *" $1 "* ]]; }
env_var() { # PCOLL_<COLL>
    echo "PCOLL_$(echo "$1" | tr '[:lower:]' '[:upper:]')"
}

# Process counts per algorithm of the one-collective programs in the quick matrix.
QUICK_NP=2
case $MPI in mpich | openmpi5 | mpich5 | impi) QUICK_NP=1 ;; esac
if [ $QUICK -eq 1 ]; then
    if [ "$MPI" = mpich ]; then
        # Debian's MPICH busy-polls: its 4 ranks on the 2 cores cost 1.1 s a run (58 s of
        # the 147 of this step in make test, session 33), 3 ranks 0.7 s, where p = 2 costs
        # 0.1; each algorithm runs at one p of 3, 2 by turns. p = 4 runs in its full matrix,
        # and in the quick matrices of Open MPI, MPICH 5 and Intel MPI.
        P_NATIVE="1 2 3 4"
        P_ROT=(3 2)
    elif [ "$MPI_ABI" = mpich ]; then
        P_NATIVE="1 2 3 4"
        P_ROT=(3 4 2) # each algorithm gets two consecutive entries (round robin)
    else
        P_NATIVE="1 2 3 4 5"
        P_ROT=(3 5 2 8 4 7)
    fi
else
    P_NATIVE="1 2 3 4 5 7 8"
    P_ROT=()
fi
P_FULL="1 2 3 4 5 7 8"

# p_for <i> <k>: k process counts for the i-th algorithm of a list, rotating over the
# list (quick: P_ROT, full: P_FULL) so that the algorithms together cover all of them
p_for() {
    local i=$1 k=$2 list
    if [ $QUICK -eq 1 ]; then list=("${P_ROT[@]}"); else read -r -a list <<<"$P_FULL"; fi
    local n=${#list[@]}
    if [ "$k" -ge "$n" ]; then
        echo "${list[*]}"
        return
    fi
    local out="" j
    for ((j = 0; j < k; j++)); do out="$out ${list[$(((i * k + j) % n))]}"; done
    echo $out
}

# program arguments for a run at p (avoid: 1 to avoid native MPICH defects)
prog_args() {
    local p=$1 avoid=$2 args=""
    if [ $QUICK -eq 1 ] || { [ "$MPI_ABI" = mpich ] && [ "$p" -gt 4 ]; }; then args="quick"; fi
    if [ "$avoid" = 1 ] && [ "$MPI_ABI" = mpich ]; then args="$args avoid-native-defects"; fi
    echo $args
}

# ---------------------------------------------------------------- build
C_PROGS="reduce allreduce reduce_scatter allgatherv family noncommutative derived typemaps pending isolation errors example"
F_NB_PROGS="fortran_nb fortran_nb_f08"
F_PROGS="fortran_mpif fortran_usempi fortran_f08 $F_NB_PROGS"
BUILT=""

record() { # record <ok 0/1> <label> [details...]
    local ok=$1 label=$2
    shift 2
    if [ "$ok" = 1 ]; then
        PASSED=$((PASSED + 1))
    else
        FAILED=$((FAILED + 1))
        FAILED_LIST+=("$label")
        echo "FAIL  $label"
        local d
        for d in "$@"; do printf '%s\n' "$d" | sed 's/^/      /'; done
    fi
}

echo "== building c-tests for $MPI into ${OUT#$ROOT/}"
T_BUILD=$(date +%s)
# up to date: binary newer than its source, common.h and this script
fresh() { [ "$1" -nt "$2" ] && [ "$1" -nt "$SRC/common.h" ] && [ "$1" -nt "$SRC/run-tests.sh" ]; }
# compile <prog>: writes $LOGS/build-<prog>.rc (run in the background, all at once)
compile() {
    local prog=$1 rc=0
    if [ -f "$SRC/$prog.c" ]; then
        fresh "$OUT/$prog" "$SRC/$prog.c" ||
            $CC -std=c99 -O2 -Wall -Wextra -o "$OUT/$prog" "$SRC/$prog.c" -lm >"$LOGS/build-$prog.err" 2>&1 || rc=$?
    elif [[ $prog == fortran_nb* ]]; then
        # one source, preprocessed: `use mpi`, or `use mpi_f08` with -DF08 (its own module dir:
        # both compile at once)
        local d=$OUT/mod-$prog f08=""
        [ $prog = fortran_nb_f08 ] && f08="-DF08"
        mkdir -p "$d"
        fresh "$OUT/$prog" "$SRC/fortran_nb.F90" ||
            (cd "$d" && $FC -O1 $f08 -o "$OUT/$prog" "$SRC/fortran_nb.F90") >"$LOGS/build-$prog.err" 2>&1 || rc=$?
    else
        local extra=""
        # mpif.h has no interfaces: gfortran >= 10 rejects the mixed buffer types without this
        [ $prog = fortran_mpif ] && extra="-fallow-argument-mismatch"
        fresh "$OUT/$prog" "$SRC/$prog.f90" ||
            (cd "$OUT" && $FC -O1 $extra -o "$OUT/$prog" "$SRC/$prog.f90") >"$LOGS/build-$prog.err" 2>&1 || rc=$?
    fi
    echo $rc >"$LOGS/build-$prog.rc"
}
if [ -z "$FC" ]; then
    echo "NOTE  $MPI ships no Fortran compiler wrapper: the Fortran programs are skipped"
    F_PROGS=""
fi
for prog in $C_PROGS $F_PROGS; do
    rm -f "$LOGS/build-$prog.rc" "$LOGS/build-$prog.err"
    compile $prog &
done
wait
for prog in $C_PROGS $F_PROGS; do
    if [ "$(cat "$LOGS/build-$prog.rc" 2>/dev/null)" = 0 ]; then
        BUILT="$BUILT $prog"
    elif [[ $prog == *_f08 ]] && grep -qi "mpi_f08" "$LOGS/build-$prog.err"; then
        echo "NOTE  use mpi_f08 is not available for $MPI: $prog skipped"
    elif [ $prog != fortran_mpif ] && grep -q "Reading module.*mpi.*mod" "$LOGS/build-$prog.err"; then
        echo "NOTE  $MPI's Fortran modules are not readable by this gfortran ($(gfortran -dumpversion)): $prog skipped"
    else
        record 0 "build $prog" "$(head -5 "$LOGS/build-$prog.err")"
    fi
done
rm -rf "$OUT"/*.mod "$OUT"/mod-*
echo "   built in $(($(date +%s) - T_BUILD)) s"
built() { [[ " $BUILT " == *" $1 "* ]]; }

# ---------------------------------------------------------------- running
RUN_RC=0
RUN_LOG=""
RUN_CMD=""
# run <logname> <p> <prog> <args> [VAR=value ...]
run() {
    local name=$1 p=$2 prog=$3 args=$4
    shift 4
    local cmd=(timeout -k 10 "$TIMEOUT")
    mpi_np "$p"
    mpi_env_args "$@"
    cmd+=("$MPIRUN" "${MPI_NP_ARGS[@]}" "${MPI_ENV_ARGS[@]}")
    # shellcheck disable=SC2206
    cmd+=("$OUT/$prog" $args)
    RUN_LOG=$LOGS/$name
    RUN_CMD="${cmd[*]}"
    "${cmd[@]}" </dev/null >"$RUN_LOG.out" 2>"$RUN_LOG.err"
    RUN_RC=$?
}

# details of a failed run: command, FAIL lines, stderr tail
fail_details() {
    echo "cmd: $RUN_CMD"
    [ "$RUN_RC" = 124 ] && echo "timed out after ${TIMEOUT}s"
    grep -E "^(FAIL|FAILED)" "$RUN_LOG.out" | head -6
    if ! grep -qE "^FAIL" "$RUN_LOG.out"; then
        tail -4 "$RUN_LOG.err" | sed 's/^/stderr: /'
    fi
    echo "log: ${RUN_LOG#$ROOT/}.{out,err}"
}

# program passed: exit 0, "PASS <prog>" line, no FAIL line
run_ok() {
    local prog=$1
    [ "$RUN_RC" = 0 ] && grep -qE "^PASS $prog " "$RUN_LOG.out" && ! grep -qE "^FAIL" "$RUN_LOG.out"
}

# stats_ok <coll> <alg> <allow_fallback>: rank 0 printed the stats line of the forced
# algorithm (or, with fallback allowed, of any algorithm) for <coll>
STATS_MSG=""
stats_ok() {
    local coll=$1 alg=$2 fb=$3
    # A forced `native` call of a shape a native defect crashes on (src/decide/defects.rs, e.g.
    # MPICH's allgatherv at p = 1) is served by pcoll's model pick: any line of the collective
    # counts, and the ok line names the algorithm that served.
    [ "$alg" = native ] && fb=1
    local re_num='calls=[1-9][0-9]* bytes=[0-9]+( time_us=[0-9.eE+-]+)?'
    if grep -qE "pcoll: stats $coll $alg $re_num" "$RUN_LOG.err"; then
        return 0
    fi
    if [ "$fb" = 1 ] && grep -qE "pcoll: stats $coll [a-z_]+ $re_num" "$RUN_LOG.err"; then
        STATS_MSG="$STATS_MSG [$coll: fallback to $(grep -oE "pcoll: stats $coll [a-z_]+" "$RUN_LOG.err" | awk '{print $4}' | sort -u | tr '\n' ' ' | sed 's/ $//')]"
        return 0
    fi
    STATS_MSG="$STATS_MSG [no 'pcoll: stats $coll $alg calls=..' line on stderr]"
    return 1
}

# one test run with verdict. check_run <label> <p> <prog> <avoid> <stats-spec> [VAR=value..]
# stats-spec: space-separated coll:alg:fallback entries ("" = no stats check)
check_run() {
    local label=$1 p=$2 prog=$3 avoid=$4 spec=$5
    shift 5
    built "$prog" || return 0
    local args t0 t1
    args=$(prog_args "$p" "$avoid")
    t0=$(date +%s.%N)
    run "$(echo "$label" | tr -c 'A-Za-z0-9_.=-' '_')" "$p" "$prog" "$args" "$@"
    t1=$(date +%s.%N)
    local secs
    secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
    local ok=1
    STATS_MSG=""
    run_ok "$prog" || ok=0
    if [ $ok = 1 ] && [ -n "$spec" ]; then
        local e
        for e in $spec; do
            IFS=: read -r c a f <<<"$e"
            stats_ok "$c" "$a" "$f" || ok=0
        done
    fi
    if [ $ok = 1 ]; then
        local note
        note=$(grep -E "^NOTE" "$RUN_LOG.out" | head -1 | sed 's/^NOTE [a-z_0-9]* //')
        printf "ok    %-60s %5ss%s%s\n" "$label" "$secs" "${STATS_MSG:+ $STATS_MSG}" "${note:+ ($note)}"
        record 1 "$label"
    else
        record 0 "$label ($secs s)" "$(fail_details)" ${STATS_MSG:+"stats:$STATS_MSG"}
    fi
}

PRE=()
[ "$LIB" != native ] && PRE=("LD_PRELOAD=$LIB" "PCOLL_STATS=1")

echo "== running ($([ $QUICK = 1 ] && echo quick || echo full) matrix, library: $LIB)"

if [ "$LIB" = native ]; then
    for prog in $C_PROGS $F_PROGS; do
        for p in $P_NATIVE; do
            [ $prog = example ] && [ "$p" -gt 4 ] && continue
            check_run "$prog p=$p native" "$p" "$prog" 1 ""
        done
    done
else
    # -- one collective per program, every algorithm of it
    for coll in reduce allreduce reduce_scatter allgatherv; do
        i=0
        eval "algs=\$ALGS_$coll"
        for alg in $algs; do
            ps=$(p_for $i $([ $QUICK = 1 ] && echo $QUICK_NP || echo 99))
            # p = 1 once per collective in quick mode
            [ $QUICK = 1 ] && [ $i = 1 ] && ps="1 $ps"
            avoid=0
            [ $alg = native ] && avoid=1
            for p in $ps; do
                check_run "$coll p=$p $(env_var $coll)=$alg" "$p" "$coll" "$avoid" "$coll:$alg:0" \
                    "${PRE[@]}" "$(env_var $coll)=$alg"
            done
            i=$((i + 1))
        done
    done

    # -- family.c (issue 15): bcast, allgather, reduce_scatter_block; one of them forced per run
    for coll in bcast allgather reduce_scatter_block; do
        i=0
        eval "algs=\$ALGS_$coll"
        for alg in $algs; do
            ps=$(p_for $i $([ $QUICK = 1 ] && echo $QUICK_NP || echo 99))
            [ $QUICK = 1 ] && [ $i = 1 ] && ps="1 $ps"
            avoid=0
            [ $alg = native ] && avoid=1
            for p in $ps; do
                check_run "family p=$p $(env_var $coll)=$alg" "$p" family "$avoid" "$coll:$alg:0" \
                    "${PRE[@]}" "$(env_var $coll)=$alg"
            done
            i=$((i + 1))
        done
    done

    # -- programs using several collectives: force one algorithm name everywhere it exists
    # multi_run <prog> <colls> <fallback rule: strict|noncomm|any|nb> <algs> [stats prefix]
    # (each algorithm at one process count (quick) or three (full), rotating; nb: the
    # non-blocking forms, whose stats lines are i<coll> and which run shm's fallback but for
    # reduce and allreduce)
    multi_run() {
        local prog=$1 colls=$2 rule=$3 algs=$4 pre=${5:-} np=3
        [ $QUICK = 1 ] && np=1
        local i=0 alg
        for alg in $algs; do
            local envs=() spec="" avoid=0 c
            [ $alg = native ] && avoid=1
            for c in $colls; do
                has_alg "$c" "$alg" || continue
                envs+=("$(env_var $c)=$alg")
                local fb=0
                case $rule in
                any) fb=1 ;;
                noncomm) order_preserving "$alg" || fb=1 ;;
                nb) [ "$alg" = shm ] && [ "$c" != reduce ] && [ "$c" != allreduce ] && fb=1 ;;
                esac
                [ $fb = 1 ] && avoid=1 # the fallback may be native MPICH
                spec="$spec $pre$c:$alg:$fb"
            done
            [ ${#envs[@]} -eq 0 ] && continue
            local ps
            ps=$(p_for $i "$np")
            local p
            for p in $ps; do
                check_run "$prog p=$p $(echo "${envs[*]}" | tr ' ' ',')" "$p" "$prog" "$avoid" "$spec" \
                    "${PRE[@]}" "${envs[@]}"
            done
            i=$((i + 1))
        done
    }
    multi_run noncommutative "reduce allreduce reduce_scatter" noncomm "$ALL_ALGS"
    multi_run derived "reduce allreduce reduce_scatter allgatherv" any "$ALL_ALGS"
    multi_run typemaps "bcast allgather allgatherv" any "$ALL_ALGS"
    multi_run isolation "reduce allreduce reduce_scatter allgatherv" strict "$ALL_ALGS"
    multi_run pending "reduce allreduce bcast allgather allgatherv" nb "binomial ring shm butterfly" i
    for prog in ${F_PROGS% $F_NB_PROGS}; do
        if [ $QUICK = 1 ]; then
            case $prog in
            fortran_mpif) falgs="binomial ring binary" ;;
            fortran_usempi) falgs="circulant pipeline fibonacci" ;;
            *) falgs="butterfly greedy binary fibonacci" ;;
            esac
        else
            falgs=$ALL_ALGS
        fi
        multi_run $prog "reduce allreduce reduce_scatter allgatherv" strict "$falgs"
    done
    # The non-blocking collectives and completion calls from Fortran (issue 27)
    for prog in $F_NB_PROGS; do
        if [ $QUICK = 1 ]; then
            case $prog in
            fortran_nb) falgs="binomial ring shm" ;;
            *) falgs="circulant butterfly native" ;;
            esac
        else
            falgs=$ALL_ALGS
        fi
        multi_run $prog "reduce allreduce reduce_scatter allgatherv bcast allgather reduce_scatter_block" \
            nb "$falgs" i
    done
    check_run "example p=2 (tuning table)" 2 example 0 "" "${PRE[@]}"
    if built example && ! grep -qE "pcoll: stats (reduce|allreduce) " "$RUN_LOG.err"; then
        record 0 "example p=2: no pcoll stats lines" "$(fail_details)"
    fi

    # -- errors: ERRCLASS lines with the library must equal the native ones
    if built errors; then
        if [ $QUICK = 1 ]; then eps="1 2 3"; else eps="1 2 3 4"; fi
        for p in $eps; do
            # shm: an erroneous call must fail on every rank alike, not on one slice owner.
            for forced in "" binomial shm; do
                envs=()
                if [ -n "$forced" ]; then
                    for c in reduce allreduce reduce_scatter allgatherv allgather bcast; do envs+=("$(env_var $c)=$forced"); done
                fi
                label="errors p=$p ERRCLASS native vs pcoll${forced:+ (all forced to $forced)}"
                run "errors_native_p$p" "$p" errors ""
                nat_ok=1
                run_ok errors || nat_ok=0
                grep "^ERRCLASS" "$RUN_LOG.out" | sort >"$LOGS/errclass-native-p$p.txt"
                nat_details=$(fail_details)
                run "errors_pcoll_p$p${forced:+_$forced}" "$p" errors "" "${PRE[@]}" "${envs[@]}"
                lib_ok=1
                run_ok errors || lib_ok=0
                grep "^ERRCLASS" "$RUN_LOG.out" | sort >"$LOGS/errclass-pcoll-p$p${forced:+_$forced}.txt"
                if [ $nat_ok = 0 ] && grep -q "Assertion failed in file" "$LOGS/errors_native_p$p.err"; then
                    # The MPI itself aborts on one of the erroneous calls (MPICH 5.0.2 asserts in
                    # MPI_Reduce with MPI_DATATYPE_NULL): the classes native returned before it
                    # must be pcoll's too.
                    at=$(grep -m1 "Assertion failed in file" "$LOGS/errors_native_p$p.err")
                    if d=$(comm -23 "$LOGS/errclass-native-p$p.txt" "$LOGS/errclass-pcoll-p$p${forced:+_$forced}.txt") && [ -z "$d" ]; then
                        echo "NOTE  $label: native $MPI aborts after $(wc -l <"$LOGS/errclass-native-p$p.txt") cases ($at); those match"
                        record 1 "$label"
                    else
                        record 0 "$label: error classes differ before native aborts (< native only)" "$d"
                    fi
                elif [ $nat_ok = 0 ]; then
                    record 0 "$label: native run failed" "$nat_details"
                elif [ $lib_ok = 0 ]; then
                    record 0 "$label: run with pcoll failed" "$(fail_details)"
                elif ! d=$(diff "$LOGS/errclass-native-p$p.txt" "$LOGS/errclass-pcoll-p$p${forced:+_$forced}.txt"); then
                    record 0 "$label: error classes differ (< native, > pcoll)" "$d"
                else
                    printf "ok    %-60s %s\n" "$label" "($(wc -l <"$LOGS/errclass-native-p$p.txt") cases)"
                    record 1 "$label"
                fi
            done
        done
    fi
fi

T_END=$(date +%s)
echo "== $MPI, library $LIB, $([ $QUICK = 1 ] && echo quick || echo full) matrix: $((T_END - T_START)) s"
if [ $FAILED -gt 0 ]; then
    echo "failed runs:"
    for f in "${FAILED_LIST[@]}"; do echo "  $f"; done
fi
echo "$PASSED passed, $FAILED failed"
[ $FAILED -eq 0 ]
