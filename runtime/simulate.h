/* simulate.h — one simulation run, shared by `physc simulate` (JIT) and the main() of
   `physc emit-c` programs, so both do exactly the same thing. */
#ifndef PRT_SIMULATE_H
#define PRT_SIMULATE_H
#include <stdio.h>

#include "sim.h"

typedef struct PrtSimOptions {
    long n, steps, seed;
    double dt, rtol, atol;
    const char *integrator;   /* dopri5, rk4, rk4_38, euler */
    const char *csv;          /* write trajectories here, or NULL */
    const char *const *names; /* N + NP column names (coordinates, velocities) for the CSV */
} PrtSimOptions;

typedef struct PrtSimResult {
    double energy_drift;      /* max over trajectories and times of |H(t) - H(0)| / |H(0)| */
    double violation;         /* max |Phi| */
    PrtOdeStats stats;
    double *traj;             /* (steps + 1) x (N + NP) x n, owned by the caller (free) */
} PrtSimResult;

/* Returns 0, 1 for a failure of the run (message on stderr), 2 for bad options.
   Prints a report to `report` (which may be NULL). */
int prt_simulate(PrtSystem *s, const PrtSimOptions *o, FILE *report, PrtSimResult *r);

#endif
