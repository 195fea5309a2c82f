/* vtanh_divided.h — tanh's divided difference (tanh a - tanh b) / (a - b) and its partials,
   vectorized over arrays (see vtanh_divided.c); the discrete gradient's activation step. */
#ifndef PRT_VTANH_DIVIDED_H
#define PRT_VTANH_DIVIDED_H

/* dd(a, b) (tanh'(a) where a == b), and d dd/da, d dd/db into dda, ddb (either may be NULL). */
double prt_tanh_divided(double a, double b, double *dda, double *ddb);
/* y[i] = g[i] dd(a[i], b[i]), i < n: the discrete gradient's reverse step through a layer
   of units, dd the same values as prt_tanh_divided's; with dd and its partials kept for the
   backward pass, which then takes no exponential. */
void prt_vtanh_divided_partials(long n, const double *restrict a, const double *restrict b, const double *restrict g,
                                double *restrict y, double *restrict dd, double *restrict da, double *restrict db);
/* e[i] = e^-2|x[i]| and th[i] = tanh x[i] (to a few ulps, as prt_vtanh; from expm1(-2|x|)),
   i < n, what the divided difference takes of each point: a discrete gradient's forward
   pass keeps them, and its reverse step (prt_vtanh_divided_partials_kept) then takes one
   exponential a unit, of a - b, where it took three. */
void prt_vtanh_exps(long n, const double *restrict x, double *restrict e, double *restrict th);
/* prt_vtanh_divided_partials with a's and b's e^-2|x| and tanh given (prt_vtanh_exps): the
   same values, bit for bit. */
void prt_vtanh_divided_partials_kept(long n, const double *restrict a, const double *restrict b,
                                     const double *restrict ea, const double *restrict ta, const double *restrict eb,
                                     const double *restrict tb, const double *restrict g, double *restrict y,
                                     double *restrict dd, double *restrict da, double *restrict db);
/* Its adjoints from ybar and the kept dd, da, db: gbar[i] += ybar[i] dd, and abar[i] =
   ybar[i] g[i] da, bbar[i] = ybar[i] g[i] db (written, not added: a's and b's adjoints may
   overlap). */
void prt_vtanh_divided_adjoints_of(long n, const double *restrict dd, const double *restrict da,
                                   const double *restrict db, const double *restrict g, const double *restrict ybar,
                                   double *restrict gbar, double *restrict abar, double *restrict bbar);

#endif
