/* ad.c — forward and reverse mode on straight-line IR. The primal is copied first (same
   value numbers), then tangents are pushed forward or adjoints pulled back one
   instruction at a time with the rule for its opcode. The optimizer removes what is zero
   or unused afterwards, so Jacobians come out as sparse as the system. */
#include "ad.h"
#include "arena.h"

#include <stdlib.h>
#include <string.h>

#include "diag.h"

static IrFn *copy_primal(const IrFn *f, const char *name, int extra_inputs, int noutputs) {
    IrFn *g = ir_new(name, f->ninputs + extra_inputs, f->nparams, noutputs);
    for (int i = 0; i < f->ninputs; i++)
        if (f->input_names[i]) ir_set_input_name(g, i, f->input_names[i]);
    for (int i = 0; i < f->ninsts; i++) {
        const IrInst *x = &f->insts[i];
        int id = ir_emit(g, x->op, x->a, x->b, x->imm, x->num);
        ir_set_locs(g, id, id + 1, ir_loc(f, i));
    }
    return g;
}

/* The local derivatives of instruction i with respect to its operands, as IR values
   (-1 where there is no dependence). v is the instruction's own value. */
static void partials(IrFn *g, int i, int *da, int *db) {
    IrInst x = g->insts[i];
    int a = x.a, b = x.b, v = i;
    *da = *db = -1;
#define C(k) ir_const(g, k)
#define B(op, p, q) ir_bin(g, IR_##op, p, q)
#define U(op, p) ir_un(g, IR_##op, p)
    switch (x.op) {
    case IR_CONST:
    case IR_INPUT:
    case IR_PARAM:
    case IR_SIGN: break;
    case IR_ADD: *da = C(1), *db = C(1); break;
    case IR_SUB: *da = C(1), *db = C(-1); break;
    case IR_MUL: *da = b, *db = a; break;
    case IR_DIV: *da = B(DIV, C(1), b), *db = U(NEG, B(DIV, v, b)); break;
    case IR_NEG: *da = C(-1); break;
    case IR_POWI: *da = x.imm == 1 ? C(1) : B(MUL, C(x.imm), ir_emit(g, IR_POWI, a, -1, x.imm - 1, 0)); break;
    case IR_POW: *da = B(MUL, b, B(POW, a, B(SUB, b, C(1)))), *db = B(MUL, v, U(LOG, a)); break;
    case IR_SQRT: *da = B(DIV, C(0.5), v); break;
    case IR_EXP: *da = v; break;
    case IR_LOG: *da = B(DIV, C(1), a); break;
    case IR_SIN: *da = U(COS, a); break;
    case IR_COS: *da = U(NEG, U(SIN, a)); break;
    case IR_TAN: *da = B(ADD, C(1), B(MUL, v, v)); break;
    case IR_ASIN: *da = B(DIV, C(1), U(SQRT, B(SUB, C(1), B(MUL, a, a)))); break;
    case IR_ACOS: *da = B(DIV, C(-1), U(SQRT, B(SUB, C(1), B(MUL, a, a)))); break;
    case IR_ATAN: *da = B(DIV, C(1), B(ADD, C(1), B(MUL, a, a))); break;
    case IR_ATAN2: { /* atan2(y = a, x = b) */
        int r2 = B(ADD, B(MUL, a, a), B(MUL, b, b));
        *da = B(DIV, b, r2), *db = U(NEG, B(DIV, a, r2));
        break;
    }
    case IR_SINH: *da = U(COSH, a); break;
    case IR_COSH: *da = U(SINH, a); break;
    case IR_TANH: *da = B(SUB, C(1), B(MUL, v, v)); break;
    case IR_ABS: *da = U(SIGN, a); break;
    case IR_MIN:
    case IR_MAX: { /* the selected operand gets the derivative; a tie splits it */
        int s = U(SIGN, B(SUB, a, b));
        int lo = B(MUL, C(0.5), B(SUB, C(1), s)), hi = B(MUL, C(0.5), B(ADD, C(1), s));
        *da = x.op == IR_MIN ? lo : hi, *db = x.op == IR_MIN ? hi : lo;
        break;
    }
    case IR_NOPS: die("bad opcode");
    }
#undef C
#undef B
#undef U
}

/* Pulls instruction i's adjoint adj[i] (>= 0) back to its operands. */
static void pull_back(IrFn *g, int i, int *adj) {
    int da, db, before = g->ninsts;
    partials(g, i, &da, &db);
    int ops[2] = {g->insts[i].a, g->insts[i].b}, ds[2] = {da, db};
    for (int k = 0; k < 2; k++) {
        if (ds[k] < 0) continue;
        int contrib = ir_bin(g, IR_MUL, adj[i], ds[k]);
        adj[ops[k]] = adj[ops[k]] < 0 ? contrib : ir_bin(g, IR_ADD, adj[ops[k]], contrib);
    }
    ir_set_locs(g, before, g->ninsts, ir_loc(g, i)); /* the derivative of an expression is blamed on it */
}

/* Pulls the adjoints seeded in adj[] back through instructions [0, nprimal). */
static void reverse_sweep(IrFn *g, int nprimal, int *adj) {
    for (int i = nprimal - 1; i >= 0; i--)
        if (adj[i] >= 0) pull_back(g, i, adj);
}

/* The input adjoints into g's outputs from first_out; an input nothing depends on gets the
   constant 0 *zero (made on first use and shared: a Jacobian's rows are mostly zeros, one
   instruction each would make a 1000-link chain's DPhi 2 million instructions). */
static void collect_input_adjoints(IrFn *g, const IrFn *f, int nprimal, const int *adj, int first_out, int *zero) {
    /* an input may be read by several INPUT instructions: add their adjoints */
    for (int i = 0; i < f->ninputs; i++) g->outputs[first_out + i] = -1;
    for (int k = 0; k < nprimal; k++) {
        if (g->insts[k].op != IR_INPUT || g->insts[k].imm >= f->ninputs || adj[k] < 0) continue;
        int *o = &g->outputs[first_out + g->insts[k].imm];
        *o = *o < 0 ? adj[k] : ir_bin(g, IR_ADD, *o, adj[k]);
    }
    for (int i = 0; i < f->ninputs; i++)
        if (g->outputs[first_out + i] < 0) g->outputs[first_out + i] = *zero >= 0 ? *zero : (*zero = ir_const(g, 0));
}

IrFn *ad_vjp(const IrFn *f, const char *name) {
    IrFn *g = copy_primal(f, name, f->noutputs, f->ninputs + f->nparams);
    int n = f->ninsts;
    int *adj = xalloc((size_t)(n + 1), sizeof(int));
    for (int i = 0; i < n; i++) adj[i] = -1;
    for (int o = 0; o < f->noutputs; o++) {
        int w = ir_input(g, f->ninputs + o), v = f->outputs[o];
        adj[v] = adj[v] < 0 ? w : ir_bin(g, IR_ADD, adj[v], w);
    }
    reverse_sweep(g, n, adj);
    int zero = -1;
    collect_input_adjoints(g, f, n, adj, 0, &zero);
    /* and the parameters (masses, lengths): a parameter may be read by several PARAM instructions */
    for (int k = 0; k < f->nparams; k++) g->outputs[f->ninputs + k] = -1;
    for (int i = 0; i < n; i++) {
        if (g->insts[i].op != IR_PARAM || adj[i] < 0) continue;
        int *o = &g->outputs[f->ninputs + g->insts[i].imm];
        *o = *o < 0 ? adj[i] : ir_bin(g, IR_ADD, *o, adj[i]);
    }
    for (int k = 0; k < f->nparams; k++)
        if (g->outputs[f->ninputs + k] < 0) g->outputs[f->ninputs + k] = ir_const(g, 0);
    free(adj);
    return g;
}

IrFn *ad_gradient(const IrFn *f, int out, const char *name) {
    IrFn *g = copy_primal(f, name, 0, f->ninputs);
    int n = f->ninsts;
    int *adj = xalloc((size_t)(n + 1), sizeof(int));
    for (int i = 0; i < n; i++) adj[i] = -1;
    adj[f->outputs[out]] = ir_const(g, 1);
    reverse_sweep(g, n, adj);
    int zero = -1;
    collect_input_adjoints(g, f, n, adj, 0, &zero);
    free(adj);
    return g;
}

IrFn *ad_jacobian(const IrFn *f, const char *name) {
    IrFn *g = copy_primal(f, name, 0, f->noutputs * f->ninputs);
    int n = f->ninsts;
    int *adj = xalloc((size_t)(n + 1), sizeof(int)), zero = -1;
    for (int r = 0; r < f->noutputs; r++) {
        for (int i = 0; i < n; i++) adj[i] = -1;
        adj[f->outputs[r]] = ir_const(g, 1);
        reverse_sweep(g, n, adj);
        collect_input_adjoints(g, f, n, adj, r * f->ninputs, &zero);
    }
    free(adj);
    return g;
}

IrFn *ad_jvp(const IrFn *f, const char *name) {
    IrFn *g = copy_primal(f, name, f->ninputs, f->noutputs);
    int n = f->ninsts;
    int *tan = xalloc((size_t)(n + 1), sizeof(int));
    for (int i = 0; i < n; i++) {
        tan[i] = -1;
        const IrInst x = g->insts[i];
        if (x.op == IR_INPUT) {
            tan[i] = ir_input(g, f->ninputs + x.imm);
            continue;
        }
        int ta = ir_op_nargs[x.op] >= 1 ? tan[x.a] : -1, tb = ir_op_nargs[x.op] >= 2 ? tan[x.b] : -1;
        if (ta < 0 && tb < 0) continue;
        int da, db;
        partials(g, i, &da, &db);
        int acc = -1;
        if (ta >= 0 && da >= 0) acc = ir_bin(g, IR_MUL, da, ta);
        if (tb >= 0 && db >= 0) {
            int t = ir_bin(g, IR_MUL, db, tb);
            acc = acc < 0 ? t : ir_bin(g, IR_ADD, acc, t);
        }
        tan[i] = acc;
    }
    for (int o = 0; o < f->noutputs; o++) g->outputs[o] = tan[f->outputs[o]] < 0 ? ir_const(g, 0) : tan[f->outputs[o]];
    free(tan);
    return g;
}

void ad_inline(IrFn *g, const IrFn *f, const int *in, const int *params, int *out) {
    int *map = xalloc((size_t)(f->ninsts + 1), sizeof(int));
    for (int i = 0; i < f->ninsts; i++) {
        IrInst x = f->insts[i];
        if (x.op == IR_INPUT) map[i] = in[x.imm];
        else if (x.op == IR_PARAM) map[i] = params[x.imm];
        else map[i] = ir_emit(g, x.op, x.a >= 0 ? map[x.a] : -1, x.b >= 0 ? map[x.b] : -1, x.imm, x.num);
    }
    for (int o = 0; o < f->noutputs; o++) out[o] = map[f->outputs[o]];
    free(map);
}

void ad_gradient_in(IrFn *g, int lo, int hi, int seed, const int *wrt, int nwrt, int *grad) {
    ad_gradients_in(g, lo, hi, &seed, 1, wrt, nwrt, grad);
}

static int cmp_desc(const void *a, const void *b) { return (*(const int *)b > *(const int *)a) - (*(const int *)b < *(const int *)a); }

/* The reverse sweep of seed number r over what it depends on in [lo, hi): adj[i] is valid
   where stamp[i] == r (-1: no adjoint). The values below lo it reaches go to leaves (if not
   NULL; *nleaves of them). */
static void sweep_seed(IrFn *g, int lo, int seed, int r, int *adj, int *stamp, int *stack, int *list, int *leaves,
                       int *nleaves) {
    int top = 0, n = 0;
    stack[top++] = seed;
    stamp[seed] = r, adj[seed] = -1;
    if (leaves) *nleaves = 0;
    while (top > 0) {
        int i = stack[--top];
        if (i < lo) {
            if (leaves) leaves[(*nleaves)++] = i;
            continue;
        }
        list[n++] = i;
        const IrInst *x = &g->insts[i];
        int ops[2] = {ir_op_nargs[x->op] > 0 ? x->a : -1, ir_op_nargs[x->op] > 1 ? x->b : -1};
        for (int k = 0; k < 2; k++)
            if (ops[k] >= 0 && stamp[ops[k]] != r) stamp[ops[k]] = r, adj[ops[k]] = -1, stack[top++] = ops[k];
    }
    qsort(list, (size_t)n, sizeof(int), cmp_desc);
    adj[seed] = ir_const(g, 1);
    for (int e = 0; e < n; e++)
        if (adj[list[e]] >= 0) pull_back(g, list[e], adj);
}

void ad_gradients_in(IrFn *g, int lo, int hi, const int *seeds, int nseeds, const int *wrt, int nwrt, int *grads) {
    /* adj[i] is valid where stamp[i] == r: nothing is cleared between seeds */
    int *adj = xalloc((size_t)hi + 1, sizeof(int)), *stamp = xalloc((size_t)hi + 1, sizeof(int));
    int *stack = xalloc((size_t)hi + 1, sizeof(int)), *list = xalloc((size_t)hi + 1, sizeof(int));
    for (int i = 0; i < hi; i++) stamp[i] = -1;
    for (int r = 0; r < nseeds; r++) {
        sweep_seed(g, lo, seeds[r], r, adj, stamp, stack, list, NULL, NULL);
        int zero = -1, *grad = grads + (long)r * nwrt;
        for (int i = 0; i < nwrt; i++) {
            bool has = wrt[i] < hi && stamp[wrt[i]] == r && adj[wrt[i]] >= 0;
            grad[i] = has ? adj[wrt[i]] : zero >= 0 ? zero : (zero = ir_const(g, 0));
        }
    }
    free(adj), free(stamp), free(stack), free(list);
}

void ad_sparse_gradients_in(IrFn *g, int lo, int hi, const int *seeds, int nseeds, const int *wrt, int nwrt,
                            int *row_start, int **cols, int **grads) {
    int *adj = xalloc((size_t)hi + 1, sizeof(int)), *stamp = xalloc((size_t)hi + 1, sizeof(int));
    int *stack = xalloc((size_t)hi + 1, sizeof(int)), *list = xalloc((size_t)hi + 1, sizeof(int));
    int *leaves = xalloc((size_t)hi + 1, sizeof(int)), *index = xalloc((size_t)hi + 1, sizeof(int)), nleaves = 0;
    for (int i = 0; i < hi; i++) stamp[i] = -1, index[i] = -1;
    for (int i = 0; i < nwrt; i++)
        if (wrt[i] < lo) index[wrt[i]] = i;
    long count = 0, cap = 16;
    *cols = xalloc((size_t)cap, sizeof(int));
    *grads = xalloc((size_t)cap, sizeof(int));
    for (int r = 0; r < nseeds; r++) {
        row_start[r] = (int)count;
        sweep_seed(g, lo, seeds[r], r, adj, stamp, stack, list, leaves, &nleaves);
        for (int e = 0; e < nleaves; e++) {
            int v = leaves[e];
            if (index[v] < 0 || adj[v] < 0) continue;
            if (count == cap) {
                cap *= 2;
                *cols = xrealloc(*cols, (size_t)cap, sizeof(int));
                *grads = xrealloc(*grads, (size_t)cap, sizeof(int));
            }
            (*cols)[count] = index[v], (*grads)[count++] = adj[v];
        }
        /* columns ascending (a few per row: insertion sort) */
        for (long a = row_start[r] + 1; a < count; a++)
            for (long b = a; b > row_start[r] && (*cols)[b - 1] > (*cols)[b]; b--) {
                int c = (*cols)[b], v = (*grads)[b];
                (*cols)[b] = (*cols)[b - 1], (*grads)[b] = (*grads)[b - 1];
                (*cols)[b - 1] = c, (*grads)[b - 1] = v;
            }
    }
    row_start[nseeds] = (int)count;
    free(adj), free(stamp), free(stack), free(list), free(leaves), free(index);
}

void ad_tangent_in(IrFn *g, int lo, int hi, const int *wrt, const int *dir, int nwrt, const int *of, int nof,
                   int *tan) {
    int *t = xalloc((size_t)(hi + 1), sizeof(int));
    for (int i = 0; i < hi; i++) t[i] = -1;
    for (int k = 0; k < nwrt; k++) t[wrt[k]] = dir[k];
    for (int i = lo; i < hi; i++) {
        if (t[i] >= 0) continue; /* a seed */
        const IrInst x = g->insts[i];
        int ta = ir_op_nargs[x.op] >= 1 ? t[x.a] : -1, tb = ir_op_nargs[x.op] >= 2 ? t[x.b] : -1;
        if (ta < 0 && tb < 0) continue;
        int da, db, acc = -1;
        partials(g, i, &da, &db);
        if (ta >= 0 && da >= 0) acc = ir_bin(g, IR_MUL, da, ta);
        if (tb >= 0 && db >= 0) {
            int tt = ir_bin(g, IR_MUL, db, tb);
            acc = acc < 0 ? tt : ir_bin(g, IR_ADD, acc, tt);
        }
        t[i] = acc;
    }
    int zero = -1;
    for (int j = 0; j < nof; j++) tan[j] = of[j] < hi && t[of[j]] >= 0 ? t[of[j]] : zero >= 0 ? zero : (zero = ir_const(g, 0));
    free(t);
}
