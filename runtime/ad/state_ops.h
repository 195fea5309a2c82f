/* state_ops.h — per-state operations on the tape (tape.h) for models in generalized
   coordinates: the angle embedding of their networks' inputs, and the small dense linear
   algebra of a mass matrix M(q) (nq x nq, for every state of the batch). Each records its
   own reverse sweep. Layouts are the kernels' structure of arrays: a vector of length r is
   r rows x n states; a full matrix is nq*nq rows (row-major, A_ij at row i nq + j); a lower
   triangle is packed by rows, nq(nq+1)/2 rows (L_ij, j <= i, at row i(i+1)/2 + j). */
#ifndef PRT_STATE_OPS_H
#define PRT_STATE_OPS_H
#include "tape.h"

/* The most generalized coordinates of one per-state problem (the models check it when they open). */
enum { PRT_STATE_MAX_Q = 64 };

/* The network features of q: an angle (angular[i]) as the two rows cos q_i, sin q_i, any
   other coordinate as itself (CHNN paper App. D.2). */
int prt_features_width(int nq, const unsigned char *angular);
int prt_op_features(PrtTape *t, int q, int nq, const unsigned char *angular, long n);
/* (dphi/dq)^T g: a gradient over the features (width rows) to one over q (nq rows). */
int prt_op_features_vjp(PrtTape *t, int q, int g, int nq, const unsigned char *angular, long n);
/* (dphi/dq) u: a tangent of q (nq rows) to one of the features. */
int prt_op_features_jvp(PrtTape *t, int q, int u, int nq, const unsigned char *angular, long n);

/* A lower-triangular factor from a network's raw output: the diagonal through softplus (so
   positive), the rest as is. */
int prt_op_tril_softplus(PrtTape *t, int raw, int nq, long n);
/* G with its diagonal times softplus'(raw_ii): the chain rule through prt_op_tril_softplus,
   for an adjoint (d/draw from d/dL) or a tangent (dL from draw) alike. */
int prt_op_tril_softplus_scale(PrtTape *t, int raw, int G, int nq, long n);
/* L^T v and L v for a packed lower triangle L. */
int prt_op_tril_t_mul(PrtTape *t, int L, int v, int nq, long n);
int prt_op_tril_mul(PrtTape *t, int L, int v, int nq, long n);
/* The packed lower triangle of a b^T. */
int prt_op_tril_outer(PrtTape *t, int a, int b, int nq, long n);
/* x with L L^T x = v. */
int prt_op_tril_llt_solve(PrtTape *t, int L, int v, int nq, long n);
/* A v and A^-1 v for full matrices (the solve by LU with partial pivoting; a singular A gives
   non-finite values, which training reports as divergence). */
int prt_op_mat_mul(PrtTape *t, int A, int v, int nq, long n);
int prt_op_mat_solve(PrtTape *t, int A, int v, int nq, long n);

/* x = A^-1 b for one small full matrix (row-major; A is overwritten by its LU factors).
   Returns false when A is singular. Used by the ops above and by forward-only code. */
bool prt_small_solve(int nq, double *A, double *b, bool transpose);

#endif
