/* An A/B benchmark written apart from pcoll-bench, to check it: native (PMPI_X) against the
 * interposed call (MPI_X, i.e. pcoll when libpcoll.so is preloaded, with its default
 * decision), alternated per iteration (ABBA) in one process, a barrier before every timed
 * call, each repetition's time the maximum over ranks, the median over repetitions.
 * Shares no code with pcoll (plain C, MPI only).
 *
 *   mpirun -np 4 -x LD_PRELOAD=build/openmpi/libpcoll.so build/verify/ab-openmpi \
 *       [collective=reduce|allreduce|reduce_scatter|allgatherv|bcast|allgather|reduce_scatter_block]
 *       [iters=400] [sizes in bytes...]
 * Prints one line per size: "ab <collective> <p> <bytes> <native_us> <mpi_us> <ratio>"; with
 * AB_MEAN=1 in the environment two more columns, the means over every timed call of each side
 * (what a run pays in total, outliers and PCOLL_LEARN's exploration included). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, n, sizeof *v, cmp);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

enum coll { REDUCE, ALLREDUCE, REDUCE_SCATTER, ALLGATHERV, BCAST, ALLGATHER, REDUCE_SCATTER_BLOCK, NCOLL };

struct bufs {
    double *s, *r;
    int n, blk, *counts, *displs; /* blk: the regular calls' count per rank */
};

static int call(enum coll c, int native, struct bufs *b, int rank, int p)
{
    switch (c) {
    case REDUCE:
        return native ? PMPI_Reduce(b->s, b->r, b->n, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD)
                      : MPI_Reduce(b->s, b->r, b->n, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    case ALLREDUCE:
        return native ? PMPI_Allreduce(b->s, b->r, b->n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD)
                      : MPI_Allreduce(b->s, b->r, b->n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    case REDUCE_SCATTER:
        return native ? PMPI_Reduce_scatter(b->s, b->r, b->counts, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD)
                      : MPI_Reduce_scatter(b->s, b->r, b->counts, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    case ALLGATHERV:
        return native ? PMPI_Allgatherv(b->s, b->counts[rank], MPI_DOUBLE, b->r, b->counts, b->displs,
                                        MPI_DOUBLE, MPI_COMM_WORLD)
                      : MPI_Allgatherv(b->s, b->counts[rank], MPI_DOUBLE, b->r, b->counts, b->displs,
                                       MPI_DOUBLE, MPI_COMM_WORLD);
    case BCAST:
        return native ? PMPI_Bcast(b->r, b->n, MPI_DOUBLE, 0, MPI_COMM_WORLD)
                      : MPI_Bcast(b->r, b->n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    case ALLGATHER: /* n / p elements each (at least 1) */
        return native ? PMPI_Allgather(b->s, b->blk, MPI_DOUBLE, b->r, b->blk, MPI_DOUBLE, MPI_COMM_WORLD)
                      : MPI_Allgather(b->s, b->blk, MPI_DOUBLE, b->r, b->blk, MPI_DOUBLE, MPI_COMM_WORLD);
    case REDUCE_SCATTER_BLOCK:
        return native ? PMPI_Reduce_scatter_block(b->s, b->r, b->blk, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD)
                      : MPI_Reduce_scatter_block(b->s, b->r, b->blk, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    case NCOLL:
        break;
    }
    (void)p;
    return MPI_ERR_OTHER;
}

/* One timed call: barrier, call, the maximum over ranks of its time. */
static double timed(enum coll c, int native, struct bufs *b, int rank, int p)
{
    PMPI_Barrier(MPI_COMM_WORLD);
    double t0 = PMPI_Wtime();
    if (call(c, native, b, rank, p) != MPI_SUCCESS)
        PMPI_Abort(MPI_COMM_WORLD, 2);
    double t = PMPI_Wtime() - t0, m = 0;
    PMPI_Allreduce(&t, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return m;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    const char *names[] = {"reduce",     "allreduce", "reduce_scatter", "allgatherv",
                           "bcast",      "allgather", "reduce_scatter_block"};
    enum coll c = REDUCE;
    if (argc > 1)
        for (int k = 0; k < NCOLL; k++)
            if (!strcmp(argv[1], names[k]))
                c = (enum coll)k;
    int iters = argc > 2 ? atoi(argv[2]) : 400;
    long sizes_default[] = {8, 64, 512, 2048, 4096, 32768, 262144};
    int nsizes = argc > 3 ? argc - 3 : 7;
    double *tn = malloc(sizeof(double) * iters * 2), *tp = malloc(sizeof(double) * iters * 2);
    for (int k = 0; k < nsizes; k++) {
        long bytes = argc > 3 ? atol(argv[3 + k]) : sizes_default[k];
        struct bufs b;
        b.n = bytes / 8 > 0 ? (int)(bytes / 8) : 1;
        b.counts = malloc(sizeof(int) * p);
        b.displs = malloc(sizeof(int) * p);
        for (int j = 0, acc = 0; j < p; j++) {
            b.counts[j] = b.n / p + (j < b.n % p);
            b.displs[j] = acc;
            acc += b.counts[j];
        }
        b.blk = b.n / p > 0 ? b.n / p : 1;
        size_t room = (size_t)(b.n > b.blk * p ? b.n : b.blk * p);
        b.s = malloc(sizeof(double) * room);
        b.r = malloc(sizeof(double) * room);
        for (size_t i = 0; i < room; i++)
            b.s[i] = b.r[i] = rank + i % 7;
        for (int w = 0; w < 5; w++) {
            timed(c, 1, &b, rank, p);
            timed(c, 0, &b, rank, p);
        }
        int nn = 0, np = 0;
        for (int i = 0; i < iters; i++) {
            /* ABBA: native, mpi, mpi, native */
            tn[nn++] = timed(c, 1, &b, rank, p);
            tp[np++] = timed(c, 0, &b, rank, p);
            tp[np++] = timed(c, 0, &b, rank, p);
            tn[nn++] = timed(c, 1, &b, rank, p);
        }
        double sn = 0, sp = 0;
        for (int i = 0; i < nn; i++) sn += tn[i];
        for (int i = 0; i < np; i++) sp += tp[i];
        double mn = median(tn, nn) * 1e6, mp = median(tp, np) * 1e6;
        if (rank == 0 && getenv("AB_MEAN"))
            printf("ab %s %d %ld %.3f %.3f %.3f %.3f %.3f\n", names[c], p, bytes, mn, mp, mp / mn, sn / nn * 1e6, sp / np * 1e6);
        else if (rank == 0)
            printf("ab %s %d %ld %.3f %.3f %.3f\n", names[c], p, bytes, mn, mp, mp / mn);
        fflush(stdout);
        free(b.s);
        free(b.r);
        free(b.counts);
        free(b.displs);
    }
    free(tn);
    free(tp);
    MPI_Finalize();
    return 0;
}
