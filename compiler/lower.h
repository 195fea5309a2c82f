/* lower.h — turns the checked System into kernel IR. Kernels take the Cartesian
   positions X (point p's coordinate k at input p*dim + k; a rigid body's points are its
   centre of mass then one point per principal axis, CHNN Sec. 6). */
#ifndef PHYSC_LOWER_H
#define PHYSC_LOWER_H
#include "ir.h"
#include "system.h"

/* V(X): the sum of the system's potentials; one output. */
IrFn *lower_potential(System *sys);
/* The sum of the potentials which[0..n) (all when which is NULL) as a kernel named name. */
IrFn *lower_potential_terms(System *sys, const int *which, int n, const char *name);
/* Phi(X): rigidity rows (per rigid body, pairs i < j of its points: |x_i - x_j|^2 - l_ij^2 with
   l^2 = 1 to the centre and 2 between axis points), then each constraint in order (link and
   tether: |a - b|^2 - L^2; joint: a - b, dim rows; axis: dim - 1 rows w_k . a, the unit
   direction of one side across the other's). A length not given in the program is parameter
   k (numbered in order), to be taken from the initial state. */
IrFn *lower_constraints(System *sys);
/* AxisAlignment(X): per axis constraint, the cosine between its two directions (1 when it
   holds; its rows also vanish at -1, the branch the initial state must not be on). */
IrFn *lower_axis_alignment(System *sys);
int lower_free_lengths(const System *sys);
void lower_free_length_rows(const System *sys, int *rows); /* the Phi row of each free length */
/* Init(draws) -> (X, Xdot): the init block with the coordinate map (velocities by its JVP).
   Input i is random draw i: a standard normal or a uniform on [0, 1) as (*kinds)[i] says. */
IrFn *lower_init(System *sys, int **kinds, int *ndraws);
/* Force(X, P) -> the forces of the system's `force` blocks on P (systems with force blocks). */
IrFn *lower_force(System *sys);

/* Models in generalized coordinates q (nq = sys->coords.count; docs/ir.md):
   the state (X, Xdot) in Init's output layout from the coordinate map at q with the
   velocities its JVP along qdot (IR values of f, into out[0..ncoords + nmomenta)). */
void lower_map_state(System *sys, IrFn *f, const int *q, const int *qdot, int *out);
/* CoordMap(q, qdot) -> (X, Xdot), Init's layout. */
IrFn *lower_coord_map(System *sys);
/* CoordInverse(X, Xdot) -> (q, qdot): the inverse block, qdot its JVP along Xdot (an SO(3)
   body's R moves as R hat(omega)). The system must have an inverse block. */
IrFn *lower_coord_inverse(System *sys);
/* MassQ(q; masses) -> M(q) row-major nq x nq, M_ij = (J e_i) . M_cart (J e_j), J = dX/dq,
   M_cart the MassV kernel massv (whose parameters it takes). */
IrFn *lower_mass_q(System *sys, const IrFn *massv);
/* KineticQ(q, v; masses) -> d/dq [(J v) . M_cart (J v) / 2] at fixed v. */
IrFn *lower_kinetic_q(System *sys, const IrFn *massv);
/* GradVq(q) -> dV(X(q))/dq, V the system's potential kernel. */
IrFn *lower_grad_vq(System *sys, const IrFn *V);
/* Which generalized coordinates are angles (sys->coords.angular, nangles): q_i is one when
   the unsimplified CoordMap reads it only through sin and cos of q_i, q_i plus or minus a
   constant, -q_i, or a whole multiple of these (2 pi periodic); unused or read any other
   way, it is not. The system must have checked without errors. */
void lower_angles(System *sys);

#endif
