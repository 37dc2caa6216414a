/* verify/choose.c: the library's decision for a grid of calls, as pcoll_last_algorithm reports
 * it after each call (rank 0 prints one line per call: `collective p bytes op algorithm`).
 * verify/choose.sh compares the lines with `pcoll-sim choose` for the same table.
 * Usage: choose <bytes> [<bytes> ...]   (message bytes; MPI_DOUBLE, a multiple of 8)
 * CHOOSE_ROOT=r in the environment: the reduces go to root r (default 0). */
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void noncomm(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    double *a = in, *b = inout;
    for (int i = 0; i < *len; i++)
        b[i] = a[i] - b[i];
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int p, rank;
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const char *(*last)(const char *) = (const char *(*)(const char *))dlsym(RTLD_DEFAULT, "pcoll_last_algorithm");
    if (!last) {
        if (rank == 0)
            fprintf(stderr, "choose: pcoll_last_algorithm not found (run with pcoll preloaded)\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const char *root_env = getenv("CHOOSE_ROOT");
    int root = root_env ? atoi(root_env) % p : 0;
    MPI_Op user;
    MPI_Op_create(noncomm, 0, &user);
    int *counts = malloc(sizeof(int) * p), *displs = malloc(sizeof(int) * p);
    for (int a = 1; a < argc; a++) {
        long bytes = atol(argv[a]);
        int n = (int)(bytes / 8);
        double *s = calloc((size_t)n + 1, 8), *r = calloc((size_t)n + 1, 8);
        for (int i = 0; i < p; i++)
            counts[i] = n / p + (i < n % p);
        displs[0] = 0;
        for (int i = 1; i < p; i++)
            displs[i] = displs[i - 1] + counts[i - 1];
        const char *colls[4] = {"reduce", "allreduce", "reduce_scatter", "allgatherv"};
        for (int c = 0; c < 4; c++) {
            for (int commute = 1; commute >= (c == 3 ? 1 : 0); commute--) {
                MPI_Op op = commute ? MPI_SUM : user;
                switch (c) {
                case 0: MPI_Reduce(s, r, n, MPI_DOUBLE, op, root, MPI_COMM_WORLD); break;
                case 1: MPI_Allreduce(s, r, n, MPI_DOUBLE, op, MPI_COMM_WORLD); break;
                case 2: MPI_Reduce_scatter(s, r, counts, MPI_DOUBLE, op, MPI_COMM_WORLD); break;
                default:
                    MPI_Allgatherv(s, counts[rank], MPI_DOUBLE, r, counts, displs, MPI_DOUBLE, MPI_COMM_WORLD);
                }
                if (rank == 0)
                    printf("%s %d %ld %s %s\n", colls[c], p, (long)n * 8, commute ? "commutative" : "noncommutative",
                           last(colls[c]));
            }
        }
        free(s);
        free(r);
    }
    fflush(stdout);
    MPI_Op_free(&user);
    free(counts);
    free(displs);
    MPI_Finalize();
    return 0;
}
