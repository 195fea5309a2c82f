/* dynamics.c — the constrained equations of motion as kernels (CHNN Sections 5-6):
   the Hamiltonian vector field of Eq. 6 and the Lagrangian acceleration of Eq. 7, with
   the mass matrix of Eq. 9 in closed form and the linear algebra unrolled for this
   system's size.

   Why this formulation. With A = DPhi (C x N), B = d(A v)/dX at fixed v, v = M^-1 p and
   Psi = (Phi, A v), the 2C x 2C matrix DPsi J DPsi^T of Eq. 6 has the block form
   [[0, G], [-G, S]] with G = A M^-1 A^T (symmetric positive definite when the constraints
   are independent) and S = B M^-1 A^T - A M^-1 B^T (antisymmetric). So Eq. 6 needs only
   two solves with G: mu2 = G^-1 A v, mu1 = G^-1 (S mu2 - B v + A M^-1 dV), lambda = -mu,
     Xdot = v + M^-1 A^T lambda2,   Pdot = -dV - A^T lambda1 - B^T lambda2.
   One L D L^T factorization of the C x C matrix G serves both, instead of an LU of the
   dense 2C x 2C system; it is exact everywhere, not only on the constraint manifold
   (there A v = 0, so lambda2 = 0). G, S and the factorization are built in the sparsity of
   the constraint graph (sparse_ldlt.h): a chain's G is tridiagonal, and the kernel grows
   linearly with the chain where a dense build grew as C^3 before simplification. */
#include "dynamics.h"
#include "arena.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ad.h"
#include "sparse_ldlt.h"
#include "diag.h"

int dynamics_mass_params(const System *sys) {
    int k = 0;
    for (int b = 0; b < sys->nbodies; b++) k += 1 + sys->bodies[b].n;
    return k;
}

void dynamics_fill_mass_params(const System *sys, double *params) {
    int k = 0;
    for (int b = 0; b < sys->nbodies; b++) {
        params[k++] = sys->bodies[b].mass;
        for (int i = 0; i < sys->bodies[b].n; i++) params[k++] = sys->bodies[b].moments[i];
    }
}

int dynamics_so3_bodies(const System *sys, PrtSo3Body *out) {
    int k = 0, count = 0;
    for (int b = 0; b < sys->nbodies; b++) {
        const Body *body = &sys->bodies[b];
        if (body->state == STATE_SO3)
            out[count++] = (PrtSo3Body){.x = body->first_coord, .p = body->first_mom, .mass = k};
        k += 1 + body->n;
    }
    return count;
}

int dynamics_frame_bodies(const System *sys, PrtFrameBody *out) {
    int count = 0;
    for (int b = 0; b < sys->nbodies; b++) {
        const Body *body = &sys->bodies[b];
        if (body->state == STATE_SO3 || body->n > 0)
            out[count++] = (PrtFrameBody){.x = body->first_coord, .dim = sys->dim, .naxes = body->n,
                                          .so3 = body->state == STATE_SO3};
    }
    return count;
}

/* out = M^-1 vec, per body: M^-1 = m^-1 (1 1^T + diag(0, 1/lambda_1, ..., 1/lambda_n)) (Eq. 9). */
/* Principal moment of inertia i of an SO(3) body from its mass parameters (m, lambda):
   I_i = m (lambda_j + lambda_k). */
static int inertia(IrFn *g, const int *mp, int k, int i) {
    return ir_bin(g, IR_MUL, mp[k], ir_bin(g, IR_ADD, mp[k + 1 + (i + 1) % 3], mp[k + 1 + (i + 2) % 3]));
}

static bool is_zero(const IrFn *g, int v) { return g->insts[v].op == IR_CONST && g->insts[v].num == 0; }

static void apply_minv(IrFn *g, const System *sys, const int *mp, const int *vec, int *out) {
    int d = sys->dim, k = 0, zero = -1;
    for (int bi = 0; bi < sys->nbodies; bi++) {
        const Body *b = &sys->bodies[bi];
        /* a body with no entries in vec has none in out (a row of DPhi touches few bodies:
           the simplifier would remove these, but only after the constrained solve was built
           on a dense pattern) */
        int nv = b->state == STATE_SO3 ? 6 : (1 + b->n) * d;
        bool none = true;
        for (int i = 0; i < nv && none; i++) none = is_zero(g, vec[b->first_mom + i]);
        if (none) {
            if (zero < 0) zero = ir_const(g, 0);
            for (int i = 0; i < nv; i++) out[b->first_mom + i] = zero;
            k += b->state == STATE_SO3 ? 4 : 1 + b->n;
            continue;
        }
        /* reciprocals of parameters depend on no state: LLVM hoists them out of the batch loop,
           and the loop multiplies instead of dividing */
        int m = mp[k], first = b->first_mom, inv_m = ir_bin(g, IR_DIV, ir_const(g, 1), m);
        if (b->state == STATE_SO3) { /* (p, Pi) -> (p / m, Pi_i / I_i) */
            for (int c = 0; c < 3; c++) {
                out[first + c] = ir_bin(g, IR_MUL, vec[first + c], inv_m);
                out[first + 3 + c] =
                    ir_bin(g, IR_MUL, vec[first + 3 + c], ir_bin(g, IR_DIV, ir_const(g, 1), inertia(g, mp, k, c)));
            }
            k += 4;
            continue;
        }
        for (int c = 0; c < d; c++) {
            int sum = vec[first + c];
            for (int a = 1; a <= b->n; a++) sum = ir_bin(g, IR_ADD, sum, vec[first + a * d + c]);
            for (int a = 0; a <= b->n; a++) {
                int t = a == 0 ? sum
                               : ir_bin(g, IR_ADD, sum,
                                        ir_bin(g, IR_MUL, vec[first + a * d + c], ir_bin(g, IR_DIV, ir_const(g, 1), mp[k + a])));
                out[first + a * d + c] = ir_bin(g, IR_MUL, t, inv_m);
            }
        }
        k += 1 + b->n;
    }
}

/* out = M vec, per body: (M v)_0 = m ((1 + sum lambda) v_0 - sum_a lambda_a v_a),
   (M v)_a = m lambda_a (v_a - v_0) (Eq. 9). */
static void apply_m(IrFn *g, const System *sys, const int *mp, const int *vec, int *out) {
    int d = sys->dim, k = 0;
    for (int bi = 0; bi < sys->nbodies; bi++) {
        const Body *b = &sys->bodies[bi];
        int m = mp[k], first = b->first_mom;
        if (b->state == STATE_SO3) { /* (v, omega) -> (m v, I omega) */
            for (int c = 0; c < 3; c++) {
                out[first + c] = ir_bin(g, IR_MUL, m, vec[first + c]);
                out[first + 3 + c] = ir_bin(g, IR_MUL, inertia(g, mp, k, c), vec[first + 3 + c]);
            }
            k += 4;
            continue;
        }
        for (int c = 0; c < d; c++) {
            int v0 = vec[first + c], acc = v0;
            for (int a = 1; a <= b->n; a++) {
                int rel = ir_bin(g, IR_SUB, vec[first + a * d + c], v0);
                int la = mp[k + a];
                acc = ir_bin(g, IR_SUB, acc, ir_bin(g, IR_MUL, la, rel));
                out[first + a * d + c] = ir_bin(g, IR_MUL, m, ir_bin(g, IR_MUL, la, rel));
            }
            out[first + c] = ir_bin(g, IR_MUL, m, acc);
        }
        k += 1 + b->n;
    }
}

/* MinvP(P) -> M^-1 P and MassV(V) -> M V: the mass matrix of Eq. 9 and its inverse. */
IrFn *lower_mass_apply(const System *sys, bool inverse) {
    int N = sys->nmomenta;
    IrFn *g = ir_new(inverse ? "MinvP" : "MassV", N, dynamics_mass_params(sys), N);
    int *in = xalloc((size_t)(N + 1), sizeof(int)), *out = xalloc((size_t)(N + 1), sizeof(int));
    int nm = dynamics_mass_params(sys), *mp = xalloc((size_t)(nm + 1), sizeof(int));
    for (int i = 0; i < N; i++) in[i] = ir_input(g, i);
    for (int i = 0; i < nm; i++) mp[i] = ir_param(g, i);
    (inverse ? apply_minv : apply_m)(g, sys, mp, in, out);
    memcpy(g->outputs, out, sizeof(int) * (size_t)N);
    free(in), free(out), free(mp);
    return g;
}

static int cmp_int(const void *a, const void *b) { return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b); }

static int dotv(IrFn *g, const int *x, const int *y, int n) {
    int acc = ir_const(g, 0);
    for (int i = 0; i < n; i++) acc = ir_bin(g, IR_ADD, acc, ir_bin(g, IR_MUL, x[i], y[i]));
    return acc;
}

/* Which entries of a C x N matrix of IR values may be nonzero: its rows' columns and its
   columns' rows (CSR both ways). A constant zero is a zero; anything else may not be. */
typedef struct Pattern {
    int *row_start, *row_col;
    int *col_start, *col_row;
} Pattern;

/* The union of the patterns of the nmats matrices mats[0..nmats) */
static Pattern pattern_of(const IrFn *g, const int *const *mats, int nmats, int C, int N) {
    Pattern p = {xalloc((size_t)C + 2, sizeof(int)), NULL, xcalloc((size_t)N + 2, sizeof(int)), NULL};
    int nnz = 0, cap = 16;
    p.row_col = xalloc((size_t)cap, sizeof(int));
    for (int r = 0; r < C; r++) {
        p.row_start[r] = nnz;
        for (int c = 0; c < N; c++) {
            bool nz = false;
            for (int m = 0; m < nmats && !nz; m++) nz = !is_zero(g, mats[m][(long)r * N + c]);
            if (!nz) continue;
            if (nnz == cap) p.row_col = xrealloc(p.row_col, (size_t)(cap *= 2), sizeof(int));
            p.row_col[nnz++] = c;
            p.col_start[c + 1]++;
        }
    }
    p.row_start[C] = nnz;
    for (int c = 0; c < N; c++) p.col_start[c + 1] += p.col_start[c];
    p.col_row = xalloc((size_t)nnz + 1, sizeof(int));
    int *filled = xcalloc((size_t)N + 1, sizeof(int));
    for (int r = 0; r < C; r++) /* r ascending: each column's rows come out ascending */
        for (int e = p.row_start[r]; e < p.row_start[r + 1]; e++) {
            int c = p.row_col[e];
            p.col_row[p.col_start[c] + filled[c]++] = r;
        }
    free(filled);
    return p;
}

static void pattern_free(Pattern *p) { free(p->row_start), free(p->row_col), free(p->col_start), free(p->col_row); }

/* x . y over the columns of row r of pattern p (x's pattern must be within p), in column
   order: the dense dot product's operations that the simplifier keeps */
static int dot_pattern(IrFn *g, const Pattern *p, int r, const int *x, const int *y) {
    int acc = ir_const(g, 0);
    for (int e = p->row_start[r]; e < p->row_start[r + 1]; e++) {
        int c = p->row_col[e];
        if (!is_zero(g, x[c]) && !is_zero(g, y[c])) acc = ir_bin(g, IR_ADD, acc, ir_bin(g, IR_MUL, x[c], y[c]));
    }
    return acc;
}

/* The pieces both forms share, built inside g: A = DPhi, B = d(A v)/dX, W = M^-1 A^T
   (row r of W is M^-1 A_r), G = A W in the sparsity of the constraint graph, its L D L^T
   factors, and A v. Constraints r and s are neighbours when their rows of A, B or W share a
   coordinate: only neighbours' entries of G and S can be nonzero. */
typedef struct Constrained {
    int C, N;
    int *A, *B, *W, *Av;
    Pattern p;                  /* of A, B and W together */
    int *nb_start, *nb;         /* each constraint's neighbours and itself, ascending */
    int *G;                     /* G_rs for s in nb(r), aligned with nb */
    SparseLdlt ldlt;
} Constrained;

/* G_rs, or -1 where r and s are not neighbours (sldlt_factor's callback) */
static int gram_entry(void *ctx, int r, int s) {
    const Constrained *k = ctx;
    const int *lo = k->nb + k->nb_start[r], *hi = k->nb + k->nb_start[r + 1];
    while (lo < hi) { /* binary search for s */
        const int *mid = lo + (hi - lo) / 2;
        if (*mid == s) return k->G[mid - k->nb];
        if (*mid < s) lo = mid + 1;
        else hi = mid;
    }
    return -1;
}

static void constrained_build(IrFn *g, const System *sys, const IrFn *phi, const int *x, const int *v, const int *mp,
                              const int *lengths, Constrained *k) {
    int C = phi->noutputs, N = sys->npoints * sys->dim;
    k->C = C;
    k->N = N;
    k->A = xalloc((size_t)C * N + 1, sizeof(int));
    k->B = xalloc((size_t)C * N + 1, sizeof(int));
    k->W = xalloc((size_t)C * N + 1, sizeof(int));
    k->Av = xalloc((size_t)(C + 1), sizeof(int));
    int lo = g->ninsts;
    int *phis = xalloc((size_t)(C + 1), sizeof(int));
    ad_inline(g, phi, x, lengths, phis);
    int hi = g->ninsts;
    ad_gradients_in(g, lo, hi, phis, C, x, N, k->A);
    Pattern pa = pattern_of(g, (const int *[]){k->A}, 1, C, N);
    for (int r = 0; r < C; r++) k->Av[r] = dot_pattern(g, &pa, r, k->A + (long)r * N, v);
    pattern_free(&pa);
    int hi2 = g->ninsts;
    ad_gradients_in(g, lo, hi2, k->Av, C, x, N, k->B);
    for (int r = 0; r < C; r++) apply_minv(g, sys, mp, k->A + (long)r * N, k->W + (long)r * N);
    k->p = pattern_of(g, (const int *[]){k->A, k->B, k->W}, 3, C, N);

    /* neighbours, through the columns they share */
    int *mark = xalloc((size_t)C + 1, sizeof(int)), cap = 16, count = 0;
    k->nb_start = xalloc((size_t)C + 2, sizeof(int));
    k->nb = xalloc((size_t)cap, sizeof(int));
    for (int r = 0; r < C; r++) mark[r] = -1;
    for (int r = 0; r < C; r++) {
        k->nb_start[r] = count;
        for (int e = k->p.row_start[r]; e < k->p.row_start[r + 1]; e++) {
            int c = k->p.row_col[e];
            for (int f = k->p.col_start[c]; f < k->p.col_start[c + 1]; f++) {
                int s = k->p.col_row[f];
                if (mark[s] == r) continue;
                mark[s] = r;
                if (count == cap) k->nb = xrealloc(k->nb, (size_t)(cap *= 2), sizeof(int));
                k->nb[count++] = s;
            }
        }
        if (mark[r] != r) { /* a constraint of no coordinate still has its diagonal */
            if (count == cap) k->nb = xrealloc(k->nb, (size_t)(cap *= 2), sizeof(int));
            k->nb[count++] = r;
        }
        qsort(k->nb + k->nb_start[r], (size_t)(count - k->nb_start[r]), sizeof(int), cmp_int);
    }
    k->nb_start[C] = count;
    free(mark);

    /* G_rs = A_r . W_s for s <= r, mirrored */
    k->G = xalloc((size_t)count + 1, sizeof(int));
    for (int r = 0; r < C; r++)
        for (int e = k->nb_start[r]; e < k->nb_start[r + 1] && k->nb[e] <= r; e++) {
            int s = k->nb[e];
            k->G[e] = dot_pattern(g, &k->p, r, k->A + (long)r * N, k->W + (long)s * N);
            if (s != r) { /* G_sr, in s's list */
                const int *at = k->nb + k->nb_start[s];
                while (*at != r) at++;
                k->G[at - k->nb] = k->G[e];
            }
        }
    /* the pattern without the diagonal, for the ordering */
    int *adj_start = xalloc((size_t)C + 2, sizeof(int)), *adj = xalloc((size_t)count + 1, sizeof(int)), nadj = 0;
    for (int r = 0; r < C; r++) {
        adj_start[r] = nadj;
        for (int e = k->nb_start[r]; e < k->nb_start[r + 1]; e++)
            if (k->nb[e] != r) adj[nadj++] = k->nb[e];
    }
    adj_start[C] = nadj;
    sldlt_analyze(&k->ldlt, C, adj_start, adj);
    sldlt_factor(g, &k->ldlt, gram_entry, k);
    free(adj_start), free(adj);
    free(phis);
}

static void constrained_free(Constrained *k) {
    free(k->A), free(k->B), free(k->W), free(k->Av), free(k->nb_start), free(k->nb), free(k->G);
    pattern_free(&k->p);
    sldlt_free(&k->ldlt);
}

static void name_state(IrFn *f, const System *sys, int base, const char *prefix) {
    for (int i = 0; i < sys->npoints * sys->dim; i++) {
        char name[64];
        snprintf(name, sizeof name, "%s[%d]", prefix, i);
        ir_set_input_name(f, base + i, name);
    }
}

static void params_of(IrFn *g, const System *sys, int **mp, int **lengths) {
    int nm = dynamics_mass_params(sys), nl = g->nparams - nm;
    *mp = xalloc((size_t)(nm + 1), sizeof(int));
    *lengths = xalloc((size_t)(nl + 1), sizeof(int));
    for (int i = 0; i < nm; i++) (*mp)[i] = ir_param(g, i);
    for (int i = 0; i < nl; i++) (*lengths)[i] = ir_param(g, nm + i);
}

IrFn *lower_hamiltonian_field(const System *sys, const IrFn *phi) {
    int N = sys->npoints * sys->dim, C = phi->noutputs;
    IrFn *g = ir_new("Field", 3 * N, dynamics_mass_params(sys) + phi->nparams, 2 * N);
    name_state(g, sys, 0, "X");
    name_state(g, sys, N, "P");
    name_state(g, sys, 2 * N, "dV");
    int *x = xalloc((size_t)(3 * N + 1), sizeof(int)), *p = x + N, *dv = x + 2 * N;
    for (int i = 0; i < 3 * N; i++) x[i] = ir_input(g, i);
    int *mp, *lengths;
    params_of(g, sys, &mp, &lengths);
    int *v = xalloc((size_t)(N + 1), sizeof(int));
    apply_minv(g, sys, mp, p, v);
    Constrained k;
    constrained_build(g, sys, phi, x, v, mp, lengths, &k);
    int *mu1 = xalloc((size_t)(C + 1), sizeof(int)), *mu2 = xalloc((size_t)(C + 1), sizeof(int)),
        *rhs = xalloc((size_t)(C + 1), sizeof(int));
    sldlt_solve(g, &k.ldlt, k.Av, mu2);
    for (int r = 0; r < C; r++) {
        /* (S mu2)_r - (B v)_r + (A M^-1 dV)_r, with S_rs = B_r . W_s - W_r . B_s (zero unless s is
           a neighbour of r) */
        int t = ir_const(g, 0);
        for (int e = k.nb_start[r]; e < k.nb_start[r + 1]; e++) {
            int s2 = k.nb[e];
            int srs = ir_bin(g, IR_SUB, dot_pattern(g, &k.p, r, k.B + (long)r * N, k.W + (long)s2 * N),
                             dot_pattern(g, &k.p, r, k.W + (long)r * N, k.B + (long)s2 * N));
            t = ir_bin(g, IR_ADD, t, ir_bin(g, IR_MUL, srs, mu2[s2]));
        }
        t = ir_bin(g, IR_SUB, t, dot_pattern(g, &k.p, r, k.B + (long)r * N, v));
        rhs[r] = ir_bin(g, IR_ADD, t, dot_pattern(g, &k.p, r, k.W + (long)r * N, dv));
    }
    sldlt_solve(g, &k.ldlt, rhs, mu1);
    /* lambda = -mu:  Xdot = v - W^T mu2,  Pdot = -dV + A^T mu1 + B^T mu2 */
    for (int i = 0; i < N; i++) {
        int xd = v[i], pd = ir_un(g, IR_NEG, dv[i]);
        for (int e = k.p.col_start[i]; e < k.p.col_start[i + 1]; e++) {
            int r = k.p.col_row[e];
            long ri = (long)r * N + i;
            if (!is_zero(g, k.W[ri])) xd = ir_bin(g, IR_SUB, xd, ir_bin(g, IR_MUL, k.W[ri], mu2[r]));
            if (!is_zero(g, k.A[ri])) pd = ir_bin(g, IR_ADD, pd, ir_bin(g, IR_MUL, k.A[ri], mu1[r]));
            if (!is_zero(g, k.B[ri])) pd = ir_bin(g, IR_ADD, pd, ir_bin(g, IR_MUL, k.B[ri], mu2[r]));
        }
        g->outputs[i] = xd;
        g->outputs[N + i] = pd;
    }
    constrained_free(&k);
    free(mu1), free(mu2), free(rhs), free(v), free(x), free(mp), free(lengths);
    return g;
}

IrFn *lower_lagrangian_accel(const System *sys, const IrFn *phi) {
    int N = sys->npoints * sys->dim, C = phi->noutputs;
    IrFn *g = ir_new("Accel", 3 * N, dynamics_mass_params(sys) + phi->nparams, N);
    name_state(g, sys, 0, "X");
    name_state(g, sys, N, "Xdot");
    name_state(g, sys, 2 * N, "F");
    int *x = xalloc((size_t)(3 * N + 1), sizeof(int)), *v = x + N, *f = x + 2 * N;
    for (int i = 0; i < 3 * N; i++) x[i] = ir_input(g, i);
    int *mp, *lengths;
    params_of(g, sys, &mp, &lengths);
    Constrained k;
    constrained_build(g, sys, phi, x, v, mp, lengths, &k);
    /* Eq. 7: Xddot = a - M^-1 A^T G^-1 (A a + B Xdot), a = M^-1 F (B Xdot = (d/dt DPhi) Xdot) */
    int *a = xalloc((size_t)(N + 1), sizeof(int)), *rhs = xalloc((size_t)(C + 1), sizeof(int)),
        *mu = xalloc((size_t)(C + 1), sizeof(int));
    apply_minv(g, sys, mp, f, a);
    for (int r = 0; r < C; r++)
        rhs[r] = ir_bin(g, IR_ADD, dot_pattern(g, &k.p, r, k.A + (long)r * N, a),
                        dot_pattern(g, &k.p, r, k.B + (long)r * N, v));
    sldlt_solve(g, &k.ldlt, rhs, mu);
    for (int i = 0; i < N; i++) {
        int acc = a[i];
        for (int e = k.p.col_start[i]; e < k.p.col_start[i + 1]; e++) {
            long ri = (long)k.p.col_row[e] * N + i;
            if (!is_zero(g, k.W[ri])) acc = ir_bin(g, IR_SUB, acc, ir_bin(g, IR_MUL, k.W[ri], mu[k.p.col_row[e]]));
        }
        g->outputs[i] = acc;
    }
    constrained_free(&k);
    free(a), free(rhs), free(mu), free(x), free(mp), free(lengths);
    return g;
}

/* Field for systems with SO(3) bodies and no constraints (the Lie T2 paper's state,
   its Appendix A equations): per SO(3) body q' = p/m, p' = -dV/dq, R' = R hat(Omega),
   Pi' = Pi x Omega + tau with Omega = I^-1 Pi and the body torque tau_k = -(M_ji - M_ij)
   for (i, j, k) cyclic, M = R^T dV/dR. Other bodies: X' = M^-1 P, P' = -dV/dX. */
IrFn *lower_rigid_field(const System *sys) {
    int NQ = sys->ncoords, NP = sys->nmomenta, nm = dynamics_mass_params(sys);
    IrFn *g = ir_new("Field", 2 * NQ + NP, nm, NQ + NP);
    int *in = xalloc((size_t)(2 * NQ + NP + 1), sizeof(int)), *q = in, *p = in + NQ, *dv = in + NQ + NP;
    for (int i = 0; i < 2 * NQ + NP; i++) in[i] = ir_input(g, i);
    int *mp = xalloc((size_t)(nm + 1), sizeof(int)), *v = xalloc((size_t)(NP + 1), sizeof(int));
    for (int i = 0; i < nm; i++) mp[i] = ir_param(g, i);
    apply_minv(g, sys, mp, p, v);
    int *qdot = g->outputs, *pdot = g->outputs + NQ;
    for (int bi = 0; bi < sys->nbodies; bi++) {
        const Body *b = &sys->bodies[bi];
        int fc = b->first_coord, fm = b->first_mom;
        if (b->state != STATE_SO3) {
            for (int i = 0; i < b->npoints * sys->dim; i++) {
                qdot[fc + i] = v[fm + i];
                pdot[fm + i] = ir_un(g, IR_NEG, dv[fc + i]);
            }
            continue;
        }
        const int *R = q + fc + 3, *G = dv + fc + 3, *pi = p + fm + 3, *om = v + fm + 3;
        for (int c = 0; c < 3; c++) {
            qdot[fc + c] = v[fm + c];
            pdot[fm + c] = ir_un(g, IR_NEG, dv[fc + c]);
        }
        /* hat(Omega) = [[0, -w3, w2], [w3, 0, -w1], [-w2, w1, 0]]; R' = R hat(Omega) */
        int zero = ir_const(g, 0), hat[9] = {zero, ir_un(g, IR_NEG, om[2]), om[1], om[2], zero, ir_un(g, IR_NEG, om[0]),
                                            ir_un(g, IR_NEG, om[1]), om[0], zero};
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++) {
                int acc = ir_bin(g, IR_MUL, R[i * 3], hat[j]);
                for (int k = 1; k < 3; k++) acc = ir_bin(g, IR_ADD, acc, ir_bin(g, IR_MUL, R[i * 3 + k], hat[k * 3 + j]));
                qdot[fc + 3 + i * 3 + j] = acc;
            }
        int M[9]; /* M = R^T G */
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++) {
                int acc = ir_bin(g, IR_MUL, R[i], G[j]);
                for (int k = 1; k < 3; k++) acc = ir_bin(g, IR_ADD, acc, ir_bin(g, IR_MUL, R[k * 3 + i], G[k * 3 + j]));
                M[i * 3 + j] = acc;
            }
        for (int k = 0; k < 3; k++) {
            int i = (k + 1) % 3, j = (k + 2) % 3;
            /* (Pi x Omega)_k = Pi_i Omega_j - Pi_j Omega_i;  tau_k = -(M_ji - M_ij) */
            int cross = ir_bin(g, IR_SUB, ir_bin(g, IR_MUL, pi[i], om[j]), ir_bin(g, IR_MUL, pi[j], om[i]));
            int tau = ir_bin(g, IR_SUB, M[i * 3 + j], M[j * 3 + i]);
            pdot[fm + 3 + k] = ir_bin(g, IR_ADD, cross, tau);
        }
    }
    free(in), free(mp), free(v);
    return g;
}

/* H(X, P) = P . M^-1 P / 2 + V(X) (the Hamiltonian; tr(P M^-1 P^T) / 2 in the paper's matrix form) */
IrFn *lower_hamiltonian(const System *sys, const IrFn *V) {
    int NQ = sys->ncoords, NP = sys->nmomenta, nm = dynamics_mass_params(sys);
    IrFn *g = ir_new("H", NQ + NP, nm, 1);
    ir_set_output_name(g, 0, "H");
    int *in = xalloc((size_t)(NQ + NP + 1), sizeof(int)), *mp = xalloc((size_t)(nm + 1), sizeof(int)),
        *v = xalloc((size_t)(NP + 1), sizeof(int)), pot;
    for (int i = 0; i < NQ + NP; i++) in[i] = ir_input(g, i);
    for (int i = 0; i < nm; i++) mp[i] = ir_param(g, i);
    ad_inline(g, V, in, mp, &pot);
    apply_minv(g, sys, mp, in + NQ, v);
    g->outputs[0] = ir_bin(g, IR_ADD, pot, ir_bin(g, IR_MUL, ir_const(g, 0.5), dotv(g, in + NQ, v, NP)));
    free(in), free(mp), free(v);
    return g;
}
