/* test_dataset.c — recorded trajectories of positions only: their velocities estimated by
   second-order finite differences (against the exact velocities of smooth trajectories:
   the leading error terms dt^2/6 q''' inside and dt^2/3 q''' at the ends, and 4x smaller
   for half the step), read from a CSV of positions alone, written back as positions alone,
   and the headers and lengths refused. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/dataset.h"

#include "check.h"

enum { N = 2, NTRAJ = 3 };
static const char *const names[2 * N] = {"a.x", "a.y", "a.vx", "a.vy"};

/* q = A sin(w t + phi) for each coordinate and trajectory: |q'''| <= A w^3 */
static double amp(int i, long b) { return 0.5 + 0.3 * i + 0.2 * (double)b; }
static double omega(int i, long b) { return 1.5 + 0.7 * i + 0.4 * (double)b; }
static double phase(int i, long b) { return 0.3 + 1.1 * i - 0.5 * (double)b; }

/* the trajectories over [0, T], positions set, velocities (exact) into *exact */
static PrtTrajSet smooth(double dt, double T, double **exact) {
    int npts = (int)lround(T / dt) + 1;
    long pt = 2L * N * NTRAJ;
    PrtTrajSet d = {.n = NTRAJ, .npts = npts, .N = N, .W = 2 * N, .dt = dt, .xv = calloc((size_t)(pt * npts), sizeof(double))};
    *exact = calloc((size_t)(pt * npts), sizeof(double));
    for (int k = 0; k < npts; k++)
        for (int i = 0; i < N; i++)
            for (long b = 0; b < NTRAJ; b++) {
                double t = k * dt, w = omega(i, b), A = amp(i, b), ph = phase(i, b);
                d.xv[k * pt + i * NTRAJ + b] = A * sin(w * t + ph);
                (*exact)[k * pt + (N + i) * NTRAJ + b] = A * w * cos(w * t + ph);
            }
    return d;
}

/* the largest velocity error inside and at the two ends, and the bound on |q'''| */
static void errors(double dt, double *inside, double *ends, double *q3) {
    double *exact;
    PrtTrajSet d = smooth(dt, 1.0, &exact);
    prt_trajset_estimate_velocities(&d);
    CHECK(d.velocities_estimated, "the set says its velocities are estimated");
    long pt = 2L * N * NTRAJ;
    *inside = *ends = *q3 = 0;
    for (int k = 0; k < d.npts; k++)
        for (long r = N * NTRAJ; r < pt; r++) {
            double e = fabs(d.xv[k * pt + r] - exact[k * pt + r]);
            if (k == 0 || k == d.npts - 1) *ends = fmax(*ends, e);
            else *inside = fmax(*inside, e);
        }
    for (int i = 0; i < N; i++)
        for (long b = 0; b < NTRAJ; b++) *q3 = fmax(*q3, amp(i, b) * pow(omega(i, b), 3));
    free(exact), prt_trajset_free(&d);
}

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    CHECK(f != NULL, "cannot write %s: %s", path, strerror(errno));
    if (f) fputs(text, f), fclose(f);
}

int main(void) {
    /* second order: the leading terms' bounds, and half the step 4x smaller */
    double in1, end1, q3, in2, end2;
    errors(0.01, &in1, &end1, &q3);
    errors(0.005, &in2, &end2, &q3);
    CHECK(in1 > 0 && in1 <= 1.01 * q3 * 0.01 * 0.01 / 6, "central differences: error %.3e, bound dt^2/6 |q'''| %.3e", in1,
          q3 * 0.01 * 0.01 / 6);
    CHECK(end1 > 0 && end1 <= 1.01 * q3 * 0.01 * 0.01 / 3, "one-sided ends: error %.3e, bound dt^2/3 |q'''| %.3e", end1,
          q3 * 0.01 * 0.01 / 3);
    CHECK(fabs(in1 / in2 - 4) < 0.1, "inside: dt 0.01 -> 0.005 divides the error by %.3f, not 4", in1 / in2);
    CHECK(fabs(end1 / end2 - 4) < 0.1, "ends: dt 0.01 -> 0.005 divides the error by %.3f, not 4", end1 / end2);
    printf("velocity error at dt 0.01 (0.005): %.3e (%.3e) inside, %.3e (%.3e) at the ends\n", in1, in2, end1, end2);

    char dir[] = "/tmp/physc-test-dataset-XXXXXX", path[128], back[128], err[512];
    CHECK(mkdtemp(dir) != NULL, "mkdtemp: %s", strerror(errno));
    snprintf(path, sizeof path, "%s/positions.csv", dir), snprintf(back, sizeof back, "%s/back.csv", dir);

    /* a CSV of the positions alone reads with the velocities estimated as above */
    double *exact;
    PrtTrajSet d = smooth(0.01, 0.5, &exact);
    long len = (long)N * NTRAJ;
    double *q = calloc((size_t)(len * d.npts), sizeof(double));
    for (int k = 0; k < d.npts; k++) memcpy(q + k * len, d.xv + 2 * k * len, sizeof(double) * (size_t)len);
    CHECK(prt_csv_write_soa(path, names, N, NTRAJ, d.npts, d.dt, q, err, sizeof err) == 0, "%s", err);
    prt_trajset_estimate_velocities(&d);
    PrtTrajSet r;
    CHECK(prt_trajset_read_csv(path, N, names, &r, err, sizeof err) == 0, "positions only refused: %s", err);
    CHECK(r.velocities_estimated && r.n == NTRAJ && r.npts == d.npts && r.N == N && fabs(r.dt - 0.01) < 1e-15,
          "read %ld x %d points, dt %g, estimated %d", r.n, r.npts, r.dt, r.velocities_estimated);
    if (r.xv && r.npts == d.npts)
        CHECK(!memcmp(r.xv, d.xv, sizeof(double) * (size_t)(2 * len * d.npts)), "positions read, velocities estimated");
    /* written back, positions alone: estimated velocities would read back as observed ones */
    CHECK(prt_trajset_write_csv(&r, back, names, err, sizeof err) == 0, "%s", err);
    FILE *f = fopen(back, "r");
    char header[128] = "";
    if (f) {
        CHECK(fgets(header, sizeof header, f) != NULL, "empty");
        fclose(f);
    }
    CHECK(!strcmp(header, "traj,t,a.x,a.y\n"), "written back with the header %s", header);
    prt_trajset_free(&r);
    /* the whole columns (velocities taken as observed): read as they are, nothing estimated */
    d.velocities_estimated = false;
    CHECK(prt_trajset_write_csv(&d, back, names, err, sizeof err) == 0, "%s", err);
    CHECK(prt_trajset_read_csv(back, N, names, &r, err, sizeof err) == 0 && !r.velocities_estimated &&
              !memcmp(r.xv, d.xv, sizeof(double) * (size_t)(2 * len * d.npts)),
          "a whole file reads as it is: %s", err);
    prt_trajset_free(&r), prt_trajset_free(&d), free(exact), free(q);

    /* refused: 2 points of positions (the formulas need 3), a header of neither width */
    write_text(path, "traj,t,a.x,a.y\n0,0,1,2\n0,0.1,1.5,2.5\n");
    CHECK(prt_trajset_read_csv(path, N, names, &r, err, sizeof err) == -1 &&
              strstr(err, "trajectory 0 has only 2 points: the velocities of positions alone are estimated from 3 or more"),
          "2 points of positions: %s", err);
    write_text(path, "traj,t,a.x\n0,0,1\n0,0.1,1.5\n0,0.2,2\n");
    CHECK(prt_trajset_read_csv(path, N, names, &r, err, sizeof err) == -1 &&
              strstr(err, ":1: the header has 3 columns; this system's data has 6 (the next would be 'a.y'), or 4 with "
                          "the positions alone"),
          "3 columns: %s", err);
    write_text(path, "traj,t,a.vx,a.vy\n0,0,1,2\n0,0.1,1.5,2.5\n0,0.2,2,3\n");
    CHECK(prt_trajset_read_csv(path, N, names, &r, err, sizeof err) == -1 &&
              strstr(err, ":1: column 3 of the header is 'a.vx' where 'a.x' is expected: this system's columns are "
                          "traj,t,a.x,a.y,a.vx,a.vy (as physc simulate --out writes them), or traj,t and the 2 positions alone"),
          "velocities alone: %s", err);
    unlink(path), unlink(back), rmdir(dir);

    printf("%s: %s\n", __FILE__, failures ? "FAILED" : "ok");
    return failures != 0;
}
