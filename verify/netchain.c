/* netchain: what the emulated cluster (scripts/netcluster.sh) carries when every link is busy
 * at once. Rank 0 sends m bytes to rank 1 as one message (one stream: the link's own rate),
 * then the ranks pass m bytes down a chain 0 -> 1 -> ... -> p-1 in segments of `seg` bytes,
 * each rank forwarding a segment as soon as it has it, with `depth` receives posted ahead
 * (every link carries one stream at the same time: a pipelined reduce's traffic without the
 * reduction). Waits are MPI_Wait (mode 0), or MPI_Test in a loop with sched_yield (mode 1) or
 * usleep(mode) between tests. Prints, three times, each part's time (max over ranks for the
 * chain) and the floor m / 500 Mbit/s.
 *   netchain BYTES SEG [DEPTH=2] [MODE=0]                           (session 17) */
#include <mpi.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int mode;

static void wait_one(MPI_Request *r)
{
    if (!mode) {
        MPI_Wait(r, MPI_STATUS_IGNORE);
        return;
    }
    int f = 0;
    for (;;) {
        MPI_Test(r, &f, MPI_STATUS_IGNORE);
        if (f)
            return;
        if (mode == 1)
            sched_yield();
        else
            usleep((useconds_t)mode);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    if (argc < 3 || p < 2) {
        if (me == 0)
            fprintf(stderr, "usage: netchain BYTES SEG [DEPTH] [MODE] (p >= 2)\n");
        MPI_Finalize();
        return 2;
    }
    size_t m = (size_t)atol(argv[1]), seg = (size_t)atol(argv[2]);
    size_t depth = argc > 3 ? (size_t)atol(argv[3]) : 2;
    mode = argc > 4 ? atoi(argv[4]) : 0;
    size_t ns = (m + seg - 1) / seg;
    char *buf = malloc(m);
    MPI_Request *rr = malloc((ns + 1) * sizeof *rr), *sr = malloc((ns + 1) * sizeof *sr);
    memset(buf, 1, m);
    for (int rep = 0; rep < 3; rep++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t = MPI_Wtime();
        if (me == 0)
            MPI_Send(buf, (int)m, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
        if (me == 1)
            MPI_Recv(buf, (int)m, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        double direct = MPI_Wtime() - t;
        MPI_Barrier(MPI_COMM_WORLD);
        t = MPI_Wtime();
        size_t posted = 0;
        for (size_t i = 0; i < ns; i++) {
            size_t len = (i + 1) * seg > m ? m - i * seg : seg;
            if (me > 0) {
                for (; posted < ns && posted < i + depth; posted++) {
                    size_t l = (posted + 1) * seg > m ? m - posted * seg : seg;
                    MPI_Irecv(buf + posted * seg, (int)l, MPI_BYTE, me - 1, 1, MPI_COMM_WORLD, &rr[posted]);
                }
                wait_one(&rr[i]);
            }
            if (me < p - 1)
                MPI_Isend(buf + i * seg, (int)len, MPI_BYTE, me + 1, 1, MPI_COMM_WORLD, &sr[i]);
        }
        if (me < p - 1)
            for (size_t i = 0; i < ns; i++)
                wait_one(&sr[i]);
        double chain = MPI_Wtime() - t, worst;
        MPI_Reduce(&chain, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        if (me == 0)
            printf("netchain: m=%zu seg=%zu depth=%zu mode=%d direct %.1f ms chain %.1f ms (floor %.1f ms at 500 Mbit/s)\n",
                   m, seg, depth, mode, direct * 1e3, worst * 1e3, (double)m * 8.0 / 500e6 * 1e3);
    }
    free(rr);
    free(sr);
    free(buf);
    MPI_Finalize();
    return 0;
}
