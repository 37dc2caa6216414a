/* MPI-4 sessions under pcoll: communicators made by MPI_Comm_create_from_group from a
 * session's "mpi://WORLD" process set, with and without the world model.
 *
 *   sessions only   no MPI_Init at all: MPI_COMM_WORLD and MPI_COMM_SELF do not exist, so
 *                   pcoll forwards every call to the MPI (pcoll_last_algorithm: "native";
 *                   not checked where MPI_Initialized says the world model runs anyway)
 *   mixed           MPI_Init_thread first, then a session: pcoll serves the session's
 *                   communicator as any other (the algorithm forced in the environment runs)
 *   kept            as mixed, but the session's communicator is not freed before the
 *                   session is finalized (which frees nothing): pcoll's window and shadow
 *                   of it are freed in MPI_Finalize
 *   after           MPI_Init ... MPI_Finalize, then a session (MPI-4 allows it; of the MPIs
 *                   here only MPICH 5 runs it natively): forwarded
 *
 * In each, the seven collectives blocking, MPI_Iallreduce + MPI_Wait and MPI_Allreduce_init
 * + MPI_Start/MPI_Wait, at 1 to 32768 doubles, every result against its closed form; the
 * communicator is freed, then the session finalized. argv: the mode ("sessions", "mixed",
 * "kept", "after") and, for "mixed" and "kept", the algorithm forced ("-" for no check). Prints "sessions:
 * PASS <mode>" or "sessions: FAIL ..." on every rank; "sessions: PASS (no MPI-4 sessions)"
 * where the MPI predates them. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "last_alg.h"

/* Open MPI 5 has sessions but says MPI 3.1 in mpi.h. */
#if MPI_VERSION < 4 && !(defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5)
int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    printf("sessions: PASS (no MPI-4 sessions)\n");
    MPI_Finalize();
    return 0;
}
#else

static double val(int r, int i) { return (double)((r + 1) * 3 + i % 13); }

/* The collectives on `c`; returns the number of wrong elements, and names the first call
 * whose algorithm was not `want` (NULL: no check) in *odd. */
static long run(MPI_Comm c, const char *want, const char **odd)
{
    int r, p;
    MPI_Comm_rank(c, &r);
    MPI_Comm_size(c, &p);
    long bad = 0;
#define CHECK_ALG(name) check_alg(name, want, 1, odd)
    for (int n = 1; n <= 32768; n *= 8) {
        double *x = malloc(sizeof(double) * n * p), *y = malloc(sizeof(double) * n * p);
        int *counts = malloc(sizeof(int) * p), *displs = malloc(sizeof(int) * p);
        double sum0 = 0;
        for (int q = 0; q < p; q++) counts[q] = n, displs[q] = q * n, sum0 += (q + 1) * 3;
        for (int i = 0; i < n * p; i++) x[i] = val(r, i);
        /* reduce to the last rank */
        MPI_Reduce(x, y, n, MPI_DOUBLE, MPI_SUM, p - 1, c);
        CHECK_ALG("reduce");
        if (r == p - 1)
            for (int i = 0; i < n; i++) bad += y[i] != sum0 + (double)p * (i % 13);
        MPI_Allreduce(x, y, n, MPI_DOUBLE, MPI_SUM, c);
        CHECK_ALG("allreduce");
        for (int i = 0; i < n; i++) bad += y[i] != sum0 + (double)p * (i % 13);
        MPI_Reduce_scatter(x, y, counts, MPI_DOUBLE, MPI_SUM, c);
        CHECK_ALG("reduce_scatter");
        for (int i = 0; i < n; i++) bad += y[i] != sum0 + (double)p * ((r * n + i) % 13);
        MPI_Reduce_scatter_block(x, y, n, MPI_DOUBLE, MPI_SUM, c);
        CHECK_ALG("reduce_scatter_block");
        for (int i = 0; i < n; i++) bad += y[i] != sum0 + (double)p * ((r * n + i) % 13);
        MPI_Allgather(x, n, MPI_DOUBLE, y, n, MPI_DOUBLE, c);
        CHECK_ALG("allgather");
        for (int q = 0; q < p; q++)
            for (int i = 0; i < n; i++) bad += y[q * n + i] != val(q, i);
        MPI_Allgatherv(x, n, MPI_DOUBLE, y, counts, displs, MPI_DOUBLE, c);
        CHECK_ALG("allgatherv");
        for (int q = 0; q < p; q++)
            for (int i = 0; i < n; i++) bad += y[q * n + i] != val(q, i);
        for (int i = 0; i < n; i++) y[i] = r == 0 ? val(7, i) : -1;
        MPI_Bcast(y, n, MPI_DOUBLE, 0, c);
        CHECK_ALG("bcast");
        for (int i = 0; i < n; i++) bad += y[i] != val(7, i);
        MPI_Request q;
        MPI_Iallreduce(x, y, n, MPI_DOUBLE, MPI_SUM, c, &q);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        for (int i = 0; i < n; i++) bad += y[i] != sum0 + (double)p * (i % 13);
        MPI_Allreduce_init(x, y, n, MPI_DOUBLE, MPI_SUM, c, MPI_INFO_NULL, &q);
        for (int k = 0; k < 2; k++) {
            memset(y, 0, sizeof(double) * n);
            MPI_Start(&q);
            MPI_Wait(&q, MPI_STATUS_IGNORE);
            for (int i = 0; i < n; i++) bad += y[i] != sum0 + (double)p * (i % 13);
        }
        MPI_Request_free(&q);
        free(x), free(y), free(counts), free(displs);
    }
    return bad;
}

/* A session and its communicator over "mpi://WORLD"; runs the collectives, frees both. */
static long in_session(const char *want, const char **odd, int keep)
{
    MPI_Session s;
    MPI_Group g;
    MPI_Comm c;
    if (MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &s) != MPI_SUCCESS ||
        MPI_Group_from_session_pset(s, "mpi://WORLD", &g) != MPI_SUCCESS ||
        MPI_Comm_create_from_group(g, "org.pcoll.verify.sessions", MPI_INFO_NULL,
                                   MPI_ERRORS_RETURN, &c) != MPI_SUCCESS) {
        *odd = "making the session's communicator";
        return 1;
    }
    /* Intel MPI starts the world model with the first session (MPI_Initialized says so):
     * pcoll then serves the call as any other, with its built-in table. */
    int world;
    MPI_Initialized(&world);
    long bad = run(c, want && !strcmp(want, "native") && world ? NULL : want, odd);
    if (!keep) MPI_Comm_free(&c); /* "kept": left to MPI_Finalize (a session's finalize frees nothing) */
    MPI_Group_free(&g);
    MPI_Session_finalize(&s);
    return bad;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "sessions";
    const char *want = argc > 2 && strcmp(argv[2], "-") ? argv[2] : NULL;
    const char *odd = NULL;
    long bad = 0;
    if (!strcmp(mode, "sessions")) {
        bad = in_session("native", &odd, 0);
    } else if (!strcmp(mode, "mixed") || !strcmp(mode, "kept")) {
        int got;
        MPI_Init_thread(&argc, &argv, MPI_THREAD_SINGLE, &got);
        bad = in_session(want, &odd, !strcmp(mode, "kept"));
        bad += run(MPI_COMM_WORLD, want, &odd);
        MPI_Finalize();
    } else if (!strcmp(mode, "after")) {
        MPI_Init(&argc, &argv);
        bad = run(MPI_COMM_WORLD, want, &odd);
        MPI_Finalize();
        if (!odd) bad += in_session("native", &odd, 0);
    } else {
        printf("sessions: FAIL unknown mode %s\n", mode);
        return 2;
    }
    if (bad || odd)
        printf("sessions: FAIL %s: %ld wrong elements%s%s\n", mode, bad, odd ? ", first odd: " : "",
               odd ? odd : "");
    else
        printf("sessions: PASS %s\n", mode);
    return bad || odd;
}
#endif
