/* state_ops.c — the per-state operations of state_ops.h: loops over the states of the batch,
   each on an nq-sized problem (nq is small: the generalized coordinates of one system). */
#include "state_ops.h"
#include "core/alloc.h"
#include "math/linalg.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct Shape {
    const unsigned char *angular;
    int nq;
    long n;
} Shape;

static int tri(int i, int j) { return i * (i + 1) / 2 + j; }
static double sigmoid(double x) { return x >= 0 ? 1 / (1 + exp(-x)) : exp(x) / (1 + exp(x)); }
static double softplus(double x) { return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x)); }

/* ---- the angle embedding ---- */

int prt_features_width(int nq, const unsigned char *angular) {
    int w = 0;
    for (int i = 0; i < nq; i++) w += angular && angular[i] ? 2 : 1;
    return w;
}

static void features_backward(PrtTape *t, const void *ctx, const int *in, int nin, int out) {
    const Shape *s = ctx;
    const double *q = prt_tape_val(t, in[0]), *ybar = prt_tape_adj(t, out);
    double *qbar = prt_tape_adj(t, in[0]);
    long n = s->n;
    for (int i = 0, r = 0; i < s->nq; i++) {
        bool ang = s->angular && s->angular[i];
        for (long b = 0; b < n; b++) {
            long k = i * n + b, c = r * n + b;
            qbar[k] += ang ? -sin(q[k]) * ybar[c] + cos(q[k]) * ybar[c + n] : ybar[c];
        }
        r += ang ? 2 : 1;
    }
}

int prt_op_features(PrtTape *t, int q, int nq, const unsigned char *angular, long n) {
    Shape s = {angular, nq, n};
    int y = prt_tape_op(t, features_backward, &s, sizeof s, 1, &q, (long)prt_features_width(nq, angular) * n);
    const double *qv = prt_tape_val(t, q);
    double *yv = prt_tape_val(t, y);
    for (int i = 0, r = 0; i < nq; i++) {
        bool ang = angular && angular[i];
        for (long b = 0; b < n; b++) {
            long k = i * n + b, c = r * n + b;
            if (ang) yv[c] = cos(qv[k]), yv[c + n] = sin(qv[k]);
            else yv[c] = qv[k];
        }
        r += ang ? 2 : 1;
    }
    return y;
}

/* y_i = -sin q_i g_cos + cos q_i g_sin for an angle, g_i otherwise. */
static void features_vjp_backward(PrtTape *t, const void *ctx, const int *in, int nin, int out) {
    const Shape *s = ctx;
    const double *q = prt_tape_val(t, in[0]), *g = prt_tape_val(t, in[1]), *ybar = prt_tape_adj(t, out);
    double *qbar = prt_tape_adj(t, in[0]), *gbar = prt_tape_adj(t, in[1]);
    long n = s->n;
    for (int i = 0, r = 0; i < s->nq; i++, r++) {
        bool ang = s->angular && s->angular[i];
        for (long b = 0; b < n; b++) {
            long k = i * n + b, c = r * n + b;
            if (!ang) {
                gbar[c] += ybar[k];
                continue;
            }
            double sn = sin(q[k]), cs = cos(q[k]);
            gbar[c] += -sn * ybar[k];
            gbar[c + n] += cs * ybar[k];
            qbar[k] += (-cs * g[c] - sn * g[c + n]) * ybar[k];
        }
        if (ang) r++;
    }
}

int prt_op_features_vjp(PrtTape *t, int q, int g, int nq, const unsigned char *angular, long n) {
    Shape s = {angular, nq, n};
    int y = prt_tape_op(t, features_vjp_backward, &s, sizeof s, 2, (int[]){q, g}, (long)nq * n);
    const double *qv = prt_tape_val(t, q), *gv = prt_tape_val(t, g);
    double *yv = prt_tape_val(t, y);
    for (int i = 0, r = 0; i < nq; i++, r++) {
        bool ang = angular && angular[i];
        for (long b = 0; b < n; b++) {
            long k = i * n + b, c = r * n + b;
            yv[k] = ang ? -sin(qv[k]) * gv[c] + cos(qv[k]) * gv[c + n] : gv[c];
        }
        if (ang) r++;
    }
    return y;
}

/* y_cos = -sin q u, y_sin = cos q u for an angle, u otherwise. */
static void features_jvp_backward(PrtTape *t, const void *ctx, const int *in, int nin, int out) {
    const Shape *s = ctx;
    const double *q = prt_tape_val(t, in[0]), *u = prt_tape_val(t, in[1]), *ybar = prt_tape_adj(t, out);
    double *qbar = prt_tape_adj(t, in[0]), *ubar = prt_tape_adj(t, in[1]);
    long n = s->n;
    for (int i = 0, r = 0; i < s->nq; i++, r++) {
        bool ang = s->angular && s->angular[i];
        for (long b = 0; b < n; b++) {
            long k = i * n + b, c = r * n + b;
            if (!ang) {
                ubar[k] += ybar[c];
                continue;
            }
            double sn = sin(q[k]), cs = cos(q[k]);
            ubar[k] += -sn * ybar[c] + cs * ybar[c + n];
            qbar[k] += (-cs * ybar[c] - sn * ybar[c + n]) * u[k];
        }
        if (ang) r++;
    }
}

int prt_op_features_jvp(PrtTape *t, int q, int u, int nq, const unsigned char *angular, long n) {
    Shape s = {angular, nq, n};
    int y = prt_tape_op(t, features_jvp_backward, &s, sizeof s, 2, (int[]){q, u},
                        (long)prt_features_width(nq, angular) * n);
    const double *qv = prt_tape_val(t, q), *uv = prt_tape_val(t, u);
    double *yv = prt_tape_val(t, y);
    for (int i = 0, r = 0; i < nq; i++, r++) {
        bool ang = angular && angular[i];
        for (long b = 0; b < n; b++) {
            long k = i * n + b, c = r * n + b;
            if (ang) yv[c] = -sin(qv[k]) * uv[k], yv[c + n] = cos(qv[k]) * uv[k];
            else yv[c] = uv[k];
        }
        if (ang) r++;
    }
    return y;
}

/* ---- lower-triangular factors ---- */

static void tril_softplus_backward(PrtTape *t, const void *ctx, const int *in, int nin, int out) {
    const Shape *s = ctx;
    const double *raw = prt_tape_val(t, in[0]), *ybar = prt_tape_adj(t, out);
    double *rbar = prt_tape_adj(t, in[0]);
    long n = s->n, len = (long)s->nq * (s->nq + 1) / 2 * n;
    for (long k = 0; k < len; k++) rbar[k] += ybar[k];
    for (int i = 0; i < s->nq; i++)
        for (long b = 0; b < n; b++) {
            long k = tri(i, i) * n + b;
            rbar[k] += ybar[k] * (sigmoid(raw[k]) - 1);
        }
}

int prt_op_tril_softplus(PrtTape *t, int raw, int nq, long n) {
    Shape s = {NULL, nq, n};
    long len = (long)nq * (nq + 1) / 2 * n;
    int y = prt_tape_op(t, tril_softplus_backward, &s, sizeof s, 1, &raw, len);
    const double *r = prt_tape_val(t, raw);
    double *yv = prt_tape_val(t, y);
    memcpy(yv, r, sizeof(double) * (size_t)len);
    for (int i = 0; i < nq; i++)
        for (long b = 0; b < n; b++) yv[tri(i, i) * n + b] = softplus(r[tri(i, i) * n + b]);
    return y;
}

static void tril_scale_backward(PrtTape *t, const void *ctx, const int *in, int nin, int out) {
    const Shape *s = ctx;
    const double *raw = prt_tape_val(t, in[0]), *G = prt_tape_val(t, in[1]), *ybar = prt_tape_adj(t, out);
    double *rbar = prt_tape_adj(t, in[0]), *gbar = prt_tape_adj(t, in[1]);
    long n = s->n, len = (long)s->nq * (s->nq + 1) / 2 * n;
    for (long k = 0; k < len; k++) gbar[k] += ybar[k];
    for (int i = 0; i < s->nq; i++)
        for (long b = 0; b < n; b++) {
            long k = tri(i, i) * n + b;
            double sg = sigmoid(raw[k]);
            gbar[k] += ybar[k] * (sg - 1);
            rbar[k] += ybar[k] * G[k] * sg * (1 - sg);
        }
}

int prt_op_tril_softplus_scale(PrtTape *t, int raw, int G, int nq, long n) {
    Shape s = {NULL, nq, n};
    long len = (long)nq * (nq + 1) / 2 * n;
    int y = prt_tape_op(t, tril_scale_backward, &s, sizeof s, 2, (int[]){raw, G}, len);
    const double *r = prt_tape_val(t, raw), *g = prt_tape_val(t, G);
    double *yv = prt_tape_val(t, y);
    memcpy(yv, g, sizeof(double) * (size_t)len);
    for (int i = 0; i < nq; i++)
        for (long b = 0; b < n; b++) yv[tri(i, i) * n + b] *= sigmoid(r[tri(i, i) * n + b]);
    return y;
}

/* y = L v (y_i = sum_{j <= i} L_ij v_j) or, transposed, y = L^T v (y_j = sum_{i >= j} L_ij v_i). */
typedef struct TriMul {
    int nq;
    long n;
    bool transposed;
} TriMul;

static void tril_mul_backward(PrtTape *t, const void *ctx, const int *in, int nin, int out) {
    const TriMul *s = ctx;
    const double *L = prt_tape_val(t, in[0]), *v = prt_tape_val(t, in[1]), *ybar = prt_tape_adj(t, out);
    double *Lbar = prt_tape_adj(t, in[0]), *vbar = prt_tape_adj(t, in[1]);
    long n = s->n;
    for (int i = 0; i < s->nq; i++)
        for (int j = 0; j <= i; j++) {
            int yr = s->transposed ? j : i, vr = s->transposed ? i : j; /* the output's row, v's */
            for (long b = 0; b < n; b++) {
                Lbar[tri(i, j) * n + b] += ybar[yr * n + b] * v[vr * n + b];
                vbar[vr * n + b] += L[tri(i, j) * n + b] * ybar[yr * n + b];
            }
        }
}

static int tril_product(PrtTape *t, int L, int v, int nq, long n, bool transposed) {
    TriMul s = {nq, n, transposed};
    int y = prt_tape_op(t, tril_mul_backward, &s, sizeof s, 2, (int[]){L, v}, (long)nq * n);
    const double *Lv = prt_tape_val(t, L), *vv = prt_tape_val(t, v);
    double *yv = prt_tape_val(t, y);
    memset(yv, 0, sizeof(double) * (size_t)(nq * n));
    for (int i = 0; i < nq; i++)
        for (int j = 0; j <= i; j++) {
            int yr = transposed ? j : i, vr = transposed ? i : j;
            for (long b = 0; b < n; b++) yv[yr * n + b] += Lv[tri(i, j) * n + b] * vv[vr * n + b];
        }
    return y;
}

int prt_op_tril_mul(PrtTape *t, int L, int v, int nq, long n) { return tril_product(t, L, v, nq, n, false); }
int prt_op_tril_t_mul(PrtTape *t, int L, int v, int nq, long n) { return tril_product(t, L, v, nq, n, true); }

static void tril_outer_backward(PrtTape *t, const void *ctx, const int *in, int nin, int out) {
    const Shape *s = ctx;
    const double *a = prt_tape_val(t, in[0]), *bv = prt_tape_val(t, in[1]), *ybar = prt_tape_adj(t, out);
    double *abar = prt_tape_adj(t, in[0]), *bbar = prt_tape_adj(t, in[1]);
    long n = s->n;
    for (int i = 0; i < s->nq; i++)
        for (int j = 0; j <= i; j++)
            for (long b = 0; b < n; b++) {
                double g = ybar[tri(i, j) * n + b];
                abar[i * n + b] += g * bv[j * n + b];
                bbar[j * n + b] += g * a[i * n + b];
            }
}

int prt_op_tril_outer(PrtTape *t, int a, int bvec, int nq, long n) {
    Shape s = {NULL, nq, n};
    int y = prt_tape_op(t, tril_outer_backward, &s, sizeof s, 2, (int[]){a, bvec}, (long)nq * (nq + 1) / 2 * n);
    const double *av = prt_tape_val(t, a), *bv = prt_tape_val(t, bvec);
    double *yv = prt_tape_val(t, y);
    for (int i = 0; i < nq; i++)
        for (int j = 0; j <= i; j++)
            for (long b = 0; b < n; b++) yv[tri(i, j) * n + b] = av[i * n + b] * bv[j * n + b];
    return y;
}

/* Solves L L^T x = v for one state (L packed, gathered), in place in x. */
static void llt_solve_one(int nq, const double *L, double *x) {
    for (int i = 0; i < nq; i++) { /* L y = v */
        double s = x[i];
        for (int j = 0; j < i; j++) s -= L[tri(i, j)] * x[j];
        x[i] = s / L[tri(i, i)];
    }
    for (int i = nq - 1; i >= 0; i--) { /* L^T x = y */
        double s = x[i];
        for (int j = i + 1; j < nq; j++) s -= L[tri(j, i)] * x[j];
        x[i] = s / L[tri(i, i)];
    }
}

/* x = (L L^T)^-1 v: vbar += u, Lbar = -(u x^T + x u^T) L (lower part), u = (L L^T)^-1 xbar. */
static void llt_solve_backward(PrtTape *t, const void *ctx, const int *in, int nin, int out) {
    const Shape *s = ctx;
    int nq = s->nq;
    long n = s->n;
    const double *L = prt_tape_val(t, in[0]), *x = prt_tape_val(t, out), *xbar = prt_tape_adj(t, out);
    double *Lbar = prt_tape_adj(t, in[0]), *vbar = prt_tape_adj(t, in[1]);
    double l[PRT_STATE_MAX_Q * (PRT_STATE_MAX_Q + 1) / 2], u[PRT_STATE_MAX_Q], xs[PRT_STATE_MAX_Q], ltx[PRT_STATE_MAX_Q], ltu[PRT_STATE_MAX_Q];
    for (long b = 0; b < n; b++) {
        for (int k = 0; k < nq * (nq + 1) / 2; k++) l[k] = L[k * n + b];
        for (int i = 0; i < nq; i++) u[i] = xbar[i * n + b], xs[i] = x[i * n + b];
        llt_solve_one(nq, l, u);
        for (int j = 0; j < nq; j++) {
            ltx[j] = ltu[j] = 0;
            for (int i = j; i < nq; i++) ltx[j] += l[tri(i, j)] * xs[i], ltu[j] += l[tri(i, j)] * u[i];
        }
        for (int i = 0; i < nq; i++) {
            vbar[i * n + b] += u[i];
            for (int j = 0; j <= i; j++) Lbar[tri(i, j) * n + b] -= u[i] * ltx[j] + xs[i] * ltu[j];
        }
    }
}

int prt_op_tril_llt_solve(PrtTape *t, int L, int v, int nq, long n) {
    Shape s = {NULL, nq, n};
    int y = prt_tape_op(t, llt_solve_backward, &s, sizeof s, 2, (int[]){L, v}, (long)nq * n);
    const double *Lv = prt_tape_val(t, L), *vv = prt_tape_val(t, v);
    double *yv = prt_tape_val(t, y), l[PRT_STATE_MAX_Q * (PRT_STATE_MAX_Q + 1) / 2], x[PRT_STATE_MAX_Q];
    for (long b = 0; b < n; b++) {
        for (int k = 0; k < nq * (nq + 1) / 2; k++) l[k] = Lv[k * n + b];
        for (int i = 0; i < nq; i++) x[i] = vv[i * n + b];
        llt_solve_one(nq, l, x);
        for (int i = 0; i < nq; i++) yv[i * n + b] = x[i];
    }
    return y;
}

/* ---- full matrices ---- */

bool prt_small_solve(int nq, double *A, double *b, bool transpose) {
    int piv[PRT_STATE_MAX_Q];
    if (!prt_lu_factor(A, nq, piv)) { /* singular: non-finite, which training reports */
        for (int i = 0; i < nq; i++) b[i] = NAN;
        return false;
    }
    (transpose ? prt_lu_solve_transposed : prt_lu_solve)(A, nq, piv, b);
    return true;
}

static void mat_mul_backward(PrtTape *t, const void *ctx, const int *in, int nin, int out) {
    const Shape *s = ctx;
    int nq = s->nq;
    long n = s->n;
    const double *A = prt_tape_val(t, in[0]), *v = prt_tape_val(t, in[1]), *ybar = prt_tape_adj(t, out);
    double *Abar = prt_tape_adj(t, in[0]), *vbar = prt_tape_adj(t, in[1]);
    for (int i = 0; i < nq; i++)
        for (int j = 0; j < nq; j++)
            for (long b = 0; b < n; b++) {
                Abar[(i * nq + j) * n + b] += ybar[i * n + b] * v[j * n + b];
                vbar[j * n + b] += A[(i * nq + j) * n + b] * ybar[i * n + b];
            }
}

int prt_op_mat_mul(PrtTape *t, int A, int v, int nq, long n) {
    Shape s = {NULL, nq, n};
    int y = prt_tape_op(t, mat_mul_backward, &s, sizeof s, 2, (int[]){A, v}, (long)nq * n);
    const double *Av = prt_tape_val(t, A), *vv = prt_tape_val(t, v);
    double *yv = prt_tape_val(t, y);
    memset(yv, 0, sizeof(double) * (size_t)(nq * n));
    for (int i = 0; i < nq; i++)
        for (int j = 0; j < nq; j++)
            for (long b = 0; b < n; b++) yv[i * n + b] += Av[(i * nq + j) * n + b] * vv[j * n + b];
    return y;
}

/* x = A^-1 v: u = A^-T xbar, vbar += u, Abar -= u x^T. */
static void mat_solve_backward(PrtTape *t, const void *ctx, const int *in, int nin, int out) {
    const Shape *s = ctx;
    int nq = s->nq;
    long n = s->n;
    const double *A = prt_tape_val(t, in[0]), *x = prt_tape_val(t, out), *xbar = prt_tape_adj(t, out);
    double *Abar = prt_tape_adj(t, in[0]), *vbar = prt_tape_adj(t, in[1]), a[PRT_STATE_MAX_Q * PRT_STATE_MAX_Q], u[PRT_STATE_MAX_Q];
    for (long b = 0; b < n; b++) {
        for (int k = 0; k < nq * nq; k++) a[k] = A[k * n + b];
        for (int i = 0; i < nq; i++) u[i] = xbar[i * n + b];
        prt_small_solve(nq, a, u, true);
        for (int i = 0; i < nq; i++) {
            vbar[i * n + b] += u[i];
            for (int j = 0; j < nq; j++) Abar[(i * nq + j) * n + b] -= u[i] * x[j * n + b];
        }
    }
}

int prt_op_mat_solve(PrtTape *t, int A, int v, int nq, long n) {
    Shape s = {NULL, nq, n};
    int y = prt_tape_op(t, mat_solve_backward, &s, sizeof s, 2, (int[]){A, v}, (long)nq * n);
    const double *Av = prt_tape_val(t, A), *vv = prt_tape_val(t, v);
    double *yv = prt_tape_val(t, y), a[PRT_STATE_MAX_Q * PRT_STATE_MAX_Q], x[PRT_STATE_MAX_Q];
    for (long b = 0; b < n; b++) {
        for (int k = 0; k < nq * nq; k++) a[k] = Av[k * n + b];
        for (int i = 0; i < nq; i++) x[i] = vv[i * n + b];
        prt_small_solve(nq, a, x, false);
        for (int i = 0; i < nq; i++) yv[i * n + b] = x[i];
    }
    return y;
}
