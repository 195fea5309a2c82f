/* sparse_ldlt.c — L D L^T in the sparsity of the matrix's graph (sparse_ldlt.h). */
#include "sparse_ldlt.h"
#include "arena.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* A graph whose neighbour lists grow as elimination fills in. */
typedef struct Graph {
    int n;
    int **nb, *deg, *cap;
} Graph;

static void graph_add(Graph *g, int a, int b) {
    if (g->deg[a] == g->cap[a]) {
        g->cap[a] = g->cap[a] ? 2 * g->cap[a] : 4;
        g->nb[a] = xrealloc(g->nb[a], (size_t)g->cap[a], sizeof(int));
    }
    g->nb[a][g->deg[a]++] = b;
}

static Graph graph_new(int n, const int *adj_start, const int *adj) {
    Graph g = {n, xcalloc((size_t)n + 1, sizeof(int *)), xcalloc((size_t)n + 1, sizeof(int)),
               xcalloc((size_t)n + 1, sizeof(int))};
    for (int r = 0; r < n; r++)
        for (int e = adj_start[r]; e < adj_start[r + 1]; e++) graph_add(&g, r, adj[e]);
    return g;
}

static void graph_free(Graph *g) {
    for (int r = 0; r < g->n; r++) free(g->nb[r]);
    free(g->nb), free(g->deg), free(g->cap);
}

/* A binary heap of keys (degree, node) as degree * (n + 1) + node: the minimum-degree
   order's next node, the lowest index among equals, found in log time (a scan of all the
   nodes each step was quadratic: a 10,000-link chain's analysis took seconds). Stale keys
   (the node's degree changed, or it is gone) stay until they come up and are skipped. */
typedef struct Heap {
    long *key;
    long len, cap;
} Heap;

static void heap_push(Heap *h, long key) {
    if (h->len == h->cap) {
        h->cap = h->cap ? 2 * h->cap : 64;
        h->key = xrealloc(h->key, (size_t)h->cap, sizeof(long));
    }
    long i = h->len++;
    for (; i > 0 && h->key[(i - 1) / 2] > key; i = (i - 1) / 2) h->key[i] = h->key[(i - 1) / 2];
    h->key[i] = key;
}

static long heap_pop(Heap *h) {
    long top = h->key[0], last = h->key[--h->len], i = 0;
    for (;;) {
        long c = 2 * i + 1;
        if (c >= h->len) break;
        if (c + 1 < h->len && h->key[c + 1] < h->key[c]) c++;
        if (h->key[c] >= last) break;
        h->key[i] = h->key[c], i = c;
    }
    if (h->len > 0) h->key[i] = last;
    return top;
}

/* Eliminates the nodes in the order `order` (or, if NULL, by minimum degree, the lowest
   index first among equals): perm gets the order; if cols is not NULL, cols[k] (with
   ncols[k] entries, malloc'd) the nodes still in the graph next to the k-th eliminated,
   which are L's column k. Returns the fill-in: the edges elimination added. */
static long eliminate(int n, const int *adj_start, const int *adj, const int *order, int *perm, int **cols,
                      int *ncols) {
    Graph g = graph_new(n, adj_start, adj);
    bool *gone = xcalloc((size_t)n + 1, sizeof(bool));
    int *live = xalloc((size_t)n + 1, sizeof(int)), *mark = xalloc((size_t)n + 1, sizeof(int));
    int *rest = xalloc((size_t)n + 1, sizeof(int));
    for (int r = 0; r < n; r++) live[r] = g.deg[r], mark[r] = -1;
    Heap heap = {0};
    long stride = (long)n + 1;
    for (int r = 0; r < n && !order; r++) heap_push(&heap, live[r] * stride + r);
    long fill = 0;
    for (int k = 0; k < n; k++) {
        int v = -1;
        if (order) v = order[k];
        else
            while (v < 0) {
                long key = heap_pop(&heap);
                int r = (int)(key % stride);
                if (!gone[r] && key / stride == live[r]) v = r;
            }
        perm[k] = v;
        int nrest = 0;
        for (int e = 0; e < g.deg[v]; e++)
            if (!gone[g.nb[v][e]]) rest[nrest++] = g.nb[v][e];
        if (cols) {
            cols[k] = xalloc((size_t)nrest + 1, sizeof(int));
            memcpy(cols[k], rest, (size_t)nrest * sizeof(int));
            ncols[k] = nrest;
        }
        gone[v] = true;
        for (int a = 0; a < nrest; a++) live[rest[a]]--;
        for (int a = 0; a < nrest && !order; a++) heap_push(&heap, live[rest[a]] * stride + rest[a]);
        /* v's remaining neighbours become a clique */
        for (int a = 0; a < nrest; a++) {
            int u = rest[a];
            for (int e = 0; e < g.deg[u]; e++) mark[g.nb[u][e]] = u;
            for (int b = a + 1; b < nrest; b++) {
                int w = rest[b];
                if (mark[w] == u) continue;
                graph_add(&g, u, w), graph_add(&g, w, u);
                live[u]++, live[w]++;
                if (!order) heap_push(&heap, live[u] * stride + u), heap_push(&heap, live[w] * stride + w);
                fill++;
            }
        }
    }
    graph_free(&g);
    free(gone), free(live), free(mark), free(rest), free(heap.key);
    return fill;
}

static int cmp_int(const void *a, const void *b) { return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b); }

static void analyze(SparseLdlt *f, int C, const int *adj_start, const int *adj, bool natural_only) {
    memset(f, 0, sizeof *f);
    f->C = C;
    f->perm = xalloc((size_t)C + 1, sizeof(int));
    int *natural = xalloc((size_t)C + 1, sizeof(int));
    for (int r = 0; r < C; r++) natural[r] = r;
    /* the natural order keeps small systems' kernels as they were; minimum degree where it
       fills in less (a tree numbered from its root, say) */
    const int *order = natural;
    if (!natural_only) {
        long fill_natural = eliminate(C, adj_start, adj, natural, f->perm, NULL, NULL);
        long fill_md = eliminate(C, adj_start, adj, NULL, f->perm, NULL, NULL);
        order = fill_md < fill_natural ? NULL : natural;
    }
    int **cols = xalloc((size_t)C + 1, sizeof(int *)), *ncols = xalloc((size_t)C + 1, sizeof(int));
    f->fill = eliminate(C, adj_start, adj, order, f->perm, cols, ncols);

    /* columns in positions, ascending; rows by transposing them */
    int *pos = xalloc((size_t)C + 1, sizeof(int));
    for (int k = 0; k < C; k++) pos[f->perm[k]] = k;
    f->col_start = xalloc((size_t)C + 2, sizeof(int));
    f->row_start = xcalloc((size_t)C + 2, sizeof(int));
    int nnz = 0;
    for (int k = 0; k < C; k++) f->col_start[k] = nnz, nnz += ncols[k];
    f->col_start[C] = nnz;
    f->col = xalloc((size_t)nnz + 1, sizeof(int));
    f->col_at = xalloc((size_t)nnz + 1, sizeof(int));
    f->row = xalloc((size_t)nnz + 1, sizeof(int));
    for (int k = 0; k < C; k++) {
        int *c = f->col + f->col_start[k];
        for (int e = 0; e < ncols[k]; e++) c[e] = pos[cols[k][e]], f->row_start[c[e] + 1]++;
        qsort(c, (size_t)ncols[k], sizeof(int), cmp_int);
        free(cols[k]);
    }
    for (int i = 0; i < C; i++) f->row_start[i + 1] += f->row_start[i];
    int *filled = xcalloc((size_t)C + 1, sizeof(int));
    for (int k = 0; k < C; k++) /* k ascending: each row's columns come out ascending */
        for (int e = f->col_start[k]; e < f->col_start[k + 1]; e++) {
            int i = f->col[e], at = f->row_start[i] + filled[i]++;
            f->row[at] = k;
            f->col_at[e] = at;
        }
    free(filled), free(pos), free(cols), free(ncols), free(natural);
}

void sldlt_analyze(SparseLdlt *f, int C, const int *adj_start, const int *adj) {
    analyze(f, C, adj_start, adj, false);
}

void sldlt_analyze_natural(SparseLdlt *f, int C, const int *adj_start, const int *adj) {
    analyze(f, C, adj_start, adj, true);
}

void sldlt_factor(IrFn *g, SparseLdlt *f, int (*entry)(void *ctx, int r, int s), void *ctx) {
    int C = f->C;
    f->L = xalloc((size_t)f->row_start[C] + 1, sizeof(int));
    f->inv_d = xalloc((size_t)C + 1, sizeof(int));
    int *D = xalloc((size_t)C + 1, sizeof(int)), *w = xalloc((size_t)C + 1, sizeof(int));
    for (int j = 0; j < C; j++) {
        /* w_k = L_jk D_k;  D_j = G_jj - sum_k L_jk w_k */
        int d = entry(ctx, f->perm[j], f->perm[j]);
        for (int e = f->row_start[j]; e < f->row_start[j + 1]; e++) {
            int k = f->row[e];
            w[k] = ir_bin(g, IR_MUL, f->L[e], D[k]);
            d = ir_bin(g, IR_SUB, d, ir_bin(g, IR_MUL, f->L[e], w[k]));
        }
        D[j] = d;
        int inv = ir_bin(g, IR_DIV, ir_const(g, 1), d); /* one division per pivot */
        f->inv_d[j] = inv;
        /* L_ij = (G_ij - sum over k < j in both rows of L_ik w_k) / D_j */
        for (int ce = f->col_start[j]; ce < f->col_start[j + 1]; ce++) {
            int i = f->col[ce], t = entry(ctx, f->perm[i], f->perm[j]);
            if (t < 0) t = ir_const(g, 0); /* fill-in */
            int a = f->row_start[i], a_end = f->col_at[ce], b = f->row_start[j], b_end = f->row_start[j + 1];
            while (a < a_end && b < b_end) {
                if (f->row[a] < f->row[b]) a++;
                else if (f->row[a] > f->row[b]) b++;
                else {
                    t = ir_bin(g, IR_SUB, t, ir_bin(g, IR_MUL, f->L[a], w[f->row[a]]));
                    a++, b++;
                }
            }
            f->L[f->col_at[ce]] = ir_bin(g, IR_MUL, t, inv);
        }
    }
    free(D), free(w);
}

void sldlt_solve(IrFn *g, const SparseLdlt *f, const int *b, int *x) {
    int C = f->C;
    int *y = xalloc((size_t)C + 1, sizeof(int)), *z = xalloc((size_t)C + 1, sizeof(int));
    for (int i = 0; i < C; i++) {
        int t = b[f->perm[i]];
        for (int e = f->row_start[i]; e < f->row_start[i + 1]; e++)
            t = ir_bin(g, IR_SUB, t, ir_bin(g, IR_MUL, f->L[e], y[f->row[e]]));
        y[i] = t;
    }
    for (int i = C - 1; i >= 0; i--) {
        int t = ir_bin(g, IR_MUL, y[i], f->inv_d[i]);
        for (int ce = f->col_start[i]; ce < f->col_start[i + 1]; ce++)
            t = ir_bin(g, IR_SUB, t, ir_bin(g, IR_MUL, f->L[f->col_at[ce]], z[f->col[ce]]));
        z[i] = t;
    }
    for (int i = 0; i < C; i++) x[f->perm[i]] = z[i];
    free(y), free(z);
}

void sldlt_free(SparseLdlt *f) {
    free(f->perm), free(f->row_start), free(f->row), free(f->col_start), free(f->col), free(f->col_at);
    free(f->L), free(f->inv_d);
    memset(f, 0, sizeof *f);
}
