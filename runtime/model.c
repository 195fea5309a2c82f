/* model.c — CHNN / CLNN forward passes, the training loss with its gradient through the
   RK4 (3/8 rule) steps (on the tape), and dopri5 rollouts (see model.h). */
#include "model.h"
#include "alloc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int prt_model_init(PrtModel *m, PrtSystem *sys, bool lagrangian, bool learn_mass, const PrtMlp *mlp, char *err,
                   size_t errlen) {
    memset(m, 0, sizeof *m);
    if (sys->NP != sys->N) {
        snprintf(err, errlen, "learned models need a system of Cartesian points (no `state so3` bodies)");
        return -1;
    }
    if (mlp->size[0] != sys->N || mlp->size[mlp->nlayers] != 1) {
        snprintf(err, errlen, "the learned potential must map the %d position coordinates to one number", sys->N);
        return -1;
    }
    if (lagrangian ? !sys->Accel : !sys->Field || !sys->MinvP || !sys->MassV) {
        snprintf(err, errlen, "internal error: the system was not compiled for this kind of model");
        return -1;
    }
    m->sys = sys, m->lagrangian = lagrangian, m->learn_mass = learn_mass, m->mlp = *mlp;
    m->method = PRT_RK4_38;
    m->nmlp = prt_mlp_nparams(mlp);
    m->nparams = m->nmlp + (learn_mass ? sys->nmass : 0);
    m->kparams = prt_xalloc((size_t)(sys->nparams + 1), sizeof(double), "model buffers");
    m->kparams_adj = prt_xalloc((size_t)(sys->nparams + 1), sizeof(double), "model buffers");
    memcpy(m->kparams, sys->params, sizeof(double) * (size_t)sys->nparams);
    m->tape = prt_tape_new();
    return 0;
}

bool prt_model_trainable(const PrtModel *m) {
    const PrtSystem *s = m->sys;
    if (s->gradVknown && !s->gradVknownVJP) return false;
    return m->lagrangian ? s->AccelVJP != NULL : s->FieldVJP && s->MinvPVJP && s->MassVVJP;
}

void prt_model_free(PrtModel *m) {
    free(m->kparams), free(m->kparams_adj), free(m->rollout_buf);
    prt_tape_free(m->tape);
    prt_mlp_work_free(&m->work);
    memset(m, 0, sizeof *m);
}

void prt_model_init_theta(const PrtModel *m, double *theta, PrtRng *rng) {
    prt_mlp_init(&m->mlp, theta, rng);
    /* log masses and moments near 0 (masses near 1), 0.1 N(0, 1) as the reference's d_moments */
    for (long k = m->nmlp; k < m->nparams; k++) theta[k] = 0.1 * prt_rng_normal(rng);
}

/* The kernels' masses from theta (exp of the log parameters). */
static void set_masses(PrtModel *m, const double *theta) {
    if (!m->learn_mass) return;
    for (int k = 0; k < m->sys->nmass; k++) m->kparams[k] = exp(theta[m->nmlp + k]);
}

/* ---- training: the tape ---- */

/* The vector field at state z (2N x n) on the tape. */
static int tape_field(PrtModel *m, const double *theta, double *grad, long n, int z) {
    PrtTape *t = m->tape;
    PrtSystem *s = m->sys;
    long Nn = (long)s->N * n;
    int X = prt_tape_view(t, z, 0, Nn);
    int dV = prt_tape_mlp_grad(t, &m->mlp, theta, grad, n, X);
    if (s->gradVknown) { /* known potential terms: their gradient is added to the network's */
        int dK = prt_tape_kernel(t, s->gradVknown, s->gradVknownVJP, n, 1, &X, s->N, m->kparams, 0, NULL);
        dV = prt_tape_lincomb(t, 2, (int[]){dV, dK}, (double[]){1, 1});
    }
    if (!m->lagrangian) {
        int in[2] = {z, dV};
        return prt_tape_kernel(t, s->Field, s->FieldVJP, n, 2, in, 2 * s->N, m->kparams, s->nparams, m->kparams_adj);
    }
    double minus = -1;
    int F = prt_tape_lincomb(t, 1, &dV, &minus);
    int in[2] = {z, F};
    int A = prt_tape_kernel(t, s->Accel, s->AccelVJP, n, 2, in, s->N, m->kparams, s->nparams, m->kparams_adj);
    int parts[2] = {prt_tape_view(t, z, Nn, Nn), A};
    return prt_tape_concat(t, 2, parts);
}

/* Explicit Runge-Kutta tableaux (lower triangle a, weights b), as prt_fixed_step has them. */
typedef struct Tableau {
    int stages;
    double a[4][4], b[4];
} Tableau;

static const Tableau *tableau(PrtFixedMethod method) {
    static const Tableau euler = {1, {{0}}, {1}};
    static const Tableau rk4 = {4, {{0}, {0.5}, {0, 0.5}, {0, 0, 1}}, {1.0 / 6, 1.0 / 3, 1.0 / 3, 1.0 / 6}};
    static const Tableau rk38 = {4, {{0}, {1.0 / 3}, {-1.0 / 3, 1}, {1, -1, 1}}, {1.0 / 8, 3.0 / 8, 3.0 / 8, 1.0 / 8}};
    return method == PRT_EULER ? &euler : method == PRT_RK4 ? &rk4 : &rk38;
}

/* One step of size h: stage i evaluates the field at z + h sum_j a_ij k_j. */
static int tape_step(PrtModel *m, const double *theta, double *grad, long n, double h, int z) {
    const Tableau *T = tableau(m->method);
    int k[4], vars[5];
    double coef[5];
    for (int i = 0; i < T->stages; i++) {
        int y = z, nt = 1;
        vars[0] = z, coef[0] = 1;
        for (int j = 0; j < i; j++)
            if (T->a[i][j] != 0) vars[nt] = k[j], coef[nt++] = h * T->a[i][j];
        if (nt > 1) y = prt_tape_lincomb(m->tape, nt, vars, coef);
        k[i] = tape_field(m, theta, grad, n, y);
    }
    for (int i = 0; i < T->stages; i++) vars[i + 1] = k[i], coef[i + 1] = h * T->b[i];
    return prt_tape_lincomb(m->tape, T->stages + 1, vars, coef);
}

double prt_model_loss_grad(PrtModel *m, const double *theta, long n, int npts, double dt, int substeps,
                           const double *chunks, double *grad) {
    PrtTape *t = m->tape;
    PrtSystem *s = m->sys;
    long Nn = (long)s->N * n, pt = 2 * Nn;
    set_masses(m, theta);
    memset(grad, 0, sizeof(double) * (size_t)m->nparams);
    memset(m->kparams_adj, 0, sizeof(double) * (size_t)s->nparams);
    prt_tape_reset(t);
    int xv = prt_tape_leaf(t, pt);
    memcpy(prt_tape_val(t, xv), chunks, sizeof(double) * (size_t)pt);
    int z = xv;
    if (!m->lagrangian) { /* (X, Xdot) -> (X, P = M Xdot) */
        int V = prt_tape_view(t, xv, Nn, Nn);
        int P = prt_tape_kernel(t, s->MassV, s->MassVVJP, n, 1, &V, s->N, m->kparams, s->nmass, m->kparams_adj);
        z = prt_tape_concat(t, 2, (int[]){prt_tape_view(t, xv, 0, Nn), P});
    }
    int *pred = prt_xalloc((size_t)(2 * npts), sizeof(int), "model buffers"); /* per point: X (or the state), Xdot */
    for (int k = 1; k < npts; k++) {
        for (int j = 0; j < substeps; j++) z = tape_step(m, theta, grad, n, dt / substeps, z);
        pred[2 * k] = prt_tape_view(t, z, 0, Nn);
        int S = prt_tape_view(t, z, Nn, Nn);
        pred[2 * k + 1] = m->lagrangian ? S
                                         : prt_tape_kernel(t, s->MinvP, s->MinvPVJP, n, 1, &S, s->N, m->kparams, s->nmass,
                                                           m->kparams_adj);
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
                loss += m->l2 ? e * e : fabs(e);
                a[i] += (m->l2 ? 2 * e : e > 0 ? 1 : e < 0 ? -1 : 0) / count;
            }
        }
    free(pred);
    prt_tape_backward(t);
    if (m->learn_mass) /* chain rule through the exponential */
        for (int k = 0; k < s->nmass; k++) grad[m->nmlp + k] += m->kparams_adj[k] * m->kparams[k];
    return loss / count;
}

/* ---- plain forward passes: validation and rollouts ---- */

static double *rollout_scratch(PrtModel *m, long len) {
    if (m->rollout_cap < len) {
        free(m->rollout_buf);
        m->rollout_buf = prt_xalloc((size_t)len, sizeof(double), "model buffers");
        m->rollout_cap = len;
    }
    return m->rollout_buf;
}

/* z = (X, P) for a CHNN, (X, Xdot) for a CLNN. */
static void model_rhs(void *ctx, long n, const double *z, double *zdot) {
    PrtModel *m = ctx;
    PrtSystem *s = m->sys;
    long Nn = (long)s->N * n;
    double *buf = rollout_scratch(m, 4 * Nn); /* (z, dV), then the known terms' gradient */
    memcpy(buf, z, sizeof(double) * (size_t)(2 * Nn));
    prt_mlp_value_grad(&m->mlp, m->rollout_theta, n, z, NULL, buf + 2 * Nn, &m->work);
    if (s->gradVknown) {
        s->gradVknown(n, z, m->kparams, buf + 3 * Nn);
        for (long i = 0; i < Nn; i++) buf[2 * Nn + i] += buf[3 * Nn + i];
    }
    if (!m->lagrangian) {
        s->Field(n, buf, m->kparams, zdot);
        return;
    }
    for (long i = 2 * Nn; i < 3 * Nn; i++) buf[i] = -buf[i];
    s->Accel(n, buf, m->kparams, zdot + Nn);
    memcpy(zdot, z + Nn, sizeof(double) * (size_t)Nn);
}

/* The system's own dynamics in the model's state (masses and potential as written in the
   program): what the model would be if it learned them exactly. */
static void truth_rhs(void *ctx, long n, const double *z, double *zdot) {
    PrtModel *m = ctx;
    PrtSystem *s = m->sys;
    if (!m->lagrangian) {
        prt_hamiltonian_rhs(s, n, z, zdot);
        return;
    }
    long Nn = (long)s->N * n;
    double *buf = rollout_scratch(m, 3 * Nn); /* (X, Xdot, -dV) */
    memcpy(buf, z, sizeof(double) * (size_t)(2 * Nn));
    s->gradV(n, z, s->params, buf + 2 * Nn);
    for (long i = 2 * Nn; i < 3 * Nn; i++) buf[i] = -buf[i];
    s->Accel(n, buf, s->params, zdot + Nn);
    memcpy(zdot, z + Nn, sizeof(double) * (size_t)Nn);
}

/* Cartesian (X, Xdot) <-> the model's state with masses `params`, in place on the second half. */
static void to_state(PrtModel *m, const double *params, long n, double *z, bool forward) {
    if (m->lagrangian) return;
    PrtSystem *s = m->sys;
    long Nn = (long)s->N * n;
    double *tmp = prt_xalloc((size_t)Nn, sizeof(double), "model buffers");
    (forward ? s->MassV : s->MinvP)(n, z + Nn, params, tmp);
    memcpy(z + Nn, tmp, sizeof(double) * (size_t)Nn);
    free(tmp);
}

/* The training loss of the dynamics rhs (masses `params`) over n chunks, stepped as in training. */
static double chunk_loss(PrtModel *m, PrtRhs rhs, const double *params, long n, int npts, double dt, int substeps,
                         const double *chunks) {
    PrtSystem *s = m->sys;
    long pt = 2L * s->N * n;
    double *z = prt_xalloc((size_t)pt, sizeof(double), "model buffers"), *pred = prt_xalloc((size_t)pt, sizeof(double), "model buffers"),
           *work = prt_xalloc((size_t)(5 * pt), sizeof(double), "model buffers");
    memcpy(z, chunks, sizeof(double) * (size_t)pt);
    to_state(m, params, n, z, true);
    double loss = 0;
    for (int k = 1; k < npts; k++) {
        for (int j = 0; j < substeps; j++) prt_fixed_step(m->method, rhs, m, n, 2 * s->N, dt / substeps, z, work);
        memcpy(pred, z, sizeof(double) * (size_t)pt);
        to_state(m, params, n, pred, false);
        for (long i = 0; i < pt; i++) {
            double e = pred[i] - chunks[k * pt + i];
            loss += m->l2 ? e * e : fabs(e);
        }
    }
    free(z), free(pred), free(work);
    return loss / ((double)npts * (double)pt);
}

double prt_model_loss(PrtModel *m, const double *theta, long n, int npts, double dt, int substeps, const double *chunks) {
    set_masses(m, theta);
    m->rollout_theta = theta;
    return chunk_loss(m, model_rhs, m->kparams, n, npts, dt, substeps, chunks);
}

double prt_model_truth_loss(PrtModel *m, long n, int npts, double dt, int substeps, const double *chunks) {
    return chunk_loss(m, truth_rhs, m->sys->params, n, npts, dt, substeps, chunks);
}

int prt_model_rollout(PrtModel *m, const double *theta, long n, const double *xv0, const double *times, int nt,
                      double rtol, double atol, double *out) {
    PrtSystem *s = m->sys;
    long pt = 2L * s->N * n;
    set_masses(m, theta);
    m->rollout_theta = theta;
    double *z0 = prt_xalloc((size_t)pt, sizeof(double), "model buffers");
    memcpy(z0, xv0, sizeof(double) * (size_t)pt);
    to_state(m, m->kparams, n, z0, true);
    int rc = prt_dopri5(model_rhs, m, n, 2 * s->N, z0, times, nt, rtol, atol, out, NULL);
    for (int k = 0; k < nt; k++) to_state(m, m->kparams, n, out + k * pt, false);
    free(z0);
    return rc;
}
