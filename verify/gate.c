/* gate: pcoll's native gate (cdylib/shim/pcoll_gate.c) against the decision it stands in for.
 *
 * Run with pcoll preloaded, PCOLL_TUNING=<the table verify/gate.sh writes>, no PCOLL_STATS (the
 * gate is closed then). The table sends each of the seven collectives to `native` at p = 2
 * below 1 KiB and at p = 4 (a reduce there from 1 KiB only at root 0: a rule reads the root, as
 * learned tables' rules do, and the gate declines the other roots from there), and to a pcoll algorithm
 * elsewhere, so the right choice depends on the communicator's size. (Each collective has its own C entry and memo: shim/pcoll_entry.c.) The program splits MPI_COMM_WORLD (5 ranks) into sub-communicators of
 * sizes 1..4 again and again, freeing each before the next split (the MPI reuses their
 * handles: a size cached for a freed communicator would be wrong for its successor), and
 * checks after every call:
 *   - the result, against a sum computed locally;
 *   - pcoll_last_algorithm, against the table's choice for (p, bytes);
 *   - at the end, that pcoll_stats counts exactly the native calls made (one thread).
 * After every second call on a sub-communicator the same call (its root aside) follows on
 * MPI_COMM_WORLD.
 * Each call's I-form (MPI_Ireduce ... MPI_Ibcast, + MPI_Wait) follows it: its result, and
 * pcoll_last_algorithm("ireduce") ..., against the table's non-blocking rules (native at p = 3,
 * a pcoll algorithm at p = 4, else as the blocking ones), which the gate's non-blocking cells
 * serve (on Open MPI only once pcoll's shadow of the communicator is made: by a blocking call
 * pcoll serves there, or by any blocking call there after an I-form wanted it).
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
#include "mpi_kind.h"

typedef const char *(*last_fn)(const char *);
typedef int (*stats_fn)(const char *, const char *, unsigned long long *, unsigned long long *, double *);
typedef void (*reset_fn)(void);
typedef int (*force_fn)(const char *, const char *);

enum { REDUCE, ALLREDUCE, REDUCE_SCATTER, ALLGATHERV, BCAST, ALLGATHER, RSB, NC };
static const char *names[NC] = {"reduce", "allreduce", "reduce_scatter", "allgatherv",
                                "bcast",  "allgather", "reduce_scatter_block"};
/* What the table (verify/gate.sh) and the forced rounds use where pcoll serves. */
static const char *pcoll_alg[NC] = {"binomial", "binomial", "binomial", "ring", "binomial", "ring", "binomial"};

/* The round's mode: 0 the table decides, 1 `native` forced, 2 a pcoll algorithm forced. */
static int mode;

/* MPICH 4.0's defects below are routed around under MPICH-ABI MPIs other than MPICH 5.0 and
 * Intel MPI 2021, which were checked free of them (`absent` in pcoll::decide::defects). */
#if !(defined(OPEN_MPI) && OPEN_MPI)
static int mpich4;
#endif

/* The second call of each pair of one-rank allgathervs puts its block one element away from
 * the start of the receive buffer (the first puts it at the start, and the gate remembers it). */
static int displaced;

static void find_mpich4(void)
{
#if !(defined(OPEN_MPI) && OPEN_MPI)
    mpich4 = !(intel_mpi() || mpich_major() == 5);
#endif
}

/* The table verify/gate.sh writes, as a function, under the round's mode: is (collective,
 * p, bytes, root) native? Two MPICH 4.0 defects pcoll routes around (pcoll::decide::defects),
 * `native` forced or not (`mpich4`): allgatherv at p = 1 with its block `displaced`, and reduce
 * at a root other than 0 above 2 KiB. */
static int native_expected(int q, int p, long bytes, int root)
{
#if !(defined(OPEN_MPI) && OPEN_MPI)
    if (mpich4 && ((p == 1 && q == ALLGATHERV && displaced) || (q == REDUCE && root != 0 && bytes > 2048)))
        return 0;
#else
    (void)root;
#endif
    if (mode)
        return mode == 1;
    if (q == REDUCE && p == 4 && root != 0 && bytes >= 1024) /* the rule that reads the root */
        return 0;
    return (p == 2 && bytes < 1024) || p == 4 || (p == 1 && q == ALLGATHERV);
}

/* The same for the I-forms: the table's non-blocking rules come first. */
static int native_expected_nb(int q, int p, long bytes, int root)
{
#if !(defined(OPEN_MPI) && OPEN_MPI)
    if (mpich4 && ((p == 1 && q == ALLGATHERV && displaced) || (q == REDUCE && root != 0 && bytes > 2048)))
        return 0; /* the defects first */
#endif
    if (!mode && p == 3)
        return 1;
    if (!mode && p == 4)
        return 0;
    return native_expected(q, p, bytes, root);
}

/* Has pcoll made its shadow of the round's sub-communicator? I-forms on a communicator go
 * native until then (a non-blocking call never waits for the other ranks; on MPICH's ABI
 * until session 49 it started the shadow with MPI_Comm_idup): it is made by a blocking call
 * pcoll serves there, or, once an I-form that pcoll would have served wanted it
 * (shadow_wanted), by the next blocking call there of any kind. */
static int shadow_made, shadow_wanted;

/* Did the last call of `q` (bytes in total) go where the table says? Counts native calls
 * in *natives; returns 1 (and says why) if not. `sub`: a call on the sub-communicator. */
static int served_as_table(last_fn last, int q, int wr, int round, int p, long bytes, int root, long *natives,
                           int sub)
{
    const char *want = native_expected(q, p, bytes, root) ? "native" : NULL;
    const char *got = last(names[q]), *label = names[q];
    char iname[40];
    if (natives == NULL) { /* the I-form */
        snprintf(iname, sizeof iname, "i%s", names[q]);
        want = native_expected_nb(q, p, bytes, root) ? "native" : NULL;
        if (!shadow_made) {
            shadow_wanted |= want == NULL;
            want = "native";
        }
        got = last(iname);
        label = iname;
    }
    int is_native = got && !strcmp(got, "native");
    if (is_native && natives)
        (*natives)++;
    if (natives && sub && (!is_native || shadow_wanted))
        shadow_made = 1;
    if (!got || !*got || (want != NULL) != is_native) {
        printf("gate: FAIL rank %d round %d p=%d %s %ld B root %d served by %s, table says %s\n", wr, round, p,
               label, bytes, root, got && *got ? got : "(none)", want ? want : "a pcoll algorithm");
        return 1;
    }
    return 0;
}

/* One call of collective q with blocks of n doubles on c (p ranks, this rank r), its result
 * checked against values computed here; *bytes: the call's bytes as the table counts them.
 * Returns 1 (and says why) on a wrong result. */
static int call_checked(int q, int n, int root, MPI_Comm c, int p, int r, int round, double *a, double *b,
                        long *bytes, int nb)
{
    int cnt[8], dsp[8], m = (q == REDUCE || q == ALLREDUCE || q == BCAST) ? n : n * p;
    int shift = q == ALLGATHERV && p == 1 && displaced;
    for (int j = 0; j < p; j++) {
        cnt[j] = n;
        dsp[j] = j * n + shift;
    }
    *bytes = (long)m * (long)sizeof(double);
    for (int i = 0; i < m + shift; i++) {
        a[i] = q == ALLGATHERV || q == ALLGATHER ? r * 1000.0 + i : r + i + round;
        b[i] = -1;
    }
    if (q == BCAST && r != root)
        for (int i = 0; i < n; i++)
            a[i] = -1;
    MPI_Request req;
    if (nb) {
        switch (q) {
        case REDUCE: MPI_Ireduce(a, b, n, MPI_DOUBLE, MPI_SUM, root, c, &req); break;
        case ALLREDUCE: MPI_Iallreduce(a, b, n, MPI_DOUBLE, MPI_SUM, c, &req); break;
        case REDUCE_SCATTER: MPI_Ireduce_scatter(a, b, cnt, MPI_DOUBLE, MPI_SUM, c, &req); break;
        case ALLGATHERV: MPI_Iallgatherv(a, n, MPI_DOUBLE, b, cnt, dsp, MPI_DOUBLE, c, &req); break;
        case BCAST: MPI_Ibcast(a, n, MPI_DOUBLE, root, c, &req); break;
        case ALLGATHER: MPI_Iallgather(a, n, MPI_DOUBLE, b, n, MPI_DOUBLE, c, &req); break;
        default: MPI_Ireduce_scatter_block(a, b, n, MPI_DOUBLE, MPI_SUM, c, &req); break;
        }
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    } else switch (q) {
    case REDUCE: MPI_Reduce(a, b, n, MPI_DOUBLE, MPI_SUM, root, c); break;
    case ALLREDUCE: MPI_Allreduce(a, b, n, MPI_DOUBLE, MPI_SUM, c); break;
    case REDUCE_SCATTER: MPI_Reduce_scatter(a, b, cnt, MPI_DOUBLE, MPI_SUM, c); break;
    case ALLGATHERV: MPI_Allgatherv(a, n, MPI_DOUBLE, b, cnt, dsp, MPI_DOUBLE, c); break;
    case BCAST: MPI_Bcast(a, n, MPI_DOUBLE, root, c); break;
    case ALLGATHER: MPI_Allgather(a, n, MPI_DOUBLE, b, n, MPI_DOUBLE, c); break;
    default: MPI_Reduce_scatter_block(a, b, n, MPI_DOUBLE, MPI_SUM, c); break;
    }
    int checked = q == REDUCE ? (r == root ? n : 0) : q == ALLGATHERV || q == ALLGATHER ? n * p : n;
    for (int i = 0; i < checked; i++) {
        double want, got = q == BCAST ? a[i] : b[i + shift];
        int base = q == REDUCE_SCATTER || q == RSB ? r * n : 0; /* this rank's block */
        if (q == BCAST)
            want = root + i + round;
        else if (q == ALLGATHERV || q == ALLGATHER)
            want = (i / n) * 1000.0 + i % n;
        else
            want = (double)p * (base + i + round) + (double)p * (p - 1) / 2;
        if (got != want) {
            printf("gate: FAIL round %d p=%d %s n=%d root %d: [%d] = %g, want %g\n", round, p, names[q], n, root,
                   i, got, want);
            return 1;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int wr, wp;
    MPI_Comm_rank(MPI_COMM_WORLD, &wr);
    MPI_Comm_size(MPI_COMM_WORLD, &wp);
    find_mpich4();
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
    long native_calls[NC] = {0}; /* on this rank */
    const int counts[] = {1, 16, 100, 127, 128, 129, 1000, 5000};
    const int ncounts = sizeof counts / sizeof counts[0];
    double *a = malloc(5000 * 5 * sizeof(double)), *b = malloc(5000 * 5 * sizeof(double));
    reset();
    for (int round = 0; round < rounds && !bad; round++) {
        int k = 1 + round % (wp - 1); /* first group: ranks 0..k-1 */
        mode = (round / 5) % 3;
        /* pcoll_force only when the mode changes (it clears what the gate remembers). */
        for (int q = 0; q < NC && round % 5 == 0; q++)
            if (force(names[q], mode == 0 ? NULL : mode == 1 ? "native" : pcoll_alg[q])) {
                printf("gate: FAIL pcoll_force(%s) refused\n", names[q]);
                bad = 1;
            }
        MPI_Comm c;
        MPI_Comm_split(MPI_COMM_WORLD, wr < k ? 0 : 1, wr, &c);
        shadow_made = shadow_wanted = 0;
        int p, r;
        MPI_Comm_size(c, &p);
        MPI_Comm_rank(c, &r);
        /* Every call twice in a row (the gate remembers its last forwarded call: the second
         * one takes that path), and each round's first count is the previous round's last,
         * on a communicator that may have the freed one's handle and another size. */
        for (int cr = 0; cr < 2 * ncounts && !bad; cr++) {
            int ci = cr / 2, n = counts[(ci + round * (ncounts - 1)) % ncounts], root = (ci + round) % p;
            displaced = cr % 2;
            for (int q = 0; q < NC && !bad; q++) {
                long bytes;
                if (call_checked(q, n, root, c, p, r, round, a, b, &bytes, 0)) {
                    printf("gate: FAIL (rank %d)\n", wr);
                    bad = 1;
                }
                int rt = q == REDUCE || q == BCAST ? root : 0;
                bad |= served_as_table(last, q, wr, round, p, bytes, rt, &native_calls[q], 1);
                if (!bad) {
                    if (call_checked(q, n, root, c, p, r, round, a, b, &bytes, 1)) {
                        printf("gate: FAIL non-blocking (rank %d)\n", wr);
                        bad = 1;
                    }
                    bad |= served_as_table(last, q, wr, round, p, bytes, rt, NULL, 1);
                }
                /* After the second call on c, the same call on MPI_COMM_WORLD (5 ranks, pcoll
                 * serves): what pcoll remembers of the call it served last must not be used for
                 * a call that differs only in its communicator. */
                if (cr % 2 && !bad) {
                    int wroot = (ci + round) % wp; /* the same on both groups */
                    if (call_checked(q, n, wroot, MPI_COMM_WORLD, wp, wr, round, a, b, &bytes, 0)) {
                        printf("gate: FAIL on MPI_COMM_WORLD (rank %d)\n", wr);
                        bad = 1;
                    }
                    rt = q == REDUCE || q == BCAST ? wroot : 0;
                    bad |= served_as_table(last, q, wr, round, wp, bytes, rt, &native_calls[q], 0);
                }
            }
        }
        MPI_Comm_free(&c);
    }
    /* Every native call counted, and only those (one thread: exact). */
    for (int q = 0; q < NC && !bad; q++) {
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
                   : "gate: PASS (%d rounds, 7 collectives and their I-forms, sub-communicators "
                     "of 1..%d ranks, table/forced native/forced pcoll)\n",
               rounds, wp - 1);
    free(a);
    free(b);
    MPI_Finalize();
    return any ? 1 : 0;
}
