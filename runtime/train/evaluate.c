/* evaluate.c — rollouts and metrics (see evaluate.h). */
#include "evaluate.h"
#include "integrators/lie_group.h"
#include "core/alloc.h"

#include "math/stats.h"

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

/* Metric id's series (nt x n) summarized as its row says: per trajectory over time, then over
   the trajectories. The arithmetic means (PRT_SUMMARY_MEAN) are for the violation, whose zeros
   (a rollout on the constraints to the last bit) the logarithm cannot take, and whose
   rounding-level values the geometric mean's floor hides. */
void prt_eval_summarize(PrtEvalResult *r, int id) {
    const double *series = r->series[id];
    double *per = r->per_traj[id], *ci = r->ci[id];
    long n = r->n;
    if (prt_metrics[id].summary == PRT_SUMMARY_GEOMEAN) {
        double sum = 0;
        for (long j = 0; j < n; j++) {
            per[j] = prt_time_geomean(series + j, r->nt, n, r->dt);
            sum += per[j];
        }
        r->value[id] = prt_geomean(per, n);
        prt_geomean_ci(per, n, 0.95, &ci[0], &ci[1]);
        r->mean[id] = sum / (double)n;
    } else {
        for (long j = 0; j < n; j++) per[j] = prt_time_mean(series + j, r->nt, n, r->dt);
        r->value[id] = prt_mean(per, n);
        if (prt_mean_ci(per, n, 0.95, &ci[0], &ci[1]) && ci[0] < 0) ci[0] = 0; /* (a mean of sizes is not below 0) */
    }
}

/* Metric id's series (nt x n) and its per-trajectory summaries (n), allocated: the series. */
double *prt_eval_new_series(PrtEvalResult *r, int id) {
    r->per_traj[id] = prt_xalloc((size_t)r->n, sizeof(double), "evaluation series");
    return r->series[id] = prt_xalloc((size_t)(r->nt * r->n), sizeof(double), "evaluation series");
}

/* Metric id is undefined here: its figures are NaN (null in metrics.json). */
static void none(PrtEvalResult *r, int id) {
    r->value[id] = r->mean[id] = r->squares[id] = r->ci[id][0] = r->ci[id][1] = NAN;
}

bool prt_metric_applies(const PrtEvalResult *r, int id) {
    switch (prt_metrics[id].scope) {
    case PRT_SCOPE_ALL: return true;
    case PRT_SCOPE_CONSTRAINED: return r->constrained;
    case PRT_SCOPE_MODEL_ENERGY: return r->model_energy != NULL;
    case PRT_SCOPE_SO3: return r->so3;
    case PRT_SCOPE_RIGID: return r->rigid;
    case PRT_NSCOPES: break;
    }
    return false;
}

bool prt_metric_family_has(int id, const PrtModelFamily *fam) {
    return prt_metrics[id].scope != PRT_SCOPE_MODEL_ENERGY || fam->energy;
}

const char *prt_metric_label(const PrtEvalResult *r, int id) {
    const PrtMetricRow *m = &prt_metrics[id];
    return r->so3 && m->label_so3 ? m->label_so3 : m->label;
}

/* "NaN" or "infinite": printf's "-nan" reads as a number. */
static const char *nonfinite_word(double v) { return isnan(v) ? "NaN" : "infinite"; }

void prt_eval_find_nonfinite(const PrtEvalResult *r, char *why, size_t len) {
    long n = r->n;
    why[0] = 0;
    for (int k = 0; k < r->nt; k++)
        for (int id = 0; id <= PRT_NMETRICS; id++) { /* each metric's series, then the model's own energy */
            const double *series = id == PRT_NMETRICS     ? r->model_energy
                                   : prt_metric_applies(r, id) ? r->series[id]
                                                               : NULL;
            for (long j = 0; series && j < n; j++) {
                double v = series[k * n + j];
                if (isfinite(v)) continue;
                char cause[96] = ""; /* the energy error: which energy was not finite */
                double hp = r->energy_pred[k * n + j], ht = r->energy_truth[k * n + j];
                if (id == PRT_METRIC_ENERGY_ERROR && !isfinite(hp))
                    snprintf(cause, sizeof cause, " (the true energy of the model's state is %s)", nonfinite_word(hp));
                else if (id == PRT_METRIC_ENERGY_ERROR && !isfinite(ht))
                    snprintf(cause, sizeof cause, " (the true energy of the test state is %s)", nonfinite_word(ht));
                snprintf(why, len, "the %s of test trajectory %ld is %s at t = %g%s",
                         id == PRT_NMETRICS ? "model's own energy" : prt_metric_label(r, id), j, nonfinite_word(v), k * r->dt,
                         cause);
                return;
            }
        }
    for (int id = 0; id < PRT_NMETRICS; id++) { /* the summaries: each figure, the arithmetic mean beside a geometric */
        const PrtMetricRow *m = &prt_metrics[id];
        if (!prt_metric_applies(r, id)) continue;
        bool geometric = m->summary == PRT_SUMMARY_GEOMEAN;
        for (int i = 0; i < (geometric ? 2 : 1); i++) {
            double v = i ? r->mean[id] : r->value[id];
            if (isfinite(v)) continue;
            const char *which = geometric ? (i ? "'s arithmetic mean" : "'s geometric mean")
                                : m->summary == PRT_SUMMARY_MEAN ? "'s mean" : "";
            snprintf(why, len, "the %s%s is %s%s%s%s", prt_metric_label(r, id), which, nonfinite_word(v),
                     m->why_nonfinite ? " (" : "", m->why_nonfinite ? m->why_nonfinite : "", m->why_nonfinite ? ")" : "");
            return;
        }
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
    if (s->nso3 > 0) prt_eval_so3(m, theta, test, r);
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
        r->value[PRT_METRIC_MODEL_ENERGY_VAR] = sum / (double)n;
    }
    for (int id = 0; id < PRT_NMETRICS; id++)
        if (!prt_metric_applies(r, id)) none(r, id);
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
    double *err = prt_eval_new_series(r, PRT_METRIC_REL_ERROR), *energy = prt_eval_new_series(r, PRT_METRIC_ENERGY_ERROR),
           *violation = prt_eval_new_series(r, PRT_METRIC_VIOLATION);
    r->energy_truth = prt_xalloc(series, 1, "evaluation series"), r->energy_pred = prt_xalloc(series, 1, "evaluation series");
    double *buf = prt_xalloc((size_t)pt, sizeof(double), "evaluation series"), *h1 = prt_xalloc((size_t)n, sizeof(double), "evaluation series"),
           *h2 = prt_xalloc((size_t)n, sizeof(double), "evaluation series"), *phi = prt_xalloc((size_t)(s->C * n + 1), sizeof(double), "evaluation series");
    double pos_mse = 0, energy_mse = 0;
    for (int k = 0; k < nt; k++) {
        const double *z = truth + k * pt, *zh = r->pred + k * pt;
        prt_rel_state_error(n, prt_state_rows(s), zh, z, err + k * n); /* (0 where they are equal) */
        true_energy(s, n, z, h1, buf);
        true_energy(s, n, zh, h2, buf);
        memcpy(r->energy_truth + k * n, h1, sizeof(double) * (size_t)n);
        memcpy(r->energy_pred + k * n, h2, sizeof(double) * (size_t)n);
        for (long j = 0; j < n; j++) {
            double dh = fabs(h1[j] - h2[j]); /* equal energies, both 0 too, have no error */
            energy[k * n + j] = dh == 0 ? 0 : dh / (fabs(h1[j]) + fabs(h2[j]));
            energy_mse += (h1[j] - h2[j]) * (h1[j] - h2[j]);
        }
        for (long i = 0; i < (long)s->N * n; i++) pos_mse += (zh[i] - z[i]) * (zh[i] - z[i]);
        if (s->C > 0) prt_phi(s, n, zh, s->params + s->nmass, phi);
        for (long j = 0; j < n; j++) {
            double v = 0;
            for (int c = 0; c < s->C; c++) v += phi[c * n + j] * phi[c * n + j];
            for (int b = 0; b < s->nso3; b++) v += so3_distance2(zh, n, s->so3[b].x + 3, j); /* their own constraint */
            violation[k * n + j] = sqrt(v);
        }
    }
    r->value[PRT_METRIC_ENERGY_MSE] = energy_mse / ((double)nt * (double)n);
    r->value[PRT_METRIC_POSITION_MSE] = pos_mse / ((double)nt * (double)n * s->N);
    prt_eval_summarize(r, PRT_METRIC_REL_ERROR);
    prt_eval_summarize(r, PRT_METRIC_ENERGY_ERROR);
    r->constrained = s->C > 0 || s->nso3 > 0;
    prt_eval_summarize(r, PRT_METRIC_VIOLATION);
    if (!r->constrained) none(r, PRT_METRIC_VIOLATION); /* nothing to violate */
    prt_eval_orientation(s, truth, r);
    if (r->rigid) prt_eval_summarize(r, PRT_METRIC_ORIENTATION);
    free(buf), free(h1), free(h2), free(phi);
}

int prt_eval_chaos_floor(PrtSystem *s, const double *truth, double rtol, double atol, uint64_t seed,
                         const PrtOdeObserver *obs, PrtEvalResult *r, char *err, size_t errlen) {
    long n = r->n, Nn = (long)s->N * n, NPn = (long)s->NP * n, pt = Nn + NPn;
    int nt = r->nt;
    double *chaos = prt_eval_new_series(r, PRT_METRIC_CHAOS_FLOOR);
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
        prt_rel_state_error(n, prt_state_rows(s), z, truth + k * pt, chaos + k * n);
    }
    prt_eval_summarize(r, PRT_METRIC_CHAOS_FLOOR);
done:
    free(times), free(buf), free(z0), free(moved);
    return rc;
}

void prt_eval_result_free(PrtEvalResult *r) {
    for (int id = 0; id < PRT_NMETRICS; id++) free(r->series[id]), free(r->per_traj[id]);
    free(r->pred), free(r->model_energy), free(r->energy_truth), free(r->energy_pred);
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
    char b[32];
    fprintf(out, "  %-30s %-10s %-21s %s\n", title, "geo. mean", "(95% CI)", "arith. mean");
    for (int id = 0; id < PRT_NMETRICS; id++) {
        const PrtMetricRow *m = &prt_metrics[id];
        const char *label = prt_metric_label(r, id);
        if (!prt_metric_applies(r, id)) { /* said in words, or left out (the App. E rows without so3 bodies) */
            const PrtMetricScopeRow *scope = &prt_metric_scopes[m->scope];
            if (scope->left_out) continue;
            fprintf(out, "  %-30s none: ", label);
            fprintf(out, scope->why_none, r->model_title);
            fputc('\n', out);
            continue;
        }
        switch (m->summary) {
        case PRT_SUMMARY_GEOMEAN: print_metric(out, label, r->value[id], r->ci[id], r->mean[id]); break;
        case PRT_SUMMARY_MEAN: /* no geometric mean: its floor would stand for the rounding-level figures it hides */
            fprintf(out, "  %-30s %-10s %-21s %s", label, "", "", num(b, "%.3e", r->value[id]));
            if (isfinite(r->ci[id][0])) fprintf(out, " [%.2e, %.2e]", r->ci[id][0], r->ci[id][1]);
            fputc('\n', out);
            break;
        case PRT_SUMMARY_ONCE: fprintf(out, "  %-30s %s\n", label, num(b, "%.3e", r->value[id])); break;
        }
    }
    /* what the columns are: a figure near the floor is the floor, not a measurement */
    fprintf(out, "  geo. mean: over the test trajectories of exp(time mean of log(e(t) + %g)); %g is a floor\n"
            "  arith. mean: of the same per-trajectory figures; for %s, of the violation itself over time and "
            "trajectories\n", PRT_EVAL_FLOOR, PRT_EVAL_FLOOR, r->so3 ? "|R^T R - I|" : "|Phi|");
}
