/* test_tensor_ops.c — the recorded MLP passes (mlp_graph.h) and their tape operations
   (tensor_ops.h) against the hand-written MLP passes and central finite differences:
   activation derivatives to the third order, the reverse pass, tangents, Hessian-vector
   products, and the gradient of a Hessian-vector product (training through an LNN). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fd_check.h"
#include "ad/mlp_graph.h"
#include "ad/state_ops.h"
#include "ad/tensor_ops.h"

static double rel_err(double a, double b) { return fabs(a - b) / fmax(1e-8, fmax(fabs(a), fabs(b))); }

/* an activation's derivative of order `order` at each of the np points x (fd_check.h) */
typedef struct ActAt {
    int act, order, np;
} ActAt;

static void act_at(void *ctx, const double *x, double *y) {
    ActAt *a = ctx;
    for (int i = 0; i < a->np; i++) y[i] = prt_act_derivative(a->act, a->order, x[i]);
}

static void test_activation_derivatives(void) {
    double x[16], J[16 * 16];
    int np = 0;
    for (double v = -3; v <= 3; v += 0.7) x[np++] = v;
    for (int act = PRT_ACT_TANH; act <= PRT_ACT_SILU; act++)
        for (int order = 0; order < 3; order++) {
            memset(J, 0, sizeof J); /* a map point by point: its Jacobian is diagonal */
            for (int i = 0; i < np; i++) J[i * np + i] = prt_act_derivative(act, order + 1, x[i]);
            FdWorst w = {0};
            fd_jacobian(act_at, &(ActAt){act, order, np}, x, np, np, J, &(FdOpts){.h = 1e-5, .scale = 1}, &w);
            CHECK(w.err < 1e-8, "activation %d order %d (input: the point -3 + 0.7 i): " FD_FMT, act, order + 1,
                  FD_ARGS(w));
        }
}

/* prt_op_act's arrays (softplus and SiLU through the vectorized tanh of x/2) against the
   scalar formulas, values and backward pass, from saturation to saturation, in lengths
   that cross its blocks. */
static void test_activation_arrays(void) {
    long len = 601;
    for (int act = PRT_ACT_TANH; act <= PRT_ACT_SILU; act++)
        for (int order = 0; order < 3; order++) {
            PrtTape *t = prt_tape_new();
            int x = prt_tape_leaf(t, len);
            double *xv = prt_tape_val(t, x);
            for (long i = 0; i < len; i++) xv[i] = -45 + 90.0 * i / (len - 1);
            int y = prt_op_act(t, act, order, x, -1, false);
            prt_tape_zero_adjoints(t);
            for (long i = 0; i < len; i++) prt_tape_adj(t, y)[i] = 1 + 0.001 * i;
            prt_tape_backward(t);
            double worst = 0, worst_bar = 0;
            for (long i = 0; i < len; i++) {
                double v = prt_act_derivative(act, order, xv[i]), d = prt_act_derivative(act, order + 1, xv[i]);
                worst = fmax(worst, fabs(prt_tape_val(t, y)[i] - v) / fmax(1, fabs(v)));
                worst_bar = fmax(worst_bar, fabs(prt_tape_adj(t, x)[i] - (1 + 0.001 * i) * d) / fmax(1, fabs(d)));
            }
            CHECK(worst < 1e-14 && worst_bar < 1e-14, "activation %d order %d over [-45, 45]: value off by %.2e, backward by %.2e",
                  act, order, worst, worst_bar);
            prt_tape_free(t);
        }
}

/* prt_op_mul_add against the products and sum it replaces, values and adjoints, with the
   second factors repeated over 3 tangent directions. */
static void test_mul_add(void) {
    int rows = 5, k = 3;
    long n = 7, kn = k * n;
    double y_fused[5 * 21], y_parts[5 * 21], adj_fused[4][5 * 21], adj_parts[4][5 * 21];
    for (int fused = 0; fused < 2; fused++) {
        PrtTape *t = prt_tape_new();
        PrtRng rng;
        prt_rng_seed(&rng, 3);
        int v[4];
        for (int i = 0; i < 4; i++) {
            long len = rows * (i % 2 ? n : kn);
            v[i] = prt_tape_leaf(t, len);
            for (long j = 0; j < len; j++) prt_tape_val(t, v[i])[j] = prt_rng_normal(&rng);
        }
        int y = fused ? prt_op_mul_add(t, v[0], v[1], v[2], v[3], rows, false)
                      : prt_tape_lincomb(t, 2, (int[]){prt_op_mul(t, v[0], v[1], rows, false), prt_op_mul(t, v[2], v[3], rows, false)},
                                         (double[]){1, 1});
        prt_tape_zero_adjoints(t);
        for (long j = 0; j < rows * kn; j++) prt_tape_adj(t, y)[j] = prt_rng_normal(&rng);
        prt_tape_backward(t);
        memcpy(fused ? y_fused : y_parts, prt_tape_val(t, y), sizeof(double) * (size_t)(rows * kn));
        for (int i = 0; i < 4; i++)
            memcpy(fused ? adj_fused[i] : adj_parts[i], prt_tape_adj(t, v[i]), sizeof(double) * (size_t)prt_tape_len(t, v[i]));
        prt_tape_free(t);
    }
    double worst = 0;
    for (long j = 0; j < rows * kn; j++) worst = fmax(worst, fabs(y_fused[j] - y_parts[j]));
    for (int i = 0; i < 4; i++)
        for (long j = 0; j < rows * (i % 2 ? n : kn); j++) worst = fmax(worst, fabs(adj_fused[i][j] - adj_parts[i][j]));
    CHECK(worst < 1e-14, "prt_op_mul_add differs from two products and their sum by %g", worst);
}

/* S(theta, x) = sum w . HVP(x; U) on a fresh tape, its gradient into gtheta and gx when asked. */
static double hvp_objective(const PrtMlp *m, const double *theta, const double *x, const double *U, const double *w,
                            int k, long n, double *gtheta, double *gx, double *hvp_out) {
    PrtTape *t = prt_tape_new();
    long np = prt_mlp_nparams(m), in = m->size[0];
    double *tadj = calloc((size_t)np, sizeof(double));
    int xv = prt_tape_leaf(t, in * n), uv = prt_tape_leaf(t, in * k * n);
    memcpy(prt_tape_val(t, xv), x, sizeof(double) * (size_t)(in * n));
    memcpy(prt_tape_val(t, uv), U, sizeof(double) * (size_t)(in * k * n));
    PrtMlpTrace tr;
    prt_mlp_graph_forward(t, m, theta, tadj, xv, n, &tr);
    prt_mlp_graph_vjp(t, &tr, -1);
    int h = prt_mlp_graph_hvp(t, &tr, uv, k);
    const double *hv = prt_tape_val(t, h);
    double S = 0;
    for (long i = 0; i < in * k * n; i++) S += w[i] * hv[i];
    if (hvp_out) memcpy(hvp_out, hv, sizeof(double) * (size_t)(in * k * n));
    if (gtheta || gx) {
        prt_tape_zero_adjoints(t);
        memcpy(prt_tape_adj(t, h), w, sizeof(double) * (size_t)(in * k * n));
        prt_tape_backward(t);
        if (gtheta) memcpy(gtheta, tadj, sizeof(double) * (size_t)np);
        if (gx) memcpy(gx, prt_tape_adj(t, xv), sizeof(double) * (size_t)(in * n));
    }
    free(tadj);
    prt_tape_free(t);
    return S;
}

/* the network's input gradient at x (fd_check.h) */
typedef struct MlpAt {
    const PrtMlp *m;
    const double *theta;
    long n;
} MlpAt;

static void mlp_grad_at(void *ctx, const double *x, double *g) {
    MlpAt *a = ctx;
    PrtMlpWork w = {0};
    prt_mlp_value_grad(a->m, a->theta, a->n, x, NULL, g, &w);
    prt_mlp_work_free(&w);
}

/* hvp_objective (fd_check.h: theta and x perturbed in place, read here) */
typedef struct HvpAt {
    const PrtMlp *m;
    const double *theta, *x, *U, *w;
    int k;
    long n;
} HvpAt;

static void hvp_at(void *ctx, const double *unused, double *S) {
    HvpAt *a = ctx;
    *S = hvp_objective(a->m, a->theta, a->x, a->U, a->w, a->k, a->n, NULL, NULL, NULL);
}

static void test_mlp_passes(PrtActivation act) {
    PrtMlp m = {.nlayers = 3, .size = {3, 7, 5, 1}, .act = act};
    long np = prt_mlp_nparams(&m), n = 4, in = 3;
    int k = 2;
    PrtRng rng;
    prt_rng_seed(&rng, 7);
    double *theta = malloc(sizeof(double) * (size_t)np);
    prt_mlp_init(&m, theta, &rng);
    double x[12], U[24], w[24], v[4], grad[12];
    for (int i = 0; i < 12; i++) x[i] = prt_rng_normal(&rng);
    for (int i = 0; i < 24; i++) U[i] = prt_rng_normal(&rng), w[i] = prt_rng_normal(&rng);
    PrtMlpWork work = {0};
    prt_mlp_value_grad(&m, theta, n, x, v, grad, &work);
    prt_mlp_work_free(&work);

    /* forward and reverse against the hand-written passes */
    PrtTape *t = prt_tape_new();
    int xv = prt_tape_leaf(t, in * n);
    memcpy(prt_tape_val(t, xv), x, sizeof x);
    PrtMlpTrace tr;
    int y = prt_mlp_graph_forward(t, &m, theta, NULL, xv, n, &tr);
    int g = prt_mlp_graph_vjp(t, &tr, -1);
    for (long b = 0; b < n; b++) CHECK(rel_err(prt_tape_val(t, y)[b], v[b]) < 1e-13, "forward %ld", b);
    for (long i = 0; i < in * n; i++) CHECK(rel_err(prt_tape_val(t, g)[i], grad[i]) < 1e-12, "gradient %ld", i);
    prt_tape_free(t);

    /* Hessian-vector products against differences of the gradient along each direction */
    double hv[24];
    hvp_objective(&m, theta, x, U, w, k, n, NULL, NULL, hv);
    FdWorst wh = {0};
    for (int j = 0; j < k; j++) {
        double u[12], hu[12]; /* U's and the HVP's direction j */
        for (long i = 0; i < in; i++)
            for (long b = 0; b < n; b++)
                u[i * n + b] = U[i * k * n + j * n + b], hu[i * n + b] = hv[i * k * n + j * n + b];
        fd_jvp(mlp_grad_at, &(MlpAt){&m, theta, n}, x, in * n, in * n, u, hu, &(FdOpts){.h = 1e-5, .scale = 1}, &wh);
    }
    CHECK(wh.err < 1e-7, "act %d HVP (output: x_i of state b at i n + b; both directions): " FD_FMT, act, FD_ARGS(wh));

    /* the gradient of the HVP (third derivatives) w.r.t. the weights and the inputs */
    double *gth = malloc(sizeof(double) * (size_t)np), gx[12];
    hvp_objective(&m, theta, x, U, w, k, n, gth, gx, NULL);
    HvpAt ctx = {&m, theta, x, U, w, k, n};
    FdWorst wt = {0}, wx = {0};
    fd_grad(hvp_at, &ctx, theta, np, gth, &(FdOpts){.h = 1e-5, .scale = 1, .stride = np / 23 + 1}, &wt);
    fd_grad(hvp_at, &ctx, x, in * n, gx, &(FdOpts){.h = 1e-5, .scale = 1}, &wx);
    CHECK(wt.err < 1e-6, "act %d d(w.HVP)/dtheta: " FD_FMT, act, FD_ARGS(wt));
    CHECK(wx.err < 1e-6, "act %d d(w.HVP)/dx: " FD_FMT, act, FD_ARGS(wx));
    free(gth), free(theta);
}

/* the recorded forward pass at x, on a tape of its own */
static void mlp_forward_at(void *ctx, const double *x, double *y) {
    MlpAt *a = ctx;
    PrtTape *t = prt_tape_new();
    long len = (long)a->m->size[0] * a->n;
    int xv = prt_tape_leaf(t, len);
    memcpy(prt_tape_val(t, xv), x, sizeof(double) * (size_t)len);
    PrtMlpTrace tr;
    int out = prt_mlp_graph_forward(t, a->m, a->theta, NULL, xv, a->n, &tr);
    memcpy(y, prt_tape_val(t, out), sizeof(double) * (size_t)prt_tape_len(t, out));
    prt_tape_free(t);
}

/* A vector-output net: J U by the tangent pass and J^T G by the reverse pass against
   differences of the forward pass, and <G, J U> = <J^T G, U>. */
static void test_vector_net(void) {
    PrtMlp m = {.nlayers = 2, .size = {2, 6, 3}, .act = PRT_ACT_SOFTPLUS};
    long np = prt_mlp_nparams(&m), n = 3;
    PrtRng rng;
    prt_rng_seed(&rng, 11);
    double *theta = malloc(sizeof(double) * (size_t)np), x[6], U[6], G[9];
    prt_mlp_init(&m, theta, &rng);
    for (int i = 0; i < 6; i++) x[i] = prt_rng_normal(&rng), U[i] = prt_rng_normal(&rng);
    for (int i = 0; i < 9; i++) G[i] = prt_rng_normal(&rng);
    PrtTape *t = prt_tape_new();
    int xv = prt_tape_leaf(t, 6), uv = prt_tape_leaf(t, 6), gv = prt_tape_leaf(t, 9);
    memcpy(prt_tape_val(t, xv), x, sizeof x), memcpy(prt_tape_val(t, uv), U, sizeof U), memcpy(prt_tape_val(t, gv), G, sizeof G);
    PrtMlpTrace tr;
    prt_mlp_graph_forward(t, &m, theta, NULL, xv, n, &tr);
    const double *ju = prt_tape_val(t, prt_mlp_graph_jvp(t, &tr, uv, 1));
    const double *jtg = prt_tape_val(t, prt_mlp_graph_vjp(t, &tr, gv));
    FdWorst w = {0};
    fd_jvp(mlp_forward_at, &(MlpAt){&m, theta, n}, x, 6, 9, U, ju, &(FdOpts){.h = 1e-6, .scale = 1}, &w);
    CHECK(w.err < 1e-8, "JVP: " FD_FMT, FD_ARGS(w));
    double lhs = 0, rhs = 0;
    for (int i = 0; i < 9; i++) lhs += G[i] * ju[i];
    for (int i = 0; i < 6; i++) rhs += jtg[i] * U[i];
    CHECK(fabs(lhs - rhs) < 1e-12 * fmax(1, fabs(lhs)), "<G, J U> = %.15g but <J^T G, U> = %.15g", lhs, rhs);
    prt_tape_free(t);
    free(theta);
}

/* ---- per-state operations: the tape's gradient of w . op(inputs) against differences ---- */

enum { NQ = 3, NS = 2 };
static const unsigned char angular3[NQ] = {1, 0, 1};
typedef int (*Recorder)(PrtTape *t, const int *in);

static int rec_features(PrtTape *t, const int *in) { return prt_op_features(t, in[0], NQ, angular3, NS); }
static int rec_features_vjp(PrtTape *t, const int *in) { return prt_op_features_vjp(t, in[0], in[1], NQ, angular3, NS); }
static int rec_features_jvp(PrtTape *t, const int *in) { return prt_op_features_jvp(t, in[0], in[1], NQ, angular3, NS); }
static int rec_softplus(PrtTape *t, const int *in) { return prt_op_tril_softplus(t, in[0], NQ, NS); }
static int rec_scale(PrtTape *t, const int *in) { return prt_op_tril_softplus_scale(t, in[0], in[1], NQ, NS); }
static int rec_t_mul(PrtTape *t, const int *in) { return prt_op_tril_t_mul(t, in[0], in[1], NQ, NS); }
static int rec_mul(PrtTape *t, const int *in) { return prt_op_tril_mul(t, in[0], in[1], NQ, NS); }
static int rec_outer(PrtTape *t, const int *in) { return prt_op_tril_outer(t, in[0], in[1], NQ, NS); }
static int rec_llt(PrtTape *t, const int *in) {
    return prt_op_tril_llt_solve(t, prt_op_tril_softplus(t, in[0], NQ, NS), in[1], NQ, NS);
}
static int rec_mat_mul(PrtTape *t, const int *in) { return prt_op_mat_mul(t, in[0], in[1], NQ, NS); }
static int rec_mat_solve(PrtTape *t, const int *in) { return prt_op_mat_solve(t, in[0], in[1], NQ, NS); }

/* w . op(x) and (grad) its gradient w.r.t. every input, all inputs in one array x. */
static double op_objective(Recorder rec, int nin, const long *len, const double *x, const double *w, double *grad) {
    PrtTape *t = prt_tape_new();
    int in[4];
    long off = 0;
    for (int k = 0; k < nin; k++) {
        in[k] = prt_tape_leaf(t, len[k]);
        memcpy(prt_tape_val(t, in[k]), x + off, sizeof(double) * (size_t)len[k]);
        off += len[k];
    }
    int y = rec(t, in);
    double S = 0;
    for (long i = 0; i < prt_tape_len(t, y); i++) S += w[i] * prt_tape_val(t, y)[i];
    if (grad) {
        prt_tape_zero_adjoints(t);
        memcpy(prt_tape_adj(t, y), w, sizeof(double) * (size_t)prt_tape_len(t, y));
        prt_tape_backward(t);
        off = 0;
        for (int k = 0; k < nin; k++) {
            memcpy(grad + off, prt_tape_adj(t, in[k]), sizeof(double) * (size_t)len[k]);
            off += len[k];
        }
    }
    prt_tape_free(t);
    return S;
}

/* op_objective at x (fd_check.h) */
typedef struct OpAt {
    Recorder rec;
    int nin;
    const long *len;
    const double *w;
} OpAt;

static void op_at(void *ctx, const double *x, double *S) {
    OpAt *a = ctx;
    *S = op_objective(a->rec, a->nin, a->len, x, a->w, NULL);
}

static void check_op(const char *name, Recorder rec, int nin, const long *len, const double *x0) {
    long total = 0;
    for (int k = 0; k < nin; k++) total += len[k];
    double x[64], w[64], grad[64];
    PrtRng rng;
    prt_rng_seed(&rng, 3);
    memcpy(x, x0, sizeof(double) * (size_t)total);
    for (int i = 0; i < 64; i++) w[i] = prt_rng_normal(&rng);
    op_objective(rec, nin, len, x, w, grad);
    FdWorst fw = {0};
    fd_grad(op_at, &(OpAt){rec, nin, len, w}, x, total, grad, &(FdOpts){.h = 1e-6, .scale = 1}, &fw);
    CHECK(fw.err < 1e-7, "%s: " FD_FMT, name, FD_ARGS(fw));
}

static void test_state_ops(void) {
    PrtRng rng;
    prt_rng_seed(&rng, 5);
    double x[64];
    for (int i = 0; i < 64; i++) x[i] = prt_rng_normal(&rng);
    long q = NQ * NS, f = prt_features_width(NQ, angular3) * NS, tr = NQ * (NQ + 1) / 2 * NS, full = NQ * NQ * NS;
    CHECK(prt_features_width(NQ, angular3) == 5, "two angles and a length: 5 features");
    check_op("features", rec_features, 1, (long[]){q}, x);
    check_op("features_vjp", rec_features_vjp, 2, (long[]){q, f}, x);
    check_op("features_jvp", rec_features_jvp, 2, (long[]){q, q}, x);
    check_op("tril_softplus", rec_softplus, 1, (long[]){tr}, x);
    check_op("tril_softplus_scale", rec_scale, 2, (long[]){tr, tr}, x);
    check_op("tril_t_mul", rec_t_mul, 2, (long[]){tr, q}, x);
    check_op("tril_mul", rec_mul, 2, (long[]){tr, q}, x);
    check_op("tril_outer", rec_outer, 2, (long[]){q, q}, x);
    check_op("tril_llt_solve", rec_llt, 2, (long[]){tr, q}, x);
    check_op("mat_mul", rec_mat_mul, 2, (long[]){full, q}, x);
    double a[64]; /* a well-conditioned, unsymmetric A (pivoting exercised by a small diagonal entry) */
    memcpy(a, x, sizeof a);
    for (int i = 0; i < NQ; i++)
        for (long b = 0; b < NS; b++) a[(i * NQ + i) * NS + b] += i == 0 ? -x[b] + 0.01 : 4;
    check_op("mat_solve", rec_mat_solve, 2, (long[]){full, q}, a);
    /* the solves solve */
    double A[9] = {0.01, 2, 1, 3, 1, -1, 1, 1, 5}, b[3] = {1, 2, 3}, Ac[9], xs[3];
    for (int tr2 = 0; tr2 < 2; tr2++) {
        memcpy(Ac, A, sizeof A), memcpy(xs, b, sizeof b);
        CHECK(prt_small_solve(3, Ac, xs, tr2), "solvable");
        for (int i = 0; i < 3; i++) {
            double r = -b[i];
            for (int j = 0; j < 3; j++) r += (tr2 ? A[j * 3 + i] : A[i * 3 + j]) * xs[j];
            CHECK(fabs(r) < 1e-13, "%s solve residual %g", tr2 ? "transposed" : "plain", r);
        }
    }
}

int main(void) {
    test_activation_derivatives();
    test_activation_arrays();
    test_mul_add();
    for (int act = PRT_ACT_TANH; act <= PRT_ACT_SILU; act++) test_mlp_passes(act);
    test_vector_net();
    test_state_ops();
    printf("test_tensor_ops: %s\n", failures ? "FAILED" : "ok");
    return failures != 0;
}
