/* gate: pcoll's native gate (cdylib/shim/pcoll_gate.c) against the decision it stands in for.
 *
 * Run with pcoll preloaded, PCOLL_TUNING=<the table verify/gate.sh writes>, no PCOLL_STATS (the
 * gate is closed then). The table sends allreduce and allgatherv to `native` at p = 2 below
 * 1 KiB and at p = 4, and to pcoll's algorithms elsewhere, so the right choice depends on the
 * communicator's size. The program splits MPI_COMM_WORLD (5 ranks) into sub-communicators of
 * sizes 1..4 again and again, freeing each before the next split (the MPI reuses their
 * handles: a size cached for a freed communicator would be wrong for its successor), and
 * checks after every call:
 *   - the result, against a sum computed locally;
 *   - pcoll_last_algorithm, against the table's choice for (p, bytes);
 *   - at the end, that pcoll_stats counts exactly the native calls made (one thread).
 * Rounds come in three modes, switched every few rounds with pcoll_force (which the gate
 * follows by one mode byte, not by republishing its table): the table's choice; `native`
 * forced (every call native); a pcoll algorithm forced (no call native).
 * Also a communicator with more ranks than the gate serves is not needed here (p <= 5).
 * Prints `gate: PASS` or `gate: FAIL ...` on rank 0; exit status 1 on failure. */
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef const char *(*last_fn)(const char *);
typedef int (*stats_fn)(const char *, const char *, unsigned long long *, unsigned long long *, double *);
typedef void (*reset_fn)(void);
typedef int (*force_fn)(const char *, const char *);

/* The round's mode: 0 the table decides, 1 `native` forced, 2 a pcoll algorithm forced. */
static int mode;

/* The table verify/gate.sh writes, as a function, under the round's mode: is (collective,
 * p, bytes) native? MPICH 4.0's allgatherv at p = 1 is a native defect pcoll routes around
 * (pcoll::decide::defects), `native` forced or not. */
static int native_expected(const char *coll, int p, long bytes)
{
#if !(defined(OPEN_MPI) && OPEN_MPI)
    if (p == 1 && !strcmp(coll, "allgatherv"))
        return 0;
#endif
    if (mode)
        return mode == 1;
    return (p == 2 && bytes < 1024) || p == 4;
}

/* Did the last call of `coll` (bytes in total) go where the table says? Counts native calls
 * in *natives; returns 1 (and says why) if not. */
static int served_as_table(last_fn last, const char *coll, int wr, int round, int p, long bytes, long *natives)
{
    const char *want = native_expected(coll, p, bytes) ? "native" : NULL;
    const char *got = last(coll);
    int is_native = got && !strcmp(got, "native");
    if (is_native)
        (*natives)++;
    if (!got || !*got || (want != NULL) != is_native) {
        printf("gate: FAIL rank %d round %d p=%d %s %ld B served by %s, table says %s\n", wr, round, p, coll, bytes,
               got && *got ? got : "(none)", want ? want : "a pcoll algorithm");
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int wr, wp;
    MPI_Comm_rank(MPI_COMM_WORLD, &wr);
    MPI_Comm_size(MPI_COMM_WORLD, &wp);
    last_fn last = (last_fn)dlsym(RTLD_DEFAULT, "pcoll_last_algorithm");
    stats_fn stats = (stats_fn)dlsym(RTLD_DEFAULT, "pcoll_stats");
    reset_fn reset = (reset_fn)dlsym(RTLD_DEFAULT, "pcoll_stats_reset");
    force_fn force = (force_fn)dlsym(RTLD_DEFAULT, "pcoll_force");
    if (!last || !stats || !reset || !force) {
        if (wr == 0)
            printf("gate: FAIL pcoll is not preloaded\n");
        MPI_Finalize();
        return 1;
    }
    int rounds = argc > 1 ? atoi(argv[1]) : 200;
    int bad = 0;
    long native_calls[2] = {0, 0}; /* allreduce, allgatherv on this rank */
    const int counts[] = {1, 16, 100, 127, 128, 129, 1000, 5000};
    const int ncounts = sizeof counts / sizeof counts[0];
    double *a = malloc(5000 * 5 * sizeof(double)), *b = malloc(5000 * 5 * sizeof(double));
    reset();
    for (int round = 0; round < rounds && !bad; round++) {
        int k = 1 + round % (wp - 1); /* first group: ranks 0..k-1 */
        mode = (round / 5) % 3;
        const char *alg[2][3] = {{NULL, "native", "binomial"}, {NULL, "native", "ring"}};
        /* pcoll_force only when the mode changes (it clears what the gate remembers). */
        if (round % 5 == 0 && (force("allreduce", alg[0][mode]) || force("allgatherv", alg[1][mode]))) {
            printf("gate: FAIL pcoll_force refused\n");
            bad = 1;
        }
        MPI_Comm c;
        MPI_Comm_split(MPI_COMM_WORLD, wr < k ? 0 : 1, wr, &c);
        int p, r;
        MPI_Comm_size(c, &p);
        MPI_Comm_rank(c, &r);
        /* Every call twice in a row (the gate remembers its last forwarded call: the second
         * one takes that path), and each round's first count is the previous round's last,
         * on a communicator that may have the freed one's handle and another size. */
        for (int cr = 0; cr < 2 * ncounts && !bad; cr++) {
            int ci = cr / 2;
            int n = counts[(ci + round * (ncounts - 1)) % ncounts];
            long bytes = (long)n * (long)sizeof(double);
            /* allreduce: element i of rank r is r + i + round */
            for (int i = 0; i < n; i++)
                a[i] = r + i + round;
            MPI_Allreduce(a, b, n, MPI_DOUBLE, MPI_SUM, c);
            for (int i = 0; i < n && !bad; i++) {
                double s = (double)p * (i + round) + (double)p * (p - 1) / 2;
                if (b[i] != s) {
                    printf("gate: FAIL rank %d round %d p=%d allreduce n=%d: [%d] = %g, want %g\n", wr, round,
                           p, n, i, b[i], s);
                    bad = 1;
                }
            }
            bad |= served_as_table(last, "allreduce", wr, round, p, bytes, &native_calls[0]);
            /* allgatherv: rank j contributes n elements j*1000 + i */
            int rc[8], dp[8];
            for (int j = 0; j < p; j++) {
                rc[j] = n;
                dp[j] = j * n;
            }
            for (int i = 0; i < n; i++)
                a[i] = r * 1000.0 + i;
            MPI_Allgatherv(a, n, MPI_DOUBLE, b, rc, dp, MPI_DOUBLE, c);
            for (int j = 0; j < p && !bad; j++)
                for (int i = 0; i < n && !bad; i++)
                    if (b[j * n + i] != j * 1000.0 + i) {
                        printf("gate: FAIL rank %d round %d p=%d allgatherv n=%d: block %d [%d] = %g\n", wr, round,
                               p, n, j, i, b[j * n + i]);
                        bad = 1;
                    }
            bad |= served_as_table(last, "allgatherv", wr, round, p, bytes * p, &native_calls[1]);
        }
        MPI_Comm_free(&c);
    }
    /* Every native call counted, and only those (one thread: exact). */
    const char *names[2] = {"allreduce", "allgatherv"};
    for (int q = 0; q < 2 && !bad; q++) {
        unsigned long long calls = 0, by = 0;
        double t = 0;
        stats(names[q], "native", &calls, &by, &t);
        if ((long)calls != native_calls[q]) {
            printf("gate: FAIL rank %d: pcoll_stats(%s, native) = %llu calls, %ld made\n", wr, names[q], calls,
                   native_calls[q]);
            bad = 1;
        }
    }
    int any;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (wr == 0)
        printf(any ? "gate: FAIL\n"
                   : "gate: PASS (%d rounds, sub-communicators of 1..%d ranks, table/forced native/forced pcoll)\n",
               rounds, wp - 1);
    free(a);
    free(b);
    MPI_Finalize();
    return any ? 1 : 0;
}
