/* driver.h — a checked system compiled to native kernels and wired to the runtime. */
#ifndef PHYSC_DRIVER_H
#define PHYSC_DRIVER_H
#include "kernels.h"
#include "llvm_jit.h"
#include "sim.h"

typedef struct Compiled {
    Kernels k;
    Jit *jit;
    PrtSystem ps;
    double *params;     /* masses from the program, then free lengths */
    int *free_rows;
    double lower_ms, jit_ms;
} Compiled;

/* Lowers, differentiates, simplifies and JIT-compiles sys's kernels (opt_level 0..3);
   `training` adds Accel and the VJP kernels that models backpropagate through. */
bool compiled_open(System *sys, Compiled *c, int opt_level, bool training, char *err, size_t errlen);
void compiled_close(Compiled *c);

#endif
