/* vtanh.h — tanh over arrays, vectorized (see vtanh.c). */
#ifndef PRT_VTANH_H
#define PRT_VTANH_H

void prt_vtanh(long n, const double *restrict x, double *restrict y);
/* The same in float (computed in float). */
void prt_vtanhf(long n, const float *restrict x, float *restrict y);

#endif
