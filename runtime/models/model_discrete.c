/* model_discrete.c — deep discrete-time Lagrangian mechanics, the `dtlnn` family (model.h):
   a learned potential V(q) of the positions q (the system's Cartesian X: a system without
   constraints), a constant mass matrix M (I, the paper's choice, or the system's own), and
   a two-step scheme on positions only, learned from consecutive observed positions:

     discrete_gradient  Eq. 12: M (q+ - 2q + q-) / dt^2 = -(DG(q+, q) + DG(q, q-)) / 2, with DG
                        the discrete gradient of the network (mlp_graph.h). It trains on the mean
                        squared residual over every observed triple (no solve) and predicts q+ by
                        Newton's method; with p from Eq. 11 it conserves T + V exactly.
     leapfrog           Eq. 15: q+ = 2q - q- - dt^2 M^-1 grad V(q); velocity as Eq. 14.
     symplectic_euler   Eq. 17: the leapfrog's positions; velocity (q+ - q) / dt (Eq. 16).
     euler              Eq. 19: q+ = 2q - q- - dt^2 M^-1 grad V(q-); velocity (q+ - q) / dt.
   The explicit schemes train on the error of the predicted q+ (App. A). cfg.integrator is the
   training step and cfg.predict the prediction step (the paper's "leapfrog+proposed" trains
   with the leapfrog and predicts with Eq. 12). theta: the potential network's parameters.
   In f32 the network's passes run in float (tensor_ops.h) in training and prediction alike,
   Newton stops at the float network's resolution, and a rollout keeps its positions in float
   (each q+ rounded, as a float32 program holds them); the scheme's arithmetic is double. */
#include "model.h"
#include "core/alloc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "integrators/discrete_step.h"
#include "math/linalg.h"
#include "ad/mlp_graph.h"
#include "ad/state_ops.h"
#include "ad/tape.h"

typedef struct Discrete {
    int N;
    double *M, *Minv;         /* the model's mass matrix and its inverse (N x N) */
    double *Msys_inv;         /* the system's own M^-1 (truth_loss) */
    PrtTape *tape;
    PrtTape *aux;             /* a library's discrete-gradient step: its Newton solve and the
                                 backward pass's recordings, beside the step's own on tape */
} Discrete;

static Discrete *impl(const PrtModel *m) { return m->impl; }

static bool is_scheme(PrtIntegrator i) {
    return i == PRT_INT_DISCRETE_GRADIENT || i == PRT_INT_LEAPFROG || i == PRT_INT_SYMPLECTIC_EULER ||
           i == PRT_INT_EULER;
}

/* The N x N matrix of a linear kernel (MassV, MinvP) column by column. */
static void kernel_matrix(const PrtSystem *s, PrtKernel f, int N, double *A) {
    double *e = prt_xcalloc((size_t)N * N, sizeof(double), "model buffers");
    double *col = prt_xalloc((size_t)N * N, sizeof(double), "model buffers");
    for (int j = 0; j < N; j++) e[j * N + j] = 1; /* N states, state j = unit vector j */
    f(N, e, s->params, col);                     /* col[i * N + j] = (A e_j)_i */
    memcpy(A, col, sizeof(double) * (size_t)N * N);
    free(e), free(col);
}

static int open_dtlnn(PrtModel *m, char *err, size_t errlen) {
    const PrtSystem *s = m->sys;
    const PrtModelConfig *cfg = &m->cfg;
    int N = s->N;
    if (s->C > 0 || s->NP != N) {
        snprintf(err, errlen, "a DT-LNN model learns unconstrained positions: the system has %s", s->C > 0 ? "constraints" : "rotating bodies");
        return -1;
    }
    if (N > PRT_STATE_MAX_Q) {
        snprintf(err, errlen, "a DT-LNN model handles at most %d coordinates, not %d", PRT_STATE_MAX_Q, N);
        return -1;
    }
    if (cfg->nnets != 1 || cfg->net[0].size[0] != N || cfg->net[0].size[cfg->net[0].nlayers] != 1) {
        snprintf(err, errlen, "a DT-LNN model's learned potential must read the %d positions and give one value", N);
        return -1;
    }
    if (!is_scheme(cfg->integrator) || !is_scheme(cfg->predict) || cfg->substeps != 1) {
        snprintf(err, errlen, "a DT-LNN model steps with discrete_gradient, leapfrog, symplectic_euler or euler, one step "
                 "per data interval, not %s", prt_integrators[is_scheme(cfg->integrator) ? cfg->predict : cfg->integrator].name);
        return -1;
    }
    Discrete *d = prt_xcalloc(1, sizeof *d, "model buffers");
    d->N = N;
    d->M = prt_xcalloc((size_t)N * N, sizeof(double), "model buffers");
    d->Minv = prt_xcalloc((size_t)N * N, sizeof(double), "model buffers");
    d->Msys_inv = prt_xcalloc((size_t)N * N, sizeof(double), "model buffers");
    kernel_matrix(s, s->MinvP, N, d->Msys_inv);
    if (cfg->unit_mass) {
        for (int i = 0; i < N; i++) d->M[i * N + i] = d->Minv[i * N + i] = 1;
    } else {
        kernel_matrix(s, s->MassV, N, d->M);
        memcpy(d->Minv, d->Msys_inv, sizeof(double) * (size_t)N * N);
    }
    d->tape = prt_tape_new();
    d->aux = prt_tape_new();
    m->tape = d->tape;
    m->nparams = prt_mlp_nparams(&cfg->net[0]);
    m->impl = d;
    return 0;
}

static void close_dtlnn(PrtModel *m) {
    Discrete *d = impl(m);
    if (!d) return;
    free(d->M), free(d->Minv), free(d->Msys_inv);
    prt_tape_free(d->tape);
    prt_tape_free(d->aux);
    free(d);
    m->impl = NULL;
}

static bool trainable(const PrtModel *m) { return true; }

/* Newton's tolerance for the network's precision (discrete_step.h) */
static double newton_tol(const PrtModel *m) { return m->cfg.net[0].f32 ? PRT_DISCRETE_STEP_TOL_F32 : PRT_DISCRETE_STEP_TOL; }

static void init_theta(const PrtModel *m, double *theta, PrtRng *rng) { prt_mlp_init(&m->cfg.net[0], theta, rng); }

static int masses(const PrtModel *m, const double *theta, double *out) { return 0; }

/* y = A x for the N x N matrix A and n states x (N x n). */
static void mat_apply(const double *A, int N, long n, const double *x, double *y) {
    for (int i = 0; i < N; i++)
        for (long b = 0; b < n; b++) {
            double v = 0;
            for (int j = 0; j < N; j++) v += A[i * N + j] * x[j * n + b];
            y[i * n + b] = v;
        }
}

/* ---- the network on the tape ---- */

/* grad V at the n states x (N x n) on the tape: returns its variable. */
static int potential_gradient(PrtModel *m, const double *theta, double *grad, const double *x, long n) {
    PrtTape *t = impl(m)->tape;
    int X = prt_tape_leaf(t, (long)impl(m)->N * n);
    memcpy(prt_tape_val(t, X), x, sizeof(double) * (size_t)impl(m)->N * (size_t)n);
    PrtMlpTrace tr;
    prt_mlp_graph_forward(t, &m->cfg.net[0], theta, grad, X, n, &tr);
    return prt_mlp_graph_vjp(t, &tr, -1);
}

/* [DG(a, b) | DG(b, c)] for the n states of each of a, b, c (N x n; c NULL: DG(a, b) only) on
   the tape t, from one forward pass over [a | b | c]. *X is the input leaf. */
static int discrete_gradients(PrtModel *m, PrtTape *t, const double *theta, double *grad, const double *a,
                              const double *b, const double *c, long n, int *X) {
    int N = impl(m)->N, blocks = c ? 3 : 2;
    long cols = blocks * n;
    *X = prt_tape_leaf(t, N * cols);
    double *x = prt_tape_val(t, *X);
    for (int i = 0; i < N; i++) {
        memcpy(x + i * cols, a + i * n, sizeof(double) * (size_t)n);
        memcpy(x + i * cols + n, b + i * n, sizeof(double) * (size_t)n);
        if (c) memcpy(x + i * cols + 2 * n, c + i * n, sizeof(double) * (size_t)n);
    }
    PrtMlpTrace tr;
    prt_mlp_graph_preactivations(t, &m->cfg.net[0], theta, grad, *X, cols, &tr);
    return prt_mlp_graph_discrete_grad(t, &tr, 0, n, (blocks - 1) * n);
}

/* ---- training ---- */

/* The triples of n chunks of npts points as three position arrays (N x T each, T = n (npts - 2)
   triples, triple j * n + b starting at point j of chunk b): q- = lo, q = mid, q+ = hi. */
static long gather_triples(int N, long n, int npts, const double *chunks, double *lo, double *mid, double *hi) {
    long T = n * (npts - 2), pt = 2L * N * n;
    for (int j = 0; j + 2 < npts; j++)
        for (int i = 0; i < N; i++)
            for (long b = 0; b < n; b++) {
                long col = j * n + b;
                lo[i * T + col] = chunks[j * pt + i * n + b];
                mid[i * T + col] = chunks[(j + 1) * pt + i * n + b];
                hi[i * T + col] = chunks[(j + 2) * pt + i * n + b];
            }
    return T;
}

/* The system's own force term in the model's units, M_model M_sys^-1 grad V_sys(x), for n states. */
static void truth_force(PrtModel *m, const double *x, long n, double *out) {
    const PrtSystem *s = m->sys;
    Discrete *d = impl(m);
    int N = d->N;
    double *g = prt_xalloc((size_t)N * (size_t)n, sizeof(double), "model buffers");
    double *a = prt_xalloc((size_t)N * (size_t)n, sizeof(double), "model buffers");
    s->gradV(n, x, s->params, g);
    mat_apply(d->Msys_inv, N, n, g, a);
    mat_apply(d->M, N, n, a, out);
    free(g), free(a);
}

/* The loss of the training step over n chunks, and its gradient into grad (NULL: none);
   truth: the system's own potential in place of the network (for the discrete gradient,
   grad V at the midpoint, a discrete gradient to third order in the step). */
static double step_loss(PrtModel *m, const double *theta, double *grad, bool truth, long n, int npts, double dt,
                        const double *chunks) {
    Discrete *d = impl(m);
    PrtTape *t = d->tape;
    int N = d->N;
    if (npts < 3) return NAN; /* run.c cuts triples for this family */
    long T = n * (npts - 2), len = (long)N * T;
    double *lo = prt_xalloc((size_t)len, sizeof(double), "model buffers"), *mid = prt_xalloc((size_t)len, sizeof(double), "model buffers");
    double *hi = prt_xalloc((size_t)len, sizeof(double), "model buffers"), *acc = prt_xalloc((size_t)len, sizeof(double), "model buffers");
    double *f = prt_xalloc((size_t)len * 2, sizeof(double), "model buffers"), *seed = prt_xalloc((size_t)len * 2, sizeof(double), "model buffers");
    gather_triples(N, n, npts, chunks, lo, mid, hi);
    if (grad) memset(grad, 0, sizeof(double) * (size_t)m->nparams);
    prt_tape_reset(t);
    bool dg = m->cfg.integrator == PRT_INT_DISCRETE_GRADIENT;
    int F = -1; /* the network's force term on the tape */
    if (dg) {
        /* residual r = M (q+ - 2q + q-) / dt^2 + (f1 + f2) / 2, f = [DG(q+, q) | DG(q, q-)] */
        for (long i = 0; i < len; i++) acc[i] = (hi[i] - 2 * mid[i] + lo[i]) / (dt * dt);
        double *Macc = prt_xalloc((size_t)len, sizeof(double), "model buffers");
        mat_apply(d->M, N, T, acc, Macc);
        memcpy(acc, Macc, sizeof(double) * (size_t)len);
        free(Macc);
        if (truth) {
            double *x = prt_xalloc((size_t)len, sizeof(double), "model buffers"), *h = prt_xalloc((size_t)len, sizeof(double), "model buffers");
            for (long i = 0; i < len; i++) x[i] = (hi[i] + mid[i]) / 2;
            truth_force(m, x, T, h);
            for (long i = 0; i < len; i++) x[i] = (mid[i] + lo[i]) / 2;
            truth_force(m, x, T, seed); /* as scratch */
            for (int i = 0; i < N; i++)
                for (long c = 0; c < T; c++) f[i * 2 * T + c] = h[i * T + c], f[i * 2 * T + T + c] = seed[i * T + c];
            free(x), free(h);
        } else {
            int X;
            F = discrete_gradients(m, t, theta, grad, hi, mid, lo, T, &X);
            memcpy(f, prt_tape_val(t, F), sizeof(double) * (size_t)len * 2);
        }
    } else {
        /* predicted q+ = 2q - q- - dt^2 M^-1 grad V(q or q-) */
        const double *at = m->cfg.integrator == PRT_INT_EULER ? lo : mid;
        if (truth) {
            truth_force(m, at, T, f);
        } else {
            F = potential_gradient(m, theta, grad, at, T);
            memcpy(f, prt_tape_val(t, F), sizeof(double) * (size_t)len);
        }
        mat_apply(d->Minv, N, T, f, acc);
        for (long i = 0; i < len; i++) acc[i] = 2 * mid[i] - lo[i] - dt * dt * acc[i] - hi[i]; /* the error of q+ */
    }
    /* the loss of the residual (or the error of q+) e, and de/df's seed */
    double loss = 0, count = (double)len;
    for (int i = 0; i < N; i++)
        for (long c = 0; c < T; c++) {
            long k = i * T + c;
            double e = dg ? acc[k] + (f[i * 2 * T + c] + f[i * 2 * T + T + c]) / 2 : acc[k];
            loss += m->cfg.l2 ? e * e : fabs(e);
            double de = (m->cfg.l2 ? 2 * e : e > 0 ? 1 : e < 0 ? -1 : 0) / count;
            if (dg) seed[i * 2 * T + c] = seed[i * 2 * T + T + c] = de / 2;
            else seed[k] = de; /* d loss / d(q+ predicted); to f below */
        }
    if (grad && F >= 0) {
        prt_tape_zero_adjoints(t);
        double *adj = prt_tape_adj(t, F);
        if (dg) {
            memcpy(adj, seed, sizeof(double) * (size_t)len * 2);
        } else { /* q+ = ... - dt^2 M^-1 f: adj f = -dt^2 M^-T seed */
            for (int j = 0; j < N; j++)
                for (long c = 0; c < T; c++) {
                    double v = 0;
                    for (int i = 0; i < N; i++) v += d->Minv[i * N + j] * seed[i * T + c];
                    adj[j * T + c] = -dt * dt * v;
                }
        }
        prt_tape_backward(t);
    }
    free(lo), free(mid), free(hi), free(acc), free(f), free(seed);
    return loss / count;
}

static double loss_grad(PrtModel *m, const double *theta, long n, int npts, double dt, const double *chunks,
                        double *grad) {
    return step_loss(m, theta, grad, false, n, npts, dt, chunks);
}

static double loss(PrtModel *m, const double *theta, long n, int npts, double dt, const double *chunks) {
    return step_loss(m, theta, NULL, false, n, npts, dt, chunks);
}

static double truth_loss(PrtModel *m, long n, int npts, double dt, const double *chunks) {
    return step_loss(m, NULL, NULL, true, n, npts, dt, chunks);
}

/* ---- prediction ---- */

/* The network's discrete gradient DG(y, q) for discrete_step.h, with its Jacobian in y row
   by row: one reverse sweep of the recorded pass per row, for every state at once (each
   state's DG depends on its own y only). */
typedef struct NetworkDG {
    PrtModel *m;
    const double *theta;
    PrtTape *t; /* the tape it records on */
} NetworkDG;

static void network_dg(void *ctx, int N, long n, const double *y, const double *q, double *g, double *jac) {
    NetworkDG *c = ctx;
    PrtTape *t = c->t;
    prt_tape_reset(t);
    int X, D = discrete_gradients(c->m, t, c->theta, NULL, y, q, NULL, n, &X);
    memcpy(g, prt_tape_val(t, D), sizeof(double) * (size_t)N * (size_t)n);
    if (!jac) return;
    for (int i = 0; i < N; i++) {
        prt_tape_zero_adjoints(t);
        double *adj = prt_tape_adj(t, D);
        for (long b = 0; b < n; b++) adj[i * n + b] = 1;
        prt_tape_backward(t);
        const double *xa = prt_tape_adj(t, X); /* N x 2n: the y block first */
        for (int j = 0; j < N; j++) memcpy(jac + ((long)i * N + j) * n, xa + j * 2 * n, sizeof(double) * (size_t)n);
    }
}

/* grad V at n states x (N x n) into g. */
static void potential_gradient_values(PrtModel *m, const double *theta, const double *x, long n, double *g) {
    prt_tape_reset(impl(m)->tape);
    int G = potential_gradient(m, theta, NULL, x, n);
    memcpy(g, prt_tape_val(impl(m)->tape, G), sizeof(double) * (size_t)impl(m)->N * (size_t)n);
}

/* An f32 model's positions are float, as a float32 program stores them: each predicted q+
   is rounded to float before the next step and the force term recomputed there. */
static void round_to_float(double *x, long n) {
    for (long i = 0; i < n; i++) x[i] = (float)x[i];
}

static int rollout(PrtModel *m, const double *theta, long n, const double *xv0, const double *times, int nt,
                   double rtol, double atol, double *out) {
    Discrete *d = impl(m);
    int N = d->N;
    bool f32 = m->cfg.net[0].f32;
    long len = (long)N * n, pt = 2 * len;
    PrtIntegrator scheme = m->cfg.predict;
    double h = times[1] - times[0];
    memset(&m->rollout_stats, 0, sizeof m->rollout_stats);
    /* positions q[0..nt] (one past the end: the Euler velocities need it) and the force terms
       f[k] = DG(q[k], q[k-1]) (discrete gradient) or grad V(q[k]) (explicit schemes) */
    double *q = prt_xcalloc((size_t)(nt + 1) * (size_t)len, sizeof(double), "rollout buffers");
    double *f = prt_xcalloc((size_t)(nt + 1) * (size_t)len, sizeof(double), "rollout buffers");
    double *a = prt_xalloc((size_t)len, sizeof(double), "rollout buffers");
    memcpy(q, xv0, sizeof(double) * (size_t)len);
    memcpy(q + len, xv0 + pt, sizeof(double) * (size_t)len);
    if (f32) round_to_float(q, 2 * len);
    int last = scheme == PRT_INT_SYMPLECTIC_EULER || scheme == PRT_INT_EULER ? nt : nt - 1;
    int rc = 0;
    if (scheme == PRT_INT_DISCRETE_GRADIENT) {
        prt_tape_reset(d->tape);
        int X, D = discrete_gradients(m, d->tape, theta, NULL, q + len, q, NULL, n, &X);
        memcpy(f + len, prt_tape_val(d->tape, D), sizeof(double) * (size_t)len);
    } else {
        potential_gradient_values(m, theta, q, n, f);
        potential_gradient_values(m, theta, q + len, n, f + len);
    }
    for (int k = 1; k < last && rc == 0; k++) {
        double *qm = q + (k - 1) * len, *qk = q + k * len, *qp = q + (k + 1) * len;
        /* the explicit guess (or step): q+ = 2q - q- - h^2 M^-1 f */
        const double *force = scheme == PRT_INT_EULER ? f + (k - 1) * len : f + k * len;
        mat_apply(d->Minv, N, n, force, a);
        for (long i = 0; i < len; i++) qp[i] = 2 * qk[i] - qm[i] - h * h * a[i];
        if (scheme == PRT_INT_DISCRETE_GRADIENT) {
            NetworkDG c = {m, theta, d->tape};
            int it = prt_discrete_step(N, n, h, newton_tol(m), d->M, qm, qk, f + k * len, qp, f + (k + 1) * len, network_dg, &c);
            if (it == PRT_DISCRETE_STEP_BUDGET) {
                m->rollout_stats.failure = PRT_ODE_NO_CONVERGENCE, m->rollout_stats.budget = PRT_DISCRETE_STEP_MAX_ITER;
                rc = -1;
            } else if (it < 0) { /* singular or non-finite: name the first bad state */
                long bad = prt_first_nonfinite(qp, len);
                m->rollout_stats.failure = bad >= 0 ? PRT_ODE_NONFINITE : PRT_ODE_SINGULAR, m->rollout_stats.bad = bad;
                rc = -1;
            } else {
                m->rollout_stats.steps += it;
                if (f32) {
                    round_to_float(qp, len);
                    network_dg(&c, N, n, qp, qk, f + (k + 1) * len, NULL);
                }
            }
        } else {
            if (f32) round_to_float(qp, len);
            potential_gradient_values(m, theta, qp, n, f + (k + 1) * len);
            m->rollout_stats.steps++;
        }
        long bad = prt_first_nonfinite(qp, len);
        if (rc == 0 && bad >= 0) {
            m->rollout_stats.failure = PRT_ODE_NONFINITE, m->rollout_stats.bad = bad;
            rc = -1;
        }
        if (rc) m->rollout_stats.t_fail = times[0] + k * h;
        else if (m->rollout_observer && m->rollout_observer->reached) /* progress, as dopri5 reports it */
            m->rollout_observer->reached(m->rollout_observer->ctx, k + 1 < nt ? k + 1 : nt - 1, nt);
    }
    /* the velocities of the scheme at each point */
    for (int k = 0; k < nt; k++) {
        double *o = out + k * pt, *qk = q + k * len;
        memcpy(o, qk, sizeof(double) * (size_t)len);
        double *v = o + len;
        if (scheme == PRT_INT_DISCRETE_GRADIENT) {
            /* Eq. 11, p = M (q - q-) / h - h f / 2, as qdot = M^-1 p = (q - q-) / h - h M^-1 f / 2
               (f = DG(q, q-)); at k = 0, p0 = p1 + h f1 from the first step */
            int j = k > 0 ? k : 1;
            double sgn = k > 0 ? -1 : 1;
            mat_apply(d->Minv, N, n, f + j * len, a);
            for (long i = 0; i < len; i++) v[i] = (q[j * len + i] - q[(j - 1) * len + i]) / h + sgn * h * a[i] / 2;
        } else if (scheme == PRT_INT_LEAPFROG) { /* Eq. 14: qdot = qdot(k -+ 1/2) -+ h M^-1 grad V / 2 */
            mat_apply(d->Minv, N, n, f + k * len, a);
            for (long i = 0; i < len; i++)
                v[i] = k > 0 ? (qk[i] - qk[i - len]) / h - h * a[i] / 2 : (qk[i + len] - qk[i]) / h + h * a[i] / 2;
        } else { /* Eq. 16, 18: q+ = q + h qdot */
            for (long i = 0; i < len; i++) v[i] = (qk[i + len] - qk[i]) / h;
        }
    }
    free(q), free(f), free(a);
    return rc;
}

/* ---- the library's derivatives (model.h: tape_step; a discrete-time model has no field) ---- */

/* A M^-1 x of n states x (a variable, N x n) on the tape: each row a sum of x's rows */
static int tape_minv(Discrete *d, int x, long n) {
    PrtTape *t = d->tape;
    int rows[PRT_STATE_MAX_Q], views[PRT_STATE_MAX_Q];
    for (int j = 0; j < d->N; j++) views[j] = prt_tape_view(t, x, j * n, n);
    for (int i = 0; i < d->N; i++) rows[i] = prt_tape_lincomb(t, d->N, views, d->Minv + (long)i * d->N);
    return prt_tape_concat(t, d->N, rows);
}

/* grad V of the network at the positions q (a variable, N x n) */
static int tape_gradient(PrtModel *m, const double *theta, double *grad, int q, long n) {
    PrtMlpTrace tr;
    prt_mlp_graph_forward(impl(m)->tape, &m->cfg.net[0], theta, grad, q, n, &tr);
    return prt_mlp_graph_vjp(impl(m)->tape, &tr, -1);
}

/* The discrete gradient's prediction step (Eq. 12) as tape operations. dg_value: DG(y, q) of
   two variables; dg_step: q+ from (q-, q) by Newton's method as the rollout solves it (the
   explicit guess, then prt_discrete_step). Their backward passes record DG again on the aux
   tape and sweep it; dg_step's by the implicit function theorem: at the solution r(q+; q, q-)
   = M (q+ - 2q + q-) / h^2 + (DG(q+, q) + DG(q, q-)) / 2 = 0, so with lambda = (dr/dq+)^-T
   adj(q+) (state by state), adj(q, q-, theta) -= lambda . dr/d(q, q-, theta). */
typedef struct DgOp {
    PrtModel *m;
    const double *theta;
    double *grad;
    long n;
    double h;
} DgOp;

/* [DG(a, b) | DG(b, c)] (c NULL: DG(a, b)) on the aux tape, swept back from the seed (2 N x n,
   or N x n): the adjoints of a, b, c (N x n each, any NULL) and theta's into op->grad */
static void dg_sweep(const DgOp *op, const double *a, const double *b, const double *c, const double *seed,
                     double *abar, double *bbar, double *cbar) {
    Discrete *d = impl(op->m);
    int N = d->N, blocks = c ? 3 : 2;
    long n = op->n, cols = blocks * n;
    prt_tape_reset(d->aux);
    int X, D = discrete_gradients(op->m, d->aux, op->theta, op->grad, a, b, c, n, &X);
    prt_tape_zero_adjoints(d->aux);
    memcpy(prt_tape_adj(d->aux, D), seed, sizeof(double) * (size_t)N * (size_t)(blocks - 1) * (size_t)n);
    prt_tape_backward(d->aux);
    const double *x = prt_tape_adj(d->aux, X); /* N x [a | b | c] */
    double *out[3] = {abar, bbar, cbar};
    for (int k = 0; k < blocks; k++)
        for (int i = 0; out[k] && i < N; i++)
            for (long s = 0; s < n; s++) out[k][i * n + s] += x[i * cols + k * n + s];
}

static void dg_value_backward(PrtTape *t, const void *ctx, const int *in, int nin, int out) {
    const DgOp *op = ctx;
    dg_sweep(op, prt_tape_val(t, in[0]), prt_tape_val(t, in[1]), NULL, prt_tape_adj(t, out), prt_tape_adj(t, in[0]),
             prt_tape_adj(t, in[1]), NULL);
}

static int dg_value(const DgOp *op, int y, int q) {
    Discrete *d = impl(op->m);
    long len = (long)d->N * op->n;
    int out = prt_tape_op(d->tape, dg_value_backward, op, sizeof *op, 2, (int[]){y, q}, len);
    NetworkDG c = {op->m, op->theta, d->aux};
    network_dg(&c, d->N, op->n, prt_tape_val(d->tape, y), prt_tape_val(d->tape, q), prt_tape_val(d->tape, out), NULL);
    return out;
}

static void dg_step_backward(PrtTape *t, const void *ctx, const int *in, int nin, int out) {
    const DgOp *op = ctx;
    Discrete *d = impl(op->m);
    int N = d->N, piv[PRT_STATE_MAX_Q];
    long n = op->n, len = (long)N * n;
    const double *qm = prt_tape_val(t, in[0]), *q = prt_tape_val(t, in[1]), *qp = prt_tape_val(t, out);
    double *g = prt_xalloc((size_t)len, sizeof(double), "model buffers"),
           *jac = prt_xalloc((size_t)len * N, sizeof(double), "model buffers"),
           *lambda = prt_xalloc((size_t)len * 2, sizeof(double), "model buffers"), A[PRT_STATE_MAX_Q * PRT_STATE_MAX_Q];
    NetworkDG c = {op->m, op->theta, d->aux};
    network_dg(&c, N, n, qp, q, g, jac);
    const double *abar = prt_tape_adj(t, out), h2 = op->h * op->h;
    for (long s = 0; s < n; s++) { /* (M / h^2 + J / 2)^T lambda = adj(q+) */
        double b[PRT_STATE_MAX_Q];
        for (int i = 0; i < N; i++) {
            b[i] = abar[i * n + s];
            for (int j = 0; j < N; j++) A[i * N + j] = d->M[i * N + j] / h2 + jac[((long)i * N + j) * n + s] / 2;
        }
        bool ok = prt_lu_factor(A, N, piv);
        if (ok) prt_lu_solve_transposed(A, N, piv, b);
        for (int i = 0; i < N; i++) lambda[i * n + s] = ok ? b[i] : NAN;
    }
    /* adj(q) -= -2 M^T lambda / h^2 + (dDG(q+, q)/dq + dDG(q, q-)/dq)^T lambda / 2, adj(q-) -= M^T lambda / h^2 +
       dDG(q, q-)/dq-^T lambda / 2, theta's alike: the DG part by a sweep with seed -lambda / 2 on both blocks */
    double *seed = prt_xalloc((size_t)len * 2, sizeof(double), "model buffers");
    for (int i = 0; i < N; i++)
        for (long s = 0; s < n; s++) seed[i * 2 * n + s] = seed[i * 2 * n + n + s] = -lambda[i * n + s] / 2;
    double *qbar = prt_tape_adj(t, in[1]), *qmbar = prt_tape_adj(t, in[0]);
    dg_sweep(op, qp, q, qm, seed, NULL, qbar, qmbar);
    for (int i = 0; i < N; i++)
        for (long s = 0; s < n; s++) {
            double Ml = 0; /* (M^T lambda)_i */
            for (int j = 0; j < N; j++) Ml += d->M[j * N + i] * lambda[j * n + s];
            qbar[i * n + s] += 2 * Ml / h2, qmbar[i * n + s] -= Ml / h2;
        }
    free(g), free(jac), free(lambda), free(seed);
}

/* q+ from (q-, q) as the rollout's discrete-gradient step computes it; -1 (and *why) if Newton failed */
static int dg_step(const DgOp *op, int qm, int q, char *why, size_t whylen) {
    Discrete *d = impl(op->m);
    int N = d->N;
    long n = op->n, len = (long)N * n;
    int out = prt_tape_op(d->tape, dg_step_backward, op, sizeof *op, 2, (int[]){qm, q}, len);
    const double *qmv = prt_tape_val(d->tape, qm), *qv = prt_tape_val(d->tape, q);
    double *qp = prt_tape_val(d->tape, out), *f = prt_xalloc((size_t)len, sizeof(double), "model buffers"),
           *fnew = prt_xalloc((size_t)len, sizeof(double), "model buffers"),
           *a = prt_xalloc((size_t)len, sizeof(double), "model buffers");
    NetworkDG c = {op->m, op->theta, d->aux};
    network_dg(&c, N, n, qv, qmv, f, NULL); /* DG(q, q-), then the explicit guess */
    mat_apply(d->Minv, N, n, f, a);
    for (long i = 0; i < len; i++) qp[i] = 2 * qv[i] - qmv[i] - op->h * op->h * a[i];
    int it = prt_discrete_step(N, n, op->h, newton_tol(op->m), d->M, qmv, qv, f, qp, fnew, network_dg, &c);
    free(f), free(fnew), free(a);
    if (it >= 0) return out;
    snprintf(why, whylen, "the discrete gradient's Newton solve %s", it == PRT_DISCRETE_STEP_BUDGET
             ? "did not converge" : "met a singular Jacobian or a value that is not finite");
    return -1;
}

/* The discrete gradient's positions q[0..steps] and the state at point `steps` with Eq. 11's
   velocity, as the rollout computes them */
static int dg_trajectory_end(PrtModel *m, const DgOp *op, int *q, int steps, char *err, size_t errlen) {
    for (int j = 1; j < steps; j++)
        if ((q[j + 1] = dg_step(op, q[j - 1], q[j], err, errlen)) < 0) return -2; /* (failed, not unsupported) */
    int k = steps, j = k > 0 ? k : 1;
    int a = tape_minv(impl(m), dg_value(op, q[j], q[j - 1]), op->n);
    double h = op->h;
    int v = prt_tape_lincomb(impl(m)->tape, 3, (int[]){q[j], q[j - 1], a}, (double[]){1 / h, -1 / h, (k > 0 ? -1 : 1) * h / 2});
    return prt_tape_concat(impl(m)->tape, 2, (int[]){q[k], v});
}

/* The prediction step's positions from q[0], q[1] through q[last] (Eq. 15, 17, 19), and the
   state at point k with the scheme's velocity, as the rollout computes them */
static int abi_tape_step(PrtModel *m, const double *theta, double *grad, long n, double h, int steps, int xv, char *err,
                         size_t errlen) {
    Discrete *d = impl(m);
    PrtTape *t = d->tape;
    PrtIntegrator scheme = m->cfg.predict;
    long len = (long)d->N * n;
    if (scheme == PRT_INT_DISCRETE_GRADIENT) {
        DgOp op = {m, theta, grad, n, h};
        int *q = prt_xalloc((size_t)steps + 2, sizeof(int), "model buffers");
        q[0] = prt_tape_view(t, xv, 0, len), q[1] = prt_tape_view(t, xv, 2 * len, len);
        int out = dg_trajectory_end(m, &op, q, steps, err, errlen);
        free(q);
        return out;
    }
    int last = scheme == PRT_INT_LEAPFROG ? steps : steps + 1;
    int *q = prt_xalloc((size_t)last + 2, sizeof(int), "model buffers"), *f = prt_xalloc((size_t)last + 2, sizeof(int), "model buffers");
    q[0] = prt_tape_view(t, xv, 0, len), q[1] = prt_tape_view(t, xv, 2 * len, len);
    f[0] = tape_gradient(m, theta, grad, q[0], n), f[1] = tape_gradient(m, theta, grad, q[1], n);
    for (int j = 1; j < last; j++) { /* q+ = 2q - q- - h^2 M^-1 f */
        int a = tape_minv(d, scheme == PRT_INT_EULER ? f[j - 1] : f[j], n);
        q[j + 1] = prt_tape_lincomb(t, 3, (int[]){q[j], q[j - 1], a}, (double[]){2, -1, -h * h});
        f[j + 1] = tape_gradient(m, theta, grad, q[j + 1], n);
    }
    int v;
    if (scheme == PRT_INT_LEAPFROG) /* Eq. 14 */
        v = steps > 0 ? prt_tape_lincomb(t, 3, (int[]){q[steps], q[steps - 1], tape_minv(d, f[steps], n)},
                                         (double[]){1 / h, -1 / h, -h / 2})
                      : prt_tape_lincomb(t, 3, (int[]){q[1], q[0], tape_minv(d, f[0], n)}, (double[]){1 / h, -1 / h, h / 2});
    else /* Eq. 16, 18 */
        v = prt_tape_lincomb(t, 2, (int[]){q[steps + 1], q[steps]}, (double[]){1 / h, -1 / h});
    int out = prt_tape_concat(t, 2, (int[]){q[steps], v});
    free(q), free(f);
    return out;
}

/* T + V of the model: qdot^T M qdot / 2 + V(q). */
static void energy(PrtModel *m, const double *theta, long n, const double *xv, double *out) {
    Discrete *d = impl(m);
    PrtTape *t = d->tape;
    int N = d->N;
    long len = (long)N * n;
    double *Mv = prt_xalloc((size_t)len, sizeof(double), "model buffers");
    mat_apply(d->M, N, n, xv + len, Mv);
    prt_tape_reset(t);
    int X = prt_tape_leaf(t, len);
    memcpy(prt_tape_val(t, X), xv, sizeof(double) * (size_t)len);
    PrtMlpTrace tr;
    const double *V = prt_tape_val(t, prt_mlp_graph_forward(t, &m->cfg.net[0], theta, NULL, X, n, &tr));
    for (long b = 0; b < n; b++) {
        double T = 0;
        for (int i = 0; i < N; i++) T += xv[len + i * n + b] * Mv[i * n + b];
        out[b] = T / 2 + V[b];
    }
    free(Mv);
}

/* Its one learned potential; no known terms yet. */
static int configure(const PrtModelDecl *d, PrtModelConfig *cfg, const PrtLearnedTerm **blame, char *err, size_t errlen) {
    const char *kind = cfg->family->name;
    if (prt_model_decl_plain(kind, d, blame, err, errlen) != 0 ||
        prt_model_decl_counts(kind, d, 1, 0, "one learned potential and no learned force", err, errlen) != 0)
        return -1;
    if (prt_model_decl_no_known(kind, d, err, errlen) != 0) return -1;
    cfg->nnets = 1;
    cfg->net[0] = d->potentials[0].net;
    return 0;
}

static const char *net_role(const PrtModelConfig *cfg, int k) { return "potential"; }

/* Not an integrator of the model's ODE: what it trains on and how it predicts */
static void say_scheme(const PrtModel *m, FILE *out) {
    const PrtModelConfig *cfg = &m->cfg;
    char newton[80] = "";
    if (cfg->predict == PRT_INT_DISCRETE_GRADIENT)
        snprintf(newton, sizeof newton, " (Newton's method, to steps below %g of 1 + |q|)", newton_tol(m));
    fprintf(out, "scheme: trained through %s on every window of %d consecutive observed points; predicts with %s%s from "
            "each test trajectory's first %d positions\n", prt_integrators[cfg->integrator].name, m->family->train_window,
            prt_integrators[cfg->predict].name, newton, m->family->start_points);
}

static void say_rollout(const PrtModel *m, double rtol, double atol, char *buf, size_t len) {
    snprintf(buf, len, "%s from the first %d positions", prt_integrators[m->cfg.predict].name, m->family->start_points);
}

/* The floor against a model with no force (theta = 0: a constant V): the data's step (and
   noise), not the network, bound the fit when the two are near. */
static void say_floor(const PrtModel *m, const PrtFloorFacts *f, FILE *out) {
    /* (truth_loss: grad V at the midpoint stands in for the true V's discrete gradient) */
    prt_model_floor_line(m, f, m->cfg.integrator == PRT_INT_DISCRETE_GRADIENT
                                   ? "; the true V's discrete gradient taken as grad V at the midpoint (exact for a quadratic V)"
                                   : "", out);
    if (f->baseline > 0 && !(f->floor < 0.1 * f->baseline)) /* (0: the data at rest, no scale) */
        fprintf(out, "  (that is %.2g of the loss of a model with no force: %s, not the network, bounds the fit)\n",
                f->floor / f->baseline, f->noisy ? "the data's noise or its step dt" : "the data's step dt");
}

const PrtModelFamily prt_family_dtlnn = {.name = "dtlnn", .title = "DT-LNN", .configure = configure, .net_role = net_role, .steps_make_the_model = true,
    .predicts_at_training_precision = true, .open = open_dtlnn, .close = close_dtlnn,
    .trainable = trainable, .init_theta = init_theta, .loss_grad = loss_grad, .loss = loss,
    .truth_loss = truth_loss, .rollout = rollout, .masses = masses, .energy = energy, .tape_step = abi_tape_step,
    .start_points = 2, .train_window = 3, .positions_only = true, .zero_theta_is_baseline = true,
    .say_scheme = say_scheme, .say_rollout = say_rollout, .say_floor = say_floor,
    .floor_limit = "the training step or the data's noise, not the network, limits the fit"};
