/* pedantic_step.c — `physc check --pedantic` (pedantic.h): the training step against the
   fastest motion of the system. That motion's rate omega is the largest |eigenvalue| of the
   Jacobian of the system's own vector field (Rhs) at states of a few true trajectories (the
   data's: the init block with the data seed, integrated by dopri5 over the data's horizon):
   sqrt(k/m) exactly for a spring, sqrt(g/l) for a pendulum hanging still, an orbit's rate, a
   body's spin. A step h with h omega > 1 takes fewer than 2 pi steps a period of that
   motion: whatever the integrator, its error is then of the size of what a model learns.
   (The `force` blocks move the trajectories but are not in Rhs: their own rates are not
   counted.) */
#include "pedantic.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ad.h"
#include "driver.h"
#include "math/ode.h"
#include "math/rng.h"
#include "opt.h"
#include "sema_internal.h"

void dgeev_(const char *jobvl, const char *jobvr, const int *n, double *a, const int *lda, double *wr, double *wi,
            double *vl, const int *ldvl, double *vr, const int *ldvr, double *work, const int *lwork, int *info);

enum {
    TRAJECTORIES = 4,   /* true trajectories sampled */
    TIMES = 9,          /* states taken along each */
    MAX_STATE = 400,    /* larger systems: not estimated (the Jacobian's IR grows as its square) */
};
/* h omega above this warns; the suggestion keeps it at SUGGESTED */
static const double TOO_LONG = 1.0, SUGGESTED = 0.5;

/* The largest |eigenvalue| of the n x n matrix a (overwritten), or NaN */
static double spectral_radius(int n, double *a) {
    double *wr = malloc(sizeof(double) * (size_t)n * 2), work_size = 0;
    int lwork = -1, info = 0, one = 1;
    if (!wr) return NAN;
    dgeev_("N", "N", &n, a, &n, wr, wr + n, NULL, &one, NULL, &one, &work_size, &lwork, &info);
    lwork = (int)work_size;
    double *work = info == 0 ? malloc(sizeof(double) * (size_t)(lwork > 1 ? lwork : 1)) : NULL;
    double radius = NAN;
    if (work) dgeev_("N", "N", &n, a, &n, wr, wr + n, NULL, &one, NULL, &one, work, &lwork, &info);
    if (work && info == 0) {
        radius = 0;
        for (int i = 0; i < n; i++) radius = fmax(radius, hypot(wr[i], wr[n + i]));
    }
    free(work), free(wr);
    return radius;
}

/* omega at the states traj[k] (SoA batches of TRAJECTORIES states, dim numbers each) */
static double fastest_rate(const IrFn *jacobian, const double *params, const double *traj, int ntimes, int dim) {
    double *z = malloc(sizeof(double) * (size_t)dim), *j = malloc(sizeof(double) * (size_t)dim * dim), omega = 0;
    for (int k = 0; z && j && k < ntimes; k++)
        for (int b = 0; b < TRAJECTORIES; b++) {
            for (int i = 0; i < dim; i++) z[i] = traj[((long)k * dim + i) * TRAJECTORIES + b];
            ir_eval(jacobian, z, params, j);
            double r = spectral_radius(dim, j); /* (J row-major is J^T column-major: the same eigenvalues) */
            omega = isfinite(r) ? fmax(omega, r) : omega;
        }
    free(z), free(j);
    return omega;
}

/* The true trajectories' states at TIMES times, or NULL (no init block that samples, a
   failed projection or integration: other commands say why) */
static double *true_states(Compiled *c, const System *sys) {
    const PrtSystem *s = &c->ps;
    int dim = prt_state_rows(s);
    double times[TIMES], *traj = malloc(sizeof(double) * (size_t)dim * TRAJECTORIES * TIMES);
    PrtRng rng;
    prt_rng_seed(&rng, (uint64_t)sys->data.seed);
    if (!traj || prt_sample_initial(s, &rng, TRAJECTORIES, 1e-12, traj) < 0) return free(traj), NULL;
    for (int k = 0; k < TIMES; k++) times[k] = sys->data.dt * sys->data.steps * k / (TIMES - 1);
    if (prt_dopri5(prt_hamiltonian_rhs, &c->ps, TRAJECTORIES, dim, traj, times, TIMES, sys->data.rtol, sys->data.atol,
                   traj, NULL) != 0)
        return free(traj), NULL;
    return traj;
}

/* Where the step is set: the train block's substeps, else the data block's dt */
static Loc step_loc(const System *sys) {
    for (int i = 0; sys->sema && sys->sema->items && i < sys->sema->items->len; i++) {
        Node *n = NODE_AT(*sys->sema->items, i);
        Node *substeps = n->kind == N_BLOCK && n->name && !strcmp(n->name, "train") ? sema_setting_node(n, "substeps") : NULL;
        if (substeps) return substeps->loc;
    }
    return sys->data.dt_at.first_line ? sys->data.dt_at : sys->system_node->loc;
}

void pedantic_step(System *sys, Diags *d) {
    if (sys->nmodels == 0 || sys->data.file || !(sys->data.dt > 0) || sys->data.steps < 1) return;
    Compiled c;
    char err[512];
    if (!compiled_open(sys, &c, 1, COMPILE_SIMULATE, err, sizeof err)) return; /* (run and simulate say why) */
    const IrFn *field = kernels_find(&c.k, "Field"), *gradv = kernels_find(&c.k, "gradV");
    int dim = prt_state_rows(&c.ps);
    double *traj = field && gradv && dim <= MAX_STATE ? true_states(&c, sys) : NULL;
    IrFn *rhs = traj ? lower_rhs(field, gradv) : NULL, *raw = rhs ? ad_jacobian(rhs, "pedantic_jacobian") : NULL,
         *jacobian = raw && !raw->too_big ? opt_simplify(raw) : NULL;
    double omega = jacobian ? fastest_rate(jacobian, c.params, traj, TIMES, dim) : 0;
    double h = sys->data.dt / sys->train.substeps;
    if (h * omega > TOO_LONG) {
        int substeps = (int)ceil(sys->data.dt * omega / SUGGESTED);
        diag_warning(d, step_loc(sys), "the training step h = %g (dt %g / substeps %d%s) is long for this system's fastest "
                     "motion: h omega = %.2g, where omega = %.3g per time unit (a period of %.3g) is the largest "
                     "eigenvalue of its vector field's Jacobian along %d true trajectories; with fewer than 2 pi steps a "
                     "period the step's own error is as large as what a model learns; substeps %d makes h omega %.1f "
                     "(pedantic)", h, sys->data.dt, sys->train.substeps, sys->data.dt_at.first_line ? "" : "; dt: the default", h * omega, omega, 2 * M_PI / omega, TRAJECTORIES,
                     substeps, sys->data.dt * omega / substeps);
    }
    if (jacobian) ir_free(jacobian);
    if (raw) ir_free(raw);
    if (rhs) ir_free(rhs);
    free(traj);
    compiled_close(&c);
}
