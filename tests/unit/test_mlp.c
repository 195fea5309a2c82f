/* test_mlp.c — the MLP passes on OpenBLAS against finite differences: the input gradient
   of V, and the double backward (feature-major batches, as the kernels use) (d/dx and d/dtheta of u . dV/dx) for every activation;
   a several-output network's forward pass and VJP; orthogonal initialization. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fd_check.h"
#include "nn/mlp.h"

/* A scalar S of the network at (theta, x) with a cotangent u (S_of, Sf_of below). */
typedef double (*ScalarOf)(const PrtMlp *m, const double *theta, long n, const double *x, const double *u,
                           PrtMlpWork *w);

/* S (fd_check.h: theta and x perturbed in place, read here) */
typedef struct ScalarAt {
    ScalarOf S;
    const PrtMlp *m;
    const double *theta, *x, *u;
    long n;
    PrtMlpWork *w;
} ScalarAt;

static void S_at(void *ctx, const double *unused, double *s) {
    ScalarAt *c = ctx;
    *s = c->S(c->m, c->theta, c->n, c->x, c->u, c->w);
}

/* dS/dx (xbar, 20 entries) and dS/dtheta (thetabar) against central differences, to tol
   relative above 1 and absolute below: the worst error */
static double against_differences(ScalarOf S, const PrtMlp *m, double *theta, long n, double *x, const double *u,
                                  PrtMlpWork *w, const double *xbar, const double *thetabar, double tol,
                                  const char *name) {
    ScalarAt c = {S, m, theta, x, u, n, w};
    FdOpts o = {.h = 1e-6, .scale = 1};
    FdWorst wx = {0}, wt = {0};
    fd_grad(S_at, &c, x, 20, xbar, &o, &wx);
    fd_grad(S_at, &c, theta, prt_mlp_nparams(m), thetabar, &o, &wt);
    CHECK(wx.err < tol, "%s: dS/dx: " FD_FMT, name, FD_ARGS(wx));
    CHECK(wt.err < tol, "%s: dS/dtheta: " FD_FMT, name, FD_ARGS(wt));
    return fmax(wx.err, wt.err);
}

/* V of the n states of x (fd_check.h) */
typedef struct ValueAt {
    const PrtMlp *m;
    const double *theta;
    long n;
    PrtMlpWork *w;
} ValueAt;

static void value_at(void *ctx, const double *x, double *v) {
    ValueAt *c = ctx;
    prt_mlp_value_grad(c->m, c->theta, c->n, x, v, NULL, c->w);
}

static double S_of(const PrtMlp *m, const double *theta, long n, const double *x, const double *u, PrtMlpWork *w) {
    int in = m->size[0];
    double *g = malloc(sizeof(double) * (size_t)(n * in)), s = 0;
    prt_mlp_value_grad(m, theta, n, x, NULL, g, w);
    for (long i = 0; i < n * in; i++) s += u[i] * g[i];
    free(g);
    return s;
}

static void check_net(PrtActivation a, const char *name) {
    PrtMlp m = {.nlayers = 3, .size = {5, 7, 6, 1}, .act = a};
    long np = prt_mlp_nparams(&m), n = 4;
    CHECK(np == 5 * 7 + 7 + 7 * 6 + 6 + 6 + 1, "parameter count %ld", np);
    PrtRng rng;
    prt_rng_seed(&rng, 11);
    double *theta = malloc(sizeof(double) * (size_t)np), *thetabar = calloc((size_t)np, sizeof(double));
    prt_mlp_init(&m, theta, &rng);
    for (long i = 0; i < np; i++) theta[i] += 0.1 * prt_rng_normal(&rng); /* nonzero biases too */
    double x[20], u[20], v[4], g[20], xbar[20] = {0};
    for (int i = 0; i < 20; i++) x[i] = prt_rng_normal(&rng), u[i] = prt_rng_normal(&rng);
    PrtMlpWork w = {0};
    prt_mlp_value_grad(&m, theta, n, x, v, g, &w);
    prt_mlp_grad_vjp(&m, theta, n, x, u, xbar, thetabar, &w);
    /* dV/dx against differences of V; dS/dx and dS/dtheta against differences of S = u . dV/dx */
    FdWorst wv = {0};
    double ones[4] = {1, 1, 1, 1}; /* each state's V its own: d(sum V)/dx_(i,b) = dV_b/dx_(i,b) */
    fd_vjp(value_at, &(ValueAt){&m, theta, n, &w}, x, 20, n, ones, g, &(FdOpts){.h = 1e-6, .scale = 1}, &wv);
    CHECK(wv.err < 1e-7, "%s: dV/dx: " FD_FMT, name, FD_ARGS(wv));
    double worst = fmax(wv.err, against_differences(S_of, &m, theta, n, x, u, &w, xbar, thetabar, 1e-6, name));
    printf("%s: input gradient and double backward match differences (worst error %.1e)\n", name, worst);
    prt_mlp_work_free(&w);
    free(theta), free(thetabar);
}

/* The f32 passes (sgemm) agree with the f64 ones to float precision, for every output. */
static void check_f32(PrtActivation act, const char *name) {
    PrtMlp m64 = {.nlayers = 3, .size = {5, 64, 48, 1}, .act = act}, m32 = m64;
    m32.f32 = true;
    long np = prt_mlp_nparams(&m64), n = 37, nin = 5 * n;
    PrtRng rng;
    prt_rng_seed(&rng, 5);
    double *theta = malloc(sizeof(double) * (size_t)np), *tb64 = calloc((size_t)np, sizeof(double)),
           *tb32 = calloc((size_t)np, sizeof(double)), *x = malloc(sizeof(double) * (size_t)nin),
           *u = malloc(sizeof(double) * (size_t)nin), *g64 = malloc(sizeof(double) * (size_t)nin),
           *g32 = malloc(sizeof(double) * (size_t)nin), *xb64 = calloc((size_t)nin, sizeof(double)),
           *xb32 = calloc((size_t)nin, sizeof(double)), v64[37], v32[37];
    prt_mlp_init(&m64, theta, &rng);
    for (long i = 0; i < np; i++) theta[i] += 0.05 * prt_rng_normal(&rng);
    for (long i = 0; i < nin; i++) x[i] = prt_rng_normal(&rng), u[i] = prt_rng_normal(&rng);
    PrtMlpWork w64 = {0}, w32 = {0};
    prt_mlp_value_grad(&m64, theta, n, x, v64, g64, &w64);
    prt_mlp_grad_vjp(&m64, theta, n, x, u, xb64, tb64, &w64);
    prt_mlp_value_grad(&m32, theta, n, x, v32, g32, &w32);
    prt_mlp_grad_vjp(&m32, theta, n, x, u, xb32, tb32, &w32);
    /* errors relative to each array's largest entry: float carries about 7 digits */
    double worst = 0;
    const double *pairs[4][2] = {{v64, v32}, {g64, g32}, {xb64, xb32}, {tb64, tb32}};
    long lens[4] = {n, nin, nin, np};
    for (int k = 0; k < 4; k++) {
        double scale = 0, err = 0;
        for (long i = 0; i < lens[k]; i++) scale = fmax(scale, fabs(pairs[k][0][i]));
        for (long i = 0; i < lens[k]; i++) err = fmax(err, fabs(pairs[k][0][i] - pairs[k][1][i]));
        worst = fmax(worst, err / scale);
    }
    CHECK(worst < 2e-5, "%s: f32 passes differ from f64 by %.2e (relative to the largest entry)", name, worst);
    printf("%s: f32 passes agree with f64 to %.1e\n", name, worst);
    prt_mlp_work_free(&w64), prt_mlp_work_free(&w32);
    free(theta), free(tb64), free(tb32), free(x), free(u), free(g64), free(g32), free(xb64), free(xb32);
}

/* A network of several outputs as a plain function: its VJP against differences of
   S = ybar . f(x), in x and in theta; the f32 passes against the f64 ones; and one work
   serving networks of other shapes in turn (as a tape's reused nodes do). */
static double Sf_of(const PrtMlp *m, const double *theta, long n, const double *x, const double *ybar, PrtMlpWork *w) {
    double y[64], s = 0;
    prt_mlp_forward(m, theta, n, x, y, w);
    for (long i = 0; i < n * m->size[m->nlayers]; i++) s += ybar[i] * y[i];
    return s;
}

static void check_vector_net(PrtActivation a, const char *name) {
    PrtMlp m = {.nlayers = 3, .size = {5, 7, 6, 3}, .act = a};
    long np = prt_mlp_nparams(&m), n = 4;
    PrtRng rng;
    prt_rng_seed(&rng, 12);
    double *theta = malloc(sizeof(double) * (size_t)np), *thetabar = calloc((size_t)np, sizeof(double));
    prt_mlp_init(&m, theta, &rng);
    for (long i = 0; i < np; i++) theta[i] += 0.1 * prt_rng_normal(&rng);
    double x[20], ybar[12], y[12], xbar[20] = {0};
    for (int i = 0; i < 20; i++) x[i] = prt_rng_normal(&rng);
    for (int i = 0; i < 12; i++) ybar[i] = prt_rng_normal(&rng);
    PrtMlpWork w = {0};
    /* the work first serves a wider scalar network, then this one */
    PrtMlp wide = {.nlayers = 2, .size = {9, 11, 1}, .act = a};
    double *tw = malloc(sizeof(double) * (size_t)prt_mlp_nparams(&wide)), xw[36], vw[4], gw[36];
    prt_mlp_init(&wide, tw, &rng);
    for (int i = 0; i < 36; i++) xw[i] = prt_rng_normal(&rng);
    prt_mlp_value_grad(&wide, tw, n, xw, vw, gw, &w);
    prt_mlp_forward(&m, theta, n, x, y, &w);
    prt_mlp_vjp(&m, theta, n, ybar, xbar, thetabar, &w);
    double worst = against_differences(Sf_of, &m, theta, n, x, ybar, &w, xbar, thetabar, 1e-7, name);
    /* f32: the same outputs and VJP to float precision */
    PrtMlp m32 = m;
    m32.f32 = true;
    double y32[12], xbar32[20] = {0}, *tb32 = calloc((size_t)np, sizeof(double)), err = 0;
    PrtMlpWork w32 = {0};
    prt_mlp_forward(&m32, theta, n, x, y32, &w32);
    prt_mlp_vjp(&m32, theta, n, ybar, xbar32, tb32, &w32);
    for (int i = 0; i < 12; i++) err = fmax(err, fabs(y32[i] - y[i]) / (1 + fabs(y[i])));
    for (int i = 0; i < 20; i++) err = fmax(err, fabs(xbar32[i] - xbar[i]) / (1 + fabs(xbar[i])));
    for (long k = 0; k < np; k++) err = fmax(err, fabs(tb32[k] - thetabar[k]) / (1 + fabs(thetabar[k])));
    CHECK(err < 1e-5, "%s: the f32 forward pass and VJP differ from f64 by %.2e", name, err);
    printf("%s: a 3-output network's VJP matches differences (worst %.1e); f32 agrees to %.1e\n", name, worst, err);
    prt_mlp_work_free(&w), prt_mlp_work_free(&w32);
    free(theta), free(thetabar), free(tw), free(tb32);
}

int main(void) {
    check_vector_net(PRT_ACT_TANH, "tanh");
    check_vector_net(PRT_ACT_SOFTPLUS, "softplus");
    check_vector_net(PRT_ACT_SILU, "silu");
    check_f32(PRT_ACT_TANH, "tanh");
    check_f32(PRT_ACT_SOFTPLUS, "softplus");
    check_f32(PRT_ACT_SILU, "silu");
    check_net(PRT_ACT_TANH, "tanh");
    check_net(PRT_ACT_SOFTPLUS, "softplus");
    check_net(PRT_ACT_SILU, "silu");
    /* orthogonal initialization: W W^T = I for a wide layer, W^T W = I for a tall one */
    PrtMlp m = {.nlayers = 2, .size = {6, 9, 1}, .act = PRT_ACT_TANH};
    double theta[6 * 9 + 9 + 9 + 1];
    PrtRng rng;
    prt_rng_seed(&rng, 4);
    prt_mlp_init(&m, theta, &rng);
    double worst = 0;
    for (int i = 0; i < 6; i++) /* W_1 is 9 x 6: its columns are orthonormal */
        for (int j = 0; j < 6; j++) {
            double d = 0;
            for (int k = 0; k < 9; k++) d += theta[k * 6 + i] * theta[k * 6 + j];
            worst = fmax(worst, fabs(d - (i == j)));
        }
    double *W2 = theta + 6 * 9 + 9, nrm = 0; /* 1 x 9: a unit row */
    for (int k = 0; k < 9; k++) nrm += W2[k] * W2[k];
    CHECK(worst < 1e-12 && fabs(nrm - 1) < 1e-12, "orthogonal init: %g, %g", worst, nrm);
    /* biases as torch.nn.Linear's: U(-1/sqrt(fan_in), 1/sqrt(fan_in)), spread over that range */
    PrtMlp wide = {.nlayers = 2, .size = {4, 256, 1}, .act = PRT_ACT_TANH};
    double *tw = malloc(sizeof(double) * (size_t)prt_mlp_nparams(&wide));
    prt_mlp_init(&wide, tw, &rng);
    const double *b1 = tw + 4 * 256, *b2 = tw + 4 * 256 + 256 + 256;
    double lo = 0, hi = 0, mean = 0;
    for (int k = 0; k < 256; k++) lo = fmin(lo, b1[k]), hi = fmax(hi, b1[k]), mean += b1[k] / 256;
    CHECK(lo >= -0.5 && hi <= 0.5 && lo < -0.45 && hi > 0.45 && fabs(mean) < 0.1,
          "first-layer biases: [%g, %g], mean %g; want U(-0.5, 0.5)", lo, hi, mean);
    CHECK(fabs(b2[0]) <= 1 / 16.0, "output bias %g outside +-1/16", b2[0]);
    /* biases zero (the DGNet reference's): every bias 0, the weights those of the same draws */
    PrtMlp zero = wide;
    zero.zero_biases = true;
    double *tz = malloc(sizeof(double) * (size_t)prt_mlp_nparams(&zero)), *td = malloc(sizeof(double) * (size_t)prt_mlp_nparams(&wide));
    PrtRng r1, r2;
    prt_rng_seed(&r1, 9), prt_rng_seed(&r2, 9);
    prt_mlp_init(&zero, tz, &r1), prt_mlp_init(&wide, td, &r2);
    bool biases0 = true, same_weights = true;
    for (long i = 0; i < prt_mlp_nparams(&wide); i++) {
        bool bias = (i >= 4 * 256 && i < 4 * 256 + 256) || i == prt_mlp_nparams(&wide) - 1;
        if (bias) biases0 = biases0 && tz[i] == 0;
        else same_weights = same_weights && tz[i] == td[i];
    }
    CHECK(biases0 && same_weights, "biases zero: biases %s 0, weights %s the default's", biases0 ? "all" : "not all",
          same_weights ? "equal to" : "not");
    free(tz), free(td);
    free(tw);
    printf("%s: %s\n", __FILE__, failures ? "FAILED" : "ok");
    return failures != 0;
}
