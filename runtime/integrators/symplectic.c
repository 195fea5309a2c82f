/* symplectic.c — symplectic Euler, leapfrog and RATTLE. */
#include "symplectic.h"
#include "core/alloc.h"

#include "math/linalg.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* dV/dX for the batch, and M^-1 P: two kernel calls */
static void grad(PrtSystem *s, long n, const double *x, double *g) { s->gradV(n, x, s->params, g); }
static void minv(PrtSystem *s, long n, const double *p, double *v) { prt_minv(s, n, p, v); }

/* W = M^-1 A^T as C rows in SoA for a batch of C (component i of row r at [i*C + r]) */
static void rows_minv(PrtSystem *s, const double *A, int C, int N, double *tmp, double *W) {
    for (int r = 0; r < C; r++)
        for (int i = 0; i < N; i++) tmp[i * C + r] = A[r * N + i];
    minv(s, C, tmp, W);
}

/* G = B W with B (C x N, row-major) and W (SoA rows, so N x C row-major). Row r of G is
   a sum of W's rows: the inner loop runs along contiguous memory and vectorizes (the dot
   product down W's columns strode C doubles and was half of a 100-link chain's step). */
static void gram(const double *B, const double *W, int C, int N, double *G) {
    for (int r = 0; r < C; r++) {
        double *g = G + (size_t)r * C;
        memset(g, 0, sizeof(double) * (size_t)C);
        for (int i = 0; i < N; i++) {
            double b = B[(size_t)r * N + i];
            if (b == 0) continue; /* a constraint's row touches a few coordinates */
            const double *w = W + (size_t)i * C;
            for (int q = 0; q < C; q++) g[q] += b * w[q];
        }
    }
}

/* One RATTLE step of one state (q, p). With kappa = h^2/2 lambda:
     q1 = q + h M^-1 (p - h/2 dV(q)) - M^-1 A0^T kappa,   Phi(q1) = 0   (Newton on kappa)
     p_half = p - h/2 dV(q) - A0^T kappa / h
     p1 = p_half - h/2 dV(q1) - A1^T nu,   A1 M^-1 p1 = 0   (nu = h/2 mu: one solve with G1 = A1 M^-1 A1^T) */
static double rattle_state(PrtSystem *s, double h, double *q, double *p, double tol, double *buf, int *piv) {
    int N = s->N, C = s->C;
    double *A0 = buf, *W0 = A0 + C * N, *A1 = W0 + C * N, *W1 = A1 + C * N, *tmp = W1 + C * N, *G = tmp + C * N,
           *phi = G + C * C, *lam = phi + C, *g = lam + C, *v = g + N, *qt = v + N, *lim = qt + N;
    const double *lengths = s->params + s->nmass;
    /* half kick without the constraint force, drift: qt = q + h M^-1 (p - h/2 dV(q)) */
    grad(s, 1, q, g);
    for (int i = 0; i < N; i++) p[i] -= h / 2 * g[i];
    minv(s, 1, p, v);
    for (int i = 0; i < N; i++) qt[i] = q[i] + h * v[i];
    /* constraint force at q: q1 = qt - h^2/2 W0 lam with Phi(q1) = 0 (simplified Newton) */
    prt_dphi(s, 1, q, A0);
    rows_minv(s, A0, C, N, tmp, W0);
    double res = INFINITY, before = INFINITY;
    bool met = false;
    memset(lam, 0, sizeof(double) * (size_t)C);
    memcpy(q, qt, sizeof(double) * (size_t)N);
    for (int it = 0; it < 50; it++) {
        prt_phi(s, 1, q, lengths, phi);
        res = 0;
        for (int r = 0; r < C; r++) res = fmax(res, fabs(phi[r]));
        if ((met = res <= tol) || (!(res < before) && (met = prt_phi_within_rounding(s, q, phi, tol, lim)))) break;
        before = res;
        prt_dphi(s, 1, q, A1);
        gram(A1, W0, C, N, G); /* dPhi(q1)/dkappa = -A(q1) W0: not symmetric, so LU */
        if (!prt_lu_factor(G, C, piv)) return -1;
        prt_lu_solve(G, C, piv, phi);
        for (int r = 0; r < C; r++) lam[r] += phi[r];
        for (int i = 0; i < N; i++) {
            double t = 0;
            for (int r = 0; r < C; r++) t += W0[i * C + r] * phi[r];
            q[i] -= t;
        }
    }
    if (!met) return -1;
    /* the constraint force of the first half kick: (h/2) A0^T lambda = A0^T kappa / h */
    for (int i = 0; i < N; i++) {
        double t = 0;
        for (int r = 0; r < C; r++) t += A0[r * N + i] * lam[r];
        p[i] -= t / h;
    }
    /* second half kick, then project p onto DPhi(q1) M^-1 p = 0 */
    grad(s, 1, q, g);
    for (int i = 0; i < N; i++) p[i] -= h / 2 * g[i];
    prt_dphi(s, 1, q, A1);
    rows_minv(s, A1, C, N, tmp, W1);
    gram(A1, W1, C, N, G);
    if (!prt_cholesky(G, C)) return -1;
    minv(s, 1, p, v);
    for (int r = 0; r < C; r++) {
        double t = 0;
        for (int i = 0; i < N; i++) t += A1[r * N + i] * v[i];
        phi[r] = t;
    }
    prt_cholesky_solve(G, C, phi);
    for (int i = 0; i < N; i++) {
        double t = 0;
        for (int r = 0; r < C; r++) t += A1[r * N + i] * phi[r];
        p[i] -= t;
    }
    return res;
}

/* The same step for a system in loop form (loop_field.h), its linear algebra in the
   constraint graph's sparsity: the position solve is simplified Newton with
   G0 = A0 M^-1 A0^T factored once (dPhi(q1)/dkappa = -A(q1) W0 differs from -G0 by O(h):
   linear convergence to the same kappa, where the dense step's Newton is quadratic), the
   corrections -W0 G0^-1 Phi summed in dq = -M^-1 A0^T kappa, so that A0^T kappa / h is
   -M dq / h with no A0; the velocity projection is v -= W1 G1^-1 A1 v, p = M v. */
enum { RATTLE_LOOP_ITERATIONS = 100 };

static double rattle_state_loop(PrtSystem *s, double h, double *q, double *p, double tol, double *buf) {
    int N = s->N, C = s->C;
    double *phi = buf, *g = phi + C, *v = g + N, *dq = v + N, *corr = dq + N, *mdq = corr + N, *qv = mdq + N,
           *lim = qv + 2 * N;
    const double *lengths = s->params + s->nmass;
    /* half kick without the constraint force, drift: q + h M^-1 (p - h/2 dV(q)) */
    grad(s, 1, q, g);
    for (int i = 0; i < N; i++) p[i] -= h / 2 * g[i];
    minv(s, 1, p, v);
    if (!prt_loop_factor(s->loop, q, s->params)) return -1; /* G0, W0 at q */
    for (int i = 0; i < N; i++) q[i] += h * v[i], dq[i] = 0;
    double res = INFINITY, before = INFINITY;
    bool met = false;
    for (int it = 0; it < RATTLE_LOOP_ITERATIONS; it++) {
        prt_phi(s, 1, q, lengths, phi);
        res = 0;
        for (int r = 0; r < C; r++) res = fmax(res, fabs(phi[r]));
        if ((met = res <= tol) || !isfinite(res)) break;
        /* no lower than the last iterate: at the rounding of q's coordinates? */
        if (!(res < before) && (met = prt_phi_within_rounding(s, q, phi, tol, lim))) break;
        before = res;
        memset(corr, 0, sizeof(double) * (size_t)N);
        prt_loop_apply(s->loop, corr, phi); /* corr = -W0 G0^-1 Phi */
        for (int i = 0; i < N; i++) q[i] += corr[i], dq[i] += corr[i];
    }
    if (!met) return -1;
    /* the constraint force of the first half kick: A0^T kappa / h = -M dq / h */
    prt_massv(s, 1, dq, mdq);
    for (int i = 0; i < N; i++) p[i] += mdq[i] / h;
    /* second half kick, then project p onto DPhi(q1) M^-1 p = 0 */
    grad(s, 1, q, g);
    for (int i = 0; i < N; i++) p[i] -= h / 2 * g[i];
    if (!prt_loop_factor(s->loop, q, s->params)) return -1;
    minv(s, 1, p, v);
    memcpy(qv, q, sizeof(double) * (size_t)N);
    memcpy(qv + N, v, sizeof(double) * (size_t)N);
    prt_phidot(s, 1, qv, lengths, phi);
    prt_loop_apply(s->loop, v, phi);
    prt_massv(s, 1, v, p);
    return res;
}

double prt_symplectic_step(PrtSystem *s, PrtSymplectic m, long n, double h, double *z, double tol) {
    long N = s->N;
    if (m != PRT_RATTLE) {
        double *g = prt_xalloc((size_t)(N * n), sizeof(double), "symplectic integrator scratch"), *v = prt_xalloc((size_t)(N * n), sizeof(double), "symplectic integrator scratch");
        double *q = z, *p = z + N * n;
        if (m == PRT_SYMPLECTIC_EULER) { /* p1 = p - h dV(q), q1 = q + h M^-1 p1 */
            grad(s, n, q, g);
            for (long i = 0; i < N * n; i++) p[i] -= h * g[i];
            minv(s, n, p, v);
            for (long i = 0; i < N * n; i++) q[i] += h * v[i];
        } else { /* kick, drift, kick */
            grad(s, n, q, g);
            for (long i = 0; i < N * n; i++) p[i] -= h / 2 * g[i];
            minv(s, n, p, v);
            for (long i = 0; i < N * n; i++) q[i] += h * v[i];
            grad(s, n, q, g);
            for (long i = 0; i < N * n; i++) p[i] -= h / 2 * g[i];
        }
        free(g), free(v);
        return 0;
    }
    int C = s->C;
    double *buf = s->loop ? prt_xalloc((size_t)(2 * C + 7 * N + 1), sizeof(double), "symplectic integrator scratch")
                          : prt_xalloc((size_t)(5 * C * N + C * C + 3 * C + 3 * N + 1), sizeof(double), "symplectic integrator scratch");
    double *q = prt_xalloc((size_t)N, sizeof(double), "symplectic integrator scratch"), *p = prt_xalloc((size_t)N, sizeof(double), "symplectic integrator scratch");
    int *piv = prt_xalloc((size_t)(C + 1), sizeof(int), "symplectic integrator scratch");
    double worst = 0;
    for (long b = 0; b < n && worst >= 0; b++) {
        for (long i = 0; i < N; i++) q[i] = z[i * n + b], p[i] = z[(N + i) * n + b];
        double r = s->loop ? rattle_state_loop(s, h, q, p, tol, buf) : rattle_state(s, h, q, p, tol, buf, piv);
        worst = r < 0 ? -1 : fmax(worst, r);
        for (long i = 0; i < N; i++) z[i * n + b] = q[i], z[(N + i) * n + b] = p[i];
    }
    free(buf), free(q), free(p), free(piv);
    return worst;
}
