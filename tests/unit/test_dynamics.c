/* test_dynamics.c — the specialized vector field against the dense Eq. 6 of the CHNN paper
   (the full 2C x 2C system, solved with partial pivoting, and M built from Eq. 9 and
   inverted numerically, which also checks the closed-form inverse), and the Lagrangian
   form of Eq. 7 against the Hamiltonian one on the constraint manifold. */
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ad.h"
#include "check.h"
#include "dynamics.h"
#include "kernels.h"
#include "math/rng.h"
#include "sema.h"

/* Solves A x = b (n x n, row-major, destroyed) by Gaussian elimination with pivoting. */
static void dense_solve(double *A, double *b, int n) {
    for (int c = 0; c < n; c++) {
        int piv = c;
        for (int r = c + 1; r < n; r++)
            if (fabs(A[r * n + c]) > fabs(A[piv * n + c])) piv = r;
        for (int k = 0; k < n; k++) {
            double t = A[c * n + k];
            A[c * n + k] = A[piv * n + k];
            A[piv * n + k] = t;
        }
        double t = b[c];
        b[c] = b[piv];
        b[piv] = t;
        for (int r = c + 1; r < n; r++) {
            double f = A[r * n + c] / A[c * n + c];
            for (int k = c; k < n; k++) A[r * n + k] -= f * A[c * n + k];
            b[r] -= f * b[c];
        }
    }
    for (int r = n - 1; r >= 0; r--) {
        double s = b[r];
        for (int k = r + 1; k < n; k++) s -= A[r * n + k] * b[k];
        b[r] = s / A[r * n + r];
    }
}

/* The dense N x N mass matrix of Eq. 9 (per body m [[1 + sum l, -l^T], [-l, diag(l)]] on its points). */
static void dense_mass(const System *sys, double *M) {
    int d = sys->dim, N = sys->npoints * d;
    memset(M, 0, sizeof(double) * (size_t)(N * N));
    for (int bi = 0; bi < sys->nbodies; bi++) {
        const Body *b = &sys->bodies[bi];
        double m = b->mass, sum = 0;
        for (int i = 0; i < b->n; i++) sum += b->moments[i];
        for (int a = 0; a <= b->n; a++)
            for (int c = 0; c <= b->n; c++) {
                double v = a == 0 && c == 0 ? 1 + sum : a == 0 ? -b->moments[c - 1] : c == 0 ? -b->moments[a - 1]
                                                     : a == c  ? b->moments[a - 1]
                                                               : 0;
                for (int k = 0; k < d; k++) M[((b->first_point + a) * d + k) * N + (b->first_point + c) * d + k] = m * v;
            }
    }
}

static void check_example(const char *path) {
    Arena arena = {0};
    Diags d;
    diag_init(&d, stdout);
    SemaOptions opt = {.stdlib_dir = "stdlib", .require_system = true};
    System *sys = sema_check_file(&arena, &d, path, &opt);
    Kernels k;
    char err[256];
    if (sys && sys->nrotation_bodies > 0) { /* no CHNN embedding: test_physics checks these */
        arena_free(&arena);
        diag_free(&d);
        return;
    }
    if (!sys || !kernels_build(sys, &k, true, err, sizeof err)) {
        CHECK(false, "%s: %s", path, sys ? err : "does not check");
        arena_free(&arena);
        diag_free(&d);
        return;
    }
    int N = sys->npoints * sys->dim;
    IrFn *field = kernels_find(&k, "Field"), *accel = kernels_find(&k, "Accel"), *dphi = kernels_find(&k, "DPhi"),
         *phidot = kernels_find(&k, "PhiDot");
    IrFn *dphidot = ad_jacobian(phidot, "B"); /* rows: d(A v)/d(X, v) */
    int C = kernels_find(&k, "Phi")->noutputs, nm = dynamics_mass_params(sys), np = field->nparams;
    double *params = calloc((size_t)np + 1, sizeof(double));
    dynamics_fill_mass_params(sys, params);
    double *in = calloc((size_t)(3 * N) + 1, sizeof(double)), *out = calloc((size_t)(2 * N) + 1, sizeof(double));
    double *M = calloc((size_t)(N * N) + 1, sizeof(double)), *Minv = calloc((size_t)(N * N) + 1, sizeof(double));
    double *A = calloc((size_t)(C * N) + 1, sizeof(double)), *Bj = calloc((size_t)(C * 2 * N) + 1, sizeof(double));
    int Z = 2 * N, R = 2 * C;
    double *DPsi = calloc((size_t)(R * Z) + 1, sizeof(double)), *K = calloc((size_t)(R * R) + 1, sizeof(double));
    double *grad = calloc((size_t)Z + 1, sizeof(double)), *rhs = calloc((size_t)R + 1, sizeof(double)),
           *zdot = calloc((size_t)Z + 1, sizeof(double)), *tmp = calloc((size_t)(N * N) + 1, sizeof(double));
    dense_mass(sys, M);
    for (int j = 0; j < N; j++) { /* Minv column by column */
        memcpy(tmp, M, sizeof(double) * (size_t)(N * N));
        double *e = Minv + (size_t)j * N; /* stored transposed: symmetric anyway */
        memset(e, 0, sizeof(double) * (size_t)N);
        e[j] = 1;
        dense_solve(tmp, e, N);
    }
    PrtRng rng;
    prt_rng_seed(&rng, 99);
    double worst = 0;
    for (int trial = 0; trial < 3; trial++) {
        for (int i = 0; i < 3 * N; i++) in[i] = prt_rng_normal(&rng);
        for (int i = nm; i < np; i++) params[i] = 0.5 + prt_rng_uniform(&rng);
        ir_eval(field, in, params, out);
        /* dense Eq. 6 */
        const double *X = in, *P = in + N, *dV = in + 2 * N;
        double *v = tmp;
        for (int i = 0; i < N; i++) {
            v[i] = 0;
            for (int j = 0; j < N; j++) v[i] += Minv[i * N + j] * P[j];
        }
        ir_eval(dphi, X, params + nm, A);
        double *xv = calloc((size_t)Z + 1, sizeof(double));
        memcpy(xv, X, sizeof(double) * (size_t)N);
        memcpy(xv + N, v, sizeof(double) * (size_t)N);
        ir_eval(dphidot, xv, params + nm, Bj);
        free(xv);
        memset(DPsi, 0, sizeof(double) * (size_t)(R * Z));
        for (int r = 0; r < C; r++)
            for (int i = 0; i < N; i++) {
                DPsi[r * Z + i] = A[r * N + i];
                DPsi[(C + r) * Z + i] = Bj[r * 2 * N + i];
                double am = 0; /* (A M^-1)_ri */
                for (int j = 0; j < N; j++) am += A[r * N + j] * Minv[j * N + i];
                DPsi[(C + r) * Z + N + i] = am;
            }
        for (int i = 0; i < N; i++) grad[i] = dV[i], grad[N + i] = v[i];
        /* J = [[0, I], [-I, 0]]: J y = (y_p, -y_x); DPsi J DPsi^T and DPsi J grad */
        for (int r = 0; r < R; r++) {
            double s = 0;
            for (int i = 0; i < N; i++) s += DPsi[r * Z + i] * grad[N + i] - DPsi[r * Z + N + i] * grad[i];
            rhs[r] = s;
            for (int q = 0; q < R; q++) {
                double t = 0;
                for (int i = 0; i < N; i++) t += DPsi[r * Z + i] * DPsi[q * Z + N + i] - DPsi[r * Z + N + i] * DPsi[q * Z + i];
                K[r * R + q] = t;
            }
        }
        dense_solve(K, rhs, R); /* rhs = mu; lambda = -mu */
        for (int i = 0; i < Z; i++) {
            double s = grad[i];
            for (int r = 0; r < R; r++) s -= DPsi[r * Z + i] * rhs[r];
            zdot[i] = s;
        }
        for (int i = 0; i < N; i++) { /* J (grad + DPsi^T lambda) */
            double xd = zdot[N + i], pd = -zdot[i];
            double scale = 1 + fabs(xd) + fabs(pd);
            worst = fmax(worst, fmax(fabs(out[i] - xd), fabs(out[N + i] - pd)) / scale);
            CHECK(fabs(out[i] - xd) <= 1e-10 * scale && fabs(out[N + i] - pd) <= 1e-10 * scale,
                  "%s: Field differs from dense Eq. 6 at %d: Xdot %.15g vs %.15g, Pdot %.15g vs %.15g", path, i, out[i], xd,
                  out[N + i], pd);
        }
    }
    /* Rhs (X, P) is Field (X, P, gradV (X)), the folding of constants aside (to 1e-13) */
    IrFn *rhs_k = kernels_find(&k, "Rhs"), *gradv = kernels_find(&k, "gradV");
    CHECK(rhs_k && rhs_k->ninputs == 2 * N && rhs_k->noutputs == 2 * N, "%s: no Rhs kernel of (X, P)", path);
    for (int trial = 0; rhs_k && trial < 3; trial++) {
        for (int i = 0; i < 2 * N; i++) in[i] = prt_rng_normal(&rng);
        ir_eval(gradv, in, params, in + 2 * N);
        ir_eval(field, in, params, out);
        double *fused = calloc((size_t)(2 * N) + 1, sizeof(double));
        ir_eval(rhs_k, in, params, fused);
        for (int i = 0; i < 2 * N; i++)
            CHECK(fabs(fused[i] - out[i]) <= 1e-13 * (1 + fabs(out[i])), "%s: Rhs %d = %.17g, Field of gradV %.17g", path,
                  i, fused[i], out[i]);
        free(fused);
    }
    /* On the manifold's tangent space (A v = 0), Eq. 7 with F = -dV gives M^-1 Pdot of Eq. 6. */
    if (C < N) {
        ir_eval(dphi, in, params + nm, A);
        double *v = tmp;
        for (int i = 0; i < N; i++) v[i] = prt_rng_normal(&rng);
        for (int r = 0; r < C; r++) { /* Gram-Schmidt v away from the rows of A (with the M^-1 metric it is simpler to
                                         project in plain coordinates: we only need A v = 0) */
            double *ar = A + r * N, aa = 0, av = 0;
            for (int q = 0; q < r; q++) {
                double *aq = A + q * N, pq = 0, qq = 0;
                for (int i = 0; i < N; i++) pq += ar[i] * aq[i], qq += aq[i] * aq[i];
                for (int i = 0; i < N; i++) ar[i] -= pq / qq * aq[i];
            }
            for (int i = 0; i < N; i++) aa += ar[i] * ar[i], av += ar[i] * v[i];
            for (int i = 0; i < N; i++) v[i] -= av / aa * ar[i];
        }
        double *P = in + N, *acc = calloc((size_t)N + 1, sizeof(double)), *ain = calloc((size_t)(3 * N) + 1, sizeof(double));
        for (int i = 0; i < N; i++) {
            P[i] = 0;
            for (int j = 0; j < N; j++) P[i] += M[i * N + j] * v[j];
        }
        ir_eval(field, in, params, out);
        memcpy(ain, in, sizeof(double) * (size_t)N);
        memcpy(ain + N, v, sizeof(double) * (size_t)N);
        for (int i = 0; i < N; i++) ain[2 * N + i] = -in[2 * N + i];
        ir_eval(accel, ain, params, acc);
        for (int i = 0; i < N; i++) {
            double want = 0;
            for (int j = 0; j < N; j++) want += Minv[i * N + j] * out[N + j];
            CHECK(fabs(acc[i] - want) <= 1e-9 * (1 + fabs(want)), "%s: Eq. 7 Xddot %d = %.15g, M^-1 Pdot of Eq. 6 = %.15g",
                  path, i, acc[i], want);
            CHECK(fabs(out[i] - v[i]) <= 1e-9 * (1 + fabs(v[i])), "%s: Xdot %d = %.15g on the manifold, v = %.15g", path, i,
                  out[i], v[i]);
        }
        free(acc), free(ain);
    }
    /* the closed-form mass kernels against the dense Eq. 9 matrix and its numerical inverse */
    IrFn *massv = kernels_find(&k, "MassV"), *minvp = kernels_find(&k, "MinvP");
    for (int i = 0; i < N; i++) in[i] = prt_rng_normal(&rng);
    ir_eval(massv, in, params, out);
    ir_eval(minvp, in, params, out + N);
    for (int i = 0; i < N; i++) {
        double mv = 0, miv = 0;
        for (int j = 0; j < N; j++) mv += M[i * N + j] * in[j], miv += Minv[i * N + j] * in[j];
        CHECK(fabs(out[i] - mv) <= 1e-12 * (1 + fabs(mv)), "%s: (M v)%d = %.15g, dense %.15g", path, i, out[i], mv);
        CHECK(fabs(out[N + i] - miv) <= 1e-10 * (1 + fabs(miv)), "%s: (M^-1 p)%d = %.15g, dense %.15g", path, i,
              out[N + i], miv);
    }
    /* H = P . M^-1 P / 2 + V against the dense M^-1 */
    {
        IrFn *H = kernels_find(&k, "H"), *Vk = kernels_find(&k, "V");
        double hv, vv, kin = 0;
        for (int i = 0; i < 2 * N; i++) in[i] = prt_rng_normal(&rng);
        ir_eval(H, in, params, &hv);
        ir_eval(Vk, in, params, &vv);
        for (int i = 0; i < N; i++)
            for (int j = 0; j < N; j++) kin += 0.5 * in[N + i] * Minv[i * N + j] * in[N + j];
        CHECK(fabs(hv - (vv + kin)) <= 1e-10 * (1 + fabs(hv)), "%s: H = %.15g, V + P M^-1 P / 2 = %.15g", path, hv,
              vv + kin);
    }
    printf("%s: Field %d instructions, Accel %d; worst relative difference from dense Eq. 6: %.2e\n", path,
           field->ninsts, accel->ninsts, worst);
    ir_free(dphidot);
    free(params), free(in), free(out), free(M), free(Minv), free(A), free(Bj), free(DPsi), free(K), free(grad), free(rhs),
        free(zdot), free(tmp);
    kernels_free(&k);
    arena_free(&arena);
    diag_free(&d);
}

int main(void) {
    DIR *dir = opendir("examples");
    if (!dir) return 1;
    struct dirent *e;
    while ((e = readdir(dir))) {
        size_t len = strlen(e->d_name);
        if (len < 6 || strcmp(e->d_name + len - 5, ".phys")) continue;
        char path[512];
        snprintf(path, sizeof path, "examples/%s", e->d_name);
        check_example(path);
    }
    closedir(dir);
    printf("%s: %s\n", __FILE__, failures ? "FAILED" : "ok");
    return failures != 0;
}
