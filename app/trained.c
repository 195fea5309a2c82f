/* trained.c — a model as physc run trains it (see trained.h). */
#include "trained.h"
#include "core/alloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/checkpoint.h"
#include "dynamics.h"

const char *trained_pick(const System *sys, const char *name, const Model **out) {
    for (int i = 0; i < sys->nmodels; i++)
        if (!name || !strcmp(sys->models[i].name, name)) {
            *out = &sys->models[i];
            return NULL;
        }
    return sys->nmodels ? "no model of that name" : "the program has no model";
}

/* The MLP of learned term l (f32: its passes in float). */
static bool learned_net(const Learned *l, bool f32, PrtMlp *mlp, Loc *where, char *err, size_t errlen) {
    *where = l->loc;
    if (l->act == ACT_RELU) {
        snprintf(err, errlen, "learned term '%s': relu has no second derivative, and training through the model's "
                 "derivatives needs one; use tanh, softplus or silu", l->name);
        return false;
    }
    if (l->nhidden + 1 > PRT_MLP_MAX_LAYERS) {
        snprintf(err, errlen, "learned term '%s' has too many layers (at most %d)", l->name, PRT_MLP_MAX_LAYERS - 1);
        return false;
    }
    *mlp = (PrtMlp){.nlayers = l->nhidden + 1, .f32 = f32, .zero_biases = l->zero_biases,
                    .act = l->act == ACT_TANH ? PRT_ACT_TANH : l->act == ACT_SOFTPLUS ? PRT_ACT_SOFTPLUS : PRT_ACT_SILU};
    mlp->size[0] = l->inputs;
    for (int i = 0; i < l->nhidden; i++) mlp->size[i + 1] = l->hidden[i];
    mlp->size[l->nhidden + 1] = l->outputs;
    return true;
}

/* A learned term as its family's configure reads it (model_decl.h), its network built. */
static bool learned_term(const Learned *l, bool f32, PrtLearnedTerm *t, Loc *where, char *err, size_t errlen) {
    *t = (PrtLearnedTerm){.name = l->name, .inputs = l->inputs, .scale = l->scale, .length_scale = l->length_scale,
                          .time_scale = l->time_scale, .velocity_input = l->velocity_input,
                          .body_frame_input = l->body_frame_input, .own_centres_input = l->own_centres_input,
                          .body_gains = l->body_gains};
    return learned_net(l, f32, &t->net, where, err, errlen);
}

/* The networks of md, in its family's order: the family's configure reads the model's
   declaration (model_decl.h), which this fills from the program. */
static bool model_nets(const System *sys, const Model *md, bool f32, PrtModelConfig *cfg, Loc *where, char *err,
                       size_t errlen) {
    PrtLearnedTerm pots[8], forces[8], mass;
    const Learned *of[8 + 8 + 1]; /* each term's declaration, for the place of a message */
    PrtModelDecl d = {.name = md->name, .potentials = pots, .forces = forces, .npotentials = md->npotentials,
                      .nforces = md->nforces, .nknown = md->nknown, .mass_fit = md->mass_fit, .ncoords = sys->ncoords,
                      .system_forces = sys->nforces > 0};
    for (int i = 0; i < md->npotentials + md->nforces + (md->mass_learned >= 0); i++) {
        bool pot = i < md->npotentials, force = !pot && i < md->npotentials + md->nforces;
        of[i] = &sys->learned[pot ? md->potentials[i] : force ? md->forces[i - md->npotentials] : md->mass_learned];
        PrtLearnedTerm *t = pot ? &pots[i] : force ? &forces[i - md->npotentials] : &mass;
        if (!learned_term(of[i], f32, t, where, err, errlen)) return false;
    }
    if (md->mass_learned >= 0) d.mass = &mass;
    const PrtLearnedTerm *blame = NULL;
    *where = md->loc;
    if (cfg->family->configure(&d, cfg, &blame, err, errlen) == 0) return true;
    for (int i = 0; blame && i < md->npotentials + md->nforces + (md->mass_learned >= 0); i++) /* the term's own place */
        if (blame == (i < md->npotentials ? &pots[i] : i < md->npotentials + md->nforces ? &forces[i - md->npotentials] : &mass))
            *where = of[i]->loc;
    return false;
}

bool trained_config(const System *sys, const Model *md, bool f32, PrtModelConfig *cfg, Loc *where, char *err,
                    size_t errlen) {
    *where = md->loc;
    const PrtModelFamily *family = prt_model_family(model_kind_name(md->kind));
    if (!family) {
        snprintf(err, errlen, "model '%s' is a %s model; physc trains these kinds so far: %s", md->name,
                 model_kind_name(md->kind), prt_model_family_names());
        return false;
    }
    PrtMlp none = {0};
    *cfg = prt_model_config(family, &none, md->mass_fit);
    if (!model_nets(sys, md, f32, cfg, where, err, errlen)) return false;
    const TrainSettings *t = &sys->train;
    const char *step = model_integrator(sys, md); /* its own, else the train block's */
    int integrator = prt_integrator_find(step);
    if (!model_trains_through(md->kind, integrator)) {
        char names[256];
        *where = md->integrator ? md->integrator_at : t->integrator_at;
        snprintf(err, errlen, "model '%s' (%s) trains through one of: %s; not %s", md->name, model_kind_name(md->kind),
                 model_integrator_names(md->kind, names, sizeof names), step);
        return false;
    }
    if (strcmp(t->optimizer, "adamw") && strcmp(t->optimizer, "adam")) { /* the runtime's optimizers (optim.h) */
        *where = t->optimizer_at;
        snprintf(err, errlen, "model '%s' (%s) trains with the optimizer adamw or adam; not %s", md->name,
                 model_kind_name(md->kind), t->optimizer);
        return false;
    }
    cfg->integrator = (PrtIntegrator)integrator;
    cfg->predict = md->predict ? (PrtIntegrator)prt_integrator_find(md->predict) : cfg->integrator; /* (checked by sema) */
    cfg->unit_mass = md->unit_mass;
    cfg->substeps = t->substeps;
    cfg->l2 = !strcmp(t->loss, "l2");
    cfg->balance_loss = !strcmp(t->loss_weights, "balanced");
    return true;
}

long trained_nparams(const System *sys, const PrtModelConfig *cfg) {
    return prt_model_config_nparams(cfg) + (cfg->learn_mass ? dynamics_mass_params(sys) : 0);
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

/* How many parameters the file holds (-1 if it cannot be read: trained_load then says why). */
static long file_nparams(const char *path) {
    double one;
    PrtCkptHeader h;
    PrtCkptArray a = {"theta", &one, -1};
    char err[512];
    return prt_ckpt_read_any(path, &h, &a, 1, err, sizeof err) == 0 ? a.len : -1;
}

/* With no --model: the first model, unless the file's parameters are not its count and
   exactly one other model has that count (a user who trained `--model lnn` and forgot to
   say so here). NULL and *out set, or false after a message naming the candidates. */
static bool pick_by_count(const System *sys, const char *cmd, const char *params_path, const Model **out) {
    long have = file_nparams(params_path);
    if (have < 0 || sys->nmodels < 2) return true;
    long *counts = prt_xalloc((size_t)sys->nmodels, sizeof(long), "the models' sizes");
    int nm = sys->nmodels, match = -1, nmatch = 0;
    for (int i = 0; i < nm; i++) {
        PrtModelConfig cfg;
        Loc where;
        char err[512];
        counts[i] = trained_config(sys, &sys->models[i], false, &cfg, &where, err, sizeof err) ? trained_nparams(sys, &cfg) : -1;
        if (i == 0 && counts[0] == have) break; /* the first model's: the default stands */
        if (counts[i] == have) match = match < 0 ? i : match, nmatch++;
    }
    if (counts[0] == have) {
        free(counts);
        return true;
    }
    if (nmatch == 1) {
        fprintf(stderr, "physc: %s: %s holds %ld parameters, model %s's (not the first model's, %s): using %s (--model "
                "chooses)\n", cmd, params_path, have, sys->models[match].name, sys->models[0].name, sys->models[match].name);
        *out = &sys->models[match];
        free(counts);
        return true;
    }
    char list[1024] = "";
    size_t used = 0;
    for (int i = 0; i < nm && used < sizeof list; i++) {
        if (nmatch > 1 && counts[i] != have) continue;
        used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", used ? ", " : "", sys->models[i].name);
        if (nmatch == 0 && counts[i] >= 0 && used < sizeof list)
            used += (size_t)snprintf(list + used, sizeof list - used, " %ld", counts[i]);
    }
    if (nmatch > 1)
        fprintf(stderr, "physc: %s: %s holds %ld parameters, as models %s do: pass --model NAME\n", cmd, params_path,
                have, list);
    else
        fprintf(stderr, "physc: %s: %s holds %ld parameters, which no model of the program has (%s): is it another "
                "program's run?\n", cmd, params_path, have, list);
    free(counts);
    return false;
}

bool trained_open(const System *sys, const char *cmd, const char *name, const char *params_path, bool f32, Diags *d,
                  Trained *t) {
    memset(t, 0, sizeof *t);
    const char *why = trained_pick(sys, name, &t->md);
    if (!why && !name && !pick_by_count(sys, cmd, params_path, &t->md)) {
        trained_close(t);
        return false;
    }
    if (why) {
        fprintf(stderr, "physc: %s: %s%s%s\n", cmd, why, name ? ": " : "", name ? name : "");
        trained_close(t);
        return false;
    }
    char err[1024];
    Loc where;
    if (!trained_config(sys, t->md, false, &t->cfg, &where, err, sizeof err)) {
        if (where.first_line > 0) diag_error(d, where, "%s", err);
        else fprintf(stderr, "physc: %s: %s\n", cmd, err);
        trained_close(t);
        return false;
    }
    for (int i = 0; i < t->cfg.nnets; i++) t->cfg.net[i].f32 = f32 && t->cfg.family->predicts_at_training_precision;
    t->nparams = trained_nparams(sys, &t->cfg);
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
