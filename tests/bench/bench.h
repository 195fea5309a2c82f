/* bench.h — the right-hand sides `make bench` compares with physc's JIT-compiled one
   (prt_hamiltonian_rhs). Every variant computes zdot = (Xdot, Pdot) of CHNN Eq. 6 for n
   states in the structure-of-arrays layout of docs/runtime-abi.md: component i of state b
   is z[i*n + b], and z = (X, P) has 2N components. params are the Compiled's
   PrtSystem params: the mass parameters (Eq. 9), then the free lengths. */
#ifndef PHYSC_BENCH_H
#define PHYSC_BENCH_H
#include <stdbool.h>
#include <stddef.h>

#include "llvm_jit.h"
#include "system/sim.h"

/* handwritten.c (built with -O2 -march=native): one system each, written by hand; the
   _simd versions run 8 states at a time in the lanes of a GCC vector.
   params: m1, m2, m3 for the 3-pendulum; m, lambda1, lambda2, lambda3 for the gyroscope. */
void hw_pendulum3_rhs(long n, const double *restrict z, const double *restrict params, double *restrict zdot);
void hw_pendulum3_rhs_simd(long n, const double *restrict z, const double *restrict params, double *restrict zdot);
void hw_gyroscope_rhs(long n, const double *restrict z, const double *restrict params, double *restrict zdot);
void hw_gyroscope_rhs_simd(long n, const double *restrict z, const double *restrict params, double *restrict zdot);

/* dense.c: the unspecialized formulation, the full 2C x 2C matrix DPsi J DPsi^T per state,
   solved with LAPACK's dgesv. */
typedef struct Dense Dense;
/* Builds the Jacobian of the system's PhiDot kernel (its X columns are B = d(A v)/dX,
   its Xdot columns A = DPhi) with the compiler's AD and JIT-compiles it. NULL on failure. */
Dense *dense_open(const PrtSystem *ps, const IrFn *phidot, char *err, size_t errlen);
void dense_rhs(void *ctx, long n, const double *z, double *zdot); /* ctx: a Dense */
void dense_close(Dense *d);

/* train.c: seconds per epoch of CHNN training and GFLOP/s against the dgemm peak. */
void bench_training(void);
/* The best of a few dgemm (or sgemm) runs of size M x N x K, in GFLOP/s. */
double gemm_peak(bool f32, int M, int N, int K);
/* models.c: every model family's training speed (s/epoch, share of the dgemm peak). */
void bench_models(void);
/* dtlnn.c: the DT-LNN's training speed at the 2-body protocol (s/iteration, share of the peak). */
void bench_dtlnn(void);
/* liet2.c: the Lie T2 model's training speed at the TRAPPIST-1 example (s/epoch, share of the peak). */
void bench_liet2(void);
/* scale.c: compile time, memory and speed of 2-D chains of 10 to 1000 links and 3-D trees. */
void bench_scale(void);
/* Runs fn(ctx, result) in a child process and copies its result (size bytes) back, so that a
   crash or an abort costs that measurement, not the benchmark. True if the whole result came
   back; *status is the child's wait status, *ru (if not NULL) its resource use. */
struct rusage;
bool bench_in_child(void (*fn)(void *ctx, void *result), void *ctx, void *result, size_t size, int *status,
                    struct rusage *ru);

#endif
