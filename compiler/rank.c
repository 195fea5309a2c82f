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
#include "rng.h"
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
        bool last_of_constraint = r + 1 == C || src[r + 1] != src[r];
        if (last_of_constraint && dependent) {
            report(sys, d, src[r], dependent, from);
            dependent = 0;
            memset(from, 0, sizeof(bool) * (size_t)nsrc);
        }
    }
    free(src), free(basis_row), free(Q), free(R), free(v), free(beta), free(from), free(qlo), free(qhi);
}

/* DPhi at x into A (C x N, zeroed here), through a kernel with one output per entry that may
   be nonzero: a 1000-link chain's 4,000, where the dense Jacobian kernel has 2 million
   outputs and cost most of checking the program. */
static void jacobian_at(const IrFn *phi, const double *x, double *A) {
    int N = phi->ninputs, C = phi->noutputs, P = phi->nparams;
    IrFn *g = ir_new("DPhi", N, P, 0);
    int *in = malloc(sizeof(int) * (size_t)(N + 1)), *params = malloc(sizeof(int) * (size_t)(P + 1)),
        *outs = malloc(sizeof(int) * (size_t)(C + 1)), *grads = malloc(sizeof(int) * ((size_t)C * N + 1));
    for (int i = 0; i < N; i++) in[i] = ir_input(g, i);
    for (int k = 0; k < P; k++) params[k] = ir_param(g, k);
    int lo = g->ninsts;
    ad_inline(g, phi, in, params, outs);
    ad_gradients_in(g, lo, g->ninsts, outs, C, in, N, grads);
    long count = 0;
    for (long e = 0; e < (long)C * N; e++) count += g->insts[grads[e]].op != IR_CONST || g->insts[grads[e]].num != 0;
    /* outputs: the entries that may be nonzero; at[o]: where output o goes in A */
    free(g->outputs), free(g->output_names);
    g->noutputs = (int)count;
    g->outputs = malloc(sizeof(int) * (size_t)(count + 1));
    g->output_names = calloc((size_t)count + 1, sizeof(char *));
    long *at = malloc(sizeof(long) * (size_t)(count + 1));
    count = 0;
    for (long e = 0; e < (long)C * N; e++)
        if (g->insts[grads[e]].op != IR_CONST || g->insts[grads[e]].num != 0) at[count] = e, g->outputs[count++] = grads[e];
    double *vals = malloc(sizeof(double) * (size_t)(g->noutputs + 1)), *lengths = calloc((size_t)P + 1, sizeof(double));
    ir_eval(g, x, lengths, vals); /* DPhi does not depend on the lengths */
    memset(A, 0, sizeof(double) * (size_t)C * N);
    for (int o = 0; o < g->noutputs; o++) A[at[o]] = vals[o];
    free(in), free(params), free(outs), free(grads), free(vals), free(lengths), free(at);
    ir_free(g);
}

void check_constraints_independent(System *sys, Diags *d) {
    if (!sys->init || sys->nconstraints == 0) return;
    int N = sys->ncoords;
    double *x = malloc(sizeof(double) * (size_t)(N + 1));
    if (sampled_state(sys, x) && check_axis_branches(sys, d, x)) {
        IrFn *phi = lower_constraints(sys);
        int C = phi->noutputs;
        double *A = malloc(sizeof(double) * ((size_t)C * N + 1));
        jacobian_at(phi, x, A);
        bool finite = true;
        for (long i = 0; i < (long)C * N; i++) finite = finite && isfinite(A[i]);
        if (finite) check_rows(sys, d, A, C, N);
        free(A);
        ir_free(phi);
    }
    free(x);
}
