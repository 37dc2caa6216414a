/* example.c -- a small, ordinary MPI program for `make demo`.
 *
 * It knows nothing about pcoll: run it as is, or with LD_PRELOAD=libpcoll.so (and
 * PCOLL_STATS=1 to see which algorithms served the calls). Each rank contributes 1 MiB of
 * doubles; rank 0 prints checksums of an MPI_Reduce and an MPI_Allreduce result, which are
 * compared with the exact expected value (the inputs are small integers, so every
 * summation order gives the same result).
 *
 *   mpirun -np 4 ./example
 *   mpirun -np 4 -x LD_PRELOAD=build/openmpi/libpcoll.so -x PCOLL_STATS=1 ./example
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define N (1024 * 1024 / sizeof(double)) /* 1 MiB of doubles per rank */

int main(int argc, char **argv)
{
    int rank, size, errors = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    double *in = malloc(N * sizeof(double)), *out = malloc(N * sizeof(double));
    for (size_t i = 0; i < N; i++)
        in[i] = (double)((i + (size_t)rank) % 7); /* element i of rank r: (i + r) mod 7 */

    /* expected checksum: sum over i and r of (i + r) mod 7 */
    double expect = 0;
    for (int r = 0; r < size; r++)
        for (size_t i = 0; i < N; i++)
            expect += (double)((i + (size_t)r) % 7);

    double t0 = MPI_Wtime();
    MPI_Reduce(in, out, (int)N, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    double t1 = MPI_Wtime();
    if (rank == 0) {
        double sum = 0;
        for (size_t i = 0; i < N; i++)
            sum += out[i];
        printf("MPI_Reduce    of %zu doubles on %d ranks: checksum %.0f (expected %.0f) %s, %.3f ms\n", (size_t)N,
               size, sum, expect, sum == expect ? "ok" : "WRONG", (t1 - t0) * 1e3);
        errors += sum != expect;
    }

    t0 = MPI_Wtime();
    MPI_Allreduce(in, out, (int)N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    t1 = MPI_Wtime();
    double sum = 0;
    for (size_t i = 0; i < N; i++)
        sum += out[i];
    if (sum != expect)
        errors++;
    if (rank == 0)
        printf("MPI_Allreduce of %zu doubles on %d ranks: checksum %.0f (expected %.0f) %s, %.3f ms\n", (size_t)N,
               size, sum, expect, sum == expect ? "ok" : "WRONG", (t1 - t0) * 1e3);

    int all_errors = 0; /* (MPI_Reduce is what is being demonstrated; count with a gather) */
    int *errs = rank == 0 ? malloc(sizeof(int) * (size_t)size) : NULL;
    MPI_Gather(&errors, 1, MPI_INT, errs, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        for (int r = 0; r < size; r++)
            all_errors += errs[r];
        printf("%s example %d\n", all_errors ? "FAILED" : "PASS", 2);
        free(errs);
    }
    free(in);
    free(out);
    MPI_Finalize();
    return errors != 0;
}
