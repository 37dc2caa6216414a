/* Which MPI a verify program runs under, from MPI_Get_library_version (for the native
 * defects pcoll routes around per MPI: pcoll::decide::defects). */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

/* Intel MPI (whose version string also names the MPICH it is built on). */
static inline int intel_mpi(void)
{
    char v[MPI_MAX_LIBRARY_VERSION_STRING];
    int n = 0;
    MPI_Get_library_version(v, &n);
    return strstr(v, "Intel") != NULL;
}

/* MPICH's major version (0: not an MPICH, or Intel MPI). */
static inline int mpich_major(void)
{
    char v[MPI_MAX_LIBRARY_VERSION_STRING];
    int n = 0, major = 0;
    MPI_Get_library_version(v, &n);
    const char *m = strstr(v, "MPICH Version:");
    if (!m || strstr(v, "Intel"))
        return 0;
    sscanf(m, "MPICH Version: %d", &major);
    return major;
}
