/* fd_check.h — the unit tests' one finite-difference checker of derivatives, as ggml's
   test-backend-ops and llm.c's test_gpt2 check every backward pass against one reference:
   central differences in double precision, and the worst error with where it was, so that a
   failure names its entry.

   f(ctx, x, y) writes the m outputs y of the inputs x. A checker perturbs x[0..n) in place
   and restores it bit for bit, so f may read past x[n) (parameters after the inputs, say), or
   read x through ctx (one f of theta and of x, each checked in turn).
   An error is |got - fd| / max(scale, min(|got|, |fd|)): relative, judged by the smaller of
   the two so that a derivative given as 0 cannot pass for a large one, and absolute (over
   scale) where both are small. Every check folds into an FdWorst, so trials and points
   share one verdict:

       FdWorst w = {0};
       fd_grad(loss, &ctx, theta, np, grad, &(FdOpts){.h = 1e-6, .scale = 1e-3}, &w);
       CHECK(w.err < 1e-5, "loss gradient: " FD_FMT, FD_ARGS(w)); */
#ifndef PHYSC_TEST_FD_CHECK_H
#define PHYSC_TEST_FD_CHECK_H
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

typedef void (*FdFn)(void *ctx, const double *x, double *y);

typedef struct FdOpts {
    double h;          /* the step; 0: cbrt(DBL_EPSILON) max(1, |x_i|), near the best for f64 */
    bool rel;          /* the step h max(1, |x_i|) rather than h */
    const double *hs;  /* or a step per coordinate (a coordinate's own scale) */
    double scale;      /* where both values are below it the error is absolute, over scale (0: never) */
    long stride;       /* coordinates 0, stride, 2 stride, ... (0: every one) */
    const long *idx;   /* or these nidx coordinates */
    long nidx;
    const double *dir; /* or one check along this direction: J dir against f's difference along it */
} FdOpts;

typedef struct FdWorst {
    double err;     /* the largest error so far (a NaN counts as infinite) */
    long in, out;   /* where: the input coordinate (-1: along a direction) and the output */
    double got, fd; /* the derivative given there and its central difference */
    long count;     /* derivatives compared */
} FdWorst;

#define FD_FMT "worst error %.3g at input %ld, output %ld: %.12g, differences %.12g"
#define FD_ARGS(w) (w).err, (w).in, (w).out, (w).got, (w).fd

static inline double fd_error(double got, double fd, double scale) {
    double d = fabs(got - fd), s = fmax(scale, fmin(fabs(got), fabs(fd)));
    double e = s > 0 ? d / s : d > 0 ? INFINITY : 0;
    return isnan(e) ? INFINITY : e;
}

static inline void fd_fold(FdWorst *w, double got, double fd, double scale, long in, long out) {
    double e = fd_error(got, fd, scale);
    if (e > w->err || w->count == 0) *w = (FdWorst){e, in, out, got, fd, w->count};
    w->count++;
}

static inline double fd_step(const FdOpts *o, const double *x, long i) {
    if (o->hs) return o->hs[i];
    if (o->h <= 0) return cbrt(DBL_EPSILON) * fmax(1, fabs(x[i]));
    return o->rel ? o->h * fmax(1, fabs(x[i])) : o->h;
}

/* (f(x + h dir) - f(x - h dir)) / 2h into d (m entries) */
static inline void fd_along(FdFn f, void *ctx, double *x, long n, long m, const double *dir, double h, double *d) {
    double *keep = malloc(sizeof(double) * (size_t)(n + 2 * m)), *yp = keep + n, *ym = yp + m;
    memcpy(keep, x, sizeof(double) * (size_t)n);
    for (long i = 0; i < n; i++) x[i] = keep[i] + h * dir[i];
    f(ctx, x, yp);
    for (long i = 0; i < n; i++) x[i] = keep[i] - h * dir[i];
    f(ctx, x, ym);
    memcpy(x, keep, sizeof(double) * (size_t)n);
    for (long r = 0; r < m; r++) d[r] = (yp[r] - ym[r]) / (2 * h);
    free(keep);
}

/* The central differences D (m entries) along each chosen coordinate i, or along o->dir (i
   = -1), against J's column i (or J dir); with ybar, sum ybar_r D_r against J[i] (or J . dir),
   J then being the VJP's n entries. The differences are contracted after subtracting, which
   keeps the rounding of ybar . f out of them. */
static inline void fd_compare(FdFn f, void *ctx, double *x, long n, long m, const double *J, const double *ybar,
                              const FdOpts *o, FdWorst *w) {
    double *yp = malloc(sizeof(double) * (size_t)(3 * m)), *ym = yp + m, *d = ym + m;
    long stride = o->stride > 0 ? o->stride : 1, count = o->dir ? 1 : o->idx ? o->nidx : (n + stride - 1) / stride;
    for (long k = 0; k < count; k++) {
        long i = o->dir ? -1 : o->idx ? o->idx[k] : k * stride;
        if (o->dir) {
            fd_along(f, ctx, x, n, m, o->dir, o->h > 0 ? o->h : cbrt(DBL_EPSILON), d);
        } else {
            double save = x[i], h = fd_step(o, x, i);
            x[i] = save + h;
            f(ctx, x, yp);
            x[i] = save - h;
            f(ctx, x, ym);
            x[i] = save;
            for (long r = 0; r < m; r++) d[r] = (yp[r] - ym[r]) / (2 * h);
        }
        long rows = ybar ? 1 : m;
        for (long r = 0; r < rows; r++) {
            const double *row = J + (ybar ? 0 : r * n);
            double got = 0, fd = 0;
            if (o->dir)
                for (long j = 0; j < n; j++) got += row[j] * o->dir[j];
            else
                got = row[i];
            if (ybar)
                for (long q = 0; q < m; q++) fd += ybar[q] * d[q];
            else
                fd = d[r];
            fd_fold(w, got, fd, o->scale, i, r);
        }
    }
    free(yp);
}

/* A Jacobian J (m x n, row-major: J[r n + i] = d y_r / d x_i) against central differences,
   coordinate by coordinate, or along o->dir */
static inline void fd_jacobian(FdFn f, void *ctx, double *x, long n, long m, const double *J, const FdOpts *o,
                               FdWorst *w) {
    fd_compare(f, ctx, x, n, m, J, NULL, o, w);
}

/* A scalar f's gradient g (n entries) */
static inline void fd_grad(FdFn f, void *ctx, double *x, long n, const double *g, const FdOpts *o, FdWorst *w) {
    fd_compare(f, ctx, x, n, 1, g, NULL, o, w);
}

/* A vector-Jacobian product xbar = ybar^T J (n entries) against ybar . (f's central differences) */
static inline void fd_vjp(FdFn f, void *ctx, double *x, long n, long m, const double *ybar, const double *xbar,
                          const FdOpts *o, FdWorst *w) {
    fd_compare(f, ctx, x, n, m, xbar, ybar, o, w);
}

/* A Jacobian-vector product Ju = J u (m entries) against f's central difference along u
   (o->h the step; o->dir unused) */
static inline void fd_jvp(FdFn f, void *ctx, double *x, long n, long m, const double *u, const double *Ju,
                          const FdOpts *o, FdWorst *w) {
    double *d = malloc(sizeof(double) * (size_t)m);
    fd_along(f, ctx, x, n, m, u, o->h > 0 ? o->h : cbrt(DBL_EPSILON), d);
    for (long r = 0; r < m; r++) fd_fold(w, Ju[r], d[r], o->scale, -1, r);
    free(d);
}

#endif
