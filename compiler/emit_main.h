/* emit_main.h — `physc emit-c`: the kernels as C plus a main() that runs the same
   simulation as `physc simulate`, linked against build/libphysrt.a. */
#ifndef PHYSC_EMIT_MAIN_H
#define PHYSC_EMIT_MAIN_H
#include <stdio.h>

#include "driver.h"

/* Writes the whole program for the compiled system (kernels built, not necessarily JIT'd). */
void emitc_program(FILE *out, const System *sys, const Kernels *k, const double *params, int nparams, int nmass,
                   const int *free_rows);

#endif
