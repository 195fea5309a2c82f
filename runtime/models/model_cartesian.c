/* model_cartesian.c — the CHNN and CLNN families (model.h): constrained Hamiltonian (Eq. 6,
   state (X, P)) and Lagrangian (Eq. 7, state (X, Xdot)) models in Cartesian coordinates,
   with an MLP potential V_theta(X) and the Eq. 9 mass parameters learned through an
   exponential (m = exp(theta_m), lambda_i = exp(theta_lambda_i): positive by construction).
   Training integrates with an explicit Runge-Kutta step on the tape and backpropagates
   through the steps; rollouts use dopri5. A CHNN converts the data's Xdot with its learned
   M (P = M Xdot). theta: the MLP's parameters, then the log mass parameters if learned.
   A family of another file whose force is its own reuses the CLNN's machinery with its
   force in place of -dV/dX (model_cartesian.h: prt_cartesian_open). */
#include "model.h"
#include "model_cartesian.h"
#include "core/alloc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ad/tape.h"

typedef struct Cartesian {
    bool lagrangian;       /* CLNN; else CHNN */
    const PrtCartesianForce *force; /* a family of another file: its force in Eq. 7 (lagrangian), not -dV/dX */
    long nmlp;             /* the MLP's parameters, first in theta */
    double *kparams;       /* the kernels' parameters: masses, then the system's free lengths */
    double *kparams_adj;
    PrtTape *tape;
    PrtLoopScratch loop_scratch; /* the loop form's, for training (replicas run in parallel threads) */
    PrtMlpWork work;       /* the rollout's MLP scratch */
    const double *rollout_theta;
    double *rollout_buf;
    long rollout_cap;
} Cartesian;

static Cartesian *impl(const PrtModel *m) { return m->impl; }

/* force: a family of another file (model_cartesian.h), whose network the family checks. */
static int open_model(PrtModel *m, bool lagrangian, const PrtCartesianForce *force, char *err, size_t errlen) {
    const PrtSystem *sys = m->sys;
    const PrtMlp *mlp = &m->cfg.net[0];
    if (sys->NP != sys->N) {
        snprintf(err, errlen, "learned models need a system of Cartesian points (no `state so3` bodies)");
        return -1;
    }
    if (!force && (m->cfg.nnets != 1 || mlp->size[0] != sys->N || mlp->size[mlp->nlayers] != 1)) {
        snprintf(err, errlen, "the learned potential must map the %d position coordinates to one number", sys->N);
        return -1;
    }
    /* (a system in loop form: prt_field, prt_accel, prt_minv_with stand in for the kernels) */
    if (lagrangian ? !(sys->Accel || sys->loop)
                   : !(sys->Field || sys->loop) || !(sys->MinvP || sys->loop) || !(sys->MassV || sys->loop)) {
        snprintf(err, errlen, "internal error: the system was not compiled for this kind of model");
        return -1;
    }
    if (prt_model_check_rk_step(m, err, errlen) != 0) return -1;
    Cartesian *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    c->lagrangian = lagrangian;
    c->force = force;
    c->nmlp = prt_mlp_nparams(mlp);
    m->nparams = c->nmlp + (m->cfg.learn_mass ? sys->nmass : 0);
    c->kparams = prt_xalloc((size_t)(sys->nparams + 1), sizeof(double), "model buffers");
    c->kparams_adj = prt_xalloc((size_t)(sys->nparams + 1), sizeof(double), "model buffers");
    memcpy(c->kparams, sys->params, sizeof(double) * (size_t)sys->nparams);
    c->tape = prt_tape_new();
    m->tape = c->tape;
    m->impl = c;
    if (sys->loop) prt_loop_prepare(sys->loop); /* (its tables, before replicas share it) */
    return 0;
}

static int open_chnn(PrtModel *m, char *err, size_t errlen) { return open_model(m, false, NULL, err, errlen); }
static int open_clnn(PrtModel *m, char *err, size_t errlen) { return open_model(m, true, NULL, err, errlen); }

int prt_cartesian_open(PrtModel *m, const PrtCartesianForce *force, char *err, size_t errlen) {
    return open_model(m, true, force, err, errlen);
}

/* A system in loop form without a Field or Accel kernel: the loop form's reverse passes (every
   row class compiled with its VJP) stand in for FieldVJP, MinvPVJP, MassVVJP and AccelVJP */
static bool loop_trainable(const PrtSystem *s) {
    if (!s->loop || s->Field || s->Accel) return false;
    for (int c = 0; c < s->loop->nclasses; c++)
        if (!s->loop->classes[c].vjp) return false;
    return true;
}

static bool trainable(const PrtModel *m) {
    const PrtSystem *s = m->sys;
    if (s->gradVknown && !s->gradVknownVJP) return false;
    return (impl(m)->lagrangian ? s->AccelVJP != NULL : s->FieldVJP && s->MinvPVJP && s->MassVVJP) || loop_trainable(s);
}

static void close_model(PrtModel *m) {
    Cartesian *c = impl(m);
    if (!c) return;
    free(c->kparams), free(c->kparams_adj), free(c->rollout_buf);
    prt_tape_free(c->tape);
    prt_loop_scratch_free(&c->loop_scratch);
    prt_mlp_work_free(&c->work);
    free(c);
    m->impl = NULL;
}

static void init_theta(const PrtModel *m, double *theta, PrtRng *rng) {
    prt_mlp_init(&m->cfg.net[0], theta, rng);
    /* log masses and moments near 0 (masses near 1), 0.1 N(0, 1) as the reference's d_moments */
    for (long k = impl(m)->nmlp; k < m->nparams; k++) theta[k] = 0.1 * prt_rng_normal(rng);
}

/* The kernels' masses from theta (exp of the log parameters). */
static void set_masses(PrtModel *m, const double *theta) {
    Cartesian *c = impl(m);
    if (!m->cfg.learn_mass) return;
    for (int k = 0; k < m->sys->nmass; k++) c->kparams[k] = exp(theta[c->nmlp + k]);
}

static int masses(const PrtModel *m, const double *theta, double *out) {
    Cartesian *c = impl(m);
    for (int k = 0; k < m->sys->nmass; k++) out[k] = m->cfg.learn_mass ? exp(theta[c->nmlp + k]) : m->sys->params[k];
    return m->sys->nmass;
}

/* ---- training: the tape ---- */

/* The system's maps on the tape with the model's masses: its kernels with their VJP kernels,
   or in loop form (no Field kernel) the loop form's with their reverse passes
   (loop_field.h). */
typedef struct LoopOp {
    PrtLoopField *f;
    PrtLoopScratch *scratch; /* the model's: replicas train in parallel threads */
    const double *params;
    double *params_adj;
    long n;
    bool inverse; /* for the mass maps: M^-1, else M */
} LoopOp;

static void loop_accel_backward(PrtTape *t, const void *ctx, const int *in, int nin, int out) {
    const LoopOp *op = ctx;
    (void)nin;
    prt_loop_accel_vjp(op->f, op->scratch, op->n, prt_tape_val(t, in[0]), op->params, prt_tape_adj(t, out),
                       prt_tape_adj(t, in[0]), op->params_adj);
}

static void loop_field_backward(PrtTape *t, const void *ctx, const int *in, int nin, int out) {
    const LoopOp *op = ctx;
    (void)nin;
    prt_loop_field_vjp(op->f, op->scratch, op->n, prt_tape_val(t, in[0]), prt_tape_val(t, in[1]), op->params,
                       prt_tape_adj(t, out), prt_tape_adj(t, in[0]), prt_tape_adj(t, in[1]), op->params_adj);
}

static void loop_mass_backward(PrtTape *t, const void *ctx, const int *in, int nin, int out) {
    const LoopOp *op = ctx;
    (void)nin;
    if (op->inverse)
        prt_loop_minv_vjp(op->f, op->n, prt_tape_val(t, in[0]), op->params, prt_tape_adj(t, out), prt_tape_adj(t, in[0]),
                          op->params_adj);
    else
        prt_loop_mass_vjp(op->f, op->n, prt_tape_val(t, in[0]), op->params, prt_tape_adj(t, out), prt_tape_adj(t, in[0]),
                          op->params_adj);
}

/* (Xdot, Pdot) of the states z (2N x n) with dV/dX dV (N x n) */
static int tape_system_field(Cartesian *c, PrtSystem *s, long n, int z, int dV) {
    PrtTape *t = c->tape;
    if (s->FieldVJP)
        return prt_tape_kernel(t, s->Field, s->FieldVJP, n, 2, (int[]){z, dV}, 2 * s->N, c->kparams, s->nparams,
                               c->kparams_adj);
    LoopOp op = {s->loop, &c->loop_scratch, c->kparams, c->kparams_adj, n, false};
    int out = prt_tape_op(t, loop_field_backward, &op, sizeof op, 2, (int[]){z, dV}, 2L * s->N * n);
    prt_loop_field_in(s->loop, &c->loop_scratch, n, prt_tape_val(t, z), NULL, prt_tape_val(t, dV), c->kparams,
                      prt_tape_val(t, out));
    return out;
}

/* Xddot (N x n) of the states z = (X, Xdot) (2N x n) with the forces F (N x n) */
static int tape_system_accel(Cartesian *c, PrtSystem *s, long n, int z, int F) {
    PrtTape *t = c->tape;
    if (s->AccelVJP)
        return prt_tape_kernel(t, s->Accel, s->AccelVJP, n, 2, (int[]){z, F}, s->N, c->kparams, s->nparams,
                               c->kparams_adj);
    int xvf = prt_tape_concat(t, 2, (int[]){z, F});
    LoopOp op = {s->loop, &c->loop_scratch, c->kparams, c->kparams_adj, n, false};
    int out = prt_tape_op(t, loop_accel_backward, &op, sizeof op, 1, &xvf, (long)s->N * n);
    prt_loop_accel_in(s->loop, &c->loop_scratch, n, prt_tape_val(t, xvf), c->kparams, prt_tape_val(t, out));
    return out;
}

/* M^-1 x (inverse) or M x of x (N x n) */
static int tape_system_mass(Cartesian *c, PrtSystem *s, long n, int x, bool inverse) {
    PrtTape *t = c->tape;
    if (inverse ? s->MinvPVJP : s->MassVVJP)
        return prt_tape_kernel(t, inverse ? s->MinvP : s->MassV, inverse ? s->MinvPVJP : s->MassVVJP, n, 1, &x, s->N,
                               c->kparams, s->nmass, c->kparams_adj);
    LoopOp op = {s->loop, &c->loop_scratch, c->kparams, c->kparams_adj, n, inverse};
    int out = prt_tape_op(t, loop_mass_backward, &op, sizeof op, 1, &x, (long)s->N * n);
    if (inverse) prt_loop_minv(s->loop, n, prt_tape_val(t, x), c->kparams, prt_tape_val(t, out));
    else prt_loop_mass(s->loop, n, prt_tape_val(t, x), c->kparams, prt_tape_val(t, out));
    return out;
}

/* The vector field at state z (2N x n) on the tape. */
static int tape_field(PrtModel *m, const double *theta, double *grad, long n, int z) {
    Cartesian *c = impl(m);
    PrtTape *t = c->tape;
    PrtSystem *s = m->sys;
    long Nn = (long)s->N * n;
    if (c->force) { /* Eq. 7 with the family's force */
        int F = c->force->tape(m, t, n, theta, grad, z);
        return prt_tape_concat(t, 2, (int[]){prt_tape_view(t, z, Nn, Nn), tape_system_accel(c, s, n, z, F)});
    }
    int X = prt_tape_view(t, z, 0, Nn);
    int dV = prt_tape_mlp_grad(t, &m->cfg.net[0], theta, grad, n, X);
    if (s->gradVknown) { /* known potential terms: their gradient is added to the network's */
        int dK = prt_tape_kernel(t, s->gradVknown, s->gradVknownVJP, n, 1, &X, s->N, c->kparams, 0, NULL);
        dV = prt_tape_lincomb(t, 2, (int[]){dV, dK}, (double[]){1, 1});
    }
    if (!c->lagrangian) return tape_system_field(c, s, n, z, dV);
    double minus = -1;
    int F = prt_tape_lincomb(t, 1, &dV, &minus);
    int A = tape_system_accel(c, s, n, z, F);
    int parts[2] = {prt_tape_view(t, z, Nn, Nn), A};
    return prt_tape_concat(t, 2, parts);
}

/* The field as prt_tape_rk_step asks for it. */
typedef struct FieldCall {
    PrtModel *m;
    const double *theta;
    double *grad;
    long n;
} FieldCall;

static int field_at(void *ctx, int z) {
    FieldCall *c = ctx;
    return tape_field(c->m, c->theta, c->grad, c->n, z);
}

/* The learned masses' chain rule through the exponential, d/dtheta_m = d/dm m: an operation
   recorded first, so that the backward pass ends with it, once the kernels' parameter
   adjoints are complete */
typedef struct MassChain {
    Cartesian *c;
    double *grad;
    int nmass;
} MassChain;

static void mass_chain_backward(PrtTape *t, const void *ctx, const int *in, int nin, int out) {
    const MassChain *mc = ctx;
    for (int k = 0; mc->grad && k < mc->nmass; k++) mc->grad[mc->c->nmlp + k] += mc->c->kparams_adj[k] * mc->c->kparams[k];
}

/* Before a recording of theta's dynamics: the kernels' masses from theta, their adjoints
   zeroed, the chain rule of learned masses */
static void begin_recording(PrtModel *m, const double *theta, double *grad) {
    Cartesian *c = impl(m);
    set_masses(m, theta);
    memset(c->kparams_adj, 0, sizeof(double) * (size_t)m->sys->nparams);
    MassChain mc = {c, grad, m->sys->nmass};
    if (m->cfg.learn_mass) prt_tape_op(c->tape, mass_chain_backward, &mc, sizeof mc, 0, (int[]){0}, 1);
}

/* The data's (X, Xdot) at xv as the model's state, (X, P = M Xdot) for a CHNN; and back */
static int tape_model_state(PrtModel *m, long n, int xv) {
    Cartesian *c = impl(m);
    PrtTape *t = c->tape;
    long Nn = (long)m->sys->N * n;
    if (c->lagrangian) return xv;
    int P = tape_system_mass(c, m->sys, n, prt_tape_view(t, xv, Nn, Nn), false);
    return prt_tape_concat(t, 2, (int[]){prt_tape_view(t, xv, 0, Nn), P});
}

static int tape_data_state(PrtModel *m, long n, int z) {
    Cartesian *c = impl(m);
    PrtTape *t = c->tape;
    long Nn = (long)m->sys->N * n;
    if (c->lagrangian) return z;
    int V = tape_system_mass(c, m->sys, n, prt_tape_view(t, z, Nn, Nn), true);
    return prt_tape_concat(t, 2, (int[]){prt_tape_view(t, z, 0, Nn), V});
}

static double loss_grad(PrtModel *m, const double *theta, long n, int npts, double dt, const double *chunks,
                        double *grad) {
    Cartesian *c = impl(m);
    int substeps = m->cfg.substeps;
    PrtTape *t = c->tape;
    PrtSystem *s = m->sys;
    long Nn = (long)s->N * n, pt = 2 * Nn;
    memset(grad, 0, sizeof(double) * (size_t)m->nparams);
    prt_tape_reset(t);
    int xv = prt_tape_leaf(t, pt);
    memcpy(prt_tape_val(t, xv), chunks, sizeof(double) * (size_t)pt);
    begin_recording(m, theta, grad);
    int z = tape_model_state(m, n, xv);
    const PrtTableau *T = prt_integrator_tableau(m->cfg.integrator);
    FieldCall call = {m, theta, grad, n};
    int *pred = prt_xalloc((size_t)(2 * npts), sizeof(int), "model buffers"); /* per point: X (or the state), Xdot */
    for (int k = 1; k < npts; k++) {
        for (int j = 0; j < substeps; j++) z = prt_tape_rk_step(t, T, dt / substeps, z, field_at, &call);
        pred[2 * k] = prt_tape_view(t, z, 0, Nn);
        int S = prt_tape_view(t, z, Nn, Nn);
        pred[2 * k + 1] = c->lagrangian ? S : tape_system_mass(c, s, n, S, true);
    }
    /* mean absolute error; d/dpred = sign(pred - data) / count */
    prt_tape_zero_adjoints(t);
    double count = (double)npts * (double)pt, loss = 0;
    for (int k = 1; k < npts; k++)
        for (int half = 0; half < 2; half++) {
            const double *p = prt_tape_val(t, pred[2 * k + half]), *d = chunks + k * pt + half * Nn;
            double *a = prt_tape_adj(t, pred[2 * k + half]);
            for (long i = 0; i < Nn; i++) {
                double e = p[i] - d[i];
                loss += m->cfg.l2 ? e * e : fabs(e);
                a[i] += (m->cfg.l2 ? 2 * e : e > 0 ? 1 : e < 0 ? -1 : 0) / count;
            }
        }
    free(pred);
    prt_tape_backward(t);
    return loss / count;
}

/* ---- the library's derivatives (model.h: tape_field, tape_step) ---- */

static int abi_tape_field(PrtModel *m, const double *theta, double *grad, long n, int xv, char *err, size_t errlen) {
    begin_recording(m, theta, grad);
    int zdot = tape_field(m, theta, grad, n, tape_model_state(m, n, xv));
    return tape_data_state(m, n, zdot); /* (Pdot -> M^-1 Pdot = Xddot: the masses are constants) */
}

static int abi_tape_step(PrtModel *m, const double *theta, double *grad, long n, double dt, int steps, int xv, char *err,
                         size_t errlen) {
    begin_recording(m, theta, grad);
    int z = tape_model_state(m, n, xv), substeps = m->cfg.substeps;
    const PrtTableau *T = prt_integrator_tableau(m->cfg.integrator);
    FieldCall call = {m, theta, grad, n};
    for (int k = 0; k < steps; k++)
        for (int j = 0; j < substeps; j++) z = prt_tape_rk_step(impl(m)->tape, T, dt / substeps, z, field_at, &call);
    return tape_data_state(m, n, z);
}

/* ---- plain forward passes: validation and rollouts ---- */

static double *rollout_scratch(PrtModel *m, long len) {
    Cartesian *c = impl(m);
    if (c->rollout_cap < len) {
        free(c->rollout_buf);
        c->rollout_buf = prt_xalloc((size_t)len, sizeof(double), "model buffers");
        c->rollout_cap = len;
    }
    return c->rollout_buf;
}

/* z = (X, P) for a CHNN, (X, Xdot) for a CLNN. */
static void model_rhs(void *ctx, long n, const double *z, double *zdot) {
    PrtModel *m = ctx;
    Cartesian *c = impl(m);
    PrtSystem *s = m->sys;
    long Nn = (long)s->N * n;
    double *buf = rollout_scratch(m, 4 * Nn); /* (z, dV), then the known terms' gradient */
    memcpy(buf, z, sizeof(double) * (size_t)(2 * Nn));
    if (c->force) { /* Eq. 7 with the family's force */
        c->force->plain(m, n, c->rollout_theta, z, buf + 2 * Nn, &c->work);
        prt_accel(s, n, buf, c->kparams, zdot + Nn);
        memcpy(zdot, z + Nn, sizeof(double) * (size_t)Nn);
        return;
    }
    prt_mlp_value_grad(&m->cfg.net[0], c->rollout_theta, n, z, NULL, buf + 2 * Nn, &c->work);
    if (s->gradVknown) {
        s->gradVknown(n, z, c->kparams, buf + 3 * Nn);
        for (long i = 0; i < Nn; i++) buf[2 * Nn + i] += buf[3 * Nn + i];
    }
    if (!c->lagrangian) {
        prt_field(s, n, buf, c->kparams, zdot);
        return;
    }
    for (long i = 2 * Nn; i < 3 * Nn; i++) buf[i] = -buf[i];
    prt_accel(s, n, buf, c->kparams, zdot + Nn);
    memcpy(zdot, z + Nn, sizeof(double) * (size_t)Nn);
}

/* The system's own dynamics in the model's state (masses and potential as written in the
   program): what the model would be if it learned them exactly. */
static void truth_rhs(void *ctx, long n, const double *z, double *zdot) {
    PrtModel *m = ctx;
    PrtSystem *s = m->sys;
    if (!impl(m)->lagrangian) {
        prt_hamiltonian_rhs(s, n, z, zdot);
        return;
    }
    long Nn = (long)s->N * n;
    double *buf = rollout_scratch(m, 3 * Nn); /* (X, Xdot, -dV) */
    memcpy(buf, z, sizeof(double) * (size_t)(2 * Nn));
    s->gradV(n, z, s->params, buf + 2 * Nn);
    for (long i = 2 * Nn; i < 3 * Nn; i++) buf[i] = -buf[i];
    prt_accel(s, n, buf, s->params, zdot + Nn);
    memcpy(zdot, z + Nn, sizeof(double) * (size_t)Nn);
}

/* Cartesian (X, Xdot) <-> the model's state with masses `params`, in place on the second half. */
static void to_state(PrtModel *m, const double *params, long n, double *z, bool forward) {
    if (impl(m)->lagrangian) return;
    PrtSystem *s = m->sys;
    long Nn = (long)s->N * n;
    double *tmp = prt_xalloc((size_t)Nn, sizeof(double), "model buffers");
    if (forward) prt_massv_with(s, n, z + Nn, params, tmp);
    else prt_minv_with(s, n, z + Nn, params, tmp);
    memcpy(z + Nn, tmp, sizeof(double) * (size_t)Nn);
    free(tmp);
}

/* The training loss of the dynamics rhs (masses `params`) over n chunks, stepped as in training. */
static double chunk_loss(PrtModel *m, PrtRhs rhs, const double *params, long n, int npts, double dt,
                         const double *chunks) {
    PrtSystem *s = m->sys;
    int substeps = m->cfg.substeps;
    const PrtTableau *T = prt_integrator_tableau(m->cfg.integrator); /* the training step's */
    long pt = 2L * s->N * n;
    double *z = prt_xalloc((size_t)pt, sizeof(double), "model buffers"), *pred = prt_xalloc((size_t)pt, sizeof(double), "model buffers"),
           *work = prt_xalloc((size_t)(5 * pt), sizeof(double), "model buffers");
    memcpy(z, chunks, sizeof(double) * (size_t)pt);
    to_state(m, params, n, z, true);
    double loss = 0;
    for (int k = 1; k < npts; k++) {
        for (int j = 0; j < substeps; j++) prt_rk_step(T, rhs, m, n, 2 * s->N, dt / substeps, z, work);
        memcpy(pred, z, sizeof(double) * (size_t)pt);
        to_state(m, params, n, pred, false);
        for (long i = 0; i < pt; i++) {
            double e = pred[i] - chunks[k * pt + i];
            loss += m->cfg.l2 ? e * e : fabs(e);
        }
    }
    free(z), free(pred), free(work);
    return loss / ((double)npts * (double)pt);
}

static double loss(PrtModel *m, const double *theta, long n, int npts, double dt, const double *chunks) {
    Cartesian *c = impl(m);
    set_masses(m, theta);
    c->rollout_theta = theta;
    return chunk_loss(m, model_rhs, c->kparams, n, npts, dt, chunks);
}

static double truth_loss(PrtModel *m, long n, int npts, double dt, const double *chunks) {
    return chunk_loss(m, truth_rhs, m->sys->params, n, npts, dt, chunks);
}

static int rollout(PrtModel *m, const double *theta, long n, const double *xv0, const double *times, int nt,
                   double rtol, double atol, double *out) {
    Cartesian *c = impl(m);
    PrtSystem *s = m->sys;
    long pt = 2L * s->N * n;
    set_masses(m, theta);
    c->rollout_theta = theta;
    double *z0 = prt_xalloc((size_t)pt, sizeof(double), "model buffers");
    memcpy(z0, xv0, sizeof(double) * (size_t)pt);
    to_state(m, c->kparams, n, z0, true);
    int rc = prt_model_dopri5(m, model_rhs, n, 2 * s->N, z0, times, nt, rtol, atol, out);
    for (int k = 0; k < nt; k++) to_state(m, c->kparams, n, out + k * pt, false);
    free(z0);
    return rc;
}

/* The model's energy T + V_theta(X) + its known terms at (X, Xdot), T = Xdot . M Xdot / 2 with
   its masses: the CHNN's Hamiltonian with P = M Xdot, and the CLNN's Xdot . dL/dXdot - L,
   which their fields (Eq. 6, 7) conserve. */
static void energy(PrtModel *m, const double *theta, long n, const double *xv, double *out) {
    Cartesian *c = impl(m);
    PrtSystem *s = m->sys;
    long Nn = (long)s->N * n;
    set_masses(m, theta);
    double *P = prt_xalloc((size_t)(Nn + n), sizeof(double), "model buffers"), *known = P + Nn;
    prt_massv_with(s, n, xv + Nn, c->kparams, P);
    prt_mlp_forward(&m->cfg.net[0], theta, n, xv, out, &c->work);
    if (s->Vknown) s->Vknown(n, xv, c->kparams, known);
    for (long b = 0; b < n; b++) {
        double T = 0;
        for (int i = 0; i < s->N; i++) T += xv[Nn + i * n + b] * P[i * n + b];
        out[b] += T / 2 + (s->Vknown ? known[b] : 0);
    }
    free(P);
}

/* Its one learned potential V(X), which reads the positions; the masses are the system's or
   the Eq. 9 parameters (`mass learned`), never a network. */
static int configure(const PrtModelDecl *d, PrtModelConfig *cfg, const PrtLearnedTerm **blame, char *err, size_t errlen) {
    const char *kind = cfg->family->name;
    if (prt_model_decl_plain(kind, d, blame, err, errlen) != 0 ||
        prt_model_decl_counts(kind, d, 1, 0, "one learned potential and no learned force", err, errlen) != 0)
        return -1;
    if (d->mass) {
        snprintf(err, errlen, "model '%s' (%s) learns the Eq. 9 masses (`mass learned`) or uses the known ones; a learned "
                 "mass network is for hnn and delan", d->name, kind);
        return -1;
    }
    if (d->potentials[0].inputs != d->ncoords) {
        *blame = &d->potentials[0];
        snprintf(err, errlen, "learned potential '%s' must read the positions (`input positions`) in a chnn or clnn model",
                 d->potentials[0].name);
        return -1;
    }
    cfg->nnets = 1;
    cfg->net[0] = d->potentials[0].net;
    return 0;
}

static const char *net_role(const PrtModelConfig *cfg, int k) { return "potential"; }

const PrtModelFamily prt_family_chnn = {.name = "chnn", .title = "CHNN", .configure = configure, .net_role = net_role, .field_is_systems = true, .open = open_chnn, .close = close_model,
    .trainable = trainable, .init_theta = init_theta, .loss_grad = loss_grad, .loss = loss,
    .truth_loss = truth_loss, .rollout = rollout, .masses = masses, .energy = energy, .tape_field = abi_tape_field,
    .tape_step = abi_tape_step, .start_points = 1};
const PrtModelFamily prt_family_clnn = {.name = "clnn", .title = "CLNN", .configure = configure, .net_role = net_role, .open = open_clnn, .close = close_model,
    .trainable = trainable, .init_theta = init_theta, .loss_grad = loss_grad, .loss = loss,
    .truth_loss = truth_loss, .rollout = rollout, .masses = masses, .energy = energy, .tape_field = abi_tape_field,
    .tape_step = abi_tape_step, .start_points = 1};

/* ---- the members a family of another file takes as they are (model_cartesian.h) ---- */

void prt_cartesian_close(PrtModel *m) { close_model(m); }
bool prt_cartesian_trainable(const PrtModel *m) { return trainable(m); }
void prt_cartesian_init_theta(const PrtModel *m, double *theta, PrtRng *rng) { init_theta(m, theta, rng); }
double prt_cartesian_loss_grad(PrtModel *m, const double *theta, long n, int npts, double dt, const double *chunks,
                               double *grad) {
    return loss_grad(m, theta, n, npts, dt, chunks, grad);
}
double prt_cartesian_loss(PrtModel *m, const double *theta, long n, int npts, double dt, const double *chunks) {
    return loss(m, theta, n, npts, dt, chunks);
}
double prt_cartesian_truth_loss(PrtModel *m, long n, int npts, double dt, const double *chunks) {
    return truth_loss(m, n, npts, dt, chunks);
}
int prt_cartesian_rollout(PrtModel *m, const double *theta, long n, const double *xv0, const double *times, int nt,
                          double rtol, double atol, double *out) {
    return rollout(m, theta, n, xv0, times, nt, rtol, atol, out);
}
int prt_cartesian_masses(const PrtModel *m, const double *theta, double *out) { return masses(m, theta, out); }
int prt_cartesian_tape_field(PrtModel *m, const double *theta, double *grad, long n, int xv, char *err, size_t errlen) {
    return abi_tape_field(m, theta, grad, n, xv, err, errlen);
}
int prt_cartesian_tape_step(PrtModel *m, const double *theta, double *grad, long n, double dt, int steps, int xv,
                            char *err, size_t errlen) {
    return abi_tape_step(m, theta, grad, n, dt, steps, xv, err, errlen);
}
