/* ode.c — Euler, classic RK4, RK4 with the 3/8 rule (torchdiffeq's `rk4`), and adaptive
   Dormand-Prince 5(4) with output at requested times. */
#include "ode.h"
#include "core/alloc.h"
#include "simd_clones.h"

#include <math.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

const PrtTableau prt_tableau_euler = {1, {{0}}, {1}};
const PrtTableau prt_tableau_rk4 = {4, {{0}, {0.5}, {0, 0.5}, {0, 0, 1}}, {1.0 / 6, 1.0 / 3, 1.0 / 3, 1.0 / 6}};
/* the 3/8 rule: c = (0, 1/3, 2/3, 1), b = (1, 3, 3, 1)/8 */
const PrtTableau prt_tableau_rk4_38 = {4, {{0}, {1.0 / 3}, {-1.0 / 3, 1}, {1, -1, 1}}, {1.0 / 8, 3.0 / 8, 3.0 / 8, 1.0 / 8}};

static void axpy(long len, double a, const double *x, const double *y, double *out) {
    for (long i = 0; i < len; i++) out[i] = y[i] + a * x[i];
}

void prt_rk_step(const PrtTableau *T, PrtRhs f, void *ctx, long n, int dim, double h, double *z, double *work) {
    long len = (long)dim * n;
    double *k[4] = {work, work + len, work + 2 * len, work + 3 * len}, *y = work + 4 * len;
    /* the same sums, in the same order, as the training step on the tape (model_cartesian.c):
       z + (h a_i0) k_0 + (h a_i1) k_1 + ..., skipping zero coefficients */
    for (int i = 0; i < T->stages; i++) {
        const double *at = z;
        if (i > 0) {
            memcpy(y, z, sizeof(double) * (size_t)len);
            for (int j = 0; j < i; j++)
                if (T->a[i][j] != 0) axpy(len, h * T->a[i][j], k[j], y, y);
            at = y;
        }
        f(ctx, n, at, k[i]);
    }
    for (int i = 0; i < T->stages; i++) axpy(len, h * T->b[i], k[i], z, z);
}

void prt_fixed_step(PrtFixedMethod m, PrtRhs f, void *ctx, long n, int dim, double h, double *z, double *work) {
    prt_rk_step(m == PRT_EULER ? &prt_tableau_euler : m == PRT_RK4 ? &prt_tableau_rk4 : &prt_tableau_rk4_38, f, ctx, n,
                dim, h, z, work);
}

/* Dormand-Prince coefficients (Hairer, Norsett & Wanner, Table II.5.2). */
/* nodes c = (0, 1/5, 3/10, 4/5, 8/9, 1, 1): autonomous fields need only A and E */
static const double A[7][6] = {
    {0},
    {1.0 / 5},
    {3.0 / 40, 9.0 / 40},
    {44.0 / 45, -56.0 / 15, 32.0 / 9},
    {19372.0 / 6561, -25360.0 / 2187, 64448.0 / 6561, -212.0 / 729},
    {9017.0 / 3168, -355.0 / 33, 46732.0 / 5247, 49.0 / 176, -5103.0 / 18656},
    {35.0 / 384, 0, 500.0 / 1113, 125.0 / 192, -2187.0 / 6784, 11.0 / 84},
};
/* b - b*: the embedded fourth-order error estimate */
static const double E[7] = {71.0 / 57600, 0, -71.0 / 16695, 71.0 / 1920, -17253.0 / 339200, 22.0 / 525, -1.0 / 40};

/* The step's elementwise sums are loops the compiler vectorizes (-O3, SIMD clones), with the
   operations of the plain sum in its order (acc = 0, acc += a_j k_j, y + h acc): written as
   a loop over j inside the loop over the batch, which did not vectorize, they were 80 % of
   a 3-pendulum's dopri5 (its field 15 %).

   out = y + h sum_{j < s} c_j k_j (out apart from y and the k_j) */
PRT_SIMD_CLONES static void stage_point(long len, int s, const double *c, double *const *k, const double *y, double h,
                                        double *restrict out) {
    const double *restrict k0 = k[0], *restrict k1 = k[1], *restrict k2 = k[2], *restrict k3 = k[3],
                           *restrict k4 = k[4], *restrict k5 = k[5];
#define STAGE(T) for (long i = 0; i < len; i++) out[i] = y[i] + h * T
    switch (s) {
    case 1: STAGE((0.0 + c[0] * k0[i])); break;
    case 2: STAGE(((0.0 + c[0] * k0[i]) + c[1] * k1[i])); break;
    case 3: STAGE((((0.0 + c[0] * k0[i]) + c[1] * k1[i]) + c[2] * k2[i])); break;
    case 4: STAGE(((((0.0 + c[0] * k0[i]) + c[1] * k1[i]) + c[2] * k2[i]) + c[3] * k3[i])); break;
    case 5: STAGE((((((0.0 + c[0] * k0[i]) + c[1] * k1[i]) + c[2] * k2[i]) + c[3] * k3[i]) + c[4] * k4[i])); break;
    default:
        STAGE(((((((0.0 + c[0] * k0[i]) + c[1] * k1[i]) + c[2] * k2[i]) + c[3] * k3[i]) + c[4] * k4[i]) + c[5] * k5[i]));
        break;
    }
#undef STAGE
}

/* err = h sum_j E_j k_j over the 7 stages (E_1 = 0 too: a non-finite k_1 makes err NaN) */
PRT_SIMD_CLONES static void stage_error(long len, double *const *k, double h, double *restrict err) {
    const double *restrict k0 = k[0], *restrict k1 = k[1], *restrict k2 = k[2], *restrict k3 = k[3],
                           *restrict k4 = k[4], *restrict k5 = k[5], *restrict k6 = k[6];
    for (long i = 0; i < len; i++)
        err[i] = h * (((((((0.0 + E[0] * k0[i]) + E[1] * k1[i]) + E[2] * k2[i]) + E[3] * k3[i]) + E[4] * k4[i]) +
                       E[5] * k5[i]) + E[6] * k6[i]);
}

/* (e_i / (atol + rtol max(|y0_i|, |y1_i|)))^2 into r, which may be e (fmax's result: a
   NaN loses to a number) */
PRT_SIMD_CLONES static void scaled_squares(long len, const double *e, const double *y0, const double *y1, double rtol,
                                           double atol, double *r) {
    for (long i = 0; i < len; i++) {
        double a = fabs(y0[i]), b = y1 ? fabs(y1[i]) : 0, m = (a > b || b != b) ? a : b, q = e[i] / (atol + rtol * m);
        r[i] = q * q;
    }
}

/* sqrt(mean((e_i / (atol + rtol max(|y0_i|, |y1_i|)))^2)); scratch (len) may be e */
static double rms_scaled(long len, const double *e, const double *y0, const double *y1, double rtol, double atol,
                         double *scratch) {
    scaled_squares(len, e, y0, y1, rtol, atol, scratch);
    double acc = 0;
    for (long i = 0; i < len; i++) acc += scratch[i]; /* (in order: the same sum as ever) */
    return sqrt(acc / (double)(len > 0 ? len : 1));
}

/* Hairer's starting step size (Solving ODEs I, II.4). */
static double initial_step(PrtRhs f, void *ctx, long n, long len, const double *y0, const double *f0, double rtol,
                           double atol, double span, double *tmp, double *f1, PrtOdeStats *st) {
    double d0 = rms_scaled(len, y0, y0, NULL, rtol, atol, f1), d1 = rms_scaled(len, f0, y0, NULL, rtol, atol, f1);
    double h0 = (d0 < 1e-5 || d1 < 1e-5) ? 1e-6 : 0.01 * d0 / d1;
    h0 = fmin(h0, span);
    axpy(len, h0, f0, y0, tmp);
    f(ctx, n, tmp, f1);
    st->evals++;
    for (long i = 0; i < len; i++) tmp[i] = f1[i] - f0[i];
    double d2 = rms_scaled(len, tmp, y0, NULL, rtol, atol, tmp) / h0;
    double h1 = fmax(d1, d2) <= 1e-15 ? fmax(1e-6, h0 * 1e-3) : pow(0.01 / fmax(d1, d2), 1.0 / 5);
    return fmin(fmin(100 * h0, h1), span);
}

int prt_dopri5(PrtRhs f, void *ctx, long n, int dim, const double *z0, const double *times, int nt, double rtol,
               double atol, double *out, PrtOdeStats *stats) {
    return prt_dopri5_observed(f, ctx, n, dim, z0, times, nt, rtol, atol, out, stats, NULL);
}

int prt_dopri5_observed(PrtRhs f, void *ctx, long n, int dim, const double *z0, const double *times, int nt,
                        double rtol, double atol, double *out, PrtOdeStats *stats, const PrtOdeObserver *obs) {
    long len = (long)dim * n;
    PrtOdeStats st = {.bad = -1};
    double *buf = prt_xalloc((size_t)(10 * len + 1), sizeof(double), "dopri5 stages");
    double *k[7], *y = buf + 7 * len, *ynew = buf + 8 * len, *err = buf + 9 * len;
    for (int i = 0; i < 7; i++) k[i] = buf + i * len;
    memcpy(y, z0, sizeof(double) * (size_t)len);
    memcpy(out, z0, sizeof(double) * (size_t)len);
    int rc = 0;
    double t = times[0];
    f(ctx, n, y, k[0]);
    st.evals++;
    double h = nt > 1 ? initial_step(f, ctx, n, len, y, k[0], rtol, atol, times[nt - 1] - t, ynew, err, &st) : 0;
    long interval_cap = obs && obs->max_interval_steps > 0 ? obs->max_interval_steps : PRT_DOPRI5_MAX_TRIES;
    for (int target = 1; target < nt && rc == 0; target++) {
        long tries = 0;
        while (t < times[target] && rc == 0) {
            if (++tries > interval_cap) { /* stiff: a learned field gone bad, say */
                rc = -1, st.failure = PRT_ODE_TOO_STIFF, st.budget = interval_cap;
                break;
            }
            if (obs && obs->max_steps > 0 && st.steps + st.rejected >= obs->max_steps) {
                rc = -1, st.failure = PRT_ODE_OVER_BUDGET, st.budget = obs->max_steps;
                break;
            }
            double remaining = times[target] - t;
            bool last = h >= remaining;
            double hs = last ? remaining : h;
            for (int s = 1; s < 7; s++) {
                stage_point(len, s, A[s], k, y, hs, ynew);
                f(ctx, n, ynew, k[s]); /* stage s at t + C[s] h; the last is f(ynew), reused as k[0] (FSAL) */
                st.evals++;
            }
            /* ynew is the fifth-order solution (row 6 of A is b); k[6] = f(ynew) (FSAL) */
            stage_error(len, k, hs, err);
            double en = rms_scaled(len, err, y, ynew, rtol, atol, err);
            if (!isfinite(en)) {
                /* a non-finite state, or a non-finite field at a finite one (a singularity hit
                   exactly), fails; finite numbers whose scaled error overflowed only make the
                   step too long */
                st.bad = prt_first_nonfinite(ynew, len);
                if (st.bad < 0) st.bad = prt_first_nonfinite(k[6], len);
                if (st.bad >= 0) {
                    rc = -1, st.failure = PRT_ODE_NONFINITE;
                    break;
                }
                en = 1e300;
            }
            double factor = en == 0 ? 5 : fmin(5, fmax(0.2, 0.9 * pow(en, -0.2)));
            if (en <= 1) {
                st.steps++;
                t = last ? times[target] : t + hs;
                memcpy(y, ynew, sizeof(double) * (size_t)len);
                memcpy(k[0], k[6], sizeof(double) * (size_t)len);
                if (!last || factor < 1) h = hs * factor; /* landing on an output time does not grow h */
            } else {
                st.rejected++;
                h = hs * fmax(0.2, factor);
            }
            if (h < 1e-14 * fmax(1, fabs(t))) rc = -1, st.failure = PRT_ODE_UNDERFLOW;
        }
        memcpy(out + (long)target * len, y, sizeof(double) * (size_t)len);
        if (obs && obs->reached && rc == 0) obs->reached(obs->ctx, target, nt);
    }
    for (int target = 0; rc != 0 && target < nt; target++)
        if (times[target] > t) memcpy(out + (long)target * len, y, sizeof(double) * (size_t)len);
    free(buf);
    st.t_fail = rc ? t : NAN;
    if (stats) *stats = st;
    return rc;
}

long prt_first_nonfinite(const double *z, long len) {
    for (long i = 0; i < len; i++)
        if (!isfinite(z[i])) return i;
    return -1;
}

void prt_ode_describe_failure(const PrtOdeStats *st, long n, const char *const *names, char *buf, size_t len) {
    if (st->failure == PRT_ODE_NONFINITE) {
        long i = st->bad / n, b = st->bad % n;
        char comp[64];
        if (!names) snprintf(comp, sizeof comp, "component %ld", i);
        snprintf(buf, len, "at t = %.6g, %s of trajectory %ld became non-finite (inf or NaN)", st->t_fail,
                 names ? names[i] : comp, b);
    } else if (st->failure == PRT_ODE_UNDERFLOW) {
        snprintf(buf, len, "at t = %.6g, the step size underflowed (a singularity, or a field changing too fast)",
                 st->t_fail);
    } else if (st->failure == PRT_ODE_OVER_BUDGET) {
        snprintf(buf, len, "at t = %.6g, the integration had taken all the %ld steps it was allowed (too stiff for an "
                 "explicit method)", st->t_fail, st->budget);
    } else if (st->failure == PRT_ODE_TOO_STIFF) {
        snprintf(buf, len, "at t = %.6g, one output interval took more than %ld steps (too stiff for an explicit method)",
                 st->t_fail, st->budget);
    } else if (st->failure == PRT_ODE_NO_CONVERGENCE) {
        snprintf(buf, len, "at t = %.6g, the implicit step's Newton iteration had not converged after %ld iterations",
                 st->t_fail, st->budget);
    } else if (st->failure == PRT_ODE_SINGULAR) {
        snprintf(buf, len, "at t = %.6g, the implicit step's Newton iteration met a singular Jacobian", st->t_fail);
    } else {
        snprintf(buf, len, "no failure");
    }
}
