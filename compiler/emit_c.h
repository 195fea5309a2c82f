/* emit_c.h — the C backend: kernel IR as readable, portable C (C99 and later) with the
   batch ABI of docs/runtime-abi.md, for ahead-of-time builds and for reading. */
#ifndef PHYSC_EMIT_C_H
#define PHYSC_EMIT_C_H
#include <stdio.h>

#include "ir.h"

/* Writes one translation unit: a header comment, #include <math.h>, the physc_powi and
   physc_sign helpers, and for each kernel an external function
       void NAME(long n, const double *restrict in, const double *restrict params,
                 double *restrict out);
   Kernels must pass ir_verify and be named by distinct C identifiers (jit_compile
   checks the same). Values that reach no output are left out. */
void emitc_kernels(FILE *out, IrFn *const *fns, int nfns);

#endif
