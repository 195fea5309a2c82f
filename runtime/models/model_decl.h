/* model_decl.h — a model as its program declares it, for its family's `configure` (model.h):
   the learned terms it names by role, and what of the system it depends on. app/trained.c
   fills it from the checked program (the runtime knows nothing of the compiler's types);
   each family turns it into its configuration, in its own file, with its own refusals. */
#ifndef PRT_MODEL_DECL_H
#define PRT_MODEL_DECL_H
#include <stdbool.h>
#include <stddef.h>

#include "nn/mlp.h"

/* A learned term as a family reads it */
typedef struct PrtLearnedTerm {
    const char *name;
    PrtMlp net;            /* its network, as the program declares it */
    int inputs;            /* the width of its input */
    double scale, length_scale, time_scale; /* `scale`, `length_scale`, `time_scale` (1: not set) */
    bool velocity_input, body_frame_input, own_centres_input; /* its `input` */
    int body_gains;        /* > 0: a term per body, each times its own gain */
} PrtLearnedTerm;

typedef struct PrtModelDecl {
    const char *name;                  /* the model's */
    const PrtLearnedTerm *potentials;  /* `potential ...` */
    const PrtLearnedTerm *forces;      /* `force ...` */
    const PrtLearnedTerm *mass;        /* `mass M` (a learned mass term), or NULL */
    int npotentials, nforces;
    int nknown;                        /* `known ...`: potential terms of the system kept as they are */
    bool mass_fit;                     /* `mass learned`: the Eq. 9 masses are parameters */
    int ncoords;                       /* the system's Cartesian coordinates */
    bool system_forces;                /* the system has `force` blocks */
} PrtModelDecl;

/* The refusals every family but liet2 shares: the system's force blocks, and the units that
   only liet2's networks read (scale, length_scale, time_scale) on any of the model's terms.
   0, or -1 with the message in err and *blame the term at fault (NULL: the model). */
int prt_model_decl_plain(const char *family_name, const PrtModelDecl *d, const PrtLearnedTerm **blame, char *err,
                         size_t errlen);

/* 0 if the model names exactly `potentials` learned potentials and `forces` learned forces,
   else -1 with "model 'm' (kind) takes WHAT so far". */
int prt_model_decl_counts(const char *family_name, const PrtModelDecl *d, int potentials, int forces, const char *what,
                          char *err, size_t errlen);

/* 0 if the model keeps no known potential terms, else -1 with the message: for the families
   that cannot add them to their networks yet. */
int prt_model_decl_no_known(const char *family_name, const PrtModelDecl *d, char *err, size_t errlen);

#endif
