/* mlp_passes.h — the MLP passes of mlp.c written once over REAL, so the same code runs in
   double (cblas_dgemm) and in float (cblas_sgemm). mlp.c includes it twice, with REAL,
   NAME(f) (a suffixed name), GEMM (the counting wrapper of the BLAS call), FN(f) (the
   libm function of that precision) and VTANH (the vectorized tanh) defined. The formulas are in mlp.c's header. */

#define ARR(field, l) ((REAL *)w->field[l])

static const REAL *NAME(weights)(const PrtMlp *m, const REAL *theta, int l) { /* W_l, then b_l */
    long off = 0;
    for (int k = 1; k < l; k++) off += (long)m->size[k] * m->size[k - 1] + m->size[k];
    return theta + off;
}

/* s(z), s'(z) and s''(z) over an array (all three: the passes keep them); at the machine's
   vector width (SiLU's loops took a ninth of a Lie T2 training in f32 at the baseline's). */
PRT_SIMD_CLONES static void NAME(act)(PrtActivation a, long len, const REAL *z, REAL *s, REAL *ds, REAL *dds) {
    if (a == PRT_ACT_TANH) { /* the vectorized tanh; the passes take s' and s'' from it */
        VTANH(len, z, s);
        return;
    }
#ifdef VSILU
    if (a == PRT_ACT_SILU) { /* (float: all three from one exponential, vsilu.c) */
        VSILU(len, z, s, ds, dds);
        return;
    }
#endif
    if (a == PRT_ACT_SILU) { /* sigma(x) = (1 + tanh(x/2)) / 2 through the vectorized tanh (libm's exp
                                took 7 % of a Lie T2 training); sigma (1 - sigma) = (1 - t)(1 + t) / 4.
                                In blocks, so that the halves and their tanh stay in L1 */
        enum { BLOCK = 512 };
        REAL half[BLOCK], th[BLOCK];
        for (long i0 = 0; i0 < len; i0 += BLOCK) {
            long b = len - i0 < BLOCK ? len - i0 : BLOCK;
            const REAL *zb = z + i0;
            for (long i = 0; i < b; i++) half[i] = zb[i] / 2;
            VTANH(b, half, th);
            for (long i = 0; i < b; i++) {
                REAL x = zb[i], t = th[i], sg = (1 + t) / 2, q = (1 - t) * (1 + t) / 4;
                s[i0 + i] = x * sg, ds[i0 + i] = sg + x * q, dds[i0 + i] = q * (2 - x * t);
            }
        }
        return;
    }
    for (long i = 0; i < len; i++) {
        REAL x = z[i], v, d1, d2;
        REAL sg = x >= 0 ? 1 / (1 + FN(exp)(-x)) : FN(exp)(x) / (1 + FN(exp)(x));
        if (a == PRT_ACT_SOFTPLUS) {
            v = x > 30 ? x : FN(log1p)(FN(exp)(x));
            d1 = sg;
            d2 = sg * (1 - sg);
        } else { /* SiLU x s(x) */
            v = x * sg;
            d1 = sg + x * sg * (1 - sg);
            d2 = sg * (1 - sg) * (2 + x * (1 - 2 * sg));
        }
        s[i] = v, ds[i] = d1, dds[i] = d2;
    }
}

/* The forward pass from the inputs the caller put in a_0: the output is z_L. */
PRT_SIMD_CLONES static void NAME(forward)(const PrtMlp *m, const REAL *theta, long n, PrtMlpWork *w) {
    int L = m->nlayers;
    for (int l = 1; l <= L; l++) { /* z_l = a_{l-1} W_l^T + b_l */
        int out = m->size[l], in = m->size[l - 1];
        const REAL *W = NAME(weights)(m, theta, l), *b = W + (long)out * in;
        for (int j = 0; j < out; j++) /* Z_l = W_l A_{l-1} + b_l */
            for (long r = 0; r < n; r++) ARR(z, l)[j * n + r] = b[j];
        GEMM(CblasNoTrans, CblasNoTrans, out, (int)n, in, 1, W, in, ARR(a, l - 1), (int)n, 1, ARR(z, l),
                    (int)n);
        if (l < L) NAME(act)(m->act, n * out, ARR(z, l), ARR(a, l), ARR(ds, l), ARR(dds, l));
    }
}

/* The reverse sweep of the forward pass alone (ordinary backpropagation), from the output
   cotangent the caller put in zbar_L: thetabar += its share (unless NULL), the inputs'
   cotangent left in tmp. */
PRT_SIMD_CLONES static void NAME(vjp)(const PrtMlp *m, const REAL *theta, long n, REAL *thetabar, PrtMlpWork *w) {
    REAL *t = w->tmp;
    for (int l = m->nlayers; l >= 1; l--) {
        int out = m->size[l], in = m->size[l - 1];
        const REAL *W = NAME(weights)(m, theta, l);
        if (thetabar) { /* Wbar_l += Zbar_l A_{l-1}^T;  bbar_l += row sums of Zbar_l */
            REAL *Wbar = (REAL *)NAME(weights)(m, thetabar, l), *bbar = Wbar + (long)out * in;
            GEMM(CblasNoTrans, CblasTrans, out, in, (int)n, 1, ARR(zbar, l), (int)n, ARR(a, l - 1), (int)n, 1, Wbar,
                 in);
            for (int j = 0; j < out; j++)
                for (long r = 0; r < n; r++) bbar[j] += ARR(zbar, l)[j * n + r];
        }
        /* Abar_{l-1} = W_l^T Zbar_l;  zbar_{l-1} = abar_{l-1} * s'(z_{l-1}) */
        GEMM(CblasTrans, CblasNoTrans, in, (int)n, out, 1, W, in, ARR(zbar, l), (int)n, 0, t, (int)n);
        if (l == 1) break;
        REAL *zb = ARR(zbar, l - 1);
        if (m->act == PRT_ACT_TANH) {
            const REAL *s = ARR(a, l - 1);
            for (long i = 0; i < n * in; i++) zb[i] = t[i] * (1 - s[i] * s[i]);
        } else {
            const REAL *ds = ARR(ds, l - 1);
            for (long i = 0; i < n * in; i++) zb[i] = t[i] * ds[i];
        }
    }
}

/* The forward and backward passes, from the inputs the caller put in a_0. */
PRT_SIMD_CLONES static void NAME(value_grad)(const PrtMlp *m, const REAL *theta, long n, PrtMlpWork *w) {
    int L = m->nlayers;
    NAME(forward)(m, theta, n, w);
    /* backward: delta_L = 1 */
    for (long r = 0; r < n; r++) ARR(delta, L)[r] = 1;
    for (int l = L; l >= 1; l--) {
        int out = m->size[l], in = m->size[l - 1];
        const REAL *W = NAME(weights)(m, theta, l);
        /* G_{l-1} = W_l^T Delta_l */
        GEMM(CblasTrans, CblasNoTrans, in, (int)n, out, 1, W, in, ARR(delta, l), (int)n, 0, ARR(g, l - 1),
                    (int)n);
        if (l - 1 >= 1 && m->act == PRT_ACT_TANH) {
            const REAL *s = ARR(a, l - 1);
            for (long i = 0; i < n * in; i++) ARR(delta, l - 1)[i] = ARR(g, l - 1)[i] * (1 - s[i] * s[i]);
        } else if (l - 1 >= 1) {
            const REAL *ds = ARR(ds, l - 1);
            for (long i = 0; i < n * in; i++) ARR(delta, l - 1)[i] = ARR(g, l - 1)[i] * ds[i];
        }
    }
}

/* The reverse sweep, from the cotangent the caller put in gbar_0: thetabar += dS/dtheta,
   and dS/dx left in tmp. */
PRT_SIMD_CLONES static void NAME(grad_vjp)(const PrtMlp *m, const REAL *theta, long n, REAL *thetabar, PrtMlpWork *w) {
    int L = m->nlayers;
    REAL *t = w->tmp;
    for (int l = 0; l <= L; l++) memset(ARR(zbar, l), 0, sizeof(REAL) * (size_t)(n * m->size[l]));
    /* back through the backward pass, l = 1..L */
    for (int l = 1; l <= L; l++) {
        int out = m->size[l], in = m->size[l - 1];
        const REAL *W = NAME(weights)(m, theta, l);
        REAL *Wbar = (REAL *)NAME(weights)(m, thetabar, l);
        /* Wbar_l += Delta_l Gbar_{l-1}^T */
        GEMM(CblasNoTrans, CblasTrans, out, in, (int)n, 1, ARR(delta, l), (int)n, ARR(gbar, l - 1),
                    (int)n, 1, Wbar, in);
        if (l == L) break; /* delta_L = 1 is a constant */
        /* Deltabar_l = W_l Gbar_{l-1} */
        GEMM(CblasNoTrans, CblasNoTrans, out, (int)n, in, 1, W, in, ARR(gbar, l - 1), (int)n, 0, t,
                    (int)n);
        if (m->act == PRT_ACT_TANH) {
            const REAL *s = ARR(a, l);
            for (long i = 0; i < n * out; i++) {
                REAL d1 = 1 - s[i] * s[i];
                ARR(zbar, l)[i] += t[i] * ARR(g, l)[i] * (-2 * s[i] * d1);
                ARR(gbar, l)[i] = t[i] * d1;
            }
        } else {
            const REAL *ds = ARR(ds, l), *dds = ARR(dds, l);
            for (long i = 0; i < n * out; i++) {
                ARR(zbar, l)[i] += t[i] * ARR(g, l)[i] * dds[i];
                ARR(gbar, l)[i] = t[i] * ds[i];
            }
        }
    }
    /* back through the forward pass: S does not depend on z_L, so start from zbar_{L-1} */
    for (int l = L - 2; l >= 0; l--) {
        int out = m->size[l + 1], in = m->size[l];
        const REAL *W = NAME(weights)(m, theta, l + 1);
        REAL *Wbar = (REAL *)NAME(weights)(m, thetabar, l + 1), *bbar = Wbar + (long)out * in;
        /* Wbar_{l+1} += Zbar_{l+1} A_l^T;  bbar += row sums;  Abar_l = W_{l+1}^T Zbar_{l+1} */
        GEMM(CblasNoTrans, CblasTrans, out, in, (int)n, 1, ARR(zbar, l + 1), (int)n, ARR(a, l), (int)n,
                    1, Wbar, in);
        for (int j = 0; j < out; j++)
            for (long r = 0; r < n; r++) bbar[j] += ARR(zbar, l + 1)[j * n + r];
        GEMM(CblasTrans, CblasNoTrans, in, (int)n, out, 1, W, in, ARR(zbar, l + 1), (int)n, 0, t,
                    (int)n);
        if (l >= 1 && m->act == PRT_ACT_TANH) {
            const REAL *s = ARR(a, l);
            for (long i = 0; i < n * in; i++) ARR(zbar, l)[i] += t[i] * (1 - s[i] * s[i]);
        } else if (l >= 1) {
            const REAL *ds = ARR(ds, l);
            for (long i = 0; i < n * in; i++) ARR(zbar, l)[i] += t[i] * ds[i];
        }
    }
}

#undef ARR
