/* ir.h — the kernel IR: straight-line SSA over f64 scalars. Vectors and matrices of the
   language are scalarized by lowering, so each instruction is one arithmetic operation;
   a kernel is run for a whole batch of states by the backends (see docs/runtime-abi.md).
   The opcode table is one X-macro that the printer, verifier, optimizer, AD and both
   backends expand. */
#ifndef PHYSC_IR_H
#define PHYSC_IR_H
#include <stdbool.h>
#include <stdio.h>

/* X(NAME, operand count, printed name) */
#define IR_OPS(X)            \
    X(CONST, 0, "const")     \
    X(INPUT, 0, "input")     \
    X(PARAM, 0, "param")     \
    X(ADD, 2, "add")         \
    X(SUB, 2, "sub")         \
    X(MUL, 2, "mul")         \
    X(DIV, 2, "div")         \
    X(NEG, 1, "neg")         \
    X(POWI, 1, "powi")       \
    X(POW, 2, "pow")         \
    X(SQRT, 1, "sqrt")       \
    X(EXP, 1, "exp")         \
    X(LOG, 1, "log")         \
    X(SIN, 1, "sin")         \
    X(COS, 1, "cos")         \
    X(TAN, 1, "tan")         \
    X(ASIN, 1, "asin")       \
    X(ACOS, 1, "acos")       \
    X(ATAN, 1, "atan")       \
    X(ATAN2, 2, "atan2")     \
    X(SINH, 1, "sinh")       \
    X(COSH, 1, "cosh")       \
    X(TANH, 1, "tanh")       \
    X(ABS, 1, "abs")         \
    X(SIGN, 1, "sign")       \
    X(MIN, 2, "min")         \
    X(MAX, 2, "max")

typedef enum IrOp {
#define X(name, nargs, text) IR_##name,
    IR_OPS(X)
#undef X
    IR_NOPS
} IrOp;

extern const int ir_op_nargs[IR_NOPS];
extern const char *const ir_op_name[IR_NOPS];

/* One instruction defines value %k (its index). Operands a, b are earlier values.
   CONST: num. INPUT, PARAM: imm = index. POWI: imm = integer exponent. */
typedef struct IrInst {
    IrOp op;
    int a, b;
    int imm;
    double num;
} IrInst;

/* The most instructions one kernel may hold while it is built, before simplification: 192 MB
   of IR. The lowering of coupled constraints is dense (the symbolic L D L^T of the C x C
   constraint Gram matrix grows as C^3: a 40-link chain builds 0.76 million, 100 links 10.9
   million, 300 links would build 300 million and exhaust the memory; docs/performance.md).
   Past it a kernel stops growing and is marked too_big (ir_emit then returns its last value,
   so the pass runs on to its end harmlessly) and kernels_build refuses it. */
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
