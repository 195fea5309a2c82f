/* vsilu.h — SiLU and its first two derivatives over float arrays, vectorized (vsilu.c): the
   f32 MLP passes' activation step. */
#ifndef PRT_VSILU_H
#define PRT_VSILU_H

/* s = x sigma(x), ds = s', dds = s'' at the n floats z. */
void prt_vsiluf(long n, const float *restrict z, float *restrict s, float *restrict ds, float *restrict dds);

#endif
