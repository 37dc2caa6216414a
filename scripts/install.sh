#!/usr/bin/env bash
# make install's files (make install builds first; this script builds nothing):
#   scripts/install.sh PREFIX [MPI ...]      (DESTDIR from the environment, as make passes it)
# For each MPI: lib/pcoll/<mpi>/{libpcoll.so,pcoll-bench,pcoll-tune}, bin/pcoll-{bench,tune}-<mpi>,
# lib/pkgconfig/pcoll-<mpi>.pc; once: bin/pcoll-sim, include/pcoll.h, the CMake package
# lib/cmake/pcoll/, the man page share/man/man7/pcoll.7 (scripts/mkman.py, from the user guide)
# and share/doc/pcoll/. The library comes from build/<mpi>/ (make build / make build-lib), the
# tools from target-<mpi>/release/, pcoll-sim from the first target directory that has it.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { echo "usage: scripts/install.sh PREFIX MPI [MPI ...]" >&2; exit 2; }
prefix=$1; shift
case "$prefix" in /*) ;; *) echo "install: PREFIX must be an absolute path: $prefix" >&2; exit 2 ;; esac
dest=${DESTDIR:-}$prefix
version=$(sed -n 's/^#define PCOLL_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\)/\2/p' include/pcoll.h | paste -sd.)

mpi_label() {
  case "$1" in
    openmpi) echo "Open MPI 4.1 (Debian)" ;; mpich) echo "MPICH 4.0 (Debian)" ;;
    openmpi5) echo "Open MPI 5.0" ;; mpich5) echo "MPICH 5.0" ;; impi) echo "Intel MPI 2021" ;;
    *) echo "$1" ;;
  esac
}

install -d "$dest/bin" "$dest/include" "$dest/lib/pkgconfig" "$dest/lib/cmake/pcoll" \
  "$dest/share/man/man7" "$dest/share/doc/pcoll"
install -m 644 include/pcoll.h "$dest/include/"

for m in "$@"; do
  lib=build/$m/libpcoll.so
  [ -f "$lib" ] || { echo "install: $lib not built (make MPI=$m build)" >&2; exit 1; }
  d=$dest/lib/pcoll/$m
  install -d "$d"
  install -m 755 "$lib" "$d/"
  for t in pcoll-bench pcoll-tune; do
    # the newer of make build's copy and make build-lib's (Debian MPIs) cargo output
    src=$(ls -t build/$m/$t target-$m/release/$t 2>/dev/null | head -1 || true)
    # make install builds them (make build); make test's install check builds the registry
    # MPIs' libraries only: their tools are left out there, with this line.
    [ -x "$src" ] || { echo "install: $t for $m not built (make MPI=$m build): not installed" >&2; continue; }
    install -m 755 "$src" "$d/$t"
    ln -sf "../lib/pcoll/$m/$t" "$dest/bin/$t-$m"
  done
  cat >"$dest/lib/pkgconfig/pcoll-$m.pc" <<EOF
prefix=$prefix
libdir=\${prefix}/lib/pcoll/$m
includedir=\${prefix}/include
library=\${libdir}/libpcoll.so
mpi=$m

Name: pcoll-$m
Description: pcoll: faster MPI collectives by PMPI interposition, built for $(mpi_label "$m")
Version: $version
Cflags: -I\${includedir}
Libs: -L\${libdir} -Wl,-rpath,\${libdir} -Wl,--push-state,--no-as-needed -lpcoll -Wl,--pop-state
EOF
  echo "installed $d/libpcoll.so, $dest/lib/pkgconfig/pcoll-$m.pc"
done

sim=""
for t in target-"$1"/release/pcoll-sim target-*/release/pcoll-sim target/release/pcoll-sim; do
  [ -x "$t" ] && { sim=$t; break; }
done
if [ -n "$sim" ]; then install -m 755 "$sim" "$dest/bin/pcoll-sim"
else echo "install: pcoll-sim not built (cargo build --release -p pcoll-sim); not installed" >&2; exit 1; fi

# The CMake package: one imported target per MPI directory found next to it at configure time.
cat >"$dest/lib/cmake/pcoll/pcollConfig.cmake" <<'EOF'
# pcoll's CMake package (written by make install): find_package(pcoll [COMPONENTS <mpi>...])
# gives one imported target pcoll::<mpi> per installed MPI (openmpi, mpich, openmpi5, mpich5,
# impi), each libpcoll.so built for that MPI, with pcoll.h's include directory. Link it before
# the MPI library (the MPI's compiler wrapper appends -lmpi last).
get_filename_component(_pcoll_prefix "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
set(pcoll_INCLUDE_DIR "${_pcoll_prefix}/include")
set(pcoll_MPIS "")
file(GLOB _pcoll_libs "${_pcoll_prefix}/lib/pcoll/*/libpcoll.so")
foreach(_lib IN LISTS _pcoll_libs)
  get_filename_component(_dir "${_lib}" DIRECTORY)
  get_filename_component(_mpi "${_dir}" NAME)
  list(APPEND pcoll_MPIS "${_mpi}")
  set(pcoll_${_mpi}_LIBRARY "${_lib}")
  set(pcoll_${_mpi}_FOUND TRUE)
  if(NOT TARGET pcoll::${_mpi})
    add_library(pcoll::${_mpi} SHARED IMPORTED)
    set_target_properties(pcoll::${_mpi} PROPERTIES
      IMPORTED_LOCATION "${_lib}"
      IMPORTED_NO_SONAME TRUE
      INTERFACE_INCLUDE_DIRECTORIES "${pcoll_INCLUDE_DIR}"
      INTERFACE_LINK_OPTIONS "LINKER:-rpath,${_dir};LINKER:--no-as-needed")
  endif()
endforeach()
foreach(_mpi IN LISTS pcoll_FIND_COMPONENTS)
  if(NOT pcoll_${_mpi}_FOUND)
    set(pcoll_${_mpi}_FOUND FALSE)
    if(pcoll_FIND_REQUIRED_${_mpi})
      set(pcoll_FOUND FALSE)
      set(pcoll_NOT_FOUND_MESSAGE "pcoll was not installed for MPI '${_mpi}' (installed: ${pcoll_MPIS})")
    endif()
  endif()
endforeach()
if(NOT pcoll_MPIS)
  set(pcoll_FOUND FALSE)
  set(pcoll_NOT_FOUND_MESSAGE "no lib/pcoll/<mpi>/libpcoll.so under ${_pcoll_prefix}")
endif()
unset(_pcoll_libs)
unset(_lib)
unset(_dir)
unset(_mpi)
EOF
cat >"$dest/lib/cmake/pcoll/pcollConfigVersion.cmake" <<EOF
set(PACKAGE_VERSION "$version")
if(PACKAGE_FIND_VERSION VERSION_GREATER PACKAGE_VERSION)
  set(PACKAGE_VERSION_COMPATIBLE FALSE)
else()
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
  if(PACKAGE_FIND_VERSION STREQUAL PACKAGE_VERSION)
    set(PACKAGE_VERSION_EXACT TRUE)
  endif()
endif()
EOF

python3 scripts/mkman.py --prefix "$prefix" -o "$dest/share/man/man7/pcoll.7"
install -m 644 README.md "$dest/share/doc/pcoll/"
install -d "$dest/share/doc/pcoll/docs"
install -m 644 docs/*.md "$dest/share/doc/pcoll/docs/"
echo "installed into $dest: bin/pcoll-sim, include/pcoll.h, lib/cmake/pcoll, share/man/man7/pcoll.7"
