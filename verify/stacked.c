/* stacked.c -- non-blocking and persistent collectives completed through a profiling tool's
 * wrappers (verify/tool.c, loaded before or after libpcoll.so; verify/stacked.sh). Blocking
 * allreduces first (pcoll's shadow and window), then: MPI_Iallreduce + MPI_Wait, MPI_Ibcast
 * of a strided vector type freed right after the initiation + MPI_Wait, MPI_Iallgather
 * completed by an MPI_Test loop, MPI_Ireduce + MPI_Waitall, and a persistent
 * MPI_Allreduce_init started three times. Every result against its closed form; last line
 * on rank 0: `stacked: PASS` or `stacked: FAIL (n wrong)`. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    int rank, p, n = argc > 1 ? atoi(argv[1]) : 100000;
    long bad = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    double *a = malloc(8 * (size_t)n), *b = malloc(16 * (size_t)n * (size_t)p);
    double tri = p * (p + 1) / 2.0;
    for (int i = 0; i < n; i++)
        a[i] = rank + 1 + i;
    for (int w = 0; w < 20; w++)
        MPI_Allreduce(a, b, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Request rq[2];

    MPI_Iallreduce(a, b, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &rq[0]);
    MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
    for (int i = 0; i < n; i++)
        bad += b[i] != tri + (double)p * i;

    MPI_Datatype v;
    MPI_Type_vector(n, 1, 2, MPI_DOUBLE, &v);
    MPI_Type_commit(&v);
    for (int i = 0; i < 2 * n; i++)
        b[i] = rank == 0 ? i : -1;
    MPI_Ibcast(b, 1, v, 0, MPI_COMM_WORLD, &rq[0]);
    MPI_Type_free(&v);
    MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
    for (int i = 0; i < 2 * n; i++)
        bad += b[i] != (i % 2 == 0 || rank == 0 ? i : -1);

    MPI_Iallgather(a, n, MPI_DOUBLE, b, n, MPI_DOUBLE, MPI_COMM_WORLD, &rq[0]);
    for (int done = 0; !done;)
        MPI_Test(&rq[0], &done, MPI_STATUS_IGNORE);
    for (int r = 0; r < p; r++)
        for (int i = 0; i < n; i++)
            bad += b[(long)r * n + i] != r + 1 + i;

    MPI_Ireduce(a, b, n, MPI_DOUBLE, MPI_SUM, p - 1, MPI_COMM_WORLD, &rq[0]);
    double m = rank + 1; /* not a[0]: the reduce's send buffer, in use until completion */
    MPI_Iallreduce(MPI_IN_PLACE, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD, &rq[1]);
    MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
    if (rank == p - 1)
        for (int i = 0; i < n; i++)
            bad += b[i] != tri + (double)p * i;
    bad += m != p;

#if MPI_VERSION >= 4
    MPI_Allreduce_init(a, b, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &rq[0]);
    for (int s = 0; s < 3; s++) {
        for (int i = 0; i < n; i++)
            b[i] = -1;
        MPI_Start(&rq[0]);
        MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
        for (int i = 0; i < n; i++)
            bad += b[i] != tri + (double)p * i;
    }
    MPI_Request_free(&rq[0]);
#endif
    long all = 0;
    MPI_Reduce(&bad, &all, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        if (all)
            printf("stacked: FAIL (%ld wrong)\n", all);
        else
            printf("stacked: PASS\n");
    }
    free(a), free(b);
    MPI_Finalize();
    return 0;
}
