/* loop_field.c — the constrained vector field over index tables (loop_field.h). The
   equations are dynamics.c's: mu2 = G^-1 A v, mu1 = G^-1 (S mu2 - B v + A M^-1 dV),
   Xdot = v - W^T mu2, Pdot = -dV + A^T mu1 + B^T mu2, with W = M^-1 A^T and
   S_rs = B_r . W_s - W_r . B_s. Every value below is a vector over a block's states:
   v[i * LANES + l] is value i of the block's state l. */
#include "loop_block.h"
#include "core/alloc.h"
#include "math/simd_clones.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The largest input or output of a class's kernel call, in rows of LANES */
static long class_chunk(const PrtLoopField *f) {
    long most = 0;
    for (int c = 0; c < f->nclasses; c++) {
        const PrtRowClass *rc = &f->classes[c];
        long rows = call_rows(rc->nrows < CHUNK ? rc->nrows : CHUNK), nin = 2 * rc->k + rc->q + rc->nc,
             width = nin > 1 + 2 * rc->k ? nin : 1 + 2 * rc->k;
        if (rows * width > most) most = rows * width;
    }
    return most;
}

int prt_loop_widest_l_row(const PrtLoopField *f) {
    int most = 1;
    for (int i = 0; i < f->C; i++)
        if (f->l_row_start[i + 1] - f->l_row_start[i] > most) most = f->l_row_start[i + 1] - f->l_row_start[i];
    return most;
}

/* The row kernels' outputs of a block, in rows of LANES (see prt_loop_prepare) */
static long rows_area(const PrtLoopField *f) {
    long total = 0;
    for (int c = 0; c < f->nclasses; c++) {
        const PrtRowClass *rc = &f->classes[c];
        for (int m0 = 0; m0 < rc->nrows; m0 += CHUNK)
            total += (1L + 2 * rc->k) * call_rows(rc->nrows - m0 < CHUNK ? rc->nrows - m0 : CHUNK);
    }
    return total;
}

static long block_doubles(const PrtLoopField *f) {
    long total = 4L * f->N + class_chunk(f);
    long K = f->row_off[f->C], nnz = f->l_row_start[f->C];
    total += rows_area(f) + K + nnz + 2L * f->C + f->l_row_most;
    return total * LANES;
}

/* The columns m < k that rows i and k of L share, for each entry e = (i, k) of L, found once:
   (m's place among row i's entries, m's entry in row k), for the factorization's updates
   without merging the two rows' columns every time (a rigid tree's rows are 15 entries long,
   and the merge's unpredictable branches were most of its factorization). Not kept where they
   would outnumber L's entries 32 to 1 (constraints all on one body: C^3 / 6 of them), which
   merge as before. */
static void l_pairs_prepare(PrtLoopField *f) {
    const char *what = "the loop-form vector field's tables";
    long nnz = f->l_row_start[f->C], npairs = 0;
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1) {
            if (npairs > 32 * nnz + 4096) return;
            f->l_pair_start = prt_xalloc((size_t)nnz + 1, sizeof(long), what);
            f->l_pairs = prt_xalloc(2 * (size_t)npairs + 1, sizeof(int), what);
            npairs = 0;
        }
        for (int i = 0; i < f->C; i++)
            for (int e = f->l_row_start[i]; e < f->l_row_start[i + 1]; e++) {
                if (pass == 1) f->l_pair_start[e] = npairs;
                int k = f->l_row[e], a = f->l_row_start[i], c = f->l_row_start[k], c_end = f->l_row_start[k + 1];
                while (a < e && c < c_end) {
                    if (f->l_row[a] < f->l_row[c]) a++;
                    else if (f->l_row[a] > f->l_row[c]) c++;
                    else {
                        if (pass == 1) f->l_pairs[2 * npairs] = a - f->l_row_start[i], f->l_pairs[2 * npairs + 1] = c;
                        a++, c++, npairs++;
                    }
                }
            }
    }
    f->l_pair_start[nnz] = npairs;
}

/* Where each row's kernel outputs are in Block.rows: the calls' outputs one after the other,
   class by class, CHUNK rows a call; a call of mn rows lays out phi, A[k], B[k] each as
   call_rows(mn) vectors, so row r's values are LANES apart from its neighbours' and
   row_step[r] = call_rows(mn) LANES apart from each other. And which rows have points alone
   (their W is A / m). */
void prt_loop_prepare(PrtLoopField *f) {
    if (f->row_rec) return;
    f->l_row_most = prt_loop_widest_l_row(f);
    f->row_rec = prt_xalloc((size_t)f->C + 1, sizeof(long), "the loop-form vector field's tables");
    f->row_step = prt_xalloc((size_t)f->C + 1, sizeof(long), "the loop-form vector field's tables");
    long at = 0;
    for (int c = 0; c < f->nclasses; c++) {
        const PrtRowClass *rc = &f->classes[c];
        for (int m0 = 0; m0 < rc->nrows; m0 += CHUNK) {
            int mn = rc->nrows - m0 < CHUNK ? rc->nrows - m0 : CHUNK, stride = call_rows(mn);
            for (int m = 0; m < mn; m++)
                f->row_rec[rc->rows[m0 + m]] = at + (long)m * LANES, f->row_step[rc->rows[m0 + m]] = (long)stride * LANES;
            at += (1L + 2 * rc->k) * stride * LANES;
        }
    }
    f->row_points = prt_xalloc((size_t)f->C + 1, sizeof(bool), "the loop-form vector field's tables");
    for (int r = 0; r < f->C; r++) {
        f->row_points[r] = true;
        for (int e = f->row_body_start[r]; e < f->row_body_start[r + 1]; e++)
            f->row_points[r] = f->row_points[r] && f->bodies[f->row_body[e]].npoints == 1;
    }
    f->rigid = prt_xalloc((size_t)f->nbodies + 1, sizeof(int), "the loop-form vector field's tables");
    f->nrigid = 0;
    for (int e = 0; e < f->nbodies; e++)
        if (f->bodies[e].npoints > 1) f->rigid[f->nrigid++] = e;
    l_pairs_prepare(f);
}

Block prt_loop_block_carve(PrtLoopField *f, PrtLoopScratch *s) {
    prt_loop_prepare(f);
    long need = block_doubles(f) + 1;
    if (s->work_cap < need) {
        free(s->work);
        s->work = prt_xalloc((size_t)need, sizeof(double), "the loop-form vector field's scratch");
        s->work_cap = need;
    }
    if (!s->row_scale) {
        s->row_scale = prt_xalloc((size_t)f->row_off[f->C] + 1, sizeof(double), "the loop-form vector field's scratch");
        s->coord_scale = prt_xalloc((size_t)f->N + 1, sizeof(double), "the loop-form vector field's scratch");
        s->body_inv_m = prt_xalloc((size_t)f->nbodies + 1, sizeof(double), "the loop-form vector field's scratch");
    }
    Block b = {0};
    b.row_scale = s->row_scale, b.coord_scale = s->coord_scale, b.body_inv_m = s->body_inv_m;
    double *at = s->work;
    long N = f->N, K = f->row_off[f->C], C = f->C;
    b.x = at, at += N * LANES;
    b.v = at, at += N * LANES;
    b.xdot = at, at += N * LANES;
    b.pdot = at, at += N * LANES;
    b.in = at, at += class_chunk(f) * LANES;
    b.rows = at, at += rows_area(f) * LANES;
    b.W = at, at += K * LANES;
    b.L = at, at += (long)f->l_row_start[C] * LANES;
    b.w = at, at += (long)f->l_row_most * LANES;
    b.inv_d = at, at += C * LANES;
    b.y = at;
    return b;
}

/* The weights of this call's masses: a row of point masses alone has W_r = A_r / m
   coordinate by coordinate, so it keeps no W_r of its own (4 of a 2-D link's 16 vectors a
   block: a long chain's block is then about 1 MB at 1000 links, the size of the L2 cache):
   row_scale[row_off[r] + j] is 1 / m of its local coordinate j, and the row's weights are
   A_r times it. The other rows keep W_r (row_weight), with row_scale 1. */
void prt_loop_weights_prepare(const PrtLoopField *f, PrtLoopScratch *s, const double *params) {
    /* and for block_minv: 1 / m at a point's coordinates, 1 / lambda_a at a rigid body's
       point a >= 1 */
    for (int e = 0; e < f->nbodies; e++) {
        const PrtLoopBody *body = &f->bodies[e];
        s->body_inv_m[e] = 1 / params[body->mass];
        for (int a = 0; a < body->npoints; a++)
            for (int c = 0; c < f->dim; c++)
                s->coord_scale[body->first + a * f->dim + c] = body->npoints == 1 ? s->body_inv_m[e]
                                                               : a > 0             ? 1 / params[body->mass + a]
                                                                                   : 0;
    }
    for (int r = 0; r < f->C; r++) {
        double *scale = s->row_scale + f->row_off[r];
        int o = 0;
        for (int e = f->row_body_start[r]; e < f->row_body_start[r + 1]; e++)
            for (int c = 0; c < f->row_body_comps[e] * f->bodies[f->row_body[e]].npoints; c++, o++)
                scale[o] = f->row_points[r] ? 1 / params[f->bodies[f->row_body[e]].mass] : 1;
    }
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
    block_minv(f, b, b->x + (long)f->N * LANES, b->v);
    rows_evaluate(f, b, params + f->nmass);
    factor_rows(f, b, params, true);
    for (long i = 0; i < f->N; i++) AT(b->pdot, i) = -AT(b->pdot, i); /* (v is in xdot's place) */
    field_first_solve(f, b, NULL);
    for (int i = f->C - 1; i >= 0; i--) {
        int r = f->perm[i];
        Lanes mu1 = back_row(f, b, i);
        row_scatter(f, r, row_A(f, b, r), NULL, b->pdot, NULL, NULL, mu1, mu1);
    }
}

/* States [b0, b0 + m) of the batch (SoA, rows x n) into blocks of LANES states, block after
   block (each block's rows contiguous, a short last block repeating its last state): read
   row by row, so that a large system's batch is streamed instead of gathered a cache line a
   row per block. */
static void batch_to_blocks(double *dst, const double *src, long rows, long n, long b0, long m) {
    long nblocks = (m + LANES - 1) / LANES;
    for (long i = 0; i < rows; i++)
        for (long k = 0; k < nblocks; k++) {
            const double *s = src + i * n + b0 + k * LANES;
            double *d = dst + (k * rows + i) * LANES;
            int nl = m - k * LANES < LANES ? (int)(m - k * LANES) : LANES;
            if (nl == LANES) memcpy(d, s, sizeof(double) * LANES);
            else
                for (int l = 0; l < LANES; l++) d[l] = s[l < nl ? l : nl - 1];
        }
}

/* Blocks a group: the batch's states go into blocks a group at a time, in the scratch's batch, so that
   the scratch does not grow with the batch (a 1000-link chain's blocks take 32 KB a state:
   128 MB for a batch of 4096, now at most 8 MB). Large groups: the copy reads each row of
   the batch a group's states at a time, and 200 states of a 1000-link chain in groups of 8
   blocks took 4 % longer than in one. A block's results go from its scratch straight into
   the batch (3 % faster than through a second batch of blocks). */
enum { GROUP_BLOCKS = 32 };

void prt_loop_field(PrtLoopField *f, long n, const double *z, PrtKernel grad_v, const double *dv, const double *params,
                    double *zdot) {
    prt_loop_field_in(f, &f->scratch, n, z, grad_v, dv, params, zdot);
}

void prt_loop_field_in(PrtLoopField *f, PrtLoopScratch *s, long n, const double *z, PrtKernel grad_v, const double *dv,
                       const double *params, double *zdot) {
    Block b = prt_loop_block_carve(f, s);
    prt_loop_weights_prepare(f, s, params);
    long rows = 2L * f->N, group = GROUP_BLOCKS * LANES, nblocks = (n + LANES - 1) / LANES,
         need = (nblocks < GROUP_BLOCKS ? nblocks : GROUP_BLOCKS) * rows * LANES + 1;
    if (s->batch_cap < need) {
        free(s->batch);
        s->batch = prt_xalloc((size_t)need, sizeof(double), "the loop-form vector field's scratch");
        s->batch_cap = need;
    }
    b.pdot = b.xdot + (long)f->N * LANES;
    b.v = b.xdot; /* Xdot = v - W^T mu2 is accumulated on v */
    for (long g0 = 0; g0 < n; g0 += group) {
        long m = n - g0 < group ? n - g0 : group;
        batch_to_blocks(s->batch, z, rows, n, g0, m);
        for (long k = 0; k < (m + LANES - 1) / LANES; k++) {
            b.x = s->batch + k * rows * LANES;
            int nl = m - k * LANES < LANES ? (int)(m - k * LANES) : LANES;
            if (grad_v) grad_v(LANES, b.x, params, b.pdot); /* dV, negated in block_field */
            else block_in(b.pdot, dv, f->N, n, g0 + k * LANES, nl);
            block_field(f, &b, params);
            block_out(zdot, b.xdot, rows, n, g0 + k * LANES, nl);
        }
    }
}

void prt_loop_accel(PrtLoopField *f, long n, const double *xvf, const double *params, double *out) {
    prt_loop_accel_in(f, &f->scratch, n, xvf, params, out);
}

PRT_SIMD_CLONES void prt_loop_accel_in(PrtLoopField *f, PrtLoopScratch *s, long n, const double *xvf,
                                       const double *params, double *out) {
    Block b = prt_loop_block_carve(f, s);
    prt_loop_weights_prepare(f, s, params);
    long N = f->N;
    for (long b0 = 0; b0 < n; b0 += LANES) {
        int nl = n - b0 < LANES ? (int)(n - b0) : LANES;
        block_in(b.x, xvf, N, n, b0, nl);
        block_in(b.v, xvf + N * n, N, n, b0, nl);
        block_in(b.pdot, xvf + 2 * N * n, N, n, b0, nl);
        block_accel(f, &b, params, b.pdot, NULL);
        block_out(out, b.xdot, N, n, b0, nl);
    }
}

/* One state x into every lane of the block: the projection's linear algebra runs on it. */
static void block_of_one(const PrtLoopField *f, Block *b, const double *x) {
    for (long i = 0; i < f->N; i++)
        for (int l = 0; l < LANES; l++) b->x[i * LANES + l] = b->v[i * LANES + l] = x[i];
}

PRT_SIMD_CLONES bool prt_loop_factor(PrtLoopField *f, const double *x, const double *params) {
    Block b = prt_loop_block_carve(f, &f->scratch);
    prt_loop_weights_prepare(f, &f->scratch, params);
    block_of_one(f, &b, x);
    rows_evaluate(f, &b, params + f->nmass); /* B (of v = x) unused */
    bool positive = factor_rows(f, &b, params, false);
    for (int j = 0; j < f->C && positive; j++) positive = isfinite(b.inv_d[(long)j * LANES]);
    /* the point rows' W too, as prt_loop_apply's callers evaluate the rows (Phi) in between */
    for (int r = 0; r < f->C; r++)
        for (int j = 0; f->row_points[r] && j < row_width(f, r); j++)
            VAT(row_W(f, &b, r), j) = VAT(row_A(f, &b, r), j) * b.row_scale[f->row_off[r] + j];
    return positive;
}

PRT_SIMD_CLONES void prt_loop_apply(PrtLoopField *f, double *v, const double *rhs) {
    Block b = prt_loop_block_carve(f, &f->scratch);
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
    rows_evaluate(f, b, params + f->nmass);
}

PRT_SIMD_CLONES void prt_loop_jacobian(PrtLoopField *f, long n, const double *x, const double *params, double *J) {
    Block b = prt_loop_block_carve(f, &f->scratch);
    memset(J, 0, sizeof(double) * (size_t)f->C * (size_t)f->N * (size_t)n);
    for (long b0 = 0; b0 < n; b0 += LANES) {
        int nl = n - b0 < LANES ? (int)(n - b0) : LANES;
        block_gradients(f, &b, x, n, b0, nl, params);
        for (int r = 0; r < f->C; r++) {
            const int *coord = f->row_coord + f->row_off[r];
            Vecs A = row_A(f, &b, r);
            for (int j = 0; j < row_width(f, r); j++)
                for (int l = 0; l < nl; l++) J[((long)r * f->N + coord[j]) * n + b0 + l] = VAT(A, j)[l];
        }
    }
}

PRT_SIMD_CLONES void prt_loop_row_norms(PrtLoopField *f, long n, const double *x, const double *params, double *norms) {
    Block b = prt_loop_block_carve(f, &f->scratch);
    for (long b0 = 0; b0 < n; b0 += LANES) {
        int nl = n - b0 < LANES ? (int)(n - b0) : LANES;
        block_gradients(f, &b, x, n, b0, nl, params);
        for (int r = 0; r < f->C; r++) {
            Vecs A = row_A(f, &b, r);
            Lanes t = {0};
            for (int j = 0; j < row_width(f, r); j++) t += VAT(A, j) * VAT(A, j);
            for (int l = 0; l < nl; l++) norms[(long)r * n + b0 + l] = sqrt(t[l]);
        }
    }
}

PRT_SIMD_CLONES void prt_loop_rows(PrtLoopField *f, const double *x, const double *v, const double *lengths, double *A,
                                   double *B) {
    Block b = prt_loop_block_carve(f, &f->scratch);
    for (long i = 0; i < f->N; i++) AT(b.x, i) = (Lanes){0} + x[i], AT(b.v, i) = (Lanes){0} + v[i];
    rows_evaluate(f, &b, lengths);
    for (int r = 0; r < f->C; r++)
        for (int j = 0; j < row_width(f, r); j++)
            A[f->row_off[r] + j] = VAT(row_A(f, &b, r), j)[0], B[f->row_off[r] + j] = VAT(row_B(f, &b, r), j)[0];
}

PRT_SIMD_CLONES void prt_loop_constraints(PrtLoopField *f, long n, const double *xv, const double *lengths, double *phi,
                                          double *phidot) {
    Block b = prt_loop_block_carve(f, &f->scratch);
    for (long b0 = 0; b0 < n; b0 += LANES) {
        int nl = n - b0 < LANES ? (int)(n - b0) : LANES;
        block_in(b.x, xv, f->N, n, b0, nl);
        if (phidot) block_in(b.v, xv + (long)f->N * n, f->N, n, b0, nl);
        else memcpy(b.v, b.x, sizeof(double) * (size_t)f->N * LANES);
        rows_evaluate(f, &b, lengths);
        for (int r = 0; r < f->C; r++) {
            if (phi)
                for (int l = 0; l < nl; l++) phi[(long)r * n + b0 + l] = row_phi(f, &b, r)[l];
            if (!phidot) continue;
            Lanes t = row_dot(f, r, row_A(f, &b, r), NULL, b.v, NULL, NULL);
            for (int l = 0; l < nl; l++) phidot[(long)r * n + b0 + l] = t[l];
        }
    }
}

void prt_loop_minv(const PrtLoopField *f, long n, const double *p, const double *params, double *v) {
    int d = f->dim;
    for (int e = 0; e < f->nbodies; e++) {
        const PrtLoopBody *body = &f->bodies[e];
        double inv_m = 1 / params[body->mass];
        for (int c = 0; c < d; c++) {
            const double *p0 = p + (long)(body->first + c) * n;
            double *v0 = v + (long)(body->first + c) * n;
            for (long b = 0; b < n; b++) {
                double sum = p0[b];
                for (int a = 1; a < body->npoints; a++) sum += p0[(long)a * d * n + b];
                v0[b] = sum * inv_m;
                for (int a = 1; a < body->npoints; a++)
                    v0[(long)a * d * n + b] = (sum + p0[(long)a * d * n + b] * (1 / params[body->mass + a])) * inv_m;
            }
        }
    }
}

/* (M v)_0 = m ((1 + sum lambda) v_0 - sum_a lambda_a v_a), (M v)_a = m lambda_a (v_a - v_0),
   as dynamics.c's apply_m computes them */
void prt_loop_mass(const PrtLoopField *f, long n, const double *v, const double *params, double *p) {
    int d = f->dim;
    for (int e = 0; e < f->nbodies; e++) {
        const PrtLoopBody *body = &f->bodies[e];
        double m = params[body->mass];
        for (int c = 0; c < d; c++) {
            const double *v0 = v + (long)(body->first + c) * n;
            double *p0 = p + (long)(body->first + c) * n;
            for (long b = 0; b < n; b++) {
                double acc = v0[b];
                for (int a = 1; a < body->npoints; a++) {
                    double rel = v0[(long)a * d * n + b] - v0[b], la = params[body->mass + a];
                    acc -= la * rel;
                    p0[(long)a * d * n + b] = m * (la * rel);
                }
                p0[b] = m * acc;
            }
        }
    }
}

void prt_loop_scratch_free(PrtLoopScratch *s) {
    free(s->work), free(s->batch), free(s->rev), free(s->row_scale), free(s->coord_scale), free(s->body_inv_m);
    memset(s, 0, sizeof *s);
}

void prt_loop_field_release(PrtLoopField *f) {
    prt_loop_scratch_free(&f->scratch);
}

void prt_loop_field_free(PrtLoopField *f) {
    if (!f) return;
    for (int c = 0; c < f->nclasses; c++)
        free(f->classes[c].rows), free(f->classes[c].coords), free(f->classes[c].lengths), free(f->classes[c].consts);
    free(f->classes), free(f->row_class), free(f->row_member), free(f->row_off), free(f->row_body_start);
    free(f->row_body), free(f->row_body_comps), free(f->nb_start), free(f->nb), free(f->ov_start), free(f->ov);
    free(f->perm), free(f->l_row_start), free(f->l_row), free(f->l_col_start), free(f->l_col), free(f->l_col_at);
    free(f->g_diag), free(f->g_row), free(f->row_coord), free(f->bodies);
    free(f->row_points), free(f->row_rec), free(f->row_step), free(f->l_pair_start), free(f->l_pairs);
    free(f->rigid);
    prt_loop_scratch_free(&f->scratch);
    memset(f, 0, sizeof *f);
}
