/* sema.h — semantic analysis: names, shapes, physical sanity; builds the System model.
   The checker is an abstract evaluator: it runs every expression with loops unrolled,
   computing numbers where they are known at compile time (constants, masses, ranges) and
   shapes where they are not (positions of bodies, random draws). */
#ifndef PHYSC_SEMA_H
#define PHYSC_SEMA_H
#include "system.h"

typedef struct SemaOptions {
    const char *stdlib_dir;      /* where `import "gravity"` looks */
    const char **set_names;      /* --set NAME=VALUE overrides of params */
    double *set_values;
    int nset;
    bool require_system;
} SemaOptions;

/* Loads, parses and checks `path` with its imports. Returns NULL when there were errors
   (reported through d). The System and the syntax trees live in `arena`. */
System *sema_check_file(Arena *arena, Diags *d, const char *path, const SemaOptions *opt);
/* The same for a source already added to d (the fuzzer, tests). */
System *sema_check_source(Arena *arena, Diags *d, int file, const SemaOptions *opt);

#endif
