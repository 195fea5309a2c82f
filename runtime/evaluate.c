/* evaluate.c — rollouts and metrics (see evaluate.h). */
#include "evaluate.h"
#include "lie_group.h"
#include "alloc.h"

#include "stats.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

double prt_time_geomean(const double *e, int nt, long stride, double dt) {
    if (nt < 2) return e[0];
    double s = 0;
    for (int k = 0; k + 1 < nt; k++)
        s += 0.5 * dt * (log(e[k * stride] + PRT_EVAL_FLOOR) + log(e[(k + 1) * stride] + PRT_EVAL_FLOOR));
    return exp(s / (dt * (nt - 1)));
}

double prt_time_mean(const double *e, int nt, long stride, double dt) {
    if (nt < 2) return e[0];
    double s = 0;
    for (int k = 0; k + 1 < nt; k++) s += 0.5 * dt * (e[k * stride] + e[(k + 1) * stride]);
    return s / (dt * (nt - 1));
}

void prt_rel_state_error(long n, int rows, const double *a, const double *b, double *out) {
    for (long j = 0; j < n; j++) {
        double d = 0, na = 0, nb = 0;
        for (int i = 0; i < rows; i++) {
            double x = a[i * n + j], y = b[i * n + j];
            d += (x - y) * (x - y), na += x * x, nb += y * y;
        }
        /* equal states have no error, both at 0 too (a body at rest at the origin: 0 / 0) */
        out[j] = d == 0 ? 0 : sqrt(d) / (sqrt(na) + sqrt(nb));
    }
}

/* The true energy of Cartesian states (X, Xdot): P = M Xdot with the true masses. */
static void true_energy(PrtSystem *s, long n, const double *xv, double *h, double *buf) {
    long Nn = (long)s->N * n;
    memcpy(buf, xv, sizeof(double) * (size_t)Nn);
    prt_massv(s, n, xv + Nn, buf + Nn);
    prt_energy(s, n, buf, h);
}

/* Summaries over time of a (nt x n) series into per (n), then over trajectories: the
   geometric mean with its 95 % confidence interval, and the arithmetic mean. */
static void summarize(const double *series, int nt, long n, double dt, double *per, double *geo, double ci[2],
                      double *mean) {
    double sum = 0;
    for (long j = 0; j < n; j++) {
        per[j] = prt_time_geomean(series + j, nt, n, dt);
        sum += per[j];
    }
    *geo = prt_geomean(per, n);
    prt_geomean_ci(per, n, 0.95, &ci[0], &ci[1]);
    if (mean) *mean = sum / (double)n;
}

/* The same by arithmetic means over time and over trajectories, with the mean's interval:
   for the violation, whose zeros (a rollout on the constraints to the last bit) the
   logarithm cannot take, and whose rounding-level values the geometric mean's floor hides. */
static void summarize_mean(const double *series, int nt, long n, double dt, double *per, double *mean, double ci[2]) {
    for (long j = 0; j < n; j++) per[j] = prt_time_mean(series + j, nt, n, dt);
    *mean = prt_mean(per, n);
    if (prt_mean_ci(per, n, 0.95, &ci[0], &ci[1]) && ci[0] < 0) ci[0] = 0; /* (a mean of sizes is not below 0) */
}

/* "NaN" or "infinite": printf's "-nan" reads as a number. */
static const char *nonfinite_word(double v) { return isnan(v) ? "NaN" : "infinite"; }

void prt_eval_find_nonfinite(const PrtEvalResult *r, char *why, size_t len) {
    long n = r->n;
    why[0] = 0;
    const char *name[5] = {"relative state error", "relative energy error",
                           r->so3 ? "manifold error |R^T R - I|" : "constraint violation |Phi|",
                           "chaos floor's relative state error", "model's own energy"};
    const double *series[5] = {r->err, r->energy, r->constrained ? r->violation : NULL, r->chaos, r->model_energy};
    for (int k = 0; k < r->nt; k++)
        for (int f = 0; f < 5; f++)
            for (long j = 0; series[f] && j < n; j++) {
                double v = series[f][k * n + j];
                if (isfinite(v)) continue;
                char cause[96] = ""; /* the energy error: which energy was not finite */
                double hp = r->energy_pred[k * n + j], ht = r->energy_truth[k * n + j];
                if (f == 1 && !isfinite(hp))
                    snprintf(cause, sizeof cause, " (the true energy of the model's state is %s)", nonfinite_word(hp));
                else if (f == 1 && !isfinite(ht))
                    snprintf(cause, sizeof cause, " (the true energy of the test state is %s)", nonfinite_word(ht));
                snprintf(why, len, "the %s of test trajectory %ld is %s at t = %g%s", name[f], j, nonfinite_word(v),
                         k * r->dt, cause);
                return;
            }
    const char *sname[] = {"relative state error's geometric mean", "relative state error's arithmetic mean",
                           "relative energy error's geometric mean", "relative energy error's arithmetic mean",
                           "constraint violation's mean", "chaos floor", "chaos floor's arithmetic mean", "position MSE",
                           "true energy MSE", "variance of the model's energy", "|dq| (rollout)", "|dR| geodesic (rollout)",
                           "|dpdot| (one interval)", "|dPidot| (one interval)", "|dV_q| (residual)", "|dV_R| (residual)"};
    const double summary[] = {r->err_geo, r->err_mean, r->energy_geo, r->energy_mean, r->constrained ? r->violation_mean : 0,
                              r->chaos_geo, r->chaos_mean, r->pos_mse, r->energy_mse, r->model_energy ? r->model_energy_var : 0,
                              r->so3_dq, r->so3_dR, r->so3_dpdot, r->so3_dPidot, r->so3_dVq, r->so3_dVR};
    int nsummary = r->so3 ? (int)(sizeof summary / sizeof summary[0]) : 10;
    for (int i = 0; i < nsummary; i++)
        if (!isfinite(summary[i])) {
            snprintf(why, len, "the %s is %s%s", sname[i], nonfinite_word(summary[i]),
                     i == 11 ? " (a rollout's rotation too far from SO(3) to have a nearest one)" : "");
            return;
        }
}

int prt_evaluate(PrtModel *m, const double *theta, const PrtTrajSet *test, int horizon, double rtol, double atol,
                 uint64_t seed, PrtEvalResult *r, char *err, size_t errlen) {
    memset(r, 0, sizeof *r);
    PrtSystem *s = m->sys;
    long n = test->n, pt = (long)prt_state_rows(s) * n;
    int nt = horizon + 1 < test->npts ? horizon + 1 : test->npts;
    if (n == 0 || nt < 2) {
        snprintf(err, errlen, "evaluation needs test trajectories of at least 2 points");
        return -1;
    }
    if (nt <= m->family->start_points) { /* a two-step model is given its first points: nothing left to predict */
        snprintf(err, errlen, "a %s model's rollout starts from the first %d points of each trajectory: a rollout of %d "
                 "step%s leaves nothing to predict", m->family->title, m->family->start_points, nt - 1, nt == 2 ? "" : "s");
        return -1;
    }
    r->n = n, r->nt = nt, r->dt = test->dt, r->model_title = m->family->title;
    double *times = prt_xalloc((size_t)nt, sizeof(double), "evaluation series");
    for (int k = 0; k < nt; k++) times[k] = k * test->dt;
    r->pred = prt_xalloc((size_t)(pt * nt), sizeof(double), "evaluation series");
    r->rollout_failed = prt_model_rollout(m, theta, n, test->xv, times, nt, rtol, atol, r->pred) != 0;
    r->rollout_steps = m->rollout_stats.steps + m->rollout_stats.rejected;
    if (r->rollout_failed)
        prt_ode_describe_failure(&m->rollout_stats, n, NULL, r->rollout_why, sizeof r->rollout_why);
    free(times);
    prt_eval_metrics(s, test->xv, r);
    r->so3_dq = r->so3_dR = r->so3_dpdot = r->so3_dPidot = r->so3_dVq = r->so3_dVR = NAN;
    r->so3_dq_sq = r->so3_dR_sq = r->so3_dpdot_sq = r->so3_dPidot_sq = NAN;
    if (s->nso3 > 0) prt_eval_so3(m, theta, test, r);
    r->model_energy_var = NAN;
    if (m->family->energy) { /* the variance over time of the model's own energy, averaged */
        r->model_energy = prt_xalloc((size_t)(nt * n), sizeof(double), "evaluation series");
        for (int k = 0; k < nt; k++) m->family->energy(m, theta, n, r->pred + k * pt, r->model_energy + k * n);
        double sum = 0;
        for (long j = 0; j < n; j++) {
            double mean = 0, var = 0;
            for (int k = 0; k < nt; k++) mean += r->model_energy[k * n + j] / nt;
            for (int k = 0; k < nt; k++) var += (r->model_energy[k * n + j] - mean) * (r->model_energy[k * n + j] - mean) / nt;
            sum += var;
        }
        r->model_energy_var = sum / (double)n;
    }
    int rc = prt_eval_chaos_floor(s, test->xv, rtol, atol, seed, m->rollout_observer, r, err, errlen);
    if (rc == 0 && !r->rollout_failed) prt_eval_find_nonfinite(r, r->nonfinite, sizeof r->nonfinite);
    return rc;
}

/* |R^T R - I|_F^2 of the rotation in rows row..row+8 (row-major R) of state j of z (SoA, n
   states): how far a rollout left SO(3), the Lie T2 paper's manifold error (its Figure 3). */
static double so3_distance2(const double *z, long n, int row, long j) {
    double R[9], E[9], d2 = 0;
    prt_soa_gather(z, n, row, 9, j, R);
    prt_so3_gram_error(R, E);
    for (int i = 0; i < 9; i++) d2 += E[i] * E[i];
    return d2;
}

void prt_eval_metrics(PrtSystem *s, const double *truth, PrtEvalResult *r) {
    long n = r->n, pt = (long)prt_state_rows(s) * n;
    int nt = r->nt;
    size_t series = sizeof(double) * (size_t)(nt * n);
    r->err = prt_xalloc(series, 1, "evaluation series"), r->energy = prt_xalloc(series, 1, "evaluation series"), r->violation = prt_xalloc(series, 1, "evaluation series");
    r->traj_err = prt_xalloc((size_t)n, sizeof(double), "evaluation series"), r->traj_energy = prt_xalloc((size_t)n, sizeof(double), "evaluation series");
    r->traj_violation = prt_xalloc((size_t)n, sizeof(double), "evaluation series");
    r->energy_truth = prt_xalloc(series, 1, "evaluation series"), r->energy_pred = prt_xalloc(series, 1, "evaluation series");
    double *buf = prt_xalloc((size_t)pt, sizeof(double), "evaluation series"), *h1 = prt_xalloc((size_t)n, sizeof(double), "evaluation series"),
           *h2 = prt_xalloc((size_t)n, sizeof(double), "evaluation series"), *phi = prt_xalloc((size_t)(s->C * n + 1), sizeof(double), "evaluation series");
    for (int k = 0; k < nt; k++) {
        const double *z = truth + k * pt, *zh = r->pred + k * pt;
        prt_rel_state_error(n, prt_state_rows(s), zh, z, r->err + k * n); /* (0 where they are equal) */
        true_energy(s, n, z, h1, buf);
        true_energy(s, n, zh, h2, buf);
        memcpy(r->energy_truth + k * n, h1, sizeof(double) * (size_t)n);
        memcpy(r->energy_pred + k * n, h2, sizeof(double) * (size_t)n);
        for (long j = 0; j < n; j++) {
            double dh = fabs(h1[j] - h2[j]); /* equal energies, both 0 too, have no error */
            r->energy[k * n + j] = dh == 0 ? 0 : dh / (fabs(h1[j]) + fabs(h2[j]));
            r->energy_mse += (h1[j] - h2[j]) * (h1[j] - h2[j]);
        }
        for (long i = 0; i < (long)s->N * n; i++) r->pos_mse += (zh[i] - z[i]) * (zh[i] - z[i]);
        if (s->C > 0) prt_phi(s, n, zh, s->params + s->nmass, phi);
        for (long j = 0; j < n; j++) {
            double v = 0;
            for (int c = 0; c < s->C; c++) v += phi[c * n + j] * phi[c * n + j];
            for (int b = 0; b < s->nso3; b++) v += so3_distance2(zh, n, s->so3[b].x + 3, j); /* their own constraint */
            r->violation[k * n + j] = sqrt(v);
        }
    }
    r->energy_mse /= (double)nt * (double)n;
    r->pos_mse /= (double)nt * (double)n * s->N;
    summarize(r->err, nt, n, r->dt, r->traj_err, &r->err_geo, r->err_ci, &r->err_mean);
    summarize(r->energy, nt, n, r->dt, r->traj_energy, &r->energy_geo, r->energy_ci, &r->energy_mean);
    r->constrained = s->C > 0 || s->nso3 > 0;
    summarize_mean(r->violation, nt, n, r->dt, r->traj_violation, &r->violation_mean, r->violation_ci);
    if (!r->constrained) r->violation_mean = r->violation_ci[0] = r->violation_ci[1] = NAN; /* nothing to violate */
    free(buf), free(h1), free(h2), free(phi);
}

int prt_eval_chaos_floor(PrtSystem *s, const double *truth, double rtol, double atol, uint64_t seed,
                         const PrtOdeObserver *obs, PrtEvalResult *r, char *err, size_t errlen) {
    long n = r->n, Nn = (long)s->N * n, NPn = (long)s->NP * n, pt = Nn + NPn;
    int nt = r->nt;
    r->chaos = prt_xalloc((size_t)(nt * n), sizeof(double), "evaluation series"), r->traj_chaos = prt_xalloc((size_t)n, sizeof(double), "evaluation series");
    double *times = prt_xalloc((size_t)nt, sizeof(double), "evaluation series"), *buf = prt_xalloc((size_t)pt, sizeof(double), "evaluation series");
    for (int k = 0; k < nt; k++) times[k] = k * r->dt;
    /* the truth from a perturbed, re-projected start */
    double *z0 = prt_xalloc((size_t)pt, sizeof(double), "evaluation series"), *moved = prt_xalloc((size_t)(pt * nt), sizeof(double), "evaluation series");
    memcpy(z0, truth, sizeof(double) * (size_t)pt);
    PrtRng rng;
    prt_rng_seed(&rng, seed);
    for (long i = 0; i < pt; i++) z0[i] += 1e-4 * prt_rng_normal(&rng);
    int rc = 0;
    if (prt_project(s, n, z0, 1e-12, PRT_METRIC_EUCLIDEAN) < 0) {
        snprintf(err, errlen, "projecting the perturbed test states for the chaos floor failed");
        rc = -1;
        goto done;
    }
    for (int k = 0; k < 4; k++) prt_lie_reorthonormalize(s, n, z0); /* `state so3` bodies' R back onto SO(3) */
    prt_massv(s, n, z0 + Nn, buf);
    memcpy(z0 + Nn, buf, sizeof(double) * (size_t)NPn);
    if (prt_dopri5_observed(prt_hamiltonian_rhs, s, n, prt_state_rows(s), z0, times, nt, rtol, atol, moved, NULL, obs) != 0) {
        snprintf(err, errlen, "dopri5 failed on the true dynamics (chaos floor)");
        rc = -1;
        goto done;
    }
    for (int k = 0; k < nt; k++) {
        double *z = moved + k * pt;
        prt_minv(s, n, z + Nn, buf);
        memcpy(z + Nn, buf, sizeof(double) * (size_t)NPn);
        prt_rel_state_error(n, prt_state_rows(s), z, truth + k * pt, r->chaos + k * n);
    }
    summarize(r->chaos, nt, n, r->dt, r->traj_chaos, &r->chaos_geo, r->chaos_ci, &r->chaos_mean);
done:
    free(times), free(buf), free(z0), free(moved);
    return rc;
}

void prt_eval_result_free(PrtEvalResult *r) {
    free(r->pred), free(r->err), free(r->energy), free(r->violation), free(r->chaos), free(r->model_energy);
    free(r->energy_truth), free(r->energy_pred);
    free(r->traj_err), free(r->traj_energy), free(r->traj_violation), free(r->traj_chaos);
    free(r->so3_dq_body), free(r->so3_dR_body), free(r->so3_dtau_body), free(r->so3_tau_body);
    memset(r, 0, sizeof *r);
}

/* A number of the table, "-" where it is not finite (the caller says why below the table). */
static const char *num(char buf[32], const char *fmt, double v) {
    if (!isfinite(v)) return "-";
    snprintf(buf, 32, fmt, v);
    return buf;
}

/* A row of the table: the geometric mean, its 95 % interval, the arithmetic mean. */
static void print_metric(FILE *out, const char *name, double geo, const double ci[2], double mean) {
    char ci_text[48] = "", b[2][32];
    if (isfinite(ci[0]) && isfinite(ci[1])) snprintf(ci_text, sizeof ci_text, "[%.2e, %.2e]", ci[0], ci[1]);
    fprintf(out, "  %-30s %-10s %-21s %s\n", name, num(b[0], "%.3e", geo), ci_text, num(b[1], "%.3e", mean));
}

void prt_eval_print_table(FILE *out, const char *title, const PrtEvalResult *r) {
    char b[3][32];
    fprintf(out, "  %-30s %-10s %-21s %s\n", title, "geo. mean", "(95% CI)", "arith. mean");
    print_metric(out, "relative state error", r->err_geo, r->err_ci, r->err_mean);
    print_metric(out, "relative energy error", r->energy_geo, r->energy_ci, r->energy_mean);
    const char *violation = r->so3 ? "manifold error |R^T R - I|" : "constraint violation |Phi|";
    if (!r->constrained) fprintf(out, "  %-30s none: the system has no constraints\n", violation);
    else { /* no geometric mean: its floor would stand for the rounding-level violations it hides */
        fprintf(out, "  %-30s %-10s %-21s %s", violation, "", "", num(b[0], "%.3e", r->violation_mean));
        if (isfinite(r->violation_ci[0])) fprintf(out, " [%.2e, %.2e]", r->violation_ci[0], r->violation_ci[1]);
        fputc('\n', out);
    }
    print_metric(out, "chaos floor (truth, 1e-4 off)", r->chaos_geo, r->chaos_ci, r->chaos_mean);
    fprintf(out, "  %-30s %s\n  %-30s %s\n", "position MSE", num(b[0], "%.3e", r->pos_mse), "true energy MSE",
            num(b[1], "%.3e", r->energy_mse));
    if (r->model_energy) fprintf(out, "  %-30s %s\n", "variance of the model's energy", num(b[0], "%.3e", r->model_energy_var));
    else fprintf(out, "  %-30s none: a %s model has no energy of its own\n", "variance of the model's energy", r->model_title);
    if (r->so3) /* the Lie T2 paper's App. E */
        for (int i = 0; i < 6; i++) {
            const char *name[6] = {"|dq| (rollout)", "|dR| geodesic (rollout)", "|dpdot| (one interval)",
                                   "|dPidot| (one interval)", "|dV_q| (residual)", "|dV_R| (residual)"};
            const double v[6] = {r->so3_dq, r->so3_dR, r->so3_dpdot, r->so3_dPidot, r->so3_dVq, r->so3_dVR};
            fprintf(out, "  %-30s %s\n", name[i], num(b[2], "%.3e", v[i]));
        }
    /* what the columns are: a figure near the floor is the floor, not a measurement */
    fprintf(out, "  geo. mean: over the test trajectories of exp(time mean of log(e(t) + %g)); %g is a floor\n"
            "  arith. mean: of the same per-trajectory figures; for %s, of the violation itself over time and "
            "trajectories\n", PRT_EVAL_FLOOR, PRT_EVAL_FLOOR, r->so3 ? "|R^T R - I|" : "|Phi|");
}
