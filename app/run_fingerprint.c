/* run_fingerprint.c — a run's fingerprint (run_internal.h): what a checkpoint must match to be
   continued or reused. */
#include "run_internal.h"

#include <stdarg.h>
#include <string.h>

#include "core/input_file.h"

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
double run_adam_eps(const System *sys, const Model *md) {
    return md->adam_eps > 0 ? md->adam_eps : sys->train.adam_eps;
}

/* The shards that `threads` threads make when the train block sets none: one a thread, at most
   PRT_TRAIN_MAX_SHARDS (more threads share them). */
long run_thread_shards(long threads) {
    return threads < 1 ? 1 : threads > PRT_TRAIN_MAX_SHARDS ? PRT_TRAIN_MAX_SHARDS : threads;
}

/* Every part holds what changes the trajectory of the parameters. The shard count too (the
   train block's `shards`, else the threads, one shard each): each shard's gradient is taken
   alone and the shards are summed in a fixed order; the threads that compute them, when the
   shards are set, are not part of it. The epochs do not: a run may be extended (--resume --epochs).
   training_only: without the model's name and its prediction step, for telling two models
   that train alike (--trained-by); its known terms' names then stand for their kernels. */
PrtFingerprint run_fingerprint(const char *file, const System *sys, const Compiled *c, const Model *md,
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
        if (cfg->family->own_words) { /* the family's own settings of the network (liet2's units and inputs) */
            char words[512];
            cfg->family->own_words(cfg, i, words, sizeof words);
            h[PRT_FP_MODEL] = prt_fnv1a(h[PRT_FP_MODEL], words, strlen(words));
        }
        h[PRT_FP_MODEL] = prt_fnv1a(h[PRT_FP_MODEL], mlp->size, sizeof(int) * (size_t)(mlp->nlayers + 1));
        if (mlp->zero_biases) h[PRT_FP_MODEL] = hash_text(h[PRT_FP_MODEL], "|zero biases"); /* (only when set: older runs keep theirs) */
    }
    h[PRT_FP_MODEL] = hash_text(h[PRT_FP_MODEL], "%s|%s|%s|%s|%.17g|%.17g|%d|%d|%ld", t->optimizer, t->schedule,
                                t->loss, t->integrator, t->lr, t->weight_decay, t->batch, t->substeps,
                                t->shards ? (long)t->shards : run_thread_shards(threads)); /* the shards, or the threads' */
    if (cfg->balance_loss) h[PRT_FP_MODEL] = hash_text(h[PRT_FP_MODEL], "|loss_weights balanced"); /* (only when set) */
    double eps = run_adam_eps(sys, md);
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
