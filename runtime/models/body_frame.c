/* body_frame.c — each body's view of the others, d_ij = R_i^T (q_j - q_i), and its
   pullback, as tape operations (body_frame.h). With D = q_j - q_i and g the gradient with
   respect to d_ij, the pullback adds R_i g to q_j's row, subtracts it from q_i's, and adds
   the outer product D g^T to R_i's entries. */
#include "body_frame.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"

long prt_body_frame_bodies(const PrtSystem *s) { return (s->N - 12L * s->nso3) / 3 + s->nso3; }

long prt_body_frame_rows(const PrtSystem *s) { return 3L * s->nso3 * (prt_body_frame_bodies(s) - 1); }

int prt_body_frame_init(PrtBodyFrame *f, const PrtSystem *s, bool world, char *err, size_t errlen) {
    memset(f, 0, sizeof *f);
    long cart = s->N - 12L * s->nso3;
    if (cart < 0 || cart % 3 != 0) {
        snprintf(err, errlen, "`input %s` reads bodies in 3-D; this system's %ld Cartesian coordinates are not "
                 "points in 3-D", world ? "own_centres" : "body_frame", cart);
        return -1;
    }
    long nb = prt_body_frame_bodies(s);
    if (nb < 2 || (!world && s->nso3 < 1)) {
        snprintf(err, errlen, "`input %s` reads where the bodies lie relative to %s; this system has %ld bodies, %d "
                 "of them with `state so3`", world ? "own_centres" : "body_frame", world ? "each other" : "rigid ones",
                 nb, s->nso3);
        return -1;
    }
    int *first = prt_xalloc((size_t)nb, sizeof(int), "model buffers");
    for (long b = 0; b < nb; b++) first[b] = b >= cart / 3 ? s->so3[b - cart / 3].x : (int)(3 * b);
    long first_viewer = world ? 0 : cart / 3; /* the rigid bodies' views, or every body's */
    f->nviews = (int)(nb - first_viewer);
    f->npairs = (int)(f->nviews * (nb - 1));
    f->from = prt_xalloc((size_t)f->npairs, sizeof(int), "model buffers");
    f->to = prt_xalloc((size_t)f->npairs, sizeof(int), "model buffers");
    f->rot = prt_xalloc((size_t)f->npairs, sizeof(int), "model buffers");
    f->N = s->N;
    f->per_body = (int)(nb - 1);
    int p = 0;
    for (long i = first_viewer; i < nb; i++)
        for (long j = 0; j < nb; j++)
            if (i != j) f->from[p] = first[i], f->to[p] = first[j], f->rot[p] = world ? -1 : first[i] + 3, p++;
    free(first);
    return 0;
}

void prt_body_frame_free(PrtBodyFrame *f) {
    free(f->from), free(f->to), free(f->rot);
    memset(f, 0, sizeof *f);
}

/* R_i[c][a] of state b (the identity for a view in the world frame, rot < 0) */
static inline double rot_entry(const double *x, long n, int rot, int c, int a, long b) {
    return rot < 0 ? c == a : x[(rot + 3 * c + a) * n + b];
}

/* y: d = R^T D for each pair, 3 rows a pair (stride n) */
static void features(const PrtBodyFrame *f, const double *x, long n, double *y) {
    for (int p = 0; p < f->npairs; p++)
        for (long b = 0; b < n; b++) {
            double D[3];
            for (int c = 0; c < 3; c++) D[c] = x[(f->to[p] + c) * n + b] - x[(f->from[p] + c) * n + b];
            for (int a = 0; a < 3; a++) {
                double d = 0;
                for (int c = 0; c < 3; c++) d += rot_entry(x, n, f->rot[p], c, a, b) * D[c];
                y[(3 * p + a) * n + b] = d;
            }
        }
}

/* xbar += J(x)^T g: R g onto q_j, minus onto q_i, D g^T onto R's entries */
static void pullback(const PrtBodyFrame *f, const double *x, const double *g, long n, double *xbar) {
    for (int p = 0; p < f->npairs; p++)
        for (long b = 0; b < n; b++) {
            double gp[3] = {g[(3 * p) * n + b], g[(3 * p + 1) * n + b], g[(3 * p + 2) * n + b]};
            for (int c = 0; c < 3; c++) {
                double Rg = 0;
                for (int a = 0; a < 3; a++) Rg += rot_entry(x, n, f->rot[p], c, a, b) * gp[a];
                xbar[(f->to[p] + c) * n + b] += Rg;
                xbar[(f->from[p] + c) * n + b] -= Rg;
            }
            for (int c = 0; c < 3 && f->rot[p] >= 0; c++) {
                double D = x[(f->to[p] + c) * n + b] - x[(f->from[p] + c) * n + b];
                for (int a = 0; a < 3; a++) xbar[(f->rot[p] + 3 * c + a) * n + b] += D * gp[a];
            }
        }
}

typedef struct Ctx {
    const PrtBodyFrame *f;
    long n;
} Ctx;

static void features_backward(PrtTape *t, const void *ctx, const int *in, int nin, int out) {
    const Ctx *c = ctx;
    (void)nin;
    pullback(c->f, prt_tape_val(t, in[0]), prt_tape_adj(t, out), c->n, prt_tape_adj(t, in[0]));
}

int prt_tape_body_frame(PrtTape *t, const PrtBodyFrame *f, int x, long n) {
    Ctx c = {f, n};
    int y = prt_tape_op(t, features_backward, &c, sizeof c, 1, &x, 3L * f->npairs * n);
    features(f, prt_tape_val(t, x), n, prt_tape_val(t, y));
    return y;
}

/* The pullback's backward: with w the adjoint of its output (N x n), the adjoint of g is
   J(x) w (R^T (w_j - w_i) plus D^T w_R per pair), and of x the derivative of J(x)^T g in x
   against w (g (w_j - w_i)^T onto R, +-w_R g onto q_j and q_i). */
static void pullback_backward(PrtTape *t, const void *ctx, const int *in, int nin, int out) {
    const Ctx *c = ctx;
    const PrtBodyFrame *f = c->f;
    long n = c->n;
    (void)nin;
    const double *x = prt_tape_val(t, in[0]), *g = prt_tape_val(t, in[1]), *w = prt_tape_adj(t, out);
    double *xbar = prt_tape_adj(t, in[0]), *gbar = prt_tape_adj(t, in[1]);
    for (int p = 0; p < f->npairs; p++)
        for (long b = 0; b < n; b++) {
            int i = f->from[p], j = f->to[p], r = f->rot[p];
            double dw[3], gp[3];
            for (int k = 0; k < 3; k++) dw[k] = w[(j + k) * n + b] - w[(i + k) * n + b], gp[k] = g[(3 * p + k) * n + b];
            for (int a = 0; a < 3; a++) {
                double s = 0;
                for (int k = 0; k < 3; k++) s += rot_entry(x, n, r, k, a, b) * dw[k];
                for (int k = 0; k < 3 && r >= 0; k++) s += (x[(j + k) * n + b] - x[(i + k) * n + b]) * w[(r + 3 * k + a) * n + b];
                gbar[(3 * p + a) * n + b] += s;
            }
            for (int k = 0; k < 3 && r >= 0; k++) { /* (in the world frame the pullback does not depend on x) */
                double wg = 0;
                for (int a = 0; a < 3; a++) {
                    xbar[(r + 3 * k + a) * n + b] += gp[a] * dw[k];
                    wg += w[(r + 3 * k + a) * n + b] * gp[a];
                }
                xbar[(j + k) * n + b] += wg;
                xbar[(i + k) * n + b] -= wg;
            }
        }
}

int prt_tape_body_frame_pullback(PrtTape *t, const PrtBodyFrame *f, int x, int g, long n) {
    Ctx c = {f, n};
    int y = prt_tape_op(t, pullback_backward, &c, sizeof c, 2, (int[]){x, g}, f->N * n);
    double *yv = prt_tape_val(t, y);
    memset(yv, 0, sizeof(double) * (size_t)(f->N * n));
    pullback(f, prt_tape_val(t, x), prt_tape_val(t, g), n, yv);
    return y;
}

/* ---- a term per viewing body: the features one column per (body, state) ---- */

long prt_body_frame_own_rows(const PrtBodyFrame *f) { return 3L * f->per_body + f->nviews; }

/* Body i's view, row r < 3 per_body, is row 3 i per_body + r of the features (n columns) and
   row r, columns [i n, (i + 1) n) of the grouped array (nviews n columns). to_grouped copies
   features -> grouped, else grouped -> features; add: += instead of =. */
static void regroup(const PrtBodyFrame *f, long n, const double *src, double *dst, bool to_grouped, bool add) {
    long rows = 3L * f->per_body, cols = (long)f->nviews * n;
    for (int i = 0; i < f->nviews; i++)
        for (long r = 0; r < rows; r++) {
            const double *a = to_grouped ? src + (rows * i + r) * n : src + r * cols + i * n;
            double *b = to_grouped ? dst + r * cols + i * n : dst + (rows * i + r) * n;
            if (add)
                for (long k = 0; k < n; k++) b[k] += a[k];
            else
                memcpy(b, a, sizeof(double) * (size_t)n);
        }
}

static void by_body_backward(PrtTape *t, const void *ctx, const int *in, int nin, int out) {
    const Ctx *c = ctx;
    (void)nin;
    regroup(c->f, c->n, prt_tape_adj(t, out), prt_tape_adj(t, in[0]), false, true);
}

int prt_tape_body_frame_by_body(PrtTape *t, const PrtBodyFrame *f, int features, long n) {
    Ctx c = {f, n};
    long cols = (long)f->nviews * n;
    int y = prt_tape_op(t, by_body_backward, &c, sizeof c, 1, &features, prt_body_frame_own_rows(f) * cols);
    double *yv = prt_tape_val(t, y);
    regroup(f, n, prt_tape_val(t, features), yv, true, false);
    double *onehot = yv + 3L * f->per_body * cols;
    memset(onehot, 0, sizeof(double) * (size_t)(f->nviews * cols));
    for (int i = 0; i < f->nviews; i++)
        for (long k = 0; k < n; k++) onehot[i * cols + i * n + k] = 1;
    return y;
}

static void join_backward(PrtTape *t, const void *ctx, const int *in, int nin, int out) {
    const Ctx *c = ctx;
    (void)nin;
    regroup(c->f, c->n, prt_tape_adj(t, out), prt_tape_adj(t, in[0]), true, true);
}

int prt_tape_body_frame_join(PrtTape *t, const PrtBodyFrame *f, int g, long n) {
    Ctx c = {f, n};
    int y = prt_tape_op(t, join_backward, &c, sizeof c, 1, &g, 3L * f->npairs * n);
    regroup(f, n, prt_tape_val(t, g), prt_tape_val(t, y), false, false);
    return y;
}
