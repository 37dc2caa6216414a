#!/usr/bin/env bash
# One library per ABI (issue #23, item 3): libpcoll built with one MPI's wrapper, bound lazily
# (-z lazy: a PMPI_ function the running MPI lacks, e.g. PMPI_Reduce_c under Open MPI 4.1, is
# looked up only if called) and, for the MPICH ABI, without libmpi recorded as NEEDED (its
# PMPI_ symbols bind at load time to whatever libmpi.so.12 / libmpich.so.12 the program
# loaded). Open MPI's handles are data symbols (ompi_mpi_comm_world, ...) that must resolve
# when the library loads, so that build keeps NEEDED libmpi.so.40.
#   scripts/abi-lib.sh <mpich|openmpi> [built-with MPI name, default mpich5 / openmpi5]
# Writes build/abi-<abi>/libpcoll.so.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/mpi.sh
abi=$1
with=${2:-${abi}5}
mpi_setup "$with"
[ "$MPI_ABI" = "$abi" ] || { echo "abi-lib.sh: $with is not of the $abi ABI" >&2; exit 2; }
out=build/abi-$abi
mkdir -p "$out"
RUSTFLAGS="-C link-arg=-Wl,-z,lazy" CARGO_TARGET_DIR=$PWD/target-abi-$abi \
  cargo build --release -p pcoll-mpi --lib
strip --strip-debug -o "$out/libpcoll.so" target-abi-$abi/release/libpcoll_mpi.so
if [ "$abi" = mpich ]; then
  for n in $(readelf -d "$out/libpcoll.so" | sed -n 's/.*NEEDED.*\[\(lib\(mpi\|mpich\)[^]]*\)\].*/\1/p'); do
    patchelf --remove-needed "$n" "$out/libpcoll.so"
  done
fi
readelf -d "$out/libpcoll.so" | grep -E "NEEDED|FLAGS" >&2
echo "built $out/libpcoll.so (with $with)"
