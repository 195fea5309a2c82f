/* optim.c — AdamW and the cosine schedule. */
#include "optim.h"
#include "alloc.h"

#include <math.h>
#include <stdlib.h>

void prt_adamw_init(PrtAdamW *o, long n, double lr, double weight_decay) {
    o->n = n;
    o->lr = lr;
    o->weight_decay = weight_decay;
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

void prt_adamw_step(PrtAdamW *o, double *theta, const double *grad) {
    o->t++;
    double c1 = 1 - pow(o->beta1, (double)o->t), c2 = 1 - pow(o->beta2, (double)o->t);
    for (long i = 0; i < o->n; i++) {
        double g = grad[i];
        if (o->coupled) g += o->weight_decay * theta[i];
        else theta[i] -= o->lr * o->weight_decay * theta[i];
        o->m[i] = o->beta1 * o->m[i] + (1 - o->beta1) * g;
        o->v[i] = o->beta2 * o->v[i] + (1 - o->beta2) * g * g;
        theta[i] -= o->lr * (o->m[i] / c1) / (sqrt(o->v[i] / c2) + o->eps);
    }
}

double prt_cosine_lr(double lr0, long t, long total) {
    if (total <= 0) return lr0;
    if (t >= total) return 0;
    return lr0 * (1 + cos(3.14159265358979323846 * (double)t / (double)total)) / 2;
}
