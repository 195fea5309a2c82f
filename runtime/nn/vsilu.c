/* vsilu.c — SiLU s(x) = x sigma(x) with s' and s'' over float arrays, in float, written so the
   compiler vectorizes it and compiled per instruction set (simd_clones.h). Through the float
   tanh (sigma = (1 + tanh(x/2)) / 2) it took one exponential, a series and a division for
   sigma alone, then a second pass for the derivatives; here one exponential and one division
   give everything, with e = e^-|x| in (0, 1] and d = 1 / (1 + e):
       sigma(|x|) = d,  sigma(-|x|) = e d,  q = sigma (1 - sigma) = e d^2,  t = 2 sigma - 1,
       s = x sigma,  s' = sigma + x q,  s'' = q (2 - x t),
   q without the cancellation of 1 - sigma. e^-y = 2^-k e^-r, |r| <= ln2 / 2, with a degree-7
   Taylor polynomial (truncation 5e-9) and 2^-k as two normal factors, so that it underflows
   gradually, as far as float's denormals go. test_vsilu.c checks it against double. */
#include "vsilu.h"

#include "math/simd_clones.h"

#include <stdint.h>
#include <string.h>

static inline float pow2_neg(float k) { /* 2^-k for an integer 0 <= k <= 126 held in a float */
    const float shift = 0x1.8p23f;
    float kf = k + shift;
    uint32_t bits;
    memcpy(&bits, &kf, sizeof bits);
    bits = (127 - (bits & 0xff)) << 23;
    float s;
    memcpy(&s, &bits, sizeof s);
    return s;
}

static inline float exp_neg(float y) { /* e^-y for y >= 0 (NaN: e^-104) */
    const float log2e = 1.44269504f, ln2_hi = 0.693145751953125f, ln2_lo = 1.42860677e-06f;
    const float shift = 0x1.8p23f; /* adding it rounds to an integer */
    y = y < 104 ? y : 104;         /* e^-104 rounds to 0 in float */
    float k = (y * log2e + shift) - shift, r = (y - k * ln2_hi) - k * ln2_lo;
    float p = -1.0f / 5040.0f; /* e^-r */
    p = p * r + 1.0f / 720.0f;
    p = p * r - 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r - 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r - 1.0f;
    p = p * r + 1.0f;
    float k1 = (k * 0.5f + shift) - shift;
    return p * pow2_neg(k1) * pow2_neg(k - k1);
}

PRT_SIMD_CLONES void prt_vsiluf(long n, const float *restrict z, float *restrict s, float *restrict ds,
                                float *restrict dds) {
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC ivdep
#endif
    for (long i = 0; i < n; i++) {
        float x = z[i], e = exp_neg(__builtin_fabsf(x)), d = 1 / (1 + e), lo = e * d, q = lo * d;
        float sg = x >= 0 ? d : lo, t = __builtin_copysignf((1 - e) * d, x);
        s[i] = x * sg;
        ds[i] = sg + x * q;
        dds[i] = q * (2 - x * t);
    }
}
