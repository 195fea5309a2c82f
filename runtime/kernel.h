/* kernel.h — the kernel ABI (docs/runtime-abi.md), the one type the JIT, emitted C and the
   runtime share: n states, structure-of-arrays inputs and outputs (in[i*n + b],
   out[o*n + b]), params shared by the batch. */
#ifndef PRT_KERNEL_H
#define PRT_KERNEL_H

typedef void (*PrtKernel)(long n, const double *in, const double *params, double *out);

#endif
