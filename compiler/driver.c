/* driver.c — from System to callable kernels: the pass list, then the JIT, then the
   runtime's view of the system (kernel pointers, parameters). */
#include "driver.h"
#include "arena.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dynamics.h"
#include "lower.h"

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static bool open_kernels(System *sys, Compiled *c, int opt_level, int purpose, const int *known, int nknown, char *err,
                         size_t errlen);

static KernelForm kernel_form = KERNEL_FORM_AUTO;
void driver_set_kernel_form(KernelForm form) { kernel_form = form; }
static int loop_form_min_rows = DRIVER_LOOP_FORM_MIN_ROWS;
void driver_set_loop_form_min_rows(int rows) { loop_form_min_rows = rows; }
KernelForm driver_kernel_form(void) { return kernel_form; }

bool compiled_open(System *sys, Compiled *c, int opt_level, int purpose, char *err, size_t errlen) {
    return open_kernels(sys, c, opt_level, purpose, NULL, 0, err, errlen);
}

/* What a model's training needs compiled. A model in generalized coordinates never
   backpropagates through the Cartesian kernels; COMPILE_CHNN with it asks for MassQVJP and
   KineticQVJP, which only an HNN with the known mass needs. */
static int model_purpose(const Model *model) {
    static const int compiles[] = {[PRT_TRAINS_FIELD] = COMPILE_CHNN, [PRT_TRAINS_ACCEL] = COMPILE_CLNN,
                                   [PRT_TRAINS_IN_Q] = COMPILE_GENERALIZED, [PRT_TRAINS_ON_SO3] = COMPILE_LIE};
    const PrtModelKind *kind = &prt_model_kinds[model->kind];
    bool known_mass = model->mass_learned < 0 && !model->mass_fit;
    return compiles[kind->trains] | ((kind->rules & PRT_KIND_KNOWN_MASS_VJP) && known_mass ? COMPILE_CHNN : 0);
}

bool compiled_open_model(System *sys, Compiled *c, int opt_level, const Model *model, char *err, size_t errlen) {
    return open_kernels(sys, c, opt_level, model_purpose(model), model->known, model->nknown, err, errlen);
}

bool compiled_open_library(System *sys, Compiled *c, int opt_level, const Model *model, char *err, size_t errlen) {
    return open_kernels(sys, c, opt_level, model_purpose(model) | COMPILE_LIBRARY, model->known, model->nknown, err,
                        errlen);
}

bool compiled_open_rollout(System *sys, Compiled *c, int opt_level, const Model *model, char *err, size_t errlen) {
    return open_kernels(sys, c, opt_level, model_purpose(model) | COMPILE_ROLLOUT, model->known, model->nknown, err,
                        errlen);
}

/* Systems the loop form applies to, and those the kernel form asks it for */
static bool loop_form_fits(const System *sys) { return sys->nrotation_bodies == 0 && system_equations(sys) > 0; }
static bool loop_form_wanted(const System *sys) {
    return loop_form_fits(sys) && (kernel_form == KERNEL_FORM_LOOP ||
                                   (kernel_form == KERNEL_FORM_AUTO && system_equations(sys) >= loop_form_min_rows));
}

/* err (why the loop form failed) as the message of --kernels loop; false */
static bool loop_form_refused(const System *sys, const char *what, char *err, size_t errlen) {
    char why[300];
    snprintf(why, sizeof why, "%s", err);
    snprintf(err, errlen, "cannot compile system '%s' %s (--kernels loop): %s", sys->name, what, why);
    return false;
}

bool driver_build_simulation_kernels(System *sys, Kernels *k, unsigned skip, char *err, size_t errlen) {
    bool loop = loop_form_wanted(sys);
    if (loop && !kernels_build_except(sys, k, true, skip | KERNELS_LOOP_FORM, err, errlen)) {
        if (kernel_form == KERNEL_FORM_LOOP) return loop_form_refused(sys, "in loop form", err, errlen);
        loop = false; /* too irregular for the loop form: unrolled after all */
    }
    if (!loop && !kernels_build_except(sys, k, true, skip, err, errlen)) {
        /* too large unrolled (constraints that share a body: a dense Gram matrix) but not
           for the loop form, which factors it at run time */
        bool retry = k->too_big && loop_form_fits(sys) && kernel_form == KERNEL_FORM_AUTO;
        if (!retry || !kernels_build_except(sys, k, true, skip | KERNELS_LOOP_FORM, err, errlen)) return false;
    }
    return true;
}

/* A model's kernels (the unrolled Field it differentiates), and for a large constrained
   system, as for its simulation (driver_build_simulation_kernels), the loop form's rows
   beside them: its data, projections and truth then take time linear in its size (a
   1000-link chain's data: 83 s through the dense DPhi, 2 s in loop form). */
static bool build_model_kernels(System *sys, Kernels *k, int purpose, unsigned skip, char *err, size_t errlen) {
    bool rows = !(purpose & COMPILE_LIE) && loop_form_wanted(sys);
    /* a CHNN's field and a CLNN's acceleration in loop form too (prt_field, prt_accel), trained
       through their reverse passes (runtime/system/loop_field_vjp.c, with the row classes' VJPs) or
       rolled out: no unrolled Field and FieldVJP (a 1000-link chain's: 400,000 instructions,
       10 s of LLVM), nor Accel and AccelVJP */
    int family = purpose & ~(COMPILE_ROLLOUT | COMPILE_LIBRARY);
    if (rows && family != 0 && (family & ~(COMPILE_CHNN | COMPILE_CLNN)) == 0 &&
        kernels_build_except(sys, k, true, skip | KERNELS_LOOP_FORM, err, errlen))
        return true;
    if (rows && kernels_build_except(sys, k, true, skip | KERNELS_WITH_ROWS, err, errlen)) return true;
    if (rows && kernel_form == KERNEL_FORM_LOOP) return loop_form_refused(sys, "with its rows in loop form", err, errlen);
    return kernels_build_except(sys, k, true, skip, err, errlen);
}

/* What a purpose's COMPILE_* flags ask of the driver. */
typedef struct Purpose {
    int flags;
    bool modelled;    /* a model's kernels, not a simulation's */
    bool training;    /* a model trained, not only rolled out: with its VJPs */
    bool generalized; /* a model in generalized coordinates */
    bool lagrangian;  /* a CLNN's: Accel (Eq. 7) */
} Purpose;

static Purpose purpose_of(int flags) {
    Purpose p = {.flags = flags};
    p.generalized = flags & COMPILE_GENERALIZED;
    p.modelled = flags & (COMPILE_CHNN | COMPILE_CLNN | COMPILE_GENERALIZED | COMPILE_LIE);
    p.training = p.modelled && !(flags & COMPILE_ROLLOUT);
    p.lagrangian = flags & COMPILE_CLNN;
    return p;
}

/* The kernels of a simulation or of a model, lowered, differentiated and simplified:
   DPhiDot only for the nearest-point projection (a model's chaos floor, or sampling with
   `project nearest`), Accel (Eq. 7) only for a Lagrangian model. A learned model of a system
   with `state so3` bodies must be a liet2. */
static bool build_kernels(System *sys, Kernels *k, Purpose p, char *err, size_t errlen) {
    bool nearest = !strcmp(sys->data.project, "nearest");
    unsigned skip = (p.modelled || nearest ? 0 : KERNELS_SKIP_DPHIDOT) | (p.lagrangian ? 0 : KERNELS_SKIP_ACCEL);
    if (!(p.modelled ? build_model_kernels(sys, k, p.flags, skip, err, errlen)
                     : driver_build_simulation_kernels(sys, k, skip, err, errlen)))
        return false;
    if (p.modelled && !(p.flags & COMPILE_LIE) && sys->nrotation_bodies > 0) {
        snprintf(err, errlen, "a learned model of a system with `state so3` bodies is a liet2 model");
        kernels_free(k);
        return false;
    }
    return true;
}

/* What a model adds to them: the VJPs its training backpropagates through (the row classes'
   where loop_field: its field or acceleration is the loop form's), the kernels in
   generalized coordinates, and its known terms' gradient. */
static bool add_model_kernels(System *sys, Kernels *k, Purpose p, bool loop_field, const int *known, int nknown,
                              char *err, size_t errlen) {
    if ((p.training && loop_field && !kernels_add_row_vjps(k, true, err, errlen)) ||
        (p.training && !p.generalized && !loop_field &&
         !kernels_add_training(k, p.flags & (COMPILE_CHNN | COMPILE_LIE), p.lagrangian, true, err, errlen)) ||
        (p.generalized && !kernels_add_generalized(sys, k, p.training && (p.flags & COMPILE_CHNN), true, err, errlen)) ||
        (p.generalized && (p.flags & COMPILE_LIBRARY) && sys->coords.inverse &&
         !kernels_add_coord_derivatives(k, true, err, errlen)) ||
        (nknown > 0 && !kernels_add_known(sys, k, known, nknown, true, err, errlen))) {
        kernels_free(k);
        return false;
    }
    return true;
}

/* JIT what the runtime calls: VJPs only for training (in a simulation they would cost a
   third of the JIT time); the system's own field as Rhs (Field and gradV in one kernel)
   in a simulation where there is one, as Field (dV/dX an input, for the learned
   potentials) for a model */
static bool jit_kernels(Compiled *c, Purpose p, int opt_level, char *err, size_t errlen) {
    bool fused = kernels_find(&c->k, "Rhs") != NULL;
    IrFn **jitted = c->jitted;
    int nj = 0;
    for (int i = 0; i < c->k.n; i++) {
        const char *name = c->k.fns[i]->name;
        if ((p.training || !strstr(name, "VJP")) && strcmp(name, p.modelled ? "Rhs" : fused ? "Field" : "") &&
            !(c->k.loop && !strcmp(name, "Phi"))) /* (the loop form's rows give Phi) */
            jitted[nj++] = c->k.fns[i];
    }
    c->njitted = nj;
    /* a library: first the kernels a rollout runs, exactly as `physc simulate --params` has
       them JIT'd (LLVM's code, FMA contraction included, depends on which kernels are compiled
       together: the loop form's rows differed in the last bits beside their VJPs), then the
       derivatives' */
    int nfirst = nj;
    if (p.flags & COMPILE_LIBRARY) {
        IrFn *rest[MAX_KERNELS];
        int nrest = 0;
        nfirst = 0;
        for (int i = 0; i < nj; i++)
            if (strstr(jitted[i]->name, "VJP") || strstr(jitted[i]->name, "JVP")) rest[nrest++] = jitted[i];
            else jitted[nfirst++] = jitted[i];
        memcpy(jitted + nfirst, rest, sizeof(IrFn *) * (size_t)nrest);
    }
    c->jit = jit_compile(jitted, nfirst, opt_level, err, errlen);
    if (c->jit && nfirst < nj) c->jit_extra = jit_compile(jitted + nfirst, nj - nfirst, opt_level, err, errlen);
    if (!c->jit || (nfirst < nj && !c->jit_extra)) {
        if (c->jit) jit_free(c->jit);
    if (c->jit_extra) jit_free(c->jit_extra);
        c->jit = NULL;
        kernels_free(&c->k);
        return false;
    }
    c->jit_ms = jit_last_compile_ms(c->jit) + jit_last_compile_ms(c->jit_extra);
    return true;
}

/* A compiled kernel of either group, or NULL */
static PrtKernel lookup(const Compiled *c, const char *name) {
    PrtKernel f = jit_lookup(c->jit, name);
    return f ? f : jit_lookup(c->jit_extra, name);
}

/* The loop form's row classes get their compiled kernels Row0, Row1, ... (and their VJPs
   RowkVJP with_vjps), and the runtime's system the loop form. */
static bool link_row_classes(Compiled *c, bool with_vjps, char *err, size_t errlen) {
    for (int i = 0; i < c->k.loop->nclasses; i++) {
        char name[32];
        snprintf(name, sizeof name, "Row%d", i);
        PrtRowClass *rc = &c->k.loop->classes[i];
        rc->kernel = lookup(c, name);
        if (rc->kernel && with_vjps) {
            snprintf(name, sizeof name, "Row%dVJP", i);
            rc->vjp = lookup(c, name);
        }
        if (!rc->kernel || (with_vjps && !rc->vjp)) {
            snprintf(err, errlen, "internal error: kernel %s missing after JIT", name);
            compiled_close(c);
            return false;
        }
    }
    c->ps.loop = c->k.loop;
    return true;
}

/* The runtime's view of the system (PrtSystem): its sizes, its parameters (the masses,
   then the free lengths and their rows), the init block's draws, the names of the state
   and of the constraints, the generalized coordinates and the `state so3` bodies. */
static void fill_system(System *sys, Compiled *c) {
    PrtSystem *ps = &c->ps;
    bool nearest = !strcmp(sys->data.project, "nearest");
    ps->N = sys->ncoords;
    ps->NP = sys->nmomenta;
    ps->C = kernels_find(&c->k, "Phi")->noutputs;
    ps->nmass = dynamics_mass_params(sys);
    ps->nparams = ps->nmass + lower_free_lengths(sys);
    c->params = xcalloc((size_t)ps->nparams + 1, sizeof(double));
    dynamics_fill_mass_params(sys, c->params);
    ps->params = c->params;
    c->free_rows = xcalloc((size_t)(ps->nparams - ps->nmass) + 1, sizeof(int));
    lower_free_length_rows(sys, c->free_rows);
    ps->free_rows = c->free_rows;
    ps->ndraws = c->k.ndraws;
    ps->sample_metric = nearest ? PRT_METRIC_EUCLIDEAN : PRT_METRIC_MASS;
    ps->draw_kinds = c->k.draw_kinds;
    ps->names = (const char *const *)kernels_find(&c->k, "Init")->output_names;
    ps->row_names = (const char *const *)kernels_find(&c->k, "Phi")->output_names;
    ps->init_at = sys->init_at;
    ps->nq = sys->coords.present ? sys->coords.count : 0;
    ps->angular = sys->coords.angular;
    ps->qnames = sys->coords.names;
    c->so3 = xcalloc((size_t)sys->nrotation_bodies + 1, sizeof *c->so3);
    ps->nso3 = dynamics_so3_bodies(sys, c->so3);
    ps->so3 = c->so3;
    c->frames = xcalloc((size_t)sys->nbodies + 1, sizeof *c->frames);
    ps->nframes = dynamics_frame_bodies(sys, c->frames);
    ps->frames = c->frames;
}

/* Every kernel slot of PrtSystem (PRT_KERNELS) gets its compiled kernel; a required one
   missing is an internal error, unless the loop form's rows stand in for it. */
static bool link_kernel_slots(Compiled *c, char *err, size_t errlen) {
    static const struct { size_t slot; const char *name; bool required; } table[] = {
#define KERNEL_SLOT(name, required, what) {offsetof(PrtSystem, name), #name, required},
        PRT_KERNELS(KERNEL_SLOT)
#undef KERNEL_SLOT
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        PrtKernel *slot = (PrtKernel *)((char *)&c->ps + table[i].slot);
        *slot = lookup(c, table[i].name);
        /* prt_phi, prt_phidot, prt_dphi, prt_energy, prt_minv and prt_massv (sim.h) stand in */
        bool rows_give_it = c->k.loop && (!strcmp(table[i].name, "Phi") || !strcmp(table[i].name, "PhiDot") ||
                                          !strcmp(table[i].name, "DPhi") || !strcmp(table[i].name, "H") ||
                                          !strcmp(table[i].name, "MinvP") || !strcmp(table[i].name, "MassV"));
        if (!*slot && table[i].required && !rows_give_it) {
            snprintf(err, errlen, "internal error: kernel %s missing after JIT", table[i].name);
            compiled_close(c);
            return false;
        }
    }
    return true;
}

/* The pass list for one purpose: the kernels built (timed as lower_ms), JIT-compiled
   (jit_ms), and wired to the runtime's view of the system. */
static bool open_kernels(System *sys, Compiled *c, int opt_level, int purpose, const int *known, int nknown, char *err,
                         size_t errlen) {
    Purpose p = purpose_of(purpose);
    memset(c, 0, sizeof *c);
    double t0 = now_ms();
    if (!build_kernels(sys, &c->k, p, err, errlen)) return false;
    bool loop_field = c->k.loop && !kernels_find(&c->k, "Field") && !kernels_find(&c->k, "Accel");
    if (!add_model_kernels(sys, &c->k, p, loop_field, known, nknown, err, errlen)) return false;
    c->lower_ms = now_ms() - t0;
    if (!kernels_find(&c->k, "Init")) {
        snprintf(err, errlen, "system '%s' has no init block to sample initial states from", sys->name);
        kernels_free(&c->k);
        return false;
    }
    if (!jit_kernels(c, p, opt_level, err, errlen)) return false;
    if (c->k.loop && !link_row_classes(c, p.training && loop_field, err, errlen)) return false;
    fill_system(sys, c);
    return link_kernel_slots(c, err, errlen);
}

void compiled_close(Compiled *c) {
    prt_system_release(&c->ps);
    if (c->jit) jit_free(c->jit);
    if (c->jit_extra) jit_free(c->jit_extra);
    kernels_free(&c->k);
    free(c->params);
    free(c->free_rows);
    free(c->so3);
    free(c->frames);
    memset(c, 0, sizeof *c);
}
