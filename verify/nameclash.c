/* nameclash.c -- a C program linked with verify/namelib.c, whose functions are named as the
 * bare lower-case Fortran entries (`mpi_bcast`, ...: R's Rmpi defines 27 such). Preloaded, a
 * library exporting those names takes their place: until session 54 pcoll's Open MPI builds
 * did (a Fortran entry reading the C int as a Fortran reference: segfault, Rmpi at its first
 * collective). Each call must reach namelib's function; rank 0 prints `nameclash: PASS` or
 * `nameclash: FAIL (...)`. */
#include <mpi.h>
#include <stdio.h>

int mpi_bcast(int), mpi_allreduce(int), mpi_wait(int), mpi_comm_free(int), mpi_comm_dup(int);

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, got[5] = {mpi_bcast(10), mpi_allreduce(10), mpi_wait(10), mpi_comm_free(10),
                        mpi_comm_dup(10)};
    int wrong = 0;
    for (int i = 0; i < 5; i++)
        wrong += got[i] != 11 + i;
    double x = 1, s = 0;
    MPI_Allreduce(&x, &s, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    int p;
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    wrong += s != p;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0)
        printf(wrong ? "nameclash: FAIL (%d wrong)\n" : "nameclash: PASS\n", wrong);
    MPI_Finalize();
    return wrong != 0;
}
