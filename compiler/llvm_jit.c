/* llvm_jit.c — the LLVM backend: kernel IR to LLVM IR, optimized for this CPU and
   compiled by ORC LLJIT. The only file of physc that includes the llvm-c headers.

   The kernels are split into parts of about equal size, one per core (up to 4; one part
   for small programs), and each part is built, optimized (short pipelines of the new pass
   manager's passes: CG_LIGHT_PIPELINE, CG_SMALL_PIPELINE) and compiled to an object file on
   its own thread, in its own LLVMContext with its own host target machine: code generation is
   most of the JIT's time, and the kernels do not call each other. The objects go to a new
   LLJIT, whose main JITDylib also holds the runtime symbol table (absolute symbols, see
   docs/runtime-abi.md), and every kernel is looked up (linked) before jit_compile
   returns. The lifecycle otherwise follows LLVM's OrcV2CBindingsBasicUsage.c. Every
   LLVMErrorRef is consumed. Small kernels are scalar loops that LLVM vectorizes; large ones
   are written on explicit vectors of 8 states, block by block (see cg_kernel). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1 /* sincos, exp10 */
#endif
#include "llvm_jit.h"
#include "arena.h"
#include "jit_cache.h"
#include "core/alloc.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <threads.h>
#include <time.h>
#include <unistd.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/Core.h>
#include <llvm-c/DebugInfo.h> /* temporary metadata nodes, for self-referential loop IDs */
#include <llvm-c/Error.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Support.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <llvm/Config/llvm-config.h> /* LLVM_VERSION_MAJOR, for the one shim below */

/* ---- The runtime symbol table: everything JIT'd code may call. ----
   libm functions the backend calls by name, the ones LLVM intrinsics lower to (llvm.sin
   becomes a call to sin; a sin and cos of one value may become sincos; llvm.powi with a
   large exponent becomes __powidf2; pow(2, x) may become exp2 or ldexp), and the memory
   functions loop idioms can turn stores into; prt_xalloc and free for a large kernel's last
   block. Keep docs/runtime-abi.md in step. */

extern double __powidf2(double, int); /* libgcc / compiler-rt */

#define RT_SYMS(X)                                                                     \
    X(sin) X(cos) X(tan) X(asin) X(acos) X(atan) X(atan2) X(sinh) X(cosh) X(tanh)      \
    X(exp) X(exp2) X(log) X(log2) X(log10) X(pow) X(sqrt) X(fabs) X(fmin) X(fmax)      \
    X(ldexp) X(__powidf2) X(memset) X(memcpy) X(memmove) X(prt_xalloc) X(free) RT_SYMS_GNU(X)
#ifdef __GLIBC__ /* LLVM knows GNU libm has these and may call them */
#define RT_SYMS_GNU(X) X(sincos) X(exp10)
#else
#define RT_SYMS_GNU(X)
#endif

typedef void (*RtFn)(void);
static const RtFn rt_addr[] = {
#define X(f) (RtFn)f,
    RT_SYMS(X)
#undef X
};
const char *const jit_runtime_symbols[] = {
#define X(f) #f,
    RT_SYMS(X)
#undef X
    NULL,
};
enum { NRT = sizeof rt_addr / sizeof rt_addr[0] };

/* ---- The compiled kernels. ---- */

typedef struct JitKernel {
    char *name;
    PrtKernel fn;
} JitKernel;

struct Jit {
    LLVMOrcLLJITRef lljit;
    JitKernel *kernels;
    int nkernels;
    double compile_ms;
    bool from_cache;       /* the objects came from the disk cache (jit_cache.h) */
    char session_err[512]; /* the first error the JIT session reported, if any */
    JitObject *objects;    /* copies of the compiled objects (jit_keep_objects), else NULL */
    int nobjects;
};

static bool keep_objects;
void jit_keep_objects(bool keep) { keep_objects = keep; }
int jit_object_count(const Jit *j) { return j ? j->nobjects : 0; }
const JitObject *jit_object(const Jit *j, int i) { return j && i >= 0 && i < j->nobjects ? &j->objects[i] : NULL; }

/* ---- Errors ---- */

static void cg_errf(char *err, size_t errlen, const char *fmt, ...) {
    if (!err || !errlen) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* Consumes e. True (with the message in err) if it was an error. */
static bool cg_failed(LLVMErrorRef e, const char *what, char *err, size_t errlen) {
    if (!e) return false;
    char *msg = LLVMGetErrorMessage(e);
    cg_errf(err, errlen, "LLVM: %s: %s", what, msg);
    LLVMDisposeErrorMessage(msg);
    return true;
}

/* ---- One-time initialization ---- */

static once_flag cg_once = ONCE_FLAG_INIT;
static bool cg_init_ok;

/* LLVM 19's default<On> pipeline runs the SLP vectorizer whatever the pass builder
   options say; only its command-line switch turns it off. On the examples' kernels it
   costs 25-35% of the compile time and gains nothing at run time (the batch loop is
   already vectorized), so it is turned off here, once for the process (physc is the only
   LLVM user in it).
   The instruction schedulers after register allocation are off too: building their
   dependency graphs (SUnit::addPred, ComputeHeight, the memory operations' chain
   dependencies) was a third of a large model's code generation, and an out-of-order core
   reorders the kernels' code after allocation itself. A 1000-link chain's CHNN (`physc run`,
   its Field and FieldVJP): LLVM 18.1-18.9 s -> 11.3-11.6 s, its epochs as fast (0.061-0.064 s
   against 0.064-0.067); unrolled chain fields of 10, 30 and 100 links as fast (the harness,
   alternating runs, within 4 % either way). The scheduler before allocation stays: without it
   the same compile took 8.2-9.1 s, but the chains' fields ran 4-22 % slower. */
static void cg_init(void) {
    cg_init_ok = !LLVMInitializeNativeTarget() && !LLVMInitializeNativeAsmPrinter();
    const char *const argv[] = {"physc", "-vectorize-slp=false", "-enable-post-misched=false", "-post-RA-scheduler=false"};
    LLVMParseCommandLineOptions((int)(sizeof argv / sizeof argv[0]), argv, "");
}

static double cg_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* ---- Names ---- */

static bool cg_is_identifier(const char *s) {
    if (!s || !(*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z'))) return false;
    for (; *s; s++)
        if (!(*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9')))
            return false;
    return true;
}

static bool cg_is_runtime_symbol(const char *s) {
    for (int i = 0; i < NRT; i++)
        if (!strcmp(jit_runtime_symbols[i], s)) return true;
    return false;
}

/* The kernels must be valid IR with distinct C identifiers for names that do not
   collide with the runtime (or the C emitter's physc_ helpers). */
static bool cg_check_kernels(IrFn *const *fns, int nfns, char *err, size_t errlen) {
    for (int i = 0; i < nfns; i++) {
        const IrFn *f = fns[i];
        if (!f) return cg_errf(err, errlen, "kernel %d is NULL", i), false;
        if (!cg_is_identifier(f->name))
            return cg_errf(err, errlen, "kernel name '%s' is not a C identifier", f->name ? f->name : "(null)"), false;
        if (cg_is_runtime_symbol(f->name) || !strncmp(f->name, "physc_", 6))
            return cg_errf(err, errlen, "kernel name '%s' is reserved for the runtime", f->name), false;
        for (int j = 0; j < i; j++)
            if (!strcmp(fns[j]->name, f->name))
                return cg_errf(err, errlen, "two kernels are named '%s'", f->name), false;
        if (f->ninputs < 0 || f->nparams < 0 || f->noutputs < 0)
            return cg_errf(err, errlen, "kernel %s: negative count of inputs, params or outputs", f->name), false;
        const char *msg = ir_verify(f);
        if (msg) return cg_errf(err, errlen, "kernel %s: invalid IR: %s", f->name, msg), false;
    }
    return true;
}

/* ---- IR building ---- */

typedef struct Cg {
    LLVMContextRef ctx;
    LLVMModuleRef mod;
    LLVMBuilderRef b;
    LLVMTypeRef f64, i32, ilong, ptr, kernel_ty, v8;
    const char *cpu, *features;
    /* The callee of each math opcode, made on first use. */
    LLVMValueRef callee[IR_NOPS];
    LLVMTypeRef callee_ty[IR_NOPS];
    /* The same on blocks of 8 (<8 x double>), or vscalar: called lane by lane. */
    LLVMValueRef vcallee[IR_NOPS];
    LLVMTypeRef vcallee_ty[IR_NOPS];
    bool vscalar[IR_NOPS];
} Cg;

static void cg_attr(Cg *cg, LLVMValueRef fn, LLVMAttributeIndex idx, const char *name) {
    unsigned kind = LLVMGetEnumAttributeKindForName(name, strlen(name));
    if (kind) LLVMAddAttributeAtIndex(fn, idx, LLVMCreateEnumAttribute(cg->ctx, kind, 0));
}

/* The intrinsic NAME overloaded on f64 ("llvm.sin" -> llvm.sin.f64) as op's callee;
   false if this LLVM has no such intrinsic. */
static bool cg_intrinsic(Cg *cg, IrOp op, const char *name) {
    unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
    if (!id) return false;
    LLVMTypeRef over[2] = {cg->f64, cg->i32};
    size_t nover = op == IR_POWI ? 2 : 1; /* llvm.powi.f64.i32 since LLVM 13 */
    cg->callee[op] = LLVMGetIntrinsicDeclaration(cg->mod, id, over, nover);
    cg->callee_ty[op] = LLVMIntrinsicGetType(cg->ctx, id, over, nover);
    return true;
}

/* A libm function double NAME(double[, double]). */
static void cg_libm(Cg *cg, IrOp op, const char *name) {
    LLVMTypeRef params[2] = {cg->f64, cg->f64};
    LLVMTypeRef ty = LLVMFunctionType(cg->f64, params, (unsigned)ir_op_nargs[op], 0);
    LLVMValueRef fn = LLVMGetNamedFunction(cg->mod, name);
    if (!fn) {
        fn = LLVMAddFunction(cg->mod, name, ty);
        cg_attr(cg, fn, LLVMAttributeFunctionIndex, "nounwind");
    }
    cg->callee[op] = fn;
    cg->callee_ty[op] = ty;
}

/* The function computing op: an LLVM intrinsic where LLVM has one (it may then
   vectorize, and it lowers to the same libm call), else the libm function. */
static void cg_callee(Cg *cg, IrOp op) {
    if (cg->callee[op]) return;
    /* intrinsics are named after libm (the IR_OPS table's C column), but for these three */
    const char *intrinsic = op == IR_MIN ? "minnum" : op == IR_MAX ? "maxnum" : op == IR_POWI ? "powi" : ir_op_cfn[op];
    char name[32];
    snprintf(name, sizeof name, "llvm.%s", intrinsic);
    if (cg_intrinsic(cg, op, name)) return;
    if (op == IR_ABS || op == IR_MIN || op == IR_MAX || op == IR_POWI || op == IR_SQRT)
        abort(); /* these intrinsics are in every LLVM physc supports */
    cg_libm(cg, op, ir_op_cfn[op]);
}

static LLVMValueRef cg_call(Cg *cg, IrOp op, LLVMValueRef x, LLVMValueRef y) {
    cg_callee(cg, op);
    LLVMValueRef args[2] = {x, y};
    return LLVMBuildCall2(cg->b, cg->callee_ty[op], cg->callee[op], args, (unsigned)ir_op_nargs[op] + (op == IR_POWI),
                          "");
}

static LLVMValueRef cg_ilong(Cg *cg, long long x) { return LLVMConstInt(cg->ilong, (unsigned long long)x, 1); }

/* &base[index] for a double array. */
static LLVMValueRef cg_elem(Cg *cg, LLVMValueRef base, LLVMValueRef index) {
    return LLVMBuildInBoundsGEP2(cg->b, cg->f64, base, &index, 1, "");
}

static void cg_func_attrs(Cg *cg, LLVMValueRef fn) {
    cg_attr(cg, fn, LLVMAttributeFunctionIndex, "nounwind");
    LLVMAddTargetDependentFunctionAttr(fn, "target-cpu", cg->cpu);
    LLVMAddTargetDependentFunctionAttr(fn, "target-features", cg->features);
}

/* A pointer parameter (index p from 0) that is the only way to its memory. */
static void cg_ptr_param(Cg *cg, LLVMValueRef fn, unsigned p, bool writes) {
    cg_attr(cg, fn, p + 1, "noalias");
    cg_attr(cg, fn, p + 1, "nocapture");
    cg_attr(cg, fn, p + 1, writes ? "writeonly" : "readonly");
}

/* A kernel is two functions. The loop over the batch is in NAME.loop, which takes one
   noalias pointer per input and output array: that tells LLVM the arrays of the batch
   never overlap, so the loop vectorizes without run-time overlap checks (which LLVM
   gives up on beyond a few arrays). NAME, the exported ABI function, only computes the
   arrays' addresses and calls it once per batch:

     void NAME(long n, const double *noalias in, const double *noalias params,
               double *noalias out):
         if (n > 0) NAME.loop(n, params, in + i0*n, in + i1*n, ..., out, out + n, ...)
     internal void NAME.loop(long n, params, in_rows..., out_rows...):   (n >= 1)
       pre:  loads of the used params
       loop: b = phi(0, b+1); the straight-line kernel; stores; loop while b+1 != n */
/* States per block of a kernel's loop: the widest vector of doubles (AVX-512); narrower
   vectors divide it. */
enum { CG_LANES_LOG2 = 3, CG_LANES = 1 << CG_LANES_LOG2 };

/* Marks the loop whose latch branch is br as one to leave as it is: no vectorizing, no
   unrolling (a few states' copy; vectorized, each copy loop would cost more IR than a kernel). */
static void cg_plain_loop(Cg *cg, LLVMValueRef br) {
    LLVMMetadataRef self = LLVMTemporaryMDNode(cg->ctx, NULL, 0);
    LLVMMetadataRef no_vec[2] = {LLVMMDStringInContext2(cg->ctx, "llvm.loop.vectorize.enable", 26),
                                 LLVMValueAsMetadata(LLVMConstInt(LLVMInt1TypeInContext(cg->ctx), 0, 0))};
    LLVMMetadataRef no_unroll = LLVMMDStringInContext2(cg->ctx, "llvm.loop.unroll.disable", 24);
    LLVMMetadataRef ops[3] = {self, LLVMMDNodeInContext2(cg->ctx, no_vec, 2), LLVMMDNodeInContext2(cg->ctx, &no_unroll, 1)};
    LLVMMetadataRef id = LLVMMDNodeInContext2(cg->ctx, ops, 3);
    LLVMMetadataReplaceAllUsesWith(self, id); /* the loop ID refers to itself; frees self */
    LLVMSetMetadata(br, LLVMGetMDKindIDInContext(cg->ctx, "llvm.loop", 9), LLVMMetadataAsValue(cg->ctx, id));
}

/* Emits, at the builder's position in fn, the copy
       for k < rows, l < lanes:  dst[k * dst_stride + dst_off + l] = src[k * src_stride + src_off + min(l, last)]
   (rows a constant, lanes >= 1 at run time) and leaves the builder after it. */
static void cg_copy_rows(Cg *cg, LLVMValueRef fn, int rows, LLVMValueRef lanes, LLVMValueRef last, LLVMValueRef dst,
                         LLVMValueRef dst_stride, LLVMValueRef dst_off, LLVMValueRef src, LLVMValueRef src_stride,
                         LLVMValueRef src_off) {
    if (rows <= 0) return;
    LLVMBasicBlockRef from = LLVMGetInsertBlock(cg->b);
    LLVMBasicBlockRef outer = LLVMAppendBasicBlockInContext(cg->ctx, fn, "copy.row");
    LLVMBasicBlockRef inner = LLVMAppendBasicBlockInContext(cg->ctx, fn, "copy.lane");
    LLVMBasicBlockRef latch = LLVMAppendBasicBlockInContext(cg->ctx, fn, "copy.next");
    LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(cg->ctx, fn, "copy.done");
    LLVMValueRef zero = cg_ilong(cg, 0), one = cg_ilong(cg, 1);
    LLVMBuildBr(cg->b, outer);

    LLVMPositionBuilderAtEnd(cg->b, outer);
    LLVMValueRef k = LLVMBuildPhi(cg->b, cg->ilong, "k");
    LLVMValueRef src_row = LLVMBuildAdd(cg->b, LLVMBuildMul(cg->b, k, src_stride, ""), src_off, "");
    LLVMValueRef dst_row = LLVMBuildAdd(cg->b, LLVMBuildMul(cg->b, k, dst_stride, ""), dst_off, "");
    LLVMBuildBr(cg->b, inner);

    LLVMPositionBuilderAtEnd(cg->b, inner);
    LLVMValueRef l = LLVMBuildPhi(cg->b, cg->ilong, "l");
    LLVMValueRef from_lane = LLVMBuildSelect(cg->b, LLVMBuildICmp(cg->b, LLVMIntULT, l, last, ""), l, last, "");
    LLVMValueRef x = LLVMBuildLoad2(cg->b, cg->f64, cg_elem(cg, src, LLVMBuildAdd(cg->b, src_row, from_lane, "")), "");
    LLVMBuildStore(cg->b, x, cg_elem(cg, dst, LLVMBuildAdd(cg->b, dst_row, l, "")));
    LLVMValueRef l1 = LLVMBuildAdd(cg->b, l, one, "");
    cg_plain_loop(cg, LLVMBuildCondBr(cg->b, LLVMBuildICmp(cg->b, LLVMIntEQ, l1, lanes, ""), latch, inner));
    LLVMAddIncoming(l, &zero, &outer, 1);
    LLVMAddIncoming(l, &l1, &inner, 1);

    LLVMPositionBuilderAtEnd(cg->b, latch);
    LLVMValueRef k1 = LLVMBuildAdd(cg->b, k, one, "");
    cg_plain_loop(cg, LLVMBuildCondBr(cg->b, LLVMBuildICmp(cg->b, LLVMIntEQ, k1, cg_ilong(cg, rows), ""), done, outer));
    LLVMAddIncoming(k, &zero, &from, 1);
    LLVMAddIncoming(k, &k1, &latch, 1);
    LLVMPositionBuilderAtEnd(cg->b, done);
}

/* Kernels of at least this many IR instructions run whole blocks (see cg_kernel): for
   smaller ones the scalar remainder costs less to compile than the tail's copies. Hot
   kernels from 100 (the 3-pendulum's Rhs, 247: its field 7.5-8.7 -> 6.8-7.0 ns/state, and
   coupled3's compile 40-42 -> 28-29 ms, blocked kernels skipping the O2 pipeline), cold ones
   (not optimized, cg_cold) from 400. */
enum { CG_BLOCKED_MIN_INSTS = 100, CG_BLOCKED_MIN_COLD_INSTS = 400 };
static bool cg_cold(const IrFn *f);
static bool cg_blocked(const IrFn *f) {
    return f->ninsts >= (cg_cold(f) ? CG_BLOCKED_MIN_COLD_INSTS : CG_BLOCKED_MIN_INSTS);
}

/* The loop's row arguments: the used input rows inputs_used[0..nin) of in, then the
   computed output rows outputs_used[0..nout) of out, row k at base + k * stride. */
static void cg_row_args(Cg *cg, LLVMValueRef *args, int nin, const int *inputs_used, int nout, const int *outputs_used,
                        LLVMValueRef in, LLVMValueRef out, LLVMValueRef stride) {
    for (int r = 0; r < nin + nout; r++) {
        bool is_in = r < nin;
        int k = is_in ? inputs_used[r] : outputs_used[r - nin];
        LLVMValueRef base = is_in ? in : out;
        args[r] = k == 0 ? base : cg_elem(cg, base, LLVMBuildNSWMul(cg->b, cg_ilong(cg, k), stride, ""));
    }
}

/* Which rows a kernel's loop reads and writes: the input rows it uses, and its output rows
   that are not constants (those the wrapper fills, once for the batch: a dense Jacobian's
   zeros, 3,042 of the 3,200 outputs of a 40-link chain's DPhi, stored per state took LLVM
   3.8 s to compile and the runtime as many stores). */
typedef struct CgRows {
    int nin, nout, nconst;
    int *inputs_used, *outputs_used, *const_rows;
    double *const_vals;
} CgRows;

/* The call of NAME.loop (lf, of type loop_ty) on the rows of in and out, row k at
   base + k * stride: a scalar loop takes each row (see cg_kernel), a blocked one the two
   bases and the stride. */
static void cg_call_loop(Cg *cg, LLVMValueRef lf, LLVMTypeRef loop_ty, LLVMValueRef count, LLVMValueRef params,
                         const CgRows *rows, bool blocked, LLVMValueRef in, LLVMValueRef out, LLVMValueRef stride) {
    if (blocked) {
        LLVMValueRef args[5] = {count, params, in, out, stride};
        LLVMBuildCall2(cg->b, loop_ty, lf, args, 5, "");
        return;
    }
    int nrows = rows->nin + rows->nout;
    LLVMValueRef *args = xalloc((size_t)(nrows + 2), sizeof(LLVMValueRef));
    args[0] = count, args[1] = params;
    cg_row_args(cg, args + 2, rows->nin, rows->inputs_used, rows->nout, rows->outputs_used, in, out, stride);
    LLVMBuildCall2(cg->b, loop_ty, lf, args, (unsigned)nrows + 2, "");
    free(args);
}

/* A private constant array of count values. */
static LLVMValueRef cg_const_array(Cg *cg, LLVMTypeRef elem, LLVMValueRef *vals, int count, const char *name) {
    LLVMValueRef init = LLVMConstArray(elem, vals, (unsigned)count);
    LLVMValueRef g = LLVMAddGlobal(cg->mod, LLVMTypeOf(init), name);
    LLVMSetInitializer(g, init);
    LLVMSetGlobalConstant(g, 1);
    LLVMSetLinkage(g, LLVMPrivateLinkage);
    return g;
}

/* Emits, at the builder's position in fn: out[rows[k] * n + b] = vals[k] for every k and
   b < n (the constant outputs, from two tables), and leaves the builder after it. */
static void cg_fill_rows(Cg *cg, LLVMValueRef fn, const IrFn *f, const CgRows *rows, LLVMValueRef out,
                         LLVMValueRef n) {
    if (rows->nconst == 0) return;
    LLVMValueRef *vals = xalloc((size_t)rows->nconst, sizeof(LLVMValueRef));
    size_t len = strlen(f->name) + 16;
    char *name = xalloc(len, 1);
    for (int k = 0; k < rows->nconst; k++) vals[k] = cg_ilong(cg, rows->const_rows[k]);
    snprintf(name, len, "%s.const_rows", f->name);
    LLVMValueRef row_table = cg_const_array(cg, cg->ilong, vals, rows->nconst, name);
    for (int k = 0; k < rows->nconst; k++) vals[k] = LLVMConstReal(cg->f64, rows->const_vals[k]);
    snprintf(name, len, "%s.const_vals", f->name);
    LLVMValueRef val_table = cg_const_array(cg, cg->f64, vals, rows->nconst, name);
    free(vals), free(name);

    LLVMBasicBlockRef from = LLVMGetInsertBlock(cg->b);
    LLVMBasicBlockRef outer = LLVMAppendBasicBlockInContext(cg->ctx, fn, "fill.row");
    LLVMBasicBlockRef inner = LLVMAppendBasicBlockInContext(cg->ctx, fn, "fill.state");
    LLVMBasicBlockRef latch = LLVMAppendBasicBlockInContext(cg->ctx, fn, "fill.next");
    LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(cg->ctx, fn, "fill.done");
    LLVMValueRef zero = cg_ilong(cg, 0), one = cg_ilong(cg, 1);
    LLVMBuildCondBr(cg->b, LLVMBuildICmp(cg->b, LLVMIntSGT, n, zero, ""), outer, done);

    LLVMPositionBuilderAtEnd(cg->b, outer);
    LLVMValueRef k = LLVMBuildPhi(cg->b, cg->ilong, "k");
    LLVMValueRef row = LLVMBuildLoad2(cg->b, cg->ilong, LLVMBuildInBoundsGEP2(cg->b, cg->ilong, row_table, &k, 1, ""), "");
    LLVMValueRef val = LLVMBuildLoad2(cg->b, cg->f64, cg_elem(cg, val_table, k), "");
    LLVMValueRef base = cg_elem(cg, out, LLVMBuildNSWMul(cg->b, row, n, ""));
    LLVMBuildBr(cg->b, inner);

    LLVMPositionBuilderAtEnd(cg->b, inner);
    LLVMValueRef b = LLVMBuildPhi(cg->b, cg->ilong, "b");
    LLVMBuildStore(cg->b, val, cg_elem(cg, base, b));
    LLVMValueRef b1 = LLVMBuildAdd(cg->b, b, one, "");
    LLVMBuildCondBr(cg->b, LLVMBuildICmp(cg->b, LLVMIntEQ, b1, n, ""), latch, inner);
    LLVMAddIncoming(b, &zero, &outer, 1);
    LLVMAddIncoming(b, &b1, &inner, 1);

    LLVMPositionBuilderAtEnd(cg->b, latch);
    LLVMValueRef k1 = LLVMBuildAdd(cg->b, k, one, "");
    LLVMBuildCondBr(cg->b, LLVMBuildICmp(cg->b, LLVMIntEQ, k1, cg_ilong(cg, rows->nconst), ""), done, outer);
    LLVMAddIncoming(k, &zero, &from, 1);
    LLVMAddIncoming(k, &k1, &latch, 1);
    LLVMPositionBuilderAtEnd(cg->b, done);
}

/* Larger padded copies for a blocked kernel's last block go on the heap. */
enum { CG_TAIL_STACK_BYTES = 64 << 10 };

/* count doubles from prt_xalloc (the runtime's checked allocation: on failure it says so and
   exits, as every allocation without an error path to its caller), and their release */
static LLVMValueRef cg_heap_alloc(Cg *cg, long count, const char *part, const char *kernel) {
    LLVMTypeRef params[3] = {cg->ilong, cg->ilong, cg->ptr};
    LLVMTypeRef ty = LLVMFunctionType(cg->ptr, params, 3, 0);
    LLVMValueRef fn = LLVMGetNamedFunction(cg->mod, "prt_xalloc");
    if (!fn) fn = LLVMAddFunction(cg->mod, "prt_xalloc", ty);
    char what[160];
    snprintf(what, sizeof what, "the %s of kernel %s", part, kernel);
    LLVMValueRef args[3] = {cg_ilong(cg, count), cg_ilong(cg, sizeof(double)),
                            LLVMBuildGlobalStringPtr(cg->b, what, "")};
    return LLVMBuildCall2(cg->b, ty, fn, args, 3, "tmp");
}

static void cg_heap_free(Cg *cg, LLVMValueRef p) {
    LLVMTypeRef params[1] = {cg->ptr};
    LLVMTypeRef ty = LLVMFunctionType(LLVMVoidTypeInContext(cg->ctx), params, 1, 0);
    LLVMValueRef fn = LLVMGetNamedFunction(cg->mod, "free");
    if (!fn) fn = LLVMAddFunction(cg->mod, "free", ty);
    LLVMBuildCall2(cg->b, ty, fn, &p, 1, "");
}

/* NAME(n, in, params, out): NAME.loop (lf, of type loop_ty) over the batch; for a blocked
   loop, the whole blocks in place and the n % 8 states left through one more block on
   padded copies; then the constant outputs. */
static void cg_wrapper(Cg *cg, const IrFn *f, LLVMValueRef lf, LLVMTypeRef loop_ty, const CgRows *rows,
                       bool blocked) {
    LLVMValueRef fn = LLVMAddFunction(cg->mod, f->name, cg->kernel_ty);
    cg_func_attrs(cg, fn);
    for (unsigned p = 1; p <= 3; p++) cg_ptr_param(cg, fn, p, p == 3);
    LLVMValueRef kn = LLVMGetParam(fn, 0), in = LLVMGetParam(fn, 1), params = LLVMGetParam(fn, 2),
                 out = LLVMGetParam(fn, 3);
    LLVMSetValueName2(kn, "n", 1);
    LLVMSetValueName2(in, "in", 2);
    LLVMSetValueName2(params, "params", 6);
    LLVMSetValueName2(out, "out", 3);
    LLVMValueRef zero = cg_ilong(cg, 0);
    LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(cg->ctx, fn, "entry");
    LLVMBasicBlockRef call = LLVMAppendBasicBlockInContext(cg->ctx, fn, "call");
    LLVMBasicBlockRef tail_check = blocked ? LLVMAppendBasicBlockInContext(cg->ctx, fn, "tail.check") : NULL;
    LLVMBasicBlockRef tail = blocked ? LLVMAppendBasicBlockInContext(cg->ctx, fn, "tail") : NULL;
    LLVMBasicBlockRef ret = LLVMAppendBasicBlockInContext(cg->ctx, fn, "ret");
    LLVMPositionBuilderAtEnd(cg->b, entry);
    if (!blocked) {
        LLVMBuildCondBr(cg->b, LLVMBuildICmp(cg->b, LLVMIntSGT, kn, cg_ilong(cg, 0), ""), call, ret);
        LLVMPositionBuilderAtEnd(cg->b, call);
        cg_call_loop(cg, lf, loop_ty, kn, params, rows, false, in, out, kn);
        LLVMBuildBr(cg->b, ret);
    } else { /* whole blocks in place; the n % 8 states left through padded copies */
        /* the tail's padded copies: ninputs rows of 8, then noutputs rows; on the stack when
           small, else on the heap (a 1000-link chain's DPhi has 2 million output rows) */
        long tmp_len = (long)(f->ninputs + f->noutputs) * CG_LANES;
        bool tmp_on_heap = tmp_len * (long)sizeof(double) > CG_TAIL_STACK_BYTES;
        LLVMValueRef tmp = tmp_on_heap ? NULL : LLVMBuildAlloca(cg->b, LLVMArrayType(cg->f64, (unsigned)tmp_len), "tmp");
        LLVMValueRef blocks = LLVMBuildLShr(cg->b, kn, cg_ilong(cg, CG_LANES_LOG2), "blocks");
        LLVMValueRef start = LLVMBuildNUWMul(cg->b, blocks, cg_ilong(cg, CG_LANES), "tail.start");
        LLVMValueRef rem = LLVMBuildAnd(cg->b, kn, cg_ilong(cg, CG_LANES - 1), "tail.n");
        LLVMValueRef positive = LLVMBuildICmp(cg->b, LLVMIntSGT, kn, cg_ilong(cg, 0), "");
        LLVMValueRef lanes = cg_ilong(cg, CG_LANES);
        LLVMBuildCondBr(cg->b, LLVMBuildAnd(cg->b, positive, LLVMBuildICmp(cg->b, LLVMIntNE, blocks, zero, ""), ""),
                        call, tail_check);

        LLVMPositionBuilderAtEnd(cg->b, call);
        cg_call_loop(cg, lf, loop_ty, LLVMBuildSub(cg->b, blocks, cg_ilong(cg, 1), ""), params, rows, true, in, out,
                     kn);
        LLVMBuildBr(cg->b, tail_check);

        LLVMPositionBuilderAtEnd(cg->b, tail_check);
        LLVMBuildCondBr(cg->b, LLVMBuildAnd(cg->b, positive, LLVMBuildICmp(cg->b, LLVMIntNE, rem, zero, ""), ""), tail,
                        ret);

        /* Every input row's last rem states into 8 lanes (the last state repeated in the lanes
           past rem, so that they compute on valid values), one block, and the first rem lanes
           of each output row back. */
        LLVMPositionBuilderAtEnd(cg->b, tail);
        if (tmp_on_heap) tmp = cg_heap_alloc(cg, tmp_len, "last block", f->name);
        LLVMValueRef last = LLVMBuildSub(cg->b, rem, cg_ilong(cg, 1), "");
        LLVMValueRef tmp_in = cg_elem(cg, tmp, zero), tmp_out = cg_elem(cg, tmp, cg_ilong(cg, f->ninputs * CG_LANES));
        cg_copy_rows(cg, fn, f->ninputs, lanes, last, tmp_in, lanes, zero, in, kn, start);
        cg_call_loop(cg, lf, loop_ty, zero, params, rows, true, tmp_in, tmp_out, lanes);
        cg_copy_rows(cg, fn, f->noutputs, rem, last, out, kn, start, tmp_out, lanes, zero);
        if (tmp_on_heap) cg_heap_free(cg, tmp);
        LLVMBuildBr(cg->b, ret);
    }
    LLVMPositionBuilderAtEnd(cg->b, ret);
    cg_fill_rows(cg, fn, f, rows, out, kn); /* after the tail's copy, which copies every row */
    LLVMBuildRetVoid(cg->b);
}

/* x in every lane of a block */
static LLVMValueRef cg_splat(Cg *cg, LLVMValueRef x) {
    if (LLVMIsConstant(x)) {
        LLVMValueRef lanes[CG_LANES];
        for (int l = 0; l < CG_LANES; l++) lanes[l] = x;
        return LLVMConstVector(lanes, CG_LANES);
    }
    LLVMValueRef one = LLVMBuildInsertElement(cg->b, LLVMGetPoison(cg->v8), x, LLVMConstInt(cg->i32, 0, 0), "");
    return LLVMBuildShuffleVector(cg->b, one, LLVMGetPoison(cg->v8), LLVMConstNull(LLVMVectorType(cg->i32, CG_LANES)),
                                  "");
}

/* op on blocks of 8: the intrinsic overloaded on <8 x double> where LLVM has one (it lowers
   to the scalar function's calls or instructions, lane by lane), else the scalar function
   called on each lane; either way each lane computes exactly what the scalar code does. */
static LLVMValueRef cg_call_block(Cg *cg, IrOp op, LLVMValueRef x, LLVMValueRef y) {
    if (!cg->vcallee[op] && !cg->vscalar[op]) {
        const char *intrinsic = op == IR_MIN ? "minnum" : op == IR_MAX ? "maxnum" : op == IR_POWI ? "powi" : ir_op_cfn[op];
        char name[32];
        snprintf(name, sizeof name, "llvm.%s", intrinsic);
        unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
        if (id) {
            LLVMTypeRef over[2] = {cg->v8, cg->i32};
            size_t nover = op == IR_POWI ? 2 : 1;
            cg->vcallee[op] = LLVMGetIntrinsicDeclaration(cg->mod, id, over, nover);
            cg->vcallee_ty[op] = LLVMIntrinsicGetType(cg->ctx, id, over, nover);
        } else {
            cg->vscalar[op] = true;
        }
    }
    if (cg->vcallee[op]) {
        LLVMValueRef args[2] = {x, y};
        return LLVMBuildCall2(cg->b, cg->vcallee_ty[op], cg->vcallee[op], args,
                              (unsigned)ir_op_nargs[op] + (op == IR_POWI), "");
    }
    LLVMValueRef r = LLVMGetPoison(cg->v8);
    for (int l = 0; l < CG_LANES; l++) {
        LLVMValueRef lane = LLVMConstInt(cg->i32, (unsigned long long)l, 0);
        LLVMValueRef xl = LLVMBuildExtractElement(cg->b, x, lane, "");
        LLVMValueRef yl = y ? LLVMBuildExtractElement(cg->b, y, lane, "") : NULL;
        r = LLVMBuildInsertElement(cg->b, r, cg_call(cg, op, xl, yl), lane, "");
    }
    return r;
}

/* Kernels no integrator or training step calls (sampling, projection, energy and constraint
   reports): compiled without optimization (`optnone`: the same IEEE operations, scalar, no
   vectorizing), which halves the examples' compile time (gyroscope 131 -> 68 ms,
   pendulum3 96 -> 40 in `physc simulate`) and costs their runs nothing measurable. */
static bool cg_cold(const IrFn *f) {
    static const char *const cold[] = {"Init", "V", "H", "Phi", "DPhi", "PhiDot", "DPhiDot", "MassV", NULL};
    for (int i = 0; cold[i]; i++)
        if (!strcmp(f->name, cold[i])) return true;
    return false;
}

/* The value of a computing instruction x (not a constant, input or parameter) from its
   operands' values a and c, on doubles or on blocks of 8. */
static LLVMValueRef cg_inst(Cg *cg, const IrInst *x, LLVMValueRef a, LLVMValueRef c, bool blocked) {
    LLVMValueRef zero = LLVMConstReal(cg->f64, 0), one = LLVMConstReal(cg->f64, 1), minus_one = LLVMConstReal(cg->f64, -1);
    if (blocked) zero = cg_splat(cg, zero), one = cg_splat(cg, one), minus_one = cg_splat(cg, minus_one);
    switch (x->op) {
    case IR_ADD: return LLVMBuildFAdd(cg->b, a, c, "");
    case IR_SUB: return LLVMBuildFSub(cg->b, a, c, "");
    case IR_MUL: return LLVMBuildFMul(cg->b, a, c, "");
    case IR_DIV: return LLVMBuildFDiv(cg->b, a, c, "");
    case IR_NEG: return LLVMBuildFNeg(cg->b, a, "");
    case IR_SIGN: { /* a > 0 ? 1 : a < 0 ? -1 : 0 (0 for 0, -0 and NaN) */
        LLVMValueRef neg = LLVMBuildSelect(cg->b, LLVMBuildFCmp(cg->b, LLVMRealOLT, a, zero, ""), minus_one, zero, "");
        return LLVMBuildSelect(cg->b, LLVMBuildFCmp(cg->b, LLVMRealOGT, a, zero, ""), one, neg, "");
    }
    case IR_POWI:
    case IR_POW:
    case IR_SQRT:
    case IR_EXP:
    case IR_LOG:
    case IR_SIN:
    case IR_COS:
    case IR_TAN:
    case IR_ASIN:
    case IR_ACOS:
    case IR_ATAN:
    case IR_ATAN2:
    case IR_SINH:
    case IR_COSH:
    case IR_TANH:
    case IR_ABS:
    case IR_MIN:
    case IR_MAX:
        if (x->op == IR_POWI) c = LLVMConstInt(cg->i32, (unsigned long long)x->imm, 1);
        return blocked ? cg_call_block(cg, x->op, a, c) : cg_call(cg, x->op, a, c);
    case IR_CONST:
    case IR_INPUT:
    case IR_PARAM:
    case IR_NOPS: break;
    }
    abort(); /* the caller's, or refused by ir_verify */
}

static bool cg_computes(IrOp op) { return op != IR_CONST && op != IR_INPUT && op != IR_PARAM; }

/* A blocked kernel of more than CG_SEGMENTED_MIN computing instructions is split into
   segments of CG_SEGMENT_INSTS, each a function of its own (NAME.block.K), called in turn on
   each block; a value one segment computes and a later one uses passes through a spill
   array. LLVM's instruction scheduler and register allocator take time growing faster than
   linearly with a function's size (one function: most of the time in
   ScheduleDAGTopologicalSort::DFS, SUnit::addPred and the greedy allocator's interference
   queries), so segments of a fixed size make the compile linear in the kernel. Measured on
   2-D chains (`make bench PARTS=scale`, a quiet machine): a 300-link chain's Field (32,636
   instructions) compiled in 7.0 s whole, 4.4 / 3.1 / 2.5 s in segments of 1000 / 500 / 250;
   its field costs 5.0 us a state whole and 5.1 in segments of 250. On a 30-link chain
   (3,206) segments gain nothing, hence the threshold; the cold kernels (cg_cold: no
   optimization, rarely called) are segmented from a lower one: a 1000-link chain's H, DPhi
   and PhiDot whole took 11 s of the instruction scheduler's reachability searches
   (ScheduleDAGTopologicalSort::DFS) where in segments its whole compile takes 5.6 s. */
enum { CG_SEGMENT_INSTS = 250, CG_SEGMENTED_MIN = 8000, CG_SEGMENTED_MIN_COLD = 2000, CG_SEGMENTED_MIN_OUTPUTS = 1024 };

static long cg_computing_insts(const IrFn *f) {
    long n = 0;
    for (int i = 0; i < f->ninsts; i++) n += cg_computes(f->insts[i].op);
    return n;
}

/* A kernel cut into segments, each a function of its own (cg_segments). */
static bool cg_segmented(const IrFn *f) {
    return cg_blocked(f) && (cg_computing_insts(f) > (cg_cold(f) ? CG_SEGMENTED_MIN_COLD : CG_SEGMENTED_MIN) ||
                             f->noutputs > CG_SEGMENTED_MIN_OUTPUTS);
}

/* Kernels that go through CG_LIGHT_PIPELINE in parts of their own (cg_partition): the
   blocked ones, already explicit vector code of 8 states; what the O2 pipeline would add to
   them (the loop vectorizer, unrolling) does not apply. (A cold kernel is optnone: any part
   will do for it.) */
static bool cg_light(const IrFn *f) { return cg_blocked(f) && !cg_cold(f); }

/* Past this many bytes a segmented kernel's spill array goes on the heap. */
enum { CG_SPILL_STACK_BYTES = 64 << 10 };

/* How a blocked kernel is cut into segments: seg_of[i] for each computing instruction (-1 for
   constants, inputs, parameters and uniform values, which each segment makes or loads
   itself), and the spill slot (8 doubles) of each value used past its own segment, or -1. A
   slot is reused once every segment that reads its value has ended. A uniform value is one
   of the parameters alone (1 / m): computed once a call, before the blocks, into its uniform
   slot (uni[i], or -1), 8 copies, where the blocks load it as they load a parameter (the
   3-pendulum's field divided by its three masses in every block). Only in optimized kernels
   with at most CG_UNIFORM_MAX of them: their computation is one function's straight-line
   code, whose code generation grows faster than linearly (a 1000-link chain's MinvP, 2,000
   divisions: its cold compile 0.35 -> 1.1 s), and a large system's per-block work dwarfs
   them anyway. */
typedef struct CgSegments {
    int nseg, nslots, nuni;
    int *seg_of, *slot, *uni;
} CgSegments;

enum { CG_UNIFORM_MAX = 256 };

static void cg_segments(const IrFn *f, CgSegments *sg) {
    int n = f->ninsts;
    sg->seg_of = xalloc((size_t)n + 1, sizeof(int));
    sg->slot = xalloc((size_t)n + 1, sizeof(int));
    sg->uni = xalloc((size_t)n + 1, sizeof(int));
    sg->nuni = 0;
    int *last_seg = xalloc((size_t)n + 1, sizeof(int));
    for (int i = 0; i < n; i++) {
        const IrInst *x = &f->insts[i];
        bool uniform = cg_computes(x->op);
        for (int k = 0; k < ir_op_nargs[x->op] && uniform; k++) {
            int o = k ? x->b : x->a;
            uniform = f->insts[o].op == IR_CONST || f->insts[o].op == IR_PARAM || sg->uni[o] >= 0;
        }
        sg->uni[i] = uniform ? sg->nuni++ : -1;
    }
    if (cg_cold(f) || sg->nuni > CG_UNIFORM_MAX) {
        for (int i = 0; i < n; i++) sg->uni[i] = -1;
        sg->nuni = 0;
    }
    long computed = 0;
    for (int i = 0; i < n; i++) {
        sg->seg_of[i] = cg_computes(f->insts[i].op) && sg->uni[i] < 0 ? (int)(computed++ / CG_SEGMENT_INSTS) : -1;
        last_seg[i] = sg->seg_of[i], sg->slot[i] = -1;
    }
    sg->nseg = cg_segmented(f) && computed > 0 ? (int)((computed - 1) / CG_SEGMENT_INSTS) + 1 : 1;
    if (sg->nseg == 1)
        for (int i = 0; i < n; i++) sg->seg_of[i] = last_seg[i] = sg->seg_of[i] < 0 ? -1 : 0;
    for (int j = 0; j < n; j++) {
        const IrInst *x = &f->insts[j];
        if (!cg_computes(x->op)) continue;
        int ops[2] = {x->a, x->b};
        for (int k = 0; k < 2; k++)
            if (ops[k] >= 0 && ops[k] < j && sg->seg_of[ops[k]] >= 0 && last_seg[ops[k]] < sg->seg_of[j])
                last_seg[ops[k]] = sg->seg_of[j];
    }
    /* the values whose last reader is segment k, as lists; slots freed when k has ended */
    int *ends = xalloc((size_t)sg->nseg, sizeof(int)), *next_end = xalloc((size_t)n + 1, sizeof(int));
    int *free_slots = xalloc((size_t)n + 1, sizeof(int)), nfree = 0;
    for (int k = 0; k < sg->nseg; k++) ends[k] = -1;
    sg->nslots = 0;
    for (int i = 0, k = -1; i < n; i++) {
        int si = sg->seg_of[i];
        if (si < 0) continue;
        for (; k < si; k++) /* entering segment k + 1: the slots read last in segment k are free */
            if (k >= 0)
                for (int e = ends[k]; e >= 0; e = next_end[e]) free_slots[nfree++] = sg->slot[e];
        if (last_seg[i] > si) {
            sg->slot[i] = nfree ? free_slots[--nfree] : sg->nslots++;
            next_end[i] = ends[last_seg[i]], ends[last_seg[i]] = i;
        }
    }
    free(last_seg), free(ends), free(next_end), free(free_slots);
}

/* The outputs of each computed value of f, as lists: first_output[value], next_output[output]
   (-1 ends a list; constants, inputs and parameters have none). Freed by the caller. */
static void cg_output_lists(const IrFn *f, int **first_output, int **next_output) {
    int *first = xalloc((size_t)f->ninsts + 1, sizeof(int)), *next = xalloc((size_t)f->noutputs + 1, sizeof(int));
    for (int i = 0; i < f->ninsts; i++) first[i] = -1;
    for (int o = f->noutputs - 1; o >= 0; o--) {
        int val = f->outputs[o];
        if (!cg_computes(f->insts[val].op)) continue;
        next[o] = first[val];
        first[val] = o;
    }
    *first_output = first, *next_output = next;
}

/* Value j of a blocked kernel made in segment k (see cg_blocked_body): a constant or a
   parameter in every lane, an input row's block, a uniform value from its slot, or an
   earlier segment's value from its spill slot. */
static LLVMValueRef cg_value(Cg *cg, const IrFn *f, int j, const CgSegments *sg, int k, LLVMValueRef *v, int *made_in,
                             LLVMValueRef params, LLVMValueRef in, LLVMValueRef stride, LLVMValueRef at, LLVMValueRef uni,
                             LLVMValueRef sp) {
    const IrInst *x = &f->insts[j];
    LLVMValueRef r;
    if (x->op == IR_CONST) {
        r = cg_splat(cg, LLVMConstReal(cg->f64, x->num));
    } else if (x->op == IR_PARAM) {
        r = cg_splat(cg, LLVMBuildLoad2(cg->b, cg->f64, cg_elem(cg, params, cg_ilong(cg, x->imm)), ""));
    } else {
        LLVMValueRef addr = x->op == IR_INPUT
            ? cg_elem(cg, in, LLVMBuildAdd(cg->b, LLVMBuildNSWMul(cg->b, cg_ilong(cg, x->imm), stride, ""), at, ""))
            : sg->uni[j] >= 0 ? cg_elem(cg, uni, cg_ilong(cg, (long long)sg->uni[j] * CG_LANES))
                              : cg_elem(cg, sp, cg_ilong(cg, (long long)sg->slot[j] * CG_LANES));
        r = LLVMBuildLoad2(cg->b, cg->v8, addr, "");
        LLVMSetAlignment(r, sizeof(double));
    }
    v[j] = r, made_in[j] = k;
    return r;
}

/* The body of a blocked kernel: NAME.block (one segment) or NAME.block.0, .1, ... Each takes
   (params, in, out, stride, at, uni[, spill]) and computes its instructions on the block of 8
   states at `at`, row k at base + k * stride; returns the functions in seg_fns. */
/* Segments lo .. hi - 1 of the kernel's body are defined in this module; with the kernel's
   wrapper here too (lo = 0), the others are declared, defined by the modules of its other
   pieces (split: the segments are then external, for the JIT to link them). */
static void cg_blocked_body(Cg *cg, const IrFn *f, const CgSegments *sg, LLVMValueRef *seg_fns, LLVMTypeRef *seg_ty,
                            int lo, int hi, bool split) {
    int n = f->ninsts;
    bool spill = sg->nseg > 1;
    LLVMTypeRef block_params[7] = {cg->ptr, cg->ptr, cg->ptr, cg->ilong, cg->ilong, cg->ptr, cg->ptr};
    *seg_ty = LLVMFunctionType(LLVMVoidTypeInContext(cg->ctx), block_params, spill ? 7 : 6, 0);
    LLVMValueRef *v = xcalloc((size_t)n + 1, sizeof *v);
    int *made_in = xalloc((size_t)n + 1, sizeof(int)); /* the segment v[i] belongs to */
    for (int i = 0; i < n; i++) made_in[i] = -1;
    int *first_output, *next_output;
    cg_output_lists(f, &first_output, &next_output);
    size_t namelen = strlen(f->name) + 32;
    char *name = xalloc(namelen, 1);
    for (int k = 0, i = 0; k < sg->nseg; k++) {
        if (spill) snprintf(name, namelen, "%s.block.%d", f->name, k);
        else snprintf(name, namelen, "%s.block", f->name);
        /* (two pieces of a kernel can share a module: one declares what the other defines) */
        LLVMValueRef fn = LLVMGetNamedFunction(cg->mod, name);
        if (k < lo || k >= hi) { /* another piece's: past its instructions */
            seg_fns[k] = lo == 0 ? (fn ? fn : LLVMAddFunction(cg->mod, name, *seg_ty)) : NULL;
            while (i < n && sg->seg_of[i] <= k) i++;
            continue;
        }
        fn = seg_fns[k] = fn ? fn : LLVMAddFunction(cg->mod, name, *seg_ty);
        LLVMSetLinkage(fn, split ? LLVMExternalLinkage : LLVMInternalLinkage);
        cg_func_attrs(cg, fn);
        cg_attr(cg, fn, LLVMAttributeFunctionIndex, "noinline"); /* one function would be one large again */
        if (cg_cold(f)) cg_attr(cg, fn, LLVMAttributeFunctionIndex, "optnone");
        cg_ptr_param(cg, fn, 0, false), cg_ptr_param(cg, fn, 1, false), cg_ptr_param(cg, fn, 2, true);
        cg_ptr_param(cg, fn, 5, false);
        if (spill) cg_attr(cg, fn, 7, "noalias"), cg_attr(cg, fn, 7, "nocapture");
        LLVMValueRef params = LLVMGetParam(fn, 0), in = LLVMGetParam(fn, 1), out = LLVMGetParam(fn, 2),
                     stride = LLVMGetParam(fn, 3), at = LLVMGetParam(fn, 4), uni = LLVMGetParam(fn, 5),
                     sp = spill ? LLVMGetParam(fn, 6) : NULL;
        LLVMPositionBuilderAtEnd(cg->b, LLVMAppendBasicBlockInContext(cg->ctx, fn, "entry"));
        #define ROW_ADDR(base, k) cg_elem(cg, base, LLVMBuildAdd(cg->b, LLVMBuildNSWMul(cg->b, cg_ilong(cg, k), stride, ""), at, ""))
        #define SLOT_ADDR(s) cg_elem(cg, sp, cg_ilong(cg, (long long)(s) * CG_LANES))
        /* v[j] in this segment: made (a constant, a parameter), loaded (an input, or a value of
           an earlier segment from its slot), or already there */
        #define VALUE(j) (made_in[j] == k ? v[j] : cg_value(cg, f, j, sg, k, v, made_in, params, in, stride, at, uni, sp))
        for (; i < n && sg->seg_of[i] <= k; i++) {
            const IrInst *x = &f->insts[i];
            if (sg->seg_of[i] < 0) continue; /* made where used */
            LLVMValueRef a = x->a >= 0 && x->a < i ? VALUE(x->a) : NULL;
            LLVMValueRef c = x->b >= 0 && x->b < i && ir_op_nargs[x->op] > 1 ? VALUE(x->b) : NULL;
            v[i] = cg_inst(cg, x, a, c, true), made_in[i] = k;
            /* an output is stored as soon as it is computed, so that it need not stay live to
               the end of the body (a large kernel's outputs would otherwise all be live at once) */
            for (int o = first_output[i]; o >= 0; o = next_output[o])
                LLVMSetAlignment(LLVMBuildStore(cg->b, v[i], ROW_ADDR(out, o)), sizeof(double));
            if (sg->slot[i] >= 0) LLVMSetAlignment(LLVMBuildStore(cg->b, v[i], SLOT_ADDR(sg->slot[i])), sizeof(double));
        }
        if (k == sg->nseg - 1) /* outputs that are inputs, parameters or uniform (constants: the wrapper's) */
            for (int o = 0; o < f->noutputs; o++) {
                int val = f->outputs[o];
                IrOp op = f->insts[val].op;
                if (op == IR_INPUT || op == IR_PARAM || sg->uni[val] >= 0)
                    LLVMSetAlignment(LLVMBuildStore(cg->b, VALUE(val), ROW_ADDR(out, o)), sizeof(double));
            }
        #undef VALUE
        #undef SLOT_ADDR
        #undef ROW_ADDR
        LLVMBuildRetVoid(cg->b);
    }
    free(name), free(v), free(made_in), free(first_output), free(next_output);
}
/* The uniform values of a blocked kernel (CgSegments), computed on doubles in NAME.loop's
   entry, each stored 8 times into its slot of an array that the blocks read: its address (on
   the stack, or past CG_SPILL_STACK_BYTES on the heap: *on_heap), or a null pointer when there
   are none. */
static LLVMValueRef cg_uniform_values(Cg *cg, const IrFn *f, const CgSegments *sg, LLVMValueRef params, bool *on_heap) {
    *on_heap = false;
    if (sg->nuni == 0) return LLVMConstPointerNull(cg->ptr);
    long len = (long)sg->nuni * CG_LANES;
    LLVMValueRef uni;
    *on_heap = len * (long)sizeof(double) > CG_SPILL_STACK_BYTES;
    if (*on_heap) {
        uni = cg_heap_alloc(cg, len, "uniform values", f->name);
    } else {
        uni = LLVMBuildAlloca(cg->b, LLVMArrayType(cg->f64, (unsigned)len), "uni");
        LLVMSetAlignment(uni, CG_LANES * sizeof(double));
    }
    LLVMValueRef *v = xcalloc((size_t)f->ninsts + 1, sizeof *v);
    for (int i = 0; i < f->ninsts; i++) {
        const IrInst *x = &f->insts[i];
        if (x->op == IR_CONST) v[i] = LLVMConstReal(cg->f64, x->num);
        else if (x->op == IR_PARAM) v[i] = LLVMBuildLoad2(cg->b, cg->f64, cg_elem(cg, params, cg_ilong(cg, x->imm)), "");
        if (sg->uni[i] < 0) continue;
        v[i] = cg_inst(cg, x, v[x->a], ir_op_nargs[x->op] > 1 ? v[x->b] : NULL, false);
        LLVMValueRef st = LLVMBuildStore(cg->b, cg_splat(cg, v[i]), cg_elem(cg, uni, cg_ilong(cg, (long long)sg->uni[i] * CG_LANES)));
        LLVMSetAlignment(st, sizeof(double));
    }
    free(v);
    return uni;
}

/* Piece `piece` of npieces of a kernel's segments (cg_pieces): piece 0 has the wrapper and
   the loop over the blocks. */
static void cg_piece_range(int nseg, int piece, int npieces, int *lo, int *hi) {
    *lo = (int)((long)piece * nseg / npieces), *hi = (int)((long)(piece + 1) * nseg / npieces);
}

/* A kernel is its loop NAME.loop and its wrapper NAME (cg_wrapper). Two forms:
   - scalar (small kernels): NAME.loop(n, params, rows...) runs states 0 .. n - 1 on
     doubles, one noalias pointer per used input row and per output row, and LLVM's loop
     vectorizer vectorizes it across states;
   - blocked (CG_BLOCKED_MIN_INSTS instructions or more, CG_BLOCKED_MIN_COLD_INSTS for cold
     kernels): NAME.loop(blocks - 1, params, in, out, stride) runs whole blocks of 8
     states, each IR value an <8 x double>, row k at base + k * stride, calling the body's
     segments (cg_blocked_body) on each. The vectors
     are explicit, and the body is straight-line code outside any loop: the loop vectorizer's
     analysis of a loop with a pointer per row grew with the square of the rows (a 100-link
     chain's Field: 2.8 s of its 3.4 s of optimization), and loop load elimination and store
     promotion with the square of the accesses. There is no remainder: NAME runs the n % 8
     states left through one block on padded copies.
   A kernel in pieces (cg_pieces): piece 0 is all this with its range of the segments, the
   others their ranges alone. */
static void cg_kernel(Cg *cg, const IrFn *f, int piece, int npieces) {
    if (piece > 0) { /* segments alone */
        CgSegments sg;
        cg_segments(f, &sg);
        LLVMValueRef *seg_fns = xcalloc((size_t)sg.nseg + 1, sizeof(LLVMValueRef));
        LLVMTypeRef seg_ty;
        int lo, hi;
        cg_piece_range(sg.nseg, piece, npieces, &lo, &hi);
        if (lo < hi) cg_blocked_body(cg, f, &sg, seg_fns, &seg_ty, lo, hi, true);
        free(seg_fns), free(sg.seg_of), free(sg.slot), free(sg.uni);
        return;
    }
    /* The input arrays the kernel reads, each once; the outputs it computes. */
    int *row_of_input = xalloc((size_t)(f->ninputs + 1), sizeof(int));
    CgRows rows = {0, 0, 0, xalloc((size_t)(f->ninputs + 1), sizeof(int)), xalloc((size_t)(f->noutputs + 1), sizeof(int)),
                   xalloc((size_t)(f->noutputs + 1), sizeof(int)), xalloc((size_t)(f->noutputs + 1), sizeof(double))};
    for (int i = 0; i < f->ninputs; i++) row_of_input[i] = -1;
    for (int i = 0; i < f->ninsts; i++) {
        const IrInst *x = &f->insts[i];
        if (x->op == IR_INPUT && row_of_input[x->imm] < 0) {
            row_of_input[x->imm] = rows.nin;
            rows.inputs_used[rows.nin++] = x->imm;
        }
    }
    int *slot_of_output = xalloc((size_t)(f->noutputs + 1), sizeof(int));
    for (int o = 0; o < f->noutputs; o++) {
        const IrInst *x = &f->insts[f->outputs[o]];
        slot_of_output[o] = x->op == IR_CONST ? -1 : rows.nout;
        if (x->op == IR_CONST) rows.const_rows[rows.nconst] = o, rows.const_vals[rows.nconst++] = x->num;
        else rows.outputs_used[rows.nout++] = o;
    }
    int nin = rows.nin, nrows = nin + rows.nout;
    bool blocked = cg_blocked(f);

    int nlp = blocked ? 5 : nrows + 2;
    LLVMTypeRef *loop_params = xalloc((size_t)nlp, sizeof(LLVMTypeRef));
    loop_params[0] = cg->ilong;
    for (int r = 1; r < nlp; r++) loop_params[r] = cg->ptr;
    if (blocked) loop_params[4] = cg->ilong; /* the stride */
    LLVMTypeRef loop_ty = LLVMFunctionType(LLVMVoidTypeInContext(cg->ctx), loop_params, (unsigned)nlp, 0);
    size_t namelen = strlen(f->name) + sizeof ".loop";
    char *loop_name = xalloc(namelen, 1);
    snprintf(loop_name, namelen, "%s.loop", f->name);
    LLVMValueRef lf = LLVMAddFunction(cg->mod, loop_name, loop_ty);
    LLVMSetLinkage(lf, LLVMInternalLinkage);
    cg_func_attrs(cg, lf);
    cg_attr(cg, lf, LLVMAttributeFunctionIndex, "noinline"); /* inlining would lose the noalias rows */
    if (cg_cold(f)) cg_attr(cg, lf, LLVMAttributeFunctionIndex, "optnone");
    if (blocked) {
        cg_ptr_param(cg, lf, 1, false), cg_ptr_param(cg, lf, 2, false), cg_ptr_param(cg, lf, 3, true);
    } else {
        for (int r = 0; r <= nrows; r++) cg_ptr_param(cg, lf, (unsigned)r + 1, r > nin);
    }
    LLVMValueRef n = LLVMGetParam(lf, 0), params = LLVMGetParam(lf, 1);
    LLVMBasicBlockRef pre = LLVMAppendBasicBlockInContext(cg->ctx, lf, "pre");
    LLVMBasicBlockRef loop = LLVMAppendBasicBlockInContext(cg->ctx, lf, "loop");
    LLVMBasicBlockRef exit = LLVMAppendBasicBlockInContext(cg->ctx, lf, "exit");
    LLVMValueRef b = NULL, spill = NULL, uni = NULL;
    bool spill_on_heap = false, uni_on_heap = false;
    if (blocked) {
        /* NAME.loop: for each block b, NAME.block(params, in, out, stride, 8 b), or each
           segment in turn with the spill array */
        CgSegments sg;
        cg_segments(f, &sg);
        LLVMValueRef *seg_fns = xalloc((size_t)sg.nseg, sizeof(LLVMValueRef));
        LLVMTypeRef seg_ty;
        int lo, hi;
        cg_piece_range(sg.nseg, 0, npieces, &lo, &hi);
        cg_blocked_body(cg, f, &sg, seg_fns, &seg_ty, lo, hi, npieces > 1);
        LLVMPositionBuilderAtEnd(cg->b, pre);
        uni = cg_uniform_values(cg, f, &sg, params, &uni_on_heap);
        if (sg.nseg > 1) {
            long len = (long)sg.nslots * CG_LANES;
            spill_on_heap = len * (long)sizeof(double) > CG_SPILL_STACK_BYTES;
            if (spill_on_heap) {
                spill = cg_heap_alloc(cg, len, "spill array", f->name);
            } else {
                spill = LLVMBuildAlloca(cg->b, LLVMArrayType(cg->f64, (unsigned)(len ? len : 1)), "spill");
                LLVMSetAlignment(spill, CG_LANES * sizeof(double));
            }
        }
        LLVMBuildBr(cg->b, loop);
        LLVMPositionBuilderAtEnd(cg->b, loop);
        b = LLVMBuildPhi(cg->b, cg->ilong, "b");
        LLVMValueRef args[7] = {params, LLVMGetParam(lf, 2), LLVMGetParam(lf, 3), LLVMGetParam(lf, 4),
                                LLVMBuildNUWMul(cg->b, b, cg_ilong(cg, CG_LANES), "at"), uni, spill};
        for (int k = 0; k < sg.nseg; k++) LLVMBuildCall2(cg->b, seg_ty, seg_fns[k], args, spill ? 7 : 6, "");
        n = LLVMBuildNUWAdd(cg->b, n, cg_ilong(cg, 1), "blocks"); /* n is blocks - 1 */
        free(seg_fns), free(sg.seg_of), free(sg.slot), free(sg.uni);
    } else {
        LLVMValueRef *param = xcalloc((size_t)f->nparams + 1, sizeof *param);
        LLVMValueRef *v = xcalloc((size_t)f->ninsts + 1, sizeof *v);
        int *first_output, *next_output;
        cg_output_lists(f, &first_output, &next_output);
        LLVMPositionBuilderAtEnd(cg->b, pre);
        for (int i = 0; i < f->ninsts; i++) {
            const IrInst *x = &f->insts[i];
            if (x->op != IR_PARAM || param[x->imm]) continue;
            param[x->imm] = LLVMBuildLoad2(cg->b, cg->f64, cg_elem(cg, params, cg_ilong(cg, x->imm)), "");
        }
        LLVMBuildBr(cg->b, loop);
        LLVMPositionBuilderAtEnd(cg->b, loop);
        b = LLVMBuildPhi(cg->b, cg->ilong, "b");
        for (int i = 0; i < f->ninsts; i++) {
            const IrInst *x = &f->insts[i];
            LLVMValueRef a = x->a >= 0 && x->a < i ? v[x->a] : NULL;
            LLVMValueRef c = x->b >= 0 && x->b < i ? v[x->b] : NULL;
            if (x->op == IR_CONST) v[i] = LLVMConstReal(cg->f64, x->num);
            else if (x->op == IR_INPUT) v[i] = LLVMBuildLoad2(cg->b, cg->f64, cg_elem(cg, LLVMGetParam(lf, 2 + (unsigned)row_of_input[x->imm]), b), "");
            else if (x->op == IR_PARAM) v[i] = param[x->imm];
            else v[i] = cg_inst(cg, x, a, c, false);
            /* each output stored as soon as computed, as in the blocked body */
            for (int o = first_output[i]; o >= 0; o = next_output[o])
                LLVMBuildStore(cg->b, v[i], cg_elem(cg, LLVMGetParam(lf, 2 + (unsigned)(nin + slot_of_output[o])), b));
        }
        for (int o = 0; o < f->noutputs; o++) { /* inputs and parameters (constants: the wrapper's) */
            IrOp op = f->insts[f->outputs[o]].op;
            if (op == IR_INPUT || op == IR_PARAM)
                LLVMBuildStore(cg->b, v[f->outputs[o]], cg_elem(cg, LLVMGetParam(lf, 2 + (unsigned)(nin + slot_of_output[o])), b));
        }
        free(param), free(v), free(first_output), free(next_output);
    }
    LLVMValueRef next = LLVMBuildNUWAdd(cg->b, b, cg_ilong(cg, 1), "b.next");
    LLVMValueRef latch = LLVMBuildCondBr(cg->b, LLVMBuildICmp(cg->b, LLVMIntEQ, next, n, ""), exit, loop);
    if (blocked) cg_plain_loop(cg, latch); /* already vectors */
    LLVMValueRef zero_l = cg_ilong(cg, 0);
    LLVMAddIncoming(b, &zero_l, &pre, 1);
    LLVMAddIncoming(b, &next, &loop, 1);
    LLVMPositionBuilderAtEnd(cg->b, exit);
    if (spill_on_heap) cg_heap_free(cg, spill);
    if (uni_on_heap) cg_heap_free(cg, uni);
    LLVMBuildRetVoid(cg->b);

    cg_wrapper(cg, f, lf, loop_ty, &rows, blocked);

    free(loop_name);
    free(loop_params);
    free(row_of_input), free(slot_of_output);
    free(rows.inputs_used), free(rows.outputs_used), free(rows.const_rows), free(rows.const_vals);
}

/* The host target machine (CPU name and features of this machine) at opt_level. Its
   objects are linked by LLJIT's JITLink layer, so they are made the way LLJIT makes its
   own: position-independent code, small code model (calls to the runtime go through
   stubs that JITLink builds). */
static LLVMTargetMachineRef cg_host_tm(int opt_level, const char *cpu, const char *features, char **triple_out,
                                       char *err, size_t errlen) {
    char *triple = LLVMGetDefaultTargetTriple();
    LLVMTargetRef target;
    char *msg = NULL;
    if (LLVMGetTargetFromTriple(triple, &target, &msg)) {
        cg_errf(err, errlen, "LLVM: no target for %s: %s", triple, msg ? msg : "");
        LLVMDisposeMessage(msg);
        LLVMDisposeMessage(triple);
        return NULL;
    }
    LLVMDisposeMessage(msg);
    static const LLVMCodeGenOptLevel level[] = {LLVMCodeGenLevelNone, LLVMCodeGenLevelLess, LLVMCodeGenLevelDefault,
                                                LLVMCodeGenLevelAggressive};
    LLVMTargetMachineRef tm = LLVMCreateTargetMachine(target, triple, cpu, features, level[opt_level],
                                                      LLVMRelocPIC, LLVMCodeModelSmall);
    if (!tm) {
        cg_errf(err, errlen, "LLVM: cannot make a target machine for %s (%s)", triple, cpu);
        LLVMDisposeMessage(triple);
        return NULL;
    }
    *triple_out = triple;
    return tm;
}

/* The IR passes for a part of blocked kernels (cg_light): their straight-line code was
   simplified and CSE'd by physc (compiler/opt.c) and is explicit vector code already, so the
   O2 pipeline found little more and took as long as the code generation (a 300-link chain's
   Field: 1.4 s of passes, 0.09 s with these, the field as fast; the gyroscope's whole
   compile 81 -> 50-55 ms, its field as fast). */
#define CG_LIGHT_PIPELINE "function(instcombine<no-verify-fixpoint>,early-cse)"

/* The IR passes for the other parts at -O2 and up: small hot kernels (under
   CG_BLOCKED_MIN_INSTS, scalar loops over the states) and the cold ones (optnone: no pass
   touches them). What the default<O2> pipeline does for such a loop is canonicalize it
   (rotate, hoist the rows' addresses, simplify the induction variable), vectorize it and
   clean up; its other passes (inlining, its many function and loop passes run to a fixpoint)
   found nothing more and were most of such a part's time: the gyroscope's part of 613
   instructions 41-48 -> 28-32 ms; whole JITs (medians of 9) pendulum3 27.8 -> 18.2 ms,
   pendulum5 38.5 -> 26.4, pendulum1 25.6 -> 19.5; the kernels as fast (gradV and the small
   fields of the examples within the timing noise). */
#define CG_SMALL_PIPELINE                                                                                              \
    "function(instcombine<no-verify-fixpoint>,early-cse,simplifycfg,loop-simplify,lcssa,loop(loop-rotate),"           \
    "loop-mssa(licm),loop(indvars),loop-vectorize,instcombine<no-verify-fixpoint>,simplifycfg)"

/* A kernel, or one of the npieces pieces of its segments (cg_pieces) */
typedef struct CgPiece {
    IrFn *f;
    int piece, npieces;
} CgPiece;

/* Builds, verifies and optimizes (for tm) the module of the kernels in ctx: CG_LIGHT_PIPELINE
   when light, else CG_SMALL_PIPELINE at -O2 and up, the O<opt_level> pipeline below. NULL on
   failure. */
static LLVMModuleRef cg_module(LLVMContextRef ctx, LLVMTargetMachineRef tm, const char *triple, const char *cpu,
                               const char *features, const CgPiece *pieces, int npieces, int opt_level, bool light,
                               char *err, size_t errlen) {
    LLVMModuleRef mod = LLVMModuleCreateWithNameInContext("physc_kernels", ctx);
    LLVMSetTarget(mod, triple);
    LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
    LLVMSetModuleDataLayout(mod, td);
    LLVMDisposeTargetData(td);

    Cg cg = {.ctx = ctx, .mod = mod, .cpu = cpu, .features = features};
    cg.b = LLVMCreateBuilderInContext(ctx);
    cg.f64 = LLVMDoubleTypeInContext(ctx);
    cg.i32 = LLVMInt32TypeInContext(ctx);
    cg.ilong = LLVMIntTypeInContext(ctx, sizeof(long) * CHAR_BIT);
    cg.ptr = LLVMPointerType(cg.f64, 0); /* the opaque ptr in LLVM 15+, double* before */
    cg.v8 = LLVMVectorType(cg.f64, CG_LANES);
    LLVMTypeRef params[4] = {cg.ilong, cg.ptr, cg.ptr, cg.ptr};
    cg.kernel_ty = LLVMFunctionType(LLVMVoidTypeInContext(ctx), params, 4, 0);
    for (int i = 0; i < npieces; i++) cg_kernel(&cg, pieces[i].f, pieces[i].piece, pieces[i].npieces);
    LLVMDisposeBuilder(cg.b);

    char *msg = NULL;
    if (LLVMVerifyModule(mod, LLVMReturnStatusAction, &msg)) {
        /* A bug in this file, not in the kernels (they passed ir_verify). */
        fprintf(stderr, "physc: internal error: LLVM IR of the kernels does not verify:\n%s\n", msg);
        LLVMDumpModule(mod);
        cg_errf(err, errlen, "internal error: generated LLVM IR does not verify: %s", msg);
        LLVMDisposeMessage(msg);
        LLVMDisposeModule(mod);
        return NULL;
    }
    LLVMDisposeMessage(msg);

    char pipeline[32];
    snprintf(pipeline, sizeof pipeline, "default<O%d>", opt_level);
    const char *passes = light ? CG_LIGHT_PIPELINE : opt_level >= 2 ? CG_SMALL_PIPELINE : pipeline;
    LLVMPassBuilderOptionsRef opts = LLVMCreatePassBuilderOptions();
    /* The batch loop is what vectorizes; SLP (packing within one state) finds little
       more and costs a third of the compile time (see cg_init). */
    LLVMPassBuilderOptionsSetLoopVectorization(opts, opt_level >= 2);
    LLVMPassBuilderOptionsSetLoopInterleaving(opts, opt_level >= 2);
    LLVMPassBuilderOptionsSetLoopUnrolling(opts, opt_level >= 2);
    LLVMPassBuilderOptionsSetSLPVectorization(opts, 0);
    bool failed = cg_failed(LLVMRunPasses(mod, passes, tm, opts), "optimizing", err, errlen);
    LLVMDisposePassBuilderOptions(opts);
    if (failed) {
        LLVMDisposeModule(mod);
        return NULL;
    }
    if (getenv("PHYSC_DUMP_LLVM")) LLVMDumpModule(mod); /* the optimized IR, to stderr (docs/runtime-abi.md) */
    return mod;
}

/* ---- Parallel compilation: one part of the kernels per thread ---- */

typedef struct CgPart {
    CgPiece *pieces; /* this part's kernels and pieces of kernels */
    int npieces, opt_level;
    bool light; /* blocked kernels: CG_LIGHT_PIPELINE */
    const char *cpu, *features;
    LLVMMemoryBufferRef obj; /* the part's object file, on success */
    char err[512];
} CgPart;

/* Builds, optimizes and compiles one part to an object file, in a context of its own. */
static int cg_part_compile(void *arg) {
    CgPart *p = arg;
    char *triple = NULL;
    LLVMTargetMachineRef tm = cg_host_tm(p->opt_level, p->cpu, p->features, &triple, p->err, sizeof p->err);
    if (!tm) return 1;
    LLVMContextRef ctx = LLVMContextCreate();
    LLVMModuleRef mod =
        cg_module(ctx, tm, triple, p->cpu, p->features, p->pieces, p->npieces, p->opt_level, p->light, p->err, sizeof p->err);
    if (mod) {
        char *msg = NULL;
        if (LLVMTargetMachineEmitToMemoryBuffer(tm, mod, LLVMObjectFile, &msg, &p->obj)) {
            cg_errf(p->err, sizeof p->err, "LLVM: code generation failed: %s", msg ? msg : "");
            p->obj = NULL;
        }
        LLVMDisposeMessage(msg);
        LLVMDisposeModule(mod);
    }
    LLVMContextDispose(ctx);
    LLVMDisposeTargetMachine(tm);
    LLVMDisposeMessage(triple);
    return p->obj ? 0 : 1;
}

/* Below this many IR instructions in all, one thread compiles everything: a thread, a
   context and a target machine more cost more than they save. */
enum { CG_PARALLEL_MIN_INSTS = 400, CG_MAX_WORKERS = 4, CG_MAX_PARTS = 2 * CG_MAX_WORKERS };

/* How many workers (threads, each compiling its kernels as up to two parts: the light ones
   and the others): one per online core, up to CG_MAX_WORKERS and nfns; one when the program
   is small or the optimized IR is to be dumped (one dump, not interleaved ones). */
static int cg_nworkers(IrFn *const *fns, int nfns) {
    long total = 0;
    for (int i = 0; i < nfns; i++) total += fns[i]->ninsts;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (total < CG_PARALLEL_MIN_INSTS || cores < 2 || getenv("PHYSC_DUMP_LLVM")) return nfns > 0 ? 1 : 0;
    int n = cores < CG_MAX_WORKERS ? (int)cores : CG_MAX_WORKERS;
    return n < nfns ? n : nfns;
}

/* A kernel's share of a part's compile time, roughly: its instructions, twice over when
   the vectorizer also makes a scalar remainder of its loop (not for blocked kernels, nor for
   cold ones, which are not optimized), and its input rows and computed
   output rows (their addresses, stores and copies; constant outputs are one fill loop over a
   table, however many: a chain's DPhi has C x N of them). Fitted to the gyroscope's parts. */
static long cg_cost(const IrFn *f) {
    long rows = f->ninputs;
    for (int o = 0; o < f->noutputs; o++) rows += f->insts[f->outputs[o]].op != IR_CONST;
    return (long)f->ninsts * (cg_blocked(f) || cg_cold(f) ? 1 : 2) + 2L * rows;
}

/* What a part through the O2 pipeline costs before its first kernel, in cg_cost's units: the
   pipeline's fixed work took 20-40 ms for the gyroscope's two small optimized kernels, as
   much as 600 instructions of cold kernels. */
enum { CG_O2_PART_COST = 300 };

/* Deals the kernels to nworkers workers of about equal cost: costliest first, each to the
   worker it adds least to (a worker's first kernel for the O2 pipeline also brings that
   pipeline's fixed cost; cold kernels go to a worker's light part when it has one, so they
   never bring it). worker_of[i] is piece i's worker (cg_pieces). */
static void cg_partition(const CgPiece *pieces, int npieces, int nworkers, int *worker_of) {
    long load[CG_MAX_WORKERS] = {0};
    bool optimized[CG_MAX_WORKERS] = {false};
    bool *done = xcalloc((size_t)npieces + 1, sizeof *done);
    long *cost = xalloc((size_t)npieces + 1, sizeof *cost); /* once each: a chain's DPhi has millions of outputs */
    for (int i = 0; i < npieces; i++) cost[i] = cg_cost(pieces[i].f) / pieces[i].npieces;
    for (int k = 0; k < npieces; k++) {
        int big = -1;
        for (int i = 0; i < npieces; i++)
            if (!done[i] && (big < 0 || cost[i] > cost[big])) big = i;
        bool o2 = !cg_light(pieces[big].f) && !cg_cold(pieces[big].f);
        int pick = -1;
        long best = 0;
        for (int w = 0; w < nworkers; w++) {
            long after = load[w] + cost[big] + (o2 && !optimized[w] ? CG_O2_PART_COST : 0);
            if (pick < 0 || after < best) pick = w, best = after;
        }
        done[big] = true;
        worker_of[big] = pick;
        load[pick] = best;
        optimized[pick] = optimized[pick] || o2;
    }
    free(done), free(cost);
}

/* The kernels as pieces: one a kernel, but a light kernel cut into segments (cg_segments)
   that alone costs more than a worker's share has its segments dealt out to all the workers,
   one range each, compiled in parallel and linked by the JIT: a 1000-link chain's model is
   most of all its FieldVJP (297,000 instructions of 500,000), which one core compiled while
   the other ran out of work. (A kernel is not cut for this alone: the gyroscope's Rhs in two
   segments ran 70 % slower, its values passing between them through memory.) *npieces_out:
   how many. */
static CgPiece *cg_pieces(IrFn *const *fns, int nfns, int nworkers, int *npieces_out) {
    long total = 0;
    for (int i = 0; i < nfns; i++) total += cg_cost(fns[i]);
    CgPiece *pieces = xalloc((size_t)nfns * (size_t)(nworkers > 0 ? nworkers : 1) + 1, sizeof *pieces);
    int n = 0;
    for (int i = 0; i < nfns; i++) {
        int np = nworkers > 1 && cg_light(fns[i]) && cg_segmented(fns[i]) && cg_cost(fns[i]) * nworkers > total ? nworkers : 1;
        for (int q = 0; q < np; q++) pieces[n++] = (CgPiece){fns[i], q, np};
    }
    *npieces_out = n;
    return pieces;
}

/* A worker: its parts in turn, on one thread. */
typedef struct CgWorker {
    CgPart *parts;
    int nparts;
} CgWorker;

static int cg_worker_compile(void *arg) {
    CgWorker *w = arg;
    int failed = 0;
    for (int q = 0; q < w->nparts; q++) failed |= cg_part_compile(&w->parts[q]);
    return failed;
}

/* The execution session's errors (e.g. a failed link) are kept for the caller instead of
   being printed. */
static void cg_session_error(void *ctx, LLVMErrorRef e) {
    Jit *j = ctx;
    char *msg = LLVMGetErrorMessage(e);
    if (!j->session_err[0]) snprintf(j->session_err, sizeof j->session_err, "%s", msg);
    LLVMDisposeErrorMessage(msg);
}

/* Asked for every symbol the kernels' code references that the main JITDylib lacks, that
   is, outside the runtime table. LLJIT in recent LLVM (19 here) would otherwise find it
   among the process's symbols; refusing keeps the table the whole ABI. Such a reference is a
   backend bug: add the symbol to RT_SYMS and to docs/runtime-abi.md. */
static LLVMErrorRef cg_unlisted_symbol(LLVMOrcDefinitionGeneratorRef gen, void *ctx, LLVMOrcLookupStateRef *state,
                                       LLVMOrcLookupKind kind, LLVMOrcJITDylibRef jd,
                                       LLVMOrcJITDylibLookupFlags flags, LLVMOrcCLookupSet set, size_t nset) {
    char msg[512];
    size_t len = (size_t)snprintf(msg, sizeof msg, "kernel code needs symbols outside the runtime table:");
    for (size_t i = 0; i < nset && len < sizeof msg; i++)
        len += (size_t)snprintf(msg + len, sizeof msg - len, " %s", LLVMOrcSymbolStringPoolEntryStr(set[i].Name));
    return LLVMCreateStringError(msg);
}

/* The LLJIT for the host CPU, with the runtime symbol table in its main JITDylib. */
static LLVMOrcLLJITRef cg_lljit(Jit *j, char *err, size_t errlen) {
    LLVMOrcJITTargetMachineBuilderRef jtmb;
    if (cg_failed(LLVMOrcJITTargetMachineBuilderDetectHost(&jtmb), "detecting the host", err, errlen)) return NULL;
    LLVMOrcLLJITBuilderRef builder = LLVMOrcCreateLLJITBuilder();
    LLVMOrcLLJITBuilderSetJITTargetMachineBuilder(builder, jtmb); /* takes jtmb */
    LLVMOrcLLJITRef lljit;
    if (cg_failed(LLVMOrcCreateLLJIT(&lljit, builder), "creating the JIT", err, errlen)) /* takes builder */
        return NULL;
    LLVMOrcExecutionSessionSetErrorReporter(LLVMOrcLLJITGetExecutionSession(lljit), cg_session_error, j);
    LLVMOrcJITDylibRef main_jd = LLVMOrcLLJITGetMainJITDylib(lljit);

    /* (the pointer typedef: its element type was renamed in LLVM 15) */
    LLVMOrcCSymbolMapPairs syms = xcalloc(NRT, sizeof *syms);
    for (int i = 0; i < NRT; i++) {
        syms[i].Name = LLVMOrcLLJITMangleAndIntern(lljit, jit_runtime_symbols[i]);
        syms[i].Sym.Address = (LLVMOrcExecutorAddress)(uintptr_t)rt_addr[i];
        syms[i].Sym.Flags.GenericFlags = LLVMJITSymbolGenericFlagsExported | LLVMJITSymbolGenericFlagsCallable;
        syms[i].Sym.Flags.TargetFlags = 0;
    }
    LLVMOrcMaterializationUnitRef mu = LLVMOrcAbsoluteSymbols(syms, NRT); /* takes the names */
    free(syms);
    if (cg_failed(LLVMOrcJITDylibDefine(main_jd, mu), "defining the runtime symbols", err, errlen)) {
        LLVMOrcDisposeMaterializationUnit(mu);
        LLVMConsumeError(LLVMOrcDisposeLLJIT(lljit));
        return NULL;
    }
#if LLVM_VERSION_MAJOR >= 15 /* the Dispose argument */
    LLVMOrcJITDylibAddGenerator(main_jd, LLVMOrcCreateCustomCAPIDefinitionGenerator(cg_unlisted_symbol, NULL, NULL));
#else
    LLVMOrcJITDylibAddGenerator(main_jd, LLVMOrcCreateCustomCAPIDefinitionGenerator(cg_unlisted_symbol, NULL));
#endif
    return lljit;
}

/* The objects of a cache entry as the parts' objects: their count, or 0 for a miss. */
static int cg_cached_parts(const char *key, CgPart *parts) {
    JitBlob blobs[CG_MAX_PARTS];
    int n = jit_cache_load(key, blobs, CG_MAX_PARTS);
    for (int q = 0; q < n; q++) {
        parts[q].obj = LLVMCreateMemoryBufferWithMemoryRangeCopy(blobs[q].data, blobs[q].len, "cached kernels");
        free(blobs[q].data);
    }
    return n > 0 ? n : 0;
}

static Jit *cg_compile(IrFn *const *fns, int nfns, int opt_level, bool use_cache, bool *cached, char *err,
                       size_t errlen);

Jit *jit_compile(IrFn *const *fns, int nfns, int opt_level, char *err, size_t errlen) {
    bool cached = false;
    Jit *j = cg_compile(fns, nfns, opt_level, true, &cached, err, errlen);
    /* objects from the cache that do not link (whatever made them): compile afresh */
    return j || !cached ? j : cg_compile(fns, nfns, opt_level, false, &cached, err, errlen);
}

/* jit_compile, with or without the cache; *cached says whether its objects came from it. */
static Jit *cg_compile(IrFn *const *fns, int nfns, int opt_level, bool use_cache, bool *cached, char *err,
                       size_t errlen) {
    double t0 = cg_now_ms();
    if (err && errlen) err[0] = 0;
    if (opt_level < 0) opt_level = 0;
    if (opt_level > 3) opt_level = 3;
    if (nfns < 0 || (nfns > 0 && !fns)) return cg_errf(err, errlen, "no kernels"), NULL;
    if (!cg_check_kernels(fns, nfns, err, errlen)) return NULL;
    call_once(&cg_once, cg_init);
    if (!cg_init_ok) return cg_errf(err, errlen, "LLVM: cannot initialize the native target"), NULL;

    Jit *j = calloc(1, sizeof *j);
    if (!j) return cg_errf(err, errlen, "out of memory"), NULL;
    j->kernels = calloc((size_t)nfns + 1, sizeof *j->kernels);
    int nworkers = cg_nworkers(fns, nfns), nparts = 0;
    CgPart parts[CG_MAX_PARTS] = {0};
    int npieces = 0;
    CgPiece *pieces = cg_pieces(fns, nfns, nworkers, &npieces);
    int *worker_of = calloc((size_t)npieces + 1, sizeof *worker_of);
    CgPiece *sorted = calloc((size_t)npieces + 1, sizeof *sorted);
    if (!j->kernels || !worker_of || !sorted) {
        free(pieces);
        free(worker_of), free(sorted), jit_free(j);
        return cg_errf(err, errlen, "out of memory"), NULL;
    }

    /* The cache's entry for these kernels on this target (not when the optimized IR is to
       be dumped: that takes a compile), else compile the parts: workers 1.. on threads of
       their own, worker 0 on this one. */
    char *cpu = LLVMGetHostCPUName(), *features = LLVMGetHostCPUFeatures();
    char key[JIT_CACHE_KEY_LEN + 1] = "";
    use_cache = use_cache && jit_cache_enabled() && nfns > 0 && !getenv("PHYSC_DUMP_LLVM");
    if (use_cache) {
        size_t len = strlen(cpu) + strlen(features) + 64;
        char *config = xcalloc(len, 1);
        snprintf(config, len, "O%d|%s|%s|LLVM %s", opt_level, cpu, features, LLVM_VERSION_STRING);
        jit_cache_key(fns, nfns, config, key);
        free(config);
        int n = cg_cached_parts(key, parts);
        if (n > 0) nparts = n, j->from_cache = *cached = true;
    }
    /* worker w compiles parts first[w] .. first[w + 1] - 1: its light kernels (and its cold
       ones, if it has light ones: optnone, any pipeline leaves them alone), then the others */
    int first[CG_MAX_WORKERS + 1] = {0};
    if (!j->from_cache) {
        cg_partition(pieces, npieces, nworkers, worker_of);
        bool has_light[CG_MAX_WORKERS] = {false};
        for (int i = 0; i < npieces; i++) has_light[worker_of[i]] |= cg_light(pieces[i].f);
        for (int w = 0, at = 0; w < nworkers; w++) {
            first[w] = nparts;
            for (int lit = 1; lit >= 0; lit--) {
                CgPart *p = &parts[nparts];
                *p = (CgPart){.pieces = sorted + at, .opt_level = opt_level, .light = lit, .cpu = cpu, .features = features};
                for (int i = 0; i < npieces; i++)
                    if (worker_of[i] == w && (cg_light(pieces[i].f) || (cg_cold(pieces[i].f) && has_light[w])) == lit)
                        sorted[at++] = pieces[i], p->npieces++;
                if (p->npieces > 0) nparts++;
            }
        }
        first[nworkers] = nparts;
    }
    CgWorker workers[CG_MAX_WORKERS];
    thrd_t threads[CG_MAX_WORKERS];
    bool started[CG_MAX_WORKERS] = {false};
    for (int w = 0; w < nworkers && !j->from_cache; w++) workers[w] = (CgWorker){parts + first[w], first[w + 1] - first[w]};
    for (int w = 1; w < nworkers && !j->from_cache; w++)
        started[w] = thrd_create(&threads[w], cg_worker_compile, &workers[w]) == thrd_success;
    for (int w = 0; w < nworkers && !j->from_cache; w++)
        if (w == 0 || !started[w]) cg_worker_compile(&workers[w]); /* a thread that did not start: here */
    for (int w = 1; w < nworkers; w++)
        if (started[w]) thrd_join(threads[w], NULL);
    if (use_cache && !j->from_cache) { /* a complete compile goes to the cache */
        JitBlob blobs[CG_MAX_PARTS];
        bool all = true;
        for (int q = 0; q < nparts; q++) {
            all = all && parts[q].obj;
            if (parts[q].obj)
                blobs[q] = (JitBlob){(void *)LLVMGetBufferStart(parts[q].obj), LLVMGetBufferSize(parts[q].obj)};
        }
        if (all) jit_cache_store(key, blobs, nparts);
    }
    LLVMDisposeMessage(cpu);
    LLVMDisposeMessage(features);
    free(worker_of), free(sorted), free(pieces);

    bool ok = true;
    for (int q = 0; q < nparts; q++)
        if (!parts[q].obj && ok) ok = false, cg_errf(err, errlen, "%s", parts[q].err);
    if (ok && !(j->lljit = cg_lljit(j, err, errlen))) ok = false;
    if (ok && keep_objects) { /* copies, before the JIT takes the buffers */
        j->objects = xcalloc((size_t)nparts + 1, sizeof *j->objects);
        for (int q = 0; q < nparts; q++) {
            size_t len = LLVMGetBufferSize(parts[q].obj);
            j->objects[q] = (JitObject){xalloc(len + 1, 1), len};
            memcpy(j->objects[q].data, LLVMGetBufferStart(parts[q].obj), len);
            j->nobjects++;
        }
    }
    for (int q = 0; q < nparts; q++) { /* the JIT takes each object, even on failure */
        if (!parts[q].obj) continue;
        if (!ok) {
            LLVMDisposeMemoryBuffer(parts[q].obj);
            continue;
        }
        if (cg_failed(LLVMOrcLLJITAddObjectFile(j->lljit, LLVMOrcLLJITGetMainJITDylib(j->lljit), parts[q].obj),
                      "adding the compiled kernels", err, errlen))
            ok = false;
    }
    if (!ok) goto fail;

    /* The first lookup links the objects. */
    for (int i = 0; i < nfns; i++) {
        LLVMOrcExecutorAddress addr = 0;
        char what[300];
        snprintf(what, sizeof what, "linking the kernels (looking up %s)", fns[i]->name);
        if (cg_failed(LLVMOrcLLJITLookup(j->lljit, &addr, fns[i]->name), what, err, errlen)) {
            if (j->session_err[0]) cg_errf(err, errlen, "LLVM: %s: %s", what, j->session_err);
            goto fail;
        }
        j->kernels[i].name = xstrdup(fns[i]->name);
        if (!j->kernels[i].name) goto fail;
        j->kernels[i].fn = (PrtKernel)(uintptr_t)addr;
        j->nkernels++;
    }
    j->compile_ms = cg_now_ms() - t0;
    return j;

fail:
    jit_free(j);
    return NULL;
}

PrtKernel jit_lookup(Jit *j, const char *name) {
    if (!j || !name) return NULL;
    for (int i = 0; i < j->nkernels; i++)
        if (!strcmp(j->kernels[i].name, name)) return j->kernels[i].fn;
    return NULL;
}

void jit_free(Jit *j) {
    if (!j) return;
    if (j->lljit) {
        char err[256];
        if (cg_failed(LLVMOrcDisposeLLJIT(j->lljit), "disposing of the JIT", err, sizeof err))
            fprintf(stderr, "physc: %s\n", err);
    }
    for (int i = 0; i < j->nkernels; i++) free(j->kernels[i].name);
    for (int i = 0; i < j->nobjects; i++) free(j->objects[i].data);
    free(j->objects);
    free(j->kernels);
    free(j);
}

double jit_last_compile_ms(const Jit *j) { return j ? j->compile_ms : 0; }

bool jit_from_cache(const Jit *j) { return j && j->from_cache; }
