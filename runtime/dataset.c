/* dataset.c — trajectory sets (see dataset.h). */
#include "dataset.h"
#include "alloc.h"
#include "atomic_file.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void prt_trajset_free(PrtTrajSet *d) {
    free(d->xv);
    memset(d, 0, sizeof *d);
}

static double *alloc_points(long n, int npts, int N) {
    return prt_xalloc((size_t)(2L * N * n * npts + 1), sizeof(double), "trajectories");
}

int prt_trajset_generate(PrtSystem *s, long n, int npts, double dt, double rtol, double atol, uint64_t seed,
                         PrtTrajSet *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    int N = s->N;
    long pt = 2L * N * n, Nn = (long)N * n;
    double *xv = alloc_points(n, npts, N), *t = prt_xalloc((size_t)npts, sizeof(double), "observation times");
    PrtRng rng;
    prt_rng_seed(&rng, seed);
    double proj = prt_sample_initial(s, &rng, n, 1e-12, xv); /* (X, P) */
    s->lengths_set = 1; /* every later set keeps the lengths this one found */
    if (proj < 0) {
        snprintf(err, errlen, "projecting sampled initial states onto the constraints failed (seed %llu)",
                 (unsigned long long)seed);
        free(xv), free(t);
        return -1;
    }
    for (int k = 0; k < npts; k++) t[k] = k * dt;
    if (prt_dopri5(prt_hamiltonian_rhs, s, n, 2 * N, xv, t, npts, rtol, atol, xv, NULL) != 0) {
        snprintf(err, errlen, "dopri5 failed while generating data (step size underflow or a non-finite state)");
        free(xv), free(t);
        return -1;
    }
    double *v = prt_xalloc((size_t)Nn, sizeof(double), "velocities");
    for (int k = 0; k < npts; k++) { /* P -> Xdot: data are Cartesian positions and velocities */
        s->MinvP(n, xv + k * pt + Nn, s->params, v);
        memcpy(xv + k * pt + Nn, v, sizeof(double) * (size_t)Nn);
    }
    free(v), free(t);
    *out = (PrtTrajSet){.n = n, .npts = npts, .N = N, .dt = dt, .xv = xv};
    return 0;
}

void prt_trajset_windows(const PrtTrajSet *full, int chunk, int npts, PrtRng *rng, PrtTrajSet *out) {
    long n = full->n, rows = 2L * full->N;
    int nstarts = (full->npts - npts) / chunk + 1;
    *out = (PrtTrajSet){.n = n, .npts = npts, .N = full->N, .dt = full->dt, .xv = alloc_points(n, npts, full->N)};
    for (long b = 0; b < n; b++) {
        int c = (int)(prt_rng_u64(rng) % (uint64_t)nstarts);
        for (int k = 0; k < npts; k++)
            for (long i = 0; i < rows; i++)
                out->xv[(k * rows + i) * n + b] = full->xv[((long)(c * chunk + k) * rows + i) * n + b];
    }
}

void prt_trajset_chunks(const PrtTrajSet *full, int chunk, PrtRng *rng, PrtTrajSet *out) {
    prt_trajset_windows(full, chunk, chunk, rng, out); /* a window of one chunk: floor(npts / chunk) starts */
}

void prt_trajset_add_noise(PrtTrajSet *d, double sigma, PrtRng *rng) {
    long len = 2L * d->N * d->n * d->npts;
    for (long i = 0; i < len; i++) d->xv[i] += sigma * prt_rng_normal(rng);
}

void prt_trajset_gather(const PrtTrajSet *d, const long *idx, long m, double *out) {
    long n = d->n, rows = 2L * d->N * d->npts;
    for (long r = 0; r < rows; r++) {
        const double *src = d->xv + r * n;
        double *dst = out + r * m;
        for (long j = 0; j < m; j++) dst[j] = src[idx[j]];
    }
}

int prt_csv_write_soa(const char *path, const char *const *names, long cols, long n, int npts, double dt,
                      const double *data, char *err, size_t errlen) {
    PrtAtomicFile af;
    if (prt_atomic_open(&af, path, err, errlen) != 0) return -1;
    FILE *f = af.f;
    fprintf(f, "traj,t");
    for (long i = 0; i < cols; i++) fprintf(f, ",%s", names[i]);
    fputc('\n', f);
    for (int k = 0; k < npts; k++)
        for (long b = 0; b < n; b++) {
            fprintf(f, "%ld,%.17g", b, k * dt);
            for (long i = 0; i < cols; i++) fprintf(f, ",%.17g", data[(k * cols + i) * n + b]);
            fputc('\n', f);
        }
    return prt_atomic_commit(&af, err, errlen);
}

int prt_trajset_write_csv(const PrtTrajSet *d, const char *path, const char *const *names, char *err, size_t errlen) {
    return prt_csv_write_soa(path, names, 2L * d->N, d->n, d->npts, d->dt, d->xv, err, errlen);
}

/* One CSV row: traj, t, then `rows` numbers. */
typedef struct Row {
    long traj;
    double t;
    double *v;
} Row;

static int cmp_rows(const void *a, const void *b) {
    const Row *x = a, *y = b;
    if (x->traj != y->traj) return x->traj < y->traj ? -1 : 1;
    return x->t < y->t ? -1 : x->t > y->t;
}

int prt_trajset_read_csv(const char *path, int N, PrtTrajSet *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "cannot open data file %s: %s", path, strerror(errno));
        return -1;
    }
    int cols = 2 * N, rc = -1;
    long nrows = 0, cap = 0, line = 1;
    Row *rowv = NULL;
    char *buf = NULL;
    size_t bufcap = 0;
    if (getline(&buf, &bufcap, f) < 0) {
        snprintf(err, errlen, "%s: empty file", path);
        goto done;
    }
    while (getline(&buf, &bufcap, f) >= 0) {
        line++;
        char *p = buf, *end;
        while (*p == ' ' || *p == '\t') p++;
        if (*p == '\n' || *p == '\r' || !*p) continue;
        if (nrows == cap) {
            cap = cap ? 2 * cap : 1024;
            rowv = prt_xrealloc(rowv, (size_t)cap, sizeof(Row), "the rows of a CSV file");
        }
        Row *r = &rowv[nrows];
        r->v = prt_xalloc((size_t)cols, sizeof(double), "the rows of a CSV file");
        nrows++;
        double traj = strtod(p, &end);
        bool ok = end != p && *end == ',' && traj >= 0 && traj == floor(traj) && traj < 1e9;
        if (ok) r->traj = (long)traj, p = end + 1, r->t = strtod(p, &end), ok = end != p && isfinite(r->t);
        for (int i = 0; ok && i < cols; i++) {
            ok = *end == ',';
            p = end + 1;
            r->v[i] = strtod(p, &end);
            ok = ok && end != p && isfinite(r->v[i]);
        }
        while (ok && (*end == ' ' || *end == '\r' || *end == '\n')) end++;
        if (!ok || *end) {
            snprintf(err, errlen, "%s:%ld: expected traj,t and %d finite numbers (the %d coordinates and %d velocities)",
                     path, line, cols, N, N);
            goto done;
        }
    }
    if (nrows == 0) {
        snprintf(err, errlen, "%s: no data rows", path);
        goto done;
    }
    qsort(rowv, (size_t)nrows, sizeof(Row), cmp_rows);
    long ntraj = 1;
    for (long i = 1; i < nrows; i++) ntraj += rowv[i].traj != rowv[i - 1].traj;
    long npts = nrows / ntraj;
    if (npts * ntraj != nrows || npts < 2) {
        snprintf(err, errlen, "%s: every trajectory needs the same number of points (at least 2)", path);
        goto done;
    }
    double dt = rowv[1].t - rowv[0].t;
    for (long b = 0; b < ntraj; b++)
        for (long k = 0; k < npts; k++) {
            Row *r = &rowv[b * npts + k];
            if (r->traj != rowv[b * npts].traj || fabs(r->t - rowv[b * npts].t - k * dt) > 1e-9 * (1 + fabs(k * dt)) ||
                !(dt > 0)) {
                snprintf(err, errlen, "%s: trajectory %ld: points must be equally spaced in t, with the same count in "
                         "every trajectory", path, r->traj);
                goto done;
            }
        }
    out->n = ntraj, out->npts = (int)npts, out->N = N, out->dt = dt, out->xv = alloc_points(ntraj, (int)npts, N);
    for (long b = 0; b < ntraj; b++)
        for (long k = 0; k < npts; k++)
            for (int i = 0; i < cols; i++) out->xv[(k * cols + i) * ntraj + b] = rowv[b * npts + k].v[i];
    rc = 0;
done:
    for (long i = 0; i < nrows; i++) free(rowv[i].v);
    free(rowv), free(buf);
    fclose(f);
    return rc;
}
