/* linalg.c — Cholesky and LU for the small systems of projection, RATTLE and the models in
   generalized coordinates. */
#include "linalg.h"

#include <math.h>
#include <stdlib.h>

#include "core/alloc.h"

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
        /* the multiplier in a local (A's rows cannot alias for the compiler otherwise), and
           rows whose multiplier is 0 left alone: a chain's constraint Gram is banded */
        const double *restrict pivot_row = A + (size_t)c * C;
        for (int r = c + 1; r < C; r++) {
            double *restrict row = A + (size_t)r * C;
            double l = row[c] /= pivot_row[c];
            if (l == 0) continue;
            for (int k = c + 1; k < C; k++) row[k] -= l * pivot_row[k];
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

/* ---- Symmetric positive definite matrices with few nonzeros a row ---- */

/* Reverse Cuthill-McKee: breadth first from a node of least degree in each connected part,
   neighbours by increasing degree, the whole order reversed; it keeps each row's nonzeros
   near the diagonal (a chain's: beside it). */
static void rcm_order(const double *G, int n, int *perm) {
    int *deg = prt_xcalloc((size_t)n + 1, sizeof(int), "a Gram matrix's ordering"),
        *start = prt_xalloc((size_t)n + 2, sizeof(int), "a Gram matrix's ordering");
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) deg[i] += j != i && G[(long)i * n + j] != 0;
    start[0] = 0;
    for (int i = 0; i < n; i++) start[i + 1] = start[i] + deg[i];
    int *adj = prt_xalloc((size_t)start[n] + 1, sizeof(int), "a Gram matrix's ordering"),
        *seen = prt_xcalloc((size_t)n + 1, sizeof(int), "a Gram matrix's ordering");
    for (int i = 0, e = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            if (j != i && G[(long)i * n + j] != 0) adj[e++] = j;
    int head = 0, tail = 0;
    while (tail < n) {
        int root = -1;
        for (int i = 0; i < n; i++)
            if (!seen[i] && (root < 0 || deg[i] < deg[root])) root = i;
        seen[root] = 1, perm[tail++] = root;
        while (head < tail) {
            int v = perm[head++], from = tail;
            for (int e = start[v]; e < start[v + 1]; e++)
                if (!seen[adj[e]]) seen[adj[e]] = 1, perm[tail++] = adj[e];
            for (int a = from + 1; a < tail; a++) /* insertion sort by degree: few neighbours */
                for (int b = a; b > from && deg[perm[b]] < deg[perm[b - 1]]; b--) {
                    int t = perm[b];
                    perm[b] = perm[b - 1], perm[b - 1] = t;
                }
        }
    }
    for (int i = 0; i < n / 2; i++) {
        int t = perm[i];
        perm[i] = perm[n - 1 - i], perm[n - 1 - i] = t;
    }
    free(deg), free(start), free(adj), free(seen);
}

bool prt_spd_factor(PrtSpd *f, const double *G, int n) {
    if (f->n != n) {
        prt_spd_free(f);
        f->n = n;
        f->perm = prt_xalloc((size_t)n + 1, sizeof(int), "a Gram matrix's factor");
        f->first = prt_xalloc((size_t)n + 1, sizeof(int), "a Gram matrix's factor");
        f->L = prt_xalloc((size_t)n * (size_t)n + 1, sizeof(double), "a Gram matrix's factor");
    }
    if (n > PRT_SPD_REORDER_MIN) rcm_order(G, n, f->perm);
    else
        for (int i = 0; i < n; i++) f->perm[i] = i;
    double *L = f->L;
    for (int i = 0; i < n; i++) { /* L = P G P^T; each row's envelope starts at its first nonzero */
        f->first[i] = i;
        for (int j = 0; j < n; j++) {
            L[(long)i * n + j] = G[(long)f->perm[i] * n + f->perm[j]];
            if (j < f->first[i] && L[(long)i * n + j] != 0) f->first[i] = j;
        }
    }
    /* Cholesky by rows in the envelope: the same operations as prt_cholesky's, less the
       products with the zeros left of each row's first nonzero (which stay zero) */
    for (int i = 0; i < n; i++) {
        double *Li = L + (long)i * n;
        for (int j = f->first[i]; j < i; j++) {
            const double *Lj = L + (long)j * n;
            double t = Li[j];
            for (int k = f->first[i] > f->first[j] ? f->first[i] : f->first[j]; k < j; k++) t -= Li[k] * Lj[k];
            Li[j] = t / Lj[j];
        }
        double s = Li[i];
        for (int k = f->first[i]; k < i; k++) s -= Li[k] * Li[k];
        if (!(s > 0)) return false;
        Li[i] = sqrt(s);
    }
    return true;
}

void prt_spd_solve(const PrtSpd *f, double *b, double *work) {
    int n = f->n;
    const double *L = f->L;
    for (int i = 0; i < n; i++) work[i] = b[f->perm[i]];
    for (int i = 0; i < n; i++) {
        double t = work[i];
        for (int k = f->first[i]; k < i; k++) t -= L[(long)i * n + k] * work[k];
        work[i] = t / L[(long)i * n + i];
    }
    for (int i = n - 1; i >= 0; i--) { /* in prt_cholesky_solve's order: column i of L, downwards */
        double t = work[i];
        for (int k = i + 1; k < n; k++)
            if (f->first[k] <= i) t -= L[(long)k * n + i] * work[k];
        work[i] = t / L[(long)i * n + i];
    }
    for (int i = 0; i < n; i++) b[f->perm[i]] = work[i];
}

void prt_spd_free(PrtSpd *f) {
    free(f->perm), free(f->first), free(f->L);
    *f = (PrtSpd){0};
}
