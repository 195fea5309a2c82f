/* lie_group.c — the integrators of lie_group.h. States are SoA (z[i * n + b]); a `state so3`
   body's R and Pi are gathered per state into small arrays, moved, and scattered back. */
#include "lie_group.h"

#include <math.h>
#include <string.h>

/* ---- SO(3) ---- */

static void matmul3(const double *A, const double *B, double *C) {
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) C[i * 3 + j] = A[i * 3] * B[j] + A[i * 3 + 1] * B[3 + j] + A[i * 3 + 2] * B[6 + j];
}

void prt_so3_exp(const double w[3], double E[9]) {
    /* exp(hat(w)) = I + a1 hat(w) + a2 hat(w)^2 with a1 = sin t / t, a2 = (1 - cos t) / t^2
       = 2 sin^2(t/2) / t^2 (no cancellation), t = |w|; hat(w)^2 = w w^T - t^2 I */
    double t2 = w[0] * w[0] + w[1] * w[1] + w[2] * w[2], a1, a2;
    if (t2 < 1e-8) { /* t < 1e-4: the series to t^4, whose next terms are below 1e-24 */
        a1 = 1 - t2 / 6 * (1 - t2 / 20);
        a2 = 0.5 - t2 / 24 * (1 - t2 / 30);
    } else {
        double t = sqrt(t2), s = sin(0.5 * t) / t;
        a1 = sin(t) / t;
        a2 = 2 * s * s;
    }
    double c = 1 - a2 * t2; /* cos t */
    E[0] = c + a2 * w[0] * w[0], E[1] = -a1 * w[2] + a2 * w[0] * w[1], E[2] = a1 * w[1] + a2 * w[0] * w[2];
    E[3] = a1 * w[2] + a2 * w[1] * w[0], E[4] = c + a2 * w[1] * w[1], E[5] = -a1 * w[0] + a2 * w[1] * w[2];
    E[6] = -a1 * w[1] + a2 * w[2] * w[0], E[7] = a1 * w[0] + a2 * w[2] * w[1], E[8] = c + a2 * w[2] * w[2];
}

void prt_so3_kinetic_flow(double R[9], double Pi[3], const double J[3], double h) {
    /* Pi' = Pi x Omega with Omega = Pi/J1 + theta e_z keeps Pi_z, so Pi turns about z at the
       constant rate -theta; then R(t) = R exp(t hat(Pi)/J1) R_z(theta t) solves R' = R hat(Omega(t)). */
    double w[3] = {Pi[0] * h / J[0], Pi[1] * h / J[0], Pi[2] * h / J[0]}, E[9], T[9];
    double theta = (1 / J[2] - 1 / J[0]) * Pi[2] * h, c = cos(theta), s = sin(theta);
    double Z[9] = {c, -s, 0, s, c, 0, 0, 0, 1};
    prt_so3_exp(w, E);
    matmul3(R, E, T);
    matmul3(T, Z, R);
    double x = c * Pi[0] + s * Pi[1], y = -s * Pi[0] + c * Pi[1];
    Pi[0] = x, Pi[1] = y;
}

void prt_so3_asym_flow(double R[9], double Pi[3], const double J[3], double h) {
    /* Omega = delta Pi_y e_y with Pi_y constant: R' = R hat(Omega) turns R on the right (the
       paper's B48 prints R_y(.) R), and Pi' = Pi x Omega turns Pi by R_y(phi)^T */
    double phi = (1 / J[1] - 1 / J[0]) * Pi[1] * h, c = cos(phi), s = sin(phi);
    double Y[9] = {c, 0, s, 0, 1, 0, -s, 0, c}, T[9];
    matmul3(R, Y, T);
    memcpy(R, T, sizeof T);
    double x = c * Pi[0] - s * Pi[2], z = s * Pi[0] + c * Pi[2];
    Pi[0] = x, Pi[2] = z;
}

void prt_so3_torque(const double R[9], const double G[9], double tau[3]) {
    double M[9]; /* M = R^T G; tau_k = M_ij - M_ji for (i, j, k) cyclic */
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) M[i * 3 + j] = R[i] * G[j] + R[3 + i] * G[3 + j] + R[6 + i] * G[6 + j];
    tau[0] = M[5] - M[7], tau[1] = M[6] - M[2], tau[2] = M[1] - M[3];
}

void prt_so3_reorthonormalize(double R[9]) {
    /* R += R (I - R^T R) / 2: one Newton step towards the polar factor, which takes an error
       e of R^T R - I to O(e^2); D is formed with fused multiply-adds so that it holds the
       error itself rather than the rounding of a sum near 1 */
    double D[9], T[9];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            D[i * 3 + j] = (i == j) - fma(R[i], R[j], fma(R[3 + i], R[3 + j], R[6 + i] * R[6 + j]));
    matmul3(R, D, T);
    for (int i = 0; i < 9; i++) R[i] += 0.5 * T[i];
}

void prt_so3_moments(const PrtSystem *s, const PrtSo3Body *b, double J[3]) {
    const double *mp = s->params + b->mass;
    for (int i = 0; i < 3; i++) J[i] = mp[0] * (mp[1 + (i + 1) % 3] + mp[1 + (i + 2) % 3]);
}

/* ---- their vector-Jacobian products (training backpropagates through the flows) ---- */

static void matmul3_tn(const double *A, const double *B, double *C) { /* C = A^T B */
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) C[i * 3 + j] = A[i] * B[j] + A[3 + i] * B[3 + j] + A[6 + i] * B[6 + j];
}
static void matmul3_nt(const double *A, const double *B, double *C) { /* C = A B^T */
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) C[i * 3 + j] = A[i * 3] * B[j * 3] + A[i * 3 + 1] * B[j * 3 + 1] + A[i * 3 + 2] * B[j * 3 + 2];
}

void prt_so3_exp_vjp(const double w[3], const double Eb[9], double wb[3]) {
    /* E = cos t I + a1 hat(w) + a2 w w^T: dE/dw_k = -a1 w_k I + b1 w_k hat(w) + a1 dhat(w)/dw_k
       + b2 w_k w w^T + a2 (e_k w^T + w e_k^T), with b1 = a1'/t, b2 = a2'/t (series near 0) */
    double t2 = w[0] * w[0] + w[1] * w[1] + w[2] * w[2], a1, a2, b1, b2;
    if (t2 < 2.5e-3) { /* t < 0.05: to t^6, the next terms below 1e-16 */
        a1 = 1 - t2 / 6 * (1 - t2 / 20 * (1 - t2 / 42));
        a2 = 0.5 - t2 / 24 * (1 - t2 / 30 * (1 - t2 / 56));
        b1 = -1.0 / 3 + t2 / 30 - t2 * t2 / 840 + t2 * t2 * t2 / 45360;
        b2 = -1.0 / 12 + t2 / 180 - t2 * t2 / 6720 + t2 * t2 * t2 / 453600;
    } else {
        double t = sqrt(t2), sn = sin(t), cs = cos(t), hs = sin(0.5 * t) / t;
        a1 = sn / t, a2 = 2 * hs * hs;
        b1 = (t * cs - sn) / (t2 * t);
        b2 = (t * sn - 4 * sin(0.5 * t) * sin(0.5 * t)) / (t2 * t2);
    }
    double tr = Eb[0] + Eb[4] + Eb[8];
    double EW = -Eb[1] * w[2] + Eb[2] * w[1] + Eb[3] * w[2] - Eb[5] * w[0] - Eb[6] * w[1] + Eb[7] * w[0]; /* <Eb, hat(w)> */
    double skew[3] = {Eb[7] - Eb[5], Eb[2] - Eb[6], Eb[3] - Eb[1]};
    double Ew[3], ETw[3], wEw = 0;
    for (int i = 0; i < 3; i++) {
        Ew[i] = Eb[i * 3] * w[0] + Eb[i * 3 + 1] * w[1] + Eb[i * 3 + 2] * w[2];
        ETw[i] = Eb[i] * w[0] + Eb[3 + i] * w[1] + Eb[6 + i] * w[2];
        wEw += w[i] * Ew[i];
    }
    for (int k = 0; k < 3; k++)
        wb[k] += -a1 * w[k] * tr + b1 * w[k] * EW + a1 * skew[k] + b2 * w[k] * wEw + a2 * (Ew[k] + ETw[k]);
}

void prt_so3_kinetic_flow_vjp(const double R[9], const double Pi[3], const double J[3], double h, const double Rb_out[9],
                              const double Pib_out[3], double Rb[9], double Pib[3]) {
    /* R' = R E Z, Pi' = Z^T Pi, E = exp(hat(Pi h / J1)), Z = R_z(theta), theta = (1/J3 - 1/J1) Pi_z h */
    double w[3] = {Pi[0] * h / J[0], Pi[1] * h / J[0], Pi[2] * h / J[0]}, E[9], A[9], Ab[9], Eb[9], Zb[9], T[9];
    double c3 = (1 / J[2] - 1 / J[0]) * h, theta = c3 * Pi[2], c = cos(theta), s = sin(theta);
    double Z[9] = {c, -s, 0, s, c, 0, 0, 0, 1};
    prt_so3_exp(w, E);
    matmul3(E, Z, A);
    matmul3_nt(Rb_out, A, T); /* Rb += Rb' A^T */
    for (int i = 0; i < 9; i++) Rb[i] += T[i];
    matmul3_tn(R, Rb_out, Ab); /* Ab = R^T Rb' */
    matmul3_nt(Ab, Z, Eb);     /* Eb = Ab Z^T */
    matmul3_tn(E, Ab, Zb);     /* Zb = E^T Ab */
    for (int i = 0; i < 3; i++) /* Pi' = Z^T Pi: Zb += Pi Pib'^T, Pib += Z Pib' */
        for (int j = 0; j < 3; j++) Zb[i * 3 + j] += Pi[i] * Pib_out[j], Pib[i] += Z[i * 3 + j] * Pib_out[j];
    double thb = -s * Zb[0] - c * Zb[1] + c * Zb[3] - s * Zb[4];
    Pib[2] += c3 * thb;
    double wb[3] = {0, 0, 0};
    prt_so3_exp_vjp(w, Eb, wb);
    for (int k = 0; k < 3; k++) Pib[k] += h / J[0] * wb[k];
}

void prt_so3_asym_flow_vjp(const double R[9], const double Pi[3], const double J[3], double h, const double Rb_out[9],
                           const double Pib_out[3], double Rb[9], double Pib[3]) {
    /* R' = R Y, Pi' = Y^T Pi, Y = R_y(phi), phi = (1/J2 - 1/J1) Pi_y h */
    double d = (1 / J[1] - 1 / J[0]) * h, phi = d * Pi[1], c = cos(phi), s = sin(phi);
    double Y[9] = {c, 0, s, 0, 1, 0, -s, 0, c}, Yb[9], T[9];
    matmul3_nt(Rb_out, Y, T);
    for (int i = 0; i < 9; i++) Rb[i] += T[i];
    matmul3_tn(R, Rb_out, Yb);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) Yb[i * 3 + j] += Pi[i] * Pib_out[j], Pib[i] += Y[i * 3 + j] * Pib_out[j];
    double phib = -s * Yb[0] + c * Yb[2] - c * Yb[6] - s * Yb[8];
    Pib[1] += d * phib;
}

void prt_so3_torque_vjp(const double R[9], const double G[9], const double taub[3], double Rb[9], double Gb[9]) {
    /* tau_k = M_ij - M_ji, M = R^T G: Mb = -hat(taub); Rb += G Mb^T, Gb += R Mb */
    double Mb[9] = {0, taub[2], -taub[1], -taub[2], 0, taub[0], taub[1], -taub[0], 0}, T[9];
    matmul3_nt(G, Mb, T);
    for (int i = 0; i < 9; i++) Rb[i] += T[i];
    matmul3(R, Mb, T);
    for (int i = 0; i < 9; i++) Gb[i] += T[i];
}

void prt_so3_reorthonormalize_vjp(const double R[9], const double Rb_out[9], double Rb[9]) {
    /* R' = 3/2 R - 1/2 R S, S = R^T R: Rb += 3/2 Rb' - 1/2 (Rb' S + R (A + A^T)), A = R^T Rb' */
    double S[9], A[9], T[9], U[9];
    matmul3_tn(R, R, S);
    matmul3_tn(R, Rb_out, A);
    matmul3(Rb_out, S, T);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) U[i * 3 + j] = A[i * 3 + j] + A[j * 3 + i];
    double V[9];
    matmul3(R, U, V);
    for (int i = 0; i < 9; i++) Rb[i] += 1.5 * Rb_out[i] - 0.5 * (T[i] + V[i]);
}

#define gather prt_soa_gather
#define scatter prt_soa_scatter

void prt_so3_gram_error(const double R[9], double E[9]) {
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) E[3 * i + j] = R[i] * R[j] + R[3 + i] * R[3 + j] + R[6 + i] * R[6 + j] - (i == j);
}

double prt_so3_orthogonality(const PrtSystem *s, long n, const double *z) {
    double worst = 0;
    for (int k = 0; k < s->nso3; k++)
        for (long b = 0; b < n; b++) {
            double R[9], E[9];
            gather(z, n, s->so3[k].x + 3, 9, b, R);
            prt_so3_gram_error(R, E);
            for (int i = 0; i < 9; i++) worst = fmax(worst, fabs(E[i]));
        }
    return worst;
}

/* Rounding leaves every product of rotations off SO(3) by about 1e-16, with a bias (the
   computed exp(hat(w)) shrinks by 2e-17 on average): over 1e5 Lie T2 steps of a free top,
   which multiplies R six times a step, R^T R - I reached 1.6e-11. A Newton step on each body's
   R after each step of the Lie-group methods keeps it at rounding; it moves R by as little. */
void prt_lie_reorthonormalize(const PrtSystem *s, long n, double *z) {
    for (int k = 0; k < s->nso3; k++)
        for (long b = 0; b < n; b++) {
            double R[9];
            gather(z, n, s->so3[k].x + 3, 9, b, R);
            prt_so3_reorthonormalize(R);
            scatter(z, n, s->so3[k].x + 3, 9, b, R);
        }
}

/* ---- the sub-flows of Lie T2 on a whole batch ---- */

long prt_lie_cartesian(const PrtSystem *s) { return s->N - 12L * s->nso3; }

/* exact flow of the kinetic energy with J_sym: X += h M^-1 P for the points, B44 per body */
/* Applies a per-body flow of (R, Pi) (the kinetic or the asymmetric one) to every so3 body
   of the n states of z. */
static void flow_bodies(const PrtSystem *s, long n, double h, double *z,
                        void (*flow)(double R[9], double Pi[3], const double J[3], double h)) {
    double *X = z, *P = z + (long)s->N * n;
    for (int k = 0; k < s->nso3; k++) {
        const PrtSo3Body *body = &s->so3[k];
        double J[3];
        prt_so3_moments(s, body, J);
        for (long b = 0; b < n; b++) {
            double R[9], Pi[3];
            gather(X, n, body->x + 3, 9, b, R);
            gather(P, n, body->p + 3, 3, b, Pi);
            flow(R, Pi, J, h);
            scatter(X, n, body->x + 3, 9, b, R);
            scatter(P, n, body->p + 3, 3, b, Pi);
        }
    }
}

void prt_lie_kinetic(PrtSystem *s, long n, double h, double *z, double *v) {
    double *X = z, *P = z + (long)s->N * n;
    s->MinvP(n, P, s->params, v);
    for (long i = 0; i < prt_lie_cartesian(s) * n; i++) X[i] += h * v[i];
    for (int k = 0; k < s->nso3; k++) /* q += h p / m */
        for (int c = 0; c < 3; c++)
            for (long b = 0; b < n; b++) X[(s->so3[k].x + c) * n + b] += h * v[(s->so3[k].p + c) * n + b];
    flow_bodies(s, n, h, z, prt_so3_kinetic_flow);
}

/* exact flow of V: P -= h dV/dX for the points and p, Pi += h tau (B46) */
static void kick(PrtSystem *s, long n, double h, double *z, double *G) {
    s->gradV(n, z, s->params, G);
    prt_lie_kick(s, n, h, z, G);
}

void prt_lie_kick(const PrtSystem *s, long n, double h, double *z, const double *G) {
    double *X = z, *P = z + (long)s->N * n;
    for (long i = 0; i < prt_lie_cartesian(s) * n; i++) P[i] -= h * G[i];
    for (int k = 0; k < s->nso3; k++) {
        const PrtSo3Body *body = &s->so3[k];
        for (int c = 0; c < 3; c++)
            for (long b = 0; b < n; b++) P[(body->p + c) * n + b] -= h * G[(body->x + c) * n + b];
        for (long b = 0; b < n; b++) {
            double R[9], GR[9], tau[3];
            gather(X, n, body->x + 3, 9, b, R);
            gather(G, n, body->x + 3, 9, b, GR);
            prt_so3_torque(R, GR, tau);
            for (int c = 0; c < 3; c++) P[(body->p + 3 + c) * n + b] += h * tau[c];
        }
    }
}

void prt_lie_asym(const PrtSystem *s, long n, double h, double *z) { flow_bodies(s, n, h, z, prt_so3_asym_flow); }

/* ---- the commutator-free Runge-Kutta methods ---- */

/* The body angular velocities Omega = J^-1 Pi of the states z, 3 rows per body, into W. */
static void omegas(PrtSystem *s, long n, const double *z, double *W, double *v) {
    s->MinvP(n, z + (long)s->N * n, s->params, v);
    for (int k = 0; k < s->nso3; k++) memcpy(W + 3L * k * n, v + (long)(s->so3[k].p + 3) * n, sizeof(double) * 3 * n);
}

/* dst = src + h sum_i c_i k_i on every row, then each body's R of dst = R of base times
   exp(h hat(sum_i d_i W_i)). */
static void stage(PrtSystem *s, long n, double h, double *dst, const double *src, int nk, const double *const *K,
                  const double *c, const double *base, int nw, const double *const *W, const double *d) {
    long len = (long)(s->N + s->NP) * n;
    for (long i = 0; i < len; i++) {
        double acc = 0;
        for (int j = 0; j < nk; j++) acc += c[j] * K[j][i];
        dst[i] = src[i] + h * acc;
    }
    for (int k = 0; k < s->nso3; k++) {
        int r = s->so3[k].x + 3;
        for (long b = 0; b < n; b++) {
            double w[3] = {0, 0, 0}, E[9], R[9], out[9];
            for (int j = 0; j < nw; j++)
                for (int a = 0; a < 3; a++) w[a] += h * d[j] * W[j][(3L * k + a) * n + b];
            prt_so3_exp(w, E);
            gather(base, n, r, 9, b, R);
            matmul3(R, E, out);
            scatter(dst, n, r, 9, b, out);
        }
    }
}

int prt_lie_method(int id) {
    return id == PRT_INT_LIET2 ? PRT_LIE_T2 : id == PRT_INT_LIE_RK2 ? PRT_LIE_RK2 : id == PRT_INT_LIE_RK4 ? PRT_LIE_RK4
         : id == PRT_INT_VERLET ? PRT_LIE_VERLET : -1;
}

long prt_lie_work_len(const PrtSystem *s, long n) {
    long len = (long)(s->N + s->NP) * n;
    return 8 * len + 12L * s->nso3 * n + 1;
}

void prt_lie_step(PrtSystem *s, PrtLieMethod m, long n, double h, double *z, double *work) {
    long N = s->N, len = (N + s->NP) * n, nw = 3L * s->nso3 * n;
    double *k1 = work, *k2 = k1 + len, *k3 = k2 + len, *k4 = k3 + len, *z0 = k4 + len, *z2 = z0 + len, *z3 = z2 + len;
    double *W1 = z3 + len, *W2 = W1 + nw, *W3 = W2 + nw, *W4 = W3 + nw, *v = W4 + nw; /* v: NP x n; or N x n as G */
    switch (m) {
    case PRT_LIE_T2: /* B50: the system's forces (B49) between the two asym halves */
        prt_lie_kinetic(s, n, h / 2, z, v);
        kick(s, n, h / 2, z, v);
        prt_lie_asym(s, n, h / 2, z);
        if (s->Force) {
            double *P = z + N * n;
            s->Force(n, z, s->params, v);
            for (long i = 0; i < (long)s->NP * n; i++) P[i] += h * v[i];
        }
        prt_lie_asym(s, n, h / 2, z);
        kick(s, n, h / 2, z, v);
        prt_lie_kinetic(s, n, h / 2, z, v);
        prt_lie_reorthonormalize(s, n, z);
        return;
    case PRT_LIE_VERLET: /* D55-D57 with the half steps h/2: drift, kick, drift on the flat embedding */
        prt_hamiltonian_rhs(s, n, z, k1);
        for (long i = 0; i < N * n; i++) z[i] += h / 2 * k1[i];
        prt_hamiltonian_rhs(s, n, z, k1);
        for (long i = N * n; i < len; i++) z[i] += h * k1[i];
        prt_hamiltonian_rhs(s, n, z, k1);
        for (long i = 0; i < N * n; i++) z[i] += h / 2 * k1[i];
        return;
    case PRT_LIE_RK2: { /* D58-D59: the midpoint rule, R by exp(h/2 W1) then exp(h W2) from R0 */
        memcpy(z0, z, sizeof(double) * (size_t)len);
        prt_hamiltonian_rhs(s, n, z0, k1);
        omegas(s, n, z0, W1, v);
        stage(s, n, h, z2, z0, 1, (const double *[]){k1}, (double[]){0.5}, z0, 1, (const double *[]){W1}, (double[]){0.5});
        prt_hamiltonian_rhs(s, n, z2, k2);
        omegas(s, n, z2, W2, v);
        stage(s, n, h, z, z0, 1, (const double *[]){k2}, (double[]){1}, z0, 1, (const double *[]){W2}, (double[]){1});
        prt_lie_reorthonormalize(s, n, z);
        return;
    }
    case PRT_LIE_RK4: { /* D60-D63 (Celledoni, Marthinsen & Owren 2003, CF4) */
        memcpy(z0, z, sizeof(double) * (size_t)len);
        prt_hamiltonian_rhs(s, n, z0, k1);
        omegas(s, n, z0, W1, v);
        stage(s, n, h, z2, z0, 1, (const double *[]){k1}, (double[]){0.5}, z0, 1, (const double *[]){W1}, (double[]){0.5});
        prt_hamiltonian_rhs(s, n, z2, k2);
        omegas(s, n, z2, W2, v);
        stage(s, n, h, z3, z0, 1, (const double *[]){k2}, (double[]){0.5}, z0, 1, (const double *[]){W2}, (double[]){0.5});
        prt_hamiltonian_rhs(s, n, z3, k3);
        omegas(s, n, z3, W3, v);
        /* the fourth stage turns the second stage's R: exp(h W3 - h/2 W1) */
        stage(s, n, h, z, z0, 1, (const double *[]){k3}, (double[]){1}, z2, 2, (const double *[]){W3, W1},
              (double[]){1, -0.5});
        prt_hamiltonian_rhs(s, n, z, k4);
        omegas(s, n, z, W4, v);
        /* R(h/2) = R0 exp(h/12 (3 W1 + 2 W2 + 2 W3 - W4)), then R(h) = R(h/2) exp(h/12 (-W1 + 2 W2 + 2 W3 + 3 W4)) */
        const double *Ws[] = {W1, W2, W3, W4};
        stage(s, n, h, z2, z0, 4, (const double *[]){k1, k2, k3, k4}, (double[]){1.0 / 6, 1.0 / 3, 1.0 / 3, 1.0 / 6}, z0,
              4, Ws, (double[]){3.0 / 12, 2.0 / 12, 2.0 / 12, -1.0 / 12});
        stage(s, n, h, z, z2, 0, NULL, NULL, z2, 4, Ws, (double[]){-1.0 / 12, 2.0 / 12, 2.0 / 12, 3.0 / 12});
        prt_lie_reorthonormalize(s, n, z);
        return;
    }
    }
}

/* Newton's iteration for the polar factor: Q <- (Q + Q^-T) / 2, Q^-T the cofactors / det. */
bool prt_so3_nearest_rotation(const double A[9], double Q[9]) {
    memcpy(Q, A, sizeof(double) * 9);
    for (int it = 0; it < 60; it++) {
        double c[9] = {Q[4] * Q[8] - Q[5] * Q[7], Q[5] * Q[6] - Q[3] * Q[8], Q[3] * Q[7] - Q[4] * Q[6],
                       Q[2] * Q[7] - Q[1] * Q[8], Q[0] * Q[8] - Q[2] * Q[6], Q[1] * Q[6] - Q[0] * Q[7],
                       Q[1] * Q[5] - Q[2] * Q[4], Q[2] * Q[3] - Q[0] * Q[5], Q[0] * Q[4] - Q[1] * Q[3]}; /* cofactors */
        double det = Q[0] * c[0] + Q[1] * c[1] + Q[2] * c[2], change = 0;
        if (!(fabs(det) > 1e-300) || !isfinite(det)) return false;
        for (int i = 0; i < 9; i++) { /* Q^-T = cofactor matrix / det */
            double q = (Q[i] + c[i] / det) / 2;
            change = fmax(change, fabs(q - Q[i]));
            Q[i] = q;
        }
        if (change < 1e-15) break;
    }
    return true;
}
