/* pcoll_last_algorithm for the verify programs, looked up at run time (the program runs, and
 * checks nothing, without pcoll). check_alg: if `want` is not NULL and pcoll's last call of
 * `coll` ran another algorithm, *odd (if still NULL) becomes `coll`; with `need`, pcoll not
 * being loaded counts as odd too. Needs _GNU_SOURCE and -ldl. */
#include <dlfcn.h>
#include <string.h>

static inline void check_alg(const char *coll, const char *want, int need, const char **odd)
{
    typedef const char *(*last_fn)(const char *);
    last_fn last = (last_fn)dlsym(RTLD_DEFAULT, "pcoll_last_algorithm");
    const char *got = last ? last(coll) : NULL;
    if (!want || *odd)
        return;
    if (got && strcmp(got, want))
        *odd = coll;
    else if (!last && need)
        *odd = "pcoll_last_algorithm (pcoll not preloaded?)";
}
