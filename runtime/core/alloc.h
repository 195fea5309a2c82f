/* alloc.h — checked allocation, and the up-front check of sizes that come from a program or
   the command line (trajectory counts, steps, network widths): a request too big for the
   machine is refused with its size and what to reduce, before anything big is attempted. */
#ifndef PRT_ALLOC_H
#define PRT_ALLOC_H
#include <stddef.h>

/* count * size bytes (malloc'd, 64-byte aligned from 64 bytes; at least 1, so NULL always
   means failure; free() frees them), or NULL with
   "out of memory: N bytes (X GB) for WHAT" in err when the product overflows or malloc fails. */
void *prt_alloc(size_t count, size_t size, const char *what, char *err, size_t errlen);

/* The same for buffers with no error path to their caller, whose sizes the up-front checks
   below have bounded: on failure the message goes to stderr and the process exits with
   status 1 (a clear stop instead of a crash on a NULL pointer). calloc zeroes; realloc keeps
   the contents. */
void *prt_xalloc(size_t count, size_t size, const char *what);
/* The name those messages start with: "physc", or an emitted program's argv[0]. */
extern const char *prt_program;
void *prt_xcalloc(size_t count, size_t size, const char *what);
void *prt_xrealloc(void *p, size_t count, size_t size, const char *what);

/* The memory one run may plan for, in bytes: the machine's physical memory, or less if the
   process is limited (RLIMIT_AS, a cgroup v2 memory.max). Physical memory rather than the
   "available" figure of the moment: the page cache counts as used there though the kernel
   gives it back, and a run refused because of what happened to be free would be refused at
   random. A plan above this limit cannot succeed (there is no room for it even on an idle
   machine); one below it may still swap if other processes hold memory. */
double prt_mem_limit(void);

/* 0 if `bytes` fit prt_mem_limit(); else -1 with "WHAT need(s) X GB of memory (N bytes), more
   than the Y GB this machine has; REDUCE" in err (e.g. what = "4 trajectories of 1000000001
   points", reduce = "reduce --steps or --n"). */
int prt_mem_check(double bytes, const char *what, const char *reduce, char *err, size_t errlen);

/* "12.3 GB", "512.0 MB", "12.0 KB", "100 bytes" (decimal units). */
const char *prt_format_bytes(double bytes, char *buf, size_t len);

#endif
