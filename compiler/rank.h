/* rank.h — the checker's look at the constraints at a sampled state. */
#ifndef PHYSC_RANK_H
#define PHYSC_RANK_H
#include "diag.h"
#include "system.h"

/* Reports (as errors at the constraints) rows of DPhi that depend on earlier ones, and axis
   constraints whose directions do not start pointing the same way, at the first state the
   init block samples with the program's seed. Nothing without an init block. */
void check_constraints_independent(System *sys, Diags *d);

#endif
