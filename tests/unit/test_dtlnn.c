/* test_dtlnn.c — the discrete-time Lagrangian family (runtime/models/model_discrete.c) on a 2-D
   anharmonic point mass whose kernels are written here by hand:
   - every scheme's loss gradient against central finite differences;
   - a rollout with Eq. 12 conserves the model's own energy T + V (p from Eq. 11) to rounding,
     whatever the network; Newton reports its iterations;
   - the explicit schemes' rollouts are their recurrences (Eq. 15, 19) exactly;
   - with the system's own potential the training step's loss (truth_loss) is at the scheme's
     truncation level, and training lowers the loss. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fd_model.h"
#include "models/model.h"
#include "math/ode.h"
#include "train/train.h"

/* V = k1 x^2 / 2 + k2 y^2 / 2 + (x^2 + y^2)^2 / 4, masses mx = my = mass */
enum { NX = 2 };
static double params_[1] = {0.5};
static const double k1 = 2.0, k2 = 3.0;

static void grad_v(long n, const double *x, const double *p, double *out) {
    for (long b = 0; b < n; b++) {
        double X = x[b], Y = x[n + b], r2 = X * X + Y * Y;
        out[b] = k1 * X + r2 * X, out[n + b] = k2 * Y + r2 * Y;
    }
}
static void minv_p(long n, const double *x, const double *p, double *out) {
    for (long i = 0; i < NX * n; i++) out[i] = x[i] / p[0];
}
static void mass_v(long n, const double *x, const double *p, double *out) {
    for (long i = 0; i < NX * n; i++) out[i] = x[i] * p[0];
}

static PrtSystem point2d(void) {
    return (PrtSystem){.N = NX, .NP = NX, .nmass = 1, .nparams = 1, .params = params_, .gradV = grad_v,
                       .MinvP = minv_p, .MassV = mass_v};
}

/* exact-enough trajectories of the true system by RK4 at h / 200, as chunks of npts points */
static double *make_chunks(long n, int npts, double dt, unsigned seed) {
    long pt = 2L * NX * n;
    double *c = malloc(sizeof(double) * (size_t)(pt * npts));
    srand(seed);
    for (long b = 0; b < n; b++) {
        double z[4];
        for (int i = 0; i < 4; i++) z[i] = 1.2 * (rand() / (double)RAND_MAX - 0.5);
        for (int k = 0; k < npts; k++) {
            for (int i = 0; i < 4; i++) c[k * pt + i * n + b] = z[i];
            for (int s = 0; s < 200; s++) { /* q' = v, v' = -grad V / m */
                double h = dt / 200, k_[4][4], w[4];
                for (int st = 0; st < 4; st++) {
                    for (int i = 0; i < 4; i++) w[i] = z[i] + (st == 0 ? 0 : st == 3 ? h : h / 2) * (st ? k_[st - 1][i] : 0);
                    double g[2];
                    grad_v(1, w, NULL, g); /* n = 1: rows 0, 1 */
                    k_[st][0] = w[2], k_[st][1] = w[3], k_[st][2] = -g[0] / params_[0], k_[st][3] = -g[1] / params_[0];
                }
                for (int i = 0; i < 4; i++) z[i] += h / 6 * (k_[0][i] + 2 * k_[1][i] + 2 * k_[2][i] + k_[3][i]);
            }
        }
    }
    return c;
}

static int open_scheme(PrtModel *m, PrtSystem *s, PrtIntegrator train, PrtIntegrator predict, bool unit_mass) {
    PrtMlp net = {.nlayers = 3, .size = {NX, 24, 24, 1}, .act = PRT_ACT_TANH};
    PrtModelConfig cfg = prt_model_config(prt_model_family("dtlnn"), &net, false);
    cfg.integrator = train, cfg.predict = predict, cfg.unit_mass = unit_mass, cfg.l2 = true;
    char err[256] = "";
    int rc = prt_model_open(m, s, &cfg, err, sizeof err);
    CHECK(rc == 0, "dtlnn open: %s", err);
    return rc;
}

static const PrtIntegrator schemes[] = {PRT_INT_DISCRETE_GRADIENT, PRT_INT_LEAPFROG, PRT_INT_SYMPLECTIC_EULER, PRT_INT_EULER};

static void test_gradients(void) {
    PrtSystem s = point2d();
    long n = 6;
    int npts = 5;
    double dt = 0.2, *chunks = make_chunks(n, npts, dt, 3);
    for (int k = 0; k < 4; k++) {
        PrtModel m;
        if (open_scheme(&m, &s, schemes[k], schemes[k], k % 2)) continue;
        double *theta = malloc(sizeof(double) * (size_t)m.nparams), *grad = malloc(sizeof(double) * (size_t)m.nparams);
        PrtRng rng;
        prt_rng_seed(&rng, 7);
        prt_model_init_theta(&m, theta, &rng);
        double L = prt_model_loss_grad(&m, theta, n, npts, dt, chunks, grad);
        CHECK(isfinite(L) && L > 0, "%s: loss %g", prt_integrators[schemes[k]].name, L);
        CHECK(fabs(prt_model_loss(&m, theta, n, npts, dt, chunks) - L) <= 1e-15 * L, "loss and loss_grad agree");
        /* about 37 entries, absolute below 1e-6 L; steps of 1e-4, as the rollout's rounding (some 1e-13
           of L) swamps 1e-5's differences on the smallest entries */
        FdWorst w = {0};
        fd_grad(fd_loss, &(FdLoss){&m, n, npts, dt, chunks}, theta, m.nparams, grad,
                &(FdOpts){.h = 1e-4, .scale = 1e-6 * L, .stride = m.nparams / 37 + 1}, &w);
        printf("  %-17s loss %.4e, gradient vs central differences: worst relative error %.2e\n",
               prt_integrators[schemes[k]].name, L, w.err);
        CHECK(w.err < 1e-6, "%s: loss gradient: " FD_FMT, prt_integrators[schemes[k]].name, FD_ARGS(w));
        free(theta), free(grad);
        prt_model_close(&m);
    }
    free(chunks);
}

/* Rollouts of n states from the first two points of the chunks. */
static void test_rollouts(void) {
    PrtSystem s = point2d();
    long n = 4;
    int nt = 2000;
    double dt = 0.1, *start = make_chunks(n, 2, dt, 5);
    for (long i = 0; i < NX * n; i++) start[2 * NX * n + i] = start[i] + 0.1 * (start[2 * NX * n + i] - start[i]); /* slow */
    double *times = malloc(sizeof(double) * nt), *out = malloc(sizeof(double) * (size_t)(nt * 2 * NX * n));
    for (int k = 0; k < nt; k++) times[k] = k * dt;
    for (int k = 0; k < 4; k++) {
        PrtModel m;
        if (open_scheme(&m, &s, schemes[k], schemes[k], k % 2)) continue;
        double *theta = malloc(sizeof(double) * (size_t)m.nparams);
        PrtRng rng;
        prt_rng_seed(&rng, 11);
        prt_model_init_theta(&m, theta, &rng);
        for (long i = 0; i < m.nparams; i++) theta[i] *= 0.5; /* a gentle random potential */
        int rc = prt_model_rollout(&m, theta, n, start, times, nt, 0, 0, out);
        CHECK(rc == 0, "%s rollout failed", prt_integrators[schemes[k]].name);
        long pt = 2L * NX * n, len = NX * n;
        /* the first two positions are the data's */
        for (long i = 0; i < len; i++) {
            CHECK(out[i] == start[i], "q0 is the data's");
            CHECK(out[pt + i] == start[pt + i], "q1 is the data's");
        }
        /* the drift while every state stays within |q| < 4 (a random potential need not confine,
           and far out the positions' rounding, |q| eps / dt in the velocity, grows) */
        double E[64], E0[64], drift = 0;
        int inside = 0;
        for (int t = 0; t < nt; t++) {
            double qmax = 0;
            for (long i = 0; i < len; i++) qmax = fmax(qmax, fabs(out[t * pt + i]));
            if (qmax >= 4) break;
            inside = t + 1;
            m.family->energy(&m, theta, n, out + t * pt, t ? E : E0);
            for (long b = 0; t && b < n; b++) drift = fmax(drift, fabs(E[b] - E0[b]) / fabs(E0[b]));
        }
        if (schemes[k] == PRT_INT_DISCRETE_GRADIENT) {
            printf("  discrete_gradient rollout: model energy drift %.2e over %d steps (within |q| < 4), %.2f Newton "
                   "iterations a step\n", drift, inside, (double)m.rollout_stats.steps / (nt - 2));
            CHECK(inside >= 100, "the states left |q| < 4 after %d steps", inside);
            CHECK(drift < 1e-12, "Eq. 12 must conserve T + V: drift %.3e", drift);
            CHECK(m.rollout_stats.steps <= 6L * (nt - 2), "Newton iterations: %ld", m.rollout_stats.steps);
        } else {
            printf("  %-17s rollout: model energy varies by %.2e (not conserved exactly)\n", prt_integrators[schemes[k]].name,
                   drift);
            CHECK(drift > 1e-10, "%s cannot conserve T + V exactly", prt_integrators[schemes[k]].name);
            /* the recurrence of Eq. 15 / 17 / 19 at step 5: q6 = 2 q5 - q4 - dt^2 M^-1 grad V(q5, or q4 for Euler) */
            const double *q4 = out + 4 * pt, *q5 = out + 5 * pt, *q6 = out + 6 * pt;
            double v[64], g[2 * 64], minv = k % 2 ? 1 : 1 / params_[0], worst = 0;
            PrtMlpWork w = {0};
            prt_mlp_value_grad(&m.cfg.net[0], theta, n, schemes[k] == PRT_INT_EULER ? q4 : q5, v, g, &w);
            prt_mlp_work_free(&w);
            for (long i = 0; i < len; i++) worst = fmax(worst, fabs(q6[i] - (2 * q5[i] - q4[i] - dt * dt * minv * g[i])));
            CHECK(worst < 1e-13, "%s: q6 off its recurrence by %.3e", prt_integrators[schemes[k]].name, worst);
        }
        free(theta);
        prt_model_close(&m);
    }
    free(start), free(times), free(out);
}

/* The system's own potential in the scheme: its residual is the scheme's truncation error,
   O(dt^2) against the force scale; halving dt quarters it. */
static void test_truth_loss(void) {
    PrtSystem s = point2d();
    double L[2];
    for (int r = 0; r < 2; r++) {
        double dt = 0.1 / (1 << r), *chunks = make_chunks(32, 3, dt, 9);
        PrtModel m;
        if (open_scheme(&m, &s, PRT_INT_DISCRETE_GRADIENT, PRT_INT_DISCRETE_GRADIENT, false)) return;
        L[r] = prt_model_truth_loss(&m, 32, 3, dt, chunks);
        prt_model_close(&m);
        free(chunks);
    }
    printf("  truth_loss (residual^2) at dt 0.1, 0.05: %.3e %.3e (ratio %.1f)\n", L[0], L[1], L[0] / L[1]);
    CHECK(L[0] / L[1] > 12 && L[0] / L[1] < 20, "the residual must fall as dt^2 (its square as dt^4): ratio %.2f", L[0] / L[1]);
}

static void test_training(void) {
    PrtSystem s = point2d();
    long ntraj = 16;
    int npts = 3;
    double dt = 0.1, *chunks = make_chunks(ntraj, npts, dt, 21);
    PrtTrajSet train = {.n = ntraj, .npts = npts, .N = NX, .W = 2 * NX, .dt = dt, .xv = chunks};
    PrtTrajSet valid = {.npts = npts, .N = NX, .W = 2 * NX, .dt = dt};
    for (int k = 0; k < 2; k++) {
        PrtModel m;
        if (open_scheme(&m, &s, schemes[k], schemes[k], false)) continue;
        double *theta = malloc(sizeof(double) * (size_t)m.nparams);
        PrtTrainOptions o = {.epochs = 100, .batch = 8, .threads = 1, .lr = 3e-3, .adam = true, .seed = 1};
        PrtTrainResult r = {0};
        char err[256] = "";
        PrtTrainStatus st = prt_train(&m, theta, &train, &valid, &o, &r, err, sizeof err);
        CHECK(st == PRT_TRAIN_DONE, "training: %s", err);
        if (st == PRT_TRAIN_DONE) {
            printf("  %-17s training loss %.4e -> %.4e in %d epochs\n", prt_integrators[schemes[k]].name, r.loss[0],
                   r.loss[o.epochs - 1], o.epochs);
            CHECK(r.loss[o.epochs - 1] < 0.1 * r.loss[0], "training loss %.4g -> %.4g", r.loss[0], r.loss[o.epochs - 1]);
        }
        if (st == PRT_TRAIN_DONE && schemes[k] == PRT_INT_DISCRETE_GRADIENT) {
            /* the trained model confines like the truth: 10^4 steps conserve its energy to rounding */
            enum { NT = 10000 };
            long nb = 4, pt = 2L * NX * nb;
            double *times = malloc(sizeof(double) * NT), *out = malloc(sizeof(double) * (size_t)(NT * pt));
            double *start = make_chunks(nb, 2, dt, 23), E0[4], E[4], drift = 0, qmax = 0;
            for (int t = 0; t < NT; t++) times[t] = t * dt;
            CHECK(prt_model_rollout(&m, theta, nb, start, times, NT, 0, 0, out) == 0, "trained rollout failed");
            for (int t = 0; t < NT; t++) {
                m.family->energy(&m, theta, nb, out + t * pt, t ? E : E0);
                for (long b = 0; t && b < nb; b++) drift = fmax(drift, fabs(E[b] - E0[b]) / fabs(E0[b]));
                for (long i = 0; i < NX * nb; i++) qmax = fmax(qmax, fabs(out[t * pt + i]));
            }
            printf("  trained discrete_gradient model, 10^4 steps: energy drift %.2e, |q| <= %.2f, %.2f Newton "
                   "iterations a step\n", drift, qmax, (double)m.rollout_stats.steps / (NT - 2));
            CHECK(drift < 1e-12, "the trained model's energy drifted by %.3e in 10^4 steps", drift);
            free(times), free(out), free(start);
        }
        prt_train_result_free(&r);
        free(theta);
        prt_model_close(&m);
    }
    free(chunks);
}

/* A set larger than one block: prt_model_set_loss in blocks equals the loss in one call. */
static void test_set_loss(void) {
    PrtSystem s = point2d();
    long n = PRT_MODEL_LOSS_BLOCK + 905;
    double dt = 0.1, *chunks = make_chunks(n, 3, dt, 31);
    PrtModel m;
    if (open_scheme(&m, &s, PRT_INT_DISCRETE_GRADIENT, PRT_INT_DISCRETE_GRADIENT, true)) return;
    double *theta = malloc(sizeof(double) * (size_t)m.nparams);
    PrtRng rng;
    prt_rng_seed(&rng, 3);
    prt_model_init_theta(&m, theta, &rng);
    double whole = prt_model_loss(&m, theta, n, 3, dt, chunks), blocks = prt_model_set_loss(&m, theta, false, n, 3, dt, chunks);
    double twhole = prt_model_truth_loss(&m, n, 3, dt, chunks), tblocks = prt_model_set_loss(&m, NULL, true, n, 3, dt, chunks);
    CHECK(fabs(whole - blocks) <= 1e-12 * whole, "set loss in blocks %.17g, at once %.17g", blocks, whole);
    CHECK(fabs(twhole - tblocks) <= 1e-12 * twhole, "truth loss in blocks %.17g, at once %.17g", tblocks, twhole);
    free(theta), free(chunks);
    prt_model_close(&m);
}

int main(void) {
    test_gradients();
    test_rollouts();
    test_truth_loss();
    test_training();
    test_set_loss();
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures ? 1 : 0;
}
