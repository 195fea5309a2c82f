/* body_frame.h — the configuration as each rigid body sees it: for every rigid (`state so3`)
   body i and every other body j, d_ij = R_i^T (q_j - q_i), body j's centre in body i's frame
   (two points' separation is seen in any rigid body's frame). A learned potential of these (`input body_frame`) is unchanged by any translation
   or rotation of the whole system, so its forces sum to zero and its forces and torques
   together conserve the total angular momentum, whatever the network; and a torque that
   depends on where the other bodies lie in a body's own frame (the star's pull on a
   triaxial planet) is a function the network sees directly, where from the world-frame
   entries of R and q it would have to learn the product R^T (q_j - q_i) itself.

   Both maps are tape operations (tape.h) so that training differentiates through the
   potential's gradient: the features of X, and the pullback dV/dX = J(X)^T dV/dd of a
   gradient g with respect to the features, whose backward pass gives the adjoints of both
   X and g (the map is bilinear in q and R). */
#ifndef PRT_BODY_FRAME_H
#define PRT_BODY_FRAME_H
#include <stdbool.h>
#include <stddef.h>

#include "system/sim.h"
#include "ad/tape.h"

typedef struct PrtBodyFrame {
    int npairs;      /* pairs (i, j), i a rigid body, j any other */
    int *from, *to;  /* the first row of X of q_i and q_j, per pair */
    int *rot;        /* the first row of R_i (row-major); -1: the view is in the world frame */
    long N;          /* rows of X */
    int nviews;      /* the bodies whose views these are (the rigid ones, or with world every body), one after another */
    int per_body;    /* the pairs of each: every other body */
} PrtBodyFrame;

/* The pairs of s's bodies (its Cartesian points, three rows each, then its so3 bodies):
   each rigid body's view of the others in its own frame, or with world every body's view of
   the others in the world frame, q_j - q_i (`input own_centres`). 0, or -1 with a message (a
   system not in 3-D, or without a rigid body and another, or two bodies). */
int prt_body_frame_init(PrtBodyFrame *f, const PrtSystem *s, bool world, char *err, size_t errlen);
void prt_body_frame_free(PrtBodyFrame *f);
/* The bodies: s's Cartesian points (three rows each), then its so3 bodies. */
long prt_body_frame_bodies(const PrtSystem *s);
/* The features' rows: 3 per pair. */
long prt_body_frame_rows(const PrtSystem *s);

/* The features of the n states x (N x n, SoA): 3 npairs x n, pair by pair. f must outlive
   the recording. */
int prt_tape_body_frame(PrtTape *t, const PrtBodyFrame *f, int x, long n);
/* J(x)^T g for features' gradients g (3 npairs x n): N x n. */
int prt_tape_body_frame_pullback(PrtTape *t, const PrtBodyFrame *f, int x, int g, long n);

/* A term per viewing body (`input own_frame`, `own_centres`): one network applied to each
   body's view of the others and to which body it is, so that a rigid body's torque comes
   from its own term alone and each term can have its own size. The features (3 npairs x n)
   regrouped as one column per viewing body and state, body-major (nviews n columns): 3
   per_body rows of that body's view, then nviews rows of 1 on its own row and 0 on the
   others'. */
long prt_body_frame_own_rows(const PrtBodyFrame *f);
int prt_tape_body_frame_by_body(PrtTape *t, const PrtBodyFrame *f, int features, long n);
/* The reverse for a gradient with respect to those columns (own rows x nviews n): the
   features' gradient (3 npairs x n), the body rows dropped. */
int prt_tape_body_frame_join(PrtTape *t, const PrtBodyFrame *f, int g, long n);

#endif
