/* loop_field.h — the constrained Hamiltonian vector field (CHNN Eq. 6, in the formulation of
   compiler/dynamics.c) in loop form, for systems too large for straight-line code.

   The unrolled Field kernel grows with the system: its compile time and code size are
   linear in the constraints at best. Here the rows of Phi that are alike (a chain's links:
   the same expression of other coordinates) share one small JIT'd kernel, a row class,
   which gives each row's value, its gradient A_r = dPhi_r/dX and B_r = d(A_r v)/dX on its
   local coordinates (the components it reads of its bodies' points); this file loops over
   the index tables the compiler made (compiler/loop_form.c): W_r = M^-1 A_r body by body
   (Eq. 9), the Gram matrix G = A M^-1 A^T in the sparsity of the constraint graph, its
   L D L^T in the elimination order the compiler chose (no fill-in for a chain or a tree),
   the two solves and the scatter into (Xdot, Pdot). The code does not grow with the system;
   the work per state is linear in the rows for chains and trees. States go through in
   blocks of PRT_LOOP_LANES, each value a short vector over the block's states. The
   projection onto the constraints and RATTLE (sim.c, symplectic.c) factor G in the same
   tables. */
#ifndef PRT_LOOP_FIELD_H
#define PRT_LOOP_FIELD_H
#include <stdbool.h>

#include "kernel.h"

enum { PRT_LOOP_LANES = 8 };

/* Rows of Phi that are the same expression of other coordinates and free lengths. */
typedef struct PrtRowClass {
    PrtKernel kernel; /* (x[k], v[k], lengths[q], consts[nc]) -> (phi, A[k], B[k]); a batch is rows x states */
    int k, q, nrows;
    int *rows;        /* the Phi row of each member */
    int *coords;      /* nrows x k: the coordinate of X that each local input is */
    int *lengths;     /* nrows x q: the free length each length input is (after the masses in params) */
    int nc;           /* the constants that differ between the rows (a rope's lengths) */
    double *consts;   /* nrows x nc: their values */
    PrtKernel vjp;    /* for training: (inputs, cotangent of (phi, A[k], B[k])) -> the inputs' adjoints; NULL
                         where not compiled */
} PrtRowClass;

/* A body as M^-1 sees it (Eq. 9): its coordinates [first, first + npoints * dim), its mass
   parameters params[mass] = m and params[mass + a] = lambda_a (a = 1 .. npoints - 1). */
typedef struct PrtLoopBody {
    int first, npoints, mass;
} PrtLoopBody;

/* What a call of the loop form writes besides its outputs: a block's values, a group of the
   batch's blocks, the reverse pass's values, and the factors of the call's masses. The
   system's own (PrtLoopField.scratch) serves one thread at a time (its simulation); a model
   trained on parallel replicas gives each replica its own (prt_loop_scratch_free frees one). */
typedef struct PrtLoopScratch {
    double *work, *batch, *rev;
    long work_cap, batch_cap, rev_cap;
    double *row_scale;            /* at row_off[r] + j: 1 / m of a point row's coordinate j (else 1) */
    double *coord_scale, *body_inv_m; /* M^-1's factors (loop_field.c prt_loop_weights_prepare) */
} PrtLoopScratch;

typedef struct PrtLoopField {
    int C, N, dim, nmass;      /* nmass: the mass parameters, before the free lengths in params */
    int nclasses;
    PrtRowClass *classes;
    int *row_class, *row_member; /* per row: its class and its index among the class's rows (the compiler's) */
    int *row_off;                /* per row: where its k local values start (C + 1 entries) */
    int *row_coord;              /* at row_off[r] + j: the coordinate of row r's local value j */
    int *row_body_start, *row_body; /* per row: its bodies, in the order of its local coordinates */
    int *row_body_comps;         /* with row_body: how many components of the body the row has; its local
                                    coordinates are, body by body, those components of every point of
                                    the body, component after component */
    int *nb_start, *nb;          /* per row: the rows it shares a coordinate with where A_r W_s or A_s W_r
                                    can be nonzero, and itself, ascending (neighbour entries) */
    int *ov_start, *ov;          /* per neighbour entry (r, s): pairs (i, j), r's local coordinate i is s's j,
                                    where A_r may be nonzero and W_s = M^-1 A_s too: G_rs = A_r . W_s */
    /* L D L^T in the compiler's order (compiler/sparse_ldlt.h): positions i = 0 .. C - 1
       eliminate rows perm[i]; L's row i has columns l_row[l_row_start[i] ..) < i, L's column
       j has rows l_col[l_col_start[j] ..) > j, at l_col_at[] in row order */
    int *perm, *l_row_start, *l_row, *l_col_start, *l_col, *l_col_at;
    int *g_diag;                 /* per position i: the neighbour entry (perm i, perm i) */
    int *g_row;                  /* per entry (i, k) of L, in row order: the neighbour entry (perm i, perm k)
                                    whose pairs give G there, or -1 (fill-in) */
    int nbodies;
    PrtLoopBody *bodies;
    PrtLoopScratch scratch;      /* grown on first use (one simulation thread at a time, as PrtSystem's) */
    /* the tables the passes derive from the above (prt_loop_prepare) */
    long *row_rec, *row_step;    /* per row: where its kernel outputs are in a block's, and their step */
    long *l_pair_start;          /* per entry (i, k) of L: the columns rows i and k share, at l_pairs[2 q] */
    int *l_pairs;                /* (l_pairs_prepare; NULL where too many) */
    bool *row_points;            /* per row: its bodies are points (W_r = A_r / m, not stored) */
    int *rigid, nrigid;          /* the bodies of more than one point */
    int l_row_most;              /* prt_loop_widest_l_row's */
} PrtLoopField;

/* zdot = (Xdot, Pdot) of n states z = (X, P) (SoA, 2N x n, as the Rhs kernel), params the
   system's (masses, then free lengths); dV/dX from grad_v (the system's gradV kernel, block by
   block), or if grad_v is NULL the batch dv (N x n: a model's learned potential's gradient,
   as the Field kernel takes it). v = M^-1 P is taken body by body from the bodies' table, as
   MinvP does. */
void prt_loop_field(PrtLoopField *f, long n, const double *z, PrtKernel grad_v, const double *dv, const double *params,
                    double *zdot);
/* The same with the scratch s (a model replica's, for training in parallel threads) */
void prt_loop_field_in(PrtLoopField *f, PrtLoopScratch *s, long n, const double *z, PrtKernel grad_v, const double *dv,
                       const double *params, double *zdot);
/* Eq. 7's acceleration Xddot (N x n) of n states xvf = (X, Xdot, F) (3N x n, as the Accel
   kernel takes them; F the forces, -dV/dX): what a Lagrangian model (CLNN) steps, in the
   scratch s for prt_loop_accel_in */
void prt_loop_accel(PrtLoopField *f, long n, const double *xvf, const double *params, double *out);
void prt_loop_accel_in(PrtLoopField *f, PrtLoopScratch *s, long n, const double *xvf, const double *params,
                       double *out);
/* Lays out the tables the passes derive (done by the first call otherwise): before threads
   share f */
void prt_loop_prepare(PrtLoopField *f);
void prt_loop_scratch_free(PrtLoopScratch *s);

/* Reverse mode of prt_loop_field with dV given (a learned potential's): with w the cotangent
   of zdot (2N x n), adds w^T d zdot / d z to z_adj (2N x n), w^T d zdot / d dv to dv_adj
   (N x n) and w^T d zdot / d params, summed over the states, to params_adj (the masses, then
   the free lengths). Needs every class's vjp kernel. The field is recomputed block by block:
   nothing is kept between the two calls. s: the scratch (NULL: f's own). */
void prt_loop_field_vjp(PrtLoopField *f, PrtLoopScratch *s, long n, const double *z, const double *dv, const double *params,
                        const double *w, double *z_adj, double *dv_adj, double *params_adj);
/* Reverse mode of prt_loop_accel: with w the cotangent of Xddot (N x n), adds the adjoints
   of (X, Xdot, F) to adj (3N x n) and the parameters' (summed over the states) to params_adj */
void prt_loop_accel_vjp(PrtLoopField *f, PrtLoopScratch *s, long n, const double *xvf, const double *params,
                        const double *w, double *adj, double *params_adj);
/* Reverse mode of prt_loop_minv (v = M^-1 p) and prt_loop_mass (p = M v): adds the input's
   adjoint (N x n) and the mass parameters' (summed over the states) */
void prt_loop_minv_vjp(const PrtLoopField *f, long n, const double *p, const double *params, const double *v_bar,
                       double *p_adj, double *params_adj);
void prt_loop_mass_vjp(const PrtLoopField *f, long n, const double *v, const double *params, const double *p_bar,
                       double *v_adj, double *params_adj);

/* The projection's linear algebra in the mass metric, for one state x (N values): factors
   G(x) = A M^-1 A^T in the sparsity of the constraint graph; false when it is not positive
   definite (dependent constraints). Then prt_loop_apply: v -= M^-1 A^T G^-1 rhs (rhs: C
   values), with the last factorization. */
bool prt_loop_factor(PrtLoopField *f, const double *x, const double *params);
void prt_loop_apply(PrtLoopField *f, double *v, const double *rhs);

/* DPhi of n states, row-major C x N per state, as the DPhi kernel lays it out: the rows'
   gradients scattered among zeros. */
void prt_loop_jacobian(PrtLoopField *f, long n, const double *x, const double *params, double *J);

/* |grad Phi_r| of n states, C x n (SoA) */
void prt_loop_row_norms(PrtLoopField *f, long n, const double *x, const double *params, double *norms);

/* A_r = dPhi_r/dX and B_r = dPhiDot_r/dX of every row r for one state (x, v = Xdot), each
   at [row_off[r], row_off[r + 1]) of A and B, on the coordinates row_coord lists there */
void prt_loop_rows(PrtLoopField *f, const double *x, const double *v, const double *lengths, double *A, double *B);

/* Phi (C x n, SoA) of n states xv (SoA, n states: X, then Xdot when phidot is wanted), and
   PhiDot = A Xdot into phidot unless it is NULL (phi may be NULL too); lengths: the free
   lengths (params + nmass). What the Phi and PhiDot kernels give an unrolled system. */
void prt_loop_constraints(PrtLoopField *f, long n, const double *xv, const double *lengths, double *phi,
                          double *phidot);

/* v = M^-1 p and p = M v of n states (SoA, N x n), body by body from the bodies' table (Eq.
   9), with the operations of the MinvP and MassV kernels in their order, so that the results
   are theirs: the loop form compiles neither (they grow with the system: 110,000 of the
   150,000 instructions of a 10,000-link chain's JIT). params: the system's, masses first. */
void prt_loop_minv(const PrtLoopField *f, long n, const double *p, const double *params, double *v);
void prt_loop_mass(const PrtLoopField *f, long n, const double *v, const double *params, double *p);

/* The most entries of L in one row (at least 1): a row's scratch in the factorizations */
int prt_loop_widest_l_row(const PrtLoopField *f);

/* Frees the scratch (a block's values, a group of blocks), which the next call grows
   again; the tables stay */
void prt_loop_field_release(PrtLoopField *f);

void prt_loop_field_free(PrtLoopField *f);

#endif
