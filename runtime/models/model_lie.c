/* model_lie.c — the Lie T2 paper's learner (So, Li, Theodorou & Tao, Sec. 2.2 and App. C), a
   row of model.h for systems with `state so3` bodies: the system's known potential terms (its
   `known` list, e.g. point-mass gravity) plus a learned residual potential V_theta(X) of the
   positions and rotations (a sum of cfg.npotentials networks, each of the whole X, of the
   centres alone or of each body's view of the others (body_frame.h), each at its own scale:
   the orbits' correction and the spins' differ by 1e5),
   and optionally learned non-conservative forces F_theta (NP numbers:
   on each point, and on each so3 body's p then its body torque on Pi) of the positions or of
   the whole state (X, P). It is stepped H times per observation interval (`substeps`) by its
   training integrator as a recurrent block (lie_tape.h for liet2), and trained on the
   squared error of the predicted (X, P) against the observed ones after each interval
   (Eq. 4, with R and Pi in it too). The masses and inertia are the system's. Rollouts step
   the same integrator. theta: the potentials' parameters in order, then F's. */
#include "model.h"
#include "model_lie.h"
#include "core/alloc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "body_frame.h"
#include "integrators/lie_group.h"
#include "ad/lie_tape.h"
#include "ad/tape.h"
#include "io/svgplot.h"

_Static_assert(sizeof(PrtLieConfig) <= PRT_MODEL_OWN_BYTES, "PrtLieConfig fits PrtModelConfig's own part");

PrtLieConfig *prt_lie_config(PrtModelConfig *cfg) { return (PrtLieConfig *)cfg->own.bytes; }
const PrtLieConfig *prt_lie_config_of(const PrtModelConfig *cfg) { return (const PrtLieConfig *)cfg->own.bytes; }
static const PrtLieNet *net_of(const PrtModelConfig *cfg, int k) { return &prt_lie_config_of(cfg)->net[k]; }

typedef struct Lie {
    int npot;                        /* the residual potentials: networks 0 .. npot-1 */
    long off[PRT_MODEL_MAX_NETS];    /* each network's first parameter in theta */
    bool centres[PRT_MODEL_MAX_NETS]; /* a potential that reads centre_rows of X (`input centres`) */
    bool body_frame[PRT_MODEL_MAX_NETS]; /* a potential of the bodies' views of each other (`input body_frame`) */
    int gains[PRT_MODEL_MAX_NETS];  /* > 0: a term per viewing body (`input own_frame`, `own_centres`), each times
                                       its gain */
    bool world[PRT_MODEL_MAX_NETS]; /* its views are every body's in the world frame (`own_centres`) */
    long gain_off[PRT_MODEL_MAX_NETS]; /* where its gains' logarithms lie in theta */
    /* what the known terms alone miss over the training data (from_data; NULL: not measured):
       the torque on each rigid body, the force on every body */
    double *torque_scale, *force_scale;
    PrtBodyFrame frame; /* the rigid bodies' views in their own frames (npairs 0: no potential reads them) */
    PrtBodyFrame world_frame; /* every body's in the world frame (`own_centres`) */
    bool force;       /* a force network, network npot */
    bool force_state; /* it reads (X, P); else the positions */
    PrtTape *tape;
    double *kparams_adj; /* the Field VJP's mass adjoints (discarded) */
    double *in_scale[PRT_MODEL_MAX_NETS]; /* per input row: 1 / L on positions, T / L on velocities, T on angular
                                             velocities, 1 on rotations and momenta (NULL: all 1) */
    int *centre_rows; /* the rows of X a potential reads with `input centres` (no rotation entries) */
    double *row_weight; /* the loss's weight of each state row (cfg.balance_loss), NULL: all 1 */
    /* what the terms read while a step is recorded */
    const PrtModel *m;
    const double *theta;
    double *grad;
} Lie;

static Lie *impl(const PrtModel *m) { return m->impl; }

/* Whether row j of P is an angular momentum (of a `state so3` body). */
static bool is_angular_row(const PrtSystem *s, int j) {
    for (int k = 0; k < s->nso3; k++)
        if (j >= s->so3[k].p + 3 && j < s->so3[k].p + 6) return true;
    return false;
}

/* Whether row i of X is an entry of a body's R (unitless), not a position. */
static bool is_rotation_row(const PrtSystem *s, int i) {
    for (int k = 0; k < s->nso3; k++)
        if (i >= s->so3[k].x + 3 && i < s->so3[k].x + 12) return true;
    return false;
}

/* ---- a network's units of length and time: its input rows scaled (the toy's orbit is 0.02 AU
   across, and a network of inputs that small needs weights of 50 to bend over it, which
   AdamW's steps of the learning rate take thousands of iterations to grow) ---- */

typedef struct RowScale {
    const double *f; /* per row */
    long rows, n;
} RowScale;

static void row_scale_backward(PrtTape *t, const void *ctx, const int *in, int nin, int out) {
    const RowScale *r = ctx;
    double *xb = prt_tape_adj(t, in[0]);
    const double *yb = prt_tape_adj(t, out);
    for (long i = 0; i < r->rows; i++)
        for (long b = 0; b < r->n; b++) xb[i * r->n + b] += r->f[i] * yb[i * r->n + b];
}

/* ---- a potential of the bodies' centres alone (`input centres`): its input gathered from
   the position rows of X, its gradient scattered back (zero on the rotation entries) ---- */

typedef struct RowMap {
    const int *rows; /* row i of the short array is row rows[i] of the full one */
    long nrows, n;
} RowMap;

static void gather_backward(PrtTape *t, const void *ctx, const int *in, int nin, int out) {
    const RowMap *r = ctx;
    double *xb = prt_tape_adj(t, in[0]);
    const double *yb = prt_tape_adj(t, out);
    for (long i = 0; i < r->nrows; i++)
        for (long b = 0; b < r->n; b++) xb[r->rows[i] * r->n + b] += yb[i * r->n + b];
}

static int gather_rows(PrtTape *t, const int *rows, long nrows, int x, long n) {
    RowMap r = {rows, nrows, n};
    int y = prt_tape_op(t, gather_backward, &r, sizeof r, 1, &x, nrows * n);
    const double *xv = prt_tape_val(t, x);
    double *yv = prt_tape_val(t, y);
    for (long i = 0; i < nrows; i++) memcpy(yv + i * n, xv + rows[i] * n, sizeof(double) * (size_t)n);
    return y;
}

static void scatter_backward(PrtTape *t, const void *ctx, const int *in, int nin, int out) {
    const RowMap *r = ctx;
    double *xb = prt_tape_adj(t, in[0]);
    const double *yb = prt_tape_adj(t, out);
    for (long i = 0; i < r->nrows; i++)
        for (long b = 0; b < r->n; b++) xb[i * r->n + b] += yb[r->rows[i] * r->n + b];
}

static int scatter_rows(PrtTape *t, const int *rows, long nrows, long nfull, int x, long n) {
    RowMap r = {rows, nrows, n};
    int y = prt_tape_op(t, scatter_backward, &r, sizeof r, 1, &x, nfull * n);
    const double *xv = prt_tape_val(t, x);
    double *yv = prt_tape_val(t, y);
    memset(yv, 0, sizeof(double) * (size_t)(nfull * n));
    for (long i = 0; i < nrows; i++) memcpy(yv + rows[i] * n, xv + i * n, sizeof(double) * (size_t)n);
    return y;
}

/* y = x with row i (n states) times f[i], for rows rows. */
static int row_scale(PrtTape *t, const double *f, long rows, int x, long n) {
    RowScale r = {f, rows, n};
    int y = prt_tape_op(t, row_scale_backward, &r, sizeof r, 1, &x, rows * n);
    const double *xv = prt_tape_val(t, x);
    double *yv = prt_tape_val(t, y);
    for (long i = 0; i < rows; i++)
        for (long b = 0; b < n; b++) yv[i * n + b] = f[i] * xv[i * n + b];
    return y;
}

static void close_lie_parts(Lie *l);

static int open_lie(PrtModel *m, char *err, size_t errlen) {
    const PrtSystem *s = m->sys;
    const PrtModelConfig *cfg = &m->cfg;
    if (s->nso3 == 0) {
        snprintf(err, errlen, "a %s model learns rigid bodies with `state so3`; this system has none", m->family->title);
        return -1;
    }
    if (s->C > 0) {
        snprintf(err, errlen, "a %s model takes no constraints", m->family->title);
        return -1;
    }
    if (!prt_tape_so3_steps(cfg->integrator) || cfg->predict != cfg->integrator || cfg->substeps < 1) {
        snprintf(err, errlen, "a %s model trains through liet2, lie_rk2, lie_rk4, verlet, rk4 or euler steps, not %s",
                 m->family->title, prt_integrators[cfg->integrator].name);
        return -1;
    }
    int npot = prt_lie_config_of(cfg)->npotentials, ncentres = 0;
    for (int i = 0; i < s->N; i++) ncentres += !is_rotation_row(s, i);
    if (npot < 1 || cfg->nnets < npot || cfg->nnets > npot + 1 || cfg->nnets > PRT_MODEL_MAX_NETS) {
        snprintf(err, errlen, "a %s model has one to %d learned potentials and at most one force, not %d networks of "
                 "which %d potentials", m->family->title, PRT_MODEL_MAX_NETS - 1, cfg->nnets, npot);
        return -1;
    }
    for (int k = 0; k < npot; k++) {
        const PrtMlp *V = &cfg->net[k];
        if (net_of(cfg, k)->body_gains) {
            bool world = net_of(cfg, k)->own_centres_input;
            long nb = prt_body_frame_bodies(s), views = world ? nb : s->nso3, rows = 3L * (nb - 1) + views;
            if (net_of(cfg, k)->body_gains != views || V->size[0] != rows || V->size[V->nlayers] != 1) {
                snprintf(err, errlen, "the learned potential of a %s model with `input %s` must map the %ld numbers of "
                         "each of the %ld %s' views to one number, not %d to %d (%d gains)", m->family->title,
                         world ? "own_centres" : "own_frame", rows, views, world ? "bodies" : "rigid bodies",
                         V->size[0], V->size[V->nlayers], net_of(cfg, k)->body_gains);
                return -1;
            }
            continue;
        }
        if (net_of(cfg, k)->body_frame_input) {
            if (V->size[0] != prt_body_frame_rows(s) || V->size[V->nlayers] != 1) {
                snprintf(err, errlen, "the learned potential of a %s model with `input body_frame` must map the %ld "
                         "relative positions to one number, not %d to %d", m->family->title, prt_body_frame_rows(s),
                         V->size[0], V->size[V->nlayers]);
                return -1;
            }
            continue;
        }
        if ((V->size[0] != s->N && V->size[0] != ncentres) || V->size[V->nlayers] != 1) {
            snprintf(err, errlen, "the learned potential of a %s model must map the %d positions and rotations (or, "
                     "with `input centres`, the %d positions) to one number", m->family->title, s->N, ncentres);
            return -1;
        }
    }
    const PrtMlp *F = &cfg->net[npot];
    int W = prt_state_rows(s);
    if (cfg->nnets > npot && ((F->size[0] != s->N && F->size[0] != W) || F->size[F->nlayers] != s->NP)) {
        snprintf(err, errlen, "the learned force of a %s model must map the positions (%d) or the state (%d) to %d "
                 "forces and torques, not %d to %d", m->family->title, s->N, W, s->NP, F->size[0], F->size[F->nlayers]);
        return -1;
    }
    for (int k = 0; k < cfg->nnets; k++)
        if (!(net_of(cfg, k)->length_scale > 0 && isfinite(net_of(cfg, k)->length_scale) && net_of(cfg, k)->time_scale > 0 &&
              isfinite(net_of(cfg, k)->time_scale))) {
            snprintf(err, errlen, "a network's length and time scales must be positive and finite, not %g and %g",
                     net_of(cfg, k)->length_scale, net_of(cfg, k)->time_scale);
            return -1;
        }
    bool potential_velocities = false;
    for (int k = 0; k < npot; k++) potential_velocities |= net_of(cfg, k)->velocity_input;
    if (potential_velocities || (cfg->nnets > npot && net_of(cfg, npot)->velocity_input && F->size[0] != W)) {
        snprintf(err, errlen, "a %s model's force network may read `positions, velocities` (its potential reads positions)",
                 m->family->title);
        return -1;
    }
    Lie *l = prt_xcalloc(1, sizeof *l, "model buffers");
    l->npot = npot;
    for (int k = 0; k < cfg->nnets; k++) { /* each network's weights, then its gains */
        l->gain_off[k] = l->off[k] + prt_mlp_nparams(&cfg->net[k]);
        if (k + 1 < cfg->nnets) l->off[k + 1] = l->gain_off[k] + net_of(cfg, k)->body_gains;
    }
    for (int k = 0; k < npot; k++) {
        l->body_frame[k] = net_of(cfg, k)->body_frame_input;
        l->gains[k] = net_of(cfg, k)->body_gains;
        l->world[k] = l->gains[k] && net_of(cfg, k)->own_centres_input;
        l->centres[k] = !l->body_frame[k] && !l->gains[k] && cfg->net[k].size[0] == ncentres; /* (< N: every so3 body has rotation rows) */
        PrtBodyFrame *f = l->world[k] ? &l->world_frame : &l->frame;
        if ((l->body_frame[k] || l->gains[k]) && !f->npairs && prt_body_frame_init(f, s, l->world[k], err, errlen) != 0) {
            close_lie_parts(l);
            return -1;
        }
    }
    l->force = cfg->nnets > npot;
    l->force_state = l->force && F->size[0] == W;
    l->tape = prt_tape_new();
    m->tape = l->tape;
    l->kparams_adj = prt_xcalloc((size_t)s->nparams + 1, sizeof(double), "model buffers");
    l->centre_rows = prt_xalloc((size_t)ncentres, sizeof(int), "model buffers");
    for (int i = 0, c = 0; i < s->N; i++)
        if (!is_rotation_row(s, i)) l->centre_rows[c++] = i;
    for (int k = 0; k < cfg->nnets; k++) {
        double L = net_of(cfg, k)->length_scale, T = net_of(cfg, k)->time_scale;
        bool vel = net_of(cfg, k)->velocity_input;
        if (L == 1 && (!vel || T == 1)) continue;
        int rows = cfg->net[k].size[0];
        l->in_scale[k] = prt_xalloc((size_t)rows, sizeof(double), "model buffers");
        for (int i = 0; i < rows; i++) { /* positions in L, velocities in L / T, angular velocities in 1 / T */
            int x = l->centres[k] ? l->centre_rows[i] : i; /* the row of X (or P) it reads */
            double f = l->gains[k] ? (i < 3L * (prt_body_frame_bodies(s) - 1) ? 1 / L : 1) /* lengths, then which body */
                       : l->body_frame[k] ? 1 / L /* every feature is a length */
                       : x < s->N ? (is_rotation_row(s, x) ? 1 : 1 / L) : !vel ? 1 : is_angular_row(s, x - s->N) ? T : T / L;
            if (!(f > 0 && isfinite(f))) { /* e.g. length_scale 1e-300 with time_scale 1e300 */
                close_lie_parts(l);
                snprintf(err, errlen, "a network's length scale %g and time scale %g make an input factor of %g: "
                         "choose units nearer the data's", L, T, f);
                return -1;
            }
            l->in_scale[k][i] = f;
        }
    }
    m->nparams = l->gain_off[cfg->nnets - 1] + net_of(cfg, cfg->nnets - 1)->body_gains;
    m->impl = l;
    return 0;
}

static void close_lie_parts(Lie *l) {
    prt_tape_free(l->tape);
    free(l->kparams_adj);
    for (int k = 0; k < PRT_MODEL_MAX_NETS; k++) free(l->in_scale[k]);
    free(l->centre_rows);
    free(l->row_weight);
    free(l->torque_scale), free(l->force_scale);
    prt_body_frame_free(&l->frame);
    prt_body_frame_free(&l->world_frame);
    free(l);
}

static void close_lie(PrtModel *m) {
    Lie *l = impl(m);
    if (!l) return;
    close_lie_parts(l);
    m->impl = NULL;
}

static bool trainable(const PrtModel *m) {
    const PrtSystem *s = m->sys;
    return (!s->gradVknown || s->gradVknownVJP) && (m->cfg.integrator == PRT_INT_LIET2 || s->FieldVJP);
}

/* The networks start as no correction at all (their last layers zero): the model is then
   the known physics, the paper's "no corrections" row, and learns the residual from there. */
static void init_theta(const PrtModel *m, double *theta, PrtRng *rng) {
    long off = 0;
    for (int k = 0; k < m->cfg.nnets; k++) {
        const PrtMlp *net = &m->cfg.net[k];
        long np = prt_mlp_nparams(net), last = (long)net->size[net->nlayers] * (net->size[net->nlayers - 1] + 1);
        prt_mlp_init(net, theta + off, rng);
        memset(theta + off + np - last, 0, sizeof(double) * (size_t)last);
        off += np;
        /* each body's term at what the known terms miss on it: own_frame the torque, own_centres the force times
           the unit of length its gradient is divided by */
        const Lie *l = impl(m);
        const double *miss = l->world[k] ? l->force_scale : l->torque_scale;
        double unit = l->world[k] ? net_of(&m->cfg, k)->length_scale : 1;
        for (int i = 0; i < net_of(&m->cfg, k)->body_gains; i++, off++) theta[off] = miss ? log(miss[i] * unit) : 0;
    }
}

static int masses(const PrtModel *m, const double *theta, double *out) { return 0; /* the system's */ }

/* ---- the terms of a recorded step ---- */

/* y = x (rows x nb n, body-major columns) with body i's columns times exp(log_gain[i]); the
   backward pass adds each gain's logarithm's adjoint to log_gain_adj (if not NULL). */
typedef struct BodyGains {
    const double *log_gain;
    double *log_gain_adj;
    long rows, n;
    int nb;
} BodyGains;

static void body_gains_backward(PrtTape *t, const void *ctx, const int *in, int nin, int out) {
    const BodyGains *c = ctx;
    long cols = c->nb * c->n;
    const double *y = prt_tape_val(t, out), *yb = prt_tape_adj(t, out);
    double *xb = prt_tape_adj(t, in[0]);
    for (int i = 0; i < c->nb; i++) {
        double gain = exp(c->log_gain[i]), dlog = 0;
        for (long r = 0; r < c->rows; r++)
            for (long b = r * cols + i * c->n; b < r * cols + (i + 1) * c->n; b++) xb[b] += gain * yb[b], dlog += yb[b] * y[b];
        if (c->log_gain_adj) c->log_gain_adj[i] += dlog;
    }
}

static int body_gains(PrtTape *t, const double *log_gain, double *log_gain_adj, int nb, long rows, int x, long n) {
    BodyGains c = {log_gain, log_gain_adj, rows, n, nb};
    long cols = nb * n;
    int y = prt_tape_op(t, body_gains_backward, &c, sizeof c, 1, &x, rows * cols);
    const double *xv = prt_tape_val(t, x);
    double *yv = prt_tape_val(t, y);
    for (int i = 0; i < nb; i++) {
        double gain = exp(log_gain[i]);
        for (long r = 0; r < rows; r++)
            for (long b = r * cols + i * n; b < r * cols + (i + 1) * n; b++) yv[b] = gain * xv[b];
    }
    return y;
}

/* dV/dX of potential k of `input own_frame` (own_centres): sum over the rigid bodies (every
   body) i of gain_i net(view_i, e_i), so that a body's torque comes from its own term alone,
   and each term has its own size (a planet's missing torque falls with its asphericity and
   1/r^3, five decades across TRAPPIST-1; the step's error on its orbit with 1/r^5). */
static int own_frame_term(Lie *l, const PrtModel *m, PrtTape *t, int k, const double *theta, double *grad, int x,
                          long n) {
    const PrtBodyFrame *f = l->world[k] ? &l->world_frame : &l->frame;
    long rows = prt_body_frame_own_rows(f), cols = (long)f->nviews * n;
    int in = prt_tape_body_frame_by_body(t, f, prt_tape_body_frame(t, f, x, n), n);
    if (l->in_scale[k]) in = row_scale(t, l->in_scale[k], rows, in, cols);
    int g = prt_tape_mlp_grad(t, &m->cfg.net[k], theta + l->off[k], grad ? grad + l->off[k] : NULL, cols, in);
    if (l->in_scale[k]) g = row_scale(t, l->in_scale[k], rows, g, cols);
    g = body_gains(t, theta + l->gain_off[k], grad ? grad + l->gain_off[k] : NULL, f->nviews, rows, g, n);
    return prt_tape_body_frame_pullback(t, f, x, prt_tape_body_frame_join(t, f, g, n), n);
}

/* dV_theta/dX of the residual potentials on the tape: each network's input in its unit of
   length, its output times its scale, summed */
static int residual_term(Lie *l, const PrtModel *m, PrtTape *t, const double *theta, double *grad, int x, long n) {
    long N = m->sys->N;
    int dV[PRT_MODEL_MAX_NETS];
    for (int k = 0; k < l->npot; k++) {
        if (l->gains[k]) {
            dV[k] = own_frame_term(l, m, t, k, theta, grad, x, n);
            continue;
        }
        const double *f = l->in_scale[k];
        long rows = m->cfg.net[k].size[0];
        int in = l->centres[k] ? gather_rows(t, l->centre_rows, rows, x, n)
                 : l->body_frame[k] ? prt_tape_body_frame(t, &l->frame, x, n) : x;
        if (f) in = row_scale(t, f, rows, in, n);
        int g = prt_tape_mlp_grad(t, &m->cfg.net[k], theta + l->off[k], grad ? grad + l->off[k] : NULL, n, in);
        if (f) g = row_scale(t, f, rows, g, n);
        dV[k] = l->centres[k] ? scatter_rows(t, l->centre_rows, rows, N, g, n)
                : l->body_frame[k] ? prt_tape_body_frame_pullback(t, &l->frame, x, g, n) : g;
    }
    if (l->npot == 1 && net_of(&m->cfg, 0)->scale == 1) return dV[0];
    double scale[PRT_MODEL_MAX_NETS];
    for (int k = 0; k < l->npot; k++) scale[k] = net_of(&m->cfg, k)->scale;
    return prt_tape_lincomb(t, l->npot, dV, scale);
}

static int grad_term(void *ctx, PrtTape *t, int x, long n) {
    Lie *l = ctx;
    const PrtSystem *s = l->m->sys;
    int dV = residual_term(l, l->m, t, l->theta, l->grad, x, n);
    if (!s->gradVknown) return dV;
    int dK = prt_tape_kernel(t, s->gradVknown, s->gradVknownVJP, n, 1, &x, s->N, s->params, 0, NULL);
    return prt_tape_lincomb(t, 2, (int[]){dV, dK}, (double[]){1, 1});
}

/* (X, P) -> (X, M^-1 P): positions, velocities and body angular velocities; or (inverse
   false) (X, V) -> (X, M V). M (1/m, and J in the body's principal frame) is symmetric, so the
   backward pass applies the same map. */
typedef struct MassMap {
    const PrtSystem *s;
    long n;
    int scratch; /* NP x n */
    bool inverse;
} MassMap;

static void apply_mass(const MassMap *v, const double *in, double *out) {
    (v->inverse ? v->s->MinvP : v->s->MassV)(v->n, in, v->s->params, out);
}

static void mass_map_backward(PrtTape *t, const void *ctx, const int *in, int nin, int out) {
    const MassMap *v = ctx;
    long Nn = (long)v->s->N * v->n, NPn = (long)v->s->NP * v->n;
    double *zb = prt_tape_adj(t, in[0]), *tmp = prt_tape_val(t, v->scratch);
    const double *yb = prt_tape_adj(t, out);
    for (long i = 0; i < Nn; i++) zb[i] += yb[i];
    apply_mass(v, yb + Nn, tmp);
    for (long i = 0; i < NPn; i++) zb[Nn + i] += tmp[i];
}

static int mass_map(PrtTape *t, const PrtSystem *s, int z, long n, bool inverse) {
    MassMap v = {s, n, prt_tape_values(t, (long)s->NP * n), inverse};
    long Nn = (long)s->N * n;
    int y = prt_tape_op(t, mass_map_backward, &v, sizeof v, 1, &z, (long)prt_state_rows(s) * n);
    const double *zv = prt_tape_val(t, z);
    double *yv = prt_tape_val(t, y);
    memcpy(yv, zv, sizeof(double) * (size_t)Nn);
    apply_mass(&v, zv + Nn, yv + Nn);
    return y;
}

static int velocities(PrtTape *t, const PrtSystem *s, int z, long n) { return mass_map(t, s, z, n, true); }
static int momenta(PrtTape *t, const PrtSystem *s, int xv, long n) { return mass_map(t, s, xv, n, false); }

static int force_term(void *ctx, PrtTape *t, int z, long n) {
    Lie *l = ctx;
    int k = l->npot; /* the force network */
    int in = l->force_state ? z : prt_tape_view(t, z, 0, (long)l->m->sys->N * n);
    if (net_of(&l->m->cfg, k)->velocity_input) in = velocities(t, l->m->sys, z, n);
    if (l->in_scale[k]) in = row_scale(t, l->in_scale[k], l->m->cfg.net[k].size[0], in, n);
    int F = prt_tape_mlp_value(t, &l->m->cfg.net[k], l->theta + l->off[k], l->grad ? l->grad + l->off[k] : NULL, n, in);
    return net_of(&l->m->cfg, k)->scale != 1 ? prt_tape_lincomb(t, 1, &F, &net_of(&l->m->cfg, k)->scale) : F;
}

/* One step of the training integrator, of size h, from the state z on the tape. */
static int step(PrtModel *m, int z, long n, double h) {
    Lie *l = impl(m);
    PrtLieTapeTerms terms = {grad_term, l->force ? force_term : NULL, l, l->kparams_adj};
    return prt_tape_so3_step(l->tape, m->sys, m->cfg.integrator, z, n, h, &terms);
}

/* Cartesian (X, V) -> the model's (X, P) with the system's masses, for n states. */
static void to_state(const PrtSystem *s, long n, const double *xv, double *z) {
    long Nn = (long)s->N * n;
    memcpy(z, xv, sizeof(double) * (size_t)Nn);
    s->MassV(n, xv + Nn, s->params, z + Nn);
}
static void to_data(const PrtSystem *s, long n, const double *z, double *xv) {
    long Nn = (long)s->N * n;
    memcpy(xv, z, sizeof(double) * (size_t)Nn);
    s->MinvP(n, z + Nn, s->params, xv + Nn);
}

/* The state groups the loss may balance: positions, rotations, momenta, angular momenta. */
enum { GROUP_Q, GROUP_R, GROUP_P, GROUP_PI, NGROUPS };
static const char *const group_names[NGROUPS] = {"positions", "rotations", "momenta", "angular momenta"};

static int row_group(const PrtSystem *s, int r) {
    if (r < s->N) return is_rotation_row(s, r) ? GROUP_R : GROUP_Q;
    return is_angular_row(s, r - s->N) ? GROUP_PI : GROUP_P;
}

/* A chunk's share of the tape one segment of a window's rollout may hold (cfg.segment_bytes
   0): past it the recording is rewound, and the backward pass records each segment again
   from its first state. TRAPPIST-1's windows of 50 steps held 12.5 MB of tape a chunk (250
   KB a step), 3.2 GB a minibatch of 256; in segments of two steps, 128 MB, for a second
   forward pass. A small model's windows fit whole and are recorded once. */
enum { SEGMENT_BYTES = 512 << 10 };

/* A rollout's segments: where each starts (a step, 0 .. steps) and, for the backward pass,
   its first state (pt doubles each); the loss's seed on the state after each interval. */
typedef struct Segments {
    int n, cap, *start;
    double *state;
    double *seed; /* interval k's at seed + k pt (k = 1 .. npts - 1) */
    int *end_var; /* the state after interval k: its variable in the segment on the tape */
} Segments;

static void segments_push(Segments *g, int first, const double *z, long pt) {
    if (g->n == g->cap) {
        g->cap = g->cap ? 2 * g->cap : 8;
        g->start = prt_xrealloc(g->start, (size_t)g->cap, sizeof(int), "model buffers");
        g->state = prt_xrealloc(g->state, (size_t)g->cap * (size_t)pt, sizeof(double), "model buffers");
    }
    g->start[g->n] = first;
    memcpy(g->state + (long)g->n * pt, z, sizeof(double) * (size_t)pt);
    g->n++;
}

/* The backward pass over the segments, last first: each but the last (still on the tape)
   recorded again from its first state; its states' adjoints seeded (the loss's seed on the
   states after intervals, and on its last state the adjoint the next segment left on its
   first), so that every adjoint sums the same terms in the same order as one sweep over the
   whole recording (the gradient is the same to the bit). */
static void backward_segments(PrtModel *m, Segments *g, long n, int H, int steps, double h, long pt) {
    PrtTape *t = impl(m)->tape;
    double *carry = prt_xalloc((size_t)pt, sizeof(double), "model buffers");
    for (int s = g->n - 1; s >= 0; s--) {
        int first = g->start[s], last = s + 1 < g->n ? g->start[s + 1] : steps, z = 0;
        if (s + 1 < g->n) { /* record it again (the last is on the tape from the forward pass) */
            prt_tape_rewind(t, -1);
            z = prt_tape_leaf(t, pt);
            memcpy(prt_tape_val(t, z), g->state + (long)s * pt, sizeof(double) * (size_t)pt);
            for (int i = first + 1; i <= last; i++) {
                z = step(m, z, n, h);
                if (i % H == 0) g->end_var[i / H] = z;
            }
        }
        prt_tape_zero_adjoints(t);
        for (int i = first; i <= last; i++) {
            if (i == 0 || i % H != 0) continue;
            int v = i == first ? 0 : g->end_var[i / H];
            if (i == last && s + 1 < g->n) continue; /* its seed is in carry */
            double *a = prt_tape_adj(t, v);
            const double *seed = g->seed + (long)(i / H) * pt;
            for (long j = 0; j < pt; j++) a[j] += seed[j];
        }
        if (s + 1 < g->n) memcpy(prt_tape_adj(t, z), carry, sizeof(double) * (size_t)pt); /* z: its last state */
        if (s > 0) prt_tape_backward_segment(t);
        else prt_tape_backward(t);
        memcpy(carry, prt_tape_adj(t, 0), sizeof(double) * (size_t)pt);
    }
    free(carry);
}

/* The mean squared error of the predicted (X, P) after each interval of n chunks, each row
   weighted (row_weight); with grad, its gradient; with row_sq, each row's unweighted sum of
   squared errors added to it. The rollout is recorded in segments (SEGMENT_BYTES), a step
   each without the gradient. */
static double chunk_loss_rows(PrtModel *m, const double *theta, double *grad, long n, int npts, double dt,
                              const double *chunks, double *row_sq) {
    Lie *l = impl(m);
    PrtSystem *s = m->sys;
    long pt = (long)prt_state_rows(s) * n;
    int H = m->cfg.substeps, steps = (npts - 1) * H;
    double h = dt / H;
    /* (a loss without its gradient holds one step: nothing is recorded again) */
    size_t cap = grad ? (size_t)n * (prt_lie_config_of(&m->cfg)->segment_bytes ? prt_lie_config_of(&m->cfg)->segment_bytes : SEGMENT_BYTES) : 0;
    l->m = m, l->theta = theta, l->grad = grad;
    if (grad) memset(grad, 0, sizeof(double) * (size_t)m->nparams);
    PrtTape *t = l->tape;
    prt_tape_reset(t);
    int z = prt_tape_leaf(t, pt);
    to_state(s, n, chunks, prt_tape_val(t, z));
    Segments g = {0};
    g.end_var = prt_xalloc((size_t)npts, sizeof(int), "model buffers");
    if (grad) {
        g.seed = prt_xcalloc((size_t)npts * (size_t)pt, sizeof(double), "model buffers");
        segments_push(&g, 0, prt_tape_val(t, z), pt);
    }
    double *target = prt_xalloc((size_t)pt, sizeof(double), "model buffers"), loss = 0;
    double count = (double)(npts - 1) * (double)pt;
    for (int i = 1; i <= steps; i++) {
        z = step(m, z, n, h);
        if (i % H == 0) { /* the state after interval k, against the data's */
            int k = i / H;
            g.end_var[k] = z;
            to_state(s, n, chunks + k * pt, target);
            const double *p = prt_tape_val(t, z);
            double *a = grad ? g.seed + k * pt : NULL;
            for (long j = 0; j < pt; j++) {
                double e = p[j] - target[j], w = l->row_weight ? l->row_weight[j / n] : 1;
                loss += w * e * e;
                if (a) a[j] += 2 * w * e / count;
                if (row_sq) row_sq[j / n] += e * e;
            }
        }
        if (i < steps && prt_tape_bytes_in_use(t) > cap) { /* the next segment starts from this state */
            z = prt_tape_rewind(t, z);
            if (i % H == 0) g.end_var[i / H] = z;
            if (grad) segments_push(&g, i, prt_tape_val(t, z), pt);
        }
    }
    if (grad) backward_segments(m, &g, n, H, steps, h, pt);
    free(target), free(g.start), free(g.state), free(g.seed), free(g.end_var);
    return loss / count;
}

static double chunk_loss(PrtModel *m, const double *theta, double *grad, long n, int npts, double dt,
                         const double *chunks) {
    return chunk_loss_rows(m, theta, grad, n, npts, dt, chunks, NULL);
}

typedef struct GroupBlocks {
    const double *theta;
    int npts;
    double dt, *row_sq;
} GroupBlocks;

static double truth_rows(PrtModel *m, long n, int npts, double dt, const double *chunks, double *row_sq);

static void group_block(PrtModel *m, void *ctx, long nb, const double *block) {
    GroupBlocks *c = ctx;
    if (c->theta) chunk_loss_rows(m, c->theta, NULL, nb, c->npts, c->dt, block, c->row_sq);
    else truth_rows(m, nb, c->npts, c->dt, block, c->row_sq);
}

/* Each state group's unweighted mean squared error of theta (NULL: of the system's own
   dynamics stepped as in training) over n chunks (in blocks, as prt_model_set_loss) into
   mse (NaN for a group the system has no rows of). */
static void group_mse(PrtModel *m, const double *theta, long n, int npts, double dt, const double *chunks,
                      double mse[NGROUPS]) {
    const PrtSystem *s = m->sys;
    int W = prt_state_rows(s);
    double *saved = impl(m)->row_weight;
    impl(m)->row_weight = NULL;
    double *row_sq = prt_xcalloc((size_t)W, sizeof(double), "model buffers");
    GroupBlocks c = {theta, npts, dt, row_sq};
    prt_model_for_blocks(m, n, (long)W * npts, chunks, group_block, &c);
    impl(m)->row_weight = saved;
    double rows[NGROUPS] = {0};
    for (int g = 0; g < NGROUPS; g++) mse[g] = 0;
    for (int r = 0; r < W; r++) mse[row_group(s, r)] += row_sq[r], rows[row_group(s, r)]++;
    for (int g = 0; g < NGROUPS; g++) mse[g] = rows[g] > 0 ? mse[g] / (rows[g] * (double)n * (double)(npts - 1)) : NAN;
    free(row_sq);
}

static int loss_groups(PrtModel *m, const double *theta, long n, int npts, double dt, const double *chunks, double *mse,
                       const char **names) {
    group_mse(m, theta, n, npts, dt, chunks, mse);
    for (int g = 0; g < NGROUPS; g++) names[g] = group_names[g];
    return NGROUPS;
}

/* cfg.balance_loss (model.h): each group's weight 1 / its mean squared error under the known
   terms alone (theta = 0) over the training chunks (1 for a group they predict exactly). */
static int balance(PrtModel *m, long n, int npts, double dt, const double *chunks, char *err, size_t errlen) {
    Lie *l = impl(m);
    const PrtSystem *s = m->sys;
    int W = prt_state_rows(s);
    free(l->row_weight), l->row_weight = NULL;
    double *zero = prt_xcalloc((size_t)m->nparams, sizeof(double), "model buffers"), mse[NGROUPS];
    group_mse(m, zero, n, npts, dt, chunks, mse);
    free(zero);
    l->row_weight = prt_xalloc((size_t)W, sizeof(double), "model buffers");
    for (int r = 0; r < W; r++) {
        int g = row_group(s, r);
        l->row_weight[r] = mse[g] > 0 ? 1 / mse[g] : 1;
        if (!isfinite(l->row_weight[r])) {
            snprintf(err, errlen, "the known terms alone give the %s a mean squared error of %g: the loss cannot be "
                     "balanced on it", group_names[g], mse[g]);
            free(l->row_weight), l->row_weight = NULL;
            return -1;
        }
    }
    return 0;
}

/* Body b's rows (its Cartesian points first, then its so3 bodies): its first of X, of P. */
static int body_x_row(const PrtSystem *s, long b) {
    long cart = s->N - 12L * s->nso3;
    return b < cart / 3 ? (int)(3 * b) : s->so3[b - cart / 3].x;
}
static int body_p_row(const PrtSystem *s, long b) {
    long cart = s->N - 12L * s->nso3;
    return b < cart / 3 ? (int)(3 * b) : s->so3[b - cart / 3].p;
}

/* Root mean square over n chunks of npts points of the error rows row_sq[first + 0..2] of
   each of nb bodies, over dt, into out: what the known terms miss on each. A body they
   follow exactly gets a billionth of the largest (so that its term's logarithm is finite).
   0, or -1 with a message. */
static int missed_rates(const double *row_sq, const int *first, long nb, long n, int npts, double dt, const char *what,
                        double *out, char *err, size_t errlen) {
    double largest = 0;
    for (long b = 0; b < nb; b++) {
        double sq = row_sq[first[b]] + row_sq[first[b] + 1] + row_sq[first[b] + 2];
        out[b] = sqrt(sq / ((double)n * (npts - 1))) / dt;
        if (!isfinite(out[b])) {
            snprintf(err, errlen, "the known terms alone give body %ld a %s error of %g over the training data: its "
                     "learned term cannot be sized from it", b + 1, what, out[b] * dt);
            return -1;
        }
        largest = fmax(largest, out[b]);
    }
    for (long b = 0; b < nb; b++)
        if (!(out[b] > 1e-9 * largest)) out[b] = largest > 0 ? 1e-9 * largest : 1;
    return 0;
}

static int note_rates(const PrtSystem *s, const char *what, const double *rate, long first_body, long nb, char *note,
                      size_t notelen, int len) {
    if (len < 0 || (size_t)len >= notelen) return len;
    len += snprintf(note + len, notelen - (size_t)len, "%s%s:", len ? "\n" : "", what);
    for (long b = 0; b < nb && len >= 0 && (size_t)len < notelen; b++) {
        const char *name = s->names[body_x_row(s, first_body + b)], *dot = strrchr(name, '.');
        len += snprintf(note + len, notelen - (size_t)len, "%s %.*s %.2e", b ? "," : "",
                        (int)(dot ? dot - name : (long)strlen(name)), name, rate[b]);
    }
    return len;
}

/* What the known terms alone (theta = 0) miss over the n training chunks: the root mean
   square of each rigid body's angular momentum error and of each body's momentum error
   after each interval, over dt, the torque and the force they leave out. A term per body
   (own_frame, own_centres) starts at that size (init_theta). */
static int from_data(PrtModel *m, long n, int npts, double dt, const double *chunks, char *note, size_t notelen,
                     char *err, size_t errlen) {
    Lie *l = impl(m);
    const PrtSystem *s = m->sys;
    bool torques = false, forces = false;
    for (int k = 0; k < l->npot; k++) torques |= l->gains[k] && !l->world[k], forces |= l->world[k];
    if (!(torques || forces) || n < 1 || npts < 2) return 0;
    int W = prt_state_rows(s);
    long nb = prt_body_frame_bodies(s), cart_bodies = nb - s->nso3;
    double *saved = l->row_weight, *row_sq = prt_xcalloc((size_t)W, sizeof(double), "model buffers");
    double *zero = prt_xcalloc((size_t)m->nparams, sizeof(double), "model buffers");
    l->row_weight = NULL;
    GroupBlocks c = {zero, npts, dt, row_sq};
    prt_model_for_blocks(m, n, (long)W * npts, chunks, group_block, &c);
    l->row_weight = saved;
    free(zero);
    free(l->torque_scale), free(l->force_scale);
    l->torque_scale = prt_xalloc((size_t)s->nso3, sizeof(double), "model buffers");
    l->force_scale = prt_xalloc((size_t)nb, sizeof(double), "model buffers");
    int *first = prt_xalloc((size_t)nb, sizeof(int), "model buffers");
    for (int b = 0; b < s->nso3; b++) first[b] = s->N + s->so3[b].p + 3; /* Pi */
    int rc = missed_rates(row_sq, first, s->nso3, n, npts, dt, "angular momentum", l->torque_scale, err, errlen);
    for (long b = 0; b < nb; b++) first[b] = s->N + body_p_row(s, b); /* p */
    if (rc == 0) rc = missed_rates(row_sq, first, nb, n, npts, dt, "momentum", l->force_scale, err, errlen);
    free(row_sq), free(first);
    if (rc != 0) {
        free(l->torque_scale), free(l->force_scale);
        l->torque_scale = l->force_scale = NULL;
        return -1;
    }
    int len = 0;
    if (torques)
        len = note_rates(s, "each rigid body's term (own_frame) starts at the torque the known terms miss on it (rms over "
                         "the training data)", l->torque_scale, cart_bodies, s->nso3, note, notelen, len);
    if (forces)
        len = note_rates(s, "each body's term (own_centres) starts at the force the known terms miss on it (rms over the "
                         "training data), times the network's unit of length", l->force_scale, 0, nb, note, notelen, len);
    return 0;
}

static double *copy_of(const double *x, long n) {
    if (!x) return NULL;
    double *y = prt_xalloc((size_t)n, sizeof(double), "model buffers");
    memcpy(y, x, sizeof(double) * (size_t)n);
    return y;
}

/* The loss's row weights (balance) and the missed torques and forces (from_data) */
static void adopt(PrtModel *replica, const PrtModel *m) {
    Lie *r = impl(replica);
    const Lie *l = impl(m);
    const PrtSystem *s = m->sys;
    free(r->row_weight), free(r->torque_scale), free(r->force_scale);
    r->row_weight = copy_of(l->row_weight, prt_state_rows(s));
    r->torque_scale = copy_of(l->torque_scale, s->nso3);
    r->force_scale = copy_of(l->force_scale, prt_body_frame_bodies(s));
}

static double loss_grad(PrtModel *m, const double *theta, long n, int npts, double dt, const double *chunks,
                        double *grad) {
    return chunk_loss(m, theta, grad, n, npts, dt, chunks);
}

static double loss(PrtModel *m, const double *theta, long n, int npts, double dt, const double *chunks) {
    return chunk_loss(m, theta, NULL, n, npts, dt, chunks);
}

/* The system's own dynamics stepped as in training, with the same loss; with row_sq, each
   row's unweighted sum of squared errors added to it (as chunk_loss_rows). */
static double truth_rows(PrtModel *m, long n, int npts, double dt, const double *chunks, double *row_sq) {
    const Lie *l = impl(m);
    PrtSystem *s = m->sys;
    long pt = (long)prt_state_rows(s) * n;
    double *z = prt_xalloc((size_t)pt, sizeof(double), "model buffers"), *target = prt_xalloc((size_t)pt, sizeof(double), "model buffers");
    double *work = prt_xalloc((size_t)(prt_lie_work_len(s, n) + 5 * pt), sizeof(double), "model buffers"), loss = 0;
    int id = m->cfg.integrator, lie = prt_lie_method(id);
    double h = dt / m->cfg.substeps;
    to_state(s, n, chunks, z);
    for (int k = 1; k < npts; k++) {
        for (int j = 0; j < m->cfg.substeps; j++)
            if (lie >= 0) prt_lie_step(s, (PrtLieMethod)lie, n, h, z, work);
            else prt_rk_step(prt_integrator_tableau((PrtIntegrator)id), prt_hamiltonian_rhs, s, n, prt_state_rows(s), h, z, work);
        to_state(s, n, chunks + k * pt, target);
        for (long i = 0; i < pt; i++) {
            double e2 = (z[i] - target[i]) * (z[i] - target[i]);
            loss += (l->row_weight ? l->row_weight[i / n] : 1) * e2;
            if (row_sq) row_sq[i / n] += e2;
        }
    }
    free(z), free(target), free(work);
    return loss / ((double)(npts - 1) * (double)pt);
}

static double truth_loss(PrtModel *m, long n, int npts, double dt, const double *chunks) {
    return truth_rows(m, n, npts, dt, chunks, NULL);
}

/* Steps the model from xv0 through times (equally spaced: the intervals are the data's),
   H substeps an interval, on the tape without a backward pass, rewound every step (the
   evaluation's one-interval rollouts from 120 test states of TRAPPIST-1 held 1.2 GB for an
   interval of 25 steps in f64). */
static int rollout(PrtModel *m, const double *theta, long n, const double *xv0, const double *times, int nt,
                   double rtol, double atol, double *out) {
    Lie *l = impl(m);
    PrtSystem *s = m->sys;
    long pt = (long)prt_state_rows(s) * n;
    double *z = prt_xalloc((size_t)pt, sizeof(double), "model buffers");
    l->m = m, l->theta = theta, l->grad = NULL;
    memset(&m->rollout_stats, 0, sizeof m->rollout_stats);
    to_state(s, n, xv0, z);
    memcpy(out, xv0, sizeof(double) * (size_t)pt);
    int rc = 0;
    for (int k = 1; k < nt && !rc; k++) {
        prt_tape_reset(l->tape);
        int v = prt_tape_leaf(l->tape, pt);
        memcpy(prt_tape_val(l->tape, v), z, sizeof(double) * (size_t)pt);
        for (int j = 0; j < m->cfg.substeps; j++) {
            if (j) v = prt_tape_rewind(l->tape, v);
            v = step(m, v, n, (times[k] - times[k - 1]) / m->cfg.substeps);
        }
        memcpy(z, prt_tape_val(l->tape, v), sizeof(double) * (size_t)pt);
        to_data(s, n, z, out + k * pt);
        m->rollout_stats.steps += m->cfg.substeps;
        long bad = prt_first_nonfinite(out + k * pt, pt);
        if (bad >= 0) {
            m->rollout_stats.failure = PRT_ODE_NONFINITE, m->rollout_stats.t_fail = times[k], m->rollout_stats.bad = bad;
            for (int j = k + 1; j < nt; j++) memcpy(out + j * pt, out + k * pt, sizeof(double) * (size_t)pt);
            rc = -1;
        }
        if (m->rollout_observer && m->rollout_observer->reached) m->rollout_observer->reached(m->rollout_observer->ctx, k, nt);
    }
    free(z);
    return rc;
}

/* ---- the library's derivatives (model.h: tape_field, tape_step) ---- */

static int abi_tape_step(PrtModel *m, const double *theta, double *grad, long n, double dt, int steps, int xv, char *err,
                         size_t errlen) {
    Lie *l = impl(m);
    l->m = m, l->theta = theta, l->grad = grad;
    int z = momenta(l->tape, m->sys, xv, n);
    for (int k = 0; k < steps; k++)
        for (int j = 0; j < m->cfg.substeps; j++) z = step(m, z, n, dt / m->cfg.substeps);
    return velocities(l->tape, m->sys, z, n);
}

/* The model's flat field (R' = R hat(Omega), Pi' = Pi x Omega + tau): (Xdot, Pdot) -> (Xdot, M^-1 Pdot) */
static int abi_tape_field(PrtModel *m, const double *theta, double *grad, long n, int xv, char *err, size_t errlen) {
    Lie *l = impl(m);
    if (!m->sys->FieldVJP)
        return snprintf(err, errlen, "this library was built without the field's VJP kernel"), -1;
    l->m = m, l->theta = theta, l->grad = grad;
    PrtLieTapeTerms terms = {grad_term, l->force ? force_term : NULL, l, l->kparams_adj};
    int zdot = prt_tape_so3_field(l->tape, m->sys, momenta(l->tape, m->sys, xv, n), n, &terms);
    return velocities(l->tape, m->sys, zdot, n);
}

/* dV_theta/dX: the learned residual's gradient (scaled), for the evaluation */
static void residual_grad(PrtModel *m, const double *theta, long n, const double *X, double *G) {
    Lie *l = impl(m);
    PrtTape *t = l->tape;
    prt_tape_reset(t);
    int x = prt_tape_leaf(t, (long)m->sys->N * n);
    memcpy(prt_tape_val(t, x), X, sizeof(double) * (size_t)(m->sys->N * n));
    int g = residual_term(l, m, t, theta, NULL, x, n);
    memcpy(G, prt_tape_val(t, g), sizeof(double) * (size_t)(m->sys->N * n));
}

/* The residual potentials' value V_theta(X) (n) on the tape, as residual_term takes their
   gradient: each network at its inputs in its unit of length, an own_frame term summed over
   its viewing bodies times their gains, each network times its scale. */
static void residual_value(Lie *l, const PrtModel *m, PrtTape *t, const double *theta, int x, long n, double *V) {
    for (long b = 0; b < n; b++) V[b] = 0;
    for (int k = 0; k < l->npot; k++) {
        const PrtBodyFrame *f = l->world[k] ? &l->world_frame : &l->frame;
        long rows = m->cfg.net[k].size[0], cols = l->gains[k] ? (long)f->nviews * n : n;
        int in = l->gains[k] ? prt_tape_body_frame_by_body(t, f, prt_tape_body_frame(t, f, x, n), n)
                 : l->centres[k] ? gather_rows(t, l->centre_rows, rows, x, n)
                 : l->body_frame[k] ? prt_tape_body_frame(t, &l->frame, x, n) : x;
        if (l->in_scale[k]) in = row_scale(t, l->in_scale[k], rows, in, cols);
        const double *v = prt_tape_val(t, prt_tape_mlp_value(t, &m->cfg.net[k], theta + l->off[k], NULL, cols, in));
        for (long c = 0; c < cols; c++) /* (an own_frame term's columns: body-major) */
            V[c % n] += net_of(&m->cfg, k)->scale * (l->gains[k] ? exp(theta[l->gain_off[k] + c / n]) : 1) * v[c];
    }
}

/* The model's energy at Cartesian states (X, V): the kinetic energy with the system's masses
   and moments, its known terms and its residual potentials; what its Lie T2 step keeps near
   constant (a force network's work is not in it). */
static void energy(PrtModel *m, const double *theta, long n, const double *xv, double *out) {
    Lie *l = impl(m);
    PrtSystem *s = m->sys;
    long N = s->N, pt = (long)prt_state_rows(s) * n;
    double *z = prt_xalloc((size_t)(pt + 3 * n), sizeof(double), "model buffers"), *h = z + pt, *v = h + n, *known = v + n;
    to_state(s, n, xv, z);
    prt_energy(s, n, z, h); /* T = H - V of the system's own (its masses are the model's) */
    prt_potential(s, n, z, v);
    if (s->Vknown) s->Vknown(n, z, s->params, known);
    prt_tape_reset(l->tape);
    int x = prt_tape_leaf(l->tape, N * n);
    memcpy(prt_tape_val(l->tape, x), z, sizeof(double) * (size_t)(N * n));
    residual_value(l, m, l->tape, theta, x, n, out);
    for (long b = 0; b < n; b++) out[b] += h[b] - v[b] + (s->Vknown ? known[b] : 0);
    free(z);
}

/* The residual potentials in the model's order (summed), then the force network if there is
   one, each with the units and inputs of its learned term. */
static int configure(const PrtModelDecl *d, PrtModelConfig *cfg, const PrtLearnedTerm **blame, char *err, size_t errlen) {
    *blame = NULL;
    if (d->npotentials < 1 || d->npotentials > PRT_MODEL_MAX_NETS - 1 || d->nforces > 1) {
        snprintf(err, errlen, "model '%s' (liet2) takes one to %d learned potentials (their sum is the residual of its "
                 "known terms) and at most one learned force", d->name, PRT_MODEL_MAX_NETS - 1);
        return -1;
    }
    PrtLieConfig *own = prt_lie_config(cfg);
    own->npotentials = d->npotentials;
    cfg->nnets = d->npotentials + d->nforces;
    for (int k = 0; k < cfg->nnets; k++) {
        const PrtLearnedTerm *l = k < d->npotentials ? &d->potentials[k] : &d->forces[0];
        own->net[k] = (PrtLieNet){.scale = l->scale, .length_scale = l->length_scale, .time_scale = l->time_scale,
                                  .velocity_input = l->velocity_input, .body_frame_input = l->body_frame_input,
                                  .body_gains = l->body_gains, .own_centres_input = l->own_centres_input};
        cfg->net[k] = l->net;
    }
    return 0;
}

/* Every network in units of 1, one potential */
static void own_init(PrtModelConfig *cfg) {
    PrtLieConfig *own = prt_lie_config(cfg);
    *own = (PrtLieConfig){.npotentials = 1};
    for (int k = 0; k < PRT_MODEL_MAX_NETS; k++) own->net[k] = (PrtLieNet){.scale = 1, .length_scale = 1, .time_scale = 1};
}

/* The bodies' gains of the own_frame and own_centres potentials */
static long own_params(const PrtModelConfig *cfg) {
    long n = 0;
    for (int k = 0; k < cfg->nnets; k++) n += net_of(cfg, k)->body_gains;
    return n;
}

/* Network k's settings as the checkpoint's fingerprint has always read them (each only when set) */
static void own_words(const PrtModelConfig *cfg, int k, char *buf, size_t len) {
    const PrtLieNet *w = net_of(cfg, k);
    size_t at = 0;
    buf[0] = 0;
#define SAY(...) (at += (size_t)snprintf(buf + at, at < len ? len - at : 0, __VA_ARGS__))
    if (w->scale != 1) SAY("scale %.17g|", w->scale);
    if (w->length_scale != 1) SAY("length_scale %.17g|", w->length_scale);
    if (w->time_scale != 1) SAY("time_scale %.17g|", w->time_scale);
    if (w->velocity_input) SAY("velocity input|");
    if (w->body_frame_input) SAY("body_frame input|");
    if (w->body_gains) SAY(w->own_centres_input ? "own_centres input|" : "own_frame input|");
    if (k > 0 && k < prt_lie_config_of(cfg)->npotentials) SAY("potential|"); /* (a second or later potential) */
#undef SAY
}

/* The settings by name, as own_emit writes them for an emitted program */
static int own_set(PrtModelConfig *cfg, const char *name, double value) {
    PrtLieConfig *own = prt_lie_config(cfg);
    int k;
    char field[32];
    if (!strcmp(name, "npotentials")) return own->npotentials = (int)value, 0;
    if (sscanf(name, "%31[a-z_][%d]", field, &k) != 2 || k < 0 || k >= PRT_MODEL_MAX_NETS) return -1;
    PrtLieNet *w = &own->net[k];
    if (!strcmp(field, "scale")) w->scale = value;
    else if (!strcmp(field, "length_scale")) w->length_scale = value;
    else if (!strcmp(field, "time_scale")) w->time_scale = value;
    else if (!strcmp(field, "velocity_input")) w->velocity_input = value != 0;
    else if (!strcmp(field, "body_frame_input")) w->body_frame_input = value != 0;
    else if (!strcmp(field, "body_gains")) w->body_gains = (int)value;
    else if (!strcmp(field, "own_centres_input")) w->own_centres_input = value != 0;
    else return -1;
    return 0;
}

static void own_emit(const PrtModelConfig *cfg, FILE *out) {
    fprintf(out, "    prt_model_config_set(&cfg, \"npotentials\", %d);\n", prt_lie_config_of(cfg)->npotentials);
    for (int k = 0; k < cfg->nnets; k++) {
        const PrtLieNet *w = net_of(cfg, k);
        double v[7] = {w->scale, w->length_scale, w->time_scale, w->velocity_input, w->body_frame_input, w->body_gains,
                       w->own_centres_input};
        static const char *const names[7] = {"scale", "length_scale", "time_scale", "velocity_input", "body_frame_input",
                                             "body_gains", "own_centres_input"};
        for (int i = 0; i < 7; i++)
            fprintf(out, "    prt_model_config_set(&cfg, \"%s[%d]\", %.17g);\n", names[i], k, v[i]);
    }
}

static const char *net_role(const PrtModelConfig *cfg, int k) { return k < prt_lie_config_of(cfg)->npotentials ? "potential" : "force"; }

/* Its rollouts step its prediction integrator, substeps times an interval, as the recurrent
   block it trains through */
static void say_rollout(const PrtModel *m, double rtol, double atol, char *buf, size_t len) {
    snprintf(buf, len, "%s, %d %s an interval", prt_integrators[m->cfg.predict].name, m->cfg.substeps,
             m->cfg.substeps == 1 ? "step" : "steps");
}

/* The first test trajectory's states (x0: W rows, (X, Xdot)) at every step of the model's
   rollout (the prediction step, substeps an interval: nt - 1 intervals), into out (W x the
   returned count, a state a column): the model's theta, the same steps it is evaluated with,
   only seen between the observations. */
static int model_fine(PrtModel *m, const double *theta, const double *x0, int nt, double dt, double *out) {
    int sub = m->cfg.substeps, nf = (nt - 1) * sub + 1;
    double *times = prt_xalloc((size_t)nf, sizeof(double), "plot data");
    for (int k = 0; k < nf; k++) times[k] = k * dt / sub;
    m->cfg.substeps = 1; /* (one step an output: the steps of the evaluated rollout) */
    prt_model_rollout(m, theta, 1, x0, times, nf, 1e-9, 1e-12, out); /* (a failure leaves gaps in its line) */
    m->cfg.substeps = sub;
    free(times);
    return nf;
}

/* The true dynamics from x0 at nf times dt apart (dopri5, tight tolerances), as (X, Xdot) */
static void truth_fine(PrtSystem *s, const double *x0, int nf, double dt, double *out) {
    int N = s->N, W = prt_state_rows(s);
    double *z0 = prt_xalloc((size_t)W, sizeof(double), "plot data"), *times = prt_xalloc((size_t)nf, sizeof(double), "plot data");
    memcpy(z0, x0, sizeof(double) * (size_t)N);
    prt_massv(s, 1, x0 + N, z0 + N);
    for (int k = 0; k < nf; k++) times[k] = k * dt;
    if (prt_dopri5(prt_hamiltonian_rhs, s, 1, W, z0, times, nf, 1e-11, 1e-13, out, NULL) != 0)
        for (long i = 0; i < (long)nf * W; i++) out[i] = NAN; /* (no truth between the observations: no line) */
    for (int k = 0; k < nf; k++) {
        memcpy(z0, out + (long)k * W + N, sizeof(double) * (size_t)s->NP);
        prt_minv(s, 1, z0, out + (long)k * W + N);
    }
    free(z0), free(times);
}

/* orbit.svg, the Lie T2 paper's Figure 1: the first test trajectory's orbit of the first two
   bodies about each other (the second's position relative to the first's, x against y) by
   the truth, the learned model, and the model without its learned terms (the known point
   masses alone: the networks start with zero last layers), each at every step of the model
   between the observations (21 observations of TRAPPIST-1's innermost orbit draw a star),
   the observations marked. */
static int pictures(PrtModel *m, const PrtPictureData *d, char *wrote, size_t wrotelen, char *err, size_t errlen) {
    PrtSystem *s = m->sys;
    if (d->n < 1 || d->nt < 2 || !d->theta) return 0;
    long nc = s->N - 12L * s->nso3; /* the Cartesian rows come first */
    int a = nc >= 3 ? 0 : s->so3[0].x, b = nc >= 3 ? s->so3[0].x : s->nso3 > 1 ? s->so3[1].x : -1;
    if (b < 0) return 0;
    int nt = d->nt, W = prt_state_rows(s), nf = (nt - 1) * m->cfg.substeps + 1;
    long tn = d->ntruth;
    double *theta0 = prt_xalloc((size_t)m->nparams, sizeof(double), "plot data"), *x0 = prt_xalloc((size_t)W, sizeof(double), "plot data");
    double *fine = prt_xalloc((size_t)(3 * nf * W), sizeof(double), "plot data"), *xy = prt_xalloc((size_t)(6 * nf + 2 * nt), sizeof(double), "plot data");
    PrtRng rng;
    prt_rng_seed(&rng, 1);
    prt_model_init_theta(m, theta0, &rng);
    for (int i = 0; i < W; i++) x0[i] = d->truth[(long)i * tn];
    truth_fine(s, x0, nf, d->dt / m->cfg.substeps, fine);
    model_fine(m, d->theta, x0, nt, d->dt, fine + (long)nf * W);
    model_fine(m, theta0, x0, nt, d->dt, fine + 2L * nf * W);
    double *obs = xy + 6 * nf; /* the observations: x, then y */
    for (int line = 0; line < 3; line++)
        for (int k = 0; k < nf; k++)
            for (int c = 0; c < 2; c++) {
                const double *z = fine + ((long)line * nf + k) * W;
                xy[(c * 3 + line) * nf + k] = z[b + c] - z[a + c];
            }
    for (int k = 0; k < nt; k++)
        for (int c = 0; c < 2; c++)
            obs[c * nt + k] = d->truth[k * (long)W * tn + (long)(b + c) * tn] - d->truth[k * (long)W * tn + (long)(a + c) * tn];
    char observed[64], body[2][64], ptitle[200], xlabel[200], ylabel[32];
    snprintf(observed, sizeof observed, "its %d observations", nt);
    for (int i = 0; i < 2; i++) { /* the bodies' names: their x's row name less ".x" */
        const char *name = s->names[i ? b : a], *dot = strrchr(name, '.');
        snprintf(body[i], sizeof body[i], "%.*s", dot ? (int)(dot - name) : (int)strlen(name), name);
    }
    snprintf(ptitle, sizeof ptitle, "%s about %s (test trajectory 0; Fig. 1)", body[1], body[0]);
    snprintf(xlabel, sizeof xlabel, "x of %s less %s's (the program's length unit)", body[1], body[0]);
    snprintf(ylabel, sizeof ylabel, "y, likewise");
    PrtSeries series[4] = {
        {.x = xy, .y = xy + 3 * nf, .n = nf, .label = "truth", .color = PRT_GREY, .width = 4},
        {.x = obs, .y = obs + nt, .n = nt, .label = observed, .color = PRT_BLACK, .markers = 2},
        {.x = xy + 2 * nf, .y = xy + 5 * nf, .n = nf, .label = "point masses (no correction)", .color = 1},
        {.x = xy + nf, .y = xy + 4 * nf, .n = nf, .label = "learned", .color = 0, .dashed = 1, .width = 1.5},
    };
    PrtPanel panel = {.title = ptitle, .xlabel = xlabel, .ylabel = ylabel, .series = series, .nseries = 4, .equal = 1};
    char title[256], *path = prt_xalloc(strlen(d->dir) + 16, 1, "a path");
    snprintf(title, sizeof title, "%s: an orbit", d->title);
    sprintf(path, "%s/orbit.svg", d->dir);
    int rc = prt_svg_write(path, title, &panel, 1, 1, err, errlen);
    if (!rc) snprintf(wrote + strlen(wrote), wrotelen - strlen(wrote), ", orbit.svg");
    free(path), free(theta0), free(x0), free(fine), free(xy);
    return rc;
}

const PrtModelFamily prt_family_liet2 = {.name = "liet2", .title = "Lie T2", .configure = configure, .net_role = net_role, .open = open_lie, .close = close_lie,
    .trainable = trainable, .init_theta = init_theta, .loss_grad = loss_grad, .loss = loss, .truth_loss = truth_loss,
    .rollout = rollout, .masses = masses, .energy = energy, .residual_grad = residual_grad, .balance = balance,
    .from_data = from_data, .adopt = adopt, .loss_groups = loss_groups,
    .tape_field = abi_tape_field, .tape_step = abi_tape_step, .start_points = 1, .train_window = -1,
    .zero_theta_is_baseline = true, .say_rollout = say_rollout, .pictures = pictures,
    .own_init = own_init, .own_params = own_params, .own_words = own_words, .own_set = own_set, .own_emit = own_emit};
