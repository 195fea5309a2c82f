/* tape.h — a reverse-mode tape over coarse, batched operations: compiled kernel calls
   (each with its generated VJP kernel), the learned potential's input gradient (with its
   double-backward VJP), and the vector arithmetic of integrator stages. Training records
   one forward pass, seeds the adjoint of what the loss reads, and sweeps back.

   Variables are arrays in the kernels' SoA layout (rows x n). A tape is rewound with
   prt_tape_reset and rerecorded for the next minibatch: the same sequence of calls reuses
   the same buffers, so a training step allocates nothing after the first. */
#ifndef PRT_TAPE_H
#define PRT_TAPE_H
#include "nn/mlp.h"
#include "system/sim.h"

typedef struct PrtTape PrtTape;

PrtTape *prt_tape_new(void);
void prt_tape_free(PrtTape *t);
void prt_tape_reset(PrtTape *t);

/* A leaf of `len` doubles: the caller writes its value. */
int prt_tape_leaf(PrtTape *t, long len);
/* `len` doubles an operation keeps for its backward pass (partials, scratch): a leaf that is
   no operation's input, so no sweep adds to its adjoint and prt_tape_zero_adjoints leaves it
   alone (its adjoint buffer is the operation's to use as scratch too). */
int prt_tape_values(PrtTape *t, long len);
/* A window [off, off + len) of v's value and adjoint (e.g. the positions of a state). */
int prt_tape_view(PrtTape *t, int v, long off, long len);
double *prt_tape_val(PrtTape *t, int v);
double *prt_tape_adj(PrtTape *t, int v);
long prt_tape_len(PrtTape *t, int v);

/* sum_i coef[i] * vars[i] (all of one length). */
int prt_tape_lincomb(PrtTape *t, int nterms, const int *vars, const double *coef);
/* vars one after another. */
int prt_tape_concat(PrtTape *t, int nvars, const int *vars);

/* out = f(concat(in); params) for a batch of n states with `nout` output rows; vjp is f's
   VJP kernel. The backward pass adds the parameter adjoints, summed over the batch, to
   params_adj[0 .. nparams) (NULL: not wanted). params must stay unchanged until then. */
int prt_tape_kernel(PrtTape *t, PrtKernel f, PrtKernel vjp, long n, int nin, const int *in, int nout, const double *params,
                    int nparams, double *params_adj);

/* dV/dx of the MLP at the states x (rows m->size[0], n states). The backward pass adds
   dL/dtheta to theta_adj and dL/dx to x's adjoint. theta must stay unchanged until the
   next prt_tape_reset (an f32 MLP rounds it to float once per recording). */
int prt_tape_mlp_grad(PrtTape *t, const PrtMlp *m, const double *theta, double *theta_adj, long n, int x);
/* The MLP's outputs at the states x (rows m->size[L] x n), as one node: its forward pass
   in GEMMs (sgemm for an f32 MLP) and backpropagation as its backward (theta_adj, if not
   NULL, gets dL/dtheta), where the recorded MLP ops (mlp_graph.h) would be one node a
   layer and f64 only. The same conditions on theta. */
int prt_tape_mlp_value(PrtTape *t, const PrtMlp *m, const double *theta, double *theta_adj, long n, int x);

/* A custom operation: the caller computes its output (outlen doubles, into
   prt_tape_val(t, returned id)) right after recording it. The backward pass calls
   backward(t, ctx, in, nin, out), which adds to the inputs' adjoints (and to any parameter
   adjoints ctx points to) from the output's adjoint. ctx (ctxlen bytes, at most
   PRT_TAPE_CTX_MAX) is copied onto the tape. */
enum { PRT_TAPE_CTX_MAX = 96 };
typedef void (*PrtTapeBackward)(PrtTape *t, const void *ctx, const int *in, int nin, int out);
int prt_tape_op(PrtTape *t, PrtTapeBackward backward, const void *ctx, size_t ctxlen, int nin, const int *in,
                long outlen);

/* A scratch of n floats owned by the tape, valid until the next call (an f32 operation's
   GEMM operands while it runs: forward or backward). NULL only if n is 0. */
float *prt_tape_floats(PrtTape *t, size_t n);

/* One explicit Runge-Kutta step of size h from the state z on the tape: stage i records
   field(ctx, z + h sum_j a_ij k_j). Returns the new state. */
typedef int (*PrtTapeField)(void *ctx, int z);
int prt_tape_rk_step(PrtTape *t, const PrtTableau *T, double h, int z, PrtTapeField field, void *ctx);

/* The bytes the recording since the last reset (or rewind) holds: its variables' values
   and adjoints, the kernels' input copies, the MLP nodes' activations (what a recording of
   twice the batch would need twice of). */
size_t prt_tape_bytes_in_use(const PrtTape *t);
/* A long rollout recorded a segment at a time (its backward pass records each segment
   again from the segment's first state): drops every variable and operation but the
   variable keep, whose value becomes that of variable 0, the next segment's start (keep
   -1: none; the tape is then empty). Returns the kept variable's new id (or -1). The
   buffers stay for the next segment, as after prt_tape_reset; the recording (its count of
   prt_tape_recordings, its f32 weights) goes on. */
int prt_tape_rewind(PrtTape *t, int keep);
/* The bytes the recording since the last reset would hold had it never been rewound (the
   rewound segments' bytes, less the kept variables' copies, plus what the tape holds), and
   the most it held at once. */
size_t prt_tape_bytes_recorded(const PrtTape *t);
size_t prt_tape_bytes_peak(const PrtTape *t);
/* How many recordings were started on t (prt_tape_reset calls). */
long prt_tape_recordings(const PrtTape *t);
/* Zeroes every adjoint; the caller then seeds the adjoints of the outputs it reads. */
void prt_tape_zero_adjoints(PrtTape *t);
/* Sweeps back over the recorded operations. */
void prt_tape_backward(PrtTape *t);
/* The same over a segment (prt_tape_rewind) that is not the recording's first: an f32
   network's weight adjoints stay in float, to be added with the first segment's by its
   prt_tape_backward, as one sweep of the whole recording adds them. */
void prt_tape_backward_segment(PrtTape *t);

#endif
