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
    for (int k = 0; k + 1 < nt; k++) s += 0.5 * dt * (log(e[k * stride] + 1e-8) + log(e[(k + 1) * stride] + 1e-8));
    return exp(s / (dt * (nt - 1)));
}

void prt_rel_state_error(long n, int rows, const double *a, const double *b, double *out) {
    for (long j = 0; j < n; j++) {
        double d = 0, na = 0, nb = 0;
        for (int i = 0; i < rows; i++) {
            double x = a[i * n + j], y = b[i * n + j];
            d += (x - y) * (x - y), na += x * x, nb += y * y;
        }
        out[j] = sqrt(d) / (sqrt(na) + sqrt(nb));
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
    r->n = n, r->nt = nt, r->dt = test->dt;
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
    return prt_eval_chaos_floor(s, test->xv, rtol, atol, seed, m->rollout_observer, r, err, errlen);
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
        prt_rel_state_error(n, prt_state_rows(s), zh, z, r->err + k * n);
        true_energy(s, n, z, h1, buf);
        true_energy(s, n, zh, h2, buf);
        memcpy(r->energy_truth + k * n, h1, sizeof(double) * (size_t)n);
        memcpy(r->energy_pred + k * n, h2, sizeof(double) * (size_t)n);
        for (long j = 0; j < n; j++) {
            r->energy[k * n + j] = fabs(h1[j] - h2[j]) / (fabs(h1[j]) + fabs(h2[j]));
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
    summarize(r->violation, nt, n, r->dt, r->traj_violation, &r->violation_geo, r->violation_ci, NULL);
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

/* A row of the table: the geometric mean, its 95 % interval, the arithmetic mean. */
static void print_metric(FILE *out, const char *name, double geo, const double ci[2], double mean) {
    char ci_text[32] = "";
    if (isfinite(ci[0]) && isfinite(ci[1])) snprintf(ci_text, sizeof ci_text, "[%.2e, %.2e]", ci[0], ci[1]);
    if (isfinite(mean)) fprintf(out, "  %-30s %-10.3e %-21s %.3e\n", name, geo, ci_text, mean);
    else fprintf(out, "  %-30s %-10.3e %s\n", name, geo, ci_text);
}

void prt_eval_print_table(FILE *out, const char *title, const PrtEvalResult *r) {
    fprintf(out, "  %-30s %-10s %-21s %s\n", title, "geo. mean", "(95% CI)", "arith. mean");
    print_metric(out, "relative state error", r->err_geo, r->err_ci, r->err_mean);
    print_metric(out, "relative energy error", r->energy_geo, r->energy_ci, r->energy_mean);
    print_metric(out, r->so3 ? "manifold error |R^T R - I|" : "constraint violation |Phi|", r->violation_geo,
                 r->violation_ci, NAN);
    print_metric(out, "chaos floor (truth, 1e-4 off)", r->chaos_geo, r->chaos_ci, r->chaos_mean);
    fprintf(out, "  %-30s %.3e\n  %-30s %.3e\n", "position MSE", r->pos_mse, "true energy MSE", r->energy_mse);
    if (!isnan(r->model_energy_var)) fprintf(out, "  %-30s %.3e\n", "variance of the model's energy", r->model_energy_var);
    if (r->so3) /* the Lie T2 paper's App. E */
        fprintf(out, "  %-30s %.3e\n  %-30s %.3e\n  %-30s %.3e\n  %-30s %.3e\n  %-30s %.3e\n  %-30s %.3e\n",
                "|dq| (rollout)", r->so3_dq, "|dR| geodesic (rollout)", r->so3_dR, "|dpdot| (one interval)", r->so3_dpdot,
                "|dPidot| (one interval)", r->so3_dPidot, "|dV_q| (residual)", r->so3_dVq, "|dV_R| (residual)", r->so3_dVR);
}
