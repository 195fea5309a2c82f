/* model_cartesian.h — the CLNN's machinery (model_cartesian.c) for a family in a file of its
   own whose force is its own: the state (X, Xdot), whose accelerations are Eq. 7's (the
   system's Accel kernel, or its loop form: the constraints enforced by the multipliers) of
   the family's force F(X, Xdot) in place of -dV/dX, with the system's masses or, with
   cfg.learn_mass, the Eq. 9 masses learned through an exponential (their logarithms after
   network 0's parameters in theta); training through the RK steps on the tape, the truth (the
   system's own dynamics in (X, Xdot)) stepped as in training, dopri5 rollouts. */
#ifndef PRT_MODEL_CARTESIAN_H
#define PRT_MODEL_CARTESIAN_H
#include "model.h"

typedef struct PrtCartesianForce {
    /* F (N x n) at the states z = (X, Xdot) (a tape variable, 2N x n) recorded on the tape t;
       theta is the model's parameters, grad (NULL: none) gets d loss / d theta in the
       backward pass */
    int (*tape)(PrtModel *m, PrtTape *t, long n, const double *theta, double *grad, int z);
    /* the same in plain passes: F (N x n) at z (2N x n) into F, work the model's MLP scratch */
    void (*plain)(PrtModel *m, long n, const double *theta, const double *z, double *F, PrtMlpWork *work);
} PrtCartesianForce;

/* What the CLNN checks of the system and cfg (Cartesian points, the Accel kernel or a loop
   form, an explicit RK training step), then the model's buffers; nparams is network 0's
   parameters and the Eq. 9 masses if learned. force must outlive the model. 0, or -1 with a
   message. The family checks its network (cfg.net[0]) itself. */
int prt_cartesian_open(PrtModel *m, const PrtCartesianForce *force, char *err, size_t errlen);

/* The members of PrtModelFamily as the CLNN has them */
void prt_cartesian_close(PrtModel *m);
bool prt_cartesian_trainable(const PrtModel *m);
void prt_cartesian_init_theta(const PrtModel *m, double *theta, PrtRng *rng);
double prt_cartesian_loss_grad(PrtModel *m, const double *theta, long n, int npts, double dt, const double *chunks,
                               double *grad);
double prt_cartesian_loss(PrtModel *m, const double *theta, long n, int npts, double dt, const double *chunks);
double prt_cartesian_truth_loss(PrtModel *m, long n, int npts, double dt, const double *chunks);
int prt_cartesian_rollout(PrtModel *m, const double *theta, long n, const double *xv0, const double *times, int nt,
                          double rtol, double atol, double *out);
int prt_cartesian_masses(const PrtModel *m, const double *theta, double *out);
int prt_cartesian_tape_field(PrtModel *m, const double *theta, double *grad, long n, int xv, char *err, size_t errlen);
int prt_cartesian_tape_step(PrtModel *m, const double *theta, double *grad, long n, double dt, int steps, int xv,
                            char *err, size_t errlen);

#endif
