/* isolation.c -- an interposed collective must never match user point-to-point traffic.
 *
 * For each communicator C (world, a dup, an odd/even split) and each scenario:
 *   1. pending wildcard receive: every rank posts MPI_Irecv(MPI_ANY_SOURCE, MPI_ANY_TAG, C)
 *      (and one on MPI_COMM_WORLD when C is not world), runs a burst of MPI_Reduce (every
 *      root), MPI_Allreduce, MPI_Reduce_scatter and MPI_Allgatherv on C (small and large),
 *      checks that the receive is still pending (MPI_Test), then each rank sends its own
 *      message to rank+1; the pending receive must deliver exactly that message (source,
 *      tag, length and content).
 *   2. pending user send: every rank MPI_Isend's a message to rank+1 before the burst; the
 *      wildcard MPI_Recv posted after the burst must get it (nothing stole it).
 *   3. pending specific receive with tag 0 from rank-1 (tag 0 is a likely internal tag).
 * The collective results are checked too (MPI_INT / MPI_SUM against the rank-order sum).
 */
#include "common.h"

#define MSG_INTS 5
#define MAGIC 0x5ca1ab1e

static void burst(tctx *t, MPI_Comm comm, int big)
{
    int r, n;
    int *wr = world_ranks(comm, &n);
    MPI_Comm_rank(comm, &r);
    const uint64_t seed = t->seed ^ mix64((uint64_t)t->case_id);
    size_t counts_list[3] = {1, 700, big ? 30011 : 3000};
    for (int ci = 0; ci < 3; ci++) {
        size_t c = counts_list[ci], tot = c * (size_t)n;
        int *in = xmalloc(tot * sizeof(int)), *out = xmalloc(tot * sizeof(int)), *want = xmalloc(tot * sizeof(int));
        int *cnt = xmalloc(sizeof(int) * (size_t)n), *dsp = xmalloc(sizeof(int) * (size_t)n);
        gen_buf(K_INT, O_SUM, seed + ci, wr[r], 0, tot, in);
        ref_fold(K_INT, O_SUM, seed + ci, wr, n, 0, tot, want);
        for (int root = 0; root < n; root++) {
            if (MPI_Reduce(in, out, (int)c, MPI_INT, MPI_SUM, root, comm) != MPI_SUCCESS)
                tc_fail(t, "MPI_Reduce failed");
            if (r == root)
                check_elems(t, K_INT, out, want, c, "reduce recvbuf");
        }
        if (MPI_Allreduce(in, out, (int)c, MPI_INT, MPI_SUM, comm) != MPI_SUCCESS)
            tc_fail(t, "MPI_Allreduce failed");
        check_elems(t, K_INT, out, want, c, "allreduce recvbuf");
        for (int i = 0; i < n; i++) {
            cnt[i] = (int)c;
            dsp[i] = (int)c * (n - 1 - i);
        }
        if (MPI_Reduce_scatter(in, out, cnt, MPI_INT, MPI_SUM, comm) != MPI_SUCCESS)
            tc_fail(t, "MPI_Reduce_scatter failed");
        check_elems(t, K_INT, out, want + c * (size_t)r, c, "reduce_scatter recvbuf");
        if (MPI_Allgatherv(in, (int)c, MPI_INT, out, cnt, dsp, MPI_INT, comm) != MPI_SUCCESS)
            tc_fail(t, "MPI_Allgatherv failed");
        for (int j = 0; j < n; j++) {
            gen_buf(K_INT, O_SUM, seed + ci, wr[j], 0, c, want);
            check_elems(t, K_INT, out + (size_t)dsp[j], want, c, "allgatherv block");
        }
        free(in);
        free(out);
        free(want);
        free(cnt);
        free(dsp);
    }
    free(wr);
}

static void check_msg(tctx *t, const int *msg, const MPI_Status *st, int from, int tag, const char *what)
{
    int len = -1;
    MPI_Get_count(st, MPI_INT, &len);
    if (st->MPI_SOURCE != from || st->MPI_TAG != tag || len != MSG_INTS || msg[0] != MAGIC || msg[1] != from ||
        msg[2] != tag || msg[3] != (int)t->case_id)
        tc_fail(t, "%s: got source=%d tag=%d len=%d magic=%#x (expected source=%d tag=%d len=%d magic=%#x)", what,
                st->MPI_SOURCE, st->MPI_TAG, len, (unsigned)msg[0], from, tag, MSG_INTS, (unsigned)MAGIC);
}

static void make_msg(tctx *t, int *msg, int me, int tag)
{
    msg[0] = MAGIC;
    msg[1] = me;
    msg[2] = tag;
    msg[3] = (int)t->case_id;
    msg[4] = 0;
}

/* scenario 1 (world_too: also a wildcard receive pending on MPI_COMM_WORLD) */
static void pending_recv(tctx *t, MPI_Comm comm, int big, int world_too, int specific_tag0)
{
    int r, n, wrk, wn;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &n);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrk);
    MPI_Comm_size(MPI_COMM_WORLD, &wn);
    int rbuf[64], wbuf[64], flag = 0;
    MPI_Request req, wreq = MPI_REQUEST_NULL;
    MPI_Status st;
    const int prev = (r + n - 1) % n, next = (r + 1) % n;
    const int mytag = specific_tag0 ? 0 : 1000 + r, prevtag = specific_tag0 ? 0 : 1000 + prev;
    memset(rbuf, 0, sizeof rbuf);
    if (specific_tag0)
        MPI_Irecv(rbuf, 64, MPI_INT, prev, 0, comm, &req);
    else
        MPI_Irecv(rbuf, 64, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &req);
    if (world_too)
        MPI_Irecv(wbuf, 64, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &wreq);
    burst(t, comm, big);
    MPI_Test(&req, &flag, &st);
    if (flag)
        tc_fail(t, "the pending user receive matched a message during the collectives (source=%d tag=%d)",
                st.MPI_SOURCE, st.MPI_TAG);
    if (world_too) {
        MPI_Test(&wreq, &flag, &st);
        if (flag)
            tc_fail(t, "the pending MPI_COMM_WORLD receive matched a message during the collectives (source=%d tag=%d)",
                    st.MPI_SOURCE, st.MPI_TAG);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    int msg[MSG_INTS];
    make_msg(t, msg, r, mytag);
    MPI_Send(msg, MSG_INTS, MPI_INT, next, mytag, comm);
    MPI_Wait(&req, &st);
    check_msg(t, rbuf, &st, prev, prevtag, "pending receive");
    if (world_too) {
        int wmsg[MSG_INTS];
        make_msg(t, wmsg, wrk, 2000 + wrk);
        MPI_Send(wmsg, MSG_INTS, MPI_INT, (wrk + 1) % wn, 2000 + wrk, MPI_COMM_WORLD);
        MPI_Wait(&wreq, &st);
        int wprev = (wrk + wn - 1) % wn;
        check_msg(t, wbuf, &st, wprev, 2000 + wprev, "pending MPI_COMM_WORLD receive");
    }
}

/* scenario 2 */
static void pending_send(tctx *t, MPI_Comm comm, int big)
{
    int r, n;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &n);
    const int prev = (r + n - 1) % n, next = (r + 1) % n;
    int msg[MSG_INTS], rbuf[64];
    MPI_Request req;
    MPI_Status st;
    make_msg(t, msg, r, 3000 + r);
    MPI_Isend(msg, MSG_INTS, MPI_INT, next, 3000 + r, comm, &req);
    burst(t, comm, big);
    MPI_Recv(rbuf, 64, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &st);
    check_msg(t, rbuf, &st, prev, 3000 + prev, "late wildcard receive");
    MPI_Wait(&req, MPI_STATUS_IGNORE);
}

#define CASE(...)                                                                                                  \
    if (tc_case(&t, __VA_ARGS__))

int main(int argc, char **argv)
{
    tctx t;
    MPI_Init(&argc, &argv);
    tc_init(&t, "isolation", argc, argv);
    tcomm comms[4];
    int nc = make_comms(comms, t.quick);
    for (int ci = 0; ci < nc; ci++) {
        for (int big = 0; big < 2; big++) {
            if (t.quick && big && ci > 0)
                continue;
            CASE("%s pending wildcard Irecv%s, burst big=%d", comms[ci].name, ci ? " (+ one on world)" : "", big)
            pending_recv(&t, comms[ci].comm, big, ci > 0, 0);
            CASE("%s pending Isend, burst big=%d, wildcard Recv after", comms[ci].name, big)
            pending_send(&t, comms[ci].comm, big);
            CASE("%s pending Irecv(prev, tag 0), burst big=%d", comms[ci].name, big)
            pending_recv(&t, comms[ci].comm, big, 0, 1);
        }
    }
    free_comms(comms, nc);
    int rc = tc_finish(&t);
    MPI_Finalize();
    return rc;
}
