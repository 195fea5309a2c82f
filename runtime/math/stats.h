/* stats.h — how sure a reported figure is. The paper's Figure 7 draws each geometric mean
   over the test trajectories with a 95 % confidence interval; physc reports the same
   interval: the mean of the logs plus or minus Student's t quantile times their standard
   error, exponentiated. On the 5-pendulum it spans a factor of about 1.3 either way, so
   two runs or two implementations are compared through it, not through the point figures
   alone. */
#ifndef PRT_STATS_H
#define PRT_STATS_H
#include <stdbool.h>

/* P(T <= t) for Student's t with df degrees of freedom (df > 0, need not be whole). */
double prt_student_t_cdf(double t, double df);

/* The t with P(T <= t) = p (0 < p < 1); NAN outside the domain. */
double prt_student_t_quantile(double p, double df);

/* The geometric mean exp(mean(log v)) of v[0..n); NAN when n < 1 or a value is not
   positive and finite (no figure rather than a wrong one). */
double prt_geomean(const double *v, long n);

/* The two-sided `level` (say 0.95) confidence interval of the geometric mean of v[0..n):
   exp(mean(log v) -+ t * sd(log v) / sqrt(n)). False (and NANs) when n < 2 or a value is
   not positive and finite. */
bool prt_geomean_ci(const double *v, long n, double level, double *lo, double *hi);

/* The arithmetic mean of v[0..n) (NAN when n < 1 or a value is not finite), and its
   two-sided `level` confidence interval mean -+ t * sd / sqrt(n) (false and NANs when n < 2
   or a value is not finite): for figures that may be exactly 0, such as the constraint
   violation of a rollout that keeps the constraints to rounding, whose logarithm is -inf. */
double prt_mean(const double *v, long n);
bool prt_mean_ci(const double *v, long n, double level, double *lo, double *hi);

#endif
