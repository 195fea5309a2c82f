/* mlp_graph.h — an MLP's passes recorded on the tape as tensor_ops (tensor_ops.h), for
   models whose vector field holds derivatives of their networks: the forward pass, the
   reverse pass (a vector-Jacobian product with a cotangent that may itself depend on the
   state), and tangent passes (Jacobian-vector products, and Hessian-vector products of a
   scalar network by forward-over-reverse). Training backpropagates through all of them.
   Any output width (PrtMlp's size[L]); layout as mlp.h: features x states. */
#ifndef PRT_MLP_GRAPH_H
#define PRT_MLP_GRAPH_H
#include "nn/mlp.h"
#include "tape.h"

typedef struct PrtMlpTrace {
    const PrtMlp *m;
    const double *theta;
    double *theta_adj;            /* where the weights' adjoints go (NULL: not wanted) */
    long n;
    int x, y;                     /* input, output */
    int z[PRT_MLP_MAX_LAYERS + 1];  /* pre-activations of the hidden layers 1..L-1 */
    int a[PRT_MLP_MAX_LAYERS + 1];  /* their activations */
    int d1[PRT_MLP_MAX_LAYERS + 1]; /* s'(z_l), made by the reverse pass (-1 before) */
    int exps[PRT_MLP_MAX_LAYERS + 1]; /* tanh's exponentials of z_l, kept by prt_mlp_graph_preactivations
                                         for the divided differences (prt_op_tanh_kept), or -1 */
    int g[PRT_MLP_MAX_LAYERS + 1];  /* the reverse pass's adjoint of a_l (l = 0: the input's) */
    int cot;                      /* the reverse pass's cotangent (-1 before) */
} PrtMlpTrace;

/* y = net(x) for x (size[0] x n); returns y (size[L] x n) and fills tr. */
int prt_mlp_graph_forward(PrtTape *t, const PrtMlp *m, const double *theta, double *theta_adj, int x, long n,
                          PrtMlpTrace *tr);
/* The forward pass up to the last hidden layer's pre-activations z[L-1] (no output: tr->y = -1),
   all that prt_mlp_graph_discrete_grad reads; it saves the last activation and layer. A tanh
   net's hidden layers keep their exponentials for the divided differences (tr->exps), and
   their tanh is computed from them (to a few ulps of prt_mlp_graph_forward's). */
void prt_mlp_graph_preactivations(PrtTape *t, const PrtMlp *m, const double *theta, double *theta_adj, int x, long n,
                                  PrtMlpTrace *tr);
/* J(x)^T G for the cotangent G (size[L] x n), or for G = 1 when G < 0 (a scalar net's input
   gradient). Returns it (size[0] x n). Once per trace. */
int prt_mlp_graph_vjp(PrtTape *t, PrtMlpTrace *tr, int G);
/* J(x) U for k tangent directions U (size[0] x k n, direction-major columns). */
int prt_mlp_graph_jvp(PrtTape *t, const PrtMlpTrace *tr, int U, int k);
/* d/de [J(x + e U)^T G] at e = 0 with G held fixed, after prt_mlp_graph_vjp: for a scalar
   net with G = 1 the Hessian times each of the k directions U (size[0] x k n). */
int prt_mlp_graph_hvp(PrtTape *t, const PrtMlpTrace *tr, int U, int k);

/* The discrete gradient of a scalar net (size[L] == 1) after prt_mlp_graph_forward (or
   prt_mlp_graph_preactivations) on an input of >= max(a0, b0) + n columns (Matsubara et al.
   2020's automatic discrete differentiation): for the column pairs (x_a, x_b) = (x[:, a0 + j],
   x[:, b0 + j]), j < n, a vector g with V(x_a) - V(x_b) = g . (x_a - x_b) exactly up to
   rounding, and g = grad V(x_a) when x_a == x_b.
   Linear layers go back with W^T (GEMMs), activations with prt_op_act_divided of the two points'
   pre-activations. Returns g (size[0] x n). Training differentiates through it (weights via the
   trace's theta_adj, inputs via x's adjoint).
   E.g. Eq. (12) of the discrete-time Lagrangian paper: forward once on [q+ | q | q-] (3n
   columns), then a0 = 0, b0 = n and 2n pairs give [DG(q+, q) | DG(q, q-)]. */
int prt_mlp_graph_discrete_grad(PrtTape *t, const PrtMlpTrace *tr, long a0, long b0, long n);

#endif
