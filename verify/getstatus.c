/* MPI-4.1's MPI_Request_get_status_all / _any / _some on requests pcoll serves: each call is
 * polled until it reports the collective complete, the request is then freed (legal once
 * complete, as MPICH's coll/nonblocking3 does) and the result checked at once. Before pcoll
 * answered these calls the MPI saw only pcoll's stand-in (an inactive request, complete at
 * once): the request was freed while its schedule ran and the buffer read unwritten. Run with
 * an algorithm forced (PCOLL_ALLREDUCE=binomial, ...). Where the MPI predates 4.1 it prints
 * PASS without testing. Prints "getstatus: PASS ..." or "getstatus: FAIL ..." on rank 0. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

enum { N = 1 << 16 };

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int r, p, bad = 0, calls = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
#if MPI_VERSION > 4 || (MPI_VERSION == 4 && MPI_SUBVERSION >= 1)
    int *s = malloc(sizeof(int) * N), *d = malloc(sizeof(int) * N);
    for (int round = 0; round < 30; round++) {
        int how = round % 3;
        for (int i = 0; i < N; i++) {
            s[i] = r + i + round;
            d[i] = -1;
        }
        /* The collective and a null request beside it (skipped by _any and _some). */
        MPI_Request q[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
        MPI_Iallreduce(s, d, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &q[1]);
        int flag = 0, idx = -1, out = 0, ind[2];
        while (!flag) {
            if (how == 0)
                MPI_Request_get_status_all(2, q, &flag, MPI_STATUSES_IGNORE);
            else if (how == 1)
                MPI_Request_get_status_any(2, q, &idx, &flag, MPI_STATUS_IGNORE);
            else {
                MPI_Request_get_status_some(2, q, &out, ind, MPI_STATUSES_IGNORE);
                flag = out > 0 && out != MPI_UNDEFINED;
                idx = flag ? ind[0] : -1;
            }
        }
        if (how != 0 && idx != 1)
            bad++;
        MPI_Request_free(&q[1]);
        for (int i = 0; i < N; i++)
            if (d[i] != p * (i + round) + p * (p - 1) / 2)
                bad++;
        calls++;
    }
    free(s);
    free(d);
#endif
    int all = 0;
    MPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (r == 0) {
        if (all)
            printf("getstatus: FAIL p=%d: %d wrong\n", p, all);
        else
            printf("getstatus: PASS p=%d (%d collectives polled with get_status_all/any/some)\n", p, calls);
    }
    MPI_Finalize();
    return 0;
}
