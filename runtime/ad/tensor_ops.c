/* tensor_ops.c — the batched tape operations of tensor_ops.h: GEMMs for the layers, loops
   for the elementwise parts. */
#include "tensor_ops.h"

#include <cblas.h>
#include <math.h>
#include <string.h>

#include "math/simd_clones.h"
#include "nn/vtanh.h"
#include "nn/vtanh_divided.h"

static double sigmoid(double x) { return x >= 0 ? 1 / (1 + exp(-x)) : exp(x) / (1 + exp(x)); }

double prt_act_derivative(PrtActivation act, int order, double x) {
    switch (act) {
    case PRT_ACT_TANH: {
        double a = tanh(x), d1 = 1 - a * a, d2 = -2 * a * d1;
        return order == 0 ? a : order == 1 ? d1 : order == 2 ? d2 : -2 * (d1 * d1 + a * d2);
    }
    case PRT_ACT_SOFTPLUS: {
        double s = sigmoid(x), s1 = s * (1 - s);
        return order == 0 ? (x > 0 ? x + log1p(exp(-x)) : log1p(exp(x))) : order == 1 ? s : order == 2 ? s1 : s1 * (1 - 2 * s);
    }
    case PRT_ACT_SILU: {
        double s = sigmoid(x), s1 = s * (1 - s), s2 = s1 * (1 - 2 * s), s3 = s1 * (1 - 2 * s) * (1 - 2 * s) - 2 * s1 * s1;
        return order == 0 ? x * s : order == 1 ? s + x * s1 : order == 2 ? 2 * s1 + x * s2 : 3 * s2 + x * s3;
    }
    }
    return NAN;
}

/* ---- divided differences ----

   dd(a, b) = (s(a) - s(b)) / (a - b) = s'(a) where a == b, for a discrete gradient
   (mlp_graph.h). The quotient as written cancels: its numerator loses all digits where
   s(a) ~ s(b) (close points, or a saturated activation: tanh 40 - tanh 39 == 0 in double),
   and the partials (s'(a) - dd) / (a - b) lose them again. The forms below cancel only where
   the exact result itself passes through zero (SiLU's dd and partials can), and err by a few
   ulps (dd) or ~1e-13 (partials, at the thresholds below) elsewhere. No sech, cosh or e^x of
   a positive argument is formed, so nothing overflows for any finite a, b.

   tanh (computed in vtanh_divided.c, vectorized). The addition formula tanh a - tanh b =
   sinh(a - b) / (cosh a cosh b), with sinh d = sgn d e^|d| (1 - e^-2|d|) / 2 and
   cosh x = e^|x| (1 + e^-2|x|) / 2, gives
       dd = 2 e^(|d| - |a| - |b|) (-expm1(-2|d|) / |d|) / ((1 + e^-2|a|) (1 + e^-2|b|)),
   where |d| - |a| - |b| is exactly 0 for a, b of opposite signs and -2 min(|a|, |b|) for one
   sign: every factor positive and accurate, nothing subtracted. As dd = sech a sech b S(d)
   with S(d) = sinh d / d, the log-derivatives are separable:
       d dd/da = dd (L(d) - tanh a),   d dd/db = dd (-L(d) - tanh b),
   L(d) = S'(d)/S(d) = coth d - 1/d (the Langevin function), whose two terms cancel for small
   d: its odd series below |d| = 1/4 (7 terms, truncation < 3e-16 relative), coth d - 1/d
   above (cancellation there at most 3/d^2 = 48: ~1e-14).

   SiLU, s = x sigma(x): a sigma(a) - b sigma(b) = d sigma(b) + a (sigma(a) - sigma(b)), and
   sigma(x) = (1 + tanh(x/2))/2, so dd = sigma(b) + a dd_tanh(a/2, b/2)/4 and its partials
   follow from tanh's. The point with the smaller |x| multiplies: the other way round,
   sigma(a) + b dd_sigma cancels (a = -0.3, b = -800: 0.43 - 0.43). Chosen so, the terms
   cancel only near SiLU's minimum, where the exact dd is small too (its error there is what
   an ulp's change of a or b makes; test_discrete_grad.c measures it over its grid).

   softplus. For d = a - b > 0 (dd is symmetric): with both <= 0, s(a) - s(b) =
   log1p(e^a (-expm1(-d)) / (1 + e^b)); with both >= 0, s(x) = x + s(-x) turns it into
   d - r with r = s(-b) - s(-a) <= d/2 (the same form mirrored), so at most one bit is lost;
   mixed signs split at 0 into two positive parts. The partials (sigma(a) - dd)/d and
   (dd - sigma(b))/d: since dd(a, b) = 1 - dd(-a, -b) they equal the partials at (-a, -b),
   so take the points to a + b <= 0, where sigma is not saturated at 1; there the quotients
   lose at most ~8/|d| ulps (1e-13 at |d| = 0.02). Below |d| = 0.02 the midpoint series
   (m, h = (a+b)/2, (a-b)/2): d dd/da = (1/2) sum_j sigma^(j+1)(m) h^j c_j (d dd/db: -h),
   c_j = 1/(j+1)! (j even), (j+1)/(j+2)! (j odd), with sigma^(k) = u Q_k(v), u = sigma',
   v = 1 - 2 sigma, Q_{k+1} = v Q_k - (1 - v^2) Q_k'/2: six terms, truncation < 1e-15. */

static double sigmoid_prime(double x) {
    double e = exp(-fabs(x));
    return e / ((1 + e) * (1 + e));
}

static double silu_divided(double a, double b, double *dda, double *ddb) {
    double sa = 0, sb = 0, dds = prt_tanh_divided(a / 2, b / 2, dda ? &sa : NULL, ddb ? &sb : NULL) / 4; /* sigma's dd */
    sa /= 8, sb /= 8;                                                                              /* and partials */
    if (fabs(a) < fabs(b)) { /* dd = sigma(b) + a dds */
        if (dda) *dda = dds + a * sa;
        if (ddb) *ddb = sigmoid_prime(b) + a * sb;
        return sigmoid(b) + a * dds;
    }
    if (fabs(b) < fabs(a)) { /* dd = sigma(a) + b dds */
        if (dda) *dda = sigmoid_prime(a) + b * sa;
        if (ddb) *ddb = dds + b * sb;
        return sigmoid(a) + b * dds;
    }
    double m = a / 2 + b / 2; /* |a| == |b|: m = 0 or a == b */
    if (dda) *dda = sigmoid_prime(a) / 2 + dds / 2 + m * sa;
    if (ddb) *ddb = sigmoid_prime(b) / 2 + dds / 2 + m * sb;
    return (sigmoid(a) + sigmoid(b)) / 2 + m * dds;
}

/* s(a) - s(b) for a > b. */
static double softplus_diff(double a, double b) {
    if (a <= 0) return log1p(exp(a) * -expm1(-(a - b)) / (1 + exp(b)));
    if (b >= 0) return (a - b) - softplus_diff(-b, -a);
    return softplus_diff(a, 0) + softplus_diff(0, b);
}

static double softplus_divided_value(double a, double b) {
    if (a == b) return sigmoid(a);
    return a > b ? softplus_diff(a, b) / (a - b) : softplus_diff(b, a) / (b - a);
}

static double softplus_divided(double a, double b, double *dda, double *ddb) {
    double dd = softplus_divided_value(a, b);
    if (!dda && !ddb) return dd;
    if (a / 2 + b / 2 > 0) a = -a, b = -b; /* the same partials, away from sigma's saturation */
    double d = a - b, pa, pb;
    if (fabs(d) < 0.02) {
        double m = a / 2 + b / 2, h = d / 2, u = sigmoid_prime(m), v = -tanh(m / 2), v2 = v * v;
        double q[6] = {1, v, 1.5 * v2 - 0.5, (3 * v2 - 2) * v, (7.5 * v2 - 7.5) * v2 + 1, ((22.5 * v2 - 30) * v2 + 8.5) * v};
        double c[6] = {1, 1.0 / 3, 1.0 / 6, 1.0 / 30, 1.0 / 120, 1.0 / 840};
        double even = 0, odd = 0;
        for (int j = 4; j >= 0; j -= 2) even = even * h * h + q[j] * c[j], odd = odd * h * h + q[j + 1] * c[j + 1];
        pa = u / 2 * (even + h * odd), pb = u / 2 * (even - h * odd);
    } else {
        double ddr = softplus_divided_value(a, b);
        pa = (sigmoid(a) - ddr) / d, pb = (ddr - sigmoid(b)) / d;
    }
    if (dda) *dda = pa;
    if (ddb) *ddb = pb;
    return dd;
}

double prt_act_divided(PrtActivation act, double a, double b, double *dda, double *ddb) {
    switch (act) {
    case PRT_ACT_TANH: return prt_tanh_divided(a, b, dda, ddb);
    case PRT_ACT_SOFTPLUS: return softplus_divided(a, b, dda, ddb);
    case PRT_ACT_SILU: return silu_divided(a, b, dda, ddb);
    }
    return NAN;
}

/* ---- layers ---- */

/* Values in float, for an f32 network: an op's output is rounded to float (for the
   elementwise ops, from its double result: exact for products, correctly rounded for the
   rest) and its GEMMs are sgemm's on float copies of the operands. Adjoints are sums of
   float-computed terms, kept in double as the weights' are (mlp.h). */
static void round_f32(long n, double *y) {
    for (long i = 0; i < n; i++) y[i] = (float)y[i];
}

/* C (M x N) = beta C + op(A) op(B), A M x K (or K x M transposed), B K x N (or N x K): by
   dgemm, or in float for f32 (beta 0: C the sgemm's result widened, else added to C). */
static void gemm(PrtTape *t, bool f32, bool ta, bool tb, int M, int N, int K, const double *A, const double *B,
                 double beta, double *C) {
    int lda = ta ? M : K, ldb = tb ? K : N;
    if (!f32) {
        cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K, 1, A, lda, B,
                    ldb, beta, C, N);
        return;
    }
    size_t na = (size_t)M * K, nb = (size_t)K * N, nc = (size_t)M * N;
    float *Af = prt_tape_floats(t, na + nb + nc), *Bf = Af + na, *Cf = Bf + nb;
    for (size_t i = 0; i < na; i++) Af[i] = (float)A[i];
    for (size_t i = 0; i < nb; i++) Bf[i] = (float)B[i];
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K, 1, Af, lda, Bf,
                ldb, 0, Cf, N);
    if (beta == 0)
        for (size_t i = 0; i < nc; i++) C[i] = Cf[i];
    else
        for (size_t i = 0; i < nc; i++) C[i] += Cf[i];
}

typedef struct Affine {
    const double *W, *b;
    double *Wadj, *badj;
    int rows, inner;
    long cols;
    bool transposed, f32;
} Affine;

static void affine_backward(PrtTape *t, const void *ctx, const int *in, int nin, int out) {
    const Affine *a = ctx;
    const double *x = prt_tape_val(t, in[0]), *ybar = prt_tape_adj(t, out);
    double *xbar = prt_tape_adj(t, in[0]);
    int M = a->rows, K = a->inner, n = (int)a->cols;
    prt_mlp_gemm_flops += (unsigned long long)(2.0 * M * K * n * (a->Wadj ? 2 : 1));
    if (!a->transposed) { /* y = W x: xbar += W^T ybar, Wbar += ybar x^T */
        gemm(t, a->f32, true, false, K, n, M, a->W, ybar, 1, xbar);
        if (a->Wadj) gemm(t, a->f32, false, true, M, K, n, ybar, x, 1, a->Wadj);
        if (a->badj)
            for (int r = 0; r < M; r++) {
                double s = 0;
                for (long c = 0; c < n; c++) s += ybar[r * n + c];
                a->badj[r] += s;
            }
    } else { /* y = W^T x: xbar += W ybar, Wbar += x ybar^T */
        gemm(t, a->f32, false, false, M, n, K, a->W, ybar, 1, xbar);
        if (a->Wadj) gemm(t, a->f32, false, true, M, K, n, x, ybar, 1, a->Wadj);
    }
}

int prt_op_affine(PrtTape *t, const double *W, double *Wadj, const double *b, double *badj, int rows, int inner,
                  int x, long cols, bool f32) {
    Affine a = {W, b, Wadj, badj, rows, inner, cols, false, f32};
    prt_mlp_gemm_flops += (unsigned long long)(2.0 * rows * inner * cols);
    int y = prt_tape_op(t, affine_backward, &a, sizeof a, 1, &x, (long)rows * cols);
    double *yv = prt_tape_val(t, y);
    if (b) /* the bias first, then W x added to it by the GEMM (in float: W x, then the sum rounded) */
        for (int r = 0; r < rows; r++)
            for (long c = 0; c < cols; c++) yv[r * cols + c] = f32 ? (float)b[r] : b[r];
    gemm(t, f32, false, false, rows, (int)cols, inner, W, prt_tape_val(t, x), b ? 1 : 0, yv);
    if (f32 && b) round_f32((long)rows * cols, yv);
    return y;
}

int prt_op_affine_t(PrtTape *t, const double *W, double *Wadj, int rows, int inner, int x, long cols, bool f32) {
    Affine a = {W, NULL, Wadj, NULL, rows, inner, cols, true, f32};
    prt_mlp_gemm_flops += (unsigned long long)(2.0 * rows * inner * cols);
    int y = prt_tape_op(t, affine_backward, &a, sizeof a, 1, &x, (long)inner * cols);
    gemm(t, f32, true, false, inner, (int)cols, rows, W, prt_tape_val(t, x), 0, prt_tape_val(t, y));
    return y;
}

/* ---- elementwise ---- */

typedef struct Act {
    PrtActivation act;
    int order;
} Act;

/* s^(order) over an array. Softplus (orders 1-3) and SiLU are polynomials of x and
   t = tanh(x/2), through the vectorized tanh: sigma = (1 + t)/2, sigma' = q = (1 - t)(1 + t)/4,
   sigma'' = -q t, sigma''' = q (t^2 - 2q) (as t' = 2q); softplus^(k) = sigma^(k-1), SiLU's
   (x sigma)^(k) = k sigma^(k-1) + x sigma^(k). libm's exp and log1p per element took a fifth
   of an LNN's training. Softplus itself (order 0) keeps log1p. */
static void act_array(PrtActivation act, int order, long len, const double *x, double *y) {
    if (act == PRT_ACT_TANH || (act == PRT_ACT_SOFTPLUS && order == 0) || order > 3) {
        for (long i = 0; i < len; i++) y[i] = prt_act_derivative(act, order, x[i]);
        return;
    }
    enum { BLOCK = 256 };
    double half[BLOCK], th[BLOCK];
    for (long i0 = 0; i0 < len; i0 += BLOCK) {
        long m = len - i0 < BLOCK ? len - i0 : BLOCK;
        for (long j = 0; j < m; j++) half[j] = x[i0 + j] / 2;
        prt_vtanh(m, half, th);
        for (long j = 0; j < m; j++) {
            double xi = x[i0 + j], t = th[j], q = (1 - t) * (1 + t) / 4;
            double s0 = (1 + t) / 2, s1 = q, s2 = -q * t, s3 = q * (t * t - 2 * q), v;
            if (act == PRT_ACT_SOFTPLUS) v = order == 1 ? s0 : order == 2 ? s1 : s2;
            else v = order == 0 ? xi * s0 : order == 1 ? s0 + xi * s1 : order == 2 ? 2 * s1 + xi * s2 : 3 * s2 + xi * s3;
            y[i0 + j] = v;
        }
    }
}

static void act_backward(PrtTape *t, const void *ctx, const int *in, int nin, int out) {
    const Act *a = ctx;
    enum { BLOCK = 256 };
    double d[BLOCK];
    const double *x = prt_tape_val(t, in[0]), *ybar = prt_tape_adj(t, out);
    double *xbar = prt_tape_adj(t, in[0]);
    long len = prt_tape_len(t, out);
    for (long i0 = 0; i0 < len; i0 += BLOCK) {
        long m = len - i0 < BLOCK ? len - i0 : BLOCK;
        act_array(a->act, a->order + 1, m, x + i0, d);
        for (long j = 0; j < m; j++) xbar[i0 + j] += ybar[i0 + j] * d[j];
    }
}

/* tanh: y = tanh(x), whose derivative is 1 - y^2. */
static void tanh_backward(PrtTape *t, const void *ctx, const int *in, int nin, int out) {
    const double *y = prt_tape_val(t, out), *ybar = prt_tape_adj(t, out);
    double *xbar = prt_tape_adj(t, in[0]);
    long len = prt_tape_len(t, out);
    for (long i = 0; i < len; i++) xbar[i] += ybar[i] * (1 - y[i] * y[i]);
}

/* tanh's derivatives as polynomials of a = tanh(x): order 1: 1 - a^2, order 2: -2a + 2a^3. */
static void tanh_poly_backward(PrtTape *t, const void *ctx, const int *in, int nin, int out) {
    int order = ((const Act *)ctx)->order;
    const double *a = prt_tape_val(t, in[0]), *ybar = prt_tape_adj(t, out);
    double *abar = prt_tape_adj(t, in[0]);
    long len = prt_tape_len(t, out);
    for (long i = 0; i < len; i++) abar[i] += ybar[i] * (order == 1 ? -2 * a[i] : -2 + 6 * a[i] * a[i]);
}

static int act_values(PrtTape *t, PrtActivation act, int order, int x, int a) {
    Act c = {act, order};
    long len = prt_tape_len(t, x);
    if (act == PRT_ACT_TANH && order == 0) {
        int y = prt_tape_op(t, tanh_backward, &c, sizeof c, 1, &x, len);
        prt_vtanh(len, prt_tape_val(t, x), prt_tape_val(t, y));
        return y;
    }
    if (act == PRT_ACT_TANH && a >= 0) {
        int y = prt_tape_op(t, tanh_poly_backward, &c, sizeof c, 1, &a, len);
        const double *av = prt_tape_val(t, a);
        double *yv = prt_tape_val(t, y);
        for (long i = 0; i < len; i++) yv[i] = order == 1 ? 1 - av[i] * av[i] : -2 * av[i] * (1 - av[i] * av[i]);
        return y;
    }
    int y = prt_tape_op(t, act_backward, &c, sizeof c, 1, &x, len);
    act_array(act, order, len, prt_tape_val(t, x), prt_tape_val(t, y));
    return y;
}

int prt_op_act(PrtTape *t, PrtActivation act, int order, int x, int a, bool f32) {
    int y = act_values(t, act, order, x, a);
    if (f32) round_f32(prt_tape_len(t, y), prt_tape_val(t, y));
    return y;
}

int prt_op_tanh_exps(PrtTape *t, int x) {
    long len = prt_tape_len(t, x);
    int exps = prt_tape_values(t, 2 * len);
    double *e = prt_tape_val(t, exps);
    prt_vtanh_exps(len, prt_tape_val(t, x), e, e + len);
    return exps;
}

int prt_op_tanh_kept(PrtTape *t, int x, bool f32, int *exps) {
    long len = prt_tape_len(t, x);
    Act c = {PRT_ACT_TANH, 0};
    *exps = prt_op_tanh_exps(t, x);
    int y = prt_tape_op(t, tanh_backward, &c, sizeof c, 1, &x, len);
    double *yv = prt_tape_val(t, y);
    memcpy(yv, prt_tape_val(t, *exps) + len, sizeof(double) * (size_t)len); /* (the kept tanh stays unrounded) */
    if (f32) round_f32(len, yv);
    return y;
}

typedef struct Divided {
    PrtActivation act;
    int rows;
    long cols, a0, b0, n;
    int partials; /* tanh: dd, d dd/da and d dd/db (rows x n each) from the forward pass (prt_tape_values); else -1 */
} Divided;

static void act_divided_backward(PrtTape *t, const void *ctx, const int *in, int nin, int out) {
    const Divided *c = ctx;
    enum { BLOCK = 256 }; /* a row's a and b adjoints go through these, since its two ranges may overlap */
    double ga[BLOCK], gb[BLOCK];
    const double *x = prt_tape_val(t, in[0]), *g = prt_tape_val(t, in[1]), *ybar = prt_tape_adj(t, out);
    double *xbar = prt_tape_adj(t, in[0]), *gbar = prt_tape_adj(t, in[1]);
    for (int r = 0; r < c->rows; r++) {
        long row = r * c->n;
        const double *a = x + r * c->cols + c->a0, *b = x + r * c->cols + c->b0;
        double *abar = xbar + r * c->cols + c->a0, *bbar = xbar + r * c->cols + c->b0;
        for (long j0 = 0; j0 < c->n; j0 += BLOCK) {
            long m = c->n - j0 < BLOCK ? c->n - j0 : BLOCK, k = row + j0;
            if (c->partials >= 0) {
                const double *dd = prt_tape_val(t, c->partials), *da = dd + (long)c->rows * c->n, *db = da + (long)c->rows * c->n;
                prt_vtanh_divided_adjoints_of(m, dd + k, da + k, db + k, g + k, ybar + k, gbar + k, ga, gb);
            } else
                for (long j = 0; j < m; j++) {
                    double da, db, dd = prt_act_divided(c->act, a[j0 + j], b[j0 + j], &da, &db), w = ybar[k + j] * g[k + j];
                    gbar[k + j] += ybar[k + j] * dd;
                    ga[j] = w * da, gb[j] = w * db;
                }
            for (long j = 0; j < m; j++) abar[j0 + j] += ga[j];
            for (long j = 0; j < m; j++) bbar[j0 + j] += gb[j];
        }
    }
}

int prt_op_act_divided(PrtTape *t, PrtActivation act, int x, int rows, long cols, long a0, long b0, long n, int g,
                       int exps, bool f32) {
    /* tanh's partials are kept from the forward pass: its backward (once in training, once a
       coordinate in Newton's Jacobian) then takes no exponential (three a unit otherwise) */
    long len = (long)rows * n, xlen = (long)rows * cols;
    Divided c = {act, rows, cols, a0, b0, n, act == PRT_ACT_TANH ? prt_tape_values(t, 3 * len) : -1};
    int y = prt_tape_op(t, act_divided_backward, &c, sizeof c, 2, (int[]){x, g}, len);
    const double *xv = prt_tape_val(t, x), *gv = prt_tape_val(t, g);
    const double *e = act == PRT_ACT_TANH && exps >= 0 ? prt_tape_val(t, exps) : NULL, *th = e ? e + xlen : NULL;
    double *yv = prt_tape_val(t, y), *dd = c.partials >= 0 ? prt_tape_val(t, c.partials) : NULL;
    for (int r = 0; r < rows; r++) {
        long ra = r * cols + a0, rb = r * cols + b0;
        const double *a = xv + ra, *b = xv + rb, *gr = gv + r * n;
        double *yr = yv + r * n;
        if (e)
            prt_vtanh_divided_partials_kept(n, a, b, e + ra, th + ra, e + rb, th + rb, gr, yr, dd + r * n,
                                            dd + len + r * n, dd + 2 * len + r * n);
        else if (dd) prt_vtanh_divided_partials(n, a, b, gr, yr, dd + r * n, dd + len + r * n, dd + 2 * len + r * n);
        else
            for (long j = 0; j < n; j++) yr[j] = gr[j] * prt_act_divided(act, a[j], b[j], NULL, NULL);
    }
    if (f32) round_f32((long)rows * n, yv);
    return y;
}

typedef struct Mul {
    int rows;
} Mul;

/* y = a .* b and y += a .* b over n doubles: the elementwise products of the tangent passes,
   at the machine's vector width (their loops took a sixth of an LNN's training at -O2). */
PRT_SIMD_CLONES static void vec_mul(long n, const double *restrict a, const double *restrict b, double *restrict y) {
    for (long i = 0; i < n; i++) y[i] = a[i] * b[i];
}
PRT_SIMD_CLONES static void vec_mul_add(long n, const double *restrict a, const double *restrict b, double *restrict y) {
    for (long i = 0; i < n; i++) y[i] += a[i] * b[i];
}

/* a is rows x (k n), b rows x n (k = 1: the same shape). Row by row and direction by
   direction; the two adjoints in two calls, since they are one array when a is b. */
static void mul_backward(PrtTape *t, const void *ctx, const int *in, int nin, int out) {
    int rows = ((const Mul *)ctx)->rows;
    const double *a = prt_tape_val(t, in[0]), *b = prt_tape_val(t, in[1]), *ybar = prt_tape_adj(t, out);
    double *abar = prt_tape_adj(t, in[0]), *bbar = prt_tape_adj(t, in[1]);
    long n = prt_tape_len(t, in[1]) / rows, k = prt_tape_len(t, in[0]) / rows / n;
    for (int r = 0; r < rows; r++)
        for (long d = 0; d < k; d++) {
            long i0 = (r * k + d) * n;
            vec_mul_add(n, ybar + i0, b + r * n, abar + i0);
            vec_mul_add(n, ybar + i0, a + i0, bbar + r * n);
        }
}

int prt_op_mul(PrtTape *t, int a, int b, int rows, bool f32) {
    Mul m = {rows};
    long n = prt_tape_len(t, b) / rows, k = prt_tape_len(t, a) / rows / n;
    int y = prt_tape_op(t, mul_backward, &m, sizeof m, 2, (int[]){a, b}, prt_tape_len(t, a));
    const double *av = prt_tape_val(t, a), *bv = prt_tape_val(t, b);
    double *yv = prt_tape_val(t, y);
    for (int r = 0; r < rows; r++)
        for (long d = 0; d < k; d++) {
            long i0 = (r * k + d) * n;
            vec_mul(n, av + i0, bv + r * n, yv + i0);
        }
    if (f32) round_f32(prt_tape_len(t, y), yv);
    return y;
}

PRT_SIMD_CLONES static void vec_mul2_add(long n, const double *restrict a, const double *restrict b, const double *restrict c,
                                         const double *restrict d, double *restrict y) {
    for (long i = 0; i < n; i++) y[i] = a[i] * b[i] + c[i] * d[i];
}

/* a, c rows x (k n); b, d rows x n. Each adjoint in its own call (a may be c, b may be d). */
static void mul_add_backward(PrtTape *t, const void *ctx, const int *in, int nin, int out) {
    int rows = ((const Mul *)ctx)->rows;
    const double *a = prt_tape_val(t, in[0]), *b = prt_tape_val(t, in[1]), *c = prt_tape_val(t, in[2]),
                 *d = prt_tape_val(t, in[3]), *ybar = prt_tape_adj(t, out);
    double *abar = prt_tape_adj(t, in[0]), *bbar = prt_tape_adj(t, in[1]), *cbar = prt_tape_adj(t, in[2]),
           *dbar = prt_tape_adj(t, in[3]);
    long n = prt_tape_len(t, in[1]) / rows, k = prt_tape_len(t, in[0]) / rows / n;
    for (int r = 0; r < rows; r++)
        for (long j = 0; j < k; j++) {
            long i0 = (r * k + j) * n;
            vec_mul_add(n, ybar + i0, b + r * n, abar + i0);
            vec_mul_add(n, ybar + i0, a + i0, bbar + r * n);
            vec_mul_add(n, ybar + i0, d + r * n, cbar + i0);
            vec_mul_add(n, ybar + i0, c + i0, dbar + r * n);
        }
}

int prt_op_mul_add(PrtTape *t, int a, int b, int c, int d, int rows, bool f32) {
    Mul m = {rows};
    long n = prt_tape_len(t, b) / rows, k = prt_tape_len(t, a) / rows / n;
    int y = prt_tape_op(t, mul_add_backward, &m, sizeof m, 4, (int[]){a, b, c, d}, prt_tape_len(t, a));
    const double *av = prt_tape_val(t, a), *bv = prt_tape_val(t, b), *cv = prt_tape_val(t, c), *dv = prt_tape_val(t, d);
    double *yv = prt_tape_val(t, y);
    for (int r = 0; r < rows; r++)
        for (long j = 0; j < k; j++) {
            long i0 = (r * k + j) * n;
            vec_mul2_add(n, av + i0, bv + r * n, cv + i0, dv + r * n, yv + i0);
        }
    if (f32) round_f32(prt_tape_len(t, y), yv);
    return y;
}

typedef struct Columns {
    int rows;
    long cols, c0, ncols;
} Columns;

static void columns_backward(PrtTape *t, const void *ctx, const int *in, int nin, int out) {
    const Columns *c = ctx;
    const double *ybar = prt_tape_adj(t, out);
    double *xbar = prt_tape_adj(t, in[0]);
    for (int r = 0; r < c->rows; r++)
        for (long j = 0; j < c->ncols; j++) xbar[r * c->cols + c->c0 + j] += ybar[r * c->ncols + j];
}

int prt_op_columns(PrtTape *t, int x, int rows, long cols, long c0, long ncols) {
    Columns c = {rows, cols, c0, ncols};
    int y = prt_tape_op(t, columns_backward, &c, sizeof c, 1, &x, (long)rows * ncols);
    const double *xv = prt_tape_val(t, x);
    double *yv = prt_tape_val(t, y);
    for (int r = 0; r < rows; r++) memcpy(yv + r * ncols, xv + r * cols + c0, sizeof(double) * (size_t)ncols);
    return y;
}

typedef struct Tile {
    int rows, k;
    long cols;
} Tile;

static void tile_backward(PrtTape *t, const void *ctx, const int *in, int nin, int out) {
    const Tile *c = ctx;
    const double *ybar = prt_tape_adj(t, out);
    double *xbar = prt_tape_adj(t, in[0]);
    for (int r = 0; r < c->rows; r++)
        for (int d = 0; d < c->k; d++) {
            const double *yr = ybar + (r * c->k + d) * c->cols;
            double *xr = xbar + r * c->cols;
            for (long j = 0; j < c->cols; j++) xr[j] += yr[j];
        }
}

int prt_op_tile(PrtTape *t, int x, int rows, long cols, int k) {
    Tile c = {rows, k, cols};
    long kn = k * cols;
    int y = prt_tape_op(t, tile_backward, &c, sizeof c, 1, &x, rows * kn);
    const double *xv = prt_tape_val(t, x);
    double *yv = prt_tape_val(t, y);
    for (int r = 0; r < rows; r++)
        for (int d = 0; d < k; d++) memcpy(yv + r * kn + d * cols, xv + r * cols, sizeof(double) * (size_t)cols);
    return y;
}
