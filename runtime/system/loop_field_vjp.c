/* loop_field_vjp.c — reverse mode of the loop form's dynamics (loop_field.h): the Hamiltonian
   field, the Lagrangian acceleration (Eq. 7, prt_loop_accel_vjp below) and M^-1 and M, so that
   a CHNN or CLNN of a large system trains without the unrolled Field and FieldVJP kernels (a
   1000-link chain's: 400,000 instructions, seconds of LLVM) or Accel and AccelVJP.

   The forward pass is loop_field.c's, block by block, keeping mu2 and mu1:
     v = M^-1 p; rows (A_r, B_r); W_r = M^-1 A_r; G = A W^T = L D L^T; mu2 = G^-1 A v;
     Xdot = v - W^T mu2; d = B^T mu2 - dV; mu1 = -G^-1 (W d + B Xdot); Pdot = d + A^T mu1.
   Its adjoint, from the cotangents (Xb, Pb) of (Xdot, Pdot), with the same factorization of
   G for the two solves (G is symmetric):
     db = Pb, nu1 = G^-1 (A Pb): db -= W^T nu1, Xb -= B^T nu1;
     nu2 = G^-1 (B db - W Xb);  vb = Xb + A^T nu2;  dVb = -db;
   and the rows' adjoints, each on its local coordinates (u1 = W^T mu1, the Gram matrix's
   adjoint -(nu1 mu1^T + nu2 mu2^T) contracted through the coordinates, so that no C x C
   value is formed):
     Ab_r = mu1_r Pb + nu2_r Xdot - nu1_r u1 + M^-1 Wb_r,
     Bb_r = mu2_r db - nu1_r Xdot,
     Wb_r = -nu1_r d - mu2_r Xb - mu1_r A^T nu1 - mu2_r A^T nu2,
   which the classes' VJP kernels take back to x and v; then pb = M^-1 vb. The masses'
   adjoints come from the two products by M^-1 (v and W). */
#include "loop_block.h"
#include "core/alloc.h"
#include "math/simd_clones.h"

#include <stdlib.h>
#include <string.h>

/* A block's reverse-pass values (the scratch's rev), after the Block's own: N values each of p, dV, the
   cotangents Xb and Pb (Pb becomes db), x's and v's adjoints, W^T mu1, A^T nu1 and A^T nu2;
   mu1, mu2, nu1, nu2 by row; the rows' adjoints Ab, Bb, Wb at row_off; a class's VJP call */
typedef struct Rev {
    double *p, *dv, *xb, *pb, *x_adj, *v_adj, *u1, *at1, *at2;
    double *mu1, *mu2, *nu1, *nu2;
    double *Ab, *Bb, *Wb;
    double *call_in, *call_out;
    double *mass_adj; /* per parameter (masses, then free lengths), summed over the batch's blocks */
} Rev;

static int nlengths(const PrtLoopField *f) {
    int most = 0;
    for (int c = 0; c < f->nclasses; c++)
        for (long e = 0; e < (long)f->classes[c].nrows * f->classes[c].q; e++)
            if (f->classes[c].lengths[e] + 1 > most) most = f->classes[c].lengths[e] + 1;
    return most;
}

static Rev rev_carve(const PrtLoopField *f, PrtLoopScratch *s) {
    long N = f->N, C = f->C, K = f->row_off[f->C], call = 1, np = f->nmass + nlengths(f);
    for (int c = 0; c < f->nclasses; c++) {
        const PrtRowClass *rc = &f->classes[c];
        long rows = call_rows(rc->nrows < CHUNK ? rc->nrows : CHUNK), width = 4L * rc->k + rc->q + rc->nc + 1;
        if (rows * width > call) call = rows * width;
    }
    long need = (9 * N + 4 * C + 3 * K + call + (call + 1)) * LANES + np + 1;
    if (s->rev_cap < need) {
        free(s->rev);
        s->rev = prt_xalloc((size_t)need, sizeof(double), "the loop-form field's reverse pass");
        s->rev_cap = need;
    }
    Rev r;
    double *at = s->rev;
    double **n_vecs[] = {&r.p, &r.dv, &r.xb, &r.pb, &r.x_adj, &r.v_adj, &r.u1, &r.at1, &r.at2};
    for (size_t i = 0; i < sizeof n_vecs / sizeof n_vecs[0]; i++) *n_vecs[i] = at, at += N * LANES;
    r.mu1 = at, at += C * LANES;
    r.mu2 = at, at += C * LANES;
    r.nu1 = at, at += C * LANES;
    r.nu2 = at, at += C * LANES;
    r.Ab = at, at += K * LANES;
    r.Bb = at, at += K * LANES;
    r.Wb = at, at += K * LANES;
    r.call_in = at, at += call * LANES;
    r.call_out = at, at += (call + 1) * LANES;
    r.mass_adj = at;
    memset(r.mass_adj, 0, sizeof(double) * (size_t)(np + 1));
    return r;
}

INLINE double lanes_sum(Lanes a) {
    double t = 0;
    for (int l = 0; l < LANES; l++) t += a[l];
    return t;
}

/* The block's forward values: v = M^-1 p in b->v, the rows, L D L^T, Xdot (b->xdot), d = q - dV
   (b->pdot), mu2 and mu1 by row; the operations of block_field in its order */
INLINE void forward(const PrtLoopField *f, Block *b, const Rev *r, const double *params) {
    long N = f->N;
    block_minv(f, b, r->p, b->v);
    rows_evaluate(f, b, params + f->nmass);
    factor_rows(f, b, params, true);
    memcpy(b->xdot, b->v, sizeof(double) * (size_t)(N * LANES));
    for (long i = 0; i < N; i++) AT(b->pdot, i) = -AT(r->dv, i);
    field_first_solve(f, b, r->mu2);
    for (int i = f->C - 1; i >= 0; i--) AT(r->mu1, f->perm[i]) = back_row(f, b, i);
}

/* W_r's adjoint through W_r = M^-1 A_r (row_weight's operations, reversed): adds M^-1 Wb_r to
   Ab_r and the masses' adjoints (m: -Wb . W / m; lambda_a: -Wb_a A_a / (m lambda_a^2)) */
INLINE void weight_adjoint(const PrtLoopField *f, const Block *b, const Rev *r, int row, const double *params) {
    int o = 0;
    Vecs A = row_A(f, b, row), Ab = {r->Ab + (long)f->row_off[row] * LANES, LANES},
         Wb = {r->Wb + (long)f->row_off[row] * LANES, LANES};
    for (int e = f->row_body_start[row]; e < f->row_body_start[row + 1]; e++) {
        const PrtLoopBody *body = &f->bodies[f->row_body[e]];
        int np = body->npoints, nc = f->row_body_comps[e];
        double inv_m = 1 / params[body->mass];
        Lanes m_adj = {0};
        if (np == 1) {
            for (int c = 0; c < nc; c++, o++) {
                VAT(Ab, o) += VAT(Wb, o) * inv_m;
                m_adj -= VAT(Wb, o) * VAT(A, o);
            }
            r->mass_adj[body->mass] += lanes_sum(m_adj) * inv_m * inv_m;
            continue;
        }
        Vecs W = row_W(f, b, row);
        for (int g = 0; g < nc; g++, o += np) {
            Lanes sum_adj = {0};
            for (int a = 0; a < np; a++) sum_adj += VAT(Wb, o + a), m_adj -= VAT(Wb, o + a) * VAT(W, o + a);
            sum_adj *= inv_m;
            VAT(Ab, o) += sum_adj;
            for (int a = 1; a < np; a++) {
                double inv_la = 1 / params[body->mass + a];
                VAT(Ab, o + a) += sum_adj + VAT(Wb, o + a) * (inv_m * inv_la);
                r->mass_adj[body->mass + a] -= lanes_sum(VAT(Wb, o + a) * VAT(A, o + a)) * inv_m * inv_la * inv_la;
            }
        }
        r->mass_adj[body->mass] += lanes_sum(m_adj) * inv_m;
    }
}

/* The classes' VJP kernels, CHUNK rows a call: (x, v)'s adjoints from (Ab, Bb) added to x_adj
   and v_adj; the free lengths' to mass_adj after the masses */
INLINE void rows_adjoint(const PrtLoopField *f, const Block *b, const Rev *r, const double *lengths) {
    for (int c = 0; c < f->nclasses; c++) {
        const PrtRowClass *rc = &f->classes[c];
        int k = rc->k, nin = 2 * k + rc->q + rc->nc;
        for (int m0 = 0; m0 < rc->nrows; m0 += CHUNK) {
            int mn = rc->nrows - m0 < CHUNK ? rc->nrows - m0 : CHUNK;
            long nt = (long)call_rows(mn) * LANES;
            double *in = r->call_in, *cot = in + nin * nt;
            class_call_inputs(rc, b, m0, mn, nt, lengths, in);
            memset(cot, 0, sizeof(double) * (size_t)((1 + 2 * k) * nt)); /* phi's and the padding row's: 0 */
            for (int m = 0; m < mn; m++) {
                long off = (long)f->row_off[rc->rows[m0 + m]] * LANES;
                for (int j = 0; j < k; j++) {
                    memcpy(cot + (1 + j) * nt + (long)m * LANES, r->Ab + off + (long)j * LANES, sizeof(double) * LANES);
                    memcpy(cot + (1 + k + j) * nt + (long)m * LANES, r->Bb + off + (long)j * LANES, sizeof(double) * LANES);
                }
            }
            rc->vjp(nt, in, NULL, r->call_out);
            for (int m = 0; m < mn; m++) {
                const int *coord = rc->coords + (long)(m0 + m) * k;
                const double *out = r->call_out + (long)m * LANES;
                for (int j = 0; j < k; j++) {
                    AT(r->x_adj, coord[j]) += AT(out + j * nt, 0);
                    AT(r->v_adj, coord[j]) += AT(out + (k + j) * nt, 0);
                }
                for (int j = 0; j < rc->q; j++)
                    r->mass_adj[f->nmass + rc->lengths[(long)(m0 + m) * rc->q + j]] += lanes_sum(AT(out + (2 * k + j) * nt, 0));
            }
        }
    }
}

/* v = M^-1 p's adjoint: p_adj = M^-1 v_adj (M^-1 is symmetric: block_minv on it), and the
   masses' (m: -v_adj . v / m; lambda_a: -v_adj_a p_a / (m lambda_a^2)); all block vectors */
INLINE void minv_adjoint(const PrtLoopField *f, const Block *b, const Rev *r, const double *params, const double *v_adj,
                         const double *p, const double *v, double *p_adj) {
    int d = f->dim;
    block_minv(f, b, v_adj, p_adj);
    for (int e = 0; e < f->nbodies; e++) {
        const PrtLoopBody *body = &f->bodies[e];
        double inv_m = b->body_inv_m[e];
        Lanes m_adj = {0};
        for (int a = 0; a < body->npoints; a++) {
            Lanes la_adj = {0};
            for (int c = 0; c < d; c++) {
                long i = body->first + (long)a * d + c;
                m_adj -= AT(v_adj, i) * AT(v, i);
                la_adj -= AT(v_adj, i) * AT(p, i);
            }
            if (a > 0) {
                double inv_la = 1 / params[body->mass + a];
                r->mass_adj[body->mass + a] += lanes_sum(la_adj) * inv_m * inv_la * inv_la;
            }
        }
        r->mass_adj[body->mass] += lanes_sum(m_adj) * inv_m;
    }
}

/* The block's adjoints: of x into r->x_adj, of p into p_adj, of dV into r->pb (negated) */
INLINE void reverse(const PrtLoopField *f, Block *b, const Rev *r, const double *params, double *p_adj) {
    long N = f->N;
    /* nu1 = G^-1 (A Pb), and Ab_r = mu1_r Pb to start */
    for (int i = 0; i < f->C; i++) {
        int row = f->perm[i];
        forward_row(f, b, i, row_dot(f, row, row_A(f, b, row), NULL, r->pb, NULL, NULL));
        const int *coord = f->row_coord + f->row_off[row];
        for (int j = 0; j < row_width(f, row); j++)
            AT(r->Ab + (long)f->row_off[row] * LANES, j) = AT(r->mu1, row) * AT(r->pb, coord[j]);
    }
    for (int i = f->C - 1; i >= 0; i--) AT(r->nu1, f->perm[i]) = back_row(f, b, i);
    /* db = Pb - W^T nu1, Xb -= B^T nu1; u1 = W^T mu1, A^T nu1; Wb_r = -nu1_r d, Bb_r = -nu1_r Xdot */
    memset(r->u1, 0, sizeof(double) * (size_t)(2 * N * LANES)); /* u1, at1 */
    for (int row = 0; row < f->C; row++) {
        Lanes nu1 = AT(r->nu1, row), mu1 = AT(r->mu1, row);
        Vecs W = row_weights(f, b, row), B = row_B(f, b, row), A = row_A(f, b, row);
        const double *scale = b->row_scale + f->row_off[row];
        row_scatter(f, row, W, scale, r->pb, &B, r->xb, -nu1, -nu1);
        row_scatter(f, row, W, scale, r->u1, &A, r->at1, mu1, nu1);
        const int *coord = f->row_coord + f->row_off[row];
        long off = (long)f->row_off[row] * LANES;
        for (int j = 0; j < row_width(f, row); j++) {
            AT(r->Wb + off, j) = -nu1 * AT(b->pdot, coord[j]);
            AT(r->Bb + off, j) = -nu1 * AT(b->xdot, coord[j]);
        }
    }
    /* nu2 = G^-1 (B db - W Xb); Bb_r += mu2_r db, Wb_r -= mu2_r Xb */
    for (int i = 0; i < f->C; i++) {
        int row = f->perm[i];
        Vecs W = row_weights(f, b, row), B = row_B(f, b, row);
        const double *scale = b->row_scale + f->row_off[row];
        forward_row(f, b, i,
                    row_dot(f, row, B, NULL, r->pb, NULL, NULL) - row_dot(f, row, W, scale, r->xb, NULL, NULL));
        Lanes mu2 = AT(r->mu2, row);
        const int *coord = f->row_coord + f->row_off[row];
        long off = (long)f->row_off[row] * LANES;
        for (int j = 0; j < row_width(f, row); j++) {
            AT(r->Bb + off, j) += mu2 * AT(r->pb, coord[j]);
            AT(r->Wb + off, j) -= mu2 * AT(r->xb, coord[j]);
        }
    }
    for (int i = f->C - 1; i >= 0; i--) AT(r->nu2, f->perm[i]) = back_row(f, b, i);
    /* A^T nu2; vb = Xb + A^T nu2 */
    memset(r->at2, 0, sizeof(double) * (size_t)(N * LANES));
    for (int row = 0; row < f->C; row++)
        row_scatter(f, row, row_A(f, b, row), NULL, r->at2, NULL, NULL, AT(r->nu2, row), AT(r->nu2, row));
    for (long i = 0; i < N; i++) AT(r->v_adj, i) = AT(r->xb, i) + AT(r->at2, i);
    /* the Gram matrix's adjoint and A v's: Ab_r += nu2_r Xdot - nu1_r u1, Wb_r -= mu1_r A^T nu1 +
       mu2_r A^T nu2; then W_r = M^-1 A_r's */
    for (int row = 0; row < f->C; row++) {
        Lanes nu1 = AT(r->nu1, row), nu2 = AT(r->nu2, row), mu1 = AT(r->mu1, row), mu2 = AT(r->mu2, row);
        const int *coord = f->row_coord + f->row_off[row];
        long off = (long)f->row_off[row] * LANES;
        for (int j = 0; j < row_width(f, row); j++) {
            int c = coord[j];
            AT(r->Ab + off, j) += nu2 * AT(b->xdot, c) - nu1 * AT(r->u1, c);
            AT(r->Wb + off, j) -= mu1 * AT(r->at1, c) + mu2 * AT(r->at2, c);
        }
        weight_adjoint(f, b, r, row, params);
    }
    memset(r->x_adj, 0, sizeof(double) * (size_t)(N * LANES));
    rows_adjoint(f, b, r, params + f->nmass);
    minv_adjoint(f, b, r, params, r->v_adj, r->p, b->v, p_adj);
}

/* adds the first nl states of a block (rows rows of LANES) to states [b0, b0 + nl) of dst */
static void block_add(double *dst, const double *src, long rows, long n, long b0, int nl) {
    for (long i = 0; i < rows; i++)
        for (int l = 0; l < nl; l++) dst[i * n + b0 + l] += src[i * LANES + l];
}

PRT_SIMD_CLONES void prt_loop_field_vjp(PrtLoopField *f, PrtLoopScratch *s, long n, const double *z, const double *dv,
                                        const double *params, const double *w, double *z_adj, double *dv_adj,
                                        double *params_adj) {
    if (!s) s = &f->scratch;
    Block b = prt_loop_block_carve(f, s);
    Rev r = rev_carve(f, s);
    prt_loop_weights_prepare(f, s, params);
    long N = f->N;
    double *p_adj = r.u1; /* (W^T mu1 is used up when p's adjoint is taken) */
    for (long b0 = 0; b0 < n; b0 += LANES) {
        int nl = n - b0 < LANES ? (int)(n - b0) : LANES;
        block_in(b.x, z, N, n, b0, nl);
        block_in(r.p, z + N * n, N, n, b0, nl);
        block_in(r.dv, dv, N, n, b0, nl);
        block_in(r.xb, w, N, n, b0, nl);
        block_in(r.pb, w + N * n, N, n, b0, nl);
        for (long i = 0; i < N; i++) /* the repeated states' cotangents 0: no share in the masses' adjoints */
            for (int l = nl; l < LANES; l++) r.xb[i * LANES + l] = r.pb[i * LANES + l] = 0;
        forward(f, &b, &r, params);
        reverse(f, &b, &r, params, p_adj);
        for (long i = 0; i < N; i++) AT(r.pb, i) = -AT(r.pb, i);
        block_add(z_adj, r.x_adj, N, n, b0, nl);
        block_add(z_adj + N * n, p_adj, N, n, b0, nl);
        block_add(dv_adj, r.pb, N, n, b0, nl);
    }
    for (long k = 0; k < f->nmass + nlengths(f); k++) params_adj[k] += r.mass_adj[k];
}

/* Eq. 7's adjoint, from the cotangent ab of Xddot = a - W^T mu (mu = G^-1 (A a + B v)):
     nu = G^-1 (-W ab);  a's adjoint ab + A^T nu;  v's B^T nu (and the rows');
     Ab_r = nu_r Xddot (a's term and the Gram matrix's: nu_r (a - W^T mu)),
     Bb_r = nu_r v,  Wb_r = -mu_r (ab + A^T nu);
   then F's, M^-1 a's. Rev's arrays under the names of this pass. */
PRT_SIMD_CLONES void prt_loop_accel_vjp(PrtLoopField *f, PrtLoopScratch *s, long n, const double *xvf,
                                        const double *params, const double *w, double *adj, double *params_adj) {
    if (!s) s = &f->scratch;
    Block b = prt_loop_block_carve(f, s);
    Rev r = rev_carve(f, s);
    prt_loop_weights_prepare(f, s, params);
    long N = f->N;
    double *F = r.p, *a = r.dv, *ab = r.xb, *at = r.at1, *mu = r.mu1, *nu = r.nu1, *F_adj = r.u1;
    for (long b0 = 0; b0 < n; b0 += LANES) {
        int nl = n - b0 < LANES ? (int)(n - b0) : LANES;
        block_in(b.x, xvf, N, n, b0, nl);
        block_in(b.v, xvf + N * n, N, n, b0, nl);
        block_in(F, xvf + 2 * N * n, N, n, b0, nl);
        block_in(ab, w, N, n, b0, nl);
        for (long i = 0; i < N; i++) /* the repeated states' cotangents 0 */
            for (int l = nl; l < LANES; l++) ab[i * LANES + l] = 0;
        block_accel(f, &b, params, F, mu);
        block_minv(f, &b, F, a);
        /* nu = G^-1 (-W ab) */
        for (int i = 0; i < f->C; i++) {
            int row = f->perm[i];
            forward_row(f, &b, i, -row_dot(f, row, row_weights(f, &b, row), b.row_scale + f->row_off[row], ab, NULL, NULL));
        }
        for (int i = f->C - 1; i >= 0; i--) AT(nu, f->perm[i]) = back_row(f, &b, i);
        /* A^T nu; v's adjoint B^T nu to start */
        memset(at, 0, sizeof(double) * (size_t)(N * LANES));
        memset(r.v_adj, 0, sizeof(double) * (size_t)(N * LANES));
        memset(r.x_adj, 0, sizeof(double) * (size_t)(N * LANES));
        for (int row = 0; row < f->C; row++) {
            Vecs B = row_B(f, &b, row);
            row_scatter(f, row, row_A(f, &b, row), NULL, at, &B, r.v_adj, AT(nu, row), AT(nu, row));
        }
        for (int row = 0; row < f->C; row++) {
            Lanes nur = AT(nu, row), mur = AT(mu, row);
            const int *coord = f->row_coord + f->row_off[row];
            long off = (long)f->row_off[row] * LANES;
            for (int j = 0; j < row_width(f, row); j++) {
                int c = coord[j];
                AT(r.Ab + off, j) = nur * AT(b.xdot, c);
                AT(r.Bb + off, j) = nur * AT(b.v, c);
                AT(r.Wb + off, j) = -mur * (AT(ab, c) + AT(at, c));
            }
            weight_adjoint(f, &b, &r, row, params);
        }
        for (long i = 0; i < N; i++) AT(at, i) += AT(ab, i); /* a's adjoint */
        rows_adjoint(f, &b, &r, params + f->nmass);
        minv_adjoint(f, &b, &r, params, at, F, a, F_adj);
        block_add(adj, r.x_adj, N, n, b0, nl);
        block_add(adj + N * n, r.v_adj, N, n, b0, nl);
        block_add(adj + 2 * N * n, F_adj, N, n, b0, nl);
    }
    for (long k = 0; k < f->nmass + nlengths(f); k++) params_adj[k] += r.mass_adj[k];
}

void prt_loop_minv_vjp(const PrtLoopField *f, long n, const double *p, const double *params, const double *v_bar,
                       double *p_adj, double *params_adj) {
    int d = f->dim;
    for (int e = 0; e < f->nbodies; e++) {
        const PrtLoopBody *body = &f->bodies[e];
        double inv_m = 1 / params[body->mass], m_adj = 0;
        for (int c = 0; c < d; c++) {
            long first = (long)(body->first + c) * n, step = (long)d * n;
            for (long s = 0; s < n; s++) {
                double sum = p[first + s], sum_adj = 0;
                for (int a = 1; a < body->npoints; a++) sum += p[first + a * step + s];
                for (int a = 0; a < body->npoints; a++) sum_adj += v_bar[first + a * step + s];
                double v0 = sum * inv_m;
                p_adj[first + s] += sum_adj * inv_m;
                m_adj -= v_bar[first + s] * v0;
                for (int a = 1; a < body->npoints; a++) {
                    long i = first + a * step + s;
                    double inv_la = 1 / params[body->mass + a], va = (sum + p[i] * inv_la) * inv_m;
                    p_adj[i] += (sum_adj + v_bar[i] * inv_la) * inv_m;
                    m_adj -= v_bar[i] * va;
                    params_adj[body->mass + a] -= v_bar[i] * p[i] * inv_m * inv_la * inv_la;
                }
            }
        }
        params_adj[body->mass] += m_adj * inv_m;
    }
}

void prt_loop_mass_vjp(const PrtLoopField *f, long n, const double *v, const double *params, const double *p_bar,
                       double *v_adj, double *params_adj) {
    int d = f->dim;
    for (int e = 0; e < f->nbodies; e++) {
        const PrtLoopBody *body = &f->bodies[e];
        double m = params[body->mass], m_adj = 0;
        for (int c = 0; c < d; c++) {
            long first = (long)(body->first + c) * n, step = (long)d * n;
            for (long s = 0; s < n; s++) {
                /* p_0 = m (v_0 - sum_a lambda_a (v_a - v_0)), p_a = m lambda_a (v_a - v_0) */
                double acc = v[first + s], acc_adj = p_bar[first + s] * m;
                for (int a = 1; a < body->npoints; a++) {
                    long i = first + a * step + s;
                    double la = params[body->mass + a], rel = v[i] - v[first + s],
                           rel_adj = (p_bar[i] - p_bar[first + s]) * m;
                    acc -= la * rel;
                    m_adj += p_bar[i] * la * rel;
                    params_adj[body->mass + a] += rel_adj * rel;
                    v_adj[i] += rel_adj * la;
                    v_adj[first + s] -= rel_adj * la;
                }
                m_adj += p_bar[first + s] * acc;
                v_adj[first + s] += acc_adj;
            }
        }
        params_adj[body->mass] += m_adj;
    }
}
