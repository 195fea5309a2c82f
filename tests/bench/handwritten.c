/* handwritten.c — the Hamiltonian vector field of CHNN Eq. 6 written by hand for two
   systems, as the yardstick for physc's JIT-compiled Field kernel: what a careful engineer
   would write for that one system, in the block form at the top of compiler/dynamics.c
   (A = DPhi, v = M^-1 p, B = d(A v)/dX, G = A M^-1 A^T, S = B M^-1 A^T - A M^-1 B^T,
   mu2 = G^-1 A v, mu1 = G^-1 (S mu2 - B v + A M^-1 dV), Xdot = v - M^-1 A^T mu2,
   Pdot = -dV + A^T mu1 + B^T mu2), with the sparsity of A, B, G and S worked out on paper,
   G factored as L D L^T (no square roots) in an order that makes no fill-in, one division
   per pivot, and everything that depends only on the masses computed once per call.

   Two drivers share the per-state math (handwritten_state.h):
     hw_*_rhs       one state at a time in plain C: what -O2 makes of it (GCC 12 at -O2 does
                    not vectorize the batch loop; it packs a little within a state);
     hw_*_rhs_simd  8 states at a time, one per lane of a GCC vector of doubles (AVX-512 under
                    -march=native on this machine): the same code vectorized across the batch
                    as the JIT does, which is the fair yardstick for its SIMD loop.
   Built with -O2 -march=native (its own rule in the Makefile), no fast-math: the IEEE
   semantics of the JIT (-std=c17 means -ffp-contract=off: no FMA contraction).

   The constraints are |x_i - x_j|^2 - l^2 (|x_1|^2 - l^2 for a tether) and linear joints,
   so A is made of the relative positions e = x_i - x_j, B of the relative velocities
   u = v_i - v_j in the same places, and the lengths never enter the field.

   3-pendulum: 3 point masses in 2-D; row 0 the tether of bob 1, rows 1, 2 the links.
   With e_0 = x_1, e_r = x_r - x_{r+1} (u likewise), row r of A is +2 e_r at its first point
   and -2 e_r at its second, B the same with u; M^-1 = diag(1/m). Then
     G_rs = P_rs e_r . e_s,  S_rs = P_rs (u_r . e_s - e_r . u_s),  P_rs = 4 sum_a sigma_r(a) sigma_s(a) / m_a
   (sigma_r(a) = +1 / -1 at a row's first / second point): G is tridiagonal.

   Gyroscope: one rigid3 body as 4 points in 3-D (centre x0, axis points x1..x3), 6 rigidity
   rows |x_i - x_j|^2 - l^2 for the pairs (0,1) (0,2) (0,3) (1,2) (1,3) (2,3), then the ball
   joint tip = (1 - c) x0 + c x3 = 0 (3 rows, c = the contact point's body-frame z), gravity on
   the centre's z. Per coordinate M^-1 = (1/m) (1 1^T + diag(0, 1/lambda_1..3)) (Eq. 9): a
   rigidity row sums to zero, so M^-1 A_r^T is A_r times il_a = 1/(m lambda_a) (nothing at the
   centre); for joint row k it is w_a e_k with w_0 = w_1 = w_2 = 1/m, w_3 = 1/m + c il_3. So
     G_rs = P_rs e_r . e_s, P_rs = 4 sum_{a>0} il_a sigma_r(a) sigma_s(a)   (rigid r, s)
     G_{r, joint k} = h e_r[k] for the rows through x3 (r = 2, 4, 5), h = -2 c il_3
     G_{joint k, joint l} = gj delta_kl, gj = 1/m + c^2 il_3
   and S has the same pattern with P_rs (u_r . e_s - e_r . u_s) and +-h u_r[k]. The joint
   block is diagonal, so it is eliminated first (Schur complement on rows 2, 4, 5); the
   remaining 6 x 6 has zeros at (0,1) (0,2) (1,2) (0,5) (1,4) (2,3), and L D L^T in the
   order 0..5 fills none of them. */
#include <string.h>

#include "bench.h"

#define GRAV 9.81
#define LANES 8
typedef double vdouble __attribute__((vector_size(LANES * sizeof(double))));

/* examples/gyroscope.phys: attach = [0, 0, -0.2217285] (body frame, from the centre) */
static const double GYRO_C = -0.2217285;

typedef struct Pend3 {
    double i0, i1, i2, P00, P11, P22, P01, P12, mg0, mg1, mg2;
} Pend3;

static void pend3_consts(const double *params, Pend3 *k) {
    k->i0 = 1 / params[0], k->i1 = 1 / params[1], k->i2 = 1 / params[2];
    k->P00 = 4 * k->i0, k->P11 = 4 * (k->i0 + k->i1), k->P22 = 4 * (k->i1 + k->i2);
    k->P01 = 4 * k->i0, k->P12 = -4 * k->i1;
    k->mg0 = params[0] * GRAV, k->mg1 = params[1] * GRAV, k->mg2 = params[2] * GRAV;
}

typedef struct Gyro {
    double c, im, il[4], w3, mg, g_joint;
    double Pd[6], P03, P04, P13, P15, P24, P25, P34, P35, P45;
    double h, igj, h_igj, hh;
} Gyro;

static void gyro_consts(const double *params, Gyro *k) {
    double c = GYRO_C, m = params[0], im = 1 / m;
    double il1 = im / params[1], il2 = im / params[2], il3 = im / params[3];
    k->c = c, k->im = im, k->il[0] = 0, k->il[1] = il1, k->il[2] = il2, k->il[3] = il3;
    k->w3 = im + c * il3;
    k->mg = m * GRAV;
    k->g_joint = im * k->mg; /* A M^-1 dV on the joint's z row */
    k->Pd[0] = 4 * il1, k->Pd[1] = 4 * il2, k->Pd[2] = 4 * il3;
    k->Pd[3] = 4 * (il1 + il2), k->Pd[4] = 4 * (il1 + il3), k->Pd[5] = 4 * (il2 + il3);
    k->P03 = -4 * il1, k->P04 = -4 * il1, k->P13 = 4 * il2, k->P15 = -4 * il2, k->P24 = 4 * il3;
    k->P25 = 4 * il3, k->P34 = 4 * il1, k->P35 = -4 * il2, k->P45 = 4 * il3;
    k->h = -2 * c * il3;
    k->igj = 1 / (im + c * c * il3);
    k->h_igj = k->h * k->igj;
    k->hh = k->h * k->h * k->igj;
}

static inline vdouble vload(const double *p) {
    vdouble x;
    memcpy(&x, p, sizeof x); /* an unaligned vector load */
    return x;
}
static inline void vstore(double *p, vdouble x) { memcpy(p, &x, sizeof x); }

#define REAL double
#define SFX(name) name##_1
#define LD(i) (z[(i) * n + b])
#define ST(i, x) (zdot[(i) * n + b] = (x))
#include "handwritten_state.h"
#undef REAL
#undef SFX
#undef LD
#undef ST
#define REAL vdouble
#define SFX(name) name##_v
#define LD(i) vload(z + (i) * n + b)
#define ST(i, x) vstore(zdot + (i) * n + b, (x))
#include "handwritten_state.h"
#undef REAL
#undef SFX
#undef LD
#undef ST

void hw_pendulum3_rhs(long n, const double *restrict z, const double *restrict params, double *restrict zdot) {
    Pend3 k;
    pend3_consts(params, &k);
    for (long b = 0; b < n; b++) pend3_state_1(&k, z, zdot, n, b);
}

void hw_pendulum3_rhs_simd(long n, const double *restrict z, const double *restrict params, double *restrict zdot) {
    Pend3 k;
    pend3_consts(params, &k);
    long b = 0;
    for (; b + LANES <= n; b += LANES) pend3_state_v(&k, z, zdot, n, b);
    for (; b < n; b++) pend3_state_1(&k, z, zdot, n, b);
}

void hw_gyroscope_rhs(long n, const double *restrict z, const double *restrict params, double *restrict zdot) {
    Gyro k;
    gyro_consts(params, &k);
    for (long b = 0; b < n; b++) gyro_state_1(&k, z, zdot, n, b);
}

void hw_gyroscope_rhs_simd(long n, const double *restrict z, const double *restrict params, double *restrict zdot) {
    Gyro k;
    gyro_consts(params, &k);
    long b = 0;
    for (; b + LANES <= n; b += LANES) gyro_state_v(&k, z, zdot, n, b);
    for (; b < n; b++) gyro_state_1(&k, z, zdot, n, b);
}
