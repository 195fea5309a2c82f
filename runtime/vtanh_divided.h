/* vtanh_divided.h — tanh's divided difference (tanh a - tanh b) / (a - b) and its partials,
   vectorized over arrays (see vtanh_divided.c); the discrete gradient's activation step. */
#ifndef PRT_VTANH_DIVIDED_H
#define PRT_VTANH_DIVIDED_H

/* dd(a, b) (tanh'(a) where a == b), and d dd/da, d dd/db into dda, ddb (either may be NULL). */
double prt_tanh_divided(double a, double b, double *dda, double *ddb);
/* dd[i] = dd(a[i], b[i]), i < n: the same values as prt_tanh_divided. */
void prt_vtanh_divided(long n, const double *restrict a, const double *restrict b, double *restrict dd);
/* abar[i] = ybar[i] d dd/da (a[i], b[i]), bbar[i] = ybar[i] d dd/db (a[i], b[i]), i < n (written, not added). */
void prt_vtanh_divided_partials(long n, const double *restrict a, const double *restrict b, const double *restrict ybar,
                                double *restrict abar, double *restrict bbar);

#endif
