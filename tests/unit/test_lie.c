/* test_lie.c — the integrators on SO(3) (runtime/integrators/lie_group.c, the Lie T2 paper's App. B and D)
   against physics: the exponential against its series; each Lie T2 sub-flow against dopri5 of
   its own sub-Hamiltonian; the torque against the derivative of V along body rotations; the
   order of every method on a free asymmetric top; Lie T2 over 10^5 steps (R^T R = I, |Pi|
   and a bounded energy error, with and without a potential); JIT against emit-c is in
   tests/run.sh. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "models/body_frame.h"
#include "models/model_lie.h"
#include "check.h"
#include "io/dataset.h"
#include "fd_model.h"
#include "integrators/lie_group.h"
#include "ad/lie_tape.h"
#include "loaded.h"

static bool load(const char *path, Loaded *l) {
    char err[512];
    bool ok = loaded_open(l, path, COMPILE_SIMULATE, -1, stdout, err, sizeof err);
    CHECK(ok, "%s: %s", path, err);
    if (!ok) loaded_close(l);
    return ok;
}

static double *sample(Loaded *l, long n, uint64_t seed) {
    PrtSystem *ps = &l->c.ps;
    double *z = malloc(sizeof(double) * (size_t)((ps->N + ps->NP) * n));
    PrtRng rng;
    prt_rng_seed(&rng, seed);
    CHECK(prt_sample_initial(ps, &rng, n, 1e-13, z) >= 0, "sampling failed");
    return z;
}

/* ---- the exponential ---- */

static void exp_series(const double w[3], double E[9]) { /* sum_k hat(w)^k / k!, in long double */
    long double W[9] = {0, -w[2], w[1], w[2], 0, -w[0], -w[1], w[0], 0}, T[9], S[9], U[9];
    for (int i = 0; i < 9; i++) T[i] = S[i] = i % 4 == 0;
    for (int k = 1; k < 40; k++) {
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++) U[i * 3 + j] = (T[i * 3] * W[j] + T[i * 3 + 1] * W[3 + j] + T[i * 3 + 2] * W[6 + j]) / k;
        for (int i = 0; i < 9; i++) T[i] = U[i], S[i] += U[i];
    }
    for (int i = 0; i < 9; i++) E[i] = (double)S[i];
}

static void exponential(void) {
    PrtRng rng;
    prt_rng_seed(&rng, 7);
    double worst = 0, worst_orth = 0;
    for (int k = 0; k < 2000; k++) {
        double scale = pow(10, -9 + 9.5 * prt_rng_uniform(&rng)), w[3], E[9], F[9];
        for (int i = 0; i < 3; i++) w[i] = scale * prt_rng_normal(&rng);
        prt_so3_exp(w, E);
        exp_series(w, F);
        for (int i = 0; i < 9; i++) worst = fmax(worst, fabs(E[i] - F[i]));
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++)
                worst_orth = fmax(worst_orth, fabs(E[i] * E[j] + E[3 + i] * E[3 + j] + E[6 + i] * E[6 + j] - (i == j)));
    }
    /* both sides of the series branch at |w| = 1e-4 */
    double a[3] = {0.6e-4, 0.8e-4 * (1 - 1e-12), 0}, b[3] = {0.6e-4, 0.8e-4 * (1 + 1e-12), 0}, Ea[9], Eb[9];
    prt_so3_exp(a, Ea), prt_so3_exp(b, Eb);
    double jump = 0;
    for (int i = 0; i < 9; i++) jump = fmax(jump, fabs(Ea[i] - Eb[i]));
    printf("so3 exp: %.1e from the series, R^T R - I %.1e, %.1e across the small-angle branch\n", worst, worst_orth, jump);
    CHECK(worst < 2e-15, "exp(hat(w)) off its series by %g", worst);
    CHECK(worst_orth < 1e-15, "exp(hat(w)) off SO(3) by %g", worst_orth);
    CHECK(jump < 1e-15, "exp jumps by %g at the series branch", jump);
}

/* ---- the VJPs against central differences ---- */

/* A map of 12 inputs (R then Pi, or w, or R then G ...) to up to 12 outputs (an FdFn), and its VJP. */
typedef void (*MapVjp)(const double *x, const double *yb, double *xb, const void *ctx);

typedef struct FlowCtx { double J[3], h; } FlowCtx;

static void kin_map(void *c, const double *x, double *y) {
    const FlowCtx *f = c;
    memcpy(y, x, 12 * sizeof(double));
    prt_so3_kinetic_flow(y, y + 9, f->J, f->h);
}
static void kin_vjp(const double *x, const double *yb, double *xb, const void *c) {
    const FlowCtx *f = c;
    prt_so3_kinetic_flow_vjp(x, x + 9, f->J, f->h, yb, yb + 9, xb, xb + 9);
}
static void asym_map(void *c, const double *x, double *y) {
    const FlowCtx *f = c;
    memcpy(y, x, 12 * sizeof(double));
    prt_so3_asym_flow(y, y + 9, f->J, f->h);
}
static void asym_vjp(const double *x, const double *yb, double *xb, const void *c) {
    const FlowCtx *f = c;
    prt_so3_asym_flow_vjp(x, x + 9, f->J, f->h, yb, yb + 9, xb, xb + 9);
}
static void exp_map(void *c, const double *x, double *y) { prt_so3_exp(x, y); }
static void exp_vjp(const double *x, const double *yb, double *xb, const void *c) { prt_so3_exp_vjp(x, yb, xb); }
static void torque_map(void *c, const double *x, double *y) { prt_so3_torque(x, x + 9, y); } /* x = (R, G) */
static void torque_vjp(const double *x, const double *yb, double *xb, const void *c) {
    prt_so3_torque_vjp(x, x + 9, yb, xb, xb + 9);
}
static void reorth_map(void *c, const double *x, double *y) {
    memcpy(y, x, 9 * sizeof(double));
    prt_so3_reorthonormalize(y);
}
static void reorth_vjp(const double *x, const double *yb, double *xb, const void *c) { prt_so3_reorthonormalize_vjp(x, yb, xb); }

/* The VJP of a random yb against central differences of yb . f along 6 random directions,
   each error relative to the largest of the 6 predictions <vjp(yb), d> */
static void vjp_error(FdFn f, MapVjp vjp, void *ctx, double *x, int nx, int ny, PrtRng *rng, FdWorst *w) {
    double yb[18], xb[18] = {0}, d[6][18], scale = 0;
    for (int i = 0; i < ny; i++) yb[i] = prt_rng_normal(rng);
    vjp(x, yb, xb, ctx);
    for (int trial = 0; trial < 6; trial++) {
        double an = 0;
        for (int i = 0; i < nx; i++) d[trial][i] = prt_rng_normal(rng), an += xb[i] * d[trial][i];
        scale = fmax(scale, fabs(an));
    }
    for (int trial = 0; trial < 6; trial++)
        fd_vjp(f, ctx, x, nx, ny, yb, xb, &(FdOpts){.h = 1e-6, .scale = scale, .dir = d[trial]}, w);
}

static void vjps(void) {
    PrtRng rng;
    prt_rng_seed(&rng, 13);
    FdWorst worst[5] = {{0}};
    for (int k = 0; k < 40; k++) {
        double w[3], x[18];
        double scale = k < 10 ? 1e-3 : k < 20 ? 0.04 : 1.5; /* both sides of the series branches */
        for (int i = 0; i < 3; i++) w[i] = scale * prt_rng_normal(&rng);
        prt_so3_exp(w, x);
        for (int i = 9; i < 18; i++) x[i] = prt_rng_normal(&rng);
        FlowCtx f = {{5, 4, 3}, 0.02 + 0.5 * prt_rng_uniform(&rng)};
        vjp_error(exp_map, exp_vjp, NULL, w, 3, 9, &rng, &worst[0]);
        vjp_error(kin_map, kin_vjp, &f, x, 12, 12, &rng, &worst[1]);
        vjp_error(asym_map, asym_vjp, &f, x, 12, 12, &rng, &worst[2]);
        vjp_error(torque_map, torque_vjp, NULL, x, 18, 3, &rng, &worst[3]);
        for (int i = 0; i < 9; i++) x[i] += 1e-3 * prt_rng_normal(&rng); /* off SO(3), as rounding leaves it, and more */
        vjp_error(reorth_map, reorth_vjp, NULL, x, 9, 9, &rng, &worst[4]);
    }
    const char *names[] = {"exp", "kinetic flow", "asymmetric flow", "torque", "re-orthonormalization"};
    for (int i = 0; i < 5; i++) {
        printf("VJP of the %s against central differences: %.1e (relative)\n", names[i], worst[i].err);
        CHECK(worst[i].err < 1e-7, "VJP of the %s: " FD_FMT, names[i], FD_ARGS(worst[i]));
    }
}

/* ---- each sub-flow against dopri5 of its sub-Hamiltonian ---- */

typedef struct SubFlow {
    double Jinv[3]; /* the sub-Hamiltonian is Pi . diag(Jinv) Pi / 2 */
} SubFlow;

/* z = (R row-major, Pi), one state: R' = R hat(Omega), Pi' = Pi x Omega, Omega = Jinv Pi */
static void sub_rhs(void *ctx, long n, const double *z, double *zdot) {
    const SubFlow *f = ctx;
    const double *R = z, *Pi = z + 9;
    double om[3] = {f->Jinv[0] * Pi[0], f->Jinv[1] * Pi[1], f->Jinv[2] * Pi[2]};
    double hat[9] = {0, -om[2], om[1], om[2], 0, -om[0], -om[1], om[0], 0};
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) zdot[i * 3 + j] = R[i * 3] * hat[j] + R[i * 3 + 1] * hat[3 + j] + R[i * 3 + 2] * hat[6 + j];
    zdot[9] = Pi[1] * om[2] - Pi[2] * om[1];
    zdot[10] = Pi[2] * om[0] - Pi[0] * om[2];
    zdot[11] = Pi[0] * om[1] - Pi[1] * om[0];
    (void)n;
}

static double sub_flow_error(const double J[3], bool kinetic, double h) {
    double R0[9], w[3] = {0.3, -0.7, 0.4}, Pi[3] = {0.8, -1.1, 0.6}, z[12], out[24], t[2] = {0, h};
    prt_so3_exp(w, R0);
    SubFlow f = {{1 / J[0], 1 / J[0], 1 / J[2]}};
    if (!kinetic) f = (SubFlow){{0, 1 / J[1] - 1 / J[0], 0}};
    memcpy(z, R0, sizeof R0), memcpy(z + 9, Pi, sizeof Pi);
    CHECK(prt_dopri5(sub_rhs, &f, 1, 12, z, t, 2, 1e-13, 1e-15, out, NULL) == 0, "dopri5 failed");
    double R[9];
    memcpy(R, R0, sizeof R);
    (kinetic ? prt_so3_kinetic_flow : prt_so3_asym_flow)(R, Pi, J, h);
    double worst = 0;
    for (int i = 0; i < 9; i++) worst = fmax(worst, fabs(R[i] - out[12 + i]));
    for (int i = 0; i < 3; i++) worst = fmax(worst, fabs(Pi[i] - out[21 + i]));
    return worst;
}

static void sub_flows(void) {
    double J[3] = {5, 4, 3}, worst_k = 0, worst_a = 0;
    for (double h = 0.1; h < 20; h *= 3) {
        worst_k = fmax(worst_k, sub_flow_error(J, true, h));
        worst_a = fmax(worst_a, sub_flow_error(J, false, h));
    }
    printf("Lie T2 sub-flows against dopri5 (rtol 1e-13) up to t = 8.1: kinetic %.1e, asymmetric %.1e\n", worst_k, worst_a);
    CHECK(worst_k < 1e-10, "the axially symmetric kinetic flow is off by %g", worst_k);
    CHECK(worst_a < 1e-10, "the asymmetric flow is off by %g", worst_a);
}

/* V with the rigid body at z's rows r.. turned to R exp(hat(w)) (fd_check.h; X: scratch) */
typedef struct TurnedAt {
    PrtSystem *ps;
    const double *z;
    double *X;
    int r;
} TurnedAt;

static void turned_v(void *ctx, const double *w, double *V) {
    TurnedAt *a = ctx;
    const double *R = a->z + a->r;
    double E[9];
    prt_so3_exp(w, E);
    memcpy(a->X, a->z, sizeof(double) * (size_t)a->ps->N);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            a->X[a->r + i * 3 + j] = R[i * 3] * E[j] + R[i * 3 + 1] * E[3 + j] + R[i * 3 + 2] * E[6 + j];
    a->ps->V(1, a->X, a->ps->params, V);
}

/* tau_k = -d/de V(R exp(e hat(e_k))) at e = 0, V the system's compiled potential (a
   quadrupole that depends on R) */
static void torque(void) {
    Loaded l;
    if (!load("examples/twobody-rigid.phys", &l)) return;
    PrtSystem *ps = &l.c.ps;
    double *z = sample(&l, 1, 3), *G = malloc(sizeof(double) * (size_t)ps->N), *X = malloc(sizeof(double) * (size_t)ps->N);
    CHECK(ps->nso3 == 1, "twobody-rigid has %d so3 bodies", ps->nso3);
    int r = ps->so3[0].x + 3;
    { /* turn the planet off its sampled tilt, whose symmetry axis is square to the star (no torque) */
        double w[3] = {0.3, 0.5, 0.2}, E[9], R[9];
        prt_so3_exp(w, E);
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++) R[i * 3 + j] = z[r + i * 3] * E[j] + z[r + i * 3 + 1] * E[3 + j] + z[r + i * 3 + 2] * E[6 + j];
        memcpy(z + r, R, sizeof R);
    }
    ps->gradV(1, z, ps->params, G);
    double tau[3], w0[3] = {0, 0, 0}, minus_tau[3], scale = 0;
    prt_so3_torque(z + r, G + r, tau);
    for (int k = 0; k < 3; k++) minus_tau[k] = -tau[k], scale = fmax(scale, fabs(tau[k]));
    FdWorst w = {0}; /* absolute, over the largest entry */
    fd_grad(turned_v, &(TurnedAt){ps, z, X, r}, w0, 3, minus_tau, &(FdOpts){.h = 1e-5, .scale = scale}, &w);
    printf("torque against -dV along body rotations: %.1e of %.1e\n", w.err * scale, scale);
    CHECK(scale > 0 && w.err < 1e-6, "torque (largest entry %g): " FD_FMT, scale, FD_ARGS(w));
    free(z), free(G), free(X);
    loaded_close(&l);
}

/* ---- orders on the free asymmetric top ---- */

/* max |z - ref| over R and Pi after T with steps of size T / steps */
static double top_error(PrtSystem *ps, const double *z0, const double *ref, int id, long steps, double T) {
    long len = ps->N + ps->NP;
    double *z = malloc(sizeof(double) * (size_t)len), *work = malloc(sizeof(double) * (size_t)(5 * len + prt_lie_work_len(ps, 1)));
    memcpy(z, z0, sizeof(double) * (size_t)len);
    for (long k = 0; k < steps; k++) {
        if (prt_integrators[id].kind == PRT_KIND_LIE)
            prt_lie_step(ps, (PrtLieMethod)prt_lie_method(id), 1, T / (double)steps, z, work);
        else
            prt_rk_step(prt_integrator_tableau(id), prt_hamiltonian_rhs, ps, 1, (int)len, T / (double)steps, z, work);
    }
    double worst = 0;
    for (long i = 0; i < len; i++) worst = fmax(worst, fabs(z[i] - ref[i]));
    free(z), free(work);
    return worst;
}

/* Each method at steps and 2 x steps over T against dopri5: the measured order. */
static void orders(const char *path, const char *what, double T) {
    Loaded l;
    if (!load(path, &l)) return;
    PrtSystem *ps = &l.c.ps;
    long len = ps->N + ps->NP;
    double *z0 = sample(&l, 1, 5), t[2] = {0, T}, *out = malloc(sizeof(double) * (size_t)(2 * len));
    CHECK(prt_dopri5(prt_hamiltonian_rhs, ps, 1, (int)len, z0, t, 2, 1e-13, 1e-15, out, NULL) == 0, "dopri5 failed");
    const struct { int id; double want; long steps; } cases[] = {
        {PRT_INT_LIET2, 2, 100}, {PRT_INT_LIE_RK2, 2, 100}, {PRT_INT_LIE_RK4, 4, 50},
        {PRT_INT_VERLET, 1, 100}, {PRT_INT_RK4, 4, 50}, {PRT_INT_EULER, 1, 1000},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        double e1 = top_error(ps, z0, out + len, cases[c].id, cases[c].steps, T);
        double e2 = top_error(ps, z0, out + len, cases[c].id, 2 * cases[c].steps, T);
        double order = log2(e1 / e2);
        printf("%-8s on %s: error %.2e at h = %g, %.2e at h/2: order %.2f\n",
               prt_integrators[cases[c].id].name, what, e1, T / (double)cases[c].steps, e2, order);
        CHECK(fabs(order - cases[c].want) < 0.25, "%s: order %.2f, not %g", prt_integrators[cases[c].id].name, order,
              cases[c].want);
    }
    free(z0), free(out);
    loaded_close(&l);
}

/* ---- the step on the tape: its gradient against central differences ---- */

typedef struct Terms {
    PrtMlp mlp;        /* a learned potential of the positions */
    const double *theta;
    double *theta_adj;
    long N;
} Terms;

static int terms_grad(void *ctx, PrtTape *t, int x, long n) {
    Terms *c = ctx;
    return prt_tape_mlp_grad(t, &c->mlp, c->theta, c->theta_adj, n, x);
}
static int terms_force(void *ctx, PrtTape *t, int z, long n) { /* F = -0.3 P + 0.01: a drag */
    Terms *c = ctx;
    int P = prt_tape_view(t, z, c->N * n, prt_tape_len(t, z) - c->N * n);
    return prt_tape_lincomb(t, 1, &P, (double[]){-0.3});
}

/* L = <c, z after `steps` steps of the integrator id of h from z0>, and (if zb) its gradients */
static double tape_loss(PrtTape *t, PrtSystem *ps, int id, Terms *terms, const double *z0, long n, double h, int steps,
                        const double *c, double *zb) {
    long len = (long)(ps->N + ps->NP) * n;
    prt_tape_reset(t);
    int z = prt_tape_leaf(t, len), z1;
    memcpy(prt_tape_val(t, z), z0, sizeof(double) * (size_t)len);
    double kadj[64];
    PrtLieTapeTerms lt = {terms_grad, terms_force, terms, kadj};
    z1 = z;
    for (int k = 0; k < steps; k++) z1 = prt_tape_so3_step(t, ps, id, z1, n, h, &lt);
    double L = 0;
    for (long i = 0; i < len; i++) L += c[i] * prt_tape_val(t, z1)[i];
    if (zb) {
        prt_tape_zero_adjoints(t);
        memcpy(prt_tape_adj(t, z1), c, sizeof(double) * (size_t)len);
        prt_tape_backward(t);
        memcpy(zb, prt_tape_adj(t, z), sizeof(double) * (size_t)len);
    }
    return L;
}

static const int so3_methods[] = {PRT_INT_LIET2, PRT_INT_LIE_RK2, PRT_INT_LIE_RK4, PRT_INT_VERLET, PRT_INT_RK4, PRT_INT_EULER};

/* tape_loss without gradients (fd_check.h: the state and the weights perturbed in place, read here) */
typedef struct TapeAt {
    PrtTape *t;
    PrtSystem *ps;
    int id;
    Terms *terms;
    const double *z0, *c;
    long n;
    double h;
} TapeAt;

static void tape_at(void *ctx, const double *unused, double *L) {
    TapeAt *a = ctx;
    *L = tape_loss(a->t, a->ps, a->id, a->terms, a->z0, a->n, a->h, 3, a->c, NULL);
}

static void tape_gradient_of(PrtSystem *ps, int id, long n, double *z0, PrtRng *rng) {
    long len = (long)(ps->N + ps->NP) * n;
    double h = 2e-4;
    Terms terms = {.mlp = {.nlayers = 2, .size = {ps->N, 16, 1}, .act = PRT_ACT_TANH}, .N = ps->N};
    long np = prt_mlp_nparams(&terms.mlp);
    double *theta = malloc(sizeof(double) * (size_t)np), *theta_adj = calloc((size_t)np, sizeof(double));
    double *c = malloc(sizeof(double) * (size_t)len), *zb = malloc(sizeof(double) * (size_t)len);
    double *dz = malloc(sizeof(double) * (size_t)len), *dth = malloc(sizeof(double) * (size_t)np);
    prt_mlp_init(&terms.mlp, theta, rng);
    for (long i = 0; i < len; i++) c[i] = prt_rng_normal(rng) / (fabs(z0[i]) + 1e-3);
    terms.theta = theta, terms.theta_adj = theta_adj;
    PrtTape *t = prt_tape_new();
    tape_loss(t, ps, id, &terms, z0, n, h, 3, c, zb);
    terms.theta_adj = NULL;
    TapeAt at = {t, ps, id, &terms, z0, c, n, h};
    FdWorst wz = {0}, wth = {0};
    for (int trial = 0; trial < 3; trial++) {
        /* steps of 1e-7: the flat methods curve enough that 1e-6 leaves 2e-6 of truncation on the state */
        for (long i = 0; i < len; i++) dz[i] = prt_rng_normal(rng) * (fabs(z0[i]) + 1e-3);
        fd_grad(tape_at, &at, z0, len, zb, &(FdOpts){.h = 1e-7, .dir = dz}, &wz);
        for (long i = 0; i < np; i++) dth[i] = prt_rng_normal(rng) * 0.1;
        fd_grad(tape_at, &at, theta, np, theta_adj, &(FdOpts){.h = 1e-7, .dir = dth}, &wth);
    }
    printf("three %s steps on the tape (rigid planet, a learned potential and a drag): gradient against central "
           "differences %.1e (state), %.1e (weights)\n", prt_integrators[id].name, wz.err, wth.err);
    CHECK(wz.err < 1e-6, "%s: gradient w.r.t. the state: " FD_FMT, prt_integrators[id].name, FD_ARGS(wz));
    CHECK(wth.err < 1e-6, "%s: gradient w.r.t. the weights: " FD_FMT, prt_integrators[id].name, FD_ARGS(wth));
    prt_tape_free(t);
    free(theta), free(theta_adj), free(c), free(zb), free(dz), free(dth);
}

/* the system's own gradient as a tape term (forward passes only) */
static int true_grad(void *ctx, PrtTape *t, int x, long n) {
    PrtSystem *ps = ctx;
    return prt_tape_kernel(t, ps->gradV, NULL, n, 1, &x, ps->N, ps->params, 0, NULL);
}

/* tests/run/liet2.phys compiled for simulation with model `model` (-1: none): true, or false
   after a failed check. */
static bool open_liet2_file(Loaded *l, int model) {
    char err[512];
    if (loaded_open(l, "tests/run/liet2.phys", COMPILE_SIMULATE, model, stdout, err, sizeof err)) return true;
    CHECK(false, "liet2.phys: %s", err);
    loaded_close(l);
    return false;
}

/* Whether row i of X is an entry of a `state so3` body's R. */
static bool rotation_entry(const PrtSystem *ps, int i) {
    for (int b = 0; b < ps->nso3; b++)
        if (i >= ps->so3[b].x + 3 && i < ps->so3[b].x + 12) return true;
    return false;
}

/* the model's energies of the n states x (fd_check.h) */
typedef struct EnergyAt {
    PrtModel *m;
    const double *theta;
    long n;
} EnergyAt;

static void energy_at(void *ctx, const double *x, double *E) {
    EnergyAt *a = ctx;
    a->m->family->energy(a->m, a->theta, a->n, x, E);
}

/* The model's energy (model.h) against the gradient its dynamics read: at fixed velocities the
   kinetic energy does not move with X, so the central differences of the energy in each
   coordinate of the states xv (W x n) are the residual's gradient plus the known terms'. */
static void energy_gradient(PrtModel *m, const double *theta, long n, const double *xv, const char *what) {
    const PrtSystem *ps = m->sys;
    long N = ps->N, W = prt_state_rows(ps);
    double *x = malloc(sizeof(double) * (size_t)(W * n)), *G = malloc(sizeof(double) * (size_t)(N * n));
    double *K = calloc((size_t)(N * n), sizeof(double)), *hs = malloc(sizeof(double) * (size_t)(N * n));
    double ones[8], size = 0;
    CHECK(m->family->energy && n <= 8, "%s: no energy", what);
    m->family->residual_grad(m, theta, n, xv, G);
    if (ps->gradVknown) ps->gradVknown(n, xv, ps->params, K);
    for (long i = 0; i < N * n; i++) G[i] += K[i], size = fmax(size, fabs(G[i]));
    for (long i = 0; i < N * n; i++) hs[i] = 1e-6 * (rotation_entry(ps, (int)(i / n)) ? 1 : 0.02);
    for (long b = 0; b < n; b++) ones[b] = 1; /* each state's energy its own: d(sum E)/dx_(i,b) = dE_b/dx_(i,b) */
    memcpy(x, xv, sizeof(double) * (size_t)(W * n));
    FdWorst w = {0}; /* absolute, over the largest entry */
    if (m->family->energy)
        fd_vjp(energy_at, &(EnergyAt){m, theta, n}, x, N * n, n, ones, G, &(FdOpts){.hs = hs, .scale = size}, &w);
    printf("liet2 model (%s): its energy's central differences against its gradient: off by %.1e of %.1e\n", what,
           w.err * size, size);
    CHECK(size > 0 && w.err < 1e-6, "%s: the energy's gradient (largest entry %g; input: row i of state b at i n + b): "
          FD_FMT, what, size, FD_ARGS(w));
    free(x), free(G), free(K), free(hs);
}

/* Each recurrent block on the tape: its gradient against central differences, and its forward
   pass on the system's own potential against the integrator `physc simulate` steps. */
static void tape_steps(void) {
    Loaded l;
    if (!open_liet2_file(&l, 0)) return;
    PrtSystem *ps = &l.c.ps;
    CHECK(ps->FieldVJP != NULL, "a liet2 model's compile has no FieldVJP");
    long n = 3, len = (long)prt_state_rows(ps) * n;
    double *z0 = sample(&l, n, 21), *z = malloc(sizeof(double) * (size_t)len);
    double *work = malloc(sizeof(double) * (size_t)(prt_lie_work_len(ps, n) + 5 * len));
    PrtRng rng;
    prt_rng_seed(&rng, 17);
    PrtTape *t = prt_tape_new();
    for (size_t k = 0; k < sizeof so3_methods / sizeof so3_methods[0]; k++) {
        int id = so3_methods[k];
        tape_gradient_of(ps, id, n, z0, &rng);
        memcpy(z, z0, sizeof(double) * (size_t)len);
        for (int j = 0; j < 5; j++)
            if (prt_integrators[id].kind == PRT_KIND_LIE)
                prt_lie_step(ps, (PrtLieMethod)prt_lie_method(id), n, 2e-4, z, work);
            else
                prt_rk_step(prt_integrator_tableau(id), prt_hamiltonian_rhs, ps, n, prt_state_rows(ps), 2e-4, z, work);
        prt_tape_reset(t);
        int v = prt_tape_leaf(t, len);
        memcpy(prt_tape_val(t, v), z0, sizeof(double) * (size_t)len);
        double kadj[64];
        PrtLieTapeTerms terms = {true_grad, NULL, ps, kadj};
        for (int j = 0; j < 5; j++) v = prt_tape_so3_step(t, ps, id, v, n, 2e-4, &terms);
        double worst = 0;
        for (long i = 0; i < len; i++) worst = fmax(worst, fabs(prt_tape_val(t, v)[i] - z[i]) / (fabs(z[i]) + 1e-3));
        CHECK(worst < 1e-12, "%s on the tape is not the integrator: %g", prt_integrators[id].name, worst);
    }
    prt_tape_free(t);
    free(z0), free(z), free(work);
    loaded_close(&l);
}

/* The worst relative error, over 4 random directions, of grad (a model's loss gradient at
   theta) against central differences of its loss. */
static double gradient_error(PrtModel *m, double *theta, const double *grad, long n, int npts, const double *xv,
                             PrtRng *rng) {
    double *d = malloc(sizeof(double) * (size_t)m->nparams);
    FdWorst w = {0};
    for (int trial = 0; trial < 4; trial++) {
        for (long i = 0; i < m->nparams; i++) d[i] = prt_rng_normal(rng);
        fd_grad(fd_loss, &(FdLoss){m, n, npts, 2e-4, xv}, theta, m->nparams, grad, &(FdOpts){.h = 1e-6, .dir = d}, &w);
    }
    free(d);
    return w.err;
}

/* tests/run/liet2.phys's forced model with small networks (a SiLU potential of 12, a tanh
   force of 8), 2 Lie T2 substeps, l2 loss: true, or false after a failed check. */
static bool open_small_liet2(Loaded *l, PrtModel *m) {
    char err[512];
    if (!open_liet2_file(l, 1)) return false; /* model forced */
    PrtSystem *ps = &l->c.ps;
    PrtMlp nets[2] = {{.nlayers = 2, .size = {ps->N, 12, 1}, .act = PRT_ACT_SILU},
                      {.nlayers = 2, .size = {prt_state_rows(ps), 8, ps->NP}, .act = PRT_ACT_TANH}};
    PrtModelConfig cfg = prt_model_config(prt_model_family("liet2"), &nets[0], false);
    cfg.nnets = 2, cfg.net[1] = nets[1], cfg.integrator = cfg.predict = PRT_INT_LIET2, cfg.substeps = 2, cfg.l2 = true;
    if (prt_model_open(m, ps, &cfg, err, sizeof err) != 0) {
        CHECK(false, "liet2 model: %s", err);
        loaded_close(l);
        return false;
    }
    return true;
}

/* A loss over a set is the mean of its chunks' losses, in whatever blocks it is evaluated
   (prt_model_set_loss cuts large sets into blocks whose size depends on the tape): the
   liet2 model's loss of 200 chunks against the means over blocks of 8 and of 1, and against
   prt_model_set_loss (a first block of PRT_MODEL_LOSS_PROBE, then its own). */
static void loss_block_independence(void) {
    Loaded l;
    PrtModel m;
    if (!open_small_liet2(&l, &m)) return;
    PrtSystem *ps = &l.c.ps;
    char err[512];
    long n = 200, npts = 3, rows = prt_state_rows(ps) * npts;
    PrtTrajSet full;
    CHECK(prt_trajset_generate(ps, n, (int)npts, 2e-4, 1e-10, 1e-14, 4, &full, err, sizeof err) == 0, "%s", err);
    double *theta = malloc(sizeof(double) * (size_t)m.nparams), *block = malloc(sizeof(double) * (size_t)(rows * n));
    PrtRng rng;
    prt_rng_seed(&rng, 9);
    for (long i = 0; i < m.nparams; i++) theta[i] = 0.3 * prt_rng_normal(&rng);
    double whole = prt_model_loss(&m, theta, n, (int)npts, 2e-4, full.xv);
    for (long size = 8; size >= 1; size -= 7) {
        double sum = 0;
        for (long b0 = 0; b0 < n; b0 += size) {
            for (long r = 0; r < rows; r++) memcpy(block + r * size, full.xv + r * n + b0, sizeof(double) * (size_t)size);
            sum += prt_model_loss(&m, theta, size, (int)npts, 2e-4, block) * (double)size;
        }
        CHECK(fabs(sum / (double)n - whole) <= 1e-12 * whole, "the loss of 200 chunks %.15g is not the mean over blocks of %ld, %.15g",
              whole, size, sum / (double)n);
    }
    double set = prt_model_set_loss(&m, theta, false, n, (int)npts, 2e-4, full.xv);
    CHECK(fabs(set - whole) <= 1e-12 * whole, "prt_model_set_loss of 200 chunks %.15g is not their loss %.15g", set, whole);
    free(theta), free(block);
    prt_trajset_free(&full);
    prt_model_close(&m);
    loaded_close(&l);
}

/* ---- the liet2 model: its loss gradient (known gravity's VJP, the networks, two substeps) ---- */

static void model_gradient(void) {
    Loaded l;
    PrtModel m;
    if (!open_small_liet2(&l, &m)) return;
    PrtSystem *ps = &l.c.ps;
    char err[512];
    CHECK(ps->gradVknown && ps->gradVknownVJP, "no known-gravity kernels for a liet2 model");
    CHECK(prt_model_trainable(&m), "the liet2 model is not trainable");
    long n = 3, npts = 3, W = prt_state_rows(ps);
    PrtTrajSet full;
    CHECK(prt_trajset_generate(ps, n, (int)npts, 2e-4, 1e-10, 1e-14, 4, &full, err, sizeof err) == 0, "%s", err);
    double *theta = malloc(sizeof(double) * (size_t)m.nparams), *grad = malloc(sizeof(double) * (size_t)m.nparams);
    PrtRng rng;
    prt_rng_seed(&rng, 9);
    for (long i = 0; i < m.nparams; i++) theta[i] = 0.3 * prt_rng_normal(&rng); /* not the zero-residual start */
    double L = prt_model_loss_grad(&m, theta, n, (int)npts, 2e-4, full.xv, grad);
    double L2 = prt_model_loss(&m, theta, n, (int)npts, 2e-4, full.xv);
    double worst = gradient_error(&m, theta, grad, n, (int)npts, full.xv, &rng);
    printf("liet2 model (known gravity, a potential and a force network, 2 substeps): loss %.3e, its gradient against "
           "central differences %.1e\n", L, worst);
    CHECK(L == L2, "loss_grad's loss %g is not loss's %g", L, L2);
    CHECK(worst < 1e-6, "the liet2 model's gradient is off by %g", worst);
    (void)W;
    free(theta), free(grad);
    prt_trajset_free(&full);
    prt_model_close(&m);
    loaded_close(&l);
}

/* A rollout recorded in segments (model_lie.c: the backward pass records each segment
   again from its first state, instead of storing every stage) against the stored one: the
   same loss and gradient to the bit, for three recurrent blocks, in f64 and f32, with
   segments of one step (cut at the intervals' ends too) and of three (cut inside an
   interval); the loss alone records the same bytes in all (set losses' blocks are sized by
   them) and holds fewer at once; the segmented gradient against central differences. */
static void segmented_gradient(void) {
    Loaded l;
    PrtModel m;
    if (!open_small_liet2(&l, &m)) return;
    PrtSystem *ps = &l.c.ps;
    char err[512];
    long n = 3, npts = 4; /* 3 intervals of 2 substeps: 6 steps */
    PrtTrajSet data;
    CHECK(prt_trajset_generate(ps, n, (int)npts, 2e-4, 1e-10, 1e-14, 5, &data, err, sizeof err) == 0, "%s", err);
    long np = m.nparams;
    double *theta = malloc(sizeof(double) * (size_t)np), *stored = malloc(sizeof(double) * (size_t)np),
           *cut = malloc(sizeof(double) * (size_t)np);
    PrtRng rng;
    prt_rng_seed(&rng, 31);
    for (long i = 0; i < np; i++) theta[i] = 0.3 * prt_rng_normal(&rng);
    static const int blocks[] = {PRT_INT_LIET2, PRT_INT_LIE_RK4, PRT_INT_RK4};
    int differ = 0, cases = 0;
    double held_ratio = 0;
    for (int b = 0; b < 3; b++)
        for (int f32 = 0; f32 < 2; f32++) {
            m.cfg.integrator = m.cfg.predict = blocks[b];
            m.cfg.net[0].f32 = m.cfg.net[1].f32 = f32;
            prt_lie_config(&m.cfg)->segment_bytes = SIZE_MAX;
            double L0 = prt_model_loss_grad(&m, theta, n, (int)npts, 2e-4, data.xv, stored);
            size_t whole = prt_tape_bytes_in_use(m.tape), step = whole / 6 / (size_t)n;
            size_t sizes[2] = {1, step * 5 / 2};
            for (int k = 0; k < 2; k++, cases++) {
                prt_lie_config(&m.cfg)->segment_bytes = sizes[k];
                double L1 = prt_model_loss_grad(&m, theta, n, (int)npts, 2e-4, data.xv, cut);
                double L2 = prt_model_loss(&m, theta, n, (int)npts, 2e-4, data.xv);
                size_t recorded = prt_tape_bytes_recorded(m.tape), peak = prt_tape_bytes_peak(m.tape);
                held_ratio = fmax(held_ratio, (double)peak / (double)whole);
                bool same = L0 == L1 && L0 == L2 && !memcmp(stored, cut, sizeof(double) * (size_t)np) && recorded == whole &&
                            peak < whole;
                if (!same) {
                    differ++;
                    printf("  %s %s, segments of %zu bytes a chunk: loss %.17g / %.17g / %.17g, gradient %s, %zu bytes "
                           "recorded of %zu, %zu held\n", prt_integrators[blocks[b]].name, f32 ? "f32" : "f64", sizes[k], L0,
                           L1, L2, memcmp(stored, cut, sizeof(double) * (size_t)np) ? "differs" : "the same", recorded,
                           whole, peak);
                }
            }
        }
    m.cfg.integrator = m.cfg.predict = PRT_INT_LIET2;
    m.cfg.net[0].f32 = m.cfg.net[1].f32 = false;
    prt_lie_config(&m.cfg)->segment_bytes = 1;
    prt_model_loss_grad(&m, theta, n, (int)npts, 2e-4, data.xv, cut);
    double worst = gradient_error(&m, theta, cut, n, (int)npts, data.xv, &rng);
    printf("liet2 model, its rollout recorded in segments: loss and gradient as the stored rollout's in %d of %d cases "
           "(at most %.2f of its tape held at once); the segmented gradient against central differences %.1e\n",
           cases - differ, cases, held_ratio, worst);
    CHECK(differ == 0, "%d of %d segmented recordings differ from the stored one", differ, cases);
    CHECK(worst < 1e-6, "the segmented gradient is off by %g", worst);
    free(theta), free(stored), free(cut);
    prt_trajset_free(&data);
    prt_model_close(&m);
    loaded_close(&l);
}

/* A network's unit of length (`length_scale` L) is a change of variables, not of the model:
   with the position columns of its first layer divided by L it is the same model with L = 1
   (to rounding), and the loss gradient through the scaled inputs is right. */
static void length_scale(void) {
    Loaded l;
    char err[512];
    if (!open_liet2_file(&l, 1)) return;
    PrtSystem *ps = &l.c.ps;
    int W = prt_state_rows(ps);
    PrtMlp nets[2] = {{.nlayers = 2, .size = {ps->N, 12, 1}, .act = PRT_ACT_SILU},
                      {.nlayers = 2, .size = {W, 8, ps->NP}, .act = PRT_ACT_TANH}};
    PrtModelConfig cfg = prt_model_config(prt_model_family("liet2"), &nets[0], false);
    cfg.nnets = 2, cfg.net[1] = nets[1], cfg.integrator = cfg.predict = PRT_INT_LIET2, cfg.substeps = 2, cfg.l2 = true;
    PrtModelConfig scaled = cfg;
    prt_lie_config(&scaled)->net[0].length_scale = 0.02, prt_lie_config(&scaled)->net[1].length_scale = 0.05;
    PrtModel m1, mL;
    if (prt_model_open(&m1, ps, &cfg, err, sizeof err) != 0 || prt_model_open(&mL, ps, &scaled, err, sizeof err) != 0) {
        CHECK(false, "liet2 model: %s", err);
        loaded_close(&l);
        return;
    }
    long n = 3, npts = 3, np = m1.nparams, nV = prt_mlp_nparams(&nets[0]);
    PrtTrajSet full;
    CHECK(prt_trajset_generate(ps, n, (int)npts, 2e-4, 1e-10, 1e-14, 4, &full, err, sizeof err) == 0, "%s", err);
    double *theta = malloc(sizeof(double) * (size_t)np), *theta1 = malloc(sizeof(double) * (size_t)np);
    double *grad = malloc(sizeof(double) * (size_t)np);
    PrtRng rng;
    prt_rng_seed(&rng, 12);
    for (long i = 0; i < np; i++) theta[i] = 0.3 * prt_rng_normal(&rng);
    /* the same model at L = 1: W_1's position columns over L (rotation and momentum columns as they are) */
    memcpy(theta1, theta, sizeof(double) * (size_t)np);
    for (int k = 0; k < 2; k++) {
        const PrtMlp *net = &nets[k];
        double *W1 = theta1 + (k ? nV : 0);
        for (int r = 0; r < net->size[1]; r++)
            for (int c = 0; c < ps->N; c++) {
                if (!rotation_entry(ps, c)) W1[r * net->size[0] + c] /= prt_lie_config(&scaled)->net[k].length_scale;
            }
    }
    double L1 = prt_model_loss(&m1, theta1, n, (int)npts, 2e-4, full.xv);
    double LL = prt_model_loss_grad(&mL, theta, n, (int)npts, 2e-4, full.xv, grad);
    double worst = gradient_error(&mL, theta, grad, n, (int)npts, full.xv, &rng);
    printf("liet2 model, length scales 0.02 and 0.05: loss %.6e, the L = 1 model with rescaled first layers %.6e "
           "(%.1e relative); gradient against central differences %.1e\n", LL, L1, fabs(LL - L1) / L1, worst);
    CHECK(fabs(LL - L1) < 1e-9 * L1, "a length scale changes the model: %.17g vs %.17g", LL, L1);
    CHECK(worst < 1e-6, "the gradient through scaled inputs is off by %g", worst);
    PrtModelConfig bad = cfg;
    prt_lie_config(&bad)->net[0].length_scale = 0;
    PrtModel mb;
    CHECK(prt_model_open(&mb, ps, &bad, err, sizeof err) != 0 && strstr(err, "length and time scales"), "a zero length scale was taken");

    /* balanced loss weights: the known terms alone (theta = 0) score 1, and the weighted
       loss's gradient is right */
    PrtModelConfig bal = scaled;
    bal.balance_loss = true;
    PrtModel mw;
    if (prt_model_open(&mw, ps, &bal, err, sizeof err) != 0 ||
        prt_model_balance(&mw, n, (int)npts, 2e-4, full.xv, err, sizeof err) != 0) {
        CHECK(false, "balanced liet2 model: %s", err);
    } else {
        double *zero = calloc((size_t)np, sizeof(double));
        double L0 = prt_model_loss(&mw, zero, n, (int)npts, 2e-4, full.xv);
        double Lw = prt_model_loss_grad(&mw, theta, n, (int)npts, 2e-4, full.xv, grad);
        double wworst = gradient_error(&mw, theta, grad, n, (int)npts, full.xv, &rng);
        printf("liet2 model, balanced loss weights: the known terms alone score %.15f, a random theta %.3e (unweighted "
               "%.3e); gradient against central differences %.1e\n", L0, Lw, LL, wworst);
        CHECK(fabs(L0 - 1) < 1e-12, "the known terms alone score %.17g, not 1, under balanced weights", L0);
        CHECK(wworst < 1e-6, "the balanced loss's gradient is off by %g", wworst);
        free(zero);
        prt_model_close(&mw);
    }
    /* a force of velocities and body angular velocities, in units L / T and 1 / T: the same
       model as L = T = 1 with those columns of its first layer scaled, and its gradient right */
    PrtModelConfig vel = cfg, vel1 = cfg;
    prt_lie_config(&vel)->net[1].velocity_input = prt_lie_config(&vel1)->net[1].velocity_input = true;
    prt_lie_config(&vel)->net[1].length_scale = 0.05, prt_lie_config(&vel)->net[1].time_scale = 3e-4;
    PrtModel mv, mv1;
    if (prt_model_open(&mv, ps, &vel, err, sizeof err) != 0 || prt_model_open(&mv1, ps, &vel1, err, sizeof err) != 0) {
        CHECK(false, "liet2 model with a force of velocities: %s", err);
    } else {
        memcpy(theta1, theta, sizeof(double) * (size_t)np);
        double *W1 = theta1 + nV;
        for (int r = 0; r < nets[1].size[1]; r++)
            for (int c = 0; c < W; c++) {
                bool rotation = false, angular = false;
                for (int b = 0; b < ps->nso3; b++) {
                    rotation |= c >= ps->so3[b].x + 3 && c < ps->so3[b].x + 12;
                    angular |= c - ps->N >= ps->so3[b].p + 3 && c - ps->N < ps->so3[b].p + 6;
                }
                double f = c < ps->N ? (rotation ? 1 : 1 / 0.05) : angular ? 3e-4 : 3e-4 / 0.05;
                W1[r * W + c] *= f;
            }
        double Lv1 = prt_model_loss(&mv1, theta1, n, (int)npts, 2e-4, full.xv);
        double Lv = prt_model_loss_grad(&mv, theta, n, (int)npts, 2e-4, full.xv, grad);
        double vworst = gradient_error(&mv, theta, grad, n, (int)npts, full.xv, &rng);
        printf("liet2 model, a force of velocities in units 0.05 / 3e-4: loss %.6e, unscaled with rescaled columns %.6e; "
               "gradient against central differences %.1e\n", Lv, Lv1, vworst);
        CHECK(fabs(Lv - Lv1) < 1e-9 * Lv1, "time and length scales change the model: %.17g vs %.17g", Lv, Lv1);
        CHECK(vworst < 1e-6, "the gradient through the velocities is off by %g", vworst);
        prt_model_close(&mv), prt_model_close(&mv1);
    }
    PrtModelConfig chnn = prt_model_config(prt_model_family("chnn"), &nets[0], false);
    chnn.balance_loss = true;
    CHECK(prt_model_open(&mb, ps, &chnn, err, sizeof err) != 0 && strstr(err, "loss_weights balanced"),
          "a chnn model took balanced loss weights: %s", err);
    free(theta), free(theta1), free(grad);
    prt_trajset_free(&full);
    prt_model_close(&m1), prt_model_close(&mL);
    loaded_close(&l);
}

/* A potential of the bodies' centres alone (`input centres`: the positions without the
   rotation entries) is the full-input potential whose first layer ignores the rotations: the
   same loss (with length scales, which the centres read too), no torque, and a right gradient. */
static void centres_input(void) {
    Loaded l;
    char err[512];
    if (!open_liet2_file(&l, 1)) return;
    PrtSystem *ps = &l.c.ps;
    int C = 0, *rows = malloc(sizeof(int) * (size_t)ps->N);
    for (int i = 0; i < ps->N; i++) {
        if (!rotation_entry(ps, i)) rows[C++] = i;
    }
    PrtMlp full = {.nlayers = 2, .size = {ps->N, 12, 1}, .act = PRT_ACT_SILU};
    PrtMlp centres = {.nlayers = 2, .size = {C, 12, 1}, .act = PRT_ACT_SILU};
    PrtModelConfig cf = prt_model_config(prt_model_family("liet2"), &full, false);
    cf.integrator = cf.predict = PRT_INT_LIET2, cf.substeps = 2, cf.l2 = true, prt_lie_config(&cf)->net[0].length_scale = 0.05;
    prt_lie_config(&cf)->net[0].scale = 30;
    PrtModelConfig cc = cf;
    cc.net[0] = centres;
    PrtModel mf, mc;
    if (prt_model_open(&mf, ps, &cf, err, sizeof err) != 0 || prt_model_open(&mc, ps, &cc, err, sizeof err) != 0) {
        CHECK(false, "liet2 model: %s", err);
        free(rows);
        loaded_close(&l);
        return;
    }
    long n = 3, npts = 3;
    PrtTrajSet data;
    CHECK(prt_trajset_generate(ps, n, (int)npts, 2e-4, 1e-10, 1e-14, 4, &data, err, sizeof err) == 0, "%s", err);
    double *tc = malloc(sizeof(double) * (size_t)mc.nparams), *tf = calloc((size_t)mf.nparams, sizeof(double));
    double *grad = malloc(sizeof(double) * (size_t)mc.nparams);
    PrtRng rng;
    prt_rng_seed(&rng, 21);
    for (long i = 0; i < mc.nparams; i++) tc[i] = 0.3 * prt_rng_normal(&rng);
    /* the full network: W1's centre columns from the centres network, its rotation columns 0 */
    for (int r = 0; r < 12; r++)
        for (int c = 0; c < C; c++) tf[r * ps->N + rows[c]] = tc[r * C + c];
    memcpy(tf + 12 * ps->N, tc + 12 * C, sizeof(double) * (size_t)(mc.nparams - 12 * C));
    double Lf = prt_model_loss(&mf, tf, n, (int)npts, 2e-4, data.xv);
    double Lc = prt_model_loss_grad(&mc, tc, n, (int)npts, 2e-4, data.xv, grad);
    double worst = gradient_error(&mc, tc, grad, n, (int)npts, data.xv, &rng);
    /* its residual gradient: none on the rotation entries */
    long N = ps->N;
    double *X = malloc(sizeof(double) * (size_t)(N * n)), *G = malloc(sizeof(double) * (size_t)(N * n)), torque = 0;
    memcpy(X, data.xv, sizeof(double) * (size_t)(N * n)); /* the first points */
    mc.family->residual_grad(&mc, tc, n, X, G);
    for (long i = 0; i < N; i++) {
        bool centre = false;
        for (int c = 0; c < C; c++) centre |= rows[c] == i;
        if (!centre)
            for (long b = 0; b < n; b++) torque = fmax(torque, fabs(G[i * n + b]));
    }
    printf("liet2 model, a potential of the %d centres: loss %.6e, the full-input potential with zero rotation columns "
           "%.6e; gradient against central differences %.1e; largest gradient on a rotation entry %g\n", C, Lc, Lf, worst,
           torque);
    CHECK(fabs(Lc - Lf) < 1e-12 * Lf, "a centres potential is not the full one without its rotation columns: %.17g vs %.17g",
          Lc, Lf);
    CHECK(worst < 1e-6, "the gradient through the centres is off by %g", worst);
    CHECK(torque == 0, "a potential of the centres has a gradient %g on a rotation entry", torque);
    PrtMlp wrong = {.nlayers = 2, .size = {C + 1, 12, 1}, .act = PRT_ACT_SILU};
    PrtModelConfig cw = cf;
    cw.net[0] = wrong;
    PrtModel mw;
    CHECK(prt_model_open(&mw, ps, &cw, err, sizeof err) != 0 && strstr(err, "input centres"),
          "a potential of %d inputs was taken: %s", C + 1, err);
    free(rows), free(tc), free(tf), free(grad), free(X), free(G);
    prt_trajset_free(&data);
    prt_model_close(&mf), prt_model_close(&mc);
    loaded_close(&l);
}

/* Several residual potentials (a potential of the centres for the orbits, one of the whole X
   for the spins, each at its own scale) and a force after them: the residual gradient is the
   sum of each potential's own, the loss is the centres potential's alone while the other's
   last layer is zero, and the gradient of every network's parameters is right. */
static void two_potentials(void) {
    Loaded l;
    char err[512];
    if (!open_liet2_file(&l, 1)) return;
    PrtSystem *ps = &l.c.ps;
    int C = 0;
    for (int i = 0; i < ps->N; i++) C += !rotation_entry(ps, i);
    PrtMlp centres = {.nlayers = 2, .size = {C, 10, 1}, .act = PRT_ACT_SILU};
    PrtMlp whole = {.nlayers = 2, .size = {ps->N, 8, 1}, .act = PRT_ACT_TANH};
    PrtMlp force = {.nlayers = 2, .size = {ps->N, 6, ps->NP}, .act = PRT_ACT_SILU};
    PrtModelConfig c2 = prt_model_config(prt_model_family("liet2"), &centres, false);
    c2.integrator = c2.predict = PRT_INT_LIET2, c2.substeps = 2, c2.l2 = true;
    prt_lie_config(&c2)->net[0].length_scale = 0.05, prt_lie_config(&c2)->net[0].scale = 30, prt_lie_config(&c2)->net[1].length_scale = 0.2, prt_lie_config(&c2)->net[1].scale = 0.01, prt_lie_config(&c2)->net[2].scale = 0.5;
    c2.nnets = 3, prt_lie_config(&c2)->npotentials = 2, c2.net[1] = whole, c2.net[2] = force;
    PrtModelConfig cc = c2, cw = c2; /* each potential alone, with the force */
    cc.nnets = cw.nnets = 2, prt_lie_config(&cc)->npotentials = prt_lie_config(&cw)->npotentials = 1;
    cc.net[1] = cw.net[1] = force, prt_lie_config(&cc)->net[1].scale = prt_lie_config(&cw)->net[1].scale = 0.5, prt_lie_config(&cc)->net[1].length_scale = prt_lie_config(&cw)->net[1].length_scale = 1;
    cw.net[0] = whole, prt_lie_config(&cw)->net[0].scale = 0.01, prt_lie_config(&cw)->net[0].length_scale = 0.2;
    PrtModel m2, mc, mw;
    if (prt_model_open(&m2, ps, &c2, err, sizeof err) != 0 || prt_model_open(&mc, ps, &cc, err, sizeof err) != 0 ||
        prt_model_open(&mw, ps, &cw, err, sizeof err) != 0) {
        CHECK(false, "liet2 model with two potentials: %s", err);
        loaded_close(&l);
        return;
    }
    long nC = prt_mlp_nparams(&centres), nW = prt_mlp_nparams(&whole), nF = prt_mlp_nparams(&force);
    CHECK(m2.nparams == nC + nW + nF, "two potentials and a force: %ld parameters, not %ld", m2.nparams, nC + nW + nF);
    long n = 3, npts = 3, N = ps->N;
    PrtTrajSet data;
    CHECK(prt_trajset_generate(ps, n, (int)npts, 2e-4, 1e-10, 1e-14, 4, &data, err, sizeof err) == 0, "%s", err);
    double *t2 = malloc(sizeof(double) * (size_t)m2.nparams), *tc = malloc(sizeof(double) * (size_t)mc.nparams);
    double *tw = malloc(sizeof(double) * (size_t)mw.nparams), *grad = malloc(sizeof(double) * (size_t)m2.nparams);
    PrtRng rng;
    prt_rng_seed(&rng, 23);
    for (long i = 0; i < m2.nparams; i++) t2[i] = 0.3 * prt_rng_normal(&rng);
    memcpy(tc, t2, sizeof(double) * (size_t)nC), memcpy(tc + nC, t2 + nC + nW, sizeof(double) * (size_t)nF);
    memcpy(tw, t2 + nC, sizeof(double) * (size_t)nW), memcpy(tw + nW, t2 + nC + nW, sizeof(double) * (size_t)nF);
    /* the residual gradient: the sum of the two potentials' */
    double *X = malloc(sizeof(double) * (size_t)(N * n)), *G2 = malloc(sizeof(double) * (size_t)(N * n));
    double *Gc = malloc(sizeof(double) * (size_t)(N * n)), *Gw = malloc(sizeof(double) * (size_t)(N * n)), sum_err = 0, size = 0;
    memcpy(X, data.xv, sizeof(double) * (size_t)(N * n));
    m2.family->residual_grad(&m2, t2, n, X, G2);
    mc.family->residual_grad(&mc, tc, n, X, Gc);
    mw.family->residual_grad(&mw, tw, n, X, Gw);
    energy_gradient(&m2, t2, n, data.xv, "centres and whole X, scaled");
    for (long i = 0; i < N * n; i++) sum_err = fmax(sum_err, fabs(G2[i] - Gc[i] - Gw[i])), size = fmax(size, fabs(G2[i]));
    /* the whole-X potential's last layer zero: the model is the centres one */
    double *tz = malloc(sizeof(double) * (size_t)m2.nparams);
    memcpy(tz, t2, sizeof(double) * (size_t)m2.nparams);
    memset(tz + nC + nW - 9, 0, sizeof(double) * 9); /* its 8 output weights and bias */
    double Lz = prt_model_loss(&m2, tz, n, (int)npts, 2e-4, data.xv), Lc = prt_model_loss(&mc, tc, n, (int)npts, 2e-4, data.xv);
    double L2 = prt_model_loss_grad(&m2, t2, n, (int)npts, 2e-4, data.xv, grad);
    double worst = gradient_error(&m2, t2, grad, n, (int)npts, data.xv, &rng);
    printf("liet2 model, two potentials (centres x 30, whole X x 0.01) and a force: residual gradient off the sum of each "
           "potential's by %.1e (of %.1e); loss %.6e, with the second's last layer zero %.6e (the first alone %.6e); "
           "gradient against central differences %.1e\n", sum_err, size, L2, Lz, Lc, worst);
    CHECK(sum_err <= 1e-14 * size, "the residual gradient is not the sum of the potentials': off by %g", sum_err);
    CHECK(Lz == Lc, "a zero second potential changes the model: %.17g vs %.17g", Lz, Lc);
    CHECK(fabs(L2 - Lc) > 1e-6 * Lc, "the second potential does not change the loss (%g vs %g)", L2, Lc);
    CHECK(worst < 1e-6, "the gradient through two potentials is off by %g", worst);
    PrtModelConfig bad = c2;
    prt_lie_config(&bad)->npotentials = 0;
    PrtModel mb;
    CHECK(prt_model_open(&mb, ps, &bad, err, sizeof err) != 0 && strstr(err, "learned potentials"),
          "a liet2 model without a potential was taken: %s", err);
    free(t2), free(tc), free(tw), free(tz), free(grad), free(X), free(G2), free(Gc), free(Gw);
    prt_trajset_free(&data);
    prt_model_close(&m2), prt_model_close(&mc), prt_model_close(&mw);
    loaded_close(&l);
}

/* The potentials of body_frame_input, own_frame_input and own_centres_input written out here,
   of one state x (fd_check.h) */
typedef struct NetAt {
    const PrtMlp *net;
    const double *theta;
    PrtMlpWork *w;
    int planet; /* body_frame: the planet's first row */
    long np;    /* own_*: the gains follow the network's np parameters */
    const int *first; /* own_*: each body's first row */
} NetAt;

static double largest_of(const double *v, long len) {
    double m = 0;
    for (long i = 0; i < len; i++) m = fmax(m, fabs(v[i]));
    return m;
}

/* 3 MLP(d / 0.02), d = R^T (q_star - q_planet), the star a point at rows 0-2 */
static void body_frame_v(void *ctx, const double *x, double *V) {
    NetAt *a = ctx;
    const double *qs = x, *qp = x + a->planet, *R = x + a->planet + 3;
    double d[3];
    for (int i = 0; i < 3; i++) {
        d[i] = 0;
        for (int c = 0; c < 3; c++) d[i] += R[3 * c + i] * (qs[c] - qp[c]) / 0.02;
    }
    prt_mlp_forward(a->net, a->theta, 1, d, V, a->w);
    *V *= 3;
}

/* 2 sum over the planets i of exp(rho_i) net(R_i^T (q_j - q_i) / 0.02 for the other two j, e_i) */
static void own_frame_v(void *ctx, const double *x, double *V) {
    NetAt *a = ctx;
    *V = 0;
    for (int body = 1; body <= 2; body++) {
        double in[8] = {0}, out;
        const double *R = x + a->first[body] + 3;
        for (int j = 0, k = 0; j < 3; j++) {
            if (j == body) continue;
            for (int i = 0; i < 3; i++, k++)
                for (int c = 0; c < 3; c++) in[k] += R[3 * c + i] * (x[a->first[j] + c] - x[a->first[body] + c]) / 0.02;
        }
        in[6 + body - 1] = 1;
        prt_mlp_forward(a->net, a->theta, 1, in, &out, a->w);
        *V += 2 * exp(a->theta[a->np + body - 1]) * out;
    }
}

/* 2 sum over the three bodies i of exp(rho_i) net((q_j - q_i) / 0.02 for the other two j, e_i) */
static void own_centres_v(void *ctx, const double *x, double *V) {
    NetAt *a = ctx;
    *V = 0;
    for (int body = 0; body < 3; body++) {
        double in[9] = {0}, out;
        for (int j = 0, k = 0; j < 3; j++)
            for (int i = 0; i < 3 && j != body; i++, k++) in[k] = (x[a->first[j] + i] - x[a->first[body] + i]) / 0.02;
        in[6 + body] = 1;
        prt_mlp_forward(a->net, a->theta, 1, in, &out, a->w);
        *V += 2 * exp(a->theta[a->np + body]) * out;
    }
}

/* A potential of each rigid body's view of the others (`input body_frame`: d = R^T (q_star -
   q_planet), the planet's view of the point star): its gradient against central differences
   of the network's value at features built here, its forces summing to zero and its gradient
   turning with the system (a rotation Q and a shift of every body: dV/dq -> Q dV/dq, dV/dR ->
   Q dV/dR), which makes the total momentum and angular momentum constants of its flow; and
   the training gradient through it against central differences. */
static void body_frame_input(void) {
    Loaded l;
    char err[512];
    if (!open_liet2_file(&l, 1)) return;
    PrtSystem *ps = &l.c.ps;
    long rows = prt_body_frame_rows(ps);
    CHECK(rows == 3, "a star and a planet: %ld body-frame inputs, not 3", rows);
    PrtMlp net = {.nlayers = 2, .size = {(int)rows, 10, 1}, .act = PRT_ACT_SILU};
    PrtModelConfig cfg = prt_model_config(prt_model_family("liet2"), &net, false);
    cfg.integrator = cfg.predict = PRT_INT_LIET2, cfg.substeps = 2, cfg.l2 = true;
    prt_lie_config(&cfg)->net[0].body_frame_input = true, prt_lie_config(&cfg)->net[0].length_scale = 0.02, prt_lie_config(&cfg)->net[0].scale = 3;
    PrtModel m;
    if (prt_model_open(&m, ps, &cfg, err, sizeof err) != 0) {
        CHECK(false, "liet2 model of body-frame inputs: %s", err);
        loaded_close(&l);
        return;
    }
    long n = 3, npts = 3, N = ps->N;
    PrtTrajSet data;
    CHECK(prt_trajset_generate(ps, n, (int)npts, 2e-4, 1e-10, 1e-14, 4, &data, err, sizeof err) == 0, "%s", err);
    double *theta = malloc(sizeof(double) * (size_t)m.nparams), *grad = malloc(sizeof(double) * (size_t)m.nparams);
    PrtRng rng;
    prt_rng_seed(&rng, 25);
    for (long i = 0; i < m.nparams; i++) theta[i] = 0.3 * prt_rng_normal(&rng);
    double *X = malloc(sizeof(double) * (size_t)(N * n)), *G = malloc(sizeof(double) * (size_t)(N * n));
    double *Xr = malloc(sizeof(double) * (size_t)(N * n)), *Gr = malloc(sizeof(double) * (size_t)(N * n));
    memcpy(X, data.xv, sizeof(double) * (size_t)(N * n));
    m.family->residual_grad(&m, theta, n, X, G);
    energy_gradient(&m, theta, n, data.xv, "body_frame");
    /* V(X) = 3 MLP(d / 0.02), the features written out here: star (point, rows 0-2) and planet */
    const PrtSo3Body *pl = &ps->so3[0];
    PrtMlpWork w = {0};
    FdWorst fw = {0};
    double size = largest_of(G, N * n), hs[12 + 3];
    for (int i = 0; i < N; i++) hs[i] = 1e-6 * (rotation_entry(ps, i) ? 1 : 0.02);
    for (long b = 0; b < n; b++) {
        double x[12 + 3], g[12 + 3];
        for (int r = 0; r < N; r++) x[r] = X[r * n + b], g[r] = G[r * n + b];
        fd_grad(body_frame_v, &(NetAt){.net = &net, .theta = theta, .w = &w, .planet = pl->x}, x, N, g,
                &(FdOpts){.hs = hs, .scale = size}, &fw);
    }
    prt_mlp_work_free(&w);
    /* the forces sum to zero; a rotated, shifted system has its gradient rotated */
    double Q[9], shift[3] = {0.3, -0.1, 0.2}, force_sum = 0, turn_worst = 0;
    {
        double c = cos(0.7), s = sin(0.7), c2 = cos(-1.1), s2 = sin(-1.1); /* Rz(0.7) Rx(-1.1) */
        double A[9] = {c, -s, 0, s, c, 0, 0, 0, 1}, B[9] = {1, 0, 0, 0, c2, -s2, 0, s2, c2};
        for (int r = 0; r < 3; r++)
            for (int k = 0; k < 3; k++) Q[3 * r + k] = A[3 * r] * B[k] + A[3 * r + 1] * B[3 + k] + A[3 * r + 2] * B[6 + k];
    }
    int starts[2] = {0, pl->x};
    for (long b = 0; b < n; b++) {
        for (int a = 0; a < 3; a++) force_sum = fmax(force_sum, fabs(G[a * n + b] + G[(pl->x + a) * n + b]));
        for (int body = 0; body < 2; body++) {
            int q0 = starts[body];
            for (int r = 0; r < 3; r++) {
                double v = shift[r];
                for (int k = 0; k < 3; k++) v += Q[3 * r + k] * X[(q0 + k) * n + b];
                Xr[(q0 + r) * n + b] = v;
            }
        }
        for (int r = 0; r < 3; r++) /* Q R */
            for (int c = 0; c < 3; c++) {
                double v = 0;
                for (int k = 0; k < 3; k++) v += Q[3 * r + k] * X[(pl->x + 3 + 3 * k + c) * n + b];
                Xr[(pl->x + 3 + 3 * r + c) * n + b] = v;
            }
    }
    m.family->residual_grad(&m, theta, n, Xr, Gr);
    for (long b = 0; b < n; b++) {
        for (int body = 0; body < 2; body++)
            for (int r = 0; r < 3; r++) {
                double v = 0;
                for (int k = 0; k < 3; k++) v += Q[3 * r + k] * G[(starts[body] + k) * n + b];
                turn_worst = fmax(turn_worst, fabs(v - Gr[(starts[body] + r) * n + b]));
            }
        for (int r = 0; r < 3; r++)
            for (int c = 0; c < 3; c++) {
                double v = 0;
                for (int k = 0; k < 3; k++) v += Q[3 * r + k] * G[(pl->x + 3 + 3 * k + c) * n + b];
                turn_worst = fmax(turn_worst, fabs(v - Gr[(pl->x + 3 + 3 * r + c) * n + b]));
            }
    }
    double L = prt_model_loss_grad(&m, theta, n, (int)npts, 2e-4, data.xv, grad);
    double worst = gradient_error(&m, theta, grad, n, (int)npts, data.xv, &rng);
    printf("liet2 model, a potential of %ld body-frame inputs: its gradient against central differences of the network "
           "%.1e (of %.1e); forces sum to %.1e; rotated and shifted, the gradient turns with it to %.1e; loss %.6e, "
           "gradient against central differences %.1e\n", rows, fw.err * size, size, force_sum, turn_worst, L, worst);
    CHECK(fw.err < 1e-6, "the body-frame potential's gradient (largest entry %g): " FD_FMT, size, FD_ARGS(fw));
    CHECK(force_sum < 1e-12 * size, "the body-frame potential's forces sum to %g", force_sum);
    CHECK(turn_worst < 1e-11 * size, "the body-frame potential's gradient does not turn with the system: %g", turn_worst);
    CHECK(worst < 1e-6, "the gradient through body-frame inputs is off by %g", worst);
    PrtModelConfig bad = cfg;
    bad.net[0].size[0] = (int)rows + 1;
    PrtModel mb;
    CHECK(prt_model_open(&mb, ps, &bad, err, sizeof err) != 0 && strstr(err, "input body_frame"),
          "a body-frame potential of %ld inputs was taken: %s", rows + 1, err);
    free(theta), free(grad), free(X), free(G), free(Xr), free(Gr);
    prt_trajset_free(&data);
    prt_model_close(&m);
    loaded_close(&l);
}

/* A liet2 model of cfg (its integrator and loss set here) on tests/physics/two-planets-rigid.phys
   and 3 trajectories of 3 points 2e-4 apart; false (reported, nothing left open) if either fails. */
static bool open_two_planets(Loaded *l, PrtModelConfig *cfg, PrtModel *m, PrtTrajSet *data, const char *what) {
    char err[512];
    if (!loaded_open(l, "tests/physics/two-planets-rigid.phys", COMPILE_SIMULATE, 0, stdout, err, sizeof err)) {
        CHECK(false, "two-planets-rigid.phys: %s", err);
        return false;
    }
    cfg->integrator = cfg->predict = PRT_INT_LIET2, cfg->substeps = 2, cfg->l2 = true;
    if (prt_model_open(m, &l->c.ps, cfg, err, sizeof err) != 0) {
        CHECK(false, "liet2 model of %s inputs: %s", what, err);
        loaded_close(l);
        return false;
    }
    CHECK(prt_trajset_generate(&l->c.ps, 3, 3, 2e-4, 1e-10, 1e-14, 4, data, err, sizeof err) == 0, "%s", err);
    return true;
}

/* A potential with a term per rigid body (`input own_frame`): V = 2 sum_i exp(rho_i)
   net(view_i / 0.02, e_i) on a star and two rigid planets. Its gradient against central
   differences of the network at features built here; a body's torque from its own term
   alone (the other's gain changes nothing of it); forces summing to zero; training's
   gradient, the gains' included; and the gains' start from the data: the torque the known
   terms miss, larger on the inner, more aspherical planet. */
static void own_frame_input(void) {
    Loaded l;
    char err[512], note[512];
    PrtMlp net = {.nlayers = 2, .size = {8, 10, 1}, .act = PRT_ACT_SILU};
    PrtModelConfig cfg = prt_model_config(prt_model_family("liet2"), &net, false);
    prt_lie_config(&cfg)->net[0].body_gains = 2, prt_lie_config(&cfg)->net[0].length_scale = 0.02, prt_lie_config(&cfg)->net[0].scale = 2;
    PrtModel m;
    PrtTrajSet data;
    if (!open_two_planets(&l, &cfg, &m, &data, "own_frame")) return;
    PrtSystem *ps = &l.c.ps;
    long np = prt_mlp_nparams(&net), n = 3, npts = 3, N = ps->N;
    CHECK(m.nparams == np + 2, "%ld parameters, not the network's %ld and two gains", m.nparams, np);
    double *theta = malloc(sizeof(double) * (size_t)m.nparams), *grad = malloc(sizeof(double) * (size_t)m.nparams);
    PrtRng rng;
    prt_rng_seed(&rng, 26);
    for (long i = 0; i < m.nparams; i++) theta[i] = 0.3 * prt_rng_normal(&rng);
    theta[np] = 0.4, theta[np + 1] = -1.2;
    double *X = malloc(sizeof(double) * (size_t)(N * n)), *G = malloc(sizeof(double) * (size_t)(N * n));
    double *G2 = malloc(sizeof(double) * (size_t)(N * n));
    memcpy(X, data.xv, sizeof(double) * (size_t)(N * n));
    m.family->residual_grad(&m, theta, n, X, G);
    energy_gradient(&m, theta, n, data.xv, "own_frame");
    int first[3] = {0, ps->so3[0].x, ps->so3[1].x}; /* star, inner, outer: q at first[b], R after it */
    PrtMlpWork w = {0};
    FdWorst fw = {0};
    double size = largest_of(G, N * n), hs[27];
    for (int i = 0; i < N; i++) hs[i] = 1e-6 * (rotation_entry(ps, i) ? 1 : 0.02);
    for (long b = 0; b < n; b++) {
        double x[27], g[27];
        for (int r = 0; r < N; r++) x[r] = X[r * n + b], g[r] = G[r * n + b];
        fd_grad(own_frame_v, &(NetAt){.net = &net, .theta = theta, .w = &w, .np = np, .first = first}, x, N, g,
                &(FdOpts){.hs = hs, .scale = size}, &fw);
    }
    prt_mlp_work_free(&w);
    /* the outer planet's gain changes nothing of the inner planet's torque (its R's rows) */
    theta[np + 1] += 3;
    m.family->residual_grad(&m, theta, n, X, G2);
    theta[np + 1] -= 3;
    bool inner_kept = true, outer_moved = false;
    double force_sum = 0;
    for (long b = 0; b < n; b++) {
        for (int r = 0; r < 9; r++) {
            inner_kept &= G2[(first[1] + 3 + r) * n + b] == G[(first[1] + 3 + r) * n + b];
            outer_moved |= G2[(first[2] + 3 + r) * n + b] != G[(first[2] + 3 + r) * n + b];
        }
        for (int a = 0; a < 3; a++)
            force_sum = fmax(force_sum, fabs(G[a * n + b] + G[(first[1] + a) * n + b] + G[(first[2] + a) * n + b]));
    }
    double L = prt_model_loss_grad(&m, theta, n, (int)npts, 2e-4, data.xv, grad);
    double worst = gradient_error(&m, theta, grad, n, (int)npts, data.xv, &rng);
    /* the gains from the data: the known terms' missed torque on each planet */
    CHECK(prt_model_from_data(&m, data.n, data.npts, data.dt, data.xv, note, sizeof note, err, sizeof err) == 0, "from_data: %s", err);
    prt_model_init_theta(&m, theta, &rng);
    double t_inner = exp(theta[np]), t_outer = exp(theta[np + 1]);
    CHECK(strstr(note, "inner") && strstr(note, "outer"), "from_data's note does not name the bodies: %s", note);
    printf("liet2 model, a term per rigid body (own_frame, 2 planets): gradient against central differences of the "
           "network %.1e (of %.1e); the outer gain leaves the inner torque %s; forces sum to %.1e; loss %.6e, gradient "
           "against central differences %.1e; gains from the data: inner %.3e, outer %.3e\n", fw.err * size, size,
           inner_kept ? "as it was" : "changed", force_sum, L, worst, t_inner, t_outer);
    CHECK(fw.err < 1e-6, "the own_frame potential's gradient (largest entry %g): " FD_FMT, size, FD_ARGS(fw));
    CHECK(inner_kept && outer_moved, "a body's torque is not its own term's alone (inner kept %d, outer moved %d)",
          inner_kept, outer_moved);
    CHECK(force_sum < 1e-12 * size, "the own_frame potential's forces sum to %g", force_sum);
    CHECK(worst < 1e-6, "the gradient through own_frame inputs and gains is off by %g", worst);
    CHECK(isfinite(t_inner) && isfinite(t_outer) && t_inner > 10 * t_outer && t_outer > 0,
          "the gains from the data are not the missed torques' sizes: inner %g, outer %g", t_inner, t_outer);
    PrtModelConfig bad = cfg;
    prt_lie_config(&bad)->net[0].body_gains = 1;
    PrtModel mb;
    CHECK(prt_model_open(&mb, ps, &bad, err, sizeof err) != 0 && strstr(err, "input own_frame"),
          "an own_frame potential with one gain for two rigid bodies was taken: %s", err);
    free(theta), free(grad), free(X), free(G), free(G2);
    prt_trajset_free(&data);
    prt_model_close(&m);
    loaded_close(&l);
}

/* The same with every body's view in the world frame (`input own_centres`): V = 2 sum_i
   exp(rho_i) net((q_j - q_i) / 0.02 for j != i, e_i) over the star and both planets. Its
   gradient against central differences; no torque at all; forces summing to zero;
   training's gradient; the gains from the data: the force the known terms miss times 0.02. */
static void own_centres_input(void) {
    Loaded l;
    char err[512], note[1024];
    PrtMlp net = {.nlayers = 2, .size = {9, 10, 1}, .act = PRT_ACT_SILU};
    PrtModelConfig cfg = prt_model_config(prt_model_family("liet2"), &net, false);
    prt_lie_config(&cfg)->net[0].body_gains = 3, prt_lie_config(&cfg)->net[0].own_centres_input = true, prt_lie_config(&cfg)->net[0].length_scale = 0.02, prt_lie_config(&cfg)->net[0].scale = 2;
    PrtModel m;
    PrtTrajSet data;
    if (!open_two_planets(&l, &cfg, &m, &data, "own_centres")) return;
    PrtSystem *ps = &l.c.ps;
    long np = prt_mlp_nparams(&net), n = 3, npts = 3, N = ps->N;
    double *theta = malloc(sizeof(double) * (size_t)m.nparams), *grad = malloc(sizeof(double) * (size_t)m.nparams);
    PrtRng rng;
    prt_rng_seed(&rng, 27);
    for (long i = 0; i < m.nparams; i++) theta[i] = 0.3 * prt_rng_normal(&rng);
    double *X = malloc(sizeof(double) * (size_t)(N * n)), *G = malloc(sizeof(double) * (size_t)(N * n));
    memcpy(X, data.xv, sizeof(double) * (size_t)(N * n));
    m.family->residual_grad(&m, theta, n, X, G);
    energy_gradient(&m, theta, n, data.xv, "own_centres");
    int first[3] = {0, ps->so3[0].x, ps->so3[1].x};
    PrtMlpWork w = {0};
    FdWorst fw = {0};
    double size = 0, torque = 0, force_sum = 0;
    long at[27], nat = 0; /* the positions: a rotation entry has no gradient here */
    for (int i = 0; i < N; i++)
        if (!rotation_entry(ps, i)) at[nat++] = i;
    for (long b = 0; b < n; b++)
        for (int i = 0; i < N; i++)
            if (rotation_entry(ps, i)) torque = fmax(torque, fabs(G[i * n + b]));
            else size = fmax(size, fabs(G[i * n + b]));
    for (long b = 0; b < n; b++) {
        double x[27], g[27];
        for (int r = 0; r < N; r++) x[r] = X[r * n + b], g[r] = G[r * n + b];
        fd_grad(own_centres_v, &(NetAt){.net = &net, .theta = theta, .w = &w, .np = np, .first = first}, x, N, g,
                &(FdOpts){.h = 2e-8, .idx = at, .nidx = nat, .scale = size}, &fw);
    }
    prt_mlp_work_free(&w);
    for (long b = 0; b < n; b++)
        for (int a = 0; a < 3; a++)
            force_sum = fmax(force_sum, fabs(G[a * n + b] + G[(first[1] + a) * n + b] + G[(first[2] + a) * n + b]));
    double L = prt_model_loss_grad(&m, theta, n, (int)npts, 2e-4, data.xv, grad);
    double worst = gradient_error(&m, theta, grad, n, (int)npts, data.xv, &rng);
    CHECK(prt_model_from_data(&m, data.n, data.npts, data.dt, data.xv, note, sizeof note, err, sizeof err) == 0,
          "from_data: %s", err);
    prt_model_init_theta(&m, theta, &rng);
    double g_star = exp(theta[np]), g_inner = exp(theta[np + 1]), g_outer = exp(theta[np + 2]);
    printf("liet2 model, a term per body in the world frame (own_centres, a star and 2 planets): gradient against "
           "central differences of the network %.1e (of %.1e); torque %.1e; forces sum to %.1e; loss %.6e, gradient "
           "against central differences %.1e; gains from the data: star %.3e, inner %.3e, outer %.3e\n", fw.err * size,
           size, torque, force_sum, L, worst, g_star, g_inner, g_outer);
    CHECK(fw.err < 1e-6, "the own_centres potential's gradient (largest entry %g): " FD_FMT, size, FD_ARGS(fw));
    CHECK(torque == 0, "a potential of the world-frame views turns a body: %g", torque);
    CHECK(force_sum < 1e-12 * size, "the own_centres potential's forces sum to %g", force_sum);
    CHECK(worst < 1e-6, "the gradient through own_centres inputs and gains is off by %g", worst);
    CHECK(isfinite(g_star) && g_inner > g_outer && g_outer > 0 && strstr(note, "own_centres") && strstr(note, "star"),
          "the gains from the data are not the missed forces' sizes: star %g, inner %g, outer %g (%s)", g_star, g_inner,
          g_outer, note);
    free(theta), free(grad), free(X), free(G);
    prt_trajset_free(&data);
    prt_model_close(&m);
    loaded_close(&l);
}

/* ---- the orbital elements of stdlib/gravity.phys ---- */

static void orbital_elements(void) {
    Loaded l;
    if (!load("tests/physics/kepler-elements.phys", &l)) return;
    PrtSystem *ps = &l.c.ps;
    long len = ps->N + ps->NP;
    double G = 4 * M_PI * M_PI, M = 1, m = 1e-3, mu = G * (M + m), T = 2 * M_PI / sqrt(mu), worst_H = 0, worst_T = 0, worst_L = 0;
    for (uint64_t seed = 1; seed <= 4; seed++) {
        double *z = sample(&l, 1, seed), t[2] = {0, T}, out[24], H;
        prt_energy(ps, 1, z, &H);
        worst_H = fmax(worst_H, fabs(H - (-G * M * m / 2)) / (G * M * m / 2)); /* -G M m / 2a, a = 1 */
        CHECK(prt_dopri5(prt_hamiltonian_rhs, ps, 1, (int)len, z, t, 2, 1e-12, 1e-14, out, NULL) == 0, "dopri5 failed");
        for (long i = 0; i < len; i++) worst_T = fmax(worst_T, fabs(out[len + i] - z[i]));
        /* the relative orbit's angular momentum: along Rz(0.7) Rx(0.4) e_z */
        double r[3], v[3], L[3], want[3] = {sin(0.4) * sin(0.7), -sin(0.4) * cos(0.7), cos(0.4)};
        for (int c = 0; c < 3; c++) r[c] = z[3 + c] - z[c], v[c] = z[ps->N + 3 + c] / m - z[ps->N + c] / M;
        L[0] = r[1] * v[2] - r[2] * v[1], L[1] = r[2] * v[0] - r[0] * v[2], L[2] = r[0] * v[1] - r[1] * v[0];
        double nL = sqrt(L[0] * L[0] + L[1] * L[1] + L[2] * L[2]);
        for (int c = 0; c < 3; c++) worst_L = fmax(worst_L, fabs(L[c] / nL - want[c]));
        free(z);
    }
    printf("orbits from elements (e = 0.3, inclined): energy off -GMm/2a by %.1e, state after one period off by %.1e, "
           "orbit normal off by %.1e\n", worst_H, worst_T, worst_L);
    CHECK(worst_H < 1e-12, "the elements' energy is not -G M m / 2a: %g", worst_H);
    CHECK(worst_T < 1e-8, "the elements' orbit does not close after 2 pi sqrt(a^3 / mu): %g", worst_T);
    CHECK(worst_L < 1e-12, "the orbit normal is not the inclined one: %g", worst_L);
    loaded_close(&l);
}

/* ---- the system's non-conservative forces (`force` blocks) against closed forms ---- */

/* max error of the damped oscillator and the spun-up top at T against their closed forms */
static double forced_error(const PrtSystem *ps, const double *z0, const double *z, double T) {
    const double *X = z, *P = z + ps->N;
    double worst = 0, g = 0.1, wd = sqrt(4 - g * g);
    for (int k = 0; k < 3; k++) { /* bob: x'' + 0.2 x' + 4 x = 0, mass 2 */
        double x0 = z0[k], v0 = z0[ps->N + k] / 2, A = x0, B = (v0 + g * x0) / wd;
        double x = exp(-g * T) * (A * cos(wd * T) + B * sin(wd * T));
        double v = exp(-g * T) * ((-g * A + wd * B) * cos(wd * T) + (-g * B - wd * A) * sin(wd * T));
        worst = fmax(worst, fmax(fabs(X[k] - x), fabs(P[k] / 2 - v)));
    }
    const PrtSo3Body *b = &ps->so3[0]; /* top: Pi = (0, 0, 2 + T/2), R = R0 Rz(T + T^2/8) */
    double phi = T + T * T / 8, c = cos(phi), s = sin(phi), Z[9] = {c, -s, 0, s, c, 0, 0, 0, 1};
    worst = fmax(worst, fabs(P[b->p + 5] - (2 + T / 2)));
    worst = fmax(worst, fmax(fabs(P[b->p + 3]), fabs(P[b->p + 4])));
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            double r = 0;
            for (int m = 0; m < 3; m++) r += z0[b->x + 3 + i * 3 + m] * Z[m * 3 + j];
            worst = fmax(worst, fabs(X[b->x + 3 + i * 3 + j] - r));
        }
    return worst;
}

static void forces(void) {
    Loaded l;
    if (!load("tests/physics/forced.phys", &l)) return;
    PrtSystem *ps = &l.c.ps;
    CHECK(ps->Force != NULL, "no Force kernel for a system with force blocks");
    long len = ps->N + ps->NP;
    double *z0 = sample(&l, 1, 1), T = 3, t[2] = {0, T}, *out = malloc(sizeof(double) * (size_t)(2 * len));
    double *z = malloc(sizeof(double) * (size_t)len), *work = malloc(sizeof(double) * (size_t)prt_lie_work_len(ps, 1));
    CHECK(prt_dopri5(prt_hamiltonian_rhs, ps, 1, (int)len, z0, t, 2, 1e-12, 1e-14, out, NULL) == 0, "dopri5 failed");
    double e_dopri = forced_error(ps, z0, out + len, T), e[2];
    for (int r = 0; r < 2; r++) {
        long steps = 300 << r;
        memcpy(z, z0, sizeof(double) * (size_t)len);
        for (long k = 0; k < steps; k++) prt_lie_step(ps, PRT_LIE_T2, 1, T / (double)steps, z, work);
        e[r] = forced_error(ps, z0, z, T);
    }
    printf("force blocks (a damped oscillator, a top under a torque) at t = 3 against closed forms: dopri5 %.1e; "
           "liet2 %.1e at h = 0.01, %.1e at 0.005 (order %.2f)\n", e_dopri, e[0], e[1], log2(e[0] / e[1]));
    CHECK(e_dopri < 1e-9, "dopri5 with the forces is off the closed forms by %g", e_dopri);
    CHECK(e[1] < 1e-3 && log2(e[0] / e[1]) > 0.9, "liet2 with the forces: %g, %g", e[0], e[1]);
    free(z0), free(out), free(z), free(work);
    loaded_close(&l);
}

/* ---- Lie T2 over 10^5 steps ---- */

static double pi_norm(const PrtSystem *ps, const double *z) {
    const double *Pi = z + ps->N + ps->so3[0].p + 3;
    return sqrt(Pi[0] * Pi[0] + Pi[1] * Pi[1] + Pi[2] * Pi[2]);
}

/* The energy error over the first and the last tenth of `steps` steps of h, R^T R - I, and
   (free top) |Pi|. */
static void long_run(const char *path, double h, long steps, double energy_bound, bool free_top) {
    Loaded l;
    if (!load(path, &l)) return;
    PrtSystem *ps = &l.c.ps;
    double *z = sample(&l, 1, 11), *work = malloc(sizeof(double) * (size_t)prt_lie_work_len(ps, 1));
    double H0, H, first = 0, last = 0, orth = 0, pi0 = pi_norm(ps, z), dpi = 0;
    prt_energy(ps, 1, z, &H0);
    for (long k = 1; k <= steps; k++) {
        prt_lie_step(ps, PRT_LIE_T2, 1, h, z, work);
        prt_energy(ps, 1, z, &H);
        double e = fabs(H - H0) / fabs(H0);
        if (k <= steps / 10) first = fmax(first, e);
        if (k > steps - steps / 10) last = fmax(last, e);
        if (k % 1000 == 0) orth = fmax(orth, prt_so3_orthogonality(ps, 1, z));
        if (free_top) dpi = fmax(dpi, fabs(pi_norm(ps, z) - pi0) / pi0);
    }
    printf("liet2, %s, %ld steps of %g: energy error %.2e (first tenth) %.2e (last tenth), R^T R - I %.1e%s",
           path, steps, h, first, last, orth, free_top ? "" : "\n");
    if (free_top) printf(", |Pi| %.1e\n", dpi);
    CHECK(orth < 1e-13, "R left SO(3) by %g", orth);
    CHECK(last < energy_bound && last < 2 * first + 1e-14, "energy error grows: %g then %g", first, last);
    if (free_top) CHECK(dpi < 1e-13, "|Pi| changed by %g", dpi);
    free(z), free(work);
    loaded_close(&l);
}

/* The naive flat methods leave SO(3): measured, as the paper's point. */
static void flat_drift(void) {
    Loaded l;
    if (!load("tests/physics/top-so3.phys", &l)) return;
    PrtSystem *ps = &l.c.ps;
    long len = ps->N + ps->NP;
    double *z0 = sample(&l, 1, 5), *z = malloc(sizeof(double) * (size_t)len);
    double *work = malloc(sizeof(double) * (size_t)(5 * len + prt_lie_work_len(ps, 1)));
    const int ids[] = {PRT_INT_VERLET, PRT_INT_RK4, PRT_INT_EULER, PRT_INT_LIE_RK4};
    for (size_t c = 0; c < sizeof ids / sizeof ids[0]; c++) {
        memcpy(z, z0, sizeof(double) * (size_t)len);
        for (long k = 0; k < 2000; k++) {
            if (ids[c] == PRT_INT_VERLET) prt_lie_step(ps, PRT_LIE_VERLET, 1, 0.05, z, work);
            else if (ids[c] == PRT_INT_LIE_RK4) prt_lie_step(ps, PRT_LIE_RK4, 1, 0.05, z, work);
            else prt_rk_step(prt_integrator_tableau(ids[c]), prt_hamiltonian_rhs, ps, 1, (int)len, 0.05, z, work);
        }
        double orth = prt_so3_orthogonality(ps, 1, z);
        printf("%-8s free top, 2000 steps of 0.05: R^T R - I = %.1e\n", prt_integrators[ids[c]].name, orth);
        if (ids[c] == PRT_INT_LIE_RK4) CHECK(orth < 1e-14, "lie_rk4 left SO(3) by %g", orth);
        else CHECK(orth > 1e-10, "%s stayed on SO(3) (%g): not the flat method it should be", prt_integrators[ids[c]].name, orth);
    }
    free(z0), free(z), free(work);
    loaded_close(&l);
}

/* The polar factor: the nearest rotation to R S (S symmetric positive definite, far from I:
   a rollout that left SO(3)) is R. */
static void nearest_rotation(void) {
    PrtRng rng;
    prt_rng_seed(&rng, 11);
    double worst = 0;
    for (int trial = 0; trial < 20; trial++) {
        double w[3], R[9], B[9], S[9], A[9], Q[9];
        for (int i = 0; i < 3; i++) w[i] = 2 * prt_rng_normal(&rng);
        prt_so3_exp(w, R);
        for (int i = 0; i < 9; i++) B[i] = prt_rng_normal(&rng);
        for (int i = 0; i < 3; i++) /* S = B^T B + 0.1 I */
            for (int j = 0; j < 3; j++) {
                S[3 * i + j] = (i == j) * 0.1;
                for (int k = 0; k < 3; k++) S[3 * i + j] += B[3 * k + i] * B[3 * k + j];
            }
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++) {
                A[3 * i + j] = 0;
                for (int k = 0; k < 3; k++) A[3 * i + j] += R[3 * i + k] * S[3 * k + j];
            }
        CHECK(prt_so3_nearest_rotation(A, Q), "trial %d: singular", trial);
        for (int i = 0; i < 9; i++) worst = fmax(worst, fabs(Q[i] - R[i]));
    }
    double zero[9] = {0};
    printf("nearest rotation (polar factor) of R S: R to %.1e\n", worst);
    CHECK(worst < 1e-12, "the polar factor of R S is off R by %g", worst);
    CHECK(!prt_so3_nearest_rotation(zero, zero), "a singular matrix has a nearest rotation");
}

int main(void) {
    exponential();
    nearest_rotation();
    vjps();
    sub_flows();
    torque();
    tape_steps();
    model_gradient();
    segmented_gradient();
    loss_block_independence();
    length_scale();
    centres_input();
    body_frame_input();
    own_frame_input();
    own_centres_input();
    two_potentials();
    orbital_elements();
    forces();
    orders("tests/physics/top-so3.phys", "the free asymmetric top", 2);
    orders("examples/twobody-rigid.phys", "the rigid planet and star", 2e-3);
    long_run("tests/physics/top-so3.phys", 0.01, 100000, 1e-6, true);
    long_run("examples/twobody-rigid.phys", 2e-5, 100000, 1e-3, false);
    flat_drift();
    if (failures) printf("%d failure(s)\n", failures);
    return failures != 0;
}
