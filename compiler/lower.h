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

#endif
