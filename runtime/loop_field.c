/* loop_field.c — the constrained vector field over index tables (loop_field.h). The
   equations are dynamics.c's: mu2 = G^-1 A v, mu1 = G^-1 (S mu2 - B v + A M^-1 dV),
   Xdot = v - W^T mu2, Pdot = -dV + A^T mu1 + B^T mu2, with W = M^-1 A^T and
   S_rs = B_r . W_s - W_r . B_s. Every value below is a vector over a block's states:
   v[i * LANES + l] is value i of the block's state l. */
#include "loop_field.h"
#include "alloc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { LANES = PRT_LOOP_LANES };

/* The block's scratch, carved from f->work: per class its kernel's input and output, then
   per row its A, B, W (k values each), and the solve's vectors. */
typedef struct Block {
    double **in, **out;
    double *A, *B, *W, *Av, *G, *L, *w, *D, *inv_d, *y, *mu1, *mu2, *rhs;
} Block;

static long block_doubles(const PrtLoopField *f) {
    long total = 0;
    for (int c = 0; c < f->nclasses; c++) {
        const PrtRowClass *rc = &f->classes[c];
        total += (long)(2 * rc->k + rc->q + 1 + 2 * rc->k) * rc->nrows;
    }
    long K = f->row_off[f->C], nnz = f->l_row_start[f->C];
    total += 3 * K + (long)f->nb_start[f->C] + nnz + 8L * f->C;
    return total * LANES;
}

static Block block_carve(PrtLoopField *f) {
    long need = block_doubles(f) + 1;
    if (f->work_cap < need) {
        free(f->work);
        f->work = prt_xalloc((size_t)need, sizeof(double), "the loop-form vector field's scratch");
        f->work_cap = need;
    }
    if (!f->class_work) f->class_work = prt_xalloc(2 * (size_t)f->nclasses + 1, sizeof(double *), "the loop-form vector field's scratch");
    Block b = {.in = f->class_work, .out = f->class_work + f->nclasses};
    double *at = f->work;
    for (int c = 0; c < f->nclasses; c++) {
        const PrtRowClass *rc = &f->classes[c];
        b.in[c] = at, at += (long)(2 * rc->k + rc->q) * rc->nrows * LANES;
        b.out[c] = at, at += (long)(1 + 2 * rc->k) * rc->nrows * LANES;
    }
    long K = f->row_off[f->C], C = f->C;
    b.A = at, at += K * LANES;
    b.B = at, at += K * LANES;
    b.W = at, at += K * LANES;
    b.G = at, at += (long)f->nb_start[C] * LANES;
    b.L = at, at += (long)f->l_row_start[C] * LANES;
    b.Av = at, at += C * LANES;
    b.w = at, at += C * LANES;
    b.D = at, at += C * LANES;
    b.inv_d = at, at += C * LANES;
    b.y = at, at += C * LANES;
    b.mu1 = at, at += C * LANES;
    b.mu2 = at, at += C * LANES;
    b.rhs = at;
    return b;
}

/* Each class's rows for states [b0, b0 + nl): gather (x, v, lengths), call its kernel, and
   copy A_r and B_r out to the rows' places. */
static void rows_evaluate(const PrtLoopField *f, Block *b, long n, long b0, int nl, const double *x, const double *v,
                          const double *lengths) {
    for (int c = 0; c < f->nclasses; c++) {
        const PrtRowClass *rc = &f->classes[c];
        long nt = (long)rc->nrows * nl;
        double *in = b->in[c], *out = b->out[c];
        for (int m = 0; m < rc->nrows; m++) {
            const int *coord = rc->coords + (long)m * rc->k;
            for (int j = 0; j < rc->k; j++) {
                const double *xs = x + (long)coord[j] * n + b0, *vs = v + (long)coord[j] * n + b0;
                double *xi = in + j * nt + (long)m * nl, *vi = in + (rc->k + j) * nt + (long)m * nl;
                for (int l = 0; l < nl; l++) xi[l] = xs[l], vi[l] = vs[l];
            }
            for (int j = 0; j < rc->q; j++) {
                double len = lengths[rc->lengths[(long)m * rc->q + j]], *li = in + (2 * rc->k + j) * nt + (long)m * nl;
                for (int l = 0; l < nl; l++) li[l] = len;
            }
        }
        rc->kernel(nt, in, NULL, out);
        for (int m = 0; m < rc->nrows; m++) {
            int r = rc->rows[m];
            double *A = b->A + (long)f->row_off[r] * LANES, *B = b->B + (long)f->row_off[r] * LANES;
            for (int j = 0; j < rc->k; j++) {
                const double *a = out + (1 + j) * nt + (long)m * nl, *bb = out + (1 + rc->k + j) * nt + (long)m * nl;
                for (int l = 0; l < nl; l++) A[j * LANES + l] = a[l], B[j * LANES + l] = bb[l];
            }
        }
    }
}

/* W_r = M^-1 A_r body by body (Eq. 9: M^-1 = m^-1 (1 1^T + diag(0, 1/lambda_1, ...)) on
   each spatial component of a rigid body's points), and A_r v. */
static void rows_weight(const PrtLoopField *f, Block *b, long n, long b0, int nl, const double *v, const double *params) {
    int d = f->dim;
    for (int r = 0; r < f->C; r++) {
        const PrtRowClass *rc = &f->classes[f->row_class[r]];
        const int *coord = rc->coords + (long)f->row_member[r] * rc->k;
        const double *A = b->A + (long)f->row_off[r] * LANES;
        double *W = b->W + (long)f->row_off[r] * LANES, *av = b->Av + (long)r * LANES;
        int o = 0;
        for (int e = f->row_body_start[r]; e < f->row_body_start[r + 1]; e++) {
            const PrtLoopBody *body = &f->bodies[f->row_body[e]];
            double inv_m = 1 / params[body->mass];
            for (int c = 0; c < d; c++) {
                double sum[LANES];
                for (int l = 0; l < nl; l++) sum[l] = A[(o + c) * LANES + l];
                for (int a = 1; a < body->npoints; a++)
                    for (int l = 0; l < nl; l++) sum[l] += A[(o + a * d + c) * LANES + l];
                for (int l = 0; l < nl; l++) W[(o + c) * LANES + l] = sum[l] * inv_m;
                for (int a = 1; a < body->npoints; a++) {
                    double inv_la = 1 / params[body->mass + a];
                    for (int l = 0; l < nl; l++)
                        W[(o + a * d + c) * LANES + l] = (sum[l] + A[(o + a * d + c) * LANES + l] * inv_la) * inv_m;
                }
            }
            o += body->npoints * d;
        }
        for (int l = 0; l < nl; l++) av[l] = 0;
        for (int j = 0; j < rc->k; j++) {
            const double *vs = v + (long)coord[j] * n + b0;
            for (int l = 0; l < nl; l++) av[l] += A[j * LANES + l] * vs[l];
        }
    }
}

/* out = sum over the coordinates r and s share of P_r[i] Q_s[j] (local indices) */
static void overlap_dot(const PrtLoopField *f, int e, const double *P, const double *Q, int nl, double *out) {
    for (int l = 0; l < nl; l++) out[l] = 0;
    for (int t = f->ov_start[e]; t < f->ov_start[e + 1]; t++) {
        const double *p = P + (long)f->ov[2 * t] * LANES, *q = Q + (long)f->ov[2 * t + 1] * LANES;
        for (int l = 0; l < nl; l++) out[l] += p[l] * q[l];
    }
}

/* G_rs = A_r . W_s for s <= r, mirrored; then L D L^T in the compiler's order */
static void gram_factor(const PrtLoopField *f, Block *b, int nl) {
    for (int r = 0; r < f->C; r++)
        for (int e = f->nb_start[r]; e < f->nb_start[r + 1] && f->nb[e] <= r; e++) {
            int s = f->nb[e];
            overlap_dot(f, e, b->A + (long)f->row_off[r] * LANES, b->W + (long)f->row_off[s] * LANES, nl,
                        b->G + (long)e * LANES);
            if (s != r) memcpy(b->G + (long)f->nb_mirror[e] * LANES, b->G + (long)e * LANES, sizeof(double) * LANES);
        }
    for (int j = 0; j < f->C; j++) {
        /* w_k = L_jk D_k;  D_j = G_jj - sum_k L_jk w_k */
        double d[LANES];
        const double *gd = b->G + (long)f->g_diag[j] * LANES;
        for (int l = 0; l < nl; l++) d[l] = gd[l];
        for (int e = f->l_row_start[j]; e < f->l_row_start[j + 1]; e++) {
            int k = f->l_row[e];
            const double *L = b->L + (long)e * LANES, *D = b->D + (long)k * LANES;
            double *w = b->w + (long)k * LANES;
            for (int l = 0; l < nl; l++) w[l] = L[l] * D[l], d[l] -= L[l] * w[l];
        }
        double *D = b->D + (long)j * LANES, *inv = b->inv_d + (long)j * LANES;
        for (int l = 0; l < nl; l++) D[l] = d[l], inv[l] = 1 / d[l];
        /* L_ij = (G_ij - sum over k < j in both rows of L_ik w_k) / D_j */
        for (int ce = f->l_col_start[j]; ce < f->l_col_start[j + 1]; ce++) {
            int i = f->l_col[ce];
            double t[LANES];
            if (f->g_col[ce] >= 0) memcpy(t, b->G + (long)f->g_col[ce] * LANES, sizeof t);
            else memset(t, 0, sizeof t);
            int a = f->l_row_start[i], a_end = f->l_col_at[ce], c = f->l_row_start[j], c_end = f->l_row_start[j + 1];
            while (a < a_end && c < c_end) {
                if (f->l_row[a] < f->l_row[c]) a++;
                else if (f->l_row[a] > f->l_row[c]) c++;
                else {
                    const double *L = b->L + (long)a * LANES, *w = b->w + (long)f->l_row[a] * LANES;
                    for (int l = 0; l < nl; l++) t[l] -= L[l] * w[l];
                    a++, c++;
                }
            }
            double *L = b->L + (long)f->l_col_at[ce] * LANES;
            for (int l = 0; l < nl; l++) L[l] = t[l] * inv[l];
        }
    }
}

/* x = G^-1 rhs (rows in the original order) */
static void gram_solve(const PrtLoopField *f, Block *b, int nl, const double *rhs, double *x) {
    int C = f->C;
    double *y = b->y;
    for (int i = 0; i < C; i++) {
        double *yi = y + (long)i * LANES;
        const double *bi = rhs + (long)f->perm[i] * LANES;
        for (int l = 0; l < nl; l++) yi[l] = bi[l];
        for (int e = f->l_row_start[i]; e < f->l_row_start[i + 1]; e++) {
            const double *L = b->L + (long)e * LANES, *yk = y + (long)f->l_row[e] * LANES;
            for (int l = 0; l < nl; l++) yi[l] -= L[l] * yk[l];
        }
    }
    /* back substitution in place: y[i] becomes z[i], read by the rows above */
    for (int i = C - 1; i >= 0; i--) {
        double *zi = y + (long)i * LANES;
        const double *inv = b->inv_d + (long)i * LANES;
        for (int l = 0; l < nl; l++) zi[l] *= inv[l];
        for (int ce = f->l_col_start[i]; ce < f->l_col_start[i + 1]; ce++) {
            const double *L = b->L + (long)f->l_col_at[ce] * LANES, *zk = y + (long)f->l_col[ce] * LANES;
            for (int l = 0; l < nl; l++) zi[l] -= L[l] * zk[l];
        }
    }
    for (int i = 0; i < C; i++) memcpy(x + (long)f->perm[i] * LANES, y + (long)i * LANES, sizeof(double) * LANES);
}

void prt_loop_field(PrtLoopField *f, long n, const double *x, const double *minv_p, const double *dv,
                    const double *params, double *xdot, double *pdot) {
    Block b = block_carve(f);
    const double *lengths = params + f->nmass;
    for (long b0 = 0; b0 < n; b0 += LANES) {
        int nl = n - b0 < LANES ? (int)(n - b0) : LANES;
        rows_evaluate(f, &b, n, b0, nl, x, minv_p, lengths);
        rows_weight(f, &b, n, b0, nl, minv_p, params);
        gram_factor(f, &b, nl);
        gram_solve(f, &b, nl, b.Av, b.mu2);
        for (int r = 0; r < f->C; r++) {
            /* (S mu2)_r - (B v)_r + (A M^-1 dV)_r, with S_rs = B_r . W_s - W_r . B_s */
            const PrtRowClass *rc = &f->classes[f->row_class[r]];
            const int *coord = rc->coords + (long)f->row_member[r] * rc->k;
            const double *Br = b.B + (long)f->row_off[r] * LANES, *Wr = b.W + (long)f->row_off[r] * LANES;
            double t[LANES] = {0}, bw[LANES], wb[LANES];
            for (int e = f->nb_start[r]; e < f->nb_start[r + 1]; e++) {
                int s = f->nb[e];
                overlap_dot(f, e, Br, b.W + (long)f->row_off[s] * LANES, nl, bw);
                overlap_dot(f, f->nb_mirror[e], b.B + (long)f->row_off[s] * LANES, Wr, nl, wb); /* s's reads, r's W */
                const double *m2 = b.mu2 + (long)s * LANES;
                for (int l = 0; l < nl; l++) t[l] += (bw[l] - wb[l]) * m2[l];
            }
            double bv[LANES] = {0}, wd[LANES] = {0};
            for (int j = 0; j < rc->k; j++) {
                const double *vs = minv_p + (long)coord[j] * n + b0, *ds = dv + (long)coord[j] * n + b0;
                for (int l = 0; l < nl; l++) bv[l] += Br[j * LANES + l] * vs[l], wd[l] += Wr[j * LANES + l] * ds[l];
            }
            double *rhs = b.rhs + (long)r * LANES;
            for (int l = 0; l < nl; l++) rhs[l] = t[l] - bv[l] + wd[l];
        }
        gram_solve(f, &b, nl, b.rhs, b.mu1);
        for (int i = 0; i < f->N; i++)
            for (int l = 0; l < nl; l++) {
                xdot[(long)i * n + b0 + l] = minv_p[(long)i * n + b0 + l];
                pdot[(long)i * n + b0 + l] = -dv[(long)i * n + b0 + l];
            }
        /* lambda = -mu:  Xdot = v - W^T mu2,  Pdot = -dV + A^T mu1 + B^T mu2 */
        for (int r = 0; r < f->C; r++) {
            const PrtRowClass *rc = &f->classes[f->row_class[r]];
            const int *coord = rc->coords + (long)f->row_member[r] * rc->k;
            const double *A = b.A + (long)f->row_off[r] * LANES, *B = b.B + (long)f->row_off[r] * LANES,
                         *W = b.W + (long)f->row_off[r] * LANES, *m1 = b.mu1 + (long)r * LANES,
                         *m2 = b.mu2 + (long)r * LANES;
            for (int j = 0; j < rc->k; j++) {
                double *xd = xdot + (long)coord[j] * n + b0, *pd = pdot + (long)coord[j] * n + b0;
                for (int l = 0; l < nl; l++) {
                    xd[l] -= W[j * LANES + l] * m2[l];
                    pd[l] += A[j * LANES + l] * m1[l] + B[j * LANES + l] * m2[l];
                }
            }
        }
    }
}

bool prt_loop_factor(PrtLoopField *f, const double *x, const double *params) {
    Block b = block_carve(f);
    rows_evaluate(f, &b, 1, 0, 1, x, x, params + f->nmass); /* B (of v = x) unused */
    rows_weight(f, &b, 1, 0, 1, x, params);
    gram_factor(f, &b, 1);
    for (int j = 0; j < f->C; j++) /* positive pivots: G positive definite */
        if (!(b.D[(long)j * LANES] > 0) || !isfinite(b.inv_d[(long)j * LANES])) return false;
    return true;
}

void prt_loop_apply(PrtLoopField *f, double *v, const double *rhs) {
    Block b = block_carve(f);
    for (int r = 0; r < f->C; r++) b.rhs[(long)r * LANES] = rhs[r];
    gram_solve(f, &b, 1, b.rhs, b.mu1);
    for (int r = 0; r < f->C; r++) {
        const PrtRowClass *rc = &f->classes[f->row_class[r]];
        const int *coord = rc->coords + (long)f->row_member[r] * rc->k;
        const double *W = b.W + (long)f->row_off[r] * LANES;
        for (int j = 0; j < rc->k; j++) v[coord[j]] -= W[j * LANES] * b.mu1[(long)r * LANES];
    }
}

void prt_loop_jacobian(PrtLoopField *f, long n, const double *x, const double *params, double *J) {
    Block b = block_carve(f);
    memset(J, 0, sizeof(double) * (size_t)f->C * (size_t)f->N * (size_t)n);
    for (long b0 = 0; b0 < n; b0 += LANES) {
        int nl = n - b0 < LANES ? (int)(n - b0) : LANES;
        rows_evaluate(f, &b, n, b0, nl, x, x, params + f->nmass); /* B (of v = x) unused */
        for (int r = 0; r < f->C; r++) {
            const PrtRowClass *rc = &f->classes[f->row_class[r]];
            const int *coord = rc->coords + (long)f->row_member[r] * rc->k;
            const double *A = b.A + (long)f->row_off[r] * LANES;
            for (int j = 0; j < rc->k; j++)
                for (int l = 0; l < nl; l++) J[((long)r * f->N + coord[j]) * n + b0 + l] = A[j * LANES + l];
        }
    }
}

void prt_loop_field_free(PrtLoopField *f) {
    if (!f) return;
    for (int c = 0; c < f->nclasses; c++) free(f->classes[c].rows), free(f->classes[c].coords), free(f->classes[c].lengths);
    free(f->classes), free(f->row_class), free(f->row_member), free(f->row_off), free(f->row_body_start);
    free(f->row_body), free(f->nb_start), free(f->nb), free(f->nb_mirror), free(f->ov_start), free(f->ov);
    free(f->perm), free(f->l_row_start), free(f->l_row), free(f->l_col_start), free(f->l_col), free(f->l_col_at);
    free(f->g_diag), free(f->g_col), free(f->bodies), free(f->work), free(f->class_work);
    memset(f, 0, sizeof *f);
}
