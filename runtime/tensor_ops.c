/* tensor_ops.c — the batched tape operations of tensor_ops.h: GEMMs for the layers, loops
   for the elementwise parts. */
#include "tensor_ops.h"

#include <cblas.h>
#include <math.h>
#include <string.h>

#include "vtanh.h"

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

/* ---- layers ---- */

typedef struct Affine {
    const double *W, *b;
    double *Wadj, *badj;
    int rows, inner;
    long cols;
    bool transposed;
} Affine;

static void affine_backward(PrtTape *t, const void *ctx, const int *in, int nin, int out) {
    const Affine *a = ctx;
    const double *x = prt_tape_val(t, in[0]), *ybar = prt_tape_adj(t, out);
    double *xbar = prt_tape_adj(t, in[0]);
    int M = a->rows, K = a->inner;
    long n = a->cols;
    prt_mlp_gemm_flops += (unsigned long long)(2.0 * M * K * n * (a->Wadj ? 2 : 1));
    if (!a->transposed) { /* y = W x: xbar += W^T ybar, Wbar += ybar x^T */
        cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, K, (int)n, M, 1, a->W, K, ybar, (int)n, 1, xbar, (int)n);
        if (a->Wadj) cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, K, (int)n, 1, ybar, (int)n, x, (int)n, 1, a->Wadj, K);
        if (a->badj)
            for (int r = 0; r < M; r++) {
                double s = 0;
                for (long c = 0; c < n; c++) s += ybar[r * n + c];
                a->badj[r] += s;
            }
    } else { /* y = W^T x: xbar += W ybar, Wbar += x ybar^T */
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, (int)n, K, 1, a->W, K, ybar, (int)n, 1, xbar, (int)n);
        if (a->Wadj) cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, K, (int)n, 1, x, (int)n, ybar, (int)n, 1, a->Wadj, K);
    }
}

int prt_op_affine(PrtTape *t, const double *W, double *Wadj, const double *b, double *badj, int rows, int inner,
                  int x, long cols) {
    Affine a = {W, b, Wadj, badj, rows, inner, cols, false};
    prt_mlp_gemm_flops += (unsigned long long)(2.0 * rows * inner * cols);
    int y = prt_tape_op(t, affine_backward, &a, sizeof a, 1, &x, (long)rows * cols);
    double *yv = prt_tape_val(t, y);
    if (b)
        for (int r = 0; r < rows; r++)
            for (long c = 0; c < cols; c++) yv[r * cols + c] = b[r];
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, (int)cols, inner, 1, W, inner, prt_tape_val(t, x),
                (int)cols, b ? 1 : 0, yv, (int)cols);
    return y;
}

int prt_op_affine_t(PrtTape *t, const double *W, double *Wadj, int rows, int inner, int x, long cols) {
    Affine a = {W, NULL, Wadj, NULL, rows, inner, cols, true};
    prt_mlp_gemm_flops += (unsigned long long)(2.0 * rows * inner * cols);
    int y = prt_tape_op(t, affine_backward, &a, sizeof a, 1, &x, (long)inner * cols);
    cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, inner, (int)cols, rows, 1, W, inner, prt_tape_val(t, x),
                (int)cols, 0, prt_tape_val(t, y), (int)cols);
    return y;
}

/* ---- elementwise ---- */

typedef struct Act {
    PrtActivation act;
    int order;
} Act;

static void act_backward(PrtTape *t, const void *ctx, const int *in, int nin, int out) {
    const Act *a = ctx;
    const double *x = prt_tape_val(t, in[0]), *ybar = prt_tape_adj(t, out);
    double *xbar = prt_tape_adj(t, in[0]);
    long len = prt_tape_len(t, out);
    for (long i = 0; i < len; i++) xbar[i] += ybar[i] * prt_act_derivative(a->act, a->order + 1, x[i]);
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

int prt_op_act(PrtTape *t, PrtActivation act, int order, int x, int a) {
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
    const double *xv = prt_tape_val(t, x);
    double *yv = prt_tape_val(t, y);
    for (long i = 0; i < len; i++) yv[i] = prt_act_derivative(act, order, xv[i]);
    return y;
}

typedef struct Mul {
    int rows;
} Mul;

/* a is rows x (k n), b rows x n (k = 1: the same shape). */
static void mul_backward(PrtTape *t, const void *ctx, const int *in, int nin, int out) {
    int rows = ((const Mul *)ctx)->rows;
    const double *a = prt_tape_val(t, in[0]), *b = prt_tape_val(t, in[1]), *ybar = prt_tape_adj(t, out);
    double *abar = prt_tape_adj(t, in[0]), *bbar = prt_tape_adj(t, in[1]);
    long n = prt_tape_len(t, in[1]) / rows, kn = prt_tape_len(t, in[0]) / rows;
    for (int r = 0; r < rows; r++)
        for (long c = 0; c < kn; c++) {
            long i = r * kn + c, j = r * n + c % n;
            abar[i] += ybar[i] * b[j];
            bbar[j] += ybar[i] * a[i];
        }
}

int prt_op_mul(PrtTape *t, int a, int b, int rows) {
    Mul m = {rows};
    long kn = prt_tape_len(t, a) / rows, n = prt_tape_len(t, b) / rows;
    int y = prt_tape_op(t, mul_backward, &m, sizeof m, 2, (int[]){a, b}, prt_tape_len(t, a));
    const double *av = prt_tape_val(t, a), *bv = prt_tape_val(t, b);
    double *yv = prt_tape_val(t, y);
    for (int r = 0; r < rows; r++)
        for (long c = 0; c < kn; c++) yv[r * kn + c] = av[r * kn + c] * bv[r * n + c % n];
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
    long kn = c->k * c->cols;
    for (int r = 0; r < c->rows; r++)
        for (long j = 0; j < kn; j++) xbar[r * c->cols + j % c->cols] += ybar[r * kn + j];
}

int prt_op_tile(PrtTape *t, int x, int rows, long cols, int k) {
    Tile c = {rows, k, cols};
    long kn = k * cols;
    int y = prt_tape_op(t, tile_backward, &c, sizeof c, 1, &x, rows * kn);
    const double *xv = prt_tape_val(t, x);
    double *yv = prt_tape_val(t, y);
    for (int r = 0; r < rows; r++)
        for (long j = 0; j < kn; j++) yv[r * kn + j] = xv[r * cols + j % cols];
    return y;
}
