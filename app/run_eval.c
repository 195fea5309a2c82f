/* run_eval.c — the evaluation stage of `physc run` (run_internal.h): the trained model's test
   rollouts and their figures (and the known terms alone's beside them, for a model of known
   terms and a learned correction), printed as tables. */
#include "run_internal.h"
#include "core/alloc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The evaluation's progress over its two integrations of the horizon (the model's
   rollouts, then the chaos floor's), as one phase (progress.h). */
typedef struct EvalProgress {
    PrtProgress p;
    int reached;        /* output times reached, both integrations */
    const char *what;   /* the model's rollouts: "model" or "known terms'" */
} EvalProgress;

static void eval_progress(void *ctx, int k, int nt) {
    (void)k;
    EvalProgress *e = ctx;
    int total = 2 * (nt - 1), done = ++e->reached;
    prt_progress_rename(&e->p, "evaluation: %s", done <= nt - 1 ? (e->what ? e->what : "model rollouts") : "chaos floor");
    prt_progress_tick(&e->p, done, total);
}

/* The known terms alone beside the trained model, on the same test rollouts: how much the
   learned correction gains (the Lie T2 paper's "no corrections" row). */
static void print_known_baseline(FILE *out, const PrtEvalResult *ev, const PrtEvalResult *k, double seconds) {
    fprintf(out, "the known terms alone (no learned correction), the same evaluation, %.2f s%s:\n", seconds,
            k->rollout_failed ? " -- their rollouts FAILED" : "");
    for (int id = 0; id < PRT_NMETRICS; id++) { /* the metrics measured for the known terms too (metrics.h) */
        if (!prt_metrics[id].known || !prt_metric_applies(k, id)) continue;
        double known = k->value[id], trained = ev->value[id];
        const char *name = prt_metric_label(k, id);
        if (isfinite(known)) fprintf(out, "  %-30s %-10.3e", name, known);
        else fprintf(out, "  %-30s %-10s", name, "-"); /* (their rollouts failed: said above) */
        if (trained > 0 && isfinite(known)) fprintf(out, " %.3g x the trained model's", known / trained);
        fputc('\n', out);
    }
}

/* The App. E metrics by so3 body, the known terms' beside them when there are any: a
   correction that fixes one body and pushes another off shows here, not in the sums. */
static void print_so3_bodies(FILE *out, const PrtSystem *s, const PrtEvalResult *ev, const PrtEvalResult *k) {
    if (!ev->so3_dR_body || s->nso3 < 2) return;
    fprintf(out, "by body: rollout means of |dq| and the geodesic dR%s; the learned residual torque's error |dtau| "
            "against the true residual torque |tau|\n", k ? " (the known terms alone's beside them)" : "");
    fprintf(out, "  %-16s %-10s %-10s %-10s %-10s %-10s %-10s\n", "body", "|dq|", k ? "known" : "", "dR", k ? "known" : "",
            "|dtau|", "|tau|");
    for (int b = 0; b < s->nso3; b++) {
        const char *name;
        int len = prt_so3_body_name(s, b, &name);
        char kq[16] = "", kR[16] = "";
        if (k) snprintf(kq, sizeof kq, "%.3e", k->so3_dq_body[b]), snprintf(kR, sizeof kR, "%.3e", k->so3_dR_body[b]);
        fprintf(out, "  %-16.*s %-10.3e %-10s %-10.3e %-10s %-10.3e %-10.3e\n", len, name, ev->so3_dq_body[b], kq,
                ev->so3_dR_body[b], kR, ev->so3_dtau_body[b], ev->so3_tau_body[b]);
    }
}

/* The most dopri5 steps a test rollout may take per output interval on average (and ten
   times as many in any one interval). A trained
   model needs a few (metrics.json's rollout_steps: 5.4 per interval for the 3-pendulum's CHNN
   at 200 epochs, 2.0 for the magnet pendulum's); one that needs ten times more has learned a
   stiff field, and rolling it out would take hours (an LNN at 100 states costs milliseconds
   per evaluation) for figures of a model nobody can use. */
enum { ROLLOUT_MAX_STEPS = 50 };

/* "trained N epochs ...", and the final loss against the integrator floor */
static void print_training(const RunState *r) {
    FILE *out = r->out;
    const PrtTrainResult *tr = &r->tr;
    int done = tr->epochs_done - tr->resumed_from;
    fprintf(out, "trained %d %s in %.1f s (%.3f s/epoch)\n", done, noun(done, "epoch", "epochs"), tr->seconds,
            done ? tr->seconds / done : 0.0);
    if (tr->epochs_done > 0 && r->integrator_floor > 0) { /* is the step what limits the fit? */
        double final_loss = tr->loss[tr->epochs_done - 1], ratio = final_loss / r->integrator_floor;
        fprintf(out, "final training loss %.3e: %.3gx the integrator floor%s\n", final_loss, ratio,
                prt_model_floor_note(&r->m, ratio));
    }
}

void run_group_ratios(RunState *r, const double *theta, const char *phase, const char *phase_known, const char *line) {
    const PrtModelFamily *f = r->cfg.family;
    const PrtTrajSet *ts = &r->data.train;
    if (!f->loss_groups || !f->zero_theta_is_baseline || !ts->n) return;
    double mse[PRT_MODEL_MAX_GROUPS], none[PRT_MODEL_MAX_GROUPS];
    const char *group[PRT_MODEL_MAX_GROUPS];
    double *zero = prt_xcalloc((size_t)r->m.nparams, sizeof(double), "the parameters");
    prt_progress_start(&r->phase, "%s", phase);
    int ng = f->loss_groups(&r->m, theta, ts->n, ts->npts, ts->dt, ts->xv, mse, group);
    prt_progress_start(&r->phase, "%s", phase_known);
    f->loss_groups(&r->m, zero, ts->n, ts->npts, ts->dt, ts->xv, none, group);
    free(zero);
    fprintf(r->out, "%s:", line);
    for (int g = 0; g < ng; g++)
        if (!isnan(mse[g]) && none[g] > 0) fprintf(r->out, "%s %s %.3g (%.2e / %.2e)", g ? "," : "", group[g], mse[g] / none[g], mse[g], none[g]);
        else if (!isnan(mse[g])) fprintf(r->out, "%s %s %.2e (the known terms alone: 0)", g ? "," : "", group[g], mse[g]);
    fputc('\n', r->out);
}

/* Which part of the state the learned terms fixed: each state group's training error against
   the known terms alone's */
static void print_groups(RunState *r) {
    if (r->tr.epochs_done <= 0) return;
    run_group_ratios(r, r->theta, "training error by state group: the trained model",
                     "training error by state group: the known terms alone",
                     "training error by state group, trained / known terms alone");
}

/* The test rollouts of theta from the same states and seed, the progress told as `what`. 0, or -1. */
static int evaluate_theta(RunState *r, const double *theta, EvalProgress *progress, PrtEvalResult *ev) {
    const EvalSettings *es = &r->sys->eval;
    PrtOdeObserver observer = {eval_progress, progress, 0, 0};
    prt_progress_start(&progress->p, "evaluation");
    if (r->out) r->m.rollout_observer = &observer;
    int rc = prt_evaluate(&r->m, theta, &r->data.test, es->horizon, es->rtol, es->atol, (uint64_t)r->seed + 99, ev, r->err,
                          sizeof r->err);
    r->m.rollout_observer = NULL;
    if (rc == 0) prt_progress_end(&progress->p);
    return rc;
}

/* The evaluation line and the table of figures */
static void print_evaluation(const RunState *r) {
    FILE *out = r->out;
    if (!r->evaluate) {
        fprintf(out, "no test trajectories (data block: test 0): evaluation skipped\n");
        return;
    }
    const PrtEvalResult *ev = &r->ev;
    char how[96];
    prt_model_say_rollout(&r->m, r->sys->eval.rtol, r->sys->eval.atol, how, sizeof how);
    fprintf(out, "evaluation on %ld test %s, %d %s (%s), %.2f s%s:\n", ev->n, noun(ev->n, "trajectory", "trajectories"),
            ev->nt - 1, noun(ev->nt - 1, "step", "steps"), how, r->eval_s,
            ev->rollout_failed || ev->nonfinite[0] ? " -- FAILED (below)" : "");
    prt_eval_print_table(out, "metric", ev);
}

/* The rollouts in f64 whatever the training precision (unless the family's scheme is the
   model: predicts_at_training_precision): dopri5 at rtol 1e-7 would step on float rounding
   noise, and the parameters are kept in f64 anyway. A model of known terms and
   a learned correction (theta = 0 its known terms alone) is measured beside them on the same
   rollouts (the Lie T2 paper's "no corrections" row), so the gain is measured in one run. */
int run_evaluate(RunState *r) {
    for (int i = 0; i < r->m.cfg.nnets && !r->m.family->predicts_at_training_precision; i++) r->m.cfg.net[i].f32 = false;
    double t0 = now_s();
    EvalProgress progress = {0};
    prt_progress_init(&progress.p, r->out, r->tty);
    r->m.rollout_max_steps = ROLLOUT_MAX_STEPS;
    r->evaluate = r->data.test.n > 0;
    if (r->evaluate && evaluate_theta(r, r->theta, &progress, &r->ev) != 0) return -1;
    for (int id = 0; !r->evaluate && id < PRT_NMETRICS; id++) /* no test set: every figure is null, none 0 */
        r->ev.value[id] = r->ev.mean[id] = r->ev.ci[id][0] = r->ev.ci[id][1] = r->ev.squares[id] = NAN;
    r->eval_s = now_s() - t0;
    if (!r->evaluate) prt_progress_start(&progress.p, "evaluation"), prt_progress_end(&progress.p);
    if (r->out) {
        print_training(r);
        print_groups(r);
        print_evaluation(r);
    }
    r->known_baseline = r->evaluate && r->cfg.family->zero_theta_is_baseline && r->md->nknown > 0;
    if (r->known_baseline) {
        double *zero = prt_xcalloc((size_t)r->m.nparams, sizeof(double), "the parameters");
        double k0 = now_s();
        progress.reached = 0, progress.what = "the known terms' rollouts";
        int krc = evaluate_theta(r, zero, &progress, &r->ev_known);
        free(zero);
        if (krc != 0) return -1;
        if (r->out) print_known_baseline(r->out, &r->ev, &r->ev_known, now_s() - k0);
    }
    if (r->out && r->evaluate) print_so3_bodies(r->out, &r->c.ps, &r->ev, r->known_baseline ? &r->ev_known : NULL);
    return 0;
}
