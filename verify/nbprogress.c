/* nbprogress.c -- a non-blocking collective must progress while its rank is blocked in
 * another call (MPI's progress rule; issue 27).
 *
 * Every rank starts a non-blocking collective; every rank but 0 completes it first, while
 * rank 0 first makes one blocking call of this round's kind and only then waits for its
 * collective. The kinds: rank 0 receives a message from every other rank (MPI_Recv; MPI_Probe
 * then MPI_Recv; MPI_Sendrecv; MPI_Mprobe then MPI_Mrecv), sends one to each (MPI_Ssend; MPI_Rsend
 * to a receive posted before the collective started), or enters a blocking collective on the
 * same communicator that the others enter after their wait (MPI_Barrier; an 8-byte
 * MPI_Allreduce, served by pcoll when it is forced; an 8-byte MPI_Reduce_scatter_block,
 * forwarded), or the same 8-byte MPI_Allreduce on a duplicate communicator. In the FIRST
 * rounds the collective is the first call on a new communicator, and the other ranks make
 * their blocking call before they start it: a 1 MiB MPI_Send to rank 0 (a rendezvous: it
 * returns once rank 0 receives), which rank 0 receives only after it started the collective:
 * starting it must not wait for the other ranks (as a shadow communicator's PMPI_Comm_dup or a
 * shared window's allocation would). The GATHER and SPLIT rounds block rank 0 in a
 * collective pcoll neither serves nor forwards (MPI_Gather; MPI_Comm_split) on the same
 * communicator. In the REPLACE rounds rank 0 exchanges with every other rank by
 * MPI_Sendrecv_replace of one element of a vector type with a hole (two ints, one skipped,
 * which must keep its value), its status read back, after an MPI_Recv, MPI_Sendrecv and
 * MPI_Sendrecv_replace from MPI_PROC_NULL (whose status must be the standard's). In the
 * WINDOW, CART and FILEOPEN rounds rank 0 blocks in a collective constructor on the same
 * communicator (MPI_Win_create, MPI_Cart_create, MPI_File_open of a file deleted on close).
 * In the IPROBE and IMPROBE rounds rank 0 polls MPI_Iprobe / MPI_Improbe in a loop until each
 * other rank's message is there, then receives it. In the NEIGHBOR rounds the collective runs
 * on a periodic ring (a 1-D Cartesian communicator) and rank 0 blocks in an
 * MPI_Neighbor_allgather on it; in the INTERCOMM rounds on one half of the ranks (even, odd),
 * and rank 0 blocks in the MPI_Intercomm_create that joins the halves (its local communicator).
 * In the NEWCOMM rounds rank 0 makes the first call on a new communicator (an 8-byte
 * MPI_Allreduce: pcoll makes its shadow there, and its window when `shm` is forced) and frees
 * it (a window's free waits for the other ranks) before it waits; the others after (hung
 * before session 51: pcoll's own setup collectives blocked without advancing its schedules).
 * A correct
 * MPI program: the MPI must advance rank 0's part of the collective while rank 0 is blocked,
 * or the other ranks never finish theirs. pcoll runs its schedules in steps that only its
 * intercepted calls advance.
 *
 *   mpirun -np <p> [PCOLL_<COLL>=binomial ...] nbprogress [count [kind]]
 * (kind: run only the rounds of that kind, 0-21 in the order of the enum below)
 * Last line "nbprogress: ok" or the first failure; a hang is the caller's timeout.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int rank, p;

static void check(int ok, const char *what, int round) {
    if (!ok) {
        printf("nbprogress: FAILED: %s, round %d, rank %d\n", what, round, rank);
        fflush(stdout);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

enum { RECV, PROBE, SENDRECV, MPROBE, SSEND, RSEND, BARRIER, ALLREDUCE, RSB, DUP_ALLREDUCE, FIRST, GATHER, SPLIT, REPLACE, WINDOW, CART, FILEOPEN, IPROBE, IMPROBE, NEIGHBOR, INTERCOMM, NEWCOMM, KINDS };

enum { BIG = 1 << 17 }; /* doubles of a FIRST round's message: 1 MiB */
static double *big;

static MPI_Comm wdup; /* a duplicate of MPI_COMM_WORLD, used once before the rounds */
static MPI_Comm ring, half; /* the NEIGHBOR and INTERCOMM rounds' communicators */
static char fname[64]; /* the FILEOPEN rounds' file: rank 0's process id in /tmp */
static MPI_Comm fresh; /* a NEWCOMM round's communicator, made before its collective */

/* Rank 0's blocking call of this round's kind, made before it waits for its collective; the
 * other ranks' side of it, made after they waited for theirs. For RSEND every other rank has
 * posted `*pre` (a receive from rank 0) before the collective started. */
static void blocked(int kind, int round, MPI_Request *pre, int *prev) {
    int v = -1;
    if (kind == BARRIER) {
        MPI_Barrier(MPI_COMM_WORLD);
        return;
    }
    if (kind == NEWCOMM) {
        double x = rank + 1, y = 0;
        MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, fresh);
        check(y == p * (p + 1) / 2.0, "first allreduce on a new communicator", round);
        MPI_Comm_free(&fresh);
        return;
    }
    if (kind == GATHER) {
        int x = rank, all[64];
        MPI_Gather(&x, 1, MPI_INT, all, 1, MPI_INT, 0, MPI_COMM_WORLD);
        for (int r = 0; rank == 0 && r < p && r < 64; r++) check(all[r] == r, "gather", round);
        return;
    }
    if (kind == NEIGHBOR) {
        int got[2] = {-1, -1}, l = (rank + p - 1) % p, r = (rank + 1) % p;
        MPI_Neighbor_allgather(&rank, 1, MPI_INT, got, 1, MPI_INT, ring);
        /* (at p <= 2 both neighbours are one process: which block arrives where is the MPI's) */
        check((got[0] == l && got[1] == r) || (p < 3 && got[0] == r && got[1] == l), "neighbor_allgather",
              round);
        return;
    }
    if (kind == INTERCOMM) {
        if (p < 2) return;
        MPI_Comm ic;
        int rs = 0;
        MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, 1 - rank % 2, 77, &ic);
        MPI_Comm_remote_size(ic, &rs);
        check(rs == (rank % 2 ? (p + 1) / 2 : p / 2), "intercomm_create", round);
        MPI_Comm_free(&ic);
        return;
    }
    if (kind == WINDOW) {
        MPI_Win win;
        static int mem;
        MPI_Win_create(&mem, sizeof mem, sizeof mem, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
        MPI_Win_free(&win);
        return;
    }
    if (kind == CART) {
        MPI_Comm cart;
        int dims[1] = {p}, periods[1] = {1}, sz = 0;
        MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &cart);
        MPI_Comm_size(cart, &sz);
        check(sz == p, "cart_create", round);
        MPI_Comm_free(&cart);
        return;
    }
    if (kind == FILEOPEN) {
        MPI_File fh;
        int rc = MPI_File_open(MPI_COMM_WORLD, fname, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE,
                               MPI_INFO_NULL, &fh);
        check(rc == MPI_SUCCESS, "file_open", round);
        MPI_File_close(&fh);
        return;
    }
    if (kind == SPLIT) {
        MPI_Comm s;
        int sz = 0;
        MPI_Comm_split(MPI_COMM_WORLD, 0, rank, &s);
        MPI_Comm_size(s, &sz);
        check(sz == p, "comm_split", round);
        MPI_Comm_free(&s);
        return;
    }
    if (kind == FIRST) {
        if (rank != 0) {
            for (int i = 0; i < BIG; i++) big[i] = rank;
            MPI_Send(big, BIG, MPI_DOUBLE, 0, 9, MPI_COMM_WORLD);
            return;
        }
        for (int r = 1; r < p; r++) {
            MPI_Recv(big, BIG, MPI_DOUBLE, r, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            check(big[0] == r && big[BIG - 1] == r, "first-call message", round);
        }
        return;
    }
    if (kind == ALLREDUCE || kind == RSB || kind == DUP_ALLREDUCE) {
        double x = rank + 1, y = 0, xs[64], ys = 0;
        if (kind != RSB) {
            MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, kind == ALLREDUCE ? MPI_COMM_WORLD : wdup);
            check(y == p * (p + 1) / 2.0, "blocking allreduce", round);
        } else {
            for (int i = 0; i < p && i < 64; i++) xs[i] = rank + i;
            MPI_Reduce_scatter_block(xs, &ys, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            check(ys == p * (p - 1) / 2.0 + p * rank, "blocking reduce_scatter_block", round);
        }
        return;
    }
    if (kind == REPLACE && rank != 0) {
        int out[2] = {rank, 10 * rank}, in[2] = {0, 0};
        MPI_Sendrecv(out, 2, MPI_INT, 0, 5, in, 2, MPI_INT, 0, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        check(in[0] == -rank && in[1] == -2 * rank, "sendrecv_replace reply", round);
        return;
    }
    if (kind == REPLACE) {
        /* Receives from MPI_PROC_NULL while the collective runs: the standard's status. */
        for (int k = 0; k < 3; k++) {
            MPI_Status st;
            int w = 5, n = -1;
            if (k == 0) MPI_Recv(&w, 1, MPI_INT, MPI_PROC_NULL, 5, MPI_COMM_WORLD, &st);
            if (k == 1) MPI_Sendrecv(&w, 1, MPI_INT, MPI_PROC_NULL, 5, &w, 1, MPI_INT, MPI_PROC_NULL, 5, MPI_COMM_WORLD, &st);
            if (k == 2) MPI_Sendrecv_replace(&w, 1, MPI_INT, MPI_PROC_NULL, 5, MPI_PROC_NULL, 5, MPI_COMM_WORLD, &st);
            MPI_Get_count(&st, MPI_INT, &n);
            check(st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG && n == 0 && w == 5,
                  "status of a receive from MPI_PROC_NULL", round);
        }
        MPI_Datatype vec;
        MPI_Type_vector(2, 1, 2, MPI_INT, &vec);
        MPI_Type_commit(&vec);
        for (int r = 1; r < p; r++) {
            MPI_Status st;
            int buf[3] = {-r, 777, -2 * r}, n = -1;
            MPI_Sendrecv_replace(buf, 1, vec, r, 6, r, 5, MPI_COMM_WORLD, &st);
            MPI_Get_count(&st, MPI_INT, &n);
            check(buf[0] == r && buf[1] == 777 && buf[2] == 10 * r, "sendrecv_replace", round);
            check(st.MPI_SOURCE == r && st.MPI_TAG == 5 && n == 2, "sendrecv_replace status", round);
        }
        MPI_Type_free(&vec);
        return;
    }
    if (rank != 0) {
        if (kind == SENDRECV) {
            MPI_Sendrecv(&rank, 1, MPI_INT, 0, 5, &v, 1, MPI_INT, 0, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            check(v == 0, "sendrecv reply", round);
        } else if (kind == SSEND) {
            MPI_Recv(&v, 1, MPI_INT, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            check(v == -rank, "ssend message", round);
        } else if (kind == RSEND) {
            MPI_Wait(pre, MPI_STATUS_IGNORE);
            check(*prev == -rank, "rsend message", round);
        } else {
            MPI_Send(&rank, 1, MPI_INT, 0, 5, MPI_COMM_WORLD);
        }
        return;
    }
    for (int r = 1; r < p; r++) {
        MPI_Status st;
        int out = -r;
        if (kind == SSEND) {
            MPI_Ssend(&out, 1, MPI_INT, r, 7, MPI_COMM_WORLD);
            continue;
        }
        if (kind == RSEND) {
            MPI_Rsend(&out, 1, MPI_INT, r, 8, MPI_COMM_WORLD);
            continue;
        }
        if (kind == PROBE) {
            MPI_Probe(r, 5, MPI_COMM_WORLD, &st);
            MPI_Recv(&v, 1, MPI_INT, r, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (kind == MPROBE) {
            MPI_Message m;
            MPI_Mprobe(r, 5, MPI_COMM_WORLD, &m, &st);
            MPI_Mrecv(&v, 1, MPI_INT, &m, MPI_STATUS_IGNORE);
        } else if (kind == IPROBE || kind == IMPROBE) {
            int flag = 0;
            MPI_Message m = MPI_MESSAGE_NULL;
            while (!flag) {
                if (kind == IPROBE) MPI_Iprobe(r, 5, MPI_COMM_WORLD, &flag, &st);
                else MPI_Improbe(r, 5, MPI_COMM_WORLD, &flag, &m, &st);
            }
            check(st.MPI_SOURCE == r && st.MPI_TAG == 5, "iprobe status", round);
            if (kind == IPROBE) MPI_Recv(&v, 1, MPI_INT, r, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            else MPI_Mrecv(&v, 1, MPI_INT, &m, MPI_STATUS_IGNORE);
        } else if (kind == SENDRECV) {
            int zero = 0;
            MPI_Sendrecv(&zero, 1, MPI_INT, r, 6, &v, 1, MPI_INT, r, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(&v, 1, MPI_INT, r, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        check(v == r, "message", round);
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    int n = argc > 1 ? atoi(argv[1]) : 1 << 18, only = argc > 2 ? atoi(argv[2]) : -1;
    double *a = malloc(sizeof(double) * n * p), *b = malloc(sizeof(double) * n * p);
    big = malloc(sizeof(double) * BIG);
    MPI_Comm_dup(MPI_COMM_WORLD, &wdup);
    long pid = (long)getpid();
    MPI_Bcast(&pid, 1, MPI_LONG, 0, wdup);
    snprintf(fname, sizeof fname, "/tmp/nbprogress.%ld", pid);
    double one = 1, all = 0;
    MPI_Allreduce(&one, &all, 1, MPI_DOUBLE, MPI_SUM, wdup);
    /* A blocking collective on each first (pcoll serves a communicator's I-forms after one). */
    int dims[1] = {p}, periods[1] = {1};
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring);
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    MPI_Allreduce(&one, &all, 1, MPI_DOUBLE, MPI_SUM, ring);
    MPI_Allreduce(&one, &all, 1, MPI_DOUBLE, MPI_SUM, half);
    /* MPI_COMM_WORLD's shadow: wanted by a non-blocking call, made by the next barrier */
    MPI_Request q0;
    MPI_Iallreduce(&one, &all, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &q0);
    MPI_Wait(&q0, MPI_STATUS_IGNORE);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int round = 0; round < 4 * KINDS; round++) {
        int coll = round % 4, kind = round / 4, prev = 0;
        if (only >= 0 && kind != only) continue;
        MPI_Request q, pre = MPI_REQUEST_NULL;
        MPI_Comm c = kind == NEIGHBOR ? ring : kind == INTERCOMM ? half : MPI_COMM_WORLD;
        int cr, pc; /* rank and size in the collective's communicator */
        MPI_Comm_rank(c, &cr);
        MPI_Comm_size(c, &pc);
        for (int i = 0; i < n * p; i++) a[i] = cr + 1 + i % 7, b[i] = -1;
        if (kind == FIRST) {
            /* A new communicator; the others send before they start the collective. */
            MPI_Comm_dup(MPI_COMM_WORLD, &c);
            if (rank != 0) blocked(kind, round, &pre, &prev);
        }
        if (kind == NEWCOMM) MPI_Comm_dup(MPI_COMM_WORLD, &fresh);
        if (kind == RSEND) {
            /* The receives an MPI_Rsend needs, posted before anything runs. */
            if (rank != 0) MPI_Irecv(&prev, 1, MPI_INT, 0, 8, MPI_COMM_WORLD, &pre);
            MPI_Barrier(MPI_COMM_WORLD);
        }
        if (coll == 0) MPI_Ibcast(a, n, MPI_DOUBLE, 0, c, &q);
        else if (coll == 1) MPI_Ireduce(a, b, n, MPI_DOUBLE, MPI_SUM, 0, c, &q);
        else if (coll == 2) MPI_Iallreduce(a, b, n, MPI_DOUBLE, MPI_SUM, c, &q);
        else MPI_Iallgather(a, n, MPI_DOUBLE, b, n, MPI_DOUBLE, c, &q);
        if (kind == FIRST && rank != 0) {
            MPI_Wait(&q, MPI_STATUS_IGNORE);
        } else if (rank == 0) {
            blocked(kind, round, &pre, &prev);
            MPI_Wait(&q, MPI_STATUS_IGNORE);
        } else {
            MPI_Wait(&q, MPI_STATUS_IGNORE);
            blocked(kind, round, &pre, &prev);
        }
        double sum = pc * (pc + 1) / 2.0 + pc * (n - 1 < 0 ? 0 : (n - 1) % 7);
        if (coll == 0) check(a[n - 1] == 1 + (n - 1) % 7, "bcast", round);
        if (coll == 1 && cr == 0) check(b[n - 1] == sum, "reduce", round);
        if (coll == 2) check(b[n - 1] == sum, "allreduce", round);
        if (coll == 3) check(b[(pc - 1) * n] == pc, "allgather", round);
        if (kind == FIRST) MPI_Comm_free(&c);
    }
    MPI_Comm_free(&wdup);
    MPI_Comm_free(&ring);
    MPI_Comm_free(&half);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("nbprogress: ok\n");
    free(a);
    free(b);
    free(big);
    MPI_Finalize();
    return 0;
}
