/* alloc.c — checked allocation and the memory limit (see alloc.h). */
#include "alloc.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

const char *prt_format_bytes(double bytes, char *buf, size_t len) {
    if (bytes >= 1e9) snprintf(buf, len, "%.1f GB", bytes / 1e9);
    else if (bytes >= 1e6) snprintf(buf, len, "%.1f MB", bytes / 1e6);
    else if (bytes >= 1e3) snprintf(buf, len, "%.1f KB", bytes / 1e3);
    else snprintf(buf, len, "%.0f bytes", bytes);
    return buf;
}

static void out_of_memory(size_t count, size_t size, const char *what, char *err, size_t errlen) {
    char b[32];
    double bytes = (double)count * (double)size; /* in double: the size_t product may have wrapped */
    snprintf(err, errlen, "out of memory: %.0f bytes (%s) for %s", bytes, prt_format_bytes(bytes, b, sizeof b), what);
}

/* bytes (at least 1) from malloc, on a cache line of its own when it fills one: the kernels
   and the loop-form field work on vectors of 8 doubles (64 bytes), and one across two lines
   is two accesses, a store across two lines more (malloc gives 16-byte alignment: a 1000-link
   chain's loop field took 10-25 % longer on it, and varied with the placement) */
enum { CACHE_LINE = 64 };
static void *line_alloc(size_t bytes) {
    if (bytes < CACHE_LINE) return malloc(bytes > 0 ? bytes : 1);
    void *p = NULL;
    return posix_memalign(&p, CACHE_LINE, bytes) == 0 ? p : NULL;
}

void *prt_alloc(size_t count, size_t size, const char *what, char *err, size_t errlen) {
    void *p = NULL;
    if (size == 0 || count <= SIZE_MAX / size) p = line_alloc(count * size);
    if (!p) out_of_memory(count, size, what, err, errlen);
    return p;
}

const char *prt_program = "physc";

static _Noreturn void die(size_t count, size_t size, const char *what) {
    char err[256];
    out_of_memory(count, size, what, err, sizeof err);
    fprintf(stderr, "%s: %s\n", prt_program, err);
    /* not exit(): the libraries' exit handlers may wait forever on threads that are
       themselves retrying an allocation (OpenBLAS's shutdown joins its workers) */
    fflush(NULL);
    _exit(1);
}

void *prt_xalloc(size_t count, size_t size, const char *what) {
    void *p = NULL;
    if (size == 0 || count <= SIZE_MAX / size) p = line_alloc(count * size);
    if (!p) die(count, size, what);
    return p;
}

void *prt_xcalloc(size_t count, size_t size, const char *what) {
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p) die(count, size, what);
    return p;
}

void *prt_xrealloc(void *old, size_t count, size_t size, const char *what) {
    void *p = NULL;
    if (size == 0 || count <= SIZE_MAX / size) p = realloc(old, count * size > 0 ? count * size : 1);
    if (!p) die(count, size, what);
    return p;
}

/* a cgroup v2 memory.max (a container's limit), or 0 if there is none */
static double cgroup_limit(void) {
    FILE *f = fopen("/sys/fs/cgroup/memory.max", "r");
    double v = 0;
    if (f) {
        if (fscanf(f, "%lf", &v) != 1) v = 0; /* "max": no limit */
        fclose(f);
    }
    return v;
}

double prt_mem_limit(void) {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    double limit = pages > 0 && page > 0 ? (double)pages * (double)page : 1e18;
    struct rlimit rl;
    if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && (double)rl.rlim_cur < limit)
        limit = (double)rl.rlim_cur;
    double cg = cgroup_limit();
    if (cg > 0 && cg < limit) limit = cg;
    return limit;
}

int prt_mem_check(double bytes, const char *what, const char *reduce, char *err, size_t errlen) {
    double limit = prt_mem_limit();
    if (bytes <= limit) return 0;
    char b[32], l[32];
    snprintf(err, errlen, "%s need %s of memory (%.0f bytes), more than the %s this machine has; %s", what,
             prt_format_bytes(bytes, b, sizeof b), bytes, prt_format_bytes(limit, l, sizeof l), reduce);
    return -1;
}
