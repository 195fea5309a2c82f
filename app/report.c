/* report.c — metrics.json and the plots of a `physc run` (see report.h). */
#include "report.h"
#include "core/alloc.h"
#include "core/atomic_file.h"
#include "core/input_file.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/svgplot.h"

char *report_path(const char *dir, const char *name) {
    size_t len = strlen(dir) + strlen(name) + 2;
    char *p = prt_xalloc(len, 1, "a path");
    snprintf(p, len, "%s/%s", dir, name);
    return p;
}

static void json_num(FILE *f, const char *key, double v, bool comma) {
    if (isfinite(v)) fprintf(f, "  \"%s\": %.10g%s\n", key, v, comma ? "," : "");
    else fprintf(f, "  \"%s\": null%s\n", key, comma ? "," : "");
}

/* A 95 % confidence interval [lo, hi]; null when there is none (fewer than 2 trajectories). */
static void json_ci(FILE *f, const char *key, const double ci[2]) {
    if (isfinite(ci[0]) && isfinite(ci[1])) fprintf(f, "  \"%s\": [%.10g, %.10g],\n", key, ci[0], ci[1]);
    else fprintf(f, "  \"%s\": null,\n", key);
}

/* An array member of n numbers (null where there is none: no validation set). */
static void json_series(FILE *f, const char *key, const double *v, int n, bool comma) {
    fprintf(f, "  \"%s\": [", key);
    for (int i = 0; i < n; i++)
        if (isfinite(v[i])) fprintf(f, "%s%.10g", i ? ", " : "", v[i]);
        else fprintf(f, "%snull", i ? ", " : "");
    fprintf(f, "]%s\n", comma ? "," : "");
}

/* The figures of the metrics (metrics.h) whose scope leaves them out where they are undefined
   (left_out) or not, and that are measured for the known terms too (known) or either (-1), keys
   prefixed: each one's figure, with its interval and arithmetic mean unless values_only; then
   their means of squares. */
static void json_metrics(FILE *f, const PrtEvalResult *ev, const char *prefix, bool left_out, int known,
                         bool values_only) {
    char key[128];
    for (int pass = 0; pass < 2; pass++) /* the figures, then the squares */
        for (int id = 0; id < PRT_NMETRICS; id++) {
            const PrtMetricRow *m = &prt_metrics[id];
            if (prt_metric_scopes[m->scope].left_out != left_out || (known >= 0 && m->known != known) ||
                (left_out && !prt_metric_applies(ev, id)) || (pass && !m->squares))
                continue;
            snprintf(key, sizeof key, "%s%s%s", prefix, m->key, pass ? "_sq" : "");
            json_num(f, key, pass ? ev->squares[id] : ev->value[id], true);
            if (pass || values_only) continue;
            if (m->summary != PRT_SUMMARY_ONCE) {
                snprintf(key, sizeof key, "%s%s_ci95", prefix, m->key);
                json_ci(f, key, ev->ci[id]);
            }
            if (m->mean_key) {
                snprintf(key, sizeof key, "%s%s", prefix, m->mean_key);
                json_num(f, key, ev->mean[id], true);
            }
        }
}

/* The App. E metrics by so3 body, keys prefixed: the bodies' names and each series in their order. */
static void json_so3_bodies(FILE *f, const PrtSystem *s, const char *prefix, const PrtEvalResult *ev) {
    if (!ev->so3_dR_body) return;
    char key[96];
    fprintf(f, "  \"%stest_so3_bodies\": [", prefix);
    for (int b = 0; b < s->nso3; b++) {
        const char *name;
        int len = prt_so3_body_name(s, b, &name);
        fprintf(f, "%s\"%.*s\"", b ? ", " : "", len, name);
    }
    fprintf(f, "],\n");
    const char *keys[4] = {"test_so3_dq_by_body", "test_so3_dR_by_body", "test_so3_dtau_by_body", "test_so3_tau_by_body"};
    const double *series[4] = {ev->so3_dq_body, ev->so3_dR_body, ev->so3_dtau_body, ev->so3_tau_body};
    for (int i = 0; i < 4; i++) {
        snprintf(key, sizeof key, "%s%s", prefix, keys[i]);
        json_series(f, key, series[i], s->nso3, true);
    }
}

void report_put_json_string(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (*c == '"' || *c == '\\') fprintf(f, "\\%c", *c);
        else if (*c < 0x20 || *c == '<') fprintf(f, "\\u%04x", *c);
        else fputc(*c, f);
    }
    fputc('"', f);
}

char *report_read_text(const char *path, size_t *len, char *err, size_t errlen) {
    FILE *f = prt_fopen_input(path, NULL, err, errlen);
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0, got;
    char *s = prt_xalloc(cap, 1, "a run's file");
    while ((got = fread(s + n, 1, cap - n - 1, f)) > 0)
        if ((n += got) + 1 == cap) s = prt_xrealloc(s, cap *= 2, 1, "a run's file");
    s[n] = 0;
    fclose(f);
    if (len) *len = n;
    return s;
}

/* A string member */
static void json_str(FILE *f, const char *key, const char *v) {
    fprintf(f, "  \"%s\": ", key);
    report_put_json_string(f, v);
    fputs(",\n", f);
}

int report_write_metrics(const char *path, const Report *r, char *err, size_t errlen) {
    PrtAtomicFile af; /* written whole or not at all */
    if (prt_atomic_open(&af, path, err, errlen) != 0) return -1;
    FILE *f = af.f;
    int done = r->tr->epochs_done - r->tr->resumed_from;
    fprintf(f, "{\n  \"system\": \"%s\",\n  \"model\": \"%s\",\n  \"kind\": \"%s\",\n", r->sys->name, r->model->name,
            model_kind_name(r->model->kind));
    fputs("  \"program\": ", f); /* (the program and its --set values: python/physc builds the model's library from them) */
    report_put_json_string(f, r->program ? r->program : "");
    fputs(",\n  \"set\": {", f);
    for (int i = 0; i < r->nset; i++) {
        fputs(i ? ", " : "", f);
        report_put_json_string(f, r->set_names[i]);
        fprintf(f, ": %.17g", r->set_values[i]);
    }
    fputs("},\n", f);
    fprintf(f, "  \"epochs\": %ld,\n  \"epochs_done\": %d,\n  \"resumed_from\": %d,\n", r->epochs, r->tr->epochs_done,
            r->tr->resumed_from);
    json_num(f, "train_seconds", r->tr->seconds, true);
    json_num(f, "seconds_per_epoch", done > 0 ? r->tr->seconds / done : NAN, true);
    fprintf(f, "  \"param_count\": %ld,\n", r->m->nparams);
    /* the metrics (null where undefined: no constraints, no energy of the family's own), the
       floor of the geometric means over time (evaluate.h), then those left out where undefined
       (the App. E ones without so3 bodies), the ones the known terms' section repeats last */
    json_metrics(f, r->ev, "", false, -1, false);
    json_num(f, "geomean_floor", PRT_EVAL_FLOOR, true);
    json_metrics(f, r->ev, "", true, false, false);
    json_metrics(f, r->ev, "", true, true, false);
    json_so3_bodies(f, r->m->sys, "", r->ev);
    if (r->ev_known) { /* the paper's "no corrections" row, from the same test rollouts: its figures alone */
        const PrtEvalResult *k = r->ev_known;
        json_metrics(f, k, PRT_METRIC_KNOWN_PREFIX, false, true, true);
        fprintf(f, "  \"known_terms_alone_rollout_failed\": %s,\n", k->rollout_failed ? "true" : "false");
        if (k->nonfinite[0]) json_str(f, "known_terms_alone_nonfinite_figure", k->nonfinite);
        json_metrics(f, k, PRT_METRIC_KNOWN_PREFIX, true, true, true);
        json_so3_bodies(f, r->m->sys, PRT_METRIC_KNOWN_PREFIX, k);
    }
    int last = r->tr->epochs_done - 1;
    json_num(f, "final_train_loss", last >= 0 ? r->tr->loss[last] : NAN, true);
    json_num(f, "final_valid_loss", last >= 0 ? r->tr->valid[last] : NAN, true);
    json_num(f, "integrator_floor", r->integrator_floor, true);
    fprintf(f, "  \"rollout_failed\": %s,\n", r->ev->rollout_failed ? "true" : "false");
    if (r->ev->nonfinite[0]) json_str(f, "nonfinite_figure", r->ev->nonfinite); /* (the run failed on it) */
    else fprintf(f, "  \"nonfinite_figure\": null,\n");
    fprintf(f, "  \"rollout_steps\": %ld,\n", r->ev->rollout_steps);
    fprintf(f, "  \"train_trajectories\": %ld,\n", r->ntrain);
    fprintf(f, "  \"test_trajectories\": %ld,\n  \"horizon_steps\": %d,\n  \"eval_from\": \"%s\",\n", r->ev->n,
            r->ev->nt - 1, r->eval_from);
    const PrtSystem *s = r->m->sys;
    json_series(f, "true_masses", s->params, s->nmass, true);
    double *learned = prt_xalloc((size_t)(s->nmass + 1), sizeof(double), "plot data");
    int nlearned = prt_model_masses(r->m, r->theta, learned);
    json_series(f, "learned_masses", learned, nlearned, true);
    free(learned);
    fprintf(f, "  \"seed\": %ld,\n  \"threads\": %ld,\n  \"precision\": \"%s\",\n  \"predicts_in\": \"%s\",\n", r->seed,
            r->threads, r->precision, r->predicts_in);
    json_str(f, "blas", r->blas);
    json_num(f, "compile_ms", r->compile_ms, true);
    json_num(f, "data_seconds", r->data_s, true);
    json_num(f, "eval_seconds", r->eval_s, true);
    json_series(f, "train_loss", r->tr->loss, r->tr->epochs_done, true);
    json_series(f, "valid_loss", r->tr->valid, r->tr->epochs_done, false);
    fprintf(f, "}\n");
    return prt_atomic_commit(&af, err, errlen);
}

/* Whether metric id has a column in the CSVs of ev: a series, and defined here unless its
   scope's figures are written everywhere (metrics.h: left_out; the readers take the columns
   from the header). */
static bool csv_column(const PrtEvalResult *ev, int id) {
    const PrtMetricRow *m = &prt_metrics[id];
    return m->csv && (!prt_metric_scopes[m->scope].left_out || prt_metric_applies(ev, id));
}

/* The rest of a CSV header: the column of each metric with a series (metrics.h). */
static void csv_header(FILE *f, const PrtEvalResult *ev) {
    for (int id = 0; id < PRT_NMETRICS; id++)
        if (csv_column(ev, id)) fprintf(f, ",%s", prt_metrics[id].csv);
    fputc('\n', f);
}

int report_write_trajectories(const char *path, const Report *r, char *err, size_t errlen) {
    PrtAtomicFile af; /* written whole or not at all */
    if (prt_atomic_open(&af, path, err, errlen) != 0) return -1;
    FILE *f = af.f;
    const PrtEvalResult *ev = r->ev;
    fprintf(f, "trajectory");
    csv_header(f, ev);
    for (long b = 0; b < ev->n; b++) {
        fprintf(f, "%ld", b);
        for (int id = 0; id < PRT_NMETRICS; id++)
            if (csv_column(ev, id)) fprintf(f, ",%.10g", ev->per_traj[id][b]);
        fputc('\n', f);
    }
    return prt_atomic_commit(&af, err, errlen);
}

int report_write_error_series(const char *path, const Report *r, char *err, size_t errlen) {
    PrtAtomicFile af; /* written whole or not at all */
    if (prt_atomic_open(&af, path, err, errlen) != 0) return -1;
    FILE *f = af.f;
    const PrtEvalResult *ev = r->ev;
    fprintf(f, "trajectory,t");
    csv_header(f, ev);
    for (long b = 0; b < ev->n; b++)
        for (int k = 0; k < ev->nt; k++) {
            long i = k * ev->n + b;
            fprintf(f, "%ld,%.10g", b, k * ev->dt);
            for (int id = 0; id < PRT_NMETRICS; id++)
                if (csv_column(ev, id)) fprintf(f, ",%.10g", ev->series[id][i]);
            fputc('\n', f);
        }
    return prt_atomic_commit(&af, err, errlen);
}

int report_write_first_rollout(const char *path, const Report *r, const PrtTrajSet *test, const char *const *names,
                               char *err, size_t errlen) {
    PrtAtomicFile af; /* written whole or not at all */
    if (prt_atomic_open(&af, path, err, errlen) != 0) return -1;
    FILE *f = af.f;
    const PrtEvalResult *ev = r->ev;
    int N = test->N;
    long n = ev->n, pt = (long)test->W * n, tn = test->n;
    fprintf(f, "t");
    for (int i = 0; i < N; i++) fprintf(f, ",%s", names[i]);
    for (int i = 0; i < N; i++) fprintf(f, ",%s_model", names[i]);
    fprintf(f, ",true_energy,true_energy_model%s\n", ev->model_energy ? ",model_energy" : ""); /* (none: the family has none) */
    for (int k = 0; k < ev->nt; k++) {
        fprintf(f, "%.10g", k * ev->dt);
        for (int i = 0; i < N; i++) fprintf(f, ",%.10g", test->xv[k * (long)test->W * tn + i * tn]);
        for (int i = 0; i < N; i++) fprintf(f, ",%.10g", ev->pred[k * pt + i * n]);
        fprintf(f, ",%.10g,%.10g", ev->energy_truth[k * n], ev->energy_pred[k * n]);
        if (ev->model_energy) fprintf(f, ",%.17g", ev->model_energy[k * n]);
        fputc('\n', f);
    }
    return prt_atomic_commit(&af, err, errlen);
}

static bool wants_plot(const System *sys, const char *name) {
    for (int i = 0; i < sys->eval.nplots; i++)
        if (!strcmp(sys->eval.plots[i], name)) return true;
    return false;
}

/* loss.svg: the training and validation loss per epoch, on a log axis, with the integrator
   floor (the loss the system's own dynamics reach under the training step: a model near it
   is limited by the step) as a line; the final losses in the title */
int report_write_loss_plot(const char *dir, const Report *r, char *err, size_t errlen) {
    int n = r->tr->epochs_done;
    double *epoch = prt_xalloc((size_t)(n + 2), sizeof(double), "plot data");
    for (int e = 0; e < n; e++) epoch[e] = e + 1;
    bool valid = false;
    for (int e = 0; e < n; e++) valid |= isfinite(r->tr->valid[e]);
    double floor_x[2] = {1, n > 1 ? n : 2}, floor_y[2] = {r->integrator_floor, r->integrator_floor};
    char floor_label[96];
    snprintf(floor_label, sizeof floor_label, "integrator floor (%s)", prt_integrators[r->m->cfg.integrator].name);
    PrtSeries series[3] = {{.x = epoch, .y = r->tr->loss, .n = n, .label = "training", .color = 0, .markers = n <= 30},
                           {.x = epoch, .y = r->tr->valid, .n = n, .label = "validation", .color = 1, .dashed = 1,
                            .markers = n <= 30}};
    int ns = valid ? 2 : 1;
    if (isfinite(r->integrator_floor) && r->integrator_floor > 0)
        series[ns++] = (PrtSeries){.x = floor_x, .y = floor_y, .n = 2, .label = floor_label, .color = PRT_GREY, .dashed = 1};
    char ylabel[64], title[160];
    snprintf(ylabel, sizeof ylabel, "%s loss (the state's units)", r->sys->train.loss);
    snprintf(title, sizeof title, "final training loss %.3g", n ? r->tr->loss[n - 1] : NAN);
    if (n && isfinite(r->integrator_floor) && r->integrator_floor > 0) { /* (the floor's multiple: is the step the limit?) */
        double x = r->tr->loss[n - 1] / r->integrator_floor;
        size_t len = strlen(title);
        snprintf(title + len, sizeof title - len, x >= 10 ? " (%.0fx the floor)" : " (%.2fx the floor)", x);
    }
    PrtPanel panel = {.title = title, .xlabel = "epoch", .ylabel = ylabel, .logy = 1, .series = series, .nseries = ns,
                      .xwhole = 1};
    char head[256];
    snprintf(head, sizeof head, "%s / %s: training", r->sys->name, r->model->name);
    char *p = report_path(dir, "loss.svg");
    int rc = prt_svg_write(p, head, &panel, 1, 1, err, errlen);
    free(p), free(epoch);
    return rc;
}

int report_phase_pairs(const PrtSystem *s, int max, int pairs[][2]) {
    int n = 0, points = s->N - 12 * s->nso3; /* the points' coordinates, then 12 rows per so3 body */
    for (int i = 0; i < points + 3 * s->nso3 && n < max; i++, n++) {
        int b = (i - points) / 3, d = (i - points) % 3; /* (an so3 body's centre) */
        if (pairs) pairs[n][0] = i < points ? i : s->so3[b].x + d, pairs[n][1] = s->N + (i < points ? i : s->so3[b].p + d);
    }
    return n;
}

/* rollout.svg, error.svg, energy.svg (those the eval block's `plots` asks for; rollout.svg
   only with `trajectories` above 0); the names of those written are added to `wrote`. */
/* phase.svg: the first test trajectory in phase space, a panel per coordinate with a velocity
   of its own (up to six): its velocity against its position, the truth wide and pale, the
   model dashed on it */
static int write_phase_plot(const char *dir, const Report *r, const PrtTrajSet *test, const char *const *names, char *err,
                            size_t errlen) {
    enum { MAX_PANELS = 6 };
    const PrtEvalResult *ev = r->ev;
    long n = ev->n, pt = (long)test->W * n, tpt = (long)test->W * test->n;
    int nt = ev->nt, pairs[MAX_PANELS][2], np = report_phase_pairs(r->m->sys, MAX_PANELS, pairs);
    int all = report_phase_pairs(r->m->sys, 1 << 30, NULL);
    double *xy = prt_xalloc((size_t)(4 * np * nt + 1), sizeof(double), "plot data");
    PrtSeries *ss = prt_xcalloc((size_t)(2 * np + 1), sizeof(PrtSeries), "plot data");
    PrtPanel panels[MAX_PANELS] = {{0}};
    char titles[MAX_PANELS][96], xl[MAX_PANELS][96], yl[MAX_PANELS][96];
    for (int c = 0; c < np; c++) {
        double *q = xy + 4 * c * nt, *v = q + nt, *qm = v + nt, *vm = qm + nt;
        int x = pairs[c][0], y = pairs[c][1];
        for (int k = 0; k < nt; k++) {
            q[k] = test->xv[k * tpt + (long)x * test->n], v[k] = test->xv[k * tpt + (long)y * test->n];
            qm[k] = ev->pred[k * pt + (long)x * n], vm[k] = ev->pred[k * pt + (long)y * n];
        }
        ss[2 * c] = (PrtSeries){.x = q, .y = v, .n = nt, .label = c ? NULL : "truth", .color = c, .width = 4, .opacity = 0.35};
        ss[2 * c + 1] = (PrtSeries){.x = qm, .y = vm, .n = nt, .label = c ? NULL : "model", .color = c, .dashed = 1};
        snprintf(titles[c], sizeof titles[c], "%s", names[x]);
        snprintf(xl[c], sizeof xl[c], "%s (the program's units)", names[x]);
        snprintf(yl[c], sizeof yl[c], "%s", names[y]);
        panels[c] = (PrtPanel){.title = titles[c], .xlabel = xl[c], .ylabel = yl[c], .series = ss + 2 * c, .nseries = 2};
    }
    char title[256];
    snprintf(title, sizeof title, "%s / %s: phase portraits of test trajectory 0 (its relative error %.3g)%s", r->sys->name,
             r->model->name, ev->per_traj[PRT_METRIC_REL_ERROR] ? ev->per_traj[PRT_METRIC_REL_ERROR][0] : NAN,
             all > np ? "; the first six coordinates" : "");
    char *p = report_path(dir, "phase.svg");
    int rc = prt_svg_write(p, title, panels, (np + 1) / 2, np > 1 ? 2 : 1, err, errlen);
    free(p), free(xy), free(ss);
    return rc;
}

int report_write_plots(const char *dir, const Report *r, const PrtTrajSet *test, const char *const *names, char *wrote,
                       size_t wrotelen, char *err, size_t errlen) {
    const PrtEvalResult *ev = r->ev;
    long n = ev->n;
    int nt = ev->nt, N = r->m->sys->N, ntraj = r->sys->eval.plot_trajectories;
    if (ntraj > n) ntraj = (int)n;
    if (ntraj < 1 || !wants_plot(r->sys, "rollout")) ntraj = 0;
    double *t = prt_xalloc((size_t)nt, sizeof(double), "plot data");
    for (int k = 0; k < nt; k++) t[k] = k * ev->dt;
    enum { MAX_COORDS = 6 }; /* lines a panel stays readable with */
    int ncoord = N < MAX_COORDS ? N : MAX_COORDS, rc = 0;
    /* rollouts: a row per trajectory, its coordinates' positions (up to six), then their
       velocities; the truth wide and pale, the model dashed on it, a colour per coordinate */
    long pt = (long)test->W * n;
    int per_panel = ncoord * 2 + 2; /* two legend-only lines say which style is which */
    double *ys = prt_xalloc((size_t)(ntraj * 2 * ncoord * 2 * nt + 1), sizeof(double), "plot data");
    PrtPanel *panels = prt_xcalloc((size_t)(ntraj * 2 + 1), sizeof(PrtPanel), "plot data");
    PrtSeries *series = prt_xcalloc((size_t)(ntraj * 2 * per_panel + 1), sizeof(PrtSeries), "plot data");
    char (*titles)[96] = prt_xalloc(sizeof *titles * (size_t)(ntraj * 2 + 1), 1, "plot data");
    for (int j = 0; j < ntraj; j++)
        for (int vel = 0; vel < 2; vel++) {
            int cell = j * 2 + vel;
            PrtSeries *ss = series + cell * per_panel;
            for (int c = 0; c < ncoord; c++)
                for (int which = 0; which < 2; which++) {
                    double *y = ys + ((cell * ncoord + c) * 2 + which) * nt;
                    const double *src = which ? ev->pred : test->xv;
                    long comp = (long)(vel * N + c) * n + j;
                    for (int k = 0; k < nt; k++) y[k] = src[k * pt + comp];
                    ss[c * 2 + which] = (PrtSeries){.x = t, .y = y, .n = nt, .label = which || j ? NULL : names[vel * N + c],
                                                    .color = c, .dashed = which, .width = which ? 1.5 : 4,
                                                    .opacity = which ? 0 : 0.35};
                }
            if (cell == 0) {
                ss[ncoord * 2] = (PrtSeries){.label = "truth", .color = PRT_BLACK, .width = 4, .opacity = 0.35};
                ss[ncoord * 2 + 1] = (PrtSeries){.label = "model", .color = PRT_BLACK, .dashed = 1};
            }
            /* numbered as in trajectories.csv and errors.csv */
            char some[48] = ""; /* (more coordinates than lines a panel can hold: which are drawn) */
            if (N > ncoord) snprintf(some, sizeof some, " (the first %d of %d)", ncoord, N);
            snprintf(titles[cell], sizeof titles[cell], "test trajectory %d: %s%s", j, vel ? "velocities" : "positions", some);
            panels[cell] = (PrtPanel){.title = titles[cell], .xlabel = "time t (the program's units)",
                                      .ylabel = vel ? "velocity (the program's units)" : "position (the program's units)",
                                      .series = ss, .nseries = cell == 0 ? per_panel : ncoord * 2};
        }
    char title[256], *p;
    snprintf(title, sizeof title, "%s / %s: rollouts (wide, pale: truth; dashed: model)", r->sys->name, r->model->name);
    if (ntraj > 0) {
        p = report_path(dir, "rollout.svg");
        rc |= prt_svg_write(p, title, panels, ntraj, 2, err, errlen);
        free(p);
        if (!rc) snprintf(wrote + strlen(wrote), wrotelen - strlen(wrote), ", rollout.svg");
    }
    free(ys), free(panels), free(series), free(titles);
    /* curves over time on a log axis: every plotted trajectory, the median, for the state
       error the chaos floor's median; the violation where the system has constraints, the
       orientation error where it has rigid bodies */
    static const struct {
        const char *word, *file, *what, *ylabel, *summary, *head;
        int metric, floor, bounded;
    } curves[] = {
        {"error", "error.svg", "relative state error Err(t)", "|z^ - z| / (|z^| + |z|)", "geometric mean", "rollout error",
         PRT_METRIC_REL_ERROR, 1, 1},
        {"energy", "energy.svg", "relative error of the true energy", "|H - H^| / (|H| + |H^|)", "geometric mean",
         "energy error", PRT_METRIC_ENERGY_ERROR, 0, 1},
        {"violation", "violation.svg", "constraint violation |Phi(t)|", "|Phi| (the program's units)", "mean",
         "constraint violation", PRT_METRIC_VIOLATION, 0, 0},
        {"orientation", "orientation.svg", "true-to-model frame angle, summed over bodies",
         "orientation error (rad)", "mean", "orientation error", PRT_METRIC_ORIENTATION, 0, 0},
    };
    for (size_t which = 0; which < sizeof curves / sizeof curves[0]; which++) {
        if (!wants_plot(r->sys, curves[which].word) || !ev->series[curves[which].metric]) continue;
        if (curves[which].metric == PRT_METRIC_VIOLATION && !ev->constrained) continue;
        const double *src = ev->series[curves[which].metric];
        int shown = n < 20 ? (int)n : 20;
        double *med = prt_xalloc((size_t)nt, sizeof(double), "plot data"), *cmed = prt_xalloc((size_t)nt, sizeof(double), "plot data"),
               *col = prt_xalloc((size_t)n, sizeof(double), "plot data"), *yy = prt_xalloc((size_t)(shown * nt), sizeof(double), "plot data");
        PrtSeries *ss = prt_xcalloc((size_t)(shown + 2), sizeof(PrtSeries), "plot data");
        for (int k = 0; k < nt; k++) {
            for (int pass = 0; pass < 2; pass++) { /* the median over trajectories at time k */
                const double *from = pass ? ev->series[PRT_METRIC_CHAOS_FLOOR] : src;
                for (long j = 0; j < n; j++) col[j] = from[k * n + j];
                for (long a = 1; a < n; a++) /* insertion sort: n is about 100 */
                    for (long b = a; b > 0 && col[b] < col[b - 1]; b--) {
                        double tmp = col[b];
                        col[b] = col[b - 1], col[b - 1] = tmp;
                    }
                (pass ? cmed : med)[k] = n % 2 ? col[n / 2] : 0.5 * (col[n / 2 - 1] + col[n / 2]);
            }
            for (int j = 0; j < shown; j++) yy[j * nt + k] = src[k * n + j];
        }
        char grey[64];
        snprintf(grey, sizeof grey, shown < n ? "the first %d of %ld test trajectories" : "the %d test trajectories", shown, n);
        for (int j = 0; j < shown; j++)
            ss[j] = (PrtSeries){.x = t + 1, .y = yy + j * nt + 1, .n = nt - 1, .color = PRT_GREY, .width = 0.7,
                                .label = j == 0 ? grey : NULL};
        /* from the first step on: at t = 0 the error is rounding, and would stretch the axis */
        char median[48];
        snprintf(median, sizeof median, "median of all %ld", n);
        ss[shown] = (PrtSeries){.x = t + 1, .y = med + 1, .n = nt - 1, .color = 0, .width = 2.5, .label = median};
        int ns = shown + 1;
        if (curves[which].floor)
            ss[ns++] = (PrtSeries){.x = t + 1, .y = cmed + 1, .n = nt - 1, .color = 1, .dashed = 1, .width = 2,
                                   .label = "chaos floor (median)"};
        /* the relative errors are at most 1: their axis stops there */
        char ptitle[160];
        snprintf(ptitle, sizeof ptitle, "%s: %s %.3g", curves[which].what, curves[which].summary,
                 ev->value[curves[which].metric]);
        PrtPanel panel = {.title = ptitle, .xlabel = "time t (the program's units)", .ylabel = curves[which].ylabel,
                          .logy = 1, .series = ss, .nseries = ns, .ymax = curves[which].bounded ? 1 : 0};
        snprintf(title, sizeof title, "%s / %s: %s", r->sys->name, r->model->name, curves[which].head);
        p = report_path(dir, curves[which].file);
        int crc = prt_svg_write(p, title, &panel, 1, 1, err, errlen);
        if (!crc) snprintf(wrote + strlen(wrote), wrotelen - strlen(wrote), ", %s", curves[which].file);
        rc |= crc;
        free(p), free(med), free(cmed), free(col), free(yy), free(ss);
    }
    free(t);
    if (n > 0 && wants_plot(r->sys, "phase")) {
        int prc = write_phase_plot(dir, r, test, names, err, errlen);
        if (!prc) snprintf(wrote + strlen(wrote), wrotelen - strlen(wrote), ", phase.svg");
        rc |= prc;
    }
    return rc;
}
