/* run.c — `physc run` (see run.h): the main job, from a checked system to a report
   (app/report.c writes metrics.json and the plots). */
#include "run.h"
#include "alloc.h"

#include <cblas.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "blas_cpu.h"
#include "checkpoint.h"
#include "dataset.h"
#include "driver.h"
#include "evaluate.h"
#include "report.h"
#include "train.h"
#include "trained.h"

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig) {
    (void)sig;
    if (interrupted) _exit(130); /* a second Ctrl-C: do not wait */
    interrupted = 1;
    static const char msg[] = "\nphysc: interrupted: finishing this epoch and writing a checkpoint (Ctrl-C again to quit now)\n";
    ssize_t w = write(STDERR_FILENO, msg, sizeof msg - 1);
    (void)w;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* mkdir -p */
static int make_dirs(const char *path, char *err, size_t errlen) {
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

/* What the checkpoint must match: the program's bytes, the model and every setting that
   changes the trajectory of the parameters (the thread count too: each thread trains on its
   shard of the minibatch, and the shards' gradients are summed in a fixed order). */
static uint64_t fingerprint(const char *file, const System *sys, const Model *model, const char *precision, long epochs,
                            long seed, long threads) {
    uint64_t h = PRT_FNV_INIT;
    FILE *f = fopen(file, "rb");
    if (f) {
        char buf[4096];
        size_t got;
        while ((got = fread(buf, 1, sizeof buf, f)) > 0) h = prt_fnv1a(h, buf, got);
        fclose(f);
    }
    char s[512];
    const TrainSettings *t = &sys->train;
    const DataSettings *d = &sys->data;
    int len = snprintf(s, sizeof s, "%s|%ld|%ld|%d|%d|%d|%g|%g|%s|%s|%s|%d|%d|%d|%g|%d|%g|%g|%g", model->name, epochs, seed,
                       t->batch, d->ntrain, d->nvalid, t->lr, t->weight_decay, t->schedule, t->loss, t->integrator,
                       d->steps, d->chunk, d->seed, d->dt, d->ntest, d->rtol, d->atol, d->noise);
    if (t->substeps != 1) len += snprintf(s + len, sizeof s - (size_t)len, "|substeps %d", t->substeps); /* old checkpoints stay valid */
    h = prt_fnv1a(h, precision, strlen(precision));
    h = prt_fnv1a(h, &threads, sizeof threads); /* the minibatch is split per thread */
    return prt_fnv1a(h, s, (size_t)len);
}

/* The settings `physc run` supports so far (they keep no position in the program). */
static bool check_settings(const System *sys, char *err, size_t errlen) {
    const TrainSettings *t = &sys->train;
    const char *bad = strcmp(t->optimizer, "adamw") ? "optimizer (adamw)"
                      : strcmp(t->integrator, "rk4_38") && strcmp(t->integrator, "rk4") && strcmp(t->integrator, "euler")
                          ? "integrator (rk4_38, rk4, euler)"
                      : strcmp(sys->data.solver, "dopri5") ? "data block's solver (dopri5)"
                      : strcmp(sys->eval.solver, "dopri5") ? "eval block's solver (dopri5)"
                                                    : NULL;
    if (bad) {
        snprintf(err, errlen, "the %s%s: physc run supports only what is in parentheses so far",
                 strstr(bad, "block") ? "" : "train block's ", bad);
        return false;
    }
    return true;
}

/* The memory the run will hold at least, checked before anything is compiled or allocated:
   the generated trajectories (a data `file` is bounded by its own size, and not estimated),
   and the parameters with their gradients and AdamW moments (one gradient per thread).
   0, or -1 with the size and what to reduce. */
static int check_memory(const System *sys, const PrtMlp *mlp, long epochs, long threads, bool eval_from_chunk, char *err,
                        size_t errlen) {
    const DataSettings *ds = &sys->data;
    double point = 8.0 * 2 * sys->ncoords, npts = ds->steps + 1.0;
    double test_npts = npts + (eval_from_chunk ? (ds->steps + 1) / ds->chunk * ds->chunk : 0);
    double data = ds->file ? 0
                           : point * (((double)ds->ntrain + ds->nvalid) * (npts + ds->chunk) +
                                      ds->ntest * (test_npts + 3.0 * (ds->steps + 1))); /* + rollouts, chaos floor's truth */
    double params = 8.0 * (double)prt_mlp_nparams(mlp) * (4 + (threads < 16 ? threads : 16)) + 16.0 * epochs;
    char what[256], gb[32];
    snprintf(what, sizeof what, "%d + %d + %d trajectories (train, valid, test) of %d points of %d numbers",
             ds->ntrain, ds->nvalid, ds->ntest, ds->steps + 1, 2 * sys->ncoords);
    if (prt_mem_check(data, what, "reduce train, valid, test or steps in the data block", err, errlen)) return -1;
    snprintf(what, sizeof what, "%ld network parameters, with their gradients and AdamW moments,", prt_mlp_nparams(mlp));
    if (prt_mem_check(params, what, "reduce the hidden widths of the learned terms", err, errlen)) return -1;
    snprintf(what, sizeof what, "the data (%s) and the network's parameters", prt_format_bytes(data, gb, sizeof gb));
    return prt_mem_check(data + params, what, "reduce the data block or the hidden widths", err, errlen);
}

/* Generated (or loaded) data: training chunks, validation chunks, full test trajectories. */
typedef struct Data {
    PrtTrajSet train_full, valid_full, test, train, valid;
} Data;

/* 1 after reporting err if an output could not be written, else 0: the run goes on writing
   the others, and exits 1 at the end. */
static int output_failed(int rc, const char *err) {
    if (rc) fprintf(stderr, "physc: run: %s\n", err);
    return rc ? 1 : 0;
}

static int make_data(PrtSystem *ps, const System *sys, long seed, const RunOptions *o, const char *const *names, Data *d,
                     int *failed_outputs, char *err, size_t errlen) {
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
        if (prt_trajset_read_csv(ds->file, ps->N, &all, err, errlen) != 0) return -1;
        prt_take_free_lengths(ps, all.xv, all.n); /* open lengths: the file's first state's */
        long need = (long)ds->ntrain + ds->nvalid + ds->ntest;
        if (all.n < need) {
            snprintf(err, errlen, "%s holds %ld trajectories; the data block asks for %ld (train + valid + test)", ds->file,
                     all.n, need);
            prt_trajset_free(&all);
            return -1;
        }
        PrtTrajSet *sets[3] = {&d->train_full, &d->valid_full, &d->test};
        long counts[3] = {ds->ntrain, ds->nvalid, ds->ntest}, first = 0;
        for (int i = 0; i < 3; i++) {
            long *idx = prt_xalloc((size_t)(counts[i] + 1), sizeof(long), "trajectory indices");
            for (long j = 0; j < counts[i]; j++) idx[j] = first + j;
            *sets[i] = (PrtTrajSet){.n = counts[i], .npts = all.npts, .N = all.N, .dt = all.dt,
                                    .xv = prt_xalloc((size_t)(2L * all.N * all.npts * counts[i] + 1), sizeof(double), "trajectories")};
            prt_trajset_gather(&all, idx, counts[i], sets[i]->xv);
            first += counts[i];
            free(idx);
        }
        prt_trajset_free(&all);
    } else {
        long counts[3] = {ds->ntrain, ds->nvalid, ds->ntest};
        PrtTrajSet *sets[3] = {&d->train_full, &d->valid_full, &d->test};
        /* from a chunk's first state, the test trajectories run on for the later chunks' starts */
        int test_extra = o->eval_from_chunk ? (npts / ds->chunk - 1) * ds->chunk : 0;
        for (int i = 0; i < 3; i++) { /* each set from its own seed */
            int len = i == 2 ? npts + test_extra : npts;
            if (counts[i] == 0) {
                *sets[i] = (PrtTrajSet){.npts = len, .N = ps->N, .dt = ds->dt};
                continue;
            }
            if (prt_trajset_generate(ps, counts[i], len, ds->dt, ds->rtol, ds->atol, (uint64_t)seed * 3 + (uint64_t)i,
                                     sets[i], err, errlen) != 0)
                return -1;
        }
        if (test_extra > 0 && d->test.n > 0) {
            PrtRng wrng;
            prt_rng_seed(&wrng, (uint64_t)seed ^ 0x7e57c4a7u);
            PrtTrajSet windows;
            prt_trajset_windows(&d->test, ds->chunk, npts, &wrng, &windows);
            prt_trajset_free(&d->test);
            d->test = windows;
        }
    }
    if (d->train_full.npts < ds->chunk) {
        snprintf(err, errlen, "trajectories of %d points are too short for chunks of %d", d->train_full.npts, ds->chunk);
        return -1;
    }
    if (o->save_data) {
        if (make_dirs(o->save_data, err, errlen) != 0) return -1;
        const char *files[3] = {"train.csv", "valid.csv", "test.csv"};
        const PrtTrajSet *sets[3] = {&d->train_full, &d->valid_full, &d->test};
        for (int i = 0; i < 3; i++) {
            char *p = report_path(o->save_data, files[i]);
            *failed_outputs += output_failed(prt_trajset_write_csv(sets[i], p, names, err, errlen), err);
            free(p);
        }
    }
    PrtRng rng;
    prt_rng_seed(&rng, (uint64_t)seed ^ 0x5eed0fc4u);
    prt_trajset_chunks(&d->train_full, ds->chunk, &rng, &d->train);
    if (d->valid_full.n) prt_trajset_chunks(&d->valid_full, ds->chunk, &rng, &d->valid);
    else d->valid = (PrtTrajSet){.npts = ds->chunk, .N = ps->N, .dt = d->train_full.dt};
    if (ds->noise > 0) {
        prt_trajset_add_noise(&d->train, ds->noise, &rng);
        if (d->valid.n) prt_trajset_add_noise(&d->valid, ds->noise, &rng);
    }
    return 0;
}

static void data_free(Data *d) {
    prt_trajset_free(&d->train_full), prt_trajset_free(&d->valid_full), prt_trajset_free(&d->test);
    prt_trajset_free(&d->train), prt_trajset_free(&d->valid);
}

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
    PrtMlp mlp;
    const char *precision = o->precision ? o->precision : sys->train.precision;
    if (strcmp(precision, "f32") && strcmp(precision, "f64")) {
        fprintf(stderr, "physc: run: --precision takes f32 or f64, not '%s'\n", precision);
        return 2;
    }
    Loc where;
    bool supported = trained_mlp(sys, md, !strcmp(precision, "f32"), &mlp, &where, err, sizeof err);
    if (supported && !check_settings(sys, err, sizeof err)) where = (Loc){0}, supported = false;
    if (!supported) {
        if (where.first_line > 0 && o->diags) diag_error(o->diags, where, "%s", err);
        else fprintf(stderr, "physc: run: %s\n", err);
        return 1;
    }
    long epochs = o->epochs > 0 ? o->epochs : sys->train.epochs, seed = o->seed >= 0 ? o->seed : sys->data.seed;
    long threads = o->threads > 0 ? o->threads : sys->train.threads;
    if (check_memory(sys, &mlp, epochs, threads, o->eval_from_chunk, err, sizeof err) != 0) {
        fprintf(stderr, "physc: run: %s\n", err);
        return 1;
    }
    openblas_set_num_threads((int)threads);
    FILE *out = o->quiet ? NULL : stdout;

    double t0 = now_s();
    Compiled c;
    if (!compiled_open_model(sys, &c, 2, md, err, sizeof err)) {
        fprintf(stderr, "physc: run: %s\n", err);
        return 1;
    }
    double compile_ms = (now_s() - t0) * 1e3;
    if (out)
        fprintf(out, "system %s: %d coordinates, %d constraints; %d kernels compiled in %.0f ms (lowering %.1f ms, LLVM %.0f ms)\n",
                sys->name, c.ps.N, c.ps.C, c.k.n, compile_ms, c.lower_ms, c.jit_ms);
    char *dir = NULL;
    if (o->out_dir) dir = strcpy(prt_xalloc(strlen(o->out_dir) + 1, 1, "a path"), o->out_dir);
    else {
        size_t len = strlen(sys->name) + strlen(md->name) + 8;
        dir = prt_xalloc(len, 1, "a path");
        snprintf(dir, len, "runs/%s-%s", sys->name, md->name);
    }
    int rc = 1;
    Data data = {0};
    PrtModel m = {0};
    double *theta = NULL;
    PrtTrainResult tr = {0};
    PrtEvalResult ev = {0};
    const char *const *names = (const char *const *)kernels_find(&c.k, "Init")->output_names;
    if (make_dirs(dir, err, sizeof err) != 0) goto fail;

    t0 = now_s();
    int failed_outputs = 0; /* each reported as it happens; the run exits 1 at the end */
    if (make_data(&c.ps, sys, seed, o, names, &data, &failed_outputs, err, sizeof err) != 0) goto fail;
    double data_s = now_s() - t0;
    const DataSettings *ds = &sys->data;
    if (out) {
        if (ds->file) fprintf(out, "data: %s: ", ds->file);
        else fprintf(out, "data: dopri5 (rtol %g, atol %g) from seed %ld in %.2f s: ", ds->rtol, ds->atol, seed, data_s);
        fprintf(out, "%ld train trajectories (one random chunk of %d points each), %ld valid, %ld test of %d points%s, dt %g%s\n",
                data.train.n, ds->chunk, data.valid_full.n, data.test.n, data.test.npts,
                o->eval_from_chunk ? " from a random chunk's first state" : "", data.train.dt, ds->noise > 0 ? ", with noise" : "");
    }

    if (prt_model_init(&m, &c.ps, md->kind == MODEL_CLNN, md->mass_fit, &mlp, err, sizeof err) != 0) goto fail;
    m.l2 = !strcmp(sys->train.loss, "l2");
    m.method = !strcmp(sys->train.integrator, "rk4") ? PRT_RK4 : !strcmp(sys->train.integrator, "euler") ? PRT_EULER : PRT_RK4_38;
    theta = prt_xalloc((size_t)m.nparams, sizeof(double), "the parameters");
    char *ckpt = report_path(dir, "checkpoint.bin");
    PrtTrainOptions to = {
        .epochs = (int)epochs, .batch = sys->train.batch, .substeps = sys->train.substeps, .lr = sys->train.lr,
        .weight_decay = sys->train.weight_decay, .cosine = !strcmp(sys->train.schedule, "cosine"), .seed = (uint64_t)seed,
        .checkpoint_every = sys->train.checkpoint_every, .checkpoint = ckpt, .resume = o->resume,
        .fingerprint = fingerprint(o->file, sys, md, precision, epochs, seed, threads), .threads = (int)threads, .progress = out, .tty = out && isatty(fileno(out)),
        .stop = &interrupted, .stop_after = (int)o->stop_after};
    if (out)
        fprintf(out, "model %s (%s): MLP potential %d", md->name, model_kind_name(md->kind), mlp.size[0]);
    for (int l = 1; out && l <= mlp.nlayers; l++) fprintf(out, "-%d", mlp.size[l]);
    char steps[48] = "";
    if (to.substeps > 1) snprintf(steps, sizeof steps, " (%d steps per interval)", to.substeps);
    if (out)
        fprintf(out, " %s %s, %ld parameters; %ld epochs, batch %d, %s%s, lr %g, %s loss, %ld thread%s -> %s/\n",
                mlp.act == PRT_ACT_TANH ? "tanh" : mlp.act == PRT_ACT_SOFTPLUS ? "softplus" : "silu", mlp.f32 ? "f32" : "f64",
                m.nparams, epochs, to.batch, sys->train.integrator, steps, to.lr,
                sys->train.loss, threads, threads == 1 ? "" : "s", dir);
    /* the loss the system itself reaches under the training integrator: if the model's loss
       ends near it, the integrator's step (not the model) limits what the data can teach */
    double integrator_floor =
        data.train.n ? prt_model_truth_loss(&m, data.train.n, data.train.npts, data.train.dt, to.substeps, data.train.xv)
                     : NAN;
    if (out && data.train.n) {
        fprintf(out, "integrator floor: the system's own dynamics under %s%s reach a training loss of %.3e%s\n",
                sys->train.integrator, steps, integrator_floor, ds->noise > 0 ? " (with the data's noise)" : "");
        long len = 2L * data.train.N * data.train.n * data.train.npts;
        double scale = 0; /* the data's mean |component|: a floor near it means the step fails the system itself */
        for (long i = 0; i < len; i++) scale += fabs(data.train.xv[i]);
        scale /= (double)len;
        if (!(integrator_floor < 0.1 * scale))
            fprintf(out, "  (that is %.2g of the data's mean |component|: one step per interval cannot follow the system on some "
                    "chunks; `train { substeps N }` takes N steps per interval)\n", integrator_floor / scale);
    }
    char blas[256];
    prt_blas_describe(blas, sizeof blas);
    if (out) fprintf(out, "BLAS: %s\n", blas);
    struct sigaction sa = {.sa_handler = on_sigint}, old;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old);
    PrtTrainStatus st = prt_train(&m, theta, &data.train, &data.valid, &to, &tr, err, sizeof err);
    sigaction(SIGINT, &old, NULL);
    free(ckpt);
    failed_outputs += tr.checkpoint_failures; /* reported by prt_train */
    if (st == PRT_TRAIN_FAILED || st == PRT_TRAIN_DIVERGED) goto fail;
    if (st == PRT_TRAIN_INTERRUPTED) {
        if (failed_outputs) {
            fprintf(stderr, "physc: run: stopped after epoch %d of %ld; the checkpoint could not be written (see above)\n",
                    tr.epochs_done, epochs);
            rc = 1;
            goto done;
        }
        fprintf(stderr, "physc: run: stopped after epoch %d of %ld; the checkpoint is in %s/ (continue with --resume)\n",
                tr.epochs_done, epochs, dir);
        rc = interrupted ? 130 : 0;
        goto done;
    }
    PrtCkptArray params = {"theta", theta, m.nparams};
    char *pp = report_path(dir, "params.bin");
    PrtCkptHeader ph = {.fingerprint = to.fingerprint, .epoch = tr.epochs_done};
    failed_outputs += output_failed(prt_ckpt_write(pp, &ph, &params, 1, err, sizeof err), err);
    free(pp);

    /* the rollouts in f64 whatever the training precision: dopri5 at rtol 1e-7 would step on
       float rounding noise, and the parameters are kept in f64 anyway */
    m.mlp.f32 = false;
    t0 = now_s();
    bool evaluate = data.test.n > 0;
    if (evaluate && prt_evaluate(&m, theta, &data.test, sys->eval.horizon, sys->eval.rtol, sys->eval.atol,
                                 (uint64_t)seed + 99, &ev, err, sizeof err) != 0)
        goto fail;
    if (!evaluate) /* no test set: the metrics are null */
        ev.err_geo = ev.err_mean = ev.energy_geo = ev.energy_mean = ev.violation_geo = ev.chaos_geo = ev.chaos_mean =
            ev.err_ci[0] = ev.err_ci[1] = ev.energy_ci[0] = ev.energy_ci[1] = ev.violation_ci[0] = ev.violation_ci[1] =
                ev.chaos_ci[0] = ev.chaos_ci[1] = NAN;
    double eval_s = now_s() - t0;
    int done = tr.epochs_done - tr.resumed_from;
    if (out) fprintf(out, "trained %d epochs in %.1f s (%.3f s/epoch)\n", done, tr.seconds, done ? tr.seconds / done : 0.0);
    if (out && tr.epochs_done > 0 && integrator_floor > 0) { /* is the step what limits the fit? */
        double final_loss = tr.loss[tr.epochs_done - 1], ratio = final_loss / integrator_floor;
        fprintf(out, "final training loss %.3e: %.3gx the integrator floor%s\n", final_loss, ratio,
                ratio < 1.5 ? " (the training step, not the network, limits the fit; `train { substeps N }` lowers the floor)"
                            : "");
    }
    if (out && !evaluate) fprintf(out, "no test trajectories (data block: test 0): evaluation skipped\n");
    if (out && evaluate) {
        fprintf(out, "evaluation on %ld test trajectories, %d steps (dopri5 rtol %g, atol %g), %.2f s%s:\n", ev.n, ev.nt - 1,
                sys->eval.rtol, sys->eval.atol, eval_s, ev.rollout_failed ? " -- WARNING: the rollout solver gave up" : "");
        prt_eval_print_table(out, "metric", &ev);
    }
    Report rep = {.sys = sys, .model = md, .m = &m, .tr = &tr, .ev = &ev, .epochs = epochs, .seed = seed,
                  .threads = threads, .precision = precision, .blas = blas,
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
        failed_outputs += report_write_plots(dir, &rep, &data.test, names);
    }
    if (failed_outputs) {
        fprintf(stderr, "physc: run: %d output%s could not be written (see above); the others are in %s/\n", failed_outputs,
                failed_outputs == 1 ? "" : "s", dir);
        rc = 1;
        goto done;
    }
    if (out) {
        fprintf(out, "wrote %s/: metrics.json, %sparams.bin", dir, evaluate ? "trajectories.csv, errors.csv, " : "");
        for (int i = 0; evaluate && i < sys->eval.nplots; i++) fprintf(out, ", %s.svg", sys->eval.plots[i]);
        fputc('\n', out);
        fprintf(out, "use the model: physc simulate %s --model %s --params %s/params.bin; as C: physc emit-c, the same "
                "options, -o model.c\n", o->file, md->name, dir);
    }
    rc = 0;
    goto done;
fail:
    fprintf(stderr, "physc: run: %s\n", err);
    rc = 1;
done:
    prt_eval_result_free(&ev);
    prt_train_result_free(&tr);
    free(theta);
    if (m.sys) prt_model_free(&m);
    data_free(&data);
    compiled_close(&c);
    free(dir);
    return rc;
}
