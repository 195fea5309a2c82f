/* fd_model.h — a model's loss in its parameters as an fd_check.h function: the tests of the
   loss gradients of every family share it. */
#ifndef PHYSC_TEST_FD_MODEL_H
#define PHYSC_TEST_FD_MODEL_H
#include "fd_check.h"
#include "models/model.h"

typedef struct FdLoss {
    PrtModel *m;
    long n;   /* chunks */
    int npts; /* points a chunk, dt apart */
    double dt;
    const double *chunks;
} FdLoss;

static inline void fd_loss(void *ctx, const double *theta, double *L) {
    FdLoss *a = ctx;
    *L = prt_model_loss(a->m, theta, a->n, a->npts, a->dt, a->chunks);
}

#endif
