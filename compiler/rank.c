/* rank.c — the constraints must be independent: G = DPhi M^-1 DPhi^T is factorized without
   pivoting, so a row of DPhi that depends on the others makes the dynamics divide by a
   rounding-level pivot. Checked once per compile at the first state the simulation samples
   (the init block with the program's seed, before projection): Gram-Schmidt over the rows of
   DPhi in order (rigidity, then the constraints as written), and a row whose part
   orthogonal to the rows before it is below a relative tolerance is reported at its
   constraint, with the rows it follows from. The same state shows whether each axis
   constraint starts on its branch (its equations also hold for opposite directions). */
#include "rank.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ad.h"
#include "lower.h"
#include "math/rng.h"
#include "sparse_ldlt.h"
#include "eval.h"

/* A row whose component orthogonal to the earlier rows is below this fraction of its norm
   depends on them. Redundant rows leave rounding (~1e-15) at a state on the constraints. */
static const double DEPENDENT = 1e-8;
/* The earlier rows named as the reason: those contributing this fraction of the row. */
static const double CONTRIBUTES = 1e-6;

/* Where row r of Phi comes from: constraint index >= 0, or -1 - body for a rigidity row. */
static void row_sources(const System *sys, int *src) {
    int row = 0;
    for (int b = 0; b < sys->nbodies; b++) {
        const Body *body = &sys->bodies[b];
        if (body->kind != BODY_RIGID || body->state == STATE_SO3) continue;
        for (int k = 0; k < body->n * (body->n + 1) / 2; k++) src[row++] = -1 - b;
    }
    for (int i = 0; i < sys->nconstraints; i++)
        for (int k = 0; k < sys->constraints[i].equations; k++) src[row++] = i;
}

/* The first state prt_sample_initial draws with the program's seed; false if the init block
   gives no finite one. */
static bool sampled_state(System *sys, double *x) {
    int *kinds = NULL, ndraws = 0;
    IrFn *init = lower_init(sys, &kinds, &ndraws);
    double *draws = malloc(sizeof(double) * (size_t)(ndraws + 1)),
           *out = malloc(sizeof(double) * (size_t)(init->noutputs + 1));
    PrtRng rng;
    prt_rng_seed(&rng, (uint64_t)sys->data.seed);
    for (int i = 0; i < ndraws; i++) draws[i] = kinds[i] == DRAW_NORMAL ? prt_rng_normal(&rng) : prt_rng_uniform(&rng);
    ir_eval(init, draws, NULL, out);
    bool finite = true;
    for (int i = 0; i < sys->ncoords; i++) {
        x[i] = out[i];
        finite = finite && isfinite(x[i]);
    }
    free(draws), free(out), free(kinds);
    ir_free(init);
    return finite;
}

/* False after reporting an axis whose directions start apart (the state is then far from
   the constraints, and their rows' dependence there says nothing about the program). */
static bool check_axis_branches(System *sys, Diags *d, const double *x) {
    IrFn *f = lower_axis_alignment(sys);
    double *cosine = malloc(sizeof(double) * (size_t)(f->noutputs + 1));
    ir_eval(f, x, NULL, cosine);
    bool ok = true;
    for (int i = 0, k = 0; i < sys->nconstraints; i++) {
        if (sys->constraints[i].kind != CK_AXIS) continue;
        if (!(cosine[k] > 0)) {
            ok = false;
            diag_error(d, sys->constraints[i].loc,
                       "this axis starts with its directions %.0f degrees apart (at the first sampled initial state): "
                       "its equations hold for parallel directions pointing either way, so the initial state must start "
                       "them less than 90 degrees apart",
                       acos(fmax(-1, fmin(1, cosine[k]))) * 180 / 3.14159265358979323846);
        }
        k++;
    }
    free(cosine);
    ir_free(f);
    return ok;
}

/* "the joint at 7:3", "the rigidity of plate" */
static void source_name(const System *sys, int src, char *out, size_t n) {
    if (src < 0) {
        snprintf(out, n, "the rigidity of %s", sys->bodies[-1 - src].name);
        return;
    }
    const Constraint *c = &sys->constraints[src];
    snprintf(out, n, "the %s at %d:%d", constraint_kind_name(c->kind), c->loc.first_line, c->loc.first_column);
}

/* Reports constraint ci, `dependent` of whose rows depend on earlier rows; `from` flags the
   sources (as row_sources numbers them, shifted by nbodies) they follow from. */
static void report(const System *sys, Diags *d, int ci, int dependent, const bool *from) {
    const Constraint *c = &sys->constraints[ci];
    char why[1024] = "";
    size_t len = 0;
    int nfrom = 0, total = 0;
    for (int s = 0; s < sys->nbodies + sys->nconstraints; s++) total += from[s];
    for (int s = 0; s < sys->nbodies + sys->nconstraints; s++) {
        if (!from[s]) continue;
        char name[300];
        int src = s - sys->nbodies;
        if (src == ci) snprintf(name, sizeof name, "its other equations");
        else source_name(sys, src, name, sizeof name);
        nfrom++;
        len += (size_t)snprintf(why + len, len < sizeof why ? sizeof why - len : 0, "%s%s",
                                nfrom == 1 ? "" : nfrom == total ? " and " : ", ", name);
        if (len >= sizeof why) break;
    }
    const char *kind = constraint_kind_name(c->kind);
    char what[128];
    if (dependent == c->equations) snprintf(what, sizeof what, "this %s", kind);
    else snprintf(what, sizeof what, "%d of the %d equations of this %s", dependent, c->equations, kind);
    bool all = dependent == c->equations, one = dependent == 1;
    if (nfrom)
        diag_error(d, c->loc, "%s %s redundant (%s from %s, at the first sampled initial state)", what,
                   all || one ? "is" : "are", all || one ? "it follows" : "they follow", why);
    else
        diag_error(d, c->loc, "%s %s nothing to first order at the first sampled initial state (a zero row of the "
                   "constraint Jacobian)", what, all || one ? "constrains" : "constrain");
}

/* At row r, the last of its constraint (src: each row's), the constraint's *count dependent
   rows are reported (from: what they depend on), and both are cleared for the next one. */
static void report_at_end(const System *sys, Diags *d, const int *src, int r, int C, int *count, bool *from, int nsrc) {
    if (!(r + 1 == C || src[r + 1] != src[r]) || !*count) return;
    report(sys, d, src[r], *count, from);
    *count = 0;
    memset(from, 0, sizeof(bool) * (size_t)nsrc);
}

/* Gram-Schmidt over the rows of A (C x N) in order; reports the constraints with dependent rows. */
static void check_rows(const System *sys, Diags *d, const double *A, int C, int N) {
    int *src = malloc(sizeof(int) * (size_t)(C + 1)), *basis_row = malloc(sizeof(int) * (size_t)(C + 1));
    /* Q: orthonormal rows of the independent rows so far; R (k x k, upper): row basis_row[j]
       = sum_{i <= j} R[i][j] Q_i. */
    double *Q = malloc(sizeof(double) * (size_t)(C * N + 1)), *R = calloc((size_t)(C * C + 1), sizeof(double)),
           *v = malloc(sizeof(double) * (size_t)(N + 1)), *beta = malloc(sizeof(double) * (size_t)(C + 1));
    int nsrc = sys->nbodies + sys->nconstraints;
    bool *from = calloc((size_t)nsrc + 1, sizeof(bool));
    row_sources(sys, src);
    /* Each Q_j is zero outside columns [qlo[j], qhi[j]]. A row of A is zero outside a few
       columns, and a Q_j that does not reach them is orthogonal to it, and so to the rest of
       its Gram-Schmidt (a combination of the row and of the Q_j that do): skipping those
       makes a chain's check linear in its length instead of quadratic in its rows. */
    int *qlo = malloc(sizeof(int) * (size_t)(C + 1)), *qhi = malloc(sizeof(int) * (size_t)(C + 1));
    int k = 0, dependent = 0;
    for (int r = 0; r < C; r++) {
        const double *a = A + (long)r * N;
        int alo = 0, ahi = N - 1;
        while (alo < N && a[alo] == 0) alo++;
        while (ahi >= 0 && a[ahi] == 0) ahi--;
        int vlo = alo, vhi = ahi; /* v's columns that may be nonzero */
        double norm = 0;
        for (int i = alo; i <= ahi; i++) norm += a[i] * a[i];
        norm = sqrt(norm);
        memcpy(v, a, sizeof(double) * (size_t)N);
        for (int j = 0; j < k; j++) beta[j] = 0;
        for (int pass = 0; pass < 2; pass++) /* twice: one pass loses orthogonality to rounding */
            for (int j = 0; j < k; j++) {
                if (qhi[j] < alo || qlo[j] > ahi) continue;
                const double *q = Q + (long)j * N;
                double dot = 0;
                int lo = qlo[j] > vlo ? qlo[j] : vlo, hi = qhi[j] < vhi ? qhi[j] : vhi;
                for (int i = lo; i <= hi; i++) dot += q[i] * v[i];
                for (int i = qlo[j]; i <= qhi[j]; i++) v[i] -= dot * q[i];
                if (qlo[j] < vlo) vlo = qlo[j];
                if (qhi[j] > vhi) vhi = qhi[j];
                beta[j] += dot;
            }
        double rest = 0;
        for (int i = vlo; i <= vhi; i++) rest += v[i] * v[i];
        rest = sqrt(rest);
        if (rest > DEPENDENT * norm) {
            for (int i = 0; i < N; i++) Q[(long)k * N + i] = i >= vlo && i <= vhi ? v[i] / rest : 0;
            qlo[k] = vlo, qhi[k] = vhi;
            for (int j = 0; j < k; j++) R[j * C + k] = beta[j];
            R[k * C + k] = rest;
            basis_row[k++] = r;
        } else {
            /* the row in terms of the earlier rows: R alpha = beta */
            for (int j = k - 1; j >= 0; j--) {
                double t = beta[j];
                for (int i = j + 1; i < k; i++) t -= R[j * C + i] * beta[i];
                beta[j] = t / R[j * C + j];
            }
            for (int j = 0; j < k; j++) {
                const double *b = A + (long)basis_row[j] * N;
                double bn = 0;
                for (int i = 0; i < N; i++) bn += b[i] * b[i];
                if (fabs(beta[j]) * sqrt(bn) > CONTRIBUTES * norm) from[src[basis_row[j]] + sys->nbodies] = true;
            }
            dependent++;
        }
        report_at_end(sys, d, src, r, C, &dependent, from, nsrc);
    }
    free(src), free(basis_row), free(Q), free(R), free(v), free(beta), free(from), free(qlo), free(qhi);
}

/* DPhi at x as sparse rows: row r's columns col[row_start[r] ..) ascending, with their values.
   One kernel output per entry that may be nonzero: a 1000-link chain's 4,000, where a dense
   Jacobian kernel has 2 million outputs (it was most of checking the program). */
typedef struct Rows {
    int *row_start, *col;
    double *val;
} Rows;

static Rows jacobian_at(const IrFn *phi, const double *x) {
    int N = phi->ninputs, C = phi->noutputs, P = phi->nparams;
    IrFn *g = ir_new("DPhi", N, P, 0);
    int *in = malloc(sizeof(int) * (size_t)(N + 1)), *params = malloc(sizeof(int) * (size_t)(P + 1)),
        *outs = malloc(sizeof(int) * (size_t)(C + 1)), *grads;
    for (int i = 0; i < N; i++) in[i] = ir_input(g, i);
    for (int k = 0; k < P; k++) params[k] = ir_param(g, k);
    int lo = g->ninsts;
    ad_inline(g, phi, in, params, outs);
    Rows a = {malloc(sizeof(int) * (size_t)(C + 2)), NULL, NULL};
    ad_sparse_gradients_in(g, lo, g->ninsts, outs, C, in, N, a.row_start, &a.col, &grads);
    int count = a.row_start[C];
    free(g->outputs), free(g->output_names); /* outputs: the rows' entries */
    g->noutputs = count;
    g->outputs = grads;
    g->output_names = calloc((size_t)count + 1, sizeof(char *));
    a.val = malloc(sizeof(double) * (size_t)(count + 1));
    double *lengths = calloc((size_t)P + 1, sizeof(double));
    ir_eval(g, x, lengths, a.val); /* DPhi does not depend on the lengths */
    free(in), free(params), free(outs), free(lengths);
    ir_free(g);
    return a;
}

static void rows_free(Rows *a) { free(a->row_start), free(a->col), free(a->val); }

static double sparse_dot(const Rows *a, int r, int s) {
    double t = 0;
    int i = a->row_start[r], j = a->row_start[s];
    while (i < a->row_start[r + 1] && j < a->row_start[s + 1]) {
        if (a->col[i] < a->col[j]) i++;
        else if (a->col[i] > a->col[j]) j++;
        else t += a->val[i++] * a->val[j++];
    }
    return t;
}

/* Large systems (more than CHECK_SPARSE_MIN_ROWS rows): the Gram-Schmidt above stores an
   orthonormal basis of the rows, which is dense for a chain (C x N: 2 GB at 10,000 links).
   Instead, G = A A^T is factored L D L^T in the sparsity of the constraint graph, in the
   rows' own order (rigidity, then the constraints as written): D_r is the squared norm of
   row r's part orthogonal to the rows before it, Gram-Schmidt's residual squared. Squaring
   costs precision, so a row is dependent when that part is below DEPENDENT_GRAM of its norm
   (rounding leaves about 1e-8 of it on a redundant row); such a row is left out of the
   factorization, as Gram-Schmidt leaves it out of the basis, and it equals
   sum_k beta_k a_k over the earlier rows with L_EE^T beta = (L_rk)_k. */
enum { CHECK_SPARSE_MIN_ROWS = 512 };
static const double DEPENDENT_GRAM = 1e-6;

static void check_rows_sparse(const System *sys, Diags *d, const Rows *a, int C, int N) {
    int *src = malloc(sizeof(int) * (size_t)(C + 1));
    row_sources(sys, src);
    /* neighbours: rows that share a column */
    int *col_start = calloc((size_t)N + 2, sizeof(int)), nnz = a->row_start[C];
    for (int e = 0; e < nnz; e++) col_start[a->col[e] + 1]++;
    for (int i = 0; i < N; i++) col_start[i + 1] += col_start[i];
    int *col_row = malloc(sizeof(int) * (size_t)(nnz + 1)), *fill = calloc((size_t)N + 1, sizeof(int));
    for (int r = 0; r < C; r++)
        for (int e = a->row_start[r]; e < a->row_start[r + 1]; e++) col_row[col_start[a->col[e]] + fill[a->col[e]]++] = r;
    int *mark = malloc(sizeof(int) * (size_t)(C + 1)), *adj_start = malloc(sizeof(int) * (size_t)(C + 2)), cap = 16, nadj = 0;
    int *adj = malloc(sizeof(int) * (size_t)cap);
    for (int r = 0; r < C; r++) mark[r] = -1;
    for (int r = 0; r < C; r++) {
        adj_start[r] = nadj;
        mark[r] = r;
        for (int e = a->row_start[r]; e < a->row_start[r + 1]; e++)
            for (int f = col_start[a->col[e]]; f < col_start[a->col[e] + 1]; f++) {
                int s2 = col_row[f];
                if (mark[s2] == r) continue;
                mark[s2] = r;
                if (nadj == cap) adj = realloc(adj, sizeof(int) * (size_t)(cap *= 2));
                adj[nadj++] = s2;
            }
    }
    adj_start[C] = nadj;
    free(col_start), free(col_row), free(fill), free(mark);
    SparseLdlt f;
    sldlt_analyze_natural(&f, C, adj_start, adj);
    free(adj_start), free(adj);

    /* up-looking L D L^T on doubles; natural order: position i is row i */
    double *L = malloc(sizeof(double) * ((size_t)f.row_start[C] + 1)), *inv_d = malloc(sizeof(double) * (size_t)(C + 1)),
           *w = calloc((size_t)C + 1, sizeof(double)), *norm = malloc(sizeof(double) * (size_t)(C + 1));
    bool *dependent = calloc((size_t)C + 1, sizeof(bool));
    for (int i = 0; i < C; i++) {
        double gii = sparse_dot(a, i, i), dd = gii;
        norm[i] = sqrt(gii);
        for (int e = f.row_start[i]; e < f.row_start[i + 1]; e++) {
            int k = f.row[e];
            double t = sparse_dot(a, i, k); /* zero where the pattern filled in */
            int p = f.row_start[i], q = f.row_start[k];
            while (p < e && q < f.row_start[k + 1]) {
                if (f.row[p] < f.row[q]) p++;
                else if (f.row[p] > f.row[q]) q++;
                else t -= w[f.row[p++]] * L[q++];
            }
            w[k] = t;
            L[e] = t * inv_d[k];
            dd -= L[e] * t;
        }
        dependent[i] = !(dd > DEPENDENT_GRAM * DEPENDENT_GRAM * gii);
        inv_d[i] = dependent[i] ? 0 : 1 / dd;
    }

    /* report, constraint by constraint */
    int nsrc = sys->nbodies + sys->nconstraints, count = 0;
    bool *from = calloc((size_t)nsrc + 1, sizeof(bool));
    double *beta = calloc((size_t)C + 1, sizeof(double));
    for (int r = 0; r < C; r++) {
        if (dependent[r]) {
            /* beta over the rows before r: L_EE^T beta = L_r. (dependent rows: beta 0) */
            for (int e = f.row_start[r]; e < f.row_start[r + 1]; e++) beta[f.row[e]] = L[e];
            for (int k = r - 1; k >= 0; k--) {
                double t = beta[k];
                for (int ce = f.col_start[k]; ce < f.col_start[k + 1] && f.col[ce] < r; ce++)
                    t -= L[f.col_at[ce]] * beta[f.col[ce]];
                beta[k] = dependent[k] ? 0 : t;
            }
            for (int k = 0; k < r; k++) {
                if (fabs(beta[k]) * norm[k] > CONTRIBUTES * norm[r]) from[src[k] + sys->nbodies] = true;
                beta[k] = 0;
            }
            count++;
        }
        report_at_end(sys, d, src, r, C, &count, from, nsrc);
    }
    free(L), free(inv_d), free(w), free(norm), free(dependent), free(from), free(beta), free(src);
    sldlt_free(&f);
}

void check_constraints_independent(System *sys, Diags *d) {
    if (!sys->init || sys->nconstraints == 0) return;
    int N = sys->ncoords;
    double *x = malloc(sizeof(double) * (size_t)(N + 1));
    if (sampled_state(sys, x) && check_axis_branches(sys, d, x)) {
        IrFn *phi = lower_constraints(sys);
        int C = phi->noutputs;
        Rows a = jacobian_at(phi, x);
        bool finite = true;
        for (int e = 0; e < a.row_start[C]; e++) finite = finite && isfinite(a.val[e]);
        if (finite && C > CHECK_SPARSE_MIN_ROWS) check_rows_sparse(sys, d, &a, C, N);
        else if (finite) {
            double *A = calloc((size_t)C * N + 1, sizeof(double));
            for (int r = 0; r < C; r++)
                for (int e = a.row_start[r]; e < a.row_start[r + 1]; e++) A[(long)r * N + a.col[e]] = a.val[e];
            check_rows(sys, d, A, C, N);
            free(A);
        }
        rows_free(&a);
        ir_free(phi);
    }
    free(x);
}
