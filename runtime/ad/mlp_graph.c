/* mlp_graph.c — MLP passes as recorded tape operations (mlp_graph.h). Layer l maps
   a_{l-1} to z_l = W_l a_{l-1} + b_l, a_l = s(z_l); the last layer is linear. Reverse:
   delta_L = G, g_{l-1} = W_l^T delta_l, delta_l = s'(z_l) g_l. Tangents: dz_1 = W_1 u,
   da_l = s'(z_l) dz_l, dz_{l+1} = W_{l+1} da_l; and of the reverse pass (G fixed):
   d delta_l = s''(z_l) dz_l g_l + s'(z_l) dg_l, dg_{l-1} = W_l^T d delta_l.
   Discrete gradient of the points x, y: the reverse pass with s'(z_l) replaced by the
   divided difference D_l = (s(z_l(x)) - s(z_l(y))) / (z_l(x) - z_l(y)), since then
   a_l(x) - a_l(y) = D_l (z_l(x) - z_l(y)) exactly, layer by layer, down to
   V(x) - V(y) = W_L D_{L-1} W_{L-1} ... D_1 W_1 (x - y). */
#include "mlp_graph.h"

#include "tensor_ops.h"

/* W_l and b_l of layer l (1-based) within theta. */
static long layer_offset(const PrtMlp *m, int l) {
    long off = 0;
    for (int i = 1; i < l; i++) off += (long)m->size[i] * m->size[i - 1] + m->size[i];
    return off;
}

static double *adj_at(const PrtMlpTrace *tr, long off) { return tr->theta_adj ? tr->theta_adj + off : NULL; }

/* The layers up to the output (or, when !output, up to the last hidden pre-activations). */
static void record_forward(PrtTape *t, const PrtMlp *m, const double *theta, double *theta_adj, int x, long n,
                           PrtMlpTrace *tr, bool output) {
    *tr = (PrtMlpTrace){.m = m, .theta = theta, .theta_adj = theta_adj, .n = n, .x = x, .y = -1, .cot = -1};
    for (int l = 0; l <= PRT_MLP_MAX_LAYERS; l++) tr->exps[l] = -1;
    bool keep = !output && m->act == PRT_ACT_TANH; /* for the discrete gradient's divided differences */
    int a = x, L = m->nlayers;
    for (int l = 1; l <= L - !output; l++) {
        long off = layer_offset(m, l), boff = off + (long)m->size[l] * m->size[l - 1];
        int z = prt_op_affine(t, theta + off, adj_at(tr, off), theta + boff, adj_at(tr, boff), m->size[l], m->size[l - 1], a, n, m->f32);
        tr->d1[l] = -1;
        if (l == L) {
            tr->y = z;
            break;
        }
        tr->z[l] = z;
        if (l == L - 1 && !output) {
            if (keep) tr->exps[l] = prt_op_tanh_exps(t, z);
            break;
        }
        a = tr->a[l] = keep ? prt_op_tanh_kept(t, z, m->f32, &tr->exps[l]) : prt_op_act(t, m->act, 0, z, -1, m->f32);
    }
}

int prt_mlp_graph_forward(PrtTape *t, const PrtMlp *m, const double *theta, double *theta_adj, int x, long n,
                          PrtMlpTrace *tr) {
    record_forward(t, m, theta, theta_adj, x, n, tr, true);
    return tr->y;
}

void prt_mlp_graph_preactivations(PrtTape *t, const PrtMlp *m, const double *theta, double *theta_adj, int x, long n,
                                  PrtMlpTrace *tr) {
    record_forward(t, m, theta, theta_adj, x, n, tr, false);
}

int prt_mlp_graph_vjp(PrtTape *t, PrtMlpTrace *tr, int G) {
    const PrtMlp *m = tr->m;
    int L = m->nlayers;
    long n = tr->n;
    if (G < 0) { /* a constant 1 per state: a leaf no one reads the adjoint of */
        G = prt_tape_leaf(t, n);
        double *g = prt_tape_val(t, G);
        for (long b = 0; b < n; b++) g[b] = 1;
    }
    tr->cot = G;
    int delta = G;
    for (int l = L; l >= 1; l--) {
        long off = layer_offset(m, l);
        tr->g[l - 1] = prt_op_affine_t(t, tr->theta + off, adj_at(tr, off), m->size[l], m->size[l - 1], delta, n, m->f32);
        if (l == 1) break;
        tr->d1[l - 1] = prt_op_act(t, m->act, 1, tr->z[l - 1], tr->a[l - 1], m->f32);
        delta = prt_op_mul(t, tr->g[l - 1], tr->d1[l - 1], m->size[l - 1], m->f32);
    }
    return tr->g[0];
}

/* The forward tangents dz_l of the hidden layers into dz[1..L-1], and the output's; returns it. */
static int forward_tangents(PrtTape *t, const PrtMlpTrace *tr, int U, int k, int *dz) {
    const PrtMlp *m = tr->m;
    int L = m->nlayers, da = U;
    long kn = (long)k * tr->n;
    for (int l = 1; l <= L; l++) {
        long off = layer_offset(m, l);
        int z = prt_op_affine(t, tr->theta + off, adj_at(tr, off), NULL, NULL, m->size[l], m->size[l - 1], da, kn, m->f32);
        if (l == L) return z;
        dz[l] = z;
        int d1 = tr->d1[l] >= 0 ? tr->d1[l] : prt_op_act(t, m->act, 1, tr->z[l], tr->a[l], m->f32);
        da = prt_op_mul(t, z, d1, m->size[l], m->f32);
    }
    return -1;
}

int prt_mlp_graph_jvp(PrtTape *t, const PrtMlpTrace *tr, int U, int k) {
    int dz[PRT_MLP_MAX_LAYERS + 1];
    return forward_tangents(t, tr, U, k, dz);
}

int prt_mlp_graph_hvp(PrtTape *t, const PrtMlpTrace *tr, int U, int k) {
    const PrtMlp *m = tr->m;
    int L = m->nlayers, dz[PRT_MLP_MAX_LAYERS + 1];
    long kn = (long)k * tr->n;
    forward_tangents(t, tr, U, k, dz);
    int dg = -1; /* the tangent of g_l; none at l = L - 1, where G is fixed */
    for (int l = L - 1; l >= 1; l--) {
        int rows = m->size[l];
        int d2g = prt_op_mul(t, prt_op_act(t, m->act, 2, tr->z[l], tr->a[l], m->f32), tr->g[l], rows, m->f32); /* s''(z_l) g_l */
        int ddelta = dg >= 0 ? prt_op_mul_add(t, dz[l], d2g, dg, tr->d1[l], rows, m->f32)
                              : prt_op_mul(t, dz[l], d2g, rows, m->f32);
        long off = layer_offset(m, l);
        dg = prt_op_affine_t(t, tr->theta + off, adj_at(tr, off), rows, m->size[l - 1], ddelta, kn, m->f32);
    }
    if (dg < 0) { /* a net with no hidden layer is affine: no curvature */
        dg = prt_tape_leaf(t, (long)m->size[0] * kn);
        double *v = prt_tape_val(t, dg);
        for (long i = 0; i < (long)m->size[0] * kn; i++) v[i] = 0;
    }
    return dg;
}

int prt_mlp_graph_discrete_grad(PrtTape *t, const PrtMlpTrace *tr, long a0, long b0, long n) {
    const PrtMlp *m = tr->m;
    int L = m->nlayers;
    int delta = prt_tape_leaf(t, n); /* dV/dV = 1 per pair: a leaf no one reads the adjoint of */
    double *one = prt_tape_val(t, delta);
    for (long j = 0; j < n; j++) one[j] = 1;
    int g = delta;
    for (int l = L; l >= 1; l--) {
        long off = layer_offset(m, l);
        g = prt_op_affine_t(t, tr->theta + off, adj_at(tr, off), m->size[l], m->size[l - 1], delta, n, m->f32);
        if (l == 1) break;
        int rows = m->size[l - 1];
        delta = prt_op_act_divided(t, m->act, tr->z[l - 1], rows, tr->n, a0, b0, n, g, tr->exps[l - 1], m->f32);
    }
    return g;
}
