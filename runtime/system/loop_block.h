/* loop_block.h — the loop-form field's block of LANES states and the passes over the rows
   that loop_field.c (the field) and loop_field_vjp.c (its reverse mode) share: a block's
   scratch, the row kernels' outputs, M^-1 body by body, the Gram matrix's entries, L D L^T
   and its substitutions, the gathers and scatters over a row's local coordinates. Internal
   to the runtime. */
#ifndef PRT_LOOP_BLOCK_H
#define PRT_LOOP_BLOCK_H
#include "loop_field.h"

#include <string.h>

enum { LANES = PRT_LOOP_LANES };
/* Rows a row kernel's call takes: its inputs and outputs stay in the cache (all of a
   1000-link chain's at once are 1 MB a block) */
enum { CHUNK = 64 };

/* The rows a call of mn rows computes: mn, and one more where mn rows of LANES doubles are a
   multiple of 2 KB. A call's values lie mn LANES apart (row_A); at 4 KB apart a row's phi,
   A and B fell on one set of the L1 cache and their loads and stores aliased (the CPU
   compares addresses modulo 4 KB): a 1000-link chain's field took 10-25 % longer with 64
   rows a call than with 60. */
static inline int call_rows(int mn) { return (mn * LANES * (int)sizeof(double)) % 2048 == 0 ? mn + 1 : mn; }

/* The helpers of block_field go into each of its SIMD clones (simd_clones.h), so that their
   lane loops are one AVX-512 or two AVX2 instructions where the machine has them */
#define INLINE static inline __attribute__((always_inline))

/* A value over a block's LANES states, as one vector of GCC's vector extension (in the SIMD
   clones one AVX-512 register, two AVX2 or four SSE2 ones): the lane loops it replaces were
   left scalar where GCC could not rule out aliasing. AT(p, i) is value i of block vector p.
   GCC gives a vector type its element's alias set, so a Lanes access aliases the double
   arrays it reads and writes and nothing else: not the int tables or the fields of f, which
   stay in registers across the stores (with may_alias they were loaded again after each:
   block_field's AVX-512 code 2973 -> 2145 lines, the field 6-12 % faster). */
typedef double Lanes __attribute__((vector_size(LANES * sizeof(double)), aligned(sizeof(double))));
#define AT(p, i) (*(Lanes *)((p) + (long)(i) * LANES))
/* (the helpers that take or return Lanes are always inlined: no call passes one in registers) */
#pragma GCC diagnostic ignored "-Wpsabi"

/* The block's scratch, carved from the scratch's work: the block's states (x, v = M^-1 p) and its
   outputs (dV goes into pdot), N rows of LANES each; a row kernel call's input; the row
   kernels' outputs where the calls leave them (per row phi_r, A_r, B_r: see row_A); per row
   of rigid bodies its W (k values); L, and the solves' vectors by position; w, one row of
   L D. Every loop runs over all LANES lanes (a short last block repeats its last state), so
   that each compiles to a few vector instructions. */
typedef struct Block {
    double *in; /* a class's kernel call */
    double *x, *v, *xdot, *pdot;
    double *rows, *W, *L, *w, *inv_d, *y;
    const double *row_scale, *coord_scale, *body_inv_m; /* the scratch's mass factors */
} Block;

/* k values, value j at at + j * step (LANES for a row's own values; a row kernel call's
   rows x LANES for its outputs, left in place) */
typedef struct Vecs {
    double *at;
    long step;
} Vecs;
#define VAT(p, j) (*(Lanes *)((p).at + (long)(j) * (p).step))

/* The block's values in s->work, grown on first use (the tables laid out once) */
Block prt_loop_block_carve(PrtLoopField *f, PrtLoopScratch *s);
/* The masses' factors the passes read (s's row_scale, coord_scale, body_inv_m) for params */
void prt_loop_weights_prepare(const PrtLoopField *f, PrtLoopScratch *s, const double *params);

/* rows rows of src (SoA, n states) from state b0: nl states into dst (LANES a row), the last
   one repeated */
static inline void block_in(double *dst, const double *src, long rows, long n, long b0, int nl) {
    for (long i = 0; i < rows; i++) {
        const double *s = src + i * n + b0;
        double *d = dst + i * LANES;
        if (nl == LANES) memcpy(d, s, sizeof(double) * LANES);
        else
            for (int l = 0; l < LANES; l++) d[l] = s[l < nl ? l : nl - 1];
    }
}

/* the first nl states of a block (rows rows of LANES) into states [b0, b0 + nl) of dst (SoA,
   n states) */
static inline void block_out(double *dst, const double *src, long rows, long n, long b0, int nl) {
    for (long i = 0; i < rows; i++)
        if (nl == LANES) memcpy(dst + i * n + b0, src + i * LANES, sizeof(double) * LANES);
        else memcpy(dst + i * n + b0, src + i * LANES, sizeof(double) * (size_t)nl);
}

INLINE int row_width(const PrtLoopField *f, int r) { return f->row_off[r + 1] - f->row_off[r]; }

/* Row r's phi_r, A_r = dPhi_r/dX and B_r = d(A_r v)/dX on its local coordinates */
INLINE double *row_phi(const PrtLoopField *f, const Block *b, int r) { return b->rows + f->row_rec[r]; }
INLINE Vecs row_A(const PrtLoopField *f, const Block *b, int r) {
    return (Vecs){b->rows + f->row_rec[r] + f->row_step[r], f->row_step[r]};
}
INLINE Vecs row_B(const PrtLoopField *f, const Block *b, int r) {
    return (Vecs){b->rows + f->row_rec[r] + (1L + row_width(f, r)) * f->row_step[r], f->row_step[r]};
}

/* The inputs of a call of class rc's kernel on its rows [m0, m0 + mn) of the block into in
   (rows of nt = call_rows(mn) LANES): the rows' x[k], v[k], free lengths and own
   constants, and a padding row repeating the last row's */
INLINE void class_call_inputs(const PrtRowClass *rc, const Block *b, int m0, int mn, long nt, const double *lengths,
                              double *in) {
    int nin = 2 * rc->k + rc->q + rc->nc;
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
    for (long at = (long)mn * LANES; at < nt; at += LANES) /* a padding row: the last row's inputs */
        for (int j = 0; j < nin; j++) memcpy(in + j * nt + at, in + j * nt + (long)(mn - 1) * LANES, sizeof(double) * LANES);
}

/* Each class's rows of the block, CHUNK rows a kernel call: gather (x, v, lengths), call the
   class's kernel, which leaves phi_r, A_r, B_r in their places (row_A). */
INLINE void rows_evaluate(const PrtLoopField *f, Block *b, const double *lengths) {
    for (int c = 0; c < f->nclasses; c++) {
        const PrtRowClass *rc = &f->classes[c];
        for (int m0 = 0; m0 < rc->nrows; m0 += CHUNK) {
            int mn = rc->nrows - m0 < CHUNK ? rc->nrows - m0 : CHUNK;
            long nt = (long)call_rows(mn) * LANES;
            class_call_inputs(rc, b, m0, mn, nt, lengths, b->in);
            rc->kernel(nt, b->in, NULL, row_phi(f, b, rc->rows[m0]));
        }
    }
}

INLINE Vecs row_W(const PrtLoopField *f, const Block *b, int r) {
    return (Vecs){b->W + (long)f->row_off[r] * LANES, LANES};
}

/* Where row r's weights are: W_r[j] = VAT(weights, j) * scale[j] */
INLINE Vecs row_weights(const PrtLoopField *f, const Block *b, int r) {
    return f->row_points[r] ? row_A(f, b, r) : row_W(f, b, r);
}

/* W_r = M^-1 A_r body by body (Eq. 9: M^-1 = m^-1 (1 1^T + diag(0, 1/lambda_1, ...)) on
   each spatial component of a rigid body's points), for the rows with a rigid body */
INLINE void row_weight(const PrtLoopField *f, Block *b, int r, const double *params) {
    if (f->row_points[r]) return;
    int o = 0;
    Vecs A = row_A(f, b, r), W = row_W(f, b, r);
    for (int e = f->row_body_start[r]; e < f->row_body_start[r + 1]; e++) {
        const PrtLoopBody *body = &f->bodies[f->row_body[e]];
        int np = body->npoints, nc = f->row_body_comps[e];
        double inv_m = 1 / params[body->mass];
        if (np == 1) { /* a point: W = A / m */
            for (int c = 0; c < nc; c++, o++) VAT(W, o) = VAT(A, o) * inv_m;
            continue;
        }
        for (int g = 0; g < nc; g++, o += np) { /* one component of the body's points */
            Lanes sum = VAT(A, o);
            for (int a = 1; a < np; a++) sum += VAT(A, o + a);
            VAT(W, o) = sum * inv_m;
            for (int a = 1; a < np; a++) VAT(W, o + a) = (sum + VAT(A, o + a) * (1 / params[body->mass + a])) * inv_m;
        }
    }
}

/* v = M^-1 p of the block, body by body (Eq. 9; a body's coordinates point after point), with
   the operations of the system's MinvP kernel in its order, so that the results are its own:
   that kernel is straight-line code over every coordinate, at 1000 links more than the
   instruction cache holds, run once a block. */
INLINE void block_minv(const PrtLoopField *f, const Block *b, const double *p, double *v) {
    int d = f->dim;
    for (long i = 0; i < f->N; i++) AT(v, i) = AT(p, i) * b->coord_scale[i]; /* the points; rigid bodies next */
    for (int q = 0; q < f->nrigid; q++) {
        const PrtLoopBody *body = &f->bodies[f->rigid[q]];
        double inv_m = b->body_inv_m[f->rigid[q]];
        for (int c = 0; c < d; c++) {
            long first = body->first + c;
            Lanes sum = AT(p, first);
            for (int a = 1; a < body->npoints; a++) sum += AT(p, first + (long)a * d);
            AT(v, first) = sum * inv_m;
            for (int a = 1; a < body->npoints; a++)
                AT(v, first + (long)a * d) = (sum + AT(p, first + (long)a * d) * b->coord_scale[first + (long)a * d]) * inv_m;
        }
    }
}

/* The passes' loops over a row's local coordinates (or a Gram entry's pairs) are compiled
   for the common counts as constants too, unrolled: a chain's rows are all 2-D or 3-D links
   (4 or 6 coordinates, 2 or 3 pairs to a neighbour), and the loops' own counting and
   branching were a large part of the passes' instructions. SHAPES(n, CALL) runs CALL(n) with
   n a constant where it is one of these. */
#define SHAPES(n, CALL)                                                                                                \
    switch (n) {                                                                                                       \
    case 2: CALL(2); break;                                                                                            \
    case 3: CALL(3); break;                                                                                            \
    case 4: CALL(4); break;                                                                                            \
    case 6: CALL(6); break;                                                                                            \
    default: CALL(n); break;                                                                                           \
    }

INLINE Lanes pairs_dot(const int *ov, int npairs, Vecs P, Vecs Q, const double *scale) {
    Lanes t = {0};
    for (int k = 0; k < npairs; k++) {
        int j = ov[2 * k + 1];
        t += VAT(P, ov[2 * k]) * (VAT(Q, j) * scale[j]);
    }
    return t;
}

/* The sum over the pairs of neighbour entry e = (r, s) of A_r[i] W_s[j]: G_rs */
INLINE Lanes gram_entry(const PrtLoopField *f, const Block *b, int e, int r, int s) {
    Vecs P = row_A(f, b, r), Q = row_weights(f, b, s);
    const double *scale = b->row_scale + f->row_off[s];
    const int *ov = f->ov + 2L * f->ov_start[e];
    Lanes t;
#define GRAM(n) t = pairs_dot(ov, n, P, Q, scale)
    SHAPES(f->ov_start[e + 1] - f->ov_start[e], GRAM)
#undef GRAM
    return t;
}

/* sum_j P[j] scale[j] X[coord j] + Q[j] Y[coord j] over row r's local coordinates (X, Y
   block vectors of N rows; scale NULL: 1; Q NULL: without the second term) */
INLINE Lanes coords_dot(const int *coord, int k, Vecs P, const double *scale, const double *X, const Vecs *Q,
                        const double *Y) {
    Lanes t = {0};
    for (int j = 0; j < k; j++) {
        Lanes p = VAT(P, j);
        if (scale) p *= scale[j];
        t += p * AT(X, coord[j]);
        if (Q) t += VAT(*Q, j) * AT(Y, coord[j]);
    }
    return t;
}

INLINE Lanes row_dot(const PrtLoopField *f, int r, Vecs P, const double *scale, const double *X, const Vecs *Q,
                     const double *Y) {
    const int *coord = f->row_coord + f->row_off[r];
    Lanes t;
#define DOT(n) t = coords_dot(coord, n, P, scale, X, Q, Y)
    SHAPES(row_width(f, r), DOT)
#undef DOT
    return t;
}

/* X[coord j] += P[j] scale[j] m and Y[coord j] += Q[j] n over row r's local coordinates
   (scale NULL: 1; Q NULL: X alone) */
INLINE void coords_scatter(const int *coord, int k, Vecs P, const double *scale, double *X, const Vecs *Q, double *Y,
                           Lanes m, Lanes n) {
    for (int j = 0; j < k; j++) {
        Lanes p = VAT(P, j);
        if (scale) p *= scale[j];
        AT(X, coord[j]) += p * m;
        if (Q) AT(Y, coord[j]) += VAT(*Q, j) * n;
    }
}

INLINE void row_scatter(const PrtLoopField *f, int r, Vecs P, const double *scale, double *X, const Vecs *Q, double *Y,
                        Lanes m, Lanes n) {
    const int *coord = f->row_coord + f->row_off[r];
#define SCATTER(k) coords_scatter(coord, k, P, scale, X, Q, Y, m, n)
    SHAPES(row_width(f, r), SCATTER)
#undef SCATTER
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
    double *w = b->w; /* L_ik D_k of the current row i, by its entries */
    for (int i = 0; i < f->C; i++) {
        int r = f->perm[i];
        row_weight(f, b, r, params);
        Lanes d = gram_entry(f, b, f->g_diag[i], r, r);
        for (int e = f->l_row_start[i]; e < f->l_row_start[i + 1]; e++) {
            int k = f->l_row[e];
            Lanes t = {0}; /* (0: fill-in) */
            if (f->g_row[e] >= 0) t = gram_entry(f, b, f->g_row[e], r, f->perm[k]);
            /* minus sum over m < k in rows i and k of w_m L_km: the pairs prt_loop_prepare found,
               or by merging the two rows' columns */
            int start = f->l_row_start[i];
            if (f->l_pairs)
                for (long q = f->l_pair_start[e]; q < f->l_pair_start[e + 1]; q++)
                    t -= AT(w, f->l_pairs[2 * q]) * AT(b->L, f->l_pairs[2 * q + 1]);
            else
                for (int a = start, c = f->l_row_start[k], c_end = f->l_row_start[k + 1]; a < e && c < c_end;) {
                    if (f->l_row[a] < f->l_row[c]) a++;
                    else if (f->l_row[a] > f->l_row[c]) c++;
                    else t -= AT(w, a++ - start) * AT(b->L, c++);
                }
            Lanes L = t * AT(b->inv_d, k);
            AT(w, e - start) = t, AT(b->L, e) = L, d -= L * t;
        }
        Lanes one = {0};
        one += 1;
        AT(b->inv_d, i) = one / d;
        for (int l = 0; l < LANES; l++) positive = positive && d[l] > 0;
        if (with_av) forward_row(f, b, i, row_dot(f, r, row_A(f, b, r), NULL, b->v, NULL, NULL));
    }
    return positive;
}

/* Passes 2 and 3 of the field (loop_field.c block_field), after factor_rows with A v: with v
   in b->xdot and -dV in b->pdot, backwards mu2 (by row into mu2 unless NULL), Xdot = v - W^T
   mu2 in b->xdot and d = B^T mu2 - dV in b->pdot; then the forward substitution of
   G mu1 = -(W d + B Xdot), whose back substitution the caller makes */
INLINE void field_first_solve(const PrtLoopField *f, Block *b, double *mu2) {
    for (int i = f->C - 1; i >= 0; i--) {
        int r = f->perm[i];
        Lanes m = back_row(f, b, i);
        if (mu2) AT(mu2, r) = m;
        Vecs B = row_B(f, b, r);
        row_scatter(f, r, row_weights(f, b, r), b->row_scale + f->row_off[r], b->xdot, &B, b->pdot, -m, m);
    }
    for (int i = 0; i < f->C; i++) {
        int r = f->perm[i];
        Vecs B = row_B(f, b, r);
        forward_row(f, b, i, -row_dot(f, r, row_weights(f, b, r), b->row_scale + f->row_off[r], b->pdot, &B, b->xdot));
    }
}

/* Eq. 7 on the block (dynamics.c's Accel): Xddot = a - W^T mu, mu = G^-1 (A a + B v),
   a = M^-1 F, with X in b->x, Xdot in b->v and F at F; a, then Xddot, in b->xdot; mu by row
   into mu unless NULL */
INLINE void block_accel(const PrtLoopField *f, Block *b, const double *params, const double *F, double *mu) {
    block_minv(f, b, F, b->xdot);
    rows_evaluate(f, b, params + f->nmass);
    factor_rows(f, b, params, false);
    for (int i = 0; i < f->C; i++) {
        int r = f->perm[i];
        Vecs B = row_B(f, b, r);
        forward_row(f, b, i, row_dot(f, r, row_A(f, b, r), NULL, b->xdot, &B, b->v));
    }
    for (int i = f->C - 1; i >= 0; i--) {
        int r = f->perm[i];
        Lanes m = back_row(f, b, i);
        if (mu) AT(mu, r) = m;
        row_scatter(f, r, row_weights(f, b, r), b->row_scale + f->row_off[r], b->xdot, NULL, NULL, -m, m);
    }
}

#endif
