/* test_gemm_plain.c — runtime/deploy/gemm_plain.c (the BLAS-free GEMM an emitted model can
   link) against OpenBLAS: both layouts, all four transposes, beta 0 (C not read: it holds
   NaNs), 1 and -0.5, leading dimensions wider than the matrices, sizes that fit no vector
   width, in double and in float. */
#define GEMM_PLAIN_NAME(name) plain_##name
#include "../../runtime/deploy/gemm_plain.c"

#include <math.h>
#include <stdlib.h>

#include "check.h"
#include "math/rng.h"

/* max |a - b| over an m x n block stored with leading dimension ld, over `scale`, the size
   of the terms summed (cancellation can leave an entry much smaller than its terms) */
#define MAX_DIFF(T, name)                                                                     \
    static double name(const T *a, const T *b, long rows, long cols, long ld, double scale) { \
        double num = 0;                                                                       \
        for (long i = 0; i < rows; i++)                                                       \
            for (long j = 0; j < cols; j++) {                                                 \
                double x = a[i * ld + j], y = b[i * ld + j];                                  \
                if (!isfinite(x) || !isfinite(y)) return INFINITY;                            \
                num = fmax(num, fabs(x - y));                                                 \
            }                                                                                 \
        return num / scale;                                                                   \
    }
MAX_DIFF(double, rel_diff_d)
MAX_DIFF(float, rel_diff_s)

/* One configuration in both precisions; the stored extents follow the layout (a row-major
   C is M rows of ldc, a column-major one N columns of ldc). */
static void compare(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE ta, enum CBLAS_TRANSPOSE tb, int M, int N, int K,
                    double alpha, double beta, PrtRng *rng, double *worst_d, double *worst_s) {
    int row = order == CblasRowMajor;
    /* op(A) is M x K, op(B) K x N; stored A is (ta ? K x M : M x K) in the layout */
    int ar = ta == CblasNoTrans ? M : K, ac = ta == CblasNoTrans ? K : M;
    int br = tb == CblasNoTrans ? K : N, bc = tb == CblasNoTrans ? N : K;
    int lda = (row ? ac : ar) + 3, ldb = (row ? bc : br) + 2, ldc = (row ? N : M) + 1;
    long na = (long)lda * (row ? ar : ac), nb = (long)ldb * (row ? br : bc), nc = (long)ldc * (row ? M : N);
    double *A = malloc(sizeof(double) * na), *B = malloc(sizeof(double) * nb), *C1 = malloc(sizeof(double) * nc),
           *C2 = malloc(sizeof(double) * nc);
    float *Af = malloc(sizeof(float) * na), *Bf = malloc(sizeof(float) * nb), *C1f = malloc(sizeof(float) * nc),
          *C2f = malloc(sizeof(float) * nc);
    for (long i = 0; i < na; i++) Af[i] = (float)(A[i] = prt_rng_normal(rng));
    for (long i = 0; i < nb; i++) Bf[i] = (float)(B[i] = prt_rng_normal(rng));
    for (long i = 0; i < nc; i++) C1f[i] = C2f[i] = (float)(C1[i] = C2[i] = beta == 0 ? NAN : prt_rng_normal(rng));
    double amax = 0, bmax = 0, cmax = 0;
    for (long i = 0; i < na; i++) amax = fmax(amax, fabs(A[i]));
    for (long i = 0; i < nb; i++) bmax = fmax(bmax, fabs(B[i]));
    for (long i = 0; beta != 0 && i < nc; i++) cmax = fmax(cmax, fabs(C1[i]));
    double scale = fabs(alpha) * K * amax * bmax + fabs(beta) * cmax;
    cblas_dgemm(order, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C1, ldc);
    plain_cblas_dgemm(order, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C2, ldc);
    cblas_sgemm(order, ta, tb, M, N, K, (float)alpha, Af, lda, Bf, ldb, (float)beta, C1f, ldc);
    plain_cblas_sgemm(order, ta, tb, M, N, K, (float)alpha, Af, lda, Bf, ldb, (float)beta, C2f, ldc);
    long rows = row ? M : N, cols = row ? N : M;
    double d = rel_diff_d(C2, C1, rows, cols, ldc, scale), s = rel_diff_s(C2f, C1f, rows, cols, ldc, scale);
    CHECK(d < 1e-15, "dgemm order %d ta %d tb %d %dx%dx%d beta %g: relative difference %g", order, ta, tb, M, N, K, beta, d);
    CHECK(s < 3e-7, "sgemm order %d ta %d tb %d %dx%dx%d beta %g: relative difference %g", order, ta, tb, M, N, K, beta, s);
    *worst_d = fmax(*worst_d, d), *worst_s = fmax(*worst_s, s);
    free(A), free(B), free(C1), free(C2), free(Af), free(Bf), free(C1f), free(C2f);
}

int main(void) {
    PrtRng rng;
    prt_rng_seed(&rng, 11);
    const enum CBLAS_ORDER orders[2] = {CblasRowMajor, CblasColMajor};
    const enum CBLAS_TRANSPOSE trans[2] = {CblasNoTrans, CblasTrans};
    const int sizes[3][3] = {{1, 1, 1}, {7, 13, 5}, {33, 17, 65}};
    const double betas[3] = {0, 1, -0.5};
    double worst_d = 0, worst_s = 0;
    int n = 0;
    for (int o = 0; o < 2; o++)
        for (int a = 0; a < 2; a++)
            for (int b = 0; b < 2; b++)
                for (int z = 0; z < 3; z++)
                    for (int e = 0; e < 3; e++, n++)
                        compare(orders[o], trans[a], trans[b], sizes[z][0], sizes[z][1], sizes[z][2], 0.75, betas[e], &rng,
                                &worst_d, &worst_s);
    printf("  %d configurations: worst relative difference from OpenBLAS %.1e (dgemm), %.1e (sgemm)\n", n, worst_d, worst_s);
    printf("test_gemm_plain: %s (%d failures)\n", failures ? "FAIL" : "ok", failures);
    return failures != 0;
}
