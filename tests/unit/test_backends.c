/* test_backends.c — the two kernel backends against the IR's reference evaluator.
   Hand-built kernels cover every opcode (on safe operand ranges), several outputs and
   params. The LLVM JIT runs them on batches of 1, 7, 13 and 1000 states (structure-of-arrays
   layout) and must agree with ir_eval state by state; the emitted C, compiled with cc,
   must agree with the JIT. Invalid kernels must be refused with a message.

   Tolerances: the JIT calls the same libm as ir_eval (LLVM's math intrinsics lower to
   calls of sin, cos, exp, log, pow; sqrt and fabs are exact instructions; powi expands
   to the same squarings as ir_eval's), and no fast-math flags are set, so every result
   is expected bit-for-bit; the check allows 1e-14 relative so that a libm call that
   LLVM legitimately rewrites (e.g. sin+cos into sincos, pow(x, -1) into 1/x) cannot
   fail it spuriously. The count of inexact results is printed. The emitted C is held to
   1e-12 relative against the JIT. A 12,000-instruction kernel checks the JIT's segmented
   form (a large kernel split into functions) against ir_eval the same way. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "emit_c.h"
#include "ir.h"
#include "llvm_jit.h"

#include "check.h"

/* ---- Deterministic pseudo-random numbers (splitmix64). ---- */

static uint64_t rng_next(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}
static double rng_uniform(uint64_t *s, double lo, double hi) {
    return lo + (hi - lo) * (double)(rng_next(s) >> 11) * 0x1p-53;
}

/* Input i of every kernel here lies in range i % 3: any sign, positive, inside (-1, 1). */
static const double input_range[3][2] = {{-2, 2}, {0.1, 3}, {-0.9, 0.9}};
enum { X = 0, Y = 1, Z = 2 };

static double *make_inputs(const IrFn *f, long n, uint64_t seed) {
    double *in = malloc(sizeof(double) * (size_t)(f->ninputs * n + 1));
    for (int i = 0; i < f->ninputs; i++)
        for (long b = 0; b < n; b++) in[i * n + b] = rng_uniform(&seed, input_range[i % 3][0], input_range[i % 3][1]);
    return in;
}
static double *make_params(const IrFn *f, uint64_t seed) {
    double *p = malloc(sizeof(double) * (size_t)(f->nparams + 1));
    for (int k = 0; k < f->nparams; k++) p[k] = rng_uniform(&seed, 0.5, 1.5);
    return p;
}

static bool close_rel(double a, double b, double tol) {
    if (a == b || (isnan(a) && isnan(b))) return true;
    return fabs(a - b) <= tol * fmax(fabs(a), fabs(b));
}

/* ---- The kernels. ---- */

static void set_output(IrFn *f, int o, int v, const char *name) {
    f->outputs[o] = v;
    if (name) ir_set_output_name(f, o, name);
}

/* Arithmetic, params, an input and a param as outputs, a constant-zero output (which
   LLVM may turn into memset), one value as two outputs. */
static IrFn *make_arith(void) {
    IrFn *f = ir_new("k_arith", 3, 2, 10);
    ir_set_input_name(f, 0, "x");
    ir_set_input_name(f, 1, "y");
    ir_set_input_name(f, 2, "z */ not a comment end");
    int x = ir_input(f, 0), y = ir_input(f, 1), z = ir_input(f, 2), p0 = ir_param(f, 0), p1 = ir_param(f, 1);
    int s = ir_bin(f, IR_ADD, x, y);
    set_output(f, 0, s, "x+y");
    set_output(f, 1, ir_bin(f, IR_SUB, x, p0), "x-p0");
    set_output(f, 2, ir_bin(f, IR_MUL, ir_bin(f, IR_MUL, x, y), p1), NULL);
    set_output(f, 3, ir_bin(f, IR_DIV, x, y), "x/y");
    set_output(f, 4, ir_un(f, IR_NEG, z), NULL);
    int t = ir_bin(f, IR_MUL, s, ir_bin(f, IR_SUB, x, z));
    set_output(f, 5, ir_bin(f, IR_DIV, t, ir_bin(f, IR_ADD, p0, y)), NULL);
    set_output(f, 6, x, "x again");
    set_output(f, 7, ir_const(f, 0.0), "zero");
    set_output(f, 8, p1, "p1");
    set_output(f, 9, s, "x+y again");
    ir_bin(f, IR_MUL, x, x); /* dead */
    return f;
}

/* Every math opcode, on operands in its domain. */
static IrFn *make_math(void) {
    IrFn *f = ir_new("k_math", 3, 1, 40);
    int x = ir_input(f, 0), y = ir_input(f, 1), z = ir_input(f, 2), p = ir_param(f, 0);
    int o = 0;
    static const int powi_exp[] = {3, -2, 0, 1, -1, 7, 13, -5, 2, 31, -32};
    for (size_t k = 0; k < sizeof powi_exp / sizeof powi_exp[0]; k++)
        set_output(f, o++, ir_emit(f, IR_POWI, k % 2 ? y : x, -1, powi_exp[k], 0), NULL);
    set_output(f, o++, ir_bin(f, IR_POW, y, x), "pow");
    set_output(f, o++, ir_un(f, IR_SQRT, y), "sqrt");
    set_output(f, o++, ir_un(f, IR_SQRT, ir_bin(f, IR_ADD, ir_bin(f, IR_MUL, x, x), ir_const(f, 1))), NULL);
    set_output(f, o++, ir_un(f, IR_EXP, x), "exp");
    set_output(f, o++, ir_un(f, IR_LOG, y), "log");
    set_output(f, o++, ir_un(f, IR_SIN, x), "sin");
    set_output(f, o++, ir_un(f, IR_COS, x), "cos");
    set_output(f, o++, ir_un(f, IR_TAN, z), "tan");
    set_output(f, o++, ir_un(f, IR_ASIN, z), "asin");
    set_output(f, o++, ir_un(f, IR_ACOS, z), "acos");
    set_output(f, o++, ir_un(f, IR_ATAN, x), "atan");
    set_output(f, o++, ir_bin(f, IR_ATAN2, x, z), "atan2");
    set_output(f, o++, ir_un(f, IR_SINH, x), "sinh");
    set_output(f, o++, ir_un(f, IR_COSH, x), "cosh");
    set_output(f, o++, ir_un(f, IR_TANH, x), "tanh");
    set_output(f, o++, ir_un(f, IR_ABS, x), "abs");
    set_output(f, o++, ir_un(f, IR_SIGN, x), "sign");
    set_output(f, o++, ir_un(f, IR_SIGN, ir_const(f, 0)), "sign 0");
    set_output(f, o++, ir_un(f, IR_SIGN, ir_un(f, IR_NEG, y)), "sign -y");
    set_output(f, o++, ir_bin(f, IR_MIN, x, z), "min");
    set_output(f, o++, ir_bin(f, IR_MAX, x, z), "max");
    set_output(f, o++, ir_bin(f, IR_MIN, y, p), NULL);
    set_output(f, o++, ir_bin(f, IR_MAX, p, y), NULL);
    /* asin/acos of a computed value strictly inside (-1, 1) */
    int w = ir_bin(f, IR_MUL, ir_un(f, IR_TANH, x), ir_const(f, 0.9));
    set_output(f, o++, ir_bin(f, IR_ADD, ir_un(f, IR_ASIN, w), ir_un(f, IR_ACOS, w)), NULL);
    f->noutputs = o; /* fewer than allocated */
    return f;
}

/* Constants that must survive both backends: infinities, NaN, -0, subnormals. */
static const double const_values[] = {INFINITY, -INFINITY, NAN,         -0.0, 1e-300,
                                      0x1p-1074, 0.1,       123456789.0, 1.0,  -2.5e300};
enum { NCONST = sizeof const_values / sizeof const_values[0] };
static IrFn *make_consts(void) {
    IrFn *f = ir_new("k_consts", 0, 0, NCONST);
    for (int k = 0; k < NCONST; k++) set_output(f, k, ir_const(f, const_values[k]), NULL);
    return f;
}

/* No outputs (the constraints of a free system): nothing to do, nothing written. */
static IrFn *make_empty(void) {
    IrFn *f = ir_new("k_empty", 2, 1, 0);
    ir_bin(f, IR_ADD, ir_input(f, 0), ir_param(f, 0));
    return f;
}

/* A random expression DAG of about ninsts instructions over 4 inputs and 2 params;
   bounded operations (sin, cos, tanh, atan, division by 1 + v^2) keep values finite. */
static IrFn *make_big(const char *name, int ninsts, uint64_t seed) {
    IrFn *f = ir_new(name, 4, 2, 8);
    for (int i = 0; i < 4; i++) ir_input(f, i);
    ir_param(f, 0);
    ir_param(f, 1);
    int one = ir_const(f, 1);
    while (f->ninsts < ninsts) {
        int a = (int)(rng_next(&seed) % (uint64_t)f->ninsts), b = (int)(rng_next(&seed) % (uint64_t)f->ninsts);
        switch (rng_next(&seed) % 8) {
        case 0: ir_bin(f, IR_ADD, a, b); break;
        case 1: ir_bin(f, IR_SUB, a, b); break;
        case 2: ir_bin(f, IR_MUL, a, b); break;
        case 3: ir_un(f, IR_SIN, a); break;
        case 4: ir_un(f, IR_COS, a); break;
        case 5: ir_un(f, IR_TANH, a); break;
        case 6: ir_un(f, IR_ATAN, ir_bin(f, IR_MUL, a, b)); break;
        case 7: ir_bin(f, IR_DIV, a, ir_bin(f, IR_ADD, one, ir_bin(f, IR_MUL, b, b))); break;
        }
    }
    for (int o = 0; o < 8; o++) f->outputs[o] = f->ninsts - 1 - 3 * o;
    return f;
}

/* A blocked kernel (500 instructions) with values of the parameters alone, which the JIT
   computes once a call before the blocks (uniform values, llvm_jit.c): one of them an
   output, one a libm call, both used in every later instruction; a parameter output too. */
static IrFn *make_uniform(void) {
    IrFn *f = ir_new("k_uniform", 2, 2, 3);
    int x = ir_input(f, 0), y = ir_input(f, 1), p = ir_param(f, 0), q = ir_param(f, 1);
    int inv = ir_bin(f, IR_DIV, ir_const(f, 1), ir_bin(f, IR_ADD, ir_const(f, 2), ir_bin(f, IR_MUL, p, p)));
    int s = ir_un(f, IR_SIN, ir_bin(f, IR_MUL, q, inv)), acc = x;
    while (f->ninsts < 500) acc = ir_bin(f, IR_ADD, ir_bin(f, IR_MUL, acc, inv), ir_bin(f, IR_MUL, y, s));
    f->outputs[0] = acc, f->outputs[1] = s, f->outputs[2] = q;
    return f;
}

/* ---- JIT against ir_eval ---- */

static int inexact; /* JIT results that are within tolerance but not identical */

/* Runs f's kernel on n states and checks every output against ir_eval. Returns the
   outputs (SoA), or NULL if the kernel was missing. */
static double *check_jit(Jit *j, const IrFn *f, long n, uint64_t seed, const char *label) {
    PrtKernel k = jit_lookup(j, f->name);
    CHECK(k != NULL, "%s: no kernel %s", label, f->name);
    if (!k) return NULL;
    double *in = make_inputs(f, n, seed), *params = make_params(f, seed ^ 1);
    size_t nout = (size_t)f->noutputs * (size_t)n;
    enum { GUARD = 8 };
    double *out = malloc(sizeof(double) * (nout + GUARD));
    for (size_t i = 0; i < nout + GUARD; i++) out[i] = -777.25; /* a canary */
    k(n, in, params, out);
    for (size_t i = nout; i < nout + GUARD; i++) CHECK(out[i] == -777.25, "%s: n=%ld wrote past the outputs", label, n);

    double *st_in = malloc(sizeof(double) * (size_t)(f->ninputs + 1));
    double *st_out = malloc(sizeof(double) * (size_t)(f->noutputs + 1));
    int bad = 0;
    for (long b = 0; b < n; b++) {
        for (int i = 0; i < f->ninputs; i++) st_in[i] = in[i * n + b];
        ir_eval(f, st_in, params, st_out);
        for (int o = 0; o < f->noutputs; o++) {
            double got = out[o * n + b], want = st_out[o];
            if (memcmp(&got, &want, sizeof got) && !(isnan(got) && isnan(want))) inexact++;
            if (!close_rel(got, want, 1e-14) && bad++ < 5)
                CHECK(0, "%s: n=%ld state %ld output %d (%s): jit %.17g, ir_eval %.17g", label, n, b, o,
                      f->output_names[o] ? f->output_names[o] : "", got, want);
        }
    }
    CHECK(bad == 0, "%s: n=%ld: %d outputs differ", label, n, bad);
    free(st_in);
    free(st_out);
    free(in);
    free(params);
    return out;
}

/* ---- Emitted C against the JIT ---- */

static void print_array(FILE *fp, const char *name, const double *a, size_t len) {
    fprintf(fp, "static const double %s[] = {", name);
    for (size_t i = 0; i < len; i++) fprintf(fp, "%s%a", i == 0 ? "\n    " : i % 4 ? ", " : ",\n    ", a[i]);
    fprintf(fp, "%s};\n", len ? "\n" : "0");
}

static char *read_file_text(const char *path) {
    FILE *fp = fopen(path, "rb");
    if (!fp) return NULL;
    fseek(fp, 0, SEEK_END);
    long len = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    char *s = malloc((size_t)len + 1);
    size_t got = fread(s, 1, (size_t)len, fp);
    s[got] = 0;
    fclose(fp);
    return s;
}

enum { NBATCH = 4 };
static const long batch_n[NBATCH] = {1, 7, 13, 1000};

/* Emits the kernels as C, compiles them with a driver that runs each kernel on the same
   batches as the JIT did, and compares the printed outputs with jit_out[k][batch]. */
static void check_emitted_c(IrFn *const *fns, int nfns, double *jit_out[][NBATCH]) {
    char dir[] = "/tmp/physc-test-backends-XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "mkdtemp: %s", strerror(errno));
    char kpath[64], dpath[64], prog[64], cmd[512];
    snprintf(kpath, sizeof kpath, "%s/kernels.c", dir);
    snprintf(dpath, sizeof dpath, "%s/driver.c", dir);
    snprintf(prog, sizeof prog, "%s/driver", dir);

    FILE *fp = fopen(kpath, "w");
    CHECK(fp != NULL, "cannot write %s", kpath);
    if (!fp) return;
    emitc_kernels(fp, fns, nfns);
    fclose(fp);

    char *text = read_file_text(kpath);
    CHECK(text && strstr(text, "#include <math.h>"), "emitted C lacks #include <math.h>");
    CHECK(text && strstr(text, "void k_arith(long n, const double *restrict in, const double *restrict params, "
                               "double *restrict out)"),
          "emitted C lacks the kernel ABI");
    CHECK(text && strstr(text, "static inline double physc_powi(double x, int k)"), "emitted C lacks physc_powi");
    CHECK(text && strstr(text, "physc_sign"), "emitted C lacks physc_sign");
    CHECK(text && strstr(text, "INFINITY") && strstr(text, "-INFINITY") && strstr(text, "NAN"),
          "emitted C spells inf/nan wrong");
    CHECK(text && strstr(text, "/* x */"), "emitted C does not name inputs");
    CHECK(text && strstr(text, "/* x+y */"), "emitted C does not name outputs");
    CHECK(text && strstr(text, "z * / not a comment end"), "emitted C does not defuse */ in names");
    free(text);

    fp = fopen(dpath, "w");
    fputs("#include <stdio.h>\n", fp);
    for (int k = 0; k < nfns; k++) {
        const IrFn *f = fns[k];
        fprintf(fp, "void %s(long n, const double *in, const double *params, double *out);\n", f->name);
        for (int t = 0; t < NBATCH; t++) {
            char name[64];
            uint64_t seed = (uint64_t)(100 * k + t); /* as in main's JIT runs */
            double *in = make_inputs(f, batch_n[t], seed), *params = make_params(f, seed ^ 1);
            snprintf(name, sizeof name, "in_%d_%d", k, t);
            print_array(fp, name, in, (size_t)(f->ninputs * batch_n[t]));
            snprintf(name, sizeof name, "params_%d_%d", k, t);
            print_array(fp, name, params, (size_t)f->nparams);
            free(in);
            free(params);
        }
    }
    fputs("static double out[100000];\nint main(void) {\n", fp);
    for (int k = 0; k < nfns; k++)
        for (int t = 0; t < NBATCH; t++) {
            fprintf(fp, "    %s(%ld, in_%d_%d, params_%d_%d, out);\n", fns[k]->name, batch_n[t], k, t, k, t);
            fprintf(fp, "    for (int i = 0; i < %ld; i++) printf(\"%%.17g\\n\", out[i]);\n",
                    (long)fns[k]->noutputs * batch_n[t]);
        }
    fputs("    return 0;\n}\n", fp);
    fclose(fp);

    /* The emitted kernels must also be warning-free, and plain C99. */
    snprintf(cmd, sizeof cmd, "cc -std=c99 -pedantic -Wall -Wextra -Werror -fsyntax-only %s", kpath);
    CHECK(system(cmd) == 0, "emitted C is not warning-free C99: %s", cmd);
    snprintf(cmd, sizeof cmd, "cc -O2 -std=c17 -Wall -Wextra -Werror -o %s %s %s -lm", prog, kpath, dpath);
    int rc = system(cmd);
    CHECK(rc == 0, "cannot compile the emitted C (is cc installed?): %s", cmd);
    if (rc == 0) {
        FILE *pp = popen(prog, "r");
        CHECK(pp != NULL, "cannot run %s", prog);
        char line[128];
        int bad = 0, count = 0;
        for (int k = 0; pp && k < nfns; k++)
            for (int t = 0; t < NBATCH; t++)
                for (long i = 0; i < (long)fns[k]->noutputs * batch_n[t]; i++) {
                    if (!fgets(line, sizeof line, pp)) {
                        CHECK(0, "emitted C: output ends early at kernel %s", fns[k]->name);
                        goto done;
                    }
                    double got = strtod(line, NULL), want = jit_out[k][t] ? jit_out[k][t][i] : NAN;
                    count++;
                    if (!close_rel(got, want, 1e-12) && bad++ < 5)
                        CHECK(0, "emitted C: kernel %s n=%ld value %ld: C %.17g, JIT %.17g", fns[k]->name,
                              batch_n[t], i, got, want);
                }
    done:
        CHECK(bad == 0, "emitted C: %d of %d values differ from the JIT", bad, count);
        CHECK(pp && pclose(pp) == 0, "the emitted-C driver failed");
        printf("emitted C agrees with the JIT on %d values\n", count);
    }
    remove(prog);
    remove(dpath);
    remove(kpath);
    rmdir(dir);
}

/* ---- Invalid kernels ---- */

static void expect_refused(IrFn *f, IrFn *other, const char *what, const char *needle) {
    IrFn *fns[2] = {f, other};
    char err[256] = "";
    Jit *j = jit_compile(fns, other ? 2 : 1, 2, err, sizeof err);
    CHECK(j == NULL, "%s: jit_compile accepted it", what);
    CHECK(err[0] != 0, "%s: refused without a message", what);
    CHECK(strstr(err, needle) != NULL, "%s: message '%s' lacks '%s'", what, err, needle);
    jit_free(j);
}

static void check_refusals(void) {
    IrFn *f = ir_new("k_forward", 1, 0, 1);
    int x = ir_input(f, 0);
    f->outputs[0] = ir_bin(f, IR_ADD, x, 5); /* operand defined later */
    ir_const(f, 1);
    expect_refused(f, NULL, "forward operand", "k_forward");
    ir_free(f);

    f = ir_new("k_badinput", 1, 0, 1);
    f->outputs[0] = ir_input(f, 3);
    expect_refused(f, NULL, "input out of range", "input 3");
    ir_free(f);

    f = ir_new("k_badparam", 0, 1, 1);
    f->outputs[0] = ir_param(f, -1);
    expect_refused(f, NULL, "param out of range", "param");
    ir_free(f);

    f = ir_new("k_badop", 1, 0, 1);
    f->outputs[0] = ir_emit(f, IR_NOPS, -1, -1, 0, 0);
    expect_refused(f, NULL, "bad opcode", "opcode");
    ir_free(f);

    f = ir_new("k_nooutput", 1, 0, 1); /* output 0 names no value: there are none */
    expect_refused(f, NULL, "missing output", "output 0");
    ir_free(f);

    f = ir_new("bad-name", 1, 0, 1);
    f->outputs[0] = ir_input(f, 0);
    expect_refused(f, NULL, "bad name", "not a C identifier");
    ir_free(f);

    f = ir_new("sin", 1, 0, 1);
    f->outputs[0] = ir_input(f, 0);
    expect_refused(f, NULL, "runtime name", "reserved");
    ir_free(f);

    f = ir_new("twice", 1, 0, 1);
    f->outputs[0] = ir_input(f, 0);
    IrFn *g = ir_new("twice", 1, 0, 1);
    g->outputs[0] = ir_input(g, 0);
    expect_refused(f, g, "duplicate names", "twice");
    ir_free(f);
    ir_free(g);
}

/* ---- Docs ---- */

static void check_abi_doc(void) {
    char *doc = read_file_text("docs/runtime-abi.md");
    if (!doc) {
        printf("note: docs/runtime-abi.md not found (run from the repository root); not checked\n");
        return;
    }
    for (int i = 0; jit_runtime_symbols[i]; i++) {
        char needle[64];
        snprintf(needle, sizeof needle, "`%s`", jit_runtime_symbols[i]);
        CHECK(strstr(doc, needle), "docs/runtime-abi.md does not list the runtime symbol %s", jit_runtime_symbols[i]);
    }
    free(doc);
}

int main(void) {
    /* k_segments: past the JIT's CG_SEGMENTED_MIN, so it runs as segments passing values
       through a spill array (operands drawn from the whole DAG reach back across segments) */
    IrFn *fns[] = {make_arith(), make_math(), make_consts(), make_big("k_big", 600, 12345), make_empty(),
                   make_big("k_segments", 12000, 999), make_uniform()};
    enum { NFNS = sizeof fns / sizeof fns[0] };
    for (int k = 0; k < NFNS; k++)
        CHECK(ir_verify(fns[k]) == NULL, "test kernel %s is invalid: %s", fns[k]->name, ir_verify(fns[k]));

    /* Every opcode is covered. */
    bool seen[IR_NOPS] = {0};
    for (int k = 0; k < NFNS; k++)
        for (int i = 0; i < fns[k]->ninsts; i++) seen[fns[k]->insts[i].op] = true;
    for (int op = 0; op < IR_NOPS; op++) CHECK(seen[op], "no test kernel uses %s", ir_op_name[op]);

    char err[512] = "";
    double *jit_out[NFNS][NBATCH] = {{0}};
    for (int opt = 0; opt <= 3; opt++) {
        Jit *j = jit_compile(fns, NFNS, opt, err, sizeof err);
        CHECK(j != NULL, "jit_compile -O%d: %s", opt, err);
        if (!j) continue;
        CHECK(jit_lookup(j, "no_such_kernel") == NULL, "jit_lookup found a kernel that is not there");
        char label[32];
        snprintf(label, sizeof label, "JIT -O%d", opt);
        for (int k = 0; k < NFNS; k++)
            for (int t = 0; t < NBATCH; t++) {
                double *out = check_jit(j, fns[k], batch_n[t], (uint64_t)(100 * k + t), label);
                if (opt == 2 && !jit_out[k][t])
                    jit_out[k][t] = out;
                else
                    free(out);
            }
        /* n = 0 and n < 0 touch nothing. */
        double canary = 3.5;
        jit_lookup(j, "k_arith")(0, NULL, NULL, &canary);
        jit_lookup(j, "k_arith")(-5, NULL, NULL, &canary);
        CHECK(canary == 3.5, "JIT -O%d: n <= 0 wrote an output", opt);
        jit_free(j);
    }
    printf("JIT agrees with ir_eval; %d results within tolerance but not bit-identical\n", inexact);

    /* Constants keep their exact bits (NaN: any NaN); -0 keeps its sign. */
    for (int k = 0; k < NCONST && jit_out[2][1]; k++) {
        double got = jit_out[2][1][k * 7 + 3], want = const_values[k];
        CHECK((isnan(got) && isnan(want)) || !memcmp(&got, &want, sizeof got), "constant %d: JIT %.17g, want %.17g",
              k, got, want);
    }

    check_emitted_c(fns, NFNS, jit_out);
    check_refusals();

    /* A valid compile still works after refusals; the JIT of no kernels is fine too. */
    Jit *none = jit_compile(NULL, 0, 2, err, sizeof err);
    CHECK(none != NULL, "jit_compile of no kernels: %s", err);
    jit_free(none);
    jit_free(NULL);

    /* Compile time of a ~200-instruction kernel (informational). */
    IrFn *big = make_big("k_timing", 200, 777);
    for (int opt = 0; opt <= 3; opt++) {
        Jit *j = jit_compile(&big, 1, opt, err, sizeof err);
        CHECK(j != NULL, "jit_compile of the timing kernel: %s", err);
        if (j)
            printf("compile+JIT of a %d-instruction kernel at -O%d: %.1f ms\n", big->ninsts, opt,
                   jit_last_compile_ms(j));
        jit_free(j);
    }
    ir_free(big);

    check_abi_doc();

    for (int k = 0; k < NFNS; k++) {
        for (int t = 0; t < NBATCH; t++) free(jit_out[k][t]);
        ir_free(fns[k]);
    }
    printf("%s: %s\n", __FILE__, failures ? "FAILED" : "ok");
    return failures != 0;
}
