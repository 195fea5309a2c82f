/* dense.c — CHNN Eq. 6 the unspecialized way, as the baseline of `make bench`: per state,
   the dense 2C x 2N Jacobian DPsi of Psi = (Phi, A v), the full 2C x 2C matrix
   DPsi J DPsi^T, one LU solve with LAPACK's dgesv, and
       zdot = J (grad H - DPsi^T mu),   (DPsi J DPsi^T) mu = DPsi J grad H,
   with grad H = (dV/dX, v), v = M^-1 P, J = [[0, I], [-I, 0]].

   The Jacobians are physc's: one JIT-compiled kernel, the Jacobian of the system's PhiDot
   kernel (ad_jacobian of PhiDot(X, Xdot) = DPhi(X) Xdot, simplified): its Xdot columns
   are A = DPhi and its X columns are B = d(A v)/dX at Xdot = v. dV/dX is the JIT's gradV.
   Everything else is dense: M^-1 as an N x N matrix (taken once from the MinvP kernel
   applied to the unit vectors), v = M^-1 P and A M^-1 as dense products, no use of
   sparsity or of the block structure. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ad.h"
#include "bench.h"
#include "opt.h"

void dgesv_(int *n, int *nrhs, double *a, int *lda, int *ipiv, double *b, int *ldb, int *info);

struct Dense {
    const PrtSystem *ps;
    int N, C;
    IrFn *jac_ir;
    Jit *jit;
    PrtKernel jac;  /* (X, Xdot) -> C x 2N Jacobian of PhiDot, row-major */
    double *Minv;   /* N x N, row-major */
    double *dv, *xv, *jm; /* batch scratch: dV (N x n), (X, v) (2N x n), Jacobian (2CN x n) */
    long cap;
    double *dpsi, *t, *k, *rhs, *y; /* per-state scratch */
    int *ipiv;
};

Dense *dense_open(const PrtSystem *ps, const IrFn *phidot, char *err, size_t errlen) {
    Dense *d = calloc(1, sizeof *d);
    d->ps = ps;
    d->N = ps->N, d->C = ps->C;
    int N = d->N, C = d->C;
    IrFn *raw = ad_jacobian(phidot, "PhiDotJac");
    d->jac_ir = opt_simplify(raw);
    ir_free(raw);
    d->jit = jit_compile(&d->jac_ir, 1, 2, err, errlen);
    if (!d->jit) {
        dense_close(d);
        return NULL;
    }
    d->jac = jit_lookup(d->jit, "PhiDotJac");
    /* M^-1 column by column: MinvP on the batch of the N unit vectors */
    double *eye = calloc((size_t)(N * N), sizeof(double)), *cols = malloc(sizeof(double) * (size_t)(N * N));
    for (int i = 0; i < N; i++) eye[i * N + i] = 1;
    ps->MinvP(N, eye, ps->params, cols); /* cols[i*N + b] = (M^-1 e_b)_i */
    d->Minv = cols;
    free(eye);
    d->dpsi = malloc(sizeof(double) * (size_t)(2 * C * 2 * N));
    d->t = malloc(sizeof(double) * (size_t)(2 * C * 2 * N));
    d->k = malloc(sizeof(double) * (size_t)(4 * C * C));
    d->rhs = malloc(sizeof(double) * (size_t)(2 * C));
    d->y = malloc(sizeof(double) * (size_t)(2 * N));
    d->ipiv = malloc(sizeof(int) * (size_t)(2 * C));
    return d;
}

void dense_close(Dense *d) {
    if (!d) return;
    if (d->jit) jit_free(d->jit);
    if (d->jac_ir) ir_free(d->jac_ir);
    free(d->Minv), free(d->dv), free(d->xv), free(d->jm);
    free(d->dpsi), free(d->t), free(d->k), free(d->rhs), free(d->y), free(d->ipiv);
    free(d);
}

void dense_rhs(void *ctx, long n, const double *z, double *zdot) {
    Dense *d = ctx;
    const PrtSystem *ps = d->ps;
    const int N = d->N, C = d->C, N2 = 2 * N, C2 = 2 * C;
    if (d->cap < n) {
        free(d->dv), free(d->xv), free(d->jm);
        d->cap = n;
        d->dv = malloc(sizeof(double) * (size_t)(N * n));
        d->xv = malloc(sizeof(double) * (size_t)(N2 * n));
        d->jm = malloc(sizeof(double) * (size_t)(C * N2 * n));
    }
    const double *P = z + (long)N * n;
    ps->gradV(n, z, ps->params, d->dv);
    memcpy(d->xv, z, sizeof(double) * (size_t)(N * n));
    double *v = d->xv + (long)N * n;
    for (int i = 0; i < N; i++) {
        double *vi = v + (long)i * n;
        for (long b = 0; b < n; b++) vi[b] = 0;
        for (int j = 0; j < N; j++) {
            const double mij = d->Minv[i * N + j], *pj = P + (long)j * n;
            for (long b = 0; b < n; b++) vi[b] += mij * pj[b];
        }
    }
    d->jac(n, d->xv, ps->params + ps->nmass, d->jm);
    double *dpsi = d->dpsi, *t = d->t, *K = d->k, *rhs = d->rhs, *y = d->y;
    for (long b = 0; b < n; b++) {
        /* DPsi = [[A, 0], [B, A M^-1]] (2C x 2N, row-major) */
        for (int r = 0; r < C; r++) {
            double *top = dpsi + (long)r * N2, *bot = dpsi + (long)(C + r) * N2;
            for (int j = 0; j < N; j++) {
                top[j] = d->jm[((long)r * N2 + N + j) * n + b]; /* A */
                top[N + j] = 0;
                bot[j] = d->jm[((long)r * N2 + j) * n + b]; /* B */
            }
            for (int j = 0; j < N; j++) {
                double s = 0;
                for (int q = 0; q < N; q++) s += top[q] * d->Minv[q * N + j];
                bot[N + j] = s;
            }
        }
        /* T = DPsi J: T[:, j] = -DPsi[:, N + j], T[:, N + j] = DPsi[:, j] */
        for (int r = 0; r < C2; r++)
            for (int j = 0; j < N; j++) {
                t[r * N2 + j] = -dpsi[r * N2 + N + j];
                t[r * N2 + N + j] = dpsi[r * N2 + j];
            }
        /* K = T DPsi^T (column-major for LAPACK), rhs = T grad H */
        for (int i = 0; i < N; i++) y[i] = d->dv[(long)i * n + b], y[N + i] = v[(long)i * n + b];
        for (int r = 0; r < C2; r++) {
            for (int s = 0; s < C2; s++) {
                double acc = 0;
                for (int j = 0; j < N2; j++) acc += t[r * N2 + j] * dpsi[s * N2 + j];
                K[s * C2 + r] = acc;
            }
            double acc = 0;
            for (int j = 0; j < N2; j++) acc += t[r * N2 + j] * y[j];
            rhs[r] = acc;
        }
        int nn = C2, nrhs = 1, info = 0;
        dgesv_(&nn, &nrhs, K, &nn, d->ipiv, rhs, &nn, &info);
        if (info != 0)
            for (int r = 0; r < C2; r++) rhs[r] = NAN;
        /* zdot = J (grad H - DPsi^T mu) */
        for (int j = 0; j < N2; j++) {
            double acc = y[j];
            for (int r = 0; r < C2; r++) acc -= dpsi[r * N2 + j] * rhs[r];
            t[j] = acc;
        }
        for (int i = 0; i < N; i++) {
            zdot[(long)i * n + b] = t[N + i];
            zdot[(long)(N + i) * n + b] = -t[i];
        }
    }
}
