/* discrete_step.c — Eq. 12 by Newton's method (see discrete_step.h). */
#include "discrete_step.h"
#include "core/alloc.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "math/linalg.h"

enum { MAX_N = 64 };

int prt_discrete_step(int N, long n, double h, double tol, const double *M, const double *qm, const double *q,
                      const double *fprev, double *y, double *fnew, PrtDiscreteGrad dg, void *ctx) {
    if (N < 1 || N > MAX_N) return PRT_DISCRETE_STEP_BROKEN;
    long len = (long)N * n;
    double *g = prt_xalloc((size_t)len, sizeof(double), "discrete step buffers");
    double *J = prt_xalloc((size_t)N * N * (size_t)n, sizeof(double), "discrete step buffers");
    double A[MAX_N * MAX_N], r[MAX_N];
    int piv[MAX_N], iters = PRT_DISCRETE_STEP_BUDGET;
    bool polish = false;
    for (int it = 0; it <= PRT_DISCRETE_STEP_MAX_ITER; it++) {
        dg(ctx, N, n, y, q, g, polish ? NULL : J);
        if (polish) {
            memcpy(fnew, g, sizeof(double) * (size_t)len);
            iters = it;
            break;
        }
        if (it == PRT_DISCRETE_STEP_MAX_ITER) break;
        double worst = 0;
        for (long b = 0; b < n && worst <= 1e300; b++) {
            double ymax = 0;
            for (int i = 0; i < N; i++) {
                double F = (g[i * n + b] + fprev[i * n + b]) / 2;
                for (int j = 0; j < N; j++) {
                    F += M[i * N + j] * (y[j * n + b] - 2 * q[j * n + b] + qm[j * n + b]) / (h * h);
                    A[i * N + j] = M[i * N + j] / (h * h) + J[((long)i * N + j) * n + b] / 2;
                }
                r[i] = -F;
                ymax = fmax(ymax, fabs(y[i * n + b]));
            }
            if (!prt_lu_factor(A, N, piv)) {
                worst = INFINITY;
                break;
            }
            prt_lu_solve(A, N, piv, r);
            for (int i = 0; i < N; i++) {
                y[i * n + b] += r[i];
                worst = isfinite(r[i]) ? fmax(worst, fabs(r[i]) / (1 + ymax)) : INFINITY;
            }
        }
        if (!(worst <= 1e300)) { /* a singular Jacobian or a non-finite step */
            iters = PRT_DISCRETE_STEP_BROKEN;
            break;
        }
        if (worst <= tol) polish = true;
    }
    free(g), free(J);
    return iters;
}
