/* exp_taylor.h — the Taylor tail the vectorized exponentials share (vtanh.c,
   vtanh_divided.c): after the range reduction e^y = 2^k e^r, |r| <= ln2 / 2, both need
   (e^r - 1 - r) / r^2 = 1/2! + r/3! + ... + r^11/13! (the 13th-order polynomial is
   accurate to rounding there). Written out: a loop over a table of 1/k! is not unrolled
   completely, and then the batch loops around it do not vectorize (measured). */
#ifndef PRT_EXP_TAYLOR_H
#define PRT_EXP_TAYLOR_H

static inline double prt_exp_taylor_tail(double r) {
    double p = 1.0 / 6227020800.0; /* 1/13! */
    p = p * r + 1.0 / 479001600.0;
    p = p * r + 1.0 / 39916800.0;
    p = p * r + 1.0 / 3628800.0;
    p = p * r + 1.0 / 362880.0;
    p = p * r + 1.0 / 40320.0;
    p = p * r + 1.0 / 5040.0;
    p = p * r + 1.0 / 720.0;
    p = p * r + 1.0 / 120.0;
    p = p * r + 1.0 / 24.0;
    p = p * r + 1.0 / 6.0;
    return p * r + 0.5;
}

#endif
