/* freecb.c -- a communicator's attribute delete callback that calls collectives on other
 * communicators (legal: a callback may call MPI; libraries free their state so). X and Y
 * duplicate MPI_COMM_WORLD; every rank sets a delete callback on X, the even ranks before X's
 * first collective and the odd ones after it (setting an attribute is local, so each rank's
 * callbacks run in an order of its own, pcoll's among them). 10 allreduces on X and on Y of
 * n doubles (argv[1], default 131072: pcoll's `shm` window on X), then MPI_Comm_free(X),
 * whose callback does an MPI_Allreduce on MPI_COMM_WORLD and frees Y. Until session 53
 * pcoll's own delete callback did its collective window release there: with the callbacks
 * in another order on two ranks, the job hung. With `disconnect` as the second argument X
 * goes by MPI_Comm_disconnect instead (through pcoll since session 54; verify/freecb_f.f90
 * is the Fortran form). Results against closed forms; rank 0 prints `freecb: PASS` or
 * `freecb: FAIL (n wrong)`. */
#include <string.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static MPI_Comm Y;
static long wrong;

static int on_delete(MPI_Comm c, int key, void *val, void *extra)
{
    (void)c, (void)key, (void)val, (void)extra;
    int rank, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    double x = rank + 1, s = 0;
    MPI_Allreduce(&x, &s, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    wrong += s != p * (p + 1) / 2.0;
    MPI_Comm_free(&Y);
    return MPI_SUCCESS;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, p, key, n = argc > 1 ? atoi(argv[1]) : 131072;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    MPI_Comm X;
    MPI_Comm_dup(MPI_COMM_WORLD, &X);
    MPI_Comm_dup(MPI_COMM_WORLD, &Y);
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, on_delete, &key, NULL);
    if (rank % 2 == 0)
        MPI_Comm_set_attr(X, key, NULL);
    double *a = malloc(8 * (size_t)n), *b = malloc(8 * (size_t)n);
    for (int it = 0; it < 10; it++)
        for (int k = 0; k < 2; k++) {
            for (int i = 0; i < n; i++)
                a[i] = rank + i % 7;
            MPI_Allreduce(a, b, n, MPI_DOUBLE, MPI_SUM, k ? Y : X);
            for (int i = 0; i < n; i++)
                wrong += b[i] != p * (p - 1) / 2.0 + (double)p * (i % 7);
            if (it == 0 && k == 0 && rank % 2 == 1)
                MPI_Comm_set_attr(X, key, NULL);
        }
    if (argc > 2 && strcmp(argv[2], "disconnect") == 0)
        MPI_Comm_disconnect(&X);
    else
        MPI_Comm_free(&X);
    wrong += X != MPI_COMM_NULL || Y != MPI_COMM_NULL;
    MPI_Comm_free_keyval(&key);
    long all = 0;
    MPI_Reduce(&wrong, &all, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf(all ? "freecb: FAIL (%ld wrong)\n" : "freecb: PASS\n", all);
    free(a), free(b);
    MPI_Finalize();
    return 0;
}
