/* sweep_files.c — a sweep's runs from their files (sweep_internal.h): a finished run's
   metrics.json and CSVs, a failed run's reason, and a model's seeds pooled. */
#include "sweep_internal.h"
#include "core/alloc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/atomic_file.h"
#include "io/checkpoint.h"
#include "math/stats.h"
#include "report.h"

static const struct {
    bool known, squares;
} once_kind[NONCE] = {{false, false}, {true, false}, {false, true}, {true, true}};

bool sweep_once_has(int id, int kind) {
    const PrtMetricRow *m = &prt_metrics[id];
    return !m->csv && (!once_kind[kind].known || m->known) && (!once_kind[kind].squares || m->squares);
}

bool sweep_once_squares(int kind) { return once_kind[kind].squares; }

const char *sweep_once_key(char buf[128], int id, int kind, bool summary) {
    const PrtMetricRow *m = &prt_metrics[id];
    const char *prefix = !once_kind[kind].known ? "" : summary ? PRT_METRIC_KNOWN_COMPARE_PREFIX : PRT_METRIC_KNOWN_PREFIX;
    snprintf(buf, 128, "%s%s%s", prefix, summary ? m->compare_key : m->key, once_kind[kind].squares ? "_sq" : "");
    return buf;
}

/* Whether dir holds an unfinished run's checkpoint (physc compare resumes it). */
bool sweep_unfinished(const char *dir) {
    char *path = report_path(dir, "checkpoint.bin"), why[512];
    PrtCkptHeader h;
    double first;
    PrtCkptArray loss = {"loss", &first, -1};
    bool yes = access(path, F_OK) == 0 && prt_ckpt_read_any(path, &h, &loss, 1, why, sizeof why) == 0 && h.epoch < loss.len;
    free(path);
    return yes;
}

/* ---- the runs' files ---- */

/* metrics.json's member `key` (as report.c writes it, one per line): a number, or NAN for
   null or a missing key; with two (an interval), both. */
static int json_numbers(const char *text, const char *key, double *v, int n) {
    char pat[128];
    snprintf(pat, sizeof pat, "\n  \"%s\": ", key);
    const char *p = strstr(text, pat);
    for (int i = 0; i < n; i++) v[i] = NAN;
    if (!p) return -1;
    p += strlen(pat);
    if (n > 1 && *p++ != '[') return strncmp(p - 1, "null", 4) ? -1 : 0;
    for (int i = 0; i < n; i++) {
        char *end;
        v[i] = strtod(p, &end);
        if (end == p) v[i] = NAN;
        p = end + (i + 1 < n ? 2 : 0); /* ", " */
    }
    return 0;
}

/* The rows of a CSV report.c wrote, under exactly `header`: cols numbers each, into *v
   (allocated). The row count, or -1 with a message. */
long sweep_read_csv(const char *path, const char *header, int cols, double **v, char *err, size_t errlen) {
    char *text = report_read_text(path, NULL, err, errlen);
    *v = NULL;
    if (!text) return -1;
    size_t hl = strlen(header);
    if (strncmp(text, header, hl) || text[hl] != '\n') {
        free(text);
        return prt_fail(err, errlen, "%s: not the header %s", path, header);
    }
    long rows = 0, cap = 0;
    for (char *p = text + hl + 1; *p; rows++) {
        if (rows == cap) *v = prt_xrealloc(*v, (size_t)(cap = cap ? 2 * cap : 256) * (size_t)cols, sizeof(double), "a run's file");
        for (int c = 0; c < cols; c++) {
            char *end;
            (*v)[rows * cols + c] = strtod(p, &end);
            if (end == p || *end != (c + 1 < cols ? ',' : '\n')) {
                free(text), free(*v), *v = NULL;
                return prt_fail(err, errlen, "%s:%ld: expected %d numbers", path, rows + 2, cols);
            }
            p = end + 1;
        }
    }
    free(text);
    return rows;
}

/* Reads a finished run's metrics.json, trajectories.csv and errors.csv. 0, or -1 with why. */
int sweep_load_run(Run *r, char *err, size_t errlen) {
    char *path = report_path(r->dir, "metrics.json");
    char *text = report_read_text(path, NULL, err, errlen);
    free(path);
    if (!text) return -1;
    if (strstr(text, "\"rollout_failed\": true")) { /* a reused run whose test rollouts failed fails again */
        free(text);
        return prt_fail(err, errlen, "its test rollouts failed (%s/metrics.json: rollout_failed)", r->dir);
    }
    if (strstr(text, "\"nonfinite_figure\": \"")) { /* so does one with a figure that is no number */
        free(text);
        return prt_fail(err, errlen, "a figure of its evaluation is not a finite number (%s/metrics.json: nonfinite_figure)",
                        r->dir);
    }
    if (!strstr(text, "\n  \"geomean_floor\": ")) { /* its violation was a geometric mean with a floor (issue 43) */
        free(text);
        return prt_fail(err, errlen, "%s was evaluated before the figures' present definitions: `physc run --resume "
                        "--out %s` with the same options evaluates it again", r->dir, r->dir);
    }
    double x[2];
    json_numbers(text, "param_count", x, 1), r->param_count = isfinite(x[0]) ? (long)x[0] : 0;
    json_numbers(text, "epochs_done", x, 1), r->epochs_done = isfinite(x[0]) ? (long)x[0] : 0;
    json_numbers(text, "seconds_per_epoch", &r->seconds_per_epoch, 1);
    char key[128], header[2][512] = {"trajectory", "trajectory,t"}; /* the CSVs' headers */
    int ncols = 0;
    bool column[PRT_NMETRICS]; /* a metric left out where undefined has no column there (report.c) */
    for (int id = 0; id < PRT_NMETRICS; id++) {
        const PrtMetricRow *m = &prt_metrics[id];
        for (int kind = 0; kind < NONCE; kind++) {
            r->once[kind][id] = NAN;
            if (sweep_once_has(id, kind)) json_numbers(text, sweep_once_key(key, id, kind, false), &r->once[kind][id], 1);
        }
        snprintf(key, sizeof key, "\"%s\": ", m->key);
        column[id] = m->csv && (!prt_metric_scopes[m->scope].left_out || strstr(text, key));
        r->fig[id] = r->ci[id][0] = r->ci[id][1] = NAN;
        if (!column[id]) continue;
        snprintf(key, sizeof key, "%s_ci95", m->key);
        json_numbers(text, m->key, &r->fig[id], 1);
        json_numbers(text, key, r->ci[id], 2);
        for (int h = 0; h < 2; h++) {
            size_t len = strlen(header[h]);
            snprintf(header[h] + len, sizeof header[h] - len, ",%s", m->csv);
        }
        ncols++;
    }
    free(text);
    double *rows;
    path = report_path(r->dir, "trajectories.csv");
    long n = sweep_read_csv(path, header[0], 1 + ncols, &rows, err, errlen);
    free(path);
    if (n <= 0) return n ? -1 : prt_fail(err, errlen, "%s/trajectories.csv has no test trajectory", r->dir);
    r->ntraj = n;
    for (int id = 0, c = 0; id < PRT_NMETRICS; id++) {
        if (!prt_metrics[id].csv) continue;
        r->traj[id] = prt_xalloc((size_t)n, sizeof(double), "a run's figures");
        for (long b = 0; b < n; b++) r->traj[id][b] = column[id] ? rows[b * (1 + ncols) + 1 + c] : NAN;
        c += column[id];
    }
    free(rows);
    path = report_path(r->dir, "errors.csv");
    long nrows = sweep_read_csv(path, header[1], 2 + ncols, &rows, err, errlen);
    free(path);
    if (nrows < 0) return -1;
    if (nrows % r->ntraj || nrows / r->ntraj < 2) {
        free(rows);
        return prt_fail(err, errlen, "%s/errors.csv: %ld rows for %ld test trajectories", r->dir, nrows, r->ntraj);
    }
    r->nt = (int)(nrows / r->ntraj);
    for (int id = 0, c = 0; id < PRT_NMETRICS; id++) {
        if (!prt_metrics[id].csv) continue;
        r->series[id] = prt_xalloc((size_t)nrows, sizeof(double), "a run's figures");
        for (long i = 0; i < nrows; i++) r->series[id][i] = column[id] ? rows[i * (2 + ncols) + 2 + c] : NAN;
        c += column[id];
    }
    r->t = prt_xalloc((size_t)r->nt, sizeof(double), "a run's figures");
    for (int k = 0; k < r->nt; k++) r->t[k] = rows[k * (2 + ncols) + 1];
    free(rows);
    return 0;
}

/* ---- pooling: a model's seeds at one size ---- */

/* Each run's own figure of every metric, its mean over the seeds and the 95 % t interval of
   that mean: the spread from seed to seed (data, initialization, shuffling), where the pooled
   interval is the spread over the test trajectories. */
static void seed_means(Pooled *p, const Run *runs, int nruns) {
    double *v = prt_xalloc((size_t)nruns + 1, sizeof(double), "pooled figures");
    for (int m = 0; m < PRT_NMETRICS; m++) {
        long n = 0;
        for (int i = 0; i < nruns; i++) {
            const Run *r = &runs[i];
            double x = prt_metrics[m].csv ? r->fig[m] : r->once[ONCE_FIGURE][m];
            if (r->md == p->md && r->size == p->size && r->ok && isfinite(x)) v[n++] = x;
        }
        p->seed_mean[m] = n ? prt_mean(v, n) : NAN;
        p->seed_ci[m][0] = p->seed_ci[m][1] = NAN;
        if (n >= 2 && prt_mean_ci(v, n, 0.95, &p->seed_ci[m][0], &p->seed_ci[m][1]) && p->seed_ci[m][0] < 0)
            p->seed_ci[m][0] = 0; /* (a mean of sizes is not below 0) */
    }
    free(v);
}

void sweep_pool(Pooled *p, Run *runs, int nruns) {
    long total = 0;
    p->nt = 0;
    for (int i = 0; i < nruns; i++) {
        const Run *r = &runs[i];
        if (r->md != p->md || r->size != p->size) continue;
        p->nruns++;
        if (!r->ok) {
            p->npending += r->pending;
            if (!p->failure && !r->pending) p->failure = r->failure;
            continue;
        }
        if (!p->nok++) p->param_count = r->param_count, p->t = r->t, p->nt = r->nt;
        if (r->nt < p->nt) p->nt = r->nt; /* the same program: the same horizon */
        total += r->ntraj;
    }
    p->ntraj = total;
    double spe = 0;
    int timed = 0;
    double *v = prt_xalloc((size_t)total + 1, sizeof(double), "pooled figures");
    for (int m = 0; m < PRT_NMETRICS; m++) {
        if (!prt_metrics[m].csv) continue;
        bool none = false; /* a run has none (null: no constraints): nor has the pool, its zeros are no measurement */
        for (int i = 0; i < nruns && !none; i++)
            none = runs[i].md == p->md && runs[i].size == p->size && runs[i].ok && isnan(runs[i].fig[m]);
        bool geometric = prt_metrics[m].summary == PRT_SUMMARY_GEOMEAN; /* else the arithmetic mean, as a run's */
        p->at[m] = prt_xalloc((size_t)p->nt + 1, sizeof(double), "pooled figures");
        p->lo[m] = prt_xalloc((size_t)p->nt + 1, sizeof(double), "pooled figures");
        p->hi[m] = prt_xalloc((size_t)p->nt + 1, sizeof(double), "pooled figures");
        for (int k = -1; k < p->nt; k++) { /* k = -1: the time summaries (the whole rollout) */
            long j = 0;
            for (int i = 0; i < nruns; i++) {
                const Run *r = &runs[i];
                if (r->md != p->md || r->size != p->size || !r->ok) continue;
                for (long b = 0; b < r->ntraj; b++) v[j++] = k < 0 ? r->traj[m][b] : r->series[m][b * r->nt + k];
            }
            double *g = k < 0 ? &p->fig[m] : &p->at[m][k], *lo = k < 0 ? &p->ci[m][0] : &p->lo[m][k],
                   *hi = k < 0 ? &p->ci[m][1] : &p->hi[m][k];
            *g = geometric ? prt_geomean(v, total) : prt_mean(v, total);
            if (geometric) prt_geomean_ci(v, total, 0.95, lo, hi);
            else if (prt_mean_ci(v, total, 0.95, lo, hi) && *lo < 0) *lo = 0; /* (a mean of sizes is not below 0) */
            if (none) *g = *lo = *hi = NAN;
        }
    }
    for (int i = 0; i < nruns; i++)
        if (runs[i].md == p->md && runs[i].size == p->size && runs[i].ok && isfinite(runs[i].seconds_per_epoch))
            spe += runs[i].seconds_per_epoch, timed++;
    p->seconds_per_epoch = timed ? spe / timed : NAN;
    if (!p->failure && p->npending) p->failure = "not finished (another process holds it, or it has not run)";
    seed_means(p, runs, nruns);
    for (int kind = 0; kind < NONCE; kind++)
        for (int m = 0; m < PRT_NMETRICS; m++) {
            double sum = 0;
            int count = 0;
            for (int i = 0; i < nruns; i++)
                if (runs[i].md == p->md && runs[i].size == p->size && runs[i].ok && isfinite(runs[i].once[kind][m]))
                    sum += runs[i].once[kind][m], count++;
            p->once[kind][m] = count ? sum / count : NAN;
        }
    free(v);
}

void sweep_run_free(Run *r) {
    free(r->dir), free(r->run_dir), free(r->t);
    for (int m = 0; m < PRT_NMETRICS; m++) free(r->traj[m]), free(r->series[m]);
}

void sweep_pooled_free(Pooled *p) {
    for (int m = 0; m < PRT_NMETRICS; m++) free(p->at[m]), free(p->lo[m]), free(p->hi[m]);
}

/* ---- comparison.json ---- */

/* DIR/<run>.failed: beside the run's folder (which a run that failed early may lack) */
static char *failure_path(const Run *r) {
    size_t len = strlen(r->dir) + 8;
    char *path = prt_xalloc(len, 1, "a path");
    snprintf(path, len, "%s.failed", r->dir);
    return path;
}

void sweep_keep_failure(const Run *r) {
    char *path = failure_path(r), err[512];
    PrtAtomicFile af;
    if (prt_atomic_open(&af, path, err, sizeof err) == 0) { /* (a note: if it cannot be written, this process still says why) */
        fprintf(af.f, "%s\n", r->failure);
        if (prt_atomic_commit(&af, err, sizeof err) != 0) fprintf(stderr, "physc: %s\n", err);
    }
    free(path);
}

void sweep_forget_failure(const Run *r) {
    char *path = failure_path(r);
    unlink(path);
    free(path);
}

void sweep_read_state(Run *r) {
    r->ok = r->pending = false;
    r->failure[0] = 0;
    char why[512];
    if (sweep_load_run(r, why, sizeof why) == 0) {
        r->ok = true;
        return;
    }
    char *path = failure_path(r), err[256], *text = access(path, F_OK) == 0 ? report_read_text(path, NULL, err, sizeof err) : NULL;
    free(path);
    if (!text) {
        r->pending = true;
        snprintf(r->failure, sizeof r->failure, "not finished");
        return;
    }
    text[strcspn(text, "\n")] = 0;
    snprintf(r->failure, sizeof r->failure, "%s", text[0] ? text : why);
    free(text);
}
