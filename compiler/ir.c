/* ir.c — building, verifying, printing and evaluating kernel IR. */
#include "ir.h"
#include "arena.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "diag.h"

const int ir_op_nargs[IR_NOPS] = {
#define X(name, nargs, text, cfn) nargs,
    IR_OPS(X)
#undef X
};
const char *const ir_op_name[IR_NOPS] = {
#define X(name, nargs, text, cfn) text,
    IR_OPS(X)
#undef X
};
const char *const ir_op_cfn[IR_NOPS] = {
#define X(name, nargs, text, cfn) cfn,
    IR_OPS(X)
#undef X
};

IrFn *ir_new(const char *name, int ninputs, int nparams, int noutputs) {
    IrFn *f = xcalloc(1, sizeof *f);
    f->name = xstrdup(name);
    f->ninputs = ninputs;
    f->nparams = nparams;
    f->noutputs = noutputs;
    f->outputs = xcalloc((size_t)noutputs + 1, sizeof *f->outputs);
    f->input_names = xcalloc((size_t)ninputs + 1, sizeof *f->input_names);
    f->output_names = xcalloc((size_t)noutputs + 1, sizeof *f->output_names);
    return f;
}

void ir_free(IrFn *f) {
    if (!f) return;
    for (int i = 0; i < f->ninputs; i++) free(f->input_names[i]);
    for (int i = 0; i < f->noutputs; i++) free(f->output_names[i]);
    free(f->input_names);
    free(f->output_names);
    free(f->insts);
    free(f->locs);
    free(f->outputs);
    free(f->name);
    free(f);
}

int ir_emit(IrFn *f, IrOp op, int a, int b, int imm, double num) {
    if (f->ninsts >= IR_MAX_INSTS) {
        f->too_big = true;
        return f->ninsts - 1;
    }
    if (f->ninsts == f->cap) {
        f->cap = f->cap ? 2 * f->cap : 64;
        f->insts = xrealloc(f->insts, (size_t)f->cap, sizeof *f->insts);
        if (f->locs) {
            f->locs = xrealloc(f->locs, (size_t)f->cap, sizeof *f->locs);
            memset(f->locs + f->ninsts, 0, (size_t)(f->cap - f->ninsts) * sizeof *f->locs);
        }
    }
    f->insts[f->ninsts] = (IrInst){op, a, b, imm, num};
    return f->ninsts++;
}

void ir_set_locs(IrFn *f, int from, int to, Loc loc) {
    if (from >= to || loc.first_line == 0) return;
    if (!f->locs) {
        f->locs = xcalloc((size_t)f->cap + 1, sizeof *f->locs);
    }
    for (int i = from; i < to; i++)
        if (f->locs[i].first_line == 0) f->locs[i] = loc;
}

Loc ir_loc(const IrFn *f, int v) { return f->locs && v >= 0 ? f->locs[v] : (Loc){0}; }

int ir_max_live(const IrFn *f) {
    int *last = xalloc((size_t)f->ninsts + 1, sizeof(int)), *dying = xcalloc((size_t)f->ninsts + 1, sizeof(int));
    for (int k = 0; k < f->ninsts; k++) last[k] = k;
    for (int k = 0; k < f->ninsts; k++) {
        const IrInst *x = &f->insts[k];
        if (ir_op_nargs[x->op] > 0) last[x->a] = k;
        if (ir_op_nargs[x->op] > 1) last[x->b] = k;
    }
    for (int o = 0; o < f->noutputs; o++) last[f->outputs[o]] = f->ninsts - 1;
    int live = 0, most = 0;
    for (int k = 0; k < f->ninsts; k++) {
        IrOp op = f->insts[k].op;
        if (op != IR_CONST && op != IR_INPUT && op != IR_PARAM) live++, dying[last[k]]++;
        if (live > most) most = live;
        live -= dying[k];
    }
    free(last), free(dying);
    return most;
}

int ir_const(IrFn *f, double x) { return ir_emit(f, IR_CONST, -1, -1, 0, x); }
int ir_input(IrFn *f, int index) { return ir_emit(f, IR_INPUT, -1, -1, index, 0); }
int ir_param(IrFn *f, int index) { return ir_emit(f, IR_PARAM, -1, -1, index, 0); }
int ir_un(IrFn *f, IrOp op, int a) { return ir_emit(f, op, a, -1, 0, 0); }
int ir_bin(IrFn *f, IrOp op, int a, int b) { return ir_emit(f, op, a, b, 0, 0); }

void ir_set_input_name(IrFn *f, int i, const char *name) {
    free(f->input_names[i]);
    f->input_names[i] = xstrdup(name);
}
void ir_set_ninputs(IrFn *f, int ninputs) {
    f->input_names = xrealloc(f->input_names, (size_t)(ninputs + 1), sizeof(char *));
    for (int i = f->ninputs; i < ninputs; i++) f->input_names[i] = NULL;
    f->ninputs = ninputs;
}

void ir_set_output_name(IrFn *f, int i, const char *name) {
    free(f->output_names[i]);
    f->output_names[i] = xstrdup(name);
}

const char *ir_verify(const IrFn *f) {
    static char msg[160];
    for (int i = 0; i < f->ninsts; i++) {
        const IrInst *in = &f->insts[i];
        if ((unsigned)in->op >= IR_NOPS) return snprintf(msg, sizeof msg, "%%%d: bad opcode %d", i, in->op), msg;
        int n = ir_op_nargs[in->op];
        if ((n >= 1 && (in->a < 0 || in->a >= i)) || (n >= 2 && (in->b < 0 || in->b >= i)))
            return snprintf(msg, sizeof msg, "%%%d: %s uses a value not defined before it", i, ir_op_name[in->op]), msg;
        if (in->op == IR_INPUT && (in->imm < 0 || in->imm >= f->ninputs))
            return snprintf(msg, sizeof msg, "%%%d: input %d out of range", i, in->imm), msg;
        if (in->op == IR_PARAM && (in->imm < 0 || in->imm >= f->nparams))
            return snprintf(msg, sizeof msg, "%%%d: param %d out of range", i, in->imm), msg;
    }
    for (int o = 0; o < f->noutputs; o++)
        if (f->outputs[o] < 0 || f->outputs[o] >= f->ninsts)
            return snprintf(msg, sizeof msg, "output %d has no value", o), msg;
    return NULL;
}

void ir_print(FILE *out, const IrFn *f) {
    fprintf(out, "kernel %s(inputs %d, params %d) -> %d outputs\n", f->name, f->ninputs, f->nparams, f->noutputs);
    for (int i = 0; i < f->ninsts; i++) {
        const IrInst *in = &f->insts[i];
        fprintf(out, "  %%%d = %s", i, ir_op_name[in->op]);
        switch (in->op) {
        case IR_CONST: fprintf(out, " %.17g", in->num); break;
        case IR_INPUT:
            fprintf(out, " %d", in->imm);
            if (f->input_names[in->imm]) fprintf(out, "  ; %s", f->input_names[in->imm]);
            break;
        case IR_PARAM: fprintf(out, " %d", in->imm); break;
        case IR_POWI: fprintf(out, " %%%d, %d", in->a, in->imm); break;
        default:
            if (ir_op_nargs[in->op] >= 1) fprintf(out, " %%%d", in->a);
            if (ir_op_nargs[in->op] >= 2) fprintf(out, ", %%%d", in->b);
        }
        fputc('\n', out);
    }
    for (int o = 0; o < f->noutputs; o++) {
        fprintf(out, "  out %d = %%%d", o, f->outputs[o]);
        if (f->output_names[o]) fprintf(out, "  ; %s", f->output_names[o]);
        fputc('\n', out);
    }
}

static double powi(double x, int k) {
    unsigned n = k < 0 ? -(unsigned)k : (unsigned)k;
    double r = 1, p = x;
    while (n) {
        if (n & 1) r *= p;
        p *= p;
        n >>= 1;
    }
    return k < 0 ? 1 / r : r;
}

double ir_apply(IrOp op, double a, double b, int imm) {
    switch (op) {
    case IR_ADD: return a + b;
    case IR_SUB: return a - b;
    case IR_MUL: return a * b;
    case IR_DIV: return a / b;
    case IR_NEG: return -a;
    case IR_POWI: return powi(a, imm);
    case IR_POW: return pow(a, b);
    case IR_SQRT: return sqrt(a);
    case IR_EXP: return exp(a);
    case IR_LOG: return log(a);
    case IR_SIN: return sin(a);
    case IR_COS: return cos(a);
    case IR_TAN: return tan(a);
    case IR_ASIN: return asin(a);
    case IR_ACOS: return acos(a);
    case IR_ATAN: return atan(a);
    case IR_ATAN2: return atan2(a, b);
    case IR_SINH: return sinh(a);
    case IR_COSH: return cosh(a);
    case IR_TANH: return tanh(a);
    case IR_ABS: return fabs(a);
    case IR_SIGN: return (a > 0) - (a < 0);
    case IR_MIN: return fmin(a, b);
    case IR_MAX: return fmax(a, b);
    default: die("ir_apply: %s is not arithmetic", ir_op_name[op]);
    }
}

void ir_eval(const IrFn *f, const double *in, const double *params, double *out) {
    double *v = xalloc((size_t)(f->ninsts + 1), sizeof(double));
    for (int i = 0; i < f->ninsts; i++) {
        const IrInst *x = &f->insts[i];
        switch (x->op) {
        case IR_CONST: v[i] = x->num; break;
        case IR_INPUT: v[i] = in[x->imm]; break;
        case IR_PARAM: v[i] = params[x->imm]; break;
        default: v[i] = ir_apply(x->op, x->a >= 0 ? v[x->a] : 0, x->b >= 0 ? v[x->b] : 0, x->imm);
        }
    }
    for (int o = 0; o < f->noutputs; o++) out[o] = v[f->outputs[o]];
    free(v);
}
