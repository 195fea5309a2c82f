/* driver.h — a checked system compiled to native kernels and wired to the runtime. */
#ifndef PHYSC_DRIVER_H
#define PHYSC_DRIVER_H
#include "kernels.h"
#include "llvm_jit.h"
#include "system/sim.h"

typedef struct Compiled {
    Kernels k;
    Jit *jit;
    Jit *jit_extra;     /* a library's derivatives, JIT'd apart (COMPILE_LIBRARY; else NULL) */
    PrtSystem ps;
    double *params;     /* masses from the program, then free lengths */
    int *free_rows;
    PrtSo3Body *so3;    /* where the `state so3` bodies' numbers are (ps.so3) */
    PrtFrameBody *frames; /* the bodies with an orientation (ps.frames) */
    double lower_ms, jit_ms;
    IrFn *jitted[MAX_KERNELS]; /* the kernels of k the JIT compiled (and the runtime calls) */
    int njitted;
} Compiled;

/* What the kernels are for: simulation, or training a Hamiltonian (CHNN) and/or a
   Lagrangian (CLNN) model, which adds the VJP kernels the model backpropagates through
   (and Accel for CLNN). With COMPILE_ROLLOUT, a model is only rolled out (a trained one:
   `physc simulate --params`), so no VJP kernels. COMPILE_GENERALIZED: a model in generalized
   coordinates (node, hnn, lnn, delan), which adds kernels_add_generalized's kernels (their
   VJPs with COMPILE_CHNN: training an HNN with the known mass). COMPILE_LIE: a liet2 model
   (Lie T2 paper), which steps the system's own kernels and needs only its known terms'
   gradient and VJP. COMPILE_LIBRARY: a model's library (emit-c --shared), which differentiates
   a generalized-coordinate model through its coordinate maps too
   (kernels_add_coord_derivatives). Flags. */
enum { COMPILE_SIMULATE = 0, COMPILE_CHNN = 1, COMPILE_CLNN = 2, COMPILE_ROLLOUT = 4, COMPILE_GENERALIZED = 8,
       COMPILE_LIE = 16, COMPILE_LIBRARY = 32 };

/* How a simulation's vector field is compiled: unrolled (straight-line code specialized to
   the system: the fastest for small systems), in loop form (runtime/system/loop_field.h: code that
   does not grow with the system), or by the system's size (DRIVER_LOOP_FORM_MIN_ROWS).
   A CHNN's field and a CLNN's acceleration take the form too (their training runs the loop
   form's reverse passes); the other models keep their unrolled kernels, with the loop form's
   rows beside them. */
typedef enum { KERNEL_FORM_AUTO, KERNEL_FORM_UNROLLED, KERNEL_FORM_LOOP } KernelForm;
/* From this many constraint rows up, KERNEL_FORM_AUTO compiles the loop form (and below it
   when the unrolled kernels pass IR_MAX_INSTS). Measured (docs/performance.md, "Scale"):
   unrolled, a chain of 300 links compiles in 1.8 s cold and runs its field 4x faster than the
   loop form, a tree of 63 rigid bodies (567 rows) in 5.5 s and 7x faster; a chain of 1000
   links takes 7 s and 430 MB unrolled, 0.8 s and 130 MB in loop form. */
enum { DRIVER_LOOP_FORM_MIN_ROWS = 512 };
/* The same for a simulation emitted as C (emit-c), which a C compiler builds: GCC -O2 takes
   minutes on large straight-line functions where LLVM's JIT compiles them in segments. The
   emitted chains, unrolled / in loop form, `cc -O2 -c`: 30 links 9 s / 0.25 s, 50 links 34 s,
   100 links 8.6 min / 0.6 s, and 300 links crashed GCC 12 (a segmentation fault). */
enum { DRIVER_EMIT_LOOP_FORM_MIN_ROWS = 40 };
/* The automatic choice's threshold (DRIVER_LOOP_FORM_MIN_ROWS unless set) */
void driver_set_loop_form_min_rows(int rows);
void driver_set_kernel_form(KernelForm form);
KernelForm driver_kernel_form(void);

/* A simulation's kernels (no model) in the form driver_set_kernel_form asks for; skip:
   KERNELS_SKIP_* flags. The JIT's compile and emit-c's both build them so. */
bool driver_build_simulation_kernels(System *sys, Kernels *k, unsigned skip, char *err, size_t errlen);

/* Lowers, differentiates, simplifies and JIT-compiles sys's kernels (opt_level 0..3). */
bool compiled_open(System *sys, Compiled *c, int opt_level, int purpose, char *err, size_t errlen);
/* The same for training `model`, with the gradient of the potentials it keeps as known
   terms: chnn or clnn, or node, hnn, lnn, delan with the generalized-coordinate kernels. */
bool compiled_open_model(System *sys, Compiled *c, int opt_level, const Model *model, char *err, size_t errlen);
/* The same for a library of the trained `model` (emit-c --shared): training's kernels, and
   for a model in generalized coordinates the coordinate maps' derivatives. */
bool compiled_open_library(System *sys, Compiled *c, int opt_level, const Model *model, char *err, size_t errlen);
/* The same for rolling a trained `model` out: its forward kernels, without the VJPs. */
bool compiled_open_rollout(System *sys, Compiled *c, int opt_level, const Model *model, char *err, size_t errlen);
void compiled_close(Compiled *c);

#endif
