/* model_generalized.h — the machinery of the families in generalized coordinates
   (model_generalized.c), for a family in a file of its own whose vector field is its own:
   the data mapped into (q, qdot) by the compiled inverse map, angles unwrapped along each
   chunk; the loss of the training step's RK steps recorded on the tape; the truth (the
   system's own dynamics in (q, p)) stepped as in training; dopri5 rollouts mapped back to
   Cartesian states through the coordinate map. Its state is (q, qdot); it gives the field. */
#ifndef PRT_MODEL_GENERALIZED_H
#define PRT_MODEL_GENERALIZED_H
#include "model.h"

/* The family's vector field at the states (q, qdot) (tape variables, nq x n each) recorded on
   the tape t: the rates of (q, qdot), a variable of 2 nq x n. theta is the model's whole
   parameter array (prt_generalized_net_offset: network k's part); grad, if not NULL, gets
   d loss / d theta in the tape's backward pass. */
typedef int (*PrtGeneralizedField)(PrtModel *m, PrtTape *t, long n, const double *theta, double *grad, int q, int qdot);

/* What every family in generalized coordinates checks of the system and cfg (a `coordinates`
   block with an inverse, f64 networks, an explicit RK training step), then the model's
   buffers, its networks' offsets and nparams (their sum), its field `field`. 0, or -1 with
   a message. The family checks its networks after it (prt_generalized_check_net), and
   closes the model if they do not suit. */
int prt_generalized_open(PrtModel *m, PrtGeneralizedField field, char *err, size_t errlen);
/* 0 if cfg's network k maps in inputs to out outputs, else -1 with "the WHAT of a TITLE
   model must map ...". */
int prt_generalized_check_net(const PrtModel *m, int k, int in, int out, const char *what, char *err, size_t errlen);
/* Where network k's parameters start in theta. */
long prt_generalized_net_offset(const PrtModel *m, int k);

/* The members of PrtModelFamily as the families in generalized coordinates have them */
void prt_generalized_close(PrtModel *m);
bool prt_generalized_trainable(const PrtModel *m);
void prt_generalized_init_theta(const PrtModel *m, double *theta, PrtRng *rng);
double prt_generalized_loss_grad(PrtModel *m, const double *theta, long n, int npts, double dt, const double *chunks,
                                 double *grad);
double prt_generalized_loss(PrtModel *m, const double *theta, long n, int npts, double dt, const double *chunks);
double prt_generalized_truth_loss(PrtModel *m, long n, int npts, double dt, const double *chunks);
int prt_generalized_rollout(PrtModel *m, const double *theta, long n, const double *xv0, const double *times, int nt,
                            double rtol, double atol, double *out);
int prt_generalized_masses(const PrtModel *m, const double *theta, double *out);
int prt_generalized_tape_field(PrtModel *m, const double *theta, double *grad, long n, int xv, char *err,
                               size_t errlen);
int prt_generalized_tape_step(PrtModel *m, const double *theta, double *grad, long n, double dt, int steps, int xv,
                              char *err, size_t errlen);

#endif
