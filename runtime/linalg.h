/* linalg.h — small dense solves for the runtime's per-state work (C x C: constraint rows, or
   generalized coordinates). */
#ifndef PRT_LINALG_H
#define PRT_LINALG_H
#include <stdbool.h>

/* In-place Cholesky of the symmetric C x C matrix G (lower triangle); false if not
   positive definite. */
bool prt_cholesky(double *G, int C);
void prt_cholesky_solve(const double *L, int C, double *b);
/* In-place LU with partial pivoting; false if singular. */
bool prt_lu_factor(double *A, int C, int *piv);
void prt_lu_solve(const double *LU, int C, const int *piv, double *b);
/* The same factors solving A^T x = b (the reverse sweep through a solve). */
void prt_lu_solve_transposed(const double *LU, int C, const int *piv, double *b);

#endif
