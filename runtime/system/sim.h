/* sim.h — simulating a compiled system: the kernels it calls (docs/runtime-abi.md),
   sampling and projecting initial states, the Hamiltonian right-hand side, energy. */
#ifndef PRT_SIM_H
#define PRT_SIM_H
#include "kernel.h"
#include "loop_field.h"
#include "math/ode.h"
#include "math/rng.h"

/* How a projection moves a state onto the constraints.
   PRT_METRIC_MASS: X by Newton steps of least norm in the mass metric (as an impulsive
     constraint force would: x += M^-1 A^T lambda), then Xdot likewise onto DPhi Xdot = 0.
   PRT_METRIC_EUCLIDEAN: to the nearest point of (X, Xdot) jointly: Gauss-Newton on
     (Phi, PhiDot) = 0 with their whole Jacobian, including d(PhiDot)/dX (s->DPhiDot, which
     a compile with `project nearest` or for training has; in loop form the rows' A and B,
     B being dPhiDot/dX), as the CHNN reference code's project_onto_constraints.
     Moving X along the velocity constraint's normal too removes much of a random
     perturbation's shift along the trajectory, which the sequential projection keeps. */
typedef enum { PRT_METRIC_MASS, PRT_METRIC_EUCLIDEAN } PrtMetric;

/* Where a `state so3` body's numbers are: X[x .. x+3) its position q, X[x+3 .. x+12) its
   rotation R (body to world, row-major); P[p .. p+3) its momentum, P[p+3 .. p+6) its body
   angular momentum Pi; params[mass] its mass m, params[mass+1 .. mass+4) its second moments
   per unit mass lambda, so that its principal moments are J_i = m (lambda_j + lambda_k). */
typedef struct PrtSo3Body {
    int x, p, mass;
} PrtSo3Body;

/* A body with an orientation (a rigid body): a `state so3` body (q at x, then R row-major,
   body to world) or a body of points with axes (its centre at x, then each axis point, dim
   coordinates each; CHNN Eq. 9). The orientation error (evaluate_orientation.c) compares their
   frames. */
typedef struct PrtFrameBody {
    int x, dim, naxes;
    bool so3;
} PrtFrameBody;

typedef struct PrtSystem {
    int N;                /* configuration coordinates (points x dim; 12 per SO(3) body) */
    int NP;               /* momenta (= N when there is no SO(3) body: 6 each) */
    int C;                /* constraint rows */
    int nmass;            /* mass parameters (first in params) */
    int nparams;          /* mass parameters, then free lengths */
    double *params;       /* owned by the caller */
    int ndraws;           /* Init's random inputs */
    const int *draw_kinds;/* 0 normal, 1 uniform */
    const int *free_rows; /* the Phi row of each free length */
    const char *const *names; /* N + NP names of the coordinates, then the velocities: the columns
                                 of a trajectory CSV (dataset.h), and the words of messages */
    const char *const *row_names; /* C names of the constraint rows ("link 3 (line 18)"), for
                                     messages (NULL: "row r") */
    int nq;               /* generalized coordinates of the coordinates block (0: none) */
    const unsigned char *angular; /* per generalized coordinate: 1 for an angle (the map reads it
                                     only through sin and cos), which models unwrap and feed to
                                     their networks as (cos, sin) */
    const char *const *qnames;    /* the generalized coordinates' names (nq) */
    const char *init_at;  /* "file:line:col" of the init block, for messages (or NULL) */
    int nso3;             /* `state so3` bodies; they follow the Cartesian points, whose
                             coordinates X[i] and momenta P[i] share their index i < N - 12 nso3 */
    const PrtSo3Body *so3;
    int nframes;          /* the bodies with an orientation (so3 ones and bodies of points with axes) */
    const PrtFrameBody *frames;
    int lengths_set;      /* free lengths already taken (prt_sample_initial then keeps them) */
    PrtMetric sample_metric; /* how prt_sample_initial projects (EUCLIDEAN needs DPhiDot) */
    /* the kernels, one field per row of PRT_KERNELS (kernel.h); optional ones may be NULL */
#define PRT_KERNEL_FIELD(name, required, what) PrtKernel name;
    PRT_KERNELS(PRT_KERNEL_FIELD)
#undef PRT_KERNEL_FIELD
    PrtLoopField *loop;   /* the vector field in loop form (a large system's simulation), used
                             instead of Rhs and Field when not NULL; owned by the compiler */
    double *work;         /* scratch of the right-hand side */
    long work_cap;
} PrtSystem;

void prt_system_release(PrtSystem *s); /* frees the scratch */

/* The numbers of a state: positions then momenta (or velocities), N + NP. */
static inline int prt_state_rows(const PrtSystem *s) { return s->N + s->NP; }

/* Samples n initial states (X, Xdot) with Init from rng, then projects them onto Phi = 0
   and DPhi Xdot = 0 (prt_project in s->sample_metric, to tol), sets free lengths from the first
   state (unless lengths_set), and returns z = (X, P = M Xdot) in SoA layout ((N + NP) x n). Returns the largest
   remaining |Phi| or |Phi_dot| (or a negative number if Newton failed), or PRT_INIT_NONFINITE
   when the init block itself gave a non-finite value: z then holds the unprojected states
   (prt_describe_init_failure says which). */
enum { PRT_INIT_NONFINITE = -2 };
double prt_sample_initial(const PrtSystem *s, PrtRng *rng, long n, double tol, double *z);
/* The message for PRT_INIT_NONFINITE: which coordinate or velocity of which state. */
void prt_describe_init_failure(const PrtSystem *s, long n, const double *z, char *buf, size_t len);
/* The message for a projection that failed (a negative result) on states z (the first N rows
   read): the constraint row farthest from being met, as a distance |Phi_r| / |grad Phi_r|,
   or one whose gradient vanishes (its bodies at one place), and what to change. */
void prt_describe_projection_failure(const PrtSystem *s, long n, const double *z, char *buf, size_t len);

/* Sets the lengths the program leaves open (a `link` or `tether` without `length`: "taken
   from the initial state") from the first state of the batch xv (SoA, n states; its
   positions are read), unless lengths_set, and sets lengths_set. For states that were not
   sampled, e.g. trajectories read from a file. */
void prt_take_free_lengths(PrtSystem *s, const double *xv, long n);

/* Projects states in place ((X, Xdot), SoA 2N x n) onto Phi = 0 and DPhi Xdot = 0, to tol.
   Returns as prt_sample_initial (negative also when EUCLIDEAN has no DPhiDot kernel). */
double prt_project(const PrtSystem *s, long n, double *xv, double tol, PrtMetric metric);

/* DPhi (the kernel's layout) of n states x: the DPhi kernel's, or in loop form the rows'. */
void prt_dphi(const PrtSystem *s, long n, const double *x, double *J);

/* |grad Phi_r| for each row r of each of n states x (C x n, SoA): from the loop form's rows,
   else from DPhi a state at a time (C x N, not C x N x n, of scratch). */
void prt_dphi_row_norms(const PrtSystem *s, long n, const double *x, double *norms);

/* Whether each |phi_r| (Phi at one state x) is within tol, or within what rounding x's
   coordinates alone changes Phi_r by (16 ulps of sum_j |dPhi_r/dx_j| |x_j|): all that a
   Newton iteration on Phi(x) = 0 can reach, 1e-11 for a chain 1e4 from the origin. lim: C
   doubles of scratch. */
bool prt_phi_within_rounding(const PrtSystem *s, const double *x, const double *phi, double tol, double *lim);

/* The Hamiltonian vector field for prt_dopri5 etc.: ctx is a PrtSystem. */
void prt_hamiltonian_rhs(void *ctx, long n, const double *z, double *zdot);

/* Phi (C x n) of n states x (SoA: their first N rows; lengths = params + nmass, or the
   free lengths being set), and PhiDot = DPhi Xdot of n states xv = (X, Xdot) (2N x n): the
   Phi and PhiDot kernels, or in loop form the rows. */
void prt_phi(const PrtSystem *s, long n, const double *x, const double *lengths, double *phi);
void prt_phidot(const PrtSystem *s, long n, const double *xv, const double *lengths, double *phidot);

/* v = M^-1 p and p = M v of n states (N x n, SoA; the system's masses): the MinvP and
   MassV kernels, or in loop form the bodies' table (loop_field.h). */
void prt_minv(const PrtSystem *s, long n, const double *p, double *v);
void prt_massv(const PrtSystem *s, long n, const double *v, double *p);
/* The same with other masses (params: masses, then free lengths, as the system's): a model's
   learned ones. */
void prt_minv_with(const PrtSystem *s, long n, const double *p, const double *params, double *v);
void prt_massv_with(const PrtSystem *s, long n, const double *v, const double *params, double *p);

/* The Field kernel's function, zdot = (Xdot, Pdot) from zdv = (X, P, dV/dX) (3N x n, SoA)
   and params (masses, then free lengths): a CHNN's vector field with its learned potential's
   gradient. The Field kernel, or in loop form the rows (prt_loop_field). */
void prt_field(const PrtSystem *s, long n, const double *zdv, const double *params, double *zdot);
/* The Accel kernel's function (Eq. 7: Xddot of xvf = (X, Xdot, F), 3N x n, into out, N x n)
   with the masses and free lengths params: the kernel, or the loop form's prt_loop_accel */
void prt_accel(const PrtSystem *s, long n, const double *xvf, const double *params, double *out);

/* H = P . M^-1 P / 2 + V(X) for each state of z (2N x n) into h (n): the H kernel, or in
   loop form from V and M^-1 P. */
void prt_energy(const PrtSystem *s, long n, const double *z, double *h);
/* V(X) for each state of z (its first N rows) into v (n). */
void prt_potential(const PrtSystem *s, long n, const double *z, double *v);

/* max |Phi| over the batch */
double prt_constraint_violation(const PrtSystem *s, long n, const double *z);

#endif
