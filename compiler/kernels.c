/* kernels.c — the compiler's pass list (lower, differentiate, simplify, verify). */
#include "kernels.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ad.h"
#include "arena.h"
#include "driver.h"
#include "dynamics.h"
#include "eval.h"
#include "loop_form.h"
#include "lower.h"
#include "opt.h"

/* A constant inf or NaN left after simplification (all that is left is used): 1 / (x - x),
   say, folds to inf, and the kernel would return it for every state. */
static bool check_folded_finite(Kernels *k, const IrFn *f, char *err, size_t errlen) {
    for (int i = 0; i < f->ninsts; i++) {
        const IrInst *x = &f->insts[i];
        if (x->op != IR_CONST || isfinite(x->num)) continue;
        Loc at = ir_loc(f, i);
        const char *what = isnan(x->num) ? "NaN" : x->num > 0 ? "inf" : "-inf";
        if (at.first_line && k->diags) {
            bool derivative = strcmp(f->name, "V") && strcmp(f->name, "Phi") && strcmp(f->name, "Init");
            diag_error(k->diags, at, "%s is %s for every state (the compiler folds it to a constant)",
                       derivative ? "the derivative of this expression" : "this expression", what);
            snprintf(err, errlen, "the program has an expression that is %s for every state (above)", what);
        } else {
            snprintf(err, errlen, "kernel %s folds to a constant %s when compiled: an expression of the program is not "
                     "finite for any state", f->name, what);
        }
        return false;
    }
    return true;
}

static bool add(Kernels *k, IrFn *f, bool optimize, char *err, size_t errlen) {
    if (f->too_big) {
        k->too_big = true;
        snprintf(err, errlen,
                 "the system is too large to compile: its kernel %s passed the limit of %d IR instructions while being "
                 "built (the constrained solve grows as the cube of the constraints that share bodies, as when many "
                 "links meet at one body; chains and trees grow linearly: docs/performance.md). A simulation "
                 "compiles it in loop form without this limit (--kernels loop, the default from %d constraint rows); a "
                 "model's training needs the unrolled kernels: use fewer constraints on one body",
                 f->name, IR_MAX_INSTS, DRIVER_LOOP_FORM_MIN_ROWS);
        ir_free(f);
        return false;
    }
    const char *bad = ir_verify(f);
    if (!bad && optimize) {
        IrFn *g = opt_simplify(f);
        ir_free(f);
        f = g;
        bad = ir_verify(f);
    }
    if (bad) {
        snprintf(err, errlen, "kernel %s: invalid IR: %s", f->name, bad);
        ir_free(f);
        return false;
    }
    if (optimize && !check_folded_finite(k, f, err, errlen)) {
        ir_free(f);
        return false;
    }
    k->fns[k->n++] = f;
    return true;
}

static bool build_all(System *sys, Kernels *k, bool optimize, unsigned skip, char *err, size_t errlen);

/* The loop form's tables (k->loop) and its row kernels Row0, Row1, ... from Phi. */
static bool add_rows(System *sys, Kernels *k, const IrFn *Phi, bool optimize, char *err, size_t errlen) {
    if (sys->nrotation_bodies > 0 || Phi->noutputs == 0) {
        snprintf(err, errlen, "the loop form is for systems with constraints and without `state so3` bodies");
        return false;
    }
    IrFn *templates[LOOP_FORM_MAX_CLASSES];
    int nt = 0;
    k->loop = xcalloc(1, sizeof *k->loop);
    if (!loop_form_build(sys, Phi, k->loop, templates, &nt, err, errlen)) return false;
    for (int i = 0; i < nt; i++)
        if (!add(k, templates[i], optimize, err, errlen)) {
            for (int j = i + 1; j < nt; j++) ir_free(templates[j]);
            return false;
        }
    return true;
}

/* Rhs (X, P) = Field (X, P, gradV (X)): the system's own vector field in one kernel, so that
   the simplifier folds what the potential makes constant (uniform gravity's gradient, and
   with it A M^-1 dV) and the runtime copies no (X, P) into Field's input: the 3-pendulum's
   field 7.2-7.6 ns a state against 10.5-11.0 (docs/performance.md, "Vector field"). */
IrFn *lower_rhs(const IrFn *field, const IrFn *gradv) {
    int nstate = field->ninputs - gradv->noutputs, np = field->nparams > gradv->nparams ? field->nparams : gradv->nparams;
    IrFn *g = ir_new("Rhs", nstate, field->nparams, field->noutputs);
    int *in = xalloc((size_t)field->ninputs + 1, sizeof(int)), *params = xalloc((size_t)np + 1, sizeof(int));
    for (int i = 0; i < nstate; i++) {
        in[i] = ir_input(g, i);
        if (field->input_names && field->input_names[i]) ir_set_input_name(g, i, field->input_names[i]);
    }
    for (int i = 0; i < np; i++) params[i] = ir_param(g, i);
    ad_inline(g, gradv, in, params, in + nstate);
    ad_inline(g, field, in, params, g->outputs);
    for (int o = 0; o < g->noutputs; o++)
        if (field->output_names && field->output_names[o]) ir_set_output_name(g, o, field->output_names[o]);
    free(in);
    free(params);
    return g;
}

bool kernels_build(System *sys, Kernels *k, bool optimize, char *err, size_t errlen) {
    return kernels_build_except(sys, k, optimize, 0, err, errlen);
}

bool kernels_build_except(System *sys, Kernels *k, bool optimize, unsigned skip, char *err, size_t errlen) {
    memset(k, 0, sizeof *k);
    k->diags = sys->sema ? sys->sema->d : NULL;
    if (build_all(sys, k, optimize, skip, err, errlen)) return true;
    kernels_free(k); /* a program's error, not only a compiler bug: leave nothing behind */
    return false;
}

static bool build_all(System *sys, Kernels *k, bool optimize, unsigned skip, char *err, size_t errlen) {
    if (!add(k, lower_potential(sys), optimize, err, errlen)) return false;
    IrFn *V = k->fns[0];
    if (!add(k, ad_gradient(V, 0, "gradV"), optimize, err, errlen)) return false;
    if (!add(k, lower_constraints(sys), optimize, err, errlen)) return false;
    IrFn *Phi = k->fns[2];
    /* (the loop form's rows give DPhi: a dense C x N kernel is most of a large chain's JIT) */
    if (!(skip & (KERNELS_LOOP_FORM | KERNELS_WITH_ROWS)) && !add(k, ad_jacobian(Phi, "DPhi"), optimize, err, errlen))
        return false;
    /* (in loop form, or with its rows, the rows give PhiDot, and V with the bodies' table the
       energy: runtime/system/sim.h) */
    if (!(skip & (KERNELS_LOOP_FORM | KERNELS_WITH_ROWS))) {
        IrFn *dot = ad_jvp(Phi, "PhiDot");
        for (int i = 0; i < Phi->ninputs; i++) {
            char name[320];
            snprintf(name, sizeof name, "d/dt %s", Phi->input_names[i] ? Phi->input_names[i] : "x");
            ir_set_input_name(dot, Phi->ninputs + i, name);
        }
        if (!add(k, dot, optimize, err, errlen)) return false;
        if (!(skip & (KERNELS_SKIP_DPHIDOT | KERNELS_WITH_ROWS)) && /* d(DPhi Xdot)/d(X, Xdot), row-major */
            !add(k, ad_jacobian(k->fns[k->n - 1], "DPhiDot"), optimize, err, errlen))
            return false;
        if (!add(k, lower_hamiltonian(sys, V), optimize, err, errlen)) return false;
    }
    if (sys->nrotation_bodies > 0) {
        if (Phi->noutputs > 0) {
            snprintf(err, errlen, "a system with `state so3` bodies cannot have constraints yet");
            return false;
        }
        if (!add(k, lower_rigid_field(sys), optimize, err, errlen)) return false;
    }
    if (sys->nforces > 0 && !add(k, lower_force(sys), optimize, err, errlen)) return false;
    if ((skip & (KERNELS_LOOP_FORM | KERNELS_WITH_ROWS)) && !add_rows(sys, k, Phi, optimize, err, errlen)) return false;
    if (!(skip & KERNELS_LOOP_FORM) && sys->nrotation_bodies == 0) {
        if (!add(k, lower_hamiltonian_field(sys, Phi), optimize, err, errlen)) return false;
        if (!(skip & KERNELS_SKIP_ACCEL) && !add(k, lower_lagrangian_accel(sys, Phi), optimize, err, errlen)) return false;
    }
    /* (an SO(3) system's gradV is most of its field and its Lie integrators call gradV alone:
       a copy of it in Rhs would double its compile time for dopri5's sake) */
    if (sys->nrotation_bodies == 0 && !(skip & (KERNELS_LOOP_FORM | KERNELS_WITH_ROWS)) &&
        !add(k, lower_rhs(kernels_find(k, "Field"), kernels_find(k, "gradV")), optimize, err, errlen))
        return false;
    /* (in loop form the bodies' table gives M^-1 P and M V: runtime/system/sim.h prt_minv, prt_massv;
       unrolled they were 110,000 of a 10,000-link chain's 150,000 JIT'd instructions) */
    if (!(skip & KERNELS_LOOP_FORM) && (!add(k, lower_mass_apply(sys, true), optimize, err, errlen) ||
                                        !add(k, lower_mass_apply(sys, false), optimize, err, errlen)))
        return false;
    if (!sys->init) return true;
    return add(k, lower_init(sys, &k->draw_kinds, &k->ndraws), optimize, err, errlen);
}

bool kernels_add_training(Kernels *k, bool hamiltonian, bool lagrangian, bool optimize, char *err, size_t errlen) {
    static const char *const of[] = {"Field", "Accel", "MinvP", "MassV"};
    for (size_t i = 0; i < sizeof of / sizeof of[0]; i++) {
        if (i == 1 ? !lagrangian : !hamiltonian) continue;
        const IrFn *f = kernels_find(k, of[i]);
        if (!f) {
            snprintf(err, errlen, "internal error: no %s kernel to differentiate", of[i]);
            return false;
        }
        char name[32];
        snprintf(name, sizeof name, "%sVJP", of[i]);
        if (!add(k, ad_vjp(f, name), optimize, err, errlen)) return false;
    }
    return true;
}

bool kernels_add_row_vjps(Kernels *k, bool optimize, char *err, size_t errlen) {
    for (int c = 0; k->loop && c < k->loop->nclasses; c++) {
        char name[32], vjp[40];
        snprintf(name, sizeof name, "Row%d", c);
        snprintf(vjp, sizeof vjp, "Row%dVJP", c);
        const IrFn *f = kernels_find(k, name);
        if (!f) {
            snprintf(err, errlen, "internal error: no %s kernel to differentiate", name);
            return false;
        }
        if (!add(k, ad_vjp(f, vjp), optimize, err, errlen)) return false;
    }
    return true;
}

bool kernels_add_known(System *sys, Kernels *k, const int *known, int nknown, bool optimize, char *err, size_t errlen) {
    IrFn *V = lower_potential_terms(sys, known, nknown, "Vknown");
    IrFn *g = ad_gradient(V, 0, "gradVknown");
    if (!add(k, V, optimize, err, errlen)) { /* (their value: the model's energy) */
        ir_free(g);
        return false;
    }
    if (!add(k, g, optimize, err, errlen)) return false;
    return add(k, ad_vjp(k->fns[k->n - 1], "gradVknownVJP"), optimize, err, errlen);
}

bool kernels_add_generalized(System *sys, Kernels *k, bool training, bool optimize, char *err, size_t errlen) {
    const IrFn *V = kernels_find(k, "V"), *massv = kernels_find(k, "MassV");
    if (!sys->coords.present || !V || !massv) {
        snprintf(err, errlen, "internal error: generalized-coordinate kernels need a coordinates block, V and MassV");
        return false;
    }
    if (!add(k, lower_coord_map(sys), optimize, err, errlen)) return false;
    if (sys->coords.inverse && !add(k, lower_coord_inverse(sys), optimize, err, errlen)) return false;
    if (!add(k, lower_mass_q(sys, massv), optimize, err, errlen)) return false;
    if (training && !add(k, ad_vjp(k->fns[k->n - 1], "MassQVJP"), optimize, err, errlen)) return false;
    if (!add(k, lower_kinetic_q(sys, massv), optimize, err, errlen)) return false;
    if (training && !add(k, ad_vjp(k->fns[k->n - 1], "KineticQVJP"), optimize, err, errlen)) return false;
    return add(k, lower_grad_vq(sys, V), optimize, err, errlen);
}

bool kernels_add_coord_derivatives(Kernels *k, bool optimize, char *err, size_t errlen) {
    const IrFn *map = kernels_find(k, "CoordMap"), *inverse = kernels_find(k, "CoordInverse");
    if (!map || !inverse) {
        snprintf(err, errlen, "internal error: the coordinate maps' derivatives need CoordMap and CoordInverse");
        return false;
    }
    const IrFn *massq = kernels_find(k, "MassQ");
    return add(k, ad_vjp(map, "CoordMapVJP"), optimize, err, errlen) &&
           add(k, ad_vjp(inverse, "CoordInverseVJP"), optimize, err, errlen) &&
           add(k, ad_jvp(map, "CoordMapJVP"), optimize, err, errlen) &&
           add(k, ad_vjp(k->fns[k->n - 1], "CoordMapJVPVJP"), optimize, err, errlen) &&
           (!massq || (add(k, ad_jvp(massq, "MassQJVP"), optimize, err, errlen) &&
                       add(k, ad_vjp(k->fns[k->n - 1], "MassQJVPVJP"), optimize, err, errlen)));
}

IrFn *kernels_find(const Kernels *k, const char *name) {
    for (int i = 0; i < k->n; i++)
        if (!strcmp(k->fns[i]->name, name)) return k->fns[i];
    return NULL;
}

void kernels_free(Kernels *k) {
    for (int i = 0; i < k->n; i++) ir_free(k->fns[i]);
    free(k->draw_kinds);
    k->draw_kinds = NULL;
    if (k->loop) prt_loop_field_free(k->loop);
    free(k->loop);
    k->loop = NULL;
    k->n = 0;
}
