/* sim.c — initial states, projection onto the constraints, the Hamiltonian right-hand
   side (gradV then Field kernels), energy and constraint violation. */
#include "sim.h"
#include "core/alloc.h"

#include "math/linalg.h"
#include "loop_gram.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* For one state x: A = DPhi (C x N), W = M^-1 A^T as C rows, the Cholesky factor of
   G = A W. The C rows go through MinvP as a batch of C. G's products run over each row's
   nonzeros (a row of DPhi touches a few bodies), the same sums as over the whole row. */
typedef struct Proj {
    double *A, *W, *G, *y, *tmp, *work;
    int *nz;
    PrtSpd spd;
} Proj;

/* The columns of the n-vector a that are not zero, ascending, into nz; their count. */
static int nonzeros(const double *a, int n, int *nz) {
    int k = 0;
    for (int i = 0; i < n; i++)
        if (a[i] != 0) nz[k++] = i;
    return k;
}

static bool proj_factor(const PrtSystem *s, const double *x, Proj *p) {
    if (s->loop) return prt_loop_factor(s->loop, x, s->params); /* sparse, in the loop form's tables */
    int N = s->N, C = s->C;
    prt_dphi(s, 1, x, p->A);
    for (int r = 0; r < C; r++) /* SoA for a batch of C: component i of row r at [i*C + r] */
        for (int i = 0; i < N; i++) p->tmp[i * C + r] = p->A[r * N + i];
    prt_minv(s, C, p->tmp, p->W);
    for (int r = 0; r < C; r++) {
        const double *a = p->A + (long)r * N;
        int k = nonzeros(a, N, p->nz);
        for (int q = 0; q <= r; q++) {
            double g = 0;
            for (int e = 0; e < k; e++) g += a[p->nz[e]] * p->W[p->nz[e] * C + q];
            p->G[r * C + q] = p->G[q * C + r] = g;
        }
    }
    return prt_spd_factor(&p->spd, p->G, C);
}

/* v -= W G^-1 rhs */
static void proj_apply(const PrtSystem *s, Proj *p, double *v, const double *rhs) {
    if (s->loop) {
        prt_loop_apply(s->loop, v, rhs);
        return;
    }
    int N = s->N, C = s->C;
    memcpy(p->y, rhs, sizeof(double) * (size_t)C);
    prt_spd_solve(&p->spd, p->y, p->work);
    for (int i = 0; i < N; i++) {
        double t = 0;
        for (int r = 0; r < C; r++) t += p->W[i * C + r] * p->y[r];
        v[i] -= t;
    }
}

static double norm2(const double *r, int n) {
    double t = 0;
    for (int k = 0; k < n; k++) t += r[k] * r[k];
    return sqrt(t);
}

/* Step halvings the projections try before taking the shortest step anyway. */
enum { MAX_HALVINGS = 40 };

/* max |r_k|, NaN if any r_k is (fmax would skip it) */
static double max_abs(const double *r, int n) {
    double m = 0;
    for (int k = 0; k < n; k++)
        if (!(fabs(r[k]) <= m)) m = fabs(r[k]);
    return m;
}

/* Units in the last place of a state's coordinates that a residual row may keep */
enum { ROUNDING_ULPS = 16 };

/* Each residual row's limit at state z: tol, or where Phi_r (PhiDot_r with phidot) cannot be
   computed more exactly, ROUNDING_ULPS eps sum_j |d row / d z_j| |z_j|: rounding z's
   coordinates alone changes the row by that much. A chain ten thousand links long hangs
   1e4 from the origin, where a link's Phi is only known to about 1e-11: no Newton meets
   1e-12 there, and such a state is as projected as its numbers allow. */
static void residual_limits(const PrtSystem *s, const double *z, bool phidot, double tol, double *lim) {
    int N = s->N, C = s->C;
    const char *what = "projection and sampling scratch";
    const double eps = ROUNDING_ULPS * 2.220446049250313e-16;
    if (s->loop) {
        const PrtLoopField *f = s->loop;
        long K = f->row_off[C];
        double *A = prt_xalloc((size_t)K + 1, sizeof(double), what), *B = prt_xalloc((size_t)K + 1, sizeof(double), what);
        prt_loop_rows(s->loop, z, phidot ? z + N : z, s->params + s->nmass, A, B);
        for (int r = 0; r < C; r++) {
            double a = 0, d = 0;
            for (int e = f->row_off[r]; e < f->row_off[r + 1]; e++) {
                int c = f->row_coord[e];
                a += fabs(A[e] * z[c]);
                if (phidot) d += fabs(B[e] * z[c]) + fabs(A[e] * z[N + c]);
            }
            lim[r] = fmax(tol, eps * a);
            if (phidot) lim[C + r] = fmax(tol, eps * d);
        }
        free(A), free(B);
        return;
    }
    double *J = prt_xalloc((size_t)C * 2 * N + 1, sizeof(double), what);
    prt_dphi(s, 1, z, J);
    for (int r = 0; r < C; r++) {
        double a = 0;
        for (int j = 0; j < N; j++) a += fabs(J[(long)r * N + j] * z[j]);
        lim[r] = fmax(tol, eps * a);
    }
    if (phidot) { /* DPhiDot: C x 2N, (B, A) */
        s->DPhiDot(1, z, s->params + s->nmass, J);
        for (int r = 0; r < C; r++) {
            double d = 0;
            for (int j = 0; j < 2 * N; j++) d += fabs(J[(long)r * 2 * N + j] * z[j]);
            lim[C + r] = fmax(tol, eps * d);
        }
    }
    free(J);
}

/* Whether every |r_k| <= lim_k (false for NaN) */
static bool within(const double *r, const double *lim, int n) {
    for (int k = 0; k < n; k++)
        if (!(fabs(r[k]) <= lim[k])) return false;
    return true;
}

bool prt_phi_within_rounding(const PrtSystem *s, const double *x, const double *phi, double tol, double *lim) {
    residual_limits(s, x, false, tol, lim);
    return within(phi, lim, s->C);
}

/* The nearest point of (X, Xdot) on Phi = 0, PhiDot = 0 for each state: Gauss-Newton with
   J = [DPhi 0; DPhiDot] (2C x 2N), steps -J^T (J J^T)^-1 (Phi, PhiDot). PhiDot = DPhi Xdot,
   so DPhiDot's Xdot block is DPhi: one kernel call fills both rows of J.
   Each step is halved until it lowers |(Phi, PhiDot)|: the full step always descends that
   norm for a short enough step, but PhiDot is bilinear in (X, Xdot), and from a state far
   off the constraints a full step can overshoot to a point of them far from the nearest one
   (on 20000 sampled 5-pendulum states, 0.05 % moved by more than the state's own norm, to
   speeds of 40-440 where the samples have 15). Near the solution full steps are taken. */
/* The scratch of project_nearest's Gauss-Newton for one state. In loop form J is kept as the
   rows' A and B (prt_loop_rows) and J J^T factored by blocks in the loop form's tables
   (loop_gram.h); else J and G = J J^T are dense. */
typedef struct Nearest {
    double *J, *G, *y, *step, *trial, *work;
    int *nz;
    PrtSpd spd;
    double *A, *B;
    PrtLoopGram gram;
    double *lim; /* residual_limits' */
} Nearest;

/* step = J^T y from the loop form's rows: Phi_r's row is A_r on its coordinates, PhiDot_r's is
   B_r there and A_r on their velocities */
static void nearest_step_rows(const PrtSystem *s, const Nearest *w, double *step) {
    const PrtLoopField *f = s->loop;
    int N = s->N, C = s->C;
    memset(step, 0, sizeof(double) * 2 * (size_t)N);
    for (int r = 0; r < C; r++)
        for (int e = f->row_off[r]; e < f->row_off[r + 1]; e++) {
            int c = f->row_coord[e];
            step[c] += w->A[e] * w->y[r] + w->B[e] * w->y[C + r];
            step[N + c] += w->A[e] * w->y[C + r];
        }
}

/* r = (Phi, PhiDot) at z, less goal (if not NULL) */
static void nearest_residual(const PrtSystem *s, const double *z, const double *goal, double *r) {
    const double *lengths = s->params + s->nmass;
    prt_phi(s, 1, z, lengths, r);
    prt_phidot(s, 1, z, lengths, r + s->C);
    if (goal)
        for (int k = 0; k < 2 * s->C; k++) r[k] -= goal[k];
}

/* Gauss-Newton on (Phi, PhiDot)(z) = goal (0 if NULL) from z, each step halved until the
   residual's norm falls, at most 50 steps, until every |residual| <= tol or no step lowers
   it. Leaves r = (Phi, PhiDot) at z and returns the largest |residual| if every row met tol
   or its rounding limit (residual_limits), else (or if J J^T was singular) INFINITY. */
static double newton_nearest(const PrtSystem *s, Nearest *w, double *z, double *r, const double *goal, double tol) {
    int N = s->N, C = s->C, R = 2 * C;
    const double *lengths = s->params + s->nmass;
    double *J = w->J, *G = w->G, res = INFINITY;
    nearest_residual(s, z, goal, r);
    bool singular = false;
    for (int it = 0; it < 50; it++) {
        res = max_abs(r, R);
        if (res <= tol || !isfinite(res)) break;
        if (s->loop) {
            prt_loop_rows(s->loop, z, z + N, lengths, w->A, w->B);
            if (!prt_loop_gram_factor(s->loop, w->A, w->B, &w->gram)) {
                singular = true;
                break;
            }
            memcpy(w->y, r, sizeof(double) * (size_t)R);
            prt_loop_gram_solve(s->loop, &w->gram, w->y);
            nearest_step_rows(s, w, w->step);
        } else {
            s->DPhiDot(1, z, lengths, J + (long)C * 2 * N);
            for (int k = 0; k < C; k++) /* row k: [DPhi_k 0] */
                memcpy(J + (long)k * 2 * N, J + (long)(C + k) * 2 * N + N, sizeof(double) * (size_t)N);
            for (int a = 0; a < R; a++) {
                const double *ja = J + (long)a * 2 * N;
                int k = nonzeros(ja, 2 * N, w->nz);
                for (int c = 0; c <= a; c++) {
                    double g = 0;
                    for (int e = 0; e < k; e++) g += ja[w->nz[e]] * J[(long)c * 2 * N + w->nz[e]];
                    G[a * R + c] = G[c * R + a] = g;
                }
            }
            if (!prt_spd_factor(&w->spd, G, R)) {
                singular = true;
                break;
            }
            memcpy(w->y, r, sizeof(double) * (size_t)R);
            prt_spd_solve(&w->spd, w->y, w->work);
            for (int i = 0; i < 2 * N; i++) {
                w->step[i] = 0;
                for (int k = 0; k < R; k++) w->step[i] += J[(long)k * 2 * N + i] * w->y[k];
            }
        }
        double before = norm2(r, R), alpha = 1;
        bool lower = false;
        for (int halvings = 0; halvings <= MAX_HALVINGS && !lower; halvings++, alpha *= 0.5) {
            for (int i = 0; i < 2 * N; i++) w->trial[i] = z[i] - alpha * w->step[i];
            nearest_residual(s, w->trial, goal, r);
            lower = norm2(r, R) < before; /* (false for NaN: keep halving) */
        }
        if (!lower) { /* no step lowers the residual: it is as low as it gets */
            nearest_residual(s, z, goal, r);
            break;
        }
        memcpy(z, w->trial, sizeof(double) * (size_t)(2 * N));
    }
    res = max_abs(r, R); /* the residual at z */
    bool met = !singular && (res <= tol || (residual_limits(s, z, true, tol, w->lim), within(r, w->lim, R)));
    if (goal)
        for (int k = 0; k < R; k++) r[k] += goal[k];
    return met ? res : INFINITY;
}

static double project_nearest(const PrtSystem *s, long n, double *xv, double tol) {
    int N = s->N, C = s->C, R = 2 * C;
    const char *what = "projection and sampling scratch";
    const PrtLoopField *f = s->loop;
    long K = f ? f->row_off[C] : 0;
    Nearest w = {0};
    w.y = prt_xalloc((size_t)R, sizeof(double), what), w.lim = prt_xalloc((size_t)R, sizeof(double), what);
    w.step = prt_xalloc((size_t)(2 * N), sizeof(double), what), w.trial = prt_xalloc((size_t)(2 * N), sizeof(double), what);
    if (f) {
        w.A = prt_xalloc((size_t)K + 1, sizeof(double), what), w.B = prt_xalloc((size_t)K + 1, sizeof(double), what);
    } else {
        w.J = prt_xcalloc((size_t)(R * 2 * N), sizeof(double), what);
        w.G = prt_xalloc((size_t)R * (size_t)R, sizeof(double), what);
        w.work = prt_xalloc((size_t)R, sizeof(double), what), w.nz = prt_xalloc((size_t)(2 * N), sizeof(int), what);
    }
    double *z = prt_xalloc((size_t)(2 * N), sizeof(double), what), *r = prt_xalloc((size_t)R, sizeof(double), what),
           *z0 = prt_xalloc((size_t)(2 * N), sizeof(double), what), *r0 = prt_xalloc((size_t)R, sizeof(double), what),
           *goal = prt_xalloc((size_t)R, sizeof(double), what);
    double worst = 0;
    for (long b = 0; b < n && worst >= 0; b++) {
        for (int i = 0; i < 2 * N; i++) z[i] = xv[i * n + b];
        double res = newton_nearest(s, &w, z, r, NULL, tol);
        /* from far off, continuation from the start (as prt_project's mass metric does) */
        if (!isfinite(res)) {
            for (int i = 0; i < 2 * N; i++) z0[i] = xv[i * n + b];
            nearest_residual(s, z0, NULL, r0);
            for (int stages = 4; stages <= 64 && !isfinite(res); stages *= 4) {
                memcpy(z, z0, sizeof(double) * (size_t)(2 * N));
                for (int k = 1; k <= stages; k++) {
                    for (int i = 0; i < R; i++) goal[i] = (1 - (double)k / stages) * r0[i];
                    res = newton_nearest(s, &w, z, r, k < stages ? goal : NULL, tol);
                    if (!isfinite(res)) break;
                }
            }
        }
        if (!isfinite(res)) worst = -1;
        else worst = fmax(worst, res);
        for (int i = 0; i < 2 * N; i++) xv[i * n + b] = z[i];
    }
    free(w.J), free(w.G), free(w.y), free(w.step), free(w.trial), free(w.work), free(w.nz);
    free(w.A), free(w.B), free(w.lim);
    prt_spd_free(&w.spd), prt_loop_gram_free(&w.gram);
    free(z), free(r), free(z0), free(r0), free(goal);
    return worst;
}

/* Newton on Phi(x) = goal (0 if goal is NULL) from x, in the mass metric: steps
   -W G^-1 (Phi - goal), each halved until |Phi - goal| falls (as project_nearest's), at most
   50, until every |Phi_r - goal_r| <= tol or no step lowers it. Leaves phi = Phi(x) and
   returns max |Phi(x) - goal| if every row met tol or its rounding limit, else (or if G was
   singular) INFINITY. */
static double newton_mass(const PrtSystem *s, Proj *p, double *x, double *phi, const double *goal, double tol,
                          double *xprev, double *xfull, double *lim) {
    int N = s->N, C = s->C;
    double res = INFINITY;
    bool singular = false;
    prt_phi(s, 1, x, s->params + s->nmass, phi);
    if (goal)
        for (int r = 0; r < C; r++) phi[r] -= goal[r];
    for (int it = 0; it < 50; it++) {
        res = max_abs(phi, C);
        if (res <= tol || !isfinite(res)) break;
        if (!proj_factor(s, x, p)) {
            singular = true;
            break;
        }
        double before = norm2(phi, C), alpha = 1;
        memcpy(xprev, x, sizeof(double) * (size_t)N);
        proj_apply(s, p, x, phi);
        memcpy(xfull, x, sizeof(double) * (size_t)N);
        bool lower = false;
        for (int halvings = 0; halvings <= MAX_HALVINGS && !lower; halvings++, alpha *= 0.5) {
            for (int i = 0; i < N; i++) x[i] = xprev[i] + alpha * (xfull[i] - xprev[i]);
            prt_phi(s, 1, x, s->params + s->nmass, phi); /* phi stays the residual at x for the next iteration */
            if (goal)
                for (int r = 0; r < C; r++) phi[r] -= goal[r];
            lower = norm2(phi, C) < before;
        }
        if (!lower) { /* no step lowers the residual: it is as low as it gets */
            memcpy(x, xprev, sizeof(double) * (size_t)N);
            prt_phi(s, 1, x, s->params + s->nmass, phi);
            if (goal)
                for (int r = 0; r < C; r++) phi[r] -= goal[r];
            break;
        }
    }
    res = max_abs(phi, C);
    bool met = !singular && (res <= tol || (residual_limits(s, x, false, tol, lim), within(phi, lim, C)));
    if (goal) /* back to Phi(x) */
        for (int r = 0; r < C; r++) phi[r] += goal[r];
    return met ? res : INFINITY;
}

double prt_project(const PrtSystem *s, long n, double *xv, double tol, PrtMetric metric) {
    int N = s->N, C = s->C;
    if (C == 0) return 0;
    if (metric == PRT_METRIC_EUCLIDEAN) return s->DPhiDot || s->loop ? project_nearest(s, n, xv, tol) : -1;
    Proj p = {0};
    if (!s->loop) { /* dense: the loop form factors in its own, sparse scratch */
        p.A = prt_xalloc((size_t)C * N, sizeof(double), "projection and sampling scratch");
        p.W = prt_xalloc((size_t)C * N, sizeof(double), "projection and sampling scratch");
        p.G = prt_xalloc((size_t)C * C, sizeof(double), "projection and sampling scratch");
        p.y = prt_xalloc((size_t)C, sizeof(double), "projection and sampling scratch");
        p.tmp = prt_xalloc((size_t)C * N, sizeof(double), "projection and sampling scratch");
        p.work = prt_xalloc((size_t)C, sizeof(double), "projection and sampling scratch");
        p.nz = prt_xalloc((size_t)N, sizeof(int), "projection and sampling scratch");
    }
    double *x = prt_xalloc((size_t)N, sizeof(double), "projection and sampling scratch"), *v = prt_xalloc((size_t)N, sizeof(double), "projection and sampling scratch"),
           *phi = prt_xalloc((size_t)C, sizeof(double), "projection and sampling scratch"), *xall = prt_xalloc((size_t)(2 * N), sizeof(double), "projection and sampling scratch"),
           *xprev = prt_xalloc((size_t)N, sizeof(double), "projection and sampling scratch"), *xfull = prt_xalloc((size_t)N, sizeof(double), "projection and sampling scratch");
    double worst = 0, *x0 = prt_xalloc((size_t)N, sizeof(double), "projection and sampling scratch"),
           *phi0 = prt_xalloc((size_t)C, sizeof(double), "projection and sampling scratch"),
           *goal = prt_xalloc((size_t)C, sizeof(double), "projection and sampling scratch"),
           *lim = prt_xalloc((size_t)C, sizeof(double), "projection and sampling scratch");
    for (long b = 0; b < n && worst >= 0; b++) {
        for (int i = 0; i < N; i++) x[i] = xv[i * n + b], v[i] = xv[(N + i) * n + b];
        double res = newton_mass(s, &p, x, phi, NULL, tol, xprev, xfull, lim);
        /* Newton from far off (a long chain whose init block stretches every link) halves
           its overshooting steps and crawls: then continuation from the start, Phi(x) =
           (1 - t) Phi(x0) for t = 1/K, 2/K, ..., 1, each stage's Newton starting near its
           solution; K = 4, 16, 64 until the last stage converges */
        if (!isfinite(res)) {
            for (int i = 0; i < N; i++) x0[i] = xv[i * n + b];
            prt_phi(s, 1, x0, s->params + s->nmass, phi0);
            for (int stages = 4; stages <= 64 && !isfinite(res); stages *= 4) {
                memcpy(x, x0, sizeof(double) * (size_t)N);
                for (int k = 1; k <= stages; k++) {
                    for (int r = 0; r < C; r++) goal[r] = (1 - (double)k / stages) * phi0[r];
                    res = newton_mass(s, &p, x, phi, k < stages ? goal : NULL, tol, xprev, xfull, lim);
                    if (!isfinite(res)) break;
                }
            }
        }
        if (!isfinite(res) || !proj_factor(s, x, &p)) {
            worst = -1;
            break;
        }
        /* velocities: remove the component along the constraint normals (linear: one step) */
        memcpy(xall, x, sizeof(double) * (size_t)N);
        memcpy(xall + N, v, sizeof(double) * (size_t)N);
        prt_phidot(s, 1, xall, s->params + s->nmass, phi);
        proj_apply(s, &p, v, phi);
        memcpy(xall + N, v, sizeof(double) * (size_t)N);
        prt_phidot(s, 1, xall, s->params + s->nmass, phi);
        double vres = 0;
        for (int r = 0; r < C; r++) vres = fmax(vres, fabs(phi[r]));
        worst = fmax(worst, fmax(res, vres));
        for (int i = 0; i < N; i++) xv[i * n + b] = x[i], xv[(N + i) * n + b] = v[i];
    }
    free(p.A), free(p.W), free(p.G), free(p.y), free(p.tmp), free(p.work), free(p.nz), free(x), free(v), free(phi),
        free(xall), free(x0), free(phi0), free(goal), free(lim);
    prt_spd_free(&p.spd);
    free(xprev), free(xfull);
    return worst;
}

/* A length the program leaves open is the one state 0 of the batch xv (SoA, n states) has:
   with the free lengths at 0 its row of Phi reads |a - b|^2. */
static void lengths_from(const PrtSystem *s, const double *xv, long n) {
    double *x0 = prt_xalloc((size_t)s->N, sizeof(double), "projection and sampling scratch"), *phi = prt_xalloc((size_t)(s->C + 1), sizeof(double), "projection and sampling scratch");
    for (int i = 0; i < s->N; i++) x0[i] = xv[i * n];
    for (int k = s->nmass; k < s->nparams; k++) s->params[k] = 0;
    prt_phi(s, 1, x0, s->params + s->nmass, phi);
    for (int k = s->nmass; k < s->nparams; k++) s->params[k] = sqrt(phi[s->free_rows[k - s->nmass]]);
    free(x0), free(phi);
}

void prt_take_free_lengths(PrtSystem *s, const double *xv, long n) {
    if (s->nparams > s->nmass && !s->lengths_set) lengths_from(s, xv, n);
    s->lengths_set = 1;
}

double prt_sample_initial(const PrtSystem *s, PrtRng *rng, long n, double tol, double *z) {
    int N = s->N, NP = s->NP;
    double *draws = prt_xalloc((size_t)(s->ndraws * n + 1), sizeof(double), "projection and sampling scratch");
    for (long b = 0; b < n; b++) /* draw state by state, so state b does not depend on n */
        for (int i = 0; i < s->ndraws; i++)
            draws[i * n + b] = s->draw_kinds[i] == 0 ? prt_rng_normal(rng) : prt_rng_uniform(rng);
    double *xv = prt_xalloc((size_t)((N + NP) * n + 1), sizeof(double), "projection and sampling scratch");
    s->Init(n, draws, s->params, xv);
    /* a non-finite sample is the init block's fault, not the projection's */
    bool finite = prt_first_nonfinite(xv, (N + NP) * n) < 0;
    if (finite && s->nparams > s->nmass && !s->lengths_set) lengths_from(s, xv, n); /* open lengths: the first sampled state's */
    double worst = finite ? prt_project(s, n, xv, tol, s->sample_metric) : PRT_INIT_NONFINITE;
    memcpy(z, xv, sizeof(double) * (size_t)(N * n));
    prt_massv(s, n, xv + (long)N * n, z + (long)N * n);
    free(xv);
    free(draws);
    return worst;
}

void prt_describe_init_failure(const PrtSystem *s, long n, const double *z, char *buf, size_t len) {
    long bad = prt_first_nonfinite(z, (s->N + s->NP) * n), i = bad / n;
    snprintf(buf, len, "%s%sthe init block gave a non-finite value (inf or NaN) for %s of state %ld", s->init_at ? s->init_at : "",
             s->init_at ? ": " : "", bad < 0 ? "?" : s->names ? s->names[i] : "a coordinate", bad < 0 ? 0 : bad % n);
}

void prt_describe_projection_failure(const PrtSystem *s, long n, const double *z, char *buf, size_t len) {
    long C = s->C, worst_b = 0, flat_b = -1;
    int worst_r = 0, flat_r = 0;
    double *phi = prt_xalloc((size_t)(C * n) + 1, sizeof(double), "projection and sampling scratch"),
           *norm = prt_xalloc((size_t)(C * n) + 1, sizeof(double), "projection and sampling scratch");
    prt_phi(s, n, z, s->params + s->nmass, phi);
    prt_dphi_row_norms(s, n, z, norm);
    double worst = -1, scale = 0;
    for (long i = 0; i < (long)s->N * n; i++) scale = fmax(scale, fabs(z[i]));
    for (long r = 0; r < C; r++)
        for (long b = 0; b < n; b++) {
            double p = fabs(phi[r * n + b]), g = norm[r * n + b];
            if (!(g > 1e-12 * fmax(1, scale)) && p > 0 && flat_b < 0) flat_b = b, flat_r = (int)r;
            if (g > 0 && p / g > worst) worst = p / g, worst_b = b, worst_r = (int)r;
        }
    char row[160];
    int r = flat_b >= 0 ? flat_r : worst_r;
    if (s->row_names && s->row_names[r]) snprintf(row, sizeof row, "`%s`", s->row_names[r]);
    else snprintf(row, sizeof row, "constraint row %d", r);
    const char *at = s->init_at ? s->init_at : "", *sep = s->init_at ? ": " : "";
    if (flat_b >= 0)
        snprintf(buf, len, "%s%scannot project the init block's state %ld onto the constraints: %s has no gradient "
                 "there (the bodies it joins are at one place?); place them apart, as the constraint has them",
                 at, sep, flat_b, row);
    else
        snprintf(buf, len, "%s%sNewton's projection of the init block's states onto the constraints did not converge: "
                 "they are up to %.3g off %s (state %ld, |Phi| = %.3g); place the bodies closer to what the "
                 "constraints ask (a long chain's links each a few %% too long add up along it)",
                 at, sep, worst, row, worst_b, fabs(phi[(long)worst_r * n + worst_b]));
    free(phi), free(norm);
}

void prt_hamiltonian_rhs(void *ctx, long n, const double *z, double *zdot) {
    PrtSystem *s = ctx;
    long N = s->N;
    if (s->work_cap < (2 * N + 2 * s->NP) * n) { /* Field's input is (X, P, dV); then the forces */
        free(s->work);
        s->work_cap = (2 * N + 2 * s->NP) * n;
        s->work = prt_xalloc((size_t)s->work_cap, sizeof(double), "projection and sampling scratch");
    }
    if (s->loop) { /* the loops over the rows (MinvP and gradV give v and dV/dX) */
        prt_loop_field(s->loop, n, z, s->gradV, NULL, s->params, zdot);
    } else if (s->Rhs) { /* Field with gradV folded in: no copy of the state, one pass */
        s->Rhs(n, z, s->params, zdot);
    } else {
        memcpy(s->work, z, sizeof(double) * (size_t)((N + s->NP) * n));
        s->gradV(n, z, s->params, s->work + (N + s->NP) * n);
        s->Field(n, s->work, s->params, zdot);
    }
    if (s->Force) { /* the system's non-conservative forces add to P' (no constraints: sema) */
        double *F = s->work + (2 * N + s->NP) * n, *Pdot = zdot + N * n;
        s->Force(n, z, s->params, F);
        for (long i = 0; i < (long)s->NP * n; i++) Pdot[i] += F[i];
    }
}

void prt_dphi(const PrtSystem *s, long n, const double *x, double *J) {
    if (s->DPhi) s->DPhi(n, x, s->params + s->nmass, J);
    else prt_loop_jacobian(s->loop, n, x, s->params, J);
}

void prt_dphi_row_norms(const PrtSystem *s, long n, const double *x, double *norms) {
    if (s->loop) {
        prt_loop_row_norms(s->loop, n, x, s->params, norms);
        return;
    }
    long N = s->N, C = s->C;
    double *J = prt_xalloc((size_t)(C * N) + 1, sizeof(double), "constraint checks"),
           *x1 = prt_xalloc((size_t)N + 1, sizeof(double), "constraint checks");
    for (long b = 0; b < n; b++) {
        for (long i = 0; i < N; i++) x1[i] = x[i * n + b];
        s->DPhi(1, x1, s->params + s->nmass, J);
        for (long r = 0; r < C; r++) {
            double g = 0;
            for (long i = 0; i < N; i++) g += J[r * N + i] * J[r * N + i];
            norms[r * n + b] = sqrt(g);
        }
    }
    free(J), free(x1);
}

void prt_system_release(PrtSystem *s) {
    free(s->work);
    s->work = NULL;
    s->work_cap = 0;
}

void prt_phi(const PrtSystem *s, long n, const double *x, const double *lengths, double *phi) {
    if (s->loop) prt_loop_constraints(s->loop, n, x, lengths, phi, NULL);
    else s->Phi(n, x, lengths, phi);
}

void prt_phidot(const PrtSystem *s, long n, const double *xv, const double *lengths, double *phidot) {
    if (s->loop) prt_loop_constraints(s->loop, n, xv, lengths, NULL, phidot);
    else s->PhiDot(n, xv, lengths, phidot);
}

void prt_minv(const PrtSystem *s, long n, const double *p, double *v) { prt_minv_with(s, n, p, s->params, v); }
void prt_massv(const PrtSystem *s, long n, const double *v, double *p) { prt_massv_with(s, n, v, s->params, p); }

void prt_minv_with(const PrtSystem *s, long n, const double *p, const double *params, double *v) {
    if (s->MinvP) s->MinvP(n, p, params, v);
    else prt_loop_minv(s->loop, n, p, params, v);
}

void prt_massv_with(const PrtSystem *s, long n, const double *v, const double *params, double *p) {
    if (s->MassV) s->MassV(n, v, params, p);
    else prt_loop_mass(s->loop, n, v, params, p);
}

void prt_field(const PrtSystem *s, long n, const double *zdv, const double *params, double *zdot) {
    if (s->Field) s->Field(n, zdv, params, zdot);
    else prt_loop_field(s->loop, n, zdv, NULL, zdv + 2L * s->N * n, params, zdot);
}

void prt_accel(const PrtSystem *s, long n, const double *xvf, const double *params, double *out) {
    if (s->Accel) s->Accel(n, xvf, params, out);
    else prt_loop_accel(s->loop, n, xvf, params, out);
}

void prt_energy(const PrtSystem *s, long n, const double *z, double *h) {
    if (s->H) {
        s->H(n, z, s->params, h);
        return;
    }
    /* (a system in loop form has no H kernel: it would grow with the system) */
    double *v = prt_xalloc((size_t)s->NP * (size_t)n, sizeof(double), "the energy's scratch");
    const double *p = z + (long)s->N * n;
    s->V(n, z, s->params, h);
    prt_minv(s, n, p, v);
    for (long b = 0; b < n; b++) {
        double t = 0;
        for (int i = 0; i < s->NP; i++) t += p[(long)i * n + b] * v[(long)i * n + b];
        h[b] += 0.5 * t;
    }
    free(v);
}
void prt_potential(const PrtSystem *s, long n, const double *z, double *v) { s->V(n, z, s->params, v); }

double prt_constraint_violation(const PrtSystem *s, long n, const double *z) {
    if (s->C == 0) return 0;
    double *phi = prt_xalloc((size_t)(s->C * n), sizeof(double), "projection and sampling scratch");
    prt_phi(s, n, z, s->params + s->nmass, phi);
    double worst = 0;
    for (long i = 0; i < s->C * n; i++) worst = fmax(worst, fabs(phi[i]));
    free(phi);
    return worst;
}
