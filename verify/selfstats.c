/* PCOLL_STATS counts the collectives a program's own MPI_COMM_SELF delete callback calls in
 * MPI_Finalize: the MPI deletes MPI_COMM_SELF's attributes in the reverse order of setting
 * (MPI-3.1 8.7.1), and pcoll's, which prints the report, was set at MPI_Init, before the
 * program's. Three allreduces of 1000 doubles in main, five in the callback (each result
 * checked against its closed form); gate.sh runs it with the allreduce forced to `ring` and
 * PCOLL_STATS=1 and checks the report's "stats allreduce ring calls=8". Prints
 * "selfstats: PASS" or "selfstats: FAIL ..." on rank 0 (from the callback, inside
 * MPI_Finalize); exit status 1 on failure. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define N 1000
static int rank, size, fails;

static void calls(int k, int from)
{
    static double s[N], d[N];
    for (int c = 0; c < k; c++) {
        for (int i = 0; i < N; i++)
            s[i] = (double)(rank + 1) * (double)(i + from + c);
        MPI_Allreduce(s, d, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        double ranks = (double)size * (size + 1) / 2;
        for (int i = 0; i < N; i++)
            if (d[i] != ranks * (double)(i + from + c)) {
                fails++;
                break;
            }
    }
}

static int on_delete(MPI_Comm c, int key, void *val, void *extra)
{
    (void)c, (void)key, (void)val, (void)extra;
    calls(5, 100);
    int all = 0;
    MPI_Reduce(&fails, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD); /* not forced: no allreduce */
    if (rank == 0) {
        if (all)
            printf("selfstats: FAIL (%d wrong results)\n", all);
        else
            printf("selfstats: PASS\n");
        fflush(stdout);
    }
    if (rank == 0 && all)
        exit(1);
    return MPI_SUCCESS;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    calls(3, 0);
    int key;
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, on_delete, &key, NULL);
    MPI_Comm_set_attr(MPI_COMM_SELF, key, NULL);
    MPI_Finalize();
    return 0;
}
