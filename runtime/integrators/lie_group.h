/* lie_group.h — fixed-step integrators for systems with `state so3` bodies (the Lie T2 paper,
   So, Li, Theodorou and Tao: Section 2, App. B and D). Each such body's state is (q, R, p, Pi)
   with R in SO(3) (body to world) and Pi its body angular momentum (sim.h, PrtSo3Body); the
   Cartesian points of the system are flat. H = sum p.p/2m + Pi.J^-1 Pi/2 + V(X).
     liet2    the Strang splitting of Eq. (3) (B50): exact flows of the axially symmetric
              kinetic energy (B44), of the potential (momentum kicks and torques, B46) and of
              the asymmetric correction (B48). Symplectic; R stays on SO(3) to rounding.
     lie_rk2  the commutator-free Lie midpoint rule (CF2, Eqs. D58-D59): the flat part by the
              explicit midpoint rule, R by exponentials.
     lie_rk4  the commutator-free Runge-Kutta of order 4 of Celledoni, Marthinsen and Owren
              (CF4, Eqs. D60-D63): the flat part by classic RK4, R by two exponentials.
     verlet   the naive leapfrog on the flat embedding (Eqs. D55-D57): R moves by
              R += h/2 R hat(Omega), so it leaves SO(3).
   The paper's printed flows are in a left form (R <- exp(.) R) where R' = R hat(Omega) asks
   for a right one, and its half steps read h in places; these follow the derivation
   (docs/language.md, `state so3`). A system without `state so3` bodies is stepped
   too: liet2 and verlet are then the leapfrog, lie_rk2 and lie_rk4 the explicit midpoint rule
   and RK4. Constraints are not handled (the system must have none). */
#ifndef PRT_LIE_GROUP_H
#define PRT_LIE_GROUP_H
#include "integrators.h"
#include "system/sim.h"

typedef enum PrtLieMethod { PRT_LIE_T2, PRT_LIE_RK2, PRT_LIE_RK4, PRT_LIE_VERLET } PrtLieMethod;

/* The method of an integrator row (integrators.h) of kind PRT_KIND_LIE, or -1 for another row. */
int prt_lie_method(int id);
/* Doubles of scratch prt_lie_step needs for n states. */
long prt_lie_work_len(const PrtSystem *s, long n);
/* One step of size h for the n states of z (SoA, (N + NP) x n), in place. */
void prt_lie_step(PrtSystem *s, PrtLieMethod m, long n, double h, double *z, double *work);

/* The pieces of a Lie T2 step on a batch, in place (lie_tape.c records them for training):
   the exact flow over h of the axially symmetric kinetic energy (v: NP x n scratch), the
   kick of a potential with gradient G = dV/dX (N x n), the asymmetric flow, and the Newton
   step back onto SO(3). */
void prt_lie_kinetic(PrtSystem *s, long n, double h, double *z, double *v);
void prt_lie_kick(const PrtSystem *s, long n, double h, double *z, const double *G);
void prt_lie_asym(const PrtSystem *s, long n, double h, double *z);
void prt_lie_reorthonormalize(const PrtSystem *s, long n, double *z);
/* The Cartesian coordinates (and momenta) before the so3 bodies': N - 12 nso3. */
long prt_lie_cartesian(const PrtSystem *s);

/* E = R^T R - I (row-major 3x3): how far R is from SO(3). */
void prt_so3_gram_error(const double R[9], double E[9]);
/* The largest |R^T R - I| (entrywise) over the `state so3` bodies of the n states of z. */
double prt_so3_orthogonality(const PrtSystem *s, long n, const double *z);

/* ---- the pieces, per body (row-major 3 x 3 matrices) ---- */

/* E = exp(hat(w)), by Rodrigues' formula (a series near w = 0, no cancellation). */
void prt_so3_exp(const double w[3], double E[9]);
/* The exact flow over time h of Pi.J_sym^-1 Pi/2, J_sym^-1 = diag(1/J1, 1/J1, 1/J3) (B44):
   R <- R exp(h hat(Pi)/J1) R_z(theta h), Pi <- R_z(theta h)^T Pi, theta = (1/J3 - 1/J1) Pi_z. */
void prt_so3_kinetic_flow(double R[9], double Pi[3], const double J[3], double h);
/* The exact flow over time h of (1/J2 - 1/J1) Pi_y^2 / 2 (B48, right form):
   R <- R R_y(phi), Pi <- R_y(phi)^T Pi, phi = (1/J2 - 1/J1) Pi_y h. */
void prt_so3_asym_flow(double R[9], double Pi[3], const double J[3], double h);
/* The body torque of a potential with gradient G = dV/dR: -(R^T G - G^T R)^vee (B45). */
void prt_so3_torque(const double R[9], const double G[9], double tau[3]);
/* R += R (I - R^T R) / 2: back onto SO(3) to rounding when R is off it by rounding. */
void prt_so3_reorthonormalize(double R[9]);
/* The nearest rotation (or orthogonal matrix, if det A < 0) to A (3x3, row-major) in the
   Frobenius norm, A's polar factor, into Q; false if A is singular. The App. E rotation error
   of a rollout that left SO(3) (verlet, euler, rk4) is measured from it: acos of the trace
   would otherwise clip at |c| > 1 and call a far-off matrix a perfect rotation. */
bool prt_so3_nearest_rotation(const double A[9], double Q[9]);
/* Their vector-Jacobian products: given the outputs' cotangents (_out), add the inputs'
   (R, Pi, w, G: the flows' inputs, not outputs) to Rb, Pib, wb, Gb. */
void prt_so3_exp_vjp(const double w[3], const double Eb[9], double wb[3]);
void prt_so3_kinetic_flow_vjp(const double R[9], const double Pi[3], const double J[3], double h, const double Rb_out[9],
                              const double Pib_out[3], double Rb[9], double Pib[3]);
void prt_so3_asym_flow_vjp(const double R[9], const double Pi[3], const double J[3], double h, const double Rb_out[9],
                           const double Pib_out[3], double Rb[9], double Pib[3]);
void prt_so3_torque_vjp(const double R[9], const double G[9], const double taub[3], double Rb[9], double Gb[9]);
void prt_so3_reorthonormalize_vjp(const double R[9], const double Rb_out[9], double Rb[9]);
/* A body's principal moments J from its mass parameters (sim.h, PrtSo3Body). */
void prt_so3_moments(const PrtSystem *s, const PrtSo3Body *b, double J[3]);

/* rows r .. r + len of state b of an SoA array of n states, out of it or into it */
static inline void prt_soa_gather(const double *a, long n, int r, int len, long b, double *out) {
    for (int i = 0; i < len; i++) out[i] = a[(r + i) * n + b];
}
static inline void prt_soa_scatter(double *a, long n, int r, int len, long b, const double *in) {
    for (int i = 0; i < len; i++) a[(r + i) * n + b] = in[i];
}

#endif
