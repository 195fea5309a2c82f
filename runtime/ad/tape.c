/* tape.c — the reverse-mode tape of tape.h. Variables and nodes live in arrays that grow
   and are kept across prt_tape_reset, with their buffers: the k-th variable or node of the
   next recording reuses the k-th one's memory (training records the same graph every
   minibatch). */
#include "tape.h"
#include "core/alloc.h"
#include "math/simd_clones.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_ARGS = 8 };

typedef struct Var {
    double *val, *adj;
    long len;
    long cap;        /* owned buffers' capacity (0 for a view) */
    double *own_val, *own_adj;
    bool value_only; /* prt_tape_values: no adjoint to zero */
} Var;

typedef enum NodeKind { NODE_LINCOMB, NODE_CONCAT, NODE_KERNEL, NODE_MLP_GRAD, NODE_MLP_VALUE, NODE_OP } NodeKind;

typedef struct Node {
    NodeKind kind;
    int out, in[MAX_ARGS], nin;
    double coef[MAX_ARGS];
    /* kernels */
    PrtKernel f, vjp;
    long n;
    int nout, nparams;
    const double *params;
    double *params_adj;
    double *buf, *vjp_out; /* (inputs, cotangent) and the VJP's output, reused */
    long buf_cap, vjp_cap;
    /* MLP */
    const PrtMlp *mlp;
    const double *theta;
    double *theta_adj;
    PrtMlpWork work;
    /* custom operations */
    PrtTapeBackward backward;
    _Alignas(max_align_t) unsigned char ctx[PRT_TAPE_CTX_MAX];
} Node;

struct PrtTape {
    Var *vars;
    int nvars, vars_cap;
    Node *nodes;
    int nnodes, nodes_cap;
    long recordings; /* prt_tape_reset calls */
    size_t rewound, peak; /* bytes of the segments rewound since the reset; the most held at once */
    PrtMlpScratch mlp_scratch; /* shared by the MLP nodes: see PrtMlpScratch */
    float *floats;             /* prt_tape_floats */
    size_t floats_cap;
};

PrtTape *prt_tape_new(void) {
    PrtTape *t = prt_xcalloc(1, sizeof(PrtTape), "the autodiff tape");
    if (t) t->mlp_scratch.shared = true;
    return t;
}

void prt_tape_free(PrtTape *t) {
    if (!t) return;
    for (int i = 0; i < t->vars_cap; i++) free(t->vars[i].own_val), free(t->vars[i].own_adj);
    for (int i = 0; i < t->nodes_cap; i++) {
        free(t->nodes[i].buf), free(t->nodes[i].vjp_out);
        prt_mlp_work_free(&t->nodes[i].work);
    }
    prt_mlp_scratch_free(&t->mlp_scratch);
    free(t->floats);
    free(t->vars), free(t->nodes), free(t);
}

float *prt_tape_floats(PrtTape *t, size_t n) {
    if (n > t->floats_cap) {
        free(t->floats);
        t->floats = prt_xalloc(n, sizeof(float), "the autodiff tape's float scratch");
        t->floats_cap = n;
    }
    return n ? t->floats : NULL;
}

void prt_tape_reset(PrtTape *t) {
    t->nvars = t->nnodes = 0;
    t->rewound = t->peak = 0;
    t->recordings++;
    prt_mlp_scratch_forget_weights(&t->mlp_scratch); /* the weights may change between recordings */
}

static void reserve(double **p, long *cap, long len) {
    if (*cap >= len) return;
    free(*p);
    *p = prt_xalloc((size_t)(len > 0 ? len : 1), sizeof(double), "the autodiff tape");
    *cap = len;
}

static Var *new_var(PrtTape *t, int *id) {
    if (t->nvars == t->vars_cap) {
        int cap = t->vars_cap ? 2 * t->vars_cap : 64;
        t->vars = prt_xrealloc(t->vars, (size_t)cap, sizeof(Var), "the autodiff tape");
        memset(t->vars + t->vars_cap, 0, sizeof(Var) * (size_t)(cap - t->vars_cap));
        t->vars_cap = cap;
    }
    *id = t->nvars++;
    return &t->vars[*id];
}

static int owned_var(PrtTape *t, long len) {
    int id;
    Var *v = new_var(t, &id);
    if (v->cap < len) {
        free(v->own_val), free(v->own_adj);
        v->own_val = prt_xalloc((size_t)(len > 0 ? len : 1), sizeof(double), "the autodiff tape");
        v->own_adj = prt_xalloc((size_t)(len > 0 ? len : 1), sizeof(double), "the autodiff tape");
        v->cap = len;
    }
    v->val = v->own_val, v->adj = v->own_adj, v->len = len, v->value_only = false;
    return id;
}

static Node *new_node(PrtTape *t, NodeKind kind, int out) {
    if (t->nnodes == t->nodes_cap) {
        int cap = t->nodes_cap ? 2 * t->nodes_cap : 64;
        t->nodes = prt_xrealloc(t->nodes, (size_t)cap, sizeof(Node), "the autodiff tape");
        memset(t->nodes + t->nodes_cap, 0, sizeof(Node) * (size_t)(cap - t->nodes_cap));
        t->nodes_cap = cap;
    }
    Node *nd = &t->nodes[t->nnodes++];
    nd->kind = kind;
    nd->out = out;
    return nd;
}

int prt_tape_leaf(PrtTape *t, long len) { return owned_var(t, len); }

int prt_tape_values(PrtTape *t, long len) {
    int id = owned_var(t, len);
    t->vars[id].value_only = true;
    return id;
}

int prt_tape_view(PrtTape *t, int v, long off, long len) {
    int id;
    Var *w = new_var(t, &id), *p = &t->vars[v];
    w->val = p->val + off, w->adj = p->adj + off, w->len = len;
    return id;
}

double *prt_tape_val(PrtTape *t, int v) { return t->vars[v].val; }
double *prt_tape_adj(PrtTape *t, int v) { return t->vars[v].adj; }
long prt_tape_len(PrtTape *t, int v) { return t->vars[v].len; }

/* y = c x and y += c x over n doubles, at the machine's vector width: the RK stages' sums
   and their adjoints. */
PRT_SIMD_CLONES static void vec_scale(long n, double c, const double *restrict x, double *restrict y) {
    for (long i = 0; i < n; i++) y[i] = c * x[i];
}
PRT_SIMD_CLONES static void vec_axpy(long n, double c, const double *restrict x, double *restrict y) {
    for (long i = 0; i < n; i++) y[i] += c * x[i];
}

int prt_tape_lincomb(PrtTape *t, int nterms, const int *vars, const double *coef) {
    long len = t->vars[vars[0]].len;
    int out = owned_var(t, len);
    Node *nd = new_node(t, NODE_LINCOMB, out);
    nd->nin = nterms;
    double *o = t->vars[out].val;
    for (int k = 0; k < nterms; k++) {
        nd->in[k] = vars[k], nd->coef[k] = coef[k];
        const double *x = t->vars[vars[k]].val;
        double c = coef[k];
        if (k == 0) vec_scale(len, c, x, o);
        else vec_axpy(len, c, x, o);
    }
    return out;
}

int prt_tape_concat(PrtTape *t, int nvars, const int *vars) {
    long len = 0;
    for (int k = 0; k < nvars; k++) len += t->vars[vars[k]].len;
    int out = owned_var(t, len);
    Node *nd = new_node(t, NODE_CONCAT, out);
    nd->nin = nvars;
    long off = 0;
    for (int k = 0; k < nvars; k++) {
        nd->in[k] = vars[k];
        memcpy(t->vars[out].val + off, t->vars[vars[k]].val, sizeof(double) * (size_t)t->vars[vars[k]].len);
        off += t->vars[vars[k]].len;
    }
    return out;
}

int prt_tape_kernel(PrtTape *t, PrtKernel f, PrtKernel vjp, long n, int nin, const int *in, int nout, const double *params,
                    int nparams, double *params_adj) {
    int out = owned_var(t, (long)nout * n);
    Node *nd = new_node(t, NODE_KERNEL, out);
    long inlen = 0;
    for (int k = 0; k < nin; k++) inlen += t->vars[in[k]].len;
    reserve(&nd->buf, &nd->buf_cap, inlen + (long)nout * n); /* room for the cotangent */
    nd->f = f, nd->vjp = vjp, nd->n = n, nd->nin = nin, nd->nout = nout;
    nd->params = params, nd->nparams = nparams, nd->params_adj = params_adj;
    long off = 0;
    for (int k = 0; k < nin; k++) {
        nd->in[k] = in[k];
        memcpy(nd->buf + off, t->vars[in[k]].val, sizeof(double) * (size_t)t->vars[in[k]].len);
        off += t->vars[in[k]].len;
    }
    f(n, nd->buf, params, t->vars[out].val);
    return out;
}

int prt_tape_mlp_grad(PrtTape *t, const PrtMlp *m, const double *theta, double *theta_adj, long n, int x) {
    int out = owned_var(t, (long)m->size[0] * n);
    Node *nd = new_node(t, NODE_MLP_GRAD, out);
    nd->mlp = m, nd->theta = theta, nd->theta_adj = theta_adj, nd->n = n, nd->nin = 1, nd->in[0] = x;
    nd->work.scratch = &t->mlp_scratch;
    prt_mlp_value_grad(m, theta, n, t->vars[x].val, NULL, t->vars[out].val, &nd->work);
    return out;
}

int prt_tape_mlp_value(PrtTape *t, const PrtMlp *m, const double *theta, double *theta_adj, long n, int x) {
    int out = owned_var(t, (long)m->size[m->nlayers] * n);
    Node *nd = new_node(t, NODE_MLP_VALUE, out);
    nd->mlp = m, nd->theta = theta, nd->theta_adj = theta_adj, nd->n = n, nd->nin = 1, nd->in[0] = x;
    nd->work.scratch = &t->mlp_scratch;
    prt_mlp_forward(m, theta, n, t->vars[x].val, t->vars[out].val, &nd->work);
    return out;
}

int prt_tape_op(PrtTape *t, PrtTapeBackward backward, const void *ctx, size_t ctxlen, int nin, const int *in,
                long outlen) {
    if (nin > MAX_ARGS || ctxlen > PRT_TAPE_CTX_MAX) { /* a programming error, caught by the tests */
        fprintf(stderr, "internal error: prt_tape_op with %d inputs and %zu bytes of context\n", nin, ctxlen);
        abort();
    }
    int out = owned_var(t, outlen);
    Node *nd = new_node(t, NODE_OP, out);
    nd->backward = backward, nd->nin = nin;
    memcpy(nd->in, in, sizeof(int) * (size_t)nin);
    memcpy(nd->ctx, ctx, ctxlen);
    return out;
}

int prt_tape_rk_step(PrtTape *t, const PrtTableau *T, double h, int z, PrtTapeField field, void *ctx) {
    int k[4], vars[5];
    double coef[5];
    for (int i = 0; i < T->stages; i++) {
        int y = z, nt = 1;
        vars[0] = z, coef[0] = 1;
        for (int j = 0; j < i; j++)
            if (T->a[i][j] != 0) vars[nt] = k[j], coef[nt++] = h * T->a[i][j];
        if (nt > 1) y = prt_tape_lincomb(t, nt, vars, coef);
        k[i] = field(ctx, y);
    }
    for (int i = 0; i < T->stages; i++) vars[i + 1] = k[i], coef[i + 1] = h * T->b[i];
    return prt_tape_lincomb(t, T->stages + 1, vars, coef);
}

long prt_tape_recordings(const PrtTape *t) { return t->recordings; }

size_t prt_tape_bytes_in_use(const PrtTape *t) {
    size_t bytes = 0;
    for (int i = 0; i < t->nvars; i++)
        if (t->vars[i].val == t->vars[i].own_val) bytes += 2 * sizeof(double) * (size_t)t->vars[i].len;
    for (int i = 0; i < t->nnodes; i++) {
        const Node *nd = &t->nodes[i];
        if (nd->kind == NODE_KERNEL) {
            size_t inlen = 0;
            for (int k = 0; k < nd->nin; k++) inlen += (size_t)t->vars[nd->in[k]].len;
            bytes += sizeof(double) * (inlen + (size_t)(nd->nout * nd->n));
        } else if (nd->kind == NODE_MLP_GRAD || nd->kind == NODE_MLP_VALUE)
            bytes += prt_mlp_work_bytes(nd->mlp, nd->n, nd->kind == NODE_MLP_GRAD);
    }
    return bytes;
}

int prt_tape_rewind(PrtTape *t, int keep) {
    size_t held = prt_tape_bytes_in_use(t);
    t->rewound += held;
    if (held > t->peak) t->peak = held;
    t->nnodes = 0;
    if (keep < 0) {
        t->nvars = 0;
        return -1;
    }
    long len = t->vars[keep].len;
    t->rewound -= 2 * sizeof(double) * (size_t)len; /* its copy is counted in the next segment */
    if (keep == 0 && t->vars[0].val == t->vars[0].own_val) {
        t->nvars = 1;
        return 0;
    }
    /* slot 0 takes keep's value: swap owned buffers, or copy a view's (which may lie in slot 0) */
    Var *k = &t->vars[keep], *z = &t->vars[0];
    if (k->val == k->own_val && keep != 0) {
        Var tmp = *z;
        z->own_val = k->own_val, z->own_adj = k->own_adj, z->cap = k->cap;
        k->own_val = tmp.own_val, k->own_adj = tmp.own_adj, k->cap = tmp.cap;
        t->nvars = 0;
        owned_var(t, len); /* slot 0 again, with keep's buffers */
        return 0;
    }
    double *copy = prt_xalloc((size_t)(len > 0 ? len : 1), sizeof(double), "the autodiff tape");
    memcpy(copy, k->val, sizeof(double) * (size_t)len);
    t->nvars = 0;
    owned_var(t, len);
    memcpy(t->vars[0].val, copy, sizeof(double) * (size_t)len);
    free(copy);
    return 0;
}

size_t prt_tape_bytes_recorded(const PrtTape *t) { return t->rewound + prt_tape_bytes_in_use(t); }

size_t prt_tape_bytes_peak(const PrtTape *t) {
    size_t held = prt_tape_bytes_in_use(t);
    return held > t->peak ? held : t->peak;
}

void prt_tape_zero_adjoints(PrtTape *t) {
    for (int i = 0; i < t->nvars; i++)
        if (t->vars[i].val == t->vars[i].own_val && !t->vars[i].value_only)
            memset(t->vars[i].adj, 0, sizeof(double) * (size_t)t->vars[i].len);
}

static void backward_kernel(PrtTape *t, Node *nd) {
    long n = nd->n, inlen = 0;
    for (int k = 0; k < nd->nin; k++) inlen += t->vars[nd->in[k]].len;
    memcpy(nd->buf + inlen, t->vars[nd->out].adj, sizeof(double) * (size_t)(nd->nout * n));
    reserve(&nd->vjp_out, &nd->vjp_cap, inlen + (long)nd->nparams * n);
    nd->vjp(n, nd->buf, nd->params, nd->vjp_out);
    long off = 0;
    for (int k = 0; k < nd->nin; k++) {
        Var *v = &t->vars[nd->in[k]];
        for (long i = 0; i < v->len; i++) v->adj[i] += nd->vjp_out[off + i];
        off += v->len;
    }
    if (!nd->params_adj) return;
    for (int p = 0; p < nd->nparams; p++) {
        double s = 0;
        for (long b = 0; b < n; b++) s += nd->vjp_out[off + (long)p * n + b];
        nd->params_adj[p] += s;
    }
}

void prt_tape_backward_segment(PrtTape *t) {
    for (int i = t->nnodes - 1; i >= 0; i--) {
        Node *nd = &t->nodes[i];
        const double *g = t->vars[nd->out].adj;
        switch (nd->kind) {
        case NODE_LINCOMB:
            for (int k = 0; k < nd->nin; k++) {
                Var *v = &t->vars[nd->in[k]];
                vec_axpy(v->len, nd->coef[k], g, v->adj);
            }
            break;
        case NODE_CONCAT: {
            long off = 0;
            for (int k = 0; k < nd->nin; k++) {
                Var *v = &t->vars[nd->in[k]];
                for (long j = 0; j < v->len; j++) v->adj[j] += g[off + j];
                off += v->len;
            }
            break;
        }
        case NODE_KERNEL: backward_kernel(t, nd); break;
        case NODE_OP: nd->backward(t, nd->ctx, nd->in, nd->nin, nd->out); break;
        case NODE_MLP_GRAD: {
            Var *x = &t->vars[nd->in[0]];
            prt_mlp_grad_vjp(nd->mlp, nd->theta, nd->n, x->val, g, x->adj, nd->theta_adj, &nd->work);
            break;
        }
        case NODE_MLP_VALUE:
            prt_mlp_vjp(nd->mlp, nd->theta, nd->n, g, t->vars[nd->in[0]].adj, nd->theta_adj, &nd->work);
            break;
        }
    }
}

void prt_tape_backward(PrtTape *t) {
    prt_tape_backward_segment(t);
    prt_mlp_scratch_flush(&t->mlp_scratch); /* the f32 weight adjoints, summed over the MLP nodes */
}
