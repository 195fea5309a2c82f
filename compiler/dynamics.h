/* dynamics.h — kernels of the constrained equations of motion (see dynamics.c for the
   formulation). State layout as in ir.md: X = Cartesian points, N = points * dim.
   Params: the mass parameters (per body in order: m, then lambda_1..lambda_n of Eq. 9),
   then the free lengths of Phi. */
#ifndef PHYSC_DYNAMICS_H
#define PHYSC_DYNAMICS_H
#include "ir.h"
#include "system/sim.h"
#include "system.h"

int dynamics_mass_params(const System *sys);
void dynamics_fill_mass_params(const System *sys, double *params);
/* Where each `state so3` body's numbers are (sim.h), in body order, into out (room for
   sys->nrotation_bodies); returns their count. */
int dynamics_so3_bodies(const System *sys, PrtSo3Body *out);
/* The bodies with an orientation (sim.h: `state so3` ones and bodies of points with axes), in
   body order, into out (room for sys->nbodies); returns their count. */
int dynamics_frame_bodies(const System *sys, PrtFrameBody *out);
/* Field(X, P, dV) -> (Xdot, Pdot): Eq. 6, z = (X, P), H = tr(P M^-1 P^T)/2 + V, dV = dV/dX. */
IrFn *lower_hamiltonian_field(const System *sys, const IrFn *phi);
/* Accel(X, Xdot, F) -> Xddot: Eq. 7 with the generalized force F (= -dV/dX for a potential). */
IrFn *lower_lagrangian_accel(const System *sys, const IrFn *phi);
/* Field(Q, P, dV/dQ) -> (Qdot, Pdot) for systems with SO(3) bodies and no constraints. */
IrFn *lower_rigid_field(const System *sys);
/* H(X, P; masses) -> P . M^-1 P / 2 + V(X). */
IrFn *lower_hamiltonian(const System *sys, const IrFn *V);
/* MinvP(P; masses) -> M^-1 P, or MassV(V; masses) -> M V. */
IrFn *lower_mass_apply(const System *sys, bool inverse);

#endif
