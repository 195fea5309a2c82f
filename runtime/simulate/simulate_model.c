/* simulate_model.c — a trained model rolled out beside the true system it learned (see
   prt_simulate_model in simulate.h). */
#include "simulate.h"

#include <stdlib.h>
#include <string.h>

#include "train/evaluate.h"

/* The trained model from the true trajectories' first states, measured against them as
   `physc run` evaluates (evaluate.h); its trajectories go to the CSV. */
int prt_simulate_model(PrtSystem *s, const PrtSimOptions *o, PrtModel *model, const double *theta, FILE *report,
                       PrtSimResult *r) {
    memset(r, 0, sizeof *r);
    if (prt_sim_check_out(o) != 0) return 1;
    char how[96]; /* how physc run rolls it out (model.h: its family's words) */
    prt_model_say_rollout(model, o->rtol, o->atol, how, sizeof how);
    if (strcmp(o->integrator, "dopri5")) {
        prt_sim_error(o, "a %s model rolls out as physc run evaluates it (%s), not with %s", model->family->title, how,
                      o->integrator);
        return 2;
    }
    PrtSimOptions e = *o;
    PrtTrajSet recorded = {0};
    if (o->from && prt_sim_read_from(s, o, &e, &recorded) != 0) return 1;
    if (prt_sim_check_memory(s, &e, 4) != 0) { /* the truth, as velocities, the rollout, the chaos floor's truth */
        prt_trajset_free(&recorded);
        return 1;
    }
    PrtSimOptions truth_opt = e;
    truth_opt.csv = NULL; /* the CSV is the model's */
    int rc = prt_simulate_states(s, &truth_opt, o->from ? &recorded : NULL, report, r);
    if (rc) {
        prt_trajset_free(&recorded);
        return rc;
    }
    /* the reference: the recorded trajectories, or the truth simulated from the same states */
    double *truth_xv = o->from ? NULL : prt_sim_velocities(s, e.n, e.steps, r->traj);
    PrtTrajSet truth = {.n = e.n, .npts = (int)e.steps + 1, .N = s->N, .W = prt_state_rows(s), .dt = e.dt, .xv = truth_xv};
    PrtEvalResult ev;
    char err[512];
    /* the chaos floor's perturbation: its own stream, fixed by the seed */
    if (prt_evaluate(model, theta, o->from ? &recorded : &truth, (int)e.steps, e.rtol, e.atol, (uint64_t)e.seed + 99, &ev,
                     err, sizeof err) != 0) {
        prt_sim_error(o, "%s", err);
        prt_eval_result_free(&ev);
        prt_trajset_free(&recorded);
        free(truth_xv);
        return 1;
    }
    r->model_err = ev.value[PRT_METRIC_REL_ERROR];
    if (report) {
        fprintf(report, "learned %s (%ld parameters), rolled out by %s%s:\n", model->family->title, model->nparams, how,
                ev.rollout_failed || ev.nonfinite[0] ? " -- FAILED (below)" : "");
        prt_eval_print_table(report, o->from ? "against the recorded data" : "against the true dynamics", &ev);
    }
    if (ev.rollout_failed) { /* an error, not a warning: the figures above are of a broken rollout */
        prt_sim_error(o, "the learned model's rollout failed: %s", ev.rollout_why);
        rc = 1;
    } else if (ev.nonfinite[0]) { /* as much an error: a summary over it is no figure */
        prt_sim_error(o, "a figure of the learned model is not a finite number: %s", ev.nonfinite);
        rc = 1;
    }
    if (o->csv && !rc) {
        rc = prt_sim_write_csv(s, &e, ev.pred);
        if (!rc && report) fprintf(report, "  wrote %s (the learned model's trajectories)\n", o->csv);
    }
    prt_eval_result_free(&ev);
    prt_trajset_free(&recorded);
    free(truth_xv);
    return rc;
}

