/* view_data.h — the files `physc run` writes for `physc view` (app/view.c): scene.json (the
   system's bodies, the segments of its links, tethers and joints, the names and layout of
   its coordinates and velocities, which of them pair in phase portraits, gravity's direction)
   and rollouts.bin (the test trajectories' truth and model states at the observation times,
   float32). The page draws the scene from them; nothing is evaluated
   again. */
#ifndef PHYSC_VIEW_DATA_H
#define PHYSC_VIEW_DATA_H
#include <stddef.h>

#include "system.h"
#include "system/sim.h"

typedef struct ViewData {
    const System *sys;
    const PrtSystem *ps;         /* its sizes (N coordinates, then NP velocities: the state's rows), names */
    const char *model, *kind;
    long n;                      /* test trajectories */
    int nt;                      /* observation times, dt apart */
    double dt;
    const double *truth;         /* [time][row][trajectory]: truth_stride a time, ntruth a row */
    long truth_stride, ntruth;
    const double *pred;          /* the same, pred_stride a time, n a row */
    long pred_stride;
} ViewData;

/* Each written whole or not at all: 0, or -1 with a message */
int view_write_scene(const char *path, const ViewData *v, char *err, size_t errlen);
int view_write_rollouts(const char *path, const ViewData *v, char *err, size_t errlen);

#endif
