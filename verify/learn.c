/* learn: PCOLL_LEARN end to end (issue 24), driven by verify/learn.sh.
 *
 * A few cells per collective (allreduce, reduce at root 0 and at the last rank, bcast,
 * allgather, reduce_scatter_block; 64 B .. 1 MiB of doubles), on MPI_COMM_WORLD and, for
 * allreduce, on a duplicate too (cells are kept per communicator; the duplicate's sizes are
 * twice the world's, other octaves: the table merges a cell decided on several communicators
 * into one rule, which the unit tests cover, so a replay could not tell them apart), called
 * round-robin for
 * --iters rounds (so that every cell is explored and then decided while the others are too),
 * each cell --repeat times in a row per round (default 1; repeated calls are what the native
 * gate's memo and pcoll's served-again path take without deciding again); with --inplace 1
 * the reduce to the last rank passes MPI_IN_PLACE at its root (whose calls then take other
 * paths through pcoll than the other ranks' calls do).
 * After every call:
 *   - the result is checked (exact integer-valued sums);
 *   - every rank must have run the same algorithm (pcoll_last_algorithm, compared with one
 *     PMPI_Allreduce, which pcoll does not see).
 * At the end rank 0 prints one line per cell with the algorithm of its last call:
 *   final <label> <comm> <bytes> <alg> <collective> <table bytes> <root is 0>
 * and `learn: N calls, M wrong results, K algorithm disagreements`; exit status 1 if M or K.
 * The script checks that every cell the learned table has a rule for ran the rule's
 * algorithm last, in the learning run and in a run replaying the table (PCOLL_TUNING).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { ALLREDUCE, REDUCE0, REDUCEL, BCAST, ALLGATHER, RSB, NCOLL };
static const char *cname[NCOLL] = {"allreduce", "reduce", "reduce", "bcast", "allgather", "reduce_scatter_block"};
static const char *label[NCOLL] = {"allreduce", "reduce-root0", "reduce-rootlast", "bcast", "allgather", "reduce_scatter_block"};
static const long sizes[] = {64, 4096, 65536, 1 << 20};
#define NSIZE (int)(sizeof sizes / sizeof sizes[0])
static const char *algs[] = {"native", "binomial", "pipeline", "greedy", "greedy_uni", "circulant", "butterfly",
                             "ring", "scatter_allgather", "hier", "hier_ml", "shm"};
#define NALG (int)(sizeof algs / sizeof algs[0])

static const char *(*p_last)(const char *);
static int rank, size;
static long wrong, disagree, calls;
static int inplace;

static int alg_index(const char *s) {
    for (int a = 0; s && a < NALG; a++)
        if (!strcmp(s, algs[a])) return a;
    return NALG;
}

/* One call of cell (c, bytes) on comm; returns the algorithm index that served it. */
static int one(int c, long bytes, MPI_Comm comm, double *in, double *out) {
    int p, me;
    MPI_Comm_size(comm, &p);
    MPI_Comm_rank(comm, &me);
    long n = bytes / 8, blk = n / p > 0 ? n / p : 1;
    long nin = c == ALLGATHER ? blk : c == RSB ? blk * p : n;
    for (long i = 0; i < nin; i++) in[i] = (double)(me + 1) * (double)(i % 1000);
    int root = c == REDUCEL ? p - 1 : 0;
    switch (c) {
    case ALLREDUCE: MPI_Allreduce(in, out, (int)n, MPI_DOUBLE, MPI_SUM, comm); break;
    case REDUCE0:
    case REDUCEL:
        if (c == REDUCEL && inplace && me == root) {
            memcpy(out, in, n * 8);
            MPI_Reduce(MPI_IN_PLACE, out, (int)n, MPI_DOUBLE, MPI_SUM, root, comm);
        } else {
            MPI_Reduce(in, out, (int)n, MPI_DOUBLE, MPI_SUM, root, comm);
        }
        break;
    case BCAST:
        if (me == 0) memcpy(out, in, n * 8);
        MPI_Bcast(out, (int)n, MPI_DOUBLE, 0, comm);
        break;
    case ALLGATHER: MPI_Allgather(in, (int)blk, MPI_DOUBLE, out, (int)blk, MPI_DOUBLE, comm); break;
    case RSB: MPI_Reduce_scatter_block(in, out, (int)blk, MPI_DOUBLE, MPI_SUM, comm); break;
    }
    calls++;
    double tri = (double)p * (p + 1) / 2;
    long nout = c == RSB ? blk : c == ALLGATHER ? blk * p : n;
    int check = !((c == REDUCE0 || c == REDUCEL) && me != root);
    for (long i = 0; check && i < nout; i++) {
        double want;
        if (c == BCAST) want = (double)(i % 1000);
        else if (c == ALLGATHER) want = (double)(i / blk + 1) * (double)((i % blk) % 1000);
        else if (c == RSB) want = tri * (double)((me * blk + i) % 1000);
        else want = tri * (double)(i % 1000);
        if (out[i] != want) {
            if (wrong++ < 5) fprintf(stderr, "learn: rank %d: %s %ld B: element %ld is %g, want %g\n", rank, label[c], bytes, i, out[i], want);
            break;
        }
    }
    int j = p_last ? alg_index(p_last(cname[c])) : NALG;
    int v[2] = {j, -j}, m[2];
    PMPI_Allreduce(v, m, 2, MPI_INT, MPI_MAX, comm);
    if (m[0] != -m[1] && disagree++ < 5)
        fprintf(stderr, "learn: rank %d: %s %ld B: the ranks ran different algorithms (here %s)\n", rank, label[c], bytes, j < NALG ? algs[j] : "?");
    return j;
}

int main(int argc, char **argv) {
    /* Whole lines: the launcher interleaves this output with pcoll's stderr lines, and the
     * script reads the `final` lines back. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int iters = 30, repeat = 1;
    for (int i = 1; i + 1 < argc; i++) {
        if (!strcmp(argv[i], "--iters")) iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--repeat")) repeat = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--inplace")) inplace = atoi(argv[++i]);
    }
    *(void **)&p_last = dlsym(RTLD_DEFAULT, "pcoll_last_algorithm");
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    long maxn = (2 * sizes[NSIZE - 1] / 8) * (size + 1);
    double *in = malloc(maxn * 8), *out = malloc(maxn * 8);
    int last[NCOLL + 1][NSIZE];
    for (int it = 0; it < iters; it++)
        for (int s = 0; s < NSIZE; s++) {
            for (int c = 0; c < NCOLL; c++)
                for (int r = 0; r < repeat; r++) last[c][s] = one(c, sizes[s], MPI_COMM_WORLD, in, out);
            for (int r = 0; r < repeat; r++) last[NCOLL][s] = one(ALLREDUCE, 2 * sizes[s], dup, in, out);
        }
    if (rank == 0) {
        for (int c = 0; c <= NCOLL; c++)
            for (int s = 0; s < NSIZE; s++) {
                int cc = c < NCOLL ? c : ALLREDUCE;
                long bytes = (c < NCOLL ? 1 : 2) * sizes[s], n = bytes / 8, blk = n / size > 0 ? n / size : 1;
                long total = cc == ALLGATHER || cc == RSB ? blk * size * 8 : n * 8; /* the table's bytes */
                printf("final %s %s %ld %s %s %ld %d\n", label[cc], c < NCOLL ? "world" : "dup", bytes,
                       last[c][s] < NALG ? algs[last[c][s]] : "none", cname[cc], total, cc != REDUCEL || size == 1);
            }
    }
    long tot[3] = {calls, wrong, disagree}, sum[3];
    PMPI_Allreduce(tot, sum, 3, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("learn: %ld calls, %ld wrong results, %ld algorithm disagreements\n", sum[0], sum[1], sum[2]);
    MPI_Comm_free(&dup);
    free(in);
    free(out);
    MPI_Finalize();
    return sum[1] || sum[2] ? 1 : 0;
}
