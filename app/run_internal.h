/* run_internal.h — what the stages of `physc run` share (run.c runs them in order: choose
   the model, compile, open the run's folder, make the data, train, evaluate, report). */
#ifndef PHYSC_RUN_INTERNAL_H
#define PHYSC_RUN_INTERNAL_H
#include <signal.h>
#include <stdio.h>
#include <time.h>

#include "core/run_lock.h"
#include "driver.h"
#include "io/checkpoint.h"
#include "io/dataset.h"
#include "run.h"
#include "train/evaluate.h"
#include "train/train.h"

/* Generated (or loaded) data: training chunks, validation chunks, full test trajectories. */
typedef struct Data {
    PrtTrajSet train_full, valid_full, test, train, valid;
    bool velocities_estimated; /* a data file of positions only */
} Data;

/* One run, as its stages fill it in */
typedef struct RunState {
    System *sys;
    const RunOptions *o;
    FILE *out;               /* progress and summaries, or NULL (--quiet) */
    bool tty;                /* out is a terminal: progress redrawn in place (not under mpirun,
                                whose pseudo-terminal stands for a log as well) */
    const Model *md;
    PrtModelConfig cfg;
    const char *precision;
    long epochs, seed, threads, ntrain;
    Compiled c;
    bool compiled;
    double compile_ms, data_s, eval_s;
    char *dir, *ckpt;        /* the run's folder and its checkpoint */
    PrtRunLock lock;         /* the folder's, while this run writes it */
    char lock_was[256];      /* who wrote the folder before (run_lock.h) */
    PrtFingerprint fp;
    bool resume, adopted;    /* continue the checkpoint; it is another run's training (--trained-by) */
    Data data;
    PrtModel m;
    PrtProgress phase;       /* the losses over the whole training set, each a phase */
    double *theta;
    double integrator_floor;
    PrtTrainResult tr;
    PrtEvalResult ev, ev_known;
    bool evaluate, known_baseline; /* a test set; the known terms alone evaluated beside the model */
    char blas[256];
    int failed_outputs;      /* outputs that could not be written (each reported): the run exits 1 */
    Loc err_at;              /* where in the program a failure comes from, if anywhere */
    char err[1024];
    int rc;                  /* the exit status, once a stage ends the run */
} RunState;

/* Each stage returns 0 (go on), 1 (the run ends: rc is set) or -1 (it failed: err says why,
   err_at where). */
int run_open_folder(RunState *r);
/* Under mpirun, the processes but rank 0: the run of rank 0's folder (its checkpoint to resume
   from, no lock), the same fingerprint as rank 0's, and its model */
int run_join_folder(RunState *r);
/* Under mpirun: rank 0's training and validation sets to every process */
int run_share_data(RunState *r);
int run_data(RunState *r);
int run_train(RunState *r);
int run_evaluate(RunState *r);
int run_report(RunState *r);

/* Each state group's training error of theta (NULL: of the system's own dynamics stepped as
   in training, the floor) against the known terms alone's, as one line after `line`; the two
   passes shown as the phases `phase` and `phase_known`. Nothing for a family that does not
   split its loss or whose theta = 0 is not its known terms. */
void run_group_ratios(RunState *r, const double *theta, const char *phase, const char *phase_known, const char *line);

/* The memory the data and the parameters need, checked before anything is compiled: 0, or -1 with a message */
int run_check_memory(const RunState *r, char *err, size_t errlen);
void run_data_free(Data *d);

/* The checkpoint's fingerprint (training_only: without the model's name and prediction step) */
PrtFingerprint run_fingerprint(const char *file, const System *sys, const Compiled *c, const Model *md,
                               const PrtModelConfig *cfg, long seed, long ntrain, long threads, bool training_only);
/* The gradient shards of a run on `threads` threads whose train block sets none */
long run_thread_shards(long threads);
/* A model's Adam epsilon: its own, else the train block's. */
double run_adam_eps(const System *sys, const Model *md);

/* Where a stop signal outside the epochs finds the run (run_stopped.c) */
typedef enum { RUN_BEFORE_TRAINING, RUN_AFTER_TRAINING } RunStage;
/* From here on such a signal ends the run after saying where it was and what it kept. */
void run_say_when_stopped(const RunState *r, RunStage stage);
/* The signals as they were before the run (at its end) */
void run_release_stop_signals(void);

/* Keeps why the run failed for the caller (physc compare's table), if it asked; returns 1. */
int run_note_failure(const RunOptions *o, const char *why);
/* 1 after reporting err if an output could not be written (rc != 0), else 0 */
int run_output_failed(int rc, const char *err);

/* "1 epoch", "2 epochs": the noun for a count */
static inline const char *noun(long n, const char *one, const char *many) { return n == 1 ? one : many; }

static inline double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

#endif
