/* report.h — what `physc run` writes a person: metrics.json and the SVG plots. */
#ifndef PHYSC_REPORT_H
#define PHYSC_REPORT_H
#include "train/evaluate.h"
#include "system.h"
#include "train/train.h"

typedef struct Report {
    const char *program;   /* the program's file, and its `param`s set on the command line */
    const char *const *set_names;
    const double *set_values;
    int nset;
    const System *sys;
    const Model *model;
    const PrtModel *m;
    const double *theta;  /* its trained parameters */
    const PrtTrainResult *tr;
    const PrtEvalResult *ev;
    const PrtEvalResult *ev_known; /* the model's known terms alone (theta = 0), evaluated alike; NULL: none */
    long epochs, seed, threads;
    long ntrain;           /* training trajectories */
    const char *precision; /* of training */
    const char *predicts_in; /* the precision of its rollouts: f64, or f32 for an f32 dtlnn (model.h) */
    const char *blas;      /* the BLAS library and its kernels */
    const char *eval_from; /* "initial" (the sampled states) or "chunk" (a random chunk's first state) */
    double compile_ms, data_s, eval_s;
    double integrator_floor; /* prt_model_truth_loss on the training chunks */
} Report;

/* dir/name, allocated. */
char *report_path(const char *dir, const char *name);
/* The whole text of a run's file (a regular file: core/input_file.h), NUL-terminated and
   allocated, *len its bytes (len may be NULL); NULL with a message */
char *report_read_text(const char *path, size_t *len, char *err, size_t errlen);
/* s as a JSON string, quoted: quotes, backslashes and control characters escaped, and `<` as
   \u003c (the text may sit inside an HTML script element) */
void report_put_json_string(FILE *f, const char *s);
/* metrics.json (written to a temporary, then renamed), with the loss per epoch (train_loss,
   valid_loss); a figure that is not a number is null (none for this system or model, or
   the evaluation's nonfinite_figure says which went non-finite). Returns 0, or -1 with a
   message. */
int report_write_metrics(const char *path, const Report *r, char *err, size_t errlen);
/* trajectories.csv: per test trajectory, the time summaries behind metrics.json's means:
   relative error, energy error, chaos floor (geometric means over time), |Phi| (its mean
   over time; 0 without constraints). */
int report_write_trajectories(const char *path, const Report *r, char *err, size_t errlen);
/* errors.csv: the series behind trajectories.csv, a row per test trajectory and observation
   time (Err(t), the energy error, |Phi|, the chaos floor's Err(t)), so that any other summary
   over time can be computed from them (docs/experiments/reference_convention.py). */
int report_write_error_series(const char *path, const Report *r, char *err, size_t errlen);
/* first-rollout.csv: the first test trajectory over time, truth beside the model: each
   position coordinate (true, then predicted), the true energy of both, and the model's own
   energy (no such column for a family that has none): the discrete-time Lagrangian paper's
   Figure 1. */
int report_write_first_rollout(const char *path, const Report *r, const PrtTrajSet *test, const char *const *names,
                               char *err, size_t errlen);
/* loss.svg: the training and validation loss per epoch. */
int report_write_loss_plot(const char *dir, const Report *r, char *err, size_t errlen);
/* rollout.svg (positions and velocities of the first `trajectories` test trajectories,
   truth against model), error.svg, energy.svg: those the eval block's `plots` asks for.
   Appends ", NAME" to wrote for each file written. */
/* The coordinates with a velocity of their own, as (position row, velocity row) pairs of the
   state (X, Xdot): every point coordinate, each so3 body's centre (not its R): up to max into
   pairs (NULL: only counted); their count. */
int report_phase_pairs(const PrtSystem *s, int max, int pairs[][2]);
int report_write_plots(const char *dir, const Report *r, const PrtTrajSet *test, const char *const *names, char *wrote,
                       size_t wrotelen, char *err, size_t errlen);

#endif
