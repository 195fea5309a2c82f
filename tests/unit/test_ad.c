/* test_ad.c — every derivative kernel of every example against central finite
   differences (f64), the forward and reverse modes against each other, and the
   simplifier against the unsimplified kernels. */
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ad.h"
#include "check.h"
#include "fd_check.h"
#include "kernels.h"
#include "opt.h"
#include "math/rng.h"
#include "sema.h"

static long vjp_checked; /* derivatives of the equations of motion compared */

static double close_enough(double got, double want, double scale) { return fabs(got - want) <= 1e-6 * (scale + fabs(want)); }

/* a kernel's outputs as a function of its inputs, for fd_check.h */
typedef struct KernelAt {
    const IrFn *f;
    const double *params;
} KernelAt;

static void kernel_at(void *ctx, const double *x, double *y) {
    const KernelAt *k = ctx;
    ir_eval(k->f, x, k->params, y);
}

/* ... and of its inputs then its parameters (the ni inputs first) */
typedef struct KernelIn {
    const IrFn *f;
    int ni;
} KernelIn;

static void kernel_in(void *ctx, const double *x, double *y) {
    const KernelIn *k = ctx;
    ir_eval(k->f, x, x + k->ni, y);
}

/* steps of 1e-6 of each coordinate's size; errors relative above 1, absolute below */
static const FdOpts kernel_fd = {.h = 1e-6, .rel = true, .scale = 1};

static void check_example(const char *path) {
    Arena arena = {0};
    Diags d;
    diag_init(&d, stdout);
    SemaOptions opt = {.stdlib_dir = "stdlib", .require_system = true};
    System *sys = sema_check_file(&arena, &d, path, &opt);
    CHECK(sys != NULL, "%s does not check", path);
    if (!sys) goto out;
    Kernels raw, k;
    char err[256];
    if (!kernels_build(sys, &k, true, err, sizeof err)) {
        /* only Lie T2 bodies are not lowered yet */
        CHECK(sys->nrotation_bodies > 0, "%s: %s", path, err);
        goto out;
    }
    CHECK(kernels_build(sys, &raw, false, err, sizeof err), "%s unoptimized: %s", path, err);
    int n = sys->ncoords;
    IrFn *V = kernels_find(&k, "V"), *gradV = kernels_find(&k, "gradV"), *Phi = kernels_find(&k, "Phi"),
         *DPhi = kernels_find(&k, "DPhi"), *PhiDot = kernels_find(&k, "PhiDot"), *DPhiDot = kernels_find(&k, "DPhiDot");
    int rows = Phi->noutputs;
    IrFn *vjp_raw = ad_vjp(Phi, "vjp"), *vjp = opt_simplify(vjp_raw);
    ir_free(vjp_raw);
    PrtRng rng;
    prt_rng_seed(&rng, 1234);
    int nparams = 0; /* the largest parameter vector of any kernel (Field: masses, then lengths) */
    for (int kk = 0; kk < k.n; kk++) nparams = k.fns[kk]->nparams > nparams ? k.fns[kk]->nparams : nparams;
    int nin = 3 * n + rows; /* at least Field's and Accel's inputs (3 N) */
    for (int kk = 0; kk < k.n; kk++) nin = k.fns[kk]->ninputs > nin ? k.fns[kk]->ninputs : nin;
    double *x = malloc(sizeof(double) * (size_t)(nin + 1)), *params = malloc(sizeof(double) * (size_t)(nparams + 1));
    int nout = rows * n + 2 * n + 1;
    for (int kk = 0; kk < k.n; kk++) nout = k.fns[kk]->noutputs + 1 > nout ? k.fns[kk]->noutputs + 1 : nout;
    double *out = malloc(sizeof(double) * (size_t)nout), *out2 = malloc(sizeof(double) * (size_t)nout);
    for (int trial = 0; trial < 3; trial++) {
        for (int i = 0; i < nin; i++) x[i] = prt_rng_normal(&rng);
        for (int i = 0; i < nparams; i++) params[i] = 0.5 + prt_rng_uniform(&rng);
        /* gradV against differences of V, DPhi against differences of Phi */
        ir_eval(gradV, x, params, out);
        FdWorst w = {0};
        fd_grad(kernel_at, &(KernelAt){V, params}, x, n, out, &kernel_fd, &w);
        CHECK(w.err < 1e-6, "%s: gradV: " FD_FMT, path, FD_ARGS(w));
        ir_eval(DPhi, x, params, out);
        w = (FdWorst){0};
        fd_jacobian(kernel_at, &(KernelAt){Phi, params}, x, n, rows, out, &kernel_fd, &w);
        CHECK(w.err < 1e-6, "%s: DPhi (output: the row): " FD_FMT, path, FD_ARGS(w));
        /* the sparse rows of ad_sparse_gradients_in (rank.c's check) against DPhi */
        {
            IrFn *g = ir_new("sparse", n, Phi->nparams, 0);
            int *gin = malloc(sizeof(int) * (size_t)(n + 1)), *gpar = malloc(sizeof(int) * (size_t)(Phi->nparams + 1)),
                *gout = malloc(sizeof(int) * (size_t)(rows + 1)), *start = malloc(sizeof(int) * (size_t)(rows + 2)),
                *cols, *grads;
            for (int i = 0; i < n; i++) gin[i] = ir_input(g, i);
            for (int i = 0; i < Phi->nparams; i++) gpar[i] = ir_param(g, i);
            int lo = g->ninsts;
            ad_inline(g, Phi, gin, gpar, gout);
            ad_sparse_gradients_in(g, lo, g->ninsts, gout, rows, gin, n, start, &cols, &grads);
            free(g->outputs), free(g->output_names);
            g->noutputs = start[rows], g->outputs = grads, g->output_names = calloc((size_t)start[rows] + 1, sizeof(char *));
            double *sv = malloc(sizeof(double) * (size_t)(start[rows] + 1)), *dense = calloc((size_t)(rows * n + 1), sizeof(double));
            ir_eval(g, x, params, sv);
            for (int r = 0; r < rows; r++)
                for (int e = start[r]; e < start[r + 1]; e++) {
                    CHECK(e == start[r] || cols[e] > cols[e - 1], "%s: sparse row %d's columns not ascending", path, r);
                    dense[r * n + cols[e]] = sv[e];
                }
            for (int i = 0; i < rows * n; i++)
                CHECK(fabs(dense[i] - out[i]) <= 1e-13 * (1 + fabs(out[i])), "%s: sparse dPhi%d/dx%d = %.17g, DPhi %.17g", path, i / n, i % n, dense[i], out[i]);
            free(gin), free(gpar), free(gout), free(start), free(cols), free(sv), free(dense);
            ir_free(g);
        }
        /* forward mode (PhiDot = DPhi v) and reverse mode (w^T DPhi) against the Jacobian */
        ir_eval(PhiDot, x, params, out2);
        for (int r = 0; r < rows; r++) {
            double want = 0;
            for (int i = 0; i < n; i++) want += out[r * n + i] * x[n + i];
            CHECK(close_enough(out2[r], want, 1), "%s: PhiDot%d = %.12g, DPhi v = %.12g", path, r, out2[r], want);
        }
        /* DPhiDot (the nearest-point projection's Jacobian) against differences of PhiDot in (X, Xdot) */
        ir_eval(DPhiDot, x, params, out2);
        w = (FdWorst){0};
        fd_jacobian(kernel_at, &(KernelAt){PhiDot, params}, x, 2 * n, rows, out2, &kernel_fd, &w);
        CHECK(w.err < 1e-6, "%s: DPhiDot (output: the row): " FD_FMT, path, FD_ARGS(w));
        double *xw = malloc(sizeof(double) * (size_t)(n + rows));
        memcpy(xw, x, sizeof(double) * (size_t)n);
        memcpy(xw + n, x + 2 * n, sizeof(double) * (size_t)rows);
        ir_eval(vjp, xw, params, out2);
        for (int i = 0; i < n; i++) {
            double want = 0;
            for (int r = 0; r < rows; r++) want += x[2 * n + r] * out[r * n + i];
            CHECK(close_enough(out2[i], want, 1), "%s: (w^T DPhi)%d = %.12g, want %.12g", path, i, out2[i], want);
        }
        free(xw);
        /* the VJPs of the equations of motion, with respect to the state and to the masses and
           lengths, against differences: w . d f / d input and w . d f / d param */
        const char *dyn[] = {"Field", "Accel"};
        for (int di = 0; di < 2; di++) {
            IrFn *F = kernels_find(&k, dyn[di]);
            if (!F) continue; /* Accel: not for systems with SO(3) bodies */
            IrFn *raw_vjp = ad_vjp(F, "vjp"), *fv = opt_simplify(raw_vjp);
            ir_free(raw_vjp);
            int ni = F->ninputs, no = F->noutputs, npar = F->nparams;
            double *in = malloc(sizeof(double) * (size_t)(ni + no)), *res = malloc(sizeof(double) * (size_t)(ni + npar)),
                   *z = malloc(sizeof(double) * (size_t)(ni + npar + 1));
            for (int i = 0; i < ni + no; i++) in[i] = x[i % nin];
            for (int i = 0; i < no; i++) in[ni + i] = prt_rng_normal(&rng);
            ir_eval(fv, in, params, res);
            memcpy(z, in, sizeof(double) * (size_t)ni); /* the inputs, then the parameters */
            memcpy(z + ni, params, sizeof(double) * (size_t)npar);
            FdWorst wv = {0};
            fd_vjp(kernel_in, &(KernelIn){F, ni}, z, ni + npar, no, in + ni, res, &kernel_fd, &wv);
            vjp_checked += wv.count;
            CHECK(wv.err < 1e-6, "%s: VJP of %s (input: its inputs, then its parameters from %d): " FD_FMT, path,
                  dyn[di], ni, FD_ARGS(wv));
            free(in), free(res), free(z);
            ir_free(fv);
        }
        /* the simplifier changes no value */
        for (int kk = 0; kk < k.n; kk++) {
            IrFn *a = k.fns[kk], *b = raw.fns[kk];
            ir_eval(a, x, params, out);
            ir_eval(b, x, params, out2);
            for (int o = 0; o < a->noutputs; o++)
                CHECK(fabs(out[o] - out2[o]) <= 1e-12 * (1 + fabs(out2[o])), "%s: %s output %d: %.17g simplified, %.17g not",
                      path, a->name, o, out[o], out2[o]);
        }
    }
    /* the simplifier keeps DPhi as sparse as the system: each link row touches 2d coordinates */
    printf("%s: %d coordinates, %d constraint rows; DPhi %d instructions (%d before simplifying)\n", path, n, rows,
           DPhi->ninsts, raw.fns[3]->ninsts);
    CHECK(DPhi->ninsts < raw.fns[3]->ninsts, "%s: the simplifier did not shrink DPhi", path);
    free(x), free(params), free(out), free(out2);
    ir_free(vjp);
    kernels_free(&k);
    kernels_free(&raw);
out:
    arena_free(&arena);
    diag_free(&d);
}

int main(void) {
    DIR *dir = opendir("examples");
    CHECK(dir != NULL, "run from the repository root");
    if (!dir) return 1;
    struct dirent *e;
    int count = 0;
    while ((e = readdir(dir))) {
        size_t len = strlen(e->d_name);
        if (len < 6 || strcmp(e->d_name + len - 5, ".phys")) continue;
        char path[512];
        snprintf(path, sizeof path, "examples/%s", e->d_name);
        check_example(path);
        count++;
    }
    closedir(dir);
    CHECK(count >= 13, "found %d examples", count);
    check_example("tests/physics/hinged-chain.phys"); /* axis rows of each kind: world, body frame, frame + normal */
    printf("VJPs of Field and Accel: %ld derivatives (state, masses, lengths) against differences\n", vjp_checked);
    CHECK(vjp_checked > 1000, "only %ld VJP derivatives checked", vjp_checked);
    printf("%s: %s\n", __FILE__, failures ? "FAILED" : "ok");
    return failures != 0;
}
