/* test_vtanh.c — the vectorized tanh against libm's over the whole range: a dense sweep of
   [-30, 30], both sides of the branch point 0.5, tiny and huge arguments, and the float
   version; at most 4 units in the last place apart. */
#include <float.h>
#include <math.h>
#include <stdlib.h>

#include "check.h"
#include "physrt.h"
#include "vtanh.h"

static double ulps(double got, double want) {
    if (got == want) return 0;
    return fabs(got - want) / (nextafter(fabs(want), INFINITY) - fabs(want));
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
    float xf[1001], yf[1001];
    for (int i = 0; i < 1001; i++) xf[i] = (float)(-10 + 0.02 * i);
    prt_vtanhf(1001, xf, yf);
    double worstf = 0;
    for (int i = 0; i < 1001; i++) worstf = fmax(worstf, fabs(yf[i] - tanhf(xf[i])) / fmax(1e-30, fabs(tanhf(xf[i]))));
    CHECK(worstf < 2.5e-7, "float version: %.2e relative", worstf);
    printf("test_vtanh: worst %.2f ulp from libm over %d points, float %.1e: %s\n", worst, 2 * N + ns, worstf,
           failures ? "FAIL" : "ok");
    free(x), free(y);
    return failures != 0;
}
