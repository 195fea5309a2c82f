/* test_fd_check.c — the checker the derivative tests trust (fd_check.h): a right derivative
   passes, a wrong entry is found and named, a NaN fails, and x comes back bit for bit. */
#include <math.h>
#include <string.h>

#include "check.h"
#include "fd_check.h"

/* y = (sin x0 cos x1, x0 x1^2 + x2), x2 read past n when only 2 inputs are checked */
static void f(void *ctx, const double *x, double *y) {
    y[0] = sin(x[0]) * cos(x[1]);
    y[1] = x[0] * x[1] * x[1] + x[2];
}

int main(void) {
    double x[3] = {0.3, -1.2, 0.7}, keep[3], J[2 * 3], ybar[2] = {0.5, -2}, xbar[3], u[3] = {1, -0.5, 2}, Ju[2];
    memcpy(keep, x, sizeof x);
    J[0] = cos(x[0]) * cos(x[1]), J[1] = -sin(x[0]) * sin(x[1]), J[2] = 0;
    J[3] = x[1] * x[1], J[4] = 2 * x[0] * x[1], J[5] = 1;
    for (int i = 0; i < 3; i++) xbar[i] = ybar[0] * J[i] + ybar[1] * J[3 + i];
    for (int r = 0; r < 2; r++) Ju[r] = J[3 * r] * u[0] + J[3 * r + 1] * u[1] + J[3 * r + 2] * u[2];
    FdOpts o = {.scale = 1}; /* the default steps */
    FdWorst wj = {0}, wv = {0}, wu = {0}, wd = {0};
    fd_jacobian(f, NULL, x, 3, 2, J, &o, &wj);
    fd_vjp(f, NULL, x, 3, 2, ybar, xbar, &o, &wv);
    fd_jvp(f, NULL, x, 3, 2, u, Ju, &o, &wu);
    fd_vjp(f, NULL, x, 3, 2, ybar, xbar, &(FdOpts){.h = 1e-5, .dir = u}, &wd);
    CHECK(wj.err < 1e-9 && wj.count == 6, "Jacobian: " FD_FMT, FD_ARGS(wj));
    CHECK(wv.err < 1e-9 && wv.count == 3, "VJP: " FD_FMT, FD_ARGS(wv));
    CHECK(wu.err < 1e-9 && wu.count == 2, "JVP: " FD_FMT, FD_ARGS(wu));
    CHECK(wd.err < 1e-9 && wd.count == 1 && wd.in == -1, "VJP along a direction: " FD_FMT, FD_ARGS(wd));
    CHECK(!memcmp(x, keep, sizeof x), "x not restored");

    /* one entry 0.1% off, of the 2 inputs checked (x2 held): found at (input 1, output 1), its
       error relative (no scale) */
    J[4] *= 1.001;
    FdWorst bad = {0};
    fd_jacobian(f, NULL, x, 2, 2, (double[]){J[0], J[1], J[3], J[4]}, &(FdOpts){0}, &bad);
    CHECK(fabs(bad.err - 1e-3) < 1e-6 && bad.in == 1 && bad.out == 1 && bad.count == 4, "a wrong entry: " FD_FMT,
          FD_ARGS(bad));
    /* 0 given for a derivative of 1e-3: no scale, no pass; a NaN never passes */
    FdWorst zero = {0}, nan_ = {0};
    fd_fold(&zero, 0, 1e-3, 0, 0, 0);
    fd_fold(&nan_, NAN, 1, 1, 0, 0);
    fd_fold(&nan_, 1, 1, 1, 1, 0);
    CHECK(isinf(zero.err) && isinf(nan_.err) && nan_.in == 0, "0 for 1e-3: %g; NaN: %g at %ld", zero.err, nan_.err,
          nan_.in);
    printf("%s: %s\n", __FILE__, failures ? "FAILED" : "ok");
    return failures != 0;
}
