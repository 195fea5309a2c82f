/* mlp.c — MLP passes as GEMMs (cblas_dgemm, or cblas_sgemm in f32): forward, input
   gradient, and the reverse sweep through both (see mlp.h; the passes are in
   mlp_passes.h, written once for both precisions). Arrays are feature-major (size x n): one row per unit,
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
#include "core/alloc.h"

#include "math/simd_clones.h"
#include "vtanh.h"
#include "vsilu.h"

#include <cblas.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

_Atomic unsigned long long prt_mlp_gemm_flops;

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
        double bound = 1 / sqrt((double)cols); /* torch.nn.Linear's bias: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) */
        for (int i = 0; i < rows; i++) W[(long)rows * cols + i] = bound * (2 * prt_rng_uniform(rng) - 1);
        if (m->zero_biases) /* (drawn, then zeroed: the weights' draws stay those of the default) */
            for (int i = 0; i < rows; i++) W[(long)rows * cols + i] = 0;
    }
}

/* The BLAS calls, counting their floating-point operations (2 M N K) for the benchmark. */
static void gemm_d(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int M, int N, int K, double alpha, const double *A, int lda,
                   const double *B, int ldb, double beta, double *C, int ldc) {
    prt_mlp_gemm_flops += 2ull * (unsigned long long)M * (unsigned long long)N * (unsigned long long)K;
    cblas_dgemm(CblasRowMajor, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

static void gemm_f(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int M, int N, int K, float alpha, const float *A, int lda,
                   const float *B, int ldb, float beta, float *C, int ldc) {
    prt_mlp_gemm_flops += 2ull * (unsigned long long)M * (unsigned long long)N * (unsigned long long)K;
    cblas_sgemm(CblasRowMajor, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

#define REAL double
#define NAME(f) f##_d
#define GEMM gemm_d
#define FN(f) f
#define VTANH prt_vtanh
#include "mlp_passes.h"
#undef VTANH
#undef REAL
#undef NAME
#undef GEMM
#undef FN

#define REAL float
#define NAME(f) f##_f
#define GEMM gemm_f
#define FN(fn) fn##f
#define VTANH prt_vtanhf
#define VSILU prt_vsiluf
#include "mlp_passes.h"
#undef VSILU
#undef VTANH
#undef REAL
#undef NAME
#undef GEMM
#undef FN

/* p grown to at least bytes (its contents are not kept). */
static void *grow(void *p, size_t *cap, size_t bytes) {
    if (*cap >= bytes) return p;
    free(p);
    *cap = bytes;
    return prt_xalloc(bytes, 1, "MLP activations");
}

static void scratch_reserve(const PrtMlp *m, long n, size_t elem, PrtMlpScratch *s) {
    int maxw = 0;
    for (int l = 0; l <= m->nlayers; l++) {
        size_t bytes = elem * (size_t)(n * m->size[l]);
        if (s->cap[l] < bytes) { /* z, zbar and gbar of a layer have the same size */
            free(s->z[l]), free(s->zbar[l]), free(s->gbar[l]);
            s->z[l] = prt_xalloc(bytes, 1, "MLP activations");
            s->zbar[l] = prt_xalloc(bytes, 1, "MLP activations");
            s->gbar[l] = prt_xalloc(bytes, 1, "MLP activations");
            s->cap[l] = bytes;
        }
        if (m->size[l] > maxw) maxw = m->size[l];
    }
    s->tmp = grow(s->tmp, &s->tmp_cap, elem * (size_t)(n * maxw));
}

void prt_mlp_scratch_free(PrtMlpScratch *s) {
    for (int l = 0; l <= PRT_MLP_MAX_LAYERS; l++) free(s->z[l]), free(s->zbar[l]), free(s->gbar[l]);
    free(s->tmp);
    for (int k = 0; k < PRT_MLP_SCRATCH_NETS; k++) free(s->net[k].theta_f), free(s->net[k].thetabar_f);
    memset(s, 0, sizeof *s);
}

void prt_mlp_scratch_forget_weights(PrtMlpScratch *s) {
    for (int k = 0; k < PRT_MLP_SCRATCH_NETS; k++) s->net[k].theta_valid = false;
}

PRT_SIMD_CLONES static void widen_add(long len, const float *restrict from, double *restrict to) {
    for (long i = 0; i < len; i++) to[i] += from[i];
}

PRT_SIMD_CLONES static void round_to_float(long len, const double *restrict from, float *restrict to) {
    for (long i = 0; i < len; i++) to[i] = (float)from[i];
}

static void flush_net(PrtMlpFloatWeights *f) {
    if (!f->thetabar_dst) return;
    widen_add(f->thetabar_len, f->thetabar_f, f->thetabar_dst);
    f->thetabar_dst = NULL;
}

void prt_mlp_scratch_flush(PrtMlpScratch *s) {
    for (int k = 0; k < PRT_MLP_SCRATCH_NETS; k++) flush_net(&s->net[k]);
}

/* theta in float. A forward pass on a scratch of its own rounds it (theta may have changed
   since the last call); one on a shared scratch rounds it once per recording (its owner
   says when theta may have changed); a reverse sweep reuses its forward pass's rounding.
   Each network's weights keep a slot (the first free, else the first) while it lasts. */
static const float *float_weights(const PrtMlp *m, const double *theta, PrtMlpScratch *s, bool forward) {
    long len = prt_mlp_nparams(m);
    PrtMlpFloatWeights *f = NULL;
    for (int k = 0; k < PRT_MLP_SCRATCH_NETS && !f; k++)
        if (s->net[k].theta_valid && s->net[k].theta_src == theta && s->net[k].theta_len == len) f = &s->net[k];
    if (f && (s->shared || !forward)) return f->theta_f;
    for (int k = 0; k < PRT_MLP_SCRATCH_NETS && !f; k++)
        if (!s->net[k].theta_valid) f = &s->net[k];
    if (!f) f = &s->net[0];
    f->theta_f = grow(f->theta_f, &f->theta_cap, sizeof(float) * (size_t)len);
    round_to_float(len, theta, f->theta_f);
    f->theta_src = theta, f->theta_len = len, f->theta_valid = true;
    return f->theta_f;
}

/* Where the float weight adjoint of this call goes: the array already accumulating for
   the same destination, else a zeroed one (a free slot's, else the first's, flushed). */
static float *float_weight_adjoint(const PrtMlp *m, double *thetabar, PrtMlpScratch *s) {
    long len = prt_mlp_nparams(m);
    PrtMlpFloatWeights *f = NULL;
    for (int k = 0; k < PRT_MLP_SCRATCH_NETS; k++)
        if (s->net[k].thetabar_dst == thetabar && s->net[k].thetabar_len == len) return s->net[k].thetabar_f;
    for (int k = 0; k < PRT_MLP_SCRATCH_NETS && !f; k++)
        if (!s->net[k].thetabar_dst) f = &s->net[k];
    if (!f) f = &s->net[0];
    flush_net(f); /* pending adjoints of another destination */
    f->thetabar_f = grow(f->thetabar_f, &f->thetabar_cap, sizeof(float) * (size_t)len);
    memset(f->thetabar_f, 0, sizeof(float) * (size_t)len);
    f->thetabar_dst = thetabar, f->thetabar_len = len;
    return f->thetabar_f;
}

static PrtMlpScratch *scratch_of(PrtMlpWork *w) { return w->scratch ? w->scratch : &w->own_scratch; }

/* Two arrays of one size, p and q, grown to at least bytes together. */
static void grow_pair(void **p, void **q, size_t *cap, size_t bytes) {
    if (*cap >= bytes) return;
    size_t c = *cap;
    *p = grow(*p, &c, bytes);
    *q = grow(*q, cap, bytes);
}

/* w's arrays for n states of m: a (with s' and s'' for softplus and SiLU, which the
   forward pass computes together), and with grad the backward pass's delta and g. */
static void work_reserve(const PrtMlp *m, long n, PrtMlpWork *w, bool grad) {
    size_t elem = m->f32 ? sizeof(float) : sizeof(double);
    for (int l = 0; l <= m->nlayers; l++) {
        size_t bytes = elem * (size_t)(n * m->size[l]);
        w->a[l] = grow(w->a[l], &w->cap[l], bytes);
        if (m->act != PRT_ACT_TANH) grow_pair(&w->ds[l], &w->dds[l], &w->dcap[l], bytes);
        if (grad) grow_pair(&w->delta[l], &w->g[l], &w->gcap[l], bytes);
    }
    PrtMlpScratch *s = scratch_of(w);
    scratch_reserve(m, n, elem, s);
    for (int l = 0; l <= m->nlayers; l++) w->z[l] = s->z[l], w->zbar[l] = s->zbar[l], w->gbar[l] = s->gbar[l];
    w->tmp = s->tmp;
}

size_t prt_mlp_work_bytes(const PrtMlp *m, long n, bool grad) {
    size_t elem = m->f32 ? sizeof(float) : sizeof(double), per = 0;
    for (int l = 0; l <= m->nlayers; l++) per += (size_t)m->size[l];
    return elem * (size_t)n * per * (1 + (m->act != PRT_ACT_TANH ? 2 : 0) + (grad ? 2 : 0)); /* as work_reserve */
}

void prt_mlp_work_free(PrtMlpWork *w) {
    for (int l = 0; l <= PRT_MLP_MAX_LAYERS; l++) {
        free(w->a[l]), free(w->delta[l]), free(w->g[l]), free(w->ds[l]), free(w->dds[l]);
    }
    prt_mlp_scratch_free(&w->own_scratch);
    memset(w, 0, sizeof *w);
}

void prt_mlp_value_grad(const PrtMlp *m, const double *theta, long n, const double *x, double *v, double *grad,
                        PrtMlpWork *w) {
    work_reserve(m, n, w, true);
    long nin = n * m->size[0];
    if (!m->f32) {
        memcpy(w->a[0], x, sizeof(double) * (size_t)nin);
        value_grad_d(m, theta, n, w);
        if (v) memcpy(v, w->z[m->nlayers], sizeof(double) * (size_t)n);
        if (grad) memcpy(grad, w->g[0], sizeof(double) * (size_t)nin);
        return;
    }
    /* f32: the inputs rounded, the results widened back */
    round_to_float(nin, x, w->a[0]);
    value_grad_f(m, float_weights(m, theta, scratch_of(w), true), n, w);
    const float *z = w->z[m->nlayers], *g0 = w->g[0];
    for (long i = 0; v && i < n; i++) v[i] = z[i];
    for (long i = 0; grad && i < nin; i++) grad[i] = g0[i];
}

void prt_mlp_grad_vjp(const PrtMlp *m, const double *theta, long n, const double *x, const double *u, double *xbar,
                      double *thetabar, PrtMlpWork *w) {
    (void)x; /* the forward pass kept a_0 = x in w */
    work_reserve(m, n, w, true); /* the scratch's arrays for this call */
    long nin = n * m->size[0];
    bool hessian = m->nlayers >= 2; /* with no hidden layer dV/dx does not depend on x */
    if (!m->f32) {
        memcpy(w->gbar[0], u, sizeof(double) * (size_t)nin);
        grad_vjp_d(m, theta, n, thetabar, w);
        const double *t = w->tmp;
        for (long i = 0; hessian && i < nin; i++) xbar[i] += t[i];
        return;
    }
    PrtMlpScratch *s = scratch_of(w);
    round_to_float(nin, u, w->gbar[0]);
    grad_vjp_f(m, float_weights(m, theta, s, false), n, float_weight_adjoint(m, thetabar, s), w);
    const float *t = w->tmp;
    for (long i = 0; hessian && i < nin; i++) xbar[i] += t[i];
    if (!s->shared) prt_mlp_scratch_flush(s);
}

void prt_mlp_forward(const PrtMlp *m, const double *theta, long n, const double *x, double *y, PrtMlpWork *w) {
    work_reserve(m, n, w, false);
    int L = m->nlayers;
    long nin = n * m->size[0], nout = n * m->size[L];
    if (!m->f32) {
        memcpy(w->a[0], x, sizeof(double) * (size_t)nin);
        forward_d(m, theta, n, w);
        memcpy(y, w->z[L], sizeof(double) * (size_t)nout);
        return;
    }
    round_to_float(nin, x, w->a[0]);
    forward_f(m, float_weights(m, theta, scratch_of(w), true), n, w);
    const float *z = w->z[L];
    for (long i = 0; i < nout; i++) y[i] = z[i];
}

void prt_mlp_vjp(const PrtMlp *m, const double *theta, long n, const double *ybar, double *xbar, double *thetabar,
                 PrtMlpWork *w) {
    work_reserve(m, n, w, false); /* the scratch's arrays for this call */
    int L = m->nlayers;
    long nin = n * m->size[0], nout = n * m->size[L];
    if (!m->f32) {
        memcpy(w->zbar[L], ybar, sizeof(double) * (size_t)nout);
        vjp_d(m, theta, n, thetabar, w);
        const double *t = w->tmp;
        for (long i = 0; xbar && i < nin; i++) xbar[i] += t[i];
        return;
    }
    PrtMlpScratch *s = scratch_of(w);
    round_to_float(nout, ybar, w->zbar[L]);
    vjp_f(m, float_weights(m, theta, s, false), n, thetabar ? float_weight_adjoint(m, thetabar, s) : NULL, w);
    const float *t = w->tmp;
    for (long i = 0; xbar && i < nin; i++) xbar[i] += t[i];
    if (!s->shared) prt_mlp_scratch_flush(s);
}
