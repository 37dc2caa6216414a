/* The node layout pcoll reads for a communicator from MPI_COMM_WORLD's (through the groups,
 * cdylib/src/nodes.rs) against one this program computes itself: run with PCOLL_NODES=K and
 * PCOLL_LOG=pcoll::nodes=debug; for each communicator below (in this order) every member
 * makes one MPI_Reduce that pcoll serves (PCOLL_REDUCE=binomial), and prints the nodes it
 * expects: world ranks / K grouped, each node's members in communicator rank order, nodes
 * ordered by their lowest rank, in the library's log format ("[[0, 1], [2]]"). verify/layout.sh
 * compares each rank's expected lines with the library's.
 *   mpirun -np P layout K */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void expect(MPI_Comm comm, int k, int wrank) {
    int n, me;
    MPI_Comm_size(comm, &n);
    MPI_Comm_rank(comm, &me);
    int *w = malloc(sizeof(int) * n), *done = calloc(n, sizeof(int));
    MPI_Allgather(&wrank, 1, MPI_INT, w, 1, MPI_INT, comm);
    char line[4096];
    size_t len = 0;
    len += snprintf(line + len, sizeof line - len, "[");
    int first_node = 1;
    for (int r = 0; r < n; r++) {
        if (done[r]) continue;
        len += snprintf(line + len, sizeof line - len, "%s[", first_node ? "" : ", ");
        first_node = 0;
        int first = 1;
        for (int s = r; s < n; s++) {
            if (!done[s] && w[s] / k == w[r] / k) {
                done[s] = 1;
                len += snprintf(line + len, sizeof line - len, "%s%d", first ? "" : ", ", s);
                first = 0;
            }
        }
        len += snprintf(line + len, sizeof line - len, "]");
    }
    snprintf(line + len, sizeof line - len, "]");
    printf("layout-expect[%d] %d %s\n", wrank, n, line);
    fflush(stdout);
    double x[4] = {1, 2, 3, 4}, y[4];
    MPI_Reduce(x, y, 4, MPI_DOUBLE, MPI_SUM, 0, comm);
    free(w);
    free(done);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int k = argc > 1 ? atoi(argv[1]) : 2, wrank, wsize;
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    MPI_Comm c[5];
    MPI_Comm_dup(MPI_COMM_WORLD, &c[0]);
    MPI_Comm_split(MPI_COMM_WORLD, 0, wsize - wrank, &c[1]);             /* reversed */
    MPI_Comm_split(MPI_COMM_WORLD, wrank % 2, (wrank * 7) % wsize, &c[2]); /* halves, shuffled */
    MPI_Comm_split(MPI_COMM_WORLD, wrank % 3 == 1, -wrank, &c[3]);        /* thirds, reversed */
    /* A communicator of a group: world ranks in the order wsize-1, 0, wsize-2, 1, ... */
    MPI_Group wg, g;
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    int *order = malloc(sizeof(int) * wsize);
    for (int i = 0; i < wsize; i++) order[i] = i % 2 ? i / 2 : wsize - 1 - i / 2;
    MPI_Group_incl(wg, wsize, order, &g);
    MPI_Comm_create(MPI_COMM_WORLD, g, &c[4]);
    for (int i = 0; i < 5; i++) expect(c[i], k, wrank);
    for (int i = 0; i < 5; i++) MPI_Comm_free(&c[i]);
    MPI_Group_free(&g);
    MPI_Group_free(&wg);
    free(order);
    MPI_Finalize();
    return 0;
}
