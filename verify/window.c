/* When a communicator's `shm` window is made (crate::shm::after, pcoll::model::shm::WindowWait):
 * the blocking calls that ask for `shm` by a table rule (not forced) run without it until the
 * PCOLL_SHM_AFTER-th (default 8), or until their predicted extra cost reaches the window's;
 * a forced `shm` makes it at once. Each case runs on a fresh MPI_Comm_dup; every call's result
 * is checked against its closed form, and pcoll_last_algorithm after each call gives the call
 * that first ran `shm`.
 *
 *   window <mode>
 *     table    (PCOLL_TUNING: allreduce `shm`, reduce `shm` raced): 64 KiB allreduce and
 *              reduce: calls 1-7 not `shm`, the 8th `shm`; the reduce's 1-7 native, and it
 *              then races (some of its next 64 calls native); under MPICH 5, reduces of a
 *              commutative user op on a type with true lower bound 4 to root 1 (its native
 *              defect) never native;
 *              8 MiB allreduce: `shm` from a call in 2..7 (the rent); an 8 B allreduce
 *              (native) never
 *     first    (the same table, PCOLL_SHM_AFTER=1): the first call runs `shm`
 *     forced   (PCOLL_ALLREDUCE=shm): the first call runs `shm`
 *     nb       (the table, non-blocking rules too): MPI_Iallreduce of 64 KiB, each followed by
 *              an MPI_Barrier: the 8th wants the window, its barrier makes it, the 9th runs
 *              `shm` (with PCOLL_SHM_AFTER=1 or forced: the 2nd)
 *     limit <kept> (PCOLL_ALLREDUCE=shm, PCOLL_SHM_LIMIT room for `kept` windows): kept + 1
 *              live dups, two 64 KiB allreduces each: the first `kept` dups' ran `shm`, the
 *              last's not (its window refused: past the limit); after one dup is freed a new
 *              dup's call runs `shm` again
 *     plain <doubles> <calls>  that many allreduces on a fresh dup, each checked, none
 *              `shm`. gate.sh runs it with PCOLL_NODES and a table rule `hier` (whether the
 *              node steps ran through the nodes' windows shows in the PCOLL_STATS line at
 *              MPI_Finalize: they wait as `shm`'s, made at the 8th call whose node steps would
 *              use them, never for calls under 4 KiB, at once when forced), and with a window
 *              whose pages one rank cannot have (verify/failmadvise.c)
 * At p = 1 (no window to make) every mode but plain checks that the first call runs `shm`.
 * Prints "window: PASS" or "window: FAIL ..." on rank 0; exit status 1 on failure. */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "last_alg.h"
#include "mpi_kind.h"

static int rank, size, fails;

static const char *last(const char *coll)
{
    typedef const char *(*last_fn)(const char *);
    last_fn f = (last_fn)dlsym(RTLD_DEFAULT, "pcoll_last_algorithm");
    return f ? f(coll) : "none";
}

/* Calls after the first `shm` one that ran another algorithm, and calls before it that ran
 * neither `shm` nor native (first_shm's last case). */
static int later_other, before_other;

/* Call k of `coll` (allreduce; reduce to rank 0; iallreduce + MPI_Wait) of n doubles on c,
 * its result checked: the algorithm pcoll ran. */
static const char *one_call(const char *coll, MPI_Comm c, double *s, double *d, size_t n, int k)
{
    for (size_t i = 0; i < n; i++)
        s[i] = (double)(rank + 1) * (double)((i % 1000) + k);
    for (size_t i = 0; i < n; i++)
        d[i] = -1.0;
    int reduce = !strcmp(coll, "reduce");
    if (reduce)
        MPI_Reduce(s, d, (int)n, MPI_DOUBLE, MPI_SUM, 0, c);
    else if (!strcmp(coll, "iallreduce")) {
        MPI_Request q;
        MPI_Iallreduce(s, d, (int)n, MPI_DOUBLE, MPI_SUM, c, &q);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
    } else
        MPI_Allreduce(s, d, (int)n, MPI_DOUBLE, MPI_SUM, c);
    if (!reduce || rank == 0) {
        double tri = (double)size * (size + 1) / 2;
        for (size_t i = 0; i < n; i++)
            if (d[i] != tri * (double)((i % 1000) + k)) {
                fails++;
                fprintf(stderr, "window: rank %d %s n=%zu call %d: element %zu is %g, not %g\n", rank, coll, n, k,
                        i, d[i], tri * (double)((i % 1000) + k));
                break;
            }
    }
    return last(coll);
}

/* `calls` calls of `coll` (allreduce; reduce to rank 0: MPICH 4.0 keeps native away from
 * other roots above 2 KiB, so their raced cells never race; iallreduce, each completed and
 * followed by an MPI_Barrier, which makes a window a non-blocking call wanted) of n doubles
 * on a fresh dup: the 1-based call that first ran `shm` (0: none). */
static int first_shm(const char *coll, size_t n, int calls)
{
    later_other = before_other = 0;
    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    double *s = malloc(n * sizeof *s), *d = malloc(n * sizeof *d);
    int first = 0;
    for (int k = 1; k <= calls; k++) {
        const char *alg = one_call(coll, c, s, d, n, k);
        if (!first && !strcmp(alg, "shm"))
            first = k;
        else if (first && strcmp(alg, "shm"))
            later_other++;
        else if (!first && strcmp(alg, "native"))
            before_other++;
        if (coll[0] == 'i')
            MPI_Barrier(c);
    }
    free(s);
    free(d);
    MPI_Comm_free(&c);
    return first;
}

/* PCOLL_SHM_LIMIT (gate.sh sets it to hold `kept` windows, `shm` forced): `kept` + 1 live dups
 * of MPI_COMM_WORLD, two 64 KiB allreduces on each, checked; then the first dup freed and a new
 * one made. The number of dups whose calls ran `shm` before the free (every one's both calls),
 * and 1000 more if the new dup's ran it (the freed window's room came back). */
static int windows_within_limit(int kept)
{
    enum { N = 8192 };
    MPI_Comm c[64];
    double *s = malloc(N * sizeof *s), *d = malloc(N * sizeof *d);
    int ran = 0;
    for (int j = 0; j <= kept && j < 63; j++) {
        MPI_Comm_dup(MPI_COMM_WORLD, &c[j]);
        int a = !strcmp(one_call("allreduce", c[j], s, d, N, 1), "shm");
        ran += a && !strcmp(one_call("allreduce", c[j], s, d, N, 2), "shm");
    }
    MPI_Comm_free(&c[0]);
    MPI_Comm_dup(MPI_COMM_WORLD, &c[0]);
    if (!strcmp(one_call("allreduce", c[0], s, d, N, 3), "shm"))
        ran += 1000;
    for (int j = 0; j <= kept && j < 63; j++)
        MPI_Comm_free(&c[j]);
    free(s);
    free(d);
    return ran;
}

/* MPICH 5.0 (its own MPI_Reduce with a commutative user op on a type whose true lower bound
 * is not 0, to a root other than 0, frees a wrong pointer: pcoll's defect
 * mpich5-reduce-userop-true-lb). */
static int is_mpich5(void) { return mpich_major() == 5; }

static void sum_lead(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    for (int i = 0; i < *len; i++)
        *(int *)((char *)inout + 12 * i + 4) += *(int *)((char *)in + 12 * i + 4);
}

/* `calls` reduces to root 1 of n elements of an int 4 bytes into a 12-byte extent (true lower
 * bound 4) with a commutative user op, on a fresh dup, each checked: the calls that ran native
 * (the raced reduce rule's waiting calls must not, where the native defect fires). */
static int native_defect_calls(int n, int calls)
{
    MPI_Datatype t0, t;
    int bl = 1;
    MPI_Aint disp = 4;
    MPI_Datatype ty = MPI_INT;
    MPI_Type_create_struct(1, &bl, &disp, &ty, &t0);
    MPI_Type_create_resized(t0, 0, 12, &t);
    MPI_Type_commit(&t);
    MPI_Op op;
    MPI_Op_create(sum_lead, 1, &op);
    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    char *s = calloc((size_t)n, 12), *d = calloc((size_t)n, 12);
    int natives = 0;
    for (int k = 1; k <= calls; k++) {
        for (int i = 0; i < n; i++) {
            *(int *)(s + 12 * i + 4) = (rank + 1) * (i % 100 + k);
            *(int *)(d + 12 * i + 4) = -1;
        }
        MPI_Reduce(s, d, n, t, op, 1, c);
        natives += !strcmp(last("reduce"), "native");
        for (int i = 0; rank == 1 && i < n; i++)
            if (*(int *)(d + 12 * i + 4) != size * (size + 1) / 2 * (i % 100 + k)) {
                fails++;
                fprintf(stderr, "window: rank 1 reduce lead12 call %d: element %d wrong\n", k, i);
                break;
            }
    }
    free(s);
    free(d);
    MPI_Comm_free(&c);
    MPI_Op_free(&op);
    MPI_Type_free(&t);
    MPI_Type_free(&t0);
    return natives;
}

static void want(int ok, const char *what, int got)
{
    /* Every rank must have seen the same first call: compare through PMPI_. */
    int lo = got, hi = got;
    PMPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    PMPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (!ok || lo != hi) {
        fails++;
        if (rank == 0)
            fprintf(stderr, "window: %s: %d (ranks %d..%d)\n", what, got, lo, hi);
    } else if (rank == 0)
        printf("window: %s: %d\n", what, got);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *mode = argc > 1 ? argv[1] : "table";
    int f;
    if (!strcmp(mode, "plain") && argc > 3) {
        /* first_shm checks every result */
        f = first_shm("allreduce", (size_t)atol(argv[2]), atoi(argv[3]));
        want(f == 0, "plain: allreduce, first `shm` call", f);
    } else if (size == 1) {
        /* One rank needs no window: a rule's `shm` runs from the first call, in every mode. */
        f = first_shm("allreduce", 8192, 2);
        want(f == 1, "p = 1: allreduce 64 KiB, first `shm` call", f);
    } else if (!strcmp(mode, "table")) {
        f = first_shm("allreduce", 8192, 10);
        want(f == 8, "allreduce 64 KiB, first `shm` call", f);
        /* The race that starts after the window runs native for some calls (in blocks:
         * docs/learning.md); served again from a kept `shm` call it never would. */
        f = first_shm("reduce", 8192, 72);
        want(f == 8, "reduce 64 KiB (raced), first `shm` call", f);
        want(later_other > 0, "reduce 64 KiB (raced), later calls not `shm`", later_other);
        /* Until the window is made a raced cell's calls run native, the race's other side. */
        want(before_other == 0, "reduce 64 KiB (raced), earlier calls neither `shm` nor native", before_other);
        f = first_shm("allreduce", 1 << 20, 8);
        want(f >= 2 && f <= 7, "allreduce 8 MiB, first `shm` call", f);
        f = first_shm("allreduce", 1, 3);
        want(f == 0, "allreduce 8 B (native), first `shm` call", f);
        /* A waiting call of a raced cell runs native only where no native defect fires. */
        if (is_mpich5()) {
            f = native_defect_calls(5461, 10);
            want(f == 0, "reduce 21 KiB (raced) of a user op on a type with true lower bound 4 to root 1 (MPICH 5's defect), calls native", f);
        }
    } else if (!strcmp(mode, "first") || !strcmp(mode, "forced")) {
        f = first_shm("allreduce", 8192, 2);
        want(f == 1, "allreduce 64 KiB, first `shm` call", f);
        f = first_shm("iallreduce", 8192, 3);
        want(f == 2, "iallreduce 64 KiB, barriers between, first `shm` call", f);
    } else if (!strcmp(mode, "limit") && argc > 2) {
        int kept = atoi(argv[2]);
        f = windows_within_limit(kept);
        want(f == 1000 + kept, "PCOLL_SHM_LIMIT: dups that ran `shm` (+1000: the one made after a free)", f);
    } else if (!strcmp(mode, "nb")) {
        f = first_shm("iallreduce", 8192, 10);
        want(f == 9, "iallreduce 64 KiB, barriers between, first `shm` call", f);
    } else {
        if (rank == 0)
            fprintf(stderr, "window: unknown mode %s\n", mode);
        fails++;
    }
    PMPI_Allreduce(MPI_IN_PLACE, &fails, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
    {
        if (fails)
            printf("window: FAIL (%d)\n", fails);
        else
            printf("window: PASS\n");
    }
    MPI_Finalize();
    return fails != 0;
}
