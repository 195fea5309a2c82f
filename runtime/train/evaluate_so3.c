/* evaluate_so3.c — the Lie T2 paper's metrics (App. E; evaluate.h) for systems with `state so3`
   bodies: the rollout's position and rotation errors, the one-interval momentum rates, and
   the learned residual potential's gradient against the true residual. */
#include "evaluate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "integrators/lie_group.h"

/* Is row i of X a position (a point's coordinate, or a so3 body's q), not a rotation entry? */
static bool position_row(const PrtSystem *s, int i) {
    if (i < prt_lie_cartesian(s)) return true;
    for (int k = 0; k < s->nso3; k++)
        if (i >= s->so3[k].x && i < s->so3[k].x + 3) return true;
    return false;
}

/* Is row i of P a momentum p (a point's, or a so3 body's), not a body angular momentum Pi? */
static bool momentum_row(const PrtSystem *s, int i) {
    if (i < prt_lie_cartesian(s)) return true;
    for (int k = 0; k < s->nso3; k++)
        if (i >= s->so3[k].p && i < s->so3[k].p + 3) return true;
    return false;
}

/* mean over the rollout's predicted points of |dq|_2 and of the geodesic sum over bodies (and
   of their squares); |dq|_2 over time */
static void rollout_errors(const PrtSystem *s, const double *truth, PrtEvalResult *r) {
    long n = r->n, pt = (long)prt_state_rows(s) * n;
    double dq = 0, dR = 0, dq_sq = 0, dR_sq = 0, *dq_body = r->so3_dq_body, *dR_body = r->so3_dR_body;
    double *dq_t = prt_eval_new_series(r, PRT_METRIC_SO3_DQ_SERIES);
    for (long b = 0; b < n; b++) dq_t[b] = 0; /* (the rollout starts on the truth) */
    for (int k = 1; k < r->nt; k++)
        for (long b = 0; b < n; b++) {
            const double *z = truth + k * pt, *zh = r->pred + k * pt;
            double q2 = 0;
            for (int i = 0; i < s->N; i++)
                if (position_row(s, i)) q2 += (zh[i * n + b] - z[i * n + b]) * (zh[i * n + b] - z[i * n + b]);
            dq += sqrt(q2), dq_sq += q2, dq_t[k * n + b] = sqrt(q2);
            double point_dR = 0; /* the geodesic sum over bodies at this point */
            for (int j = 0; j < s->nso3; j++) {
                double R[9], Rh[9], tr = 0, qb = 0;
                for (int i = s->so3[j].x; i < s->so3[j].x + 3; i++) qb += (zh[i * n + b] - z[i * n + b]) * (zh[i * n + b] - z[i * n + b]);
                dq_body[j] += sqrt(qb);
                prt_soa_gather(z, n, s->so3[j].x + 3, 9, b, R);
                prt_soa_gather(zh, n, s->so3[j].x + 3, 9, b, Rh);
                double Q[9];
                if (!prt_so3_nearest_rotation(Rh, Q)) { /* (verlet, euler and rk4 leave SO(3)) */
                    point_dR += NAN, dR_body[j] += NAN;
                    continue;
                }
                for (int i = 0; i < 9; i++) tr += R[i] * Q[i]; /* tr(R^T Rhat) */
                double c = (tr - 1) / 2; /* (within rounding of [-1, 1] now) */
                double angle = isfinite(c) ? acos(c > 1 ? 1 : c < -1 ? -1 : c) : NAN;
                point_dR += angle, dR_body[j] += angle;
            }
            dR += point_dR, dR_sq += point_dR * point_dR;
        }
    double count = (double)(r->nt - 1) * (double)n;
    r->value[PRT_METRIC_SO3_DQ] = dq / count, r->value[PRT_METRIC_SO3_DR] = dR / count;
    r->squares[PRT_METRIC_SO3_DQ] = dq_sq / count, r->squares[PRT_METRIC_SO3_DR] = dR_sq / count;
    for (int j = 0; j < s->nso3; j++) dq_body[j] /= count, dR_body[j] /= count;
    prt_eval_summarize(r, PRT_METRIC_SO3_DQ_SERIES);
}

/* one interval from each test point but the last: the rates of p and Pi against the data's */
static void rate_errors(PrtModel *m, const double *theta, const PrtTrajSet *test, int nt, PrtEvalResult *r) {
    PrtSystem *s = m->sys;
    long n = test->n, W = prt_state_rows(s), pt = W * n, nb = n * (nt - 1), N = s->N;
    double *x0 = prt_xalloc((size_t)(W * nb), sizeof(double), "evaluation series");
    double *out = prt_xalloc((size_t)(2 * W * nb), sizeof(double), "evaluation series");
    double *P = prt_xalloc((size_t)(s->NP * nb), sizeof(double), "evaluation series");
    double *Ph = prt_xalloc((size_t)(s->NP * nb), sizeof(double), "evaluation series");
    double *V = prt_xalloc((size_t)(s->NP * nb), sizeof(double), "evaluation series");
    for (int k = 0; k + 1 < nt; k++) /* state j = k n + b: point k of trajectory b */
        for (long i = 0; i < W; i++) memcpy(x0 + i * nb + k * n, test->xv + k * pt + i * n, sizeof(double) * (size_t)n);
    double times[2] = {0, test->dt};
    prt_model_rollout(m, theta, nb, x0, times, 2, 1e-9, 1e-12, out); /* a failure leaves non-finite numbers: inf */
    for (int k = 0; k + 1 < nt; k++) /* the data's next points' velocities, as momenta below */
        for (long i = 0; i < s->NP; i++)
            memcpy(V + i * nb + k * n, test->xv + (k + 1) * pt + (N + i) * n, sizeof(double) * (size_t)n);
    s->MassV(nb, V, s->params, P);
    s->MassV(nb, out + W * nb + N * nb, s->params, Ph);
    double dp = 0, dPi = 0, dp_sq = 0, dPi_sq = 0;
    for (long j = 0; j < nb; j++) {
        double a = 0, c = 0;
        for (int i = 0; i < s->NP; i++) {
            double e = (Ph[i * nb + j] - P[i * nb + j]) / test->dt;
            if (momentum_row(s, i)) a += e * e;
            else c += e * e;
        }
        dp += sqrt(a), dPi += sqrt(c), dp_sq += a, dPi_sq += c;
    }
    r->value[PRT_METRIC_SO3_DPDOT] = dp / (double)nb, r->value[PRT_METRIC_SO3_DPIDOT] = dPi / (double)nb;
    r->squares[PRT_METRIC_SO3_DPDOT] = dp_sq / (double)nb, r->squares[PRT_METRIC_SO3_DPIDOT] = dPi_sq / (double)nb;
    free(x0), free(out), free(P), free(Ph), free(V);
}

/* the learned residual's gradient against the true one at every test point */
static void potential_errors(PrtModel *m, const double *theta, const PrtTrajSet *test, int nt, PrtEvalResult *r) {
    PrtSystem *s = m->sys;
    r->value[PRT_METRIC_SO3_DVQ] = r->value[PRT_METRIC_SO3_DVR] = NAN;
    if (!m->family->residual_grad) {
        for (int b = 0; b < s->nso3; b++) r->so3_dtau_body[b] = r->so3_tau_body[b] = NAN;
        return;
    }
    long n = test->n, N = s->N, pt = (long)prt_state_rows(s) * n, nb = n * nt;
    double *X = prt_xalloc((size_t)(N * nb), sizeof(double), "evaluation series");
    double *G = prt_xalloc((size_t)(N * nb), sizeof(double), "evaluation series");
    double *K = prt_xcalloc((size_t)(N * nb), sizeof(double), "evaluation series");
    double *Gm = prt_xalloc((size_t)(N * nb), sizeof(double), "evaluation series");
    for (int k = 0; k < nt; k++)
        for (long i = 0; i < N; i++) memcpy(X + i * nb + k * n, test->xv + k * pt + i * n, sizeof(double) * (size_t)n);
    s->gradV(nb, X, s->params, G);
    if (s->gradVknown) s->gradVknown(nb, X, s->params, K);
    m->family->residual_grad(m, theta, nb, X, Gm);
    double dq = 0, dR = 0;
    for (long j = 0; j < nb; j++) {
        double a = 0, c = 0;
        for (int i = 0; i < N; i++) {
            double e = Gm[i * nb + j] - (G[i * nb + j] - K[i * nb + j]);
            if (position_row(s, i)) a += e * e;
        }
        for (int b = 0; b < s->nso3; b++) { /* the skew parts: what the dynamics read of V_R */
            double R[9], Gt[9], Gl[9], tt[3], tl[3];
            int row = s->so3[b].x + 3;
            for (int i = 0; i < 9; i++)
                R[i] = X[(row + i) * nb + j], Gt[i] = G[(row + i) * nb + j] - K[(row + i) * nb + j], Gl[i] = Gm[(row + i) * nb + j];
            prt_so3_torque(R, Gt, tt);
            prt_so3_torque(R, Gl, tl);
            double cb = 0, tb = 0;
            for (int i = 0; i < 3; i++) cb += (tl[i] - tt[i]) * (tl[i] - tt[i]), tb += tt[i] * tt[i];
            c += cb;
            r->so3_dtau_body[b] += sqrt(cb) / (double)nb, r->so3_tau_body[b] += sqrt(tb) / (double)nb;
        }
        dq += sqrt(a), dR += sqrt(c);
    }
    r->value[PRT_METRIC_SO3_DVQ] = dq / (double)nb, r->value[PRT_METRIC_SO3_DVR] = dR / (double)nb;
    free(X), free(G), free(K), free(Gm);
}

int prt_so3_body_name(const PrtSystem *s, int b, const char **name) {
    *name = s->names[s->so3[b].x];
    const char *dot = strrchr(*name, '.');
    return (int)(dot ? dot - *name : (long)strlen(*name));
}

void prt_eval_so3(PrtModel *m, const double *theta, const PrtTrajSet *test, PrtEvalResult *r) {
    r->so3 = true;
    size_t nb = (size_t)m->sys->nso3;
    r->so3_dq_body = prt_xcalloc(nb, sizeof(double), "evaluation series");
    r->so3_dR_body = prt_xcalloc(nb, sizeof(double), "evaluation series");
    r->so3_dtau_body = prt_xcalloc(nb, sizeof(double), "evaluation series");
    r->so3_tau_body = prt_xcalloc(nb, sizeof(double), "evaluation series");
    rollout_errors(m->sys, test->xv, r);
    rate_errors(m, theta, test, r->nt, r);
    potential_errors(m, theta, test, r->nt, r);
}
