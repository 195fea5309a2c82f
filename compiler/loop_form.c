/* loop_form.c — row classes and index tables for the loop-form vector field (loop_form.h). */
#include "loop_form.h"
#include "arena.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ad.h"
#include "sparse_ldlt.h"

static int cmp_int(const void *a, const void *b) { return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b); }

/* A growable int array */
typedef struct Ints {
    int *v;
    long n, cap;
} Ints;

static void push(Ints *a, int x) {
    if (a->n == a->cap) {
        a->cap = a->cap ? 2 * a->cap : 16;
        a->v = xrealloc(a->v, (size_t)a->cap, sizeof(int));
    }
    a->v[a->n++] = x;
}

/* A growable double array */
typedef struct Doubles {
    double *v;
    long n, cap;
} Doubles;

static void push_double(Doubles *a, double x) {
    if (a->n == a->cap) {
        a->cap = a->cap ? 2 * a->cap : 16;
        a->v = xrealloc(a->v, (size_t)a->cap, sizeof(double));
    }
    a->v[a->n++] = x;
}

/* One class while it is being collected: its key (the renumbered cone) and its rows, with
   each row's constants (nconsts a row, in the cone's order). */
typedef struct Class {
    int *key, nkey;
    uint64_t hash;
    int k, q, nconsts;
    Ints rows, coords, lengths;
    Doubles consts;
    int *varies;          /* per constant: its input among the varying ones, or -1 (the same in every row) */
    int nvary;
} Class;

/* The key of a row: [nbodies, each body's points and the mask of the components the row reads,
   ncone, then per instruction of the cone in order: op, local a, local b, imm (a local
   coordinate, length or constant for inputs and constants), num's bits (0 for a constant:
   rows that differ only in their constants, a rope's lengths, share a class, the constants
   that differ becoming inputs of its kernel)]. */
enum { KEY_HEAD = 3, KEY_INST = 6 };

/* The row's cone (the values its output depends on) into cone, in post-order from the
   output (operand a's cone, then b's, then the value): an order that depends on the
   expression alone, not on where the simplifier put shared values. Its size. mark is
   stamped with `stamp`; stack holds 2 ints a value. */
static int cone_of(const IrFn *phi, int out, int *mark, int stamp, int *stack, int *cone) {
    int sp = 0, n = 0;
    stack[sp++] = out, stack[sp++] = 0;
    mark[out] = stamp;
    while (sp > 0) {
        int v = stack[sp - 2], next = stack[sp - 1];
        const IrInst *x = &phi->insts[v];
        if (next < ir_op_nargs[x->op]) {
            stack[sp - 1]++;
            int op = next == 0 ? x->a : x->b;
            if (mark[op] != stamp) mark[op] = stamp, stack[sp++] = op, stack[sp++] = 0;
            continue;
        }
        cone[n++] = v;
        sp -= 2;
    }
    return n;
}

static uint64_t hash_ints(const int *v, int n) {
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < n; i++) h = (h ^ (uint32_t)v[i]) * 1099511628211ull;
    return h;
}

/* The template of a class from its key: (x[k], v[k], lengths[q]) -> (phi, A = dphi/dx,
   B = d(A . v)/dx), the same derivatives dynamics.c takes of the whole Phi. */
static IrFn *template_of(const Class *c, int index) {
    char name[32];
    snprintf(name, sizeof name, "Row%d", index);
    int k = c->k, q = c->q, nb = c->key[0], ncone = c->key[1 + 2 * nb];
    int nin = 2 * k + q + c->nvary;
    IrFn *g = ir_new(name, nin, 0, 1 + 2 * k);
    int *in = xalloc((size_t)nin + 1, sizeof(int)), *val = xalloc((size_t)ncone + 1, sizeof(int));
    for (int i = 0; i < nin; i++) {
        char iname[32]; /* local names: which coordinate each is differs from row to row */
        if (i < 2 * k) snprintf(iname, sizeof iname, "%s%d", i < k ? "x" : "v", i % k);
        else if (i < 2 * k + q) snprintf(iname, sizeof iname, "length%d", i - 2 * k);
        else snprintf(iname, sizeof iname, "const%d", i - 2 * k - q);
        ir_set_input_name(g, i, iname);
        in[i] = ir_input(g, i);
    }
    int lo = g->ninsts;
    const int *inst = c->key + 2 + 2 * nb;
    for (int t = 0; t < ncone; t++, inst += KEY_INST) {
        IrOp op = (IrOp)inst[0];
        double num;
        uint64_t bits = (uint64_t)(uint32_t)inst[4] | (uint64_t)(uint32_t)inst[5] << 32;
        memcpy(&num, &bits, sizeof num);
        if (op == IR_INPUT) val[t] = in[inst[3]];
        else if (op == IR_PARAM) val[t] = in[2 * k + inst[3]];
        else if (op == IR_CONST && c->varies[inst[3]] >= 0) val[t] = in[2 * k + q + c->varies[inst[3]]];
        else if (op == IR_CONST) val[t] = ir_const(g, c->consts.v[inst[3]]); /* the first row's */
        else val[t] = ir_emit(g, op, inst[1] >= 0 ? val[inst[1]] : -1, inst[2] >= 0 ? val[inst[2]] : -1, inst[3], num);
    }
    int phi = val[ncone - 1];
    g->outputs[0] = phi;
    int *A = g->outputs + 1, *B = g->outputs + 1 + k;
    ad_gradients_in(g, lo, g->ninsts, &phi, 1, in, k, A);
    int av = ir_const(g, 0);
    for (int j = 0; j < k; j++) av = ir_bin(g, IR_ADD, av, ir_bin(g, IR_MUL, A[j], in[k + j]));
    ad_gradients_in(g, lo, g->ninsts, &av, 1, in, k, B);
    free(in), free(val);
    return g;
}

/* Entry (r, s) of the neighbour lists, or -1 */
static int nb_entry(const PrtLoopField *f, int r, int s) {
    int lo = f->nb_start[r], hi = f->nb_start[r + 1];
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (f->nb[mid] == s) return mid;
        if (f->nb[mid] < s) lo = mid + 1;
        else hi = mid;
    }
    return -1;
}

bool loop_form_build(const System *sys, const IrFn *phi, PrtLoopField *f, IrFn **templates, int *ntemplates, char *err,
                     size_t errlen) {
    int C = phi->noutputs, d = sys->dim, N = sys->npoints * d, nbodies = sys->nbodies;
    memset(f, 0, sizeof *f);
    f->C = C, f->N = N, f->dim = d, f->nbodies = nbodies;
    f->bodies = xalloc((size_t)nbodies + 1, sizeof(PrtLoopBody));
    int *coord_body = xalloc((size_t)N + 1, sizeof(int)), mass = 0;
    for (int b = 0; b < nbodies; b++) {
        const Body *body = &sys->bodies[b];
        f->bodies[b] = (PrtLoopBody){body->first_coord, body->npoints, mass};
        for (int i = 0; i < body->npoints * d; i++) coord_body[body->first_coord + i] = b;
        mass += 1 + body->n;
    }
    f->nmass = mass;

    /* each row's cone, bodies and key; classes by key */
    int *mark = xalloc((size_t)phi->ninsts + 1, sizeof(int)), *stack = xalloc(2 * (size_t)phi->ninsts + 2, sizeof(int)),
        *cone = xalloc((size_t)phi->ninsts + 1, sizeof(int)), *local = xalloc((size_t)phi->ninsts + 1, sizeof(int));
    int *body_mark = xalloc((size_t)nbodies + 1, sizeof(int)), *body_at = xalloc((size_t)nbodies + 1, sizeof(int)),
        *body_comps = xalloc((size_t)nbodies + 1, sizeof(int)), *comp_rank = xalloc((size_t)nbodies * MAX_DIM + 1, sizeof(int));
    int *param_mark = xalloc((size_t)phi->nparams + 1, sizeof(int)), *param_at = xalloc((size_t)phi->nparams + 1, sizeof(int));
    for (int i = 0; i < phi->ninsts; i++) mark[i] = -1;
    for (int b = 0; b < nbodies; b++) body_mark[b] = -1;
    for (int p = 0; p < phi->nparams; p++) param_mark[p] = -1;
    Class *classes = NULL;
    int nclasses = 0;
    Ints key = {0}, row_bodies = {0}, row_params = {0};
    Doubles row_consts = {0};
    f->row_class = xalloc((size_t)C + 1, sizeof(int));
    f->row_member = xalloc((size_t)C + 1, sizeof(int));
    f->row_off = xalloc((size_t)C + 2, sizeof(int));
    f->row_body_start = xalloc((size_t)C + 2, sizeof(int));
    Ints all_row_bodies = {0}, all_row_comps = {0}, reads = {0}; /* reads: per row, per local coordinate, whether its cone reads it */
    bool ok = true;
    for (int r = 0; r < C && ok; r++) {
        int ncone = cone_of(phi, phi->outputs[r], mark, r, stack, cone);
        row_bodies.n = row_params.n = 0;
        for (int t = 0; t < ncone; t++) {
            const IrInst *x = &phi->insts[cone[t]];
            if (x->op == IR_INPUT && body_mark[coord_body[x->imm]] != r) {
                body_mark[coord_body[x->imm]] = r;
                push(&row_bodies, coord_body[x->imm]);
            }
            if (x->op == IR_PARAM && param_mark[x->imm] != r) {
                param_mark[x->imm] = r;
                param_at[x->imm] = (int)row_params.n;
                push(&row_params, x->imm);
            }
        }
        qsort(row_bodies.v, (size_t)row_bodies.n, sizeof(int), cmp_int);
        /* the components of each body the row reads: its local coordinates are those
           components of every point of the body, component by component (M^-1 mixes a
           body's points within a component, Eq. 9) */
        for (int t = 0; t < ncone; t++) {
            const IrInst *x = &phi->insts[cone[t]];
            if (x->op == IR_INPUT) body_comps[coord_body[x->imm]] = 0;
        }
        for (int t = 0; t < ncone; t++) {
            const IrInst *x = &phi->insts[cone[t]];
            if (x->op == IR_INPUT)
                body_comps[coord_body[x->imm]] |= 1 << ((x->imm - sys->bodies[coord_body[x->imm]].first_coord) % d);
        }
        int k = 0;
        f->row_body_start[r] = (int)all_row_bodies.n;
        key.n = 0;
        push(&key, (int)row_bodies.n);
        for (long e = 0; e < row_bodies.n; e++) {
            int b = row_bodies.v[e], mask = body_comps[b], np = sys->bodies[b].npoints;
            body_at[b] = k;
            for (int c = 0; c < d; c++) comp_rank[b * MAX_DIM + c] = -1;
            for (int c = 0, g = 0; c < d; c++)
                if (mask >> c & 1) comp_rank[b * MAX_DIM + c] = g++, k += np;
            push(&key, np);
            push(&key, mask);
            push(&all_row_bodies, b);
            push(&all_row_comps, __builtin_popcount((unsigned)mask));
        }
        push(&key, ncone);
        row_consts.n = 0;
        long read_at = reads.n;
        for (int j = 0; j < k; j++) push(&reads, 0);
        for (int t = 0; t < ncone; t++) {
            const IrInst *x = &phi->insts[cone[t]];
            local[cone[t]] = t;
            int nargs = ir_op_nargs[x->op], imm = x->imm;
            if (x->op == IR_INPUT) {
                int b = coord_body[x->imm], rel = x->imm - sys->bodies[b].first_coord;
                imm = body_at[b] + comp_rank[b * MAX_DIM + rel % d] * sys->bodies[b].npoints + rel / d;
                reads.v[read_at + imm] = 1;
            }
            if (x->op == IR_PARAM) imm = param_at[x->imm];
            uint64_t bits;
            memcpy(&bits, &x->num, sizeof bits);
            if (x->op == IR_CONST) imm = (int)row_consts.n, bits = 0, push_double(&row_consts, x->num);
            push(&key, x->op);
            push(&key, nargs > 0 ? local[x->a] : -1);
            push(&key, nargs > 1 ? local[x->b] : -1);
            push(&key, imm);
            push(&key, (int)(uint32_t)bits);
            push(&key, (int)(uint32_t)(bits >> 32));
        }
        uint64_t h = hash_ints(key.v, (int)key.n);
        int c = 0;
        while (c < nclasses && !(classes[c].hash == h && classes[c].nkey == key.n &&
                                 !memcmp(classes[c].key, key.v, sizeof(int) * (size_t)key.n)))
            c++;
        if (c == nclasses) {
            if (nclasses == LOOP_FORM_MAX_CLASSES) {
                snprintf(err, errlen, "its constraint rows fall into more than %d kinds (rows alike up to which bodies "
                         "they join)", LOOP_FORM_MAX_CLASSES);
                ok = false;
                break;
            }
            classes = xrealloc(classes, (size_t)nclasses + 1, sizeof *classes);
            Class *nc = &classes[nclasses++];
            memset(nc, 0, sizeof *nc);
            nc->key = xalloc((size_t)key.n, sizeof(int));
            memcpy(nc->key, key.v, sizeof(int) * (size_t)key.n);
            nc->nkey = (int)key.n, nc->hash = h, nc->k = k, nc->q = (int)row_params.n, nc->nconsts = (int)row_consts.n;
        }
        Class *cl = &classes[c];
        f->row_class[r] = c;
        f->row_member[r] = (int)cl->rows.n;
        f->row_off[r] = r == 0 ? 0 : f->row_off[r - 1] + classes[f->row_class[r - 1]].k;
        push(&cl->rows, r);
        for (long e = 0; e < row_bodies.n; e++) {
            const Body *body = &sys->bodies[row_bodies.v[e]];
            for (int comp = 0; comp < d; comp++)
                if (body_comps[row_bodies.v[e]] >> comp & 1)
                    for (int a = 0; a < body->npoints; a++) push(&cl->coords, body->first_coord + a * d + comp);
        }
        for (long e = 0; e < row_params.n; e++) push(&cl->lengths, row_params.v[e]);
        for (long e = 0; e < row_consts.n; e++) push_double(&cl->consts, row_consts.v[e]);
    }
    free(stack), free(cone), free(local), free(mark), free(param_mark), free(param_at), free(key.v), free(row_params.v);
    free(row_bodies.v);
    if (ok) {
        f->row_off[C] = C == 0 ? 0 : f->row_off[C - 1] + classes[f->row_class[C - 1]].k;
        f->row_body_start[C] = (int)all_row_bodies.n;
        f->row_body = all_row_bodies.v ? all_row_bodies.v : xalloc(1, sizeof(int));
        f->row_body_comps = all_row_comps.v ? all_row_comps.v : xalloc(1, sizeof(int));
        all_row_bodies.v = all_row_comps.v = NULL;
        f->nclasses = nclasses;
        f->classes = xcalloc((size_t)nclasses + 1, sizeof(PrtRowClass));
        for (int c = 0; c < nclasses; c++) {
            Class *cl = &classes[c];
            /* the constants that differ between the class's rows (bit for bit) become inputs */
            long nr = cl->rows.n;
            cl->varies = xalloc((size_t)cl->nconsts + 1, sizeof(int));
            for (int j = 0; j < cl->nconsts; j++) {
                bool same = true;
                for (long m = 1; m < nr && same; m++)
                    same = !memcmp(&cl->consts.v[m * cl->nconsts + j], &cl->consts.v[j], sizeof(double));
                cl->varies[j] = same ? -1 : cl->nvary++;
            }
            double *vals = xalloc((size_t)(nr * cl->nvary) + 1, sizeof(double));
            for (long m = 0; m < nr; m++)
                for (int j = 0; j < cl->nconsts; j++)
                    if (cl->varies[j] >= 0) vals[m * cl->nvary + cl->varies[j]] = cl->consts.v[m * cl->nconsts + j];
            f->classes[c] = (PrtRowClass){NULL, cl->k, cl->q, (int)cl->rows.n, cl->rows.v,
                                          cl->coords.v ? cl->coords.v : xalloc(1, sizeof(int)),
                                          cl->lengths.v ? cl->lengths.v : xalloc(1, sizeof(int)), cl->nvary, vals, NULL};
            templates[c] = template_of(cl, c);
        }
        *ntemplates = nclasses;
        f->row_coord = xalloc((size_t)f->row_off[C] + 1, sizeof(int));
        for (int r = 0; r < C; r++) {
            const PrtRowClass *rc = &f->classes[f->row_class[r]];
            memcpy(f->row_coord + f->row_off[r], rc->coords + (long)f->row_member[r] * rc->k, sizeof(int) * (size_t)rc->k);
        }
    } else {
        for (int c = 0; c < nclasses; c++) free(classes[c].rows.v), free(classes[c].coords.v), free(classes[c].lengths.v);
        free(all_row_bodies.v), free(all_row_comps.v);
    }
    for (int c = 0; c < nclasses; c++) free(classes[c].key), free(classes[c].consts.v), free(classes[c].varies);
    free(classes);
    free(row_consts.v);
    if (!ok) {
        free(coord_body), free(body_mark), free(body_at), free(body_comps), free(comp_rank), free(reads.v);
        prt_loop_field_free(f);
        return false;
    }

    /* candidate neighbours: the rows of each body, merged per row */
    int *body_rows_start = xcalloc((size_t)nbodies + 2, sizeof(int));
    for (int e = 0; e < f->row_body_start[C]; e++) body_rows_start[f->row_body[e] + 1]++;
    for (int b = 0; b < nbodies; b++) body_rows_start[b + 1] += body_rows_start[b];
    int *body_rows = xalloc((size_t)f->row_body_start[C] + 1, sizeof(int)), *filled = xcalloc((size_t)nbodies + 1, sizeof(int));
    for (int r = 0; r < C; r++)
        for (int e = f->row_body_start[r]; e < f->row_body_start[r + 1]; e++) {
            int b = f->row_body[e];
            body_rows[body_rows_start[b] + filled[b]++] = r;
        }
    int *row_mark = xalloc((size_t)C + 1, sizeof(int));
    for (int r = 0; r < C; r++) row_mark[r] = -1;
    Ints nb = {0};
    f->nb_start = xalloc((size_t)C + 2, sizeof(int));
    for (int r = 0; r < C; r++) {
        f->nb_start[r] = (int)nb.n;
        row_mark[r] = r;
        push(&nb, r);
        for (int e = f->row_body_start[r]; e < f->row_body_start[r + 1]; e++) {
            int b = f->row_body[e];
            for (int t = body_rows_start[b]; t < body_rows_start[b + 1]; t++)
                if (row_mark[body_rows[t]] != r) row_mark[body_rows[t]] = r, push(&nb, body_rows[t]);
        }
        qsort(nb.v + f->nb_start[r], (size_t)(nb.n - f->nb_start[r]), sizeof(int), cmp_int);
    }
    f->nb_start[C] = (int)nb.n;
    f->nb = nb.v;
    free(body_rows_start), free(body_rows), free(filled), free(row_mark);

    /* the coordinates where A_r (and B_r) and W_s are both nonzero, as local index pairs;
       candidates with none either way (a joint's x row and its y row) are not neighbours:
       their G and S entries are zero */
    int *mirror = NULL; /* per entry (r, s): the entry (s, r) */
    for (int pass = 0; pass < 2; pass++) {
        int nnb = f->nb_start[C];
        free(f->ov_start), free(f->ov), free(mirror);
        mirror = xalloc((size_t)nnb + 1, sizeof(int));
        f->ov_start = xalloc((size_t)nnb + 2, sizeof(int));
        Ints ov = {0};
        for (int r = 0; r < C; r++)
            for (int e = f->nb_start[r]; e < f->nb_start[r + 1]; e++) {
                int s2 = f->nb[e];
                mirror[e] = nb_entry(f, s2, r);
                f->ov_start[e] = (int)(ov.n / 2);
                /* r's coordinates that it reads (A_r nonzero) and that s has (W_s nonzero: s
                   has whole components of its bodies) */
                int kr = f->row_off[r + 1] - f->row_off[r], ks = f->row_off[s2 + 1] - f->row_off[s2];
                for (int i = 0; i < kr; i++) {
                    if (!reads.v[f->row_off[r] + i]) continue;
                    for (int j = 0; j < ks; j++)
                        if (f->row_coord[f->row_off[s2] + j] == f->row_coord[f->row_off[r] + i]) push(&ov, i), push(&ov, j);
                }
            }
        f->ov_start[nnb] = (int)(ov.n / 2);
        f->ov = ov.v ? ov.v : xalloc(1, sizeof(int));
        if (pass == 1) break;
        int kept = 0, *start = xalloc((size_t)C + 2, sizeof(int));
        for (int r = 0; r < C; r++) {
            start[r] = kept;
            for (int e = f->nb_start[r]; e < f->nb_start[r + 1]; e++) {
                int m = mirror[e];
                if (f->nb[e] == r || f->ov_start[e + 1] > f->ov_start[e] || f->ov_start[m + 1] > f->ov_start[m])
                    f->nb[kept++] = f->nb[e];
            }
        }
        start[C] = kept;
        free(f->nb_start);
        f->nb_start = start;
    }
    free(reads.v), free(mirror);
    int nnb = f->nb_start[C];

    /* the elimination order and L's pattern, as the unrolled solve picks them */
    int *adj_start = xalloc((size_t)C + 2, sizeof(int)), *adj = xalloc((size_t)nnb + 1, sizeof(int)), nadj = 0;
    for (int r = 0; r < C; r++) {
        adj_start[r] = nadj;
        for (int e = f->nb_start[r]; e < f->nb_start[r + 1]; e++)
            if (f->nb[e] != r) adj[nadj++] = f->nb[e];
    }
    adj_start[C] = nadj;
    SparseLdlt s;
    sldlt_analyze(&s, C, adj_start, adj);
    free(adj_start), free(adj);
    f->perm = s.perm, f->l_row_start = s.row_start, f->l_row = s.row, f->l_col_start = s.col_start;
    f->l_col = s.col, f->l_col_at = s.col_at;
    f->g_diag = xalloc((size_t)C + 1, sizeof(int));
    f->g_row = xalloc((size_t)s.row_start[C] + 1, sizeof(int));
    for (int i = 0; i < C; i++) {
        f->g_diag[i] = nb_entry(f, s.perm[i], s.perm[i]);
        for (int e = s.row_start[i]; e < s.row_start[i + 1]; e++) f->g_row[e] = nb_entry(f, s.perm[i], s.perm[s.row[e]]);
    }
    free(coord_body), free(body_mark), free(body_at), free(body_comps), free(comp_rank);
    return true;
}
