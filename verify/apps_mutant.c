/* verify/apps.sh's mutant MPI, to show its checks catch a wrong answer: one byte of rank 0's
 * (MPI_Allreduce) or the root's (MPI_Reduce) result flipped; no pcoll under it. */
#include <mpi.h>
static void flip(void *r, int n, MPI_Comm c, int who) {
  int me; PMPI_Comm_rank(c, &me);
  if (n > 0 && me == who) ((unsigned char *)r)[1] ^= 0x10;
}
int MPI_Allreduce(const void *s, void *r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c) {
  int rc = PMPI_Allreduce(s, r, n, t, op, c); flip(r, n, c, 0); return rc;
}
int MPI_Reduce(const void *s, void *r, int n, MPI_Datatype t, MPI_Op op, int root, MPI_Comm c) {
  int rc = PMPI_Reduce(s, r, n, t, op, root, c); flip(r, n, c, root); return rc;
}
