/* A cell's first calls, window by window: N pairs (native PMPI_, then MPI_) of one collective
 * at one size in a fresh process, each call after a barrier, each call's time the maximum over
 * the ranks; rank 0 prints each side's median per W pairs (W = N: one median of the first N
 * pairs, what a short A/B of that cell alone reads). Shows what a raced cell costs before it
 * settles (the window's wait, the race, the confirmation: docs/learning.md, Raced rules).
 * `mpicc -O2 -o firstcalls firstcalls.c`,
 * `mpirun -np 2 -x LD_PRELOAD=.../libpcoll.so ./firstcalls allgatherv 4096 140 10`; collectives:
 * allgather allgatherv allreduce reduce bcast reduce_scatter reduce_scatter_block (bytes in
 * total; the reductions over doubles). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+1e-9*t.tv_nsec;}
static int cmp(const void*a,const void*b){double x=*(const double*)a,y=*(const double*)b;return x<y?-1:x>y;}
static int run(int pc,const char*c,char*s,char*r,int n,int p,int*cnts,int*displs){
  MPI_Comm w=MPI_COMM_WORLD;
  if(!strcmp(c,"allgather")) return pc?MPI_Allgather(s,n/p,MPI_BYTE,r,n/p,MPI_BYTE,w):PMPI_Allgather(s,n/p,MPI_BYTE,r,n/p,MPI_BYTE,w);
  if(!strcmp(c,"allgatherv")) return pc?MPI_Allgatherv(s,n/p,MPI_BYTE,r,cnts,displs,MPI_BYTE,w):PMPI_Allgatherv(s,n/p,MPI_BYTE,r,cnts,displs,MPI_BYTE,w);
  if(!strcmp(c,"allreduce")) return pc?MPI_Allreduce(s,r,n/8,MPI_DOUBLE,MPI_SUM,w):PMPI_Allreduce(s,r,n/8,MPI_DOUBLE,MPI_SUM,w);
  if(!strcmp(c,"reduce")) return pc?MPI_Reduce(s,r,n/8,MPI_DOUBLE,MPI_SUM,0,w):PMPI_Reduce(s,r,n/8,MPI_DOUBLE,MPI_SUM,0,w);
  if(!strcmp(c,"bcast")) return pc?MPI_Bcast(s,n,MPI_BYTE,0,w):PMPI_Bcast(s,n,MPI_BYTE,0,w);
  if(!strcmp(c,"reduce_scatter_block")) return pc?MPI_Reduce_scatter_block(s,r,n/8/p,MPI_DOUBLE,MPI_SUM,w):PMPI_Reduce_scatter_block(s,r,n/8/p,MPI_DOUBLE,MPI_SUM,w);
  if(!strcmp(c,"reduce_scatter")){ for(int i=0;i<p;i++) cnts[i]=n/8/p; return pc?MPI_Reduce_scatter(s,r,cnts,MPI_DOUBLE,MPI_SUM,w):PMPI_Reduce_scatter(s,r,cnts,MPI_DOUBLE,MPI_SUM,w);}
  abort();
}
int main(int argc,char**argv){
  MPI_Init(&argc,&argv);
  int rk,p; MPI_Comm_rank(MPI_COMM_WORLD,&rk); MPI_Comm_size(MPI_COMM_WORLD,&p);
  const char*c=argv[1]; int n=atoi(argv[2]); int N=atoi(argv[3]); int W=argc>4?atoi(argv[4]):10;
  char*s=calloc(n*2+64,1),*r=calloc(n*2+64,1); int*cnts=malloc(p*sizeof(int)),*displs=malloc(p*sizeof(int));
  for(int i=0;i<p;i++){cnts[i]=n/p;displs[i]=i*(n/p);}
  double*tn=malloc(N*sizeof(double)),*tp=malloc(N*sizeof(double)),m[2];
  for(int i=0;i<N;i++) for(int q=0;q<2;q++){
    PMPI_Barrier(MPI_COMM_WORLD); double t0=now(); run(q,c,s,r,n,p,cnts,displs); double t=now()-t0;
    PMPI_Reduce(&t,m,1,MPI_DOUBLE,MPI_MAX,0,MPI_COMM_WORLD); (q?tp:tn)[i]=m[0];
  }
  if(rk==0){ for(int i=0;i<N;i+=W){ int k=W<N-i?W:N-i; qsort(tn+i,k,8,cmp); qsort(tp+i,k,8,cmp);
    printf("%s %d pairs %4d-%4d native %7.2f pcoll %7.2f ratio %.2f\n",c,n,i,i+k-1,1e6*tn[i+k/2],1e6*tp[i+k/2],tp[i+k/2]/tn[i+k/2]);} }
  MPI_Finalize(); return 0;
}
