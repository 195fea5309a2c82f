/* lie_tape.c — the sub-flows of a Lie T2 step as tape operations (lie_tape.h). Forward: the
   batch flows of lie_group.c on a copy of the input state. Backward: the identity on every
   row a flow leaves alone, and per `state so3` body and state the VJPs of lie_group.c. */
#include "lie_tape.h"

#include <stdbool.h>
#include <string.h>

#include "integrators/lie_group.h"

typedef struct LieOp {
    PrtSystem *s;
    double h;
    long n;
    int scratch; /* a tape variable of NP x n (the kinetic flow's M^-1 products) */
} LieOp;

static long state_len(const PrtSystem *s, long n) { return (long)(s->N + s->NP) * n; }

/* out = a copy of in, recorded with `backward` */
static int record(PrtTape *t, PrtTapeBackward backward, const LieOp *op, int nin, const int *in) {
    int out = prt_tape_op(t, backward, op, sizeof *op, nin, in, state_len(op->s, op->n));
    memcpy(prt_tape_val(t, out), prt_tape_val(t, in[0]), sizeof(double) * (size_t)state_len(op->s, op->n));
    return out;
}

/* zb += ob on every row but the so3 bodies' R (and, with pi, their Pi): the flows' VJPs add those */
static void pass_through_flat(const PrtSystem *s, long n, const double *ob, double *zb, bool pi) {
    long N = s->N, nc = prt_lie_cartesian(s);
    for (long i = 0; i < nc * n; i++) zb[i] += ob[i], zb[N * n + i] += ob[N * n + i];
    for (int k = 0; k < s->nso3; k++) {
        const PrtSo3Body *b = &s->so3[k];
        for (long i = 0; i < 3 * n; i++) {
            zb[b->x * n + i] += ob[b->x * n + i];                 /* q */
            zb[(N + b->p) * n + i] += ob[(N + b->p) * n + i];     /* p */
            if (!pi) zb[(N + b->p + 3) * n + i] += ob[(N + b->p + 3) * n + i];
        }
    }
}

typedef void (*BodyVjp)(const double R[9], const double Pi[3], const double J[3], double h, const double Rb_out[9],
                        const double Pib_out[3], double Rb[9], double Pib[3]);

/* the per-body VJP of a flow of (R, Pi) */
static void bodies_backward(const PrtSystem *s, long n, double h, BodyVjp vjp, const double *z, const double *ob,
                            double *zb) {
    long N = s->N;
    for (int k = 0; k < s->nso3; k++) {
        const PrtSo3Body *b = &s->so3[k];
        double J[3];
        prt_so3_moments(s, b, J);
        for (long j = 0; j < n; j++) {
            double R[9], Pi[3], Rbo[9], Pibo[3], Rb[9], Pib[3];
            prt_soa_gather(z, n, b->x + 3, 9, j, R);
            prt_soa_gather(z, n, (int)N + b->p + 3, 3, j, Pi);
            prt_soa_gather(ob, n, b->x + 3, 9, j, Rbo);
            prt_soa_gather(ob, n, (int)N + b->p + 3, 3, j, Pibo);
            prt_soa_gather(zb, n, b->x + 3, 9, j, Rb);
            prt_soa_gather(zb, n, (int)N + b->p + 3, 3, j, Pib);
            vjp(R, Pi, J, h, Rbo, Pibo, Rb, Pib);
            prt_soa_scatter(zb, n, b->x + 3, 9, j, Rb);
            prt_soa_scatter(zb, n, (int)N + b->p + 3, 3, j, Pib);
        }
    }
}

/* ---- the kinetic flow: X += h M^-1 P on the flat rows, B44 on each body ---- */

static void kinetic_backward(PrtTape *t, const void *ctx, const int *in, int nin, int out) {
    const LieOp *op = ctx;
    PrtSystem *s = op->s;
    long n = op->n, N = s->N, nc = prt_lie_cartesian(s);
    const double *z = prt_tape_val(t, in[0]), *ob = prt_tape_adj(t, out);
    double *zb = prt_tape_adj(t, in[0]), *u = prt_tape_val(t, op->scratch), *v = prt_tape_adj(t, op->scratch);
    pass_through_flat(s, n, ob, zb, true);
    /* the drift X' = X + h M^-1 P (q' = q + h p / m for the bodies): Pb += h M^-1 Xb' (M symmetric) */
    memset(u, 0, sizeof(double) * (size_t)(s->NP * n));
    memcpy(u, ob, sizeof(double) * (size_t)(nc * n));
    for (int k = 0; k < s->nso3; k++)
        memcpy(u + (long)s->so3[k].p * n, ob + (long)s->so3[k].x * n, sizeof(double) * (size_t)(3 * n));
    s->MinvP(n, u, s->params, v);
    for (long i = 0; i < (long)s->NP * n; i++) zb[N * n + i] += op->h * v[i];
    bodies_backward(s, n, op->h, prt_so3_kinetic_flow_vjp, z, ob, zb);
}

static int kinetic_op(PrtTape *t, PrtSystem *s, int z, long n, double h) {
    LieOp op = {s, h, n, prt_tape_values(t, (long)s->NP * n)};
    int out = record(t, kinetic_backward, &op, 1, &z);
    prt_lie_kinetic(s, n, h, prt_tape_val(t, out), prt_tape_val(t, op.scratch));
    return out;
}

/* ---- the asymmetric flow (B48) ---- */

static void asym_backward(PrtTape *t, const void *ctx, const int *in, int nin, int out) {
    const LieOp *op = ctx;
    pass_through_flat(op->s, op->n, prt_tape_adj(t, out), prt_tape_adj(t, in[0]), true);
    bodies_backward(op->s, op->n, op->h, prt_so3_asym_flow_vjp, prt_tape_val(t, in[0]), prt_tape_adj(t, out),
                    prt_tape_adj(t, in[0]));
}

static int asym_op(PrtTape *t, PrtSystem *s, int z, long n, double h) {
    LieOp op = {s, h, n, -1};
    int out = record(t, asym_backward, &op, 1, &z);
    prt_lie_asym(s, n, h, prt_tape_val(t, out));
    return out;
}

/* ---- the kick of a potential with gradient G (B46) ---- */

static void kick_backward(PrtTape *t, const void *ctx, const int *in, int nin, int out) {
    const LieOp *op = ctx;
    const PrtSystem *s = op->s;
    long n = op->n, N = s->N, nc = prt_lie_cartesian(s);
    const double *z = prt_tape_val(t, in[0]), *G = prt_tape_val(t, in[1]), *ob = prt_tape_adj(t, out);
    double *zb = prt_tape_adj(t, in[0]), *Gb = prt_tape_adj(t, in[1]);
    for (long i = 0; i < state_len(s, n); i++) zb[i] += ob[i]; /* every row passes; Pi' adds a torque of R */
    for (long i = 0; i < nc * n; i++) Gb[i] -= op->h * ob[N * n + i];
    for (int k = 0; k < s->nso3; k++) {
        const PrtSo3Body *b = &s->so3[k];
        for (long i = 0; i < 3 * n; i++) Gb[(long)b->x * n + i] -= op->h * ob[(N + b->p) * n + i];
        for (long j = 0; j < n; j++) {
            double R[9], GR[9], taub[3], Rb[9], GRb[9];
            prt_soa_gather(z, n, b->x + 3, 9, j, R);
            prt_soa_gather(G, n, b->x + 3, 9, j, GR);
            prt_soa_gather(ob, n, (int)N + b->p + 3, 3, j, taub);
            for (int c = 0; c < 3; c++) taub[c] *= op->h;
            prt_soa_gather(zb, n, b->x + 3, 9, j, Rb);
            prt_soa_gather(Gb, n, b->x + 3, 9, j, GRb);
            prt_so3_torque_vjp(R, GR, taub, Rb, GRb);
            prt_soa_scatter(zb, n, b->x + 3, 9, j, Rb);
            prt_soa_scatter(Gb, n, b->x + 3, 9, j, GRb);
        }
    }
}

static int kick_op(PrtTape *t, PrtSystem *s, int z, int G, long n, double h) {
    LieOp op = {s, h, n, -1};
    int in[2] = {z, G}, out = record(t, kick_backward, &op, 2, in);
    prt_lie_kick(s, n, h, prt_tape_val(t, out), prt_tape_val(t, G));
    return out;
}

/* ---- the non-conservative forces: P += h F (B49) ---- */

static void force_backward(PrtTape *t, const void *ctx, const int *in, int nin, int out) {
    const LieOp *op = ctx;
    long n = op->n, N = op->s->N;
    const double *ob = prt_tape_adj(t, out);
    double *zb = prt_tape_adj(t, in[0]), *Fb = prt_tape_adj(t, in[1]);
    for (long i = 0; i < state_len(op->s, n); i++) zb[i] += ob[i];
    for (long i = 0; i < (long)op->s->NP * n; i++) Fb[i] += op->h * ob[N * n + i];
}

static int force_op(PrtTape *t, PrtSystem *s, int z, int F, long n, double h) {
    LieOp op = {s, h, n, -1};
    int in[2] = {z, F}, out = record(t, force_backward, &op, 2, in);
    double *P = prt_tape_val(t, out) + (long)s->N * n;
    const double *f = prt_tape_val(t, F);
    for (long i = 0; i < (long)s->NP * n; i++) P[i] += h * f[i];
    return out;
}

/* ---- back onto SO(3) ---- */

static void reorth_backward(PrtTape *t, const void *ctx, const int *in, int nin, int out) {
    const LieOp *op = ctx;
    const PrtSystem *s = op->s;
    long n = op->n;
    const double *z = prt_tape_val(t, in[0]), *ob = prt_tape_adj(t, out);
    double *zb = prt_tape_adj(t, in[0]);
    pass_through_flat(s, n, ob, zb, false);
    for (int k = 0; k < s->nso3; k++) {
        int r = s->so3[k].x + 3;
        for (long j = 0; j < n; j++) {
            double R[9], Rbo[9], Rb[9];
            prt_soa_gather(z, n, r, 9, j, R);
            prt_soa_gather(ob, n, r, 9, j, Rbo);
            prt_soa_gather(zb, n, r, 9, j, Rb);
            prt_so3_reorthonormalize_vjp(R, Rbo, Rb);
            prt_soa_scatter(zb, n, r, 9, j, Rb);
        }
    }
}

static int reorth_op(PrtTape *t, PrtSystem *s, int z, long n) {
    LieOp op = {s, 0, n, -1};
    int out = record(t, reorth_backward, &op, 1, &z);
    prt_lie_reorthonormalize(s, n, prt_tape_val(t, out));
    return out;
}

/* ---- the flat vector field and the methods built on it ---- */

/* (Xdot, Pdot) at z: the system's Field (R' = R hat(Omega), Pi' = Pi x Omega + tau, lie_group.h)
   with the potential gradient of the terms, plus their forces on P */
static int flat_field(PrtTape *t, PrtSystem *s, int z, long n, const PrtLieTapeTerms *terms) {
    long Nn = (long)s->N * n, NPn = (long)s->NP * n;
    int in[2] = {z, terms->grad(terms->ctx, t, prt_tape_view(t, z, 0, Nn), n)};
    int k = prt_tape_kernel(t, s->Field, s->FieldVJP, n, 2, in, prt_state_rows(s), s->params, s->nparams,
                            terms->kparams_adj);
    if (!terms->force) return k;
    int Pdot = prt_tape_lincomb(t, 2, (int[]){prt_tape_view(t, k, Nn, NPn), terms->force(terms->ctx, t, z, n)},
                                (double[]){1, 1});
    return prt_tape_concat(t, 2, (int[]){prt_tape_view(t, k, 0, Nn), Pdot});
}

int prt_tape_so3_field(PrtTape *t, PrtSystem *s, int z, long n, const PrtLieTapeTerms *terms) {
    return flat_field(t, s, z, n, terms);
}

typedef struct FlatCall {
    PrtTape *t;
    PrtSystem *s;
    long n;
    const PrtLieTapeTerms *terms;
} FlatCall;

static int flat_at(void *ctx, int z) {
    FlatCall *c = ctx;
    return flat_field(c->t, c->s, z, c->n, c->terms);
}

int prt_tape_flat_rk_step(PrtTape *t, PrtSystem *s, const PrtTableau *T, int z, long n, double h,
                          const PrtLieTapeTerms *terms) {
    FlatCall c = {t, s, n, terms};
    return prt_tape_rk_step(t, T, h, z, flat_at, &c);
}

/* D55-D57 with half steps h/2: X += h/2 Xdot(z); P += h Pdot(X, P); X += h/2 Xdot(X, P) */
int prt_tape_verlet_step(PrtTape *t, PrtSystem *s, int z, long n, double h, const PrtLieTapeTerms *terms) {
    long Nn = (long)s->N * n, NPn = (long)s->NP * n;
    for (int part = 0; part < 3; part++) {
        int k = flat_field(t, s, z, n, terms);
        long moved = part == 1 ? Nn : 0, len = part == 1 ? NPn : Nn;
        int x = prt_tape_lincomb(t, 2, (int[]){prt_tape_view(t, z, moved, len), prt_tape_view(t, k, moved, len)},
                                 (double[]){1, part == 1 ? h : h / 2});
        z = part == 1 ? prt_tape_concat(t, 2, (int[]){prt_tape_view(t, z, 0, Nn), x})
                      : prt_tape_concat(t, 2, (int[]){x, prt_tape_view(t, z, Nn, NPn)});
    }
    return z;
}

/* ---- a commutator-free stage: R of the flat state replaced by R_base exp(h sum_j d_j J^-1 Pi_j) ---- */

enum { STAGE_MAX = 4 };

typedef struct Stage {
    PrtSystem *s;
    double h;
    long n;
    int nw;
    double d[STAGE_MAX];
} Stage;

/* the rotation vector w of body k, state b: h sum_j d_j J^-1 Pi_j, from the stage states in[2 + j] */
static void stage_w(PrtTape *t, const Stage *st, const int *in, int k, long b, const double J[3], double w[3]) {
    const PrtSo3Body *body = &st->s->so3[k];
    long n = st->n, N = st->s->N;
    w[0] = w[1] = w[2] = 0;
    for (int j = 0; j < st->nw; j++)
        for (int c = 0; c < 3; c++) w[c] += st->h * st->d[j] * prt_tape_val(t, in[2 + j])[(N + body->p + 3 + c) * n + b] / J[c];
}

static void stage_backward(PrtTape *t, const void *ctx, const int *in, int nin, int out) {
    const Stage *st = ctx;
    const PrtSystem *s = st->s;
    long n = st->n, N = s->N;
    const double *ob = prt_tape_adj(t, out), *base = prt_tape_val(t, in[1]);
    double *fb = prt_tape_adj(t, in[0]), *bb = prt_tape_adj(t, in[1]);
    pass_through_flat(s, n, ob, fb, false); /* every row but R, which the stage replaces */
    for (int k = 0; k < s->nso3; k++) {
        const PrtSo3Body *body = &s->so3[k];
        double J[3];
        prt_so3_moments(s, body, J);
        for (long b = 0; b < n; b++) {
            double w[3], E[9], R[9], Rbo[9], Eb[9], T[9], wb[3] = {0, 0, 0};
            stage_w(t, st, in, k, b, J, w);
            prt_so3_exp(w, E);
            prt_soa_gather(base, n, body->x + 3, 9, b, R);
            prt_soa_gather(ob, n, body->x + 3, 9, b, Rbo);
            for (int i = 0; i < 3; i++) /* R_out = R E: Rb += Rb' E^T, Eb = R^T Rb' */
                for (int j = 0; j < 3; j++) {
                    T[i * 3 + j] = Rbo[i * 3] * E[j * 3] + Rbo[i * 3 + 1] * E[j * 3 + 1] + Rbo[i * 3 + 2] * E[j * 3 + 2];
                    Eb[i * 3 + j] = R[i] * Rbo[j] + R[3 + i] * Rbo[3 + j] + R[6 + i] * Rbo[6 + j];
                }
            for (int i = 0; i < 9; i++) bb[(body->x + 3 + i) * n + b] += T[i];
            prt_so3_exp_vjp(w, Eb, wb);
            for (int j = 0; j < st->nw; j++) {
                double *zb = prt_tape_adj(t, in[2 + j]);
                for (int c = 0; c < 3; c++) zb[(N + body->p + 3 + c) * n + b] += st->h * st->d[j] * wb[c] / J[c];
            }
        }
    }
}

/* flat with each body's R := R of base times exp(h sum_j d[j] J^-1 Pi of stages[j]) */
static int stage_op(PrtTape *t, PrtSystem *s, int flat, int base, int nw, const int *stages, const double *d, long n,
                    double h) {
    Stage st = {s, h, n, nw, {0}};
    int in[2 + STAGE_MAX] = {flat, base};
    for (int j = 0; j < nw; j++) st.d[j] = d[j], in[2 + j] = stages[j];
    int out = prt_tape_op(t, stage_backward, &st, sizeof st, 2 + nw, in, state_len(s, n));
    double *o = prt_tape_val(t, out);
    memcpy(o, prt_tape_val(t, flat), sizeof(double) * (size_t)state_len(s, n));
    for (int k = 0; k < s->nso3; k++) {
        const PrtSo3Body *body = &s->so3[k];
        double J[3];
        prt_so3_moments(s, body, J);
        for (long b = 0; b < n; b++) {
            double w[3], E[9], R[9], Rn[9];
            stage_w(t, &st, in, k, b, J, w);
            prt_so3_exp(w, E);
            prt_soa_gather(prt_tape_val(t, base), n, body->x + 3, 9, b, R);
            for (int i = 0; i < 3; i++)
                for (int j = 0; j < 3; j++) Rn[i * 3 + j] = R[i * 3] * E[j] + R[i * 3 + 1] * E[3 + j] + R[i * 3 + 2] * E[6 + j];
            prt_soa_scatter(o, n, body->x + 3, 9, b, Rn);
        }
    }
    return out;
}

/* z0 + h sum_j c[j] k[j] on every row */
static int combine(PrtTape *t, int z0, int nk, const int *k, const double *c, double h) {
    int vars[STAGE_MAX + 1] = {z0};
    double coef[STAGE_MAX + 1] = {1};
    for (int j = 0; j < nk; j++) vars[1 + j] = k[j], coef[1 + j] = h * c[j];
    return prt_tape_lincomb(t, 1 + nk, vars, coef);
}

int prt_tape_lie_rk_step(PrtTape *t, PrtSystem *s, int z0, long n, double h, int order, const PrtLieTapeTerms *terms) {
    int k[4], z[4] = {z0};
    k[0] = flat_field(t, s, z0, n, terms);
    if (order == 2) { /* D58-D59 */
        z[1] = stage_op(t, s, combine(t, z0, 1, k, (double[]){0.5}, h), z0, 1, z, (double[]){0.5}, n, h);
        k[1] = flat_field(t, s, z[1], n, terms);
        z0 = stage_op(t, s, combine(t, z0, 1, k + 1, (double[]){1}, h), z0, 1, z + 1, (double[]){1}, n, h);
        return reorth_op(t, s, z0, n);
    }
    /* D60-D63 (CF4): stages as lie_group.c's */
    z[1] = stage_op(t, s, combine(t, z0, 1, k, (double[]){0.5}, h), z0, 1, z, (double[]){0.5}, n, h);
    k[1] = flat_field(t, s, z[1], n, terms);
    z[2] = stage_op(t, s, combine(t, z0, 1, k + 1, (double[]){0.5}, h), z0, 1, z + 1, (double[]){0.5}, n, h);
    k[2] = flat_field(t, s, z[2], n, terms);
    z[3] = stage_op(t, s, combine(t, z0, 1, k + 2, (double[]){1}, h), z[1], 2, (int[]){z[2], z0}, (double[]){1, -0.5}, n, h);
    k[3] = flat_field(t, s, z[3], n, terms);
    int half = stage_op(t, s, combine(t, z0, 4, k, (double[]){1.0 / 6, 1.0 / 3, 1.0 / 3, 1.0 / 6}, h), z0, 4, z,
                        (double[]){3.0 / 12, 2.0 / 12, 2.0 / 12, -1.0 / 12}, n, h);
    int end = stage_op(t, s, half, half, 4, z, (double[]){-1.0 / 12, 2.0 / 12, 2.0 / 12, 3.0 / 12}, n, h);
    return reorth_op(t, s, end, n);
}

int prt_tape_lie_t2_step(PrtTape *t, PrtSystem *s, int z, long n, double h, const PrtLieTapeTerms *terms) {
    long N = s->N;
    z = kinetic_op(t, s, z, n, h / 2);
    z = kick_op(t, s, z, terms->grad(terms->ctx, t, prt_tape_view(t, z, 0, N * n), n), n, h / 2);
    z = asym_op(t, s, z, n, h / 2);
    if (terms->force) z = force_op(t, s, z, terms->force(terms->ctx, t, z, n), n, h);
    z = asym_op(t, s, z, n, h / 2);
    z = kick_op(t, s, z, terms->grad(terms->ctx, t, prt_tape_view(t, z, 0, N * n), n), n, h / 2);
    z = kinetic_op(t, s, z, n, h / 2);
    return reorth_op(t, s, z, n);
}

bool prt_tape_so3_steps(int id) {
    return id == PRT_INT_LIET2 || id == PRT_INT_LIE_RK2 || id == PRT_INT_LIE_RK4 || id == PRT_INT_VERLET ||
           id == PRT_INT_RK4 || id == PRT_INT_EULER;
}

int prt_tape_so3_step(PrtTape *t, PrtSystem *s, int id, int z, long n, double h, const PrtLieTapeTerms *terms) {
    switch (id) {
    case PRT_INT_LIET2: return prt_tape_lie_t2_step(t, s, z, n, h, terms);
    case PRT_INT_LIE_RK2: return prt_tape_lie_rk_step(t, s, z, n, h, 2, terms);
    case PRT_INT_LIE_RK4: return prt_tape_lie_rk_step(t, s, z, n, h, 4, terms);
    case PRT_INT_VERLET: return prt_tape_verlet_step(t, s, z, n, h, terms);
    default: return prt_tape_flat_rk_step(t, s, prt_integrator_tableau((PrtIntegrator)id), z, n, h, terms);
    }
}
