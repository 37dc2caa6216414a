/* Minimal copy-in reduce over an MPI-3 shared window (the prototype, re-made):
 * rank 1 copies its input into its cell (ordinary or NT stores), publishes a counter; rank 0
 * waits, computes recv = own + cell, publishes a counter; barrier before each call, max over
 * ranks, median of ITER. Alternated with PMPI_Reduce. argv: bytes... ; env NT=1, CELL=bytes */
#include <immintrin.h>
#include <mpi.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static int cmp(const void *a, const void *b){double x=*(double*)a,y=*(double*)b;return (x>y)-(x<y);}
int main(int argc, char **argv){
  MPI_Init(&argc,&argv); int me,p; MPI_Comm_rank(MPI_COMM_WORLD,&me); MPI_Comm_size(MPI_COMM_WORLD,&p);
  int nt = getenv("NT") && atoi(getenv("NT"));
  size_t cell = getenv("CELL") ? strtoul(getenv("CELL"),0,0) : 262144;
  int slots = getenv("SLOTS") ? atoi(getenv("SLOTS")) : 2;
  MPI_Win win; char *base;
  MPI_Win_allocate_shared(4096 + 64 + slots*cell, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
  MPI_Aint sz; int du; char *b0, *b1;
  MPI_Win_shared_query(win, 0, &sz, &du, &b0); MPI_Win_shared_query(win, 1, &sz, &du, &b1);
  _Atomic unsigned long *filled = (_Atomic unsigned long*)b1, *readc = (_Atomic unsigned long*)b0;
  memset(base, 0, 4096 + slots*cell); MPI_Barrier(MPI_COMM_WORLD);
  unsigned long chunk = 0; int ITER = 400;
  size_t maxb = 8u<<20; double *x = malloc(maxb), *z = malloc(maxb), *z2 = malloc(maxb);
  for (size_t i = 0; i < maxb/8; i++) x[i] = me + i % 7;
  double *tn = malloc(ITER*8), *tp = malloc(ITER*8);
  for (int a = 1; a < argc; a++) {
    size_t bytes = strtoul(argv[a],0,0), n = bytes/8;
    for (int it = 0; it < ITER; it++) {
      for (int side = 0; side < 2; side++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        if (side == 0) PMPI_Reduce(x, z2, n, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        else {
          for (size_t off = 0; off < bytes; off += cell) {
            size_t len = bytes - off < cell ? bytes - off : cell; unsigned long c = chunk++;
            char *cb = (char*)(((size_t)b1 + 4096 + 63) & ~(size_t)63);
            double *cellp = (double*)(cb + (c % slots) * cell);
            if (me == 1) {
              while (c >= (unsigned long)slots && atomic_load_explicit(readc, memory_order_acquire) < c - slots + 1) _mm_pause();
              if (nt) { double *s = x + off/8; for (size_t i = 0; i < len/8; i += 8) _mm512_stream_pd(cellp + i, _mm512_loadu_pd(s + i)); _mm_sfence(); }
              else memcpy(cellp, x + off/8, len);
              atomic_store_explicit(filled, c + 1, memory_order_release);
            } else {
              while (atomic_load_explicit(filled, memory_order_acquire) < c + 1) _mm_pause();
              double *xs = x + off/8, *zs = z + off/8;
              for (size_t i = 0; i < len/8; i++) zs[i] = xs[i] + cellp[i];
              atomic_store_explicit(readc, c + 1, memory_order_release);
            }
          }
        }
        double t = MPI_Wtime() - t0, m;
        MPI_Allreduce(&t, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        (side ? tp : tn)[it] = m;
      }
    }
    if (me == 0 && memcmp(z, z2, bytes)) printf("MISMATCH at %zu\n", bytes);
    qsort(tn, ITER, 8, cmp); qsort(tp, ITER, 8, cmp);
    if (me == 0) printf("proto %zu native %.2f proto %.2f ratio %.3f (NT=%d cell=%zu slots=%d)\n", bytes, tn[ITER/2]*1e6, tp[ITER/2]*1e6, tp[ITER/2]/tn[ITER/2], nt, cell, slots);
  }
  MPI_Win_free(&win); MPI_Finalize(); return 0; }
