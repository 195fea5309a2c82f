/* test_evaluate.c — the evaluation's metrics (evaluate.h) against closed forms, on a system
   written by hand: a point of mass 2 in 2-D under gravity 10 along -y, pinned by Phi = X - L
   with L = (0.3, 1). The states the truth passes through all have |Xdot| = 5, so H = 25 + 20 = 45.
   Each metric is made to follow exp(-10 + d_j + 2t) - 1e-8 on trajectory j (d = -2, -1, 3)
   over t = 0, 0.25, .., 1, so every summary has a closed form; the chaos floor is checked on
   free fall, whose perturbed truth is known exactly, and on a point held fast by a tether,
   whose perturbed start projected back onto the constraints is the truth itself. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "train/evaluate.h"
#include "loaded.h"

enum { N = 2, NT = 5, NTRAJ = 3 };
/* the metrics with a series (metrics.h) */
enum { REL = PRT_METRIC_REL_ERROR, ENERGY = PRT_METRIC_ENERGY_ERROR, VIOL = PRT_METRIC_VIOLATION,
       CHAOS = PRT_METRIC_CHAOS_FLOOR };
static const double mass = 2, grav = 10, L[2] = {0.3, 1}, DT = 0.25;

/* the kernels (SoA, n states): P = m Xdot; H = |P|^2 / 2m + m g y; Phi = X - L; dV = (0, m g);
   the field (X, P, dV) -> (P / m, -dV) */
static void mass_v(long n, const double *in, const double *params, double *out) {
    for (long i = 0; i < N * n; i++) out[i] = params[0] * in[i];
}
static void minv_p(long n, const double *in, const double *params, double *out) {
    for (long i = 0; i < N * n; i++) out[i] = in[i] / params[0];
}
static void energy(long n, const double *in, const double *params, double *out) {
    for (long b = 0; b < n; b++) {
        double px = in[2 * n + b], py = in[3 * n + b];
        out[b] = (px * px + py * py) / (2 * params[0]) + params[0] * grav * in[n + b];
    }
}
static void phi(long n, const double *in, const double *lengths, double *out) {
    for (long b = 0; b < n; b++) out[b] = in[b] - lengths[0], out[n + b] = in[n + b] - lengths[1];
}
static void grad_v(long n, const double *in, const double *params, double *out) {
    for (long b = 0; b < n; b++) out[b] = 0, out[n + b] = params[0] * grav;
}
static void field(long n, const double *in, const double *params, double *out) {
    for (long i = 0; i < N * n; i++) out[i] = in[N * n + i] / params[0], out[N * n + i] = -in[2 * N * n + i];
}

static double params[3] = {mass, 0.3, 1};
static PrtSystem sys = {.N = N, .NP = N, .C = 2, .nmass = 1, .nparams = 3, .params = params, .MassV = mass_v,
                        .MinvP = minv_p, .H = energy, .Phi = phi, .gradV = grad_v, .Field = field};

/* component i of state j at point k of an (NT x 2N x NTRAJ) batch */
static double *at(double *z, int k, int i, int j) { return z + (k * 2 * N + i) * NTRAJ + j; }

/* the truth: X = L, Xdot of norm 5 turning with k and j */
static void truth(double *z) {
    for (int k = 0; k < NT; k++)
        for (int j = 0; j < NTRAJ; j++) {
            double a = 0.3 * j + 0.7 * k;
            *at(z, k, 0, j) = L[0], *at(z, k, 1, j) = L[1];
            *at(z, k, 2, j) = 5 * cos(a), *at(z, k, 3, j) = 5 * sin(a);
        }
}

/* the figure each metric is made to follow: log(e + 1e-8) linear in t; the offsets d_j are
   not symmetric, so the geometric mean over trajectories is not their median */
static const double offset[NTRAJ] = {-2, -1, 3};
static double target(int k, int j) { return exp(-10 + offset[j] + 2 * k * DT) - 1e-8; }

static PrtEvalResult metrics(const double *z, double *pred) {
    PrtEvalResult r = {.n = NTRAJ, .nt = NT, .dt = DT, .pred = pred};
    prt_eval_metrics(&sys, z, &r);
    r.pred = NULL; /* the caller's */
    return r;
}

/* The summaries of a series that follows target(): over time the trapezoidal geometric mean
   exp(-9 + d_j); over trajectories the geometric mean exp(-9), the arithmetic mean, and the
   95 % interval exp(-9 -+ t(0.975, 2) sd / sqrt(3)) with sd = sqrt((4 + 1 + 9) / 2) and
   t(0.975, 2) = q sqrt(2 / (1 - q^2)), q = 0.95 (Student's t with 2 degrees of freedom). */
static void check_summaries(const char *name, const double *series, const double *per, double geo, const double ci[2],
                            const double *mean) {
    double worst = 0;
    for (int k = 0; k < NT; k++)
        for (int j = 0; j < NTRAJ; j++) worst = fmax(worst, fabs(series[k * NTRAJ + j] / target(k, j) - 1));
    CHECK(worst < 1e-9, "%s: the series is off its closed form by %g (relative)", name, worst);
    for (int j = 0; j < NTRAJ; j++)
        CHECK(fabs(per[j] / exp(-9 + offset[j]) - 1) < 1e-9, "%s: trajectory %d's time summary %.10g, want exp(%g)", name,
              j, per[j], -9 + offset[j]);
    CHECK(fabs(geo / exp(-9) - 1) < 1e-9, "%s: geometric mean %.10g, want exp(-9)", name, geo);
    if (mean) {
        double want = (exp(-11) + exp(-10) + exp(-6)) / 3;
        CHECK(fabs(*mean / want - 1) < 1e-9, "%s: arithmetic mean %.10g, want %.10g", name, *mean, want);
    }
    double t = 0.95 * sqrt(2 / (1 - 0.95 * 0.95)), se = sqrt(7) / sqrt(3), lo = exp(-9 - t * se), hi = exp(-9 + t * se);
    CHECK(fabs(ci[0] / lo - 1) < 1e-9 && fabs(ci[1] / hi - 1) < 1e-9, "%s: 95%% interval [%.10g, %.10g], want [%.10g, %.10g]",
          name, ci[0], ci[1], lo, hi);
}

/* The chaos floor of tests/physics/pinned-1d.phys, a point that the tether leaves no freedom:
   its constraints (x = 0.7, x' = 0) are one state, the truth at rest there, and the start
   1e-4 off projected back onto them is that state again (to the projection's 1e-12), so the
   floor is 0 where a start left off the constraints would be 1e-4 off at every time. */
static void chaos_floor_on_the_constraints(void) {
    Loaded l;
    char err[512] = "";
    if (!loaded_open(&l, "tests/physics/pinned-1d.phys", COMPILE_CHNN, -1, stdout, err, sizeof err)) {
        CHECK(false, "pinned-1d.phys: %s", err);
        loaded_close(&l);
        return;
    }
    PrtSystem *ps = &l.c.ps;
    enum { n = 3 };
    double z[NT * 2 * n];
    for (int k = 0; k < NT; k++)
        for (int j = 0; j < n; j++) z[k * 2 * n + j] = 0.7, z[k * 2 * n + n + j] = 0;
    PrtEvalResult r = {.n = n, .nt = NT, .dt = DT};
    CHECK(prt_eval_chaos_floor(ps, z, 1e-10, 1e-12, 17, NULL, &r, err, sizeof err) == 0, "pinned chaos floor: %s", err);
    double worst = 0;
    for (int i = 0; r.series[CHAOS] && i < NT * n; i++) worst = fmax(worst, r.series[CHAOS][i]);
    printf("chaos floor of a point held fast: %.1e at most (a start off the constraints: about 1e-4)\n", worst);
    CHECK(r.series[CHAOS] && worst < 1e-11, "the chaos floor of a point held fast is %g, not 0: the perturbed start was not "
          "projected back onto the constraints", worst);
    prt_eval_result_free(&r);
    loaded_close(&l);
}

int main(void) {
    size_t size = sizeof(double) * NT * 2 * N * NTRAJ;
    double *z = malloc(size), *pred = malloc(size);
    truth(z);

    /* a perfect prediction: every metric 0, so every time summary is the floor 1e-8 */
    memcpy(pred, z, size);
    PrtEvalResult r = metrics(z, pred);
    for (int i = 0; i < NT * NTRAJ; i++)
        CHECK(r.series[REL][i] == 0 && r.series[ENERGY][i] == 0 && r.series[VIOL][i] == 0,
              "perfect prediction: %g %g %g at %d", r.series[REL][i], r.series[ENERGY][i], r.series[VIOL][i], i);
    CHECK(fabs(r.value[REL] / 1e-8 - 1) < 1e-12 && fabs(r.value[ENERGY] / 1e-8 - 1) < 1e-12,
          "perfect prediction: %g, %g", r.value[REL], r.value[ENERGY]);
    CHECK(r.value[VIOL] == 0 && r.ci[VIOL][1] == 0, "perfect prediction: violation %g, not 0 (no floor)",
          r.value[VIOL]);
    prt_eval_result_free(&r);

    /* twice the truth: Err = |z| / (2|z| + |z|) = 1/3 at every time, whatever z */
    for (size_t i = 0; i < size / sizeof(double); i++) pred[i] = 2 * z[i];
    r = metrics(z, pred);
    for (int i = 0; i < NT * NTRAJ; i++)
        CHECK(fabs(r.series[REL][i] - 1.0 / 3) < 1e-15, "twice the truth: Err %.17g", r.series[REL][i]);
    prt_eval_result_free(&r);

    /* the velocity reversed: Err = 2|Xdot| / 2|z| = 5 / sqrt(25 + |L|^2) (velocities are part of the state) */
    memcpy(pred, z, size);
    for (int k = 0; k < NT; k++)
        for (int j = 0; j < NTRAJ; j++) *at(pred, k, 2, j) *= -1, *at(pred, k, 3, j) *= -1;
    r = metrics(z, pred);
    double want = 5 / sqrt(25 + L[0] * L[0] + L[1] * L[1]);
    for (int i = 0; i < NT * NTRAJ; i++)
        CHECK(fabs(r.series[REL][i] - want) < 1e-15, "velocity reversed: Err %.17g", r.series[REL][i]);
    prt_eval_result_free(&r);

    /* raised by 0.5 at the truth's velocity: H = 45 + m g 0.5 = 55 with P = m Xdot, so the
       energy error is 10 / (45 + 55) = 0.1; |Phi| = 0.5 */
    memcpy(pred, z, size);
    for (int k = 0; k < NT; k++)
        for (int j = 0; j < NTRAJ; j++) *at(pred, k, 1, j) += 0.5;
    r = metrics(z, pred);
    for (int i = 0; i < NT * NTRAJ; i++) {
        CHECK(fabs(r.series[ENERGY][i] - 0.1) < 1e-15, "constant energy offset: energy error %.17g, want 0.1",
              r.series[ENERGY][i]);
        CHECK(fabs(r.series[VIOL][i] - 0.5) < 1e-15, "raised by 0.5: violation %.17g", r.series[VIOL][i]);
    }
    prt_eval_result_free(&r);

    /* Err following target(): pred = (1 + a) z has Err = a / (2 + a), which is e for a = 2e / (1 - e) */
    for (int k = 0; k < NT; k++)
        for (int j = 0; j < NTRAJ; j++) {
            double e = target(k, j), a = 2 * e / (1 - e);
            for (int i = 0; i < 2 * N; i++) *at(pred, k, i, j) = (1 + a) * *at(z, k, i, j);
        }
    r = metrics(z, pred);
    check_summaries("relative state error", r.series[REL], r.per_traj[REL], r.value[REL], r.ci[REL], &r.mean[REL]);
    prt_eval_result_free(&r);

    /* the energy error following target(): the speed scaled by s gives H' = 25 s^2 + 20, and
       (H' - 45) / (H' + 45) = e for H' = 45 (1 + e) / (1 - e) */
    for (int k = 0; k < NT; k++)
        for (int j = 0; j < NTRAJ; j++) {
            double e = target(k, j), s = sqrt((45 * (1 + e) / (1 - e) - 20) / 25);
            for (int i = 0; i < 2 * N; i++) *at(pred, k, i, j) = (i < N ? 1 : s) * *at(z, k, i, j);
        }
    r = metrics(z, pred);
    check_summaries("relative energy error", r.series[ENERGY], r.per_traj[ENERGY], r.value[ENERGY], r.ci[ENERGY],
                    &r.mean[ENERGY]);
    prt_eval_result_free(&r);

    /* |Phi| following target(): X moved by e (0.6, -0.8) off L, a distance e (the Euclidean
       norm of the rows, not their largest or their sum) */
    memcpy(pred, z, size);
    for (int k = 0; k < NT; k++)
        for (int j = 0; j < NTRAJ; j++) *at(pred, k, 0, j) += 0.6 * target(k, j), *at(pred, k, 1, j) -= 0.8 * target(k, j);
    r = metrics(z, pred);
    double worst = 0, means[NTRAJ], all = 0;
    for (int k = 0; k < NT; k++)
        for (int j = 0; j < NTRAJ; j++) worst = fmax(worst, fabs(r.series[VIOL][k * NTRAJ + j] / target(k, j) - 1));
    CHECK(worst < 1e-9, "constraint violation: the series is off its closed form by %g (relative)", worst);
    /* summarized without a floor: the trapezoidal mean over time, then over trajectories, with
       the mean's interval mean -+ t(0.975, 2) sd / sqrt(3) (its lower end not below 0) */
    for (int j = 0; j < NTRAJ; j++) {
        means[j] = 0;
        for (int k = 0; k + 1 < NT; k++) means[j] += 0.5 * DT * (target(k, j) + target(k + 1, j)) / (DT * (NT - 1));
        CHECK(fabs(r.per_traj[VIOL][j] / means[j] - 1) < 1e-12, "violation: trajectory %d's mean %.10g, want %.10g", j,
              r.per_traj[VIOL][j], means[j]);
        all += means[j] / NTRAJ;
    }
    double ss = 0;
    for (int j = 0; j < NTRAJ; j++) ss += (means[j] - all) * (means[j] - all);
    double half = 0.95 * sqrt(2 / (1 - 0.95 * 0.95)) * sqrt(ss / 2 / 3);
    CHECK(r.constrained && fabs(r.value[VIOL] / all - 1) < 1e-12, "violation: mean %.10g, want %.10g", r.value[VIOL],
          all);
    CHECK(fabs(r.ci[VIOL][1] / (all + half) - 1) < 1e-9 && r.ci[VIOL][0] == fmax(0, all - half),
          "violation: interval [%.10g, %.10g], want [%.10g, %.10g]", r.ci[VIOL][0], r.ci[VIOL][1],
          fmax(0, all - half), all + half);
    prt_eval_result_free(&r);

    /* the same without constraints: nothing to violate, so no figure (not the zeros' mean) */
    PrtSystem free_sys = sys;
    free_sys.C = 0;
    memcpy(pred, z, size);
    r = (PrtEvalResult){.n = NTRAJ, .nt = NT, .dt = DT, .pred = pred};
    prt_eval_metrics(&free_sys, z, &r);
    r.pred = NULL;
    CHECK(!r.constrained && isnan(r.value[VIOL]) && isnan(r.ci[VIOL][0]), "no constraints: violation %g",
          r.value[VIOL]);
    prt_eval_result_free(&r);

    /* at rest at the origin (a kink's minimum, say): truth and prediction both 0 agree, and
       their relative errors are 0, not 0 / 0 = NaN; a NaN velocity of the prediction at t =
       0.5 is the first figure that is not finite, named with its trajectory and time */
    double *zero = calloc(size / sizeof(double), sizeof(double));
    memcpy(pred, zero, size);
    r = metrics(zero, pred);
    char why[256];
    prt_eval_find_nonfinite(&r, why, sizeof why);
    CHECK(r.series[REL][0] == 0 && r.series[ENERGY][0] == 0 && r.energy_truth[0] == 0 && !why[0] &&
          isfinite(r.value[REL]) && isfinite(r.value[ENERGY]), "both at 0: Err %g, energy error %g, geometric means %g %g ('%s')",
          r.series[REL][0], r.series[ENERGY][0], r.value[REL], r.value[ENERGY], why);
    prt_eval_result_free(&r);
    *at(pred, 2, 3, 1) = NAN, *at(pred, 3, 2, 0) = NAN;
    r = metrics(zero, pred);
    prt_eval_find_nonfinite(&r, why, sizeof why);
    CHECK(!strcmp(why, "the relative state error of test trajectory 1 is NaN at t = 0.5"), "a NaN state: '%s'", why);
    prt_eval_result_free(&r);
    free(zero);

    /* The chaos floor on free fall (no constraints): the truth from z0 + 1e-4 N(0, 1) (the
       draws of `seed`, in the layout's order) differs from the truth by (dX + dXdot t, dXdot). */
    PrtSystem fall = sys;
    fall.C = 0;
    for (int k = 0; k < NT; k++)
        for (int j = 0; j < NTRAJ; j++) {
            double t = k * DT, x0[2] = {j, 2 - j}, v0[2] = {1 + j, 3};
            for (int i = 0; i < N; i++) {
                *at(z, k, i, j) = x0[i] + v0[i] * t - (i == 1) * grav * t * t / 2;
                *at(z, k, N + i, j) = v0[i] - (i == 1) * grav * t;
            }
        }
    uint64_t seed = 17;
    double d[2 * N * NTRAJ];
    worst = 0;
    PrtRng rng;
    prt_rng_seed(&rng, seed);
    for (int i = 0; i < 2 * N * NTRAJ; i++) d[i] = 1e-4 * prt_rng_normal(&rng);
    r = (PrtEvalResult){.n = NTRAJ, .nt = NT, .dt = DT};
    char err[256] = "";
    CHECK(prt_eval_chaos_floor(&fall, z, 1e-10, 1e-12, seed, NULL, &r, err, sizeof err) == 0, "chaos floor: %s", err);
    for (int k = 0; k < NT; k++)
        for (int j = 0; j < NTRAJ; j++) {
            double dz2 = 0, n1 = 0, n2 = 0;
            for (int i = 0; i < 2 * N; i++) {
                double dz = d[i * NTRAJ + j] + (i < N ? d[(N + i) * NTRAJ + j] * k * DT : 0), y = *at(z, k, i, j);
                dz2 += dz * dz, n1 += y * y, n2 += (y + dz) * (y + dz);
            }
            double e = sqrt(dz2) / (sqrt(n1) + sqrt(n2));
            worst = fmax(worst, fabs(r.series[CHAOS][k * NTRAJ + j] / e - 1));
        }
    printf("chaos floor on free fall: %.3e at t = 0 on trajectory 0, off the closed form by %.1e (relative)\n",
           r.series[CHAOS][0], worst);
    CHECK(worst < 1e-8, "chaos floor off the perturbed free fall by %g (relative)", worst);
    for (int j = 0; j < NTRAJ; j++)
        CHECK(r.per_traj[CHAOS][j] == prt_time_geomean(r.series[CHAOS] + j, NT, NTRAJ, DT),
              "chaos floor: trajectory %d's summary", j);
    prt_eval_result_free(&r);
    prt_system_release(&fall);

    free(z), free(pred);
    chaos_floor_on_the_constraints();
    printf("%s: %s\n", __FILE__, failures ? "FAILED" : "ok");
    return failures != 0;
}
