/* compare.h — `physc compare`: several models of one program trained and measured the same
   way (the CHNN paper's Section 7: Figures 1 middle, 7 and 8). Each model, seed and
   training-set size is one run_model (app/run.h) into its own folder; the comparison is
   made from the runs' files (metrics.json, trajectories.csv, errors.csv), never by
   evaluating again. Nothing here depends on which family a model is. */
#ifndef PHYSC_COMPARE_H
#define PHYSC_COMPARE_H
#include "diag.h"
#include "system.h"

enum { COMPARE_MAX_LIST = 64 }; /* models or sizes in one comparison */

typedef struct CompareOptions {
    const char *file;
    const char *models;      /* "a,b,...", or NULL: every model of a kind physc trains */
    const long *sizes;       /* training-set sizes; nsizes 0: the data block's train */
    int nsizes;
    long epochs, seeds, threads; /* epochs, threads 0: the program's; seeds >= 1 */
    long jobs;               /* runs at once (>= 1); above 1, each in a child process */
    const char *precision;   /* "f32", "f64", or NULL: the train block's */
    const char *out_dir;     /* NULL: runs/<system>-compare */
    bool eval_from_chunk, force, quiet;
    Diags *diags;
} CompareOptions;

/* Parses "A,B,..." of whole numbers from 1 to 10^7 into out (at most max): how many, or -1
   for anything else (empty, 0, a repeat, a sign, too many). */
int compare_parse_counts(const char *text, long *out, int max);

/* Returns the exit status: 0 every run finished and every output was written; 1 bad input,
   a run failed (the others are still compared) or an output could not be written; 2 a
   model the program lacks; 130 or 143 interrupted (the run in progress keeps its
   checkpoint: the same command resumes it). */
int compare_models(System *sys, const CompareOptions *o);

#endif
