/* test_generalized.c — the kernels of models in generalized coordinates (issue 16): the
   coordinate map and its inverse round-trip, M(q) against the N-pendulum's closed form,
   dT/dq and dV/dq against finite differences (here only: the product has none), the VJPs,
   and which coordinates are angles. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fd_check.h"
#include "math/linalg.h"
#include "loaded.h"
#include "math/rng.h"

static bool open_generalized(Loaded *l, const char *path, bool vjps) {
    char err[512];
    if (loaded_open(l, path, COMPILE_GENERALIZED | (vjps ? COMPILE_CHNN : 0), -1, stdout, err, sizeof err)) return true;
    CHECK(false, "%s: %s", path, err);
    return false;
}

static double uniform(PrtRng *r, double lo, double hi) { return lo + (hi - lo) * prt_rng_uniform(r); }

/* Calls kernel k on one state (n = 1: the batch layout is then the plain one). */
static void call1(PrtKernel k, const double *in, const double *params, double *out) { k(1, in, params, out); }

/* q in the inverse's principal ranges: angles in (-pi, pi), polar angles in (0, pi), where
   `polar` lists the coordinates the inverse returns in [0, pi] */
static void random_q(PrtRng *r, int nq, const bool *polar, double *q) {
    for (int i = 0; i < nq; i++) q[i] = polar && polar[i] ? uniform(r, 0.2, 2.9) : uniform(r, -3.0, 3.0);
}

/* CoordInverse(CoordMap(q, qdot)) == (q, qdot) */
static void check_round_trip(const char *path, const bool *polar) {
    Loaded l;
    if (!open_generalized(&l, path, false)) return loaded_close(&l);
    PrtSystem *s = &l.c.ps;
    CHECK(s->CoordMap && s->CoordInverse, "%s: CoordMap %p, CoordInverse %p", path, (void *)s->CoordMap,
          (void *)s->CoordInverse);
    if (!s->CoordMap || !s->CoordInverse) return loaded_close(&l);
    int nq = s->nq, NX = s->N + s->NP;
    double *in = calloc((size_t)(2 * nq), sizeof(double)), *x = calloc((size_t)NX, sizeof(double)),
           *back = calloc((size_t)(2 * nq), sizeof(double));
    PrtRng r;
    prt_rng_seed(&r, 7);
    double worst = 0;
    for (int trial = 0; trial < 50; trial++) {
        random_q(&r, nq, polar, in);
        for (int i = 0; i < nq; i++) in[nq + i] = uniform(&r, -2, 2);
        call1(s->CoordMap, in, s->params, x);
        call1(s->CoordInverse, x, s->params, back);
        for (int i = 0; i < 2 * nq; i++) worst = fmax(worst, fabs(back[i] - in[i]));
    }
    CHECK(worst < 1e-12, "%s: CoordInverse(CoordMap(q, qdot)) is off by %.3g", path, worst);
    free(in), free(x), free(back);
    loaded_close(&l);
}

/* M_ij = sum_{k >= max(i, j)} m_k l_i l_j cos(theta_i - theta_j) (CHNN App. E.1) */
static void check_pendulum_mass(void) {
    static const double m[3] = {1.082211, 1.172151, 1.039051}, len[3] = {1.116715, 0.938924, 1.035907};
    Loaded l;
    if (!open_generalized(&l, "examples/pendulum3.phys", false)) return loaded_close(&l);
    PrtSystem *s = &l.c.ps;
    CHECK(s->nq == 3 && s->MassQ, "nq %d, MassQ %p", s->nq, (void *)s->MassQ);
    if (s->nq != 3 || !s->MassQ) return loaded_close(&l);
    PrtRng r;
    prt_rng_seed(&r, 3);
    double worst = 0;
    for (int trial = 0; trial < 20; trial++) {
        double q[3], M[9];
        random_q(&r, 3, NULL, q);
        call1(s->MassQ, q, s->params, M);
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++) {
                double want = 0;
                for (int k = i > j ? i : j; k < 3; k++) want += m[k] * len[i] * len[j] * cos(q[i] - q[j]);
                worst = fmax(worst, fabs(M[i * 3 + j] - want));
            }
    }
    CHECK(worst < 1e-12, "pendulum3: MassQ differs from the closed form by %.3g", worst);
    loaded_close(&l);
}

/* Cholesky: true when the n x n matrix is positive definite */
static bool positive_definite(const double *A, int n) {
    double L[64];
    memcpy(L, A, sizeof(double) * (size_t)(n * n));
    return prt_cholesky(L, n);
}

static void check_gyroscope_mass(void) {
    Loaded l;
    if (!open_generalized(&l, "examples/gyroscope.phys", false)) return loaded_close(&l);
    PrtSystem *s = &l.c.ps;
    PrtRng r;
    prt_rng_seed(&r, 5);
    for (int trial = 0; trial < 20; trial++) {
        double q[3] = {uniform(&r, -3, 3), uniform(&r, 0.3, 2.8), uniform(&r, -3, 3)}, M[9];
        call1(s->MassQ, q, s->params, M);
        double asym = 0;
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++) asym = fmax(asym, fabs(M[i * 3 + j] - M[j * 3 + i]));
        CHECK(asym == 0, "gyroscope: MassQ not symmetric (%.3g)", asym);
        CHECK(positive_definite(M, 3), "gyroscope: MassQ not positive definite at theta = %g", q[1]);
    }
    loaded_close(&l);
}

/* v . M(q) v / 2 at x = (q, v) */
static void kinetic_at(void *ctx, const double *x, double *t) {
    PrtSystem *s = ctx;
    int nq = s->nq;
    double M[64];
    call1(s->MassQ, x, s->params, M);
    *t = 0;
    for (int i = 0; i < nq; i++)
        for (int j = 0; j < nq; j++) *t += x[nq + i] * M[i * nq + j] * x[nq + j];
    *t /= 2;
}

/* V(CoordMap(q)) */
static void potential_at(void *ctx, const double *q, double *v) {
    PrtSystem *s = ctx;
    double x[256], in[16] = {0};
    memcpy(in, q, sizeof(double) * (size_t)s->nq);
    call1(s->CoordMap, in, s->params, x);
    call1(s->V, x, s->params, v);
}

/* errors relative above 1, absolute below, on steps of 1e-5 */
static const FdOpts kernel_fd = {.h = 1e-5, .scale = 1};

/* KineticQ and GradVq against central differences of v . MassQ v / 2 and V(CoordMap(q)) */
static void check_derivatives(const char *path) {
    Loaded l;
    if (!open_generalized(&l, path, false)) return loaded_close(&l);
    PrtSystem *s = &l.c.ps;
    int nq = s->nq;
    PrtRng r;
    prt_rng_seed(&r, 11);
    FdWorst wt = {0}, wv = {0};
    for (int trial = 0; trial < 5; trial++) {
        double qv[16], dT[8], dV[8];
        random_q(&r, nq, NULL, qv);
        for (int i = 0; i < nq; i++) qv[nq + i] = uniform(&r, -2, 2);
        call1(s->KineticQ, qv, s->params, dT);
        call1(s->GradVq, qv, s->params, dV);
        fd_grad(kinetic_at, s, qv, nq, dT, &kernel_fd, &wt);
        fd_grad(potential_at, s, qv, nq, dV, &kernel_fd, &wv);
    }
    CHECK(wt.err < 1e-7, "%s: KineticQ: " FD_FMT, path, FD_ARGS(wt));
    CHECK(wv.err < 1e-7, "%s: GradVq: " FD_FMT, path, FD_ARGS(wv));
    loaded_close(&l);
}

/* kernel f of z = (its inputs, then the system's parameters) */
typedef struct KernelIn {
    PrtKernel f;
    int nin;
} KernelIn;

static void kernel_in(void *ctx, const double *z, double *y) {
    KernelIn *k = ctx;
    call1(k->f, z, z + k->nin, y);
}

/* A VJP kernel (inputs x then w; outputs w . Df/dx then w . Df/dparams, nmass of them)
   against central differences in every input and mass parameter; the worst into e */
static void vjp_error(PrtSystem *s, PrtKernel f, PrtKernel vjp, int nin, int nout, const double *x, const double *w,
                      FdWorst *e) {
    double in[128], adj[128], z[128];
    memcpy(in, x, sizeof(double) * (size_t)nin);
    memcpy(in + nin, w, sizeof(double) * (size_t)nout);
    call1(vjp, in, s->params, adj);
    memcpy(z, x, sizeof(double) * (size_t)nin);
    memcpy(z + nin, s->params, sizeof(double) * (size_t)s->nparams);
    fd_vjp(kernel_in, &(KernelIn){f, nin}, z, nin + s->nmass, nout, w, adj, &kernel_fd, e);
}

static void check_vjps(const char *path) {
    Loaded l;
    if (!open_generalized(&l, path, true)) return loaded_close(&l);
    PrtSystem *s = &l.c.ps;
    CHECK(s->MassQVJP && s->KineticQVJP, "%s: no VJP kernels", path);
    if (!s->MassQVJP || !s->KineticQVJP) return loaded_close(&l);
    int nq = s->nq;
    PrtRng r;
    prt_rng_seed(&r, 13);
    double qv[16], w[64];
    random_q(&r, nq, NULL, qv);
    for (int i = 0; i < nq; i++) qv[nq + i] = uniform(&r, -2, 2);
    for (int i = 0; i < nq * nq; i++) w[i] = uniform(&r, -1, 1);
    FdWorst e_m = {0}, e_k = {0};
    vjp_error(s, s->MassQ, s->MassQVJP, nq, nq * nq, qv, w, &e_m);
    vjp_error(s, s->KineticQ, s->KineticQVJP, 2 * nq, nq, qv, w, &e_k);
    CHECK(e_m.err < 1e-7, "%s: MassQVJP: " FD_FMT, path, FD_ARGS(e_m));
    CHECK(e_k.err < 1e-7, "%s: KineticQVJP: " FD_FMT, path, FD_ARGS(e_k));
    loaded_close(&l);
}

static void check_angles(const char *path, const char *want) {
    Loaded l;
    char err[512];
    if (!loaded_open(&l, path, COMPILE_SIMULATE, -1, stdout, err, sizeof err)) {
        CHECK(false, "%s: %s", path, err);
        return loaded_close(&l);
    }
    char got[64] = "";
    for (int i = 0; i < l.c.ps.nq; i++) got[i] = l.c.ps.angular[i] ? 'a' : '-';
    CHECK(!strcmp(got, want), "%s: angles %s, want %s", path, got, want);
    CHECK(l.c.ps.qnames && l.c.ps.nq > 0 && !strcmp(l.c.ps.qnames[0], l.sys->coords.names[0]), "%s: qnames", path);
    loaded_close(&l);
}

/* Network widths: coords embeds each angle as (cos, sin), rates stays nq; a force term on
   coords and rates outputs the rates of (q, qdot). */
static void check_widths(void) {
    static const char text[] =
        "system s {\n"
        "  dim 2\n"
        "  body bob : point { mass 1 }\n"
        "  body cart : point { mass 1 }\n"
        "  link bob to cart length 1\n"
        "  coordinates x, q { cart.pos = [x, 0]; bob.pos = cart.pos + [sin(q), -cos(q)] }\n"
        "  inverse { x = cart.pos.x; q = atan2(bob.pos.x - cart.pos.x, cart.pos.y - bob.pos.y) }\n"
        "  init { x = 0; q = normal(0, 1); x' = 0; q' = normal(0, 1) }\n"
        "}\n"
        "learned F : force { hidden [8]; input coords, rates }\n"
        "learned V : potential { hidden [8]; input coords }\n"
        "model n : node { force F }\n"
        "model h : hnn { potential V }\n";
    Arena a = {0};
    Diags d;
    FILE *quiet = fopen("/dev/null", "w"); /* the degrees-of-freedom warning: the cart's y is left free */
    diag_init(&d, quiet ? quiet : stdout);
    char *copy = strdup(text);
    SemaOptions opt = {.stdlib_dir = "stdlib", .require_system = true};
    System *s = sema_check_source(&a, &d, src_add(&d, "widths.phys", copy, strlen(copy)), &opt);
    CHECK(s != NULL, "widths.phys rejected");
    if (s) {
        CHECK(s->coords.nangles == 1 && !s->coords.angular[0] && s->coords.angular[1], "angles: x %d, q %d",
              s->coords.angular[0], s->coords.angular[1]);
        CHECK(s->learned[0].inputs == 2 + 1 + 2 && s->learned[0].outputs == 4, "F: %d -> %d, want 5 -> 4",
              s->learned[0].inputs, s->learned[0].outputs);
        CHECK(s->learned[1].inputs == 3, "V reads %d inputs, want 3 (x, cos q, sin q)", s->learned[1].inputs);
    }
    arena_free(&a);
    diag_free(&d);
    if (quiet) fclose(quiet);
}

/* The angle rule on the forms it names: 2 a + 1 and -a are read periodically; b / 2 is not,
   nor is c read as a position as well. */
static void check_angle_rule(void) {
    static const char text[] =
        "system s {\n"
        "  dim 2\n"
        "  body p[i in 1..3] : point { mass 1 }\n"
        "  coordinates a, b, c, d {\n"
        "    p[1].pos = [sin(2 * a + 1), cos(-a) + cos(pi - a)]\n"
        "    p[2].pos = [sin(b / 2), cos(b)]\n"
        "    p[3].pos = [c, sin(c) + d]\n"
        "  }\n"
        "}\n";
    Arena ar = {0};
    Diags dg;
    FILE *quiet = fopen("/dev/null", "w"); /* the degrees-of-freedom warning */
    diag_init(&dg, quiet ? quiet : stdout);
    char *copy = strdup(text);
    SemaOptions opt = {.stdlib_dir = "stdlib", .require_system = true};
    System *s = sema_check_source(&ar, &dg, src_add(&dg, "rule.phys", copy, strlen(copy)), &opt);
    CHECK(s != NULL, "rule.phys rejected");
    if (s) {
        char got[8] = "";
        for (int i = 0; i < 4; i++) got[i] = s->coords.angular[i] ? 'a' : '-';
        CHECK(!strcmp(got, "a---") && s->coords.nangles == 1, "angles %s, want a---", got);
    }
    arena_free(&ar);
    diag_free(&dg);
    if (quiet) fclose(quiet);
}

/* Checks and compiles a program given as text (for simulation: Init is there). */
static bool open_text(Loaded *l, const char *name, const char *text) {
    char err[512];
    memset(l, 0, sizeof *l);
    diag_init(&l->d, stdout);
    SemaOptions opt = {.stdlib_dir = "stdlib", .require_system = true};
    char *copy = strdup(text);
    l->sys = sema_check_source(&l->arena, &l->d, src_add(&l->d, name, copy, strlen(copy)), &opt);
    CHECK(l->sys != NULL, "%s does not check", name);
    if (!l->sys) return false;
    l->compiled = compiled_open(l->sys, &l->c, 2, COMPILE_SIMULATE, err, sizeof err);
    CHECK(l->compiled, "%s: %s", name, err);
    return l->compiled;
}

/* Init's states (SoA, (N + NP) x n) on n draws from seed */
static double *init_states(PrtSystem *s, long n, unsigned seed) {
    PrtRng r;
    prt_rng_seed(&r, seed);
    double *draws = malloc(sizeof(double) * (size_t)(s->ndraws * n + 1)), *xv = malloc(sizeof(double) * (size_t)((s->N + s->NP) * n));
    for (long b = 0; b < n; b++) /* as prt_sample_initial draws them */
        for (int i = 0; i < s->ndraws; i++) draws[i * n + b] = s->draw_kinds[i] == 0 ? prt_rng_normal(&r) : prt_rng_uniform(&r);
    s->Init(n, draws, s->params, xv);
    free(draws);
    return xv;
}

/* The largest difference between two programs' Init states on the same draws (-1: they do
   not compile or differ in layout). */
static double init_difference(const char *a, const char *b, long n) {
    Loaded la, lb;
    double worst = -1;
    if (open_text(&la, "a.phys", a) && open_text(&lb, "b.phys", b) && la.c.ps.N == lb.c.ps.N &&
        la.c.ps.NP == lb.c.ps.NP && la.c.ps.ndraws == lb.c.ps.ndraws) {
        double *xa = init_states(&la.c.ps, n, 17), *xb = init_states(&lb.c.ps, n, 17);
        worst = 0;
        for (long i = 0; i < (la.c.ps.N + la.c.ps.NP) * n; i++) worst = fmax(worst, fabs(xa[i] - xb[i]));
        free(xa), free(xb);
    }
    loaded_close(&la);
    loaded_close(&lb);
    return worst;
}

/* A top about a tip at the origin: held there by a joint (a body of points), or, with
   state so3 (which takes no constraints), placed there by three more coordinates set to 0.
   The map sets top.rot = map; init adds `init` after drawing the angles and their rates. */
static void top_program(char *buf, size_t len, bool so3, const char *map, const char *init) {
    snprintf(buf, len,
             "system top {\n"
             "  dim 3\n"
             "  body top : rigid3 { mass 0.1; moments [0.24, 0.24, 0.037]; point tip = [0, 0, -0.2]%s }\n"
             "  %s\n"
             "  coordinates phi, theta, psi%s { top.rot = %s; top.pos = %s-(top.rot * [0, 0, -0.2]) }\n"
             "  init {\n"
             "    phi = uniform(-1.5, 1.5); theta = uniform(-1.5, 1.5); psi = uniform(-1.5, 1.5)%s\n"
             "    phi' = normal(0, 2); theta' = normal(0, 1); psi' = normal(0, 10)\n"
             "    %s\n"
             "  }\n"
             "}\n",
             so3 ? "; state so3" : "", so3 ? "" : "joint top.tip to origin", so3 ? ", x, y, z" : "", map,
             so3 ? "[x, y, z] " : "", so3 ? "; x = 0; y = 0; z = 0" : "", init);
}

/* A body pose assigned in init after the map carries its rate: rotating the top by rotx(0.3)
   in init (directly, or through lets), then moving it so its tip stays at the origin, gives
   the state of the map that rotates it, velocities included; a later vel still wins. */
static void check_init_pose_rates(void) {
    for (int so3 = 0; so3 < 2; so3++) {
        const char *kind = so3 ? "state so3" : "points", *euler = "euler_zxz(phi, theta, psi)";
        char direct[2048], rotated[2048], via_let[2048], vel_after[2048], vel_before[2048];
        top_program(direct, sizeof direct, so3, "rotx(0.3) * euler_zxz(phi, theta, psi)", "");
        top_program(rotated, sizeof rotated, so3, euler, "top.rot = rotx(0.3) * top.rot; top.pos = -(top.rot * [0, 0, -0.2])");
        top_program(via_let, sizeof via_let, so3, euler,
                    "let R = top.rot; let Q = rotx(0.3); top.rot = Q * R; let tip = top.rot * [0, 0, -0.2]; top.pos = -tip");
        top_program(vel_after, sizeof vel_after, so3, euler,
                    "top.rot = rotx(0.3) * top.rot; top.pos = [0, 0, 0.2]; top.vel = [1, 2, 3]");
        top_program(vel_before, sizeof vel_before, so3, euler,
                    "top.pos = [0, 0, 0.2]; top.vel = [1, 2, 3]; top.rot = rotx(0.3) * top.rot");
        double e_rot = init_difference(direct, rotated, 50), e_let = init_difference(direct, via_let, 50);
        CHECK(e_rot >= 0 && e_rot < 1e-13, "%s: init's top.rot = rotx(0.3) * top.rot vs the rotated map: %.3g", kind, e_rot);
        CHECK(e_let >= 0 && e_let < 1e-13, "%s: the same through lets: %.3g", kind, e_let);
        /* the rotation's rate depends neither on where the centre is nor on its velocity */
        double e_vel = init_difference(vel_after, vel_before, 50);
        CHECK(e_vel >= 0 && e_vel < 1e-13, "%s: an explicit vel after the pose: %.3g", kind, e_vel);
        if (!so3) continue;
        /* turned by a fixed rotation, the body keeps the angular velocity (body frame) init gave it */
        char omega_after[2048], omega_before[2048];
        top_program(omega_after, sizeof omega_after, so3, euler, "top.rot = rotx(0.3) * top.rot; top.omega = [1, 2, 3]");
        top_program(omega_before, sizeof omega_before, so3, euler, "top.omega = [1, 2, 3]; top.rot = rotx(0.3) * top.rot");
        double e_om = init_difference(omega_after, omega_before, 50);
        CHECK(e_om >= 0 && e_om < 1e-13, "%s: omega set before turning the body: %.3g", kind, e_om);
    }
}

/* ---- the gyroscope's and rotor's turned chart (CHNN App. D.3): the data stay the
   reference's ZXZ sampling, and the baselines' mass matrix stays regular where they are ---- */

static void matmul3(const double *A, const double *B, double *C) {
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) C[i * 3 + j] = A[i * 3] * B[j] + A[i * 3 + 1] * B[3 + j] + A[i * 3 + 2] * B[6 + j];
}

/* Rz(a) or Rx(a) (z: which), or its derivative in a (deriv) */
static void rot_about(bool z, double a, bool deriv, double *R) {
    double c = cos(a), s = sin(a);
    if (deriv) {
        double Dz[9] = {-s, -c, 0, c, -s, 0, 0, 0, 0}, Dx[9] = {0, 0, 0, 0, -s, -c, 0, c, -s};
        memcpy(R, z ? Dz : Dx, sizeof Dz);
    } else {
        double Z[9] = {c, -s, 0, s, c, 0, 0, 0, 1}, X[9] = {1, 0, 0, 0, c, -s, 0, s, c};
        memcpy(R, z ? Z : X, sizeof Z);
    }
}

/* R = Rz(phi) Rx(theta) Rz(psi) and its rate along (phi', theta', psi') */
static void euler_zxz_rate(const double *ang, const double *rate, double *R, double *Rdot) {
    double f[3][9], d[3][9], t[9], u[9];
    for (int k = 0; k < 3; k++) rot_about(k != 1, ang[k], false, f[k]), rot_about(k != 1, ang[k], true, d[k]);
    matmul3(f[0], f[1], t);
    matmul3(t, f[2], R);
    memset(Rdot, 0, sizeof(double) * 9);
    for (int k = 0; k < 3; k++) { /* product rule: the k-th factor differentiated */
        matmul3(k == 0 ? d[0] : f[0], k == 1 ? d[1] : f[1], t);
        matmul3(t, k == 2 ? d[2] : f[2], u);
        for (int i = 0; i < 9; i++) Rdot[i] += rate[k] * u[i];
    }
}

/* One rigid body's state in Init's layout (points: centre, then centre + R e_k; SoA over n
   states, state b) from its centre c, velocity v, R and R'. */
static void put_body(double *want, long n, long b, int N, const double *c, const double *v, const double *R, const double *Rdot) {
    for (int p = 0; p < 4; p++)
        for (int k = 0; k < 3; k++) {
            want[(p * 3 + k) * n + b] = c[k] + (p ? R[k * 3 + p - 1] : 0);
            want[(N + p * 3 + k) * n + b] = v[k] + (p ? Rdot[k * 3 + p - 1] : 0);
        }
}

/* Draws as prt_sample_initial makes them (SoA: draw i of state b at i * n + b). */
static double *draw(const PrtSystem *s, long n, unsigned seed) {
    PrtRng r;
    prt_rng_seed(&r, seed);
    double *draws = malloc(sizeof(double) * (size_t)(s->ndraws * n + 1));
    for (long b = 0; b < n; b++)
        for (int i = 0; i < s->ndraws; i++) draws[i * n + b] = s->draw_kinds[i] == 0 ? prt_rng_normal(&r) : prt_rng_uniform(&r);
    return draws;
}

/* Init gives the states of the reference's sampling, Gyroscope() or Rotor() in
   mfinzi/constrained-hamiltonian-neural-networks (ZXZ Euler angles of the world frame), to
   rounding, whatever chart the baselines use. */
static void check_reference_sampling(const char *path, bool rotor) {
    Loaded l;
    if (!open_generalized(&l, path, false)) return loaded_close(&l);
    PrtSystem *s = &l.c.ps;
    int N = s->N, want_draws = rotor ? 12 : 7;
    CHECK(N == 12 && s->NP == 12 && s->ndraws == want_draws, "%s: N %d, NP %d, %d draws (want 12, 12, %d)", path, N,
          s->NP, s->ndraws, want_draws);
    if (N != 12 || s->NP != 12 || s->ndraws != want_draws) return loaded_close(&l);
    long n = 500;
    double *u = draw(s, n, 23), *x = malloc(sizeof(double) * (size_t)(2 * N * n)), *want = malloc(sizeof(double) * (size_t)(2 * N * n));
    s->Init(n, u, s->params, x);
    const double *tip = l.sys->bodies[0].npoints_named ? l.sys->bodies[0].points[0].c : NULL;
    for (long b = 0; b < n; b++) {
        double ang[3], rate[3], c[3] = {0}, v[3] = {0}, R[9], Rdot[9];
#define U(i) u[(i) * n + b]
        if (rotor) { /* q[k], q[k]' = clip(2 N(0, 1), -3, 3) in turn; the centre's x 0.1 */
            double q[12];
            for (int i = 0; i < 12; i++) q[i] = fmin(fmax(2 * U(i), -3), 3);
            for (int k = 0; k < 3; k++) c[k] = q[2 * k] * 0.1, v[k] = q[2 * k + 1] * 0.1;
            for (int k = 0; k < 3; k++) ang[k] = q[6 + 2 * k], rate[k] = q[7 + 2 * k];
        } else { /* uniform(lo, hi) = lo + (hi - lo) u */
            for (int k = 0; k < 3; k++) ang[k] = -1.5 + 3 * U(k);
            rate[0] = -4.5 + 9 * U(3), rate[1] = -0.3 + 0.6 * U(4);
            double sense = -1 + 2 * U(5);
            rate[2] = (sense > 0 ? 1 : sense < 0 ? -1 : 0) * 1.5 * (7 + U(6));
        }
#undef U
        euler_zxz_rate(ang, rate, R, Rdot);
        if (!rotor) /* the tip at the origin: c = -R tip */
            for (int k = 0; k < 3; k++)
                for (int j = 0; j < 3; j++) c[k] -= R[k * 3 + j] * tip[j], v[k] -= Rdot[k * 3 + j] * tip[j];
        put_body(want, n, b, N, c, v, R, Rdot);
    }
    double worst = 0;
    for (long i = 0; i < 2 * N * n; i++) worst = fmax(worst, fabs(x[i] - want[i]));
    CHECK(worst < 1e-14, "%s: Init differs from the reference's ZXZ sampling by %.3g", path, worst);
    free(u), free(x), free(want);
    loaded_close(&l);
}

/* Eigenvalues of the symmetric n x n matrix A (Jacobi rotations), into ev */
static void symmetric_eigenvalues(const double *A, int n, double *ev) {
    double a[64];
    memcpy(a, A, sizeof(double) * (size_t)(n * n));
    for (int sweep = 0; sweep < 50; sweep++) {
        double off = 0;
        for (int i = 0; i < n; i++)
            for (int j = i + 1; j < n; j++) off += a[i * n + j] * a[i * n + j];
        if (off < 1e-30) break;
        for (int p = 0; p < n; p++)
            for (int q = p + 1; q < n; q++) {
                if (a[p * n + q] == 0) continue;
                double th = (a[q * n + q] - a[p * n + p]) / (2 * a[p * n + q]);
                double t = (th >= 0 ? 1 : -1) / (fabs(th) + sqrt(th * th + 1)), c = 1 / sqrt(t * t + 1), sn = t * c;
                for (int k = 0; k < n; k++) { /* columns p, q */
                    double akp = a[k * n + p], akq = a[k * n + q];
                    a[k * n + p] = c * akp - sn * akq, a[k * n + q] = sn * akp + c * akq;
                }
                for (int k = 0; k < n; k++) { /* rows p, q */
                    double apk = a[p * n + k], aqk = a[q * n + k];
                    a[p * n + k] = c * apk - sn * aqk, a[q * n + k] = sn * apk + c * aqk;
                }
            }
    }
    for (int i = 0; i < n; i++) ev[i] = a[i * n + i];
}

/* The condition number of MassQ at the generalized coordinates of state b of x (SoA, n) */
static double mass_condition(PrtSystem *s, const double *x, long n, long b) {
    int nq = s->nq, NX = s->N + s->NP;
    double one[128], q[16], M[64], ev[8];
    for (int i = 0; i < NX; i++) one[i] = x[i * n + b];
    call1(s->CoordInverse, one, s->params, q);
    call1(s->MassQ, q, s->params, M);
    symmetric_eigenvalues(M, nq, ev);
    double lo = INFINITY, hi = 0;
    for (int i = 0; i < nq; i++) lo = fmin(lo, ev[i]), hi = fmax(hi, ev[i]);
    return lo > 0 ? hi / lo : INFINITY;
}

/* The baselines' M(q) is well conditioned at the top straight up and at the sampled initial
   states (Init, then CoordInverse, then MassQ): in plain ZXZ angles both sit on or near the
   singularity theta = 0, where M(q) is singular. */
static void check_gyroscope_chart(const char *path) {
    Loaded l;
    if (!open_generalized(&l, path, false)) return loaded_close(&l);
    PrtSystem *s = &l.c.ps;
    const double *tip = l.sys->bodies[0].points[0].c;
    double up[24] = {0}; /* R = I, the tip at the origin, at rest */
    for (int k = 0; k < 3; k++) up[k] = -tip[k];
    for (int p = 1; p < 4; p++)
        for (int k = 0; k < 3; k++) up[p * 3 + k] = up[k] + (p - 1 == k);
    double cond_up = mass_condition(s, up, 1, 0);
    long n = 2000;
    double *u = draw(s, n, 29), *x = malloc(sizeof(double) * (size_t)((s->N + s->NP) * n)), worst = 0;
    s->Init(n, u, s->params, x);
    for (long b = 0; b < n; b++) worst = fmax(worst, mass_condition(s, x, n, b));
    printf("%s: cond M(q) %.3g straight up, at most %.3g over %ld sampled initial states\n", path, cond_up, worst, n);
    CHECK(cond_up < 1e3, "%s: M(q) straight up has condition number %.3g", path, cond_up);
    CHECK(worst < 1e3, "%s: M(q) at a sampled initial state has condition number %.3g", path, worst);
    free(u), free(x);
    loaded_close(&l);
}

/* A coordinate placed as a position is one value with two rates once init sets the body's
   vel: the position moves at vel, the coordinate at its rate. */
static void check_init_shared_value(void) {
    static const char shape[] = "system s {\n"
                                "  dim 2\n"
                                "  body b : point { mass 1 }\n"
                                "  coordinates x, y { b.pos = [x, y] }\n"
                                "  init { x = normal(0, 1); y = 0; x' = 2; %s }\n"
                                "}\n";
    char moved[1024], direct[1024];
    snprintf(moved, sizeof moved, shape, "b.vel = [5, 1]; b.pos += [0.1 * x, 0]");
    snprintf(direct, sizeof direct, shape, "b.pos += [0.1 * x, 0]; b.vel = [5 + 0.2, 1]");
    double e = init_difference(moved, direct, 20);
    CHECK(e >= 0 && e < 1e-14, "b.pos += [0.1 * x, 0] after b.vel = [5, 1]: off by %.3g", e);
}

int main(void) {
    check_widths();
    check_angle_rule();
    check_init_pose_rates();
    check_init_shared_value();
    bool gyro_polar[3] = {false, true, false}, rotor_polar[6] = {false, false, false, false, true, false};
    check_round_trip("examples/pendulum3.phys", NULL);
    check_round_trip("examples/gyroscope.phys", gyro_polar);
    check_round_trip("examples/rotor.phys", rotor_polar);
    check_pendulum_mass();
    check_gyroscope_mass();
    check_reference_sampling("examples/gyroscope.phys", false);
    check_reference_sampling("examples/gyroscope-code.phys", false);
    check_reference_sampling("examples/rotor.phys", true);
    check_gyroscope_chart("examples/gyroscope.phys");
    check_gyroscope_chart("examples/gyroscope-code.phys");
    check_derivatives("examples/pendulum3.phys");
    check_derivatives("examples/gyroscope.phys");
    check_vjps("examples/pendulum3.phys");
    check_vjps("examples/rotor.phys");
    check_angles("examples/pendulum3.phys", "aaa");
    check_angles("examples/gyroscope.phys", "aaa");
    check_angles("examples/rotor.phys", "---aaa");
    check_angles("examples/twobody.phys", "----");
    check_angles("examples/massspring.phys", "-");
    printf("%s\n", failures ? "FAILED" : "ok");
    return failures ? 1 : 0;
}
