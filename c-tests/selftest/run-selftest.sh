#!/usr/bin/env bash
# run-selftest.sh -- do the c-tests catch faults? (usage: run-selftest.sh <openmpi|mpich>)
#
# Builds selftest/fakepcoll.c (a PMPI passthrough with switchable faults, see there) and
# runs the programs that should notice each fault, once without the fault (must pass) and
# once with it (must FAIL). Prints `N passed, M failed` (a "pass" = the expected verdict).
set -u
MPI=${1:-}
case $MPI in
openmpi) CC=mpicc.openmpi ;;
mpich) CC=mpicc.mpich ;;
*) echo "usage: $0 <openmpi|mpich>" >&2; exit 2 ;;
esac
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
SRC=$ROOT/c-tests
OUT=$ROOT/build/$MPI/c-tests/selftest
mkdir -p "$OUT"
$CC -O2 -shared -fPIC -o "$OUT/libfakepcoll.so" "$SRC/selftest/fakepcoll.c" -lm || exit 1
for prog in reduce allreduce allgatherv noncommutative isolation errors; do
    $CC -std=c99 -O2 -o "$OUT/$prog" "$SRC/$prog.c" -lm || exit 1
done
LIB=$OUT/libfakepcoll.so
P=3
passed=0
failed=0

launch() { # launch <p> <out> <env...> -- <prog> <args...>
    local p=$1 out=$2
    shift 2
    local envs=()
    while [ "$1" != "--" ]; do envs+=("$1"); shift; done
    shift
    local cmd=(timeout -k 5 120)
    if [ "$MPI" = openmpi ]; then
        cmd+=(mpirun.openmpi --allow-run-as-root --oversubscribe -np "$p")
        for kv in "${envs[@]}"; do cmd+=(-x "$kv"); done
    else
        cmd+=(mpiexec.mpich -n "$p")
        for kv in "${envs[@]}"; do cmd+=(-genv "${kv%%=*}" "${kv#*=}"); done
    fi
    "${cmd[@]}" "$OUT/$1" "${@:2}" </dev/null >"$out" 2>"$out.err"
}

verdict() { # verdict <expect pass|fail> <label> <actual 0=pass>
    local expect=$1 label=$2 actual=$3
    if { [ "$expect" = pass ] && [ "$actual" = 0 ]; } || { [ "$expect" = fail ] && [ "$actual" != 0 ]; }; then
        passed=$((passed + 1))
        echo "ok    $label (expected $expect)"
    else
        failed=$((failed + 1))
        echo "WRONG $label: expected $expect"
    fi
}

check() { # check <fault|none> <prog>
    local f=$1 prog=$2 rc
    local envs=("LD_PRELOAD=$LIB" "PCOLL_STATS=1")
    [ "$f" != none ] && envs+=("PCOLL_FAKE_FAULT=$f")
    launch $P "$OUT/$prog.$f.out" "${envs[@]}" -- "$prog" quick avoid-native-defects
    rc=$?
    grep -q "^PASS $prog" "$OUT/$prog.$f.out" || rc=1
    [ "$f" = none ] && ! grep -q "pcoll: stats" "$OUT/$prog.$f.out.err" && rc=1
    [ "$f" != none ] && grep -m1 "^FAIL" "$OUT/$prog.$f.out" | cut -c1-150 | sed 's/^/      /'
    local expect=fail
    [ "$f" = none ] && expect=pass
    verdict $expect "$prog with fault=$f" $rc
}

for pair in none:reduce sendbuf:reduce none:allreduce bits:allreduce none:allgatherv overrun:allgatherv \
    gap:allgatherv none:noncommutative order:noncommutative none:isolation leak:isolation; do
    check "${pair%%:*}" "${pair#*:}"
done
# error classes: native vs fake library with and without the fault
launch $P "$OUT/errors.native.out" -- errors
for f in none errclass; do
    envs=("LD_PRELOAD=$LIB")
    [ "$f" != none ] && envs+=("PCOLL_FAKE_FAULT=$f")
    launch $P "$OUT/errors.$f.out" "${envs[@]}" -- errors
    diff <(grep ^ERRCLASS "$OUT/errors.native.out") <(grep ^ERRCLASS "$OUT/errors.$f.out") >/dev/null
    rc=$?
    verdict "$([ "$f" = none ] && echo pass || echo fail)" "errors ERRCLASS diff with fault=$f" $rc
done
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
