/* tool.c -- a profiling tool in the PMPI manner (as mpiP, IPM, TAU are): it counts the
 * completion calls and type frees it wraps and forwards each to its PMPI_ name, and reduces
 * its counts over MPI_COMM_WORLD in its MPI_Finalize wrapper. Built as a shared library and
 * loaded before or after libpcoll.so by verify/stacked.sh. */
#include <mpi.h>
#include <stdio.h>

static long calls;

int MPI_Wait(MPI_Request *r, MPI_Status *s) { calls++; return PMPI_Wait(r, s); }
int MPI_Test(MPI_Request *r, int *f, MPI_Status *s) { calls++; return PMPI_Test(r, f, s); }
int MPI_Waitall(int n, MPI_Request *r, MPI_Status *s) { calls++; return PMPI_Waitall(n, r, s); }
int MPI_Start(MPI_Request *r) { calls++; return PMPI_Start(r); }
int MPI_Request_free(MPI_Request *r) { calls++; return PMPI_Request_free(r); }
int MPI_Type_free(MPI_Datatype *t) { calls++; return PMPI_Type_free(t); }

int MPI_Finalize(void)
{
    long sum = 0;
    int rank;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Reduce(&calls, &sum, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("tool: %ld wrapped calls\n", sum);
    return PMPI_Finalize();
}
