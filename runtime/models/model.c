/* model.c — the table of model families and what every model shares (see model.h). */
#include "model.h"
#include "core/alloc.h"
#include "model_kinds.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The families, one per row of model_kinds.h (each defined in a file of its own) */
#define FAMILY_EXTERN(id, name, ...) extern const PrtModelFamily prt_family_##name;
PRT_MODEL_KINDS(FAMILY_EXTERN)
#undef FAMILY_EXTERN
static const PrtModelFamily *const families[] = {
#define FAMILY_ROW(id, name, ...) &prt_family_##name,
    PRT_MODEL_KINDS(FAMILY_ROW)
#undef FAMILY_ROW
};
enum { NFAMILIES = sizeof families / sizeof families[0] };

const PrtModelFamily *prt_model_family(const char *name) {
    for (int i = 0; i < NFAMILIES; i++)
        if (!strcmp(families[i]->name, name)) return families[i];
    return NULL;
}

const char *prt_model_family_names(void) {
    static char names[256];
    if (!names[0])
        for (int i = 0, at = 0; i < NFAMILIES; i++)
            at += snprintf(names + at, sizeof names - (size_t)at, "%s%s", i ? ", " : "", families[i]->name);
    return names;
}

PrtModelConfig prt_model_config(const PrtModelFamily *family, const PrtMlp *net, bool learn_mass) {
    PrtModelConfig cfg = {.family = family, .nnets = 1, .net = {*net}, .learn_mass = learn_mass,
                          .integrator = PRT_INT_RK4_38, .predict = PRT_INT_RK4_38, .substeps = 1};
    if (family && family->own_init) family->own_init(&cfg);
    return cfg;
}

long prt_model_config_nparams(const PrtModelConfig *cfg) {
    long n = 0;
    for (int i = 0; i < cfg->nnets; i++) n += prt_mlp_nparams(&cfg->net[i]);
    return n + (cfg->family->own_params ? cfg->family->own_params(cfg) : 0);
}

int prt_model_config_set(PrtModelConfig *cfg, const char *name, double value) {
    return cfg->family->own_set ? cfg->family->own_set(cfg, name, value) : -1;
}

int prt_model_open(PrtModel *m, PrtSystem *sys, const PrtModelConfig *cfg, char *err, size_t errlen) {
    memset(m, 0, sizeof *m);
    if (!cfg->family) {
        snprintf(err, errlen, "internal error: a model without a family");
        return -1;
    }
    m->family = cfg->family, m->cfg = *cfg, m->sys = sys;
    if (cfg->balance_loss && !cfg->family->balance) {
        snprintf(err, errlen, "a %s model weighs every component of its loss alike (loss_weights balanced is for liet2 "
                 "models so far)", cfg->family->title);
        memset(m, 0, sizeof *m);
        return -1;
    }
    if (m->family->open(m, err, errlen) != 0) {
        memset(m, 0, sizeof *m);
        return -1;
    }
    return 0;
}

int prt_model_open_replica(PrtModel *replica, const PrtModel *m, char *err, size_t errlen) {
    if (prt_model_open(replica, m->sys, &m->cfg, err, errlen) != 0) return -1;
    if (m->family->adopt) m->family->adopt(replica, m);
    return 0;
}

void prt_model_close(PrtModel *m) {
    if (m->family) m->family->close(m);
    memset(m, 0, sizeof *m);
}

int prt_model_dopri5(PrtModel *m, PrtRhs f, long n, int dim, const double *z0, const double *times, int nt, double rtol,
                     double atol, double *out) {
    PrtOdeObserver obs = m->rollout_observer ? *m->rollout_observer : (PrtOdeObserver){0};
    if (m->rollout_max_steps > 0) {
        obs.max_steps = (long)m->rollout_max_steps * (nt > 1 ? nt - 1 : 1);
        obs.max_interval_steps = 10L * m->rollout_max_steps;
    }
    return prt_dopri5_observed(f, m, n, dim, z0, times, nt, rtol, atol, out, &m->rollout_stats, &obs);
}

int prt_model_check_rk_step(const PrtModel *m, char *err, size_t errlen) {
    const PrtIntegratorInfo *in = &prt_integrators[m->cfg.integrator];
    if (in->trainable && prt_integrator_tableau(m->cfg.integrator) && m->cfg.substeps >= 1) return 0;
    snprintf(err, errlen, "a %s model trains through an explicit Runge-Kutta step, not %s", m->family->title, in->name);
    return -1;
}

/* The next block's size, from the tape's recording of the last block of `done` chunks
   (none, if the family's loss did not record since `recordings`). */
static long next_block(const PrtModel *m, long done, long recordings) {
    if (!m->tape || prt_tape_recordings(m->tape) == recordings) return PRT_MODEL_LOSS_BLOCK;
    size_t per = prt_tape_bytes_recorded(m->tape) / (size_t)done + 1;
    size_t fit = PRT_MODEL_TAPE_BUDGET / per;
    return fit < 1 ? 1 : fit > PRT_MODEL_LOSS_BLOCK ? PRT_MODEL_LOSS_BLOCK : (long)fit;
}

/* Chunks b0 .. b0 + nb of a set of n (rows x n) into block (rows x nb). */
static void gather_chunks(long rows, long n, const double *chunks, long b0, long nb, double *block) {
    for (long r = 0; r < rows; r++) memcpy(block + r * nb, chunks + r * n + b0, sizeof(double) * (size_t)nb);
}

double prt_model_tape_per_chunk(PrtModel *m, long n, int npts, double dt, const double *chunks) {
    if (!m->tape || n < 1) return 0;
    long probe = n < 8 ? n : 8, rows = (long)prt_state_rows(m->sys) * npts;
    double *block = prt_xalloc((size_t)(rows * probe), sizeof(double), "the memory probe");
    double *theta = prt_xcalloc((size_t)m->nparams, sizeof(double), "the memory probe");
    double *grad = prt_xalloc((size_t)m->nparams, sizeof(double), "the memory probe");
    gather_chunks(rows, n, chunks, 0, probe, block);
    prt_model_loss_grad(m, theta, probe, npts, dt, block, grad);
    double per = (double)prt_tape_bytes_peak(m->tape) / (double)probe;
    free(block), free(theta), free(grad);
    return per;
}

void prt_model_for_blocks(PrtModel *m, long n, long rows, const double *chunks, PrtChunkBlockFn each, void *ctx) {
    if (n <= PRT_MODEL_LOSS_PROBE) { /* one block: the chunks as they lie */
        each(m, ctx, n, chunks);
        prt_progress_end(m->progress);
        return;
    }
    long cap = PRT_MODEL_LOSS_PROBE, next = PRT_MODEL_LOSS_PROBE;
    double *block = prt_xalloc((size_t)(rows * cap), sizeof(double), "loss blocks");
    for (long b0 = 0, nb; b0 < n; b0 += nb) {
        nb = n - b0 < next ? n - b0 : next;
        if (nb > cap) {
            free(block);
            cap = nb;
            block = prt_xalloc((size_t)(rows * cap), sizeof(double), "loss blocks");
        }
        gather_chunks(rows, n, chunks, b0, nb, block);
        long recordings = m->tape ? prt_tape_recordings(m->tape) : 0;
        each(m, ctx, nb, block);
        next = next_block(m, nb, recordings);
        prt_progress_tick(m->progress, (double)(b0 + nb), (double)n);
    }
    prt_progress_end(m->progress);
    free(block);
}

typedef struct SetLoss {
    const double *theta;
    bool truth;
    int npts;
    double dt, sum;
} SetLoss;

static void set_loss_block(PrtModel *m, void *ctx, long nb, const double *block) {
    SetLoss *c = ctx;
    double l = c->truth ? prt_model_truth_loss(m, nb, c->npts, c->dt, block) : prt_model_loss(m, c->theta, nb, c->npts, c->dt, block);
    c->sum += l * (double)nb;
}

double prt_model_set_loss(PrtModel *m, const double *theta, bool truth, long n, int npts, double dt,
                          const double *chunks) {
    SetLoss c = {theta, truth, npts, dt, 0};
    prt_model_for_blocks(m, n, (long)prt_state_rows(m->sys) * npts, chunks, set_loss_block, &c);
    return c.sum / (double)n;
}
