/* linalg.c — Cholesky and LU for the small systems of projection, RATTLE and the models in
   generalized coordinates. */
#include "linalg.h"

#include <math.h>

bool prt_cholesky(double *G, int C) {
    for (int j = 0; j < C; j++) {
        double s = G[j * C + j];
        for (int k = 0; k < j; k++) s -= G[j * C + k] * G[j * C + k];
        if (!(s > 0)) return false;
        G[j * C + j] = sqrt(s);
        for (int i = j + 1; i < C; i++) {
            double t = G[i * C + j];
            for (int k = 0; k < j; k++) t -= G[i * C + k] * G[j * C + k];
            G[i * C + j] = t / G[j * C + j];
        }
    }
    return true;
}

void prt_cholesky_solve(const double *L, int C, double *b) {
    for (int i = 0; i < C; i++) {
        double t = b[i];
        for (int k = 0; k < i; k++) t -= L[i * C + k] * b[k];
        b[i] = t / L[i * C + i];
    }
    for (int i = C - 1; i >= 0; i--) {
        double t = b[i];
        for (int k = i + 1; k < C; k++) t -= L[k * C + i] * b[k];
        b[i] = t / L[i * C + i];
    }
}

bool prt_lu_factor(double *A, int C, int *piv) {
    for (int c = 0; c < C; c++) {
        int best = c;
        for (int r = c + 1; r < C; r++)
            if (fabs(A[r * C + c]) > fabs(A[best * C + c])) best = r;
        piv[c] = best;
        if (A[best * C + c] == 0) return false;
        if (best != c)
            for (int k = 0; k < C; k++) {
                double t = A[c * C + k];
                A[c * C + k] = A[best * C + k];
                A[best * C + k] = t;
            }
        for (int r = c + 1; r < C; r++) {
            A[r * C + c] /= A[c * C + c];
            for (int k = c + 1; k < C; k++) A[r * C + k] -= A[r * C + c] * A[c * C + k];
        }
    }
    return true;
}

void prt_lu_solve(const double *LU, int C, const int *piv, double *b) {
    for (int c = 0; c < C; c++) {
        double t = b[c];
        b[c] = b[piv[c]];
        b[piv[c]] = t;
    }
    for (int i = 0; i < C; i++)
        for (int k = 0; k < i; k++) b[i] -= LU[i * C + k] * b[k];
    for (int i = C - 1; i >= 0; i--) {
        for (int k = i + 1; k < C; k++) b[i] -= LU[i * C + k] * b[k];
        b[i] /= LU[i * C + i];
    }
}

void prt_lu_solve_transposed(const double *LU, int C, const int *piv, double *b) {
    /* A = P^T L U, so A^T = U^T L^T P: solve U^T y = b, L^T z = y, then x = P^T z */
    for (int i = 0; i < C; i++) {
        for (int k = 0; k < i; k++) b[i] -= LU[k * C + i] * b[k];
        b[i] /= LU[i * C + i];
    }
    for (int i = C - 1; i >= 0; i--)
        for (int k = i + 1; k < C; k++) b[i] -= LU[k * C + i] * b[k];
    for (int c = C - 1; c >= 0; c--) {
        double t = b[c];
        b[c] = b[piv[c]];
        b[piv[c]] = t;
    }
}
