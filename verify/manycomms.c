/* More live communicators than pcoll can shadow: argv[1] duplicates of MPI_COMM_WORLD made
 * first (until the MPI refuses one: MPICH's 2048 context ids), then an allreduce on each,
 * with the communicators' default error handler (MPI_ERRORS_ARE_FATAL). The first call pcoll
 * serves on a communicator duplicates it (its shadow); once the MPI has no context id left
 * that fails, and the call must go to the MPI (one warning) instead of failing or aborting:
 * until session 29 every allreduce past the 46th returned an error (MPICH 4.0). Each result
 * checked. Prints "manycomms: PASS <comms>" or "manycomms: FAIL ..." per rank. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int n = argc > 1 ? atoi(argv[1]) : 2100, r, p, failed = 0, made = 0;
    long wrong = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    MPI_Comm *c = malloc(sizeof(MPI_Comm) * n);
    /* the dup that runs out returns its error here (not fatal), and then no more are made */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    while (made < n && MPI_Comm_dup(MPI_COMM_WORLD, &c[made]) == MPI_SUCCESS) made++;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    enum { N = 1000 };
    double x[N], y[N];
    for (int i = 0; i < made; i++) {
        for (int k = 0; k < N; k++) x[k] = r + k + i, y[k] = -1;
        if (MPI_Allreduce(x, y, N, MPI_DOUBLE, MPI_SUM, c[i]) != MPI_SUCCESS) failed++;
        for (int k = 0; k < N; k++) wrong += y[k] != p * (p - 1) / 2.0 + (double)p * (k + i);
    }
    for (int i = 0; i < made; i++) MPI_Comm_free(&c[i]);
    if (failed || wrong)
        printf("manycomms: FAIL rank %d: %d communicators, %d calls failed, %ld wrong elements\n",
               r, made, failed, wrong);
    else
        printf("manycomms: PASS %d communicators\n", made);
    free(c);
    MPI_Finalize();
    return failed || wrong;
}
