/* integrators.c — the integrator table (see integrators.h). */
#include "integrators.h"

#include <stdio.h>
#include <string.h>

const PrtIntegratorInfo prt_integrators[PRT_INTEGRATOR_COUNT] = {
#define PRT_INTEGRATOR_ROW(id, name, kind, constraints, so3, trainable, symplectic, order, summary) \
    {name, kind, constraints, so3, trainable, symplectic, order, summary},
    PRT_INTEGRATORS(PRT_INTEGRATOR_ROW)
#undef PRT_INTEGRATOR_ROW
};

int prt_integrator_find(const char *name) {
    for (int i = 0; i < PRT_INTEGRATOR_COUNT; i++)
        if (!strcmp(prt_integrators[i].name, name)) return i;
    return -1;
}

const PrtTableau *prt_integrator_tableau(PrtIntegrator id) {
    switch (id) {
    case PRT_INT_RK4: return &prt_tableau_rk4;
    case PRT_INT_RK4_38: return &prt_tableau_rk4_38;
    case PRT_INT_EULER: return &prt_tableau_euler;
    default: return NULL;
    }
}

const char *prt_integrator_names(char *buf, int len, const char *sep, bool trainable_only) {
    int at = 0;
    buf[0] = 0;
    for (int i = 0; i < PRT_INTEGRATOR_COUNT && at < len; i++)
        if (!trainable_only || prt_integrators[i].trainable)
            at += snprintf(buf + at, (size_t)(len - at), "%s%s", at ? sep : "", prt_integrators[i].name);
    return buf;
}
