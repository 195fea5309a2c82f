/* test_mlp.c — the MLP passes on OpenBLAS against finite differences: the input gradient
   of V, and the double backward (feature-major batches, as the kernels use) (d/dx and d/dtheta of u . dV/dx) for every activation;
   orthogonal initialization. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "mlp.h"

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
    int in = m.size[0];
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
    double worst = 0;
    /* dV/dx against differences of V */
    for (long b = 0; b < n; b++)
        for (int i = 0; i < in; i++) {
            double xp[20], vp[4], vm[4], h = 1e-6;
            memcpy(xp, x, sizeof xp);
            xp[i * n + b] += h;
            prt_mlp_value_grad(&m, theta, n, xp, vp, NULL, &w);
            xp[i * n + b] -= 2 * h;
            prt_mlp_value_grad(&m, theta, n, xp, vm, NULL, &w);
            double want = (vp[b] - vm[b]) / (2 * h);
            worst = fmax(worst, fabs(g[i * n + b] - want));
            CHECK(fabs(g[i * n + b] - want) < 1e-7 * (1 + fabs(want)), "%s: dV/dx = %.12g, differences %.12g", name,
                  g[i * n + b], want);
        }
    /* dS/dx and dS/dtheta against differences of S = u . dV/dx */
    for (int i = 0; i < 20; i++) {
        double xp[20], h = 1e-6;
        memcpy(xp, x, sizeof xp);
        xp[i] += h;
        double sp = S_of(&m, theta, n, xp, u, &w);
        xp[i] -= 2 * h;
        double sm = S_of(&m, theta, n, xp, u, &w), want = (sp - sm) / (2 * h);
        worst = fmax(worst, fabs(xbar[i] - want));
        CHECK(fabs(xbar[i] - want) < 1e-6 * (1 + fabs(want)), "%s: dS/dx%d = %.12g, differences %.12g", name, i, xbar[i],
              want);
    }
    for (long k = 0; k < np; k++) {
        double save = theta[k], h = 1e-6;
        theta[k] = save + h;
        double sp = S_of(&m, theta, n, x, u, &w);
        theta[k] = save - h;
        double sm = S_of(&m, theta, n, x, u, &w), want = (sp - sm) / (2 * h);
        theta[k] = save;
        worst = fmax(worst, fabs(thetabar[k] - want));
        CHECK(fabs(thetabar[k] - want) < 1e-6 * (1 + fabs(want)), "%s: dS/dtheta%ld = %.12g, differences %.12g", name, k,
              thetabar[k], want);
    }
    printf("%s: input gradient and double backward match differences (worst absolute difference %.1e)\n", name, worst);
    prt_mlp_work_free(&w);
    free(theta), free(thetabar);
}

int main(void) {
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
    for (int k = 0; k < 9; k++) CHECK(theta[54 + k] == 0, "biases start at zero");
    printf("%s: %s\n", __FILE__, failures ? "FAILED" : "ok");
    return failures != 0;
}
