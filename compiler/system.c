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
#define MODEL_KIND_NAME(id, name, ...) #name,
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

bool model_in_generalized_coords(ModelKind k) { return prt_model_kinds[k].coords == PRT_COORDS_GENERALIZED; }

bool model_trains_through(ModelKind k, int integrator) { return prt_model_kind_trains_through(k, integrator); }

const char *model_integrator_names(ModelKind k, char *buf, int len) {
    /* a kind's own steps in its order, its proposed step first; the others' in the table's */
    const int *own = prt_model_kinds[k].steps;
    int n = 0, at = 0;
    while (own && own[n] >= 0) n++;
    if (!own) n = PRT_INTEGRATOR_COUNT;
    buf[0] = 0;
    for (int i = 0; i < n && at < len; i++) {
        int row = own ? own[i] : i;
        if (model_trains_through(k, row))
            at += snprintf(buf + at, (size_t)(len - at), "%s%s", at ? ", " : "", prt_integrators[row].name);
    }
    return buf;
}

const char *model_integrator(const System *s, const Model *m) { return m->integrator ? m->integrator : s->train.integrator; }
