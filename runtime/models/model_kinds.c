/* model_kinds.c — the table of model kinds (model_kinds.h), for the compiler's checks and the
   runtime alike. */
#include "model_kinds.h"

const PrtModelKind prt_model_kinds[] = {
#define KIND_ROW(id, kname, ktitle, ...) {.name = #kname, .title = ktitle, __VA_ARGS__},
    PRT_MODEL_KINDS(KIND_ROW)
#undef KIND_ROW
};
const int prt_model_nkinds = sizeof prt_model_kinds / sizeof prt_model_kinds[0];

bool prt_model_kind_trains_through(int k, int integrator) {
    if (integrator < 0) return false;
    const int *steps = prt_model_kinds[k].steps;
    if (!steps) return prt_integrators[integrator].trainable && prt_integrators[integrator].kind == PRT_KIND_EXPLICIT_RK;
    for (; *steps >= 0; steps++)
        if (*steps == integrator) return true;
    return false;
}
