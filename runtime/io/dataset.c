/* dataset.c — trajectory sets (see dataset.h). */
#include "dataset.h"
#include "core/alloc.h"
#include "core/atomic_file.h"
#include "core/input_file.h"
#include "integrators/fixed_steps.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void prt_trajset_free(PrtTrajSet *d) {
    free(d->xv);
    memset(d, 0, sizeof *d);
}

static double *alloc_points(long n, int npts, int W) {
    return prt_xalloc((size_t)((long)W * n * npts + 1), sizeof(double), "trajectories");
}

int prt_trajset_generate(PrtSystem *s, long n, int npts, double dt, double rtol, double atol, uint64_t seed,
                         PrtTrajSet *out, char *err, size_t errlen) {
    PrtDataSolver dopri5 = {PRT_INT_DOPRI5, 1, rtol, atol, NULL};
    return prt_trajset_generate_by(s, n, npts, dt, &dopri5, seed, out, err, errlen);
}

int prt_trajset_generate_by(PrtSystem *s, long n, int npts, double dt, const PrtDataSolver *solver, uint64_t seed,
                            PrtTrajSet *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    int N = s->N, W = prt_state_rows(s);
    long pt = (long)W * n, Nn = (long)N * n, NPn = (long)s->NP * n;
    double *xv = alloc_points(n, npts, W), *t = prt_xalloc((size_t)npts, sizeof(double), "observation times");
    PrtRng rng;
    prt_rng_seed(&rng, seed);
    double proj = prt_sample_initial(s, &rng, n, 1e-12, xv); /* (X, P) */
    s->lengths_set = 1; /* every later set keeps the lengths this one found */
    if (proj == PRT_INIT_NONFINITE) {
        prt_describe_init_failure(s, n, xv, err, errlen);
        free(xv), free(t);
        return -1;
    }
    if (proj < 0) {
        char why[512];
        prt_describe_projection_failure(s, n, xv, why, sizeof why);
        snprintf(err, errlen, "%s (seed %llu)", why, (unsigned long long)seed);
        free(xv), free(t);
        return -1;
    }
    for (int k = 0; k < npts; k++) t[k] = k * dt;
    PrtOdeStats st;
    char why[256];
    int failed = solver->integrator == PRT_INT_DOPRI5
                     ? prt_dopri5_observed(prt_hamiltonian_rhs, s, n, W, xv, t, npts, solver->rtol, solver->atol, xv, &st,
                                           solver->progress)
                     : prt_fixed_steps(s, (PrtIntegrator)solver->integrator, n, dt, solver->substeps, npts, xv, solver->progress, why,
                                       sizeof why);
    if (failed) {
        if (solver->integrator == PRT_INT_DOPRI5) prt_ode_describe_failure(&st, n, s->names, why, sizeof why);
        snprintf(err, errlen, "%s failed while generating data (seed %llu): %s", prt_integrators[solver->integrator].name,
                 (unsigned long long)seed, why);
        free(xv), free(t);
        return -1;
    }
    double *v = prt_xalloc((size_t)NPn, sizeof(double), "velocities");
    for (int k = 0; k < npts; k++) { /* P -> Xdot: data are Cartesian positions and velocities */
        prt_minv(s, n, xv + k * pt + Nn, v);
        memcpy(xv + k * pt + Nn, v, sizeof(double) * (size_t)NPn);
    }
    free(v), free(t);
    *out = (PrtTrajSet){.n = n, .npts = npts, .N = N, .W = W, .dt = dt, .xv = xv};
    return 0;
}

void prt_trajset_windows(const PrtTrajSet *full, int chunk, int npts, PrtRng *rng, PrtTrajSet *out) {
    long n = full->n, rows = full->W;
    int nstarts = (full->npts - npts) / chunk + 1;
    *out = (PrtTrajSet){.n = n, .npts = npts, .N = full->N, .W = full->W, .dt = full->dt,
                        .xv = alloc_points(n, npts, full->W)};
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

void prt_trajset_all_windows(const PrtTrajSet *full, int w, PrtTrajSet *out) {
    long n = full->n, starts = full->npts >= w ? full->npts - w + 1 : 0, m = n * starts, pt = full->W;
    *out = (PrtTrajSet){.n = m, .npts = w, .N = full->N, .W = full->W, .dt = full->dt,
                        .xv = prt_xalloc((size_t)(pt * w * m + 1), sizeof(double), "training windows")};
    for (int k = 0; k < w; k++)
        for (long r = 0; r < pt; r++)
            for (long j = 0; j < starts; j++)
                memcpy(out->xv + (k * pt + r) * m + j * n, full->xv + ((j + k) * pt + r) * n, sizeof(double) * (size_t)n);
}

void prt_trajset_add_noise(PrtTrajSet *d, double sigma, PrtRng *rng) {
    long n = d->n, rows = (long)d->W * d->npts;
    for (long b = 0; b < n; b++) /* trajectory by trajectory: b's noise does not depend on n */
        for (long r = 0; r < rows; r++) d->xv[r * n + b] += sigma * prt_rng_normal(rng);
}

void prt_trajset_gather(const PrtTrajSet *d, const long *idx, long m, double *out) {
    long n = d->n, rows = (long)d->W * d->npts;
    for (long r = 0; r < rows; r++) {
        const double *src = d->xv + r * n;
        double *dst = out + r * m;
        for (long j = 0; j < m; j++) dst[j] = src[idx[j]];
    }
}

/* x in the fewest significant digits (15 to 17) that read back as x: times as 0.04, not
   0.040000000000000001 (the same double). */
static void put_shortest(FILE *f, double x) {
    char b[32];
    for (int digits = 15; digits <= 17; digits++) {
        snprintf(b, sizeof b, "%.*g", digits, x);
        if (strtod(b, NULL) == x) break;
    }
    fputs(b, f);
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
            fprintf(f, "%ld,", b);
            put_shortest(f, k * dt); /* the states keep all 17 digits */
            for (long i = 0; i < cols; i++) fprintf(f, ",%.17g", data[(k * cols + i) * n + b]);
            fputc('\n', f);
        }
    return prt_atomic_commit(&af, err, errlen);
}

int prt_trajset_write_csv(const PrtTrajSet *d, const char *path, const char *const *names, char *err, size_t errlen) {
    if (!d->velocities_estimated) return prt_csv_write_soa(path, names, d->W, d->n, d->npts, d->dt, d->xv, err, errlen);
    /* estimated velocities are not data: written, they would read back as observed ones */
    long len = (long)d->N * d->n;
    double *q = prt_xalloc((size_t)(len * d->npts + 1), sizeof(double), "positions");
    for (int k = 0; k < d->npts; k++) memcpy(q + k * len, d->xv + (long)k * d->W * d->n, sizeof(double) * (size_t)len);
    int rc = prt_csv_write_soa(path, names, d->N, d->n, d->npts, d->dt, q, err, errlen);
    free(q);
    return rc;
}

/* One CSV row: traj, t, then `rows` numbers, and its line in the file. */
typedef struct Row {
    long traj, line;
    double t;
    double *v;
} Row;

static int cmp_rows(const void *a, const void *b) {
    const Row *x = a, *y = b;
    if (x->traj != y->traj) return x->traj < y->traj ? -1 : 1;
    if (x->t != y->t) return x->t < y->t ? -1 : 1;
    return x->line < y->line ? -1 : x->line > y->line; /* equal t: file order, for the message */
}

/* The header must name the columns in the order `physc simulate --out` writes them (cols =
   2N), or the N positions alone (cols = N): anything else (swapped, renamed or missing
   columns) would train on the wrong numbers. */
static bool check_header(const char *path, char *line, int N, int cols, const char *const *names, char *err, size_t errlen) {
    line[strcspn(line, "\r\n")] = 0;
    char positions_only[64] = "";
    if (cols == N) snprintf(positions_only, sizeof positions_only, ", or traj,t and the %d position%s alone", N, N == 1 ? "" : "s");
    char *p = line;
    for (int c = 0; c < cols + 2; c++) {
        const char *want = c == 0 ? "traj" : c == 1 ? "t" : names[c - 2];
        size_t len = strcspn(p, ",");
        char *found = p;
        bool last = !p[len];
        p[len] = 0;
        while (*found == ' ') found++;
        for (char *e = found + strlen(found); e > found && e[-1] == ' ';) *--e = 0;
        if (strcmp(found, want)) {
            char all[400] = "traj,t";
            for (int i = 0; i < 2 * N && strlen(all) + strlen(names[i]) + 5 < sizeof all; i++)
                snprintf(all + strlen(all), sizeof all - strlen(all), ",%s%s", names[i],
                         i + 1 < 2 * N && strlen(all) + strlen(names[i]) + strlen(names[i + 1]) + 7 >= sizeof all ? ",..." : "");
            snprintf(err, errlen, "%s:1: column %d of the header is '%s' where '%s' is expected: this system's columns are "
                     "%s (as physc simulate --out writes them)%s", path, c + 1, found, want, all, positions_only);
            return false;
        }
        if (last && c + 1 < cols + 2) {
            snprintf(err, errlen, "%s:1: the header has %d columns; this system's data has %d (the next would be '%s'), "
                     "or %d with the positions alone", path, c + 1, cols + 2, c + 1 < 2 ? "t" : names[c - 1], N + 2);
            return false;
        }
        p += last ? len : len + 1;
    }
    if (*p) {
        snprintf(err, errlen, "%s:1: the header has more than the %d columns of this system's data (traj,t,%s,...,%s)",
                 path, cols + 2, names[0], names[cols - 1]);
        return false;
    }
    return true;
}

int prt_trajset_read_csv(const char *path, int N, const char *const *names, PrtTrajSet *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    FILE *f = prt_fopen_input(path, "data file", err, errlen);
    if (!f) return -1;
    int cols = 2 * N, rc = -1;
    long nrows = 0, cap = 0, line = 1;
    Row *rowv = NULL;
    char *buf = NULL;
    size_t bufcap = 0;
    if (getline(&buf, &bufcap, f) < 0) {
        snprintf(err, errlen, "%s: empty file", path);
        goto done;
    }
    int header_cols = 1;
    for (const char *c = buf; *c; c++) header_cols += *c == ',';
    bool positions_only = header_cols == N + 2; /* recorded positions: velocities estimated below */
    if (positions_only) cols = N;
    if (!check_header(path, buf, N, cols, names, err, errlen)) goto done;
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
        r->line = line;
        nrows++;
        double traj = strtod(p, &end);
        bool ok = end != p && *end == ',' && traj >= 0 && traj == floor(traj) && traj < 1e9;
        int bad_col = -1; /* a number that is not finite */
        if (ok) r->traj = (long)traj, p = end + 1, r->t = strtod(p, &end), ok = end != p, bad_col = isfinite(r->t) ? -1 : 1;
        for (int i = 0; ok && bad_col < 0 && i < cols; i++) {
            ok = *end == ',';
            p = end + 1;
            r->v[i] = strtod(p, &end);
            ok = ok && end != p;
            if (ok && !isfinite(r->v[i])) bad_col = i + 2;
        }
        if (ok && bad_col >= 0) {
            snprintf(err, errlen, "%s:%ld: %s is %g: every value must be a finite number", path, line,
                     bad_col == 1 ? "t" : names[bad_col - 2], bad_col == 1 ? r->t : r->v[bad_col - 2]);
            goto done;
        }
        while (ok && (*end == ' ' || *end == '\r' || *end == '\n')) end++;
        if (!ok || *end) {
            if (positions_only)
                snprintf(err, errlen, "%s:%ld: expected traj,t and %d finite number%s (the coordinate%s, as the header says)",
                         path, line, N, N == 1 ? "" : "s", N == 1 ? "" : "s");
            else
                snprintf(err, errlen, "%s:%ld: expected traj,t and %d finite numbers (the %d coordinate%s and %d velocit%s)",
                         path, line, cols, N, N == 1 ? "" : "s", N, N == 1 ? "y" : "ies");
            goto done;
        }
    }
    if (nrows == 0) {
        snprintf(err, errlen, "%s: no data rows (only a header)", path);
        goto done;
    }
    qsort(rowv, (size_t)nrows, sizeof(Row), cmp_rows);
    /* every trajectory: its rows in increasing t, as many as the first trajectory's, equally spaced */
    long ntraj = 0, npts = 0;
    double dt = 0;
    for (long first = 0, next; first < nrows; first = next, ntraj++) {
        Row *r = &rowv[first];
        for (next = first + 1; next < nrows && rowv[next].traj == r->traj; next++) {
            Row *a = &rowv[next - 1], *b = &rowv[next];
            if (a->t == b->t) {
                snprintf(err, errlen, "%s:%ld: trajectory %ld has t = %.10g twice (also line %ld)", path, b->line, r->traj,
                         b->t, a->line);
                goto done;
            }
            if (b->line < a->line) {
                snprintf(err, errlen, "%s:%ld: t = %.10g comes after t = %.10g in trajectory %ld: a trajectory's rows "
                         "must come in increasing t", path, a->line, a->t, b->t, r->traj);
                goto done;
            }
        }
        long count = next - first;
        if (first == 0) npts = count, dt = count > 1 ? rowv[1].t - rowv[0].t : 0;
        if (count < 2 || count != npts || (positions_only && count < 3)) {
            if (count < 2) snprintf(err, errlen, "%s: trajectory %ld has only one point", path, r->traj);
            else if (count < 3)
                snprintf(err, errlen, "%s: trajectory %ld has only 2 points: the velocities of positions alone are estimated "
                         "from 3 or more (second-order finite differences)", path, r->traj);
            else snprintf(err, errlen, "%s: trajectory %ld has %ld points and trajectory %ld has %ld: every trajectory "
                          "needs the same number", path, r->traj, count, rowv[0].traj, npts);
            goto done;
        }
        for (long k = 1; k < count; k++) {
            Row *q = &rowv[first + k];
            double want = r->t + k * dt;
            if (fabs(q->t - want) > 1e-9 * (1 + fabs(k * dt))) {
                snprintf(err, errlen, "%s:%ld: t = %.10g where %.10g is expected: points must be equally spaced in t, "
                         "dt %.10g apart (as the first trajectory's first two)", path, q->line, q->t, want, dt);
                goto done;
            }
        }
    }
    out->n = ntraj, out->npts = (int)npts, out->N = N, out->W = 2 * N, out->dt = dt;
    out->xv = alloc_points(ntraj, (int)npts, 2 * N);
    for (long b = 0; b < ntraj; b++)
        for (long k = 0; k < npts; k++)
            for (int i = 0; i < cols; i++) out->xv[(k * 2 * N + i) * ntraj + b] = rowv[b * npts + k].v[i];
    if (positions_only) prt_trajset_estimate_velocities(out);
    rc = 0;
done:
    for (long i = 0; i < nrows; i++) free(rowv[i].v);
    free(rowv), free(buf);
    fclose(f);
    return rc;
}

void prt_trajset_estimate_velocities(PrtTrajSet *d) {
    long len = (long)d->N * d->n, pt = (long)d->W * d->n, K = d->npts - 1; /* W = 2N: no so3 bodies */
    double h2 = 2 * d->dt;
    for (long k = 0; k <= K; k++) {
        const double *q = d->xv; /* point j's positions at q + j * pt */
        double *v = d->xv + k * pt + len;
        for (long i = 0; i < len; i++)
            v[i] = k == 0   ? (-3 * q[i] + 4 * q[pt + i] - q[2 * pt + i]) / h2
                   : k == K ? (3 * q[K * pt + i] - 4 * q[(K - 1) * pt + i] + q[(K - 2) * pt + i]) / h2
                            : (q[(k + 1) * pt + i] - q[(k - 1) * pt + i]) / h2;
    }
    d->velocities_estimated = true;
}

void prt_trajset_constraint_offset(const PrtSystem *s, const PrtTrajSet *d, PrtConstraintOffset *off) {
    memset(off, 0, sizeof *off);
    long n = d->n, N = s->N, C = s->C, pt = (long)d->W * n;
    if (C == 0 || n == 0) return;
    double pos_scale = 0, vel_scale = 0, dist = 0, speed = 0;
    for (long k = 0; k < d->npts; k++)
        for (long i = 0; i < pt; i++) {
            double a = fabs(d->xv[k * pt + i]);
            if (i < N * n) pos_scale = fmax(pos_scale, a);
            else vel_scale = fmax(vel_scale, a);
        }
    double *phi = prt_xalloc((size_t)(C * n), sizeof(double), "CSV checks"), *phid = prt_xalloc((size_t)(C * n), sizeof(double), "CSV checks"),
           *norm = prt_xalloc((size_t)(C * n), sizeof(double), "CSV checks");
    const double *lengths = s->params + s->nmass;
    for (long k = 0; k < d->npts; k++) {
        const double *z = d->xv + k * pt;
        prt_phi(s, n, z, lengths, phi);
        prt_phidot(s, n, z, lengths, phid);
        prt_dphi_row_norms(s, n, z, norm);
        for (long r = 0; r < C; r++)
            for (long b = 0; b < n; b++) {
                double g = norm[r * n + b]; /* |grad Phi_r|: Phi_r / g is the distance off row r to first order */
                double p = fabs(phi[r * n + b]), q = fabs(phid[r * n + b]);
                off->phi = fmax(off->phi, p), off->phidot = fmax(off->phidot, q);
                dist = fmax(dist, p == 0 ? 0 : p / g), speed = fmax(speed, q == 0 ? 0 : q / g);
            }
    }
    free(phi), free(phid), free(norm);
    off->rel_pos = dist == 0 ? 0 : dist / pos_scale;
    off->rel_vel = speed == 0 ? 0 : speed / vel_scale;
}

int prt_trajset_load(PrtSystem *s, const char *path, PrtTrajSet *out, char *warning, size_t wlen, char *err,
                     size_t errlen) {
    warning[0] = 0;
    if (s->NP != s->N) {
        snprintf(err, errlen, "%s: trajectories from a file need a system without `state so3` bodies", path);
        return -1;
    }
    if (prt_trajset_read_csv(path, s->N, s->names, out, err, errlen) != 0) return -1;
    prt_take_free_lengths(s, out->xv, out->n); /* open lengths: the file's first state's */
    PrtConstraintOffset off;
    prt_trajset_constraint_offset(s, out, &off);
    /* Distances off the constraints relative to the data's scale (max of rel_pos, rel_vel),
       measured on `physc simulate --out` files of 8 examples (pendulum1-5, coupled3, magnet,
       gyroscope, rotor): dopri5 at rtol 1e-7 (the data default) leaves at most 2.4e-6, at
       rtol 1e-5 3e-4; uniform noise of 1e-3 (1e-2) on every value gives 2.4e-3 (2.4e-2);
       another system's or shuffled columns give 0.8 to 600. So: warn above 40x what the
       default solver leaves, refuse above 4x what 1 % noise gives. */
    const double warn_above = 1e-4, refuse_above = 0.1;
    /* Estimated velocities are off Phi_dot = 0 by their truncation error, O((omega dt)^2) of
       the speed (a chord's slope is not the tangent's), which says nothing of whose data
       these are: the positions alone decide. */
    bool estimated = out->velocities_estimated;
    double worst = estimated ? off.rel_pos : fmax(off.rel_pos, off.rel_vel);
    char figures[256];
    if (estimated)
        snprintf(figures, sizeof figures, "max |Phi| %.3g, distances of %.2g of the positions' scale; the velocities, "
                 "estimated, not checked", off.phi, off.rel_pos);
    else
        snprintf(figures, sizeof figures, "max |Phi| %.3g and |Phi_dot| %.3g, distances of %.2g of the positions' scale and "
                 "%.2g of the velocities'", off.phi, off.phidot, off.rel_pos, off.rel_vel);
    if (worst > refuse_above) {
        snprintf(err, errlen, "%s: the states are far off this system's constraints (%s; refused above %g): is this "
                 "another system's data, or are columns swapped?", path, figures, refuse_above);
        prt_trajset_free(out);
        return -1;
    }
    if (worst > warn_above)
        snprintf(warning, wlen, "%s: the states are off the constraints (%s), more than an accurate solver leaves "
                 "(%g of the scale)", path, figures, warn_above);
    return 0;
}
