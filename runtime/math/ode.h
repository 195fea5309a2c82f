/* ode.h — batched ODE integrators. A state batch holds n states of `dim` components in
   structure-of-arrays layout: component i of state b is z[i*n + b], the same layout as
   the compiled kernels (docs/runtime-abi.md), so a right-hand side is a few kernel calls. */
#ifndef PRT_ODE_H
#define PRT_ODE_H
#include <stddef.h>

/* zdot = f(z) for the whole batch. */
typedef void (*PrtRhs)(void *ctx, long n, const double *z, double *zdot);

/* Why an integration stopped early (prt_dopri5 returns -1; a fixed-step loop checks with
   prt_first_nonfinite). */
typedef enum PrtOdeFailure {
    PRT_ODE_OK, PRT_ODE_NONFINITE, PRT_ODE_UNDERFLOW, PRT_ODE_TOO_STIFF, PRT_ODE_OVER_BUDGET,
    PRT_ODE_NO_CONVERGENCE, /* an implicit step's Newton iteration did not converge within budget iterations */
    PRT_ODE_SINGULAR        /* an implicit step's Newton iteration met a singular Jacobian */
} PrtOdeFailure;

typedef struct PrtOdeStats {
    long steps, rejected, evals;
    PrtOdeFailure failure;
    double t_fail;  /* the time the solution had reached when it failed */
    long bad;       /* PRT_ODE_NONFINITE: the first non-finite entry i * n + b of the attempted state
                       (component i of state b), else -1 */
    long budget;    /* PRT_ODE_OVER_BUDGET, PRT_ODE_TOO_STIFF: the steps the integration, or one output
                       interval, was allowed */
} PrtOdeStats;

typedef enum PrtFixedMethod { PRT_EULER, PRT_RK4, PRT_RK4_38 } PrtFixedMethod;

/* An explicit Runge-Kutta tableau (autonomous fields: the nodes c are not needed): stage i
   evaluates the field at z + h sum_{j<i} a[i][j] k_j, the step is z + h sum_i b[i] k_i. */
typedef struct PrtTableau {
    int stages;
    double a[4][4], b[4];
} PrtTableau;
extern const PrtTableau prt_tableau_euler, prt_tableau_rk4, prt_tableau_rk4_38;

/* One step of size h of tableau T, in place. work holds at least 5 * dim * n doubles. */
void prt_rk_step(const PrtTableau *T, PrtRhs f, void *ctx, long n, int dim, double h, double *z, double *work);
/* The same with the tableau of m. */
void prt_fixed_step(PrtFixedMethod m, PrtRhs f, void *ctx, long n, int dim, double h, double *z, double *work);

/* Adaptive Dormand-Prince 5(4) from times[0] through times[nt-1] (increasing), landing on
   each: out holds nt batches (out + k*dim*n is the state at times[k]; out[0] = z0).
   One step size for the whole batch, controlled by the RMS of the scaled error
   err_i / (atol + rtol * max(|z_i|, |znew_i|)). Returns 0, or -1 when the step size
   underflows, a value stops being finite, or one output interval takes more than
   PRT_DOPRI5_MAX_TRIES steps (the problem is too stiff for an explicit method); stats (if
   not NULL) then say which and where (prt_ode_describe_failure), and the outputs after the
   failure hold the last good state: never use them as a solution. */
enum { PRT_DOPRI5_MAX_TRIES = 10000 };
int prt_dopri5(PrtRhs f, void *ctx, long n, int dim, const double *z0, const double *times, int nt, double rtol,
               double atol, double *out, PrtOdeStats *stats);

/* The first entry of z[0..len) that is NaN or infinite, or -1. */
long prt_first_nonfinite(const double *z, long len);

/* A sentence for a failed integration: when (t_fail), what (PrtOdeFailure), and for a
   non-finite state which component of which state: names (dim entries, or NULL) name the
   components. */
void prt_ode_describe_failure(const PrtOdeStats *st, long n, const char *const *names, char *buf, size_t len);

/* Told of each output time an integration reaches (k of nt): a long rollout's progress
   (reached may be NULL). max_steps > 0 caps the steps of the whole integration, and
   max_interval_steps > 0 those of one output interval instead of PRT_DOPRI5_MAX_TRIES
   (accepted and rejected steps): a learned field gone stiff fails fast instead of crawling. */
typedef struct PrtOdeObserver {
    void (*reached)(void *ctx, int k, int nt);
    void *ctx;
    long max_steps, max_interval_steps;
} PrtOdeObserver;

/* prt_dopri5, telling obs (if not NULL) of each output time reached. */
int prt_dopri5_observed(PrtRhs f, void *ctx, long n, int dim, const double *z0, const double *times, int nt,
                        double rtol, double atol, double *out, PrtOdeStats *stats, const PrtOdeObserver *obs);

#endif
