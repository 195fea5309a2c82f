/* sweep_report.c — a sweep's summary from its runs' files (sweep_internal.h): the summary
   file (sweep.json, or comparison.json for `physc compare`), the tables, and the paper's
   plots. */
#include "sweep_internal.h"
#include "core/alloc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/atomic_file.h"
#include "core/run_lock.h"
#include "io/svgplot.h"
#include "math/stats.h"
#include "models/model.h"
#include "report.h"

/* The summary file's name */
static const char *summary_name(const Settings *st) { return strcmp(st->o->command, "compare") ? "sweep.json" : "comparison.json"; }

/* ---- the summary file ---- */

static void put_num(FILE *f, double v) {
    if (isfinite(v)) fprintf(f, "%.10g", v);
    else fputs("null", f);
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
            if (sweep_once_has(m, kind))
                fprintf(f, ",\n%s\"%s\": ", indent, sweep_once_key(key, m, kind, true)), put_num(f, once[kind][m]);
}

/* Each run's figure: its mean over the seeds with the 95 % t interval of that mean */
static void put_over_seeds(FILE *f, const Pooled *p) {
    fputs(",\n     \"over_seeds\": {", f);
    for (int m = 0, n = 0; m < PRT_NMETRICS; m++) {
        if (prt_metrics[m].truth || (!prt_metrics[m].csv && !sweep_once_has(m, ONCE_FIGURE))) continue;
        fprintf(f, "%s\n       \"%s\": ", n++ ? "," : "", prt_metrics[m].compare_key);
        double v[3] = {p->seed_mean[m], p->seed_ci[m][0], p->seed_ci[m][1]};
        put_array(f, v, 3);
    }
    fputs("}", f);
}

static int write_json(const char *path, const Settings *st, Run *runs, int nruns, Pooled *pooled, int npooled, char *err,
                      size_t errlen) {
    PrtAtomicFile af;
    if (prt_atomic_open(&af, path, err, errlen) != 0) return -1;
    FILE *f = af.f;
    fputs("{\n  \"system\": ", f), report_put_json_string(f, st->sys->name);
    fputs(",\n  \"program\": ", f), report_put_json_string(f, st->o->file);
    fputs(",\n  \"settings\": {\n    \"models\": [", f);
    for (int i = 0; i < st->nmodels; i++) fputs(i ? ", " : "", f), report_put_json_string(f, st->models[i]->name);
    fprintf(f, "],\n    \"epochs\": %ld,\n    \"seeds\": [", st->epochs);
    for (long s = 0; s < st->o->seeds; s++) fprintf(f, "%s%ld", s ? ", " : "", st->first_seed + s);
    fputs("],\n    \"train_sizes\": [", f);
    for (int i = 0; i < st->nsizes; i++) fprintf(f, "%s%ld", i ? ", " : "", st->sizes[i]);
    fprintf(f, "],\n    \"eval_from\": \"%s\",\n    \"threads\": %ld\n  },\n  \"runs\": [", st->o->eval_from_chunk ? "chunk" : "initial",
            st->threads);
    for (int i = 0; i < nruns; i++) {
        const Run *r = &runs[i];
        fprintf(f, "%s\n    {\"model\": ", i ? "," : "");
        report_put_json_string(f, r->md->name);
        fprintf(f, ", \"kind\": \"%s\", \"seed\": %ld, \"train_trajectories\": %ld, \"dir\": ", model_kind_name(r->md->kind),
                r->seed, r->size);
        report_put_json_string(f, r->dir);
        fprintf(f, ",\n     \"status\": \"%s\"", r->ok ? "ok" : r->pending ? "not finished" : "failed");
        if (!r->ok) {
            fputs(", \"failure\": ", f), report_put_json_string(f, r->failure), fputs("}", f);
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
        report_put_json_string(f, p->md->name);
        fprintf(f, ", \"kind\": \"%s\", \"train_trajectories\": %ld, \"runs\": %d, \"runs_ok\": %d, \"runs_not_finished\": %d",
                model_kind_name(p->md->kind), p->size, p->nruns, p->nok, p->npending);
        if (!p->nok) {
            fputs(", \"failure\": ", f), report_put_json_string(f, p->failure ? p->failure : "no run"), fputs("}", f);
            continue;
        }
        fprintf(f, ",\n     \"test_trajectories\": %ld, \"param_count\": %ld, \"seconds_per_epoch\": ", p->ntraj, p->param_count);
        put_num(f, p->seconds_per_epoch);
        put_figures(f, p->fig, p->ci, (const double(*)[PRT_NMETRICS])p->once, "     ");
        put_over_seeds(f, p);
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
    bool col[PRT_NMETRICS]; /* a figure left out where undefined (metrics.h) is a column where a model has it */
    for (int id = 0; id < PRT_NMETRICS; id++) {
        col[id] = model_column(id) && !prt_metric_scopes[prt_metrics[id].scope].left_out;
        for (int i = 0; i < npooled && model_column(id) && !col[id]; i++) col[id] = pooled[i].size == size && !isnan(pooled[i].fig[id]);
        last = col[id] ? id : last;
    }
    printf("%-*s %-8s %10s %9s", w, "model", "kind", "parameters", "s/epoch");
    for (int id = 0; id < PRT_NMETRICS; id++)
        if (col[id] && prt_metrics[id].summary == PRT_SUMMARY_GEOMEAN)
            printf("  %-10s %-21s", prt_metrics[id].header, "(95% CI)");
        else if (col[id]) printf(id == last ? "  %s" : "  %-10s", prt_metrics[id].header);
    putchar('\n');
    const Pooled *floor_of = NULL;
    for (int i = 0; i < npooled; i++) {
        const Pooled *p = &pooled[i];
        if (p->size != size) continue;
        printf("%-*s %-8s ", w, p->md->name, model_kind_name(p->md->kind));
        if (!p->nok && p->npending == p->nruns) {
            printf("not finished (%d %s: another process holds %s, or %s not run yet)\n", p->nruns, p->nruns == 1 ? "run" : "runs",
                   p->nruns == 1 ? "it" : "them", p->nruns == 1 ? "it has" : "they have");
            continue;
        }
        if (!p->nok) {
            printf("failed (%d of %d %s): %s\n", p->nruns - p->npending, p->nruns, p->nruns == 1 ? "run" : "runs", p->failure);
            continue;
        }
        if (!floor_of) floor_of = p;
        char spe[32] = "-"; /* (no s/epoch: a model that took another's training) */
        if (isfinite(p->seconds_per_epoch)) snprintf(spe, sizeof spe, "%.4f", p->seconds_per_epoch);
        printf("%10ld %9s", p->param_count, spe);
        for (int id = 0; id < PRT_NMETRICS; id++) {
            if (!col[id]) continue;
            char b[32], ci[48];
            if (prt_metrics[id].summary == PRT_SUMMARY_GEOMEAN) {
                snprintf(ci, sizeof ci, "[%.2e, %.2e]", p->ci[id][0], p->ci[id][1]);
                printf("  %-10s %-21s", e3(b, p->fig[id]), isfinite(p->ci[id][0]) ? ci : "-");
            } else {
                bool none = isnan(p->fig[id]) && prt_metrics[id].scope != PRT_SCOPE_ALL; /* (undefined here) */
                printf(id == last ? "  %s" : "  %-10s", none ? "none" : e3(b, p->fig[id]));
            }
        }
        if (p->nok + p->npending < p->nruns)
            printf("  (%d of %d runs failed: %s)", p->nruns - p->nok - p->npending, p->nruns, p->failure);
        if (p->npending) printf("  (%d of %d runs not finished)", p->npending, p->nruns);
        putchar('\n');
    }
    int c = PRT_METRIC_CHAOS_FLOOR;
    if (floor_of)
        printf("%s (the truth started 1e-4 off; the same test trajectories for every model): %.3e [%.2e, %.2e]\n",
               prt_metrics[c].header, floor_of->fig[c], floor_of->ci[c][0], floor_of->ci[c][1]);
    /* what the columns are: a figure near the floor is the floor, not a measurement */
    for (int id = 0, n = 0; id < PRT_NMETRICS; id++)
        if (col[id] && prt_metrics[id].summary == PRT_SUMMARY_GEOMEAN)
            printf("%s%s", n++ ? ", " : "", prt_metrics[id].header);
    int v = PRT_METRIC_VIOLATION;
    char none[96] = "";
    if (floor_of && isnan(floor_of->fig[v]))
        snprintf(none, sizeof none, " (none: %s)", prt_metric_scopes[prt_metrics[v].scope].why_none);
    printf(": geometric means over the test trajectories of exp(time mean of log(e(t) + %g)); %g is a floor\n"
           "%s: the mean of |Phi(t)| over time and trajectories%s\n", PRT_EVAL_FLOOR, PRT_EVAL_FLOOR, prt_metrics[v].header,
           none);
    if (col[PRT_METRIC_ORIENTATION])
        printf("%s: the mean over time and trajectories of the angle between the true and the model's frame of each "
               "rigid body, summed over them (rad)\n", prt_metrics[PRT_METRIC_ORIENTATION].header);
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
static bool in_table(int id, int source, int kind) { return prt_metrics[id].source == source && sweep_once_has(id, kind); }

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
            snprintf(h, sizeof h, "%s%s", prt_metrics[id].header, sweep_once_squares(kind) ? "^2" : "");
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

/* The spread from seed to seed: each run's own figure (a geometric mean over its test
   trajectories), their mean over the seeds and its 95 % t interval */
static void print_over_seeds(const Pooled *pooled, int npooled, long size) {
    int w = name_width(pooled, npooled);
    printf("\nover the seeds: the mean of each run's figure [95%% t interval of the mean]\n%-*s %-8s", w, "model", "kind");
    for (int id = 0; id < PRT_NMETRICS; id++)
        if (model_column(id) && prt_metrics[id].summary == PRT_SUMMARY_GEOMEAN) printf("  %-32s", prt_metrics[id].header);
    putchar('\n');
    for (int i = 0; i < npooled; i++) {
        const Pooled *p = &pooled[i];
        if (p->size != size || !p->nok) continue;
        printf("%-*s %-8s", w, p->md->name, model_kind_name(p->md->kind));
        for (int id = 0; id < PRT_NMETRICS; id++) {
            if (!model_column(id) || prt_metrics[id].summary != PRT_SUMMARY_GEOMEAN) continue;
            char b[32], cell[64];
            if (isfinite(p->seed_ci[id][0]))
                snprintf(cell, sizeof cell, "%s [%.2e, %.2e]", e3(b, p->seed_mean[id]), p->seed_ci[id][0], p->seed_ci[id][1]);
            else snprintf(cell, sizeof cell, "%s", e3(b, p->seed_mean[id]));
            printf("  %-32s", cell);
        }
        printf("  (%d %s)\n", p->nok, p->nok == 1 ? "seed" : "seeds");
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
        char *path = report_path(r->dir, "first-rollout.csv"), *text = report_read_text(path, NULL, err, errlen);
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
            else if ((rows[j] = sweep_read_csv(path, text, cols[j], &data[j], err, errlen)) < 1)
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
static const char *const fig_files[3] = {"fig7-rel-error.svg", "fig8-energy-error.svg", "fig3-manifold-error.svg"};

/* Whether the system has rotations on SO(3): their manifold error is plotted too (the Lie T2
   paper's Figure 3) */
bool sweep_has_so3(const System *sys) {
    bool so3 = false;
    for (int b = 0; b < sys->nbodies; b++) so3 |= sys->bodies[b].state == STATE_SO3;
    return so3;
}

/* The summary file and the figures at the largest size (none without a finished run there:
   an earlier summary's are removed, so they cannot pass for this one's); returns the
   outputs that could not be written (each said), *plotted whether the figures were drawn. */
static int write_figures(const Settings *st, Run *runs, int nruns, Pooled *pooled, int npooled, int at_largest,
                         bool *plotted) {
    char err[1024];
    int failed = 0, nsizes = st->nsizes;
    char *path = report_path(st->dir, summary_name(st));
    if (write_json(path, st, runs, nruns, pooled, npooled, err, sizeof err) != 0)
        fprintf(stderr, "physc: %s: %s\n", st->o->command, err), failed++;
    free(path);
    bool plot = false;
    for (int j = 0; j < st->nmodels; j++) plot |= pooled[j * nsizes + at_largest].nok > 0;
    bool so3 = sweep_has_so3(st->sys);
    static const int fig_metric_of[3] = {PRT_METRIC_REL_ERROR, PRT_METRIC_ENERGY_ERROR, PRT_METRIC_VIOLATION};
    for (int m = 0; plot && m < (so3 ? 3 : 2); m++)
        if (plot_over_time(st, pooled, at_largest, fig_metric_of[m], fig_files[m], err, sizeof err) != 0)
            fprintf(stderr, "physc: %s: %s\n", st->o->command, err), failed++;
    if (plot && nsizes > 1 && plot_efficiency(st, pooled, npooled, err, sizeof err) != 0)
        fprintf(stderr, "physc: %s: %s\n", st->o->command, err), failed++;
    if (plot && plot_first_rollout(st, runs, nruns, st->sizes[at_largest], "first-rollout.svg", err, sizeof err) != 0)
        fprintf(stderr, "physc: %s: %s\n", st->o->command, err), failed++;
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

/* The summary's tables and what was written */
static void print_comparison(const Settings *st, const Pooled *pooled, int npooled, long largest, bool plotted,
                             int failed_outputs) {
    const SweepOptions *o = st->o;
    int nsizes = st->nsizes;
    const char *name = summary_name(st);
    printf("\n%s of %d %s on %s: %ld %s (", strcmp(o->command, "compare") ? "sweep" : "comparison", st->nmodels,
           st->nmodels == 1 ? "model" : "models", st->sys->name, o->seeds, o->seeds == 1 ? "seed" : "seeds");
    for (long s = 0; s < o->seeds; s++) printf("%s%ld", s ? ", " : "", st->first_seed + s);
    printf("), %ld training trajectories%s, %ld %s, test rollouts from %s\n", largest, nsizes > 1 ? " (the largest size)" : "",
           st->epochs, st->epochs == 1 ? "epoch" : "epochs", o->eval_from_chunk ? "a random chunk's first state" : "the initial states");
    print_table(pooled, npooled, largest);
    print_means(pooled, npooled, largest);
    print_so3_means(pooled, npooled, largest);
    if (nsizes > 1) print_efficiency(st, pooled);
    if (o->seeds > 1) print_over_seeds(pooled, npooled, largest);
    if (failed_outputs) return;
    if (plotted) {
        printf("\nwrote %s/: %s, %s, %s, first-rollout.svg%s%s\n", st->dir, name, fig_files[0], fig_files[1],
               nsizes > 1 ? ", data-efficiency.svg" : "", sweep_has_so3(st->sys) ? ", fig3-manifold-error.svg" : "");
        return;
    }
    int finished = 0; /* at any size: the plots show the largest */
    for (int k = 0; k < npooled; k++) finished += pooled[k].nok;
    if (finished)
        printf("\nwrote %s/%s (no plots: no run with %ld training trajectories, the size they show, "
               "finished)\n", st->dir, name, largest);
    else printf("\nwrote %s/%s (no plots: no run finished)\n", st->dir, name);
}

int sweep_summarize(const Settings *st, Run *runs, int nruns) {
    int nsizes = st->nsizes, npooled = st->nmodels * nsizes;
    Pooled *pooled = prt_xcalloc((size_t)npooled + 1, sizeof(Pooled), "pooled figures");
    for (int j = 0; j < st->nmodels; j++)
        for (int z = 0; z < nsizes; z++) {
            Pooled *p = &pooled[j * nsizes + z];
            p->md = st->models[j], p->size = st->sizes[z];
            sweep_pool(p, runs, nruns);
        }
    int at_largest = 0; /* the size the table and the plots over time show */
    for (int z = 1; z < nsizes; z++) at_largest = st->sizes[z] > st->sizes[at_largest] ? z : at_largest;
    bool plotted;
    int failed_outputs = write_figures(st, runs, nruns, pooled, npooled, at_largest, &plotted);
    print_comparison(st, pooled, npooled, st->sizes[at_largest], plotted, failed_outputs);
    for (int k = 0; k < npooled; k++) sweep_pooled_free(&pooled[k]);
    free(pooled);
    return failed_outputs;
}
