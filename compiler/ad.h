/* ad.h — differentiation by source transformation on kernel IR (no finite differences).
   Each function returns a new kernel that also recomputes the primal values it needs. */
#ifndef PHYSC_AD_H
#define PHYSC_AD_H
#include "ir.h"

/* Reverse mode. Inputs: f's inputs, then a cotangent w (f->noutputs). Outputs: w^T Df with
   respect to the inputs (ninputs), then with respect to the parameters (nparams). */
IrFn *ad_vjp(const IrFn *f, const char *name);
/* Gradient of output `out`: f's inputs -> d f_out / d x (ninputs outputs). */
IrFn *ad_gradient(const IrFn *f, int out, const char *name);
/* Jacobian, row-major: output r * ninputs + i is d f_r / d x_i. */
IrFn *ad_jacobian(const IrFn *f, const char *name);
/* Forward mode. Inputs: f's inputs, then a tangent t (ninputs). Outputs: Df t (noutputs). */
IrFn *ad_jvp(const IrFn *f, const char *name);

/* Building blocks for kernels that differentiate inside themselves (the vector field):
   they work on the values of one kernel g. */

/* Copies f into g: f's input i becomes g's value in[i] and param k becomes params[k];
   f's outputs' values in g go to out[]. */
void ad_inline(IrFn *g, const IrFn *f, const int *in, const int *params, int *out);
/* Reverse mode over g's instructions [lo, hi): d seed / d wrt[i] into grad[i]
   (a constant 0 where seed does not depend on wrt[i]). */
void ad_gradient_in(IrFn *g, int lo, int hi, int seed, const int *wrt, int nwrt, int *grad);
/* The same for nseeds seeds: row r of grads (nwrt entries) is d seeds[r] / d wrt. Each row
   costs the size of what its seed depends on, not of [lo, hi): one gradient per constraint
   of a 1000-link chain. The instructions are those of nseeds ad_gradient_in calls. */
void ad_gradients_in(IrFn *g, int lo, int hi, const int *seeds, int nseeds, const int *wrt, int nwrt, int *grads);
/* The same as sparse rows: row r's nonzero gradients (*grads, IR values) and which wrt each
   is (*cols, ascending) from row_start[r] (nseeds + 1 entries, the caller's; *cols and
   *grads malloc'd). The wrt values must be below lo (inputs, parameters). Linear in what the
   seeds depend on, where the dense form fills nseeds x nwrt. */
void ad_sparse_gradients_in(IrFn *g, int lo, int hi, const int *seeds, int nseeds, const int *wrt, int nwrt,
                            int *row_start, int **cols, int **grads);
/* Forward mode over g's instructions [lo, hi): with tangent dir[i] on value wrt[i], the
   tangent of each value `of[j]` into tan[j] (constant 0 where there is none). */
void ad_tangent_in(IrFn *g, int lo, int hi, const int *wrt, const int *dir, int nwrt, const int *of, int nof,
                   int *tan);

#endif
