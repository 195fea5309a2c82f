/* llvm_jit.h — the LLVM backend: kernel IR to native code for this CPU (ORC LLJIT).
   Every kernel becomes a function with the batch ABI of docs/runtime-abi.md:
       void NAME(long n, const double *in, const double *params, double *out)
   with in[i*n + b], out[o*n + b] (structure of arrays) and params shared by the batch.
   Only compiler/llvm_jit.c sees LLVM; this header is plain C. */
#ifndef PHYSC_LLVM_JIT_H
#define PHYSC_LLVM_JIT_H
#include <stdbool.h>
#include <stddef.h>

#include "ir.h"
#include "system/kernel.h"

typedef struct Jit Jit;

/* Compiles the kernels into native code for this CPU (opt_level 0..3 picks the LLVM
   pipeline default<O0..O3>), or takes that code from the disk cache (jit_cache.h), and
   stores what it compiles there. Every kernel is linked before this returns. NULL on
   failure, with a message in err: a kernel that fails ir_verify, a name that is not a C
   identifier or collides with another kernel or a runtime symbol, or an LLVM error. */
Jit *jit_compile(IrFn *const *fns, int nfns, int opt_level, char *err, size_t errlen);
/* The kernel of that name, or NULL. Valid until jit_free. */
PrtKernel jit_lookup(Jit *j, const char *name);
void jit_free(Jit *j);
/* Wall time of the jit_compile that made j: IR building, optimization and code
   generation, in milliseconds. */
double jit_last_compile_ms(const Jit *j);
/* Whether j's code came from the disk cache (jit_cache.h) rather than LLVM. */
bool jit_from_cache(const Jit *j);

/* The compiled code as relocatable objects (ELF, position-independent, for this CPU): the
   kernels under their names, calling the runtime symbols below, for `physc emit-c --shared`
   to link into a library that runs the very instructions the JIT runs. Kept only by the
   jit_compile calls after jit_keep_objects(true); valid until jit_free. */
typedef struct JitObject {
    void *data;
    size_t len;
} JitObject;
void jit_keep_objects(bool keep);
int jit_object_count(const Jit *j);
const JitObject *jit_object(const Jit *j, int i);

/* The runtime symbols JIT'd code may call (docs/runtime-abi.md), NULL-terminated. */
extern const char *const jit_runtime_symbols[];

#endif
