/* model_lie.h — the settings only the liet2 family reads (model_lie.c), kept in its
   configuration's own part (PrtModelConfig.own): its learned terms' units and inputs. Its
   configure sets them from the model's declaration; the unit tests set them here. */
#ifndef PRT_MODEL_LIE_H
#define PRT_MODEL_LIE_H
#include <stdbool.h>
#include <stddef.h>

#include "model.h"

typedef struct PrtLieNet {
    double scale;         /* the network's output multiplier (a learned term's `scale`) */
    double length_scale;  /* its unit of length: it reads positions divided by it (`length_scale`) */
    double time_scale;    /* and of time: velocities in length_scale / time_scale, angular velocities in 1 / time_scale */
    bool velocity_input;  /* a force network reads (X, velocities), not (X, P) */
    bool body_frame_input; /* a potential reads each body's view of the others (body_frame.h), not X */
    int body_gains;       /* > 0: a potential of `input own_frame`, the sum over this many rigid bodies (all of the
                             system's) of the network at each body's view of the others, times that body's gain;
                             the gains' logarithms follow the network's weights in theta; with own_centres_input,
                             every body's, each body's view of the others in the world frame */
    bool own_centres_input;
} PrtLieNet;

typedef struct PrtLieConfig {
    int npotentials;      /* the first npotentials networks are residual potentials (their sum is the residual),
                             the one after them, if any, its force */
    PrtLieNet net[PRT_MODEL_MAX_NETS];
    size_t segment_bytes; /* a chunk's share of the tape a segment of its rollout may hold before the backward
                             pass recomputes the segments instead of storing them (0: the family's default;
                             SIZE_MAX: every stage stored; the gradient is the same to the bit) */
} PrtLieConfig;

/* cfg's liet2 settings (cfg->own) */
PrtLieConfig *prt_lie_config(PrtModelConfig *cfg);
const PrtLieConfig *prt_lie_config_of(const PrtModelConfig *cfg);

#endif
