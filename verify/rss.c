/* rss: resident memory must stay flat over 100 000 collective calls (issue 7).
 *
 * Cycles MPI_Allreduce / MPI_Reduce / MPI_Reduce_scatter / MPI_Allgatherv with many distinct
 * counts (more than pcoll's per-communicator program cache holds, so eviction runs), rotating
 * roots, a user-defined op every few calls, and every 500 calls a fresh MPI_Comm_dup that is
 * used once and freed (-d) (pcoll's shadow communicator and cache must go with it). Reads the
 * resident set size from /proc/self/statm at checkpoints; after a warm-up of `-w` calls the
 * growth to the end must stay under `-k` KiB on every rank (default 2048 KiB: a leak of 24
 * bytes per call would exceed it).
 *
 * Usage: rss [-n CALLS] [-w WARMUP] [-k LIMIT_KIB] [-d DUP_EVERY (0: no communicator churn)]
 * Rank 0 prints `rss: ...` lines and `rss: PASS` or `rss: FAIL`; exit 1 on FAIL.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static long rss_kib(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    long size = 0, res = 0;
    if (f) {
        if (fscanf(f, "%ld %ld", &size, &res) != 2) res = 0;
        fclose(f);
    }
    return res * (sysconf(_SC_PAGESIZE) / 1024);
}

static void usum(void *in, void *io, int *n, MPI_Datatype *t) {
    (void)t;
    int *a = in, *b = io;
    for (int i = 0; i < *n; i++) b[i] += a[i];
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int me, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    long calls = 100000, warm = 20000, limit = 2048, dup_every = 500;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "-n")) calls = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "-w")) warm = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "-k")) limit = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "-d")) dup_every = atol(argv[i + 1]);
    }
    MPI_Op uop;
    MPI_Op_create(usum, 1, &uop);
    const int maxc = 1024;
    int *sb = malloc(sizeof(int) * maxc * p), *rb = malloc(sizeof(int) * maxc * p);
    int *cnt = malloc(sizeof(int) * p), *dsp = malloc(sizeof(int) * p);
    for (int i = 0; i < maxc * p; i++) sb[i] = i % 7 + me;
    long r0 = rss_kib(), rw = 0, errors = 0;
    int nck = 0;
    long ck[64];
    for (long it = 0; it < calls; it++) {
        int n = (int)((it * 13) % 193) + 1; /* 193 distinct counts > the 64-program cache */
        int root = (int)(it % p);
        MPI_Op op = it % 7 == 0 ? uop : MPI_SUM;
        int rc;
        switch (it % 4) {
        case 0: rc = MPI_Allreduce(sb, rb, n, MPI_INT, op, MPI_COMM_WORLD); break;
        case 1: rc = MPI_Reduce(sb, rb, n, MPI_INT, op, root, MPI_COMM_WORLD); break;
        case 2:
            for (int k = 0; k < p; k++) cnt[k] = (n + k) % 5;
            rc = MPI_Reduce_scatter(sb, rb, cnt, MPI_INT, op, MPI_COMM_WORLD);
            break;
        default: {
            int at = 0;
            for (int k = 0; k < p; k++) { cnt[k] = (n + 3 * k) % 11; dsp[k] = at; at += cnt[k]; }
            rc = MPI_Allgatherv(sb, cnt[me], MPI_INT, rb, cnt, dsp, MPI_INT, MPI_COMM_WORLD);
        }
        }
        if (rc != MPI_SUCCESS) errors++;
        if (it % 4 == 0 && rb[0] != p * (p - 1) / 2) errors++; /* element 0: sum of ranks */
        if (dup_every > 0 && it % dup_every == dup_every - 1) {
            MPI_Comm c;
            MPI_Comm_dup(MPI_COMM_WORLD, &c);
            MPI_Allreduce(sb, rb, 8, MPI_INT, MPI_SUM, c);
            MPI_Comm_free(&c);
        }
        if (it + 1 == warm) rw = rss_kib();
        if ((it + 1) % (calls / 10 > 0 ? calls / 10 : 1) == 0 && nck < 64) ck[nck++] = rss_kib();
    }
    long r1 = rss_kib();
    long growth = r1 - rw;
    long worst = 0, nerr = 0;
    MPI_Reduce(&growth, &worst, 1, MPI_LONG, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&errors, &nerr, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (me == 0) {
        char s[1024];
        int k = 0;
        for (int i = 0; i < nck; i++) k += snprintf(s + k, sizeof s - k, " %ld", ck[i]);
        printf("rss: p=%d calls=%ld rank0 KiB: start %ld, after warm-up (%ld calls) %ld, end %ld; checkpoints:%s\n",
               p, calls, r0, warm, rw, r1, s);
        printf("rss: growth after warm-up, worst rank: %ld KiB (limit %ld KiB); %ld wrong results\n", worst, limit, nerr);
        printf("rss: %s\n", worst <= limit && nerr == 0 ? "PASS" : "FAIL");
    }
    MPI_Op_free(&uop);
    free(sb); free(rb); free(cnt); free(dsp);
    int fail = worst > limit || nerr;
    MPI_Bcast(&fail, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Finalize();
    return fail;
}
