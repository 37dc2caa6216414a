/* namelib.c -- a shared library of C functions named as Fortran MPI entries without an
 * underscore, as R's Rmpi defines them (`mpi_allreduce`, `mpi_bcast`, `mpi_comm_free`, ...,
 * its own wrappers for R). Built by verify/stacked.sh for verify/nameclash.c. */
int mpi_bcast(int x) { return x + 1; }
int mpi_allreduce(int x) { return x + 2; }
int mpi_wait(int x) { return x + 3; }
int mpi_comm_free(int x) { return x + 4; }
int mpi_comm_dup(int x) { return x + 5; }
