/* run_report.c — the report stage of `physc run` (run_internal.h): metrics.json, the CSV
   series, the plots (and the family's own pictures), and the run's verdict: a failed rollout
   or a figure that is not a number fails the run after everything is written. */
#include "run_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "view.h"
#include "view_data.h"

/* The precision of the run's rollouts: its training's for a family that predicts in it */
static const char *run_predicts_in(const RunState *r) {
    return !strcmp(r->precision, "f32") && r->cfg.family->predicts_at_training_precision ? "f32" : "f64";
}

/* Writes the file `name` of the run's folder by `write`; a failure is reported and counted */
typedef int (*ReportWriter)(const char *path, const Report *rep, char *err, size_t errlen);
static void write_output(RunState *r, const char *name, ReportWriter write, const Report *rep) {
    char *path = report_path(r->dir, name);
    r->failed_outputs += run_output_failed(write(path, rep, r->err, sizeof r->err), r->err);
    free(path);
}

/* scene.json and rollouts.bin, for `physc view` */
static void write_view_data(RunState *r) {
    const PrtTrajSet *test = &r->data.test;
    ViewData v = {.sys = r->sys, .ps = &r->c.ps, .model = r->md->name, .kind = model_kind_name(r->md->kind), .n = r->ev.n, .nt = r->ev.nt, .dt = r->ev.dt, .truth = test->xv,
                  .truth_stride = (long)test->W * test->n, .ntruth = test->n, .pred = r->ev.pred,
                  .pred_stride = (long)test->W * r->ev.n};
    char *path = report_path(r->dir, "scene.json");
    r->failed_outputs += run_output_failed(view_write_scene(path, &v, r->err, sizeof r->err), r->err);
    free(path);
    path = report_path(r->dir, "rollouts.bin");
    r->failed_outputs += run_output_failed(view_write_rollouts(path, &v, r->err, sizeof r->err), r->err);
    free(path);
}

/* metrics.json, the evaluation's CSVs and the plots; the files written after params.bin are
   named in `plots` (", loss.svg, ...") */
static void write_outputs(RunState *r, const Report *rep, char *plots, size_t plotslen) {
    write_output(r, "metrics.json", report_write_metrics, rep);
    if (r->evaluate) {
        write_output(r, "trajectories.csv", report_write_trajectories, rep);
        write_output(r, "errors.csv", report_write_error_series, rep);
        char *fp = report_path(r->dir, "first-rollout.csv");
        r->failed_outputs += run_output_failed(report_write_first_rollout(fp, rep, &r->data.test, r->c.ps.names, r->err,
                                                                          sizeof r->err), r->err);
        free(fp);
        write_view_data(r);
    }
    if (r->tr.epochs_done > 0) {
        int lrc = report_write_loss_plot(r->dir, rep, r->err, sizeof r->err);
        r->failed_outputs += run_output_failed(lrc, r->err);
        if (!lrc) snprintf(plots, plotslen, ", loss.svg");
    }
    if (!r->evaluate) return;
    r->failed_outputs += run_output_failed(report_write_plots(r->dir, rep, &r->data.test, r->c.ps.names, plots, plotslen,
                                                              r->err, sizeof r->err), r->err);
    if (r->ev.rollout_failed) return;
    char title[256];
    snprintf(title, sizeof title, "%s / %s", r->sys->name, r->md->name);
    PrtPictureData pd = {.dir = r->dir, .title = title, .truth = r->data.test.xv, .ntruth = r->data.test.n,
                         .pred = r->ev.pred, .theta = r->theta, .n = r->ev.n, .nt = r->ev.nt, .dt = r->ev.dt};
    r->failed_outputs += run_output_failed(prt_model_pictures(&r->m, &pd, plots, plotslen, r->err, sizeof r->err), r->err);
}

/* The run's verdict once its outputs are written: 1 with rc set */
static int verdict(RunState *r, const char *plots) {
    const PrtEvalResult *ev = &r->ev, *evk = &r->ev_known;
    if (r->evaluate && ev->rollout_failed) { /* the outputs are written (params.bin is good), but the run failed */
        fprintf(stderr, "physc: run: the trained model's test rollouts failed: %s; its parameters are in %s/params.bin, "
                "metrics.json says rollout_failed\n", ev->rollout_why, r->dir);
        snprintf(r->err, sizeof r->err, "the test rollouts failed: %s", ev->rollout_why);
        r->rc = run_note_failure(r->o, r->err);
        return 1;
    }
    if (r->evaluate && (ev->nonfinite[0] || (r->known_baseline && evk->nonfinite[0]))) { /* a figure is no number */
        const char *what = ev->nonfinite[0] ? ev->nonfinite : evk->nonfinite;
        fprintf(stderr, "physc: run: a figure of the evaluation%s is not a finite number: %s; its parameters are in "
                "%s/params.bin, metrics.json says %snonfinite_figure\n", ev->nonfinite[0] ? "" : " of the known terms alone",
                what, r->dir, ev->nonfinite[0] ? "" : "known_terms_alone_");
        snprintf(r->err, sizeof r->err, "a figure is not a finite number: %s", what);
        r->rc = run_note_failure(r->o, r->err);
        return 1;
    }
    if (r->failed_outputs) {
        fprintf(stderr, "physc: run: %d %s could not be written (see above); the others are in %s/\n", r->failed_outputs,
                noun(r->failed_outputs, "output", "outputs"), r->dir);
        snprintf(r->err, sizeof r->err, "%d %s could not be written", r->failed_outputs,
                 noun(r->failed_outputs, "output", "outputs"));
        r->rc = run_note_failure(r->o, r->err);
        return 1;
    }
    if (r->out) {
        fprintf(r->out, "wrote %s/: metrics.json, %sparams.bin%s\n", r->dir,
                r->evaluate ? "trajectories.csv, errors.csv, first-rollout.csv, scene.json, rollouts.bin, " : "", plots);
        bool f32 = !strcmp(run_predicts_in(r), "f32");
        fprintf(r->out, "use the model: physc simulate %s --model %s --params %s/params.bin%s; as C: physc emit-c, the same "
                "options, -o model.c; as a library for Python: with --shared -o libmodel.so (docs/python.md)\n", r->o->file,
                r->md->name, r->dir, f32 ? " --precision f32" : "");
    }
    r->rc = 0;
    return 1;
}

int run_report(RunState *r) {
    char *program = realpath(r->o->file, NULL); /* (so that python/physc's load_run finds it from anywhere) */
    Report rep = {.program = program ? program : r->o->file, .set_names = r->o->set_names, .set_values = r->o->set_values,
                  .nset = r->o->nset, .sys = r->sys, .model = r->md, .m = &r->m, .theta = r->theta, .tr = &r->tr, .ev = &r->ev,
                  .ev_known = r->known_baseline ? &r->ev_known : NULL, .epochs = r->epochs, .seed = r->seed,
                  .ntrain = r->data.train_full.n, .threads = r->threads, .precision = r->precision,
                  .predicts_in = run_predicts_in(r), .blas = r->blas,
                  .eval_from = r->o->eval_from_chunk ? "chunk" : "initial", .compile_ms = r->compile_ms,
                  .data_s = r->data_s, .eval_s = r->eval_s, .integrator_floor = r->integrator_floor};
    char plots[128] = "";
    write_outputs(r, &rep, plots, sizeof plots);
    free(program);
    int stage = verdict(r, plots);
    if (r->rc == 0 && r->o->view && r->evaluate) { /* (--view: the page, from the files just written) */
        ViewOptions vo = {.dir = r->dir, .quiet = r->out == NULL};
        r->rc = view_write_page(&vo);
    }
    return stage;
}
