/* Calls served again from the decisions pcoll keeps (cdylib/src/dispatch/again.rs: the last
 * few calls per collective and form): loops that cycle over several shapes of a call — the
 * root rotating, two sizes, two communicators (MPI_COMM_WORLD and a split of it) — in a
 * period shorter than what is kept (every call found again), longer (every call missing),
 * and in a random order (the same on every rank), blocking and non-blocking. Every result
 * is checked against its closed form, and the algorithm pcoll ran must be the one forced
 * (PCOLL_REDUCE=... in the environment; argv[1] names it, "-" for no check).
 * Prints "again: PASS" or "again: FAIL ..." on rank 0. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef const char *(*last_fn)(const char *);

enum { NSHAPE = 6, MAXN = 40000 };

struct shape {
    int coll; /* 0 reduce, 1 allreduce, 2 bcast, 3 allgatherv */
    int n;    /* elements per rank (allgatherv: of rank 0; rank r sends n + r) */
    int root;
    int split; /* on the split communicator */
};

static const char *names[] = {"reduce", "allreduce", "bcast", "allgatherv"};

/* The value rank `r` contributes at element `i` of call `k`. */
static double val(int r, int i, int k) { return (double)((r + 1) * 3 + i % 11 + k % 5); }

static int run(const struct shape *sh, MPI_Comm comm, int k, int nb, double *s, double *d,
               int *counts, int *displs)
{
    int r, p, bad = 0;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &p);
    int n = sh->n, root = sh->root % p;
    MPI_Request q = MPI_REQUEST_NULL;
    switch (sh->coll) {
    case 0:
    case 1:
        for (int i = 0; i < n; i++) s[i] = val(r, i, k);
        for (int i = 0; i < n; i++) d[i] = -1;
        if (sh->coll == 0)
            nb ? MPI_Ireduce(s, d, n, MPI_DOUBLE, MPI_SUM, root, comm, &q)
               : MPI_Reduce(s, d, n, MPI_DOUBLE, MPI_SUM, root, comm);
        else
            nb ? MPI_Iallreduce(s, d, n, MPI_DOUBLE, MPI_SUM, comm, &q)
               : MPI_Allreduce(s, d, n, MPI_DOUBLE, MPI_SUM, comm);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        if (sh->coll == 1 || r == root)
            for (int i = 0; i < n; i++) {
                double want = 0;
                for (int j = 0; j < p; j++) want += val(j, i, k);
                bad += d[i] != want;
            }
        break;
    case 2:
        for (int i = 0; i < n; i++) d[i] = r == root ? val(root, i, k) : -1;
        nb ? MPI_Ibcast(d, n, MPI_DOUBLE, root, comm, &q) : MPI_Bcast(d, n, MPI_DOUBLE, root, comm);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        for (int i = 0; i < n; i++) bad += d[i] != val(root, i, k);
        break;
    case 3: {
        int total = 0;
        for (int j = 0; j < p; j++) {
            counts[j] = n + j;
            displs[j] = total;
            total += counts[j];
        }
        for (int i = 0; i < counts[r]; i++) s[i] = val(r, i, k);
        for (int i = 0; i < total; i++) d[i] = -1;
        nb ? MPI_Iallgatherv(s, counts[r], MPI_DOUBLE, d, counts, displs, MPI_DOUBLE, comm, &q)
           : MPI_Allgatherv(s, counts[r], MPI_DOUBLE, d, counts, displs, MPI_DOUBLE, comm);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        for (int j = 0; j < p; j++)
            for (int i = 0; i < counts[j]; i++) bad += d[displs[j] + i] != val(j, i, k);
        break;
    }
    }
    return bad;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int r, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    const char *want = argc > 1 ? argv[1] : "-";
    last_fn last = (last_fn)dlsym(RTLD_DEFAULT, "pcoll_last_algorithm");
    MPI_Comm split; /* ranks in two halves, numbered backwards */
    MPI_Comm_split(MPI_COMM_WORLD, r % 2, p - r, &split);
    double *s = malloc(sizeof(double) * MAXN), *d = malloc(sizeof(double) * MAXN * 16);
    int *counts = malloc(sizeof(int) * p), *displs = malloc(sizeof(int) * p);
    int bad = 0, wrong_alg = 0, calls = 0;
    char first_wrong[160] = "";
    unsigned seed = 12345; /* the same sequence on every rank */
    for (int coll = 0; coll < 4; coll++) {
        /* Six shapes: roots 0..2, two sizes (the second across the shm cell boundary of
         * 256 KiB / 64 KiB), two communicators. */
        struct shape sh[NSHAPE];
        for (int j = 0; j < NSHAPE; j++) {
            sh[j].coll = coll;
            sh[j].n = j % 2 ? 37 : 9000 + 7 * j;
            sh[j].root = j % 3;
            sh[j].split = j >= 4;
        }
        for (int nb = 0; nb < 2; nb++)
            for (int phase = 0; phase < 3; phase++)
                for (int k = 0; k < 36; k++) {
                    int j = phase == 0 ? k % 3 : phase == 1 ? k % NSHAPE : (int)((seed = seed * 1103515245u + 12345u) >> 16) % NSHAPE;
                    MPI_Comm comm = sh[j].split ? split : MPI_COMM_WORLD;
                    int b = run(&sh[j], comm, k, nb, s, d, counts, displs);
                    bad += b;
                    calls++;
                    int cp;
                    MPI_Comm_size(comm, &cp);
                    char name[32];
                    snprintf(name, sizeof name, "%s%s", nb ? "i" : "", names[coll]);
                    const char *alg = last ? last(name) : "?";
                    if (strcmp(want, "-") && cp > 1 && (!alg || strcmp(alg, want))) {
                        if (!wrong_alg)
                            snprintf(first_wrong, sizeof first_wrong, "%s shape %d (n=%d root=%d split=%d) ran %s",
                                     name, j, sh[j].n, sh[j].root, sh[j].split, alg ? alg : "(null)");
                        wrong_alg++;
                    }
                    if (b && bad == b && r == 0)
                        fprintf(stderr, "again: %s shape %d (n=%d root=%d split=%d) call %d: %d wrong\n",
                                name, j, sh[j].n, sh[j].root, sh[j].split, k, b);
                }
    }
    int tot[2] = {bad, wrong_alg}, all[2];
    MPI_Allreduce(tot, all, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (r == 0) {
        if (all[0] || all[1])
            printf("again: FAIL p=%d: %d wrong elements, %d calls not run by %s%s%s\n", p, all[0], all[1], want,
                   first_wrong[0] ? "; first: " : "", first_wrong);
        else
            printf("again: PASS p=%d (%d calls, %s)\n", p, calls, want);
    }
    MPI_Comm_free(&split);
    MPI_Finalize();
    return 0;
}
