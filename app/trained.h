/* trained.h — a model as `physc run` trains it, for the commands that use one: which model,
   its networks, and the parameters a run wrote (params.bin), which `physc simulate --params`
   rolls out and `physc emit-c --params` bakes into a C program. */
#ifndef PHYSC_TRAINED_H
#define PHYSC_TRAINED_H
#include "diag.h"
#include "nn/mlp.h"
#include "models/model.h"
#include "system.h"

/* The model named `name` (NULL: the first in the program). NULL and *out set, or why not. */
const char *trained_pick(const System *sys, const char *name, const Model **out);

/* The runtime's model config for md: its family's row, its networks (f32: their passes in
   float), and the train block's loss, integrator and substeps. False with a message if md is
   not a kind physc trains, or asks for what its family cannot do (checked against the
   runtime's tables), with *where at the place in the program (first_line 0 for none). */
bool trained_config(const System *sys, const Model *md, bool f32, PrtModelConfig *cfg, Loc *where, char *err,
                    size_t errlen);

/* How many parameters the model has: its networks', then the log masses when it learns them. */
long trained_nparams(const System *sys, const PrtModelConfig *cfg);

/* Reads `nparams` parameters from a run's params.bin (malloc'd), or NULL with a message. */
double *trained_load(const char *path, long nparams, char *err, size_t errlen);

/* A trained model ready to use: which model, its config and its parameters. */
typedef struct Trained {
    const Model *md;
    PrtModelConfig cfg;
    long nparams;
    double *theta;
} Trained;

/* Picks model `name`, builds its config and reads `params_path`. f32: its networks in float
   if its family predicts at its training precision (model.h; else double). False after a
   message (`physc CMD: ...`, or a diagnostic at the model's place in the program), with *t empty. */
bool trained_open(const System *sys, const char *cmd, const char *name, const char *params_path, bool f32, Diags *d,
                  Trained *t);
void trained_close(Trained *t);

#endif
