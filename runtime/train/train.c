/* train.c — the training loop (see train.h). An epoch visits every training chunk once in
   an order drawn from the run's RNG; checkpoints are taken at epoch ends, so a resumed run
   draws the same orders and takes the same steps as an uninterrupted one, bit for bit. */
#include "train.h"
#include "core/alloc.h"

#include <cblas.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "io/checkpoint.h"
#include "optim.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

int prt_train_shards(const PrtTrainOptions *o) {
    int s = o->shards > 0 ? o->shards : o->threads;
    return s < 1 ? 1 : s > PRT_TRAIN_MAX_SHARDS ? PRT_TRAIN_MAX_SHARDS : s;
}

void prt_train_result_free(PrtTrainResult *r) {
    free(r->loss), free(r->valid);
    r->loss = r->valid = NULL;
}

static void format_duration(double s, char *buf, size_t len) {
    if (!(s >= 0) || s > 1e8) snprintf(buf, len, "?");
    else if (s < 60) snprintf(buf, len, "%.0fs", s);
    else if (s < 3600) snprintf(buf, len, "%dm%02ds", (int)s / 60, (int)s % 60);
    else snprintf(buf, len, "%dh%02dm", (int)s / 3600, (int)s % 3600 / 60);
}

typedef struct State {
    PrtAdamW opt;
    PrtRng rng;
    PrtTrainResult *r;
} State;

static int save(const PrtTrainOptions *o, const PrtModel *m, double *theta, State *st, int epoch, char *err,
                size_t errlen) {
    PrtCkptHeader h = {.fp = o->fingerprint, .epoch = epoch, .step = st->opt.t,
                       .rng_spare_normal = st->rng.spare_normal, .rng_has_spare = st->rng.has_spare};
    memcpy(h.rng, st->rng.s, sizeof h.rng);
    PrtCkptArray a[] = {{"theta", theta, m->nparams}, {"adam_m", st->opt.m, m->nparams}, {"adam_v", st->opt.v, m->nparams},
                        {"loss", st->r->loss, o->epochs}, {"valid", st->r->valid, o->epochs}};
    return prt_ckpt_write(o->checkpoint, &h, a, 5, err, errlen);
}

static int load(const PrtTrainOptions *o, const PrtModel *m, double *theta, State *st, int *epoch, char *err,
                size_t errlen) {
    PrtCkptHeader h;
    /* the loss history of a run of other length: an extended (or shortened) run's */
    PrtCkptArray a[] = {{"theta", theta, m->nparams}, {"adam_m", st->opt.m, m->nparams}, {"adam_v", st->opt.v, m->nparams},
                        {"loss", st->r->loss, -o->epochs}, {"valid", st->r->valid, -o->epochs}};
    if (prt_ckpt_read(o->checkpoint, &o->fingerprint, &h, a, 5, err, errlen) != 0) return -1;
    if (h.epoch < 0 || h.epoch > o->epochs) {
        snprintf(err, errlen, "%s: checkpoint at epoch %ld does not fit a run of %d epoch%s", o->checkpoint, h.epoch,
                 o->epochs, o->epochs == 1 ? "" : "s");
        return -1;
    }
    memcpy(st->rng.s, h.rng, sizeof h.rng);
    st->rng.spare_normal = h.rng_spare_normal, st->rng.has_spare = h.rng_has_spare;
    st->opt.t = h.step;
    *epoch = (int)h.epoch;
    return 0;
}

int prt_train_adopt(const char *from, const PrtFingerprint *was, const char *to, const PrtFingerprint *now, long nparams,
                    int epochs, char *err, size_t errlen) {
    double *buf = prt_xalloc((size_t)(3 * nparams + 2 * epochs), sizeof(double), "a checkpoint");
    PrtCkptArray a[] = {{"theta", buf, nparams}, {"adam_m", buf + nparams, nparams}, {"adam_v", buf + 2 * nparams, nparams},
                        {"loss", buf + 3 * nparams, epochs}, {"valid", buf + 3 * nparams + epochs, epochs}};
    PrtCkptHeader h;
    int rc = prt_ckpt_read(from, was, &h, a, 5, err, errlen);
    if (rc == 0 && h.epoch != epochs)
        rc = -1, snprintf(err, errlen, "%s is at epoch %ld of %d: not finished", from, h.epoch, epochs);
    if (rc == 0) {
        h.fp = *now;
        rc = prt_ckpt_write(to, &h, a, 5, err, errlen);
    }
    free(buf);
    return rc;
}

/* One shard of a minibatch: a model replica (its own tape and buffers) and its chunks. */
/* A minibatch is cut into shards (PrtTrainOptions.shards), each shard's loss and gradient
   computed alone with single-threaded GEMMs, and the shards summed in their order: the
   result depends on the shard count, not on how many threads compute them. */
typedef struct Shard {
    const long *idx;    /* its chunks of the minibatch */
    long n;
    double *grad, loss;
} Shard;

/* A thread's share: the shards first, first + step, ... below end, on its own model (worker
   0: the caller's; the others a replica) */
typedef struct Worker {
    PrtModel *m;
    PrtModel replica;
    double *chunks;
    const PrtTrajSet *data;
    const double *theta;
    Shard *shards;
    int first, end, step;
} Worker;

static void *worker_run(void *arg) {
    Worker *w = arg;
    for (int k = w->first; k < w->end; k += w->step) {
        Shard *s = &w->shards[k];
        if (s->n == 0) continue;
        prt_trajset_gather(w->data, s->idx, s->n, w->chunks);
        s->loss = prt_model_loss_grad(w->m, w->theta, s->n, w->data->npts, w->data->dt, w->chunks, s->grad);
    }
    return NULL;
}

/* With `shards` set, the validation loss the same way: the set cut into the shards' S
   near-equal slices, each slice's loss taken on its worker's model (so the threads and the
   processes share it, where one thread took it all), the slices combined in their order by
   their sizes: the same bits at any K x T, as the training. */
typedef struct ValidWork {
    Worker *w;
    const PrtTrajSet *set;
    const long *first, *count; /* each slice's first chunk and size */
    double *losses;
} ValidWork;

static void *valid_run(void *arg) {
    ValidWork *v = arg;
    Worker *w = v->w;
    for (int k = w->first; k < w->end; k += w->step) {
        if (v->count[k] == 0) continue;
        long *idx = prt_xalloc((size_t)v->count[k], sizeof(long), "validation slices");
        double *chunks = prt_xalloc((size_t)((long)v->set->W * v->set->npts * v->count[k]), sizeof(double), "validation slices");
        for (long i = 0; i < v->count[k]; i++) idx[i] = v->first[k] + i;
        prt_trajset_gather(v->set, idx, v->count[k], chunks);
        v->losses[k] = prt_model_set_loss(w->m, w->theta, false, v->count[k], v->set->npts, v->set->dt, chunks);
        free(idx), free(chunks);
    }
    return NULL;
}

static double sharded_valid_loss(Worker *wk, int nworkers, int nshards, const PrtTrainExchange *ex, const double *theta,
                                 const PrtTrajSet *set, double *losses, double *grads, bool *lost, char *err, size_t errlen) {
    long first[PRT_TRAIN_MAX_SHARDS], count[PRT_TRAIN_MAX_SHARDS], at = 0;
    for (int k = 0; k < nshards; k++) {
        count[k] = set->n / nshards + (k < set->n % nshards);
        first[k] = at, at += count[k];
        losses[k] = 0;
    }
    ValidWork vw[PRT_TRAIN_MAX_SHARDS];
    pthread_t tid[PRT_TRAIN_MAX_SHARDS];
    bool started[PRT_TRAIN_MAX_SHARDS] = {false};
    for (int w = 0; w < nworkers; w++) {
        wk[w].theta = theta;
        vw[w] = (ValidWork){.w = &wk[w], .set = set, .first = first, .count = count, .losses = losses};
        if (w > 0) started[w] = pthread_create(&tid[w], NULL, valid_run, &vw[w]) == 0;
    }
    valid_run(&vw[0]);
    for (int w = 1; w < nworkers; w++)
        if (started[w]) pthread_join(tid[w], NULL);
        else valid_run(&vw[w]);
    *lost = ex && ex->share(ex->ctx, nshards, 0, count, losses, grads, err, errlen) != 0;
    double loss = 0;
    for (int k = 0; k < nshards; k++) loss += losses[k] * ((double)count[k] / (double)set->n);
    return loss;
}

/* The minibatch idx[0..nb) in nshards shards, this process's over nworkers threads (worker 0
   on the caller's), the others' from the exchange: the mean loss and its gradient, the
   shards combined in their order. *lost: the exchange failed (err says why). */
static double batch_loss_grad(Worker *wk, int nworkers, Shard *sh, int nshards, const PrtTrainExchange *ex,
                              double *losses, double *grads, long *counts, const double *theta, const long *idx, long nb,
                              double *grad, long nparams, PrtTrainResult *r, bool *lost, char *err, size_t errlen) {
    double t0 = now_s();
    pthread_t tid[PRT_TRAIN_MAX_SHARDS];
    bool started[PRT_TRAIN_MAX_SHARDS] = {false};
    long first = 0;
    for (int k = 0; k < nshards; k++) {
        long len = nb / nshards + (k < nb % nshards);
        sh[k].idx = idx + first, sh[k].n = counts[k] = len;
        first += len;
    }
    for (int w = 0; w < nworkers; w++) {
        wk[w].theta = theta;
        if (w > 0) started[w] = pthread_create(&tid[w], NULL, worker_run, &wk[w]) == 0;
    }
    worker_run(&wk[0]);
    for (int w = 1; w < nworkers; w++)
        if (started[w]) pthread_join(tid[w], NULL);
        else worker_run(&wk[w]); /* no thread to be had: run it here */
    for (int k = 0; k < nshards; k++) losses[k] = sh[k].loss;
    double t1 = now_s();
    *lost = ex && ex->share(ex->ctx, nshards, nparams, counts, losses, grads, err, errlen) != 0;
    r->compute_s += t1 - t0, r->exchange_s += now_s() - t1, r->steps++;
    if (*lost) return NAN;
    double loss = 0;
    bool any = false;
    for (int k = 0; k < nshards; k++) {
        if (counts[k] == 0) continue;
        const double *g = grads + (long)k * nparams;
        double wgt = (double)counts[k] / (double)nb;
        loss += losses[k] * wgt;
        if (!any) for (long i = 0; i < nparams; i++) grad[i] = g[i] * wgt;
        else for (long i = 0; i < nparams; i++) grad[i] += g[i] * wgt;
        any = true;
    }
    return loss;
}

static bool all_finite(const double *x, long n) {
    double s = 0;
    for (long i = 0; i < n; i++) s += x[i] * 0; /* NaN or Inf anywhere makes s NaN */
    return s == 0;
}

/* A family whose loss sums unlike state groups (balanced: liet2's positions, rotations, ...)
   and whose theta = 0 is its known terms alone: each group's validation error against
   theirs, every 10 epochs, since one group the model fixes moves the total little beside
   another it cannot. */
typedef struct GroupProgress {
    int n;
    double none[PRT_MODEL_MAX_GROUPS];
} GroupProgress;

static bool group_progress_open(PrtModel *m, const PrtTrajSet *valid, GroupProgress *g) {
    g->n = 0;
    if (!m->family->loss_groups || !m->family->zero_theta_is_baseline || !m->cfg.balance_loss || !valid || valid->n == 0)
        return false;
    prt_progress_start(m->progress, "validation error of the known terms alone");
    const char *names[PRT_MODEL_MAX_GROUPS];
    double *zero = prt_xcalloc((size_t)m->nparams, sizeof(double), "training buffers");
    g->n = m->family->loss_groups(m, zero, valid->n, valid->npts, valid->dt, valid->xv, g->none, names);
    free(zero);
    return g->n > 0;
}

static void group_progress_print(const PrtTrainOptions *o, PrtModel *m, const double *theta, const PrtTrajSet *valid,
                                 const GroupProgress *g, bool ticking) {
    double mse[PRT_MODEL_MAX_GROUPS];
    const char *names[PRT_MODEL_MAX_GROUPS];
    if (o->tty) fputc('\n', o->progress); /* below the epoch's line */
    if (ticking) prt_progress_start(m->progress, "validation error by group");
    int k = m->family->loss_groups(m, theta, valid->n, valid->npts, valid->dt, valid->xv, mse, names);
    fprintf(o->progress, "  validation error by group, against the known terms alone:");
    for (int i = 0; i < k && i < g->n; i++)
        if (!isnan(mse[i]) && g->none[i] > 0) fprintf(o->progress, "%s %s %.3g", i ? "," : "", names[i], mse[i] / g->none[i]);
    fputc('\n', o->progress);
    fflush(o->progress);
}

PrtTrainStatus prt_train(PrtModel *m, double *theta, const PrtTrajSet *train, const PrtTrajSet *valid,
                         const PrtTrainOptions *o, PrtTrainResult *r, char *err, size_t errlen) {
    memset(r, 0, sizeof *r);
    if (!prt_model_trainable(m)) {
        snprintf(err, errlen, "internal error: the system was not compiled for training this kind of model");
        return r->status = PRT_TRAIN_FAILED;
    }
    r->loss = prt_xalloc((size_t)o->epochs, sizeof(double), "training buffers");
    r->valid = prt_xalloc((size_t)o->epochs, sizeof(double), "training buffers");
    for (int e = 0; e < o->epochs; e++) r->loss[e] = r->valid[e] = NAN;
    State st = {.r = r};
    prt_adamw_init(&st.opt, m->nparams, o->lr, o->weight_decay);
    st.opt.coupled = o->adam;
    if (o->adam_eps > 0) st.opt.eps = o->adam_eps;
    prt_rng_seed(&st.rng, o->seed);
    int start = 0;
    if (o->resume) {
        if (load(o, m, theta, &st, &start, err, errlen) != 0) {
            prt_adamw_free(&st.opt);
            return r->status = PRT_TRAIN_FAILED;
        }
    } else {
        prt_model_init_theta(m, theta, &st.rng);
    }
    r->resumed_from = r->epochs_done = start;
    r->checkpointed = o->resume ? start : -1;
    long n = train->n, batch = o->batch < n ? o->batch : n;
    long *perm = prt_xalloc((size_t)n, sizeof(long), "training buffers");
    double *grad = prt_xalloc((size_t)m->nparams, sizeof(double), "training buffers");
    /* shards, and the threads that compute them: worker 0 uses m itself, the others replicas of it */
    int nshards = prt_train_shards(o);
    if (nshards > batch) nshards = (int)batch;
    int nworkers = o->threads > 1 ? (o->threads < nshards ? o->threads : nshards) : 1;
    Shard *sh = prt_xcalloc((size_t)nshards, sizeof(Shard), "training buffers");
    Worker *wk = prt_xcalloc((size_t)nworkers, sizeof(Worker), "training buffers");
    /* every shard's gradient in one block (the exchange sends it whole); this process's shards */
    double *grads = prt_xalloc((size_t)nshards * (size_t)m->nparams, sizeof(double), "training buffers");
    double losses[PRT_TRAIN_MAX_SHARDS];
    long counts[PRT_TRAIN_MAX_SHARDS];
    const PrtTrainExchange *ex = o->exchange && o->exchange->size > 1 ? o->exchange : NULL;
    int rank = ex ? ex->rank : 0, size = ex ? ex->size : 1;
    int lo = nshards * rank / size, hi = nshards * (rank + 1) / size;
    if (ex) r->bytes_per_step = (double)(nshards - (hi - lo)) * (double)(m->nparams + 1) * sizeof(double);
    if (nworkers > hi - lo) nworkers = hi - lo > 0 ? hi - lo : 1;
    for (int k = 0; k < nshards; k++) sh[k].grad = grads + (long)k * m->nparams;
    for (int w = 0; w < nworkers; w++) {
        wk[w] = (Worker){.m = m, .data = train, .shards = sh, .first = lo + w, .end = hi, .step = nworkers};
        wk[w].chunks = prt_xalloc((size_t)((long)train->W * train->npts * (batch / nshards + 1)), sizeof(double), "training buffers");
        if (w == 0) continue;
        if (prt_model_open_replica(&wk[w].replica, m, err, errlen) != 0) { /* as m was: only memory can fail */
            r->status = PRT_TRAIN_FAILED;
            break;
        }
        wk[w].m = &wk[w].replica;
    }
    int blas_threads = openblas_get_num_threads();
    if (nshards > 1) openblas_set_num_threads(1); /* (each shard's GEMMs alone, whatever the threads) */
    /* each epoch's progress on a terminal; in a log the first epoch's only (its line then
       gives the time an epoch takes) */
    PrtProgress meter, *caller_meter = m->progress;
    prt_progress_init(&meter, o->progress, o->tty);
    m->progress = &meter; /* the validation's set losses */
    GroupProgress groups;
    bool by_group = o->progress && group_progress_open(m, valid, &groups);
    double t0 = now_s(), per = 0;
    bool open_line = false; /* an epoch's line drawn on the terminal, not yet ended */
    if (r->status == PRT_TRAIN_FAILED) goto out; /* a replica could not be made */
    r->status = PRT_TRAIN_DONE;
    for (int e = start; e < o->epochs; e++) {
        double te = now_s();
        bool ticking = o->tty || e == start;
        char last[64] = "";
        if (e > start) {
            char eta[32];
            format_duration(per * (o->epochs - e), eta, sizeof eta);
            snprintf(last, sizeof last, " (loss %.3e, ETA %s)", r->loss[e - 1], eta);
        }
        if (ticking) prt_progress_start(&meter, "epoch %d/%d%s: training", e + 1, o->epochs, last);
        st.opt.lr = o->cosine ? prt_cosine_lr(o->lr, e, o->epochs) : o->lr;
        for (long i = 0; i < n; i++) perm[i] = i;
        for (long i = n - 1; i > 0; i--) { /* Fisher-Yates */
            long j = (long)(prt_rng_u64(&st.rng) % (uint64_t)(i + 1)), t = perm[i];
            perm[i] = perm[j], perm[j] = t;
        }
        double sum = 0;
        for (long b0 = 0; b0 < n; b0 += batch) {
            long nb = n - b0 < batch ? n - b0 : batch;
            bool lost;
            double loss = batch_loss_grad(wk, nworkers, sh, nshards, ex, losses, grads, counts, theta, perm + b0, nb, grad,
                                          m->nparams, r, &lost, err, errlen);
            if (lost) { /* a process lost: the whole job stops (its checkpoint is kept) */
                r->status = PRT_TRAIN_FAILED;
                goto out;
            }
            if (!isfinite(loss) || !all_finite(grad, m->nparams)) {
                char kept[64] = ", no checkpoint was written";
                if (r->checkpointed >= 0) snprintf(kept, sizeof kept, ", the checkpoint of epoch %d is kept", r->checkpointed);
                snprintf(err, errlen, "epoch %d: the training loss became %s; stopped%s (lower the learning rate or check the data)",
                         e + 1, isfinite(loss) ? "finite but its gradient did not" : "NaN or infinite", kept);
                r->status = PRT_TRAIN_DIVERGED;
                goto out;
            }
            prt_adamw_step(&st.opt, theta, grad);
            sum += loss * (double)nb;
            prt_progress_tick(&meter, (double)(b0 + nb), (double)n);
        }
        r->loss[e] = sum / (double)n;
        if (ticking) prt_progress_start(&meter, "epoch %d/%d%s: validation", e + 1, o->epochs, last);
        else prt_progress_end(&meter);
        double tv = now_s();
        r->valid[e] = NAN;
        if (valid && valid->n > 0 && o->shards > 0 && valid->n >= nshards) {
            bool lost;
            r->valid[e] = sharded_valid_loss(wk, nworkers, nshards, ex, theta, valid, losses, grads, &lost, err, errlen);
            if (lost) {
                r->status = PRT_TRAIN_FAILED;
                goto out;
            }
        } else if (valid && valid->n > 0) {
            r->valid[e] = prt_model_set_loss(m, theta, false, valid->n, valid->npts, valid->dt, valid->xv);
        }
        r->validation_s += now_s() - tv;
        prt_progress_end(&meter); /* (a set of one block ends no phase of its own) */
        if (valid && valid->n > 0 && !isfinite(r->valid[e])) { /* as much a divergence: no figure to print */
            char kept[64] = ", no checkpoint was written";
            if (r->checkpointed >= 0) snprintf(kept, sizeof kept, ", the checkpoint of epoch %d is kept", r->checkpointed);
            snprintf(err, errlen, "epoch %d: the validation loss became NaN or infinite (the model's steps from some "
                     "validation chunks are not finite); stopped%s (lower the learning rate or check the data)", e + 1, kept);
            r->status = PRT_TRAIN_DIVERGED;
            goto out;
        }
        r->epochs_done = e + 1;
        per = (now_s() - t0) / (double)(e + 1 - start);
        if (o->progress) {
            char eta[32];
            format_duration(per * (o->epochs - e - 1), eta, sizeof eta);
            char valid_s[32] = "-";
            if (!isnan(r->valid[e])) snprintf(valid_s, sizeof valid_s, "%.3e", r->valid[e]);
            fprintf(o->progress, "%sepoch %*d/%d  loss %.3e  valid %s  lr %.2e  %.3f s/epoch  ETA %s%s",
                    o->tty ? "\r\x1b[K" : "", (int)snprintf(NULL, 0, "%d", o->epochs), e + 1, o->epochs, r->loss[e],
                    valid_s, st.opt.lr, now_s() - te, eta, o->tty ? "" : "\n");
            fflush(o->progress);
            open_line = o->tty;
            if (by_group && ((e + 1) % 10 == 0 || e + 1 == o->epochs)) {
                group_progress_print(o, m, theta, valid, &groups, ticking);
                open_line = false;
            }
        }
        bool stopping = (o->stop && *o->stop) || (o->stop_after > 0 && e + 1 >= o->stop_after);
        if (ex) stopping = ex->any_stop(ex->ctx, stopping); /* every process stops after the same epoch */
        char ckpt_err[1024];
        if (o->checkpoint && rank == 0 && ((e + 1) % o->checkpoint_every == 0 || e + 1 == o->epochs || stopping)) {
            if (save(o, m, theta, &st, e + 1, ckpt_err, sizeof ckpt_err) != 0) {
                /* a full disk must not cost the training done: go on, the parameters are still written */
                fprintf(stderr, "%sphysc: %s (training goes on)\n", open_line ? "\n" : "", ckpt_err);
                open_line = false;
                r->checkpoint_failures++;
            } else {
                r->checkpointed = e + 1;
            }
        }
        if (stopping && e + 1 < o->epochs) {
            r->status = PRT_TRAIN_INTERRUPTED;
            break;
        }
    }
out:
    prt_progress_end(&meter);
    m->progress = caller_meter;
    if (open_line) fputc('\n', o->progress);
    r->seconds = now_s() - t0;
    if (nshards > 1) openblas_set_num_threads(blas_threads);
    free(grads);
    for (int w = 0; w < nworkers; w++) {
        free(wk[w].chunks);
        if (w > 0 && wk[w].m == &wk[w].replica) prt_model_close(&wk[w].replica);
    }
    free(sh), free(wk);
    free(perm), free(grad);
    prt_adamw_free(&st.opt);
    return r->status;
}
