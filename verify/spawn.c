/* Dynamic processes under pcoll: the parents (MPI_COMM_WORLD of the job) spawn two children
 * (MPI_Comm_spawn of this program), and both sides merge the intercommunicator
 * (MPI_Intercomm_merge). On the merged communicator every process finds ranks from outside
 * its own MPI_COMM_WORLD, so pcoll forwards its collectives to the MPI
 * (pcoll_last_algorithm: "native") on every process alike, whether the children run pcoll
 * or not (Open MPI 5's prterun does not pass `-x LD_PRELOAD` on to spawned processes: the
 * parents ran the forced algorithm, the children the MPI's, and all hung). On each side's
 * own MPI_COMM_WORLD the algorithm forced in the environment (argv[1]; "-" for no check)
 * runs for reduce, allreduce and bcast, where pcoll is loaded. Reduce, allreduce, bcast, allgatherv and their results
 * against closed forms, 1 to 2^18 doubles. Prints "spawn: PASS <parent|child> ..." or
 * "spawn: FAIL ..." on every process. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "last_alg.h"

/* Wrong elements of the collectives on `c`; *odd names the first whose algorithm was not
 * `want` (NULL: no check; no check either where pcoll is not loaded). */
static long run(MPI_Comm c, const char *want, const char **odd)
{
    int r, p;
    MPI_Comm_rank(c, &r);
    MPI_Comm_size(c, &p);
    long bad = 0;
#define CHECK_ALG(name) check_alg(name, want, 0, odd)
    for (int n = 1; n <= 1 << 18; n *= 8) {
        double *x = malloc(sizeof(double) * n * p), *y = malloc(sizeof(double) * n * p);
        int *counts = malloc(sizeof(int) * p), *displs = malloc(sizeof(int) * p);
        for (int q = 0; q < p; q++) counts[q] = n, displs[q] = q * n;
        for (int i = 0; i < n; i++) x[i] = r + i % 17;
        double base = p * (p - 1) / 2.0;
        MPI_Allreduce(x, y, n, MPI_DOUBLE, MPI_SUM, c);
        CHECK_ALG("allreduce");
        for (int i = 0; i < n; i++) bad += y[i] != base + (double)p * (i % 17);
        MPI_Reduce(x, y, n, MPI_DOUBLE, MPI_SUM, p - 1, c);
        CHECK_ALG("reduce");
        if (r == p - 1)
            for (int i = 0; i < n; i++) bad += y[i] != base + (double)p * (i % 17);
        MPI_Allgatherv(x, n, MPI_DOUBLE, y, counts, displs, MPI_DOUBLE, c);
        if (!strcmp(want ? want : "", "native")) CHECK_ALG("allgatherv");
        for (int q = 0; q < p; q++)
            for (int i = 0; i < n; i++) bad += y[q * n + i] != q + i % 17;
        for (int i = 0; i < n; i++) y[i] = r == 1 % p ? 3.0 * i : -1;
        MPI_Bcast(y, n, MPI_DOUBLE, 1 % p, c);
        CHECK_ALG("bcast");
        for (int i = 0; i < n; i++) bad += y[i] != 3.0 * i;
        free(x), free(y), free(counts), free(displs);
    }
    return bad;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    const char *want = argc > 1 && strcmp(argv[1], "-") ? argv[1] : NULL;
    MPI_Comm parent, inter, merged;
    MPI_Comm_get_parent(&parent);
    int child = parent != MPI_COMM_NULL;
    if (!child) {
        char *args[] = {argc > 1 ? argv[1] : "-", NULL};
        int rc = MPI_Comm_spawn(argv[0], args, 2, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter,
                                MPI_ERRCODES_IGNORE);
        if (rc != MPI_SUCCESS) {
            printf("spawn: FAIL MPI_Comm_spawn returned %d\n", rc);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    } else {
        inter = parent;
    }
    MPI_Intercomm_merge(inter, child, &merged);
    const char *odd_world = NULL, *odd_merged = NULL;
    long bad = run(MPI_COMM_WORLD, want, &odd_world);
    long bad_merged = run(merged, "native", &odd_merged);
    const char *odd = odd_world ? odd_world : odd_merged;
    const char *where = odd_world ? " (own world)" : " (merged)";
    int r, p;
    MPI_Comm_rank(merged, &r);
    MPI_Comm_size(merged, &p);
    if (bad || bad_merged || odd)
        printf("spawn: FAIL %s rank %d of %d: %ld wrong in its world, %ld in the merged "
               "communicator%s%s%s\n", child ? "child" : "parent", r, p, bad, bad_merged,
               odd ? "; first other algorithm: " : "", odd ? odd : "", where);
    else
        printf("spawn: PASS %s rank %d of %d (pcoll %s)\n", child ? "child" : "parent", r, p,
               dlsym(RTLD_DEFAULT, "pcoll_last_algorithm") ? "loaded" : "not loaded");
    MPI_Comm_free(&merged);
    MPI_Comm_disconnect(&inter);
    MPI_Finalize();
    return bad || bad_merged || odd;
}
