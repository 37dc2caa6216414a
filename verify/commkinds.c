/* commkinds.c: the collectives pcoll serves on communicators the difftest does not make --
 * a reordered Cartesian one, a distributed graph, one from MPI_Comm_create_group and one from
 * MPI_Comm_create (the odd ranks, reversed) -- and on an intercommunicator (even ranks
 * against odd ones), which pcoll forwards to the MPI (MPI_ROOT / MPI_PROC_NULL roots, results
 * from the remote group). Three rounds, each making and freeing every communicator again
 * (handles reused). Results are checked against closed forms.
 *
 * Usage: mpirun -np P commkinds. Last line: "commkinds: PASS ..." or "commkinds: FAIL ...". */
#include <mpi.h>
#include <stdio.h>
/* gcc reads Open MPI's MPI_UNWEIGHTED (a small constant pointer) as an empty array */
#pragma GCC diagnostic ignored "-Wstringop-overread"
#include <stdlib.h>
#include <string.h>

static int bad;
#define CHECK(c, ...)                                                                                              \
    do {                                                                                                           \
        if (!(c) && bad++ < 20) {                                                                                  \
            printf("commkinds: " __VA_ARGS__);                                                                     \
            printf("\n");                                                                                          \
        }                                                                                                          \
    } while (0)

enum { N = 3000 };

/* all seven collectives on an intracommunicator */
static void intra(MPI_Comm c, const char *name)
{
    int r, p;
    MPI_Comm_rank(c, &r);
    MPI_Comm_size(c, &p);
    double *in = malloc(sizeof(double) * N * (size_t)p), *out = malloc(sizeof(double) * N * (size_t)p);
    int *cnt = malloc(sizeof(int) * (size_t)p), *dsp = malloc(sizeof(int) * (size_t)p);
    for (int i = 0; i < N * p; i++)
        in[i] = r + i;
    MPI_Allreduce(in, out, N, MPI_DOUBLE, MPI_SUM, c);
    for (int i = 0; i < N; i++)
        CHECK(out[i] == p * (p - 1) / 2.0 + (double)p * i, "%s allreduce element %d", name, i);
    memset(out, 0, sizeof(double) * N);
    MPI_Reduce(in, out, N, MPI_DOUBLE, MPI_MAX, p - 1, c);
    if (r == p - 1)
        for (int i = 0; i < N; i++)
            CHECK(out[i] == p - 1 + i, "%s reduce element %d", name, i);
    MPI_Reduce_scatter_block(in, out, N, MPI_DOUBLE, MPI_SUM, c);
    for (int i = 0; i < N; i++)
        CHECK(out[i] == p * (p - 1) / 2.0 + (double)p * (r * N + i), "%s reduce_scatter_block element %d", name, i);
    for (int k = 0; k < p; k++)
        cnt[k] = k % 2 ? N / 2 : N;
    MPI_Reduce_scatter(in, out, cnt, MPI_DOUBLE, MPI_SUM, c);
    int off = 0;
    for (int k = 0; k < r; k++)
        off += cnt[k];
    for (int i = 0; i < cnt[r]; i++)
        CHECK(out[i] == p * (p - 1) / 2.0 + (double)p * (off + i), "%s reduce_scatter element %d", name, i);
    MPI_Allgather(in, N, MPI_DOUBLE, out, N, MPI_DOUBLE, c);
    for (int k = 0; k < p; k++)
        CHECK(out[k * N + 5] == k + 5, "%s allgather block %d", name, k);
    for (int k = 0, d = 0; k < p; k++) {
        dsp[k] = d;
        d += cnt[k];
    }
    MPI_Allgatherv(in, cnt[r], MPI_DOUBLE, out, cnt, dsp, MPI_DOUBLE, c);
    for (int k = 0; k < p; k++)
        CHECK(out[dsp[k] + cnt[k] - 1] == k + cnt[k] - 1, "%s allgatherv block %d", name, k);
    if (r == 0)
        for (int i = 0; i < N; i++)
            in[i] = -i;
    MPI_Bcast(in, N, MPI_DOUBLE, 0, c);
    CHECK(in[7] == -7 && in[N - 1] == -(N - 1), "%s bcast", name);
    free(in);
    free(out);
    free(cnt);
    free(dsp);
}

/* evens against odds: every collective pcoll serves, forwarded to the MPI */
static void inter(int r, int p)
{
    MPI_Comm half, ic;
    MPI_Comm_split(MPI_COMM_WORLD, r % 2, r, &half);
    MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, r % 2 ? 0 : 1, 11, &ic);
    int rs, lr, ls;
    MPI_Comm_remote_size(ic, &rs);
    MPI_Comm_rank(ic, &lr);
    MPI_Comm_size(ic, &ls);
    double x = r, y = -1, remote_sum = 0;
    for (int k = 0; k < p; k++)
        if (k % 2 != r % 2)
            remote_sum += k;
    MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, ic);
    CHECK(y == remote_sum, "intercommunicator allreduce on rank %d: %g, want %g", r, y, remote_sum);
    double *ag = malloc(sizeof(double) * (size_t)rs);
    int *cnt = malloc(sizeof(int) * (size_t)rs), *dsp = malloc(sizeof(int) * (size_t)rs);
    MPI_Allgather(&x, 1, MPI_DOUBLE, ag, 1, MPI_DOUBLE, ic);
    for (int k = 0; k < rs; k++)
        CHECK(ag[k] == 2 * k + (r % 2 ? 0 : 1), "intercommunicator allgather block %d", k);
    for (int k = 0; k < rs; k++)
        cnt[k] = 1, dsp[k] = rs - 1 - k;
    MPI_Allgatherv(&x, 1, MPI_DOUBLE, ag, cnt, dsp, MPI_DOUBLE, ic);
    for (int k = 0; k < rs; k++)
        CHECK(ag[rs - 1 - k] == 2 * k + (r % 2 ? 0 : 1), "intercommunicator allgatherv block %d", k);
    /* from world rank 0 (the even group's rank 0) to the odd group */
    double b = r == 0 ? 42 : -1;
    int root = r % 2 == 0 ? (lr == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
    MPI_Bcast(&b, 1, MPI_DOUBLE, root, ic);
    if (r % 2)
        CHECK(b == 42, "intercommunicator bcast on rank %d: %g", r, b);
    double rr = -1;
    MPI_Reduce(&x, &rr, 1, MPI_DOUBLE, MPI_SUM, root, ic);
    if (r == 0)
        CHECK(rr == remote_sum, "intercommunicator reduce: %g, want %g", rr, remote_sum);
    if (ls == rs) { /* reduce_scatter_block: groups of equal size */
        double *rsin = malloc(sizeof(double) * (size_t)rs), got = -1;
        for (int k = 0; k < rs; k++)
            rsin[k] = r + 100 * k;
        MPI_Reduce_scatter_block(rsin, &got, 1, MPI_DOUBLE, MPI_SUM, ic);
        CHECK(got == remote_sum + 100.0 * lr * rs, "intercommunicator reduce_scatter_block on rank %d: %g", r, got);
        free(rsin);
    }
    free(ag);
    free(cnt);
    free(dsp);
    MPI_Comm_free(&ic);
    MPI_Comm_free(&half);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int r, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    for (int round = 0; round < 3; round++) {
        int dims[1] = {0}, periodic[1] = {1};
        MPI_Dims_create(p, 1, dims);
        MPI_Comm cart, graph, grp, made;
        MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periodic, 1, &cart);
        intra(cart, "cart");
        int src[1] = {r}, deg[1] = {1}, dst[1] = {(r + 1) % p};
        MPI_Dist_graph_create(MPI_COMM_WORLD, 1, src, deg, dst, MPI_UNWEIGHTED, MPI_INFO_NULL, 1, &graph);
        intra(graph, "dist_graph");
        MPI_Group world, odd;
        MPI_Comm_group(MPI_COMM_WORLD, &world);
        int *ranks = malloc(sizeof(int) * (size_t)p), m = 0, member = 0;
        for (int k = p - 1; k >= 0; k--)
            if (k % 2 == 1 || p == 1)
                ranks[m++] = k;
        for (int k = 0; k < m; k++)
            member |= ranks[k] == r;
        MPI_Group_incl(world, m, ranks, &odd);
        if (member) {
            MPI_Comm_create_group(MPI_COMM_WORLD, odd, 7, &grp);
            intra(grp, "create_group");
            MPI_Comm_free(&grp);
        }
        MPI_Comm_create(MPI_COMM_WORLD, odd, &made);
        CHECK((made != MPI_COMM_NULL) == member, "MPI_Comm_create membership on rank %d", r);
        if (made != MPI_COMM_NULL) {
            intra(made, "create");
            MPI_Comm_free(&made);
        }
        if (p >= 2)
            inter(r, p);
        MPI_Comm_free(&cart);
        MPI_Comm_free(&graph);
        MPI_Group_free(&odd);
        MPI_Group_free(&world);
        free(ranks);
    }
    int total = 0;
    PMPI_Allreduce(&bad, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (r == 0)
        printf("commkinds: %s p=%d, %d failed checks\n", total ? "FAIL" : "PASS", p, total);
    MPI_Finalize();
    return total != 0;
}
