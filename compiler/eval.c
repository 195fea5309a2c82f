/* eval.c — the abstract evaluator: every expression yields a value with a shape, and with
   numbers when they are known at compile time. Shape errors are reported at the operator. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ir.h"
#include "eval.h"
#include "settings.h"

enum { MAX_CALL_DEPTH = 64 };

Val val_err(void) {
    Val v;
    memset(&v, 0, sizeof v);
    v.kind = V_ERR;
    return v;
}

static Val val_num(Sema *s, int ndim, int rows, int cols, bool known) {
    Val v;
    memset(&v, 0, sizeof v);
    v.kind = V_NUM;
    v.ndim = ndim;
    v.rows = rows;
    v.cols = cols;
    v.known = known;
    if (known) v.v = arena_alloc(s->arena, sizeof(double) * (size_t)(rows * cols));
    return v;
}

Val val_scalar(Sema *s, double x) {
    Val v = val_num(s, 0, 1, 1, true);
    v.v[0] = x;
    return v;
}
Val val_vec(Sema *s, int n, bool known) { return val_num(s, 1, n, 1, known); }
Val val_mat(Sema *s, int r, int c, bool known) { return val_num(s, 2, r, c, known); }
static Val val_unknown_like(Sema *s, Val a) { return val_num(s, a.ndim, a.rows, a.cols, false); }

/* ---- lowering: while c->ir is set, every unknown value also carries IR ---- */

static int ncomp(Val v) { return v.rows * v.cols; }

/* The IR values of v's components: constants for known numbers. */
static int *ids(Ctx *c, Val *v) {
    if (!c->ir) return NULL;
    if (!v->ir) {
        v->ir = arena_alloc(c->s->arena, sizeof(int) * (size_t)ncomp(*v));
        for (int i = 0; i < ncomp(*v); i++) v->ir[i] = v->known ? ir_const(c->ir, v->v[i]) : -1;
    }
    return v->ir;
}

/* Gives an unknown result its IR slots when lowering; false when there is nothing to emit. */
static bool lowering(Ctx *c, Val *r) {
    if (!c->ir || r->known) return false;
    r->ir = arena_alloc(c->s->arena, sizeof(int) * (size_t)ncomp(*r));
    return true;
}

static int ir_sum_products(Ctx *c, const int *x, int xstride, const int *y, int ystride, int n) {
    int acc = ir_bin(c->ir, IR_MUL, x[0], y[0]);
    for (int k = 1; k < n; k++) acc = ir_bin(c->ir, IR_ADD, acc, ir_bin(c->ir, IR_MUL, x[k * xstride], y[k * ystride]));
    return acc;
}

const char *shape_name(Sema *s, Val v) {
    switch (v.kind) {
    case V_NUM:
        if (v.ndim == 0) return "a scalar";
        if (v.ndim == 1) return arena_printf(s->arena, "a %d-vector", v.rows);
        return arena_printf(s->arena, "a %dx%d matrix", v.rows, v.cols);
    case V_BODY: return "a body";
    case V_BODYARR: return "an array of bodies";
    case V_STR: return "a string";
    case V_WORD: return "a word";
    case V_INPUTSET: return "a state set";
    case V_ERR: break;
    }
    return "an invalid value";
}

void sema_error_once(Sema *s, Node *n, Loc loc, const char *fmt, ...) {
    if (n && n->reported) return;
    if (n) n->reported = true;
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    diag_error(s->d, loc, "%s", buf);
}
#define ERR(node, loc, ...) (sema_error_once(c->s, (node), (loc), __VA_ARGS__), val_err())

Binding *scope_lookup(Scope *sc, const char *name) {
    for (; sc; sc = sc->parent)
        for (Binding *b = sc->head; b; b = b->next)
            if (strcmp(b->name, name) == 0) return b;
    return NULL;
}

Binding *scope_bind(Sema *s, Scope *sc, const char *name, BindKind kind, Node *decl) {
    Binding *b = arena_alloc(s->arena, sizeof *b);
    b->name = name;
    b->kind = kind;
    b->decl = decl;
    b->next = sc->head;
    sc->head = b;
    return b;
}

bool val_int(Ctx *c, Node *n, Val v, long *out, const char *what) {
    if (v.kind == V_ERR) return false;
    if (v.kind != V_NUM || v.ndim != 0) {
        ERR(n, n->loc, "%s must be a number, not %s", what, shape_name(c->s, v));
        return false;
    }
    if (!v.known) {
        ERR(n, n->loc, "%s must be known when the program is compiled", what);
        return false;
    }
    double x = v.v[0];
    if (x != floor(x) || fabs(x) > 1e9) {
        Binding *b = n->kind == N_IDENT ? scope_lookup(c->scope, n->name) : NULL;
        if (b && b->from_set && !n->reported) { /* the value is the command line's: say so there */
            ERR(n, n->loc, "%s must be a whole number, and --set %s=%g on the command line makes parameter '%s' %g", what,
                n->name, x, n->name, x);
            return false;
        }
        ERR(n, n->loc, "%s must be a whole number, not %g", what, x);
        return false;
    }
    *out = (long)x;
    return true;
}

/* ---- arithmetic ---- */

static bool same_shape(Val a, Val b) { return a.ndim == b.ndim && a.rows == b.rows && a.cols == b.cols; }

static Val combine_flags(Val r, Val a, Val b) {
    r.random = a.random || b.random;
    return r;
}

static Val eval_bin(Ctx *c, Node *n) {
    Val a = eval(c, n->a), b = eval(c, n->b);
    if (a.kind == V_ERR || b.kind == V_ERR) return val_err();
    Sema *s = c->s;
    int op = n->op;
    if (a.kind != V_NUM || b.kind != V_NUM) {
        Val bad = a.kind != V_NUM ? a : b;
        const char *hint = bad.kind == V_BODY ? " (use .pos for a body's position)" : "";
        return ERR(n, n->loc2, "operator '%c' needs numbers, not %s%s", op, shape_name(s, bad), hint);
    }
    bool known = a.known && b.known;
    Val r;
    switch (op) {
    case '+':
    case '-':
        if (!same_shape(a, b))
            return ERR(n, n->loc2, "cannot %s %s and %s", op == '+' ? "add" : "subtract", shape_name(s, a),
                       shape_name(s, b));
        r = val_num(s, a.ndim, a.rows, a.cols, known);
        if (known)
            for (int i = 0; i < a.rows * a.cols; i++) r.v[i] = op == '+' ? a.v[i] + b.v[i] : a.v[i] - b.v[i];
        if (lowering(c, &r))
            for (int i = 0; i < ncomp(r); i++) r.ir[i] = ir_bin(c->ir, op == '+' ? IR_ADD : IR_SUB, ids(c, &a)[i], ids(c, &b)[i]);
        return combine_flags(r, a, b);
    case '*':
        if (a.ndim == 0 || b.ndim == 0) {
            Val big = a.ndim == 0 ? b : a, sc = a.ndim == 0 ? a : b;
            r = val_num(s, big.ndim, big.rows, big.cols, known);
            if (known)
                for (int i = 0; i < big.rows * big.cols; i++) r.v[i] = sc.v[0] * big.v[i];
            if (lowering(c, &r))
                for (int i = 0; i < ncomp(r); i++) r.ir[i] = ir_bin(c->ir, IR_MUL, ids(c, &sc)[0], ids(c, &big)[i]);
            return combine_flags(r, a, b);
        }
        if (a.ndim == 1 && b.ndim == 1)
            return ERR(n, n->loc2, "cannot multiply two vectors with '*': use dot(a, b)%s",
                       a.rows == 3 ? " or cross(a, b)" : "");
        if (a.ndim == 1)
            return ERR(n, n->loc2, "cannot multiply %s by %s (a vector on the left of a matrix)",
                       shape_name(s, a), shape_name(s, b));
        {
            int inner = b.rows;
            if (a.cols != inner)
                return ERR(n, n->loc2, "cannot multiply %s by %s: inner sizes %d and %d differ", shape_name(s, a),
                           shape_name(s, b), a.cols, inner);
            int rc = b.ndim == 1 ? 1 : b.cols;
            r = b.ndim == 1 ? val_vec(s, a.rows, known) : val_mat(s, a.rows, rc, known);
            if (known)
                for (int i = 0; i < a.rows; i++)
                    for (int j = 0; j < rc; j++) {
                        double acc = 0;
                        for (int k = 0; k < inner; k++) acc += a.v[i * a.cols + k] * b.v[k * rc + j];
                        r.v[i * rc + j] = acc;
                    }
            if (lowering(c, &r))
                for (int i = 0; i < a.rows; i++)
                    for (int j = 0; j < rc; j++)
                        r.ir[i * rc + j] = ir_sum_products(c, ids(c, &a) + i * a.cols, 1, ids(c, &b) + j, rc, inner);
            return combine_flags(r, a, b);
        }
    case '/':
        if (b.ndim != 0) return ERR(n, n->loc2, "cannot divide by %s: the divisor must be a scalar", shape_name(s, b));
        if (b.known && b.v[0] == 0) return ERR(n, n->loc2, "division by zero");
        r = val_num(s, a.ndim, a.rows, a.cols, known);
        if (known)
            for (int i = 0; i < a.rows * a.cols; i++) r.v[i] = a.v[i] / b.v[0];
        if (lowering(c, &r))
            for (int i = 0; i < ncomp(r); i++) r.ir[i] = ir_bin(c->ir, IR_DIV, ids(c, &a)[i], ids(c, &b)[0]);
        return combine_flags(r, a, b);
    case '^':
        if (a.ndim != 0 || b.ndim != 0)
            return ERR(n, n->loc2, "'^' needs scalars, not %s and %s%s", shape_name(s, a), shape_name(s, b),
                       a.ndim == 1 ? " (for a squared length use dot(v, v) or norm(v)^2)" : "");
        r = val_scalar(s, 0);
        r.known = known;
        if (known) {
            r.v[0] = pow(a.v[0], b.v[0]);
            if (!isfinite(r.v[0])) return ERR(n, n->loc2, "%g ^ %g is not a finite number", a.v[0], b.v[0]);
        }
        if (lowering(c, &r)) {
            double e = b.known ? b.v[0] : 0.5;
            if (b.known && e == floor(e) && fabs(e) <= 64)
                r.ir[0] = ir_emit(c->ir, IR_POWI, ids(c, &a)[0], -1, (int)e, 0);
            else if (b.known && e == 0.5)
                r.ir[0] = ir_un(c->ir, IR_SQRT, ids(c, &a)[0]);
            else
                r.ir[0] = ir_bin(c->ir, IR_POW, ids(c, &a)[0], ids(c, &b)[0]);
        }
        return combine_flags(r, a, b);
    }
    die("unknown operator %d", op);
}

/* ---- builtin functions: a table of rows (builtins[] below), one evaluator per row ---- */

/* The functions of the language (docs/language.md, section 16), one row each: its name,
   its call as the manual writes it, how many arguments it takes, their kinds (a letter
   each, builtin_arg_ok), whether it draws random numbers (then only an init block may call
   it), the IR operation of an elementwise row, its evaluator and what it gives in words. The order is the order
   "did you mean" considers them in. */
typedef struct BuiltinCall BuiltinCall;
typedef struct Builtin {
    const char *name, *call;
    int min_args, max_args;
    const char *kinds;
    bool draws;
    IrOp op;
    Val (*eval)(BuiltinCall *k);
    const char *doc; /* what it gives, in a few words (the language server's hover) */
} Builtin;

/* A call of a builtin, its arguments evaluated and of the kinds its row asks for. */
struct BuiltinCall {
    Ctx *c;
    Node *n; /* the call */
    const Builtin *b;
    int argc;
    Val a[3];
    bool known, random; /* every argument is known; some argument is random */
};

/* IR of a 3x3 rotation about `axis` by angle t (ids), as rot3() computes it. */
static void ir_rot3(Ctx *c, int *m, int axis, int t) {
    int cs = ir_un(c->ir, IR_COS, t), sn = ir_un(c->ir, IR_SIN, t);
    int zero = ir_const(c->ir, 0), one = ir_const(c->ir, 1);
    for (int k = 0; k < 9; k++) m[k] = zero;
    int i = (axis + 1) % 3, j = (axis + 2) % 3;
    m[axis * 3 + axis] = one;
    m[i * 3 + i] = cs;
    m[j * 3 + j] = cs;
    m[i * 3 + j] = ir_un(c->ir, IR_NEG, sn);
    m[j * 3 + i] = sn;
}

static void ir_matmul3(Ctx *c, int *r, const int *a, const int *b) {
    int t[9];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) t[i * 3 + j] = ir_sum_products(c, a + i * 3, 1, b + j, 3, 3);
    memcpy(r, t, sizeof t);
}

static bool need_scalar(Ctx *c, Node *call, int i, Val v) {
    if (v.kind == V_NUM && v.ndim == 0) return true;
    ERR(NODE_AT(call->list, i), NODE_AT(call->list, i)->loc, "argument %d of %s() must be a scalar, not %s", i + 1,
        call->name, shape_name(c->s, v));
    return false;
}
static bool need_vector(Ctx *c, Node *call, int i, Val v) {
    if (v.kind == V_NUM && v.ndim == 1) return true;
    ERR(NODE_AT(call->list, i), NODE_AT(call->list, i)->loc, "argument %d of %s() must be a vector, not %s%s", i + 1,
        call->name, shape_name(c->s, v), v.kind == V_BODY ? " (use .pos for a body's position)" : "");
    return false;
}

/* Whether argument i is of `kind`, a letter of a row's kinds: 's' a scalar, 'v' a vector,
   'e' a scalar or a vector (taken component by component), '.' what the evaluator checks.
   Reported at the argument. */
static bool builtin_arg_ok(Ctx *c, Node *call, int i, char kind, Val v) {
    switch (kind) {
    case 's': return need_scalar(c, call, i, v);
    case 'v': return need_vector(c, call, i, v);
    case 'e':
        if (v.kind == V_NUM && v.ndim != 2) return true;
        need_scalar(c, call, i, v);
        return false;
    default: return true;
    }
}

static void rot3(double *m, int axis, double t) {
    double cs = cos(t), sn = sin(t);
    memset(m, 0, 9 * sizeof *m);
    int i = (axis + 1) % 3, j = (axis + 2) % 3;
    m[axis * 3 + axis] = 1;
    m[i * 3 + i] = cs;
    m[j * 3 + j] = cs;
    m[i * 3 + j] = -sn;
    m[j * 3 + i] = sn;
}

static void matmul3(double *r, const double *a, const double *b) {
    double t[9];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) t[i * 3 + j] = a[i * 3] * b[j] + a[i * 3 + 1] * b[3 + j] + a[i * 3 + 2] * b[6 + j];
    memcpy(r, t, sizeof t);
}

/* sin(x), cos(x), ... sign(x): the row's IR operation on each component of a scalar or a
   vector, computed as the IR evaluator does */
static Val eval_elementwise(BuiltinCall *k) {
    Ctx *c = k->c;
    Val *a = k->a;
    IrOp op = k->b->op;
    Val r = k->known ? val_num(c->s, a[0].ndim, a[0].rows, 1, true) : val_unknown_like(c->s, a[0]);
    if (k->known)
        for (int i = 0; i < a[0].rows; i++) {
            r.v[i] = ir_apply(op, a[0].v[i], 0, 0);
            if (!isfinite(r.v[i])) return ERR(k->n, k->n->loc, "%s(%g) is not a finite number", k->b->name, a[0].v[i]);
        }
    if (lowering(c, &r))
        for (int i = 0; i < a[0].rows; i++) r.ir[i] = ir_un(c->ir, op, ids(c, &a[0])[i]);
    r.random = k->random;
    return r;
}

/* atan2(y, x), min(a, b), max(a, b): the row's IR operation on two scalars */
static Val eval_scalar_pair(BuiltinCall *k) {
    Ctx *c = k->c;
    Val *a = k->a;
    Val r = val_num(c->s, 0, 1, 1, k->known);
    if (k->known) r.v[0] = ir_apply(k->b->op, a[0].v[0], a[1].v[0], 0);
    if (lowering(c, &r)) r.ir[0] = ir_bin(c->ir, k->b->op, ids(c, &a[0])[0], ids(c, &a[1])[0]);
    r.random = k->random;
    return r;
}

/* clip(x, lo, hi): each component of x into [lo, hi] */
static Val eval_clip(BuiltinCall *k) {
    Ctx *c = k->c;
    Val *a = k->a;
    Val r = k->known ? val_num(c->s, a[0].ndim, a[0].rows, 1, true) : val_unknown_like(c->s, a[0]);
    if (k->known)
        for (int i = 0; i < a[0].rows; i++) r.v[i] = fmin(fmax(a[0].v[i], a[1].v[0]), a[2].v[0]);
    if (lowering(c, &r))
        for (int i = 0; i < a[0].rows; i++)
            r.ir[i] = ir_bin(c->ir, IR_MIN, ir_bin(c->ir, IR_MAX, ids(c, &a[0])[i], ids(c, &a[1])[0]), ids(c, &a[2])[0]);
    r.random = k->random;
    return r;
}

/* norm(v): the Euclidean length */
static Val eval_norm(BuiltinCall *k) {
    Ctx *c = k->c;
    Val *a = k->a;
    Val r = val_num(c->s, 0, 1, 1, k->known);
    if (k->known) {
        double acc = 0;
        for (int i = 0; i < a[0].rows; i++) acc += a[0].v[i] * a[0].v[i];
        r.v[0] = sqrt(acc);
    }
    if (lowering(c, &r)) {
        int *x = ids(c, &a[0]);
        r.ir[0] = ir_un(c->ir, IR_SQRT, ir_sum_products(c, x, 1, x, 1, a[0].rows));
    }
    r.random = k->random;
    return r;
}

/* len(v): the number of components, known even where v is not */
static Val eval_len(BuiltinCall *k) { return val_scalar(k->c->s, k->a[0].rows); }

/* dot(u, v): vectors of one length */
static Val eval_dot(BuiltinCall *k) {
    Ctx *c = k->c;
    Val *a = k->a;
    if (a[0].rows != a[1].rows)
        return ERR(k->n, k->n->loc2, "%s() needs vectors of the same length, not %s and %s", k->b->name,
                   shape_name(c->s, a[0]), shape_name(c->s, a[1]));
    Val r = val_num(c->s, 0, 1, 1, k->known);
    if (k->known) {
        double acc = 0;
        for (int i = 0; i < a[0].rows; i++) acc += a[0].v[i] * a[1].v[i];
        r.v[0] = acc;
    }
    if (lowering(c, &r)) {
        int *p = ids(c, &a[0]), *q = ids(c, &a[1]);
        r.ir[0] = ir_sum_products(c, p, 1, q, 1, a[0].rows);
    }
    r.random = k->random;
    return r;
}

/* cross(u, v): 3-vectors only */
static Val eval_cross(BuiltinCall *k) {
    Ctx *c = k->c;
    Val *a = k->a;
    if (a[0].rows != 3 || a[1].rows != 3)
        return ERR(k->n, k->n->loc2, "cross() is defined for 3-vectors only, not %s and %s", shape_name(c->s, a[0]),
                   shape_name(c->s, a[1]));
    const double *x = a[0].v, *y = a[1].v;
    Val r = val_vec(c->s, 3, k->known);
    if (k->known) {
        r.v[0] = x[1] * y[2] - x[2] * y[1];
        r.v[1] = x[2] * y[0] - x[0] * y[2];
        r.v[2] = x[0] * y[1] - x[1] * y[0];
    }
    if (lowering(c, &r)) {
        int *p = ids(c, &a[0]), *q = ids(c, &a[1]);
        for (int i = 0; i < 3; i++) {
            int j = (i + 1) % 3, l = (i + 2) % 3;
            r.ir[i] = ir_bin(c->ir, IR_SUB, ir_bin(c->ir, IR_MUL, p[j], q[l]), ir_bin(c->ir, IR_MUL, p[l], q[j]));
        }
    }
    r.random = k->random;
    return r;
}

/* outer(u, v): the m x n matrix u v^T */
static Val eval_outer(BuiltinCall *k) {
    Ctx *c = k->c;
    Val *a = k->a;
    int m = a[0].rows, n = a[1].rows;
    Val r = val_mat(c->s, m, n, k->known);
    if (k->known)
        for (int i = 0; i < m; i++)
            for (int j = 0; j < n; j++) r.v[i * n + j] = a[0].v[i] * a[1].v[j];
    if (lowering(c, &r)) {
        int *p = ids(c, &a[0]), *q = ids(c, &a[1]);
        for (int i = 0; i < m; i++)
            for (int j = 0; j < n; j++) r.ir[i * n + j] = ir_bin(c->ir, IR_MUL, p[i], q[j]);
    }
    r.random = k->random;
    return r;
}

/* transpose(A): a matrix (reported at the argument if it is not) */
static Val eval_transpose(BuiltinCall *k) {
    Ctx *c = k->c;
    Val *a = k->a;
    if (a[0].kind != V_NUM || a[0].ndim != 2)
        return ERR(k->n, NODE_AT(k->n->list, 0)->loc, "transpose() needs a matrix, not %s", shape_name(c->s, a[0]));
    int rows = a[0].rows, cols = a[0].cols;
    Val r = val_mat(c->s, cols, rows, k->known);
    if (k->known)
        for (int i = 0; i < rows; i++)
            for (int j = 0; j < cols; j++) r.v[j * rows + i] = a[0].v[i * cols + j];
    if (lowering(c, &r))
        for (int i = 0; i < rows; i++)
            for (int j = 0; j < cols; j++) r.ir[j * rows + i] = ids(c, &a[0])[i * cols + j];
    r.random = k->random;
    return r;
}

/* The size argument of eye(n) and zeros(n): a whole number from 1 to 64, known when the
   program is compiled. */
static bool builtin_size(BuiltinCall *k, long *size) {
    Ctx *c = k->c;
    Node *arg = NODE_AT(k->n->list, 0);
    if (!val_int(c, arg, k->a[0], size, "the size")) return false;
    if (*size < 1 || *size > 64) {
        ERR(k->n, arg->loc, "%s() needs a size from 1 to 64", k->b->name);
        return false;
    }
    return true;
}

/* eye(n): the n x n identity */
static Val eval_eye(BuiltinCall *k) {
    long n;
    if (!builtin_size(k, &n)) return val_err();
    Val r = val_mat(k->c->s, (int)n, (int)n, true);
    for (long i = 0; i < n; i++) r.v[i * n + i] = 1;
    return r;
}

/* zeros(n): the zero n-vector */
static Val eval_zeros(BuiltinCall *k) {
    long n;
    if (!builtin_size(k, &n)) return val_err();
    return val_vec(k->c->s, (int)n, true);
}

/* rotx(t), roty(t), rotz(t): the 3x3 rotation about the axis the name ends with */
static Val eval_rot_axis(BuiltinCall *k) {
    Ctx *c = k->c;
    Val *a = k->a;
    int axis = k->b->name[3] - 'x';
    Val r = val_mat(c->s, 3, 3, k->known);
    if (k->known) rot3(r.v, axis, a[0].v[0]);
    if (lowering(c, &r)) ir_rot3(c, r.ir, axis, ids(c, &a[0])[0]);
    r.random = k->random;
    return r;
}

/* rot2(t): the 2x2 rotation [[cos t, -sin t], [sin t, cos t]] */
static Val eval_rot2(BuiltinCall *k) {
    Ctx *c = k->c;
    Val *a = k->a;
    Val r = val_mat(c->s, 2, 2, k->known);
    if (k->known) {
        double t = a[0].v[0];
        r.v[0] = cos(t), r.v[1] = -sin(t), r.v[2] = sin(t), r.v[3] = cos(t);
    }
    if (lowering(c, &r)) {
        int t = ids(c, &a[0])[0], cs = ir_un(c->ir, IR_COS, t), sn = ir_un(c->ir, IR_SIN, t);
        r.ir[0] = cs, r.ir[1] = ir_un(c->ir, IR_NEG, sn), r.ir[2] = sn, r.ir[3] = cs;
    }
    r.random = k->random;
    return r;
}

/* euler_zxz(phi, theta, psi): R = Rz(phi) Rx(theta) Rz(psi) */
static Val eval_euler_zxz(BuiltinCall *k) {
    Ctx *c = k->c;
    Val *a = k->a;
    Val r = val_mat(c->s, 3, 3, k->known);
    if (k->known) {
        double m1[9], m2[9];
        rot3(r.v, 2, a[0].v[0]);
        rot3(m1, 0, a[1].v[0]);
        rot3(m2, 2, a[2].v[0]);
        matmul3(r.v, r.v, m1);
        matmul3(r.v, r.v, m2);
    }
    if (lowering(c, &r)) {
        int m1[9], m2[9];
        ir_rot3(c, r.ir, 2, ids(c, &a[0])[0]);
        ir_rot3(c, m1, 0, ids(c, &a[1])[0]);
        ir_rot3(c, m2, 2, ids(c, &a[2])[0]);
        ir_matmul3(c, r.ir, r.ir, m1);
        ir_matmul3(c, r.ir, r.ir, m2);
    }
    r.random = k->random;
    return r;
}

/* Lowering init: a new random input of the kernel, of `kind`; its IR value. */
static int draw_input(Ctx *c, DrawKind kind) {
    LowerState *ls = c->ls;
    if (ls->ndraws == ls->cap_draws) {
        ls->cap_draws = ls->cap_draws ? 2 * ls->cap_draws : 16;
        DrawKind *nd = arena_alloc(c->s->arena, sizeof(DrawKind) * (size_t)ls->cap_draws);
        if (ls->ndraws) memcpy(nd, ls->draws, sizeof(DrawKind) * (size_t)ls->ndraws);
        ls->draws = nd;
    }
    ls->draws[ls->ndraws] = kind;
    return ir_input(c->ir, ls->ndraws++);
}

/* normal(mu, sigma[, n]) and uniform(lo, hi[, n]): a random scalar, or n-vector, whose
   components are each an input of the kernel (a standard normal, or uniform on [0, 1)
   draw) scaled and shifted */
static Val random_draws(BuiltinCall *k, DrawKind kind) {
    Ctx *c = k->c;
    Val *a = k->a, r;
    if (k->argc == 3) {
        long len;
        Node *arg = NODE_AT(k->n->list, 2);
        if (!val_int(c, arg, a[2], &len, "the length of a random vector")) return val_err();
        if (len < 1 || len > 1000000) return ERR(k->n, arg->loc, "a random vector needs a length from 1 to 1000000");
        r = val_vec(c->s, (int)len, false);
    } else {
        r = val_num(c->s, 0, 1, 1, false);
    }
    r.random = true;
    if (c->ls && lowering(c, &r)) {
        int p0 = ids(c, &a[0])[0], p1 = ids(c, &a[1])[0];
        int scale = kind == DRAW_NORMAL ? p1 : ir_bin(c->ir, IR_SUB, p1, p0);
        for (int i = 0; i < ncomp(r); i++) {
            int z = draw_input(c, kind);
            r.ir[i] = ir_bin(c->ir, IR_ADD, p0, ir_bin(c->ir, IR_MUL, scale, z));
        }
    }
    return r;
}

/* normal(mu, sigma[, n]): Gaussian draws; sigma must not be negative */
static Val eval_normal(BuiltinCall *k) {
    Ctx *c = k->c;
    if (k->a[1].known && k->a[1].v[0] < 0)
        return ERR(k->n, NODE_AT(k->n->list, 1)->loc, "the standard deviation of normal() must not be negative");
    return random_draws(k, DRAW_NORMAL);
}

/* uniform(lo, hi[, n]): uniform draws on [lo, hi] */
static Val eval_uniform(BuiltinCall *k) { return random_draws(k, DRAW_UNIFORM); }

/* The rows (struct Builtin above); op is IR_NOPS where the function is not one IR operation. */
static const Builtin builtins[] = {
    {"sin", "sin(x)", 1, 1, "e", false, IR_SIN, eval_elementwise, "the sine, elementwise (radians)"},
    {"cos", "cos(x)", 1, 1, "e", false, IR_COS, eval_elementwise, "the cosine, elementwise"},
    {"tan", "tan(x)", 1, 1, "e", false, IR_TAN, eval_elementwise, "the tangent, elementwise"},
    {"asin", "asin(x)", 1, 1, "e", false, IR_ASIN, eval_elementwise, "the arc sine, elementwise"},
    {"acos", "acos(x)", 1, 1, "e", false, IR_ACOS, eval_elementwise, "the arc cosine, elementwise"},
    {"atan", "atan(x)", 1, 1, "e", false, IR_ATAN, eval_elementwise, "the arc tangent, elementwise"},
    {"sinh", "sinh(x)", 1, 1, "e", false, IR_SINH, eval_elementwise, "the hyperbolic sine, elementwise"},
    {"cosh", "cosh(x)", 1, 1, "e", false, IR_COSH, eval_elementwise, "the hyperbolic cosine, elementwise"},
    {"tanh", "tanh(x)", 1, 1, "e", false, IR_TANH, eval_elementwise, "the hyperbolic tangent, elementwise"},
    {"exp", "exp(x)", 1, 1, "e", false, IR_EXP, eval_elementwise, "e to the x, elementwise"},
    {"log", "log(x)", 1, 1, "e", false, IR_LOG, eval_elementwise, "the natural logarithm, elementwise"},
    {"sqrt", "sqrt(x)", 1, 1, "e", false, IR_SQRT, eval_elementwise, "the square root, elementwise"},
    {"abs", "abs(x)", 1, 1, "e", false, IR_ABS, eval_elementwise, "the absolute value, elementwise"},
    {"sign", "sign(x)", 1, 1, "e", false, IR_SIGN, eval_elementwise, "-1, 0 or 1, elementwise"},
    {"atan2", "atan2(y, x)", 2, 2, "ss", false, IR_ATAN2, eval_scalar_pair, "the angle of the point (x, y), in (-pi, pi]; scalars"},
    {"min", "min(a, b)", 2, 2, "ss", false, IR_MIN, eval_scalar_pair, "the smaller of two scalars"},
    {"max", "max(a, b)", 2, 2, "ss", false, IR_MAX, eval_scalar_pair, "the larger of two scalars"},
    {"clip", "clip(x, lo, hi)", 3, 3, "ess", false, IR_NOPS, eval_clip, "x held to [lo, hi] (x a scalar or vector; lo, hi scalars)"},
    {"norm", "norm(v)", 1, 1, "v", false, IR_NOPS, eval_norm, "the Euclidean length of a vector"},
    {"dot", "dot(u, v)", 2, 2, "vv", false, IR_NOPS, eval_dot, "the dot product of two vectors of equal length"},
    {"cross", "cross(u, v)", 2, 2, "vv", false, IR_NOPS, eval_cross, "the cross product of two 3-vectors"},
    {"len", "len(v)", 1, 1, "v", false, IR_NOPS, eval_len, "a vector's length, a constant scalar"},
    {"transpose", "transpose(A)", 1, 1, ".", false, IR_NOPS, eval_transpose, "a matrix transposed"},
    {"outer", "outer(u, v)", 2, 2, "vv", false, IR_NOPS, eval_outer, "the m x n matrix u v^T"},
    {"eye", "eye(n)", 1, 1, ".", false, IR_NOPS, eval_eye, "the n x n identity (n a constant 1..64)"},
    {"zeros", "zeros(n)", 1, 1, ".", false, IR_NOPS, eval_zeros, "an n-vector of zeros (n a constant 1..64)"},
    {"rotx", "rotx(t)", 1, 1, "s", false, IR_NOPS, eval_rot_axis, "the 3 x 3 rotation by t about x"},
    {"roty", "roty(t)", 1, 1, "s", false, IR_NOPS, eval_rot_axis, "the 3 x 3 rotation by t about y"},
    {"rotz", "rotz(t)", 1, 1, "s", false, IR_NOPS, eval_rot_axis, "the 3 x 3 rotation by t about z"},
    {"rot2", "rot2(t)", 1, 1, "s", false, IR_NOPS, eval_rot2, "the 2 x 2 rotation by t"},
    {"euler_zxz", "euler_zxz(phi, theta, psi)", 3, 3, "sss", false, IR_NOPS, eval_euler_zxz, "R = Rz(phi) Rx(theta) Rz(psi), a 3 x 3 matrix"},
    {"normal", "normal(mu, sigma[, n])", 2, 3, "ss.", true, IR_NOPS, eval_normal, "a Gaussian draw (an n-vector of them with n); init only"},
    {"uniform", "uniform(lo, hi[, n])", 2, 3, "ss.", true, IR_NOPS, eval_uniform, "a uniform draw on [lo, hi] (an n-vector with n); init only"},
};

static const Builtin *find_builtin(const char *name) {
    for (size_t i = 0; i < sizeof builtins / sizeof builtins[0]; i++)
        if (strcmp(builtins[i].name, name) == 0) return &builtins[i];
    return NULL;
}

bool is_builtin_fn(const char *name) { return find_builtin(name) != NULL; }

/* name "(" args ")" of a builtin: its row's count and kinds of arguments checked, then its
   evaluator */
static Val eval_builtin(Ctx *c, Node *n, const Builtin *b) {
    int argc = n->list.len;
    if (argc < b->min_args || argc > b->max_args) {
        if (b->min_args == b->max_args)
            return ERR(n, n->loc2, "%s() takes %d argument%s, not %d", b->name, b->min_args, b->min_args == 1 ? "" : "s",
                       argc);
        return ERR(n, n->loc2, "%s() takes %d to %d arguments, not %d", b->name, b->min_args, b->max_args, argc);
    }
    BuiltinCall k = {.c = c, .n = n, .b = b, .argc = argc, .known = true};
    for (int i = 0; i < argc; i++) {
        k.a[i] = eval(c, NODE_AT(n->list, i));
        if (k.a[i].kind == V_ERR) return val_err();
        k.random |= k.a[i].random;
        k.known &= k.a[i].known;
    }
    if (b->draws && c->mode != EV_INIT)
        return ERR(n, n->loc2, "random draws like %s() are only allowed in an init block", b->name);
    for (int i = 0; i < argc && b->kinds[i]; i++)
        if (!builtin_arg_ok(c, n, i, b->kinds[i], k.a[i])) return val_err();
    return b->eval(&k);
}

/* ---- user functions: inlined per call, so they are generic over shapes ---- */

static Val eval_user_fn(Ctx *c, Node *call, Node *fn) {
    Sema *s = c->s;
    if (call->list.len != fn->list.len)
        return ERR(call, call->loc2, "%s() takes %d argument%s, not %d", fn->name, fn->list.len,
                   fn->list.len == 1 ? "" : "s", call->list.len);
    if (c->call_depth >= MAX_CALL_DEPTH)
        return ERR(call, call->loc2, "calls nest more than %d deep (is %s() recursive?)", MAX_CALL_DEPTH, fn->name);
    Scope *local = arena_alloc(s->arena, sizeof *local);
    /* the function sees globals and the system scope, not the caller's locals */
    local->parent = &s->system_scope;
    for (int i = 0; i < call->list.len; i++) {
        Val v = eval(c, NODE_AT(call->list, i));
        if (v.kind == V_ERR) return v;
        Binding *b = scope_bind(s, local, NODE_AT(fn->list, i)->name, B_VAL, NODE_AT(fn->list, i));
        b->val = v;
    }
    Ctx inner = *c;
    inner.scope = local;
    inner.call_depth++;
    int errors_before = s->d->nerrors;
    Val r = val_err();
    if (fn->a) {
        r = eval(&inner, fn->a);
    } else {
        for (int i = 0; i < fn->list2.len; i++) {
            Node *st = NODE_AT(fn->list2, i);
            Val v = eval(&inner, st->a);
            if (v.kind == V_ERR) break;
            if (st->kind == N_RETURN) {
                r = v;
                break;
            }
            Binding *b = scope_bind(s, local, st->name, B_VAL, st);
            b->val = v;
        }
    }
    /* an error inside a function (often a library one) also shows the call that caused it */
    if (s->d->nerrors > errors_before && c->call_depth == 0)
        diag_note(s->d, call->loc2, "in this call of %s()", fn->name);
    return r;
}

/* The visible name (or function) closest to a misspelled one, for "did you mean". */
static const char *nearest_name(Ctx *c, const char *name, bool functions) {
    const char *cands[256];
    int n = 0;
    for (Scope *sc = c->scope; sc; sc = sc->parent)
        for (Binding *b = sc->head; b && n < 200; b = b->next)
            if ((b->kind == B_FN) == functions) cands[n++] = b->name;
    if (functions)
        for (size_t i = 0; i < sizeof builtins / sizeof builtins[0] && n < 256; i++) cands[n++] = builtins[i].name;
    else {
        cands[n++] = "pi";
        cands[n++] = "dim";
        cands[n++] = "origin";
    }
    return closest_word(name, cands, n);
}

static Val eval_call(Ctx *c, Node *n) {
    Binding *b = scope_lookup(c->scope, n->name);
    if (b && b->kind == B_FN) {
        b->used = true;
        return eval_user_fn(c, n, b->fn);
    }
    const Builtin *bi = find_builtin(n->name);
    if (bi) return eval_builtin(c, n, bi);
    if (b) return ERR(n, n->loc2, "'%s' is not a function", n->name);
    const char *near = nearest_name(c, n->name, true);
    if (near) return ERR(n, n->loc2, "unknown function '%s'; did you mean '%s'?", n->name, near);
    return ERR(n, n->loc2, "unknown function '%s'", n->name);
}

/* ---- bodies and their members ---- */

/* Lowering: the bodies' poses are the state being built (the coordinate map, init), not the
   kernel's position inputs (potentials, constraints, the inverse map). */
static bool poses_in_state(const Ctx *c) { return c->ls && c->mode != EV_INVERSE; }

/* IR of Cartesian coordinate k of point p of body `body` (p = 0: centre of mass). */
int body_coord(Ctx *c, int body, int p, int k) {
    const System *sys = c->s->sys;
    int d = sys->dim;
    const Body *b = &sys->bodies[body];
    if (!poses_in_state(c) && b->state == STATE_SO3) { /* q (3) then R (9, row-major): axis point p is q + R e_p */
        int q = c->position_inputs[b->first_coord + k];
        return p == 0 ? q : ir_bin(c->ir, IR_ADD, q, c->position_inputs[b->first_coord + 3 + k * 3 + (p - 1)]);
    }
    if (!poses_in_state(c)) return c->position_inputs[b->first_coord + p * d + k];
    if (p == 0) return c->ls->pos[body * d + k];
    return ir_bin(c->ir, IR_ADD, c->ls->pos[body * d + k], c->ls->rot[(body * d + k) * d + (p - 1)]);
}

double body_inertia(const Body *b, int i) { return b->mass * (b->moments[(i + 1) % 3] + b->moments[(i + 2) % 3]); }

/* Lowering init: an SO(3) body's angular velocity in its frame, set by init or, until then,
   the one its rotation's rate implies: hat(omega) = R^T R'. */
int *body_omega(Ctx *c, int body) {
    LowerState *ls = c->ls;
    int *om = ls->omega + body * 3;
    if (om[0] < 0) {
        const int *R = ls->rot + body * 9, *Rd = ls->rotdot + body * 9;
        for (int k = 0; k < 3; k++) {
            int i = (k + 2) % 3, j = (k + 1) % 3; /* omega_k = (R^T R')_(i, j) for (k, j, i) cyclic: w1 = W32 */
            int acc = ir_bin(c->ir, IR_MUL, R[i], Rd[j]);
            for (int m = 1; m < 3; m++) acc = ir_bin(c->ir, IR_ADD, acc, ir_bin(c->ir, IR_MUL, R[m * 3 + i], Rd[m * 3 + j]));
            om[k] = acc;
        }
    }
    return om;
}

/* Lowering init: the first look at a body's pose places the bodies from q and q'. */
static void ensure_mapped(Ctx *c) {
    if (c->ls && c->mode == EV_INIT && !c->ls->mapped) c->ls->apply_map(c);
}

/* A body point (PTK_POINT: x0 + sum_k c_k (x_k - x0)) or direction (PTK_DIR: sum_k c_k (x_k - x0)),
   the axis points x_k being unit vectors from the centre along the principal axes (CHNN Sec. 6). */
static Val point_val(Ctx *c, int body, const double *cc, bool centre, PtKind k) {
    Sema *s = c->s;
    Val v = val_vec(s, s->sys->dim, false);
    v.pt = k;
    v.ref.kind = PT_BODY;
    v.ref.body = body;
    v.ref.centre = centre;
    if (cc) memcpy(v.ref.c, cc, sizeof v.ref.c);
    if (lowering(c, &v)) {
        ensure_mapped(c);
        const Body *b = &s->sys->bodies[body];
        for (int j = 0; j < s->sys->dim; j++) {
            int x0 = body_coord(c, body, 0, j);
            int acc = k == PTK_DIR ? -1 : x0;
            for (int q = 0; !centre && q < b->n; q++) {
                if (v.ref.c[q] == 0) continue;
                int term = ir_bin(c->ir, IR_MUL, ir_const(c->ir, v.ref.c[q]),
                                  ir_bin(c->ir, IR_SUB, body_coord(c, body, q + 1, j), x0));
                acc = acc < 0 ? term : ir_bin(c->ir, IR_ADD, acc, term);
            }
            v.ir[j] = acc < 0 ? ir_const(c->ir, 0) : acc;
        }
    }
    return v;
}

Val eval_point(Ctx *c, int body, const double *cc, bool centre, PtKind k) { return point_val(c, body, cc, centre, k); }

static Val body_member(Ctx *c, Node *n, Val base, const char *name, Node *args) {
    Sema *s = c->s;
    Body *b = &s->sys->bodies[base.body];
    int d = s->sys->dim;
    if (!strcmp(name, "pos") || !strcmp(name, "vel")) {
        if (args) return ERR(n, n->loc2, "'%s' is not a method: write %s.%s", name, b->name, name);
        if (c->mode == EV_CONST)
            return ERR(n, n->loc, "%s.%s is not known when the program is compiled", b->name, name);
        if (c->mode == EV_COORDS && !strcmp(name, "pos") && !c->placed_pos[base.body])
            return ERR(n, n->loc, "%s.pos is read before the coordinate map sets it", b->name);
        if (!strcmp(name, "vel") && (c->mode == EV_COORDS || c->mode == EV_POTENTIAL))
            return ERR(n, n->loc, "velocities are not available here (potentials and coordinate maps depend on positions only)");
        ensure_mapped(c);
        if (!strcmp(name, "vel")) {
            Val v = val_vec(s, d, false);
            if (lowering(c, &v)) memcpy(v.ir, c->ls->vel + base.body * d, sizeof(int) * (size_t)d);
            return v;
        }
        return point_val(c, base.body, NULL, true, PTK_POINT);
    }
    if (!strcmp(name, "mass")) return val_scalar(s, b->mass);
    if (!strcmp(name, "rot") || !strcmp(name, "omega") || !strcmp(name, "angmom")) {
        if (b->kind == BODY_POINT) return ERR(n, n->loc2, "%s is a point mass: it has no orientation ('%s')", b->name, name);
        if (strcmp(name, "rot") && b->state != STATE_SO3)
            return ERR(n, n->loc2, "'%s' exists for bodies with `state so3` only", name);
        if (c->mode == EV_CONST) return ERR(n, n->loc, "%s.%s is not known when the program is compiled", b->name, name);
        if (strcmp(name, "rot") && (c->mode == EV_COORDS || c->mode == EV_POTENTIAL))
            return ERR(n, n->loc, "angular velocity and momentum are not available here (potentials and coordinate maps depend on "
                       "the configuration only)");
        if (c->mode == EV_COORDS && !strcmp(name, "rot") && !c->placed_rot[base.body])
            return ERR(n, n->loc, "%s.rot is read before the coordinate map sets it", b->name);
        Val r = !strcmp(name, "rot") ? val_mat(s, d, d, false) : val_vec(s, 3, false);
        ensure_mapped(c);
        if (lowering(c, &r)) {
            if (strcmp(name, "rot")) { /* init: omega, or angmom = I omega */
                if (!c->ls) die("lowering of %s.%s outside init", b->name, name);
                int *om = body_omega(c, base.body);
                for (int i = 0; i < 3; i++)
                    r.ir[i] = !strcmp(name, "omega") ? om[i] : ir_bin(c->ir, IR_MUL, ir_const(c->ir, body_inertia(b, i)), om[i]);
            } else if (poses_in_state(c)) {
                memcpy(r.ir, c->ls->rot + base.body * d * d, sizeof(int) * (size_t)(d * d));
            } else if (b->state == STATE_SO3) {
                for (int i = 0; i < 9; i++) r.ir[i] = c->position_inputs[b->first_coord + 3 + i];
            } else { /* R = X Delta: column k is x_k - x_0 */
                if (b->n != d) die("lowering of %s.rot for a body of dimension %d < %d", b->name, b->n, d);
                for (int i = 0; i < d; i++)
                    for (int k = 0; k < d; k++)
                        r.ir[i * d + k] = ir_bin(c->ir, IR_SUB, body_coord(c, base.body, k + 1, i), body_coord(c, base.body, 0, i));
            }
        }
        return r;
    }
    if (!strcmp(name, "at") || !strcmp(name, "dir") || !strcmp(name, "point")) {
        if (!args) return ERR(n, n->loc2, "'%s' needs an argument: %s.%s(...)", name, b->name, name);
        if (args->list.len != 1) return ERR(n, n->loc2, "%s.%s() takes 1 argument", b->name, name);
        if (b->kind == BODY_POINT && strcmp(name, "point"))
            return ERR(n, n->loc2, "%s is a point mass: it has no body frame (use %s.pos)", b->name, b->name);
        Node *an = NODE_AT(args->list, 0);
        Ctx cc = *c;
        cc.mode = EV_CONST;
        Val a = eval(&cc, an);
        if (a.kind == V_ERR) return a;
        if (!strcmp(name, "point")) {
            long k;
            if (!val_int(c, an, a, &k, "a body point index")) return val_err();
            if (k < 0 || k > b->n)
                return ERR(an, an->loc, "body point %ld is out of range: %s has points 0 (centre of mass) to %d", k, b->name,
                           b->n);
            double e[MAX_DIM] = {0};
            if (k > 0) e[k - 1] = 1;
            return point_val(c, base.body, e, k == 0, PTK_POINT);
        }
        if (a.kind != V_NUM || a.ndim != 1 || a.rows != b->n)
            return ERR(an, an->loc, "%s is a rigid body of dimension %d: its frame coordinates are a %d-vector, not %s",
                       b->name, b->n, b->n, shape_name(s, a));
        if (!strcmp(name, "dir")) {
            double nn = 0;
            for (int i = 0; i < b->n; i++) nn += a.v[i] * a.v[i];
            if (nn == 0) return ERR(an, an->loc, "a direction must not be the zero vector");
        }
        return point_val(c, base.body, a.v, false, !strcmp(name, "dir") ? PTK_DIR : PTK_POINT);
    }
    for (int i = 0; i < b->npoints_named; i++)
        if (!strcmp(b->points[i].name, name)) {
            if (args) return ERR(n, n->loc2, "'%s' is a point, not a method", name);
            return point_val(c, base.body, b->points[i].c, false, PTK_POINT);
        }
    return ERR(n, n->loc2, "%s has no member '%s' (members: pos, vel, mass%s%s)", b->name, name,
               b->kind == BODY_RIGID ? ", rot, at(c), dir(u), point(k)" : "", b->npoints_named ? ", its named points" : "");
}

static Val eval_member(Ctx *c, Node *n, Node *args) {
    Val base = eval(c, n->a);
    if (base.kind == V_ERR) return base;
    if (base.kind == V_BODY) return body_member(c, n, base, n->name, args);
    if (base.kind == V_BODYARR) return ERR(n, n->loc2, "index the body array first, e.g. %s[1].%s", n->a->name ? n->a->name : "b", n->name);
    if (base.kind == V_NUM && base.ndim == 1 && !args && strlen(n->name) == 1 && strchr("xyz", n->name[0])) {
        int k = n->name[0] - 'x';
        if (k >= base.rows) {
            bool line = c->s->have_dim && c->s->sys->dim == 1 && base.rows == 1; /* a point of a 1-D world */
            return ERR(n, n->loc2, "component '%s' is out of range for %s%s", n->name, shape_name(c->s, base),
                       line ? " (the system is 1-D: a point has only .x)" : "");
        }
        Val r = val_num(c->s, 0, 1, 1, base.known);
        if (base.known) r.v[0] = base.v[k];
        if (lowering(c, &r)) r.ir[0] = ids(c, &base)[k];
        r.random = base.random;
        return r;
    }
    return ERR(n, n->loc2, "%s has no member '%s'", shape_name(c->s, base), n->name);
}

static Val eval_index(Ctx *c, Node *n) {
    Sema *s = c->s;
    Val base = eval(c, n->a);
    if (base.kind == V_ERR) return base;
    long idx[2];
    int ni = n->list.len;
    for (int i = 0; i < ni && i < 2; i++) {
        Ctx cc = *c;
        cc.mode = EV_CONST;
        Node *in = NODE_AT(n->list, i);
        Val iv = eval(&cc, in);
        if (!val_int(c, in, iv, &idx[i], "an index")) return val_err();
    }
    if (base.kind == V_BODYARR) {
        Binding *arr = NULL;
        for (Scope *sc = c->scope; sc && !arr; sc = sc->parent)
            for (Binding *b = sc->head; b; b = b->next)
                if (b->kind == B_ARRAY && b->array == base.body) {
                    arr = b;
                    break;
                }
        if (!arr) die("body array binding lost");
        if (ni != 1) return ERR(n, n->loc2, "a body array takes one index");
        if (idx[0] < arr->lo || idx[0] > arr->hi)
            return ERR(n, NODE_AT(n->list, 0)->loc, "index %ld is out of range: %s has indices %d..%d", idx[0], arr->name,
                       arr->lo, arr->hi);
        Val v;
        memset(&v, 0, sizeof v);
        v.kind = V_BODY;
        v.body = arr->array + (int)(idx[0] - arr->lo);
        return v;
    }
    if (base.kind != V_NUM || base.ndim == 0)
        return ERR(n, n->loc2, "cannot index %s", shape_name(s, base));
    if (ni > base.ndim) return ERR(n, n->loc2, "too many indices (%d) for %s", ni, shape_name(s, base));
    for (int i = 0; i < ni; i++) {
        int lim = i == 0 ? base.rows : base.cols;
        if (idx[i] < 1 || idx[i] > lim)
            return ERR(n, NODE_AT(n->list, i)->loc, "index %ld is out of range 1..%d for %s (indices start at 1)", idx[i],
                       lim, shape_name(s, base));
    }
    Val r;
    if (base.ndim == 2 && ni == 1) { /* a row */
        r = val_vec(s, base.cols, base.known);
        if (base.known) memcpy(r.v, base.v + (idx[0] - 1) * base.cols, sizeof(double) * (size_t)base.cols);
    } else {
        long off = base.ndim == 1 ? idx[0] - 1 : (idx[0] - 1) * base.cols + (idx[1] - 1);
        r = val_num(s, 0, 1, 1, base.known);
        if (base.known) r.v[0] = base.v[off];
        if (lowering(c, &r)) r.ir[0] = ids(c, &base)[off];
    }
    if (base.ndim == 2 && ni == 1 && lowering(c, &r))
        memcpy(r.ir, ids(c, &base) + (idx[0] - 1) * base.cols, sizeof(int) * (size_t)base.cols);
    r.random = base.random;
    return r;
}

static Val eval_vec(Ctx *c, Node *n) {
    Sema *s = c->s;
    int len = n->list.len;
    if (len == 0) return ERR(n, n->loc, "empty vector");
    Val first = eval(c, NODE_AT(n->list, 0));
    if (first.kind == V_ERR) return first;
    if (first.kind != V_NUM || first.ndim == 2)
        return ERR(n, NODE_AT(n->list, 0)->loc, "vector elements must be scalars (or rows of a matrix), not %s%s",
                   shape_name(s, first), first.kind == V_BODY ? " (use .pos for a body's position)" : "");
    int cols = first.ndim == 1 ? first.rows : 1;
    Val r = first.ndim == 1 ? val_mat(s, len, cols, true) : val_vec(s, len, true);
    bool known = true, random = false;
    int *elem_ir = c->ir ? arena_alloc(s->arena, sizeof(int) * (size_t)(len * cols)) : NULL;
    for (int i = 0; i < len; i++) {
        Node *in = NODE_AT(n->list, i);
        Val v = i == 0 ? first : eval(c, in);
        if (v.kind == V_ERR) return v;
        if (v.kind != V_NUM || v.ndim != first.ndim || (first.ndim == 1 && v.rows != cols))
            return ERR(in, in->loc, "%s element %d is %s, but element 1 is %s", first.ndim == 1 ? "matrix row" : "vector",
                       i + 1, shape_name(s, v), shape_name(s, first));
        known &= v.known;
        random |= v.random;
        if (known) memcpy(r.v + (size_t)i * (size_t)cols, v.v, sizeof(double) * (size_t)cols);
        if (elem_ir) memcpy(elem_ir + (size_t)i * (size_t)cols, ids(c, &v), sizeof(int) * (size_t)cols);
    }
    if (!known) r = first.ndim == 1 ? val_mat(s, len, cols, false) : val_vec(s, len, false);
    if (lowering(c, &r)) memcpy(r.ir, elem_ir, sizeof(int) * (size_t)(len * cols));
    r.random = random;
    return r;
}

static Val eval_sum(Ctx *c, Node *n) {
    Sema *s = c->s;
    Ctx cc = *c;
    cc.mode = EV_CONST;
    long lo, hi;
    if (!val_int(c, n->a, eval(&cc, n->a), &lo, "a range bound") || !val_int(c, n->b, eval(&cc, n->b), &hi, "a range bound"))
        return val_err();
    if (hi - lo > 100000) return ERR(n, n->loc, "sum over %ld terms is too long", hi - lo + 1);
    Scope local = {NULL, c->scope};
    Binding *iv = scope_bind(s, &local, n->name, B_VAL, n);
    Ctx inner = *c;
    inner.scope = &local;
    Val acc = val_err();
    for (long i = lo; i <= hi; i++) {
        if (!sema_step(s, n->loc)) return val_err();
        iv->val = val_scalar(s, (double)i);
        Val t = eval(&inner, n->c);
        if (t.kind == V_ERR) return t;
        if (t.kind != V_NUM) return ERR(n->c, n->c->loc, "sum() adds numbers, not %s", shape_name(s, t));
        if (acc.kind == V_ERR) {
            acc = t;
            continue;
        }
        if (!same_shape(acc, t))
            return ERR(n->c, n->c->loc, "sum() terms change shape: %s, then %s", shape_name(s, acc), shape_name(s, t));
        bool known = acc.known && t.known;
        Val r = val_num(s, acc.ndim, acc.rows, acc.cols, known);
        if (known)
            for (int k = 0; k < acc.rows * acc.cols; k++) r.v[k] = acc.v[k] + t.v[k];
        if (lowering(c, &r))
            for (int k = 0; k < ncomp(r); k++) r.ir[k] = ir_bin(c->ir, IR_ADD, ids(c, &acc)[k], ids(c, &t)[k]);
        r.random = acc.random || t.random;
        acc = r;
    }
    if (acc.kind == V_ERR) return val_scalar(s, 0); /* an empty sum */
    return acc;
}

static Val eval_ident(Ctx *c, Node *n) {
    Sema *s = c->s;
    Binding *b = scope_lookup(c->scope, n->name);
    if (!b) {
        if (!strcmp(n->name, "pi")) return val_scalar(s, 3.14159265358979323846);
        if (!strcmp(n->name, "dim")) {
            if (!s->have_dim) return ERR(n, n->loc, "'dim' is used outside a system (or before `dim` is set)");
            return val_scalar(s, s->sys->dim);
        }
        if (!strcmp(n->name, "origin")) {
            if (!s->have_dim) return ERR(n, n->loc, "'origin' is used outside a system (or before `dim` is set)");
            Val v = val_vec(s, s->sys->dim, true);
            v.pt = PTK_POINT;
            v.ref.kind = PT_WORLD;
            return v;
        }
        if (is_builtin_fn(n->name)) return ERR(n, n->loc, "'%s' is a function: call it as %s(...)", n->name, n->name);
        Node *later = s->find_decl ? s->find_decl(s, n->name) : NULL;
        if (later && later->kind == N_COORDS)
            return ERR(n, n->loc, "generalized coordinate '%s' can only be used in coordinates, inverse and init blocks",
                       n->name);
        /* a declaration above that was refused (too many bodies, say) has said so: its uses
           would only repeat it, and "defined here" would point at what was not defined */
        if (later && later->reported && later->loc.file == n->loc.file &&
            (later->loc.first_line < n->loc.first_line ||
             (later->loc.first_line == n->loc.first_line && later->loc.first_column < n->loc.first_column)))
            return val_err();
        if (later) {
            ERR(n, n->loc, "'%s' is used before it is defined", n->name);
            diag_note(s->d, later->kind == N_BODY ? later->loc : later->loc2, "'%s' is defined here", n->name);
            return val_err();
        }
        const char *near = nearest_name(c, n->name, false);
        if (near) return ERR(n, n->loc, "unknown name '%s'; did you mean '%s'?", n->name, near);
        return ERR(n, n->loc, "unknown name '%s'", n->name);
    }
    b->used = true;
    switch (b->kind) {
    case B_VAL: return b->val;
    case B_FN: return ERR(n, n->loc, "'%s' is a function: call it as %s(...)", n->name, n->name);
    case B_ARRAY: {
        Val v;
        memset(&v, 0, sizeof v);
        v.kind = V_BODYARR;
        v.body = b->array;
        return v;
    }
    case B_COORD: {
        if (c->mode == EV_CONST || c->mode == EV_POTENTIAL)
            return ERR(n, n->loc, "generalized coordinate '%s' can only be used in coordinates, inverse and init blocks",
                       n->name);
        Val v = b->hi > 0 ? val_vec(s, b->hi - b->lo + 1, false) : val_num(s, 0, 1, 1, false);
        if (c->ls && lowering(c, &v))
            for (int i = 0; i < ncomp(v); i++) {
                v.ir[i] = c->ls->q[b->coord + i];
                if (v.ir[i] < 0) return ERR(n, n->loc, "generalized coordinate '%s' is read before it is set", n->name);
            }
        return v;
    }
    }
    return val_err();
}

enum { MAX_STEPS = 2000000 };

bool sema_step(Sema *s, Loc loc) {
    if (s->over_budget) return false;
    if (++s->steps <= MAX_STEPS) return true;
    s->over_budget = true;
    diag_error(s->d, loc, "the program is too large to check: loops and sums unroll to more than %d steps", MAX_STEPS);
    /* fatal, as a C compiler's: what was left unchecked would raise false follow-on errors
       (a block never reached, "no init block") */
    s->d->stopped = true;
    return false;
}

static __attribute__((noinline)) Val eval_node(Ctx *c, Node *n);

/* Lowering marks each instruction with the innermost expression that emitted it: a constant
   the simplifier later folds to inf or NaN is reported there (kernels.c). */
Val eval(Ctx *c, Node *n) {
    int before = c->ir ? c->ir->ninsts : 0;
    Val v = eval_node(c, n);
    if (c->ir) ir_set_locs(c->ir, before, c->ir->ninsts, n->loc);
    return v;
}

static Val eval_node(Ctx *c, Node *n) {
    if (!sema_step(c->s, n->loc)) return val_err();
    switch (n->kind) {
    case N_NUM: return val_scalar(c->s, n->num);
    case N_STR: {
        Val v;
        memset(&v, 0, sizeof v);
        v.kind = V_STR;
        v.str = n->name;
        return v;
    }
    case N_IDENT: return eval_ident(c, n);
    case N_VEC: return eval_vec(c, n);
    case N_BIN: return eval_bin(c, n);
    case N_NEG: {
        Val a = eval(c, n->a);
        if (a.kind == V_ERR) return a;
        if (a.kind != V_NUM)
            return ERR(n, n->loc, "cannot negate %s%s", shape_name(c->s, a),
                       a.kind == V_BODY ? " (use .pos for a body's position)" : "");
        Val r = val_num(c->s, a.ndim, a.rows, a.cols, a.known);
        if (a.known)
            for (int i = 0; i < a.rows * a.cols; i++) r.v[i] = -a.v[i];
        if (lowering(c, &r))
            for (int i = 0; i < ncomp(r); i++) r.ir[i] = ir_un(c->ir, IR_NEG, ids(c, &a)[i]);
        r.random = a.random;
        return r;
    }
    case N_CALL: return eval_call(c, n);
    case N_INDEX: return eval_index(c, n);
    case N_MEMBER: return eval_member(c, n, NULL);
    case N_METHOD: return eval_member(c, n, n);
    case N_SUM: return eval_sum(c, n);
    case N_PRIME:
        return ERR(n, n->loc, "a rate like %s' can only be assigned in an init block", n->a->name ? n->a->name : "q");
    default: break;
    }
    return ERR(n, n->loc, "this is not an expression");
}

const char *builtin_row(int i, const char **call, const char **doc) {
    if (i < 0 || i >= (int)(sizeof builtins / sizeof builtins[0])) return NULL;
    if (call) *call = builtins[i].call;
    if (doc) *doc = builtins[i].doc;
    return builtins[i].name;
}
