/* An A/B benchmark written apart from pcoll-bench, to check it: native (PMPI_X) against the
 * interposed call (MPI_X, i.e. pcoll when libpcoll.so is preloaded, with its default
 * decision), alternated per iteration (ABBA, then BAAB) in one process, a barrier before every timed
 * call, each repetition's time the maximum over ranks, the median over repetitions.
 * Shares no code with pcoll (plain C, MPI only).
 *
 *   mpirun -np 4 -x LD_PRELOAD=build/openmpi/libpcoll.so build/verify/ab-openmpi \
 *       [collective=reduce|allreduce|reduce_scatter|allgatherv|bcast|allgather|reduce_scatter_block,
 *        or its non-blocking form ireduce, iallreduce, ...: MPI_I<coll> + MPI_Wait against
 *        PMPI_I<coll> + PMPI_Wait]
 *       [iters=400] [sizes in bytes...] [cold=1]
 * root=R (anywhere): reduce's and bcast's root (default 0; R mod p).
 * cold=1 (anywhere in the arguments): every call, native and interposed alike, on the next
 * send/receive pair of a pool of at least 96 MiB per rank (as IMB's -off_cache); default hot.
 * warm=1 (hot buffers): each rank rewrites its send buffer before every sample, untimed, as an
 * application writes its input between calls: hot, a peer's unchanged input stays cached on
 * the core that reads it (a single-copy native reads it there), where an application's fresh
 * input has to cross from its writer's core (session 37's VM: 12-24 GB/s).
 * Prints one line per size: "ab <collective> <p> <bytes> <native_us> <mpi_us> <ratio>
 * <floor_us> <x_floor> <hot|cold|warm>": the floor is ONE CORE's memory-stream bound for the bytes
 * the busiest rank moves (z = x + y over the vector or the largest block for the reductions,
 * memcpy of what a rank receives for bcast and allgather(v); "-" where nothing moves), timed
 * on rank 0 alone while the others wait at a barrier, same buffer temperature; x_floor =
 * mpi_us / floor_us. The first seven fields are as they always were. With AB_MEAN=1 in the
 * environment two more columns, the means over every timed call of each side (what a run
 * pays in total, outliers and PCOLL_LEARN's exploration included). A sample is one call;
 * AB_BATCH=n times n calls back to back after the barrier (the batch's time / n), AB_BATCH=auto
 * batches calls under 2 us (native's fastest warm-up call) up to 16, unless a node has more
 * ranks than cores. mix=BYTES (anywhere): before each sample, untimed, a call of the same
 * collective of BYTES on the same side (native or interposed), as a program alternating two
 * shapes of one collective (a solver's 8-byte dot product between its larger reductions). */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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

#define POOL_MIN ((size_t)96 << 20) /* a cold pool spans >= 3x this machine's 32 MiB L3 */
#define PAGE 4096
#define STAGGER 320 /* part i of a set starts i * 320 bytes past a page: no 4 KiB aliasing */

static size_t round_up(size_t x, size_t a) { return (x + a - 1) / a * a; }

/* Sets of nparts parts of len bytes each, repeated over >= 96 MiB when cold (one set hot);
 * every set starts on a page, filled with byte `fill`, rotated by pool_next. */
struct pool {
    char *mem;
    size_t stride, sets, cur, len;
    int nparts;
};

static void pool_init(struct pool *pl, int nparts, size_t len, int cold, int fill)
{
    pl->nparts = nparts;
    pl->len = len;
    pl->stride = round_up((size_t)(nparts - 1) * (round_up(len, PAGE) + STAGGER) + len, PAGE);
    if (pl->stride == 0)
        pl->stride = PAGE;
    pl->sets = cold ? (POOL_MIN + pl->stride - 1) / pl->stride : 1;
    if (cold && pl->sets < 2)
        pl->sets = 2;
    pl->cur = 0;
    if (posix_memalign((void **)&pl->mem, PAGE, pl->stride * pl->sets))
        PMPI_Abort(MPI_COMM_WORLD, 3);
    memset(pl->mem, fill, pl->stride * pl->sets);
}

static char *pool_part(struct pool *pl, size_t set, int part)
{
    return pl->mem + set * pl->stride + (size_t)part * (round_up(pl->len, PAGE) + STAGGER);
}

static void pool_next(struct pool *pl) { pl->cur = (pl->cur + 1) % pl->sets; }

enum coll { REDUCE, ALLREDUCE, REDUCE_SCATTER, ALLGATHERV, BCAST, ALLGATHER, REDUCE_SCATTER_BLOCK, NCOLL };

static int root; /* root=R: the root of reduce and bcast (and their I-forms); default 0 */

struct bufs {
    double *s, *r;
    int n, blk, *counts, *displs; /* blk: the regular calls' count per rank */
    struct pool pool;             /* parts 0, 1: send and receive buffers */
};

/* The counts of `bytes` of doubles over p ranks (at least one element), and the pool of
 * send and receive buffers (hot: one set); returns the elements a buffer holds. */
static size_t bufs_init(struct bufs *b, long bytes, int p, int cold)
{
    b->n = bytes / 8 > 0 ? (int)(bytes / 8) : 1;
    b->counts = malloc(sizeof(int) * p);
    b->displs = malloc(sizeof(int) * p);
    for (int j = 0, acc = 0; j < p; j++) {
        b->counts[j] = b->n / p + (j < b->n % p);
        b->displs[j] = acc;
        acc += b->counts[j];
    }
    b->blk = b->n / p > 0 ? b->n / p : 1;
    size_t room = (size_t)(b->n > b->blk * p ? b->n : b->blk * p);
    pool_init(&b->pool, 2, sizeof(double) * room, cold, 0);
    return room;
}

static int call(enum coll c, int native, struct bufs *b, int rank, int p)
{
    switch (c) {
    case REDUCE:
        return native ? PMPI_Reduce(b->s, b->r, b->n, MPI_DOUBLE, MPI_SUM, root, MPI_COMM_WORLD)
                      : MPI_Reduce(b->s, b->r, b->n, MPI_DOUBLE, MPI_SUM, root, MPI_COMM_WORLD);
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
        return native ? PMPI_Bcast(b->r, b->n, MPI_DOUBLE, root, MPI_COMM_WORLD)
                      : MPI_Bcast(b->r, b->n, MPI_DOUBLE, root, MPI_COMM_WORLD);
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

/* The non-blocking form of collective c (issue 27): initiation, then the wait, both native
 * (PMPI_I<coll> + PMPI_Wait) or both interposed (MPI_I<coll> + MPI_Wait). */
static int call_nb(enum coll c, int native, struct bufs *b, int rank)
{
    MPI_Request q = MPI_REQUEST_NULL;
    int rc = MPI_ERR_OTHER;
    switch (c) {
    case REDUCE:
        rc = native ? PMPI_Ireduce(b->s, b->r, b->n, MPI_DOUBLE, MPI_SUM, root, MPI_COMM_WORLD, &q)
                    : MPI_Ireduce(b->s, b->r, b->n, MPI_DOUBLE, MPI_SUM, root, MPI_COMM_WORLD, &q);
        break;
    case ALLREDUCE:
        rc = native ? PMPI_Iallreduce(b->s, b->r, b->n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &q)
                    : MPI_Iallreduce(b->s, b->r, b->n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &q);
        break;
    case REDUCE_SCATTER:
        rc = native ? PMPI_Ireduce_scatter(b->s, b->r, b->counts, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &q)
                    : MPI_Ireduce_scatter(b->s, b->r, b->counts, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &q);
        break;
    case ALLGATHERV:
        rc = native ? PMPI_Iallgatherv(b->s, b->counts[rank], MPI_DOUBLE, b->r, b->counts, b->displs,
                                       MPI_DOUBLE, MPI_COMM_WORLD, &q)
                    : MPI_Iallgatherv(b->s, b->counts[rank], MPI_DOUBLE, b->r, b->counts, b->displs,
                                      MPI_DOUBLE, MPI_COMM_WORLD, &q);
        break;
    case BCAST:
        rc = native ? PMPI_Ibcast(b->r, b->n, MPI_DOUBLE, root, MPI_COMM_WORLD, &q)
                    : MPI_Ibcast(b->r, b->n, MPI_DOUBLE, root, MPI_COMM_WORLD, &q);
        break;
    case ALLGATHER:
        rc = native ? PMPI_Iallgather(b->s, b->blk, MPI_DOUBLE, b->r, b->blk, MPI_DOUBLE, MPI_COMM_WORLD, &q)
                    : MPI_Iallgather(b->s, b->blk, MPI_DOUBLE, b->r, b->blk, MPI_DOUBLE, MPI_COMM_WORLD, &q);
        break;
    case REDUCE_SCATTER_BLOCK:
        rc = native ? PMPI_Ireduce_scatter_block(b->s, b->r, b->blk, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &q)
                    : MPI_Ireduce_scatter_block(b->s, b->r, b->blk, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &q);
        break;
    case NCOLL:
        break;
    }
    if (rc != MPI_SUCCESS)
        return rc;
    return native ? PMPI_Wait(&q, MPI_STATUS_IGNORE) : MPI_Wait(&q, MPI_STATUS_IGNORE);
}

static int nonblocking; /* the collective's name began with "i": its non-blocking form */

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static int batch = 1; /* calls per timed sample (see main) */
static int warm;      /* warm=1: each rank rewrites its send buffer before each sample */
static long mix;      /* mix=BYTES: an untimed call of BYTES before each sample (see main) */
static struct bufs mixb;

/* One timed sample: barrier, `batch` calls each on the pool's next set (hot: the only one),
 * the maximum over ranks of their time divided by `batch`. */
static double timed(enum coll c, int native, struct bufs *b, int rank, int p)
{
    if (warm) { /* as an application does between calls: its input written anew (not timed) */
        double *s = (double *)pool_part(&b->pool, b->pool.cur, 0);
        for (int i = 0; i < b->n; i++)
            s[i] = (double)(rank + i % 7);
    }
    if (mix && (nonblocking ? call_nb(c, native, &mixb, rank) : call(c, native, &mixb, rank, p)) != MPI_SUCCESS)
        PMPI_Abort(MPI_COMM_WORLD, 2);
    PMPI_Barrier(MPI_COMM_WORLD);
    double t0 = now();
    for (int j = 0; j < batch; j++) {
        pool_next(&b->pool);
        b->s = (double *)pool_part(&b->pool, b->pool.cur, 0);
        b->r = (double *)pool_part(&b->pool, b->pool.cur, 1);
        if ((nonblocking ? call_nb(c, native, b, rank) : call(c, native, b, rank, p)) != MPI_SUCCESS)
            PMPI_Abort(MPI_COMM_WORLD, 2);
    }
    double t = (now() - t0) / batch, m = 0;
    PMPI_Allreduce(&t, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return m;
}

__attribute__((target("avx2"), optimize("tree-vectorize"))) static void
add_avx2(double *restrict z, const double *restrict x, const double *restrict y, size_t n)
{
    for (size_t i = 0; i < n; i++) z[i] = x[i] + y[i];
}

__attribute__((optimize("tree-vectorize"))) static void
add_sse2(double *restrict z, const double *restrict x, const double *restrict y, size_t n)
{
    for (size_t i = 0; i < n; i++) z[i] = x[i] + y[i];
}

/* The floor's kernel on the pool's current set, then (cold) the next set. */
static void kernel(struct pool *pl, int add, int avx2)
{
    char *a = pool_part(pl, pl->cur, 0), *b = pool_part(pl, pl->cur, 1);
    if (!add)
        memcpy(b, a, pl->len);
    else if (avx2)
        add_avx2((double *)pool_part(pl, pl->cur, 2), (double *)a, (double *)b, pl->len / 8);
    else
        add_sse2((double *)pool_part(pl, pl->cur, 2), (double *)a, (double *)b, pl->len / 8);
    if (pl->sets > 1)
        pool_next(pl);
}

/* Median time (us) of z = x + y over `bytes` (add) or a memcpy of them, on this core: a sample
 * averages k kernels (>= 2 us), 15..201 samples in about 40 ms. */
static double kernel_us(int add, size_t bytes, int cold)
{
    struct pool pl;
    pool_init(&pl, add ? 3 : 2, round_up(bytes, 8), cold, 0x3F); /* 0x3F..: normal doubles */
    int avx2 = __builtin_cpu_supports("avx2");
    double est = 1e9, t[201];
    for (int i = 0; i < 3; i++) {
        double t0 = now();
        kernel(&pl, add, avx2);
        double d = now() - t0;
        est = d < est ? d : est;
    }
    est = est > 1e-9 ? est : 1e-9;
    int k = (int)(2e-6 / est) + 1, n = (int)(0.04 / (k * est));
    k = k > 1000 ? 1000 : k;
    n = n < 15 ? 15 : n > 201 ? 201 : n;
    for (int i = 0; i < n; i++) {
        double t0 = now();
        for (int j = 0; j < k; j++)
            kernel(&pl, add, avx2);
        t[i] = (now() - t0) / k;
    }
    free(pl.mem);
    qsort(t, n, sizeof *t, cmp);
    return t[n / 2] * 1e6;
}

/* The floor (us) of a call: what the busiest rank must stream, timed on rank 0 while the
 * others wait at a barrier; 0 where nothing moves (bcast at p = 1). Collective. */
static double floor_us(enum coll c, struct bufs *b, int rank, int p, int cold)
{
    size_t m = (size_t)b->n * 8, bytes = m;
    int add = p > 1;
    switch (c) {
    case REDUCE_SCATTER: /* the largest block is the first */
        bytes = (size_t)b->counts[0] * 8;
        break;
    case REDUCE_SCATTER_BLOCK:
        bytes = (size_t)b->blk * 8;
        break;
    case BCAST:
        add = 0;
        bytes = p > 1 ? m : 0;
        break;
    case ALLGATHERV: /* all but the smallest block, the last */
        add = 0;
        bytes = p > 1 ? m - (size_t)b->counts[p - 1] * 8 : m;
        break;
    case ALLGATHER:
        add = 0;
        bytes = (size_t)b->blk * 8 * (p > 1 ? p - 1 : 1);
        break;
    default:
        break;
    }
    double f = 0;
    PMPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0 && bytes > 0)
        f = kernel_us(add, bytes, cold);
    PMPI_Barrier(MPI_COMM_WORLD);
    PMPI_Bcast(&f, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    return f;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int cold = 0, na = 1;
    for (int a = 1; a < argc; a++) { /* cold=1 anywhere; the others stay positional */
        if (!strncmp(argv[a], "cold=", 5))
            cold = atoi(argv[a] + 5);
        else if (!strncmp(argv[a], "warm=", 5))
            warm = atoi(argv[a] + 5);
        else if (!strncmp(argv[a], "root=", 5))
            root = atoi(argv[a] + 5);
        else if (!strncmp(argv[a], "mix=", 4))
            mix = atol(argv[a] + 4);
        else
            argv[na++] = argv[a];
    }
    argc = na;
    int rank, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    root = ((root % p) + p) % p;
    if (mix > 0) { /* the other shape's buffers: one hot set */
        bufs_init(&mixb, mix, p, 0);
        mixb.s = (double *)pool_part(&mixb.pool, 0, 0);
        mixb.r = (double *)pool_part(&mixb.pool, 0, 1);
    }
    /* More ranks on this node than online cores (the same answer on every rank of a
     * one-node run; a multi-node run's nodes may differ, so the maximum is taken). */
    int oversubscribed = 0;
    {
        MPI_Comm node;
        int local = 1;
        PMPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
        PMPI_Comm_size(node, &local);
        PMPI_Comm_free(&node);
        int mine = local > sysconf(_SC_NPROCESSORS_ONLN);
        PMPI_Allreduce(&mine, &oversubscribed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    }
    const char *names[] = {"reduce",     "allreduce", "reduce_scatter", "allgatherv",
                           "bcast",      "allgather", "reduce_scatter_block"};
    enum coll c = REDUCE;
    if (argc > 1) {
        const char *name = argv[1];
        if (name[0] == 'i') { /* ireduce, iallreduce, ...: the non-blocking form + wait */
            nonblocking = 1;
            name++;
        }
        for (int k = 0; k < NCOLL; k++)
            if (!strcmp(name, names[k]))
                c = (enum coll)k;
    }
    int iters = argc > 2 ? atoi(argv[2]) : 400;
    long sizes_default[] = {8, 64, 512, 2048, 4096, 32768, 262144};
    int nsizes = argc > 3 ? argc - 3 : 7;
    double *tn = malloc(sizeof(double) * iters * 2), *tp = malloc(sizeof(double) * iters * 2);
    for (int k = 0; k < nsizes; k++) {
        long bytes = argc > 3 ? atol(argv[3 + k]) : sizes_default[k];
        struct bufs b;
        size_t room = bufs_init(&b, bytes, p, cold);
        for (size_t set = 0; set < b.pool.sets; set++)
            for (size_t i = 0; i < room; i++) {
                double *s = (double *)pool_part(&b.pool, set, 0), *r = (double *)pool_part(&b.pool, set, 1);
                s[i] = r[i] = rank + i % 7;
            }
        double fl = floor_us(c, &b, rank, p, cold);
        /* 5 warm-up pairs a size; 50 before the first: a process's first calls (connections,
         * page faults, the VM settling) read up to 1.6x on either side in the first cell only */
        batch = 1;
        double fastest = 1;
        for (int w = 0; w < (k == 0 ? 50 : 5); w++) {
            double t = timed(c, 1, &b, rank, p);
            fastest = t < fastest ? t : fastest;
            timed(c, 0, &b, rank, p);
        }
        /* AB_BATCH=auto: calls under 2 us timed in batches of up to 16 back to back (>= 2 us a
         * sample): one call of MPICH's 0.2 us bcast is 20 ticks of a 10 ns clock, and the
         * barrier's exit skew is as large as the call. Off by default: back to back, calls
         * overlap, and a batch measures throughput where a single call after a barrier (and
         * PCOLL_LEARN's timing) measures latency (Open MPI allreduce 4 KiB: `shm` 0.72x native
         * in batches, 0.83x from a barrier). The same ranks' maximum on every rank: one batch.
         * Not with more ranks on the node than cores: back to back, such calls measure how the
         * scheduler interleaves the ranks (Open MPI, 4 ranks on 2 cores: native bcast 8 B
         * 0.11 us a call in batches, 3.5 us alone), not what a call costs. */
        if (getenv("AB_BATCH") && !strcmp(getenv("AB_BATCH"), "auto")) {
            if (fastest < 2e-6 && !oversubscribed)
                batch = fastest * 16 < 2e-6 ? 16 : (int)(2e-6 / fastest) + 1;
        } else if (getenv("AB_BATCH"))
            batch = atoi(getenv("AB_BATCH")) > 0 ? atoi(getenv("AB_BATCH")) : 1;
        int nn = 0, np = 0;
        for (int i = 0; i < iters; i++) {
            /* ABBA (native, mpi, mpi, native), then BAAB: each side takes every position of
             * the four alike. With ABBA alone the middle two read slower in cold sub-us cells:
             * PMPI_Bcast on both sides, Open MPI 4.1, p = 2, 16-256 B cold, read 1.13-1.46x
             * (session 42); alternated, 0.95-1.01. */
            int a = i % 2;
            double *ta = a ? tp : tn, *tb = a ? tn : tp;
            int *na = a ? &np : &nn, *nb = a ? &nn : &np;
            ta[(*na)++] = timed(c, !a, &b, rank, p);
            tb[(*nb)++] = timed(c, a, &b, rank, p);
            tb[(*nb)++] = timed(c, a, &b, rank, p);
            ta[(*na)++] = timed(c, !a, &b, rank, p);
        }
        double sn = 0, sp = 0;
        for (int i = 0; i < nn; i++) sn += tn[i];
        for (int i = 0; i < np; i++) sp += tp[i];
        double mn = median(tn, nn) * 1e6, mp = median(tp, np) * 1e6;
        char mean[64] = "";
        if (getenv("AB_MEAN"))
            snprintf(mean, sizeof mean, " %.3f %.3f", sn / nn * 1e6, sp / np * 1e6);
        if (rank == 0 && fl > 0)
            printf("ab %s%s %d %ld %.3f %.3f %.3f %.3f %.3f %s%s\n", nonblocking ? "i" : "", names[c], p,
                   bytes, mn, mp, mp / mn, fl, mp / fl, cold ? "cold" : warm ? "warm" : "hot", mean);
        else if (rank == 0)
            printf("ab %s%s %d %ld %.3f %.3f %.3f - - %s%s\n", nonblocking ? "i" : "", names[c], p, bytes, mn,
                   mp, mp / mn, cold ? "cold" : warm ? "warm" : "hot", mean);
        fflush(stdout);
        free(b.pool.mem);
        free(b.counts);
        free(b.displs);
    }
    free(tn);
    free(tp);
    MPI_Finalize();
    return 0;
}
