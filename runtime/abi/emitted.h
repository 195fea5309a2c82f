/* emitted.h — what a library of `physc emit-c --shared` holds besides the runtime: the
   system's tables and kernels and the trained model, which its emitted C describes in a
   PrtEmittedModel and registers when the library is loaded (a constructor). physc_model.c
   builds the handles of physc_model.h from it. */
#ifndef PRT_ABI_EMITTED_H
#define PRT_ABI_EMITTED_H

#include "models/model.h"
#include "system/sim.h"

typedef struct PrtEmittedModel {
    const char *system, *model;
    PrtSystem sys;          /* kernels and tables; params: the masses, then the free lengths (0: open) */
    PrtModelConfig cfg;
    const double *theta;    /* the trained parameters built in */
    long nparams;
    double dt, rtol, atol;  /* the data block's interval and its solver's tolerances (the rollout's too) */
    int steps, seed, substeps;
    const char *solver;     /* the data block's solver: the true trajectories' */
} PrtEmittedModel;

/* Called once, by the emitted library's constructor; e must live as long as the library. */
void prt_abi_register(const PrtEmittedModel *e);

#endif
