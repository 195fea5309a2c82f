/* optim.c — AdamW and the cosine schedule. */
#include "optim.h"
#include "core/alloc.h"
#include "math/simd_clones.h"

#include <math.h>
#include <stdlib.h>

void prt_adamw_init(PrtAdamW *o, long n, double lr, double weight_decay) {
    o->n = n;
    o->lr = lr;
    o->weight_decay = weight_decay;
    o->coupled = false; /* AdamW unless the caller asks for Adam */
    o->beta1 = 0.9;
    o->beta2 = 0.999;
    o->eps = 1e-8;
    o->t = 0;
    o->m = prt_xcalloc((size_t)n + 1, sizeof(double), "AdamW moments");
    o->v = prt_xcalloc((size_t)n + 1, sizeof(double), "AdamW moments");
}

void prt_adamw_free(PrtAdamW *o) {
    free(o->m);
    free(o->v);
    o->m = o->v = NULL;
}

/* The update of n parameters, a loop the compiler vectorizes for the machine (simd_clones.h:
   a training step's only serial part when the minibatch is split over threads). */
PRT_SIMD_CLONES static void adam_update(long n, const PrtAdamW *o, double c1, double c2, double *restrict theta,
                                        const double *restrict grad, double *restrict m, double *restrict v) {
    for (long i = 0; i < n; i++) {
        double g = grad[i];
        if (o->coupled) g += o->weight_decay * theta[i];
        else theta[i] -= o->lr * o->weight_decay * theta[i];
        m[i] = o->beta1 * m[i] + (1 - o->beta1) * g;
        v[i] = o->beta2 * v[i] + (1 - o->beta2) * g * g;
        theta[i] -= o->lr * (m[i] / c1) / (sqrt(v[i] / c2) + o->eps);
    }
}

void prt_adamw_step(PrtAdamW *o, double *theta, const double *grad) {
    o->t++;
    double c1 = 1 - pow(o->beta1, (double)o->t), c2 = 1 - pow(o->beta2, (double)o->t);
    adam_update(o->n, o, c1, c2, theta, grad, o->m, o->v);
}

double prt_cosine_lr(double lr0, long t, long total) {
    if (total <= 0) return lr0;
    if (t >= total) return 0;
    return lr0 * (1 + cos(3.14159265358979323846 * (double)t / (double)total)) / 2;
}
