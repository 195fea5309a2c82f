/* test_linalg.c — the envelope Cholesky of runtime/math/linalg.c (prt_spd_*), which projection
   uses for the constraint Gram matrices: the same bits as prt_cholesky up to
   PRT_SPD_REORDER_MIN rows; beyond, a chain numbered at random is put back in a band by the
   reverse Cuthill-McKee order and solved as the dense factorization solves it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "math/linalg.h"
#include "math/rng.h"

/* A random diagonally dominant matrix on the graph of a chain through the nodes in the
   order label[0], label[1], ..., plus `extra` random edges. */
static double *chain_matrix(int n, const int *label, int extra, PrtRng *rng) {
    double *G = calloc((size_t)n * (size_t)n, sizeof(double));
    for (int k = 1; k < n; k++) {
        int a = label[k - 1], b = label[k];
        G[a * n + b] = G[b * n + a] = prt_rng_uniform(rng) - 0.5;
    }
    for (int e = 0; e < extra; e++) {
        int a = (int)(prt_rng_uniform(rng) * n), b = (int)(prt_rng_uniform(rng) * n);
        if (a != b) G[a * n + b] = G[b * n + a] = prt_rng_uniform(rng) - 0.5;
    }
    for (int i = 0; i < n; i++) {
        double off = 0;
        for (int j = 0; j < n; j++) off += j != i ? fabs(G[i * n + j]) : 0;
        G[i * n + i] = off + 0.5 + prt_rng_uniform(rng);
    }
    return G;
}

static void check(const char *what, int n, int extra, bool shuffle, PrtRng *rng) {
    int *label = malloc(sizeof(int) * (size_t)n);
    for (int i = 0; i < n; i++) label[i] = i;
    if (shuffle)
        for (int i = n - 1; i > 0; i--) {
            int j = (int)(prt_rng_uniform(rng) * (i + 1)), t = label[i];
            label[i] = label[j], label[j] = t;
        }
    double *G = chain_matrix(n, label, extra, rng), *L = malloc(sizeof(double) * (size_t)(n * n));
    double *b = malloc(sizeof(double) * (size_t)n), *x = malloc(sizeof(double) * (size_t)n),
           *work = malloc(sizeof(double) * (size_t)n);
    for (int i = 0; i < n; i++) b[i] = x[i] = prt_rng_normal(rng);
    memcpy(L, G, sizeof(double) * (size_t)(n * n));
    CHECK(prt_cholesky(L, n), "%s: the dense factorization", what);
    prt_cholesky_solve(L, n, b);
    PrtSpd f = {0};
    CHECK(prt_spd_factor(&f, G, n), "%s: the envelope factorization", what);
    prt_spd_solve(&f, x, work);
    double worst = 0;
    for (int i = 0; i < n; i++) worst = fmax(worst, fabs(x[i] - b[i]) / fmax(1, fabs(b[i])));
    if (n <= PRT_SPD_REORDER_MIN)
        CHECK(memcmp(x, b, sizeof(double) * (size_t)n) == 0, "%s: the same bits as prt_cholesky (%.1e apart)", what,
              worst);
    else
        CHECK(worst < 1e-12, "%s: agrees with prt_cholesky (%.1e apart)", what, worst);
    long envelope = 0;
    for (int i = 0; i < n; i++) envelope += i - f.first[i];
    if (shuffle && extra == 0)
        CHECK(envelope <= n, "%s: the shuffled chain is back in a band (envelope %ld for %d rows)", what, envelope, n);
    /* not positive definite: a negative pivot is refused */
    G[(n / 2) * n + n / 2] = -1;
    CHECK(!prt_spd_factor(&f, G, n), "%s: an indefinite matrix is refused", what);
    prt_spd_free(&f);
    free(label), free(G), free(L), free(b), free(x), free(work);
}

int main(void) {
    PrtRng rng;
    prt_rng_seed(&rng, 11);
    check("30 rows, a chain and 20 more edges", 30, 20, true, &rng);
    check("64 rows, a chain", 64, 0, false, &rng);
    check("300 rows, a shuffled chain", 300, 0, true, &rng);
    check("300 rows, a shuffled chain and 30 more edges", 300, 30, true, &rng);
    check("1 row", 1, 0, false, &rng);
    printf("%s: %s\n", __FILE__, failures ? "FAILED" : "ok");
    return failures != 0;
}
