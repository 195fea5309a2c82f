/* tensor_ops.h — batched operations on the tape (tape.h) that models are built from when
   their equations need derivatives of their networks inside the vector field (an LNN's
   Hessian, a DeLaN's dM/dt): the networks' forward, reverse and tangent passes are
   recorded as these operations, so training differentiates through all of them by the
   tape's reverse sweep (a derivative of a derivative, as PyTorch's create_graph).

   A variable is a matrix of `rows` x `cols` doubles, row-major: cols is the batch (n states,
   or n states x k tangent directions, direction-major: column j * n + b), as in the kernels'
   structure of arrays. Weights are slices of theta, row-major, with their adjoint slices.

   f32 (an f32 network's passes): the op's values in float (its output rounded to float, its
   GEMMs sgemm's on float copies of the operands); its adjoints summed in double. */
#ifndef PRT_TENSOR_OPS_H
#define PRT_TENSOR_OPS_H
#include "nn/mlp.h"
#include "tape.h"

/* y = W x + b (rows x cols), W rows x inner; b (rows) may be NULL. Wadj, badj: where the
   backward pass adds their adjoints (NULL: not wanted). */
int prt_op_affine(PrtTape *t, const double *W, double *Wadj, const double *b, double *badj, int rows, int inner,
                  int x, long cols, bool f32);
/* y = W^T x (inner x cols) for W rows x inner and x rows x cols: a reverse pass through a layer. */
int prt_op_affine_t(PrtTape *t, const double *W, double *Wadj, int rows, int inner, int x, long cols, bool f32);
/* y = s^(order)(x) elementwise: the activation (order 0) or its first or second derivative.
   a: the op's order-0 output for x (or -1): tanh's derivatives are then polynomials of it,
   with no tanh to evaluate again (the passes' elementwise cost would otherwise match the GEMMs'). */
int prt_op_act(PrtTape *t, PrtActivation act, int order, int x, int a, bool f32);
/* y = g .* (s(a) - s(b)) / (a - b) elementwise for the activation s (s'(a) where a == b), the
   quotient computed without cancellation, for the column pairs a = x[:, a0 + j], b = x[:, b0 + j],
   j < n, of x (rows x cols; the ranges may overlap); g and y are rows x n. The backward pass
   adds to g's adjoint and to x's at both ranges (d y / d a and d y / d b, again without
   cancellation). The discrete gradient's reverse step through a layer's activations
   (mlp_graph.h), reading both points' pre-activations where the forward pass left them. */
int prt_op_act_divided(PrtTape *t, PrtActivation act, int x, int rows, long cols, long a0, long b0, long n, int g,
                       int exps, bool f32);
/* tanh(x) as prt_op_act's (its values to a few ulps, not the same bits), keeping in *exps (a
   value-only variable, prt_tape_values) e^-2|x| and tanh x in double, what it took them from:
   given to prt_op_act_divided as `exps` (else -1), the divided differences of x's columns
   take one exponential a unit where they took three. prt_op_tanh_exps keeps them alone (the
   last hidden layer, whose activation the discrete gradient does not need). */
int prt_op_tanh_kept(PrtTape *t, int x, bool f32, int *exps);
int prt_op_tanh_exps(PrtTape *t, int x);
/* y = a .* b elementwise; when b is shorter, b is repeated along the columns: a is rows x (k n),
   b rows x n, y[r, j n + c] = a[r, j n + c] * b[r, c] (a state's values times each of its
   tangent directions). rows is a's and b's row count. */
int prt_op_mul(PrtTape *t, int a, int b, int rows, bool f32);
/* y = a .* b + c .* d, b and d repeated along the columns as prt_op_mul's (a, c rows x (k n);
   b, d rows x n): a tangent of the reverse pass, s''(z) dz g + s'(z) dg, in one pass over
   memory (two products and their sum were three, with two more arrays on the tape). */
int prt_op_mul_add(PrtTape *t, int a, int b, int c, int d, int rows, bool f32);
/* The columns [c0, c0 + ncols) of x (rows x cols). */
int prt_op_columns(PrtTape *t, int x, int rows, long cols, long c0, long ncols);
/* y = x repeated k times along the columns: rows x (k cols). */
int prt_op_tile(PrtTape *t, int x, int rows, long cols, int k);

/* s^(order)(x) for order 0..3, the value the ops above use. */
double prt_act_derivative(PrtActivation act, int order, double x);

/* The divided difference (s(a) - s(b)) / (a - b) and its partials d/da, d/db (either pointer
   may be NULL), accurate to a few ulps (dd) and ~1e-13 (partials) for any finite a, b; the
   derivations are in tensor_ops.c. */
double prt_act_divided(PrtActivation act, double a, double b, double *dda, double *ddb);

#endif
