/* ir.h — the kernel IR: straight-line SSA over f64 scalars. Vectors and matrices of the
   language are scalarized by lowering, so each instruction is one arithmetic operation;
   a kernel is run for a whole batch of states by the backends (see docs/runtime-abi.md).
   The opcode table is one X-macro that the printer, verifier, optimizer, AD and both
   backends expand. */
#ifndef PHYSC_IR_H
#define PHYSC_IR_H
#include <stdbool.h>
#include <stdio.h>

#include "diag.h"

/* X(NAME, operand count, printed name (also the language's function), C function: what
   emitted C calls, and the libm function the LLVM backend falls back to; NULL for
   arithmetic. physc_powi and physc_sign are defined in every emitted file.) */
#define IR_OPS(X)                    \
    X(CONST, 0, "const", NULL)        \
    X(INPUT, 0, "input", NULL)        \
    X(PARAM, 0, "param", NULL)        \
    X(ADD, 2, "add", NULL)            \
    X(SUB, 2, "sub", NULL)            \
    X(MUL, 2, "mul", NULL)            \
    X(DIV, 2, "div", NULL)            \
    X(NEG, 1, "neg", NULL)            \
    X(POWI, 1, "powi", "physc_powi")  \
    X(POW, 2, "pow", "pow")           \
    X(SQRT, 1, "sqrt", "sqrt")        \
    X(EXP, 1, "exp", "exp")           \
    X(LOG, 1, "log", "log")           \
    X(SIN, 1, "sin", "sin")           \
    X(COS, 1, "cos", "cos")           \
    X(TAN, 1, "tan", "tan")           \
    X(ASIN, 1, "asin", "asin")        \
    X(ACOS, 1, "acos", "acos")        \
    X(ATAN, 1, "atan", "atan")        \
    X(ATAN2, 2, "atan2", "atan2")     \
    X(SINH, 1, "sinh", "sinh")        \
    X(COSH, 1, "cosh", "cosh")        \
    X(TANH, 1, "tanh", "tanh")        \
    X(ABS, 1, "abs", "fabs")          \
    X(SIGN, 1, "sign", "physc_sign")  \
    X(MIN, 2, "min", "fmin")          \
    X(MAX, 2, "max", "fmax")

typedef enum IrOp {
#define X(name, nargs, text, cfn) IR_##name,
    IR_OPS(X)
#undef X
    IR_NOPS
} IrOp;

extern const int ir_op_nargs[IR_NOPS];
extern const char *const ir_op_name[IR_NOPS];
extern const char *const ir_op_cfn[IR_NOPS];

/* One instruction defines value %k (its index). Operands a, b are earlier values.
   CONST: num. INPUT, PARAM: imm = index. POWI: imm = integer exponent. */
typedef struct IrInst {
    IrOp op;
    int a, b;
    int imm;
    double num;
} IrInst;

/* The most instructions one kernel may hold while it is built, before simplification: 192 MB
   of IR. The constrained solve is built in the sparsity of the constraint graph (a chain of
   1000 links: 0.2 million), but constraints that all share one body make the Gram matrix
   dense and its L D L^T grows as C^3 (300 links on one hub would build 9 million;
   docs/performance.md). Past the limit a kernel stops growing and is marked too_big (ir_emit
   then returns its last value, so the pass runs on to its end harmlessly) and kernels_build
   refuses it. */
enum { IR_MAX_INSTS = 8000000 };

typedef struct IrFn {
    char *name;
    int ninputs, nparams;
    IrInst *insts;
    int ninsts, cap;
    bool too_big;       /* IR_MAX_INSTS was reached: the kernel is incomplete */
    int *outputs;       /* value per output */
    int noutputs;
    char **input_names; /* for dumps: ninputs names, may be NULL */
    char **output_names;
    Loc *locs;          /* per instruction, the program expression it comes from (first_line 0:
                           none), so that folding can blame a constant inf or NaN on it; NULL
                           until ir_set_locs */
} IrFn;

IrFn *ir_new(const char *name, int ninputs, int nparams, int noutputs);
void ir_free(IrFn *f);
int ir_emit(IrFn *f, IrOp op, int a, int b, int imm, double num);
int ir_const(IrFn *f, double x);
int ir_input(IrFn *f, int index);
int ir_param(IrFn *f, int index);
int ir_un(IrFn *f, IrOp op, int a);
int ir_bin(IrFn *f, IrOp op, int a, int b);
void ir_set_input_name(IrFn *f, int i, const char *name);
/* Grows the input count of a kernel whose inputs are discovered while lowering it. */
void ir_set_ninputs(IrFn *f, int ninputs);
void ir_set_output_name(IrFn *f, int i, const char *name);
/* Instructions [from, to) without a location get loc. */
void ir_set_locs(IrFn *f, int from, int to, Loc loc);
/* The location of value v (first_line 0 if none). */
Loc ir_loc(const IrFn *f, int v);

/* The most values (results of arithmetic; constants, inputs and parameters aside) live at
   once in the kernel, its outputs live to its end as the backends store them: the register
   pressure of its loop body, which drives LLVM's compile time and memory (driver.c). */
int ir_max_live(const IrFn *f);

/* Checks SSA order, operand counts and indices. Returns NULL or a message (static). */
const char *ir_verify(const IrFn *f);
void ir_print(FILE *out, const IrFn *f);
/* Reference evaluation of one state (tests, and constant folding): in[ninputs] -> out. */
void ir_eval(const IrFn *f, const double *in, const double *params, double *out);
double ir_apply(IrOp op, double a, double b, int imm);

#endif
