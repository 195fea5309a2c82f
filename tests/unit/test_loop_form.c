/* test_loop_form.c — the loop-form vector field (runtime/system/loop_field.c over the tables of
   compiler/loop_form.c) against the unrolled kernels of the same system: the right-hand
   side on and off the constraint manifold to 1e-12, DPhi, the projection onto the
   constraints and RATTLE, on every example with constraints and on generated chains (2-D
   points; a free tether, links of different lengths) and a 3-D tree of rigid bodies. And
   the loop form's size does not grow with the system: a chain of 30 links and one of 100
   have the same row classes. Each row kernel's derivatives against central differences. A
   CHNN's and a CLNN's training in loop form: the loop field's and Eq. 7's reverse passes
   against FieldVJP and AccelVJP, and the field's against central differences. */
#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "check.h"
#include "fd_check.h"
#include "loaded.h"
#include "math/rng.h"
#include "system/sim.h"
#include "integrators/symplectic.h"

enum { NSTATES = 11 }; /* not a multiple of the lanes: the last block is partial */

static void write_chain(const char *path, int links, bool varied) {
    FILE *f = fopen(path, "w");
    fprintf(f, "import \"gravity\"\nsystem chain%d {\n  dim 2\n  body bob[i in 1..%d] : point { mass 1 + 0.1 * i }\n", links,
            links);
    /* varied: the tether's length free (taken from the initial state), every link of its own length */
    fprintf(f, "  tether bob[1] to origin%s\n", varied ? "" : " length 1");
    fprintf(f, "  for i in 2..%d { link bob[i-1] to bob[i] length %s }\n", links, varied ? "1 + 0.01 * i" : "1");
    fprintf(f, "  potential gravity = sum(i in 1..%d, uniform_gravity(1 + 0.1 * i, 9.81, bob[i].pos))\n", links);
    fprintf(f, "  init { for i in 1..%d { bob[i].pos = [i + 0.1 * normal(0, 1), 0.3 * normal(0, 1)]; "
               "bob[i].vel = normal(0, 1, dim) } }\n}\n", links);
    fclose(f);
}

static void write_tree(const char *path) {
    FILE *f = fopen(path, "w");
    fprintf(f, "import \"gravity\"\nsystem tree7 {\n  dim 3\n  body seg[i in 1..7] : rigid3 {\n    mass 1 + 0.1 * i\n"
               "    moments [0.1, 0.12, 0.02]\n    point top = [0, 0, 0.5]\n    point bottom = [0, 0, -0.5]\n  }\n"
               "  joint seg[1].top to origin\n"
               "  for i in 1..3 { joint seg[2 * i].top to seg[i].bottom; joint seg[2 * i + 1].top to seg[i].bottom }\n"
               "  potential gravity = sum(i in 1..7, uniform_gravity(1, 9.81, seg[i].pos))\n"
               "  init { for d in 0..2 { for k in 2^d..2^(d + 1) - 1 { seg[k].pos = [0, 0, -(d + 0.5)]; "
               "seg[k].vel = normal(0, 1, dim) } } }\n}\n");
    fclose(f);
}

static double max_abs(const double *a, long n) {
    double m = 0;
    for (long i = 0; i < n; i++) m = fmax(m, fabs(a[i]));
    return m;
}

/* The largest |a - b| relative to b's scale */
static double rel_diff(const double *a, const double *b, long n) {
    double m = 0, scale = 1 + max_abs(b, n);
    for (long i = 0; i < n; i++) m = fmax(m, fabs(a[i] - b[i]) / scale);
    return m;
}

/* A . v from a row kernel's output (A at outputs 1 .. k) and its input (v at k .. 2k) */
static double a_dot_v(const double *out, const double *in, int k) {
    double t = 0;
    for (int j = 0; j < k; j++) t += out[1 + j] * in[k + j];
    return t;
}

/* (phi, A . v) of a row kernel (fd_check.h); out: its outputs */
typedef struct RowAt {
    const IrFn *row;
    double *out;
} RowAt;

static void row_at(void *ctx, const double *in, double *y) {
    RowAt *r = ctx;
    ir_eval(r->row, in, NULL, r->out);
    y[0] = r->out[0], y[1] = a_dot_v(r->out, in, (r->row->noutputs - 1) / 2);
}

/* Each row kernel's A = dphi/dx and B = d(A . v)/dx against central differences at random
   inputs (the other inputs, lengths and constants, positive). */
static void check_row_kernels(const Kernels *k, const char *path, PrtRng *rng) {
    for (int i = 0; i < k->n; i++) {
        const IrFn *row = k->fns[i];
        if (strncmp(row->name, "Row", 3)) continue;
        int kk = (row->noutputs - 1) / 2;
        double *in = malloc(sizeof(double) * (size_t)(row->ninputs + 1)), *out = malloc(sizeof(double) * (size_t)(row->noutputs + 1)),
               *at = malloc(sizeof(double) * (size_t)(row->noutputs + 1));
        for (int j = 0; j < row->ninputs; j++) in[j] = j < 2 * kk ? prt_rng_normal(rng) : 0.5 + prt_rng_uniform(rng);
        ir_eval(row, in, NULL, at);
        /* A then B follow phi: the Jacobian of (phi, A . v) in x, 2 x kk */
        FdWorst w = {0};
        fd_jacobian(row_at, &(RowAt){row, out}, in, kk, 2, at + 1, &(FdOpts){.h = 1e-6, .rel = true, .scale = 1}, &w);
        CHECK(w.err < 1e-6, "%s: %s (output 0: A = dphi/dx, 1: B = d(A.v)/dx): " FD_FMT, path, row->name, FD_ARGS(w));
        free(in), free(out), free(at);
    }
}

/* the loop field at zp = (z, dV, then the parameters), n states (fd_check.h) */
typedef struct FieldAt {
    const PrtSystem *s;
    long n;
} FieldAt;

static void field_at(void *ctx, const double *zp, double *zdot) {
    FieldAt *f = ctx;
    prt_field(f->s, f->n, zp, zp + 3 * f->s->N * f->n, zdot);
}

/* path compiled for purpose unrolled into u and in loop form into l (l only if u compiled):
   whether each did, err saying why not */
static void open_both_forms(const char *path, int purpose, Loaded *u, Loaded *l, bool *ok_u, bool *ok_l, char *err,
                            size_t errlen) {
    driver_set_kernel_form(KERNEL_FORM_UNROLLED);
    *ok_u = loaded_open(u, path, purpose, -1, stderr, err, errlen);
    driver_set_kernel_form(KERNEL_FORM_LOOP);
    *ok_l = *ok_u && loaded_open(l, path, purpose, -1, stderr, err, errlen);
    driver_set_kernel_form(KERNEL_FORM_AUTO);
}

/* A CHNN trained in loop form: the loop field's reverse pass (loop_field_vjp.c, with the row
   classes' VJP kernels) against the unrolled FieldVJP kernel at the states z (2N x n, off the
   manifold), with other masses, a random dV and a random cotangent: the adjoints of X, P and
   dV and of every parameter, masses and free lengths, summed over the states; M^-1's and M's
   against MinvPVJP and MassVVJP. And the reverse pass against central differences of the
   loop field along a random direction of (z, dV, parameters). */
static void check_reverse(const char *path, const double *z, long n, const double *lengths, PrtRng *rng) {
    Loaded u, l;
    char err[512];
    bool ok_u, ok_l;
    open_both_forms(path, COMPILE_CHNN | COMPILE_CLNN, &u, &l, &ok_u, &ok_l, err, sizeof err);
    CHECK(ok_u && ok_l, "%s: a CHNN's and a CLNN's training do not compile: %s", path, err);
    if (!ok_u || !ok_l) {
        if (ok_u) loaded_close(&u), loaded_close(&l);
        return;
    }
    PrtSystem *su = &u.c.ps, *sl = &l.c.ps;
    CHECK(su->FieldVJP && su->AccelVJP && !su->loop && !sl->Field && !sl->Accel && sl->loop && sl->loop->classes[0].vjp,
          "%s: the training forms not as asked", path);
    long N = su->N, Nn = N * n;
    int np = su->nparams;
    double *params = malloc(sizeof(double) * (size_t)(np + 1)), *in = malloc(sizeof(double) * (size_t)(5 * Nn)),
           *out = malloc(sizeof(double) * (size_t)((3 * N + np) * n)), *adj = calloc((size_t)(3 * Nn), sizeof(double)),
           *padj = calloc((size_t)(np + 1), sizeof(double)), *psum = calloc((size_t)(np + 1), sizeof(double));
    for (int k = 0; k < np; k++)
        params[k] = k < su->nmass ? su->params[k] * (1.3 + 0.1 * k) : lengths[k - su->nmass];
    memcpy(in, z, sizeof(double) * (size_t)(2 * Nn)); /* X, P, then dV and the cotangent */
    for (long i = 2 * Nn; i < 5 * Nn; i++) in[i] = prt_rng_normal(rng);
    su->FieldVJP(n, in, params, out);
    prt_loop_field_vjp(sl->loop, NULL, n, in, in + 2 * Nn, params, in + 3 * Nn, adj, adj + 2 * Nn, padj);
    double e = rel_diff(adj, out, 3 * Nn);
    CHECK(e <= 1e-10, "%s: loop-form reverse pass: X, P, dV adjoints differ from FieldVJP's by %.3g", path, e);
    for (int k = 0; k < np; k++)
        for (long b = 0; b < n; b++) psum[k] += out[(3 * N + k) * n + b];
    e = rel_diff(padj, psum, np);
    CHECK(e <= 1e-10, "%s: loop-form reverse pass: parameter adjoints differ from FieldVJP's by %.3g", path, e);

    /* along a direction d of (z, dV, params): w . field's central difference */
    double *dir = malloc(sizeof(double) * (size_t)(3 * Nn + np)), *zp = malloc(sizeof(double) * (size_t)(3 * Nn + np)),
           *grad = malloc(sizeof(double) * (size_t)(3 * Nn + np)), *f = malloc(sizeof(double) * (size_t)(2 * Nn));
    for (long i = 0; i < 3 * Nn + np; i++) dir[i] = prt_rng_normal(rng) * (i < 3 * Nn ? 1 : params[i - 3 * Nn] * 0.1);
    memcpy(zp, in, sizeof(double) * (size_t)(3 * Nn)), memcpy(zp + 3 * Nn, params, sizeof(double) * (size_t)np);
    memcpy(grad, adj, sizeof(double) * (size_t)(3 * Nn)), memcpy(grad + 3 * Nn, padj, sizeof(double) * (size_t)np);
    FdWorst w = {0};
    fd_vjp(field_at, &(FieldAt){sl, n}, zp, 3 * Nn + np, 2 * Nn, in + 3 * Nn, grad,
           &(FdOpts){.h = 1e-6, .scale = 1, .dir = dir}, &w);
    CHECK(w.err < 1e-6, "%s: the reverse pass along a direction: " FD_FMT, path, FD_ARGS(w));

    /* M^-1 and M: (input, cotangent) -> (input adjoint, mass adjoints) */
    for (int inverse = 0; inverse < 2; inverse++) {
        PrtKernel vjp = inverse ? su->MinvPVJP : su->MassVVJP;
        vjp(n, in + Nn, params, out); /* (P, then dV's values as the cotangent) */
        memset(adj, 0, sizeof(double) * (size_t)Nn);
        memset(padj, 0, sizeof(double) * (size_t)(np + 1));
        memset(psum, 0, sizeof(double) * (size_t)(np + 1));
        if (inverse) prt_loop_minv_vjp(sl->loop, n, in + Nn, params, in + 2 * Nn, adj, padj);
        else prt_loop_mass_vjp(sl->loop, n, in + Nn, params, in + 2 * Nn, adj, padj);
        e = rel_diff(adj, out, Nn);
        CHECK(e <= 1e-12, "%s: loop-form %s's input adjoint differs by %.3g", path, inverse ? "M^-1" : "M", e);
        for (int k = 0; k < su->nmass; k++)
            for (long b = 0; b < n; b++) psum[k] += out[(N + k) * n + b];
        e = rel_diff(padj, psum, su->nmass);
        CHECK(e <= 1e-12, "%s: loop-form %s's mass adjoints differ by %.3g", path, inverse ? "M^-1" : "M", e);
    }
    /* Eq. 7: the acceleration of (X, Xdot, F) (in's rows, F the random dV's), and its reverse
       pass with the cotangent w (in's next N rows) */
    memset(adj, 0, sizeof(double) * (size_t)(3 * Nn));
    memset(padj, 0, sizeof(double) * (size_t)(np + 1));
    memset(psum, 0, sizeof(double) * (size_t)(np + 1));
    su->Accel(n, in, params, out);
    prt_accel(sl, n, in, params, f);
    e = rel_diff(f, out, Nn);
    CHECK(e <= 1e-12, "%s: loop-form Eq. 7 acceleration differs from Accel's by %.3g", path, e);
    double *vjp_in = malloc(sizeof(double) * (size_t)(4 * Nn));
    memcpy(vjp_in, in, sizeof(double) * (size_t)(4 * Nn)); /* (X, Xdot, F, w) */
    su->AccelVJP(n, vjp_in, params, out);
    prt_loop_accel_vjp(sl->loop, NULL, n, in, params, in + 3 * Nn, adj, padj);
    e = rel_diff(adj, out, 3 * Nn);
    CHECK(e <= 1e-10, "%s: loop-form Eq. 7 reverse pass: X, Xdot, F adjoints differ from AccelVJP's by %.3g", path, e);
    for (int k = 0; k < np; k++)
        for (long b = 0; b < n; b++) psum[k] += out[(3 * N + k) * n + b];
    e = rel_diff(padj, psum, np);
    CHECK(e <= 1e-10, "%s: loop-form Eq. 7 reverse pass: parameter adjoints differ from AccelVJP's by %.3g", path, e);
    free(vjp_in);
    free(params), free(in), free(out), free(adj), free(padj), free(psum), free(dir), free(zp), free(grad), free(f);
    loaded_close(&u);
    loaded_close(&l);
}

/* Returns the number of row classes of the loop form (-1 if either form did not compile). */
static int check_system(const char *path) {
    Loaded u, l;
    char err[512];
    bool ok_u, ok_l;
    open_both_forms(path, COMPILE_SIMULATE, &u, &l, &ok_u, &ok_l, err, sizeof err);
    if (ok_l && !l.c.ps.loop) { /* a system the loop form does not apply to compiles unrolled */
        CHECK(u.sys->nrotation_bodies > 0 || u.c.ps.C == 0, "%s: compiled unrolled when asked for the loop form", path);
        loaded_close(&u);
        loaded_close(&l);
        return -1;
    }
    if (!ok_u || !ok_l) {
        /* the loop form is for constrained systems without SO(3) bodies */
        bool fits = u.sys && u.sys->nrotation_bodies == 0 && u.c.ps.C > 0;
        CHECK(!ok_u || !fits, "%s: the loop form does not compile: %s", path, err);
        if (ok_u) loaded_close(&u);
        loaded_close(&l);
        return -1;
    }
    PrtSystem *su = &u.c.ps, *sl = &l.c.ps;
    CHECK(su->loop == NULL && sl->loop != NULL && sl->DPhi == NULL && sl->Rhs == NULL, "%s: forms not as asked", path);
    int N = su->N, C = su->C, rows = 2 * N;
    long n = NSTATES;
    double *z = malloc(sizeof(double) * (size_t)(rows * n)), *zl = malloc(sizeof(double) * (size_t)(rows * n)),
           *fu = malloc(sizeof(double) * (size_t)(rows * n)), *fl = malloc(sizeof(double) * (size_t)(rows * n)),
           *Ju = malloc(sizeof(double) * (size_t)C * N * n), *Jl = malloc(sizeof(double) * (size_t)C * N * n);
    PrtRng rng;
    prt_rng_seed(&rng, 7);
    double res = prt_sample_initial(su, &rng, n, 1e-12, z);
    CHECK(res >= 0 && res <= 1e-10, "%s: sampling failed (%g)", path, res);
    for (int k = su->nmass; k < su->nparams; k++) sl->params[k] = su->params[k]; /* the free lengths it took */
    sl->lengths_set = 1;

    /* on the manifold, then off it (Eq. 6's formulation is exact everywhere) */
    for (int off = 0; off < 2; off++) {
        if (off)
            for (long i = 0; i < rows * n; i++) z[i] += 0.05 * prt_rng_normal(&rng);
        prt_hamiltonian_rhs(su, n, z, fu);
        prt_hamiltonian_rhs(sl, n, z, fl);
        double e = rel_diff(fl, fu, rows * n);
        CHECK(e <= 1e-12, "%s: loop-form field %s the manifold differs from the unrolled by %.3g", path, off ? "off" : "on",
              e);
    }
    /* no row's values 2 KB apart or a multiple of it (a call of 32 or 64 rows computes one
       more): at 4 KB they shared an L1 set and the CPU held loads behind stores */
    for (int r = 0; r < C; r++)
        CHECK(sl->loop->row_step[r] * (long)sizeof(double) % 2048 != 0, "%s: row %d's values are %ld bytes apart", path,
              r, sl->loop->row_step[r] * (long)sizeof(double));
    /* a batch of more states than the loop field takes a group at a time (GROUP_BLOCKS = 32 blocks
       of 8), its last group and block partial: the 11 states repeated, perturbed */
    {
        long n2 = 2 * 256 + 11;
        double *z2 = malloc(sizeof(double) * (size_t)(rows * n2)), *fu2 = malloc(sizeof(double) * (size_t)(rows * n2)),
               *fl2 = malloc(sizeof(double) * (size_t)(rows * n2));
        for (long i = 0; i < rows; i++)
            for (long b = 0; b < n2; b++) z2[i * n2 + b] = z[i * n + b % n] + 0.01 * prt_rng_normal(&rng);
        prt_hamiltonian_rhs(su, n2, z2, fu2);
        prt_hamiltonian_rhs(sl, n2, z2, fl2);
        double e2 = rel_diff(fl2, fu2, rows * n2);
        CHECK(e2 <= 1e-12, "%s: loop-form field of %ld states differs from the unrolled by %.3g", path, n2, e2);
        free(z2), free(fu2), free(fl2);
    }
    /* the scratch released (the bench's fresh placements) grows again to the same field, bit
       for bit; fu holds it meanwhile */
    memcpy(fu, fl, sizeof(double) * (size_t)(rows * n));
    prt_loop_field_release(sl->loop);
    CHECK(sl->loop->scratch.work == NULL && sl->loop->scratch.batch == NULL, "%s: the loop form's scratch not released",
          path);
    prt_hamiltonian_rhs(sl, n, z, fl);
    CHECK(memcmp(fl, fu, sizeof(double) * (size_t)(rows * n)) == 0, "%s: the loop field differs after its scratch was released",
          path);
    prt_hamiltonian_rhs(su, n, z, fu); /* (the unrolled field again, for what follows) */
    /* Phi, PhiDot and the energy from the rows, V and MinvP against the unrolled kernels, off
       the manifold (where neither Phi nor PhiDot is zero); z's P rows read as Xdot for PhiDot */
    CHECK(sl->Phi == NULL && sl->PhiDot == NULL && sl->H == NULL, "%s: the loop form compiled Phi, PhiDot or H", path);
    double *lengths = su->params + su->nmass;
    su->Phi(n, z, lengths, Ju), prt_phi(sl, n, z, lengths, Jl);
    double e = rel_diff(Jl, Ju, (long)C * n);
    CHECK(e <= 1e-14, "%s: loop-form Phi differs by %.3g", path, e);
    su->PhiDot(n, z, lengths, Ju), prt_phidot(sl, n, z, lengths, Jl);
    e = rel_diff(Jl, Ju, (long)C * n);
    CHECK(e <= 1e-12, "%s: loop-form PhiDot differs by %.3g", path, e);
    prt_energy(su, n, z, Ju), prt_energy(sl, n, z, Jl);
    e = rel_diff(Jl, Ju, n);
    CHECK(e <= 1e-12, "%s: loop-form energy differs by %.3g", path, e);
    /* M^-1 P and M V from the bodies' table against the MinvP and MassV kernels (the same
       operations in the same order) */
    CHECK(sl->MinvP == NULL && sl->MassV == NULL, "%s: the loop form compiled MinvP or MassV", path);
    su->MinvP(n, z + (long)N * n, su->params, Ju), prt_minv(sl, n, z + (long)N * n, Jl);
    e = rel_diff(Jl, Ju, (long)N * n);
    CHECK(e <= 1e-15, "%s: loop-form M^-1 P differs by %.3g", path, e);
    su->MassV(n, z + (long)N * n, su->params, Ju), prt_massv(sl, n, z + (long)N * n, Jl);
    e = rel_diff(Jl, Ju, (long)N * n);
    CHECK(e <= 1e-15, "%s: loop-form M V differs by %.3g", path, e);
    /* a trained CHNN rolled out: its field (prt_field, the Field kernel's function) with
       other masses and a potential's gradient of its own, unrolled and in loop form (the
       driver's COMPILE_ROLLOUT in loop form compiles no Field) */
    {
        Loaded mu, ml;
        bool ok_mu, ok_ml;
        open_both_forms(path, COMPILE_CHNN | COMPILE_ROLLOUT, &mu, &ml, &ok_mu, &ok_ml, err, sizeof err);
        CHECK(ok_mu && ok_ml, "%s: a CHNN rollout does not compile: %s", path, err);
        if (ok_mu && ok_ml) {
            PrtSystem *pu = &mu.c.ps, *pl = &ml.c.ps;
            CHECK(pu->Field && !pu->loop && !pl->Field && pl->loop, "%s: a CHNN rollout's forms not as asked", path);
            double *params = malloc(sizeof(double) * (size_t)(pu->nparams + 1)),
                   *zdv = malloc(sizeof(double) * (size_t)(3 * N * n)), *gu = malloc(sizeof(double) * (size_t)(rows * n)),
                   *gl = malloc(sizeof(double) * (size_t)(rows * n));
            for (int k = 0; k < pu->nparams; k++) params[k] = su->params[k] * (k < pu->nmass ? 1.3 + 0.1 * k : 1);
            memcpy(zdv, z, sizeof(double) * (size_t)(rows * n));
            for (long i = 0; i < (long)N * n; i++) zdv[rows * n + i] = prt_rng_normal(&rng);
            prt_field(pu, n, zdv, params, gu), prt_field(pl, n, zdv, params, gl);
            e = rel_diff(gl, gu, rows * n);
            CHECK(e <= 1e-12, "%s: loop-form Field (other masses, dV given) differs by %.3g", path, e);
            prt_minv_with(pu, n, z + (long)N * n, params, Ju), prt_minv_with(pl, n, z + (long)N * n, params, Jl);
            e = rel_diff(Jl, Ju, (long)N * n);
            CHECK(e <= 1e-15, "%s: loop-form M^-1 P with other masses differs by %.3g", path, e);
            free(params), free(zdv), free(gu), free(gl);
        }
        if (ok_mu) loaded_close(&mu), loaded_close(&ml); /* (ml was opened, if not compiled, when mu was) */
    }
    check_reverse(path, z, n, su->params + su->nmass, &rng);
    su->DPhi(n, z, su->params + su->nmass, Ju);
    prt_dphi(sl, n, z, Jl);
    e = rel_diff(Jl, Ju, (long)C * N * n);
    CHECK(e <= 1e-14, "%s: loop-form DPhi differs by %.3g", path, e);
    prt_dphi_row_norms(su, n, z, Ju); /* the rows' gradient norms (the CSV checks') */
    prt_dphi_row_norms(sl, n, z, Jl);
    e = rel_diff(Jl, Ju, (long)C * n);
    CHECK(e <= 1e-14, "%s: loop-form |grad Phi_r| differ by %.3g", path, e);

    /* the projection from the perturbed states: both converge, to the same states */
    memcpy(zl, z, sizeof(double) * (size_t)(rows * n));
    double ru = prt_project(su, n, z, 1e-12, PRT_METRIC_MASS), rl = prt_project(sl, n, zl, 1e-12, PRT_METRIC_MASS);
    CHECK(ru >= 0 && ru <= 1e-12 && rl >= 0 && rl <= 1e-12, "%s: projections left %g (unrolled) and %g (loop)", path, ru,
          rl);
    e = rel_diff(zl, z, rows * n);
    CHECK(e <= 1e-9, "%s: projected states differ by %.3g", path, e);
    CHECK(prt_constraint_violation(sl, n, zl) <= 1e-11, "%s: the loop form's projection is off the constraints", path);

    /* RATTLE from the projected states: the loop form's simplified Newton converges to the
       dense step's solution */
    memcpy(z, zl, sizeof(double) * (size_t)(rows * n));
    double wu = 0, wl = 0;
    for (int step = 0; step < 20 && wu >= 0 && wl >= 0; step++) {
        wu = prt_symplectic_step(su, PRT_RATTLE, n, 1e-3, z, 1e-12);
        wl = prt_symplectic_step(sl, PRT_RATTLE, n, 1e-3, zl, 1e-12);
    }
    CHECK(wu >= 0 && wl >= 0, "%s: RATTLE failed (%g unrolled, %g loop)", path, wu, wl);
    e = rel_diff(zl, z, rows * n);
    CHECK(e <= 1e-8, "%s: RATTLE's states differ by %.3g after 20 steps", path, e);
    CHECK(prt_constraint_violation(sl, n, zl) <= 1e-11, "%s: the loop form's RATTLE is off the constraints", path);

    check_row_kernels(&l.c.k, path, &rng);
    int classes = sl->loop->nclasses;
    free(z), free(zl), free(fu), free(fl), free(Ju), free(Jl);
    loaded_close(&u);
    loaded_close(&l);
    return classes;
}

/* A CHNN's or a CLNN's compile of a system in loop form is the loop form's, with each row
   class's VJP for its training (no unrolled Field, Accel or their VJPs); the field and
   projections are the loop form's */
static void check_model_rows(void) {
    for (int model = 0; model < 2; model++) { /* chain30's chnn, then a clnn of its system */
        Loaded l;
        char err[512];
        driver_set_kernel_form(KERNEL_FORM_LOOP);
        bool ok = loaded_open(&l, "tests/run/chain30.phys", COMPILE_CLNN, model ? -1 : 0, stderr, err, sizeof err);
        driver_set_kernel_form(KERNEL_FORM_AUTO);
        CHECK(ok, "chain30's model %d in loop form: %s", model, err);
        if (!ok) {
            loaded_close(&l);
            continue;
        }
        PrtSystem *s = &l.c.ps;
        bool vjps = s->loop != NULL;
        for (int c = 0; s->loop && c < s->loop->nclasses; c++) vjps = vjps && s->loop->classes[c].vjp != NULL;
        CHECK(s->loop != NULL && s->DPhi == NULL && s->PhiDot == NULL && s->H == NULL && s->Rhs == NULL && !s->Field &&
                  !s->FieldVJP && !s->Accel && !s->AccelVJP && vjps,
              "chain30's model %d: rows %d, DPhi %d, PhiDot %d, H %d, Rhs %d, Field %d, FieldVJP %d, row VJPs %d", model,
              s->loop != NULL, s->DPhi != NULL, s->PhiDot != NULL, s->H != NULL, s->Rhs != NULL, s->Field != NULL,
              s->FieldVJP != NULL, vjps);
        loaded_close(&l);
    }
}

/* The nearest-point projection (Gauss-Newton on Phi = PhiDot = 0 in the Euclidean metric)
   from the loop form's rows against the dense DPhiDot's, from perturbed states: both converge,
   to the same states. Model compiles, which have DPhiDot (unrolled) or the rows (loop). */
static void check_nearest(const char *path) {
    Loaded u, l;
    char err[512];
    bool ok_u, ok_l;
    open_both_forms(path, COMPILE_CHNN, &u, &l, &ok_u, &ok_l, err, sizeof err);
    CHECK(ok_u && ok_l, "%s: %s", path, err);
    if (!ok_u || !ok_l) {
        if (ok_u) loaded_close(&u);
        return;
    }
    PrtSystem *su = &u.c.ps, *sl = &l.c.ps;
    CHECK(su->loop == NULL && su->DPhiDot != NULL && sl->loop != NULL, "%s: forms not as asked", path);
    int rows = prt_state_rows(su);
    long n = 5;
    double *z = malloc(sizeof(double) * (size_t)(rows * n)), *zl = malloc(sizeof(double) * (size_t)(rows * n));
    PrtRng rng;
    prt_rng_seed(&rng, 11);
    double res = prt_sample_initial(su, &rng, n, 1e-12, z);
    CHECK(res >= 0 && res <= 1e-10, "%s: sampling failed (%g)", path, res);
    for (int k = su->nmass; k < su->nparams; k++) sl->params[k] = su->params[k];
    sl->lengths_set = 1;
    for (long i = 0; i < rows * n; i++) z[i] += 0.02 * prt_rng_normal(&rng); /* (X, Xdot) off both constraints */
    memcpy(zl, z, sizeof(double) * (size_t)(rows * n));
    double ru = prt_project(su, n, z, 1e-12, PRT_METRIC_EUCLIDEAN), rl = prt_project(sl, n, zl, 1e-12, PRT_METRIC_EUCLIDEAN);
    CHECK(ru >= 0 && ru <= 1e-12 && rl >= 0 && rl <= 1e-12, "%s: nearest projections left %g (dense) and %g (rows)", path,
          ru, rl);
    double e = rel_diff(zl, z, rows * n);
    CHECK(e <= 1e-9, "%s: nearest-projected states differ by %.3g", path, e);
    free(z), free(zl);
    loaded_close(&u);
    loaded_close(&l);
}

/* The runtime's allocations of a cache line and more start on one (the 8-double vectors of
   the kernels and of the loop field straddled two lines on malloc's 16-byte alignment) */
static void check_alignment(void) {
    char err[128];
    for (size_t bytes = 64; bytes <= (8u << 20); bytes *= 4) {
        void *a = prt_xalloc(bytes, 1, "the test"), *b = prt_alloc(bytes / 8, 8, "the test", err, sizeof err);
        CHECK(a && b && (uintptr_t)a % 64 == 0 && (uintptr_t)b % 64 == 0, "%zu bytes not on a cache line", bytes);
        free(a), free(b);
    }
}

int main(void) {
    check_model_rows();
    check_alignment();
    check_nearest("tests/run/chain30.phys");
    check_nearest("examples/pendulum3.phys");
    check_nearest("examples/gyroscope.phys");
    int checked = 0;
    DIR *dir = opendir("examples");
    CHECK(dir != NULL, "no examples directory (run from the repository root)");
    struct dirent *e;
    while (dir && (e = readdir(dir))) {
        size_t len = strlen(e->d_name);
        if (e->d_name[0] == '.' || len < 6 || strcmp(e->d_name + len - 5, ".phys")) continue;
        char path[512];
        snprintf(path, sizeof path, "examples/%s", e->d_name);
        if (check_system(path) > 0) checked++;
    }
    if (dir) closedir(dir);
    CHECK(checked >= 5, "only %d examples went through the loop form", checked);

    char dirname[] = "/tmp/physc-loop-XXXXXX", path[600];
    CHECK(mkdtemp(dirname) != NULL, "mkdtemp");
    snprintf(path, sizeof path, "%s/chain30.phys", dirname);
    write_chain(path, 30, false);
    int c30 = check_system(path);
    snprintf(path, sizeof path, "%s/chain100.phys", dirname);
    write_chain(path, 100, false);
    int c100 = check_system(path);
    CHECK(c30 == 2 && c100 == 2, "a chain's rows are two classes (its tether, its links), not %d and %d", c30, c100);
    snprintf(path, sizeof path, "%s/varied.phys", dirname);
    write_chain(path, 30, true);
    CHECK(check_system(path) == 2, "a chain with a free tether and links of 29 lengths: two classes (the lengths are "
                                    "the link class's inputs)");
    snprintf(path, sizeof path, "%s/tree7.phys", dirname);
    write_tree(path);
    CHECK(check_system(path) > 0, "the tree of rigid bodies");
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dirname);
    CHECK(system(cmd) == 0, "cleanup");
    if (failures) printf("%d failure(s)\n", failures);
    else printf("test_loop_form: all passed (%d examples)\n", checked);
    return failures != 0;
}
