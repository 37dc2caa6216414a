/* A process's first calls, call by call: N pairs of an 8-byte MPI_Allgather, each call after
 * a barrier, one through PMPI_Allgather and one through MPI_Allgather (pcoll when preloaded);
 * rank 0 prints each side's median per 50 pairs. RAMP_ORDER=pcoll puts pcoll's call first.
 * Under Intel MPI 2021 (p = 2) the second call of each pair takes ~3 us instead of ~0.5 for
 * the first ~200 pairs, whichever side it is, after a communicator that carried two
 * collectives was freed at MPI_Init (pcoll's node communicator until session 38); a plain
 * forwarder (MPI_Allgather calling PMPI_Allgather) or pcoll's calls alone show nothing, nor
 * do MPICH 4.0 and 5 (docs/shm.md, A third machine, session 38).
 * `mpicc -O2 -o ramp ramp.c`, `mpirun -np 2 -genv LD_PRELOAD .../libpcoll.so ./ramp 400`. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+1e-9*t.tv_nsec;}
static int cmp(const void*a,const void*b){double x=*(const double*)a,y=*(const double*)b;return x<y?-1:x>y;}
int main(int argc,char**argv){
  MPI_Init(&argc,&argv);
  int r; MPI_Comm_rank(MPI_COMM_WORLD,&r);
  int n=argc>1?atoi(argv[1]):400, first=getenv("RAMP_ORDER")&&!strcmp(getenv("RAMP_ORDER"),"pcoll");
  double s=r, out[64], *tn=malloc(n*sizeof(double)), *tp=malloc(n*sizeof(double));
  for(int i=0;i<n;i++)
    for(int q=0;q<2;q++){
      int pc = first ? q==0 : q==1;
      PMPI_Barrier(MPI_COMM_WORLD);
      double t0=now();
      if(pc) MPI_Allgather(&s,1,MPI_DOUBLE,out,1,MPI_DOUBLE,MPI_COMM_WORLD);
      else PMPI_Allgather(&s,1,MPI_DOUBLE,out,1,MPI_DOUBLE,MPI_COMM_WORLD);
      (pc?tp:tn)[i]=now()-t0;
    }
  if(r==0)
    for(int b=0;b<n;b+=50){
      double a[50],c[50]; int k=0;
      for(int i=b;i<b+50&&i<n;i++){a[k]=tn[i];c[k]=tp[i];k++;}
      qsort(a,k,sizeof(double),cmp); qsort(c,k,sizeof(double),cmp);
      printf("pairs %4d-%4d PMPI %.3f MPI %.3f us\n",b,b+k-1,a[k/2]*1e6,c[k/2]*1e6);
    }
  free(tn); free(tp);
  MPI_Finalize(); return 0;
}
