/* sweep_internal.h — what the files of `physc sweep` share (sweep.h; `physc compare` is a
   sweep of the program's models): the runs and their files (sweep_files.c), the engines that
   run them (sweep_runs.c), the summary (sweep_report.c) and the Slurm script (sweep_slurm.c). */
#ifndef PHYSC_SWEEP_INTERNAL_H
#define PHYSC_SWEEP_INTERNAL_H
#include "sweep.h"

#include "train/metrics.h"

/* The metrics (metrics.h): those with a series a run gives per test trajectory
   (trajectories.csv) and per time (errors.csv), which a sweep pools over the seeds'
   trajectories; and those it gives once (metrics.json), which it averages over the seeds as
   the discrete-time Lagrangian paper averages its trials (Tables 2 and 3), each as its
   figure, the mean of its squares, and the known terms' alone where the row has them (the
   CSVs hold the trained model's series only: a metric with a series is the trained model's). */
enum { ONCE_FIGURE, ONCE_KNOWN, ONCE_SQUARES, ONCE_KNOWN_SQUARES, NONCE };

/* Whether metric id is given once in the kind of figure `kind`; whether that kind is a mean
   of squares; its key: metrics.json's (summary false) or the summary's. */
bool sweep_once_has(int id, int kind);
bool sweep_once_squares(int kind);
const char *sweep_once_key(char buf[128], int id, int kind, bool summary);

/* One run: a model, a seed, a training-set size, and what its files say. */
typedef struct Run {
    const Model *md;
    long seed, size;
    int task;            /* the runs of one seed, size and model kind are one task, in turn */
    char *dir;
    char *run_dir;       /* physc run's default folder for it (runs/<system>-<model>), or NULL */
    bool ok;             /* finished, its files read */
    bool pending;        /* neither finished nor failed: another process holds it, or it has not run */
    char failure[512];   /* why it failed (not ok, not pending) */
    long param_count, epochs_done;               /* metrics.json */
    double seconds_per_epoch;
    double fig[PRT_NMETRICS], ci[PRT_NMETRICS][2]; /* metrics.json: the metrics with a series */
    double once[NONCE][PRT_NMETRICS];            /* metrics.json: those given once (NaN: none) */
    long ntraj;                                  /* trajectories.csv: ntraj each, by metric */
    double *traj[PRT_NMETRICS];
    int nt;                                      /* errors.csv: ntraj x nt each, at times t */
    double *series[PRT_NMETRICS], *t;
} Run;

/* A model at one size, its seeds' test trajectories pooled. */
typedef struct Pooled {
    const Model *md;
    long size;
    int nruns, nok, npending;
    const char *failure;                         /* the first failed run's reason */
    long ntraj, param_count;
    double seconds_per_epoch, fig[PRT_NMETRICS], ci[PRT_NMETRICS][2];
    double once[NONCE][PRT_NMETRICS];            /* the arithmetic means over the seeds (NaN: none) */
    /* each run's own figure (fig, or once's ONCE_FIGURE), its mean over the seeds and a 95 %
       t interval of that mean (NaN: fewer than two seeds have it) */
    double seed_mean[PRT_NMETRICS], seed_ci[PRT_NMETRICS][2];
    int nt;                                      /* per time: the pooled figure and its interval */
    const double *t;
    double *at[PRT_NMETRICS], *lo[PRT_NMETRICS], *hi[PRT_NMETRICS];
} Pooled;

typedef struct Settings {
    const System *sys;
    const SweepOptions *o;
    const char *dir;
    long epochs, threads, first_seed;
    const long *sizes;
    int nsizes;
    const Model *const *models;
    int nmodels;
} Settings;

/* sweep_files.c: the runs' files */
bool sweep_unfinished(const char *dir);
long sweep_read_csv(const char *path, const char *header, int cols, double **v, char *err, size_t errlen);
int sweep_load_run(Run *r, char *err, size_t errlen);
/* A run's failure kept beside its folder (DIR/<run>.failed), so that the summary names it
   whichever process ran it; a finished run removes it. */
void sweep_keep_failure(const Run *r);
void sweep_forget_failure(const Run *r);
/* Where a run that another process may have run stands, from its files */
void sweep_read_state(Run *r);
void sweep_pool(Pooled *p, Run *runs, int nruns);
void sweep_run_free(Run *r);
void sweep_pooled_free(Pooled *p);

/* sweep_runs.c: the engines. Each returns 0, or 128 + the signal that stopped it (the runs
   in progress keep their checkpoints). Every run's state is set: those it ran, from how they
   ended; those it skipped (held by another process), pending. */
int sweep_in_turn(System *sys, const Settings *st, Run *runs, int nruns);
int sweep_in_parallel(System *sys, const Settings *st, Run *runs, int nruns);
int sweep_one_task(System *sys, const Settings *st, Run *runs, int nruns, int task);
int sweep_farm(System *sys, const Settings *st, Run *runs, int nruns);

/* sweep_report.c: the summary file, the figures and the tables; the outputs that could not
   be written (each said) */
int sweep_summarize(const Settings *st, Run *runs, int nruns);
bool sweep_has_so3(const System *sys);

/* sweep_slurm.c: the sbatch script of the sweep's tasks; 0, or 1 after a message */
int sweep_emit_slurm(const Settings *st, int ntasks);

#endif
