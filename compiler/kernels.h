/* kernels.h — the passes in order: lower the system, differentiate, simplify, verifying
   the IR after every pass. The kernels, their inputs and outputs, are the rows of
   PRT_KERNELS (runtime/system/kernel.h; names as in dump-ir): kernels_build makes the ones every
   system gets, kernels_add_training the reverse-mode VJPs a model differentiates through
   (ad_vjp: inputs, then a cotangent; outputs the input adjoints, then the parameter
   adjoints, per state), kernels_add_known a model's known potential terms. */
#ifndef PHYSC_KERNELS_H
#define PHYSC_KERNELS_H
#include "ir.h"
#include "system/kernel.h"
#include "system/loop_field.h"
#include "system.h"

enum { MAX_KERNELS = 64 };

typedef struct Kernels {
    IrFn *fns[MAX_KERNELS];
    int n;
    int *draw_kinds; /* Init's inputs: DRAW_NORMAL or DRAW_UNIFORM each */
    int ndraws;
    Diags *diags;    /* the program's, for what only simplification reveals (may be NULL) */
    bool too_big;    /* the last build failed at IR_MAX_INSTS (kept by kernels_free) */
    PrtLoopField *loop; /* KERNELS_LOOP_FORM: the vector field's tables; its row kernels are
                           the fns named Row0, Row1, ... (NULL: the field is unrolled) */
} Kernels;

/* Builds the kernels; `optimize` runs the simplifier after each pass. Returns false with a
   message for an internal error (a compiler bug), or when simplification folds a value to a
   constant inf or NaN: an expression of the program that is not finite for any state,
   reported at that expression (sys->sema's diagnostics) when it is known. */
bool kernels_build(System *sys, Kernels *k, bool optimize, char *err, size_t errlen);
/* The same without the kernels a command will not call (KERNELS_SKIP_* flags): DPhiDot
   (C x 2N outputs, built and simplified as a dense Jacobian: 46 % of a 1000-link chain's
   lowering) and Accel (Lagrangian models only). */
enum { KERNELS_SKIP_DPHIDOT = 1u, KERNELS_SKIP_ACCEL = 2u,
       /* the vector field in loop form (loop_form.h) instead of the unrolled Field and Rhs,
          and no DPhi, PhiDot, DPhiDot, H, MinvP or MassV (the rows give DPhi and PhiDot, the
          bodies' table M^-1 P and M V, those and V the energy: prt_dphi, prt_phidot,
          prt_minv, prt_massv, prt_energy; Phi, which the rows come from, is kept but not
          compiled), for a simulation of a
          system with constraints and without SO(3) bodies; fails with a reason when the
          system does not fit it */
       KERNELS_LOOP_FORM = 4u,
       /* the loop form's row kernels and tables beside the unrolled kernels a model needs, for
          the system's own dynamics (its data, the projections, the truth a model is measured
          against: prt_hamiltonian_rhs runs the loop form when there is one), and no DPhi (the
          rows give it), PhiDot, DPhiDot and H (as in loop form) or Rhs (the system's field is
          the loop form's); 26,000 and 102,000 instructions of a 1000-link chain's model; fails
          with a reason when the system does not fit the loop form */
       KERNELS_WITH_ROWS = 8u };
bool kernels_build_except(System *sys, Kernels *k, bool optimize, unsigned skip, char *err, size_t errlen);
/* Adds the VJP kernels training needs (systems without SO(3) bodies): a Hamiltonian model
   backpropagates through Field, MassV and MinvP, a Lagrangian one through Accel. */
bool kernels_add_training(Kernels *k, bool hamiltonian, bool lagrangian, bool optimize, char *err, size_t errlen);
/* A CHNN's training in loop form: each row class's VJP, Row<c>VJP (ad_vjp of Row<c>: the
   class's inputs, then the cotangent of (phi, A, B); outputs the inputs' adjoints), which
   runtime/system/loop_field_vjp.c runs in place of FieldVJP, MinvPVJP and MassVVJP. */
bool kernels_add_row_vjps(Kernels *k, bool optimize, char *err, size_t errlen);
/* The potentials a model keeps as known terms (indices into sys->potentials): Vknown (X) ->
   their sum (the model's energy has it), gradVknown (X) -> their gradient, and its VJP
   gradVknownVJP (a Hessian-vector product). */
bool kernels_add_known(System *sys, Kernels *k, const int *known, int nknown, bool optimize, char *err, size_t errlen);
/* The kernels of models in generalized coordinates (sys has a coordinates block; after
   kernels_build): CoordMap, CoordInverse (when sys has an inverse block), MassQ, KineticQ,
   GradVq, and with `training` the VJPs MassQVJP and KineticQVJP (a known-mass HNN). Built
   only on request: they cost JIT time. Layouts in lower.h and docs/ir.md. */
bool kernels_add_generalized(System *sys, Kernels *k, bool training, bool optimize, char *err, size_t errlen);
/* A library's derivatives of a model in generalized coordinates (after
   kernels_add_generalized; needs an inverse block): CoordMapVJP, CoordInverseVJP,
   CoordMapJVP and its VJP CoordMapJVPVJP, and MassQ's JVP MassQJVP with its VJP (an HNN with
   the known mass: its field's dM/dt). */
bool kernels_add_coord_derivatives(Kernels *k, bool optimize, char *err, size_t errlen);
IrFn *kernels_find(const Kernels *k, const char *name);
/* Rhs (X, P) = Field (X, P, gradV (X)), a new kernel (also for systems whose kernels have no
   Rhs: `state so3` bodies, whose field the runtime composes from the two) */
IrFn *lower_rhs(const IrFn *field, const IrFn *gradv);
void kernels_free(Kernels *k);

#endif
