/* evaluate.h — the metrics of metrics.h on test trajectories: roll the learned model out with
   dopri5 (or its own step) from each trajectory's first state and compare Cartesian (X, Xdot)
   with the truth.

   Per trajectory and time: the relative state error, the relative error of the true energy
   (both 0 where the two agree exactly, zeros included: a body at rest at the origin) and the
   constraint violation, with each `state so3` body's own constraint in it; each summarized as
   its row of metrics.h says. The violation is undefined (r->constrained false) for a system
   without constraints. The chaos floor is the relative state error of the TRUE dynamics
   started 1e-4 away (projected back onto the constraints, to the nearest point of (X, Xdot),
   as the CHNN reference code does): no model can be expected to beat it by much. */
#ifndef PRT_EVALUATE_H
#define PRT_EVALUATE_H
#include <stdio.h>

#include "io/dataset.h"
#include "metrics.h"
#include "models/model.h"

/* What the geometric means over time add to each figure before its logarithm (the CHNN
   reference code's log(Err + 1e-8)): a figure near it is the floor, not a measurement. */
#define PRT_EVAL_FLOOR 1e-8

typedef struct PrtEvalResult {
    long n;
    int nt;
    double dt;
    double *pred;                      /* nt x 2N x n: the model's rollouts (X, Xdot) */
    /* by metric (metrics.h): the figure, as the row's summary says (NaN where it is not defined:
       prt_metric_applies); beside a geometric mean the arithmetic mean of the same
       per-trajectory figures; the 95 % confidence interval of a series' summary (stats.h), as
       the paper's Figure 7; the mean of squares of a row with `squares` */
    double value[PRT_NMETRICS], mean[PRT_NMETRICS], ci[PRT_NMETRICS][2], squares[PRT_NMETRICS];
    /* by metric with a series (metrics.h: csv): nt x n, and the time summaries per trajectory
       (n); NULL for the others */
    double *series[PRT_NMETRICS], *per_traj[PRT_NMETRICS];
    bool constrained;                  /* the system has constraints (or so3 bodies): |Phi| means something */
    bool so3;                          /* the system has `state so3` bodies: the App. E metrics */
    bool rigid;                        /* the system has rigid bodies: the orientation error */
    double *model_energy;              /* nt x n: the model's own energy along its rollouts, or NULL */
    const char *model_title;           /* the model's family, as printed (CHNN, NODE, ...) */
    double *energy_truth, *energy_pred;/* nt x n: the true energy of the truth and of the rollouts */
    bool rollout_failed;               /* dopri5 gave up on the learned dynamics */
    char rollout_why[256];             /* then why and when (prt_ode_describe_failure) */
    long rollout_steps;                /* the dopri5 steps the rollout took (accepted and rejected) */
    /* the first figure that is not a finite number (a NaN or an infinite energy along a
       rollout that did not fail): which, of which trajectory, at what time; "" if none. An
       error: the summaries over it mean nothing (the callers exit 1 saying this) */
    char nonfinite[256];
    /* the App. E metrics by so3 body (nso3 each; NULL without): along the rollout, the means of
       its |dq|_2 and of its geodesic dR (summed over bodies: PRT_METRIC_SO3_DR); its learned
       residual torque's error |dtau|_2 and the true residual torque |tau|_2 (the system's
       potential less its known terms), means over the test points: which bodies a learned
       correction gets wrong */
    double *so3_dq_body, *so3_dR_body, *so3_dtau_body, *so3_tau_body;
} PrtEvalResult;

/* The time summaries of e[k * stride] for k < nt, dt apart: the geometric mean (with
   PRT_EVAL_FLOOR), and the arithmetic mean (trapezoidal, as the geometric). */
double prt_time_geomean(const double *e, int nt, long stride, double dt);
double prt_time_mean(const double *e, int nt, long stride, double dt);

/* Metric id's series r->series[id] (nt x n) summarized as its row of metrics.h says, into
   r->per_traj[id] and its figures (r->value, mean, ci). */
void prt_eval_summarize(PrtEvalResult *r, int id);
/* Metric id's series and per-trajectory summaries, allocated (nt x n, n): the series. */
double *prt_eval_new_series(PrtEvalResult *r, int id);

/* Err between two batches of states (rows x n, SoA), per state: |a - b| / (|a| + |b|). */
void prt_rel_state_error(long n, int rows, const double *a, const double *b, double *out);

/* The model-free halves of prt_evaluate, on the true system s, for r->n trajectories of
   r->nt points r->dt apart. truth and r->pred are (nt x 2N x n) Cartesian (X, Xdot).
   prt_eval_metrics: Err, the energy error and the violation of r->pred against truth, with
   their summaries (allocates the series and per-trajectory arrays it fills).
   prt_eval_chaos_floor: the chaos floor against truth, from its first point perturbed by
   1e-4 N(0, 1) drawn from seed (allocates chaos and traj_chaos); 0, or -1 with a message. */
void prt_eval_metrics(PrtSystem *s, const double *truth, PrtEvalResult *r);
int prt_eval_chaos_floor(PrtSystem *s, const double *truth, double rtol, double atol, uint64_t seed,
                         const PrtOdeObserver *obs, PrtEvalResult *r, char *err, size_t errlen);

/* The first figure of r (its series by time, then its summaries) that is not a finite number,
   said into why: which, of which test trajectory, at what time; "" if none. Figures that are
   undefined here (no constraints, no energy of the model's own) are not looked at.
   prt_evaluate sets r->nonfinite with it. */
void prt_eval_find_nonfinite(const PrtEvalResult *r, char *why, size_t len);

/* Evaluates over the first `horizon` steps of every test trajectory (the model's rollout from
   its first point, or first two for a positions-only family; dopri5 at rtol, atol;
   the chaos floor's perturbation drawn from seed). m->sys is the true system. Returns 0, or
   -1 with a message. m->rollout_observer (if set) follows two integrations of the horizon:
   the model's rollout, then the chaos floor's. */
int prt_evaluate(PrtModel *m, const double *theta, const PrtTrajSet *test, int horizon, double rtol, double atol,
                 uint64_t seed, PrtEvalResult *r, char *err, size_t errlen);
void prt_eval_result_free(PrtEvalResult *r);

/* Whether metric id is defined for r (its row's scope: the system's constraints and so3 bodies,
   the family's energy). */
bool prt_metric_applies(const PrtEvalResult *r, int id);
/* Whether a model of family fam can have metric id at all (false: MODEL_ENERGY without an energy). */
bool prt_metric_family_has(int id, const PrtModelFamily *fam);
/* Metric id's label as r's table prints it (label_so3 on a system with so3 bodies). */
const char *prt_metric_label(const PrtEvalResult *r, int id);
/* The App. E metrics of a model of a system with `state so3` bodies over the test points of
   r's rollout (prt_evaluate calls it; evaluate_so3.c). */
void prt_eval_so3(PrtModel *m, const double *theta, const PrtTrajSet *test, PrtEvalResult *r);
/* The orientation error's series of r->pred against truth (evaluate_orientation.c; sets
   r->rigid; prt_eval_metrics calls it), and one body's part of it: the angle of the rotation
   from body f's frame in state j of z to its frame in state j of zh (SoA, n states), in
   radians (NaN for a frame whose axes are parallel or vanish). */
void prt_eval_orientation(const PrtSystem *s, const double *truth, PrtEvalResult *r);
double prt_body_orientation_error(const PrtFrameBody *f, const double *z, const double *zh, long n, long j);
/* so3 body b's name (its first coordinate's, "planet[1].x", less the ".x"): *name and its length. */
int prt_so3_body_name(const PrtSystem *s, int b, const char **name);

/* The metrics as the table `physc run` and `physc simulate --params` print: a header row
   (title, then the columns), then each metric's geometric mean, 95 % interval and
   arithmetic mean, a figure that is undefined for this system or model said in words, and
   the columns' definitions (the floor of the geometric means) under it. */
void prt_eval_print_table(FILE *out, const char *title, const PrtEvalResult *r);

#endif
