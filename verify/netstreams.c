/* netstreams: which concurrent streams the emulated cluster (scripts/netcluster.sh) carries at
 * the link's rate. Four patterns of 4 MiB messages between nodes, each timed (max over ranks,
 * barrier before; the last two of three repetitions printed):
 *   0  node0 -> node1 alone (one stream: the link's own rate)
 *   1  node0 -> node1 and node2 -> node3 at once (disjoint links)
 *   2  node0 -> node1 and node1 -> node2 at once (node1 receives and sends)
 *   3  node0 -> node1 -> node2 -> node3 at once (each middle node receives and sends)
 * With one tbf queue of 200 ms per direction (--queue fifo) pattern 2 took 113-121 ms against
 * 70 for pattern 0 (the acknowledgements of node1's incoming stream queue behind its outgoing
 * data); with acknowledgements first (--queue acks) all four take 70-85 ms (session 19).
 *   scripts/netcluster.sh with 4 --rate 500mbit -- scripts/netcluster.sh run -- netstreams */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int r, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    if (p < 4) {
        if (r == 0)
            printf("netstreams: needs 4 ranks (one per node)\n");
        MPI_Finalize();
        return 1;
    }
    const int m = 4 << 20;
    char *a = calloc(m, 1), *b = calloc(m, 1);
    for (int mode = 0; mode < 4; mode++) {
        int send = (mode == 0 && r == 0) || (mode == 1 && (r == 0 || r == 2)) || (mode == 2 && r <= 1) ||
                   (mode == 3 && r <= 2);
        int recv = (mode == 0 && r == 1) || (mode == 1 && (r == 1 || r == 3)) || (mode == 2 && (r == 1 || r == 2)) ||
                   (mode == 3 && r >= 1 && r <= 3);
        for (int rep = 0; rep < 3; rep++) {
            MPI_Request q[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
            MPI_Status st[2];
            MPI_Barrier(MPI_COMM_WORLD);
            double t = MPI_Wtime(), dt, mx;
            if (recv)
                MPI_Irecv(b, m, MPI_CHAR, r - 1, 0, MPI_COMM_WORLD, &q[0]);
            if (send)
                MPI_Isend(a, m, MPI_CHAR, r + 1, 0, MPI_COMM_WORLD, &q[1]);
            MPI_Waitall(2, q, st);
            dt = MPI_Wtime() - t;
            MPI_Reduce(&dt, &mx, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
            if (r == 0 && rep > 0)
                printf("netstreams: pattern %d: %.1f ms (one stream at the rate: %.1f ms at 500 Mbit/s)\n", mode,
                       mx * 1e3, m * 8.0 / 500e6 * 1e3);
        }
    }
    free(a);
    free(b);
    MPI_Finalize();
    return 0;
}
