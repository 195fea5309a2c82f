/* model_generalized.c — the CHNN paper's baselines (model.h families), which learn in the
   generalized coordinates q of the program's `coordinates` block (paper Sec. 7, App. D):
     node   an MLP is the vector field of (q, qdot);
     hnn    H = p^T M^-1(q) p / 2 + V(q), Hamilton's equations in (q, p); M^-1 = L L^T with
            L(q) a lower-triangular network output with a softplus diagonal (Zhong et al.),
            or the system's own M(q) (`mass known`: the compiler's MassQ and KineticQ);
     lnn    L(q, qdot) an MLP; the Euler-Lagrange equations solved for qddot
            (Cranmer et al.), with the Hessian by forward-over-reverse passes;
     delan  L = qdot^T M(q) qdot / 2 - V(q) (Lutter et al.), with M^-1 = L L^T as the HNN's:
            the paper's App. D.2 (and its code) gives both baselines that parametrization.
   The networks see each angle as (cos q, sin q) (state_ops.h); the integration runs on
   unwrapped angles. The data's Cartesian chunks are mapped to (q, qdot) by the compiled
   inverse map, angles unwrapped along each chunk; the loss is the mean absolute (or
   squared) error of (q, qdot) in these coordinates, as the paper's; rollouts map back to
   Cartesian states through the coordinate map, so every metric reads the same numbers as
   for CHNN. The fields are recorded on the tape (mlp_graph.h, tensor_ops.h), for training
   and for rollouts alike, so the two cannot disagree. theta: the networks' parameters in
   the order of cfg.net. A family of another file reuses all of it but the field
   (model_generalized.h: prt_generalized_open with a field of its own). */
#include "model.h"
#include "model_generalized.h"
#include "core/alloc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ad/mlp_graph.h"
#include "ad/state_ops.h"
#include "ad/tape.h"
#include "ad/tensor_ops.h"

/* GEN_OWN: a family of another file, whose field is Generalized.own (model_generalized.h) */
typedef enum GenKind { GEN_NODE, GEN_HNN, GEN_LNN, GEN_DELAN, GEN_OWN } GenKind;

/* The reference's LNN adds eps |qdot|^2 to the network's L so that its Hessian in qdot is not
   singular at initialization (CHNN code, biases/models/lnn.py; the network can offset it). */
static const double lnn_eps = 0.1;

typedef struct Generalized {
    GenKind kind;
    PrtGeneralizedField own; /* GEN_OWN's field */
    bool known_mass;      /* an HNN with the system's M(q) */
    int nq, nf;           /* generalized coordinates; network features of q */
    long net_off[PRT_MODEL_MAX_NETS];
    double *kparams, *kparams_adj; /* the kernels' parameters: the system's masses, free lengths */
    PrtTape *tape;        /* training; rollouts record forward passes on it too */
    /* what the tape's field reads (set per recording) */
    const double *theta;
    double *grad;
    long n;
    bool truth;           /* the system's own dynamics (truth_loss) */
} Generalized;

static Generalized *impl(const PrtModel *m) { return m->impl; }

/* ---- opening ---- */

static int check_net(const PrtModel *m, int k, int in, int out, const char *what, char *err, size_t errlen) {
    const PrtMlp *net = &m->cfg.net[k];
    if (net->size[0] == in && net->size[net->nlayers] == out) return 0;
    snprintf(err, errlen, "the %s of a %s model must map %d inputs to %d outputs, not %d to %d", what, m->family->title,
             in, out, net->size[0], net->size[net->nlayers]);
    return -1;
}

/* What every family in generalized coordinates needs of the system and cfg. */
static int check_system(const PrtModel *m, char *err, size_t errlen) {
    const PrtSystem *sys = m->sys;
    const PrtModelConfig *cfg = &m->cfg;
    int nq = sys->nq;
    if (nq <= 0 || !sys->CoordMap || !sys->CoordInverse) {
        snprintf(err, errlen, "a %s model learns in generalized coordinates: the system needs a `coordinates` block with "
                 "an `inverse` block (and a compile for this model)", m->family->title);
        return -1;
    }
    if (nq > PRT_STATE_MAX_Q) {
        snprintf(err, errlen, "a %s model handles at most %d generalized coordinates, not %d", m->family->title, PRT_STATE_MAX_Q, nq);
        return -1;
    }
    for (int k = 0; k < cfg->nnets; k++)
        if (cfg->net[k].f32) {
            snprintf(err, errlen, "a %s model trains in f64 only so far (precision f32 is for the Cartesian families: chnn, clnn, csonode)",
                     m->family->title);
            return -1;
        }
    return prt_model_check_rk_step(m, err, errlen);
}

/* The model's buffers, its networks' offsets in theta and nparams. */
static void alloc_model(PrtModel *m, GenKind kind, bool known, PrtGeneralizedField own) {
    const PrtSystem *sys = m->sys;
    const PrtModelConfig *cfg = &m->cfg;
    Generalized *g = prt_xcalloc(1, sizeof *g, "model buffers");
    g->kind = kind, g->own = own, g->known_mass = known, g->nq = sys->nq, g->nf = prt_features_width(sys->nq, sys->angular);
    m->nparams = 0;
    for (int k = 0; k < cfg->nnets; k++) {
        g->net_off[k] = m->nparams;
        m->nparams += prt_mlp_nparams(&cfg->net[k]);
    }
    g->kparams = prt_xalloc((size_t)(sys->nparams + 1), sizeof(double), "model buffers");
    g->kparams_adj = prt_xcalloc((size_t)(sys->nparams + 1), sizeof(double), "model buffers");
    memcpy(g->kparams, sys->params, sizeof(double) * (size_t)sys->nparams);
    g->tape = prt_tape_new();
    m->tape = g->tape;
    m->impl = g;
}

static int open_model(PrtModel *m, GenKind kind, char *err, size_t errlen) {
    const PrtSystem *sys = m->sys;
    const PrtModelConfig *cfg = &m->cfg;
    if (check_system(m, err, errlen) != 0) return -1;
    int nq = sys->nq, nf = prt_features_width(nq, sys->angular), tri = nq * (nq + 1) / 2;
    bool known = kind == GEN_HNN && cfg->nnets == 1;
    int want = kind == GEN_HNN ? (known ? 1 : 2) : kind == GEN_DELAN ? 2 : 1;
    if (cfg->nnets != want) {
        snprintf(err, errlen, "internal error: a %s model with %d networks", m->family->title, cfg->nnets);
        return -1;
    }
    int rc = 0;
    if (kind == GEN_NODE) rc = check_net(m, 0, nf + nq, 2 * nq, "learned field", err, errlen);
    if (kind == GEN_LNN) rc = check_net(m, 0, nf + nq, 1, "learned Lagrangian", err, errlen);
    if (kind == GEN_HNN || kind == GEN_DELAN) {
        rc = check_net(m, 0, nf, 1, "learned potential", err, errlen);
        if (!rc && !known) rc = check_net(m, 1, nf, tri, "learned mass factor", err, errlen);
    }
    if (rc) return rc;
    if (known && (!sys->MassQ || !sys->KineticQ)) {
        snprintf(err, errlen, "internal error: the system was not compiled for a %s model with known mass", m->family->title);
        return -1;
    }
    alloc_model(m, kind, known, NULL);
    return 0;
}

int prt_generalized_open(PrtModel *m, PrtGeneralizedField field, char *err, size_t errlen) {
    if (check_system(m, err, errlen) != 0) return -1;
    alloc_model(m, GEN_OWN, false, field);
    return 0;
}

int prt_generalized_check_net(const PrtModel *m, int k, int in, int out, const char *what, char *err, size_t errlen) {
    return check_net(m, k, in, out, what, err, errlen);
}

long prt_generalized_net_offset(const PrtModel *m, int k) { return impl(m)->net_off[k]; }

static int open_node(PrtModel *m, char *err, size_t errlen) { return open_model(m, GEN_NODE, err, errlen); }
static int open_hnn(PrtModel *m, char *err, size_t errlen) { return open_model(m, GEN_HNN, err, errlen); }
static int open_lnn(PrtModel *m, char *err, size_t errlen) { return open_model(m, GEN_LNN, err, errlen); }
static int open_delan(PrtModel *m, char *err, size_t errlen) { return open_model(m, GEN_DELAN, err, errlen); }

static bool trainable(const PrtModel *m) {
    return !impl(m)->known_mass || (m->sys->MassQVJP && m->sys->KineticQVJP);
}

static void close_model(PrtModel *m) {
    Generalized *g = impl(m);
    if (!g) return;
    free(g->kparams), free(g->kparams_adj);
    prt_tape_free(g->tape);
    free(g);
    m->impl = NULL;
}

static void init_theta(const PrtModel *m, double *theta, PrtRng *rng) {
    for (int k = 0; k < m->cfg.nnets; k++) prt_mlp_init(&m->cfg.net[k], theta + impl(m)->net_off[k], rng);
}

static int masses(const PrtModel *m, const double *theta, double *out) { return 0; /* no Eq. 9 parameters */ }

/* ---- the fields on the tape ---- */

static const double *net_theta(const PrtModel *m, int k) { return impl(m)->theta + impl(m)->net_off[k]; }
static double *net_grad(const PrtModel *m, int k) { return impl(m)->grad ? impl(m)->grad + impl(m)->net_off[k] : NULL; }

/* dV/dq of the learned potential (network 0) at q. */
static int potential_gradient(PrtModel *m, int q, int phi) {
    Generalized *g = impl(m);
    PrtMlpTrace tr;
    prt_mlp_graph_forward(g->tape, &m->cfg.net[0], net_theta(m, 0), net_grad(m, 0), phi, g->n, &tr);
    int dphi = prt_mlp_graph_vjp(g->tape, &tr, -1);
    return prt_op_features_vjp(g->tape, q, dphi, g->nq, m->sys->angular, g->n);
}

/* The learned factor L(q) of network 1 (raw output in *raw, trace in *tr). */
static int mass_factor(PrtModel *m, int phi, int *raw, PrtMlpTrace *tr) {
    Generalized *g = impl(m);
    *raw = prt_mlp_graph_forward(g->tape, &m->cfg.net[1], net_theta(m, 1), net_grad(m, 1), phi, g->n, tr);
    return prt_op_tril_softplus(g->tape, *raw, g->nq, g->n);
}

/* d/dq of |L(q)^T v|^2 / 2 at fixed v, for the factor L from mass_factor (w = L^T v). */
static int factor_kinetic_gradient(PrtModel *m, int q, int raw, PrtMlpTrace *tr, int v, int w) {
    Generalized *g = impl(m);
    int G = prt_op_tril_softplus_scale(g->tape, raw, prt_op_tril_outer(g->tape, v, w, g->nq, g->n), g->nq, g->n);
    return prt_op_features_vjp(g->tape, q, prt_mlp_graph_vjp(g->tape, tr, G), g->nq, m->sys->angular, g->n);
}

static int known_kernel(PrtModel *m, PrtKernel f, PrtKernel vjp, int nin, const int *in, int nout) {
    Generalized *g = impl(m);
    const PrtSystem *s = m->sys;
    return prt_tape_kernel(g->tape, f, vjp, g->n, nin, in, nout, g->kparams, s->nparams, g->kparams_adj);
}

/* The system's own Hamiltonian field in (q, p): qdot = M^-1 p, pdot = dT/dq(q, qdot) - dV/dq. */
static int truth_field(PrtModel *m, int q, int p) {
    Generalized *g = impl(m);
    PrtTape *t = g->tape;
    const PrtSystem *s = m->sys;
    int nq = g->nq;
    int M = known_kernel(m, s->MassQ, NULL, 1, &q, nq * nq);
    int qdot = prt_op_mat_solve(t, M, p, nq, g->n);
    int K = known_kernel(m, s->KineticQ, NULL, 2, (int[]){q, qdot}, nq);
    int dV = known_kernel(m, s->GradVq, NULL, 1, &q, nq);
    return prt_tape_concat(t, 2, (int[]){qdot, prt_tape_lincomb(t, 2, (int[]){K, dV}, (double[]){1, -1})});
}

/* LNN: the k = nq + 1 tangent directions of x = (features, qdot): the unit vectors of qdot,
   then (dphi/dq qdot, 0), whose Hessian products give H_qdot,qdot and H_qdot,q qdot. */
typedef struct Directions {
    int nf, nq;
    long n;
} Directions;

static void directions_backward(PrtTape *t, const void *ctx, const int *in, int nin, int out) {
    const Directions *d = ctx;
    long n = d->n, kn = (long)(d->nq + 1) * n;
    const double *ubar = prt_tape_adj(t, out);
    double *fbar = prt_tape_adj(t, in[0]);
    for (int r = 0; r < d->nf; r++)
        for (long b = 0; b < n; b++) fbar[r * n + b] += ubar[r * kn + d->nq * n + b];
}

static int lnn_directions(PrtTape *t, int F, int nf, int nq, long n) {
    Directions d = {nf, nq, n};
    long kn = (long)(nq + 1) * n;
    int U = prt_tape_op(t, directions_backward, &d, sizeof d, 1, &F, (nf + nq) * kn);
    double *u = prt_tape_val(t, U);
    const double *f = prt_tape_val(t, F);
    memset(u, 0, sizeof(double) * (size_t)((nf + nq) * kn));
    for (int j = 0; j < nq; j++)
        for (long b = 0; b < n; b++) u[(nf + j) * kn + j * n + b] = 1;
    for (int r = 0; r < nf; r++)
        for (long b = 0; b < n; b++) u[r * kn + nq * n + b] = f[r * n + b];
    return U;
}

/* A constant per-state identity times c (nq x nq x n). */
static int scaled_identity(PrtTape *t, int nq, long n, double c) {
    int I = prt_tape_leaf(t, (long)nq * nq * n);
    double *v = prt_tape_val(t, I);
    for (int i = 0; i < nq * nq; i++)
        for (long b = 0; b < n; b++) v[i * n + b] = i / nq == i % nq ? c : 0;
    return I;
}

/* The model's vector field at the state z = (q, v) (2 nq x n): v is p for an HNN, qdot else. */
static int field(void *ctx, int z) {
    PrtModel *m = ctx;
    Generalized *g = impl(m);
    PrtTape *t = g->tape;
    const unsigned char *ang = m->sys->angular;
    int nq = g->nq, nf = g->nf;
    long n = g->n;
    int q = prt_tape_view(t, z, 0, nq * n), v = prt_tape_view(t, z, nq * n, nq * n);
    if (g->truth) return truth_field(m, q, v);
    if (g->kind == GEN_OWN) return g->own(m, t, n, g->theta, g->grad, q, v);
    int phi = prt_op_features(t, q, nq, ang, n);
    switch (g->kind) {
    case GEN_NODE: {
        PrtMlpTrace tr;
        return prt_mlp_graph_forward(t, &m->cfg.net[0], net_theta(m, 0), net_grad(m, 0),
                                     prt_tape_concat(t, 2, (int[]){phi, v}), n, &tr);
    }
    case GEN_HNN: {
        int dV = potential_gradient(m, q, phi), qdot, dT;
        if (g->known_mass) {
            const PrtSystem *s = m->sys;
            qdot = prt_op_mat_solve(t, known_kernel(m, s->MassQ, s->MassQVJP, 1, &q, nq * nq), v, nq, n);
            int K = known_kernel(m, s->KineticQ, s->KineticQVJP, 2, (int[]){q, qdot}, nq); /* = -dT/dq at fixed p */
            dT = prt_tape_lincomb(t, 1, &K, (double[]){-1});
        } else { /* T = |L^T p|^2 / 2 */
            PrtMlpTrace tr;
            int raw, L = mass_factor(m, phi, &raw, &tr);
            int w = prt_op_tril_t_mul(t, L, v, nq, n);
            qdot = prt_op_tril_mul(t, L, w, nq, n);
            dT = factor_kinetic_gradient(m, q, raw, &tr, v, w);
        }
        return prt_tape_concat(t, 2, (int[]){qdot, prt_tape_lincomb(t, 2, (int[]){dT, dV}, (double[]){-1, -1})});
    }
    case GEN_LNN: { /* H_vv qddot = dL/dq - H_vq qdot */
        int k = nq + 1;
        long kn = (long)k * n;
        PrtMlpTrace tr;
        prt_mlp_graph_forward(t, &m->cfg.net[0], net_theta(m, 0), net_grad(m, 0), prt_tape_concat(t, 2, (int[]){phi, v}), n,
                              &tr);
        int grad = prt_mlp_graph_vjp(t, &tr, -1);
        int dLdq = prt_op_features_vjp(t, q, prt_tape_view(t, grad, 0, (long)nf * n), nq, ang, n);
        int U = lnn_directions(t, prt_op_features_jvp(t, q, v, nq, ang, n), nf, nq, n);
        int HU = prt_mlp_graph_hvp(t, &tr, U, k);
        int rows = prt_tape_view(t, HU, (long)nf * kn, (long)nq * kn); /* the qdot rows */
        int A = prt_op_columns(t, rows, nq, kn, 0, (long)nq * n);
        A = prt_tape_lincomb(t, 2, (int[]){A, scaled_identity(t, nq, n, 2 * lnn_eps)}, (double[]){1, 1});
        int mixed = prt_op_columns(t, rows, nq, kn, (long)nq * n, n);
        int rhs = prt_tape_lincomb(t, 2, (int[]){dLdq, mixed}, (double[]){1, -1});
        return prt_tape_concat(t, 2, (int[]){v, prt_op_mat_solve(t, A, rhs, nq, n)});
    }
    case GEN_DELAN: { /* qddot = M^-1 (-dV/dq - Mdot qdot + dT/dq), M^-1 = L L^T (the paper's App. D.2) */
        int dV = potential_gradient(m, q, phi);
        PrtMlpTrace tr;
        int raw, L = mass_factor(m, phi, &raw, &tr);
        int p = prt_op_tril_llt_solve(t, L, v, nq, n); /* M qdot */
        int w = prt_op_tril_t_mul(t, L, p, nq, n);
        /* T = qdot^T M qdot / 2 = |L^T p|^2 / 2 with p = M qdot: dT/dq at fixed qdot is
           minus d(|L^T p|^2 / 2)/dq at fixed p */
        int dT = factor_kinetic_gradient(m, q, raw, &tr, p, w);
        int force = prt_tape_lincomb(t, 2, (int[]){dV, dT}, (double[]){-1, -1});
        /* -M^-1 Mdot qdot = d(M^-1)/dt p = (Ldot L^T + L Ldot^T) p */
        int rawdot = prt_mlp_graph_jvp(t, &tr, prt_op_features_jvp(t, q, v, nq, ang, n), 1);
        int Ldot = prt_op_tril_softplus_scale(t, raw, rawdot, nq, n);
        int accel = prt_tape_lincomb(t, 3,
                                     (int[]){prt_op_tril_mul(t, L, prt_op_tril_t_mul(t, L, force, nq, n), nq, n),
                                             prt_op_tril_mul(t, Ldot, w, nq, n),
                                             prt_op_tril_mul(t, L, prt_op_tril_t_mul(t, Ldot, p, nq, n), nq, n)},
                                     (double[]){1, 1, 1});
        return prt_tape_concat(t, 2, (int[]){v, accel});
    }
    case GEN_OWN: break; /* (above) */
    }
    return -1;
}

/* (q, qdot) <-> the model's state (q, p) for an HNN (or the truth, which steps in (q, p)). */
static bool canonical(const Generalized *g) { return g->truth || g->kind == GEN_HNN; }

static int convert_velocity(PrtModel *m, int q, int v, bool to_momentum) {
    Generalized *g = impl(m);
    PrtTape *t = g->tape;
    int nq = g->nq;
    long n = g->n;
    if (g->truth || g->known_mass) {
        int M = known_kernel(m, m->sys->MassQ, g->truth ? NULL : m->sys->MassQVJP, 1, &q, nq * nq);
        return to_momentum ? prt_op_mat_mul(t, M, v, nq, n) : prt_op_mat_solve(t, M, v, nq, n);
    }
    PrtMlpTrace tr;
    int raw, L = mass_factor(m, prt_op_features(t, q, nq, m->sys->angular, n), &raw, &tr); /* M^-1 = L L^T */
    return to_momentum ? prt_op_tril_llt_solve(t, L, v, nq, n) : prt_op_tril_mul(t, L, prt_op_tril_t_mul(t, L, v, nq, n), nq, n);
}

/* A state variable (2 nq x n) from (q, qdot), or (q, qdot) from a state. */
static int to_state(PrtModel *m, int qv, bool forward) {
    Generalized *g = impl(m);
    if (!canonical(g)) return qv;
    long nqn = (long)g->nq * g->n;
    int q = prt_tape_view(g->tape, qv, 0, nqn), v = prt_tape_view(g->tape, qv, nqn, nqn);
    return prt_tape_concat(g->tape, 2, (int[]){q, convert_velocity(m, q, v, forward)});
}

/* ---- the data in generalized coordinates ---- */

/* Each point of n chunks (Cartesian (X, Xdot)) to (q, qdot) through the inverse map into out
   (npts x 2 nq x n), the angles unwrapped along each chunk. */
static void chunks_to_q(const PrtModel *m, long n, int npts, const double *chunks, double *out) {
    const PrtSystem *s = m->sys;
    int nq = s->nq;
    long pt = 2L * s->N * n, qt = 2L * nq * n;
    for (int k = 0; k < npts; k++) {
        s->CoordInverse(n, chunks + k * pt, s->params, out + k * qt);
        if (k == 0) continue;
        for (int i = 0; i < nq; i++)
            if (s->angular[i])
                for (long b = 0; b < n; b++) {
                    double prev = out[(k - 1) * qt + i * n + b], *cur = &out[k * qt + i * n + b];
                    *cur -= 2 * M_PI * nearbyint((*cur - prev) / (2 * M_PI));
                }
    }
}

/* ---- training ---- */

/* Records the loss of n chunks (npts points, (q, qdot) in qdata) on the tape and seeds the
   adjoints of the predictions; returns the loss. */
static double record_loss(PrtModel *m, long n, int npts, double dt, const double *qdata, bool seed) {
    Generalized *g = impl(m);
    PrtTape *t = g->tape;
    long qt = 2L * g->nq * n;
    g->n = n;
    const PrtTableau *T = prt_integrator_tableau(m->cfg.integrator);
    prt_tape_reset(t);
    int x0 = prt_tape_leaf(t, qt);
    memcpy(prt_tape_val(t, x0), qdata, sizeof(double) * (size_t)qt);
    int z = to_state(m, x0, true);
    int *pred = prt_xalloc((size_t)npts, sizeof(int), "model buffers");
    for (int k = 1; k < npts; k++) {
        for (int j = 0; j < m->cfg.substeps; j++) z = prt_tape_rk_step(t, T, dt / m->cfg.substeps, z, field, m);
        pred[k] = to_state(m, z, false);
    }
    if (seed) prt_tape_zero_adjoints(t);
    double count = (double)npts * (double)qt, loss = 0; /* the mean over every point, the first included (as CHNN's) */
    for (int k = 1; k < npts; k++) {
        const double *p = prt_tape_val(t, pred[k]), *d = qdata + k * qt;
        double *a = prt_tape_adj(t, pred[k]);
        for (long i = 0; i < qt; i++) {
            double e = p[i] - d[i];
            loss += m->cfg.l2 ? e * e : fabs(e);
            if (seed) a[i] += (m->cfg.l2 ? 2 * e : e > 0 ? 1 : e < 0 ? -1 : 0) / count;
        }
    }
    free(pred);
    return loss / count;
}

static double chunk_loss(PrtModel *m, const double *theta, double *grad, bool truth, long n, int npts, double dt,
                         const double *chunks) {
    Generalized *g = impl(m);
    double *qdata = prt_xalloc((size_t)npts * 2 * g->nq * (size_t)n, sizeof(double), "model buffers");
    chunks_to_q(m, n, npts, chunks, qdata);
    g->theta = theta, g->grad = grad, g->truth = truth;
    if (grad) {
        memset(grad, 0, sizeof(double) * (size_t)m->nparams);
        memset(g->kparams_adj, 0, sizeof(double) * (size_t)m->sys->nparams);
    }
    double loss = record_loss(m, n, npts, dt, qdata, grad != NULL);
    if (grad) prt_tape_backward(g->tape);
    g->grad = NULL, g->truth = false;
    free(qdata);
    return loss;
}

static double loss_grad(PrtModel *m, const double *theta, long n, int npts, double dt, const double *chunks,
                        double *grad) {
    return chunk_loss(m, theta, grad, false, n, npts, dt, chunks);
}

static double loss(PrtModel *m, const double *theta, long n, int npts, double dt, const double *chunks) {
    return chunk_loss(m, theta, NULL, false, n, npts, dt, chunks);
}

/* The system's own dynamics, stepped as in training; in (q, p) for every family (the
   Lagrangian form would need dM/dt, which no compiled kernel gives). */
static double truth_loss(PrtModel *m, long n, int npts, double dt, const double *chunks) {
    return chunk_loss(m, NULL, NULL, true, n, npts, dt, chunks);
}

/* ---- rollouts ---- */

static void rollout_rhs(void *ctx, long n, const double *z, double *zdot) {
    PrtModel *m = ctx;
    Generalized *g = impl(m);
    long len = 2L * g->nq * n;
    g->n = n;
    prt_tape_reset(g->tape);
    int zv = prt_tape_leaf(g->tape, len);
    memcpy(prt_tape_val(g->tape, zv), z, sizeof(double) * (size_t)len);
    memcpy(zdot, prt_tape_val(g->tape, field(m, zv)), sizeof(double) * (size_t)len);
}

/* (q, qdot) <-> the state of n states in place, forward only. */
static void convert_states(PrtModel *m, long n, double *z, bool forward) {
    Generalized *g = impl(m);
    if (!canonical(g)) return;
    long len = 2L * g->nq * n;
    g->n = n;
    prt_tape_reset(g->tape);
    int zv = prt_tape_leaf(g->tape, len);
    memcpy(prt_tape_val(g->tape, zv), z, sizeof(double) * (size_t)len);
    memcpy(z, prt_tape_val(g->tape, to_state(m, zv, forward)), sizeof(double) * (size_t)len);
}

static int rollout(PrtModel *m, const double *theta, long n, const double *xv0, const double *times, int nt,
                   double rtol, double atol, double *out) {
    Generalized *g = impl(m);
    const PrtSystem *s = m->sys;
    long qt = 2L * g->nq * n, pt = 2L * s->N * n;
    double *z = prt_xalloc((size_t)(qt * ((long)nt + 1)), sizeof(double), "model buffers");
    s->CoordInverse(n, xv0, s->params, z);
    g->theta = theta, g->grad = NULL, g->truth = false;
    convert_states(m, n, z, true);
    double *traj = z + qt;
    int rc = prt_model_dopri5(m, rollout_rhs, n, 2 * g->nq, z, times, nt, rtol, atol, traj);
    for (int k = 0; k < nt; k++) {
        convert_states(m, n, traj + k * qt, false);
        s->CoordMap(n, traj + k * qt, s->params, out + k * pt);
    }
    free(z);
    return rc;
}

/* ---- the library's derivatives (model.h: tape_field, tape_step) ---- */

/* The data's (X, Xdot) at xv as (q, qdot) (the inverse map), and (q, qdot) at qv as (X, Xdot)
   (the map): the system's kernels with the parameters the rollout gives them */
static int tape_q_of(PrtModel *m, int xv) {
    const PrtSystem *s = m->sys;
    return prt_tape_kernel(impl(m)->tape, s->CoordInverse, s->CoordInverseVJP, impl(m)->n, 1, &xv, 2 * s->nq, s->params,
                           s->nparams, NULL);
}

static int tape_x_of(PrtModel *m, int qv) {
    const PrtSystem *s = m->sys;
    return prt_tape_kernel(impl(m)->tape, s->CoordMap, s->CoordMapVJP, impl(m)->n, 1, &qv, 2 * s->N, s->params,
                           s->nparams, NULL);
}

/* Before a recording of theta's dynamics: 0, or -1 with a message when the library lacks the
   maps' derivatives (a program without an inverse block) */
static int begin_recording(PrtModel *m, const double *theta, double *grad, long n, char *err, size_t errlen) {
    Generalized *g = impl(m);
    if (!m->sys->CoordInverseVJP || !m->sys->CoordMapVJP)
        return snprintf(err, errlen, "a %s model's derivatives go through the map from X to q: the program's `inverse` "
                        "block, which it has not", m->family->title), -1;
    g->theta = theta, g->grad = grad, g->truth = false, g->n = n;
    memset(g->kparams_adj, 0, sizeof(double) * (size_t)m->sys->nparams);
    return 0;
}

static int abi_tape_step(PrtModel *m, const double *theta, double *grad, long n, double dt, int steps, int xv, char *err,
                         size_t errlen) {
    if (begin_recording(m, theta, grad, n, err, errlen) != 0) return -1;
    const PrtTableau *T = prt_integrator_tableau(m->cfg.integrator);
    int z = to_state(m, tape_q_of(m, xv), true), substeps = m->cfg.substeps;
    for (int k = 0; k < steps; k++)
        for (int j = 0; j < substeps; j++) z = prt_tape_rk_step(impl(m)->tape, T, dt / substeps, z, field, m);
    return tape_x_of(m, to_state(m, z, false));
}

/* An HNN's qddot at (q, qdot): Hamilton's pdot at p = M qdot, then d/dt (M^-1 p). With the
   learned factor (M^-1 = L L^T): qddot = Ldot L^T p + L Ldot^T p + L L^T pdot, Ldot along qdot by
   the network's JVP. With the system's M(q): M qddot = pdot - Mdot qdot, Mdot by MassQ's JVP. */
static int hnn_acceleration(PrtModel *m, int q, int qdot, char *err, size_t errlen) {
    Generalized *g = impl(m);
    PrtTape *t = g->tape;
    const PrtSystem *s = m->sys;
    int nq = g->nq;
    long n = g->n;
    int phi = prt_op_features(t, q, nq, s->angular, n), dV = potential_gradient(m, q, phi);
    if (g->known_mass) {
        if (!s->MassQJVP)
            return snprintf(err, errlen, "this library was built without the mass matrix's JVP kernel"), -1;
        int M = known_kernel(m, s->MassQ, s->MassQVJP, 1, &q, nq * nq);
        int K = known_kernel(m, s->KineticQ, s->KineticQVJP, 2, (int[]){q, qdot}, nq); /* pdot = K - dV */
        int Mdot = known_kernel(m, s->MassQJVP, s->MassQJVPVJP, 2, (int[]){q, qdot}, nq * nq);
        int rhs = prt_tape_lincomb(t, 3, (int[]){K, dV, prt_op_mat_mul(t, Mdot, qdot, nq, n)}, (double[]){1, -1, -1});
        return prt_op_mat_solve(t, M, rhs, nq, n);
    }
    PrtMlpTrace tr;
    int raw, L = mass_factor(m, phi, &raw, &tr);
    int p = prt_op_tril_llt_solve(t, L, qdot, nq, n), w = prt_op_tril_t_mul(t, L, p, nq, n);
    int dT = factor_kinetic_gradient(m, q, raw, &tr, p, w);
    int pdot = prt_tape_lincomb(t, 2, (int[]){dT, dV}, (double[]){-1, -1});
    int rawdot = prt_mlp_graph_jvp(t, &tr, prt_op_features_jvp(t, q, qdot, nq, s->angular, n), 1);
    int Ldot = prt_op_tril_softplus_scale(t, raw, rawdot, nq, n);
    return prt_tape_lincomb(t, 3,
                            (int[]){prt_op_tril_mul(t, Ldot, w, nq, n),
                                    prt_op_tril_mul(t, L, prt_op_tril_t_mul(t, Ldot, p, nq, n), nq, n),
                                    prt_op_tril_mul(t, L, prt_op_tril_t_mul(t, L, pdot, nq, n), nq, n)},
                            (double[]){1, 1, 1});
}

/* (Xdot, Xddot) = the map's JVP at (q, qdot) along the field (qdot, qddot) */
static int abi_tape_field(PrtModel *m, const double *theta, double *grad, long n, int xv, char *err, size_t errlen) {
    const PrtSystem *s = m->sys;
    Generalized *g = impl(m);
    if (begin_recording(m, theta, grad, n, err, errlen) != 0) return -1;
    int qv = tape_q_of(m, xv), qdd;
    if (canonical(g)) { /* an HNN: its field is in (q, p) */
        long nqn = (long)g->nq * n;
        int q = prt_tape_view(g->tape, qv, 0, nqn), qdot = prt_tape_view(g->tape, qv, nqn, nqn);
        int a = hnn_acceleration(m, q, qdot, err, errlen);
        if (a < 0) return -1;
        qdd = prt_tape_concat(g->tape, 2, (int[]){qdot, a});
    } else {
        qdd = field(m, qv);
    }
    return prt_tape_kernel(impl(m)->tape, s->CoordMapJVP, s->CoordMapJVPVJP, n, 2, (int[]){qv, qdd}, 2 * s->N, s->params,
                           s->nparams, NULL);
}

/* ---- the model's energy ---- */

/* The energy each family's field conserves, at Cartesian states (X, Xdot) mapped to (q, qdot)
   by the inverse map: an HNN's H = p . M^-1 p / 2 + V, p = M qdot (its learned L L^T = M^-1,
   or the system's M(q)); a DeLaN's T + V with the same T; an LNN's qdot . dL/dqdot - L of its
   L = net + eps |qdot|^2. A NODE's field has none (no row). */
static void energy(PrtModel *m, const double *theta, long n, const double *xv, double *out) {
    Generalized *g = impl(m);
    const PrtSystem *s = m->sys;
    PrtTape *t = g->tape;
    int nq = g->nq, nf = g->nf;
    long nqn = (long)nq * n;
    g->theta = theta, g->grad = NULL, g->truth = false, g->n = n;
    prt_tape_reset(t);
    int z = prt_tape_leaf(t, 2 * nqn);
    s->CoordInverse(n, xv, s->params, prt_tape_val(t, z));
    int q = prt_tape_view(t, z, 0, nqn), v = prt_tape_view(t, z, nqn, nqn);
    int phi = prt_op_features(t, q, nq, s->angular, n);
    PrtMlpTrace tr;
    if (g->kind == GEN_LNN) {
        int L = prt_mlp_graph_forward(t, &m->cfg.net[0], net_theta(m, 0), NULL, prt_tape_concat(t, 2, (int[]){phi, v}), n, &tr);
        int dL = prt_mlp_graph_vjp(t, &tr, -1); /* (d/dphi, then d/dqdot) */
        const double *Lv = prt_tape_val(t, L), *dv = prt_tape_val(t, dL) + (long)nf * n, *qdot = prt_tape_val(t, v);
        for (long b = 0; b < n; b++) {
            double vdL = 0, v2 = 0;
            for (int i = 0; i < nq; i++) vdL += qdot[i * n + b] * dv[i * n + b], v2 += qdot[i * n + b] * qdot[i * n + b];
            out[b] = vdL - Lv[b] + lnn_eps * v2;
        }
        return;
    }
    const double *V = prt_tape_val(t, prt_mlp_graph_forward(t, &m->cfg.net[0], net_theta(m, 0), NULL, phi, n, &tr));
    const double *qdot = prt_tape_val(t, v);
    if (g->known_mass) { /* T = qdot . M(q) qdot / 2 */
        const double *Mv = prt_tape_val(t, prt_op_mat_mul(t, known_kernel(m, s->MassQ, NULL, 1, &q, nq * nq), v, nq, n));
        for (long b = 0; b < n; b++) {
            double T = 0;
            for (int i = 0; i < nq; i++) T += qdot[i * n + b] * Mv[i * n + b];
            out[b] = T / 2 + V[b];
        }
        return;
    }
    PrtMlpTrace trM; /* T = |L^T p|^2 / 2 with p = M qdot, M^-1 = L L^T */
    int raw, L = mass_factor(m, phi, &raw, &trM);
    const double *w = prt_tape_val(t, prt_op_tril_t_mul(t, L, prt_op_tril_llt_solve(t, L, v, nq, n), nq, n));
    for (long b = 0; b < n; b++) {
        double T = 0;
        for (int i = 0; i < nq; i++) T += w[i * n + b] * w[i * n + b];
        out[b] = T / 2 + V[b];
    }
}

/* The networks in the family's order: the field (node), or the potential or Lagrangian then,
   with `mass M`, the mass factor (hnn; always for delan). No known terms yet. */
static int configure_nets(const PrtModelDecl *d, PrtModelConfig *cfg, const PrtLearnedTerm **blame, char *err,
                          size_t errlen, bool field, bool with_mass) {
    const char *kind = cfg->family->name;
    if (prt_model_decl_plain(kind, d, blame, err, errlen) != 0) return -1;
    if (field ? prt_model_decl_counts(kind, d, 0, 1, "one learned force (its vector field) and no potential", err, errlen)
              : prt_model_decl_counts(kind, d, 1, 0, "one learned potential and no learned force", err, errlen))
        return -1;
    if (prt_model_decl_no_known(kind, d, err, errlen) != 0) return -1;
    if (with_mass && !d->mass) {
        snprintf(err, errlen, "model '%s' (delan) needs a learned mass term: `mass M`", d->name);
        return -1;
    }
    cfg->nnets = with_mass ? 2 : 1;
    cfg->net[0] = field ? d->forces[0].net : d->potentials[0].net;
    if (with_mass) cfg->net[1] = d->mass->net;
    return 0;
}
static int configure_node(const PrtModelDecl *d, PrtModelConfig *cfg, const PrtLearnedTerm **blame, char *err,
                          size_t errlen) {
    return configure_nets(d, cfg, blame, err, errlen, true, false);
}
static int configure_hnn(const PrtModelDecl *d, PrtModelConfig *cfg, const PrtLearnedTerm **blame, char *err,
                         size_t errlen) {
    return configure_nets(d, cfg, blame, err, errlen, false, d->mass != NULL);
}
static int configure_lnn(const PrtModelDecl *d, PrtModelConfig *cfg, const PrtLearnedTerm **blame, char *err,
                         size_t errlen) {
    return configure_nets(d, cfg, blame, err, errlen, false, false);
}
static int configure_delan(const PrtModelDecl *d, PrtModelConfig *cfg, const PrtLearnedTerm **blame, char *err,
                           size_t errlen) {
    return configure_nets(d, cfg, blame, err, errlen, false, true);
}

static const char *role_field(const PrtModelConfig *cfg, int k) { return "field"; }
static const char *role_potential(const PrtModelConfig *cfg, int k) { return k ? "mass factor" : "potential"; }
static const char *role_lagrangian(const PrtModelConfig *cfg, int k) { return "Lagrangian"; }

const PrtModelFamily prt_family_node = {.name = "node", .title = "NODE", .configure = configure_node, .net_role = role_field, .open = open_node, .close = close_model,
    .trainable = trainable, .init_theta = init_theta, .loss_grad = loss_grad, .loss = loss,
    .truth_loss = truth_loss, .rollout = rollout, .masses = masses, .tape_field = abi_tape_field, .tape_step = abi_tape_step,
    .start_points = 1};
const PrtModelFamily prt_family_hnn = {.name = "hnn", .title = "HNN", .configure = configure_hnn, .net_role = role_potential, .open = open_hnn, .close = close_model,
    .trainable = trainable, .init_theta = init_theta, .loss_grad = loss_grad, .loss = loss,
    .truth_loss = truth_loss, .rollout = rollout, .masses = masses, .energy = energy, .tape_field = abi_tape_field,
    .tape_step = abi_tape_step, .start_points = 1};
const PrtModelFamily prt_family_lnn = {.name = "lnn", .title = "LNN", .configure = configure_lnn, .net_role = role_lagrangian, .open = open_lnn, .close = close_model,
    .trainable = trainable, .init_theta = init_theta, .loss_grad = loss_grad, .loss = loss,
    .truth_loss = truth_loss, .rollout = rollout, .masses = masses, .energy = energy, .tape_field = abi_tape_field,
    .tape_step = abi_tape_step, .start_points = 1};
const PrtModelFamily prt_family_delan = {.name = "delan", .title = "DeLaN", .configure = configure_delan, .net_role = role_potential, .open = open_delan, .close = close_model,
    .trainable = trainable, .init_theta = init_theta, .loss_grad = loss_grad, .loss = loss,
    .truth_loss = truth_loss, .rollout = rollout, .masses = masses, .energy = energy, .tape_field = abi_tape_field,
    .tape_step = abi_tape_step, .start_points = 1};

/* ---- the members a family of another file takes as they are (model_generalized.h) ---- */

void prt_generalized_close(PrtModel *m) { close_model(m); }
bool prt_generalized_trainable(const PrtModel *m) { return trainable(m); }
void prt_generalized_init_theta(const PrtModel *m, double *theta, PrtRng *rng) { init_theta(m, theta, rng); }
double prt_generalized_loss_grad(PrtModel *m, const double *theta, long n, int npts, double dt, const double *chunks,
                                 double *grad) {
    return loss_grad(m, theta, n, npts, dt, chunks, grad);
}
double prt_generalized_loss(PrtModel *m, const double *theta, long n, int npts, double dt, const double *chunks) {
    return loss(m, theta, n, npts, dt, chunks);
}
double prt_generalized_truth_loss(PrtModel *m, long n, int npts, double dt, const double *chunks) {
    return truth_loss(m, n, npts, dt, chunks);
}
int prt_generalized_rollout(PrtModel *m, const double *theta, long n, const double *xv0, const double *times, int nt,
                            double rtol, double atol, double *out) {
    return rollout(m, theta, n, xv0, times, nt, rtol, atol, out);
}
int prt_generalized_masses(const PrtModel *m, const double *theta, double *out) { return masses(m, theta, out); }
int prt_generalized_tape_field(PrtModel *m, const double *theta, double *grad, long n, int xv, char *err,
                               size_t errlen) {
    return abi_tape_field(m, theta, grad, n, xv, err, errlen);
}
int prt_generalized_tape_step(PrtModel *m, const double *theta, double *grad, long n, double dt, int steps, int xv,
                              char *err, size_t errlen) {
    return abi_tape_step(m, theta, grad, n, dt, steps, xv, err, errlen);
}
