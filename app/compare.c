/* compare.c — `physc compare` (see compare.h): the runs one after another (or several at
   once, as child processes), then the comparison from their files: comparison.json, a
   table, and the paper's plots. */
#include "compare.h"
#include "core/alloc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/atomic_file.h"
#include "core/input_file.h"
#include "core/run_lock.h"
#include "io/checkpoint.h"
#include "models/model.h"
#include "report.h"
#include "run.h"
#include "math/stats.h"
#include "io/svgplot.h"

/* The metrics (metrics.h): those with a series a run gives per test trajectory
   (trajectories.csv) and per time (errors.csv), which compare pools over the seeds'
   trajectories; and those it gives once (metrics.json), which compare averages over the seeds
   as the discrete-time Lagrangian paper averages its trials (Tables 2 and 3), each as its
   figure, the mean of its squares, and the known terms' alone where the row has them (the
   CSVs hold the trained model's series only: a metric with a series is the trained model's). */
enum { ONCE_FIGURE, ONCE_KNOWN, ONCE_SQUARES, ONCE_KNOWN_SQUARES, NONCE };
static const struct {
    bool known, squares;
} once_kind[NONCE] = {{false, false}, {true, false}, {false, true}, {true, true}};

/* Whether metric id is given once in the kind of figure `kind`. */
static bool once_has(int id, int kind) {
    const PrtMetricRow *m = &prt_metrics[id];
    return !m->csv && (!once_kind[kind].known || m->known) && (!once_kind[kind].squares || m->squares);
}

/* Its key: metrics.json's (compare false) or comparison.json's. */
static const char *once_key(char buf[128], int id, int kind, bool compare) {
    const PrtMetricRow *m = &prt_metrics[id];
    const char *prefix = !once_kind[kind].known ? "" : compare ? PRT_METRIC_KNOWN_COMPARE_PREFIX : PRT_METRIC_KNOWN_PREFIX;
    snprintf(buf, 128, "%s%s%s", prefix, compare ? m->compare_key : m->key, once_kind[kind].squares ? "_sq" : "");
    return buf;
}

/* One run: a model, a seed, a training-set size, and what its files say. */
typedef struct Run {
    const Model *md;
    long seed, size;
    char *dir;
    char *run_dir;       /* physc run's default folder for it (runs/<system>-<model>), or NULL */
    bool ok;
    char failure[512];
    long param_count, epochs_done;               /* metrics.json */
    double seconds_per_epoch;
    double fig[PRT_NMETRICS], ci[PRT_NMETRICS][2]; /* metrics.json: the metrics with a series */
    double once[NONCE][PRT_NMETRICS];            /* metrics.json: those given once (NaN: none) */
    long ntraj;                                  /* trajectories.csv: ntraj each, by metric */
    double *traj[PRT_NMETRICS];
    int nt;                                      /* errors.csv: ntraj x nt each, at times t */
    double *series[PRT_NMETRICS], *t;
} Run;

/* A model at one size, its seeds' test trajectories pooled. */
typedef struct Pooled {
    const Model *md;
    long size;
    int nruns, nok;
    const char *failure;                         /* the first failed run's reason */
    long ntraj, param_count;
    double seconds_per_epoch, fig[PRT_NMETRICS], ci[PRT_NMETRICS][2];
    double once[NONCE][PRT_NMETRICS];            /* the arithmetic means over the seeds (NaN: none) */
    int nt;                                      /* per time: the pooled figure and its interval */
    const double *t;
    double *at[PRT_NMETRICS], *lo[PRT_NMETRICS], *hi[PRT_NMETRICS];
} Pooled;

int compare_parse_counts(const char *text, long *out, int max) {
    int n = 0;
    for (const char *p = text;; p++) {
        char *end;
        if (*p < '0' || *p > '9' || n == max) return -1; /* also refuses signs and spaces */
        long v = strtol(p, &end, 10);
        if (v < 1 || v > 10000000 || (*end && *end != ',')) return -1;
        for (int i = 0; i < n; i++)
            if (out[i] == v) return -1;
        out[n++] = v;
        if (!*end) return n;
        p = end;
    }
}

/* --models (or every model of a kind physc trains) into out. 0, or the exit status after
   a message: 2 for a name the program lacks, a repeat or a kind physc does not train. */
static int pick_models(const System *sys, const char *list, const Model **out, int *n) {
    *n = 0;
    if (!list) {
        for (int i = 0; i < sys->nmodels && *n < COMPARE_MAX_LIST; i++)
            if (prt_model_family(model_kind_name(sys->models[i].kind))) out[(*n)++] = &sys->models[i];
        if (*n) return 0;
        fprintf(stderr, "physc: compare: the program has no model of a kind physc trains (%s)\n", prt_model_family_names());
        return 1;
    }
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, ",");
        const Model *md = NULL;
        for (int i = 0; i < sys->nmodels && !md; i++)
            if (strlen(sys->models[i].name) == len && !strncmp(sys->models[i].name, p, len)) md = &sys->models[i];
        const char *why = !md ? "no model of that name" : NULL;
        for (int i = 0; md && i < *n && !why; i++)
            if (out[i] == md) why = "named twice";
        if (md && !why && !prt_model_family(model_kind_name(md->kind))) why = "a kind physc does not train";
        if (!why && *n == COMPARE_MAX_LIST) why = "too many models";
        if (why) {
            fprintf(stderr, "physc: compare: --models: %s: %.*s (", why, (int)len, p);
            if (!sys->nmodels) fprintf(stderr, "the program has none");
            for (int i = 0; i < sys->nmodels; i++)
                fprintf(stderr, "%s%s (%s)", i ? ", " : "models: ", sys->models[i].name, model_kind_name(sys->models[i].kind));
            fprintf(stderr, ")\n");
            return 2;
        }
        out[(*n)++] = md;
        p += len + (p[len] == ',');
    }
    return 0;
}

/* Whether dir holds an unfinished run's checkpoint (physc compare resumes it). */
static bool unfinished(const char *dir) {
    char *path = report_path(dir, "checkpoint.bin"), why[512];
    PrtCkptHeader h;
    double first;
    PrtCkptArray loss = {"loss", &first, -1};
    bool yes = access(path, F_OK) == 0 && prt_ckpt_read_any(path, &h, &loss, 1, why, sizeof why) == 0 && h.epoch < loss.len;
    free(path);
    return yes;
}

/* ---- the runs' files ---- */

static char *slurp(const char *path, char *err, size_t errlen) {
    FILE *f = prt_fopen_input(path, NULL, err, errlen);
    if (!f) return NULL;
    size_t cap = 4096, len = 0, got;
    char *s = prt_xalloc(cap, 1, "a run's file");
    while ((got = fread(s + len, 1, cap - len - 1, f)) > 0)
        if ((len += got) + 1 == cap) s = prt_xrealloc(s, cap *= 2, 1, "a run's file");
    s[len] = 0;
    fclose(f);
    return s;
}

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
static long read_csv(const char *path, const char *header, int cols, double **v, char *err, size_t errlen) {
    char *text = slurp(path, err, errlen);
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
static int load_run(Run *r, char *err, size_t errlen) {
    char *path = report_path(r->dir, "metrics.json");
    char *text = slurp(path, err, errlen);
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
    for (int id = 0; id < PRT_NMETRICS; id++) {
        const PrtMetricRow *m = &prt_metrics[id];
        for (int kind = 0; kind < NONCE; kind++) {
            r->once[kind][id] = NAN;
            if (once_has(id, kind)) json_numbers(text, once_key(key, id, kind, false), &r->once[kind][id], 1);
        }
        if (!m->csv) continue;
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
    long n = read_csv(path, header[0], 1 + ncols, &rows, err, errlen);
    free(path);
    if (n <= 0) return n ? -1 : prt_fail(err, errlen, "%s/trajectories.csv has no test trajectory", r->dir);
    r->ntraj = n;
    for (int id = 0, c = 0; id < PRT_NMETRICS; id++) {
        if (!prt_metrics[id].csv) continue;
        r->traj[id] = prt_xalloc((size_t)n, sizeof(double), "a run's figures");
        for (long b = 0; b < n; b++) r->traj[id][b] = rows[b * (1 + ncols) + 1 + c];
        c++;
    }
    free(rows);
    path = report_path(r->dir, "errors.csv");
    long nrows = read_csv(path, header[1], 2 + ncols, &rows, err, errlen);
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
        for (long i = 0; i < nrows; i++) r->series[id][i] = rows[i * (2 + ncols) + 2 + c];
        c++;
    }
    r->t = prt_xalloc((size_t)r->nt, sizeof(double), "a run's figures");
    for (int k = 0; k < r->nt; k++) r->t[k] = rows[k * (2 + ncols) + 1];
    free(rows);
    return 0;
}

/* ---- pooling: a model's seeds at one size ---- */

static void pool(Pooled *p, Run *runs, int nruns) {
    long total = 0;
    p->nt = 0;
    for (int i = 0; i < nruns; i++) {
        const Run *r = &runs[i];
        if (r->md != p->md || r->size != p->size) continue;
        p->nruns++;
        if (!r->ok) {
            if (!p->failure) p->failure = r->failure;
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

static void run_free(Run *r) {
    free(r->dir), free(r->run_dir), free(r->t);
    for (int m = 0; m < PRT_NMETRICS; m++) free(r->traj[m]), free(r->series[m]);
}

static void pooled_free(Pooled *p) {
    for (int m = 0; m < PRT_NMETRICS; m++) free(p->at[m]), free(p->lo[m]), free(p->hi[m]);
}

/* ---- comparison.json ---- */

static void put_num(FILE *f, double v) {
    if (isfinite(v)) fprintf(f, "%.10g", v);
    else fputs("null", f);
}

static void put_str(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (*c == '"' || *c == '\\') fprintf(f, "\\%c", *c);
        else if (*c < 0x20) fprintf(f, "\\u%04x", *c);
        else fputc(*c, f);
    }
    fputc('"', f);
}

static void put_array(FILE *f, const double *v, long n) {
    fputc('[', f);
    for (long i = 0; i < n; i++) {
        if (i) fputs(", ", f);
        put_num(f, v[i]);
    }
    fputc(']', f);
}

/* The figures of a run or a pooled model: those with a series, each with its 95 % interval;
   then those given once (one run's, or their means over the seeds), kind by kind. */
static void put_figures(FILE *f, const double fig[PRT_NMETRICS], const double ci[PRT_NMETRICS][2],
                        const double once[NONCE][PRT_NMETRICS], const char *indent) {
    for (int m = 0; m < PRT_NMETRICS; m++) {
        if (!prt_metrics[m].csv) continue;
        fprintf(f, ",\n%s\"%s\": ", indent, prt_metrics[m].compare_key);
        put_num(f, fig[m]);
        fprintf(f, ",\n%s\"%s_ci95\": ", indent, prt_metrics[m].compare_key);
        put_array(f, ci[m], 2);
    }
    char key[128];
    for (int kind = 0; kind < NONCE; kind++)
        for (int m = 0; m < PRT_NMETRICS; m++)
            if (once_has(m, kind))
                fprintf(f, ",\n%s\"%s\": ", indent, once_key(key, m, kind, true)), put_num(f, once[kind][m]);
}

typedef struct Settings {
    const System *sys;
    const CompareOptions *o;
    const char *dir;
    long epochs, threads, first_seed;
    const long *sizes;
    int nsizes;
    const Model *const *models;
    int nmodels;
} Settings;

static int write_json(const char *path, const Settings *st, Run *runs, int nruns, Pooled *pooled, int npooled, char *err,
                      size_t errlen) {
    PrtAtomicFile af;
    if (prt_atomic_open(&af, path, err, errlen) != 0) return -1;
    FILE *f = af.f;
    fputs("{\n  \"system\": ", f), put_str(f, st->sys->name);
    fputs(",\n  \"program\": ", f), put_str(f, st->o->file);
    fputs(",\n  \"settings\": {\n    \"models\": [", f);
    for (int i = 0; i < st->nmodels; i++) fputs(i ? ", " : "", f), put_str(f, st->models[i]->name);
    fprintf(f, "],\n    \"epochs\": %ld,\n    \"seeds\": [", st->epochs);
    for (long s = 0; s < st->o->seeds; s++) fprintf(f, "%s%ld", s ? ", " : "", st->first_seed + s);
    fputs("],\n    \"train_sizes\": [", f);
    for (int i = 0; i < st->nsizes; i++) fprintf(f, "%s%ld", i ? ", " : "", st->sizes[i]);
    fprintf(f, "],\n    \"eval_from\": \"%s\",\n    \"threads\": %ld\n  },\n  \"runs\": [", st->o->eval_from_chunk ? "chunk" : "initial",
            st->threads);
    for (int i = 0; i < nruns; i++) {
        const Run *r = &runs[i];
        fprintf(f, "%s\n    {\"model\": ", i ? "," : "");
        put_str(f, r->md->name);
        fprintf(f, ", \"kind\": \"%s\", \"seed\": %ld, \"train_trajectories\": %ld, \"dir\": ", model_kind_name(r->md->kind),
                r->seed, r->size);
        put_str(f, r->dir);
        fprintf(f, ",\n     \"status\": \"%s\"", r->ok ? "ok" : "failed");
        if (!r->ok) {
            fputs(", \"failure\": ", f), put_str(f, r->failure), fputs("}", f);
            continue;
        }
        fprintf(f, ", \"epochs_done\": %ld, \"param_count\": %ld, \"seconds_per_epoch\": ", r->epochs_done, r->param_count);
        put_num(f, r->seconds_per_epoch);
        fprintf(f, ", \"test_trajectories\": %ld", r->ntraj);
        put_figures(f, r->fig, r->ci, (const double(*)[PRT_NMETRICS])r->once, "     ");
        fputs("}", f);
    }
    fputs("\n  ],\n  \"models\": [", f);
    for (int i = 0; i < npooled; i++) {
        const Pooled *p = &pooled[i];
        fprintf(f, "%s\n    {\"model\": ", i ? "," : "");
        put_str(f, p->md->name);
        fprintf(f, ", \"kind\": \"%s\", \"train_trajectories\": %ld, \"runs\": %d, \"runs_ok\": %d",
                model_kind_name(p->md->kind), p->size, p->nruns, p->nok);
        if (!p->nok) {
            fputs(", \"failure\": ", f), put_str(f, p->failure ? p->failure : "no run"), fputs("}", f);
            continue;
        }
        fprintf(f, ",\n     \"test_trajectories\": %ld, \"param_count\": %ld, \"seconds_per_epoch\": ", p->ntraj, p->param_count);
        put_num(f, p->seconds_per_epoch);
        put_figures(f, p->fig, p->ci, (const double(*)[PRT_NMETRICS])p->once, "     ");
        fputs(",\n     \"over_time\": {\"t\": ", f);
        put_array(f, p->t, p->nt);
        for (int m = 0; m < PRT_NMETRICS; m++) {
            const char *key = prt_metrics[m].compare_key;
            if (!prt_metrics[m].csv) continue;
            fprintf(f, ",\n       \"%s\": ", key), put_array(f, p->at[m], p->nt);
            fprintf(f, ",\n       \"%s_ci95_lo\": ", key), put_array(f, p->lo[m], p->nt);
            fprintf(f, ",\n       \"%s_ci95_hi\": ", key), put_array(f, p->hi[m], p->nt);
        }
        fputs("}}", f);
    }
    fputs("\n  ]\n}\n", f);
    return prt_atomic_commit(&af, err, errlen);
}

/* ---- the table ---- */

/* v as %.3e; "-" where there is none (no such figure for this model or system) */
static const char *e3(char buf[32], double v) {
    if (!isfinite(v)) return "-";
    snprintf(buf, 32, "%.3e", v);
    return buf;
}

/* The model column's width: the longest name, at least 12. */
static int name_width(const Pooled *pooled, int npooled) {
    int w = 12;
    for (int i = 0; i < npooled; i++)
        if ((int)strlen(pooled[i].md->name) > w) w = (int)strlen(pooled[i].md->name);
    return w;
}

/* Whether metric id is a column of the models' table: a series of the model's own (the chaos
   floor is the truth's, the same for every model: a line under the table). */
static bool model_column(int id) { return prt_metrics[id].csv && !prt_metrics[id].truth; }

/* The models' figures with a series: each geometric mean with its interval, each arithmetic
   mean alone ("none" where it is undefined: no constraints); the chaos floor under them. */
static void print_table(const Pooled *pooled, int npooled, long size) {
    int w = name_width(pooled, npooled), last = -1;
    for (int id = 0; id < PRT_NMETRICS; id++) last = model_column(id) ? id : last;
    printf("%-*s %-8s %10s %9s", w, "model", "kind", "parameters", "s/epoch");
    for (int id = 0; id < PRT_NMETRICS; id++)
        if (model_column(id) && prt_metrics[id].summary == PRT_SUMMARY_GEOMEAN)
            printf("  %-10s %-21s", prt_metrics[id].header, "(95% CI)");
        else if (model_column(id)) printf(id == last ? "  %s" : "  %-10s", prt_metrics[id].header);
    putchar('\n');
    const Pooled *floor_of = NULL;
    for (int i = 0; i < npooled; i++) {
        const Pooled *p = &pooled[i];
        if (p->size != size) continue;
        printf("%-*s %-8s ", w, p->md->name, model_kind_name(p->md->kind));
        if (!p->nok) {
            printf("failed (%d of %d %s): %s\n", p->nruns, p->nruns, p->nruns == 1 ? "run" : "runs", p->failure);
            continue;
        }
        if (!floor_of) floor_of = p;
        char spe[32] = "-"; /* (no s/epoch: a model that took another's training) */
        if (isfinite(p->seconds_per_epoch)) snprintf(spe, sizeof spe, "%.4f", p->seconds_per_epoch);
        printf("%10ld %9s", p->param_count, spe);
        for (int id = 0; id < PRT_NMETRICS; id++) {
            if (!model_column(id)) continue;
            char b[32], ci[48];
            if (prt_metrics[id].summary == PRT_SUMMARY_GEOMEAN) {
                snprintf(ci, sizeof ci, "[%.2e, %.2e]", p->ci[id][0], p->ci[id][1]);
                printf("  %-10s %-21s", e3(b, p->fig[id]), isfinite(p->ci[id][0]) ? ci : "-");
            } else {
                bool none = isnan(p->fig[id]) && prt_metrics[id].scope != PRT_SCOPE_ALL; /* (undefined here) */
                printf(id == last ? "  %s" : "  %-10s", none ? "none" : e3(b, p->fig[id]));
            }
        }
        if (p->nok < p->nruns) printf("  (%d of %d runs failed: %s)", p->nruns - p->nok, p->nruns, p->failure);
        putchar('\n');
    }
    int c = PRT_METRIC_CHAOS_FLOOR;
    if (floor_of)
        printf("%s (the truth started 1e-4 off; the same test trajectories for every model): %.3e [%.2e, %.2e]\n",
               prt_metrics[c].header, floor_of->fig[c], floor_of->ci[c][0], floor_of->ci[c][1]);
    /* what the columns are: a figure near the floor is the floor, not a measurement */
    for (int id = 0, n = 0; id < PRT_NMETRICS; id++)
        if (model_column(id) && prt_metrics[id].summary == PRT_SUMMARY_GEOMEAN)
            printf("%s%s", n++ ? ", " : "", prt_metrics[id].header);
    int v = PRT_METRIC_VIOLATION;
    char none[96] = "";
    if (floor_of && isnan(floor_of->fig[v]))
        snprintf(none, sizeof none, " (none: %s)", prt_metric_scopes[prt_metrics[v].scope].why_none);
    printf(": geometric means over the test trajectories of exp(time mean of log(e(t) + %g)); %g is a floor\n"
           "%s: the mean of |Phi(t)| over time and trajectories%s\n", PRT_EVAL_FLOOR, PRT_EVAL_FLOOR, prt_metrics[v].header,
           none);
}

/* A cell of a table of the figures given once: "none: why" where the model's family cannot have it. */
static const char *once_cell(char buf[128], const Pooled *p, int id, int kind) {
    const PrtModelFamily *fam = prt_model_family(model_kind_name(p->md->kind));
    if (isfinite(p->once[kind][id]) || !fam || prt_metric_family_has(id, fam)) return e3(buf, p->once[kind][id]);
    char why[96];
    snprintf(why, sizeof why, prt_metric_scopes[prt_metrics[id].scope].why_none, fam->title);
    snprintf(buf, 128, "none: %s", why);
    return buf;
}

/* Whether metric id is in a table of the figures given once of a source (metrics.h) and kind. */
static bool in_table(int id, int source, int kind) { return prt_metrics[id].source == source && once_has(id, kind); }

/* The last metric of that table, or -1. */
static int last_once(int source, int kind) {
    int last = -1;
    for (int id = 0; id < PRT_NMETRICS; id++) last = in_table(id, source, kind) ? id : last;
    return last;
}

/* The discrete-time Lagrangian paper's Tables 2 and 3: means over the seeds, a column as wide
   as its header and a space, at least 14. */
static void print_means(const Pooled *pooled, int npooled, long size) {
    int w = name_width(pooled, npooled), last = last_once(PRT_SOURCE_DTLNN, ONCE_FIGURE), cw[PRT_NMETRICS];
    printf("\n%-*s %-8s", w, "model", "kind");
    for (int id = 0; id < PRT_NMETRICS; id++)
        if (in_table(id, PRT_SOURCE_DTLNN, ONCE_FIGURE)) {
            cw[id] = (int)strlen(prt_metrics[id].header) + 1 < 14 ? 14 : (int)strlen(prt_metrics[id].header) + 1;
            if (id == last) printf(" %s (means over the seeds)\n", prt_metrics[id].header);
            else printf(" %-*s", cw[id], prt_metrics[id].header);
        }
    for (int i = 0; i < npooled; i++) {
        const Pooled *p = &pooled[i];
        if (p->size != size || !p->nok) continue;
        printf("%-*s %-8s ", w, p->md->name, model_kind_name(p->md->kind));
        for (int id = 0; id < PRT_NMETRICS; id++) {
            char b[128];
            if (!in_table(id, PRT_SOURCE_DTLNN, ONCE_FIGURE)) continue;
            if (id == last) printf("%s\n", once_cell(b, p, id, ONCE_FIGURE));
            else printf("%-*s ", cw[id], once_cell(b, p, id, ONCE_FIGURE));
        }
    }
}

/* Whether p has a finite figure of the kind `kind` of a metric of source `source`. */
static bool has_once(const Pooled *p, int source, int kind) {
    for (int id = 0; id < PRT_NMETRICS; id++)
        if (in_table(id, source, kind) && isfinite(p->once[kind][id])) return true;
    return false;
}

/* A row of the App. E tables: the model's name, its figures of the kind `kind`, and a note. */
static void print_so3_row(int w, const Pooled *p, int kind, const char *note) {
    char b[128];
    printf("%-*s", w, p->md->name);
    for (int id = 0; id < PRT_NMETRICS; id++)
        if (in_table(id, PRT_SOURCE_LIET2, kind)) printf(" %-11s", e3(b, p->once[kind][id]));
    printf("%s\n", note);
}

/* The header of an App. E table: its metrics' headers (squared for squares), then a note. */
static void print_so3_header(int w, int kind, const char *note) {
    int last = last_once(PRT_SOURCE_LIET2, kind);
    printf("\n%-*s", w, "model");
    for (int id = 0; id < PRT_NMETRICS; id++)
        if (in_table(id, PRT_SOURCE_LIET2, kind)) {
            char h[32];
            snprintf(h, sizeof h, "%s%s", prt_metrics[id].header, once_kind[kind].squares ? "^2" : "");
            if (id == last) printf(" %s %s\n", h, note);
            else printf(" %-11s", h);
        }
}

/* The Lie T2 paper's Tables 1 and 2 (App. E), when the runs have them. */
static void print_so3_means(const Pooled *pooled, int npooled, long size) {
    bool any = false;
    for (int i = 0; i < npooled; i++)
        any |= pooled[i].size == size && pooled[i].nok && has_once(&pooled[i], PRT_SOURCE_LIET2, ONCE_FIGURE);
    if (!any) return;
    int w = name_width(pooled, npooled);
    print_so3_header(w, ONCE_FIGURE, "(Lie T2 paper App. E; means over the seeds)");
    for (int i = 0; i < npooled; i++) {
        const Pooled *p = &pooled[i];
        if (p->size == size && p->nok) print_so3_row(w, p, ONCE_FIGURE, "");
    }
    /* each model's known terms alone under its own integrator (the paper's "no corrections") */
    for (int i = 0; i < npooled; i++) {
        const Pooled *p = &pooled[i];
        if (p->size == size && p->nok && has_once(p, PRT_SOURCE_LIET2, ONCE_KNOWN))
            print_so3_row(w, p, ONCE_KNOWN, " (its known terms alone: no correction)");
    }
    /* the same as means of squares (the paper does not say which its tables print) */
    bool squares = false;
    for (int i = 0; i < npooled; i++)
        squares |= pooled[i].size == size && pooled[i].nok && has_once(&pooled[i], PRT_SOURCE_LIET2, ONCE_SQUARES);
    if (!squares) return;
    print_so3_header(w, ONCE_SQUARES, "(means of squares)");
    for (int i = 0; i < npooled; i++) {
        const Pooled *p = &pooled[i];
        if (p->size != size || !p->nok || !has_once(p, PRT_SOURCE_LIET2, ONCE_SQUARES)) continue;
        print_so3_row(w, p, ONCE_SQUARES, "");
        if (has_once(p, PRT_SOURCE_LIET2, ONCE_KNOWN_SQUARES))
            print_so3_row(w, p, ONCE_KNOWN_SQUARES, " (its known terms alone)");
    }
}

static void print_efficiency(const Settings *st, const Pooled *pooled) {
    printf("\ndata efficiency: relative error (geometric mean over the rollout and the test trajectories)\n%-10s", "train");
    for (int j = 0; j < st->nmodels; j++) printf(" %-12s", st->models[j]->name);
    putchar('\n');
    for (int i = 0; i < st->nsizes; i++) {
        printf("%-10ld", st->sizes[i]);
        for (int j = 0; j < st->nmodels; j++) {
            const Pooled *p = &pooled[j * st->nsizes + i]; /* model-major, sizes in the order given */
            if (p->nok) printf(" %-12.3e", p->fig[PRT_METRIC_REL_ERROR]);
            else printf(" %-12s", "failed");
        }
        putchar('\n');
    }
}

/* ---- the plots ---- */

/* The discrete-time Lagrangian paper's Figure 1: the first test trajectory of each model's
   first finished run at one size (its first-rollout.csv): the first position coordinate, the
   true energy, and the change of the model's own energy where the family has one (its level
   is arbitrary: V's constant is not learned); the truth in black. */
static int plot_first_rollout(const Settings *st, const Run *runs, int nruns, long size, const char *name, char *err,
                              size_t errlen) {
    int nm = st->nmodels, np = 0;
    double **data = prt_xcalloc((size_t)nm, sizeof(double *), "plot data");
    long *rows = prt_xcalloc((size_t)nm, sizeof(long), "plot data");
    int *cols = prt_xcalloc((size_t)nm, sizeof(int), "plot data");
    bool *own = prt_xcalloc((size_t)nm, sizeof(bool), "plot data"); /* the file has the model's own energy */
    PrtSeries *ss = prt_xcalloc((size_t)(3 * (nm + 1)), sizeof(PrtSeries), "plot data");
    int ns[3] = {0, 0, 0}, rc = 0;
    bool truth_drawn = false, model_energy = false;
    for (int j = 0; j < nm; j++) {
        const Run *r = NULL;
        for (int i = 0; i < nruns && !r; i++)
            if (runs[i].md == st->models[j] && runs[i].size == size && runs[i].ok) r = &runs[i];
        if (!r) continue;
        char *path = report_path(r->dir, "first-rollout.csv"), *text = slurp(path, err, errlen);
        rc = text ? 0 : -1;
        if (text) { /* t, N true coordinates, N the model's, two true energies, the model's own if it has one */
            char *nl = strchr(text, '\n');
            if (nl) *nl = 0;
            cols[j] = 1;
            for (char *c = text; *c; c++) cols[j] += *c == ',';
            size_t len = strlen(text);
            own[j] = len > 13 && !strcmp(text + len - 13, ",model_energy");
            if ((cols[j] - 3 - own[j]) % 2 || cols[j] < 5 + own[j])
                rc = prt_fail(err, errlen, "%s: not a rollout (its header: %s)", path, text);
            else if ((rows[j] = read_csv(path, text, cols[j], &data[j], err, errlen)) < 1)
                rc = rows[j] < 0 ? -1 : prt_fail(err, errlen, "%s: no rows", path);
            free(text);
        }
        free(path);
        if (rc) goto done;
        int N = (cols[j] - 3 - own[j]) / 2, c = cols[j];
        const double *d = data[j];
        /* strided columns: copy them out */
        double *t = prt_xalloc((size_t)rows[j] * 6, sizeof(double), "plot data");
        double *x = t + rows[j], *xh = x + rows[j], *e = xh + rows[j], *eh = e + rows[j], *em = eh + rows[j];
        bool has_em = false;
        for (long k = 0; k < rows[j]; k++) {
            t[k] = d[k * c], x[k] = d[k * c + 1], xh[k] = d[k * c + 1 + N], e[k] = d[k * c + 1 + 2 * N];
            eh[k] = d[k * c + 2 + 2 * N], em[k] = own[j] ? d[k * c + 3 + 2 * N] - d[3 + 2 * N] : NAN; /* its change since t = 0 */
            has_em |= isfinite(em[k]);
        }
        model_energy |= has_em;
        free(data[j]);
        data[j] = t;
        if (!truth_drawn) {
            ss[ns[0]++] = (PrtSeries){.x = t, .y = x, .n = rows[j], .label = "truth", .color = PRT_BLACK, .width = 2.5};
            ss[nm + 1 + ns[1]++] = (PrtSeries){.x = t, .y = e, .n = rows[j], .label = "truth", .color = PRT_BLACK, .width = 2.5};
            truth_drawn = true;
        }
        ss[ns[0]++] = (PrtSeries){.x = t, .y = xh, .n = rows[j], .label = st->models[j]->name, .color = j};
        ss[nm + 1 + ns[1]++] = (PrtSeries){.x = t, .y = eh, .n = rows[j], .label = st->models[j]->name, .color = j};
        if (has_em)
            ss[2 * (nm + 1) + ns[2]++] = (PrtSeries){.x = t, .y = em, .n = rows[j], .label = st->models[j]->name, .color = j};
        np++;
    }
    if (np) {
        PrtPanel panels[3] = {
            {.title = "position (first coordinate)", .xlabel = "t", .ylabel = "q", .series = ss, .nseries = ns[0]},
            {.title = "true energy", .xlabel = "t", .ylabel = "H", .series = ss + nm + 1, .nseries = ns[1]},
            {.title = "the model's own energy, change since t = 0", .xlabel = "t", .ylabel = "E(t) - E(0)", .series = ss + 2 * (nm + 1),
             .nseries = ns[2]}};
        char *path = report_path(st->dir, name), title[256];
        snprintf(title, sizeof title, "%s: the first test trajectory (seed %ld)", st->sys->name, st->first_seed);
        rc = prt_svg_write(path, title, panels, model_energy ? 3 : 2, 1, err, errlen);
        free(path);
    }
done:
    for (int j = 0; j < nm; j++) free(data[j]);
    free(data), free(rows), free(cols), free(own), free(ss);
    return rc;
}

/* Figure 7 (relative error) or 8 (energy error) over time at one size: a line per model
   with its 95 % band, from the first step (at t = 0 the error is rounding or zero); the
   chaos floor beside the relative error. For `state so3` systems, the violation: the
   rotations' distance from SO(3) (the Lie T2 paper's Figure 3, top; its bottom is the
   energy error). */
static int plot_over_time(const Settings *st, const Pooled *pooled, int size_index, int m, const char *name, char *err,
                          size_t errlen) {
    PrtSeries *ss = prt_xcalloc((size_t)st->nmodels + 1, sizeof(PrtSeries), "plot data");
    int ns = 0;
    const Pooled *first = NULL;
    for (int j = 0; j < st->nmodels; j++) { /* a model's colour is its own in every plot, failed or not */
        const Pooled *p = &pooled[j * st->nsizes + size_index];
        if (!p->nok) continue;
        if (!first) first = p;
        ss[ns++] = (PrtSeries){.x = p->t + 1, .y = p->at[m] + 1, .lo = p->lo[m] + 1, .hi = p->hi[m] + 1, .n = p->nt - 1,
                               .label = p->md->name, .color = j, .width = 2};
    }
    if (first && m == PRT_METRIC_REL_ERROR)
        ss[ns++] = (PrtSeries){.x = first->t + 1, .y = first->at[PRT_METRIC_CHAOS_FLOOR] + 1, .n = first->nt - 1,
                               .label = "chaos floor", .color = PRT_BLACK, .dashed = 1, .width = 1.2};
    char title[256], ptitle[160];
    static const char *const what[PRT_NMETRICS] = {[PRT_METRIC_REL_ERROR] = "relative state error",
                                                   [PRT_METRIC_ENERGY_ERROR] = "energy error",
                                                   [PRT_METRIC_VIOLATION] = "SO(3) manifold error"};
    static const char *const ylabel[PRT_NMETRICS] = {[PRT_METRIC_REL_ERROR] = "Err(t) = |z^ - z| / (|z^| + |z|)",
                                                     [PRT_METRIC_ENERGY_ERROR] = "|H - H^| / (|H| + |H^|)",
                                                     [PRT_METRIC_VIOLATION] = "|R^T R - I| (summed over bodies)"};
    snprintf(title, sizeof title, "%s: %s", st->sys->name, what[m]);
    snprintf(ptitle, sizeof ptitle, "%s mean over %ld test trajectories, 95%% CI",
             prt_metrics[m].summary == PRT_SUMMARY_GEOMEAN ? "geometric" : "arithmetic",
             first ? first->ntraj : 0L);
    PrtPanel panel = {.title = ptitle, .xlabel = "t", .ylabel = ylabel[m], .logy = 1, .series = ss, .nseries = ns,
                      .ymax = m == PRT_METRIC_VIOLATION ? 0 : 1};
    char *path = report_path(st->dir, name);
    int rc = prt_svg_write(path, title, &panel, 1, 1, err, errlen);
    free(path), free(ss);
    return rc;
}

/* Figure 1 middle: the rollout's relative error against the number of training
   trajectories, log-log, a line per model with its 95 % band. */
static int plot_efficiency(const Settings *st, const Pooled *pooled, int npooled, char *err, size_t errlen) {
    PrtSeries *ss = prt_xcalloc((size_t)st->nmodels + 1, sizeof(PrtSeries), "plot data");
    double *v = prt_xalloc((size_t)(4 * st->nmodels * st->nsizes + 1), sizeof(double), "plot data");
    for (int j = 0; j < st->nmodels; j++) {
        double *x = v + 4 * j * st->nsizes, *y = x + st->nsizes, *lo = y + st->nsizes, *hi = lo + st->nsizes;
        for (int i = 0; i < st->nsizes; i++) {
            const Pooled *p = &pooled[j * st->nsizes + i]; /* model-major, sizes in order */
            x[i] = (double)p->size;
            y[i] = p->nok ? p->fig[PRT_METRIC_REL_ERROR] : NAN;
            lo[i] = p->nok ? p->ci[PRT_METRIC_REL_ERROR][0] : NAN, hi[i] = p->nok ? p->ci[PRT_METRIC_REL_ERROR][1] : NAN;
        }
        ss[j] = (PrtSeries){.x = x, .y = y, .lo = lo, .hi = hi, .n = st->nsizes, .label = st->models[j]->name, .color = j,
                            .width = 2, .markers = 1};
    }
    char title[256];
    snprintf(title, sizeof title, "%s: data efficiency", st->sys->name);
    PrtPanel panel = {.title = "relative error over the rollout (geometric mean, 95% CI)", .xlabel = "training trajectories",
                      .ylabel = "relative state error", .logy = 1, .logx = 1, .series = ss, .nseries = st->nmodels,
                      .ymax = 1};
    char *path = report_path(st->dir, "data-efficiency.svg");
    int rc = prt_svg_write(path, title, &panel, 1, 1, err, errlen);
    free(path), free(ss), free(v);
    return rc;
}

/* ---- the command ---- */

/* ---- the runs ---- */

/* The options of run i, whose folder is set, printing its line; *earlier (the caller frees
   it) lists the finished runs of its seed and size, whose training it may take. */
static RunOptions run_options(const CompareOptions *o, const Settings *st, Run *runs, int i, int nruns,
                              const char ***earlier, const char *log) {
    Run *r = &runs[i];
    bool resume = !o->force && unfinished(r->dir);
    if (!o->quiet)
        printf("compare: run %d of %d: model %s, seed %ld, %ld training %s -> %s/%s%s%s%s\n", i + 1, nruns, r->md->name,
               r->seed, r->size, r->size == 1 ? "trajectory" : "trajectories", r->dir, resume ? " (resuming its checkpoint)" : "",
               log ? " (log: " : "", log ? log : "", log ? ")" : "");
    fflush(stdout);
    /* the earlier models' finished runs of this seed and size: one that trains as this model
       (leapfrog for leapfrog + proposed) gives it its training */
    *earlier = prt_xcalloc((size_t)nruns + 1, sizeof(char *), "the runs");
    int nearlier = 0;
    for (int k = 0; k < i; k++)
        if (runs[k].ok && runs[k].seed == r->seed && runs[k].size == r->size) (*earlier)[nearlier++] = runs[k].dir;
    /* `physc run`'s own folder for this model, at the data block's seed and size: a finished run
       there of the same fingerprint is taken rather than trained again */
    bool run_default = r->seed == st->first_seed && r->size == st->sys->data.ntrain;
    if (run_default) {
        size_t len = strlen(st->sys->name) + strlen(r->md->name) + 8;
        r->run_dir = prt_xalloc(len, 1, "a path");
        snprintf(r->run_dir, len, "runs/%s-%s", st->sys->name, r->md->name);
    }
    return (RunOptions){.file = o->file, .model = r->md->name, .out_dir = r->dir, .epochs = st->epochs, .seed = r->seed,
                        .precision = o->precision,
                        .reuse_from = r->run_dir,
                        .threads = o->threads, .ntrain = o->nsizes ? r->size : 0, .quiet = o->quiet, .force = o->force,
                        .resume = resume, .eval_from_chunk = o->eval_from_chunk, .reuse_finished = !o->force,
                        .trained_by = *earlier, .ntrained_by = nearlier, .failure = r->failure,
                        .failure_len = sizeof r->failure, .diags = o->diags};
}

/* After run r ended with run_rc (not interrupted): its files read, or why it failed. */
static void run_ended(Run *r, int run_rc, int *failed) {
    if (run_rc == 0 && load_run(r, r->failure, sizeof r->failure) == 0) r->ok = true;
    else if (!r->failure[0]) snprintf(r->failure, sizeof r->failure, "exit status %d", run_rc);
    *failed += !r->ok;
    if (!r->ok) fprintf(stderr, "physc: compare: %s failed: %s\n", r->dir, r->failure);
}

/* One run after another, in this process (their progress on the terminal). Returns 0, or
   128 + the signal that stopped a run (it kept its checkpoint). */
static int runs_in_turn(System *sys, const CompareOptions *o, const Settings *st, Run *runs, int nruns, int *failed) {
    for (int i = 0; i < nruns; i++) {
        const char **earlier;
        RunOptions ro = run_options(o, st, runs, i, nruns, &earlier, NULL);
        int run_rc = run_model(sys, &ro);
        free(earlier);
        if (run_rc >= 128) { /* Ctrl-C or SIGTERM: the run kept a checkpoint; stop here */
            fprintf(stderr, "physc: compare: stopped at run %d of %d; the same command resumes it\n", i + 1, nruns);
            return run_rc;
        }
        run_ended(&runs[i], run_rc, failed);
    }
    return 0;
}

static volatile sig_atomic_t stop_signal; /* SIGINT, SIGTERM or SIGHUP, to the parent of parallel runs */
static void on_stop_signal(int sig) { stop_signal = sig; }

/* Whether run i may start: every earlier run of its seed, size and model kind has ended,
   since one of them may train exactly as it does and give it its training. */
static bool run_ready(const Run *runs, const char *state, int i) {
    for (int k = 0; k < i; k++)
        if (state[k] != 'd' && runs[k].seed == runs[i].seed && runs[k].size == runs[i].size &&
            runs[k].md->kind == runs[i].md->kind)
            return false;
    return true;
}

/* Starts run i in a child process with its own process group (the parent forwards a stop
   signal once, so a run sees one Ctrl-C, not two), its output in `log`; the child reports
   why it failed through a pipe. The child's pid, or -1 with errno set. */
static pid_t start_run(System *sys, const RunOptions *ro, const char *log, int *failure_fd) {
    int fds[2];
    if (pipe(fds) != 0) return -1;
    fflush(stdout), fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(fds[0]), close(fds[1]);
        errno = e;
        return -1;
    }
    if (pid == 0) {
        close(fds[0]);
        setpgid(0, 0);
        signal(SIGINT, SIG_DFL), signal(SIGTERM, SIG_DFL), signal(SIGHUP, SIG_DFL);
        int fd = open(log, O_WRONLY | O_CREAT | (ro->resume ? O_APPEND : O_TRUNC), 0644); /* a resumed run's log goes on */
        if (fd >= 0) dup2(fd, STDOUT_FILENO), dup2(fd, STDERR_FILENO), close(fd);
        int rc = run_model(sys, ro);
        fflush(stdout), fflush(stderr);
        size_t len = strnlen(ro->failure, ro->failure_len);
        if (len && write(fds[1], ro->failure, len) < 0) rc = rc ? rc : 1;
        _exit(rc);
    }
    setpgid(pid, pid);
    close(fds[1]);
    *failure_fd = fds[0];
    return pid;
}

/* Up to o->jobs runs at once, each a child process writing DIR/<run>.log. Returns 0, or
   128 + the signal that stopped them (forwarded to the runs in progress, which keep their
   checkpoints; no new run starts). */
static int runs_in_parallel(System *sys, const CompareOptions *o, const Settings *st, Run *runs, int nruns, int *failed) {
    char *state = prt_xalloc((size_t)nruns, 1, "the runs"); /* 'w'aiting, 'r'unning, 'd'one */
    pid_t *pid = prt_xalloc((size_t)nruns, sizeof(pid_t), "the runs");
    int *fd = prt_xalloc((size_t)nruns, sizeof(int), "the runs");
    memset(state, 'w', (size_t)nruns);
    struct sigaction sa = {.sa_handler = on_stop_signal}, old_int, old_term, old_hup;
    sigemptyset(&sa.sa_mask);
    stop_signal = 0;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    sigaction(SIGHUP, &sa, &old_hup);
    int running = 0, stopped = 0;
    bool forwarded = false;
    for (;;) {
        if (stop_signal && !forwarded) {
            for (int i = 0; i < nruns; i++)
                if (state[i] == 'r') kill(pid[i], stop_signal);
            forwarded = true;
        }
        while (!stop_signal && running < o->jobs) {
            int i = 0;
            while (i < nruns && !(state[i] == 'w' && run_ready(runs, state, i))) i++;
            if (i == nruns) break;
            size_t len = strlen(runs[i].dir) + 8;
            char *log = prt_xalloc(len, 1, "a path");
            const char **earlier;
            snprintf(log, len, "%s.log", runs[i].dir);
            RunOptions ro = run_options(o, st, runs, i, nruns, &earlier, o->quiet ? NULL : log);
            pid[i] = start_run(sys, &ro, log, &fd[i]);
            if (pid[i] > 0) state[i] = 'r', running++;
            else {
                snprintf(runs[i].failure, sizeof runs[i].failure, "cannot start its process: %s", strerror(errno));
                state[i] = 'd';
                run_ended(&runs[i], 1, failed);
            }
            free(earlier), free(log);
        }
        if (running == 0) break; /* all ended, or stopped */
        int status;
        pid_t ended = waitpid(-1, &status, WNOHANG);
        if (ended == 0 || (ended < 0 && errno == EINTR)) {
            sleep(1); /* (a signal ends it early) */
            continue;
        }
        if (ended < 0) break; /* no child left: cannot happen while running > 0 */
        int i = 0;
        while (i < nruns && !(state[i] == 'r' && pid[i] == ended)) i++;
        if (i == nruns) continue; /* not a run's */
        Run *r = &runs[i];
        ssize_t got = read(fd[i], r->failure, sizeof r->failure - 1);
        r->failure[got > 0 ? got : 0] = 0;
        close(fd[i]);
        state[i] = 'd', running--;
        int run_rc = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
        if (WIFSIGNALED(status) && !r->failure[0])
            snprintf(r->failure, sizeof r->failure, "its process was killed by signal %d", WTERMSIG(status));
        if (stop_signal && (run_rc >= 128 || (WIFSIGNALED(status) && WTERMSIG(status) == stop_signal))) {
            /* stopped by the forwarded signal: its checkpoint is kept (or, stopped before it
               trained, it has none and starts afresh next time) */
            stopped++;
            continue;
        }
        run_ended(r, run_rc, failed);
        if (!o->quiet && r->ok) printf("compare: run %d of %d ended: model %s, seed %ld\n", i + 1, nruns, r->md->name, r->seed);
        fflush(stdout);
    }
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    sigaction(SIGHUP, &old_hup, NULL);
    free(state), free(pid), free(fd);
    if (!stop_signal) return 0;
    fprintf(stderr, "physc: compare: stopped (%s); %d %s in progress kept %s checkpoint%s; the same command resumes\n",
            stop_signal == SIGINT ? "interrupted" : stop_signal == SIGHUP ? "SIGHUP" : "SIGTERM", stopped, stopped == 1 ? "run" : "runs",
            stopped == 1 ? "its" : "their", stopped == 1 ? "" : "s");
    return 128 + stop_signal;
}

/* The comparison's sizes are within what the data block holds, and there are test
   trajectories: 0, or the exit status (said). */
static int check_sizes(const System *sys, const long *sizes, int nsizes) {
    if (sys->data.ntest == 0) {
        fprintf(stderr, "physc: compare: the data block has no test trajectories (test 0): there is nothing to compare\n");
        return 1;
    }
    for (int z = 0; z < nsizes && sys->data.file; z++) /* a file's training trajectories are what it has */
        if (sizes[z] > sys->data.ntrain) {
            fprintf(stderr, "physc: compare: --train-sizes %ld: the data block's train takes %d trajectories of %s; give "
                    "sizes up to %d\n", sizes[z], sys->data.ntrain, sys->data.file, sys->data.ntrain);
            return 2;
        }
    return 0;
}

/* Every run of the comparison: each model at each size with each seed, in its folder */
static Run *plan_runs(const Settings *st, long seeds, int *nruns) {
    *nruns = st->nmodels * st->nsizes * (int)seeds;
    Run *runs = prt_xcalloc((size_t)*nruns, sizeof(Run), "the runs");
    int i = 0;
    for (int j = 0; j < st->nmodels; j++)
        for (int z = 0; z < st->nsizes; z++)
            for (long s = 0; s < seeds; s++, i++) {
                Run *r = &runs[i];
                r->md = st->models[j], r->seed = st->first_seed + s, r->size = st->sizes[z];
                size_t len = strlen(st->dir) + strlen(r->md->name) + 64;
                r->dir = prt_xalloc(len, 1, "a path");
                if (st->o->nsizes) snprintf(r->dir, len, "%s/%s-seed%ld-n%ld", st->dir, r->md->name, r->seed, r->size);
                else snprintf(r->dir, len, "%s/%s-seed%ld", st->dir, r->md->name, r->seed);
            }
    return runs;
}

static const char *const fig_files[3] = {"fig7-rel-error.svg", "fig8-energy-error.svg", "fig3-manifold-error.svg"};

/* Whether the system has rotations on SO(3): their manifold error is plotted too (the Lie T2
   paper's Figure 3) */
static bool has_so3(const System *sys) {
    bool so3 = false;
    for (int b = 0; b < sys->nbodies; b++) so3 |= sys->bodies[b].state == STATE_SO3;
    return so3;
}

/* comparison.json and the figures at the largest size (none without a finished run there:
   an earlier comparison's are removed, so they cannot pass for this one's); returns the
   outputs that could not be written (each said), *plotted whether the figures were drawn. */
static int write_figures(const Settings *st, Run *runs, int nruns, Pooled *pooled, int npooled, int at_largest,
                         bool *plotted) {
    char err[1024];
    int failed = 0, nsizes = st->nsizes;
    char *path = report_path(st->dir, "comparison.json");
    if (write_json(path, st, runs, nruns, pooled, npooled, err, sizeof err) != 0)
        fprintf(stderr, "physc: compare: %s\n", err), failed++;
    free(path);
    bool plot = false;
    for (int j = 0; j < st->nmodels; j++) plot |= pooled[j * nsizes + at_largest].nok > 0;
    bool so3 = has_so3(st->sys);
    static const int fig_metric_of[3] = {PRT_METRIC_REL_ERROR, PRT_METRIC_ENERGY_ERROR, PRT_METRIC_VIOLATION};
    for (int m = 0; plot && m < (so3 ? 3 : 2); m++)
        if (plot_over_time(st, pooled, at_largest, fig_metric_of[m], fig_files[m], err, sizeof err) != 0)
            fprintf(stderr, "physc: compare: %s\n", err), failed++;
    if (plot && nsizes > 1 && plot_efficiency(st, pooled, npooled, err, sizeof err) != 0)
        fprintf(stderr, "physc: compare: %s\n", err), failed++;
    if (plot && plot_first_rollout(st, runs, nruns, st->sizes[at_largest], "first-rollout.svg", err, sizeof err) != 0)
        fprintf(stderr, "physc: compare: %s\n", err), failed++;
    const char *unwritten[5] = {plot ? NULL : fig_files[0], plot ? NULL : fig_files[1],
                                plot && nsizes > 1 ? NULL : "data-efficiency.svg", plot ? NULL : "first-rollout.svg",
                                plot && so3 ? NULL : fig_files[2]};
    for (int k = 0; k < 5; k++)
        if (unwritten[k]) {
            char *stale = report_path(st->dir, unwritten[k]);
            unlink(stale);
            free(stale);
        }
    *plotted = plot;
    return failed;
}

/* The comparison's tables and what was written */
static void print_comparison(const Settings *st, const Pooled *pooled, int npooled, long largest, bool plotted,
                             int failed_outputs) {
    const CompareOptions *o = st->o;
    int nsizes = st->nsizes;
    printf("\ncomparison of %d %s on %s: %ld %s (", st->nmodels, st->nmodels == 1 ? "model" : "models", st->sys->name,
           o->seeds, o->seeds == 1 ? "seed" : "seeds");
    for (long s = 0; s < o->seeds; s++) printf("%s%ld", s ? ", " : "", st->first_seed + s);
    printf("), %ld training trajectories%s, %ld %s, test rollouts from %s\n", largest, nsizes > 1 ? " (the largest size)" : "",
           st->epochs, st->epochs == 1 ? "epoch" : "epochs", o->eval_from_chunk ? "a random chunk's first state" : "the initial states");
    print_table(pooled, npooled, largest);
    print_means(pooled, npooled, largest);
    print_so3_means(pooled, npooled, largest);
    if (nsizes > 1) print_efficiency(st, pooled);
    if (failed_outputs) return;
    if (plotted) {
        printf("\nwrote %s/: comparison.json, %s, %s, first-rollout.svg%s%s\n", st->dir, fig_files[0], fig_files[1],
               nsizes > 1 ? ", data-efficiency.svg" : "", has_so3(st->sys) ? ", fig3-manifold-error.svg" : "");
        return;
    }
    int finished = 0; /* at any size: the plots show the largest */
    for (int k = 0; k < npooled; k++) finished += pooled[k].nok;
    if (finished)
        printf("\nwrote %s/comparison.json (no plots: no run with %ld training trajectories, the size they show, "
               "finished)\n", st->dir, largest);
    else printf("\nwrote %s/comparison.json (no plots: no run finished)\n", st->dir);
}

int compare_models(System *sys, const CompareOptions *o) {
    const Model *models[COMPARE_MAX_LIST];
    int nmodels, rc = pick_models(sys, o->models, models, &nmodels);
    if (rc) return rc;
    long block_size = sys->data.ntrain;
    const long *sizes = o->nsizes ? o->sizes : &block_size;
    int nsizes = o->nsizes ? o->nsizes : 1;
    if ((rc = check_sizes(sys, sizes, nsizes)) != 0) return rc;
    Settings st = {.sys = sys, .o = o, .epochs = o->epochs > 0 ? o->epochs : sys->train.epochs,
                   .threads = o->threads > 0 ? o->threads : sys->train.threads, .first_seed = sys->data.seed,
                   .sizes = sizes, .nsizes = nsizes, .models = models, .nmodels = nmodels};
    char *dir;
    if (o->out_dir) dir = strcpy(prt_xalloc(strlen(o->out_dir) + 1, 1, "a path"), o->out_dir);
    else {
        size_t len = strlen(sys->name) + 16;
        dir = prt_xalloc(len, 1, "a path");
        snprintf(dir, len, "runs/%s-compare", sys->name);
    }
    st.dir = dir;
    char err[1024], was[256];
    PrtRunLock lock; /* one comparison at a time writes the folder (its runs lock their own) */
    if (run_make_dirs(dir, err, sizeof err) != 0 || prt_run_lock(&lock, dir, was, sizeof was, err, sizeof err) != 0) {
        fprintf(stderr, "physc: compare: %s\n", err);
        free(dir);
        return 1;
    }
    snprintf(was, sizeof was, "compare of %s", sys->name);
    prt_run_lock_record(&lock, was);
    int nruns, failed = 0;
    Run *runs = plan_runs(&st, o->seeds, &nruns);
    int stop_rc = o->jobs > 1 ? runs_in_parallel(sys, o, &st, runs, nruns, &failed) : runs_in_turn(sys, o, &st, runs, nruns, &failed);
    int npooled = stop_rc ? 0 : nmodels * nsizes, failed_outputs = 0;
    Pooled *pooled = prt_xcalloc((size_t)npooled + 1, sizeof(Pooled), "pooled figures");
    if (!stop_rc) {
        for (int j = 0; j < nmodels; j++)
            for (int z = 0; z < nsizes; z++) {
                Pooled *p = &pooled[j * nsizes + z];
                p->md = models[j], p->size = sizes[z];
                pool(p, runs, nruns);
            }
        int at_largest = 0; /* the size the table and the plots over time show */
        for (int z = 1; z < nsizes; z++) at_largest = sizes[z] > sizes[at_largest] ? z : at_largest;
        bool plotted;
        failed_outputs = write_figures(&st, runs, nruns, pooled, npooled, at_largest, &plotted);
        print_comparison(&st, pooled, npooled, sizes[at_largest], plotted, failed_outputs);
        if (failed) fprintf(stderr, "physc: compare: %d of %d %s failed (see the table)\n", failed, nruns, nruns == 1 ? "run" : "runs");
    }
    for (int k = 0; k < npooled; k++) pooled_free(&pooled[k]);
    for (int k = 0; k < nruns; k++) run_free(&runs[k]);
    free(pooled), free(runs), free(dir);
    prt_run_unlock(&lock);
    return stop_rc ? stop_rc : failed || failed_outputs ? 1 : 0;
}
