/* An application's mix of collectives, as a user runs it under pcoll: every collective pcoll
 * serves, 8 B to 2 MiB (every third power of two), REPS calls of each, roots rotating over the
 * ranks for reduce and bcast, allreduce in place every other call, the vector sizes of
 * allgatherv and reduce_scatter differing by rank. Every result is checked against the value
 * each rank computes itself (integer-valued doubles: sums are exact in any order). Enough calls
 * of a cell for pcoll's windows to be made and its races to run. Not a test of speed.
 *   mpicc -O2 -o apprun apprun.c
 *   mpirun -np 5 -x LD_PRELOAD=.../libpcoll.so ./apprun [REPS, default 20]
 * Prints "apprun: PASS p=<p> <calls> calls" on rank 0 or the first wrong element, exit 1. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int rank, p, bad;
static long calls;

/* Rank r's element i of its input for call k. */
static double in(int r, long i, int k) { return (double)((r + 1) * 3 + (i % 11) + k % 5); }

static void expect(const char *what, size_t n, const double *got, double (*want)(long, int), int k)
{
    for (size_t i = 0; i < n && !bad; i++)
        if (got[i] != want((long)i, k)) {
            fprintf(stderr, "apprun: rank %d %s call %d count %zu: [%zu] = %g, want %g\n", rank,
                    what, k, n, i, got[i], want((long)i, k));
            bad = 1;
        }
}

static double sum_at(long i, int k)
{
    double s = 0;
    for (int r = 0; r < p; r++) s += in(r, i, k);
    return s;
}

static long off; /* the offset of the block a check reads, in the whole vector */
static double sum_off(long i, int k) { return sum_at(i + off, k); }
static int src; /* the rank whose input a check reads */
static double of_src(long i, int k) { return in(src, i, k); }

static void fill(double *v, size_t n, int k)
{
    for (size_t i = 0; i < n; i++) v[i] = in(rank, (long)i, k);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    int reps = argc > 1 ? atoi(argv[1]) : 20;
    size_t maxn = (2u << 20) / sizeof(double);
    /* allgatherv's and reduce_scatter's blocks are n + i elements long */
    size_t room = (maxn + p) * p * sizeof(double);
    double *s = malloc(room), *r = malloc(room);
    int *counts = malloc(p * sizeof(int)), *displs = malloc(p * sizeof(int));
    for (size_t bytes = 8; bytes <= (2u << 20) && !bad; bytes *= 8) {
        size_t n = bytes / sizeof(double);
        for (int k = 0; k < reps && !bad; k++) {
            int root = k % p;
            /* reduce, rotating root */
            fill(s, n, k);
            MPI_Reduce(s, r, (int)n, MPI_DOUBLE, MPI_SUM, root, MPI_COMM_WORLD);
            if (rank == root) expect("reduce", n, r, sum_at, k);
            /* allreduce, in place every other call */
            fill(s, n, k);
            if (k % 2) {
                fill(r, n, k);
                MPI_Allreduce(MPI_IN_PLACE, r, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            } else
                MPI_Allreduce(s, r, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            expect("allreduce", n, r, sum_at, k);
            /* bcast, rotating root */
            if (rank == root) fill(r, n, k);
            MPI_Bcast(r, (int)n, MPI_DOUBLE, root, MPI_COMM_WORLD);
            src = root;
            expect("bcast", n, r, of_src, k);
            /* allgather: n elements a rank */
            fill(s, n, k);
            MPI_Allgather(s, (int)n, MPI_DOUBLE, r, (int)n, MPI_DOUBLE, MPI_COMM_WORLD);
            for (src = 0; src < p; src++) expect("allgather", n, r + src * n, of_src, k);
            /* allgatherv and reduce_scatter: rank i's block n + i elements (n > 1) */
            int total = 0;
            for (int i = 0; i < p; i++) {
                counts[i] = (int)(n > 1 ? n + i : n);
                displs[i] = total;
                total += counts[i];
            }
            fill(s, counts[rank], k);
            MPI_Allgatherv(s, counts[rank], MPI_DOUBLE, r, counts, displs, MPI_DOUBLE,
                           MPI_COMM_WORLD);
            for (src = 0; src < p; src++) expect("allgatherv", counts[src], r + displs[src], of_src, k);
            fill(s, total, k);
            MPI_Reduce_scatter(s, r, counts, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            off = displs[rank];
            expect("reduce_scatter", counts[rank], r, sum_off, k);
            /* reduce_scatter_block: n elements a rank */
            fill(s, n * p, k);
            MPI_Reduce_scatter_block(s, r, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            off = (long)n * rank;
            expect("reduce_scatter_block", n, r, sum_off, k);
            calls += 7;
        }
    }
    int any = 0;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0) {
        if (any)
            printf("apprun: FAIL p=%d\n", p);
        else
            printf("apprun: PASS p=%d %ld calls\n", p, calls);
    }
    free(s);
    free(r);
    free(counts);
    free(displs);
    MPI_Finalize();
    return any;
}
