/* ad.h — differentiation by source transformation on kernel IR (no finite differences).
   Each function returns a new kernel that also recomputes the primal values it needs. */
#ifndef PHYSC_AD_H
#define PHYSC_AD_H
#include "ir.h"

/* Reverse mode. Inputs: f's inputs, then a cotangent w (f->noutputs). Outputs: w^T Df (ninputs). */
IrFn *ad_vjp(const IrFn *f, const char *name);
/* Gradient of output `out`: f's inputs -> d f_out / d x (ninputs outputs). */
IrFn *ad_gradient(const IrFn *f, int out, const char *name);
/* Jacobian, row-major: output r * ninputs + i is d f_r / d x_i. */
IrFn *ad_jacobian(const IrFn *f, const char *name);
/* Forward mode. Inputs: f's inputs, then a tangent t (ninputs). Outputs: Df t (noutputs). */
IrFn *ad_jvp(const IrFn *f, const char *name);

#endif
