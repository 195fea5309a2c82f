/* metrics.h — every figure the evaluation gives, one row each: its keys in metrics.json and
   comparison.json, its column of trajectories.csv and errors.csv, its labels, its unit, the
   paper that defines it, where it is defined and how it is summarized. The evaluation's
   result is indexed by the rows (PrtEvalResult.value[PRT_METRIC_<ID>], evaluate.h), and its
   users loop over them: metrics.json and the CSVs (app/report.c), the table of `physc run` and
   `simulate --params` (evaluate.c: prt_eval_print_table) and the known terms' beside it
   (app/run.c: print_known_baseline), `physc compare`'s reading of the runs, comparison.json and
   its tables (app/compare.c), and the search for a figure that is no number. A new metric is a
   row here, its computation (evaluate.c, evaluate_so3.c) and its test.

   X(ID, .column = value, ...): the columns (PrtMetricRow below; a column left out is NULL, 0):
     key          metrics.json: the figure (+ "_ci95": its 95 % interval, + "_sq": its squares')
     mean_key     metrics.json: the arithmetic mean beside a geometric mean
     compare_key  comparison.json (+ "_ci95", "_sq" as in metrics.json)
     csv          its column of trajectories.csv and errors.csv: the figures that have a series
     label        as `physc run` prints it; label_so3 on a system with `state so3` bodies
     header       the column header of `physc compare`'s tables
     unit         of the figure
     source       the paper's table or section that defines it (PRT_SOURCE_*)
     scope        where it is defined (PRT_SCOPE_*, PRT_METRIC_SCOPES below)
     summary      how it is summarized over time and trajectories (PRT_SUMMARY_*)
     known        also measured for the known terms alone (a model of known terms and a
                  learned correction: the Lie T2 paper's "no corrections" row), key prefixed
                  "known_terms_alone_" (comparison.json: "known_terms_")
     squares      also as the mean of its squares (the Lie T2 paper does not say which of the
                  two its tables print)
     truth        a figure of the true dynamics: the same for every model
     why_nonfinite  why it may be no number where every series is a number */
#ifndef PRT_METRICS_H
#define PRT_METRICS_H
#include <stdbool.h>

/* How a figure is summarized over time and over the test trajectories. */
typedef enum {
    PRT_SUMMARY_GEOMEAN, /* a series: per trajectory exp(time mean of log(e(t) + PRT_EVAL_FLOOR)),
                            then their geometric mean with its 95 % interval, their arithmetic
                            mean beside it (CHNN Section 7, the paper's Figure 7) */
    PRT_SUMMARY_MEAN,    /* a series: the arithmetic mean over time per trajectory, then over
                            the trajectories, with its 95 % interval: for figures at rounding or
                            exactly 0, which a logarithm cannot take and a floor would hide */
    PRT_SUMMARY_ONCE,    /* no series: one mean over every test point */
} PrtSummary;

enum { PRT_SOURCE_CHNN, PRT_SOURCE_DTLNN, PRT_SOURCE_LIET2 };

/* Where a figure is defined. X(ID, left_out, why_none): elsewhere the figure is left out of
   metrics.json and the tables (left_out), or written null and printed "none: why_none" (a
   printf format that may take the model family's title). */
#define PRT_METRIC_SCOPES(X)                                                                                          \
    X(ALL, false, "")                                                                                                 \
    X(CONSTRAINED, false, "the system has no constraints") /* or `state so3` bodies */                               \
    X(MODEL_ENERGY, false, "a %s model has no energy of its own") /* the family's `energy` (model.h) */              \
    X(SO3, true, "") /* a system with `state so3` bodies */                                                         \
    X(RIGID, true, "") /* a system with rigid bodies: `state so3` ones or bodies of points with axes */

#define PRT_METRICS(X)                                                                                                \
    /* Err(t) = |zhat - z| / (|zhat| + |z|) over the Cartesian state (X, Xdot) (CHNN Section 7) */                    \
    X(REL_ERROR, .key = "test_geomean_rel_error", .mean_key = "test_mean_rel_error", .compare_key = "rel_error",       \
      .csv = "rel_error", .label = "relative state error", .header = "rel. error", .unit = "1 (relative)",            \
      .source = PRT_SOURCE_CHNN, .scope = PRT_SCOPE_ALL, .summary = PRT_SUMMARY_GEOMEAN, .known = true)              \
    /* |H(z) - H(zhat)| / (|H(z)| + |H(zhat)|), H the true energy (CHNN App. B.1) */                                  \
    X(ENERGY_ERROR, .key = "test_energy_rel_error", .mean_key = "test_energy_mean_rel_error",                         \
      .compare_key = "energy_error", .csv = "energy_rel_error", .label = "relative energy error",                     \
      .header = "energy err", .unit = "1 (relative)", .source = PRT_SOURCE_CHNN, .scope = PRT_SCOPE_ALL,              \
      .summary = PRT_SUMMARY_GEOMEAN, .known = true)                                                                  \
    /* |Phi(Xhat)|, with each so3 body's distance from SO(3) |R^T R - I|_F (CHNN App. B.3; the Lie                   \
       T2 paper's manifold error, its Figure 3) */                                                                    \
    X(VIOLATION, .key = "test_constraint_violation", .compare_key = "constraint_violation",                           \
      .csv = "constraint_violation", .label = "constraint violation |Phi|", .label_so3 = "manifold error |R^T R - I|", \
      .header = "|Phi|", .unit = "Phi's (a length for a distance constraint)", .source = PRT_SOURCE_CHNN,             \
      .scope = PRT_SCOPE_CONSTRAINED, .summary = PRT_SUMMARY_MEAN)                                                    \
    /* the angle of the rotation between the true and the model's frame of each rigid body, summed over \
       them (the Lie T2 paper's geodesic dR, Eq. E66, over time; a body of points with axes: the frame \
       of its first two axes, or its one axis's direction) */                                                        \
    X(ORIENTATION, .key = "test_orientation_error", .compare_key = "orientation_error", .csv = "orientation_error",   \
      .label = "orientation error (rad)", .header = "orient.", .unit = "rad, summed over the rigid bodies",       \
      .source = PRT_SOURCE_LIET2, .scope = PRT_SCOPE_RIGID, .summary = PRT_SUMMARY_MEAN)                              \
    /* Err(t) of the true dynamics started 1e-4 off: what no model can be expected to beat (CHNN Figure 6) */        \
    X(CHAOS_FLOOR, .key = "chaos_floor", .mean_key = "chaos_floor_mean", .compare_key = "chaos_floor",                \
      .csv = "chaos_floor", .label = "chaos floor (truth, 1e-4 off)", .header = "chaos floor", .unit = "1 (relative)", \
      .source = PRT_SOURCE_CHNN, .scope = PRT_SCOPE_ALL, .summary = PRT_SUMMARY_GEOMEAN, .truth = true)               \
    /* the mean over trajectories, times and coordinates of (Xhat - X)^2 (DT-LNN paper, Tables 2, 3) */              \
    X(POSITION_MSE, .key = "test_position_mse", .compare_key = "position_mse", .label = "position MSE",               \
      .header = "position MSE", .unit = "length^2", .source = PRT_SOURCE_DTLNN, .scope = PRT_SCOPE_ALL,               \
      .summary = PRT_SUMMARY_ONCE)                                                                                    \
    /* the mean over trajectories and times of (H(zhat) - H(z))^2, H the true energy */                              \
    X(ENERGY_MSE, .key = "test_energy_mse", .compare_key = "energy_mse", .label = "true energy MSE",                  \
      .header = "true energy MSE", .unit = "energy^2", .source = PRT_SOURCE_DTLNN, .scope = PRT_SCOPE_ALL,            \
      .summary = PRT_SUMMARY_ONCE)                                                                                    \
    /* the variance over time of the model's own energy along its rollout, averaged over trajectories */             \
    X(MODEL_ENERGY_VAR, .key = "test_model_energy_variance", .compare_key = "model_energy_variance",                  \
      .label = "variance of the model's energy", .header = "variance of the model's energy", .unit = "energy^2",     \
      .source = PRT_SOURCE_DTLNN, .scope = PRT_SCOPE_MODEL_ENERGY, .summary = PRT_SUMMARY_ONCE)                       \
    /* along the rollout, the mean over its points of |dq|_2, all positions (Lie T2 paper, Eq. E66) */               \
    X(SO3_DQ, .key = "test_so3_dq", .compare_key = "so3_dq", .label = "|dq| (rollout)", .header = "|dq|",             \
      .unit = "length", .source = PRT_SOURCE_LIET2, .scope = PRT_SCOPE_SO3, .summary = PRT_SUMMARY_ONCE,              \
      .known = true, .squares = true)                                                                                 \
    /* the same |dq|_2 over time: its time mean per trajectory, then over them (a curve of the page) */             \
    X(SO3_DQ_SERIES, .key = "test_so3_position_error", .compare_key = "so3_position_error", .csv = "position_error",  \
      .label = "|dq| over time", .header = "|dq|(t)", .unit = "length", .source = PRT_SOURCE_LIET2,                 \
      .scope = PRT_SCOPE_SO3, .summary = PRT_SUMMARY_MEAN)                                                           \
    /* the mean of the geodesic sum over bodies of acos((tr(R^T Rhat) - 1) / 2) (Eq. E66) */                         \
    X(SO3_DR, .key = "test_so3_dR", .compare_key = "so3_dR", .label = "|dR| geodesic (rollout)", .header = "|dR|",    \
      .unit = "rad", .source = PRT_SOURCE_LIET2, .scope = PRT_SCOPE_SO3, .summary = PRT_SUMMARY_ONCE, .known = true,  \
      .squares = true, .why_nonfinite = "a rollout's rotation too far from SO(3) to have a nearest one")              \
    /* one interval from each test point: |dpdot|_2, the momenta's change over it divided by it (Eq. E67) */         \
    X(SO3_DPDOT, .key = "test_so3_dpdot", .compare_key = "so3_dpdot", .label = "|dpdot| (one interval)",              \
      .header = "|dpdot|", .unit = "force", .source = PRT_SOURCE_LIET2, .scope = PRT_SCOPE_SO3,                       \
      .summary = PRT_SUMMARY_ONCE, .known = true, .squares = true)                                                    \
    /* the same of the body angular momenta, |dPidot|_2 (Eq. E68) */                                                 \
    X(SO3_DPIDOT, .key = "test_so3_dPidot", .compare_key = "so3_dPidot", .label = "|dPidot| (one interval)",          \
      .header = "|dPidot|", .unit = "torque", .source = PRT_SOURCE_LIET2, .scope = PRT_SCOPE_SO3,                     \
      .summary = PRT_SUMMARY_ONCE, .known = true, .squares = true)                                                    \
    /* the learned residual potential's gradient in q against the true residual's, |dV_q|_2 (Eq. E70;               \
       NaN for a model without a residual_grad) */                                                                    \
    X(SO3_DVQ, .key = "test_so3_dVq", .compare_key = "so3_dVq", .label = "|dV_q| (residual)", .header = "|dV_q|",     \
      .unit = "force", .source = PRT_SOURCE_LIET2, .scope = PRT_SCOPE_SO3, .summary = PRT_SUMMARY_ONCE)               \
    /* the same in R, of the skew parts (R^T V_R - V_R^T R)^vee (Eq. E71) */                                          \
    X(SO3_DVR, .key = "test_so3_dVR", .compare_key = "so3_dVR", .label = "|dV_R| (residual)", .header = "|dV_R|",     \
      .unit = "torque", .source = PRT_SOURCE_LIET2, .scope = PRT_SCOPE_SO3, .summary = PRT_SUMMARY_ONCE)

typedef enum {
#define PRT_METRIC_ENUM(id, ...) PRT_METRIC_##id,
    PRT_METRICS(PRT_METRIC_ENUM)
#undef PRT_METRIC_ENUM
    PRT_NMETRICS
} PrtMetricId;

typedef enum {
#define PRT_SCOPE_ENUM(id, left_out, why_none) PRT_SCOPE_##id,
    PRT_METRIC_SCOPES(PRT_SCOPE_ENUM)
#undef PRT_SCOPE_ENUM
    PRT_NSCOPES
} PrtMetricScope;

/* (not sim.h's PrtMetric, the metric a projection measures distances in) */
typedef struct PrtMetricRow {
    const char *id; /* the row's ID, for messages */
    const char *key, *mean_key, *compare_key, *csv, *label, *label_so3, *header, *unit, *why_nonfinite;
    int source;
    PrtMetricScope scope;
    PrtSummary summary;
    bool known, squares, truth;
} PrtMetricRow;

typedef struct PrtMetricScopeRow {
    const char *id;
    bool left_out;
    const char *why_none;
} PrtMetricScopeRow;

extern const PrtMetricRow prt_metrics[PRT_NMETRICS];
extern const PrtMetricScopeRow prt_metric_scopes[PRT_NSCOPES];

/* metrics.json's (and comparison.json's) prefix of the known terms' figures */
#define PRT_METRIC_KNOWN_PREFIX "known_terms_alone_"
#define PRT_METRIC_KNOWN_COMPARE_PREFIX "known_terms_"

#endif
