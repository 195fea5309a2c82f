/* sweep.c — `physc sweep` and `physc compare` (sweep.h): the models, seeds and sizes, the
   runs and their tasks, the engine that runs them, then the summary. */
#include "sweep_internal.h"
#include "core/alloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/run_lock.h"
#include "dist.h"
#include "models/model.h"
#include "report.h"
#include "run.h"

int sweep_parse_counts(const char *text, long *out, int max) {
    int n = 0;
    for (const char *p = text;; p++) {
        char *end;
        if (*p < '0' || *p > '9' || n == max) return -1; /* also refuses signs and spaces */
        long v = strtol(p, &end, 10);
        if (v < 1 || v > 10000000 || (*end && *end != ',')) return -1;
        for (int i = 0; i < n; i++)
            if (out[i] == v) return -1;
        out[n++] = v;
        if (!*end) return n;
        p = end;
    }
}

/* --models (or every model of a kind physc trains) into out. 0, or the exit status after
   a message: 2 for a name the program lacks, a repeat or a kind physc does not train. */
static int pick_models(const System *sys, const char *command, const char *list, const Model **out, int *n) {
    *n = 0;
    if (!list) {
        for (int i = 0; i < sys->nmodels && *n < SWEEP_MAX_LIST; i++)
            if (prt_model_family(model_kind_name(sys->models[i].kind))) out[(*n)++] = &sys->models[i];
        if (*n) return 0;
        fprintf(stderr, "physc: %s: the program has no model of a kind physc trains (%s)\n", command, prt_model_family_names());
        return 1;
    }
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, ",");
        const Model *md = NULL;
        for (int i = 0; i < sys->nmodels && !md; i++)
            if (strlen(sys->models[i].name) == len && !strncmp(sys->models[i].name, p, len)) md = &sys->models[i];
        const char *why = !md ? "no model of that name" : NULL;
        for (int i = 0; md && i < *n && !why; i++)
            if (out[i] == md) why = "named twice";
        if (md && !why && !prt_model_family(model_kind_name(md->kind))) why = "a kind physc does not train";
        if (!why && *n == SWEEP_MAX_LIST) why = "too many models";
        if (why) {
            fprintf(stderr, "physc: %s: --models: %s: %.*s (", command, why, (int)len, p);
            if (!sys->nmodels) fprintf(stderr, "the program has none");
            for (int i = 0; i < sys->nmodels; i++)
                fprintf(stderr, "%s%s (%s)", i ? ", " : "models: ", sys->models[i].name, model_kind_name(sys->models[i].kind));
            fprintf(stderr, ")\n");
            return 2;
        }
        out[(*n)++] = md;
        p += len + (p[len] == ',');
    }
    return 0;
}


int sweep_parse_seeds(const char *text, long *count, long *from) {
    const char *dots = strstr(text, "..");
    char *end;
    if (!dots) {
        *from = -1;
        *count = text[0] >= '0' && text[0] <= '9' ? strtol(text, &end, 10) : 0;
        return *count >= 1 && *count <= 1000 && !*end ? 0 : -1;
    }
    if (text[0] < '0' || text[0] > '9' || dots[2] < '0' || dots[2] > '9') return -1; /* (no sign, no space) */
    long a = strtol(text, &end, 10);
    if (end != dots) return -1;
    long b = strtol(dots + 2, &end, 10);
    if (*end || a > b || b > 2147483647L || b - a >= 1000) return -1;
    *from = a, *count = b - a + 1;
    return 0;
}

/* The comparison's sizes are within what the data block holds, and there are test
   trajectories: 0, or the exit status (said). */
static int check_sizes(const System *sys, const char *command, const long *sizes, int nsizes) {
    if (sys->data.ntest == 0) {
        fprintf(stderr, "physc: %s: the data block has no test trajectories (test 0): there is nothing to compare\n", command);
        return 1;
    }
    for (int z = 0; z < nsizes && sys->data.file; z++) /* a file's training trajectories are what it has */
        if (sizes[z] > sys->data.ntrain) {
            fprintf(stderr, "physc: %s: --train-sizes %ld: the data block's train takes %d trajectories of %s; give "
                    "sizes up to %d\n", command, sizes[z], sys->data.ntrain, sys->data.file, sys->data.ntrain);
            return 2;
        }
    return 0;
}

/* Every run of the sweep: each model at each size with each seed, in its folder; the runs
   of one seed, size and model kind are one task (*ntasks of them) */
static Run *plan_runs(const Settings *st, long seeds, int *nruns, int *ntasks) {
    *nruns = st->nmodels * st->nsizes * (int)seeds;
    Run *runs = prt_xcalloc((size_t)*nruns, sizeof(Run), "the runs");
    int i = 0;
    for (int j = 0; j < st->nmodels; j++)
        for (int z = 0; z < st->nsizes; z++)
            for (long s = 0; s < seeds; s++, i++) {
                Run *r = &runs[i];
                r->md = st->models[j], r->seed = st->first_seed + s, r->size = st->sizes[z];
                r->pending = true; /* (until this process runs it, or reads where it stands) */
                snprintf(r->failure, sizeof r->failure, "not finished");
                size_t len = strlen(st->dir) + strlen(r->md->name) + 64;
                r->dir = prt_xalloc(len, 1, "a path");
                if (st->o->nsizes) snprintf(r->dir, len, "%s/%s-seed%ld-n%ld", st->dir, r->md->name, r->seed, r->size);
                else snprintf(r->dir, len, "%s/%s-seed%ld", st->dir, r->md->name, r->seed);
            }
    *ntasks = 0;
    for (i = 0; i < *nruns; i++) {
        Run *r = &runs[i];
        int k = 0;
        while (k < i && !(runs[k].seed == r->seed && runs[k].size == r->size && runs[k].md->kind == r->md->kind)) k++;
        r->task = k < i ? runs[k].task : (*ntasks)++;
    }
    return runs;
}


/* The engine the options and the launcher choose; 0, or 128 + a stop signal */
static int run_all(System *sys, const Settings *st, Run *runs, int nruns) {
    const SweepOptions *o = st->o;
    if (dist_size() > 1) return sweep_farm(sys, st, runs, nruns);
    if (o->task >= 0) return sweep_one_task(sys, st, runs, nruns, (int)o->task);
    return o->jobs > 1 ? sweep_in_parallel(sys, st, runs, nruns) : sweep_in_turn(sys, st, runs, nruns);
}

/* The summary, by one process: under mpirun rank 0, once every process has ended its runs;
   a Slurm task only when no run is left unfinished (the task that ends last writes it).
   The runs this process did not run are read from their files. Returns the outputs that
   could not be written (said), or -1 when it is not this process's to write. */
static int summarize(const Settings *st, Run *runs, int nruns) {
    if (dist_rank() > 0) return -1;
    int pending = 0;
    for (int i = 0; i < nruns; i++) {
        if (runs[i].pending) sweep_read_state(&runs[i]);
        pending += runs[i].pending;
    }
    if (st->o->task >= 0 && pending) {
        if (!st->o->quiet)
            printf("%s: task %ld ended; %d of %d runs of the sweep are not finished yet (the task that ends last writes the "
                   "summary)\n", st->o->command, st->o->task, pending, nruns);
        return -1;
    }
    return sweep_summarize(st, runs, nruns);
}

int sweep_models(System *sys, const SweepOptions *o) {
    const Model *models[SWEEP_MAX_LIST];
    int nmodels, rc = pick_models(sys, o->command, o->models, models, &nmodels);
    if (rc) return rc;
    long block_size = sys->data.ntrain;
    const long *sizes = o->nsizes ? o->sizes : &block_size;
    int nsizes = o->nsizes ? o->nsizes : 1;
    if ((rc = check_sizes(sys, o->command, sizes, nsizes)) != 0) return rc;
    Settings st = {.sys = sys, .o = o, .epochs = o->epochs > 0 ? o->epochs : sys->train.epochs,
                   .threads = o->threads > 0 ? o->threads : sys->train.threads,
                   .first_seed = o->seed_from >= 0 ? o->seed_from : sys->data.seed, .sizes = sizes, .nsizes = nsizes,
                   .models = models, .nmodels = nmodels};
    char *dir;
    if (o->out_dir) dir = strcpy(prt_xalloc(strlen(o->out_dir) + 1, 1, "a path"), o->out_dir);
    else {
        size_t len = strlen(sys->name) + strlen(o->command) + 8;
        dir = prt_xalloc(len, 1, "a path");
        snprintf(dir, len, "runs/%s-%s", sys->name, o->command);
    }
    st.dir = dir;
    int nruns, ntasks;
    Run *runs = plan_runs(&st, o->seeds, &nruns, &ntasks);
    char err[1024];
    PrtRunLock lock = {-1};
    if (o->emit_slurm) rc = sweep_emit_slurm(&st, ntasks);
    else if (o->task >= ntasks) {
        fprintf(stderr, "physc: %s: --task %ld: the sweep has %d tasks, 0 to %d\n", o->command, o->task, ntasks, ntasks - 1);
        rc = 2;
    } else if (run_make_dirs(dir, err, sizeof err) != 0 || prt_run_lock_shared(&lock, dir, err, sizeof err) != 0) {
        /* (shared: the processes of a sweep write its folder together, a run's refused) */
        fprintf(stderr, "physc: %s: %s\n", o->command, err);
        rc = 1;
    } else {
        snprintf(err, sizeof err, "%s of %s", o->command, sys->name);
        prt_run_lock_record(&lock, err);
        int stop_rc = run_all(sys, &st, runs, nruns), failed = 0;
        for (int i = 0; i < nruns; i++) failed += !runs[i].ok && !runs[i].pending;
        int outputs = stop_rc ? -1 : summarize(&st, runs, nruns);
        if (outputs >= 0 && failed)
            fprintf(stderr, "physc: %s: %d of %d %s failed (see the table)\n", o->command, failed, nruns, nruns == 1 ? "run" : "runs");
        rc = stop_rc ? stop_rc : failed || outputs > 0 ? 1 : 0;
        if (dist_size() > 1 && dist_max_int(&rc, "rank 0's summary", err, sizeof err) != 0) dist_abort(err);
    }
    for (int k = 0; k < nruns; k++) sweep_run_free(&runs[k]);
    free(runs), free(dir);
    prt_run_unlock(&lock);
    return rc;
}
