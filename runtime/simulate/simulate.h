/* simulate.h — one simulation run, shared by `physc simulate` (JIT) and the main() of
   `physc emit-c` programs, so both do exactly the same thing. */
#ifndef PRT_SIMULATE_H
#define PRT_SIMULATE_H
#include <stdio.h>

#include "io/dataset.h"
#include "models/model.h"
#include "system/sim.h"

typedef struct PrtSimOptions {
    long n, steps, seed;
    double dt, rtol, atol;
    const char *integrator;   /* a row of integrators.h */
    int substeps;             /* a fixed-step integrator's steps per dt (0: one) */
    const char *csv;          /* write trajectories here, or NULL */
    const char *from;         /* or start from the first states of this CSV's trajectories (the
                                 columns written here); n and dt are then the file's, and steps
                                 too unless set (> 0, at most the file's) */
    const char *who;          /* prefix of its messages: NULL for `physc: simulate`, or an emitted
                                 program's name */
    char *errbuf;             /* if not NULL, its messages go here (errlen bytes, the last one
                                 kept), not to stderr: a library's (runtime/abi/) */
    size_t errlen;
} PrtSimOptions;

/* Prints "WHO: message" on stderr (o->who, see above), or writes the message into o->errbuf. */
__attribute__((format(printf, 2, 3))) void prt_sim_error(const PrtSimOptions *o, const char *fmt, ...);

typedef struct PrtSimResult {
    double energy_drift;      /* max over trajectories of max_t |H(t) - H(0)| / max(|H(0)|, max_t T(t)) */
    double violation;         /* max |Phi| */
    double orthogonality;     /* max |R^T R - I| of the `state so3` bodies */
    PrtOdeStats stats;
    double *traj;             /* (steps + 1) x (N + NP) x n, owned by the caller (free): the true
                                 dynamics' (X, P), also when a model was rolled out */
    double model_err;         /* prt_simulate_model: the geometric mean relative state error */
} PrtSimResult;

/* Returns 0, 1 for a failure of the run (message on stderr), 2 for bad options.
   Prints a report to `report` (which may be NULL). */
int prt_simulate(PrtSystem *s, const PrtSimOptions *o, FILE *report, PrtSimResult *r);

/* The pieces prt_simulate_model shares: reading o->from (into *set, with *eff the options
   with the file's n, steps and dt; 0, or 1 after a message), and a run from the first states
   of `from` (or, if NULL, from sampled ones). */
int prt_sim_read_from(PrtSystem *s, const PrtSimOptions *o, PrtSimOptions *eff, PrtTrajSet *set);
int prt_simulate_states(PrtSystem *s, const PrtSimOptions *o, const PrtTrajSet *from, FILE *report, PrtSimResult *r);

/* The trajectories traj ((X, P), steps + 1 points) as (X, V), the columns `physc run` reads
   back (malloc'd); and CSV output of such (X, V) trajectories to o->csv (0, or 1 after a
   message). Shared with simulate_model.c. */
/* 0 if `copies` copies of o's trajectories fit in memory (alloc.h); else 1 after a message
   with their size and what to reduce. */
int prt_sim_check_memory(const PrtSystem *s, const PrtSimOptions *o, int copies);
double *prt_sim_velocities(const PrtSystem *s, long n, long steps, const double *traj);
int prt_sim_write_csv(const PrtSystem *s, const PrtSimOptions *o, const double *xv);
/* 0 if o->csv (if any) can be written, else 1 after a message: checked before computing */
int prt_sim_check_out(const PrtSimOptions *o);

/* The same for a trained model (simulate_model.c; `physc simulate --params` and emitted
   programs with a model): samples and integrates the true system as prt_simulate, then rolls
   the model (parameters theta) out from the same states with dopri5 and reports `physc
   run`'s evaluation of it against the truth (with o->from, against the file's
   trajectories: a model measured on recorded data); the CSV holds the model's trajectories. In its
   own file so that programs without a model need no BLAS. */
int prt_simulate_model(PrtSystem *s, const PrtSimOptions *o, PrtModel *model, const double *theta, FILE *report,
                       PrtSimResult *r);

#endif
