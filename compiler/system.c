/* system.c — counts derived from the system model. */
#include "system.h"

#include <stdio.h>

#include "integrators/integrators.h"

int system_coordinates(const System *s) { return s->npoints * s->dim + 12 * s->nrotation_bodies; }

int system_equations(const System *s) {
    int e = s->rigidity_equations + s->orthogonality_equations;
    for (int i = 0; i < s->nconstraints; i++) e += s->constraints[i].equations;
    return e;
}

int system_independent_constraints(const System *s) {
    int e = s->rigidity_equations + s->orthogonality_equations;
    for (int i = 0; i < s->nconstraints; i++) e += s->constraints[i].independent;
    return e;
}

int system_dof(const System *s) { return system_coordinates(s) - system_independent_constraints(s); }

static const char *const kind_names[MODEL_NKINDS] = {
#define MODEL_KIND_NAME(id, name, title, coords, learns, predicts) #name,
    PRT_MODEL_KINDS(MODEL_KIND_NAME)
#undef MODEL_KIND_NAME
};

const char *model_kind_name(ModelKind k) { return kind_names[k]; }

const char *const *model_kind_names(void) { return kind_names; }

int axis_frame_side(const System *s, const Constraint *c) {
    const PointRef *side[2] = {&c->b, &c->a};
    for (int want = 0; want < 3; want++) /* a world direction, then a full frame, then a frame and its normal */
        for (int i = 0; i < 2; i++) {
            const PointRef *r = side[i];
            int n = r->kind == PT_BODY ? s->bodies[r->body].n : 0;
            if ((want == 0 && r->kind == PT_WORLD) || (want == 1 && r->kind == PT_BODY && n == s->dim) ||
                (want == 2 && r->kind == PT_BODY && n == s->dim - 1))
                return i ? 0 : 1;
        }
    return -1;
}

bool model_in_generalized_coords(ModelKind k) {
    static const int coords[MODEL_NKINDS] = {
#define MODEL_KIND_COORDS(id, name, title, coords, learns, predicts) coords,
        PRT_MODEL_KINDS(MODEL_KIND_COORDS)
#undef MODEL_KIND_COORDS
    };
    return coords[k] == PRT_COORDS_GENERALIZED;
}

bool model_trains_through(ModelKind k, int integrator) {
    if (integrator < 0) return false;
    if (k == MODEL_LIET2) /* the Lie T2 paper's six recurrent blocks (App. D) */
        return integrator == PRT_INT_LIET2 || integrator == PRT_INT_LIE_RK2 || integrator == PRT_INT_LIE_RK4 ||
               integrator == PRT_INT_VERLET || integrator == PRT_INT_RK4 || integrator == PRT_INT_EULER;
    if (k == MODEL_DTLNN)
        return integrator == PRT_INT_DISCRETE_GRADIENT || integrator == PRT_INT_LEAPFROG ||
               integrator == PRT_INT_SYMPLECTIC_EULER || integrator == PRT_INT_EULER;
    return prt_integrators[integrator].trainable && prt_integrators[integrator].kind == PRT_KIND_EXPLICIT_RK;
}

const char *model_integrator_names(ModelKind k, char *buf, int len) {
    /* dtlnn's in the paper's order, its proposed step first; the others' in the table's */
    static const int dtlnn_rows[] = {PRT_INT_DISCRETE_GRADIENT, PRT_INT_LEAPFROG, PRT_INT_SYMPLECTIC_EULER, PRT_INT_EULER};
    int n = k == MODEL_DTLNN ? 4 : PRT_INTEGRATOR_COUNT, at = 0;
    buf[0] = 0;
    for (int i = 0; i < n && at < len; i++) {
        int row = k == MODEL_DTLNN ? dtlnn_rows[i] : i;
        if (model_trains_through(k, row))
            at += snprintf(buf + at, (size_t)(len - at), "%s%s", at ? ", " : "", prt_integrators[row].name);
    }
    return buf;
}

const char *model_integrator(const System *s, const Model *m) { return m->integrator ? m->integrator : s->train.integrator; }
