/* fixed_steps.h — a system's own dynamics stepped by a fixed-step integrator of
   integrators.h (the explicit Runge-Kutta rows, the symplectic ones, the Lie-group ones),
   `substeps` steps of dt / substeps per output interval: `physc simulate --integrator` and
   data made the way the Lie T2 paper's GRIT made its data (`data { solver liet2; substeps H }`). */
#ifndef PRT_FIXED_STEPS_H
#define PRT_FIXED_STEPS_H
#include <stddef.h>

#include "integrators.h"
#include "math/ode.h"
#include "system/sim.h"

/* Whether id is a fixed-step integrator that steps a system's own dynamics (not dopri5, not
   the learned models' discrete gradient). */
bool prt_fixed_step_integrator(PrtIntegrator id);

/* traj holds nt states of (X, P) for n trajectories (state_rows x n each), the first set:
   fills the others, each substeps steps of dt / substeps after the one before, telling obs
   (if not NULL) of each state reached (GRIT's step makes TRAPPIST-1's data in 10 s). 0, or
   -1 with why (a non-finite state, or RATTLE's Newton iteration failing), the states from
   there on left as they were. */
int prt_fixed_steps(PrtSystem *s, PrtIntegrator id, long n, double dt, int substeps, long nt, double *traj,
                    const PrtOdeObserver *obs, char *why, size_t whylen);

#endif
