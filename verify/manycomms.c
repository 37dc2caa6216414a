/* More live communicators than pcoll can shadow: argv[1] duplicates of MPI_COMM_WORLD made
 * first (until the MPI refuses one: MPICH's 2048 context ids), then an allreduce on each,
 * with the communicators' default error handler (MPI_ERRORS_ARE_FATAL). The first call pcoll
 * serves on a communicator duplicates it (its shadow); once the MPI has no context id left
 * that fails, and the call must go to the MPI (one warning) instead of failing or aborting:
 * until session 29 every allreduce past the 46th returned an error (MPICH 4.0). Each result
 * checked. argv[2] = "nb": two MPI_Iallreduce + MPI_Wait on each instead, both must succeed
 * (no blocking collective made a shadow: they go to the MPI; until session 49 the first
 * started the shadow with MPI_Comm_idup on MPICH's ABI and could fail with MPI_ERR_INTERN).
 * argv[2] = "turns": each communicator made in turn and given three 64 KiB MPI_Allreduce
 * before the next is made, all kept (a program making communicators as it goes): calls that
 * run native (at p = 2 the tables' `shm`, whose window waits for the 8th call) need no shadow,
 * so the program gets as many communicators as natively (gate.sh compares the two counts);
 * until session 37 the first call made the shadow, and MPICH ran out at half.
 * argv[2] = "free": argv[1] times in turn, a dup with an attribute whose copy and delete
 * callbacks count their calls, then on it an MPI_Iallreduce (its first call), an
 * MPI_Allreduce (makes pcoll's shadow), an MPI_Iallreduce freed with MPI_Comm_free before
 * its MPI_Wait (legal: pending operations complete), each result checked: every delete
 * callback must run once and no copy callback at all, as natively. Until session 49, on
 * MPICH's ABI the first call's pending MPI_Comm_idup kept every freed communicator (no delete
 * callback, MPI_Comm_dup failing at the 1023rd), the free with a pending call hung, and on
 * every MPI the shadow's dup ran the copy callback and the delete callback twice.
 * Prints "manycomms: PASS <comms>" or "manycomms: FAIL ..." per rank. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int copies, deletes;
static int count_copy(MPI_Comm c, int kv, void *extra, void *in, void *out, int *flag)
{
    (void)c, (void)kv, (void)extra;
    copies++;
    *(void **)out = in;
    *flag = 1;
    return MPI_SUCCESS;
}
static int count_delete(MPI_Comm c, int kv, void *val, void *extra)
{
    (void)c, (void)kv, (void)val, (void)extra;
    deletes++;
    return MPI_SUCCESS;
}

/* The "free" form: returns the number of wrong elements and failed calls. */
static long free_form(int n, int r, int p)
{
    enum { N = 1000 };
    double x[N], y[N];
    long bad = 0;
    int kv;
    MPI_Comm_create_keyval(count_copy, count_delete, &kv, NULL);
    for (int i = 0; i < n; i++) {
        MPI_Comm c;
        MPI_Request q;
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
        MPI_Comm_set_attr(c, kv, &copies);
        for (int step = 0; step < 3; step++) {
            for (int k = 0; k < N; k++) x[k] = r + k + i + step, y[k] = -1;
            if (step == 1)
                bad += MPI_Allreduce(x, y, N, MPI_DOUBLE, MPI_SUM, c) != MPI_SUCCESS;
            else
                bad += MPI_Iallreduce(x, y, N, MPI_DOUBLE, MPI_SUM, c, &q) != MPI_SUCCESS;
            if (step == 2)
                MPI_Comm_free(&c);
            if (step != 1)
                bad += MPI_Wait(&q, MPI_STATUS_IGNORE) != MPI_SUCCESS;
            for (int k = 0; k < N; k++) bad += y[k] != p * (p - 1) / 2.0 + (double)p * (k + i + step);
        }
    }
    MPI_Comm_free_keyval(&kv);
    if (copies != 0 || deletes != n)
        printf("manycomms: rank %d: %d copy callbacks (0 expected), %d delete callbacks (%d expected)\n", r,
               copies, deletes, n);
    return bad + (copies != 0) + (deletes != n);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int n = argc > 1 ? atoi(argv[1]) : 2100, r, p, failed = 0, made = 0;
    int nb = argc > 2 && !strcmp(argv[2], "nb");
    int turns = argc > 2 && !strcmp(argv[2], "turns");
    long wrong = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    if (argc > 2 && !strcmp(argv[2], "free")) {
        wrong = free_form(n, r, p);
        if (wrong)
            printf("manycomms: FAIL rank %d: %ld wrong elements or failed calls\n", r, wrong);
        else
            printf("manycomms: PASS %d communicators\n", n);
        MPI_Finalize();
        return wrong != 0;
    }
    MPI_Comm *c = malloc(sizeof(MPI_Comm) * n);
    /* the dup that runs out returns its error here (not fatal), and then no more are made */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (turns) {
        enum { M = 8192 };
        double *x = malloc(M * sizeof(double)), *y = malloc(M * sizeof(double));
        while (made < n && MPI_Comm_dup(MPI_COMM_WORLD, &c[made]) == MPI_SUCCESS) {
            for (int k = 0; k < 3; k++) {
                for (int j = 0; j < M; j++) x[j] = r + j + k, y[j] = -1;
                if (MPI_Allreduce(x, y, M, MPI_DOUBLE, MPI_SUM, c[made]) != MPI_SUCCESS)
                    failed++;
                for (int j = 0; j < M; j++) wrong += y[j] != p * (p - 1) / 2.0 + (double)p * (j + k);
            }
            made++;
        }
        free(x);
        free(y);
    }
    while (!turns && made < n && MPI_Comm_dup(MPI_COMM_WORLD, &c[made]) == MPI_SUCCESS) {
        if (nb) /* the first call may return an error (below) */
            MPI_Comm_set_errhandler(c[made], MPI_ERRORS_RETURN);
        made++;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    enum { N = 1000 };
    double x[N], y[N];
    for (int i = 0; i < (turns ? 0 : made); i++) {
        for (int k = 0; k < N; k++) x[k] = r + k + i, y[k] = -1;
        if (nb) {
            MPI_Request q;
            if (MPI_Iallreduce(x, y, N, MPI_DOUBLE, MPI_SUM, c[i], &q) != MPI_SUCCESS ||
                MPI_Wait(&q, MPI_STATUS_IGNORE) != MPI_SUCCESS)
                failed++;
            for (int k = 0; k < N; k++) wrong += y[k] != p * (p - 1) / 2.0 + (double)p * (k + i), y[k] = -1;
            if (MPI_Iallreduce(x, y, N, MPI_DOUBLE, MPI_SUM, c[i], &q) != MPI_SUCCESS ||
                MPI_Wait(&q, MPI_STATUS_IGNORE) != MPI_SUCCESS)
                failed++;
        } else if (MPI_Allreduce(x, y, N, MPI_DOUBLE, MPI_SUM, c[i]) != MPI_SUCCESS) {
            failed++;
        }
        for (int k = 0; k < N; k++) wrong += y[k] != p * (p - 1) / 2.0 + (double)p * (k + i);
    }
    for (int i = 0; i < made; i++) MPI_Comm_free(&c[i]);
    if (failed || wrong)
        printf("manycomms: FAIL rank %d: %d communicators, %d calls failed, %ld wrong elements\n",
               r, made, failed, wrong);
    else
        printf("manycomms: PASS %d communicators\n", made);
    free(c);
    MPI_Finalize();
    return failed || wrong;
}
