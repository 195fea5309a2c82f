/* gemm_plain.c — cblas_dgemm and cblas_sgemm in plain C: the two BLAS calls the runtime
   makes (the MLP passes, runtime/nn/mlp.c), for programs that ship a trained model without
   OpenBLAS (`physc emit-c --params`). Link build/libgemm_plain.a in place of -lopenblas:

       cc -O2 -std=c17 -Iruntime model.c build/libphysrt.a build/libgemm_plain.a -lm

   The products equal OpenBLAS's up to rounding (the sums run in another order); one thread,
   loops the compiler vectorizes, no blocking: meant for rollouts, not for training. Not part
   of libphysrt.a, whose programs use OpenBLAS. The prototypes are cblas.h's. */
#include <cblas.h>

/* The test compiles this file with its own names, to compare with OpenBLAS in one program. */
#ifndef GEMM_PLAIN_NAME
#define GEMM_PLAIN_NAME(name) name
#endif

/* C = alpha op(A) op(B) + beta C, row-major; column-major calls come here transposed
   (C^T = op(B)^T op(A)^T). As BLAS, beta = 0 overwrites C without reading it. */
#define GEMM_ROW_MAJOR(T, name)                                                                                  \
    static void name(int ta, int tb, long M, long N, long K, T alpha, const T *A, long lda, const T *B, long ldb, \
                     T beta, T *C, long ldc) {                                                                   \
        for (long i = 0; i < M; i++) {                                                                           \
            T *c = C + i * ldc;                                                                                  \
            for (long j = 0; j < N; j++) c[j] = beta == 0 ? 0 : beta * c[j];                                     \
            if (!tb) { /* row i of C gathers rows of B: unit stride, vectorized over j */                        \
                for (long k = 0; k < K; k++) {                                                                   \
                    T a = alpha * (ta ? A[k * lda + i] : A[i * lda + k]);                                        \
                    const T *b = B + k * ldb;                                                                    \
                    for (long j = 0; j < N; j++) c[j] += a * b[j];                                               \
                }                                                                                                \
            } else { /* op(B)(k, j) = B[j][k]: a dot product per element */                                      \
                for (long j = 0; j < N; j++) {                                                                   \
                    const T *b = B + j * ldb;                                                                    \
                    T s = 0;                                                                                     \
                    if (ta)                                                                                      \
                        for (long k = 0; k < K; k++) s += A[k * lda + i] * b[k];                                 \
                    else                                                                                         \
                        for (long k = 0; k < K; k++) s += A[i * lda + k] * b[k];                                 \
                    c[j] += alpha * s;                                                                           \
                }                                                                                                \
            }                                                                                                    \
        }                                                                                                        \
    }

GEMM_ROW_MAJOR(double, gemm_row_d)
GEMM_ROW_MAJOR(float, gemm_row_s)

#define GEMM_CBLAS(T, cname, row)                                                                                \
    void GEMM_PLAIN_NAME(cname)(const enum CBLAS_ORDER order, const enum CBLAS_TRANSPOSE transa,                 \
                                const enum CBLAS_TRANSPOSE transb, const blasint M, const blasint N,             \
                                const blasint K, const T alpha, const T *A, const blasint lda, const T *B,       \
                                const blasint ldb, const T beta, T *C, const blasint ldc) {                      \
        int ta = transa != CblasNoTrans, tb = transb != CblasNoTrans;                                            \
        if (order == CblasRowMajor) row(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);                   \
        else row(tb, ta, N, M, K, alpha, B, ldb, A, lda, beta, C, ldc);                                          \
    }

GEMM_CBLAS(double, cblas_dgemm, gemm_row_d)
GEMM_CBLAS(float, cblas_sgemm, gemm_row_s)
