/* test_sparse_ldlt.c — the L D L^T unrolled in the sparsity of a matrix's graph
   (compiler/sparse_ldlt.c) against a dense solve with pivoting, on graphs of the shapes
   constraint graphs take: a chain, a star numbered from its centre (the natural order fills
   it completely, minimum degree not at all), a tree, a cycle and a grid (where elimination
   must fill in), and a tie in fill-in (the natural order kept). The kernels are built as IR
   and run by the reference evaluator; the reference solve is the runtime's LU with partial
   pivoting. */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ir.h"
#include "math/linalg.h"
#include "math/rng.h"
#include "sparse_ldlt.h"

typedef struct Graph {
    int n, nedges;
    int (*edge)[2];
} Graph;

/* Symmetric adjacency lists (CSR) of g, ascending. */
static void adjacency(const Graph *g, int **start, int **adj) {
    *start = calloc((size_t)g->n + 2, sizeof(int));
    *adj = malloc(sizeof(int) * (size_t)(2 * g->nedges + 1));
    for (int e = 0; e < g->nedges; e++) (*start)[g->edge[e][0] + 1]++, (*start)[g->edge[e][1] + 1]++;
    for (int r = 0; r < g->n; r++) (*start)[r + 1] += (*start)[r];
    int *fill = calloc((size_t)g->n + 1, sizeof(int));
    for (int r = 0; r < g->n; r++) /* ascending: scan the other ends in order */
        for (int s = 0; s < g->n; s++)
            for (int e = 0; e < g->nedges; e++) {
                int a = g->edge[e][0], b = g->edge[e][1];
                if ((a == r && b == s) || (b == r && a == s)) (*adj)[(*start)[r] + fill[r]++] = s;
            }
    free(fill);
}

typedef struct Entries {
    int n;
    int *index; /* index[r * n + s]: the kernel input holding G_rs, or -1 */
    int *value; /* the IR value of each input, filled as the kernel is built */
} Entries;

static int entry(void *ctx, int r, int s) {
    Entries *e = ctx;
    int k = e->index[r * e->n + s];
    return k < 0 ? -1 : e->value[k];
}

/* Factors and solves a random diagonally dominant matrix of graph g; returns the fill-in. */
static long check_graph(const char *what, const Graph *g, PrtRng *rng) {
    int n = g->n, *start, *adj;
    adjacency(g, &start, &adj);
    /* inputs: G's entries (each symmetric pair once, the diagonal), then b */
    Entries e = {n, malloc(sizeof(int) * (size_t)(n * n)), NULL};
    for (int k = 0; k < n * n; k++) e.index[k] = -1;
    int ninputs = 0;
    for (int r = 0; r < n; r++) {
        e.index[r * n + r] = ninputs++;
        for (int k = start[r]; k < start[r + 1]; k++)
            if (adj[k] < r) e.index[r * n + adj[k]] = e.index[adj[k] * n + r] = ninputs++;
    }
    int nG = ninputs;
    ninputs += n;
    IrFn *f = ir_new("solve", ninputs, 0, n);
    e.value = malloc(sizeof(int) * (size_t)ninputs);
    for (int k = 0; k < ninputs; k++) e.value[k] = ir_input(f, k);
    SparseLdlt ld;
    sldlt_analyze(&ld, n, start, adj);
    sldlt_factor(f, &ld, entry, &e);
    sldlt_solve(f, &ld, e.value + nG, f->outputs);
    CHECK(!ir_verify(f), "%s: the kernel verifies: %s", what, ir_verify(f));

    double *in = calloc((size_t)ninputs, sizeof(double)), *A = calloc((size_t)(n * n), sizeof(double));
    double *x = calloc((size_t)n, sizeof(double)), *b = calloc((size_t)n, sizeof(double));
    for (int r = 0; r < n; r++) {
        double off = 0;
        for (int k = start[r]; k < start[r + 1]; k++)
            if (adj[k] < r) {
                double v = prt_rng_uniform(rng) - 0.5;
                in[e.index[r * n + adj[k]]] = v;
                A[r * n + adj[k]] = A[adj[k] * n + r] = v;
            }
        for (int k = start[r]; k < start[r + 1]; k++) off += 0.5;
        in[e.index[r * n + r]] = A[r * n + r] = off + 1 + prt_rng_uniform(rng);
        in[nG + r] = b[r] = prt_rng_uniform(rng) * 2 - 1;
    }
    ir_eval(f, in, NULL, x);
    int *piv = malloc(sizeof(int) * (size_t)n);
    CHECK(prt_lu_factor(A, n, piv), "%s: the dense matrix is regular", what);
    prt_lu_solve(A, n, piv, b);
    free(piv);
    double worst = 0;
    for (int r = 0; r < n; r++) worst = fmax(worst, fabs(x[r] - b[r]) / fmax(1, fabs(b[r])));
    CHECK(worst < 1e-12, "%s: the sparse solve agrees with the dense one (max difference %.2e)", what, worst);
    long fill = ld.fill;
    sldlt_free(&ld);
    ir_free(f);
    free(in), free(A), free(x), free(b), free(e.index), free(e.value), free(start), free(adj);
    return fill;
}

/* The elimination order by its definition, quadratic and plain: eliminate (order, or when
   NULL the node of fewest neighbours still there, the lowest index among equals), joining
   its remaining neighbours; returns the fill-in. The library keeps the degrees in a heap. */
static long reference_order(const Graph *g, const int *order, int *perm) {
    int n = g->n;
    bool *adjm = calloc((size_t)n * (size_t)n + 1, sizeof(bool)), *gone = calloc((size_t)n + 1, sizeof(bool));
    for (int e = 0; e < g->nedges; e++)
        adjm[g->edge[e][0] * n + g->edge[e][1]] = adjm[g->edge[e][1] * n + g->edge[e][0]] = true;
    long fill = 0;
    for (int k = 0; k < n; k++) {
        int v = order ? order[k] : -1, best = 0;
        for (int r = 0; r < n && !order; r++) {
            if (gone[r]) continue;
            int deg = 0;
            for (int u = 0; u < n; u++) deg += !gone[u] && adjm[r * n + u];
            if (v < 0 || deg < best) v = r, best = deg;
        }
        perm[k] = v, gone[v] = true;
        for (int u = 0; u < n; u++)
            for (int w = u + 1; w < n; w++)
                if (!gone[u] && !gone[w] && adjm[v * n + u] && adjm[v * n + w] && !adjm[u * n + w])
                    adjm[u * n + w] = adjm[w * n + u] = true, fill++;
    }
    free(adjm), free(gone);
    return fill;
}

/* sldlt_analyze's order on random sparse graphs against the reference: minimum degree
   where it fills in less than the natural order, else the natural order. */
static void check_orders(PrtRng *rng) {
    enum { N = 60, MAXE = 3 * N };
    int edges[MAXE][2], natural[N], ref[N], mismatches = 0;
    for (int i = 0; i < N; i++) natural[i] = i;
    for (int trial = 0; trial < 40; trial++) {
        Graph g = {N, 0, edges};
        int want = N / 2 + trial * 3 < MAXE ? N / 2 + trial * 3 : MAXE;
        while (g.nedges < want) { /* distinct edges, no loops */
            int a = (int)(prt_rng_uniform(rng) * N), b = (int)(prt_rng_uniform(rng) * N), dup = a == b;
            for (int e = 0; e < g.nedges && !dup; e++)
                dup = (edges[e][0] == a && edges[e][1] == b) || (edges[e][0] == b && edges[e][1] == a);
            if (!dup) edges[g.nedges][0] = a, edges[g.nedges++][1] = b;
        }
        long fill_natural = reference_order(&g, natural, ref), fill_md = reference_order(&g, NULL, ref);
        if (fill_md >= fill_natural) memcpy(ref, natural, sizeof ref);
        int *start, *adj;
        adjacency(&g, &start, &adj);
        SparseLdlt f;
        sldlt_analyze(&f, N, start, adj);
        bool same = f.fill == (fill_md < fill_natural ? fill_md : fill_natural);
        for (int i = 0; i < N; i++) same = same && f.perm[i] == ref[i];
        mismatches += !same;
        sldlt_free(&f);
        free(start), free(adj);
    }
    CHECK(mismatches == 0, "the elimination order and its fill-in are the reference's on random graphs (%d of 40 differ)",
          mismatches);
}

/* A tie: a triangle 0 1 2 with a leaf 3 on 2 fills in nothing in the natural order, nor in
   minimum degree's (the leaf first: 3 0 1 2). On a tie the natural order is kept, which keeps
   the kernels of systems whose graph ties (tests/ir/rods-in-line.phys) as they were. */
static void tie_keeps_natural(void) {
    int edges[4][2] = {{0, 1}, {0, 2}, {1, 2}, {2, 3}}, natural[4] = {0, 1, 2, 3}, md[4], ref[4];
    Graph g = {4, 4, edges};
    long fill_natural = reference_order(&g, natural, ref), fill_md = reference_order(&g, NULL, md);
    CHECK(fill_natural == 0 && fill_md == 0 && md[0] == 3, "the tie graph is not a tie (fill %ld and %ld, first %d)",
          fill_natural, fill_md, md[0]);
    int *start, *adj;
    adjacency(&g, &start, &adj);
    SparseLdlt f;
    sldlt_analyze(&f, 4, start, adj);
    CHECK(f.fill == 0 && f.perm[0] == 0 && f.perm[1] == 1 && f.perm[2] == 2 && f.perm[3] == 3,
          "a tie in fill-in: the order %d %d %d %d (fill %ld), not the natural one", f.perm[0], f.perm[1], f.perm[2],
          f.perm[3], f.fill);
    sldlt_free(&f);
    free(start), free(adj);
}

int main(void) {
    PrtRng rng;
    prt_rng_seed(&rng, 7);
    enum { N = 40 };
    int edges[4 * N][2];
    Graph g = {N, 0, edges};

    /* a chain 0 - 1 - ... - 39: tridiagonal, no fill in the natural order */
    for (int i = 1; i < N; i++) edges[g.nedges][0] = i - 1, edges[g.nedges++][1] = i;
    CHECK(check_graph("chain", &g, &rng) == 0, "a chain factors without fill-in");

    /* a star numbered from its centre: eliminating the centre first joins every leaf; the
       leaves first (minimum degree) fill nothing */
    g.nedges = 0;
    for (int i = 1; i < N; i++) edges[g.nedges][0] = 0, edges[g.nedges++][1] = i;
    CHECK(check_graph("star", &g, &rng) == 0, "a star numbered from its centre factors without fill-in");

    /* a binary tree numbered from its root */
    g.nedges = 0;
    for (int i = 1; i < N; i++) edges[g.nedges][0] = (i - 1) / 2, edges[g.nedges++][1] = i;
    CHECK(check_graph("tree", &g, &rng) == 0, "a tree factors without fill-in");

    /* a cycle: one fill edge per elimination but the last two */
    g.nedges = 0;
    for (int i = 0; i < N; i++) edges[g.nedges][0] = i, edges[g.nedges++][1] = (i + 1) % N;
    long fill = check_graph("cycle", &g, &rng);
    CHECK(fill > 0 && fill <= N, "a cycle fills in a little (%ld)", fill);

    /* a 5 x 8 grid */
    g.nedges = 0;
    for (int r = 0; r < 5; r++)
        for (int c = 0; c < 8; c++) {
            if (c + 1 < 8) edges[g.nedges][0] = r * 8 + c, edges[g.nedges++][1] = r * 8 + c + 1;
            if (r + 1 < 5) edges[g.nedges][0] = r * 8 + c, edges[g.nedges++][1] = (r + 1) * 8 + c;
        }
    check_graph("grid", &g, &rng);

    /* no edges at all (independent constraints), and one node */
    g.nedges = 0;
    CHECK(check_graph("diagonal", &g, &rng) == 0, "a diagonal matrix has no fill-in");
    g.n = 1;
    check_graph("one", &g, &rng);

    check_orders(&rng);
    tie_keeps_natural();

    if (failures) printf("%d failure(s)\n", failures);
    else printf("test_sparse_ldlt: all passed\n");
    return failures != 0;
}
