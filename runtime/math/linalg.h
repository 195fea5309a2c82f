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

/* The Cholesky factor of a symmetric positive definite n x n matrix G (dense storage) with
   few nonzeros a row: the constraint Gram matrices of projection, tridiagonal for a chain.
   Above PRT_SPD_REORDER_MIN rows the rows are put in reverse Cuthill-McKee order, and the
   factorization works in each row's envelope (from its first nonzero), so a banded matrix
   costs n b^2, not n^3 / 3. At or below it the order is the given one and the results are
   prt_cholesky's bit for bit. false if G is not positive definite.
   f starts zeroed and is reused across calls of one size. */
enum { PRT_SPD_REORDER_MIN = 64 };
typedef struct PrtSpd {
    int n;
    int *perm;  /* row i of the factor is row perm[i] of G */
    int *first; /* the first nonzero column of each row of the factor */
    double *L;  /* the factor, n x n storage */
} PrtSpd;
bool prt_spd_factor(PrtSpd *f, const double *G, int n);
/* b = G^-1 b; work holds n doubles. */
void prt_spd_solve(const PrtSpd *f, double *b, double *work);
void prt_spd_free(PrtSpd *f);

#endif
