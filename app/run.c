/* run.c — `physc run` (see run.h): the main job, from a checked system to a report
   (app/report.c writes metrics.json and the plots). */
#include "run.h"
#include "core/alloc.h"

#include <cblas.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/atomic_file.h"
#include "core/input_file.h"
#include "core/run_lock.h"
#include "core/blas_cpu.h"
#include "io/checkpoint.h"
#include "io/dataset.h"
#include "integrators/discrete_step.h"
#include "driver.h"
#include "train/evaluate.h"
#include "integrators/fixed_steps.h"
#include "report.h"
#include "train/train.h"
#include "trained.h"

/* The signal that asked training to stop (SIGINT: Ctrl-C; SIGTERM: what batch schedulers
   send before they kill a job; SIGHUP: the terminal or ssh session closed), or 0. */
static volatile sig_atomic_t interrupted;

static void on_stop_signal(int sig) {
    if (interrupted) _exit(128 + sig); /* a second one: do not wait */
    interrupted = sig;
    static const char int_msg[] = "\nphysc: interrupted: finishing this epoch and writing a checkpoint (Ctrl-C again to quit now)\n",
                      term_msg[] = "\nphysc: SIGTERM: finishing this epoch and writing a checkpoint (a second SIGTERM quits now)\n",
                      hup_msg[] = "\nphysc: SIGHUP (the terminal closed): finishing this epoch and writing a checkpoint\n";
    ssize_t w = sig == SIGINT    ? write(STDERR_FILENO, int_msg, sizeof int_msg - 1)
                : sig == SIGTERM ? write(STDERR_FILENO, term_msg, sizeof term_msg - 1)
                                 : write(STDERR_FILENO, hup_msg, sizeof hup_msg - 1);
    (void)w;
}

/* The signals that stop training after its epoch, and the settings they had */
static const int stop_signals[] = {SIGINT, SIGTERM, SIGHUP};
enum { NSTOP_SIGNALS = sizeof stop_signals / sizeof stop_signals[0] };

static void catch_stop_signals(struct sigaction *old, struct sigaction *old_pipe) {
    struct sigaction sa = {.sa_handler = on_stop_signal}, ignore = {.sa_handler = SIG_IGN};
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < NSTOP_SIGNALS; i++) sigaction(stop_signals[i], &sa, &old[i]);
    /* a closed terminal's pipe (`physc run | tee log`, the tee gone) must not kill the run
       before its checkpoint: its writes fail instead */
    sigemptyset(&ignore.sa_mask);
    sigaction(SIGPIPE, &ignore, old_pipe);
}

static void restore_stop_signals(const struct sigaction *old, const struct sigaction *old_pipe) {
    for (int i = 0; i < NSTOP_SIGNALS; i++) sigaction(stop_signals[i], &old[i], NULL);
    sigaction(SIGPIPE, old_pipe, NULL);
}

/* "1 epoch", "2 epochs": the noun for a count */
static const char *noun(long n, const char *one, const char *many) { return n == 1 ? one : many; }

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The evaluation's progress over its two integrations of the horizon (the model's
   rollouts, then the chaos floor's), as one phase (progress.h). */
typedef struct EvalProgress {
    PrtProgress p;
    int reached;        /* output times reached, both integrations */
    const char *what;   /* the model's rollouts: "model" or "known terms'" */
} EvalProgress;

static void eval_progress(void *ctx, int k, int nt) {
    (void)k;
    EvalProgress *e = ctx;
    int total = 2 * (nt - 1), done = ++e->reached;
    prt_progress_rename(&e->p, "evaluation: %s", done <= nt - 1 ? (e->what ? e->what : "model rollouts") : "chaos floor");
    prt_progress_tick(&e->p, done, total);
}

/* The same while the data are made: a large system's (a 10,000-link chain is stiff) takes
   minutes between the compile line and the data line */
static void data_progress(void *ctx, int k, int nt) { prt_progress_tick(ctx, k, nt > 1 ? nt - 1 : 1); }

/* The known terms alone beside the trained model, on the same test rollouts: how much the
   learned correction gains (the Lie T2 paper's "no corrections" row). */
static void print_known_baseline(FILE *out, const PrtEvalResult *ev, const PrtEvalResult *k, double seconds) {
    fprintf(out, "the known terms alone (no learned correction), the same evaluation, %.2f s%s:\n", seconds,
            k->rollout_failed ? " -- their rollouts FAILED" : "");
    for (int id = 0; id < PRT_NMETRICS; id++) { /* the metrics measured for the known terms too (metrics.h) */
        if (!prt_metrics[id].known || !prt_metric_applies(k, id)) continue;
        double known = k->value[id], trained = ev->value[id];
        const char *name = prt_metric_label(k, id);
        if (isfinite(known)) fprintf(out, "  %-30s %-10.3e", name, known);
        else fprintf(out, "  %-30s %-10s", name, "-"); /* (their rollouts failed: said above) */
        if (trained > 0 && isfinite(known)) fprintf(out, " %.3g x the trained model's", known / trained);
        fputc('\n', out);
    }
}

/* The App. E metrics by so3 body, the known terms' beside them when there are any: a
   correction that fixes one body and pushes another off shows here, not in the sums. */
static void print_so3_bodies(FILE *out, const PrtSystem *s, const PrtEvalResult *ev, const PrtEvalResult *k) {
    if (!ev->so3_dR_body || s->nso3 < 2) return;
    fprintf(out, "by body: rollout means of |dq| and the geodesic dR%s; the learned residual torque's error |dtau| "
            "against the true residual torque |tau|\n", k ? " (the known terms alone's beside them)" : "");
    fprintf(out, "  %-16s %-10s %-10s %-10s %-10s %-10s %-10s\n", "body", "|dq|", k ? "known" : "", "dR", k ? "known" : "",
            "|dtau|", "|tau|");
    for (int b = 0; b < s->nso3; b++) {
        const char *name;
        int len = prt_so3_body_name(s, b, &name);
        char kq[16] = "", kR[16] = "";
        if (k) snprintf(kq, sizeof kq, "%.3e", k->so3_dq_body[b]), snprintf(kR, sizeof kR, "%.3e", k->so3_dR_body[b]);
        fprintf(out, "  %-16.*s %-10.3e %-10s %-10.3e %-10s %-10.3e %-10.3e\n", len, name, ev->so3_dq_body[b], kq,
                ev->so3_dR_body[b], kR, ev->so3_dtau_body[b], ev->so3_tau_body[b]);
    }
}

int run_make_dirs(const char *path, char *err, size_t errlen) {
    char *p = strcpy(prt_xalloc(strlen(path) + 1, 1, "a path"), path);
    for (char *s = p + 1;; s++) {
        if (*s && *s != '/') continue;
        char c = *s;
        *s = 0;
        if (mkdir(p, 0777) != 0 && errno != EEXIST) {
            snprintf(err, errlen, "cannot create directory %s: %s", p, strerror(errno));
            free(p);
            return -1;
        }
        if (!c) break;
        *s = c;
    }
    struct stat st;
    if (stat(p, &st) != 0 || !S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "%s exists and is not a directory", p);
        free(p);
        return -1;
    }
    free(p);
    return 0;
}

/* The checkpoint's fingerprint, by part (PrtFingerprint), from the checked program and its
   compiled kernels rather than from its text, so that comments and layout may change. */
__attribute__((format(printf, 2, 3))) static uint64_t hash_text(uint64_t h, const char *fmt, ...) {
    char s[512];
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(s, sizeof s, fmt, ap);
    va_end(ap);
    return prt_fnv1a(h, s, len < 0 ? 0 : len < (int)sizeof s ? (size_t)len : sizeof s - 1);
}

/* A kernel's computation: its instructions and outputs, not the names and source lines
   its dump shows. */
static uint64_t hash_kernel(uint64_t h, const IrFn *f) {
    h = hash_text(h, "%s %d %d %d|", f->name, f->ninputs, f->nparams, f->noutputs);
    for (int i = 0; i < f->ninsts; i++) {
        const IrInst *in = &f->insts[i];
        int64_t ints[4] = {in->op, in->a, in->b, in->imm};
        h = prt_fnv1a(h, ints, sizeof ints);
        h = prt_fnv1a(h, &in->num, sizeof in->num);
    }
    return prt_fnv1a(h, f->outputs, sizeof(int) * (size_t)f->noutputs);
}

static uint64_t hash_file(uint64_t h, const char *path) {
    char err[256];
    FILE *f = prt_fopen_input(path, NULL, err, sizeof err);
    if (!f) return hash_text(h, "unreadable %s", path);
    char buf[4096];
    size_t got;
    while ((got = fread(buf, 1, sizeof buf, f)) > 0) h = prt_fnv1a(h, buf, got);
    fclose(f);
    return h;
}

/* A model's Adam epsilon: its own, else the train block's. */
static double adam_eps_of(const System *sys, const Model *md) {
    return md->adam_eps > 0 ? md->adam_eps : sys->train.adam_eps;
}

/* Every part holds what changes the trajectory of the parameters. The thread count too:
   each thread trains on its shard of the minibatch, and the shards' gradients are summed in
   a fixed order. The epochs do not: a run may be extended (--resume --epochs).
   training_only: without the model's name and its prediction step, for telling two models
   that train alike (--trained-by); its known terms' names then stand for their kernels. */
static PrtFingerprint fingerprint(const char *file, const System *sys, const Compiled *c, const Model *md,
                                  const PrtModelConfig *cfg, long seed, long ntrain, long threads, bool training_only) {
    uint64_t h[PRT_FP_PARTS] = {PRT_FNV_INIT, PRT_FNV_INIT, PRT_FNV_INIT, PRT_FNV_INIT};
    for (int i = 0; i < c->k.n; i++) { /* Init samples the data; a model's known terms are the model's */
        const IrFn *f = c->k.fns[i];
        if (!strcmp(f->name, "Vknown")) continue; /* the model's energy, not its training: older checkpoints match */
        int part = !strcmp(f->name, "Init") ? PRT_FP_DATA : strstr(f->name, "known") ? PRT_FP_MODEL : PRT_FP_SYSTEM;
        h[part] = hash_kernel(h[part], f);
    }
    h[PRT_FP_SYSTEM] = prt_fnv1a(h[PRT_FP_SYSTEM], c->ps.params, sizeof(double) * (size_t)c->ps.nparams);
    const DataSettings *d = &sys->data;
    h[PRT_FP_DATA] = prt_fnv1a(h[PRT_FP_DATA], c->k.draw_kinds, sizeof(int) * (size_t)c->k.ndraws);
    h[PRT_FP_DATA] = hash_text(h[PRT_FP_DATA], "%ld|%ld|%d|%d|%.17g|%d|%d|%s|%.17g|%.17g|%.17g|%s|%s", seed, ntrain,
                               d->nvalid, d->ntest, d->dt, d->steps, d->chunk, d->solver, d->rtol, d->atol, d->noise,
                               d->project ? d->project : "", d->file ? d->file : "");
    if (d->file) h[PRT_FP_DATA] = hash_file(h[PRT_FP_DATA], d->file);
    if (d->substeps != 1) h[PRT_FP_DATA] = hash_text(h[PRT_FP_DATA], "|substeps %d", d->substeps); /* (only when set) */
    if (d->test_noise > 0) h[PRT_FP_DATA] = hash_text(h[PRT_FP_DATA], "|test_noise %.17g", d->test_noise); /* (only when set: older runs keep theirs) */
    const TrainSettings *t = &sys->train;
    for (int i = 0; i < cfg->nnets; i++) { /* (the first net alone: as before there were several) */
        const PrtMlp *mlp = &cfg->net[i];
        if (i == 0)
            h[PRT_FP_MODEL] = hash_text(h[PRT_FP_MODEL], "%s|%d|%d|%d|%d|", training_only ? "" : md->name, md->kind,
                                        md->mass_fit, mlp->act, mlp->f32);
        else
            h[PRT_FP_MODEL] = hash_text(h[PRT_FP_MODEL], "net %d|%d|%d|", i, mlp->act, mlp->f32);
        if (cfg->scale[i] != 1) h[PRT_FP_MODEL] = hash_text(h[PRT_FP_MODEL], "scale %.17g|", cfg->scale[i]); /* (only when set) */
        if (cfg->length_scale[i] != 1) h[PRT_FP_MODEL] = hash_text(h[PRT_FP_MODEL], "length_scale %.17g|", cfg->length_scale[i]);
        if (cfg->time_scale[i] != 1) h[PRT_FP_MODEL] = hash_text(h[PRT_FP_MODEL], "time_scale %.17g|", cfg->time_scale[i]);
        if (cfg->velocity_input[i]) h[PRT_FP_MODEL] = hash_text(h[PRT_FP_MODEL], "velocity input|");
        if (cfg->body_frame_input[i]) h[PRT_FP_MODEL] = hash_text(h[PRT_FP_MODEL], "body_frame input|");
        if (cfg->body_gains[i])
            h[PRT_FP_MODEL] = hash_text(h[PRT_FP_MODEL], cfg->own_centres_input[i] ? "own_centres input|" : "own_frame input|");
        if (i > 0 && i < cfg->npotentials) h[PRT_FP_MODEL] = hash_text(h[PRT_FP_MODEL], "potential|"); /* (liet2's second or later potential) */
        h[PRT_FP_MODEL] = prt_fnv1a(h[PRT_FP_MODEL], mlp->size, sizeof(int) * (size_t)(mlp->nlayers + 1));
    }
    h[PRT_FP_MODEL] = hash_text(h[PRT_FP_MODEL], "%s|%s|%s|%s|%.17g|%.17g|%d|%d|%ld", t->optimizer, t->schedule,
                                t->loss, t->integrator, t->lr, t->weight_decay, t->batch, t->substeps, threads);
    if (cfg->balance_loss) h[PRT_FP_MODEL] = hash_text(h[PRT_FP_MODEL], "|loss_weights balanced"); /* (only when set) */
    double eps = adam_eps_of(sys, md);
    if (eps != 1e-8) h[PRT_FP_MODEL] = hash_text(h[PRT_FP_MODEL], "|adam_eps %.17g", eps); /* (unset: as before it could be) */
    if (md->lr > 0) h[PRT_FP_MODEL] = hash_text(h[PRT_FP_MODEL], "|model lr %.17g", md->lr); /* (unset: as before it could be) */
    /* a model's own steps and M = I (unset: as before they could be) */
    if (md->integrator)
        h[PRT_FP_MODEL] = hash_text(h[PRT_FP_MODEL], "|model integrator %s", prt_integrators[cfg->integrator].name);
    if (cfg->predict != cfg->integrator && !training_only)
        h[PRT_FP_MODEL] = hash_text(h[PRT_FP_MODEL], "|predict %s", prt_integrators[cfg->predict].name);
    if (training_only) { /* the same terms (their inputs too), not merely terms of the same shapes */
        for (int i = 0; i < md->nknown; i++) h[PRT_FP_MODEL] = hash_text(h[PRT_FP_MODEL], "|known %d", md->known[i]);
        for (int i = 0; i < md->npotentials; i++) h[PRT_FP_MODEL] = hash_text(h[PRT_FP_MODEL], "|V %d", md->potentials[i]);
        for (int i = 0; i < md->nforces; i++) h[PRT_FP_MODEL] = hash_text(h[PRT_FP_MODEL], "|F %d", md->forces[i]);
        h[PRT_FP_MODEL] = hash_text(h[PRT_FP_MODEL], "|M %d", md->mass_learned);
    }
    if (cfg->unit_mass) h[PRT_FP_MODEL] = hash_text(h[PRT_FP_MODEL], "|unit mass");
    h[PRT_FP_SOURCE] = hash_file(h[PRT_FP_SOURCE], file);
    PrtFingerprint fp;
    memcpy(fp.part, h, sizeof h);
    return fp;
}

/* The solvers `physc run` supports so far; *where is the setting (first_line 0: a default).
   Data: dopri5, or a fixed-step integrator that steps this system (its constraints, its
   `state so3` bodies); reference rollouts: dopri5. */
static bool check_settings(const System *sys, Loc *where, char *err, size_t errlen) {
    int id = prt_integrator_find(sys->data.solver);
    *where = sys->data.solver_at;
    if (id != PRT_INT_DOPRI5) {
        const PrtIntegratorInfo *in = &prt_integrators[id];
        if (!prt_fixed_step_integrator((PrtIntegrator)id) || (!in->constraints && sys->nconstraints > 0) ||
            (!in->so3 && sys->nrotation_bodies > 0)) {
            snprintf(err, errlen, "the data's solver %s cannot step this system (%s)", in->name,
                     !prt_fixed_step_integrator((PrtIntegrator)id) ? "not a fixed-step integrator of a system's dynamics"
                     : sys->nconstraints > 0 && !in->constraints ? "it ignores constraints; use rattle or dopri5"
                                                     : "it does not handle `state so3` bodies; use liet2 or dopri5");
            return false;
        }
    } else if (sys->data.substeps != 1) {
        snprintf(err, errlen, "dopri5 chooses its own steps: `substeps` is for a fixed-step data solver");
        return false;
    }
    if (!strcmp(sys->eval.solver, "dopri5")) return true;
    *where = sys->eval.solver_at;
    snprintf(err, errlen, "physc run evaluates with dopri5 only so far, not %s", sys->eval.solver);
    return false;
}

/* The memory the run will hold at least, checked before anything is compiled or allocated:
   the generated trajectories (a data `file` is bounded by its own size, and not estimated),
   and the parameters with their gradients and AdamW moments (one gradient per thread).
   0, or -1 with the size and what to reduce. */
/* The points of each training window: the family's fixed width, the data block's chunk for a
   family that trains on every chunk-long window (train_window < 0), or 0: one random chunk
   of each trajectory (model.h). */
static int train_window(const PrtModelFamily *f, const DataSettings *ds) {
    return f->train_window > 0 ? f->train_window : f->train_window < 0 ? ds->chunk : 0;
}

static int check_memory(const System *sys, const PrtModelConfig *cfg, long ntrain, long epochs, long threads,
                        bool eval_from_chunk, char *err, size_t errlen) {
    const DataSettings *ds = &sys->data;
    double point = 8.0 * (system_coordinates(sys) + sys->nmomenta), npts = ds->steps + 1.0;
    double test_npts = npts + (eval_from_chunk ? (ds->steps + 1) / ds->chunk * ds->chunk : 0);
    /* the training points cut from each trajectory: a chunk, or every window (and a noisy copy) */
    int window = train_window(cfg->family, ds);
    double window_pts = window > 0 ? (window + 1.0) * npts : ds->chunk;
    double data = ds->file ? 0
                           : point * (((double)ntrain + ds->nvalid) * (npts + window_pts) +
                                      ds->ntest * (test_npts + 3.0 * (ds->steps + 1))); /* + rollouts, chaos floor's truth */
    long nparams = 0; /* the networks' (the few mass parameters aside) */
    for (int i = 0; i < cfg->nnets; i++) nparams += prt_mlp_nparams(&cfg->net[i]) + cfg->body_gains[i];
    double params = 8.0 * (double)nparams * (4 + (threads < 16 ? threads : 16)) + 16.0 * epochs;
    char what[256], gb[32];
    snprintf(what, sizeof what, "%ld + %d + %d trajectories (train, valid, test) of %d points of %d numbers",
             ntrain, ds->nvalid, ds->ntest, ds->steps + 1, 2 * sys->ncoords);
    if (prt_mem_check(data, what, "reduce train, valid, test or steps in the data block", err, errlen)) return -1;
    snprintf(what, sizeof what, "%ld network parameters, with their gradients and AdamW moments,", nparams);
    if (prt_mem_check(params, what, "reduce the hidden widths of the learned terms", err, errlen)) return -1;
    snprintf(what, sizeof what, "the data (%s) and the network's parameters", prt_format_bytes(data, gb, sizeof gb));
    return prt_mem_check(data + params, what, "reduce the data block or the hidden widths", err, errlen);
}

/* The tape a minibatch records, checked against the machine before training (measured:
   a recurrent block through many substeps records megabytes a chunk), so a batch too large
   for memory is refused with its size, not killed by the kernel halfway through the first
   epoch. 0, or -1 with a message. */
static int check_batch_memory(PrtModel *m, const PrtTrajSet *train, long batch, char *err, size_t errlen) {
    double per = prt_model_tape_per_chunk(m, train->n, train->npts, train->dt, train->xv);
    long chunks = batch < train->n ? batch : train->n;
    /* the minibatch's recording, and a loss over a set in blocks beside it (model.h) */
    double need = per * (double)chunks + fmin(per * (double)train->n, (double)PRT_MODEL_TAPE_BUDGET);
    char what[160], b[32];
    snprintf(what, sizeof what, "a minibatch of %ld chunks, held on the tape for its gradient (%s a chunk, measured),", chunks,
             prt_format_bytes(per, b, sizeof b));
    return prt_mem_check(need, what, "reduce `batch` in the train block (or the substeps, or the networks' widths)", err,
                         errlen);
}

/* Generated (or loaded) data: training chunks, validation chunks, full test trajectories. */
typedef struct Data {
    PrtTrajSet train_full, valid_full, test, train, valid;
    bool velocities_estimated; /* a data file of positions only */
} Data;

/* 1 after reporting err if an output could not be written, else 0: the run goes on writing
   the others, and exits 1 at the end. */
static int output_failed(int rc, const char *err) {
    if (rc) fprintf(stderr, "physc: run: %s\n", err);
    return rc ? 1 : 0;
}

/* Returns 0, or -1 with a message; *err_at is where in the program it comes from, if anywhere.
   A --save-data file that cannot be written counts in *failed_outputs. ntrain (the data
   block's train, or fewer or more) changes the training set only: its trajectories start
   from the same states whatever their number (the first ntrain of a larger set's), and the
   validation and test sets stay the same (CHNN App. D.1's nested training sets). */
static int make_data(PrtSystem *ps, const System *sys, const Model *md, const PrtModelFamily *family, long seed, long ntrain,
                     const RunOptions *o, const char *const *names, Data *d, Loc *err_at, int *failed_outputs, char *err, size_t errlen) {
    const DataSettings *ds = &sys->data;
    int npts = ds->steps + 1;
    memset(d, 0, sizeof *d);
    if (ds->file && o->eval_from_chunk) {
        snprintf(err, errlen, "--eval-from chunk needs generated data: the test rollouts would run past the ends of %s's "
                 "trajectories", ds->file);
        return -1;
    }
    if (ds->file) {
        PrtTrajSet all;
        char warning[512];
        *err_at = ds->file_at;
        if (prt_trajset_load(ps, ds->file, &all, warning, sizeof warning, err, errlen) != 0) return -1;
        if (all.velocities_estimated && !family->positions_only) { /* it would learn the finite differences' errors as dynamics */
            snprintf(err, errlen, "model %s (%s) learns from velocities, and %s has positions only: give it the velocity "
                     "columns too (as physc simulate --out writes them), or use a model that learns from positions alone "
                     "(dtlnn)", md->name, family->title, ds->file);
            prt_trajset_free(&all);
            return -1;
        }
        d->velocities_estimated = all.velocities_estimated;
        if (warning[0]) fprintf(stderr, "physc: run: warning: %s\n", warning);
        /* the file's t column decides dt; a dt set beside it must say the same */
        if (ds->dt_at.first_line && fabs(all.dt - ds->dt) > 1e-9 * ds->dt) {
            *err_at = ds->dt_at;
            snprintf(err, errlen, "dt %g disagrees with %s, whose points are %.10g apart in t", ds->dt, ds->file, all.dt);
            prt_trajset_free(&all);
            return -1;
        }
        if (sys->eval.horizon_at.first_line && sys->eval.horizon > all.npts - 1) {
            *err_at = sys->eval.horizon_at;
            snprintf(err, errlen, "horizon (%d steps) is longer than the trajectories of %s (%d %s)", sys->eval.horizon,
                     ds->file, all.npts - 1, noun(all.npts - 1, "step", "steps"));
            prt_trajset_free(&all);
            return -1;
        }
        long need = (long)ds->ntrain + ds->nvalid + ds->ntest;
        *err_at = (Loc){0};
        if (ntrain > ds->ntrain) { /* more would take the validation trajectories */
            snprintf(err, errlen, "%ld training trajectories asked for; the data block's train takes %d of %s", ntrain,
                     ds->ntrain, ds->file);
            prt_trajset_free(&all);
            return -1;
        }
        if (all.n < need) {
            snprintf(err, errlen, "%s holds %ld %s; the data block asks for %ld (train + valid + test)", ds->file, all.n,
                     noun(all.n, "trajectory", "trajectories"), need);
            prt_trajset_free(&all);
            return -1;
        }
        PrtTrajSet *sets[3] = {&d->train_full, &d->valid_full, &d->test};
        long counts[3] = {ntrain, ds->nvalid, ds->ntest}, first = 0;
        for (int i = 0; i < 3; i++) {
            long *idx = prt_xalloc((size_t)(counts[i] + 1), sizeof(long), "trajectory indices");
            for (long j = 0; j < counts[i]; j++) idx[j] = first + j;
            *sets[i] = (PrtTrajSet){.n = counts[i], .npts = all.npts, .N = all.N, .W = all.W, .dt = all.dt,
                                    .velocities_estimated = all.velocities_estimated,
                                    .xv = prt_xalloc((size_t)((long)all.W * all.npts * counts[i] + 1), sizeof(double), "trajectories")};
            prt_trajset_gather(&all, idx, counts[i], sets[i]->xv);
            first += i == 0 ? ds->ntrain : counts[i]; /* validation and test where the data block puts them */
            free(idx);
        }
        prt_trajset_free(&all);
    } else {
        long counts[3] = {ntrain, ds->nvalid, ds->ntest};
        PrtTrajSet *sets[3] = {&d->train_full, &d->valid_full, &d->test};
        /* from a chunk's first state, the test trajectories run on for the later chunks' starts */
        int test_extra = o->eval_from_chunk ? (npts / ds->chunk - 1) * ds->chunk : 0;
        FILE *out = o->quiet ? NULL : stdout;
        static const char *const set_names[3] = {"train", "valid", "test"};
        PrtProgress progress;
        prt_progress_init(&progress, out, out && isatty(fileno(out)));
        prt_progress_start(&progress, "data");
        PrtOdeObserver observer = {data_progress, &progress, 0, 0};
        for (int i = 0; i < 3; i++) { /* each set from its own seed */
            int len = i == 2 ? npts + test_extra : npts;
            if (counts[i] == 0) {
                *sets[i] = (PrtTrajSet){.npts = len, .N = ps->N, .W = prt_state_rows(ps), .dt = ds->dt};
                continue;
            }
            prt_progress_rename(&progress, "data: %s trajectories", set_names[i]);
            PrtDataSolver solver = {prt_integrator_find(ds->solver), ds->substeps, ds->rtol, ds->atol, out ? &observer : NULL};
            if (prt_trajset_generate_by(ps, counts[i], len, ds->dt, &solver, (uint64_t)seed * 3 + (uint64_t)i, sets[i], err,
                                        errlen) != 0)
                return -1;
        }
        prt_progress_end(&progress); /* the data line goes where the progress was */
        if (test_extra > 0 && d->test.n > 0) {
            PrtRng wrng;
            prt_rng_seed(&wrng, (uint64_t)seed ^ 0x7e57c4a7u);
            PrtTrajSet windows;
            prt_trajset_windows(&d->test, ds->chunk, npts, &wrng, &windows);
            prt_trajset_free(&d->test);
            d->test = windows;
        }
    }
    if (ds->test_noise > 0 && d->test.n > 0) { /* the test observations noisy too: rollouts start from them and are measured against them */
        PrtRng test_noise;
        prt_rng_seed(&test_noise, (uint64_t)seed ^ 0x0015e7a3u);
        prt_trajset_add_noise(&d->test, ds->test_noise, &test_noise);
    }
    int window = train_window(family, ds);
    if (window > 0 && d->train_full.npts < window) {
        *err_at = ds->file ? ds->file_at : ds->steps_at;
        snprintf(err, errlen, "trajectories of %d points are too short for a %s model, which learns from %d consecutive points",
                 d->train_full.npts, family->title, window);
        return -1;
    }
    /* a two-step model's rollout is given its first points: a horizon within them predicts nothing */
    int horizon = sys->eval.horizon < d->test.npts - 1 ? sys->eval.horizon : d->test.npts - 1;
    if (family->start_points > 1 && d->test.n > 0 && horizon < family->start_points) {
        *err_at = sys->eval.horizon_at.first_line && horizon == sys->eval.horizon ? sys->eval.horizon_at
                  : ds->file                                                   ? ds->file_at
                                                                               : ds->steps_at;
        snprintf(err, errlen, "a horizon of %d %s predicts nothing: a %s model's rollouts start from the first %d observed "
                 "positions, so they need at least %d steps", horizon, noun(horizon, "step", "steps"), family->title,
                 family->start_points, family->start_points);
        return -1;
    }
    if (window == 0 && d->train_full.npts < ds->chunk) {
        snprintf(err, errlen, "trajectories of %d points are too short for chunks of %d", d->train_full.npts, ds->chunk);
        return -1;
    }
    if (o->save_data) {
        if (run_make_dirs(o->save_data, err, errlen) != 0) return -1;
        const char *files[3] = {"train.csv", "valid.csv", "test.csv"};
        const PrtTrajSet *sets[3] = {&d->train_full, &d->valid_full, &d->test};
        for (int i = 0; i < 3; i++) {
            char *p = report_path(o->save_data, files[i]);
            *failed_outputs += output_failed(prt_trajset_write_csv(sets[i], p, names, err, errlen), err);
            free(p);
        }
    }
    /* a stream for each draw, so that none depends on how many training trajectories the
       others took: the validation chunks and noise stay the same, and the first n training
       chunks (with their noise) are those of any larger training set */
    PrtRng train_chunks, valid_chunks, train_noise, valid_noise;
    prt_rng_seed(&train_chunks, (uint64_t)seed ^ 0x5eed0fc4u);
    prt_rng_seed(&valid_chunks, (uint64_t)seed ^ 0x7a11dc4au);
    prt_rng_seed(&train_noise, (uint64_t)seed ^ 0x0015e7a1u);
    prt_rng_seed(&valid_noise, (uint64_t)seed ^ 0x0015e7a2u);
    if (window > 0) {
        /* every window of the family's length, cut from the noisy trajectories (overlapping
           windows share their noisy points, as observations do) */
        PrtTrajSet *full[2] = {&d->train_full, &d->valid_full}, *cut[2] = {&d->train, &d->valid};
        PrtRng *noise[2] = {&train_noise, &valid_noise};
        for (int i = 0; i < 2; i++) {
            PrtTrajSet noisy = *full[i];
            noisy.xv = prt_xalloc((size_t)((long)noisy.W * noisy.npts * noisy.n + 1), sizeof(double), "trajectories");
            memcpy(noisy.xv, full[i]->xv, sizeof(double) * (size_t)((long)noisy.W * noisy.npts * noisy.n));
            if (ds->noise > 0) prt_trajset_add_noise(&noisy, ds->noise, noise[i]);
            prt_trajset_all_windows(&noisy, window, cut[i]);
            prt_trajset_free(&noisy);
        }
        return 0;
    }
    prt_trajset_chunks(&d->train_full, ds->chunk, &train_chunks, &d->train);
    if (d->valid_full.n) prt_trajset_chunks(&d->valid_full, ds->chunk, &valid_chunks, &d->valid);
    else d->valid = (PrtTrajSet){.npts = ds->chunk, .N = ps->N, .W = prt_state_rows(ps), .dt = d->train_full.dt};
    if (ds->noise > 0) {
        prt_trajset_add_noise(&d->train, ds->noise, &train_noise);
        if (d->valid.n) prt_trajset_add_noise(&d->valid, ds->noise, &valid_noise);
    }
    return 0;
}

static void data_free(Data *d) {
    prt_trajset_free(&d->train_full), prt_trajset_free(&d->valid_full), prt_trajset_free(&d->test);
    prt_trajset_free(&d->train), prt_trajset_free(&d->valid);
}

/* The model whose run the folder holds (the lock file's record `was` names the last one that
   wrote there, a finished run's metrics.json its own), into name; false if neither says. */
static bool run_model_name(const char *dir, char *name, size_t len);
static bool folder_model(const char *dir, const char *was, char *name, size_t len) {
    if (!strncmp(was, "model ", 6)) {
        snprintf(name, len, "%s", was + 6);
        return true;
    }
    return run_model_name(dir, name, len);
}

/* What the folder's checkpoint (if any) allows: a new run replaces no run there, finished,
   unfinished or unreadable, unless forced; a resumed run continues only its own model's
   run, and says how it continues. 0: start afresh; 1: continue the checkpoint (asked, or
   the folder holds this very run finished: evaluated again, nothing trained); -1: refused. */
static int check_previous(const char *dir, const char *lock_was, const char *ckpt, const char *model, const RunOptions *o,
                          const PrtFingerprint *fp, long epochs, FILE *out, char *err, size_t errlen) {
    if (o->force) return 0;
    if (access(ckpt, F_OK) != 0) {
        if (!o->resume) return 0;
        snprintf(err, errlen, "--resume: there is no run to continue: %s does not exist (leave out --resume to start "
                 "one)", ckpt);
        return -1;
    }
    PrtCkptHeader h;
    double first;
    PrtCkptArray loss = {"loss", &first, -1}; /* any length: that of the run that wrote it */
    char why[512];
    if (prt_ckpt_read_any(ckpt, &h, &loss, 1, why, sizeof why) != 0) {
        if (o->resume) return 1; /* the training loop refuses it with the same message */
        snprintf(err, errlen, "%s; --force starts afresh, replacing it", why);
        return -1;
    }
    char was[256];
    bool other = folder_model(dir, lock_was, was, sizeof was) && strcmp(was, model) != 0;
    if (other) {
        snprintf(err, errlen, "%s holds %s run of model %s (epoch %ld of %ld), not of %s: --force replaces it, or --out "
                 "names another folder%s%s", dir, h.epoch >= loss.len ? "a finished" : "an unfinished", was, h.epoch,
                 loss.len, model, o->resume ? "; --model " : "", o->resume ? was : "");
        if (o->resume) snprintf(err + strlen(err), errlen - strlen(err), " --resume continues it");
        return -1;
    }
    bool same_run = h.epoch >= loss.len && loss.len == epochs &&
                    prt_ckpt_check_fingerprint(ckpt, h.version, &h.fp, fp, why, sizeof why) == 0;
    if (!o->resume && same_run) {
        if (out) fprintf(out, "%s holds this very run, finished (%ld %s): evaluating it again (--force trains afresh)\n",
                         dir, loss.len, noun(loss.len, "epoch", "epochs"));
        return 1;
    }
    if (!o->resume && h.epoch >= loss.len) {
        snprintf(err, errlen, "%s holds a finished run of model %s (%ld %s): --resume --epochs N (more than %ld) extends "
                 "it, --force replaces it, or --out names another folder", dir, model, loss.len,
                 noun(loss.len, "epoch", "epochs"), loss.len);
        return -1;
    }
    if (!o->resume) {
        snprintf(err, errlen, "%s holds an unfinished run (epoch %ld of %ld): --resume continues it, --force starts "
                 "afresh, replacing it", ckpt, h.epoch, loss.len);
        return -1;
    }
    if (prt_ckpt_check_fingerprint(ckpt, h.version, &h.fp, fp, why, sizeof why) != 0) {
        snprintf(err, errlen, "%s; --force starts afresh, replacing it", why);
        return -1;
    }
    if (out && h.fp.part[PRT_FP_SOURCE] != fp->part[PRT_FP_SOURCE])
        fprintf(out, "resume: the program changed since the checkpoint in its comments or layout only\n");
    if (out && h.epoch >= loss.len && epochs > loss.len)
        fprintf(out, "resume: extending the finished run of %ld %s to %ld (the schedule continues as that of a run "
                "of %ld epochs)\n", loss.len, noun(loss.len, "epoch", "epochs"), epochs, epochs);
    return 1;
}

/* The model a run folder's metrics.json names ("model": "x"), into name; false if none. */
static bool run_model_name(const char *dir, char *name, size_t len) {
    char *mp = report_path(dir, "metrics.json");
    char err[256];
    FILE *f = prt_fopen_input(mp, NULL, err, sizeof err);
    free(mp);
    if (!f) return false;
    char line[512];
    bool found = false;
    while (!found && fgets(line, sizeof line, f)) {
        const char *p = strstr(line, "\"model\": \"");
        if (p != line + 2) continue;
        p += 10;
        const char *q = strchr(p, '"');
        if (q && (size_t)(q - p) < len) memcpy(name, p, (size_t)(q - p)), name[q - p] = 0, found = true;
    }
    fclose(f);
    return found;
}

/* Takes the training of a finished run in `from` if its model trains exactly as md (the
   fingerprints without names and prediction steps agree): its checkpoint, refingerprinted,
   becomes ckpt. 1 if taken, else 0 with why in err (another training, or a checkpoint that
   cannot be read, is unfinished or cannot be copied). */
static int adopt_training(const char *from, const char *file, System *sys, const Compiled *c, const Model *md,
                          const PrtModelConfig *cfg, bool f32, long seed, long ntrain, long threads, long epochs,
                          const PrtFingerprint *fp, const char *ckpt, char *err, size_t errlen) {
    char name[256];
    const Model *mda = NULL;
    PrtModelConfig cfga;
    Loc where;
    if (!run_model_name(from, name, sizeof name) || trained_pick(sys, name, &mda) ||
        !trained_config(sys, mda, f32, &cfga, &where, err, errlen)) {
        snprintf(err, errlen, "%s holds no finished run of a model of this program", from);
        return 0;
    }
    PrtFingerprint ta = fingerprint(file, sys, c, mda, &cfga, seed, ntrain, threads, true);
    PrtFingerprint tb = fingerprint(file, sys, c, md, cfg, seed, ntrain, threads, true);
    if (memcmp(ta.part, tb.part, sizeof(uint64_t) * PRT_FP_SOURCE) != 0) {
        snprintf(err, errlen, "%s's model %s does not train as %s (another term, setting, step, seed or data)", from, name,
                 md->name);
        return 0;
    }
    PrtFingerprint was = fingerprint(file, sys, c, mda, &cfga, seed, ntrain, threads, false);
    char *src = report_path(from, "checkpoint.bin");
    int rc = prt_train_adopt(src, &was, ckpt, fp, trained_nparams(sys, cfg), (int)epochs, err, errlen);
    free(src);
    return rc == 0 ? 1 : 0;
}

/* Copies every regular file of the folder `from` into `to` (each written atomically): a
   finished run's report, taken as another folder's. 0, or -1 with why in err. */
static int copy_run_files(const char *from, const char *to, char *err, size_t errlen) {
    DIR *d = opendir(from);
    if (!d) return prt_fail(err, errlen, "cannot read %s: %s", from, strerror(errno));
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d))) {
        char *src = report_path(from, e->d_name), *dst = report_path(to, e->d_name);
        struct stat st;
        size_t len = strlen(e->d_name);
        bool temporary = (len > 4 && !strcmp(e->d_name + len - 4, ".tmp")) /* a write in progress */
                         || !strcmp(e->d_name, PRT_RUN_LOCK_FILE);         /* the other folder's, not this one's */
        if (!temporary && stat(src, &st) == 0 && S_ISREG(st.st_mode)) {
            FILE *in = fopen(src, "rb");
            PrtAtomicFile a;
            if (!in) rc = prt_fail(err, errlen, "cannot read %s: %s", src, strerror(errno));
            else if (prt_atomic_open(&a, dst, err, errlen) != 0) rc = -1;
            else {
                char buf[1 << 16];
                size_t got;
                while ((got = fread(buf, 1, sizeof buf, in)) > 0) fwrite(buf, 1, got, a.f);
                if (ferror(in)) {
                    prt_atomic_abort(&a);
                    rc = prt_fail(err, errlen, "cannot read %s: %s", src, strerror(errno));
                } else rc = prt_atomic_commit(&a, err, errlen);
            }
            if (in) fclose(in);
        }
        free(src), free(dst);
    }
    closedir(d);
    return rc;
}

/* Keeps why the run failed for the caller (physc compare's table), if it asked; returns 1. */
static int note_failure(const RunOptions *o, const char *why) {
    if (o->failure && o->failure_len) snprintf(o->failure, o->failure_len, "%s", why);
    return 1;
}

/* A finished run of this fingerprint and length, evaluated as asked, whose report is there:
   physc compare takes its files as they are. A changed system, data, model, seed, size or
   training setting does not match (comments and layout may differ, as on --resume); nor does the metrics.json of another run (one whose
   retraining failed before it wrote its own): its final training loss is not the
   checkpoint's. */
static bool finished_run_matches(const char *dir, const char *ckpt, const PrtFingerprint *fp, long epochs,
                                 bool eval_from_chunk) {
    PrtCkptHeader h;
    double *losses = prt_xalloc((size_t)epochs, sizeof(double), "the loss history");
    PrtCkptArray loss = {"loss", losses, -epochs};
    char why[512];
    bool same = access(ckpt, R_OK) == 0 && prt_ckpt_read_any(ckpt, &h, &loss, 1, why, sizeof why) == 0 &&
                h.epoch == loss.len && loss.len == epochs &&
                memcmp(h.fp.part, fp->part, sizeof(uint64_t) * PRT_FP_SOURCE) == 0; /* the text alone may differ,
                                                                                        as on --resume */
    char want[2][64];
    if (same) {
        snprintf(want[0], sizeof want[0], "  \"final_train_loss\": %.10g,\n", losses[epochs - 1]);
        snprintf(want[1], sizeof want[1], "  \"eval_from\": \"%s\",\n", eval_from_chunk ? "chunk" : "initial");
    }
    free(losses);
    char *mp = report_path(dir, "metrics.json");
    char err[256];
    FILE *f = same ? prt_fopen_input(mp, NULL, err, sizeof err) : NULL;
    free(mp);
    if (!f) return false;
    char line[256];
    bool seen[2] = {false, false};
    while (fgets(line, sizeof line, f))
        for (int i = 0; i < 2; i++) seen[i] |= !strcmp(line, want[i]);
    fclose(f);
    return seen[0] && seen[1];
}

/* The most dopri5 steps a test rollout may take per output interval on average (and ten
   times as many in any one interval). A trained
   model needs a few (metrics.json's rollout_steps: 5.4 per interval for the 3-pendulum's CHNN
   at 200 epochs, 2.0 for the magnet pendulum's); one that needs ten times more has learned a
   stiff field, and rolling it out would take hours (an LNN at 100 states costs milliseconds
   per evaluation) for figures of a model nobody can use. */
enum { ROLLOUT_MAX_STEPS = 50 };

int run_model(System *sys, const RunOptions *o) {
    char err[1024];
    const Model *md = NULL;
    const char *why = trained_pick(sys, o->model, &md);
    if (why) {
        fprintf(stderr, "physc: run: %s%s%s\n", why, o->model ? ": " : "", o->model ? o->model : "");
        if (sys->nmodels) {
            fprintf(stderr, "  (models:");
            for (int i = 0; i < sys->nmodels; i++) fprintf(stderr, " %s", sys->models[i].name);
            fprintf(stderr, ")\n");
        }
        return 1;
    }
    const char *precision = o->precision ? o->precision : sys->train.precision;
    if (strcmp(precision, "f32") && strcmp(precision, "f64")) {
        fprintf(stderr, "physc: run: --precision takes f32 or f64, not '%s'\n", precision);
        return 2;
    }
    Loc where;
    PrtModelConfig cfg;
    bool supported = trained_config(sys, md, !strcmp(precision, "f32"), &cfg, &where, err, sizeof err);
    if (supported && !check_settings(sys, &where, err, sizeof err)) supported = false;
    if (!supported) {
        if (where.first_line > 0 && o->diags) diag_error(o->diags, where, "%s", err);
        else fprintf(stderr, "physc: run: %s\n", err);
        return note_failure(o, err);
    }
    long epochs = o->epochs > 0 ? o->epochs : md->epochs > 0 ? md->epochs : sys->train.epochs;
    long seed = o->seed >= 0 ? o->seed : sys->data.seed;
    long threads = o->threads > 0 ? o->threads : sys->train.threads, ntrain = o->ntrain > 0 ? o->ntrain : sys->data.ntrain;
    if (check_memory(sys, &cfg, ntrain, epochs, threads, o->eval_from_chunk, err, sizeof err) != 0) {
        fprintf(stderr, "physc: run: %s\n", err);
        return note_failure(o, err);
    }
    FILE *out = o->quiet ? NULL : stdout;

    double t0 = now_s();
    Compiled c;
    if (!compiled_open_model(sys, &c, 2, md, err, sizeof err)) {
        fprintf(stderr, "physc: run: %s\n", err);
        return note_failure(o, err);
    }
    double compile_ms = (now_s() - t0) * 1e3;
    prt_blas_set_threads((int)threads); /* (after the JIT: OpenBLAS's idle workers would spin through it) */
    if (out) { /* (flushed: output to a file or pipe is block-buffered, and making a large system's data takes long) */
        fprintf(out, "system %s: %d %s, %d %s; %d %s compiled in %.0f ms (lowering %.1f ms, %s %.0f ms)\n", sys->name,
                c.ps.N, noun(c.ps.N, "coordinate", "coordinates"), c.ps.C, noun(c.ps.C, "constraint", "constraints"), c.k.n,
                noun(c.k.n, "kernel", "kernels"), compile_ms, c.lower_ms,
                jit_from_cache(c.jit) ? "code from the cache" : "LLVM", c.jit_ms);
        fflush(out);
    }
    char *dir = NULL;
    if (o->out_dir) dir = strcpy(prt_xalloc(strlen(o->out_dir) + 1, 1, "a path"), o->out_dir);
    else {
        size_t len = strlen(sys->name) + strlen(md->name) + 8;
        dir = prt_xalloc(len, 1, "a path");
        snprintf(dir, len, "runs/%s-%s", sys->name, md->name);
    }
    int rc = 1;
    char *ckpt = NULL;
    Data data = {0};
    PrtModel m = {0};
    double *theta = NULL;
    PrtTrainResult tr = {0};
    PrtEvalResult ev = {0}, ev_known = {0};
    const char *const *names = c.ps.names;
    Loc err_at = {0}; /* where in the program the failure comes from, if anywhere */
    PrtRunLock lock = {-1}; /* the folder's, while this run writes it */
    if (run_make_dirs(dir, err, sizeof err) != 0) goto fail;
    char holder[256], was[256];
    if (prt_run_lock(&lock, dir, was, sizeof was, err, sizeof err) != 0) goto fail;
    ckpt = report_path(dir, "checkpoint.bin");
    PrtFingerprint fp = fingerprint(o->file, sys, &c, md, &cfg, seed, ntrain, threads, false);
    if (o->reuse_finished && finished_run_matches(dir, ckpt, &fp, epochs, o->eval_from_chunk)) {
        if (out) fprintf(out, "reusing finished run %s\n", dir);
        rc = 0;
        goto done;
    }
    if (o->reuse_from && !o->force && strcmp(o->reuse_from, dir) != 0) {
        char *theirs = report_path(o->reuse_from, "checkpoint.bin");
        bool match = finished_run_matches(o->reuse_from, theirs, &fp, epochs, o->eval_from_chunk);
        free(theirs);
        if (match) {
            if (copy_run_files(o->reuse_from, dir, err, sizeof err) != 0) goto fail;
            if (out) fprintf(out, "reusing finished run %s (the same program, data, model and training; copied to %s)\n",
                             o->reuse_from, dir);
            rc = 0;
            goto done;
        }
    }
    int previous = check_previous(dir, was, ckpt, md->name, o, &fp, epochs, out, err, sizeof err);
    if (previous < 0) goto fail;
    bool resume = previous == 1;
    snprintf(holder, sizeof holder, "model %s", md->name);
    prt_run_lock_record(&lock, holder); /* the folder is this run's now */
    bool adopted = false; /* the training of a run whose model trains as this one: evaluate it */
    for (int i = 0; i < o->ntrained_by && !adopted && !resume; i++) {
        char reason[512];
        adopted = adopt_training(o->trained_by[i], o->file, sys, &c, md, &cfg, !strcmp(precision, "f32"), seed, ntrain,
                                 threads, epochs, &fp, ckpt, reason, sizeof reason) == 1;
        if (adopted && out) fprintf(out, "training: that of %s (the same training; %s predicts with %s)\n", o->trained_by[i],
                                    md->name, prt_integrators[cfg.predict].name);
        if (!adopted && o->trained_by_required) {
            snprintf(err, sizeof err, "--trained-by: %s", reason);
            goto fail;
        }
    }
    if (prt_model_open(&m, &c.ps, &cfg, err, sizeof err) != 0) { /* what the family refuses, before any data is made */
        err_at = md->loc;
        goto fail;
    }

    t0 = now_s();
    int failed_outputs = 0; /* each reported as it happens; the run exits 1 at the end */
    if (make_data(&c.ps, sys, md, cfg.family, seed, ntrain, o, names, &data, &err_at, &failed_outputs, err, sizeof err) != 0) goto fail;
    double data_s = now_s() - t0;
    const DataSettings *ds = &sys->data;
    if (out) {
        if (ds->file)
            fprintf(out, "data: %s%s: ", ds->file,
                    data.velocities_estimated ? " (positions only; velocities by second-order finite differences)" : "");
        else if (!strcmp(ds->solver, "dopri5"))
            fprintf(out, "data: dopri5 (rtol %g, atol %g) from seed %ld in %.2f s: ", ds->rtol, ds->atol, seed, data_s);
        else
            fprintf(out, "data: %s, %d %s of dt / %d per interval, from seed %ld in %.2f s: ", ds->solver, ds->substeps,
                    noun(ds->substeps, "step", "steps"), ds->substeps, seed, data_s);
        if (train_window(cfg.family, &sys->data) > 0)
            fprintf(out, "%ld train %s (all %ld windows of %d points), ", data.train_full.n,
                    noun(data.train_full.n, "trajectory", "trajectories"), data.train.n, train_window(cfg.family, &sys->data));
        else
            fprintf(out, "%ld train %s (one random chunk of %d points each), ", data.train.n,
                    noun(data.train.n, "trajectory", "trajectories"), ds->chunk);
        fprintf(out, "%ld valid, %ld test of %d points%s, dt %g%s\n", data.valid_full.n, data.test.n, data.test.npts,
                o->eval_from_chunk ? " from a random chunk's first state" : "", data.train.dt,
                ds->noise > 0 ? (ds->test_noise > 0 ? ", with noise (test too)" : ", with noise")
                              : ds->test_noise > 0 ? ", with noise on the test trajectories" : "");
        fflush(out);
    }

    theta = prt_xalloc((size_t)m.nparams, sizeof(double), "the parameters");
    PrtTrainOptions to = {
        .epochs = (int)epochs, .batch = sys->train.batch, .lr = md->lr > 0 ? md->lr : sys->train.lr,
        .weight_decay = sys->train.weight_decay, .adam_eps = adam_eps_of(sys, md), .adam = !strcmp(sys->train.optimizer, "adam"), .cosine = !strcmp(sys->train.schedule, "cosine"), .seed = (uint64_t)seed,
        .checkpoint_every = sys->train.checkpoint_every, .checkpoint = ckpt, .resume = resume || adopted,
        .fingerprint = fp, .threads = (int)threads, .progress = out, .tty = out && isatty(fileno(out)),
        .stop = &interrupted, .stop_after = (int)o->stop_after};
    const PrtMlp *mlp = &cfg.net[0];
    if (out) {
        fprintf(out, "model %s (%s): MLP", md->name, model_kind_name(md->kind));
        for (int i = 0; i < cfg.nnets; i++) {
            fprintf(out, "%s %s %d", i ? " and" : "", cfg.family->net_role(&cfg, i), cfg.net[i].size[0]);
            for (int l = 1; l <= cfg.net[i].nlayers; l++) fprintf(out, "-%d", cfg.net[i].size[l]);
        }
    }
    char steps[48] = "";
    if (cfg.substeps > 1) snprintf(steps, sizeof steps, " (%d steps per interval)", cfg.substeps);
    if (out)
        fprintf(out, " %s %s, %ld parameters; %ld %s, batch %d, %s%s, lr %g, %s loss, %ld thread%s -> %s/\n",
                mlp->act == PRT_ACT_TANH ? "tanh" : mlp->act == PRT_ACT_SOFTPLUS ? "softplus" : "silu", mlp->f32 ? "f32" : "f64",
                m.nparams, epochs, noun(epochs, "epoch", "epochs"), to.batch, prt_integrators[cfg.integrator].name, steps,
                to.lr,
                sys->train.loss, threads, threads == 1 ? "" : "s", dir);
    /* a two-step scheme (dtlnn) is not an integrator of the model's ODE: say what it trains on and how it predicts */
    bool two_step = cfg.family->start_points > 1;
    char newton_note[80] = "";
    bool newton = cfg.predict == PRT_INT_DISCRETE_GRADIENT;
    if (newton) snprintf(newton_note, sizeof newton_note, " (Newton's method, to steps below %g of 1 + |q|)", PRT_DISCRETE_STEP_TOL);
    if (out && two_step)
        fprintf(out, "scheme: trained through %s on every window of %d consecutive observed points; predicts with %s%s from "
                "each test trajectory's first %d positions\n", prt_integrators[cfg.integrator].name,
                cfg.family->train_window, prt_integrators[cfg.predict].name,
                newton ? newton_note : "", cfg.family->start_points);
    PrtProgress phase; /* the losses over the whole training set below, each a phase */
    prt_progress_init(&phase, out, out && isatty(fileno(out)));
    m.progress = &phase;
    char data_note[1024];
    prt_progress_start(&phase, "sizes from the training data");
    if (data.train.n && prt_model_from_data(&m, data.train.n, data.train.npts, data.train.dt, data.train.xv, data_note,
                                            sizeof data_note, err, sizeof err) != 0)
        goto fail;
    if (out && data.train.n && data_note[0]) fprintf(out, "%s\n", data_note);
    prt_progress_start(&phase, "loss weights: the known terms alone on the training data");
    if (data.train.n && prt_model_balance(&m, data.train.n, data.train.npts, data.train.dt, data.train.xv, err, sizeof err) != 0)
        goto fail;
    if (out && cfg.balance_loss)
        fprintf(out, "loss weights balanced: each state group's squared error over its own under the known terms alone "
                "(so that they score 1 on every group)\n");
    if (data.train.n && check_batch_memory(&m, &data.train, to.batch, err, sizeof err) != 0) goto fail;
    /* the loss the system itself reaches under the training integrator: if the model's loss
       ends near it, the integrator's step (not the model) limits what the data can teach */
    prt_progress_start(&phase, "integrator floor: the system's own dynamics on the training data");
    double integrator_floor =
        data.train.n ? prt_model_set_loss(&m, NULL, true, data.train.n, data.train.npts, data.train.dt, data.train.xv)
                     : NAN;
    if (out && data.train.n && !isfinite(integrator_floor))
        fprintf(out, "integrator floor: none: the system's own dynamics under %s%s diverge on some training chunks (their "
                "loss is not finite): this step cannot follow the system, whatever a model learns; `train { substeps N }` "
                "takes N steps per interval\n", prt_integrators[cfg.integrator].name, steps);
    else if (out && data.train.n) {
        fprintf(out, "integrator floor: the system's own dynamics under %s%s reach a training loss of %.3e%s%s\n",
                prt_integrators[cfg.integrator].name, steps, integrator_floor, ds->noise > 0 ? " (with the data's noise)" : "",
                /* (model_discrete.c's truth_loss: grad V at the midpoint stands in for the true V's discrete gradient) */
                cfg.integrator == PRT_INT_DISCRETE_GRADIENT
                    ? "; the true V's discrete gradient taken as grad V at the midpoint (exact for a quadratic V)" : "");
        if (cfg.family->zero_theta_is_baseline) { /* theta = 0: no force, or the known terms alone; its loss is the scale */
            double *zero = prt_xcalloc((size_t)m.nparams, sizeof(double), "the parameters");
            prt_progress_start(&phase, "the loss without the learned terms on the training data");
            double none = prt_model_set_loss(&m, zero, false, data.train.n, data.train.npts, data.train.dt, data.train.xv);
            free(zero);
            if (two_step) {
                if (none > 0 && !(integrator_floor < 0.1 * none)) /* (none = 0: the data at rest, no scale) */
                    fprintf(out, "  (that is %.2g of the loss of a model with no force: %s, not the network, bounds the fit)\n",
                            integrator_floor / none, ds->noise > 0 ? "the data's noise or its step dt" : "the data's step dt");
            } else {
                /* what the learned terms can gain under this step: a floor near the known terms' loss means
                   the step's own error hides the corrections */
                char ratio[48] = "above a floor of 0"; /* (no ratio to a floor of 0) */
                if (integrator_floor > 0) snprintf(ratio, sizeof ratio, "%.3g x the floor", none / integrator_floor);
                fprintf(out, "known terms alone (no learned correction): a training loss of %.3e, %s: the most "
                        "a learned correction can gain under this step%s\n", none, ratio,
                        none > 0 && !(integrator_floor < 0.1 * none) ? "; the step's own error hides the corrections: `train { substeps N }` "
                                                          "takes N steps per interval" : "");
            }
        } else if (!two_step) {
            long len = (long)data.train.W * data.train.n * data.train.npts;
            double scale = 0; /* the data's mean |component|: a floor near it means the step fails the system itself */
            for (long i = 0; i < len; i++) scale += fabs(data.train.xv[i]);
            scale /= (double)len;
            if (scale > 0 && !(integrator_floor < 0.1 * scale)) /* (scale 0: every component 0, at rest) */
                fprintf(out, "  (that is %.2g of the data's mean |component|: one step per interval cannot follow the system on some "
                        "chunks; `train { substeps N }` takes N steps per interval)\n", integrator_floor / scale);
        }
    }
    char blas[256];
    prt_blas_describe(blas, sizeof blas);
    if (out) fprintf(out, "BLAS: %s\n", blas);
    struct sigaction old_stop[NSTOP_SIGNALS], old_pipe;
    catch_stop_signals(old_stop, &old_pipe);
    PrtTrainStatus st = prt_train(&m, theta, &data.train, &data.valid, &to, &tr, err, sizeof err);
    restore_stop_signals(old_stop, &old_pipe);
    failed_outputs += tr.checkpoint_failures; /* reported by prt_train */
    if (st == PRT_TRAIN_FAILED || st == PRT_TRAIN_DIVERGED) goto fail;
    if (st == PRT_TRAIN_INTERRUPTED && tr.checkpoint_failures) {
        fprintf(stderr, "physc: run: stopped after epoch %d of %ld; the checkpoint could not be written (see above)\n",
                tr.epochs_done, epochs);
        rc = note_failure(o, "stopped; the checkpoint could not be written");
        goto done;
    }
    if (st == PRT_TRAIN_INTERRUPTED) {
        fprintf(stderr, "physc: run: stopped after epoch %d of %ld%s; the checkpoint is in %s/ (continue with --resume)\n",
                tr.epochs_done, epochs, interrupted == SIGTERM ? " (SIGTERM)" : interrupted == SIGHUP ? " (SIGHUP)"
                                        : interrupted ? " (interrupted)" : "", dir);
        rc = interrupted ? 128 + interrupted : 0;
        goto done;
    }
    PrtCkptArray params = {"theta", theta, m.nparams};
    char *pp = report_path(dir, "params.bin");
    PrtCkptHeader ph = {.fp = fp, .epoch = tr.epochs_done};
    failed_outputs += output_failed(prt_ckpt_write(pp, &ph, &params, 1, err, sizeof err), err);
    free(pp);

    /* the rollouts in f64 whatever the training precision: dopri5 at rtol 1e-7 would step on
       float rounding noise, and the parameters are kept in f64 anyway */
    for (int i = 0; i < m.cfg.nnets; i++) m.cfg.net[i].f32 = false;
    t0 = now_s();
    bool tty = out && isatty(fileno(out));
    EvalProgress progress = {0};
    prt_progress_init(&progress.p, out, tty);
    prt_progress_start(&progress.p, "evaluation");
    PrtOdeObserver observer = {eval_progress, &progress, 0, 0};
    if (out) m.rollout_observer = &observer;
    m.rollout_max_steps = ROLLOUT_MAX_STEPS;
    bool evaluate = data.test.n > 0;
    if (evaluate && prt_evaluate(&m, theta, &data.test, sys->eval.horizon, sys->eval.rtol, sys->eval.atol,
                                 (uint64_t)seed + 99, &ev, err, sizeof err) != 0)
        goto fail;
    for (int id = 0; !evaluate && id < PRT_NMETRICS; id++) /* no test set: every figure is null, none 0 */
        ev.value[id] = ev.mean[id] = ev.ci[id][0] = ev.ci[id][1] = ev.squares[id] = NAN;
    double eval_s = now_s() - t0;
    m.rollout_observer = NULL;
    prt_progress_end(&progress.p);
    int done = tr.epochs_done - tr.resumed_from;
    if (out) fprintf(out, "trained %d %s in %.1f s (%.3f s/epoch)\n", done, noun(done, "epoch", "epochs"), tr.seconds, done ? tr.seconds / done : 0.0);
    if (out && tr.epochs_done > 0 && integrator_floor > 0) { /* is the step what limits the fit? */
        double final_loss = tr.loss[tr.epochs_done - 1], ratio = final_loss / integrator_floor;
        /* below the floor the model fits the data better than the true dynamics under the step
           do: it has absorbed the step's error (or the noise), which no step size explains */
        const char *note = ratio < 0.5  ? " (below it: the model absorbs the training step's error or the data's noise)"
                          : ratio >= 1.5 ? ""
                          : two_step     ? " (the training step or the data's noise, not the network, limits the fit)"
                                         : " (the training step, not the network, limits the fit; `train { substeps N }` lowers the floor)";
        fprintf(out, "final training loss %.3e: %.3gx the integrator floor%s\n", final_loss, ratio, note);
    }
    if (out && tr.epochs_done > 0 && cfg.family->loss_groups && cfg.family->zero_theta_is_baseline && data.train.n) {
        /* which part of the state the learned terms fixed: each group against the known terms alone */
        double mse[PRT_MODEL_MAX_GROUPS], none[PRT_MODEL_MAX_GROUPS];
        const char *group[PRT_MODEL_MAX_GROUPS];
        double *zero = prt_xcalloc((size_t)m.nparams, sizeof(double), "the parameters");
        const PrtTrajSet *ts = &data.train;
        prt_progress_start(&phase, "training error by state group: the trained model");
        int ng = cfg.family->loss_groups(&m, theta, ts->n, ts->npts, ts->dt, ts->xv, mse, group);
        prt_progress_start(&phase, "training error by state group: the known terms alone");
        cfg.family->loss_groups(&m, zero, ts->n, ts->npts, ts->dt, ts->xv, none, group);
        free(zero);
        fprintf(out, "training error by state group, trained / known terms alone:");
        for (int g = 0; g < ng; g++)
            if (!isnan(mse[g]) && none[g] > 0) fprintf(out, "%s %s %.3g (%.2e / %.2e)", g ? "," : "", group[g], mse[g] / none[g], mse[g], none[g]);
            else if (!isnan(mse[g])) fprintf(out, "%s %s %.2e (the known terms alone: 0)", g ? "," : "", group[g], mse[g]);
        fputc('\n', out);
    }
    if (out && !evaluate) fprintf(out, "no test trajectories (data block: test 0): evaluation skipped\n");
    if (out && evaluate) {
        char how[96];
        if (two_step)
            snprintf(how, sizeof how, "%s from the first %d positions", prt_integrators[cfg.predict].name, cfg.family->start_points);
        else if (cfg.family->fixed_step_rollout)
            snprintf(how, sizeof how, "%s, %d %s an interval", prt_integrators[cfg.predict].name, cfg.substeps,
                     noun(cfg.substeps, "step", "steps"));
        else
            snprintf(how, sizeof how, "dopri5 rtol %g, atol %g", sys->eval.rtol, sys->eval.atol);
        fprintf(out, "evaluation on %ld test %s, %d %s (%s), %.2f s%s:\n", ev.n, noun(ev.n, "trajectory", "trajectories"),
                ev.nt - 1, noun(ev.nt - 1, "step", "steps"), how, eval_s,
                ev.rollout_failed || ev.nonfinite[0] ? " -- FAILED (below)" : "");
        prt_eval_print_table(out, "metric", &ev);
    }
    /* a model of known terms and a learned correction (liet2): the known terms alone on the same
       test rollouts (the Lie T2 paper's "no corrections" row), so the gain is measured in one run */
    bool known_baseline = evaluate && cfg.family->zero_theta_is_baseline && md->nknown > 0;
    if (known_baseline) {
        double *zero = prt_xcalloc((size_t)m.nparams, sizeof(double), "the parameters");
        double k0 = now_s();
        progress.reached = 0, progress.what = "the known terms' rollouts";
        prt_progress_start(&progress.p, "evaluation");
        if (out) m.rollout_observer = &observer;
        int krc = prt_evaluate(&m, zero, &data.test, sys->eval.horizon, sys->eval.rtol, sys->eval.atol, (uint64_t)seed + 99,
                               &ev_known, err, sizeof err);
        m.rollout_observer = NULL;
        free(zero);
        if (krc != 0) goto fail;
        prt_progress_end(&progress.p);
        if (out) print_known_baseline(out, &ev, &ev_known, now_s() - k0);
    }
    if (out && evaluate) print_so3_bodies(out, &c.ps, &ev, known_baseline ? &ev_known : NULL);
    Report rep = {.sys = sys, .model = md, .m = &m, .theta = theta, .tr = &tr, .ev = &ev,
                  .ev_known = known_baseline ? &ev_known : NULL, .epochs = epochs, .seed = seed,
                  .ntrain = data.train_full.n, .threads = threads, .precision = precision, .blas = blas,
                  .eval_from = o->eval_from_chunk ? "chunk" : "initial", .compile_ms = compile_ms, .data_s = data_s, .eval_s = eval_s,
                  .integrator_floor = integrator_floor};
    char *mp = report_path(dir, "metrics.json");
    failed_outputs += output_failed(report_write_metrics(mp, &rep, err, sizeof err), err);
    free(mp);
    if (evaluate) {
        char *tp = report_path(dir, "trajectories.csv");
        failed_outputs += output_failed(report_write_trajectories(tp, &rep, err, sizeof err), err);
        free(tp);
        char *sp = report_path(dir, "errors.csv");
        failed_outputs += output_failed(report_write_error_series(sp, &rep, err, sizeof err), err);
        free(sp);
        char *fp1 = report_path(dir, "first-rollout.csv");
        failed_outputs += output_failed(report_write_first_rollout(fp1, &rep, &data.test, names, err, sizeof err), err);
        free(fp1);
    }
    char plots[128] = "";
    if (tr.epochs_done > 0) {
        int lrc = report_write_loss_plot(dir, &rep, err, sizeof err);
        failed_outputs += output_failed(lrc, err);
        if (!lrc) strcpy(plots, ", loss.svg");
    }
    if (evaluate)
        failed_outputs += output_failed(report_write_plots(dir, &rep, &data.test, names, plots, sizeof plots, err, sizeof err), err);
    if (evaluate && !ev.rollout_failed)
        failed_outputs += output_failed(report_write_orbit(dir, &rep, &m, &data.test, plots, sizeof plots, err, sizeof err), err);
    if (evaluate && ev.rollout_failed) { /* the outputs are written (params.bin is good), but the run failed */
        fprintf(stderr, "physc: run: the trained model's test rollouts failed: %s; its parameters are in %s/params.bin, "
                "metrics.json says rollout_failed\n", ev.rollout_why, dir);
        snprintf(err, sizeof err, "the test rollouts failed: %s", ev.rollout_why);
        rc = note_failure(o, err);
        goto done;
    }
    if (evaluate && (ev.nonfinite[0] || (known_baseline && ev_known.nonfinite[0]))) { /* the same: a figure is no number */
        const char *what = ev.nonfinite[0] ? ev.nonfinite : ev_known.nonfinite;
        fprintf(stderr, "physc: run: a figure of the evaluation%s is not a finite number: %s; its parameters are in "
                "%s/params.bin, metrics.json says %snonfinite_figure\n", ev.nonfinite[0] ? "" : " of the known terms alone",
                what, dir, ev.nonfinite[0] ? "" : "known_terms_alone_");
        snprintf(err, sizeof err, "a figure is not a finite number: %s", what);
        rc = note_failure(o, err);
        goto done;
    }
    if (failed_outputs) {
        fprintf(stderr, "physc: run: %d %s could not be written (see above); the others are in %s/\n", failed_outputs,
                noun(failed_outputs, "output", "outputs"), dir);
        snprintf(err, sizeof err, "%d %s could not be written", failed_outputs, noun(failed_outputs, "output", "outputs"));
        rc = note_failure(o, err);
        goto done;
    }
    if (out) {
        fprintf(out, "wrote %s/: metrics.json, %sparams.bin%s\n", dir, evaluate ? "trajectories.csv, errors.csv, first-rollout.csv, " : "",
                plots);
        fprintf(out, "use the model: physc simulate %s --model %s --params %s/params.bin; as C: physc emit-c, the same "
                "options, -o model.c\n", o->file, md->name, dir);
    }
    rc = 0;
    goto done;
fail:
    if (err_at.first_line && o->diags) diag_error(o->diags, err_at, "%s", err);
    else fprintf(stderr, "physc: run: %s\n", err);
    rc = note_failure(o, err);
done:
    prt_run_unlock(&lock);
    prt_eval_result_free(&ev);
    prt_eval_result_free(&ev_known);
    prt_train_result_free(&tr);
    free(theta);
    prt_model_close(&m);
    data_free(&data);
    compiled_close(&c);
    free(dir), free(ckpt);
    return rc;
}
