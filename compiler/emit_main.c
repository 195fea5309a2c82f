/* emit_main.c — the C program `physc emit-c` writes: the system's kernels (emit_c.c),
   its constants as tables, and a main() calling the runtime's prt_simulate. */
#include "emit_main.h"

#include <stdlib.h>
#include <string.h>

#include "dynamics.h"
#include "emit_c.h"

/* The C name of an integrator's row (PRT_INT_<ID>). */
static const char *integrator_id(PrtIntegrator i) {
    static const char *const ids[] = {
#define INTEGRATOR_ID(id, ...) #id,
        PRT_INTEGRATORS(INTEGRATOR_ID)
#undef INTEGRATOR_ID
    };
    return ids[i];
}

static void c_string(FILE *out, const char *s) {
    fputc('"', out);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') fputc('\\', out);
        fputc(*s, out);
    }
    fputc('"', out);
}

/* The trained model's tables: its parameters (exact: %.17g round-trips a double) and its MLP. */
static void emit_model_tables(FILE *out, const EmitModel *md) {
    fprintf(out, "/* model %s: its trained parameters (the networks' weights and biases layer by layer%s) */\n",
            md->name, md->cfg.learn_mass ? ", then the log masses and moments" : "");
    fprintf(out, "static const double theta[%ld] = {\n", md->nparams);
    for (long i = 0; i < md->nparams; i++)
        fprintf(out, "%s%.17g%s", i % 6 ? " " : "    ", md->theta[i], i + 1 == md->nparams ? "\n" : i % 6 == 5 ? ",\n" : ",");
    fprintf(out, "};\n");
    static const char *const acts[] = {"PRT_ACT_TANH", "PRT_ACT_SOFTPLUS", "PRT_ACT_SILU"};
    fprintf(out, "static const PrtMlp nets[%d] = {\n", md->cfg.nnets);
    for (int i = 0; i < md->cfg.nnets; i++) {
        const PrtMlp *m = &md->cfg.net[i];
        fprintf(out, "    {.nlayers = %d, .act = %s, .size = {", m->nlayers, acts[m->act]);
        for (int l = 0; l <= m->nlayers; l++) fprintf(out, "%s%d", l ? ", " : "", m->size[l]);
        fprintf(out, "}%s},\n", m->f32 ? ", .f32 = true" : ""); /* (f32: a dtlnn's passes in float, as it predicted) */
    }
    fprintf(out, "};\n\n");
}

static void emit_ints(FILE *out, const char *name, const int *v, long n) {
    fprintf(out, "static int %s[%ld] = {", name, n + 1);
    for (long i = 0; i < n; i++) fprintf(out, "%s%d,", i % 16 ? " " : "\n    ", v[i]);
    fprintf(out, "%s0};\n", n % 16 ? " " : "\n    ");
}

/* Whether fns holds a kernel of that name */
static bool has_kernel(IrFn *const *fns, int nfns, const char *name) {
    for (int i = 0; i < nfns; i++)
        if (!strcmp(fns[i]->name, name)) return true;
    return false;
}

/* The loop form's tables (runtime/system/loop_field.h), as static arrays, and `loop` holding them:
   the same numbers the JIT's runtime loops over; each row class's VJP where fns holds it (a
   library's derivatives). */
static void emit_loop_form(FILE *out, const PrtLoopField *f, IrFn *const *fns, int nfns) {
    fprintf(out, "/* the vector field in loop form (runtime/system/loop_field.h): %d row classes, %d rows */\n", f->nclasses, f->C);
    char name[64];
    for (int c = 0; c < f->nclasses; c++) {
        const PrtRowClass *rc = &f->classes[c];
        snprintf(name, sizeof name, "class%d_rows", c);
        emit_ints(out, name, rc->rows, rc->nrows);
        snprintf(name, sizeof name, "class%d_coords", c);
        emit_ints(out, name, rc->coords, (long)rc->nrows * rc->k);
        snprintf(name, sizeof name, "class%d_lengths", c);
        emit_ints(out, name, rc->lengths, (long)rc->nrows * rc->q);
        long nconsts = (long)rc->nrows * rc->nc;
        fprintf(out, "static double class%d_consts[%ld] = {", c, nconsts + 1);
        for (long i = 0; i < nconsts; i++) fprintf(out, "%s%.17g,", i % 6 ? " " : "\n    ", rc->consts[i]);
        fprintf(out, "%s0};\n", nconsts % 6 ? " " : "\n    ");
    }
    fprintf(out, "static PrtRowClass loop_classes[%d] = {\n", f->nclasses + 1);
    for (int c = 0; c < f->nclasses; c++) {
        const PrtRowClass *rc = &f->classes[c];
        char vjp[32];
        snprintf(vjp, sizeof vjp, "Row%dVJP", c);
        fprintf(out, "    {Row%d, %d, %d, %d, class%d_rows, class%d_coords, class%d_lengths, %d, class%d_consts, %s},\n", c,
                rc->k, rc->q, rc->nrows, c, c, c, rc->nc, c, has_kernel(fns, nfns, vjp) ? vjp : "NULL");
    }
    fprintf(out, "};\n");
    long C = f->C, K = f->row_off[C], nbody_rows = f->row_body_start[C], nnz = f->l_row_start[C];
    long nentries = f->nb_start[C], npairs = f->ov_start[nentries];
    emit_ints(out, "loop_row_off", f->row_off, C + 1);
    emit_ints(out, "loop_row_coord", f->row_coord, K);
    emit_ints(out, "loop_row_body_start", f->row_body_start, C + 1);
    emit_ints(out, "loop_row_body", f->row_body, nbody_rows);
    emit_ints(out, "loop_row_body_comps", f->row_body_comps, nbody_rows);
    emit_ints(out, "loop_ov_start", f->ov_start, nentries + 1);
    emit_ints(out, "loop_ov", f->ov, 2 * npairs);
    emit_ints(out, "loop_perm", f->perm, C);
    emit_ints(out, "loop_l_row_start", f->l_row_start, C + 1);
    emit_ints(out, "loop_l_row", f->l_row, nnz);
    emit_ints(out, "loop_l_col_start", f->l_col_start, C + 1);
    emit_ints(out, "loop_l_col", f->l_col, nnz);
    emit_ints(out, "loop_l_col_at", f->l_col_at, nnz);
    emit_ints(out, "loop_g_diag", f->g_diag, C);
    emit_ints(out, "loop_g_row", f->g_row, nnz);
    fprintf(out, "static PrtLoopBody loop_bodies[%d] = {", f->nbodies + 1);
    for (int b = 0; b < f->nbodies; b++)
        fprintf(out, "%s{%d, %d, %d},", b % 8 ? " " : "\n    ", f->bodies[b].first, f->bodies[b].npoints, f->bodies[b].mass);
    fprintf(out, "\n};\n");
    fprintf(out,
            "static PrtLoopField loop = {.C = %d, .N = %d, .dim = %d, .nmass = %d, .nclasses = %d, .classes = loop_classes,\n"
            "    .row_off = loop_row_off, .row_coord = loop_row_coord, .row_body_start = loop_row_body_start,\n"
            "    .row_body = loop_row_body, .row_body_comps = loop_row_body_comps, .ov_start = loop_ov_start, .ov = loop_ov,\n"
            "    .perm = loop_perm, .l_row_start = loop_l_row_start, .l_row = loop_l_row, .l_col_start = loop_l_col_start,\n"
            "    .l_col = loop_l_col, .l_col_at = loop_l_col_at, .g_diag = loop_g_diag, .g_row = loop_g_row,\n"
            "    .nbodies = %d, .bodies = loop_bodies};\n",
            f->C, f->N, f->dim, f->nmass, f->nclasses, f->nbodies);
}

/* The kernels the program holds, in fns; their count. A model's program needs no VJP
   kernels: it only rolls the model out; in loop form the rows give Phi. */
static int emitted_kernels(const Kernels *k, const EmitModel *model, IrFn **fns) {
    int nfns = 0;
    for (int i = 0; i < k->n; i++)
        if ((!model || !strstr(k->fns[i]->name, "VJP")) && !(k->loop && !strcmp(k->fns[i]->name, "Phi")))
            fns[nfns++] = k->fns[i];
    return nfns;
}

/* After the kernels: the title of the rest and the runtime's headers it includes. */
static void emit_headers(FILE *out, const System *sys) {
    fprintf(out, "\n/* ---- the system %s, and a main() that simulates it (physc emit-c) ---- */\n\n", sys->name);
    fprintf(out, "#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n\n#include \"core/alloc.h\"\n#include \"core/blas_cpu.h\"\n#include \"core/cli_args.h\"\n#include \"simulate/sim_args.h\"\n#include \"simulate/simulate.h\"\n\n");
}

/* The system's parameters (masses and second moments, then the free link lengths, which are
   set from the initial state), the constraint rows of those lengths, and the kinds of the
   init block's random draws. */
static void emit_params(FILE *out, const Kernels *k, const double *params, int nparams, int nmass, const int *free_rows) {
    fprintf(out, "/* masses and second moments per body (Eq. 9), then free link lengths (set from the initial state) */\n");
    fprintf(out, "static double params[%d] = {", nparams + 1);
    for (int i = 0; i < nparams; i++) fprintf(out, "%s%.17g", i ? ", " : "", i < nmass ? params[i] : 0.0);
    fprintf(out, "%s0};\n", nparams ? ", " : "");
    fprintf(out, "static const int free_rows[%d] = {", nparams - nmass + 1);
    for (int i = 0; i < nparams - nmass; i++) fprintf(out, "%d, ", free_rows[i]);
    fprintf(out, "0};\n");
    fprintf(out, "static const int draw_kinds[%d] = {", k->ndraws + 1);
    for (int i = 0; i < k->ndraws; i++) fprintf(out, "%d, ", k->draw_kinds[i]);
    fprintf(out, "0};\n");
}

/* The names of the state's components (Init's outputs) and of the constraints, for the
   runtime's messages ("link 3 (line 18)"). */
static void emit_names(FILE *out, const System *sys, const IrFn *Init, const IrFn *Phi) {
    int N = sys->ncoords, NP = sys->nmomenta;
    fprintf(out, "static const char *const names[%d] = {", N + NP + 1);
    for (int i = 0; i < N + NP; i++) {
        c_string(out, Init->output_names[i] ? Init->output_names[i] : "x");
        fputs(", ", out);
    }
    fprintf(out, "NULL};\n");
    fprintf(out, "static const char *const row_names[%d] = {", Phi->noutputs + 1);
    for (int r = 0; r < Phi->noutputs; r++) {
        c_string(out, Phi->output_names && Phi->output_names[r] ? Phi->output_names[r] : "constraint");
        fputs(", ", out);
    }
    fprintf(out, "NULL};\n");
}

/* The generalized coordinates, if the system has them: which are angles, and their names.
   Their count. */
static int emit_coord_tables(FILE *out, const System *sys) {
    int nq = sys->coords.present ? sys->coords.count : 0;
    if (nq) {
        fprintf(out, "static const unsigned char angular[%d] = {", nq);
        for (int i = 0; i < nq; i++) fprintf(out, "%s%d", i ? ", " : "", sys->coords.angular ? sys->coords.angular[i] : 0);
        fprintf(out, "};\nstatic const char *const qnames[%d] = {", nq + 1);
        for (int i = 0; i < nq; i++) {
            c_string(out, sys->coords.names[i]);
            fputs(", ", out);
        }
        fprintf(out, "NULL};\n");
    }
    return nq;
}

/* Where each `state so3` body's numbers are in the state (sim.h), if there are such bodies.
   Their count. */
static int emit_so3_table(FILE *out, const System *sys) {
    PrtSo3Body *so3 = xcalloc((size_t)sys->nrotation_bodies + 1, sizeof *so3);
    int nso3 = dynamics_so3_bodies(sys, so3);
    if (nso3) {
        fprintf(out, "static const PrtSo3Body so3[%d] = {", nso3);
        for (int i = 0; i < nso3; i++) fprintf(out, "%s{%d, %d, %d}", i ? ", " : "", so3[i].x, so3[i].p, so3[i].mass);
        fprintf(out, "};\n");
    }
    free(so3);
    return nso3;
}

/* The bodies with an orientation (sim.h), if there are such bodies: the orientation error's.
   Their count. */
static int emit_frame_table(FILE *out, const System *sys) {
    PrtFrameBody *frames = xcalloc((size_t)sys->nbodies + 1, sizeof *frames);
    int nframes = dynamics_frame_bodies(sys, frames);
    if (nframes) {
        fprintf(out, "static const PrtFrameBody frames[%d] = {", nframes);
        for (int i = 0; i < nframes; i++)
            fprintf(out, "%s{%d, %d, %d, %s}", i ? ", " : "", frames[i].x, frames[i].dim, frames[i].naxes,
                    frames[i].so3 ? "true" : "false");
        fprintf(out, "};\n");
    }
    free(frames);
    return nframes;
}

/* main()'s start: OpenBLAS's kernels and stdio's order as physc has them. */
static void emit_main_start(FILE *out) {
    fprintf(out, "int main(int argc, char **argv) {\n");
    fprintf(out, "    prt_blas_select_kernels(argv); /* OpenBLAS's kernels as physc picks them: the same bits */\n"
                 "    prt_stdio_order();\n");
}

/* The system `s` (its sizes and the tables above), up to its kernels. */
static void emit_system_struct(FILE *out, const System *sys, const Kernels *k, int nparams, int nmass, int nq, int nso3,
                               int nframes) {
    const IrFn *Phi = kernels_find(k, "Phi");
    int N = sys->ncoords, NP = sys->nmomenta;
    fprintf(out, "    PrtSystem s = {.N = %d, .NP = %d, .C = %d, .nmass = %d, .nparams = %d, .params = params,\n", N, NP,
            Phi->noutputs, nmass, nparams);
    fprintf(out, "                   .ndraws = %d, .draw_kinds = draw_kinds, .free_rows = free_rows, .names = names,\n"
                 "                   .row_names = row_names,\n",
            k->ndraws);
    /* `project nearest` samples with DPhiDot; a model's chaos floor projects with it too */
    bool nearest = !strcmp(sys->data.project, "nearest");
    if (nq) fprintf(out, "                   .nq = %d, .angular = angular, .qnames = qnames,\n", nq);
    if (nso3) fprintf(out, "                   .nso3 = %d, .so3 = so3,\n", nso3);
    if (nframes) fprintf(out, "                   .nframes = %d, .frames = frames,\n", nframes);
    if (k->loop) fprintf(out, "                   .loop = &loop,\n");
    fprintf(out, "                   .sample_metric = %s, .init_at = ", nearest ? "PRT_METRIC_EUCLIDEAN" : "PRT_METRIC_MASS");
    c_string(out, sys->init_at);
    fprintf(out, ",\n                  ");
}

/* The system's kernels: every kernel of the table this program holds (DPhiDot only where
   it is used, as the JIT: `project nearest` samples with it, a model's chaos floor projects
   with it). */
static void emit_kernel_fields(FILE *out, const System *sys, IrFn *const *fns, int nfns, const EmitModel *model) {
    bool nearest = !strcmp(sys->data.project, "nearest");
    static const char *const kernel_names[] = {
#define KERNEL_NAME(name, required, what) #name,
        PRT_KERNELS(KERNEL_NAME)
#undef KERNEL_NAME
    };
    for (size_t i = 0; i < sizeof kernel_names / sizeof kernel_names[0]; i++) {
        const char *name = kernel_names[i];
        bool emitted = false;
        for (int j = 0; j < nfns && !emitted; j++) emitted = !strcmp(fns[j]->name, name);
        if (emitted && (strcmp(name, "DPhiDot") || nearest || model)) fprintf(out, " .%s = %s,", name, name);
    }
    fprintf(out, "};\n");
}

/* main(): the simulation's options (the data block's), read from the command line as
   `physc simulate` reads them. */
static void emit_sim_options(FILE *out, const System *sys) {
    fprintf(out, "    PrtSimOptions o = {.n = 4, .steps = %d, .seed = %d, .dt = %.17g, .rtol = %.17g, .atol = %.17g,\n",
            sys->data.steps, sys->data.seed, sys->data.dt, sys->data.rtol, sys->data.atol);
    fprintf(out, "                       .integrator = ");
    c_string(out, sys->data.solver);
    fprintf(out, ", .substeps = %d, .who = argv[0]};\n", sys->data.substeps > 1 ? sys->data.substeps : 1);
    fprintf(out, "    prt_program = argv[0]; /* the runtime's messages name this program, not physc */\n");
    fprintf(out, "    int arg_rc = prt_sim_args(argc, argv, &o); /* physc simulate's options, read as physc reads them */\n"
                 "    if (arg_rc >= 0) return arg_rc;\n");
    fprintf(out, "    printf(\"system %s (emitted C)\\n\");\n", sys->name);
}

/* main(): the model's configuration `cfg` (its family, networks and steps, then the settings
   its family writes itself: liet2's); nothing without a model. */
static void emit_model_config(FILE *out, const EmitModel *model) {
    if (model) {
        fprintf(out,
                "    PrtModelConfig cfg = prt_model_config(prt_model_family(\"%s\"), &nets[0], %s);\n"
                "    cfg.nnets = %d, cfg.l2 = %s, cfg.integrator = PRT_INT_%s, cfg.predict = PRT_INT_%s, cfg.unit_mass = %s,\n"
                "    cfg.substeps = %d;\n"
                "    memcpy(cfg.net, nets, sizeof nets);\n",
                model->cfg.family->name, model->cfg.learn_mass ? "true" : "false", model->cfg.nnets,
                model->cfg.l2 ? "true" : "false", integrator_id(model->cfg.integrator), integrator_id(model->cfg.predict),
                model->cfg.unit_mass ? "true" : "false", model->cfg.substeps);
        if (model->cfg.family->own_emit) model->cfg.family->own_emit(&model->cfg, out); /* its own settings (liet2's) */
    }
}

/* main(): the model `m` opened with cfg (a refusal ends the program), and what it runs: the
   parameters' file and the BLAS; nothing without a model. */
static void emit_model_open(FILE *out, const EmitModel *model) {
    if (model) {
        fprintf(out,
                "    PrtModel m;\n"
                "    char err[256];\n"
                "    if (prt_model_open(&m, &s, &cfg, err, sizeof err) != 0) {\n"
                "        fprintf(stderr, \"%%s: %%s\\n\", argv[0], err);\n"
                "        return 1;\n"
                "    }\n"
                "    printf(\"model %%s with the parameters of %%s\\n\", ");
        c_string(out, model->name);
        fputs(", ", out);
        c_string(out, model->params_path);
        fputs(");\n", out);
        fprintf(out, "    char blas[256];\n    printf(\"BLAS: %%s\\n\", prt_blas_describe(blas, sizeof blas));\n");
    }
}

/* main()'s end: the simulation (of the model, with the parameters theta, if there is one),
   then what it holds released; its status is the program's. */
static void emit_main_end(FILE *out, const EmitModel *model) {
    fprintf(out,
            "    PrtSimResult r;\n"
            "    int rc = %s;\n"
            "    free(r.traj);\n",
            model ? "prt_simulate_model(&s, &o, &m, theta, stdout, &r)" : "prt_simulate(&s, &o, stdout, &r)");
    if (model) fprintf(out, "    prt_model_close(&m);\n");
    fprintf(out,
            "    prt_system_release(&s);\n"
            "    return rc;\n"
            "}\n");
}

/* The tables after the kernels, which a program and a library alike hold: the model's (if
   any), the system's parameters, names, generalized coordinates, so3 bodies, frames and loop
   form; the counts the system's struct needs into *nq, *nso3, *nframes. */
static void emit_tables(FILE *out, const System *sys, const Kernels *k, IrFn *const *fns, int nfns,
                        const double *params, int nparams, int nmass, const int *free_rows, const EmitModel *model,
                        int *nq, int *nso3, int *nframes) {
    if (model) emit_model_tables(out, model);
    emit_params(out, k, params, nparams, nmass, free_rows);
    emit_names(out, sys, kernels_find(k, "Init"), kernels_find(k, "Phi"));
    *nq = emit_coord_tables(out, sys);
    *nso3 = emit_so3_table(out, sys), *nframes = emit_frame_table(out, sys);
    if (k->loop) emit_loop_form(out, k->loop, fns, nfns);
    fprintf(out, "\n");
}

/* The whole program, in the order of its parts: the kernels, the headers, the model's
   tables, the system's tables, then main(). */
void emitc_program(FILE *out, const System *sys, const Kernels *k, const double *params, int nparams, int nmass,
                   const int *free_rows, const EmitModel *model) {
    IrFn *fns[MAX_KERNELS];
    int nfns = emitted_kernels(k, model, fns);
    emitc_kernels(out, fns, nfns);
    emit_headers(out, sys);
    int nq, nso3, nframes;
    emit_tables(out, sys, k, fns, nfns, params, nparams, nmass, free_rows, model, &nq, &nso3, &nframes);
    emit_main_start(out);
    emit_system_struct(out, sys, k, nparams, nmass, nq, nso3, nframes);
    emit_kernel_fields(out, sys, fns, nfns, model);
    emit_sim_options(out, sys);
    emit_model_config(out, model);
    emit_model_open(out, model);
    emit_main_end(out, model);
}

/* ---- `physc emit-c --shared`: the tables of a library whose kernels are the JIT's objects ---- */

/* The kernels, declared: their code is in the objects linked beside this file */
static void emit_kernel_declarations(FILE *out, IrFn *const *fns, int nfns) {
    fprintf(out, "/* the kernels (docs/runtime-abi.md): the JIT's compiled objects, linked beside this file */\n");
    for (int i = 0; i < nfns; i++)
        fprintf(out, "void %s(long n, const double *in, const double *params, double *out);\n", fns[i]->name);
}

/* The constructor that registers the system and the model with the ABI (runtime/abi/) */
static void emit_registration(FILE *out, const System *sys, const Kernels *k, IrFn *const *fns, int nfns, int nparams,
                              int nmass, int nq, int nso3, int nframes, const EmitModel *model) {
    fprintf(out, "static PrtEmittedModel emitted;\n\n"
                 "__attribute__((constructor)) static void register_model(void) {\n");
    emit_system_struct(out, sys, k, nparams, nmass, nq, nso3, nframes);
    emit_kernel_fields(out, sys, fns, nfns, model);
    emit_model_config(out, model);
    fprintf(out, "    emitted = (PrtEmittedModel){.system = ");
    c_string(out, sys->name);
    fprintf(out, ", .model = ");
    c_string(out, model->name);
    fprintf(out, ", .sys = s, .cfg = cfg, .theta = theta, .nparams = %ld,\n"
                 "        .dt = %.17g, .rtol = %.17g, .atol = %.17g, .steps = %d, .seed = %d, .substeps = %d, .solver = ",
            model->nparams, sys->data.dt, sys->data.rtol, sys->data.atol, sys->data.steps, sys->data.seed,
            sys->data.substeps > 1 ? sys->data.substeps : 1);
    c_string(out, sys->data.solver);
    fprintf(out, "};\n    prt_abi_register(&emitted);\n}\n");
}

void emitc_shared_tables(FILE *out, const System *sys, const Kernels *k, IrFn *const *fns, int nfns,
                         const double *params, int nparams, int nmass, const int *free_rows, const EmitModel *model) {
    fprintf(out, "/* physc emit-c --shared: model %s of system %s, trained (%s); the tables of the library */\n\n",
            model->name, sys->name, model->params_path);
    fprintf(out, "#include <stdbool.h>\n#include <string.h>\n\n#include \"abi/emitted.h\"\n\n");
    emit_kernel_declarations(out, fns, nfns);
    fprintf(out, "\n");
    int nq, nso3, nframes;
    emit_tables(out, sys, k, fns, nfns, params, nparams, nmass, free_rows, model, &nq, &nso3, &nframes);
    emit_registration(out, sys, k, fns, nfns, nparams, nmass, nq, nso3, nframes, model);
}
