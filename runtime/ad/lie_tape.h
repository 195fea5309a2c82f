/* lie_tape.h — a Lie T2 step (lie_group.h, the Lie T2 paper's Eq. 3) recorded on the tape
   (tape.h), so that training backpropagates through the recurrent block: each sub-flow is a
   tape operation whose backward pass is its vector-Jacobian product (lie_group.c: the
   exponentials and rotations included). The potential's gradient and the non-conservative
   forces are whatever the caller records (a known potential's kernel, a network's input
   gradient, a force network). */
#ifndef PRT_LIE_TAPE_H
#define PRT_LIE_TAPE_H
#include <stdbool.h>

#include "integrators/integrators.h"
#include "system/sim.h"
#include "tape.h"

typedef struct PrtLieTapeTerms {
    /* G = dV/dX (N x n) at the positions x (a view of the state's first N x n numbers) */
    int (*grad)(void *ctx, PrtTape *t, int x, long n);
    /* the forces on P (NP x n: on each point, and each so3 body's p then its body torque)
       at the state z ((N + NP) x n), or NULL: none */
    int (*force)(void *ctx, PrtTape *t, int z, long n);
    void *ctx;
    /* room for the system kernels' parameter adjoints (nparams), which the flat methods'
       Field VJP writes and nobody reads: the masses are the system's */
    double *kparams_adj;
} PrtLieTapeTerms;

/* One Lie T2 step of size h from the states z ((N + NP) x n on the tape): kinetic(h/2),
   kick(h/2), asym(h/2), force(h), asym(h/2), kick(h/2), kinetic(h/2), then the Newton step
   back onto SO(3) (lie_group.h). The system's masses are fixed. Returns the new state. */
int prt_tape_lie_t2_step(PrtTape *t, PrtSystem *s, int z, long n, double h, const PrtLieTapeTerms *terms);

/* The other recurrent blocks the paper compares (App. D), on the same terms: an explicit
   Runge-Kutta step of the flat field (euler, rk4: R' = R hat(Omega) integrated as 9 numbers),
   the naive flat verlet, and the commutator-free Lie RK of order 2 or 4 (R by exponentials,
   whose VJPs the backward pass takes). */
int prt_tape_flat_rk_step(PrtTape *t, PrtSystem *s, const PrtTableau *T, int z, long n, double h,
                          const PrtLieTapeTerms *terms);
int prt_tape_verlet_step(PrtTape *t, PrtSystem *s, int z, long n, double h, const PrtLieTapeTerms *terms);
int prt_tape_lie_rk_step(PrtTape *t, PrtSystem *s, int z, long n, double h, int order, const PrtLieTapeTerms *terms);
/* The vector field (Xdot, Pdot) at the states z itself (the flat steps' stages: the system's
   Field with the terms' potential gradient, plus their forces); needs s->FieldVJP. */
int prt_tape_so3_field(PrtTape *t, PrtSystem *s, int z, long n, const PrtLieTapeTerms *terms);
/* One step of the integrator id (liet2, lie_rk2, lie_rk4, verlet, rk4, euler): one of the above. */
int prt_tape_so3_step(PrtTape *t, PrtSystem *s, int id, int z, long n, double h, const PrtLieTapeTerms *terms);
/* Whether prt_tape_so3_step steps the integrator id. */
bool prt_tape_so3_steps(int id);

#endif
