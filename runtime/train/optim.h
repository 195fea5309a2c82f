/* optim.h — AdamW (decoupled weight decay, Loshchilov & Hutter), Adam (Kingma & Ba; weight
   decay, if any, as an L2 term added to the gradient, as PyTorch's Adam), and cosine
   annealing without restarts, over flat parameter, gradient and moment arrays (one loop). */
#ifndef PRT_OPTIM_H
#define PRT_OPTIM_H
#include <stdbool.h>

typedef struct PrtAdamW {
    long n;
    double lr, beta1, beta2, eps, weight_decay;
    bool coupled;    /* Adam: the decay joins the gradient; else AdamW's decoupled decay */
    long t;          /* steps taken */
    double *m, *v;   /* first and second moments, n each */
} PrtAdamW;

/* lr and weight decay as given; betas 0.9, 0.999, eps 1e-8 (PyTorch's defaults). */
void prt_adamw_init(PrtAdamW *o, long n, double lr, double weight_decay);
void prt_adamw_free(PrtAdamW *o);
/* One step: theta -= lr * wd * theta (AdamW; Adam adds wd * theta to grad instead), then the
   bias-corrected Adam step with grad. */
void prt_adamw_step(PrtAdamW *o, double *theta, const double *grad);

/* Cosine annealing from lr0 at step 0 to 0 at step total: lr0 (1 + cos(pi t / total)) / 2. */
double prt_cosine_lr(double lr0, long t, long total);

#endif
