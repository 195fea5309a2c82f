/* test_vsilu.c — the vectorized float SiLU (vsilu.c) against double-precision references
   from the same float argument: s, s' and s'' over a dense sweep of [-100, 100], tiny and
   huge arguments and every remainder length of the vector loop. Each is within 6 float ulps
   of the size of the terms it is a sum of (s' = sigma + x q and s'' = q (2 - x t) cross zero,
   where only an absolute accuracy is meaningful), or of what its denormal intermediates
   allow far out in the tails; NaN stays NaN. */
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

#include "check.h"
#include "nn/vsilu.h"

/* |got - want| in float ulps of `size` (the magnitude the result is computed at), or of the
   rounding the denormal intermediates of argument x bring (sigma(-|x|) and q keep fewer bits
   below FLT_MIN, which x and 2 - x t scale: FLT_TRUE_MIN (1 + |x|)(2 + |x|)), the larger */
static double ulps_of(float got, double want, double size, double x) {
    if ((double)got == want) return 0;
    double u = nextafterf((float)size, INFINITY) - (float)size, tiny = FLT_TRUE_MIN * (1 + fabs(x)) * (2 + fabs(x));
    return fabs(got - want) / (u > tiny ? u : tiny);
}

static void reference(double x, double *s, double *ds, double *dds, double *ds_size, double *dds_size) {
    double e = exp(-fabs(x)), sp = 1 / (1 + e), sn = e / (1 + e); /* sigma(|x|), sigma(-|x|) */
    double sg = x >= 0 ? sp : sn, q = sp * sn, t = copysign(sp - sn, x);
    *s = x * sg, *ds = sg + x * q, *dds = q * (2 - x * t);
    *ds_size = sg + fabs(x * q), *dds_size = q * (2 + fabs(x * t));
}

int main(void) {
    enum { N = 400003 };
    float *x = malloc(sizeof(float) * N), *s = malloc(sizeof(float) * N), *ds = malloc(sizeof(float) * N),
          *dds = malloc(sizeof(float) * N);
    for (long i = 0; i < N; i++) x[i] = (float)(-100 + 200.0 * i / (N - 1));
    const float special[] = {0.0f, -0.0f, 1e-30f, -1e-30f, 1e-6f, -1e-6f, 88.0f, -88.0f, 89.5f, -89.5f, 150.0f, -150.0f};
    int ns = (int)(sizeof special / sizeof special[0]);
    for (int i = 0; i < ns; i++) x[i] = special[i];
    double worst[3] = {0, 0, 0};
    for (long n = N; n >= N - 40; n -= 13) { /* lengths that leave remainder lanes */
        prt_vsiluf(n, x, s, ds, dds);
        for (long i = 0; i < n; i++) {
            double rs, rds, rdds, ds_size, dds_size;
            reference(x[i], &rs, &rds, &rdds, &ds_size, &dds_size);
            double u[3] = {ulps_of(s[i], rs, fabs(rs), x[i]), ulps_of(ds[i], rds, ds_size, x[i]),
                           ulps_of(dds[i], rdds, dds_size, x[i])};
            for (int k = 0; k < 3; k++) worst[k] = fmax(worst[k], u[k]);
            if (u[0] > 6 || u[1] > 6 || u[2] > 6)
                CHECK(false, "silu(%.9g): %.9g %.9g %.9g, want %.17g %.17g %.17g", x[i], s[i], ds[i], dds[i], rs, rds, rdds);
        }
    }
    CHECK(worst[0] <= 6 && worst[1] <= 6 && worst[2] <= 6, "worst %.2f %.2f %.2f float ulps", worst[0], worst[1],
          worst[2]);
    CHECK(s[0] == 0 && ds[0] == 0.5f && dds[0] == 0.5f, "silu(0) = 0, s'(0) = 1/2, s''(0) = 1/2: %g %g %g", s[0], ds[0], dds[0]);
    float nan_in = NAN, o[3];
    prt_vsiluf(1, &nan_in, o, o + 1, o + 2);
    CHECK(isnan(o[0]) && isnan(o[1]) && isnan(o[2]), "NaN stays NaN");
    printf("test_vsilu: worst %.2f, %.2f, %.2f float ulps (s, s', s'') over %d points: %s\n", worst[0], worst[1],
           worst[2], N, failures ? "FAILED" : "ok");
    free(x), free(s), free(ds), free(dds);
    return failures != 0;
}
