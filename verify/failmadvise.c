/* Preloaded before libpcoll.so: MADV_POPULATE_WRITE (23), with which a window's owner makes
 * its pages present, fails with EFAULT (what a tmpfs without room for them returns) in the
 * process whose rank (OMPI_COMM_WORLD_RANK or PMI_RANK) is FAIL_RANK; every other madvise
 * runs as usual. UCX's memory hooks (MPICH) patch madvise and must be off:
 * UCX_MEM_EVENTS=no UCX_MEM_MMAP_HOOK_MODE=none. gate.sh: the window refused on every rank,
 * the calls served without it. `gcc -shared -fPIC -o libfailmadvise.so failmadvise.c -ldl` */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>

int madvise(void *addr, size_t len, int advice)
{
    static int (*real)(void *, size_t, int);
    if (!real)
        real = (int (*)(void *, size_t, int))dlsym(RTLD_NEXT, "madvise");
    const char *fail = getenv("FAIL_RANK"), *rank = getenv("OMPI_COMM_WORLD_RANK");
    if (!rank)
        rank = getenv("PMI_RANK");
    if (advice == 23 && fail && rank && atoi(fail) == atoi(rank)) {
        errno = EFAULT;
        return -1;
    }
    return real(addr, len, advice);
}
