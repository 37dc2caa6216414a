/* Calls that wait for a communicator's `shm` window, counted on every path (crate::comm's
 * `wait_memo`, dispatch::again, pcoll::model::shm::WindowWait): small calls a table sends to
 * `shm` wait thousands of calls for their window (their predicted gain repays it only then);
 * their repeats are forwarded from C by the gate's memo, or served again in Rust, or take the
 * full path, and each path counts them. Every rank must make the window in the same call.
 *
 *   waitmemo <calls> <seed> [nb]
 *
 * First, on a dup of its own, a fixed sequence: 200 reduces of 4 KiB at root 0, 200 of
 * 8 KiB with MPI_IN_PLACE at the root (whose memo declines them: the other ranks' keep
 * them), then 4 KiB ones until the window is made (at most 8000).
 * Then two dups of MPI_COMM_WORLD; `calls` calls chosen by a generator seeded alike on every rank:
 * runs of 1..80 repeats of one shape (so that the memo forwards them), the shape drawn from
 * allreduce / reduce / bcast (the first dup: 4 KiB allreduces only, whose window waits longest),
 * roots 0..p-1, 4, 8 or 16 KiB of doubles, either dup; one run in four "odd": a reduce with
 * MPI_IN_PLACE at its root, an allreduce in place, a bcast of a derived type (one double made
 * contiguous), calls the gate's memo declines on some ranks or all (until session 58 a
 * root whose memo declined its in-place call counted the earlier call's repeats with the
 * wrong rent, made the window after the other ranks, and the job hung); in one run in three,
 * before each call, the even ranks alone make an 8-byte and a 16-byte allreduce, reduce and
 * bcast on a communicator of their own, which take the memos of those lines there and not on
 * the odd ranks (so that ranks count the waiting calls on different paths). Every result
 * is checked against its closed form. Prints, on rank 0, one line
 *   waitmemo: first <h> <i> <j>
 * with the call (1-based, over each sequence: h the fixed one's) at which each dup first ran
 * `shm` (pcoll_last_algorithm; 0: never), after checking that every rank saw the same; and
 * "waitmemo: PASS" or "waitmemo: FAIL ...". gate.sh compares the first line with a run under
 * PCOLL_LOG=debug, where every call takes the full path and is counted one by one.
 * With `nb` the calls are MPI_Iallreduce / MPI_Ireduce / MPI_Ibcast, each completed by
 * MPI_Wait, each followed by an 8-byte MPI_Allreduce on the same dup (a blocking collective
 * makes the window a non-blocking call wanted, so the next call runs `shm`: docs/shm.md). */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "last_alg.h"

static int rank, size, fails, nb;
static MPI_Datatype dbl1; /* one double, contiguous: a derived type */

static unsigned long long rng;
static unsigned next(unsigned n)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (unsigned)((rng >> 33) % n);
}

static const char *last(const char *coll)
{
    typedef const char *(*last_fn)(const char *);
    last_fn f = (last_fn)dlsym(RTLD_DEFAULT, "pcoll_last_algorithm");
    return f ? f(coll) : "none";
}

/* Call k: `coll` (0 allreduce, 1 reduce, 2 bcast) of n doubles on c at `root`, checked;
 * `odd`: a reduce in place at the root, an allreduce in place, a bcast of dbl1. */
static const char *one_call(int coll, MPI_Comm c, int root, double *s, double *d, int n, int k, int odd)
{
    for (int i = 0; i < n; i++) {
        s[i] = (double)(rank + 1) * (double)((i % 1000) + k);
        d[i] = (coll == 2 || (coll == 1 && odd)) && rank == root ? s[i] : coll == 0 && odd ? s[i] : -1.0;
    }
    MPI_Datatype t = coll == 2 && odd ? dbl1 : MPI_DOUBLE;
    const void *sb = odd && (coll == 0 || rank == root) ? MPI_IN_PLACE : s;
    double tri = (double)size * (size + 1) / 2;
    double scale = tri;
    const char *name;
    MPI_Request q = MPI_REQUEST_NULL;
    if (coll == 0) {
        if (nb)
            MPI_Iallreduce(sb, d, n, MPI_DOUBLE, MPI_SUM, c, &q);
        else
            MPI_Allreduce(sb, d, n, MPI_DOUBLE, MPI_SUM, c);
        name = nb ? "iallreduce" : "allreduce";
    } else if (coll == 1) {
        if (nb)
            MPI_Ireduce(sb, d, n, MPI_DOUBLE, MPI_SUM, root, c, &q);
        else
            MPI_Reduce(sb, d, n, MPI_DOUBLE, MPI_SUM, root, c);
        name = nb ? "ireduce" : "reduce";
    } else {
        if (nb)
            MPI_Ibcast(d, n, t, root, c, &q);
        else
            MPI_Bcast(d, n, t, root, c);
        name = nb ? "ibcast" : "bcast";
        scale = root + 1;
    }
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    if (coll != 1 || rank == root)
        for (int i = 0; i < n; i++)
            if (d[i] != scale * (double)((i % 1000) + k)) {
                fails++;
                fprintf(stderr, "waitmemo: rank %d %s n=%d root %d call %d: element %d is %g, not %g\n", rank, name, n,
                        root, k, i, d[i], scale * (double)((i % 1000) + k));
                break;
            }
    const char *alg = last(name);
    if (nb) {
        double x = 1.0, y = 0.0;
        MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, c);
        if (y != (double)size) {
            fails++;
            fprintf(stderr, "waitmemo: rank %d: 8-byte allreduce after call %d is %g\n", rank, k, y);
        }
    }
    return alg;
}

/* An 8-byte and a 16-byte allreduce, reduce and bcast on `e` (the even ranks'), checked. */
static void evict_memos(MPI_Comm e)
{
    int me, n;
    MPI_Comm_rank(e, &me);
    MPI_Comm_size(e, &n);
    for (int len = 1; len <= 2; len++) {
        double x[2] = {me + 1.0, me + 1.0}, y[2] = {0, 0}, z[2] = {0, 0}, b[2] = {me == 0 ? 7.0 : 0, me == 0 ? 7.0 : 0};
        MPI_Allreduce(x, y, len, MPI_DOUBLE, MPI_SUM, e);
        MPI_Reduce(x, z, len, MPI_DOUBLE, MPI_SUM, 0, e);
        MPI_Bcast(b, len, MPI_DOUBLE, 0, e);
        if (y[len - 1] != n * (n + 1) / 2.0 || (me == 0 && z[len - 1] != n * (n + 1) / 2.0) || b[len - 1] != 7.0) {
            fails++;
            fprintf(stderr, "waitmemo: rank %d: the even ranks' %d-double calls are wrong\n", rank, len);
        }
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 3) {
        if (!rank)
            fprintf(stderr, "usage: waitmemo <calls> <seed>\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int calls = atoi(argv[1]);
    rng = strtoull(argv[2], NULL, 10);
    nb = argc > 3 && !strcmp(argv[3], "nb");
    MPI_Comm evens;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &evens);
    MPI_Type_contiguous(1, MPI_DOUBLE, &dbl1);
    MPI_Type_commit(&dbl1);
    MPI_Comm c[2];
    MPI_Comm_dup(MPI_COMM_WORLD, &c[0]);
    MPI_Comm_dup(MPI_COMM_WORLD, &c[1]);
    enum { MAX = 16384 / 8 };
    double *s = malloc(MAX * sizeof *s), *d = malloc(MAX * sizeof *d);
    int first[3] = {0, 0, 0};
    MPI_Comm h;
    MPI_Comm_dup(MPI_COMM_WORLD, &h);
    for (int k = 1; k <= 8400 && !first[2]; k++) {
        int odd = k > 200 && k <= 400;
        if (!strcmp(one_call(1, h, 0, s, d, odd ? 1024 : 512, k, odd), "shm"))
            first[2] = k;
    }
    MPI_Comm_free(&h);
    for (int k = 1; k <= calls;) {
        int run = 1 + (int)next(80), coll = (int)next(3), root = (int)next((unsigned)size), w = (int)next(2);
        int odd = next(4) == 0, evict = next(3) == 0;

        int n = (4096 << next(3)) / 8;
        if (w == 0) /* the first dup's 4 KiB allreduces gain least: its window waits longest */
            coll = 0, n = 4096 / 8;
        for (int j = 0; j < run && k <= calls; j++, k++) {
            if (evict && rank % 2 == 0)
                evict_memos(evens);
            const char *alg = one_call(coll, c[w], root, s, d, n, k, odd);
            if (!first[w] && !strcmp(alg, "shm"))
                first[w] = k;
        }
    }
    int lo[3], hi[3];
    MPI_Allreduce(first, lo, 3, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(first, hi, 3, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    int bad = fails;
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (!rank) {
        printf("waitmemo: first %d %d %d\n", first[2], first[0], first[1]);
        if (bad)
            printf("waitmemo: FAIL (%d wrong results)\n", bad);
        else if (lo[0] != hi[0] || lo[1] != hi[1] || lo[2] != hi[2])
            printf("waitmemo: FAIL (ranks made the windows at calls %d..%d, %d..%d and %d..%d)\n", lo[2], hi[2], lo[0],
                   hi[0], lo[1], hi[1]);
        else
            printf("waitmemo: PASS\n");
    }
    free(s);
    free(d);
    MPI_Comm_free(&c[0]);
    MPI_Comm_free(&c[1]);
    MPI_Type_free(&dbl1);
    MPI_Comm_free(&evens);
    MPI_Finalize();
    return bad ? 1 : 0;
}
