/* lie_tape.c — the sub-flows of a Lie T2 step as tape operations (lie_tape.h). Forward: the
   batch flows of lie_group.c on a copy of the input state. Backward: the identity on every
   row a flow leaves alone, and per `state so3` body and state the VJPs of lie_group.c. */
#include "lie_tape.h"

#include <stdbool.h>
#include <string.h>

#include "lie_group.h"

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
    LieOp op = {s, h, n, prt_tape_leaf(t, (long)s->NP * n)};
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
