/* test_optim.c — AdamW against its definition worked by hand, decoupled weight decay, and
   convergence on an ill-conditioned quadratic; the cosine schedule's values. */
#include <math.h>

#include "check.h"
#include "train/optim.h"

int main(void) {
    /* first step: m = 0.1 g, v = 0.001 g^2, bias-corrected m/c1 = g, v/c2 = g^2: the step is
       lr * g / (|g| + eps) after the decay theta *= (1 - lr wd) */
    PrtAdamW o;
    prt_adamw_init(&o, 2, 0.01, 0.1);
    double theta[2] = {1.0, -2.0}, g[2] = {0.5, -3.0};
    prt_adamw_step(&o, theta, g);
    double want0 = 1.0 * (1 - 0.001) - 0.01 * 0.5 / (0.5 + 1e-8);
    double want1 = -2.0 * (1 - 0.001) + 0.01 * 3.0 / (3.0 + 1e-8);
    CHECK(fabs(theta[0] - want0) < 1e-15 && fabs(theta[1] - want1) < 1e-15, "first step %.17g %.17g", theta[0], theta[1]);
    /* second step, by hand */
    double g2[2] = {0.2, 1.0}, th0 = theta[0];
    prt_adamw_step(&o, theta, g2);
    double m = 0.9 * 0.05 + 0.1 * 0.2, v = 0.999 * 0.00025 + 0.001 * 0.04;
    double w0 = th0 * (1 - 0.001) - 0.01 * (m / (1 - 0.81)) / (sqrt(v / (1 - 0.998001)) + 1e-8);
    CHECK(fabs(theta[0] - w0) < 1e-15, "second step %.17g, by hand %.17g", theta[0], w0);
    prt_adamw_free(&o);
    /* a gradient near eps (the DT-LNN 2-body explicit schemes' |g| ~ 1e-8) steps at a fraction
       g / (g + eps) of the rate; the train block's adam_eps 1e-16 restores the full step */
    for (int k = 0; k < 2; k++) {
        prt_adamw_init(&o, 1, 1e-3, 0);
        if (k) o.eps = 1e-16;
        double t1 = 0, tiny = 1e-8;
        prt_adamw_step(&o, &t1, &tiny);
        double want = -1e-3 * tiny / (tiny + o.eps);
        CHECK(fabs(t1 - want) < 1e-18 && (k ? t1 < -0.99e-3 : t1 > -0.51e-3), "eps %g: step %.17g", o.eps, t1);
        prt_adamw_free(&o);
    }
    /* minimizes f = sum k_i x_i^2 / 2 with curvatures over 4 decades (no decay) */
    double x[4] = {1, 1, 1, 1}, k[4] = {1e-2, 1, 10, 100}, gr[4];
    prt_adamw_init(&o, 4, 0.05, 0);
    for (int t = 0; t < 3000; t++) {
        o.lr = prt_cosine_lr(0.05, t, 3000);
        for (int i = 0; i < 4; i++) gr[i] = k[i] * x[i];
        prt_adamw_step(&o, x, gr);
    }
    double f = 0;
    for (int i = 0; i < 4; i++) f += k[i] * x[i] * x[i] / 2;
    printf("AdamW + cosine on a 4-decade quadratic: f from %.3g to %.3e in 3000 steps\n", (1e-2 + 1 + 10 + 100) / 2, f);
    CHECK(f < 1e-6, "f = %g", f);
    prt_adamw_free(&o);
    CHECK(prt_cosine_lr(3e-3, 0, 100) == 3e-3 && fabs(prt_cosine_lr(3e-3, 50, 100) - 1.5e-3) < 1e-18 &&
              prt_cosine_lr(3e-3, 100, 100) == 0,
          "cosine schedule");
    printf("%s: %s\n", __FILE__, failures ? "FAILED" : "ok");
    return failures != 0;
}
