/* discrete_step.h — one step of the discrete-gradient scheme of the discrete-time Lagrangian
   paper, Eq. 12, solved for the next position by Newton's method:

     M (y - 2q + q-) / h^2 + (DG(y, q) + DG(q, q-)) / 2 = 0,

   for n states at once (each its own small system), with any discrete gradient DG: the
   learned network's (model_discrete.c) or, in tests, a potential's in closed form. */
#ifndef PRT_DISCRETE_STEP_H
#define PRT_DISCRETE_STEP_H

/* g = DG(y, q) (N x n, SoA) and, when jac is not NULL, its Jacobian in y:
   jac[(i N + j) n + b] = d g_i / d y_j for state b. */
typedef void (*PrtDiscreteGrad)(void *ctx, int N, long n, const double *y, const double *q, double *g, double *jac);

/* Newton stops one iteration after its largest step falls below tol, relative to 1 + |y|
   (that last iteration lands at rounding level): for a network in f64 TOL, and for one in
   f32 TOL_F32, above what the float network's rounding moves a step (its DG's last bit
   moves y by about h^2 |DG| 1e-7 / M: 2e-8 on the paper's mass-spring) so that Newton
   reaches it, and far enough below that one more iteration lands at float rounding... */
#define PRT_DISCRETE_STEP_TOL 1e-13
#define PRT_DISCRETE_STEP_TOL_F32 1e-6
/* ...and fails after this many iterations. */
enum { PRT_DISCRETE_STEP_MAX_ITER = 40 };

/* Solves for y (N x n; in: the initial guess) given q- = qm, q and fprev = DG(q, q-), to
   steps below tol (above); M is the N x N mass matrix. Writes DG(y, q) at the solution into fnew. Returns the iterations
   taken; PRT_DISCRETE_STEP_BUDGET if the iteration budget was spent without converging;
   PRT_DISCRETE_STEP_BROKEN on a singular Jacobian or a non-finite value. */
enum { PRT_DISCRETE_STEP_BUDGET = -1, PRT_DISCRETE_STEP_BROKEN = -2 };
int prt_discrete_step(int N, long n, double h, double tol, const double *M, const double *qm, const double *q,
                      const double *fprev, double *y, double *fnew, PrtDiscreteGrad dg, void *ctx);

#endif
