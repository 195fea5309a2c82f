/* emit_shared.h — `physc emit-c --shared` (emit_shared.c): a trained model as a shared
   library with the C ABI of runtime/abi/physc_model.h. */
#ifndef PHYSC_EMIT_SHARED_H
#define PHYSC_EMIT_SHARED_H
#include <stdbool.h>
#include <stddef.h>

#include "driver.h"
#include "models/model.h"

/* Where a C program finds the runtime: the build folder this physc runs from (libphysrt.a)
   and the runtime/ headers beside that folder, relative to the current folder when inside
   it. False if they are not there (a physc installed elsewhere). */
bool runtime_paths(char *build, char *include, size_t len);

/* Compiles model md (configuration cfg, parameters theta, read from params_path) as
   `physc simulate --params` does and links the library `out` (written whole or not at all).
   0, or 1 after a message. */
int emit_shared_library(System *sys, const Model *md, const PrtModelConfig *cfg, const double *theta, long nparams,
                        const char *params_path, const char *out, bool quiet);

#endif
