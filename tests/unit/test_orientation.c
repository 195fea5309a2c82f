/* test_orientation.c — the orientation error of bodies of points with axes
   (runtime/train/evaluate_orientation.c) against closed forms: a body's axis points turned by a
   known rotation about its centre (and moved) give that rotation's angle, for three axes, two
   (the third is their cross product), one (the angle between the directions) and in the plane;
   small angles to their last digits; parallel axes give NaN, not a number that means nothing. */
#include <math.h>
#include <string.h>

#include "check.h"
#include "integrators/lie_group.h"
#include "train/evaluate.h"

enum { MAXROWS = 12 };

/* A body of points at x = 0 with `naxes` axis points: the truth's axes are A's first columns
   (scaled by 0.7: axis points need not be a unit away), the model's the same turned by R_turn
   and moved by 0.3 along each coordinate. The angle the metric gives. */
static double measure(int dim, int naxes, const double A[9], const double turn[9]) {
    double z[MAXROWS] = {0}, zh[MAXROWS] = {0}, centre[3] = {0.4, -1.2, 2.0};
    PrtFrameBody f = {.x = 0, .dim = dim, .naxes = naxes, .so3 = false};
    for (int d = 0; d < dim; d++) z[d] = centre[d], zh[d] = centre[d] + 0.3;
    for (int a = 0; a < naxes; a++)
        for (int d = 0; d < dim; d++) {
            double turned = 0;
            for (int e = 0; e < dim; e++) turned += turn[3 * d + e] * A[3 * e + a];
            z[(a + 1) * dim + d] = centre[d] + 0.7 * A[3 * d + a];
            zh[(a + 1) * dim + d] = zh[d] + 0.7 * turned;
        }
    return prt_body_orientation_error(&f, z, zh, 1, 0);
}

int main(void) {
    double A[9], w0[3] = {0.3, -0.5, 0.8};
    prt_so3_exp(w0, A); /* the body's axes: some frame, not the world's */
    const double angles[] = {1e-9, 1e-5, 0.3, 1.7, 3.0};
    double worst[4] = {0};
    for (int i = 0; i < 5; i++) {
        double th = angles[i], axis[3] = {2, -1, 0.5}, na = sqrt(5.25), w[3], Rt[9];
        for (int d = 0; d < 3; d++) w[d] = th * axis[d] / na;
        prt_so3_exp(w, Rt);
        worst[0] = fmax(worst[0], fabs(measure(3, 3, A, Rt) - th) / th);
        worst[1] = fmax(worst[1], fabs(measure(3, 2, A, Rt) - th) / th);
        /* one axis: the angle its direction turns, acos(a . R a) */
        double a[3] = {A[0], A[3], A[6]}, ra[3] = {0}, dot = 0, cr[3];
        for (int d = 0; d < 3; d++)
            for (int e = 0; e < 3; e++) ra[d] += Rt[3 * d + e] * a[e];
        cr[0] = a[1] * ra[2] - a[2] * ra[1], cr[1] = a[2] * ra[0] - a[0] * ra[2], cr[2] = a[0] * ra[1] - a[1] * ra[0];
        for (int d = 0; d < 3; d++) dot += a[d] * ra[d];
        double want = atan2(sqrt(cr[0] * cr[0] + cr[1] * cr[1] + cr[2] * cr[2]), dot);
        worst[2] = fmax(worst[2], fabs(measure(3, 1, A, Rt) - want) / want);
        /* the plane: a turn by th */
        double P[9] = {cos(0.4), -sin(0.4), 0, sin(0.4), cos(0.4), 0, 0, 0, 1};
        double T2[9] = {cos(th), -sin(th), 0, sin(th), cos(th), 0, 0, 0, 1};
        worst[3] = fmax(worst[3], fabs(measure(2, 2, P, T2) - th) / th);
    }
    printf("orientation error, largest relative error over angles 1e-9 .. 3: three axes %.1e, two %.1e, one %.1e, "
           "the plane %.1e\n", worst[0], worst[1], worst[2], worst[3]);
    for (int k = 0; k < 4; k++) CHECK(worst[k] < 1e-6, "case %d: relative error %.3g", k, worst[k]);
    /* two parallel axes have no frame */
    double par[9] = {1, 1, 0, 0, 0, 0, 0, 0, 1}, I[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    double v = measure(3, 2, par, I);
    CHECK(isnan(v), "parallel axes gave %g, not NaN", v);
    printf("%s: %s\n", __FILE__, failures ? "FAILED" : "ok");
    return failures != 0;
}
