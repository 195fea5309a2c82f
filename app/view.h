/* view.h — `physc view DIR [-o FILE.html]`: one self-contained HTML page (its script, style
   and data inline; nothing fetched, it works from file://) that shows a run's test
   trajectories moving, the truth as a ghost under the model, with the errors over time under
   them, from the files the run wrote (scene.json, rollouts.bin, errors.csv,
   trajectories.csv, metrics.json: app/view_data.h). DIR may also be a sweep's or compare's
   folder: each model's run of the first seed at the largest size (or those chosen), drawn
   together, with the sweep's summary and figures. */
#ifndef PHYSC_VIEW_H
#define PHYSC_VIEW_H
#include <stdbool.h>

typedef struct ViewOptions {
    const char *dir;
    const char *out; /* NULL: DIR/view.html */
    bool quiet;
    /* a sweep's folder: the models drawn (NULL: its first VIEW_MAX_RUNS), each one's run of
       this seed (if seed_given, else its smallest) and training-set size (0: its largest) */
    const char *models;
    bool seed_given;
    long seed, size;
    /* --mp4: the video (NULL: none), of test trajectory traj (-1: 0), "overlay" or "side",
       at fps frames a second (0: the data's own clock, within 5..60) */
    const char *mp4, *layout;
    long traj, fps;
} ViewOptions;

/* The exit status: 0 written, 1 a folder it cannot show (said) or an output not written */
int view_write_page(const ViewOptions *o);

#endif
