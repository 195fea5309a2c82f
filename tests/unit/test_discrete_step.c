/* test_discrete_step.c — the discrete-gradient scheme (Eq. 12, runtime/integrators/discrete_step.c) with a
   true potential's discrete gradient in closed form in place of the network: it conserves the
   discrete energy T(p) + V(q) (p from Eq. 11) to rounding over 10^4 steps, it is second-order
   accurate against the exact flow, and Newton converges in a few iterations. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../runtime/integrators/discrete_step.h"
#include "check.h"

/* ---- the pendulum of the paper, V = 6 (1 - cos q), M = 1 ---- */

/* sin(x) / x and its derivative, by series near 0 (no cancellation) */
static double sinc(double x) { return fabs(x) < 1e-3 ? 1 - x * x / 6 + x * x * x * x / 120 : sin(x) / x; }
static double dsinc(double x) {
    return fabs(x) < 1e-3 ? -x / 3 + x * x * x / 30 : (x * cos(x) - sin(x)) / (x * x);
}

static double pend_V(double q) { return 6 * (1 - cos(q)); }

/* (V(y) - V(q)) / (y - q) = 6 (cos q - cos y) / (y - q) = 6 sin(m) sinc(d), m = (y + q) / 2, d = (y - q) / 2;
   ctx non-NULL: rounded to float, as an f32 network's DG is */
static void pendulum_dg(void *ctx, int N, long n, const double *y, const double *q, double *g, double *jac) {
    (void)N;
    for (long b = 0; b < n; b++) {
        double m = (y[b] + q[b]) / 2, d = (y[b] - q[b]) / 2;
        g[b] = 6 * sin(m) * sinc(d);
        if (jac) jac[b] = 6 * (cos(m) * sinc(d) + sin(m) * dsinc(d)) / 2;
        if (ctx) g[b] = (float)g[b];
        if (ctx && jac) jac[b] = (float)jac[b];
    }
}

static bool f32 = false; /* the DG rounded to float, Newton to PRT_DISCRETE_STEP_TOL_F32 */

/* p at step k from Eq. 11: p = M (q_k - q_{k-1}) / h - h DG(q_k, q_{k-1}) / 2 */
static double pendulum_energy(double qk, double qkm, double h) {
    double g;
    pendulum_dg(f32 ? &f32 : NULL, 1, 1, &qk, &qkm, &g, NULL);
    double p = (qk - qkm) / h - h * g / 2;
    return p * p / 2 + pend_V(qk);
}

/* n steps of the scheme from (q0, q1), every state of the batch; returns the final q of state 0
   in *qend and the largest energy drift relative to the first energy. */
static double run_pendulum(long nb, const double *q0, const double *q1, double h, int steps, double *qend,
                           double *mean_iters) {
    double M = 1, *qm = malloc(sizeof(double) * nb), *q = malloc(sizeof(double) * nb), *y = malloc(sizeof(double) * nb);
    double *fprev = malloc(sizeof(double) * nb), *fnew = malloc(sizeof(double) * nb), *E0 = malloc(sizeof(double) * nb);
    memcpy(qm, q0, sizeof(double) * nb), memcpy(q, q1, sizeof(double) * nb);
    pendulum_dg(f32 ? &f32 : NULL, 1, nb, q, qm, fprev, NULL);
    for (long b = 0; b < nb; b++) E0[b] = pendulum_energy(q[b], qm[b], h);
    double drift = 0;
    long iters = 0;
    for (int k = 0; k < steps; k++) {
        for (long b = 0; b < nb; b++) y[b] = 2 * q[b] - qm[b] - h * h * fprev[b]; /* the leapfrog guess */
        int it = prt_discrete_step(1, nb, h, f32 ? PRT_DISCRETE_STEP_TOL_F32 : PRT_DISCRETE_STEP_TOL, &M, qm, q, fprev, y, fnew,
                                   pendulum_dg, f32 ? &f32 : NULL);
        CHECK(it > 0 && it < 10, "step %d: Newton took %d iterations", k, it);
        if (it < 0) break;
        iters += it;
        memcpy(qm, q, sizeof(double) * nb), memcpy(q, y, sizeof(double) * nb), memcpy(fprev, fnew, sizeof(double) * nb);
        for (long b = 0; b < nb; b++) drift = fmax(drift, fabs(pendulum_energy(q[b], qm[b], h) - E0[b]) / fabs(E0[b]));
    }
    *qend = q[0];
    if (mean_iters) *mean_iters = (double)iters / steps;
    free(qm), free(q), free(y), free(fprev), free(fnew), free(E0);
    return drift;
}

/* The exact pendulum q'' = -6 sin q by RK4 at a tiny step, for the convergence order. */
static double pendulum_exact(double q, double v, double T) {
    int steps = 200000;
    double h = T / steps;
    for (int i = 0; i < steps; i++) {
        double k1q = v, k1v = -6 * sin(q);
        double k2q = v + h / 2 * k1v, k2v = -6 * sin(q + h / 2 * k1q);
        double k3q = v + h / 2 * k2v, k3v = -6 * sin(q + h / 2 * k2q);
        double k4q = v + h * k3v, k4v = -6 * sin(q + h * k3q);
        q += h / 6 * (k1q + 2 * k2q + 2 * k3q + k4q);
        v += h / 6 * (k1v + 2 * k2v + 2 * k3v + k4v);
    }
    return q;
}

static void test_pendulum_conserves_energy(void) {
    enum { NB = 5 };
    double q0[NB], q1[NB], qend, iters;
    for (int b = 0; b < NB; b++) q0[b] = -2.0 + b, q1[b] = q0[b] + 0.2 * (0.5 - 0.3 * b); /* the paper's dt */
    double drift = run_pendulum(NB, q0, q1, 0.2, 10000, &qend, &iters);
    printf("  pendulum, h = 0.2, 10^4 steps: largest relative drift of T + V %.2e, %.2f Newton iterations a step\n",
           drift, iters);
    CHECK(drift < 1e-12, "the discrete energy drifted by %.3e", drift);
    CHECK(iters < 5, "Newton took %.2f iterations a step", iters);
}

/* With the DG in float, Newton to the f32 tolerance: it converges as fast, and the energy
   drifts by what the DG's rounding makes (the identity V(y) - V(q) = DG (y - q) off by an ulp
   of DG a step: a random walk of about 1e-7 |DG| h a step), not by the scheme. */
static void test_pendulum_f32(void) {
    enum { NB = 5 };
    double q0[NB], q1[NB], qend, iters;
    for (int b = 0; b < NB; b++) q0[b] = -2.0 + b, q1[b] = q0[b] + 0.2 * (0.5 - 0.3 * b);
    f32 = true;
    double drift = run_pendulum(NB, q0, q1, 0.2, 10000, &qend, &iters);
    f32 = false;
    printf("  pendulum in f32, h = 0.2, 10^4 steps: largest relative drift of T + V %.2e, %.2f Newton iterations a step\n",
           drift, iters);
    CHECK(drift < 1e-4 && drift > 1e-10, "the discrete energy in f32 drifted by %.3e", drift);
    CHECK(iters < 5, "Newton in f32 took %.2f iterations a step", iters);
}

static void test_pendulum_second_order(void) {
    /* from the exact (q(0), q(h)); the error at T = 1 shrinks 4x when h halves */
    double qa = 1.5, va = 0, T = 1, err[3];
    for (int r = 0; r < 3; r++) {
        double h = 0.02 / (1 << r), q1 = pendulum_exact(qa, va, h), qend;
        run_pendulum(1, &qa, &q1, h, (int)lround(T / h) - 1, &qend, NULL);
        err[r] = fabs(qend - pendulum_exact(qa, va, T));
    }
    printf("  pendulum errors at t = 1: %.3e %.3e %.3e (ratios %.2f %.2f)\n", err[0], err[1], err[2], err[0] / err[1],
           err[1] / err[2]);
    CHECK(err[0] / err[1] > 3.5 && err[0] / err[1] < 4.5, "order: ratio %.3f", err[0] / err[1]);
    CHECK(err[1] / err[2] > 3.5 && err[1] / err[2] < 4.5, "order: ratio %.3f", err[1] / err[2]);
}

/* ---- a coupled 2-D potential with a full mass matrix: V = q.Kq/2 + |q|^4/4 ---- */

static const double K[4] = {3, 1, 1, 2}, Mfull[4] = {2, 0.5, 0.5, 1};

static void gradV(const double *x, double *g) {
    double r2 = x[0] * x[0] + x[1] * x[1];
    for (int i = 0; i < 2; i++) g[i] = K[i * 2] * x[0] + K[i * 2 + 1] * x[1] + r2 * x[i];
}
static double quartic_V(const double *x) {
    double r2 = x[0] * x[0] + x[1] * x[1];
    return (K[0] * x[0] * x[0] + 2 * K[1] * x[0] * x[1] + K[3] * x[1] * x[1]) / 2 + r2 * r2 / 4;
}

/* The average vector field, integral_0^1 grad V(q + s (y - q)) ds, a discrete gradient; the
   integrand is cubic in s, so 2-point Gauss-Legendre is exact (and for the Jacobian, whose
   integrand s Hess V is cubic too). */
static void quartic_dg(void *ctx, int N, long n, const double *y, const double *q, double *g, double *jac) {
    (void)ctx;
    const double s[2] = {0.5 - 0.5 / sqrt(3), 0.5 + 0.5 / sqrt(3)};
    for (long b = 0; b < n; b++) {
        double gb[2] = {0, 0}, J[4] = {0, 0, 0, 0};
        for (int k = 0; k < 2; k++) {
            double x[2], gk[2];
            for (int i = 0; i < 2; i++) x[i] = q[i * n + b] + s[k] * (y[i * n + b] - q[i * n + b]);
            gradV(x, gk);
            double r2 = x[0] * x[0] + x[1] * x[1];
            for (int i = 0; i < 2; i++) {
                gb[i] += gk[i] / 2;
                for (int j = 0; j < 2; j++) J[i * 2 + j] += s[k] * (K[i * 2 + j] + r2 * (i == j) + 2 * x[i] * x[j]) / 2;
            }
        }
        for (int i = 0; i < N; i++) {
            g[i * n + b] = gb[i];
            if (jac)
                for (int j = 0; j < N; j++) jac[(i * N + j) * n + b] = J[i * 2 + j];
        }
    }
}

static void test_quartic_full_mass(void) {
    double h = 0.1, qm[2] = {1.0, -0.5}, q[2] = {1.05, -0.45}, y[2], fprev[2], fnew[2];
    quartic_dg(NULL, 2, 1, q, qm, fprev, NULL);
    double E0 = NAN, drift = 0;
    for (int k = 0; k < 10000; k++) {
        /* p = M (q - q-) / h - h DG(q, q-) / 2, T = p.M^-1 p / 2 */
        double p[2], det = Mfull[0] * Mfull[3] - Mfull[1] * Mfull[2];
        for (int i = 0; i < 2; i++)
            p[i] = (Mfull[i * 2] * (q[0] - qm[0]) + Mfull[i * 2 + 1] * (q[1] - qm[1])) / h - h * fprev[i] / 2;
        double v[2] = {(Mfull[3] * p[0] - Mfull[1] * p[1]) / det, (-Mfull[2] * p[0] + Mfull[0] * p[1]) / det};
        double E = (p[0] * v[0] + p[1] * v[1]) / 2 + quartic_V(q);
        if (k == 0) E0 = E;
        drift = fmax(drift, fabs(E - E0) / fabs(E0));
        for (int i = 0; i < 2; i++) y[i] = 2 * q[i] - qm[i];
        int it = prt_discrete_step(2, 1, h, PRT_DISCRETE_STEP_TOL, Mfull, qm, q, fprev, y, fnew, quartic_dg, NULL);
        CHECK(it > 0, "step %d: Newton failed", k);
        if (it < 0) return;
        memcpy(qm, q, sizeof q), memcpy(q, y, sizeof q), memcpy(fprev, fnew, sizeof fprev);
    }
    printf("  quartic, full mass matrix, 10^4 steps: relative drift of T + V %.2e\n", drift);
    CHECK(drift < 1e-12, "the discrete energy drifted by %.3e", drift);
}

/* A discrete gradient that oscillates faster than Newton can follow (and a Jacobian that
   says it is flat): the iteration wanders, finite, and must stop at its budget. */
static void wild_dg(void *ctx, int N, long n, const double *y, const double *q, double *g, double *jac) {
    for (long b = 0; b < n; b++) {
        g[b] = 1e3 * sin(1e3 * y[b]);
        if (jac) jac[b] = 0;
    }
}

/* A non-finite start must fail as broken, a wandering iteration at its budget: neither may
   loop or return nonsense. */
static void test_failure(void) {
    double M = 1, qm = 0, q = NAN, y = 0, fprev = 0, fnew;
    CHECK(prt_discrete_step(1, 1, 0.1, PRT_DISCRETE_STEP_TOL, &M, &qm, &q, &fprev, &y, &fnew, pendulum_dg, NULL) == PRT_DISCRETE_STEP_BROKEN,
          "a NaN position must make the step fail as broken");
    q = 0.5, y = 1;
    int rc = prt_discrete_step(1, 1, 1.0, PRT_DISCRETE_STEP_TOL, &M, &qm, &q, &fprev, &y, &fnew, wild_dg, NULL);
    CHECK(rc == PRT_DISCRETE_STEP_BUDGET, "a wandering Newton iteration must stop at its budget (got %d)", rc);
}

int main(void) {
    test_pendulum_conserves_energy();
    test_pendulum_f32();
    test_pendulum_second_order();
    test_quartic_full_mass();
    test_failure();
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures ? 1 : 0;
}
