/* mlp.h — scalar MLPs (a learned potential V_theta(x)) batched over states on OpenBLAS GEMMs:
   the forward pass, the input gradient dV/dx (needed for dH/dx), and the vector-Jacobian
   product of that gradient with respect to both the inputs and the weights (training
   through dH/dx is a second derivative: the "double backward").

   Shapes, feature-major like the kernels' structure-of-arrays layout (x[i*n + b] is input i
   of state b; gradients alike):
     x: in x n;  layer l maps size[l-1] -> size[l] with W_l (size[l] x size[l-1]) and b_l;
     hidden layers apply the activation; the last layer is linear (size[L] = 1 for V;
     prt_mlp_forward also takes networks of several outputs).
   Parameters are one flat array: W_1, b_1, W_2, b_2, ... (prt_mlp_nparams of them). */
#ifndef PRT_MLP_H
#define PRT_MLP_H
#include <stdbool.h>
#include <stddef.h>

#include "math/rng.h"

enum { PRT_MLP_MAX_LAYERS = 16 };

typedef enum PrtActivation { PRT_ACT_TANH, PRT_ACT_SOFTPLUS, PRT_ACT_SILU } PrtActivation;

typedef struct PrtMlp {
    int nlayers;                          /* weight layers L */
    int size[PRT_MLP_MAX_LAYERS + 1];     /* size[0] = inputs, size[L] = 1 */
    PrtActivation act;
    bool f32;                             /* the passes in float (sgemm); the interface stays double */
    bool zero_biases;                     /* prt_mlp_init: biases 0 (the DGNet reference's layers) */
} PrtMlp;

long prt_mlp_nparams(const PrtMlp *m);
/* Floating-point operations of every GEMM the MLP passes have called (a running total,
   atomic: training may run shards of a minibatch on several threads). */
extern _Atomic unsigned long long prt_mlp_gemm_flops;
/* As the reference's layers (torch.nn.Linear, then orthogonal_ on the weight): orthogonal
   weights (orthonormal rows or columns of a Gaussian matrix) and biases uniform in
   +-1/sqrt(fan_in), torch's default. With few inputs the weights' rows are short
   (sqrt(in/out)), so the biases set where each tanh unit works; zero biases left every
   first-layer unit near its linear part. With zero_biases every bias is 0, as the DGNet code
   the discrete-time paper builds on initialises its layers (and its potential has no output
   bias: a constant of V, which no scheme's loss or step sees, so a zero one stays 0). */
void prt_mlp_init(const PrtMlp *m, double *theta, PrtRng *rng);

/* Arrays a pass needs only while it runs: the pre-activations z, the reverse sweep's
   adjoints and its temporary. One scratch can serve every call site of a tape, so a
   training step's working set holds one set of these, not one per MLP call (16 per chunk
   and RK4 step): less memory traffic, fewer cache misses.

   For an f32 MLP a shared scratch also holds the weights rounded to float, once per
   recording rather than once per call, and the weight adjoint in float, accumulated over
   every call of the reverse sweep and added to the double adjoint once (prt_mlp_scratch_flush):
   for up to PRT_MLP_SCRATCH_NETS networks at once (a model's potential and force alternate).
   A scratch a call site owns alone does both per call, as if unshared. */
enum { PRT_MLP_SCRATCH_NETS = 4 };
typedef struct PrtMlpFloatWeights {
    float *theta_f;              /* the float weights of theta_src, while theta_valid */
    const double *theta_src;
    long theta_len;
    bool theta_valid;
    float *thetabar_f;           /* float weight adjoints not yet added to thetabar_dst */
    double *thetabar_dst;        /* NULL: nothing pending */
    long thetabar_len;
    size_t theta_cap, thetabar_cap; /* bytes */
} PrtMlpFloatWeights;
typedef struct PrtMlpScratch {
    void *z[PRT_MLP_MAX_LAYERS + 1], *zbar[PRT_MLP_MAX_LAYERS + 1], *gbar[PRT_MLP_MAX_LAYERS + 1], *tmp;
    size_t cap[PRT_MLP_MAX_LAYERS + 1], tmp_cap; /* bytes of each z/zbar/gbar layer, of tmp */
    bool shared;                 /* set by the owner (a tape): the deferrals below apply */
    PrtMlpFloatWeights net[PRT_MLP_SCRATCH_NETS];
} PrtMlpScratch;
void prt_mlp_scratch_free(PrtMlpScratch *s);
/* A shared scratch's owner calls this when the weights may have changed (a new recording):
   the float weights are rounded again at the next call. */
void prt_mlp_scratch_forget_weights(PrtMlpScratch *s);
/* Adds the float weight adjoints accumulated so far to their double destination. A shared
   scratch's owner calls it after the reverse sweep, before reading the adjoint. */
void prt_mlp_scratch_flush(PrtMlpScratch *s);

/* What one call site keeps from its forward pass to its reverse sweep, for n states (reused
   across calls with the same n or less); its arrays hold doubles, or floats for an f32 MLP. */
typedef struct PrtMlpWork {
    /* bytes of each layer's a (and ds, dds), and of its delta and g: grown as a call needs,
       so that a work may serve networks of other shapes (a tape reuses its nodes) */
    size_t cap[PRT_MLP_MAX_LAYERS + 1], dcap[PRT_MLP_MAX_LAYERS + 1], gcap[PRT_MLP_MAX_LAYERS + 1];
    void *a[PRT_MLP_MAX_LAYERS + 1], *delta[PRT_MLP_MAX_LAYERS + 1], *g[PRT_MLP_MAX_LAYERS + 1];
    /* s'(z_l) and s''(z_l) for softplus and SiLU, kept from the forward pass so their
       transcendental functions run once per call; tanh's come from a_l = tanh(z_l) */
    void *ds[PRT_MLP_MAX_LAYERS + 1], *dds[PRT_MLP_MAX_LAYERS + 1];
    PrtMlpScratch *scratch;    /* a shared scratch (a tape's), or NULL for own_scratch */
    PrtMlpScratch own_scratch;
    /* the scratch's arrays for the call in progress (set at each call) */
    void *z[PRT_MLP_MAX_LAYERS + 1], *zbar[PRT_MLP_MAX_LAYERS + 1], *gbar[PRT_MLP_MAX_LAYERS + 1], *tmp;
} PrtMlpWork;
void prt_mlp_work_free(PrtMlpWork *w);
/* The bytes a PrtMlpWork holds for n states of m (its own arrays, not a shared scratch):
   for the input gradient's passes, or (!grad) for the forward pass and its VJP alone. */
size_t prt_mlp_work_bytes(const PrtMlp *m, long n, bool grad);

/* v[n] = V(x) and grad[in x n] = dV/dx (the forward and backward passes stay in w). */
void prt_mlp_value_grad(const PrtMlp *m, const double *theta, long n, const double *x, double *v, double *grad,
                        PrtMlpWork *w);
/* With S = sum_b u_b . dV/dx(x_b), after prt_mlp_value_grad on the same x:
   xbar[in x n] += dS/dx (a Hessian-vector product) and thetabar[nparams] += dS/dtheta
   (for an f32 MLP on a shared scratch: when the scratch is flushed). */
void prt_mlp_grad_vjp(const PrtMlp *m, const double *theta, long n, const double *x, const double *u, double *xbar,
                      double *thetabar, PrtMlpWork *w);

/* A network of any number of outputs as a plain function: y[out x n] = f(x) (size[L] rows),
   and its vector-jacobian product after it on the same x: xbar[in x n] += ybar^T df/dx
   (unless xbar is NULL) and thetabar[nparams] += ybar^T df/dtheta (unless NULL; for an f32
   MLP on a shared scratch: when the scratch is flushed). */
void prt_mlp_forward(const PrtMlp *m, const double *theta, long n, const double *x, double *y, PrtMlpWork *w);
void prt_mlp_vjp(const PrtMlp *m, const double *theta, long n, const double *ybar, double *xbar, double *thetabar,
                 PrtMlpWork *w);

#endif
