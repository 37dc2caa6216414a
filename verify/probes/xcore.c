// Cross-core transfer bandwidth: two processes pinned to cpu 0 and 1 share a buffer (MAP_SHARED
// anonymous). Writer fills N bytes (ordinary stores), publishes a flag; reader sums the buffer
// (reads the writer's dirty lines), publishes done. Then the same with the reader summing a
// buffer it wrote itself (hot local read), for comparison. Median of 200 rounds.
#define _GNU_SOURCE
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <immintrin.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e9+t.tv_nsec;}
static void pin(int c){cpu_set_t s;CPU_ZERO(&s);CPU_SET(c,&s);sched_setaffinity(0,sizeof s,&s);}
static int cmpd(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return (x>y)-(x<y);}
int main(int argc,char**argv){
  size_t n = argc>1? strtoul(argv[1],0,0) : (2u<<20);
  int NB = argc>2? atoi(argv[2]) : 1;
  int MODE = argc>3? atoi(argv[3]) : 0; /* 1: writer NT stores; 2: reader flushes after reading */
  int R=200;
  char *m = mmap(0, n*NB + 4096, PROT_READ|PROT_WRITE, MAP_SHARED|MAP_ANONYMOUS, -1, 0);
  _Atomic long *flag = (_Atomic long*)(m + n*NB), *done = flag + 16;
  double *buf=(double*)m; size_t k=n/8;
  atomic_store(flag,0); atomic_store(done,0);
  double *wt=(double*)mmap(0, R*sizeof(double), PROT_READ|PROT_WRITE, MAP_SHARED|MAP_ANONYMOUS, -1, 0);
  pid_t pid=fork();
  if(pid==0){ pin(1);
    for(long r=1;r<=R;r++){ while(atomic_load(done)!=r-1); double *b=buf+(r%NB)*k; double t0=now();
      if (MODE==1) { for(size_t i=0;i<k;i+=8){ __m512d v=_mm512_set1_pd((double)(i+r)); _mm512_stream_pd(b+i,v);} _mm_sfence(); }
      else if (MODE==3) { for(size_t i=0;i<k;i+=2){ __m128d v=_mm_set1_pd((double)(i+r)); _mm_stream_pd(b+i,v);} _mm_sfence(); }
      else if (MODE==4) { for(size_t i=0;i<k;i+=4){ __m256d v=_mm256_set1_pd((double)(i+r)); _mm256_stream_pd(b+i,v);} _mm_sfence(); }
      else for(size_t i=0;i<k;i++) b[i]=(double)(i+r);
      wt[r-1]=now()-t0; atomic_store(flag,r);} _exit(0);}
  pin(0);
  double *t=malloc(R*sizeof(double)), s=0;
  for(long r=1;r<=R;r++){ while(atomic_load(flag)!=r); double *b=buf+(r%NB)*k; double t0=now(); for(size_t i=0;i<k;i++) s+=b[i];
    if (MODE==2) { for(size_t i=0;i<k;i+=8) _mm_clflushopt(b+i); _mm_sfence(); }
    t[r-1]=now()-t0; atomic_store(done,r);}
  waitpid(pid,0,0);
  qsort(t,R,sizeof(double),cmpd);
  double *loc=malloc(n); double *tl=malloc(R*sizeof(double));
  for(int r=0;r<R;r++){ for(size_t i=0;i<k;i++) loc[i]=(double)(i+r); double t0=now(); for(size_t i=0;i<k;i++) s+=loc[i]; tl[r]=now()-t0;}
  qsort(tl,R,sizeof(double),cmpd);
  qsort(wt,R,sizeof(double),cmpd);
  printf("write over the reader's copy %.1f us; ", wt[R/2]/1e3);
  printf("%zu B: cross-core read %.1f us (%.1f GB/s), local hot read %.1f us (%.1f GB/s) [%g]\n", n, t[R/2]/1e3, n/t[R/2], tl[R/2]/1e3, n/tl[R/2], s>0?1.0:0.0);
  return 0;}
