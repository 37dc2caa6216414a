/* A communicator made for a few calls: the total time of K allreduces of m bytes (doubles,
 * MPI_SUM) on a fresh MPI_Comm_dup, through MPI_Allreduce (pcoll when preloaded) and through
 * PMPI_Allreduce (the MPI's own), alternated, each on its own fresh communicator; the median
 * over reps (default 7), the slowest rank's, for K = 1, 2, 4, 8, 16, 64.
 * `mpicc -O2 -o fewcalls fewcalls.c`,
 * `mpirun -np 2 -x LD_PRELOAD=$PWD/build/openmpi/libpcoll.so ./fewcalls 65536 [reps]`.
 * docs/shm.md, Lifetime and limits: when the window is made. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
static int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
int main(int argc,char**argv){
  MPI_Init(&argc,&argv);
  int r; MPI_Comm_rank(MPI_COMM_WORLD,&r);
  size_t m = atol(argv[1]); int reps=argc>2?atoi(argv[2]):7;
  size_t n=m/8; double*s=malloc(m),*d=malloc(m); for(size_t i=0;i<n;i++)s[i]=i+r;
  int Ks[]={1,2,4,8,16,64};
  for(int ki=0;ki<6;ki++){ int K=Ks[ki]; double tp[32],tn[32];
    for(int rep=0;rep<reps;rep++) for(int side=0;side<2;side++){
      MPI_Comm c; PMPI_Comm_dup(MPI_COMM_WORLD,&c); PMPI_Barrier(c);
      double t0=MPI_Wtime();
      for(int k=0;k<K;k++){ if(side==0) MPI_Allreduce(s,d,n,MPI_DOUBLE,MPI_SUM,c); else PMPI_Allreduce(s,d,n,MPI_DOUBLE,MPI_SUM,c);}
      double t=MPI_Wtime()-t0; PMPI_Allreduce(MPI_IN_PLACE,&t,1,MPI_DOUBLE,MPI_MAX,c);
      (side?tn:tp)[rep]=t; MPI_Comm_free(&c);
    }
    qsort(tp,reps,8,cmp); qsort(tn,reps,8,cmp);
    if(!r) printf("m=%zu K=%2d pcoll %8.0f us native %8.0f us ratio %.2f\n",m,K,tp[reps/2]*1e6,tn[reps/2]*1e6,tp[reps/2]/tn[reps/2]);
  }
  MPI_Finalize();
}
