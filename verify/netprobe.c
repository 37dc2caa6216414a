/* A short MPI program for the emulated cluster (scripts/netcluster.sh): each rank reports
 * its host name; then MPI_Allreduce and MPI_Reduce of 1 KiB .. SIZE bytes (doubles, sum),
 * every result checked. Prints "netprobe: ok p=P nodes=H bytes=B seconds=T" at rank 0.
 *   netprobe [max-bytes (default 1 MiB)] [repetitions (default 3)] [late-ms (default 0)]
 * late-ms > 0: before MPI_Finalize, the last rank keeps polling MPI_Iprobe (so it makes MPI
 * progress) for that long while the others go on into MPI_Finalize: the order of events
 * that makes MPICH 4.0.2 + UCX over TCP hang there (scripts/netcluster/ucx_finalize_progress.c). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    long maxb = argc > 1 ? atol(argv[1]) : 1 << 20;
    int reps = argc > 2 ? atoi(argv[2]) : 3;
    double late = argc > 3 ? atof(argv[3]) / 1000 : 0;
    char name[MPI_MAX_PROCESSOR_NAME] = {0}, *all;
    int len;
    MPI_Get_processor_name(name, &len);
    all = calloc((size_t)p, MPI_MAX_PROCESSOR_NAME);
    MPI_Gather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0,
               MPI_COMM_WORLD);
    int hosts = 0;
    if (rank == 0)
        for (int i = 0; i < p; i++) {
            int seen = 0;
            for (int j = 0; j < i; j++)
                seen |= !strcmp(all + (size_t)i * MPI_MAX_PROCESSOR_NAME, all + (size_t)j * MPI_MAX_PROCESSOR_NAME);
            hosts += !seen;
        }
    size_t n = (size_t)maxb / sizeof(double);
    double *in = malloc(n * sizeof(double) + 8), *out = malloc(n * sizeof(double) + 8);
    long bad = 0, bytes = 0;
    double t0 = MPI_Wtime();
    for (int r = 0; r < reps; r++)
        for (size_t c = 128; c <= n; c *= 4) {
            for (size_t i = 0; i < c; i++) in[i] = (double)(rank + 1) * (double)(i % 1000 + r);
            for (size_t i = 0; i < c; i++) out[i] = -1;
            MPI_Allreduce(in, out, (int)c, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            for (size_t i = 0; i < c; i++) bad += out[i] != (double)p * (p + 1) / 2 * (double)(i % 1000 + r);
            int root = (int)(c % (size_t)p);
            MPI_Reduce(in, out, (int)c, MPI_DOUBLE, MPI_SUM, root, MPI_COMM_WORLD);
            if (rank == root)
                for (size_t i = 0; i < c; i++) bad += out[i] != (double)p * (p + 1) / 2 * (double)(i % 1000 + r);
            bytes += (long)(2 * c * sizeof(double));
        }
    long tbad = 0;
    MPI_Reduce(&bad, &tbad, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    double dt = MPI_Wtime() - t0;
    if (rank == 0) {
        printf("netprobe: %s p=%d nodes=%d bytes=%ld seconds=%.3f first=%s last=%s\n", tbad ? "FAILED" : "ok", p,
               hosts, bytes, dt, all, all + (size_t)(p - 1) * MPI_MAX_PROCESSOR_NAME);
        fflush(stdout);
    }
    free(in); free(out); free(all);
    if (late > 0 && rank == p - 1) {
        int flag;
        double t = MPI_Wtime();
        while (MPI_Wtime() - t < late)
            MPI_Iprobe(MPI_ANY_SOURCE, 12345, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    }
    MPI_Finalize();
    return tbad != 0;
}
