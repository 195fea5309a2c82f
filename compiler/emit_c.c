/* emit_c.c — kernel IR as C. One const local per SSA value (vK is the IR's %K), inside
   the batch loop of docs/runtime-abi.md; names of inputs and outputs as comments. */
#include "emit_c.h"
#include "arena.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "diag.h"

/* Text in a comment: printable characters, never a closing star-slash. */
static void emitc_comment_text(FILE *out, const char *s) {
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        fputc(c < ' ' || c == 127 ? '?' : c, out);
        if (c == '*' && s[1] == '/') fputc(' ', out);
    }
}

/* The names of a kernel's inputs or outputs, for its comment ("in:  0 q, 1 p"), wrapped
   at 90 columns; nothing if it has none. */
static void emitc_names(FILE *out, const char *label, char *const *names, int count) {
    bool first = true;
    int col = 0;
    for (int i = 0; names && i < count; i++) {
        if (!names[i]) continue;
        int w = snprintf(NULL, 0, " %d ", i) + (int)strlen(names[i]);
        if (first) {
            col = fprintf(out, "\n     %s", label) - 1;
        } else {
            fputc(',', out);
            col++;
            if (col + w > 90) col = fprintf(out, "\n         ") - 1;
        }
        fprintf(out, " %d ", i);
        emitc_comment_text(out, names[i]);
        col += w;
        first = false;
    }
}

/* A double constant that reads back exactly: %.17g, with ".0" when it would otherwise
   read as an integer, and INFINITY / NAN from <math.h>. */
static void emitc_num(FILE *out, double x) {
    if (isnan(x)) {
        fputs("NAN", out);
        return;
    }
    if (isinf(x)) {
        fputs(x < 0 ? "-INFINITY" : "INFINITY", out);
        return;
    }
    char buf[40];
    snprintf(buf, sizeof buf, "%.17g", x);
    fputs(buf, out);
    if (!strpbrk(buf, ".eE")) fputs(".0", out);
}

/* "k * n + b", the index of array k of a structure-of-arrays batch. */
static void emitc_index(FILE *out, int k) {
    if (k == 0)
        fputs("b", out);
    else
        fprintf(out, "%d * n + b", k);
}

static void emitc_kernel(FILE *out, const IrFn *f) {
    const char *bad = ir_verify(f);
    if (bad) die("emitc: kernel %s: invalid IR: %s", f->name, bad);

    /* Live values: those an output depends on. */
    bool *live = xcalloc((size_t)f->ninsts + 1, sizeof *live);
    if (!live) die("out of memory");
    for (int o = 0; o < f->noutputs; o++) live[f->outputs[o]] = true;
    bool uses_in = false, uses_params = false;
    for (int i = f->ninsts - 1; i >= 0; i--) {
        if (!live[i]) continue;
        const IrInst *x = &f->insts[i];
        if (ir_op_nargs[x->op] >= 1) live[x->a] = true;
        if (ir_op_nargs[x->op] >= 2) live[x->b] = true;
        uses_in |= x->op == IR_INPUT;
        uses_params |= x->op == IR_PARAM;
    }

    fprintf(out, "/* kernel %s: %d input%s, %d param%s, %d output%s", f->name, f->ninputs,
            f->ninputs == 1 ? "" : "s", f->nparams, f->nparams == 1 ? "" : "s", f->noutputs,
            f->noutputs == 1 ? "" : "s");
    emitc_names(out, "in: ", f->input_names, f->ninputs);
    emitc_names(out, "out:", f->output_names, f->noutputs);
    fputs(" */\n", out);
    fprintf(out, "void %s(long n, const double *restrict in, const double *restrict params, double *restrict out) {\n",
            f->name);
    if (!uses_in) fputs("    (void)in;\n", out);
    if (!uses_params) fputs("    (void)params;\n", out);
    if (!f->noutputs) fputs("    (void)out;\n", out);
    fputs("    for (long b = 0; b < n; b++) {\n", out);
    for (int i = 0; i < f->ninsts; i++) {
        if (!live[i]) continue;
        const IrInst *x = &f->insts[i];
        fprintf(out, "        const double v%d = ", i);
        switch (x->op) {
        case IR_CONST: emitc_num(out, x->num); break;
        case IR_INPUT:
            fputs("in[", out);
            emitc_index(out, x->imm);
            fputs("]", out);
            break;
        case IR_PARAM: fprintf(out, "params[%d]", x->imm); break;
        case IR_ADD: fprintf(out, "v%d + v%d", x->a, x->b); break;
        case IR_SUB: fprintf(out, "v%d - v%d", x->a, x->b); break;
        case IR_MUL: fprintf(out, "v%d * v%d", x->a, x->b); break;
        case IR_DIV: fprintf(out, "v%d / v%d", x->a, x->b); break;
        case IR_NEG: fprintf(out, "-v%d", x->a); break;
        case IR_POWI: fprintf(out, "physc_powi(v%d, %d)", x->a, x->imm); break;
        default:
            if (ir_op_nargs[x->op] == 2)
                fprintf(out, "%s(v%d, v%d)", ir_op_cfn[x->op], x->a, x->b);
            else
                fprintf(out, "%s(v%d)", ir_op_cfn[x->op], x->a);
        }
        fputc(';', out);
        if (x->op == IR_INPUT && f->input_names && f->input_names[x->imm]) {
            fputs(" /* ", out);
            emitc_comment_text(out, f->input_names[x->imm]);
            fputs(" */", out);
        }
        fputc('\n', out);
    }
    for (int o = 0; o < f->noutputs; o++) {
        fputs("        out[", out);
        emitc_index(out, o);
        fprintf(out, "] = v%d;", f->outputs[o]);
        if (f->output_names && f->output_names[o]) {
            fputs(" /* ", out);
            emitc_comment_text(out, f->output_names[o]);
            fputs(" */", out);
        }
        fputc('\n', out);
    }
    fputs("    }\n}\n", out);
    free(live);
}

void emitc_kernels(FILE *out, IrFn *const *fns, int nfns) {
    fputs("/* Generated by physc. Kernels of the batch ABI of docs/runtime-abi.md:\n"
          "     void NAME(long n, const double *restrict in, const double *restrict params,\n"
          "               double *restrict out);\n"
          "   evaluate a kernel for n states. Input i of state b is in[i*n + b], output o of\n"
          "   state b is out[o*n + b]; params[k] are shared by the whole batch.\n"
          "   Compile with -ffp-contract=off (the ISO C modes' default in GCC) to get the\n"
          "   JIT's results bit for bit.\n",
          out);
    fputs("   Kernels:", out);
    for (int i = 0; i < nfns; i++) fprintf(out, "%s %s", i ? "," : "", fns[i]->name);
    fputs(nfns ? "\n*/\n" : " none\n*/\n", out);
    fputs("#include <math.h>\n"
          "\n"
          "/* x to the integer power k by repeated squaring (1/x^-k for k < 0). */\n"
          "static inline double physc_powi(double x, int k) {\n"
          "    unsigned e = k < 0 ? -(unsigned)k : (unsigned)k;\n"
          "    double r = 1, p = x;\n"
          "    while (e) {\n"
          "        if (e & 1) r *= p;\n"
          "        p *= p;\n"
          "        e >>= 1;\n"
          "    }\n"
          "    return k < 0 ? 1 / r : r;\n"
          "}\n"
          "\n"
          "/* -1, 0 or 1 (0 for zeros and NaN). */\n"
          "static inline double physc_sign(double x) { return (x > 0) - (x < 0); }\n",
          out);
    for (int i = 0; i < nfns; i++) {
        fputc('\n', out);
        const IrFn *f = fns[i];
        emitc_kernel(out, f);
    }
}
