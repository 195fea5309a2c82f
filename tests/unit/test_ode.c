/* test_ode.c — the integrators against closed forms: a batch of harmonic oscillators
   (each with its own frequency) and their orders of convergence. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "math/ode.h"

/* z = (x, v) per state: x' = v, v' = -w_b^2 x. ctx holds the frequencies. */
static void oscillator(void *ctx, long n, const double *z, double *zdot) {
    const double *w = ctx;
    for (long b = 0; b < n; b++) {
        zdot[b] = z[n + b];
        zdot[n + b] = -w[b] * w[b] * z[b];
    }
}

static void square(void *ctx, long n, const double *z, double *zdot) {
    (void)ctx;
    for (long b = 0; b < n; b++) zdot[b] = z[b] * z[b];
}

static double fixed_error(PrtFixedMethod m, int steps) {
    enum { N = 3 };
    double w[N] = {0.5, 1.0, 2.0}, z[2 * N], work[5 * 2 * N];
    for (int b = 0; b < N; b++) z[b] = 1, z[N + b] = 0;
    double T = 2, h = T / steps;
    for (int s = 0; s < steps; s++) prt_fixed_step(m, oscillator, w, N, 2, h, z, work);
    double e = 0;
    for (int b = 0; b < N; b++) e = fmax(e, fmax(fabs(z[b] - cos(w[b] * T)), fabs(z[N + b] + w[b] * sin(w[b] * T))));
    return e;
}

/* z' = -1e7 z: stable, but stiff for an explicit method at dt = 1. */
static void stiff(void *ctx, long n, const double *z, double *zdot) {
    (void)ctx;
    for (long i = 0; i < n; i++) zdot[i] = -1e7 * z[i];
}

/* y' = lambda y */
static void linear(void *ctx, long n, const double *z, double *zdot) {
    double lambda = *(const double *)ctx;
    for (long i = 0; i < n; i++) zdot[i] = lambda * z[i];
}

/* One Dormand-Prince step on y' = lambda y from y = 1 is R(z) with z = h lambda, the stability
   polynomial of the fifth-order solution, and its error estimate is R(z) - Rhat(z) with the
   embedded fourth-order one (from Hairer, Norsett & Wanner's Table II.5.2):
     R(z)    = 1 + z + z^2/2 + z^3/6 + z^4/24 + z^5/120 + z^6/600
     Rhat(z) = 1 + z + z^2/2 + z^3/6 + z^4/24 + 1097 z^5/120000 + 161 z^6/120000 + z^7/24000
   An interval shorter than the step the controller wants is one step; the step is accepted
   iff |R - Rhat| <= rtol max(|y0|, |y1|) = rtol R(z) (y grows here). So with rtol 10 % above
   that bound the step is taken (and y1 = R(z) to rounding), and 10 % below it rejected. */
static void dopri5_one_step(void) {
    double lambda = 1e6, h = 5e-7, z = h * lambda;
    double R = 1 + z + z * z / 2 + pow(z, 3) / 6 + pow(z, 4) / 24 + pow(z, 5) / 120 + pow(z, 6) / 600;
    double e = fabs(-97.0 / 120000 * pow(z, 5) + 13.0 / 40000 * pow(z, 6) - pow(z, 7) / 24000);
    double y0 = 1, times[2] = {0, h}, out[2], dev = NAN;
    for (int below = 0; below < 2; below++) {
        double rtol = (below ? 0.9 : 1.1) * e / R;
        PrtOdeStats st;
        CHECK(prt_dopri5(linear, &lambda, 1, 1, &y0, times, 2, rtol, 0, out, &st) == 0, "dopri5 failed on y' = y");
        if (below) CHECK(st.rejected >= 1, "a step with its error estimate 10%% over rtol was accepted");
        else {
            CHECK(st.steps == 1 && st.rejected == 0, "a step with its error estimate 10%% under rtol: %ld steps, %ld rejected",
                  st.steps, st.rejected);
            dev = fabs(out[1] / R - 1);
            CHECK(dev < 1e-14, "one dopri5 step on y' = lambda y: %.17g, R(z) = %.17g", out[1], R);
        }
    }
    printf("dopri5, one step of z = %g on y' = lambda y: R(z) to %.1e, error estimate %.3e accepted at rtol 1.1x, "
           "rejected at 0.9x\n", z, dev, e);
}

int main(void) {
    {   /* dopri5 gives up on a stiff interval (the step-size limit of stability, ~3e-7, would
           need millions of steps) instead of running for minutes */
        double z0 = 1, times[2] = {0, 1}, out[2];
        PrtOdeStats st;
        int rc = prt_dopri5(stiff, NULL, 1, 1, &z0, times, 2, 1e-7, 1e-9, out, &st);
        CHECK(rc == -1 && st.steps + st.rejected <= PRT_DOPRI5_MAX_TRIES, "stiff: rc %d after %ld steps, %ld rejected", rc,
              st.steps, st.rejected);
        printf("dopri5 on a stiff interval: gave up after %ld tries\n", st.steps + st.rejected);
        CHECK(st.failure == PRT_ODE_TOO_STIFF && st.t_fail >= 0 && st.t_fail < 1, "stiff: failure %d at t = %g",
              st.failure, st.t_fail);
    }
    {   /* y' = y^2, y(0) = 1 is 1 / (1 - t): it blows up at t = 1, and dopri5 must say it
           failed there (not return the last good state as the solution at t = 2) */
        double y0 = 1, times[3] = {0, 0.5, 2}, out[3];
        PrtOdeStats st;
        int rc = prt_dopri5(square, NULL, 1, 1, &y0, times, 3, 1e-9, 1e-12, out, &st);
        char why[256];
        prt_ode_describe_failure(&st, 1, NULL, why, sizeof why);
        printf("dopri5 on 1 / (1 - t): %s\n", why);
        CHECK(rc == -1 && (st.failure == PRT_ODE_UNDERFLOW || st.failure == PRT_ODE_NONFINITE) &&
                  fabs(st.t_fail - 1) < 1e-3 && fabs(out[1] - 2) < 1e-6,
              "blow-up: rc %d, failure %d at t = %.9g, y(0.5) = %.9g", rc, st.failure, st.t_fail, out[1]);
    }
    /* orders: halving h divides the error by 2^p */
    struct { PrtFixedMethod m; const char *name; double order; } methods[] = {
        {PRT_EULER, "euler", 1}, {PRT_RK4, "rk4", 4}, {PRT_RK4_38, "rk4 (3/8)", 4}};
    for (int i = 0; i < 3; i++) {
        double e1 = fixed_error(methods[i].m, 200), e2 = fixed_error(methods[i].m, 400);
        double p = log2(e1 / e2);
        printf("%s: error %.3e at h = 0.01, observed order %.3f\n", methods[i].name, e1, p);
        CHECK(fabs(p - methods[i].order) < 0.1, "%s: observed order %.3f, want %.0f", methods[i].name, p, methods[i].order);
    }
    /* On a linear problem every 4-stage RK4 gives the same numbers; a nonlinear one tells the
       classic tableau from the 3/8 rule: y' = y^2, y(0) = 1, y(t) = 1 / (1 - t). */
    double r[2][2];
    for (int m = 0; m < 2; m++)
        for (int res = 0; res < 2; res++) {
            int steps = res ? 80 : 40;
            double y = 1, work[5];
            for (int s = 0; s < steps; s++) prt_fixed_step(m ? PRT_RK4_38 : PRT_RK4, square, NULL, 1, 1, 0.5 / steps, &y, work);
            r[m][res] = fabs(y - 2);
        }
    printf("y' = y^2: rk4 error %.3e, 3/8 rule error %.3e (h = 1/80); orders %.2f and %.2f\n", r[0][0], r[1][0],
           log2(r[0][0] / r[0][1]), log2(r[1][0] / r[1][1]));
    CHECK(fabs(r[0][0] - r[1][0]) > 1e-3 * r[0][0], "the classic and 3/8 tableaux agree on a nonlinear problem");
    CHECK(fabs(log2(r[0][0] / r[0][1]) - 4) < 0.2, "classic rk4 order on y' = y^2: %.2f", log2(r[0][0] / r[0][1]));
    CHECK(fabs(log2(r[1][0] / r[1][1]) - 4) < 0.2, "3/8 rule order on y' = y^2: %.2f", log2(r[1][0] / r[1][1]));
    dopri5_one_step();

    /* dopri5: output at requested times, tolerance proportionality; a 5(4) pair's step
       count grows as rtol^(-1/5), so 10^(3/5) = 3.98 from rtol 1e-9 to 1e-12 (an error
       estimate of order 4 or 6 gives 5.6 or 3.2) */
    long steps[3];
    enum { N = 4, NT = 11 };
    double w[N] = {0.3, 1.0, 2.5, 7.0}, z0[2 * N], times[NT], out[NT * 2 * N];
    for (int b = 0; b < N; b++) z0[b] = 1, z0[N + b] = 0;
    for (int k = 0; k < NT; k++) times[k] = 0.5 * k;
    for (int tol = 6; tol <= 12; tol += 3) {
        double rtol = pow(10, -tol);
        PrtOdeStats st;
        int rc = prt_dopri5(oscillator, w, N, 2, z0, times, NT, rtol, rtol * 1e-2, out, &st);
        CHECK(rc == 0, "dopri5 failed at rtol %g", rtol);
        double e = 0;
        for (int k = 0; k < NT; k++)
            for (int b = 0; b < N; b++) e = fmax(e, fabs(out[k * 2 * N + b] - cos(w[b] * times[k])));
        printf("dopri5 rtol %.0e: max error %.2e, %ld steps, %ld rejected, %ld evaluations\n", rtol, e, st.steps,
               st.rejected, st.evals);
        CHECK(e < 200 * rtol, "dopri5 at rtol %g: error %g", rtol, e);
        CHECK(out[0] == 1 && out[N] == 0, "the first output is the initial state");
        steps[(tol - 6) / 3] = st.steps;
    }
    double ratio = (double)steps[2] / (double)steps[1];
    printf("dopri5 steps from rtol 1e-9 to 1e-12: x%.2f (rtol^(-1/5): x%.2f)\n", ratio, pow(10, 0.6));
    CHECK(ratio > 3.6 && ratio < 4.4, "dopri5 steps grow x%.2f from rtol 1e-9 to 1e-12, not as rtol^(-1/5)", ratio);
    printf("%s: %s\n", __FILE__, failures ? "FAILED" : "ok");
    return failures != 0;
}
