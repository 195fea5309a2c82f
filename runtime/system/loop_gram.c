/* loop_gram.c — J J^T of the nearest-point projection by 2 x 2 blocks in the loop form's
   order (loop_gram.h). A block is 4 doubles, row-major: (Phi_r, PhiDot_r) x (Phi_q, PhiDot_q). */
#include "loop_gram.h"
#include "core/alloc.h"

#include <stdlib.h>
#include <string.h>

/* X = P Q and X = P Q^T of 2 x 2 blocks */
static void block_mul(const double *P, const double *Q, double *X) {
    double x0 = P[0] * Q[0] + P[1] * Q[2], x1 = P[0] * Q[1] + P[1] * Q[3], x2 = P[2] * Q[0] + P[3] * Q[2],
           x3 = P[2] * Q[1] + P[3] * Q[3];
    X[0] = x0, X[1] = x1, X[2] = x2, X[3] = x3;
}

static void block_mul_t(const double *P, const double *Q, double *X) {
    double x0 = P[0] * Q[0] + P[1] * Q[1], x1 = P[0] * Q[2] + P[1] * Q[3], x2 = P[2] * Q[0] + P[3] * Q[1],
           x3 = P[2] * Q[2] + P[3] * Q[3];
    X[0] = x0, X[1] = x1, X[2] = x2, X[3] = x3;
}

/* The block (r, q) of J J^T: over the coordinates rows r and q share, A_r A_q, A_r B_q,
   B_r A_q and B_r B_q + A_r A_q (the velocities' part of PhiDot's row is A) */
static void gram_block(const PrtLoopField *f, const double *A, const double *B, int r, int q, double *G) {
    double pp = 0, pd = 0, dp = 0, dd = 0;
    for (int a = f->row_off[r]; a < f->row_off[r + 1]; a++)
        for (int b = f->row_off[q]; b < f->row_off[q + 1]; b++)
            if (f->row_coord[a] == f->row_coord[b]) {
                double aa = A[a] * A[b];
                pp += aa, pd += A[a] * B[b], dp += B[a] * A[b], dd += B[a] * B[b] + aa;
            }
    G[0] = pp, G[1] = pd, G[2] = dp, G[3] = dd;
}

/* Up-looking, position by position (as loop_field.c's factor_rows, with blocks): for each
   entry (i, k) of L, T = G_ik - sum_{m < k} (L_im D_m) L_km^T is L_ik D_k, so
   L_ik = T D_k^-1 and D_i = G_ii - sum_k L_ik T^T. */
bool prt_loop_gram_factor(const PrtLoopField *f, const double *A, const double *B, PrtLoopGram *g) {
    const char *what = "the nearest projection's factor";
    if (!g->L) {
        g->L = prt_xalloc(4 * (size_t)f->l_row_start[f->C] + 1, sizeof(double), what);
        g->d_inv = prt_xalloc(4 * (size_t)f->C + 1, sizeof(double), what);
        g->w = prt_xalloc(4 * (size_t)prt_loop_widest_l_row(f), sizeof(double), what);
    }
    for (int i = 0; i < f->C; i++) {
        int r = f->perm[i], start = f->l_row_start[i];
        double D[4], LT[4];
        gram_block(f, A, B, r, r, D);
        for (int e = start; e < f->l_row_start[i + 1]; e++) {
            int k = f->l_row[e];
            double *T = g->w + 4 * (e - start), *L = g->L + 4L * e;
            gram_block(f, A, B, r, f->perm[k], T);
            int a = start, c = f->l_row_start[k], c_end = f->l_row_start[k + 1];
            while (a < e && c < c_end) { /* the columns m < k that rows i and k share */
                if (f->l_row[a] < f->l_row[c]) a++;
                else if (f->l_row[a] > f->l_row[c]) c++;
                else {
                    double P[4];
                    block_mul_t(g->w + 4 * (a++ - start), g->L + 4L * c++, P);
                    for (int j = 0; j < 4; j++) T[j] -= P[j];
                }
            }
            block_mul(T, g->d_inv + 4L * k, L);
            block_mul_t(L, T, LT);
            for (int j = 0; j < 4; j++) D[j] -= LT[j];
        }
        double det = D[0] * D[3] - D[1] * D[2], *inv = g->d_inv + 4L * i;
        if (!(D[0] > 0 && det > 0)) return false; /* (NaN too) */
        inv[0] = D[3] / det, inv[1] = -D[1] / det, inv[2] = -D[2] / det, inv[3] = D[0] / det;
    }
    return true;
}

void prt_loop_gram_solve(const PrtLoopField *f, const PrtLoopGram *g, double *y) {
    int C = f->C;
    for (int i = 0; i < C; i++) { /* L z = y */
        int r = f->perm[i];
        for (int e = f->l_row_start[i]; e < f->l_row_start[i + 1]; e++) {
            const double *L = g->L + 4L * e;
            int q = f->perm[f->l_row[e]];
            double u = y[q], v = y[C + q];
            y[r] -= L[0] * u + L[1] * v, y[C + r] -= L[2] * u + L[3] * v;
        }
    }
    for (int i = C - 1; i >= 0; i--) { /* D L^T y = z, the positions after i done */
        int r = f->perm[i];
        const double *inv = g->d_inv + 4L * i;
        double u = inv[0] * y[r] + inv[1] * y[C + r], v = inv[2] * y[r] + inv[3] * y[C + r];
        for (int ce = f->l_col_start[i]; ce < f->l_col_start[i + 1]; ce++) {
            const double *L = g->L + 4L * f->l_col_at[ce];
            int q = f->perm[f->l_col[ce]];
            u -= L[0] * y[q] + L[2] * y[C + q], v -= L[1] * y[q] + L[3] * y[C + q];
        }
        y[r] = u, y[C + r] = v;
    }
}

void prt_loop_gram_free(PrtLoopGram *g) {
    free(g->L), free(g->d_inv), free(g->w);
    memset(g, 0, sizeof *g);
}
