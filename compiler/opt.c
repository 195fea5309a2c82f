/* opt.c — one forward pass that folds, simplifies and hash-conses every instruction into
   a new kernel, then a backward pass that keeps only what the outputs use. */
#include "opt.h"
#include "arena.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct Builder {
    IrFn *g;
    int *table; /* hash -> value in g, or -1 */
    size_t mask;
    Loc loc;    /* the source instruction's location, for what it becomes */
} Builder;

static bool is_commutative(IrOp op) { return op == IR_ADD || op == IR_MUL || op == IR_MIN || op == IR_MAX; }

static uint64_t inst_hash(const IrInst *x) {
    uint64_t bits;
    memcpy(&bits, &x->num, sizeof bits);
    uint64_t h = (uint64_t)x->op * 0x9e3779b97f4a7c15ULL;
    h ^= ((uint64_t)(uint32_t)x->a + 0x7f4a7c15ULL) * 0xbf58476d1ce4e5b9ULL;
    h ^= ((uint64_t)(uint32_t)x->b + 0x1ce4e5b9ULL) * 0x94d049bb133111ebULL;
    h ^= (uint64_t)(uint32_t)x->imm * 0xd6e8feb86659fd93ULL;
    h ^= bits * 0xa0761d6478bd642fULL;
    return h ^ (h >> 31);
}

static bool same_inst(const IrInst *x, const IrInst *y) {
    return x->op == y->op && x->a == y->a && x->b == y->b && x->imm == y->imm &&
           memcmp(&x->num, &y->num, sizeof x->num) == 0;
}

/* Emits x into the new kernel unless an identical instruction exists. */
static int intern(Builder *bd, IrInst x) {
    if (is_commutative(x.op) && x.a > x.b) {
        int t = x.a;
        x.a = x.b;
        x.b = t;
    }
    if (ir_op_nargs[x.op] < 2) x.b = -1;
    if (ir_op_nargs[x.op] < 1) x.a = -1;
    size_t h = (size_t)inst_hash(&x) & bd->mask;
    while (bd->table[h] >= 0) {
        if (same_inst(&bd->g->insts[bd->table[h]], &x)) return bd->table[h];
        h = (h + 1) & bd->mask;
    }
    int id = ir_emit(bd->g, x.op, x.a, x.b, x.imm, x.num);
    ir_set_locs(bd->g, id, id + 1, bd->loc);
    bd->table[h] = id;
    return id;
}

static bool is_const(Builder *bd, int v, double *out) {
    const IrInst *x = &bd->g->insts[v];
    if (x->op != IR_CONST) return false;
    if (out) *out = x->num;
    return true;
}
static bool is_num(Builder *bd, int v, double k) {
    double c;
    return is_const(bd, v, &c) && c == k;
}
static int mk_const(Builder *bd, double k) { return intern(bd, (IrInst){IR_CONST, -1, -1, 0, k}); }

static int simplify(Builder *bd, IrInst x);

/* x = a * b or a / b with a negated operand, as the negation of the product or quotient of
   the operands (exact: rounding is symmetric in the sign), so that a sum it goes into takes
   the negation as a subtraction (simplify's IR_ADD, IR_SUB): a constrained field's -2 d
   factors cost a negation each before the product. */
static int neg_pulled(Builder *bd, IrInst x) {
    const IrInst *xa = &bd->g->insts[x.a], *xb = &bd->g->insts[x.b];
    bool na = xa->op == IR_NEG, nb = xb->op == IR_NEG;
    if (!na && !nb) return intern(bd, x);
    int v = simplify(bd, (IrInst){x.op, na ? xa->a : x.a, nb ? xb->a : x.b, 0, 0});
    return na && nb ? v : simplify(bd, (IrInst){IR_NEG, v, -1, 0, 0});
}

/* The simplified value of x, whose operands are already values of the new kernel. */
static int simplify(Builder *bd, IrInst x) {
    double ca, cb;
    int n = ir_op_nargs[x.op];
    bool ka = n >= 1 && is_const(bd, x.a, &ca), kb = n >= 2 && is_const(bd, x.b, &cb);
    if (n >= 1 && ka && (n == 1 || kb)) return mk_const(bd, ir_apply(x.op, ca, n == 2 ? cb : 0, x.imm));
    int a = x.a, b = x.b;
    switch (x.op) {
    case IR_ADD: {
        if (is_num(bd, a, 0)) return b;
        if (is_num(bd, b, 0)) return a;
        const IrInst *xa = &bd->g->insts[a], *xb = &bd->g->insts[b];
        if (xb->op == IR_NEG) return simplify(bd, (IrInst){IR_SUB, a, xb->a, 0, 0});
        if (xa->op == IR_NEG) return simplify(bd, (IrInst){IR_SUB, b, xa->a, 0, 0});
        if (xb->op == IR_SUB && xb->b == a) return xb->a; /* a + (c - a) */
        if (xa->op == IR_SUB && xa->b == b) return xa->a; /* (c - b) + b */
        break;
    }
    case IR_SUB: {
        if (is_num(bd, b, 0)) return a;
        if (a == b) return mk_const(bd, 0);
        if (is_num(bd, a, 0)) return simplify(bd, (IrInst){IR_NEG, b, -1, 0, 0});
        const IrInst *xa = &bd->g->insts[a], *xb = &bd->g->insts[b];
        if (xb->op == IR_NEG) return simplify(bd, (IrInst){IR_ADD, a, xb->a, 0, 0});
        if (xa->op == IR_ADD && xa->a == b) return xa->b; /* (b + c) - b */
        if (xa->op == IR_ADD && xa->b == b) return xa->a;
        break;
    }
    case IR_MUL:
        if (is_num(bd, a, 0) || is_num(bd, b, 0)) return mk_const(bd, 0);
        if (is_num(bd, a, 1)) return b;
        if (is_num(bd, b, 1)) return a;
        if (is_num(bd, a, -1)) return simplify(bd, (IrInst){IR_NEG, b, -1, 0, 0});
        if (is_num(bd, b, -1)) return simplify(bd, (IrInst){IR_NEG, a, -1, 0, 0});
        return neg_pulled(bd, x);
    case IR_DIV:
        if (is_num(bd, b, 1)) return a;
        if (is_num(bd, a, 0)) return mk_const(bd, 0);
        if (is_num(bd, b, -1)) return simplify(bd, (IrInst){IR_NEG, a, -1, 0, 0});
        return neg_pulled(bd, x);
    case IR_NEG:
        if (bd->g->insts[a].op == IR_NEG) return bd->g->insts[a].a;
        break;
    case IR_POWI:
        if (x.imm == 0) return mk_const(bd, 1);
        if (x.imm == 1) return a;
        break;
    default: break;
    }
    return intern(bd, x);
}

static IrFn *dead_code_removed(const IrFn *g) {
    bool *live = xcalloc((size_t)g->ninsts + 1, 1);
    for (int o = 0; o < g->noutputs; o++) live[g->outputs[o]] = true;
    for (int i = g->ninsts - 1; i >= 0; i--) {
        if (!live[i]) continue;
        const IrInst *x = &g->insts[i];
        if (ir_op_nargs[x->op] >= 1) live[x->a] = true;
        if (ir_op_nargs[x->op] >= 2) live[x->b] = true;
    }
    IrFn *h = ir_new(g->name, g->ninputs, g->nparams, g->noutputs);
    int *map = xalloc((size_t)(g->ninsts + 1), sizeof(int));
    for (int i = 0; i < g->ninsts; i++) {
        if (!live[i]) continue;
        IrInst x = g->insts[i];
        map[i] = ir_emit(h, x.op, x.a >= 0 ? map[x.a] : -1, x.b >= 0 ? map[x.b] : -1, x.imm, x.num);
        ir_set_locs(h, map[i], map[i] + 1, ir_loc(g, i));
    }
    for (int o = 0; o < g->noutputs; o++) h->outputs[o] = map[g->outputs[o]];
    free(map);
    free(live);
    return h;
}

IrFn *opt_simplify(const IrFn *f) {
    Builder bd = {0};
    bd.g = ir_new(f->name, f->ninputs, f->nparams, f->noutputs);
    size_t size = 64;
    while (size < 4 * (size_t)f->ninsts + 64) size *= 2; /* simplification adds at most a few per instruction */
    bd.table = xalloc(size, sizeof(int));
    memset(bd.table, -1, sizeof(int) * size);
    bd.mask = size - 1;
    int *map = xalloc((size_t)(f->ninsts + 1), sizeof(int));
    for (int i = 0; i < f->ninsts; i++) {
        IrInst x = f->insts[i];
        if (ir_op_nargs[x.op] >= 1) x.a = map[x.a];
        if (ir_op_nargs[x.op] >= 2) x.b = map[x.b];
        bd.loc = ir_loc(f, i);
        map[i] = simplify(&bd, x);
        if ((size_t)bd.g->ninsts * 2 > size) { /* keep the table at most half full */
            size_t nsize = size * 2;
            int *nt = xalloc(nsize, sizeof(int));
            memset(nt, -1, sizeof(int) * nsize);
            for (int k = 0; k < bd.g->ninsts; k++) {
                size_t h = (size_t)inst_hash(&bd.g->insts[k]) & (nsize - 1);
                while (nt[h] >= 0) h = (h + 1) & (nsize - 1);
                nt[h] = k;
            }
            free(bd.table);
            bd.table = nt;
            size = nsize;
            bd.mask = size - 1;
        }
    }
    for (int o = 0; o < f->noutputs; o++) bd.g->outputs[o] = map[f->outputs[o]];
    IrFn *h = dead_code_removed(bd.g);
    for (int i = 0; i < f->ninputs; i++)
        if (f->input_names[i]) ir_set_input_name(h, i, f->input_names[i]);
    for (int o = 0; o < f->noutputs; o++)
        if (f->output_names[o]) ir_set_output_name(h, o, f->output_names[o]);
    free(map);
    free(bd.table);
    ir_free(bd.g);
    return h;
}
