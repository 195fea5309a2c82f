/* evaluate_orientation.c — the orientation error over time (metrics.h: ORIENTATION): for
   each rigid body the angle of the rotation that takes its true frame to the model's, summed
   over the bodies, as the Lie T2 paper's geodesic dR (Eq. E66) is. */
#include "evaluate.h"

#include <math.h>
#include <stdlib.h>

#include "core/alloc.h"

/* Axis a (0-based) of body f in state j of z (SoA, n states), in world coordinates: a column
   of R for a `state so3` body, the axis point less the centre for a body of points. */
static void body_axis(const PrtFrameBody *f, const double *z, long n, long j, int a, double out[3]) {
    for (int d = 0; d < 3; d++) out[d] = 0;
    for (int d = 0; d < f->dim; d++)
        out[d] = f->so3 ? z[(long)(f->x + 3 + 3 * d + a) * n + j]
                        : z[(long)(f->x + (a + 1) * f->dim + d) * n + j] - z[(long)(f->x + d) * n + j];
}

static double norm3(const double v[3]) { return sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]); }

static void cross3(const double a[3], const double b[3], double out[3]) {
    out[0] = a[1] * b[2] - a[2] * b[1], out[1] = a[2] * b[0] - a[0] * b[2], out[2] = a[0] * b[1] - a[1] * b[0];
}

/* The angle between two directions, by atan2: exact near 0, where acos of a dot product is not */
static double direction_angle(const double u[3], const double v[3]) {
    double c[3];
    cross3(u, v, c);
    return atan2(norm3(c), u[0] * v[0] + u[1] * v[1] + u[2] * v[2]);
}

/* An orthonormal frame (columns e0 e1 e2 of F, row-major) from two axes by Gram-Schmidt: false
   if they are (nearly) parallel or vanish */
static bool frame_of(const double a[3], const double b[3], double F[9]) {
    double e0[3], e1[3], e2[3], na = norm3(a), dot = 0;
    if (!(na > 0)) return false;
    for (int d = 0; d < 3; d++) e0[d] = a[d] / na, dot += e0[d] * b[d];
    for (int d = 0; d < 3; d++) e1[d] = b[d] - dot * e0[d];
    double nb = norm3(e1);
    if (!(nb > 1e-12 * norm3(b))) return false;
    for (int d = 0; d < 3; d++) e1[d] /= nb;
    cross3(e0, e1, e2);
    for (int d = 0; d < 3; d++) F[3 * d] = e0[d], F[3 * d + 1] = e1[d], F[3 * d + 2] = e2[d];
    return true;
}

/* The rotation angle of F^T G: atan2 of its axial part's length and (tr - 1) / 2 */
static double relative_angle(const double F[9], const double G[9]) {
    double R[9];
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 3; k++) R[3 * i + k] = F[i] * G[k] + F[3 + i] * G[3 + k] + F[6 + i] * G[6 + k];
    double s[3] = {R[7] - R[5], R[2] - R[6], R[3] - R[1]};
    return atan2(norm3(s) / 2, (R[0] + R[4] + R[8] - 1) / 2);
}

double prt_body_orientation_error(const PrtFrameBody *f, const double *z, const double *zh, long n, long j) {
    double a[3], b[3], ah[3], bh[3], F[9], G[9];
    body_axis(f, z, n, j, 0, a), body_axis(f, zh, n, j, 0, ah);
    if (f->dim == 2 || (!f->so3 && f->naxes == 1)) return direction_angle(a, ah); /* (a plane's frame is its first axis) */
    body_axis(f, z, n, j, 1, b), body_axis(f, zh, n, j, 1, bh);
    if (!frame_of(a, b, F) || !frame_of(ah, bh, G)) return NAN;
    return relative_angle(F, G);
}

void prt_eval_orientation(const PrtSystem *s, const double *truth, PrtEvalResult *r) {
    r->rigid = s->nframes > 0;
    if (!r->rigid) return;
    long n = r->n, pt = (long)prt_state_rows(s) * n;
    r->per_traj[PRT_METRIC_ORIENTATION] = prt_xalloc((size_t)n, sizeof(double), "evaluation series");
    double *e = r->series[PRT_METRIC_ORIENTATION] = prt_xalloc((size_t)(r->nt * n), sizeof(double), "evaluation series");
    for (int k = 0; k < r->nt; k++)
        for (long j = 0; j < n; j++) {
            double sum = 0;
            for (int b = 0; b < s->nframes; b++)
                sum += prt_body_orientation_error(&s->frames[b], truth + k * pt, r->pred + k * pt, n, j);
            e[k * n + j] = sum;
        }
}
