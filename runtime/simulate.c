/* simulate.c — sample and project (or read from a CSV) initial states, integrate, measure, write CSV. */
#include "simulate.h"

#include "alloc.h"
#include "dataset.h"
#include "symplectic.h"

#include <math.h>
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
        s->MinvP(n, traj + k * len + N * n, s->params, xv + k * len + N * n);
    }
    return xv;
}

int prt_sim_check_memory(const PrtSystem *s, const PrtSimOptions *o, int copies) {
    char what[160], err[512];
    double points = (double)o->steps + 1, numbers = (double)(s->N + s->NP);
    snprintf(what, sizeof what, "%ld trajectories of %.0f points of %.0f numbers (positions and momenta)%s", o->n, points,
             numbers, copies > 1 ? ", kept in several copies," : "");
    if (prt_mem_check(copies * 8.0 * numbers * (double)o->n * points, what, "reduce --steps or --n", err, sizeof err) == 0)
        return 0;
    fprintf(stderr, "physc: simulate: %s\n", err);
    return 1;
}

int prt_sim_write_csv(const PrtSystem *s, const PrtSimOptions *o, const double *xv) {
    char err[512];
    int rc = prt_csv_write_soa(o->csv, o->names, s->N + s->NP, o->n, (int)o->steps + 1, o->dt, xv, err, sizeof err);
    if (rc) fprintf(stderr, "physc: %s\n", err);
    return rc ? 1 : 0;
}

int prt_sim_read_from(const PrtSystem *s, const PrtSimOptions *o, PrtSimOptions *eff, PrtTrajSet *set) {
    char err[512];
    if (s->NP != s->N) {
        fprintf(stderr, "physc: simulate: starting from a file needs a system without `state so3` bodies\n");
        return 1;
    }
    if (prt_trajset_read_csv(o->from, s->N, set, err, sizeof err) != 0) {
        fprintf(stderr, "physc: simulate: %s\n", err);
        return 1;
    }
    if (o->steps > set->npts - 1) {
        fprintf(stderr, "physc: simulate: %s has trajectories of %d steps; --steps asks for %ld\n", o->from,
                set->npts - 1, o->steps);
        prt_trajset_free(set);
        return 1;
    }
    *eff = *o;
    eff->n = set->n, eff->steps = o->steps > 0 ? o->steps : set->npts - 1, eff->dt = set->dt;
    return 0;
}

int prt_simulate(PrtSystem *s, const PrtSimOptions *o, FILE *report, PrtSimResult *r) {
    memset(r, 0, sizeof *r);
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
    bool adaptive = !strcmp(m, "dopri5");
    PrtFixedMethod fixed = !strcmp(m, "rk4") ? PRT_RK4 : !strcmp(m, "rk4_38") ? PRT_RK4_38 : PRT_EULER;
    int symplectic = !strcmp(m, "symplectic_euler") ? PRT_SYMPLECTIC_EULER : !strcmp(m, "leapfrog") ? PRT_LEAPFROG
                     : !strcmp(m, "rattle")         ? PRT_RATTLE
                                                    : -1;
    if (!adaptive && symplectic < 0 && strcmp(m, "rk4") && strcmp(m, "rk4_38") && strcmp(m, "euler")) {
        fprintf(stderr, "physc: simulate: unknown integrator '%s' (dopri5, rk4, rk4_38, euler, symplectic_euler, "
                        "leapfrog, rattle)\n", m);
        return 2;
    }
    if ((symplectic == PRT_SYMPLECTIC_EULER || symplectic == PRT_LEAPFROG) && s->C > 0) {
        fprintf(stderr, "physc: simulate: %s ignores constraints and this system has %d; use rattle\n", m, s->C);
        return 2;
    }
    if (symplectic >= 0 && s->NP != s->N) {
        fprintf(stderr, "physc: simulate: %s does not handle bodies with `state so3` (the Lie T2 integrator will)\n", m);
        return 2;
    }
    /* the trajectories, and their copy as velocities for the CSV */
    if (prt_sim_check_memory(s, o, o->csv ? 2 : 1) != 0) return 1;
    long N = s->N, n = o->n, steps = o->steps, len = (N + s->NP) * n;
    double *traj = prt_xalloc((size_t)(len * (steps + 1)), sizeof(double), "the trajectories");
    if (from) { /* the file's first states as they are, (X, Xdot) -> (X, P) with the true masses */
        prt_take_free_lengths(s, from->xv, n); /* open lengths: the first state's */
        memcpy(traj, from->xv, sizeof(double) * (size_t)(N * n));
        s->MassV(n, from->xv + N * n, s->params, traj + N * n);
    } else {
        PrtRng rng;
        prt_rng_seed(&rng, (uint64_t)o->seed);
        if (prt_sample_initial(s, &rng, n, 1e-12, traj) < 0) {
            fprintf(stderr, "physc: simulate: projecting the initial states onto the constraints failed\n");
            free(traj);
            return 1;
        }
    }
    double *times = prt_xalloc((size_t)steps + 1, sizeof(double), "the observation times");
    for (long k = 0; k <= steps; k++) times[k] = k * o->dt;
    if (adaptive) {
        if (prt_dopri5(prt_hamiltonian_rhs, s, n, (int)(N + s->NP), traj, times, (int)steps + 1, o->rtol, o->atol, traj,
                       &r->stats))
            fprintf(stderr, "physc: simulate: warning: dopri5 stopped early (step size underflow or non-finite state)\n");
    } else if (symplectic >= 0) {
        for (long k = 1; k <= steps; k++) {
            memcpy(traj + k * len, traj + (k - 1) * len, sizeof(double) * (size_t)len);
            if (prt_symplectic_step(s, (PrtSymplectic)symplectic, n, o->dt, traj + k * len, 1e-12) < 0) {
                fprintf(stderr, "physc: simulate: RATTLE's Newton iteration failed at step %ld\n", k);
                for (long j = k + 1; j <= steps; j++) memcpy(traj + j * len, traj + k * len, sizeof(double) * (size_t)len);
                break;
            }
        }
        r->stats.steps = steps;
    } else {
        double *work = prt_xalloc((size_t)(5 * len), sizeof(double), "the integrator's stages");
        for (long k = 1; k <= steps; k++) {
            memcpy(traj + k * len, traj + (k - 1) * len, sizeof(double) * (size_t)len);
            prt_fixed_step(fixed, prt_hamiltonian_rhs, s, n, (int)(N + s->NP), o->dt, traj + k * len, work);
        }
        free(work);
        r->stats.steps = steps;
        r->stats.evals = steps * (fixed == PRT_EULER ? 1 : 4);
    }
    double *h0 = prt_xalloc((size_t)n, sizeof(double), "energies"), *h = prt_xalloc((size_t)n, sizeof(double), "energies");
    prt_energy(s, n, traj, h0);
    for (long k = 0; k <= steps; k++) {
        prt_energy(s, n, traj + k * len, h);
        for (long b = 0; b < n; b++) r->energy_drift = fmax(r->energy_drift, fabs(h[b] - h0[b]) / fmax(fabs(h0[b]), 1e-300));
        r->violation = fmax(r->violation, prt_constraint_violation(s, n, traj + k * len));
    }
    free(h0), free(h), free(times);
    if (report) {
        fprintf(report, "%ld trajectories, %ld steps of %g (%s%s), ", n, steps, o->dt, m,
                adaptive ? "" : ", one step per interval");
        if (from) fprintf(report, "from the first states of %s\n", o->from);
        else fprintf(report, "seed %ld\n", o->seed);
        if (adaptive)
            fprintf(report, "  dopri5: rtol %g, atol %g, %ld steps, %ld rejected, %ld field evaluations\n", o->rtol, o->atol,
                    r->stats.steps, r->stats.rejected, r->stats.evals);
        fprintf(report, "  relative energy drift (max): %.3e\n", r->energy_drift);
        fprintf(report, "  constraint violation (max |Phi|): %.3e\n", r->violation);
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
