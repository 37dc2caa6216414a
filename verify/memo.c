/* memo: the native gate's memo of forwarded calls (cdylib/shim/pcoll_gate.h), compiled with
 * the shim's own C files and run on a real MPI (verify/gate.sh), pcoll's Rust path replaced
 * by the stand-ins below. A stand-in counts the call (a miss: the memo did not repeat it),
 * runs the MPI's own collective and keeps the call as the Rust path keeps a raced cell's
 * native winner (pcoll_gate_keep, with a tally and a limit). With no native range published
 * the full gate forwards nothing, so every call the stand-ins do not see was a memo hit.
 *
 * Checked, at any p >= 1 (gate.sh runs 2 and 3):
 *  - a reduce and a bcast whose root rotates over every rank miss once per side (root 0,
 *    any other root) and then hit, at every rank; p = 1 has one side;
 *  - a root outside the communicator, a reduce's NULL receive buffer at its root, another
 *    count, datatype or op, MPI_IN_PLACE, and a mode change miss;
 *  - the tally stops the hits at its limit (the cell is raced again);
 *  - two shapes alternated (reduce, bcast, allgatherv) miss once each and then hit (the older
 *    memo), three in turn always miss, and two kept with one tally always miss (a counter
 *    counts for one memo only);
 *  - every result is right (sums of rank-dependent data).
 * Last line: `memo: PASS ...` or `memo: FAIL ...`. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pcoll_gate.h"

extern void pcoll_gate_open(void);
extern void pcoll_gate_mode(int coll, int mode);
extern int pcoll_entry_reduce(const void *s, void *r, int n, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm);
extern int pcoll_entry_bcast(void *b, int n, MPI_Datatype dt, int root, MPI_Comm comm);
extern int pcoll_entry_allgatherv(const void *s, int sn, MPI_Datatype st, void *r, const int *counts,
                                  const int *displs, MPI_Datatype rt, MPI_Comm comm);

static long misses[G_NCOLL];
static unsigned long long tally[G_NCOLL], limit = ~0ull;
static int untallied; /* keep calls without a tally (as the gate keeps its own forwarded calls) */
#define TALLY(c) (untallied ? NULL : &tally[c])

int pcoll_rs_reduce(const void *s, void *r, int n, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm)
{
    /* A NULL receive buffer at the root (pcoll reports it): the MPI gets scratch, so that the
     * collective still completes on every rank. */
    static double scratch[1024];
    unsigned gen = pcoll_gate_memo_gen();
    misses[G_REDUCE]++;
    int rc = PMPI_Reduce(s, r ? r : scratch, n, dt, op, root, comm);
    if (rc == MPI_SUCCESS)
        pcoll_gate_keep(G_REDUCE, s, 0, r, NULL, n, dt, op, root, comm, gen, TALLY(G_REDUCE), limit);
    return rc;
}

int pcoll_rs_bcast(void *b, int n, MPI_Datatype dt, int root, MPI_Comm comm)
{
    unsigned gen = pcoll_gate_memo_gen();
    misses[G_BCAST]++;
    int rc = PMPI_Bcast(b, n, dt, root, comm);
    if (rc == MPI_SUCCESS)
        pcoll_gate_keep(G_BCAST, NULL, 0, b, NULL, n, dt, MPI_OP_NULL, root, comm, gen, TALLY(G_BCAST), limit);
    return rc;
}

int pcoll_rs_allgatherv(const void *s, int sn, MPI_Datatype st, void *r, const int *c, const int *d, MPI_Datatype rt,
                        MPI_Comm comm)
{
    unsigned gen = pcoll_gate_memo_gen();
    misses[G_ALLGATHERV]++;
    int rc = PMPI_Allgatherv(s, sn, st, r, c, d, rt, comm);
    if (rc == MPI_SUCCESS)
        pcoll_gate_keep(G_ALLGATHERV, s, sn, r, c, 0, rt, MPI_OP_NULL, -1, comm, gen, TALLY(G_ALLGATHERV), limit);
    return rc;
}

/* The other collectives' entries are not called here. */
#define UNUSED_RS(name, params)                                                                                    \
    int pcoll_rs_##name params                                                                                     \
    {                                                                                                              \
        abort();                                                                                                   \
    }
UNUSED_RS(allreduce, (const void *s, void *r, int n, MPI_Datatype dt, MPI_Op op, MPI_Comm comm))
UNUSED_RS(reduce_scatter, (const void *s, void *r, const int *c, MPI_Datatype dt, MPI_Op op, MPI_Comm comm))
UNUSED_RS(allgather, (const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt, MPI_Comm comm))
UNUSED_RS(reduce_scatter_block, (const void *s, void *r, int n, MPI_Datatype dt, MPI_Op op, MPI_Comm comm))

static int rank, p, failed;

#define CHECK(cond, ...)                                                                                           \
    do {                                                                                                           \
        if (!(cond)) {                                                                                             \
            printf("memo: FAIL rank %d line %d: ", rank, __LINE__);                                                \
            printf(__VA_ARGS__);                                                                                   \
            printf("\n");                                                                                          \
            failed = 1;                                                                                            \
        }                                                                                                          \
    } while (0)

/* `calls` reduces of n doubles (MPI_SUM) whose root is root0 + i * step mod p; every result
 * checked at the root. Returns the misses they took. */
static long reduces(int calls, int n, int root0, int step)
{
    long before = misses[G_REDUCE];
    double *a = malloc(sizeof(double) * (n + 1)), *b = malloc(sizeof(double) * (n + 1));
    for (int i = 0; i < calls; i++) {
        int root = ((root0 + i * step) % p + p) % p;
        for (int k = 0; k < n; k++)
            a[k] = rank + k + i, b[k] = -1;
        int rc = pcoll_entry_reduce(a, b, n, MPI_DOUBLE, MPI_SUM, root, MPI_COMM_WORLD);
        CHECK(rc == MPI_SUCCESS, "reduce %d returned %d", i, rc);
        if (rank == root)
            for (int k = 0; k < n; k++)
                CHECK(b[k] == p * (double)(k + i) + p * (p - 1) / 2.0, "reduce %d root %d: [%d] = %g", i, root, k, b[k]);
    }
    free(a);
    free(b);
    return misses[G_REDUCE] - before;
}

static long bcasts(int calls, int n, int step)
{
    long before = misses[G_BCAST];
    int *a = malloc(sizeof(int) * (n + 1));
    for (int i = 0; i < calls; i++) {
        int root = (i * step) % p;
        for (int k = 0; k < n; k++)
            a[k] = rank == root ? root * 1000 + k + i : -1;
        int rc = pcoll_entry_bcast(a, n, MPI_INT, root, MPI_COMM_WORLD);
        CHECK(rc == MPI_SUCCESS, "bcast %d returned %d", i, rc);
        for (int k = 0; k < n; k++)
            CHECK(a[k] == root * 1000 + k + i, "bcast %d root %d: [%d] = %d", i, root, k, a[k]);
    }
    free(a);
    return misses[G_BCAST] - before;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    pcoll_gate_open();
    int sides = p > 1 ? 2 : 1;
    long m;

    /* Rotating roots: one miss per side, then hits. */
    m = reduces(60, 100, 0, 1);
    CHECK(m == sides, "rotating reduce: %ld misses, want %d", m, sides);
    m = reduces(30, 100, 0, 1);
    CHECK(m == 0, "rotating reduce again: %ld misses, want 0", m);
    m = bcasts(60, 64, 1);
    CHECK(m == sides, "rotating bcast: %ld misses, want %d", m, sides);
    /* Another count, then another datatype: a miss per side each. */
    m = reduces(10, 101, 0, 1);
    CHECK(m == sides, "another count: %ld misses, want %d", m, sides);
    m = reduces(1, 101, 0, 1) + reduces(1, 101, 1, 1);
    CHECK(m == 0, "the new count again: %ld misses, want 0", m);
    /* Another datatype, then another op (only the misses checked). */
    {
        float f[8] = {0}, g[8];
        long before = misses[G_REDUCE];
        pcoll_entry_reduce(f, g, 8, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD);
        pcoll_entry_reduce(f, g, 8, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD);
        pcoll_entry_reduce(f, g, 8, MPI_FLOAT, MPI_MAX, 0, MPI_COMM_WORLD);
        CHECK(misses[G_REDUCE] - before == 2, "another type, then another op: %ld misses, want 2",
              misses[G_REDUCE] - before);
    }
    if (p > 1) {
        /* Back to doubles: a root outside the communicator misses (the MPI reports it). */
        reduces(2, 100, 0, 1);
        double x[100] = {0}, y[100];
        long before = misses[G_REDUCE];
        int rc = pcoll_entry_reduce(x, y, 100, MPI_DOUBLE, MPI_SUM, p, MPI_COMM_WORLD);
        CHECK(misses[G_REDUCE] - before == 1 && rc != MPI_SUCCESS, "root %d: %ld misses, rc %d", p,
              misses[G_REDUCE] - before, rc);
        /* A NULL receive buffer at the root (a root other than 0) misses there only. */
        reduces(p, 100, 1, 1);
        for (int root = 1; root < p; root++) {
            before = misses[G_REDUCE];
            double a[100] = {0}, c[100];
            pcoll_entry_reduce(a, rank == root ? NULL : c, 100, MPI_DOUBLE, MPI_SUM, root, MPI_COMM_WORLD);
            long want = rank == root ? 1 : 0;
            CHECK(misses[G_REDUCE] - before == want, "NULL receive buffer, root %d: %ld misses, want %ld", root,
                  misses[G_REDUCE] - before, want);
            MPI_Barrier(MPI_COMM_WORLD);
        }
    }
    /* MPI_IN_PLACE at the root: a miss there (pcoll decides it), and at the others the call
     * repeats their memo. */
    {
        reduces(2, 50, 0, 0);
        double a[50], b[50];
        for (int k = 0; k < 50; k++)
            a[k] = b[k] = rank;
        long before = misses[G_REDUCE];
        pcoll_entry_reduce(rank == 0 ? MPI_IN_PLACE : a, b, 50, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        long want = rank == 0 ? 1 : 0;
        CHECK(misses[G_REDUCE] - before == want, "in place at root 0: %ld misses, want %ld", misses[G_REDUCE] - before,
              want);
        if (rank == 0)
            CHECK(b[7] == p * (p - 1) / 2.0, "in place: %g", b[7]);
    }
    /* A mode change clears the memos. */
    reduces(4, 100, 0, 1);
    pcoll_gate_mode(G_REDUCE, PCOLL_MODE_CELLS);
    m = reduces(4, 100, 0, 1);
    CHECK(m == sides, "after a mode change: %ld misses, want %d", m, sides);
    /* The tally's limit: hits stop there (each side's cell has its own tally in pcoll; here
     * both sides share one, which only changes where the limit falls). */
    tally[G_REDUCE] = 0;
    limit = 10;
    m = reduces(4, 64, 0, 1);
    CHECK(m == sides, "tally kept: %ld misses, want %d", m, sides);
    tally[G_REDUCE] = 0;
    m = reduces(20, 64, 0, 1);
    CHECK(m == 10, "tally at 10 of 20 calls: %ld misses, want 10", m);

    /* Two shapes alternated: one miss each, then the older memo repeats the other; three in
     * turn: always a miss (two memos); kept with one tally: always a miss. */
    limit = ~0ull;
    untallied = 1;
    m = 0;
    for (int i = 0; i < 20; i++)
        m += reduces(1, 30 + 10 * (i % 2), 0, 1);
    CHECK(m == 2, "two reduces alternated: %ld misses, want 2", m);
    m = 0;
    for (int i = 0; i < 15; i++)
        m += reduces(1, 50 + 10 * (i % 3), 0, 1);
    CHECK(m == 15, "three reduces in turn: %ld misses, want 15", m);
    m = 0;
    for (int i = 0; i < 20; i++)
        m += bcasts(1, 20 + 10 * (i % 2), 1);
    CHECK(m == 2, "two bcasts alternated (root 0): %ld misses, want 2", m);
    {
        int *counts = malloc(sizeof(int) * p), *displs = malloc(sizeof(int) * p);
        int *in = malloc(sizeof(int) * 8), *out = malloc(sizeof(int) * 8 * p);
        long before = misses[G_ALLGATHERV];
        for (int i = 0; i < 20; i++) {
            int n = 4 + 4 * (i % 2);
            for (int j = 0; j < p; j++)
                counts[j] = n, displs[j] = j * n;
            for (int k = 0; k < n; k++)
                in[k] = rank * 100 + k + i;
            pcoll_entry_allgatherv(in, n, MPI_INT, out, counts, displs, MPI_INT, MPI_COMM_WORLD);
            for (int j = 0; j < p; j++)
                for (int k = 0; k < n; k++)
                    CHECK(out[j * n + k] == j * 100 + k + i, "allgatherv %d: [%d] = %d", i, j * n + k, out[j * n + k]);
        }
        m = misses[G_ALLGATHERV] - before;
        CHECK(m == 2, "two allgathervs alternated: %ld misses, want 2", m);
        free(counts), free(displs), free(in), free(out);
    }
    untallied = 0;
    m = 0;
    for (int i = 0; i < 20; i++)
        m += reduces(1, 30 + 10 * (i % 2), 0, 1);
    CHECK(m == 20, "two reduces alternated, one tally: %ld misses, want 20", m);

    int any;
    MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0)
        printf(any ? "memo: FAIL (p = %d)\n" : "memo: PASS (p = %d: rotating roots hit after one miss a side; "
                                                "roots, NULL buffers, keys, modes and tallies miss; two shapes alternate on two memos)\n", p);
    MPI_Finalize();
    return any;
}
