/* mlp.h — scalar MLPs (a learned potential V_theta(x)) batched over states on OpenBLAS GEMMs:
   the forward pass, the input gradient dV/dx (needed for dH/dx), and the vector-Jacobian
   product of that gradient with respect to both the inputs and the weights (training
   through dH/dx is a second derivative: the "double backward").

   Shapes, feature-major like the kernels' structure-of-arrays layout (x[i*n + b] is input i
   of state b; gradients alike):
     x: in x n;  layer l maps size[l-1] -> size[l] with W_l (size[l] x size[l-1]) and b_l;
     hidden layers apply the activation; the last layer (size[L] = 1) is linear.
   Parameters are one flat array: W_1, b_1, W_2, b_2, ... (prt_mlp_nparams of them). */
#ifndef PRT_MLP_H
#define PRT_MLP_H
#include <stdbool.h>
#include <stddef.h>

#include "physrt.h"

enum { PRT_MLP_MAX_LAYERS = 16 };

typedef enum PrtActivation { PRT_ACT_TANH, PRT_ACT_SOFTPLUS, PRT_ACT_SILU } PrtActivation;

typedef struct PrtMlp {
    int nlayers;                          /* weight layers L */
    int size[PRT_MLP_MAX_LAYERS + 1];     /* size[0] = inputs, size[L] = 1 */
    PrtActivation act;
    bool f32;                             /* the passes in float (sgemm); the interface stays double */
} PrtMlp;

long prt_mlp_nparams(const PrtMlp *m);
/* Floating-point operations of every GEMM the MLP passes have called (a running total,
   atomic: training may run shards of a minibatch on several threads). */
extern _Atomic unsigned long long prt_mlp_gemm_flops;
/* Orthogonal weights (orthonormal rows or columns of a Gaussian matrix), zero biases. */
void prt_mlp_init(const PrtMlp *m, double *theta, PrtRng *rng);

/* Scratch for n states, reused across calls with the same n or less; its arrays hold
   doubles, or floats for an f32 MLP. */
typedef struct PrtMlpWork {
    long n;
    size_t elem;
    void *z[PRT_MLP_MAX_LAYERS + 1], *a[PRT_MLP_MAX_LAYERS + 1], *delta[PRT_MLP_MAX_LAYERS + 1],
        *g[PRT_MLP_MAX_LAYERS + 1], *zbar[PRT_MLP_MAX_LAYERS + 1], *gbar[PRT_MLP_MAX_LAYERS + 1], *tmp;
    /* s'(z_l) and s''(z_l) of the hidden layers, kept from the forward pass: the
       activation's transcendental functions are computed once per call, not in every pass */
    void *ds[PRT_MLP_MAX_LAYERS + 1], *dds[PRT_MLP_MAX_LAYERS + 1];
    float *theta_f, *thetabar_f; /* f32: the weights of the last forward pass, their adjoint */
    long ntheta;
} PrtMlpWork;
void prt_mlp_work_free(PrtMlpWork *w);

/* v[n] = V(x) and grad[in x n] = dV/dx (the forward and backward passes stay in w). */
void prt_mlp_value_grad(const PrtMlp *m, const double *theta, long n, const double *x, double *v, double *grad,
                        PrtMlpWork *w);
/* With S = sum_b u_b . dV/dx(x_b), after prt_mlp_value_grad on the same x:
   xbar[in x n] += dS/dx (a Hessian-vector product) and thetabar[nparams] += dS/dtheta. */
void prt_mlp_grad_vjp(const PrtMlp *m, const double *theta, long n, const double *x, const double *u, double *xbar,
                      double *thetabar, PrtMlpWork *w);

#endif
