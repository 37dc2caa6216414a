# Sourced by the verify scripts that take <mpi> <libpcoll.so> (gate.sh, choose.sh, threads.sh,
# nbprogress.sh, stacked.sh):
#   source "$(dirname "$0")/setup.sh" MIN MAX "$@"
# checks that the script got MIN..MAX arguments (usage: "$0 <mpi> <libpcoll.so>" and
# $VERIFY_USAGE after it; exit 2 otherwise), then sets MPI, LIB (absolute), ROOT (the
# checkout), OUT (build/verify, made) and the MPI's variables (scripts/mpi.sh: mpi_setup; exit 2
# for an unknown or missing MPI).
verify_min=$1 verify_max=$2
shift 2
if [ $# -lt "$verify_min" ] || [ $# -gt "$verify_max" ]; then
  echo "usage: $0 <openmpi|mpich|openmpi5|mpich5|impi> <libpcoll.so>${VERIFY_USAGE:+ $VERIFY_USAGE}" >&2
  exit 2
fi
MPI=$1
LIB=$(readlink -f "$2")
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=$ROOT/build/verify
mkdir -p "$OUT"
# shellcheck source=../scripts/mpi.sh
source "$ROOT/scripts/mpi.sh"
mpi_setup "$MPI" || exit 2
