/* vtanh.c — tanh over an array, written so the compiler vectorizes it (no calls, no
   branches the loop cannot blend), and compiled for AVX-512, AVX2 and baseline x86-64
   with run-time dispatch. libm's tanh is scalar, and it was a quarter of a training
   epoch (docs/performance.md). Accurate to a few units in the last place (test_vtanh.c
   compares it with libm over the whole range).

   |x| >= 0.5:  tanh|x| = 1 - 2 / (exp(2|x|) + 1), exp by 2^k e^r with |r| <= ln2 / 2 and a
                degree-13 Taylor polynomial (truncation below 1e-17);
   |x| <  0.5:  expm1(2|x|) / (expm1(2|x|) + 2), expm1 by its Taylor series to y^18 (below
                1e-17 for y < 1). */
#include "vtanh.h"

#include "exp_taylor.h"
#include "math/simd_clones.h"

#include <stdint.h>
#include <string.h>

static inline double exp_pos(double y) { /* e^y for 0 <= y <= 40 */
    const double log2e = 1.4426950408889634, ln2_hi = 6.93147180369123816490e-01, ln2_lo = 1.90821492927058770002e-10;
    const double shift = 0x1.8p52; /* adding it rounds to an integer held in the low mantissa bits */
    double kd = y * log2e + shift;
    uint64_t kbits;
    memcpy(&kbits, &kd, sizeof kbits);
    kd -= shift;
    double r = (y - kd * ln2_hi) - kd * ln2_lo;
    double p = prt_exp_taylor_tail(r);
    p = p * r + 1.0;
    p = p * r + 1.0;
    uint64_t sbits = (kbits + 1023) << 52; /* 2^k: k sits in the low bits of kbits */
    double scale;
    memcpy(&scale, &sbits, sizeof scale);
    return p * scale;
}

static inline double tanh_one(double x) {
    double ax = __builtin_fabs(x);
    /* large: 1 - 2 / (e^{2|x|} + 1); |x| > 20 is 1 to double precision */
    double y = ax < 20 ? 2 * ax : 40;
    double big = 1 - 2 / (exp_pos(y) + 1);
    /* small: expm1(y) by its series (all terms of one sign: no cancellation), then
       tanh|x| = expm1(2|x|) / (expm1(2|x|) + 2) */
    double y2 = 2 * (ax < 0.5 ? ax : 0.5), q = 1.0 / 6402373705728000.0; /* 1/18! */
    q = q * y2 + 1.0 / 355687428096000.0;
    q = q * y2 + 1.0 / 20922789888000.0;
    q = q * y2 + 1.0 / 1307674368000.0;
    q = q * y2 + 1.0 / 87178291200.0;
    q = q * y2 + 1.0 / 6227020800.0;
    q = q * y2 + 1.0 / 479001600.0;
    q = q * y2 + 1.0 / 39916800.0;
    q = q * y2 + 1.0 / 3628800.0;
    q = q * y2 + 1.0 / 362880.0;
    q = q * y2 + 1.0 / 40320.0;
    q = q * y2 + 1.0 / 5040.0;
    q = q * y2 + 1.0 / 720.0;
    q = q * y2 + 1.0 / 120.0;
    q = q * y2 + 1.0 / 24.0;
    q = q * y2 + 1.0 / 6.0;
    q = q * y2 + 0.5;
    q = q * y2 + 1.0;
    double em1 = q * y2, t = em1 / (em1 + 2);
    double v = ax < 0.5 ? t : big;
    return __builtin_copysign(v, x);
}

PRT_SIMD_CLONES void prt_vtanh(long n, const double *restrict x, double *restrict y) {
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC ivdep
#endif
    for (long i = 0; i < n; i++) y[i] = tanh_one(x[i]);
}

/* The float version computes in float, twice the lanes of double and shorter series,
   since the f32 MLP passes call it on every hidden unit:
   |x| >= 0.55: (e^{2|x|} - 1) / (e^{2|x|} + 1), e^y by 2^k e^r with a degree-7 Taylor
                polynomial (truncation 5e-9); |x| > 9.5 is 1 in float;
   |x| <  0.55: expm1(2|x|) / (expm1(2|x|) + 2), expm1 by its series to y^11 (6e-9);
   the two quotients blended before one division (the double version gains nothing by it). */
static inline float expf_pos(float y) { /* e^y for 0 <= y <= 19 */
    const float log2e = 1.44269504f, ln2_hi = 0.693145751953125f, ln2_lo = 1.42860677e-06f;
    const float shift = 0x1.8p23f;
    float kf = y * log2e + shift;
    uint32_t kbits;
    memcpy(&kbits, &kf, sizeof kbits);
    kf -= shift;
    float r = (y - kf * ln2_hi) - kf * ln2_lo;
    float p = 1.0f / 5040.0f;
    p = p * r + 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    uint32_t sbits = ((kbits & 0xff) + 127) << 23; /* 2^k, k < 28 */
    float scale;
    memcpy(&scale, &sbits, sizeof scale);
    return p * scale;
}

static inline float tanhf_one(float x) {
    float ax = __builtin_fabsf(x);
    float y = ax < 9.5f ? 2 * ax : 19.0f, e = expf_pos(y);
    float y2 = 2 * (ax < 0.55f ? ax : 0.55f), q = 1.0f / 479001600.0f; /* 1/12! */
    q = q * y2 + 1.0f / 39916800.0f;
    q = q * y2 + 1.0f / 3628800.0f;
    q = q * y2 + 1.0f / 362880.0f;
    q = q * y2 + 1.0f / 40320.0f;
    q = q * y2 + 1.0f / 5040.0f;
    q = q * y2 + 1.0f / 720.0f;
    q = q * y2 + 1.0f / 120.0f;
    q = q * y2 + 1.0f / 24.0f;
    q = q * y2 + 1.0f / 6.0f;
    q = q * y2 + 0.5f;
    q = q * y2 + 1.0f;
    float em1 = q * y2; /* one division for both: (e - 1) / (e + 1) or em1 / (em1 + 2) */
    float v = (ax < 0.55f ? em1 : e - 1) / (ax < 0.55f ? em1 + 2 : e + 1);
    return __builtin_copysignf(v, x);
}

PRT_SIMD_CLONES void prt_vtanhf(long n, const float *restrict x, float *restrict y) {
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC ivdep
#endif
    for (long i = 0; i < n; i++) y[i] = tanhf_one(x[i]);
}
