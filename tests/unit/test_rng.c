/* test_rng.c — the runtime's random numbers: deterministic per seed, and the right moments. */
#include <math.h>
#include <stdio.h>

#include "math/rng.h"

#include "check.h"

int main(void) {
    PrtRng a, b;
    prt_rng_seed(&a, 42);
    prt_rng_seed(&b, 42);
    for (int i = 0; i < 1000; i++) CHECK(prt_rng_u64(&a) == prt_rng_u64(&b), "same seed, different stream at %d", i);
    prt_rng_seed(&b, 43);
    prt_rng_seed(&a, 42);
    CHECK(prt_rng_u64(&a) != prt_rng_u64(&b), "seeds 42 and 43 give the same first number");

    enum { N = 1000000 };
    double s1 = 0, s2 = 0, s3 = 0, s4 = 0, umin = 1, umax = 0, usum = 0;
    prt_rng_seed(&a, 7);
    for (int i = 0; i < N; i++) {
        double x = prt_rng_normal(&a);
        s1 += x, s2 += x * x, s3 += x * x * x, s4 += x * x * x * x;
        double u = prt_rng_uniform(&a);
        umin = fmin(umin, u), umax = fmax(umax, u), usum += u;
    }
    double mean = s1 / N, var = s2 / N - mean * mean;
    /* standard errors at N = 1e6: mean 1e-3, variance 1.4e-3, skew 2.4e-3, kurtosis 4.9e-3 */
    CHECK(fabs(mean) < 5e-3, "normal mean %g", mean);
    CHECK(fabs(var - 1) < 7e-3, "normal variance %g", var);
    CHECK(fabs(s3 / N) < 1.2e-2, "normal third moment %g", s3 / N);
    CHECK(fabs(s4 / N - 3) < 5e-2, "normal fourth moment %g (want 3)", s4 / N);
    CHECK(umin >= 0 && umax < 1, "uniform out of [0, 1): %g %g", umin, umax);
    CHECK(fabs(usum / N - 0.5) < 3e-3, "uniform mean %g", usum / N);
    printf("%s: %s\n", __FILE__, failures ? "FAILED" : "ok");
    return failures != 0;
}
