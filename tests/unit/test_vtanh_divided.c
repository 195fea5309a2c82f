/* test_vtanh_divided.c — the vectorized tanh divided difference (vtanh_divided.c):
   - the array functions (g dd with dd and its partials kept, and the adjoints from them) give
     bit for bit what the scalar prt_tanh_divided gives in the same products (which
     test_discrete_grad.c checks against long-double references on its grid), on pairs from
     close to far apart and from the linear range to saturation, over lengths that leave
     remainder lanes;
   - with the exponentials of a and b kept (prt_vtanh_exps, as a discrete gradient's forward
     pass keeps them), the partials are the same bits; the kept tanh is within 2 ulps of long
     double's, and e^-2|x| within 1e-15 relative;
   - on the diagonal a = b = x, dd = sech^2 x and d dd/da = d dd/db = -tanh x sech^2 x to
     1e-15 (1e-14 for the partials) relative over [0, 380] in steps of 0.01: the exponential's
     whole range, down through gradual underflow (sech^2 380 ~ 1e-330), where the error allowed
     is an absolute few subnormal units. */
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

#include "check.h"
#include "math/rng.h"
#include "nn/vtanh_divided.h"

static bool same(double x, double y) { return x == y || (isnan(x) && isnan(y)); }

static void test_arrays_match_scalar(void) {
    enum { N = 4099 };
    double *a = malloc(sizeof(double) * N), *b = malloc(sizeof(double) * N), *dd = malloc(sizeof(double) * N);
    double *ybar = malloc(sizeof(double) * N), *abar = malloc(sizeof(double) * N), *bbar = malloc(sizeof(double) * N);
    double *g = malloc(sizeof(double) * N), *gbar = malloc(sizeof(double) * N);
    double *s0 = malloc(sizeof(double) * N), *s1 = malloc(sizeof(double) * N), *s2 = malloc(sizeof(double) * N);
    const double scales[] = {1e-3, 0.3, 1, 4, 30, 400}, gaps[] = {0, 1e-12, 1e-6, 0.1, 0.3, 1, 20};
    PrtRng rng;
    prt_rng_seed(&rng, 5);
    for (long i = 0; i < N; i++) {
        double s = scales[i % 6], gap = gaps[i / 6 % 7];
        a[i] = s * prt_rng_normal(&rng);
        b[i] = i % 5 == 0 ? -a[i] : a[i] + gap * prt_rng_normal(&rng);
        ybar[i] = prt_rng_normal(&rng), g[i] = prt_rng_normal(&rng);
    }
    g[0] = g[1] = g[2] = g[3] = 1;
    a[0] = b[0] = 0, a[1] = -0.0, b[1] = 0, a[2] = INFINITY, b[2] = 1, a[3] = NAN, b[3] = 1;
    long mismatches = 0;
    for (long n = N; n >= N - 9; n -= 3) { /* the remainder loops of every vector width */
        prt_vtanh_divided_partials(n, a, b, g, dd, s0, s1, s2);
        for (long i = 0; i < n; i++) gbar[i] = 1;
        prt_vtanh_divided_adjoints_of(n, s0, s1, s2, g, ybar, gbar, abar, bbar);
        for (long i = 0; i < n; i++) {
            double da, db, s = prt_tanh_divided(a[i], b[i], &da, &db), w = ybar[i] * g[i];
            if (!same(dd[i], g[i] * s) || !same(s0[i], s) || !same(s1[i], da) || !same(s2[i], db) || !same(gbar[i], 1 + ybar[i] * s) || !same(abar[i], w * da) ||
                !same(bbar[i], w * db)) {
                if (mismatches++ < 5)
                    CHECK(false, "dd(%.17g, %.17g): arrays %.17g %.17g %.17g, scalar %.17g %.17g %.17g", a[i], b[i], dd[i],
                          abar[i], bbar[i], g[i] * s, w * da, w * db);
            }
        }
    }
    CHECK(mismatches == 0, "%ld values differ between the arrays and the scalar function", mismatches);
    CHECK(dd[0] == 1 && abar[0] == 0 && bbar[0] == 0, "tanh'(0) = 1, tanh''(0) = 0");
    CHECK(dd[2] == 0 && isnan(dd[3]), "dd(inf, 1) = 0 and dd(NaN, 1) = NaN, not %g and %g", dd[2], dd[3]);
    free(a), free(b), free(dd), free(ybar), free(abar), free(bbar), free(g), free(gbar), free(s0), free(s1), free(s2);
}

/* The divided differences from kept exponentials are the same bits as those that take them,
   and the kept tanh, e^-2|x| and expm1(-2|x|) are accurate. */
static void test_kept_exponentials(void) {
    enum { N = 2053 };
    double *x = malloc(sizeof(double) * 2 * N), *e = malloc(sizeof(double) * 2 * N);
    double *th = malloc(sizeof(double) * 2 * N), *g = malloc(sizeof(double) * N), *y[2], *p[2][3];
    for (int k = 0; k < 2; k++) {
        y[k] = malloc(sizeof(double) * N);
        for (int j = 0; j < 3; j++) p[k][j] = malloc(sizeof(double) * N);
    }
    PrtRng rng;
    prt_rng_seed(&rng, 9);
    const double scales[] = {1e-8, 1e-3, 0.3, 1, 4, 30, 400};
    for (long i = 0; i < N; i++) { /* a = x[i], b = x[N + i]: pairs near, far and of opposite signs */
        x[i] = scales[i % 7] * prt_rng_normal(&rng);
        x[N + i] = i % 3 == 0 ? -x[i] : x[i] + scales[i / 7 % 7] * prt_rng_normal(&rng);
        g[i] = prt_rng_normal(&rng);
    }
    x[0] = 0, x[N] = -0.0, x[1] = 1e-310, x[2] = 800, x[N + 2] = -800;
    prt_vtanh_exps(2 * N, x, e, th);
    prt_vtanh_divided_partials(N, x, x + N, g, y[0], p[0][0], p[0][1], p[0][2]);
    prt_vtanh_divided_partials_kept(N, x, x + N, e, th, e + N, th + N, g, y[1], p[1][0], p[1][1], p[1][2]);
    long differ = 0;
    double worst_t = 0, worst_e = 0;
    for (long i = 0; i < N; i++)
        differ += !same(y[0][i], y[1][i]) || !same(p[0][0][i], p[1][0][i]) || !same(p[0][1][i], p[1][1][i]) ||
                  !same(p[0][2][i], p[1][2][i]);
    for (long i = 0; i < 2 * N; i++) {
        long double t = tanhl(x[i]), ex = expl(-2.0L * fabsl(x[i]));
        if (t != 0) worst_t = fmax(worst_t, (double)(fabsl(th[i] - t) / (fabsl(t) * DBL_EPSILON)));
        if (ex > DBL_MIN) worst_e = fmax(worst_e, (double)(fabsl(e[i] - ex) / ex));
    }
    CHECK(differ == 0, "%ld divided differences from kept exponentials differ from those that take them", differ);
    CHECK(worst_t <= 2, "tanh from the kept exponentials: %.2g ulps off long double's", worst_t);
    CHECK(worst_e < 1e-15, "the kept e^-2|x|: relative error %.2g", worst_e);
    CHECK(th[0] == 0 && !signbit(th[0]) && th[N] == 0 && signbit(th[N]) && th[2] == 1 && th[N + 2] == -1,
          "tanh(+-0) = +-0, tanh(+-800) = +-1");
    printf("kept exponentials: tanh within %.2g ulps, e^-2|x| within %.2g relative\n", worst_t, worst_e);
    free(x), free(e), free(th), free(g);
    for (int k = 0; k < 2; k++) {
        free(y[k]);
        for (int j = 0; j < 3; j++) free(p[k][j]);
    }
}

static void test_diagonal(void) {
    double worst = 0, worst_p = 0;
    for (int k = 0; k <= 38000; k++) {
        double x = k * 0.01, da, db, dd = prt_tanh_divided(x, x, &da, &db);
        long double e = expl(-2.0L * x), sech2 = 4 * e / ((1 + e) * (1 + e)), d2 = -tanhl(x) * sech2;
        long double err = fabsl(dd - sech2) - 4 * DBL_TRUE_MIN, err_p = fabsl(da - d2) - 4 * DBL_TRUE_MIN;
        double rel = err > 0 ? (double)(err / sech2) : 0, rel_p = err_p > 0 ? (double)(err_p / fabsl(d2)) : 0;
        CHECK(rel < 1e-15, "dd(%g, %g) = %.17g, sech^2 = %.17Lg (relative error %.2g)", x, x, dd, sech2, rel);
        CHECK(rel_p < 1e-14 && da == db, "d dd/da (%g, %g) = %.17g, d dd/db %.17g, -tanh sech^2 = %.17Lg", x, x, da, db, d2);
        worst = fmax(worst, rel), worst_p = fmax(worst_p, rel_p);
    }
    CHECK(prt_tanh_divided(400, 400, NULL, NULL) == 0, "sech^2 400 underflows to 0");
    printf("diagonal: worst relative error of dd %.2g, of its partials %.2g\n", worst, worst_p);
}

int main(void) {
    test_arrays_match_scalar();
    test_kept_exponentials();
    test_diagonal();
    printf("test_vtanh_divided: %s\n", failures ? "FAILED" : "ok");
    return failures != 0;
}
