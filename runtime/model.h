/* model.h — a learned constrained model of a system: CHNN (Hamiltonian, Eq. 6 with state
   (X, P)) or CLNN (Lagrangian, Eq. 7 with state (X, Xdot)) in Cartesian coordinates, with
   an MLP potential V_theta(X) and the Eq. 9 mass parameters learned through an exponential
   (m = exp(theta_m), lambda_i = exp(theta_lambda_i): positive by construction).

   theta is one flat array: the MLP's parameters, then the log mass parameters (when they
   are learned). Training integrates with RK4 (3/8 rule) on the tape and backpropagates
   through the steps; evaluation rolls out with dopri5. Data and predictions are Cartesian
   (X, Xdot) as SoA batches (2N x n); a CHNN converts with its learned M (P = M Xdot). */
#ifndef PRT_MODEL_H
#define PRT_MODEL_H
#include <stdbool.h>
#include <stddef.h>

#include "mlp.h"
#include "sim.h"
#include "tape.h"

typedef struct PrtModel {
    PrtSystem *sys;        /* kernels, with the training VJPs; its free lengths are used */
    bool lagrangian;       /* CLNN; else CHNN */
    bool learn_mass;       /* else the system's own masses */
    bool l2;               /* mean squared error; else mean absolute error (L1) */
    PrtFixedMethod method; /* training integrator: PRT_RK4_38 (the default), PRT_RK4, PRT_EULER */
    PrtMlp mlp;
    long nmlp;             /* the MLP's parameters, first in theta */
    long nparams;          /* all of theta */
    double *kparams;       /* the kernels' parameters: masses, then the system's free lengths */
    double *kparams_adj;
    PrtTape *tape;
    PrtMlpWork work;       /* the rollout's MLP scratch */
    const double *rollout_theta;
    double *rollout_buf;
    long rollout_cap;
    const PrtOdeObserver *rollout_observer; /* told of each output time a rollout reaches, or NULL */
} PrtModel;

/* mlp->size[0] must be sys->N (the potential reads the positions). The system needs the
   forward kernels (Field, MinvP, MassV; Accel for a CLNN); training also needs their VJPs
   (prt_model_trainable). Returns 0, or -1 with a message. */
int prt_model_init(PrtModel *m, PrtSystem *sys, bool lagrangian, bool learn_mass, const PrtMlp *mlp, char *err,
                   size_t errlen);
void prt_model_free(PrtModel *m);
/* Whether m->sys has the VJP kernels training backpropagates through (a rollout does not
   need them: `physc simulate --params`, emitted programs). */
bool prt_model_trainable(const PrtModel *m);

/* The MLP as prt_mlp_init; log mass parameters 0.1 N(0, 1) (masses and moments near 1), as the reference. */
void prt_model_init_theta(const PrtModel *m, double *theta, PrtRng *rng);

/* The training loss and its gradient over a batch of n chunks. chunks holds npts points,
   point k at chunks + k * 2N * n, each (X, Xdot) of n states; the model starts from point 0
   and takes `substeps` steps of m->method per interval dt. loss = mean |pred - data| (or
   its square) over every component of every point (point 0 included, as the reference
   computes it). grad
   (nparams) = d loss / d theta. */
double prt_model_loss_grad(PrtModel *m, const double *theta, long n, int npts, double dt, int substeps,
                           const double *chunks, double *grad);

/* The loss alone (no tape): for validation. */
double prt_model_loss(PrtModel *m, const double *theta, long n, int npts, double dt, int substeps, const double *chunks);

/* The same loss for the system's own dynamics (its masses and potential as the program writes
   them), in the model's state and stepped exactly as in training: what the training
   integrator's truncation error (and any noise in the data) leaves of the loss. A model can
   go below it only by learning dynamics other than the system's, to cancel that error. */
double prt_model_truth_loss(PrtModel *m, long n, int npts, double dt, int substeps, const double *chunks);

/* Rolls the learned dynamics out from xv0 (2N x n) with dopri5 through times[0..nt), writing
   (X, Xdot) at each time into out (nt x 2N x n). Returns 0, or -1 if the solver failed. */
int prt_model_rollout(PrtModel *m, const double *theta, long n, const double *xv0, const double *times, int nt,
                      double rtol, double atol, double *out);

#endif
