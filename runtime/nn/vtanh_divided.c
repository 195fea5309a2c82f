/* vtanh_divided.c — tanh's divided difference dd(a, b) = (tanh a - tanh b) / (a - b) and its
   partials over arrays, written so that the compiler vectorizes them (no calls, both sides of
   every branch computed and blended), compiled per instruction set as vtanh.c is. The discrete
   gradient of a tanh network (mlp_graph.h) evaluates them on every hidden unit of every pair,
   and with libm's scalar exp, expm1 and tanh (~60 ns an element) they took more time than the
   GEMMs of a training step (docs/performance.md, "The discrete-time Lagrangian model").

   The formulas are tensor_ops.c's (derived there), with e^-2|x| and expm1(-2|x|) from one
   reduction: for y <= 0, y = k ln2 + r with |r| <= ln2 / 2, P = expm1(r) by its Taylor series
   to r^13 (truncation below 2e-17 relative), then
       e^y = 2^k (1 + P),   expm1(y) = 2^k P + (2^k - 1),
   the second without cancellation (k = 0: P itself; k = -1: at most one bit; k <= -2: 2^k - 1
   dominates). 2^k is formed as 2^k1 2^k2 with k1 + k2 = k, so that e^y underflows gradually
   down to y = -1400 (below: 0), and neither factor leaves the normal range.
       dd = 2 e^(|d| - |a| - |b|) (-expm1(-2|d|) / |d|) / ((1 + e^-2|a|) (1 + e^-2|b|)),
       d dd/da = dd (L(d) - tanh a),   d dd/db = dd (-L(d) - tanh b),
   tanh|x| = -expm1(-2|x|) / (2 + expm1(-2|x|)) (accurate to a few ulps also for tiny x),
   L(d) = coth d - 1/d, its odd series below |d| = 1/4, (2 + expm1(-2|d|)) / -expm1(-2|d|) - 1/|d|
   above. The scalar prt_tanh_divided is the same code, so tests of it test the arrays' too. */
#include "vtanh_divided.h"

#include "exp_taylor.h"
#include "math/simd_clones.h"

#include <stdint.h>
#include <string.h>

/* 2^k for an integer k in [-1022, 0] held in a double */
static inline double pow2(double k) {
    const double shift = 0x1.8p52; /* adding it puts k in the low mantissa bits */
    double kd = k + shift;
    uint64_t bits;
    memcpy(&bits, &kd, sizeof bits);
    bits = (bits + 1023) << 52;
    double s;
    memcpy(&s, &bits, sizeof s);
    return s;
}

/* e^y and expm1(y) for y <= 0 (NaN stays NaN). */
static inline void exp_expm1_neg(double y, double *e, double *em) {
    const double log2e = 1.4426950408889634, ln2_hi = 6.93147180369123816490e-01, ln2_lo = 1.90821492927058770002e-10;
    const double shift = 0x1.8p52;
    y = y < -1400 ? -1400 : y;
    double k = (y * log2e + shift) - shift; /* round(y / ln2), in [-2020, 0] */
    double r = (y - k * ln2_hi) - k * ln2_lo;
    double p = prt_exp_taylor_tail(r); /* P = e^r - 1 = r + r^2 p */
    double P = r + (r * r) * p;
    double k1 = (k * 0.5 + shift) - shift, s1 = pow2(k1), s2 = pow2(k - k1), s = s1 * s2;
    *e = s1 * (1 + P) * s2;
    *em = s * P + (s - 1);
}

static inline double abs_of(double x) { return __builtin_fabs(x); }

/* tanh x from expm1(-2|x|) */
static inline double tanh_from(double x, double em) { return __builtin_copysign(-em / (2 + em), x); }

/* coth d - 1/d from |d| and expm1(-2|d|) */
static inline double langevin_from(double d, double ad, double em) {
    double x2 = ad * ad;
    double series = ad * (1.0 / 3 + x2 * (-1.0 / 45 + x2 * (2.0 / 945 + x2 * (-1.0 / 4725 + x2 * (2.0 / 93555 +
                    x2 * (-1382.0 / 638512875 + x2 * (4.0 / 18243225)))))));
    double direct = (2 + em) / -em - 1 / ad;
    return __builtin_copysign(ad < 0.25 ? series : direct, d);
}

/* dd(a, b) and, when partials, d dd/da and d dd/db, from e^-2|a|, tanh a and b's */
static inline double tanh_divided_from(double a, double b, double ea, double ta, double eb, double tb, int partials,
                                       double *da, double *db) {
    double d = a - b, ad = abs_of(d), ed, edm;
    exp_expm1_neg(-2 * ad, &ed, &edm);
    double emin = (a < 0) != (b < 0) ? 1 : abs_of(a) < abs_of(b) ? ea : eb; /* e^(|d| - |a| - |b|) */
    double q = ad == 0 ? 2 : -edm / ad;
    double dd = 2 * emin * q / ((1 + ea) * (1 + eb));
    if (partials) {
        double l = langevin_from(d, ad, edm);
        *da = dd * (l - ta);
        *db = dd * (-l - tb);
    }
    return dd;
}

static inline double tanh_divided_one(double a, double b, int partials, double *da, double *db) {
    double ea, eam, eb, ebm;
    exp_expm1_neg(-2 * abs_of(a), &ea, &eam);
    exp_expm1_neg(-2 * abs_of(b), &eb, &ebm);
    return tanh_divided_from(a, b, ea, tanh_from(a, eam), eb, tanh_from(b, ebm), partials, da, db);
}

double prt_tanh_divided(double a, double b, double *dda, double *ddb) {
    double da, db, dd = tanh_divided_one(a, b, dda || ddb, &da, &db);
    if (dda) *dda = da;
    if (ddb) *ddb = db;
    return dd;
}

PRT_SIMD_CLONES void prt_vtanh_divided_partials(long n, const double *restrict a, const double *restrict b,
                                                const double *restrict g, double *restrict y, double *restrict dd,
                                                double *restrict da, double *restrict db) {
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC ivdep
#endif
    for (long i = 0; i < n; i++) {
        dd[i] = tanh_divided_one(a[i], b[i], 1, da + i, db + i);
        y[i] = g[i] * dd[i];
    }
}

PRT_SIMD_CLONES void prt_vtanh_exps(long n, const double *restrict x, double *restrict e, double *restrict th) {
    for (long i = 0; i < n; i++) {
        double em;
        exp_expm1_neg(-2 * abs_of(x[i]), e + i, &em);
        th[i] = tanh_from(x[i], em);
    }
}

PRT_SIMD_CLONES void prt_vtanh_divided_partials_kept(long n, const double *restrict a, const double *restrict b,
                                                     const double *restrict ea, const double *restrict ta,
                                                     const double *restrict eb, const double *restrict tb,
                                                     const double *restrict g, double *restrict y,
                                                     double *restrict dd, double *restrict da,
                                                     double *restrict db) {
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC ivdep
#endif
    for (long i = 0; i < n; i++) {
        dd[i] = tanh_divided_from(a[i], b[i], ea[i], ta[i], eb[i], tb[i], 1, da + i, db + i);
        y[i] = g[i] * dd[i];
    }
}

PRT_SIMD_CLONES void prt_vtanh_divided_adjoints_of(long n, const double *restrict dd, const double *restrict da,
                                                   const double *restrict db, const double *restrict g,
                                                   const double *restrict ybar, double *restrict gbar,
                                                   double *restrict abar, double *restrict bbar) {
    for (long i = 0; i < n; i++) {
        double w = ybar[i] * g[i];
        gbar[i] += ybar[i] * dd[i];
        abar[i] = w * da[i];
        bbar[i] = w * db[i];
    }
}
