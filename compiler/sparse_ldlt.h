/* sparse_ldlt.h — L D L^T of a symmetric matrix of IR values in the sparsity of its graph,
   unrolled into a kernel (the constraint Gram matrix G = A M^-1 A^T of dynamics.c).

   G's graph is the constraint graph: constraints that share a body are adjacent. A chain's
   G is tridiagonal, a tree's factors with no fill-in when leaves go first. The symbolic
   phase picks the elimination order (the natural one unless minimum degree fills in
   less) and the pattern of L; the numeric phase emits only the pattern's operations, in
   the same order as the dense factorization, so that on the natural order the simplified
   kernel is the dense one's bit for bit, and its size is linear in the pattern where the
   dense one was built at cubic cost and simplified afterwards. */
#ifndef PHYSC_SPARSE_LDLT_H
#define PHYSC_SPARSE_LDLT_H
#include "ir.h"

typedef struct SparseLdlt {
    int C;
    int *perm;              /* perm[i]: the row (original index) eliminated i-th */
    int *row_start, *row;   /* L's row i (positions): its columns k < i, ascending */
    int *col_start, *col;   /* L's column i: its rows k > i, ascending */
    int *col_at;            /* per column entry, the index of that entry in row[] (and in L[]) */
    int *L;                 /* IR values, aligned with row[] */
    int *inv_d;             /* per position, 1 / D */
    long fill;              /* entries of L outside G's pattern */
} SparseLdlt;

/* The symbolic phase. G's pattern: adj[adj_start[r] .. adj_start[r + 1]) are the rows s != r
   with G_rs structurally nonzero (symmetric, original indices). */
void sldlt_analyze(SparseLdlt *f, int C, const int *adj_start, const int *adj);
/* The same in the natural order, whatever it fills in (rank.c: a row's dependence on the rows
   before it, as written). */
void sldlt_analyze_natural(SparseLdlt *f, int C, const int *adj_start, const int *adj);

/* The numeric phase, in g: G_rs is entry(ctx, r, s) for r, s in G's pattern (and the
   diagonal); fill-in starts from zero. */
void sldlt_factor(IrFn *g, SparseLdlt *f, int (*entry)(void *ctx, int r, int s), void *ctx);

/* x = G^-1 b (original indices). */
void sldlt_solve(IrFn *g, const SparseLdlt *f, const int *b, int *x);

void sldlt_free(SparseLdlt *f);

#endif
