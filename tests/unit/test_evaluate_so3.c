/* test_evaluate_so3.c — the Lie T2 paper's App. E metrics (runtime/train/evaluate_so3.c) against
   closed forms, on a system written by hand: two `state so3` bodies and a model that holds its
   state still. The predicted rotations are the truth's turned by known angles about known axes
   (one body in its own frame, the other in the world's), the predicted positions the truth's
   moved by known offsets, so the geodesic |dR| (summed over the bodies), its square and |dq|
   have exact means; the still model errs over one interval by the data's own rates of p and Pi. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "train/evaluate.h"
#include "integrators/lie_group.h"

enum { NB = 2, N = 12 * NB, NP = 6 * NB, W = N + NP, NT = 5, NTRAJ = 3 };
/* the App. E metrics (metrics.h) */
enum { DQ = PRT_METRIC_SO3_DQ, DR = PRT_METRIC_SO3_DR, DPDOT = PRT_METRIC_SO3_DPDOT, DPIDOT = PRT_METRIC_SO3_DPIDOT,
       DVQ = PRT_METRIC_SO3_DVQ, DVR = PRT_METRIC_SO3_DVR };
static const double DT = 0.1;

/* M = I: the velocities are the momenta */
static void mass_v(long n, const double *in, const double *params, double *out) {
    memcpy(out, in, sizeof(double) * (size_t)(NP * n));
}

static const PrtSo3Body bodies[NB] = {{.x = 0, .p = 0, .mass = 0}, {.x = 12, .p = 6, .mass = 4}};
static double params[8] = {1, 0.1, 0.2, 0.3, 1, 0.1, 0.2, 0.3};
static const PrtFrameBody frames[NB] = {{.x = 0, .dim = 3, .naxes = 3, .so3 = true}, {.x = 12, .dim = 3, .naxes = 3, .so3 = true}};
static PrtSystem sys = {.N = N, .NP = NP, .nmass = 8, .nparams = 8, .params = params, .nso3 = NB, .so3 = bodies,
                        .nframes = NB, .frames = frames, .MassV = mass_v};

/* a model that predicts no motion: every output time is its start */
static int still_rollout(PrtModel *m, const double *theta, long n, const double *xv0, const double *times, int nt,
                         double rtol, double atol, double *out) {
    for (int k = 0; k < nt; k++) memcpy(out + (long)k * W * n, xv0, sizeof(double) * (size_t)(W * n));
    return 0;
}
static const PrtModelFamily still = {.name = "still", .title = "still", .rollout = still_rollout, .start_points = 1};

/* row i of point k of trajectory b of an (NT x W x NTRAJ) batch */
static double *at(double *z, int k, int i, int b) { return z + ((long)k * W + i) * NTRAJ + b; }

static void matmul(const double A[9], const double B[9], double C[9]) {
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) C[i * 3 + j] = A[i * 3] * B[j] + A[i * 3 + 1] * B[3 + j] + A[i * 3 + 2] * B[6 + j];
}

/* the angle between body j's predicted and true rotation at point k of trajectory b, in (0, pi) */
static double angle(int k, int b, int j) { return 0.2 + 0.1 * k + 0.3 * b + 0.9 * j; }
/* the data's rate of velocity row i (the still model's error over an interval: -rate) */
static double rate(int i) { return 0.5 + 0.25 * i; }

int main(void) {
    size_t size = sizeof(double) * NT * W * NTRAJ;
    double *z = calloc(1, size), *pred = calloc(1, size);
    double dR = 0, dR_sq = 0, dR_body[NB] = {0}, dq = 0, dq_sq = 0, dq_body[NB] = {0}, dq_at[NT][NTRAJ];
    for (int k = 0; k < NT; k++)
        for (int b = 0; b < NTRAJ; b++) {
            double point_dR = 0, q2 = 0;
            for (int j = 0; j < NB; j++) {
                int x = bodies[j].x;
                /* the truth: some rotation, not symmetric (R and R^T differ), and a position */
                double w[3] = {0.3 + 0.4 * k, -0.7 + 0.2 * b, 1.1 - 0.5 * j}, R[9], E[9], Rh[9];
                prt_so3_exp(w, R);
                /* the prediction: R exp(theta a) (in the body frame) or exp(theta a) R (the world's) */
                double a[3] = {1 + k, 2 - b, 0.5 + j}, na = sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2]), th = angle(k, b, j);
                double v[3] = {th * a[0] / na, th * a[1] / na, th * a[2] / na};
                prt_so3_exp(v, E);
                if (j == 0) matmul(R, E, Rh);
                else matmul(E, R, Rh);
                double d[3] = {0.01 * (k + 1), -0.02 * b, 0.03 * j + 0.005}, dj = 0;
                for (int i = 0; i < 3; i++) {
                    *at(z, k, x + i, b) = 0.5 * i - b + j;
                    *at(pred, k, x + i, b) = *at(z, k, x + i, b) + (k ? d[i] : 0);
                    dj += d[i] * d[i];
                }
                for (int i = 0; i < 9; i++) *at(z, k, x + 3 + i, b) = R[i], *at(pred, k, x + 3 + i, b) = k ? Rh[i] : R[i];
                if (k) { /* the rollout's start (k = 0) is the truth's: the means are over the points after it */
                    point_dR += th, dR_body[j] += th;
                    q2 += dj, dq_body[j] += sqrt(dj);
                }
            }
            for (int i = 0; i < NP; i++) *at(z, k, N + i, b) = *at(pred, k, N + i, b) = rate(i) * k * DT + 0.1 * b;
            dR += point_dR, dR_sq += point_dR * point_dR;
            dq += sqrt(q2), dq_sq += q2, dq_at[k][b] = sqrt(q2);
        }
    double count = (NT - 1) * NTRAJ, p2 = 0, pi2 = 0;
    for (int j = 0; j < NB; j++)
        for (int i = 0; i < 3; i++) p2 += rate(bodies[j].p + i) * rate(bodies[j].p + i), pi2 += rate(bodies[j].p + 3 + i) * rate(bodies[j].p + 3 + i);

    PrtModel m = {.family = &still, .sys = &sys};
    PrtTrajSet test = {.n = NTRAJ, .npts = NT, .N = N, .W = W, .dt = DT, .xv = z};
    PrtEvalResult r = {.n = NTRAJ, .nt = NT, .dt = DT, .pred = pred};
    prt_eval_so3(&m, NULL, &test, &r);
    printf("so3 metrics: mean geodesic |dR| %.15g, off its closed form by %.1e; its square's mean %.15g, by %.1e\n",
           r.value[DR], fabs(r.value[DR] - dR / count), r.squares[DR], fabs(r.squares[DR] - dR_sq / count));
    CHECK(fabs(r.value[DR] - dR / count) < 1e-12, "mean geodesic angle %.15g, want %.15g", r.value[DR], dR / count);
    CHECK(fabs(r.squares[DR] - dR_sq / count) < 1e-12, "mean squared geodesic angle %.15g, want %.15g", r.squares[DR],
          dR_sq / count);
    for (int j = 0; j < NB; j++) {
        CHECK(fabs(r.so3_dR_body[j] - dR_body[j] / count) < 1e-12, "body %d's mean angle %.15g, want %.15g", j,
              r.so3_dR_body[j], dR_body[j] / count);
        CHECK(fabs(r.so3_dq_body[j] - dq_body[j] / count) < 1e-15, "body %d's mean |dq| %.17g, want %.17g", j,
              r.so3_dq_body[j], dq_body[j] / count);
    }
    CHECK(fabs(r.value[DQ] - dq / count) < 1e-15 && fabs(r.squares[DQ] - dq_sq / count) < 1e-15,
          "mean |dq| %.17g and |dq|^2 %.17g, want %.17g and %.17g", r.value[DQ], r.squares[DQ], dq / count, dq_sq / count);
    /* one interval of a still model: |dpdot| = |rate of p|, |dPidot| = |rate of Pi| at every point */
    CHECK(fabs(r.value[DPDOT] - sqrt(p2)) < 1e-9 * sqrt(p2) && fabs(r.squares[DPDOT] - p2) < 1e-9 * p2,
          "|dpdot| %.15g and its square %.15g, want %.15g and %.15g", r.value[DPDOT], r.squares[DPDOT], sqrt(p2), p2);
    CHECK(fabs(r.value[DPIDOT] - sqrt(pi2)) < 1e-9 * sqrt(pi2) && fabs(r.squares[DPIDOT] - pi2) < 1e-9 * pi2,
          "|dPidot| %.15g and its square %.15g, want %.15g and %.15g", r.value[DPIDOT], r.squares[DPIDOT], sqrt(pi2), pi2);
    /* |dq| over time: the same distances, point by point (0 at the start) */
    double dq_worst = 0;
    for (int k = 0; k < NT; k++)
        for (int b = 0; b < NTRAJ; b++) dq_worst = fmax(dq_worst, fabs(r.series[PRT_METRIC_SO3_DQ_SERIES][k * NTRAJ + b] - dq_at[k][b]));
    CHECK(dq_worst < 1e-15, "|dq| over time is off its closed form by %.3g", dq_worst);
    /* no learned residual: its gradient's errors are NaN */
    CHECK(isnan(r.value[DVQ]) && isnan(r.value[DVR]), "a model without a residual: dV_q %g, dV_R %g", r.value[DVQ],
          r.value[DVR]);

    /* the orientation error over time (evaluate_orientation.c): the same angles, summed over the
       bodies at each point (exact near 0 too: atan2, not acos) */
    prt_eval_orientation(&sys, z, &r);
    double worst = 0;
    for (int k = 0; k < NT; k++)
        for (int b = 0; b < NTRAJ; b++) {
            double want = k ? angle(k, b, 0) + angle(k, b, 1) : 0;
            worst = fmax(worst, fabs(r.series[PRT_METRIC_ORIENTATION][k * NTRAJ + b] - want));
        }
    printf("orientation error over time: off the summed angles by %.1e at most\n", worst);
    CHECK(r.rigid && worst < 1e-12, "the orientation series is off the summed angles by %.3g", worst);

    r.pred = NULL; /* ours */
    prt_eval_result_free(&r);
    free(z), free(pred);
    printf("%s: %s\n", __FILE__, failures ? "FAILED" : "ok");
    return failures != 0;
}
