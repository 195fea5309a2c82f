/* sweep.h — `physc sweep`: the cross product of a program's models, seeds and training-set
   sizes, each one `physc run` (app/run.h) into its own folder, then a summary from the runs'
   files (metrics.json, trajectories.csv, errors.csv), never by evaluating again: the CHNN
   paper's Section 7 (Figures 1 middle, 7 and 8), the discrete-time paper's tables of trials.
   `physc compare` is a sweep of the program's models. The runs go one after another, several
   at once (--jobs), as a task farm under mpirun, or one task of a Slurm job array (--task,
   the script from --emit-slurm). Nothing here depends on which family a model is. */
#ifndef PHYSC_SWEEP_H
#define PHYSC_SWEEP_H
#include "diag.h"
#include "system.h"

enum { SWEEP_MAX_LIST = 64 }; /* models or sizes in one sweep */

typedef struct SweepOptions {
    const char *command;     /* "sweep" or "compare": its words, folder and summary's name */
    const char *file;
    const char *models;      /* "a,b,...", or NULL: every model of a kind physc trains */
    const long *sizes;       /* training-set sizes; nsizes 0: the data block's train */
    int nsizes;
    long epochs, threads;    /* 0: the program's */
    long seeds, seed_from;   /* seeds seed_from .. seed_from + seeds - 1 (seed_from -1: the data block's) */
    long jobs;               /* runs at once (>= 1); above 1, each in a child process */
    long task;               /* >= 0: this task alone (a Slurm array's index) */
    const char *emit_slurm;  /* write the sbatch script here, run nothing */
    const char *const *set_names; /* the program's `param`s set on the command line (--set) */
    const double *set_values;
    int nset;
    int argc;                /* the command's own arguments, for the script */
    char **argv;
    const char *precision;   /* "f32", "f64", or NULL: the train block's */
    const char *out_dir;     /* NULL: runs/<system>-<command> */
    bool eval_from_chunk, force, quiet;
    Diags *diags;
} SweepOptions;

/* Parses "A,B,..." of whole numbers from 1 to 10^7 into out (at most max): how many, or -1
   for anything else (empty, 0, a repeat, a sign, too many). */
int sweep_parse_counts(const char *text, long *out, int max);

/* Parses --seeds: "K" (K seeds from the data block's: *from = -1) or "A..B" (A <= B, at most
   1000 seeds). 0, or -1. */
int sweep_parse_seeds(const char *text, long *count, long *from);

/* Returns the exit status: 0 every run finished and every output was written; 1 bad input,
   a run failed (the others are still summarized) or an output could not be written; 2 a
   model the program lacks; 130 or 143 interrupted (the runs in progress keep their
   checkpoints: the same command resumes them). */
int sweep_models(System *sys, const SweepOptions *o);

#endif
