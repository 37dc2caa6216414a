#!/usr/bin/env bash
# make test's install check: verify/install.sh MPI [MPI ...]
# Installs (scripts/install.sh, from what make build-lib built) into a temporary prefix, then
# per MPI builds one C program through pkg-config and one through CMake's find_package(pcoll)
# against it, and runs each at p = 2 with PCOLL_STATS=1 under the installed library (linked,
# and once more an uninstrumented build of the program under LD_PRELOAD from pkg-config's
# `library`): rank 0's stats lines must show that pcoll served the program's MPI_Allreduce and
# MPI_Reduce, the results must be right and the program must have loaded the installed
# library. Also checks the man page, the header and pcoll-sim. ~10 s per MPI. Prints
# "install: N passed, M failed".
set -uo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: verify/install.sh MPI [MPI ...]" >&2; exit 2; }
source scripts/mpi.sh
command -v cmake >/dev/null || { echo "install: cmake not found (make deps installs it)" >&2; exit 1; }
command -v pkg-config >/dev/null || { echo "install: pkg-config not found (make deps installs it)" >&2; exit 1; }

work=$(mktemp -d /tmp/pcoll-install-test.XXXXXX)
trap '[ -n "${INSTALL_KEEP:-}" ] || rm -rf "$work"' EXIT
prefix=$work/prefix
pass=0
fail=0
ok() { echo "install: ok   $*"; pass=$((pass + 1)); }
bad() { echo "install: FAIL $*"; fail=$((fail + 1)); }

if ! DESTDIR= bash scripts/install.sh "$prefix" "$@" >"$work/install.log" 2>&1; then
  cat "$work/install.log"
  bad "scripts/install.sh $prefix $*"
  echo "install: $pass passed, $fail failed"
  exit 1
fi
ok "scripts/install.sh into a temporary prefix"

# The files every install has.
man_page=$prefix/share/man/man7/pcoll.7
if [ -s "$man_page" ] && grep -q '^\.SH ENVIRONMENT' "$man_page" && grep -q 'PCOLL_STATS' "$man_page" \
  && grep -q '^\.SH C API' "$man_page" && grep -q '^\.SH FILES' "$man_page"; then
  ok "man page pcoll(7): ENVIRONMENT, C API, FILES"
else bad "man page $man_page"; fi
if [ -x "$prefix/bin/pcoll-sim" ] && "$prefix/bin/pcoll-sim" choose --table builtin --mpi mpich \
  --collective reduce --p 4 --bytes 1m >"$work/sim.txt" 2>&1; then
  ok "bin/pcoll-sim choose runs"
else cat "$work/sim.txt" 2>/dev/null; bad "bin/pcoll-sim"; fi

mkdir -p "$work/src"
cat >"$work/src/app.c" <<'EOF'
/* Allreduce and reduce of 64 Ki doubles (512 KiB) and of 8 doubles, results checked. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#ifdef WITH_PCOLL_H
#include <pcoll.h>
#endif
int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size, bad = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int counts[2] = {1 << 16, 8};
  for (int c = 0; c < 2; c++) {
    int n = counts[c];
    double *in = malloc(n * sizeof *in), *out = malloc(n * sizeof *out);
    for (int i = 0; i < n; i++) in[i] = rank + i;
    for (int rep = 0; rep < 3; rep++) {
      MPI_Allreduce(in, out, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      for (int i = 0; i < n; i++) bad += out[i] != (double)size * (size - 1) / 2 + (double)size * i;
      MPI_Reduce(in, out, n, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
      if (rank == 0)
        for (int i = 0; i < n; i++) bad += out[i] != (double)size * (size - 1) / 2 + (double)size * i;
    }
    free(in);
    free(out);
  }
  int all = 0;
  MPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
#ifdef WITH_PCOLL_H
  if (rank == 0) printf("app: pcoll %s\n", pcoll_version());
#endif
  if (rank == 0) printf("app: %s (%d wrong elements)\n", all ? "WRONG" : "results ok", all);
  MPI_Finalize();
  return all != 0;
}
EOF
cat >"$work/src/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.16)
project(pcoll_install_test C)
find_package(pcoll REQUIRED COMPONENTS ${PCOLL_MPI})
add_executable(app app.c)
target_compile_definitions(app PRIVATE WITH_PCOLL_H)
target_link_libraries(app PRIVATE pcoll::${PCOLL_MPI})
EOF

# run_check LABEL MPI EXE [LD_PRELOAD lib]: p = 2, PCOLL_STATS=1; stats lines for allreduce
# (7 calls: 6 + the final check) and reduce (6 calls), results ok, the installed library loaded.
run_check() {
  local label=$1 m=$2 exe=$3 preload=${4:-} out=$work/$m.$1.out
  local kvs=(PCOLL_STATS=1)
  [ -n "$preload" ] && kvs+=(LD_PRELOAD="$preload")
  if ! timeout -k 5 60 bash -c 'source scripts/mpi.sh && mpi_setup "$1" && shift && np=$1 && shift &&
      kv=(); while [ "$1" != -- ]; do kv+=("$1"); shift; done; shift;
      mpi_run "$np" "${kv[@]}" -- "$@"' _ "$m" 2 "${kvs[@]}" -- "$exe" </dev/null >"$out" 2>&1; then
    cat "$out"; bad "$m $label: the run failed"; return
  fi
  local lib=$prefix/lib/pcoll/$m/libpcoll.so
  if [ -z "$preload" ] && ! ldd "$exe" | grep "=> $lib " >/dev/null; then
    ldd "$exe"; bad "$m $label: $exe does not load $lib"; return
  fi
  local ar re
  ar=$(awk '/^pcoll: stats allreduce /{for(i=1;i<=NF;i++) if($i ~ /^calls=/){sub("calls=","",$i); s+=$i}} END{print s+0}' "$out")
  re=$(awk '/^pcoll: stats reduce /{for(i=1;i<=NF;i++) if($i ~ /^calls=/){sub("calls=","",$i); s+=$i}} END{print s+0}' "$out")
  if grep -q 'app: results ok' "$out" && [ "$ar" = 7 ] && [ "$re" = 6 ]; then
    ok "$m $label: pcoll served allreduce 7/7, reduce 6/6 ($(grep -c '^pcoll: stats' "$out") stats lines)"
  else
    cat "$out"; bad "$m $label: stats allreduce calls=$ar (want 7), reduce calls=$re (want 6)"
  fi
}

for m in "$@"; do
  if ! mpi_setup "$m"; then bad "$m: not installed"; continue; fi
  d=$work/$m
  mkdir -p "$d"
  # pkg-config
  export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
  if flags=$(pkg-config --cflags --libs "pcoll-$m") &&
    "$MPICC" -DWITH_PCOLL_H "$work/src/app.c" $flags -o "$d/app-pkgconfig" >"$d/cc.log" 2>&1; then
    run_check pkg-config "$m" "$d/app-pkgconfig"
  else cat "$d/cc.log" 2>/dev/null; bad "$m: build through pkg-config (pkg-config --cflags --libs pcoll-$m: ${flags:-none})"; fi
  # CMake
  if CC=$MPICC cmake -S "$work/src" -B "$d/cmake" -DCMAKE_PREFIX_PATH="$prefix" -DPCOLL_MPI="$m" \
      >"$d/cmake.log" 2>&1 && cmake --build "$d/cmake" >>"$d/cmake.log" 2>&1; then
    run_check cmake "$m" "$d/cmake/app"
  else cat "$d/cmake.log"; bad "$m: build through CMake find_package(pcoll)"; fi
  # an unmodified program under LD_PRELOAD (the library's path from pkg-config)
  if lib=$(pkg-config --variable=library "pcoll-$m") && [ -f "$lib" ] &&
    "$MPICC" "$work/src/app.c" -o "$d/app-plain" >"$d/cc-plain.log" 2>&1; then
    run_check preload "$m" "$d/app-plain" "$lib"
  else cat "$d/cc-plain.log" 2>/dev/null; bad "$m: LD_PRELOAD build (pkg-config library: ${lib:-none})"; fi
done

echo "install: $pass passed, $fail failed"
[ "$fail" = 0 ]
