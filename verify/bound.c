/* The one-core floor of a p = 2 reduce of doubles (issue #30): z = x + y over m bytes, hot (the
 * same three buffers every iteration) and cold (buffers rotated over 96 MiB, as IMB's
 * -off_cache). Prints "bound <bytes> <hot_us> <cold_us>" (median of the iterations).
 *   cc -O2 -march=native -o bound verify/bound.c && ./bound [iters=200] [sizes in bytes...] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}
static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}
static void add(double *restrict z, const double *restrict x, const double *restrict y, long n)
{
    for (long i = 0; i < n; i++) z[i] = x[i] + y[i];
}
int main(int argc, char **argv)
{
    int iters = argc > 1 ? atoi(argv[1]) : 200;
    const size_t pool = 96u << 20;
    char *mem = malloc(pool + (64u << 20));
    memset(mem, 1, pool + (64u << 20));
    double *t = malloc(sizeof(double) * iters);
    for (int a = 2; a < argc || a == 2; a++) {
        size_t m = argc > 2 ? strtoul(argv[a], 0, 10) : 2u << 20;
        long n = (long)(m / 8);
        double hot, cold;
        for (int rot = 0; rot < 2; rot++) {
            size_t nsets = rot ? pool / (3 * m) : 1, k = 0;
            if (nsets < 2) nsets = 2;
            for (int i = 0; i < iters; i++) {
                double *x = (double *)(mem + (k % nsets) * 3 * m), *y = x + n, *z = y + n;
                k++;
                double t0 = now();
                add(z, x, y, n);
                t[i] = now() - t0;
            }
            qsort(t, iters, sizeof *t, cmp);
            (rot ? &cold : &hot)[0] = t[iters / 2] * 1e6;
        }
        printf("bound %zu %.1f %.1f\n", m, hot, cold);
        if (argc <= 2) break;
    }
    return 0;
}
