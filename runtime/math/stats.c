/* stats.c — Student's t distribution and the confidence interval of a geometric mean
   (see stats.h). */
#include "stats.h"

#include <float.h>
#include <math.h>

/* The continued fraction of the regularized incomplete beta function I_x(a, b), evaluated
   by the modified Lentz method; converges fast for x < (a + 1) / (a + b + 2). */
static double beta_fraction(double a, double b, double x) {
    const double tiny = 1e-300;
    double c = 1, d = 1 - (a + b) * x / (a + 1);
    if (fabs(d) < tiny) d = tiny;
    d = 1 / d;
    double h = d;
    for (int m = 1; m <= 300; m++) {
        double m2 = 2.0 * m;
        /* the even step, then the odd step of the fraction */
        double num = m * (b - m) * x / ((a + m2 - 1) * (a + m2));
        d = 1 + num * d, c = 1 + num / c;
        d = fabs(d) < tiny ? 1 / tiny : 1 / d;
        c = fabs(c) < tiny ? tiny : c;
        h *= d * c;
        num = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1));
        d = 1 + num * d, c = 1 + num / c;
        d = fabs(d) < tiny ? 1 / tiny : 1 / d;
        c = fabs(c) < tiny ? tiny : c;
        double step = d * c;
        h *= step;
        if (fabs(step - 1) < 4 * DBL_EPSILON) break;
    }
    return h;
}

static double incomplete_beta(double a, double b, double x) {
    if (x <= 0) return 0;
    if (x >= 1) return 1;
    double front = exp(lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x));
    if (x < (a + 1) / (a + b + 2)) return front * beta_fraction(a, b, x) / a;
    return 1 - front * beta_fraction(b, a, 1 - x) / b;
}

double prt_student_t_cdf(double t, double df) {
    double tail = 0.5 * incomplete_beta(df / 2, 0.5, df / (df + t * t)); /* P(T > |t|) */
    return t >= 0 ? 1 - tail : tail;
}

double prt_student_t_quantile(double p, double df) {
    if (!(p > 0 && p < 1) || !(df > 0)) return NAN;
    if (p < 0.5) return -prt_student_t_quantile(1 - p, df);
    /* the cdf is increasing: bracket, then bisect to the last bit */
    double lo = 0, hi = 1;
    while (prt_student_t_cdf(hi, df) < p && hi < 1e300) lo = hi, hi *= 2;
    for (int i = 0; i < 200 && hi - lo > 4 * DBL_EPSILON * hi; i++) {
        double mid = 0.5 * (lo + hi);
        if (prt_student_t_cdf(mid, df) < p) lo = mid;
        else hi = mid;
    }
    return 0.5 * (lo + hi);
}

double prt_geomean(const double *v, long n) {
    if (n < 1) return NAN;
    double sum = 0;
    for (long i = 0; i < n; i++) {
        if (!(v[i] > 0) || !isfinite(v[i])) return NAN;
        sum += log(v[i]);
    }
    return exp(sum / (double)n);
}

bool prt_geomean_ci(const double *v, long n, double level, double *lo, double *hi) {
    *lo = *hi = NAN;
    if (n < 2) return false;
    double mean = 0, ss = 0;
    for (long i = 0; i < n; i++) {
        if (!(v[i] > 0) || !isfinite(v[i])) return false;
        mean += log(v[i]);
    }
    mean /= (double)n;
    for (long i = 0; i < n; i++) ss += (log(v[i]) - mean) * (log(v[i]) - mean);
    double se = sqrt(ss / (double)(n - 1) / (double)n);
    double t = prt_student_t_quantile(0.5 + level / 2, (double)(n - 1));
    *lo = exp(mean - t * se), *hi = exp(mean + t * se);
    return true;
}

double prt_mean(const double *v, long n) {
    if (n < 1) return NAN;
    double sum = 0;
    for (long i = 0; i < n; i++) {
        if (!isfinite(v[i])) return NAN;
        sum += v[i];
    }
    return sum / (double)n;
}

bool prt_mean_ci(const double *v, long n, double level, double *lo, double *hi) {
    *lo = *hi = NAN;
    double mean = prt_mean(v, n), ss = 0;
    if (n < 2 || !isfinite(mean)) return false;
    for (long i = 0; i < n; i++) ss += (v[i] - mean) * (v[i] - mean);
    double se = sqrt(ss / (double)(n - 1) / (double)n);
    double t = prt_student_t_quantile(0.5 + level / 2, (double)(n - 1));
    *lo = mean - t * se, *hi = mean + t * se;
    return true;
}
