/* test_vtanh.c — the vectorized tanh against libm's over the whole range: a dense sweep of
   [-30, 30], both sides of the branch point 0.5, tiny and huge arguments; and the float
   version (computed in float) over [-12, 12] and its own branch points; at most 4 units in
   the last place apart, of double and of float. */
#include <float.h>
#include <math.h>
#include <stdlib.h>

#include "check.h"
#include "math/rng.h"
#include "nn/vtanh.h"

static double ulps(double got, double want) {
    if (got == want) return 0;
    return fabs(got - want) / (nextafter(fabs(want), INFINITY) - fabs(want));
}

/* got against the float nearest to want, in units of that float's last place */
static double ulpsf(float got, double want) {
    float w = (float)want;
    if (got == w) return 0;
    return fabs(got - want) / (nextafterf(fabsf(w), INFINITY) - fabsf(w));
}

int main(void) {
    enum { N = 600001 };
    double *x = malloc(sizeof(double) * N), *y = malloc(sizeof(double) * N);
    for (long i = 0; i < N; i++) x[i] = -30 + 60.0 * i / (N - 1);
    prt_vtanh(N, x, y);
    double worst = 0;
    for (long i = 0; i < N; i++) worst = fmax(worst, ulps(y[i], tanh(x[i])));
    double special[] = {0.0, -0.0, 1e-300, -1e-300, 5e-324, 1e-8, 0.49999999999999994, 0.5, 0.5000000000000001,
                        -0.5, 19.999, 20.0, 20.5, 710, -1e300, 1e300, DBL_MAX, -DBL_MAX};
    int ns = sizeof special / sizeof special[0];
    double ys[sizeof special / sizeof special[0]];
    prt_vtanh(ns, special, ys);
    for (int i = 0; i < ns; i++) {
        double u = ulps(ys[i], tanh(special[i]));
        CHECK(u <= 4 && signbit(ys[i]) == signbit(tanh(special[i])), "tanh(%.17g) = %.17g, libm %.17g", special[i], ys[i],
              tanh(special[i]));
    }
    PrtRng rng;
    prt_rng_seed(&rng, 3);
    for (long i = 0; i < N; i++) x[i] = prt_rng_normal(&rng) * (i % 3 == 0 ? 0.3 : 3);
    prt_vtanh(N, x, y);
    for (long i = 0; i < N; i++) worst = fmax(worst, ulps(y[i], tanh(x[i])));
    CHECK(worst <= 4, "worst difference from libm: %.2f ulp", worst);
    /* the float version (computed in float): against libm's double tanh, in float ulps */
    enum { NF = 2000001 };
    float *xf = malloc(sizeof(float) * NF), *yf = malloc(sizeof(float) * NF);
    for (long i = 0; i < NF; i++) xf[i] = (float)(-12 + 24.0 * i / (NF - 1));
    prt_vtanhf(NF, xf, yf);
    double worstf = 0;
    for (long i = 0; i < NF; i++) worstf = fmax(worstf, ulpsf(yf[i], tanh(xf[i])));
    float specialf[] = {0.0f, -0.0f, 1e-30f, -1e-30f, 1e-8f, 0.54999995f, 0.55f, 0.55000001f, 9.49f, 9.5f,
                        20.0f, 1e30f, -1e30f, FLT_MAX, -FLT_MAX};
    int nsf = sizeof specialf / sizeof specialf[0];
    float ysf[sizeof specialf / sizeof specialf[0]];
    prt_vtanhf(nsf, specialf, ysf);
    for (int i = 0; i < nsf; i++) {
        double u = ulpsf(ysf[i], tanh(specialf[i]));
        worstf = fmax(worstf, u);
        CHECK(u <= 4 && !signbit(ysf[i]) == !signbit(tanh(specialf[i])), "tanhf(%.9g) = %.9g, libm %.9g", specialf[i],
              ysf[i], tanh(specialf[i]));
    }
    CHECK(worstf <= 4, "float version: worst %.2f float ulp from libm", worstf);
    printf("test_vtanh: worst %.2f ulp from libm over %d points, float %.2f ulp over %d: %s\n", worst, 2 * N + ns,
           worstf, NF + nsf, failures ? "FAIL" : "ok");
    free(xf), free(yf);
    free(x), free(y);
    return failures != 0;
}
