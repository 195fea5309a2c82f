/* loop_field.c — the constrained vector field over index tables (loop_field.h). The
   equations are dynamics.c's: mu2 = G^-1 A v, mu1 = G^-1 (S mu2 - B v + A M^-1 dV),
   Xdot = v - W^T mu2, Pdot = -dV + A^T mu1 + B^T mu2, with W = M^-1 A^T and
   S_rs = B_r . W_s - W_r . B_s. Every value below is a vector over a block's states:
   v[i * LANES + l] is value i of the block's state l. */
#include "loop_field.h"
#include "alloc.h"
#include "simd_clones.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { LANES = PRT_LOOP_LANES };
/* Rows a row kernel's call takes: its inputs and outputs stay in the cache (all of a
   1000-link chain's at once are 1 MB a block) */
enum { CHUNK = 64 };

/* The helpers of block_field go into each of its SIMD clones (simd_clones.h), so that their
   lane loops are one AVX-512 or two AVX2 instructions where the machine has them */
#define INLINE static inline __attribute__((always_inline))

/* A value over a block's LANES states, as one vector of GCC's vector extension (in the SIMD
   clones one AVX-512 register, two AVX2 or four SSE2 ones): the lane loops it replaces were
   left scalar where GCC could not rule out aliasing. AT(p, i) is value i of block vector p. */
typedef double Lanes __attribute__((vector_size(LANES * sizeof(double)), aligned(sizeof(double)), may_alias));
#define AT(p, i) (*(Lanes *)((p) + (long)(i) * LANES))
/* (the helpers that take or return Lanes are always inlined: no call passes one in registers) */
#pragma GCC diagnostic ignored "-Wpsabi"

/* The block's scratch, carved from f->work: the block's states (x, v = M^-1 p, dV) and its
   outputs, N rows of LANES each; a row kernel call's input and output; per row its A, B,
   W (k values each); L, and the solves' vectors by position. Every loop runs over all LANES lanes (a short
   last block repeats its last state), so that each compiles to a few vector instructions. */
typedef struct Block {
    double *in, *out; /* a class's kernel call */
    double *x, *v, *dv, *xdot, *pdot;
    double *phi, *A, *B, *W, *L, *w, *inv_d, *y;
} Block;

/* The largest input or output of a class's kernel call, in rows of LANES */
static long class_chunk(const PrtLoopField *f) {
    long most = 0;
    for (int c = 0; c < f->nclasses; c++) {
        const PrtRowClass *rc = &f->classes[c];
        long rows = rc->nrows < CHUNK ? rc->nrows : CHUNK, nin = 2 * rc->k + rc->q + rc->nc,
             width = nin > 1 + 2 * rc->k ? nin : 1 + 2 * rc->k;
        if (rows * width > most) most = rows * width;
    }
    return most;
}

static long block_doubles(const PrtLoopField *f) {
    long total = 5L * f->N + 2L * class_chunk(f);
    long K = f->row_off[f->C], nnz = f->l_row_start[f->C];
    total += 3 * K + nnz + 4L * f->C;
    return total * LANES;
}

static Block block_carve(PrtLoopField *f) {
    long need = block_doubles(f) + 1;
    if (f->work_cap < need) {
        free(f->work);
        f->work = prt_xalloc((size_t)need, sizeof(double), "the loop-form vector field's scratch");
        f->work_cap = need;
    }
    Block b = {0};
    double *at = f->work;
    long N = f->N, K = f->row_off[f->C], C = f->C;
    b.x = at, at += N * LANES;
    b.v = at, at += N * LANES;
    b.dv = at, at += N * LANES;
    b.xdot = at, at += N * LANES;
    b.pdot = at, at += N * LANES;
    b.in = at, at += class_chunk(f) * LANES;
    b.out = at, at += class_chunk(f) * LANES;
    b.phi = at, at += C * LANES;
    b.A = at, at += K * LANES;
    b.B = at, at += K * LANES;
    b.W = at, at += K * LANES;
    b.L = at, at += (long)f->l_row_start[C] * LANES;
    b.w = at, at += C * LANES;
    b.inv_d = at, at += C * LANES;
    b.y = at;
    return b;
}

/* rows rows of src (SoA, n states) from state b0: nl states into dst (LANES a row), the last
   one repeated */
static void block_in(double *dst, const double *src, long rows, long n, long b0, int nl) {
    for (long i = 0; i < rows; i++) {
        const double *s = src + i * n + b0;
        double *d = dst + i * LANES;
        if (nl == LANES) memcpy(d, s, sizeof(double) * LANES);
        else
            for (int l = 0; l < LANES; l++) d[l] = s[l < nl ? l : nl - 1];
    }
}

/* Each class's rows of the block, CHUNK rows a kernel call: gather (x, v, lengths), call the
   class's kernel, copy A_r and B_r (and with want_phi phi_r) out to the rows' places. */
INLINE void rows_evaluate(const PrtLoopField *f, Block *b, const double *lengths, bool want_phi) {
    double *in = b->in, *out = b->out;
    for (int c = 0; c < f->nclasses; c++) {
        const PrtRowClass *rc = &f->classes[c];
        for (int m0 = 0; m0 < rc->nrows; m0 += CHUNK) {
            int mn = rc->nrows - m0 < CHUNK ? rc->nrows - m0 : CHUNK;
            long nt = (long)mn * LANES;
            for (int m = 0; m < mn; m++) {
                const int *coord = rc->coords + (long)(m0 + m) * rc->k;
                for (int j = 0; j < rc->k; j++) {
                    memcpy(in + j * nt + (long)m * LANES, b->x + (long)coord[j] * LANES, sizeof(double) * LANES);
                    memcpy(in + (rc->k + j) * nt + (long)m * LANES, b->v + (long)coord[j] * LANES, sizeof(double) * LANES);
                }
                for (int j = 0; j < rc->q + rc->nc; j++) { /* the row's free lengths, then its own constants */
                    double val = j < rc->q ? lengths[rc->lengths[(long)(m0 + m) * rc->q + j]]
                                           : rc->consts[(long)(m0 + m) * rc->nc + j - rc->q],
                           *li = in + (2 * rc->k + j) * nt + (long)m * LANES;
                    for (int l = 0; l < LANES; l++) li[l] = val;
                }
            }
            rc->kernel(nt, in, NULL, out);
            for (int m = 0; m < mn; m++) {
                int r = rc->rows[m0 + m];
                double *A = b->A + (long)f->row_off[r] * LANES, *B = b->B + (long)f->row_off[r] * LANES;
                if (want_phi) AT(b->phi, r) = AT(out, m);
                for (int j = 0; j < rc->k; j++) {
                    memcpy(A + j * LANES, out + (1 + j) * nt + (long)m * LANES, sizeof(double) * LANES);
                    memcpy(B + j * LANES, out + (1 + rc->k + j) * nt + (long)m * LANES, sizeof(double) * LANES);
                }
            }
        }
    }
}

/* W_r = M^-1 A_r body by body (Eq. 9: M^-1 = m^-1 (1 1^T + diag(0, 1/lambda_1, ...)) on
   each spatial component of a rigid body's points) */
INLINE void row_weight(const PrtLoopField *f, Block *b, int r, const double *params) {
    int o = 0;
    const double *A = b->A + (long)f->row_off[r] * LANES;
    double *W = b->W + (long)f->row_off[r] * LANES;
    for (int e = f->row_body_start[r]; e < f->row_body_start[r + 1]; e++) {
        const PrtLoopBody *body = &f->bodies[f->row_body[e]];
        int np = body->npoints, nc = f->row_body_comps[e];
        double inv_m = 1 / params[body->mass];
        if (np == 1) { /* a point: W = A / m */
            for (int c = 0; c < nc; c++, o++) AT(W, o) = AT(A, o) * inv_m;
            continue;
        }
        for (int g = 0; g < nc; g++, o += np) { /* one component of the body's points */
            Lanes sum = AT(A, o);
            for (int a = 1; a < np; a++) sum += AT(A, o + a);
            AT(W, o) = sum * inv_m;
            for (int a = 1; a < np; a++) AT(W, o + a) = (sum + AT(A, o + a) * (1 / params[body->mass + a])) * inv_m;
        }
    }
}

/* The sum over the pairs of neighbour entry e = (r, s) of A_r[i] W_s[j]: G_rs */
INLINE Lanes gram_entry(const PrtLoopField *f, const Block *b, int e, int r, int s) {
    const double *P = b->A + (long)f->row_off[r] * LANES, *Q = b->W + (long)f->row_off[s] * LANES;
    Lanes t = {0};
    for (int k = f->ov_start[e]; k < f->ov_start[e + 1]; k++) t += AT(P, f->ov[2 * k]) * AT(Q, f->ov[2 * k + 1]);
    return t;
}

/* sum_j P[j] X[coord j] + Q[j] Y[coord j] over row r's local coordinates (X, Y block
   vectors of N rows; Q NULL: without the second term) */
INLINE Lanes row_dot(const PrtLoopField *f, int r, const double *P, const double *X, const double *Q, const double *Y) {
    const int *coord = f->row_coord + f->row_off[r];
    int k = f->row_off[r + 1] - f->row_off[r];
    Lanes t = {0};
    for (int j = 0; j < k; j++) {
        t += AT(P, j) * AT(X, coord[j]);
        if (Q) t += AT(Q, j) * AT(Y, coord[j]);
    }
    return t;
}

/* X[coord j] += P[j] m and Y[coord j] += Q[j] n over row r's local coordinates (Q NULL:
   X alone) */
INLINE void row_scatter(const PrtLoopField *f, int r, const double *P, double *X, const double *Q, double *Y, Lanes m,
                        Lanes n) {
    const int *coord = f->row_coord + f->row_off[r];
    int k = f->row_off[r + 1] - f->row_off[r];
    for (int j = 0; j < k; j++) {
        AT(X, coord[j]) += AT(P, j) * m;
        if (Q) AT(Y, coord[j]) += AT(Q, j) * n;
    }
}

/* Position i of the forward substitution: y_i = rhs - sum_k L_ik y_k */
INLINE void forward_row(const PrtLoopField *f, Block *b, int i, Lanes rhs) {
    for (int e = f->l_row_start[i]; e < f->l_row_start[i + 1]; e++) rhs -= AT(b->L, e) * AT(b->y, f->l_row[e]);
    AT(b->y, i) = rhs;
}

/* Position i of the back substitution, in place in y (the positions after i are done):
   y_i = y_i / D_i - sum_k L_ki y_k; returns y_i */
INLINE Lanes back_row(const PrtLoopField *f, Block *b, int i) {
    Lanes t = AT(b->y, i) * AT(b->inv_d, i);
    for (int ce = f->l_col_start[i]; ce < f->l_col_start[i + 1]; ce++) t -= AT(b->L, f->l_col_at[ce]) * AT(b->y, f->l_col[ce]);
    AT(b->y, i) = t;
    return t;
}

/* In elimination order, each row's W, its row of G (with the rows eliminated before it) and
   at once its row of L D L^T (up-looking: L_ik D_k = G_ik - sum_{m < k} L_im D_m L_km), and,
   with v, the forward substitution of G mu = A v. Returns false on a pivot that is not
   positive (with v NULL: the projection's check). */
INLINE bool factor_rows(const PrtLoopField *f, Block *b, const double *params, bool with_av) {
    bool positive = true;
    double *w = b->w; /* w_k = L_ik D_k of the current row i, by position k */
    for (int i = 0; i < f->C; i++) {
        int r = f->perm[i];
        row_weight(f, b, r, params);
        Lanes d = gram_entry(f, b, f->g_diag[i], r, r);
        for (int e = f->l_row_start[i]; e < f->l_row_start[i + 1]; e++) {
            int k = f->l_row[e];
            Lanes t = {0}; /* (0: fill-in) */
            if (f->g_row[e] >= 0) t = gram_entry(f, b, f->g_row[e], r, f->perm[k]);
            /* minus sum over m < k in rows i and k of w_m L_km */
            int a = f->l_row_start[i], c = f->l_row_start[k], c_end = f->l_row_start[k + 1];
            while (a < e && c < c_end) {
                if (f->l_row[a] < f->l_row[c]) a++;
                else if (f->l_row[a] > f->l_row[c]) c++;
                else t -= AT(w, f->l_row[a++]) * AT(b->L, c++);
            }
            Lanes L = t * AT(b->inv_d, k);
            AT(w, k) = t, AT(b->L, e) = L, d -= L * t;
        }
        Lanes one = {0};
        one += 1;
        AT(b->inv_d, i) = one / d;
        for (int l = 0; l < LANES; l++) positive = positive && d[l] > 0;
        if (with_av) forward_row(f, b, i, row_dot(f, r, b->A + (long)f->row_off[r] * LANES, b->v, NULL, NULL));
    }
    return positive;
}

/* The block's (Xdot, Pdot) from its x, v and dv, in four passes over the rows:
     1. W, G's rows, L D L^T and the forward substitution of G mu2 = A v (factor_rows);
     2. backwards: mu2, and Xdot = v - u, u = W^T mu2, and q - dV with q = B^T mu2, both
        accumulated in the outputs' places;
     3. rhs_r = (S mu2)_r - (B v)_r + (A M^-1 dV)_r = W_r . (dV - q) - B_r . (v - u) (the S term
        through the coordinates: sum_s S_rs mu2_s = B_r . u - W_r . q), that is
        -(W_r . (q - dV) + B_r . Xdot), and its forward substitution;
     4. backwards: mu1, and Pdot = q - dV + A^T mu1 (lambda = -mu). */
PRT_SIMD_CLONES static void block_field(PrtLoopField *f, Block *b, const double *params) {
    rows_evaluate(f, b, params + f->nmass, false);
    factor_rows(f, b, params, true);
    for (long i = 0; i < f->N; i++) AT(b->xdot, i) = AT(b->v, i), AT(b->pdot, i) = -AT(b->dv, i);
    for (int i = f->C - 1; i >= 0; i--) {
        int r = f->perm[i];
        Lanes mu2 = back_row(f, b, i);
        row_scatter(f, r, b->W + (long)f->row_off[r] * LANES, b->xdot, b->B + (long)f->row_off[r] * LANES, b->pdot, -mu2,
                    mu2);
    }
    for (int i = 0; i < f->C; i++) {
        int r = f->perm[i];
        forward_row(f, b, i, -row_dot(f, r, b->W + (long)f->row_off[r] * LANES, b->pdot, b->B + (long)f->row_off[r] * LANES, b->xdot));
    }
    for (int i = f->C - 1; i >= 0; i--) {
        int r = f->perm[i];
        Lanes mu1 = back_row(f, b, i);
        row_scatter(f, r, b->A + (long)f->row_off[r] * LANES, b->pdot, NULL, NULL, mu1, mu1);
    }
}

/* The batch (SoA, rows x n) into blocks of LANES states, block after block (each block's
   rows contiguous, a short last block repeating its last state): read row by row, so that a
   large system's batch is streamed once instead of gathered a cache line a row per block. */
static void batch_to_blocks(double *dst, const double *src, long rows, long n) {
    long nblocks = (n + LANES - 1) / LANES;
    for (long i = 0; i < rows; i++)
        for (long k = 0; k < nblocks; k++) {
            const double *s = src + i * n + k * LANES;
            double *d = dst + (k * rows + i) * LANES;
            int nl = n - k * LANES < LANES ? (int)(n - k * LANES) : LANES;
            if (nl == LANES) memcpy(d, s, sizeof(double) * LANES);
            else
                for (int l = 0; l < LANES; l++) d[l] = s[l < nl ? l : nl - 1];
        }
}

static void blocks_to_batch(double *dst, const double *src, long rows, long n) {
    long nblocks = (n + LANES - 1) / LANES;
    for (long i = 0; i < rows; i++)
        for (long k = 0; k < nblocks; k++) {
            const double *s = src + (k * rows + i) * LANES;
            double *d = dst + i * n + k * LANES;
            int nl = n - k * LANES < LANES ? (int)(n - k * LANES) : LANES;
            if (nl == LANES) memcpy(d, s, sizeof(double) * LANES);
            else memcpy(d, s, sizeof(double) * (size_t)nl);
        }
}

void prt_loop_field(PrtLoopField *f, long n, const double *z, PrtKernel minv_p, PrtKernel grad_v, const double *params,
                    double *zdot) {
    Block b = block_carve(f);
    long rows = 2L * f->N, nblocks = (n + LANES - 1) / LANES, need = 2 * nblocks * rows * LANES + 1;
    if (f->batch_cap < need) {
        free(f->batch);
        f->batch = prt_xalloc((size_t)need, sizeof(double), "the loop-form vector field's scratch");
        f->batch_cap = need;
    }
    double *in = f->batch, *out = f->batch + nblocks * rows * LANES;
    batch_to_blocks(in, z, rows, n);
    for (long k = 0; k < nblocks; k++) {
        b.x = in + k * rows * LANES;
        b.xdot = out + k * rows * LANES;
        b.pdot = b.xdot + (long)f->N * LANES;
        minv_p(LANES, b.x + (long)f->N * LANES, params, b.v);
        grad_v(LANES, b.x, params, b.dv);
        block_field(f, &b, params);
    }
    blocks_to_batch(zdot, out, rows, n);
}

/* One state x into every lane of the block: the projection's linear algebra runs on it. */
static void block_of_one(const PrtLoopField *f, Block *b, const double *x) {
    for (long i = 0; i < f->N; i++)
        for (int l = 0; l < LANES; l++) b->x[i * LANES + l] = b->v[i * LANES + l] = x[i];
}

PRT_SIMD_CLONES bool prt_loop_factor(PrtLoopField *f, const double *x, const double *params) {
    Block b = block_carve(f);
    block_of_one(f, &b, x);
    rows_evaluate(f, &b, params + f->nmass, false); /* B (of v = x) unused */
    bool positive = factor_rows(f, &b, params, false);
    for (int j = 0; j < f->C && positive; j++) positive = isfinite(b.inv_d[(long)j * LANES]);
    return positive;
}

PRT_SIMD_CLONES void prt_loop_apply(PrtLoopField *f, double *v, const double *rhs) {
    Block b = block_carve(f);
    for (int i = 0; i < f->C; i++) {
        Lanes t = {0};
        forward_row(f, &b, i, t + rhs[f->perm[i]]);
    }
    for (int i = f->C - 1; i >= 0; i--) {
        int r = f->perm[i], k = f->row_off[r + 1] - f->row_off[r];
        const int *coord = f->row_coord + f->row_off[r];
        const double *W = b.W + (long)f->row_off[r] * LANES;
        double mu = back_row(f, &b, i)[0];
        for (int j = 0; j < k; j++) v[coord[j]] -= W[j * LANES] * mu;
    }
}

/* A_r of every row for states [b0, b0 + nl) of x (SoA, n states): the row kernels with
   v = x, whose B is not used */
INLINE void block_gradients(PrtLoopField *f, Block *b, const double *x, long n, long b0, int nl, const double *params) {
    block_in(b->x, x, f->N, n, b0, nl);
    memcpy(b->v, b->x, sizeof(double) * (size_t)f->N * LANES);
    rows_evaluate(f, b, params + f->nmass, false);
}

PRT_SIMD_CLONES void prt_loop_jacobian(PrtLoopField *f, long n, const double *x, const double *params, double *J) {
    Block b = block_carve(f);
    memset(J, 0, sizeof(double) * (size_t)f->C * (size_t)f->N * (size_t)n);
    for (long b0 = 0; b0 < n; b0 += LANES) {
        int nl = n - b0 < LANES ? (int)(n - b0) : LANES;
        block_gradients(f, &b, x, n, b0, nl, params);
        for (int r = 0; r < f->C; r++) {
            int k = f->row_off[r + 1] - f->row_off[r];
            const int *coord = f->row_coord + f->row_off[r];
            const double *A = b.A + (long)f->row_off[r] * LANES;
            for (int j = 0; j < k; j++)
                for (int l = 0; l < nl; l++) J[((long)r * f->N + coord[j]) * n + b0 + l] = A[j * LANES + l];
        }
    }
}

PRT_SIMD_CLONES void prt_loop_row_norms(PrtLoopField *f, long n, const double *x, const double *params, double *norms) {
    Block b = block_carve(f);
    for (long b0 = 0; b0 < n; b0 += LANES) {
        int nl = n - b0 < LANES ? (int)(n - b0) : LANES;
        block_gradients(f, &b, x, n, b0, nl, params);
        for (int r = 0; r < f->C; r++) {
            const double *A = b.A + (long)f->row_off[r] * LANES;
            double t[LANES] = {0};
            for (int j = 0; j < f->row_off[r + 1] - f->row_off[r]; j++)
                for (int l = 0; l < LANES; l++) t[l] += A[j * LANES + l] * A[j * LANES + l];
            for (int l = 0; l < nl; l++) norms[(long)r * n + b0 + l] = sqrt(t[l]);
        }
    }
}

PRT_SIMD_CLONES void prt_loop_rows(PrtLoopField *f, const double *x, const double *v, const double *lengths, double *A,
                                   double *B) {
    Block b = block_carve(f);
    for (long i = 0; i < f->N; i++) AT(b.x, i) = (Lanes){0} + x[i], AT(b.v, i) = (Lanes){0} + v[i];
    rows_evaluate(f, &b, lengths, false);
    for (long e = 0; e < f->row_off[f->C]; e++) A[e] = b.A[e * LANES], B[e] = b.B[e * LANES];
}

PRT_SIMD_CLONES void prt_loop_constraints(PrtLoopField *f, long n, const double *xv, const double *lengths, double *phi,
                                          double *phidot) {
    Block b = block_carve(f);
    for (long b0 = 0; b0 < n; b0 += LANES) {
        int nl = n - b0 < LANES ? (int)(n - b0) : LANES;
        block_in(b.x, xv, f->N, n, b0, nl);
        if (phidot) block_in(b.v, xv + (long)f->N * n, f->N, n, b0, nl);
        else memcpy(b.v, b.x, sizeof(double) * (size_t)f->N * LANES);
        rows_evaluate(f, &b, lengths, true);
        for (int r = 0; r < f->C; r++) {
            if (phi)
                for (int l = 0; l < nl; l++) phi[(long)r * n + b0 + l] = b.phi[(long)r * LANES + l];
            if (!phidot) continue;
            const int *coord = f->row_coord + f->row_off[r];
            const double *A = b.A + (long)f->row_off[r] * LANES;
            double t[LANES] = {0};
            for (int j = 0; j < f->row_off[r + 1] - f->row_off[r]; j++)
                for (int l = 0; l < LANES; l++) t[l] += A[j * LANES + l] * b.v[(long)coord[j] * LANES + l];
            for (int l = 0; l < nl; l++) phidot[(long)r * n + b0 + l] = t[l];
        }
    }
}

void prt_loop_field_free(PrtLoopField *f) {
    if (!f) return;
    for (int c = 0; c < f->nclasses; c++)
        free(f->classes[c].rows), free(f->classes[c].coords), free(f->classes[c].lengths), free(f->classes[c].consts);
    free(f->classes), free(f->row_class), free(f->row_member), free(f->row_off), free(f->row_body_start);
    free(f->row_body), free(f->row_body_comps), free(f->nb_start), free(f->nb), free(f->ov_start), free(f->ov);
    free(f->perm), free(f->l_row_start), free(f->l_row), free(f->l_col_start), free(f->l_col), free(f->l_col_at);
    free(f->g_diag), free(f->g_row), free(f->row_coord), free(f->bodies), free(f->work), free(f->batch);
    memset(f, 0, sizeof *f);
}
