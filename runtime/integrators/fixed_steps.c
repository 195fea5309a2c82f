/* fixed_steps.c — fixed-step integration of a system's own dynamics (fixed_steps.h). */
#include "fixed_steps.h"
#include "core/alloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lie_group.h"
#include "math/ode.h"
#include "symplectic.h"

bool prt_fixed_step_integrator(PrtIntegrator id) {
    PrtIntegratorKind k = prt_integrators[id].kind;
    return k == PRT_KIND_EXPLICIT_RK || k == PRT_KIND_SYMPLECTIC || k == PRT_KIND_LIE;
}

int prt_fixed_steps(PrtSystem *s, PrtIntegrator id, long n, double dt, int substeps, long nt, double *traj,
                    const PrtOdeObserver *obs, char *why, size_t whylen) {
    long len = (long)prt_state_rows(s) * n;
    int lie = prt_lie_method(id);
    int symplectic = id == PRT_INT_SYMPLECTIC_EULER ? PRT_SYMPLECTIC_EULER
                     : id == PRT_INT_LEAPFROG       ? PRT_LEAPFROG
                     : id == PRT_INT_RATTLE         ? PRT_RATTLE
                                                    : -1;
    const PrtTableau *tableau = lie < 0 && symplectic < 0 ? prt_integrator_tableau(id) : NULL;
    long wlen = lie >= 0 ? prt_lie_work_len(s, n) : tableau ? 5 * len : 0;
    double *work = wlen ? prt_xalloc((size_t)wlen, sizeof(double), "integration buffers") : NULL;
    double h = dt / substeps;
    int rc = 0;
    for (long k = 1; k < nt && !rc; k++) {
        double *z = traj + (long)k * len;
        memcpy(z, z - len, sizeof(double) * (size_t)len);
        for (int j = 0; j < substeps && !rc; j++) {
            if (lie >= 0) prt_lie_step(s, (PrtLieMethod)lie, n, h, z, work);
            else if (tableau) prt_rk_step(tableau, prt_hamiltonian_rhs, s, n, prt_state_rows(s), h, z, work);
            else if (prt_symplectic_step(s, (PrtSymplectic)symplectic, n, h, z, 1e-12) < 0) {
                if (substeps == 1)
                    snprintf(why, whylen, "at t = %.6g (step %ld), RATTLE's Newton iteration did not converge", k * dt, k);
                else
                    snprintf(why, whylen, "at t = %.6g (interval %ld, step %d of it), RATTLE's Newton iteration did not "
                             "converge", (k - 1) * dt + (j + 1) * h, k, j + 1);
                rc = -1;
            }
        }
        PrtOdeStats bad = {.failure = PRT_ODE_NONFINITE, .t_fail = k * dt, .bad = prt_first_nonfinite(z, len)};
        if (!rc && bad.bad >= 0) {
            prt_ode_describe_failure(&bad, n, s->names, why, whylen);
            rc = -1;
        }
        if (obs && obs->reached) obs->reached(obs->ctx, (int)k, (int)nt);
    }
    free(work);
    return rc;
}
