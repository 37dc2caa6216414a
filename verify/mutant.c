/* deliberately wrong interposer: difftest must see every defect */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
static int mode(void) { const char *m = getenv("MUTANT"); return m ? atoi(m) : 0; }
int MPI_Allreduce(const void *s, void *r, int n, MPI_Datatype t, MPI_Op o, MPI_Comm c) {
  int rc = PMPI_Allreduce(s, r, n, t, o, c), me; PMPI_Comm_rank(c, &me);
  if (mode() == 1 && n > 2 && me == 0) ((unsigned char *)r)[0] ^= 1;
  return rc;
}
int MPI_Reduce_scatter(const void *s, void *r, const int *cn, MPI_Datatype t, MPI_Op o, MPI_Comm c) {
  int rc = PMPI_Reduce_scatter(s, r, cn, t, o, c), me; PMPI_Comm_rank(c, &me);
  MPI_Aint lb, ext; PMPI_Type_get_extent(t, &lb, &ext);
  if (mode() == 2 && cn[me] > 0) ((unsigned char *)r)[cn[me] * ext] ^= 1;
  return rc;
}
int MPI_Allgatherv(const void *s, int sc, MPI_Datatype st, void *r, const int *cn, const int *d, MPI_Datatype t, MPI_Comm c) {
  int rc = PMPI_Allgatherv(s, sc, st, r, cn, d, t, c), p; PMPI_Comm_size(c, &p);
  MPI_Aint lb, ext; PMPI_Type_get_extent(t, &lb, &ext);
  if (mode() == 3) for (int k = 0; k < p; k++) if (d[k] > 0) ((unsigned char *)r)[d[k] * ext - 1] ^= 0x10;
  return rc;
}
/* mode 4: a reduce in reversed rank order (wrong for non-commutative ops): `rev` reverses
 * `c`; the result goes to the root's new rank (p - 1 - root). */
static int reversed(MPI_Comm c, int root, MPI_Comm *rev) {
  int me, p; PMPI_Comm_rank(c, &me); PMPI_Comm_size(c, &p);
  PMPI_Comm_split(c, 0, p - me, rev);
  return p - 1 - root;
}
int MPI_Reduce(const void *s, void *r, int n, MPI_Datatype t, MPI_Op o, int root, MPI_Comm c) {
  if (mode() != 4) return PMPI_Reduce(s, r, n, t, o, root, c);
  MPI_Comm rev; int to = reversed(c, root, &rev), me; PMPI_Comm_rank(rev, &me);
  int rc = PMPI_Reduce(s, me == to ? r : NULL, n, t, o, to, rev);
  PMPI_Comm_free(&rev); return rc;
}
#if MPI_VERSION >= 4 && defined(MPICH_VERSION)
/* The large-count reduce too (the difftest's bigcount cases call it). */
int MPI_Reduce_c(const void *s, void *r, MPI_Count n, MPI_Datatype t, MPI_Op o, int root, MPI_Comm c) {
  if (mode() != 4) return PMPI_Reduce_c(s, r, n, t, o, root, c);
  MPI_Comm rev; int to = reversed(c, root, &rev), me; PMPI_Comm_rank(rev, &me);
  int rc = PMPI_Reduce_c(s, me == to ? r : NULL, n, t, o, to, rev);
  PMPI_Comm_free(&rev); return rc;
}
#endif
