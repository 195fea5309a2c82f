/* test_discrete_grad.c — the discrete gradient of a scalar MLP (mlp_graph.h) and the
   activations' divided differences it is built from (tensor_ops.h):
   - dd = (s(a) - s(b)) / (a - b) and its partials against long-double references, from a
     to saturation, with a == b and |a - b| down to 1e-12;
   - the discrete chain rule V(y) - V(x) = DG(y, x) . (y - x) to 1e-12 on random nets,
     DG(x, x) = grad V(x), DG(x, y) = DG(y, x);
   - the reverse sweep through DG (training) against central finite differences.
   Run with -v for the errors reached and a timing of DG against a forward + input gradient. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "fd_check.h"
#include "ad/mlp_graph.h"
#include "ad/tensor_ops.h"

static int verbose;
static const char *act_name[] = {"tanh", "softplus", "silu"};

/* ---- long-double references ----

   dd = int_0^1 s'(b + t d) dt, d dd/da = int_0^1 t s''(b + t d) dt, d dd/db = int_0^1 (1 - t)
   s''(b + t d) dt, by 16-point Gauss-Legendre on pieces of length <= 1 in x: nothing is
   subtracted but the integrand's own sign changes, and the integrand's nearest complex
   singularity (pi/2 away for tanh) makes the rule exact to long double precision. The
   integrals of the absolute integrands are where rounding errors are measured from where
   the result itself crosses zero (SiLU). */

enum { GL_N = 16 };
static long double gl_t[GL_N], gl_w[GL_N];

static void gl_init(void) {
    for (int i = 0; i < GL_N; i++) {
        long double x = cosl(3.14159265358979323846264338327950288L * (i + 0.75L) / (GL_N + 0.5L)), p, dp;
        for (int it = 0; it < 100; it++) {
            long double p0 = 1, p1 = x;
            for (int k = 2; k <= GL_N; k++) {
                long double p2 = ((2 * k - 1) * x * p1 - (k - 1) * p0) / k;
                p0 = p1, p1 = p2;
            }
            p = p1, dp = GL_N * (x * p1 - p0) / (x * x - 1);
            long double step = p / dp;
            x -= step;
            if (fabsl(step) < 1e-30L) break;
        }
        gl_t[i] = (1 + x) / 2, gl_w[i] = 1 / ((1 - x * x) * dp * dp);
    }
}

static long double sigmoid_l(long double x) { return x >= 0 ? 1 / (1 + expl(-x)) : expl(x) / (1 + expl(x)); }
static long double sigmoid1_l(long double x) {
    long double e = expl(-fabsl(x));
    return e / ((1 + e) * (1 + e));
}

/* s'(x) and s''(x) */
static void act_derivs_l(PrtActivation act, long double x, long double *d1, long double *d2) {
    *d1 = *d2 = NAN;
    switch (act) {
    case PRT_ACT_TANH: {
        long double e = expl(-2 * fabsl(x)), sech2 = 4 * e / ((1 + e) * (1 + e));
        *d1 = sech2, *d2 = -2 * tanhl(x) * sech2;
        return;
    }
    case PRT_ACT_SOFTPLUS: *d1 = sigmoid_l(x), *d2 = sigmoid1_l(x); return;
    case PRT_ACT_SILU: {
        long double s1 = sigmoid1_l(x);
        *d1 = sigmoid_l(x) + x * s1, *d2 = 2 * s1 - x * s1 * tanhl(x / 2);
        return;
    }
    }
}

typedef struct Ref {
    long double dd, da, db;          /* the values */
    long double dd_abs, da_abs, db_abs; /* the integrals of the absolute integrands */
} Ref;

static Ref reference_ld(PrtActivation act, long double a, long double b) {
    Ref r = {0};
    long double d = a - b;
    long pieces = (long)ceill(fabsl(d));
    if (pieces < 1) pieces = 1;
    for (long k = 0; k < pieces; k++)
        for (int i = 0; i < GL_N; i++) {
            long double t = (k + gl_t[i]) / pieces, w = gl_w[i] / pieces, d1 = 0, d2 = 0;
            act_derivs_l(act, b + t * d, &d1, &d2);
            r.dd += w * d1, r.da += w * t * d2, r.db += w * (1 - t) * d2;
            r.dd_abs += w * fabsl(d1), r.da_abs += w * t * fabsl(d2), r.db_abs += w * (1 - t) * fabsl(d2);
        }
    return r;
}

static Ref reference(PrtActivation act, double a, double b) { return reference_ld(act, a, b); }

static long double act_l(PrtActivation act, long double x) {
    return act == PRT_ACT_TANH ? tanhl(x) : act == PRT_ACT_SOFTPLUS ? (x > 0 ? x + log1pl(expl(-x)) : log1pl(expl(x))) : x * sigmoid_l(x);
}

/* |got - ref| over the scale rounding errors are relative to: the result's, or where it
   passes through zero the integrand's, and what an ulp's change of the inputs makes, the
   conditioning no formula can beat (SiLU's dd near its minimum: 60 ulps per ulp of a).
   Below DBL_MIN: underflow, no error. */
static double err_of(double got, long double ref, long double abs_scale, long double input_ulp) {
    long double scale = fmaxl(fabsl(ref), abs_scale);
    if (scale < DBL_MIN) return fabs(got) < 2 * DBL_MIN ? 0 : INFINITY;
    long double err = fabsl(got - ref) - 4 * input_ulp;
    return err > 0 ? (double)(err / scale) : 0;
}

static void test_scalar_divided(void) {
    gl_init();
    const double base[] = {0, 0.3, -0.3, 1, -1, -1.3, 2.5, -2.5, 5, -5, 12, -12, 40, -40, 800, -800};
    /* and around the thresholds of tensor_ops.c's series (|d| = 0.02 softplus, 0.25 tanh, 0.5 SiLU) */
    const double off[] = {0, 1e-12, -1e-12, 1e-8, -1e-8, 1e-3, -1e-3, 0.5, -0.5, 1, -1, 10, -10,
                          0.019, -0.021, 0.24, -0.26, 0.49, -0.51};
    int nb = sizeof base / sizeof *base, no = sizeof off / sizeof *off;
    for (int act = PRT_ACT_TANH; act <= PRT_ACT_SILU; act++) {
        double worst_dd = 0, worst_p = 0;
        for (int i = 0; i < nb; i++)
            for (int j = 0; j < nb + no; j++) {
                double a = base[i], b = j < nb ? base[j] : a - off[j - nb], da, db;
                double dd = prt_act_divided(act, a, b, &da, &db);
                CHECK(prt_act_divided(act, a, b, NULL, NULL) == dd, "dd does not depend on the partials asked for");
                Ref r = reference(act, a, b);
                long double input_ulp = DBL_EPSILON * (fabs(a) * fabsl(r.da) + fabs(b) * fabsl(r.db));
                double e_dd = err_of(dd, r.dd, r.dd_abs, input_ulp), e_da = err_of(da, r.da, r.da_abs, 0), e_db = err_of(db, r.db, r.db_abs, 0);
                CHECK(e_dd < 1e-14, "%s dd(%.17g, %.17g) = %.17g, reference %.17Lg (error %.2g)", act_name[act], a, b, dd, r.dd, e_dd);
                CHECK(e_da < 1e-12, "%s d dd/da(%.17g, %.17g) = %.17g, reference %.17Lg (error %.2g)", act_name[act], a, b, da, r.da, e_da);
                CHECK(e_db < 1e-12, "%s d dd/db(%.17g, %.17g) = %.17g, reference %.17Lg (error %.2g)", act_name[act], a, b, db, r.db, e_db);
                worst_dd = fmax(worst_dd, e_dd), worst_p = fmax(worst_p, fmax(e_da, e_db));
            }
        if (verbose) printf("%s: worst relative error of dd %.2g, of its partials %.2g\n", act_name[act], worst_dd, worst_p);
    }
}

/* ---- the network's discrete gradient ---- */

static PrtMlp net(PrtActivation act, int in, int width, int hidden) {
    PrtMlp m = {.nlayers = hidden + 1, .act = act};
    m.size[0] = in;
    for (int l = 1; l <= hidden; l++) m.size[l] = width;
    m.size[hidden + 1] = 1;
    return m;
}

static double *random_theta(const PrtMlp *m, PrtRng *rng) {
    long np = prt_mlp_nparams(m);
    double *theta = malloc(sizeof(double) * (size_t)np);
    prt_mlp_init(m, theta, rng);
    for (long i = 0; i < np; i++) theta[i] += 0.1 * prt_rng_normal(rng); /* nonzero biases too */
    return theta;
}

/* Forward on X (in x 2n: the points a | the points b), then DG of the pairs (a_j, b_j) into g
   (in x n) and, optionally, V of the 2n columns into v. On a fresh tape. The forward pass is
   the discrete-time model's (prt_mlp_graph_preactivations: a tanh net keeps its exponentials
   for the divided differences), or with kept_path false prt_mlp_graph_forward's (none kept). */
static bool kept_path = true;
static void discrete_grad(const PrtMlp *m, const double *theta, const double *X, long n, double *g, double *v) {
    PrtTape *t = prt_tape_new();
    long in = m->size[0];
    int x = prt_tape_leaf(t, in * 2 * n);
    memcpy(prt_tape_val(t, x), X, sizeof(double) * (size_t)(in * 2 * n));
    PrtMlpTrace tr;
    if (kept_path) prt_mlp_graph_preactivations(t, m, theta, NULL, x, 2 * n, &tr); /* as model_discrete.c */
    else prt_mlp_graph_forward(t, m, theta, NULL, x, 2 * n, &tr);
    int dg = prt_mlp_graph_discrete_grad(t, &tr, 0, n, n);
    memcpy(g, prt_tape_val(t, dg), sizeof(double) * (size_t)(in * n));
    if (v) {
        PrtMlpTrace tv;
        int y = prt_mlp_graph_forward(t, m, theta, NULL, x, 2 * n, &tv);
        memcpy(v, prt_tape_val(t, y), sizeof(double) * (size_t)(2 * n));
    }
    prt_tape_free(t);
}

/* V(a) - V(b) for the columns a, b of X (in x cols), in long double and without cancellation:
   the difference itself goes forward, dz_l = W_l da_{l-1}, da_l = dd_l dz_l with dd_l the
   activation's divided difference at z_l(a), z_l(b) by quadrature (reference(), nothing in
   common with the code under test). A plain long-double forward would round V ~ 1 to 1e-19,
   a millionth of V(a) - V(b) at |a - b| = 1e-12. */
static long double value_diff_ld(const PrtMlp *m, const double *theta, const double *X, long cols, long ja, long jb) {
    long double za[256], zb[256], dz[256], aa[256], ab[256], da[256];
    int in = m->size[0];
    for (int i = 0; i < in; i++) aa[i] = X[i * cols + ja], ab[i] = X[i * cols + jb], da[i] = aa[i] - ab[i];
    const double *p = theta;
    for (int l = 1; l <= m->nlayers; l++) {
        int rows = m->size[l], inner = m->size[l - 1];
        for (int r = 0; r < rows; r++) {
            long double bias = p[(long)rows * inner + r], sa = bias, sb = bias, sd = 0;
            for (int k = 0; k < inner; k++) {
                long double w = p[(long)r * inner + k];
                sa += w * aa[k], sb += w * ab[k], sd += w * da[k];
            }
            za[r] = sa, zb[r] = sb, dz[r] = sd;
        }
        p += (long)rows * inner + rows;
        if (l == m->nlayers) return dz[0];
        for (int r = 0; r < rows; r++) {
            aa[r] = act_l(m->act, za[r]), ab[r] = act_l(m->act, zb[r]);
            da[r] = reference_ld(m->act, za[r], zb[r]).dd * dz[r];
        }
    }
    return 0;
}

/* The points b at separation delta from random points a (delta < 0: independent points). */
static void random_pairs(PrtRng *rng, long in, long n, double spread, double delta, double *X) {
    for (long j = 0; j < n; j++) {
        double u[64], norm = 0;
        for (long i = 0; i < in; i++) u[i] = prt_rng_normal(rng), norm += u[i] * u[i];
        for (long i = 0; i < in; i++) {
            double a = spread * prt_rng_normal(rng);
            X[i * 2 * n + j] = a;
            X[i * 2 * n + n + j] = delta < 0 ? spread * prt_rng_normal(rng) : a + delta * u[i] / sqrt(norm);
        }
    }
}

/* V(a) - V(b) = DG(a, b) . (a - b); DG(a, a) = grad V(a); DG(a, b) = DG(b, a). */
static void test_identity(PrtActivation act, int in, int width, int hidden, double spread, PrtRng *rng) {
    PrtMlp m = net(act, in, width, hidden);
    double *theta = random_theta(&m, rng);
    const double deltas[] = {0, 1e-12, 1e-6, 1e-2, 1, -1};
    long n = 16;
    double *X = malloc(sizeof(double) * (size_t)(in * 2 * n)), *Xs = malloc(sizeof(double) * (size_t)(in * 2 * n));
    double *g = malloc(sizeof(double) * (size_t)(in * n)), *gs = malloc(sizeof(double) * (size_t)(in * n));
    double *grad = malloc(sizeof(double) * (size_t)(in * n)), v[32];
    double worst_id = 0, worst_grad = 0, worst_sym = 0;
    for (int k = 0; k < (int)(sizeof deltas / sizeof *deltas); k++) {
        random_pairs(rng, in, n, spread, deltas[k], X);
        discrete_grad(&m, theta, X, n, g, v);
        for (long j = 0; j < n; j++) {
            long double dv = value_diff_ld(&m, theta, X, 2 * n, j, n + j), dot = 0;
            double gnorm = 0, dnorm = 0;
            for (long i = 0; i < in; i++) {
                double dx = X[i * 2 * n + j] - X[i * 2 * n + n + j]; /* exact: a and b are close or O(1) */
                dot += (long double)g[i * n + j] * dx, gnorm += g[i * n + j] * g[i * n + j], dnorm += dx * dx;
            }
            double scale = fmax(fabsl(dv), sqrt(gnorm * dnorm)), err = fabsl(dv - dot);
            CHECK(err <= 1e-12 * scale, "%s %dx%d: V(a) - V(b) = %.17Lg but DG . (a - b) = %.17Lg at |a - b| = %g",
                  act_name[act], hidden, width, dv, dot, sqrt(dnorm));
            if (scale > 0) worst_id = fmax(worst_id, err / scale);
            /* the double forward pass agrees with it, to the rounding of V */
            double ulps = 1e-14 * fmax(1, fmax(fabs(v[j]), fabs(v[n + j])));
            CHECK(fabsl(v[j] - v[n + j] - dv) <= ulps, "%s V(a) - V(b) = %.17g forward, %.17Lg exactly", act_name[act], v[j] - v[n + j], dv);
        }
        /* symmetry: the same pairs the other way round */
        for (long i = 0; i < in; i++) {
            memcpy(Xs + i * 2 * n, X + i * 2 * n + n, sizeof(double) * (size_t)n);
            memcpy(Xs + i * 2 * n + n, X + i * 2 * n, sizeof(double) * (size_t)n);
        }
        discrete_grad(&m, theta, Xs, n, gs, NULL);
        for (long j = 0; j < n; j++) {
            double gmax = 0, e = 0;
            for (long i = 0; i < in; i++) gmax = fmax(gmax, fabs(g[i * n + j])), e = fmax(e, fabs(g[i * n + j] - gs[i * n + j]));
            CHECK(e <= 4 * DBL_EPSILON * gmax, "%s %dx%d: DG(a, b) != DG(b, a) by %g of %g", act_name[act], hidden, width, e, gmax);
            worst_sym = fmax(worst_sym, e / fmax(gmax, DBL_MIN));
        }
        /* DG(a, b) -> grad V(a): equal at b = a, within |a - b| |Hessian| nearby */
        if (deltas[k] >= 0 && deltas[k] <= 1e-12) {
            double *xa = malloc(sizeof(double) * (size_t)(in * n));
            for (long i = 0; i < in; i++) memcpy(xa + i * n, X + i * 2 * n, sizeof(double) * (size_t)n);
            PrtMlpWork w = {0};
            prt_mlp_value_grad(&m, theta, n, xa, NULL, grad, &w);
            prt_mlp_work_free(&w);
            free(xa);
            double tol = deltas[k] == 0 ? 1e-13 : 1e-10;
            for (long j = 0; j < n; j++) {
                double gmax = 0, e = 0;
                for (long i = 0; i < in; i++) gmax = fmax(gmax, fabs(grad[i * n + j])), e = fmax(e, fabs(g[i * n + j] - grad[i * n + j]));
                CHECK(e <= tol * gmax, "%s %dx%d: DG(a, b) - grad V(a) = %g of %g at |a - b| = %g", act_name[act], hidden, width, e, gmax, deltas[k]);
                if (deltas[k] == 0) worst_grad = fmax(worst_grad, e / fmax(gmax, DBL_MIN));
            }
        }
    }
    if (verbose)
        printf("%s %d x %d, inputs ~%g: identity error %.2g, DG(x,x) vs grad %.2g, asymmetry %.2g\n",
               act_name[act], hidden, width, spread, worst_id, worst_grad, worst_sym);
    free(X), free(Xs), free(g), free(gs), free(grad), free(theta);
}

/* A tanh net's DG from the kept exponentials (its hidden tanh computed from them) and without
   them (prt_vtanh's tanh): the same to a few ulps of DG. */
static void test_paths_agree(PrtRng *rng) {
    PrtMlp m = net(PRT_ACT_TANH, 4, 200, 2);
    double *theta = random_theta(&m, rng);
    long n = 64;
    double *X = malloc(sizeof(double) * (size_t)(4 * 2 * n)), *g[2];
    for (int k = 0; k < 2; k++) g[k] = malloc(sizeof(double) * (size_t)(4 * n));
    random_pairs(rng, 4, n, 1, 0.3, X);
    for (int k = 0; k < 2; k++) {
        kept_path = k == 0;
        discrete_grad(&m, theta, X, n, g[k], NULL);
    }
    kept_path = true;
    double worst = 0, gmax = 0;
    for (long i = 0; i < 4 * n; i++) gmax = fmax(gmax, fabs(g[1][i])), worst = fmax(worst, fabs(g[0][i] - g[1][i]));
    CHECK(worst > 0 || gmax == 0, "the kept path is not computed apart (no difference at all)");
    CHECK(worst <= 64 * DBL_EPSILON * gmax, "tanh DG from kept exponentials off the other's by %.3g (largest %.3g)", worst, gmax);
    if (verbose) printf("tanh DG, kept exponentials against none: %.2g of the largest entry\n", worst / gmax);
    free(theta), free(X), free(g[0]), free(g[1]);
}

/* ---- training through it ---- */

/* L = sum c . DG(a, b) for X = [a | b] on a fresh tape; dL/dtheta into gtheta, dL/dX into gx when asked. */
static double dg_loss(const PrtMlp *m, const double *theta, const double *X, const double *c, long n, double *gtheta,
                      double *gx) {
    PrtTape *t = prt_tape_new();
    long in = m->size[0], np = prt_mlp_nparams(m);
    double *tadj = calloc((size_t)np, sizeof(double));
    int x = prt_tape_leaf(t, in * 2 * n);
    memcpy(prt_tape_val(t, x), X, sizeof(double) * (size_t)(in * 2 * n));
    PrtMlpTrace tr;
    prt_mlp_graph_preactivations(t, m, theta, tadj, x, 2 * n, &tr);
    int dg = prt_mlp_graph_discrete_grad(t, &tr, 0, n, n);
    double L = 0;
    for (long i = 0; i < in * n; i++) L += c[i] * prt_tape_val(t, dg)[i];
    if (gtheta || gx) {
        prt_tape_zero_adjoints(t);
        memcpy(prt_tape_adj(t, dg), c, sizeof(double) * (size_t)(in * n));
        prt_tape_backward(t);
        if (gtheta) memcpy(gtheta, tadj, sizeof(double) * (size_t)np);
        if (gx) memcpy(gx, prt_tape_adj(t, x), sizeof(double) * (size_t)(in * 2 * n));
    }
    free(tadj);
    prt_tape_free(t);
    return L;
}

/* dg_loss (fd_check.h: theta and X perturbed in place, read here) */
typedef struct DgAt {
    const PrtMlp *m;
    const double *theta, *X, *c;
    long n;
} DgAt;

static void dg_at(void *ctx, const double *unused, double *L) {
    DgAt *a = ctx;
    *L = dg_loss(a->m, a->theta, a->X, a->c, a->n, NULL, NULL);
}

static double largest(const double *v, long len) {
    double g = 0;
    for (long i = 0; i < len; i++) g = fmax(g, fabs(v[i]));
    return g;
}

static void test_vjp(PrtActivation act, double delta, PrtRng *rng) {
    PrtMlp m = net(act, 3, 9, 3);
    long np = prt_mlp_nparams(&m), n = 5, in = 3;
    double *theta = random_theta(&m, rng), *gth = malloc(sizeof(double) * (size_t)np), X[30], c[15], gx[30];
    random_pairs(rng, in, n, 1, delta, X);
    for (int i = 0; i < 15; i++) c[i] = prt_rng_normal(rng);
    dg_loss(&m, theta, X, c, n, gth, gx);
    /* a few weights and every bias entry of each layer, chosen at random */
    long off = 0, at[6 * PRT_MLP_MAX_LAYERS], nat = 0;
    for (int l = 1; l <= m.nlayers; l++) {
        long nw = (long)m.size[l] * m.size[l - 1], nl = nw + m.size[l];
        for (int k = 0; k < 6; k++)
            at[nat++] = off + (k < 4 ? (long)(prt_rng_uniform(rng) * nw)
                                     : nw + (long)(prt_rng_uniform(rng) * m.size[l]));
        off += nl;
    }
    /* errors relative, or absolute below 1e-3 of the largest entry */
    DgAt ctx = {&m, theta, X, c, n};
    FdWorst wt = {0}, wx = {0};
    fd_grad(dg_at, &ctx, theta, np, gth, &(FdOpts){.h = 1e-5, .scale = 1e-3 * largest(gth, np), .idx = at, .nidx = nat},
            &wt);
    fd_grad(dg_at, &ctx, X, 30, gx, &(FdOpts){.h = 1e-5, .scale = 1e-3 * largest(gx, 30)}, &wx);
    CHECK(wt.err < 1e-6, "%s |a - b| ~ %g: dL/dtheta: " FD_FMT, act_name[act], delta, FD_ARGS(wt));
    CHECK(wx.err < 1e-6, "%s |a - b| ~ %g: dL/dx: " FD_FMT, act_name[act], delta, FD_ARGS(wx));
    if (verbose) printf("%s VJP, |a - b| %s: worst relative error against differences %.2g\n", act_name[act],
                        delta < 0 ? "~1" : delta == 0 ? "0" : "1e-4", fmax(wt.err, wx.err));
    free(theta), free(gth);
}

/* ---- in float (an f32 network, tensor_ops.h) ---- */

/* The f32 passes against the f64 ones on the paper's net: every value the f32 pass gives
   is a float (so it did run in float), within float rounding of the f64 value; the identity
   V(a) - V(b) = DG . (a - b) holds to float rounding; the VJP in theta agrees with f64's
   (which test_vjp checks against differences) to float rounding too. */
static void test_f32(PrtActivation act, PrtRng *rng) {
    PrtMlp m = net(act, 4, 200, 2), m32 = m;
    m32.f32 = true;
    long n = 16, in = 4, np = prt_mlp_nparams(&m);
    double *theta = random_theta(&m, rng), X[4 * 32], g[4 * 16], g32[4 * 16], c[4 * 16];
    double *gth = malloc(sizeof(double) * (size_t)np), *gth32 = malloc(sizeof(double) * (size_t)np);
    for (int k = 0; k < 2; k++) {
        random_pairs(rng, in, n, 1, k ? 1e-2 : -1, X);
        discrete_grad(&m, theta, X, n, g, NULL);
        discrete_grad(&m32, theta, X, n, g32, NULL);
        double gmax = largest(g, in * n), e = 0, id = 0;
        bool floats = true;
        for (long i = 0; i < in * n; i++) floats &= (double)(float)g32[i] == g32[i], e = fmax(e, fabs(g32[i] - g[i]));
        for (long j = 0; j < n; j++) {
            long double dv = value_diff_ld(&m, theta, X, 2 * n, j, n + j), dot = 0;
            for (long i = 0; i < in; i++) dot += (long double)g32[i * n + j] * (X[i * 2 * n + j] - X[i * 2 * n + n + j]);
            id = fmax(id, (double)fabsl(dv - dot));
        }
        CHECK(floats, "%s f32: a discrete gradient that is not a float", act_name[act]);
        CHECK(e > 0 && e < 1e-5 * gmax, "%s f32: DG %.3g off the f64 one (largest entry %.3g)", act_name[act], e, gmax);
        CHECK(id < 1e-5 * gmax, "%s f32: V(a) - V(b) - DG . (a - b) = %.3g (DG ~ %.3g)", act_name[act], id, gmax);
        if (verbose) printf("%s f32, |a - b| %s: DG off f64's by %.2g, identity by %.2g (of %.2g)\n", act_name[act],
                            k ? "1e-2" : "~1", e, id, gmax);
    }
    for (long i = 0; i < in * n; i++) c[i] = prt_rng_normal(rng);
    dg_loss(&m, theta, X, c, n, gth, NULL);
    dg_loss(&m32, theta, X, c, n, gth32, NULL);
    double gmax = largest(gth, np), e = 0;
    for (long i = 0; i < np; i++) e = fmax(e, fabs(gth32[i] - gth[i]));
    CHECK(e > 0 && e < 1e-4 * gmax, "%s f32: dL/dtheta %.3g off the f64 one (largest entry %.3g)", act_name[act], e, gmax);
    free(theta), free(gth), free(gth32);
}

/* ---- timing (printed with -v; no assertion) ---- */

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

/* The best of a few runs of: record forward + DG (or input gradient) of n pairs, then the reverse sweep. */
static void time_one(const PrtMlp *m, const double *theta, double *tadj, const double *X, long n, bool dg, double *rec,
                     double *back) {
    long in = m->size[0];
    *rec = *back = INFINITY;
    PrtTape *t = prt_tape_new();
    for (int rep = 0; rep < 12; rep++) {
        prt_tape_reset(t);
        double t0 = now();
        int x = prt_tape_leaf(t, in * 2 * n);
        memcpy(prt_tape_val(t, x), X, sizeof(double) * (size_t)(in * 2 * n));
        PrtMlpTrace tr;
        if (dg) prt_mlp_graph_preactivations(t, m, theta, tadj, x, 2 * n, &tr);
        else prt_mlp_graph_forward(t, m, theta, tadj, x, 2 * n, &tr);
        int out = dg ? prt_mlp_graph_discrete_grad(t, &tr, 0, n, n) : prt_mlp_graph_vjp(t, &tr, -1);
        double t1 = now();
        prt_tape_zero_adjoints(t);
        for (long i = 0; i < prt_tape_len(t, out); i++) prt_tape_adj(t, out)[i] = 1;
        prt_tape_backward(t);
        double t2 = now();
        *rec = fmin(*rec, t1 - t0), *back = fmin(*back, t2 - t1);
    }
    prt_tape_free(t);
}

static void time_discrete_grad(PrtRng *rng) {
    PrtMlp m = net(PRT_ACT_TANH, 4, 200, 2);
    long n = 200, np = prt_mlp_nparams(&m);
    double *theta = random_theta(&m, rng), *tadj = calloc((size_t)np, sizeof(double));
    double *X = malloc(sizeof(double) * (size_t)(4 * 2 * n));
    random_pairs(rng, 4, n, 1, -1, X);
    double dg_rec, dg_back, gr_rec, gr_back;
    time_one(&m, theta, tadj, X, n, true, &dg_rec, &dg_back);
    time_one(&m, theta, tadj, X, n, false, &gr_rec, &gr_back);
    printf("tanh 4-200-200-1, %ld pairs: forward (2 x %ld columns) + DG %.3f ms, reverse sweep %.3f ms; "
           "forward + input gradient of the same %ld columns %.3f ms, reverse sweep %.3f ms\n",
           n, n, 1e3 * dg_rec, 1e3 * dg_back, 2 * n, 1e3 * gr_rec, 1e3 * gr_back);
    free(theta), free(tadj), free(X);
}

int main(int argc, char **argv) {
    verbose = argc > 1 && strcmp(argv[1], "-v") == 0;
    test_scalar_divided();
    PrtRng rng;
    prt_rng_seed(&rng, 17);
    for (int act = PRT_ACT_TANH; act <= PRT_ACT_SILU; act++) {
        test_identity(act, 4, 200, 2, 1, &rng); /* the paper's 3-layer, 200-unit net */
        test_identity(act, 3, 7, 3, 1, &rng);
        test_identity(act, 2, 5, 1, 10, &rng); /* saturated units */
        test_vjp(act, -1, &rng);
        test_vjp(act, 1e-4, &rng);
        test_vjp(act, 0, &rng);
        test_f32(act, &rng);
    }
    kept_path = false; /* the divided differences that take their own exponentials */
    test_identity(PRT_ACT_TANH, 4, 200, 2, 1, &rng);
    test_identity(PRT_ACT_TANH, 3, 7, 3, 1, &rng);
    kept_path = true;
    test_paths_agree(&rng);
    if (verbose) time_discrete_grad(&rng);
    printf("test_discrete_grad: %s\n", failures ? "FAILED" : "ok");
    return failures != 0;
}
