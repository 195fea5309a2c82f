/* trained.c — a model as physc run trains it (see trained.h). */
#include "trained.h"
#include "alloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint.h"
#include "dynamics.h"

const char *trained_pick(const System *sys, const char *name, const Model **out) {
    for (int i = 0; i < sys->nmodels; i++)
        if (!name || !strcmp(sys->models[i].name, name)) {
            *out = &sys->models[i];
            return NULL;
        }
    return sys->nmodels ? "no model of that name" : "the program has no model";
}

bool trained_mlp(const System *sys, const Model *md, bool f32, PrtMlp *mlp, Loc *where, char *err, size_t errlen) {
    *where = md->loc;
    if (!prt_model_family(model_kind_name(md->kind))) {
        snprintf(err, errlen, "model '%s' is a %s model; physc trains these kinds so far: %s", md->name,
                 model_kind_name(md->kind), prt_model_family_names());
        return false;
    }
    if (md->npotentials != 1 || md->nforces || md->mass_learned >= 0) {
        snprintf(err, errlen, "model '%s': physc run supports one learned potential (with known ones beside it), "
                 "`mass learned` or known masses, and no learned forces so far", md->name);
        return false;
    }
    const Learned *l = &sys->learned[md->potentials[0]];
    *where = l->loc;
    if (l->inputs != sys->ncoords) {
        snprintf(err, errlen, "learned potential '%s' must read the positions (`input positions`) in a chnn or clnn model",
                 l->name);
        return false;
    }
    if (l->act == ACT_RELU) {
        snprintf(err, errlen, "learned potential '%s': relu has no second derivative, and training through dV/dX needs "
                 "one; use tanh, softplus or silu", l->name);
        return false;
    }
    if (l->nhidden + 1 > PRT_MLP_MAX_LAYERS) {
        snprintf(err, errlen, "learned potential '%s' has too many layers (at most %d)", l->name, PRT_MLP_MAX_LAYERS - 1);
        return false;
    }
    *mlp = (PrtMlp){.nlayers = l->nhidden + 1, .f32 = f32,
                    .act = l->act == ACT_TANH ? PRT_ACT_TANH : l->act == ACT_SOFTPLUS ? PRT_ACT_SOFTPLUS : PRT_ACT_SILU};
    mlp->size[0] = l->inputs;
    for (int i = 0; i < l->nhidden; i++) mlp->size[i + 1] = l->hidden[i];
    mlp->size[l->nhidden + 1] = 1;
    return true;
}

bool trained_config(const System *sys, const Model *md, const PrtMlp *mlp, PrtModelConfig *cfg, Loc *where,
                    char *err, size_t errlen) {
    *cfg = prt_model_config(prt_model_family(model_kind_name(md->kind)), mlp, md->mass_fit);
    const TrainSettings *t = &sys->train;
    int integrator = prt_integrator_find(t->integrator);
    if (integrator < 0 || !prt_integrators[integrator].trainable) {
        char names[256];
        *where = t->integrator_at;
        snprintf(err, errlen, "model '%s' (%s) trains through one of: %s; not %s", md->name, model_kind_name(md->kind),
                 prt_integrator_names(names, sizeof names, ", ", true), t->integrator);
        return false;
    }
    if (strcmp(t->optimizer, "adamw")) { /* the runtime's one optimizer (optim.h) */
        *where = t->optimizer_at;
        snprintf(err, errlen, "model '%s' (%s) trains with the optimizer adamw; not %s", md->name,
                 model_kind_name(md->kind), t->optimizer);
        return false;
    }
    cfg->integrator = (PrtIntegrator)integrator;
    cfg->substeps = t->substeps;
    cfg->l2 = !strcmp(t->loss, "l2");
    return true;
}

long trained_nparams(const System *sys, const Model *md, const PrtMlp *mlp) {
    return prt_mlp_nparams(mlp) + (md->mass_fit ? dynamics_mass_params(sys) : 0);
}

double *trained_load(const char *path, long nparams, char *err, size_t errlen) {
    double *theta = prt_xalloc((size_t)nparams, sizeof(double), "trained parameters");
    PrtCkptHeader h;
    PrtCkptArray a = {"theta", theta, nparams};
    if (prt_ckpt_read_any(path, &h, &a, 1, err, errlen) != 0) {
        free(theta);
        return NULL;
    }
    return theta;
}

bool trained_open(const System *sys, const char *cmd, const char *name, const char *params_path, Diags *d, Trained *t) {
    memset(t, 0, sizeof *t);
    const char *why = trained_pick(sys, name, &t->md);
    if (why) {
        fprintf(stderr, "physc: %s: %s%s%s\n", cmd, why, name ? ": " : "", name ? name : "");
        trained_close(t);
        return false;
    }
    char err[1024];
    Loc where;
    if (!trained_mlp(sys, t->md, false, &t->mlp, &where, err, sizeof err)) {
        if (where.first_line > 0) diag_error(d, where, "%s", err);
        else fprintf(stderr, "physc: %s: %s\n", cmd, err);
        trained_close(t);
        return false;
    }
    if (!trained_config(sys, t->md, &t->mlp, &t->cfg, &where, err, sizeof err)) {
        if (where.first_line > 0) diag_error(d, where, "%s", err);
        else fprintf(stderr, "physc: %s: %s\n", cmd, err);
        trained_close(t);
        return false;
    }
    t->nparams = trained_nparams(sys, t->md, &t->mlp);
    t->theta = trained_load(params_path, t->nparams, err, sizeof err);
    if (!t->theta) {
        fprintf(stderr, "physc: %s: %s (model %s has %ld parameters)\n", cmd, err, t->md->name, t->nparams);
        trained_close(t);
        return false;
    }
    return true;
}

void trained_close(Trained *t) {
    free(t->theta);
    memset(t, 0, sizeof *t);
}
