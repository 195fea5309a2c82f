/* ode.h — batched ODE integrators. A state batch holds n states of `dim` components in
   structure-of-arrays layout: component i of state b is z[i*n + b], the same layout as
   the compiled kernels (docs/runtime-abi.md), so a right-hand side is a few kernel calls. */
#ifndef PRT_ODE_H
#define PRT_ODE_H

/* zdot = f(z) for the whole batch. */
typedef void (*PrtRhs)(void *ctx, long n, const double *z, double *zdot);

typedef struct PrtOdeStats {
    long steps, rejected, evals;
} PrtOdeStats;

typedef enum PrtFixedMethod { PRT_EULER, PRT_RK4, PRT_RK4_38 } PrtFixedMethod;

/* One step of size h in place. work holds at least 5 * dim * n doubles. */
void prt_fixed_step(PrtFixedMethod m, PrtRhs f, void *ctx, long n, int dim, double h, double *z, double *work);

/* Adaptive Dormand-Prince 5(4) from times[0] through times[nt-1] (increasing), landing on
   each: out holds nt batches (out + k*dim*n is the state at times[k]; out[0] = z0).
   One step size for the whole batch, controlled by the RMS of the scaled error
   err_i / (atol + rtol * max(|z_i|, |znew_i|)). Returns 0, or -1 when the step size
   underflows, a value stops being finite, or one output interval takes more than
   PRT_DOPRI5_MAX_TRIES steps (the problem is too stiff for an explicit method); the state
   then stays where it failed. */
enum { PRT_DOPRI5_MAX_TRIES = 10000 };
int prt_dopri5(PrtRhs f, void *ctx, long n, int dim, const double *z0, const double *times, int nt, double rtol,
               double atol, double *out, PrtOdeStats *stats);

/* Told of each output time an integration reaches (k of nt): a long rollout's progress. */
typedef struct PrtOdeObserver {
    void (*reached)(void *ctx, int k, int nt);
    void *ctx;
} PrtOdeObserver;

/* prt_dopri5, telling obs (if not NULL) of each output time reached. */
int prt_dopri5_observed(PrtRhs f, void *ctx, long n, int dim, const double *z0, const double *times, int nt,
                        double rtol, double atol, double *out, PrtOdeStats *stats, const PrtOdeObserver *obs);

#endif
