/* simulate.c — sample and project (or read from a CSV) initial states, integrate, measure, write CSV. */
#include "simulate.h"

#include "core/alloc.h"
#include "core/atomic_file.h"
#include "io/dataset.h"
#include "integrators/integrators.h"
#include "integrators/lie_group.h"
#include "integrators/fixed_steps.h"

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* The trajectories as (X, V), in the columns `physc run` reads back: momenta become velocities
   (M^-1 p; for `state so3` bodies the body angular velocities, so NP may differ from N). */
double *prt_sim_velocities(const PrtSystem *s, long n, long steps, const double *traj) {
    long N = s->N, len = (N + s->NP) * n;
    double *xv = prt_xalloc((size_t)(len * (steps + 1)), sizeof(double), "the trajectories' velocities");
    for (long k = 0; k <= steps; k++) {
        memcpy(xv + k * len, traj + k * len, sizeof(double) * (size_t)(N * n));
        prt_minv(s, n, traj + k * len + N * n, xv + k * len + N * n);
    }
    return xv;
}

/* A message of the simulation, prefixed with who runs it (`physc: simulate`, or an emitted
   program's own name). */
__attribute__((format(printf, 2, 3))) void prt_sim_error(const PrtSimOptions *o, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    if (o->errbuf && o->errlen) {
        vsnprintf(o->errbuf, o->errlen, fmt, ap);
        va_end(ap);
        return;
    }
    fprintf(stderr, "%s: ", o->who ? o->who : "physc: simulate");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

int prt_sim_check_memory(const PrtSystem *s, const PrtSimOptions *o, int copies) {
    char what[160], err[512];
    double points = (double)o->steps + 1, numbers = (double)(s->N + s->NP);
    snprintf(what, sizeof what, "%ld trajectories of %.0f points of %.0f numbers (positions and momenta)%s", o->n, points,
             numbers, copies > 1 ? ", kept in several copies," : "");
    if (prt_mem_check(copies * 8.0 * numbers * (double)o->n * points, what, "reduce --steps or --n", err, sizeof err) == 0)
        return 0;
    prt_sim_error(o, "%s", err);
    return 1;
}

int prt_sim_write_csv(const PrtSystem *s, const PrtSimOptions *o, const double *xv) {
    char err[512];
    int rc = prt_csv_write_soa(o->csv, s->names, s->N + s->NP, o->n, (int)o->steps + 1, o->dt, xv, err, sizeof err);
    if (rc) prt_sim_error(o, "%s", err);
    return rc ? 1 : 0;
}

int prt_sim_read_from(PrtSystem *s, const PrtSimOptions *o, PrtSimOptions *eff, PrtTrajSet *set) {
    char err[512];
    if (s->NP != s->N) {
        prt_sim_error(o, "starting from a file needs a system without `state so3` bodies");
        return 1;
    }
    char warning[512];
    if (prt_trajset_load(s, o->from, set, warning, sizeof warning, err, sizeof err) != 0) {
        prt_sim_error(o, "%s", err);
        return 1;
    }
    if (warning[0]) prt_sim_error(o, "warning: %s", warning);
    if (set->velocities_estimated)
        prt_sim_error(o, "note: %s has positions only: its velocities, the starting states' too, are estimated by "
                      "second-order finite differences", o->from);
    if (o->steps > set->npts - 1) {
        prt_sim_error(o, "%s has trajectories of %d step%s; --steps asks for %ld", o->from,
                set->npts - 1, set->npts == 2 ? "" : "s", o->steps);
        prt_trajset_free(set);
        return 1;
    }
    *eff = *o;
    eff->n = set->n, eff->steps = o->steps > 0 ? o->steps : set->npts - 1, eff->dt = set->dt;
    return 0;
}

int prt_sim_check_out(const PrtSimOptions *o) {
    char err[512];
    if (!o->csv || prt_atomic_probe(o->csv, err, sizeof err) == 0) return 0;
    prt_sim_error(o, "%s", err);
    return 1;
}

int prt_simulate(PrtSystem *s, const PrtSimOptions *o, FILE *report, PrtSimResult *r) {
    memset(r, 0, sizeof *r);
    if (prt_sim_check_out(o) != 0) return 1;
    if (!o->from) return prt_simulate_states(s, o, NULL, report, r);
    PrtSimOptions eff;
    PrtTrajSet set;
    if (prt_sim_read_from(s, o, &eff, &set) != 0) return 1;
    int rc = prt_simulate_states(s, &eff, &set, report, r);
    prt_trajset_free(&set);
    return rc;
}

int prt_simulate_states(PrtSystem *s, const PrtSimOptions *o, const PrtTrajSet *from, FILE *report, PrtSimResult *r) {
    memset(r, 0, sizeof *r);
    const char *m = o->integrator;
    int id = prt_integrator_find(m);
    if (id < 0) {
        char names[256];
        prt_sim_error(o, "unknown integrator '%s' (%s)", m,
                prt_integrator_names(names, sizeof names, ", ", false));
        return 2;
    }
    const PrtIntegratorInfo *in = &prt_integrators[id];
    if (in->kind == PRT_KIND_DISCRETE) { /* it needs a learned potential's discrete gradient */
        prt_sim_error(o, "%s is the step of learned dtlnn models (positions only), not of a system's own dynamics; use "
                      "dopri5, rk4, leapfrog or rattle", m);
        return 2;
    }
    if (!in->constraints && s->C > 0) {
        prt_sim_error(o, "%s ignores constraints and this system has %d; use rattle", m, s->C);
        return 2;
    }
    if (!in->so3 && s->NP != s->N) {
        prt_sim_error(o, "%s does not handle bodies with `state so3`; use liet2, lie_rk2, lie_rk4, verlet, rk4, euler or dopri5", m);
        return 2;
    }
    bool adaptive = in->kind == PRT_KIND_ADAPTIVE;
    int substeps = o->substeps > 1 ? o->substeps : 1;
    if (adaptive && substeps > 1) {
        prt_sim_error(o, "--substeps is for fixed-step integrators; %s chooses its own steps (--rtol, --atol)", m);
        return 2;
    }
    const PrtTableau *tableau = prt_integrator_tableau((PrtIntegrator)id); /* NULL for the symplectic and Lie rows */
    /* the trajectories, and their copy as velocities for the CSV */
    if (prt_sim_check_memory(s, o, o->csv ? 2 : 1) != 0) return 1;
    long N = s->N, n = o->n, steps = o->steps, len = (N + s->NP) * n;
    double *traj = prt_xalloc((size_t)(len * (steps + 1)), sizeof(double), "the trajectories");
    if (from) { /* the file's first states as they are, (X, Xdot) -> (X, P) with the true masses */
        prt_take_free_lengths(s, from->xv, n); /* open lengths: the first state's */
        memcpy(traj, from->xv, sizeof(double) * (size_t)(N * n));
        prt_massv(s, n, from->xv + N * n, traj + N * n);
    } else {
        PrtRng rng;
        prt_rng_seed(&rng, (uint64_t)o->seed);
        double proj = prt_sample_initial(s, &rng, n, 1e-12, traj);
        if (proj == PRT_INIT_NONFINITE) {
            char why[512];
            prt_describe_init_failure(s, n, traj, why, sizeof why);
            prt_sim_error(o, "%s", why);
            free(traj);
            return 1;
        }
        if (proj < 0) {
            char why[512];
            prt_describe_projection_failure(s, n, traj, why, sizeof why);
            prt_sim_error(o, "%s", why);
            free(traj);
            return 1;
        }
    }
    double *times = prt_xalloc((size_t)steps + 1, sizeof(double), "the observation times");
    for (long k = 0; k <= steps; k++) times[k] = k * o->dt;
    /* a failed integration is an error: the states after it are no solution, so no figures
       and no CSV come from them */
    char failure[256] = "";
    if (adaptive) {
        if (prt_dopri5(prt_hamiltonian_rhs, s, n, (int)(N + s->NP), traj, times, (int)steps + 1, o->rtol, o->atol, traj,
                       &r->stats))
            prt_ode_describe_failure(&r->stats, n, s->names, failure, sizeof failure);
    } else {
        prt_fixed_steps(s, (PrtIntegrator)id, n, o->dt, substeps, steps + 1, traj, NULL, failure, sizeof failure);
        r->stats.steps = steps * substeps;
        r->stats.evals = tableau ? steps * substeps * tableau->stages : 0;
    }
    if (failure[0]) {
        prt_sim_error(o, "%s failed: %s%s", m, failure, o->csv ? "; no trajectories written" : "");
        free(times);
        r->traj = traj;
        return 1;
    }
    /* The drift is relative to |H(0)|, or to the largest kinetic energy along the trajectory
       when that is larger: a system started at rest where V = 0 has H(0) = 0, and its drift
       is still measured against the energy that moves through it. */
    double *h0 = prt_xalloc((size_t)n, sizeof(double), "energies"), *h = prt_xalloc((size_t)n, sizeof(double), "energies"),
           *v = prt_xalloc((size_t)n, sizeof(double), "energies"), *dmax = prt_xalloc((size_t)n, sizeof(double), "energies"),
           *scale = prt_xalloc((size_t)n, sizeof(double), "energies");
    prt_energy(s, n, traj, h0);
    for (long b = 0; b < n; b++) dmax[b] = 0, scale[b] = fabs(h0[b]);
    for (long k = 0; k <= steps; k++) {
        prt_energy(s, n, traj + k * len, h);
        prt_potential(s, n, traj + k * len, v);
        for (long b = 0; b < n && !failure[0]; b++) /* fmax would pass over a NaN: the drift would be a wrong figure */
            if (!isfinite(h[b]))
                snprintf(failure, sizeof failure, "the energy of trajectory %ld is %s at t = %g, a state the integration "
                         "reached", b, isnan(h[b]) ? "NaN" : "infinite", times[k]);
        for (long b = 0; b < n; b++) dmax[b] = fmax(dmax[b], fabs(h[b] - h0[b])), scale[b] = fmax(scale[b], h[b] - v[b]);
        r->violation = fmax(r->violation, prt_constraint_violation(s, n, traj + k * len));
        r->orthogonality = fmax(r->orthogonality, prt_so3_orthogonality(s, n, traj + k * len));
    }
    for (long b = 0; b < n; b++) r->energy_drift = fmax(r->energy_drift, dmax[b] / fmax(scale[b], 1e-300));
    free(h0), free(h), free(v), free(dmax), free(scale), free(times);
    if (failure[0]) { /* an error, as a failed integration: no figure and no CSV from it */
        prt_sim_error(o, "%s%s", failure, o->csv ? "; no trajectories written" : "");
        r->traj = traj;
        return 1;
    }
    if (report) {
        char per[48] = "";
        if (!adaptive && substeps == 1) snprintf(per, sizeof per, ", one step per interval");
        else if (!adaptive) snprintf(per, sizeof per, ", %d steps per interval", substeps);
        fprintf(report, "%ld %s, %ld %s of %g (%s%s), ", n, n == 1 ? "trajectory" : "trajectories", steps,
                steps == 1 ? "step" : "steps", o->dt, m, per);
        if (from) fprintf(report, "from the first states of %s\n", o->from);
        else fprintf(report, "seed %ld\n", o->seed);
        if (adaptive)
            fprintf(report, "  dopri5: rtol %g, atol %g, %ld steps, %ld rejected, %ld field evaluations\n", o->rtol, o->atol,
                    r->stats.steps, r->stats.rejected, r->stats.evals);
        fprintf(report, "  relative energy drift (max): %.3e\n", r->energy_drift);
        fprintf(report, "  constraint violation (max |Phi|): %.3e\n", r->violation);
        if (s->nso3) fprintf(report, "  rotation error (max |R^T R - I|): %.3e\n", r->orthogonality);
    }
    int rc = 0;
    if (o->csv) {
        double *xv = prt_sim_velocities(s, n, steps, traj);
        rc = prt_sim_write_csv(s, o, xv);
        if (!rc && report) fprintf(report, "  wrote %s\n", o->csv);
        free(xv);
    }
    r->traj = traj;
    return rc;
}
