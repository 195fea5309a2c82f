/* emit_main.h — `physc emit-c`: the kernels as C plus a main() that runs the same
   simulation as `physc simulate` (of the system, or of a trained model of it), linked
   against build/libphysrt.a. */
#ifndef PHYSC_EMIT_MAIN_H
#define PHYSC_EMIT_MAIN_H
#include <stdio.h>

#include "driver.h"
#include "models/model.h"

/* A trained model to bake into the program (`physc emit-c --params`): its main() then rolls
   the model out as `physc simulate --params` does. */
typedef struct EmitModel {
    const char *name, *params_path; /* for the program's comments and report */
    PrtModelConfig cfg;             /* its family, networks and training settings */
    const double *theta;
    long nparams;
} EmitModel;

/* Writes the whole program for the compiled system (kernels built, not necessarily JIT'd),
   with `model` (or NULL: the system's own dynamics). */
void emitc_program(FILE *out, const System *sys, const Kernels *k, const double *params, int nparams, int nmass,
                   const int *free_rows, const EmitModel *model);

/* The C of a shared library's tables (`physc emit-c --shared`): the system and the trained
   model as emitc_program writes them, registered with runtime/abi/ by a constructor, and its
   kernels fns (nfns of k's: those the JIT compiled) declared: their code is the JIT's objects. */
void emitc_shared_tables(FILE *out, const System *sys, const Kernels *k, IrFn *const *fns, int nfns,
                         const double *params, int nparams, int nmass, const int *free_rows, const EmitModel *model);

#endif
