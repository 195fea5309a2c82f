/* mlp.c — MLP passes as GEMMs (cblas_dgemm): forward, input gradient, and the reverse
   sweep through both (see mlp.h). Arrays are feature-major (size x n): one row per unit,
   one column per state, the kernels' structure-of-arrays layout. Written per state
   (row vectors), with z_l = a_{l-1} W_l^T + b_l, a_l = s(z_l):
     backward:  delta_L = 1;  g_{l-1} = delta_l W_l;  delta_{l-1} = g_{l-1} * s'(z_{l-1});  dV/dx = g_0
     S = sum u . g_0, swept back through the backward pass (l = 1..L):
       W_l bar += delta_l^T gbar_{l-1};  deltabar_l = gbar_{l-1} W_l^T;
       gbar_l = deltabar_l * s'(z_l);  zbar_l += deltabar_l * g_l * s''(z_l)
     then back through the forward pass (l = L-1..1, and 0 for the inputs):
       W_{l+1} bar += zbar_{l+1}^T a_l;  b_{l+1} bar += sum zbar_{l+1};  abar_l = zbar_{l+1} W_{l+1};
       zbar_l += abar_l * s'(z_l);  xbar = abar_0 */
#include "mlp.h"

#include <cblas.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

double prt_mlp_gemm_flops;

/* cblas_dgemm, counting its floating-point operations (2 M N K) for the benchmark's GFLOP/s. */
static void gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int M, int N, int K, double alpha, const double *A, int lda,
                 const double *B, int ldb, double beta, double *C, int ldc) {
    prt_mlp_gemm_flops += 2.0 * M * N * K;
    cblas_dgemm(CblasRowMajor, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

long prt_mlp_nparams(const PrtMlp *m) {
    long n = 0;
    for (int l = 1; l <= m->nlayers; l++) n += (long)m->size[l] * m->size[l - 1] + m->size[l];
    return n;
}

static double *weights(const PrtMlp *m, double *theta, int l) { /* W_l, then b_l follows */
    long off = 0;
    for (int k = 1; k < l; k++) off += (long)m->size[k] * m->size[k - 1] + m->size[k];
    return theta + off;
}

void prt_mlp_init(const PrtMlp *m, double *theta, PrtRng *rng) {
    for (int l = 1; l <= m->nlayers; l++) {
        int rows = m->size[l], cols = m->size[l - 1];
        double *W = weights(m, theta, l);
        /* Gram-Schmidt on the longer side's vectors: orthonormal rows if rows <= cols, else columns */
        bool by_rows = rows <= cols;
        int nvec = by_rows ? rows : cols, len = by_rows ? cols : rows;
        for (int i = 0; i < rows * cols; i++) W[i] = prt_rng_normal(rng);
#define AT(v, k) (*(by_rows ? &W[(long)(v) * cols + (k)] : &W[(long)(k) * cols + (v)]))
        for (int v = 0; v < nvec; v++) {
            for (int u = 0; u < v; u++) {
                double d = 0;
                for (int k = 0; k < len; k++) d += AT(v, k) * AT(u, k);
                for (int k = 0; k < len; k++) AT(v, k) -= d * AT(u, k);
            }
            double nrm = 0;
            for (int k = 0; k < len; k++) nrm += AT(v, k) * AT(v, k);
            nrm = sqrt(nrm);
            for (int k = 0; k < len; k++) AT(v, k) /= nrm;
        }
#undef AT
        memset(W + (long)rows * cols, 0, sizeof(double) * (size_t)rows);
    }
}

static void act(PrtActivation a, long len, const double *z, double *s, double *ds, double *dds) {
    for (long i = 0; i < len; i++) {
        double x = z[i], v, d1, d2;
        if (a == PRT_ACT_TANH) {
            v = tanh(x);
            d1 = 1 - v * v;
            d2 = -2 * v * d1;
        } else {
            double sg = x >= 0 ? 1 / (1 + exp(-x)) : exp(x) / (1 + exp(x));
            if (a == PRT_ACT_SOFTPLUS) {
                v = x > 30 ? x : log1p(exp(x));
                d1 = sg;
                d2 = sg * (1 - sg);
            } else { /* SiLU x s(x) */
                v = x * sg;
                d1 = sg + x * sg * (1 - sg);
                d2 = sg * (1 - sg) * (2 + x * (1 - 2 * sg));
            }
        }
        if (s) s[i] = v;
        if (ds) ds[i] = d1;
        if (dds) dds[i] = d2;
    }
}

static void work_reserve(const PrtMlp *m, long n, PrtMlpWork *w) {
    if (w->n >= n) return;
    prt_mlp_work_free(w);
    w->n = n;
    int maxw = 0;
    for (int l = 0; l <= m->nlayers; l++) {
        size_t bytes = sizeof(double) * (size_t)(n * m->size[l]);
        w->z[l] = malloc(bytes), w->a[l] = malloc(bytes), w->delta[l] = malloc(bytes), w->g[l] = malloc(bytes);
        w->zbar[l] = malloc(bytes), w->gbar[l] = malloc(bytes), w->ds[l] = malloc(bytes), w->dds[l] = malloc(bytes);
        if (m->size[l] > maxw) maxw = m->size[l];
    }
    w->tmp = malloc(sizeof(double) * (size_t)(n * maxw));
}

void prt_mlp_work_free(PrtMlpWork *w) {
    for (int l = 0; l <= PRT_MLP_MAX_LAYERS; l++) {
        free(w->z[l]), free(w->a[l]), free(w->delta[l]), free(w->g[l]), free(w->zbar[l]), free(w->gbar[l]);
        free(w->ds[l]), free(w->dds[l]);
        w->z[l] = w->a[l] = w->delta[l] = w->g[l] = w->zbar[l] = w->gbar[l] = w->ds[l] = w->dds[l] = NULL;
    }
    free(w->tmp);
    w->tmp = NULL;
    w->n = 0;
}

void prt_mlp_value_grad(const PrtMlp *m, const double *theta, long n, const double *x, double *v, double *grad,
                        PrtMlpWork *w) {
    int L = m->nlayers;
    work_reserve(m, n, w);
    memcpy(w->a[0], x, sizeof(double) * (size_t)(n * m->size[0]));
    for (int l = 1; l <= L; l++) { /* z_l = a_{l-1} W_l^T + b_l */
        int out = m->size[l], in = m->size[l - 1];
        const double *W = weights(m, (double *)theta, l), *b = W + (long)out * in;
        for (int j = 0; j < out; j++) /* Z_l = W_l A_{l-1} + b_l */
            for (long r = 0; r < n; r++) w->z[l][j * n + r] = b[j];
        gemm(CblasNoTrans, CblasNoTrans, out, (int)n, in, 1.0, W, in, w->a[l - 1], (int)n, 1.0, w->z[l],
                    (int)n);
        if (l < L) act(m->act, n * out, w->z[l], w->a[l], w->ds[l], w->dds[l]);
    }
    if (v) memcpy(v, w->z[L], sizeof(double) * (size_t)n);
    /* backward: delta_L = 1 */
    for (long r = 0; r < n; r++) w->delta[L][r] = 1;
    for (int l = L; l >= 1; l--) {
        int out = m->size[l], in = m->size[l - 1];
        const double *W = weights(m, (double *)theta, l);
        /* G_{l-1} = W_l^T Delta_l */
        gemm(CblasTrans, CblasNoTrans, in, (int)n, out, 1.0, W, in, w->delta[l], (int)n, 0.0, w->g[l - 1],
                    (int)n);
        if (l - 1 >= 1) {
            const double *ds = w->ds[l - 1];
            for (long i = 0; i < n * in; i++) w->delta[l - 1][i] = w->g[l - 1][i] * ds[i];
        }
    }
    if (grad) memcpy(grad, w->g[0], sizeof(double) * (size_t)(n * m->size[0]));
}

void prt_mlp_grad_vjp(const PrtMlp *m, const double *theta, long n, const double *x, const double *u, double *xbar,
                      double *thetabar, PrtMlpWork *w) {
    (void)x; /* the forward pass kept a_0 = x in w */
    int L = m->nlayers;
    double *t = w->tmp;
    for (int l = 0; l <= L; l++) memset(w->zbar[l], 0, sizeof(double) * (size_t)(n * m->size[l]));
    memcpy(w->gbar[0], u, sizeof(double) * (size_t)(n * m->size[0]));
    /* back through the backward pass, l = 1..L */
    for (int l = 1; l <= L; l++) {
        int out = m->size[l], in = m->size[l - 1];
        const double *W = weights(m, (double *)theta, l);
        double *Wbar = weights(m, thetabar, l);
        /* Wbar_l += Delta_l Gbar_{l-1}^T */
        gemm(CblasNoTrans, CblasTrans, out, in, (int)n, 1.0, w->delta[l], (int)n, w->gbar[l - 1],
                    (int)n, 1.0, Wbar, in);
        if (l == L) break; /* delta_L = 1 is a constant */
        /* Deltabar_l = W_l Gbar_{l-1} */
        gemm(CblasNoTrans, CblasNoTrans, out, (int)n, in, 1.0, W, in, w->gbar[l - 1], (int)n, 0.0, t,
                    (int)n);
        const double *ds = w->ds[l], *dds = w->dds[l];
        for (long i = 0; i < n * out; i++) {
            w->zbar[l][i] += t[i] * w->g[l][i] * dds[i];
            w->gbar[l][i] = t[i] * ds[i];
        }
    }
    /* back through the forward pass: S does not depend on z_L, so start from zbar_{L-1} */
    for (int l = L - 2; l >= 0; l--) {
        int out = m->size[l + 1], in = m->size[l];
        const double *W = weights(m, (double *)theta, l + 1);
        double *Wbar = weights(m, thetabar, l + 1), *bbar = Wbar + (long)out * in;
        /* Wbar_{l+1} += Zbar_{l+1} A_l^T;  bbar += row sums;  Abar_l = W_{l+1}^T Zbar_{l+1} */
        gemm(CblasNoTrans, CblasTrans, out, in, (int)n, 1.0, w->zbar[l + 1], (int)n, w->a[l], (int)n,
                    1.0, Wbar, in);
        for (int j = 0; j < out; j++)
            for (long r = 0; r < n; r++) bbar[j] += w->zbar[l + 1][j * n + r];
        gemm(CblasTrans, CblasNoTrans, in, (int)n, out, 1.0, W, in, w->zbar[l + 1], (int)n, 0.0, t,
                    (int)n);
        if (l >= 1) {
            const double *ds = w->ds[l];
            for (long i = 0; i < n * in; i++) w->zbar[l][i] += t[i] * ds[i];
        } else {
            for (long i = 0; i < n * in; i++) xbar[i] += t[i];
        }
    }
}
