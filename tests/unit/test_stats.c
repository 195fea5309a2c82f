/* test_stats.c — Student's t and the confidence interval of a geometric mean against closed
   forms (df 1 is the Cauchy distribution, df 2 has an algebraic cdf), published table
   values, and the normal limit; the geometric mean itself. */
#include <math.h>
#include <stdio.h>

#include "math/stats.h"

#include "check.h"

static const double pi = 3.14159265358979323846;

int main(void) {
    /* df 1: F(t) = 1/2 + atan(t) / pi */
    for (double t = -30; t <= 30; t += 0.7)
        CHECK(fabs(prt_student_t_cdf(t, 1) - (0.5 + atan(t) / pi)) < 1e-14, "cauchy cdf at %g", t);
    CHECK(fabs(prt_student_t_quantile(0.975, 1) / tan(pi * 0.475) - 1) < 1e-12, "cauchy quantile");
    /* df 2: F(t) = 1/2 + t / (2 sqrt(2 + t^2)), so t_p = q sqrt(2 / (1 - q^2)) with q = 2p - 1 */
    for (double t = -20; t <= 20; t += 0.9)
        CHECK(fabs(prt_student_t_cdf(t, 2) - (0.5 + t / (2 * sqrt(2 + t * t)))) < 1e-14, "df 2 cdf at %g", t);
    for (double p = 0.01; p < 1; p += 0.07) {
        double q = 2 * p - 1, want = q * sqrt(2 / (1 - q * q));
        CHECK(fabs(prt_student_t_quantile(p, 2) - want) < 1e-12 * fmax(1, fabs(want)), "df 2 quantile at %g", p);
    }
    /* two-sided 95 % points from the tables (6 decimals) */
    const double df[] = {4, 9, 30, 99}, t975[] = {2.776445, 2.262157, 2.042272, 1.984217};
    for (int i = 0; i < 4; i++) {
        double t = prt_student_t_quantile(0.975, df[i]);
        CHECK(fabs(t - t975[i]) < 6e-7, "t(0.975, %g) = %.7f, table %.6f", df[i], t, t975[i]);
    }
    CHECK(fabs(prt_student_t_quantile(0.975, 1e9) - 1.959964) < 1e-6, "normal limit");
    CHECK(isnan(prt_student_t_quantile(1, 5)) && isnan(prt_student_t_quantile(0.5, 0)), "domain");

    /* the interval: logs -1 and 1 have mean 0 and standard error 1, so exp(-+t(0.975, 1)) */
    double v[] = {exp(-1), exp(1)}, lo, hi;
    CHECK(prt_geomean_ci(v, 2, 0.95, &lo, &hi), "two values");
    CHECK(fabs(log(hi) - tan(pi * 0.475)) < 1e-11 && fabs(log(lo) + tan(pi * 0.475)) < 1e-11, "[%g, %g]", lo, hi);
    /* a constant sample has a zero-width interval at its value */
    double c[] = {3e-4, 3e-4, 3e-4};
    CHECK(prt_geomean_ci(c, 3, 0.95, &lo, &hi) && fabs(lo / 3e-4 - 1) < 1e-14 && fabs(hi / 3e-4 - 1) < 1e-14, "constant");
    double bad[] = {1e-3, 0};
    CHECK(!prt_geomean_ci(bad, 2, 0.95, &lo, &hi) && isnan(lo) && isnan(hi), "a zero is refused");
    CHECK(!prt_geomean_ci(v, 1, 0.95, &lo, &hi), "one value has no interval");

    /* the geometric mean: exp of the mean log; inside its own interval; none with a zero */
    double g[] = {1e-4, 1e-2, 1};
    CHECK(fabs(prt_geomean(g, 3) / 1e-2 - 1) < 1e-14, "geomean(1e-4, 1e-2, 1) = %g", prt_geomean(g, 3));
    CHECK(prt_geomean_ci(g, 3, 0.95, &lo, &hi) && lo < prt_geomean(g, 3) && prt_geomean(g, 3) < hi, "inside");
    CHECK(fabs(prt_geomean(c, 3) / 3e-4 - 1) < 1e-14, "constant geomean");
    CHECK(isnan(prt_geomean(bad, 2)) && isnan(prt_geomean(g, 0)), "a zero or nothing has no geometric mean");

    /* the arithmetic mean and its interval mean -+ t(0.975, 1) sd / sqrt(2): of 0 and 2, 1 -+ tan(0.475 pi);
       zeros are values like any other, a NaN is none */
    double z2[] = {0, 2}, nan2[] = {1, NAN};
    CHECK(prt_mean(z2, 2) == 1 && prt_mean_ci(z2, 2, 0.95, &lo, &hi), "mean of 0 and 2");
    CHECK(fabs(hi - 1 - tan(pi * 0.475)) < 1e-11 && fabs(lo - 1 + tan(pi * 0.475)) < 1e-11, "[%g, %g]", lo, hi);
    CHECK(prt_mean_ci(c, 3, 0.95, &lo, &hi) && lo == hi && fabs(lo / 3e-4 - 1) < 1e-14, "constant: [%g, %g]", lo, hi);
    CHECK(isnan(prt_mean(nan2, 2)) && !prt_mean_ci(nan2, 2, 0.95, &lo, &hi) && isnan(lo) && !prt_mean_ci(z2, 1, 0.95, &lo, &hi),
          "no mean of a NaN, no interval of one value");
    double inf[] = {1, INFINITY};
    CHECK(isnan(prt_geomean(inf, 2)), "an infinite value has no geometric mean");

    printf("%s: %s\n", __FILE__, failures ? "FAILED" : "ok");
    return failures != 0;
}
