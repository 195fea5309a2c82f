/* run.h — `physc run`: compile a system for training, make (or load) its data, train a
   model, evaluate it on the test set, and write the report (metrics.json, parameters,
   SVG plots). */
#ifndef PHYSC_RUN_H
#define PHYSC_RUN_H
#include "diag.h"
#include "system.h"

typedef struct RunOptions {
    const char *file;        /* the program (its bytes tell a change of comments or layout only) */
    const char *const *set_names; /* its `param`s set on the command line (--set), for metrics.json */
    const double *set_values;
    int nset;
    const char *model;       /* NULL: the first model */
    const char *out_dir;     /* NULL: runs/<system>-<model> */
    const char *save_data;   /* NULL, or a folder for train/valid/test CSVs */
    const char *precision;   /* NULL: the train block's (f32: the MLP in float; f64) */
    long epochs, seed, threads, stop_after; /* 0 / -1 (seed): from the program */
    bool resume, quiet;
    bool view;               /* write the run's page (physc view) once it is reported */
    bool force;              /* start afresh even over an unfinished run's checkpoint */
    bool eval_from_chunk;    /* test rollouts from a random chunk's first state (the reference code's) */
    long ntrain;             /* 0: the data block's train; else this many training trajectories (the
                                first ntrain of a larger set's; validation and test sets unchanged) */
    bool reuse_finished;     /* a finished run in the folder with this fingerprint, epochs and
                                eval-from, and its metrics.json: return 0 at once (physc compare) */
    /* finished runs (folders) whose training may be this model's: one of a model that trains
       exactly as this one (every fingerprint part but its name and prediction step) is
       taken instead of training (physc compare passes the earlier models' runs) */
    const char *const *trained_by;
    int ntrained_by;
    bool trained_by_required; /* none matching is an error (run --trained-by) */
    /* a folder where `physc run` may have left a finished run of this fingerprint, epochs and
       eval-from (physc compare passes runs/<system>-<model>): its files are copied into the
       out folder and the run only reports it */
    const char *reuse_from;
    char *failure;           /* NULL, or where to copy why the run failed (failure_len bytes) */
    size_t failure_len;
    Diags *diags;            /* the program's: refusals that belong to a place are diagnostics there */
} RunOptions;

/* Returns the exit status: 0, 1 (bad input, divergence, failure), 130 (SIGINT) or 143
   (SIGTERM): stopped after the epoch in progress, with a checkpoint. */
int run_model(System *sys, const RunOptions *o);

/* mkdir -p: 0, or -1 with a message (a part that cannot be made, or is not a folder). */
int run_make_dirs(const char *path, char *err, size_t errlen);

#endif
