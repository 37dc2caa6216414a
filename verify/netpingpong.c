/* Point-to-point and small-collective latency for the emulated cluster (scripts/netcluster.sh).
 *   netpingpong [max-bytes (default 1 MiB)] [repetitions (default 20)]
 * 1. Ping-pong rank 0 <-> rank p-1 (different nodes), 8 B .. max-bytes (x4 steps): median
 *    half round trip and the bandwidth it implies (bytes / half round trip). The other ranks
 *    wait in MPI_Barrier meanwhile (as idle ranks of a collective would).
 * 2. MPI_Reduce and MPI_Allreduce of 8 B and 1 KiB over all ranks (barrier before each call,
 *    max over ranks, median over repetitions).
 * Output lines: "pingpong BYTES half_rtt_us MBIT_S" and "coll NAME BYTES median_us". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp);
    return v[n / 2];
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    long maxb = argc > 1 ? atol(argv[1]) : 1 << 20;
    int reps = argc > 2 ? atoi(argv[2]) : 20;
    if (reps < 1) reps = 1;
    char *buf = calloc((size_t)maxb + 8, 1);
    double *t = calloc((size_t)reps, sizeof *t);
    int peer = p - 1;
    for (long b = 8; b <= maxb; b *= 4) {
        MPI_Barrier(MPI_COMM_WORLD);
        if (p > 1 && (rank == 0 || rank == peer)) {
            for (int r = -2; r < reps; r++) {
                double t0 = MPI_Wtime();
                if (rank == 0) {
                    MPI_Send(buf, (int)b, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
                    MPI_Recv(buf, (int)b, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                } else {
                    MPI_Recv(buf, (int)b, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    MPI_Send(buf, (int)b, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
                }
                if (r >= 0) t[r] = (MPI_Wtime() - t0) / 2;
            }
            if (rank == 0) {
                double m = median(t, reps);
                printf("pingpong %8ld %12.1f %10.1f\n", b, m * 1e6, (double)b * 8 / m / 1e6);
                fflush(stdout);
            }
        }
    }
    const char *names[2] = {"reduce", "allreduce"};
    long sizes[2] = {8, 1024};
    char *out = calloc(1024, 1);
    for (int c = 0; c < 2; c++)
        for (int s = 0; s < 2; s++) {
            int n = (int)(sizes[s] / 8);
            for (int r = -2; r < reps; r++) {
                MPI_Barrier(MPI_COMM_WORLD);
                double t0 = MPI_Wtime(), dt, mx;
                if (c == 0)
                    MPI_Reduce(buf, out, n, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
                else
                    MPI_Allreduce(buf, out, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
                dt = MPI_Wtime() - t0;
                MPI_Allreduce(&dt, &mx, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
                if (r >= 0) t[r] = mx;
            }
            if (rank == 0) {
                printf("coll %-9s %6ld %12.1f\n", names[c], sizes[s], median(t, reps) * 1e6);
                fflush(stdout);
            }
        }
    free(out);
    free(buf);
    free(t);
    MPI_Finalize();
    return 0;
}
