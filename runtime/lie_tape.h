/* lie_tape.h — a Lie T2 step (lie_group.h, the Lie T2 paper's Eq. 3) recorded on the tape
   (tape.h), so that training backpropagates through the recurrent block: each sub-flow is a
   tape operation whose backward pass is its vector-Jacobian product (lie_group.c: the
   exponentials and rotations included). The potential's gradient and the non-conservative
   forces are whatever the caller records (a known potential's kernel, a network's input
   gradient, a force network). */
#ifndef PRT_LIE_TAPE_H
#define PRT_LIE_TAPE_H
#include "sim.h"
#include "tape.h"

typedef struct PrtLieTapeTerms {
    /* G = dV/dX (N x n) at the positions x (a view of the state's first N x n numbers) */
    int (*grad)(void *ctx, PrtTape *t, int x, long n);
    /* the forces on P (NP x n: on each point, and each so3 body's p then its body torque)
       at the state z ((N + NP) x n), or NULL: none */
    int (*force)(void *ctx, PrtTape *t, int z, long n);
    void *ctx;
} PrtLieTapeTerms;

/* One Lie T2 step of size h from the states z ((N + NP) x n on the tape): kinetic(h/2),
   kick(h/2), asym(h/2), force(h), asym(h/2), kick(h/2), kinetic(h/2), then the Newton step
   back onto SO(3) (lie_group.h). The system's masses are fixed. Returns the new state. */
int prt_tape_lie_t2_step(PrtTape *t, PrtSystem *s, int z, long n, double h, const PrtLieTapeTerms *terms);

#endif
