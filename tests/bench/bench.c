/* bench.c — `make bench`: figures, no assertions except that the compared functions agree.
   1. Compile + JIT time of every example (lowering and LLVM JIT, median of 3).
   2. Throughput of the Hamiltonian vector field (CHNN Eq. 6) on a batch of 200 sampled
      states of the 3-pendulum and the gyroscope: physc's JIT (prt_hamiltonian_rhs: the Rhs
      kernel, Field with gradV folded in), a hand-written C version (handwritten.c) and the dense
      LAPACK formulation (dense.c). Each is first checked against the JIT, on the sampled
      states and on perturbed ones off the constraint manifold (where A v != 0, so every term
      of Eq. 6 counts); a difference above 1e-10 stops the benchmark.
   3. CHNN training: seconds per epoch at the paper's settings, GFLOP/s against the dgemm
      peak (tests/bench/train.c).
   4. Every model family's training speed on the 3-pendulum and the gyroscope
      (tests/bench/models.c).
   5. DT-LNN training at the 2-body protocol: s/iteration, the projected 100,000 iterations,
      GFLOP/s against the dgemm peak (tests/bench/dtlnn.c).
   6. Lie T2 training at the TRAPPIST-1 example: s/iteration and s/epoch in f64 and f32,
      GFLOP/s against the dgemm peak (tests/bench/liet2.c).
   7. Scale: compile time, memory and speed of 2-D chains of 10 to 1000 links
      (tests/bench/scale.c).
   And the machine. */
#include <dirent.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "core/blas_cpu.h"
#include "../unit/loaded.h"
#include "jit_cache.h"
#include "math/ode.h"

#ifndef BENCH_LLVM_VERSION
#define BENCH_LLVM_VERSION "?"
#endif

enum { BATCH = 200, REPEATS = 5 };
static const double MIN_SECONDS = 0.5, MAX_REL_DIFF = 1e-10;


static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *x, int n) {
    qsort(x, (size_t)n, sizeof *x, cmp_double);
    return n % 2 ? x[n / 2] : (x[n / 2 - 1] + x[n / 2]) / 2;
}

/* ---- 1. compile + JIT time ---- */

static int phys_file(const struct dirent *e) {
    size_t n = strlen(e->d_name);
    return n > 5 && strcmp(e->d_name + n - 5, ".phys") == 0;
}

/* The timings of one example, measured in a child process so that a compiler that aborts on
   a system it does not support yet costs that example's line, not the benchmark. */
typedef struct CompileTimes {
    bool ok;
    char err[256];
    int ninsts, nfield;
    double front, lower, jit, total; /* medians, ms */
    double cached;                   /* lowering + the code from the cache, median, ms */
} CompileTimes;

/* Cold compiles (the cache off), then the same with the code from a cache of its own. */
static void time_compile(const char *path, CompileTimes *r) {
    double front[3], lower[3], jit[3], total[3], cached[3];
    memset(r, 0, sizeof *r);
    r->ok = true;
    jit_cache_set_enabled(false);
    for (int run = 0; run < 3 && r->ok; run++) {
        Loaded l;
        r->ok = loaded_open(&l, path, COMPILE_SIMULATE, -1, stderr, r->err, sizeof r->err);
        if (r->ok) {
            front[run] = l.front_ms, lower[run] = l.c.lower_ms, jit[run] = l.c.jit_ms;
            total[run] = l.c.lower_ms + l.c.jit_ms;
            r->ninsts = 0;
            for (int k = 0; k < l.c.k.n; k++) r->ninsts += l.c.k.fns[k]->ninsts;
            IrFn *field = kernels_find(&l.c.k, "Rhs"); /* the field dopri5 calls */
            if (!field) field = kernels_find(&l.c.k, "Field");
            r->nfield = field ? field->ninsts : 0;
        }
        loaded_close(&l);
    }
    char dir[] = "/tmp/physc-bench-cache.XXXXXX";
    if (r->ok && mkdtemp(dir)) {
        setenv("PHYSC_CACHE_DIR", dir, 1); /* (this is the measuring child: its environment only) */
        jit_cache_set_enabled(true);
        for (int run = -1; run < 3 && r->ok; run++) { /* run -1 fills the cache */
            Loaded l;
            r->ok = loaded_open(&l, path, COMPILE_SIMULATE, -1, stderr, r->err, sizeof r->err);
            if (r->ok && run >= 0) cached[run] = l.c.lower_ms + l.c.jit_ms;
            if (r->ok && run >= 0 && !jit_from_cache(l.c.jit)) r->ok = false, snprintf(r->err, sizeof r->err, "no cache hit");
            loaded_close(&l);
        }
        char cmd[64];
        snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
        if (system(cmd) != 0) fprintf(stderr, "bench: could not remove %s\n", dir);
    }
    if (r->ok)
        r->front = median(front, 3), r->lower = median(lower, 3), r->jit = median(jit, 3), r->total = median(total, 3),
        r->cached = median(cached, 3);
}

bool bench_in_child(void (*fn)(void *ctx, void *result), void *ctx, void *result, size_t size, int *status,
                    struct rusage *ru) {
    int fds[2];
    if (pipe(fds) != 0) {
        perror("pipe");
        exit(1);
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        exit(1);
    }
    if (pid == 0) {
        close(fds[0]);
        fn(ctx, result);
        ssize_t w = write(fds[1], result, size);
        _exit(w == (ssize_t)size ? 0 : 1);
    }
    close(fds[1]);
    ssize_t got = read(fds[0], result, size);
    close(fds[0]);
    struct rusage unused;
    wait4(pid, status, 0, ru ? ru : &unused);
    return got == (ssize_t)size;
}

static void time_compile_child(void *path, void *result) { time_compile(path, result); }

static void compile_times(void) {
    struct dirent **list;
    int nfiles = scandir("examples", &list, phys_file, alphasort);
    if (nfiles < 0) {
        perror("examples");
        exit(1);
    }
    printf("== 1. Compile + JIT time per example (physc's passes, then LLVM ORC JIT at -O2; median of 3 runs)\n");
    printf("   front end = parse + check; lowering = Compiled.lower_ms (lower, AD, simplify); JIT = Compiled.jit_ms\n");
    printf("   (cold: the cache of compiled kernels off); cached = lowering + the code from the cache (jit_cache.h)\n");
    printf("   %-22s %6s %9s %9s %13s %13s %12s %10s\n", "example", "IR ins", "field ins", "front ms", "lowering ms",
           "LLVM JIT ms", "lower+JIT ms", "cached ms");
    for (int f = 0; f < nfiles; f++) {
        char path[512];
        snprintf(path, sizeof path, "examples/%s", list[f]->d_name);
        CompileTimes r;
        memset(&r, 0, sizeof r);
        int status = 0;
        if (!bench_in_child(time_compile_child, path, &r, sizeof r, &status, NULL)) {
            r.ok = false;
            if (WIFSIGNALED(status)) snprintf(r.err, sizeof r.err, "the compiler crashed (signal %d)", WTERMSIG(status));
            else snprintf(r.err, sizeof r.err, "the measuring process failed (exit %d)", WEXITSTATUS(status));
        }
        if (!r.ok) {
            char *nl = strchr(r.err, '\n');
            if (nl) *nl = 0;
            printf("   %-22s skipped: %s\n", list[f]->d_name, r.err);
        } else {
            printf("   %-22s %6d %9d %9.1f %13.1f %13.1f %12.1f %10.1f", list[f]->d_name, r.ninsts, r.nfield, r.front,
                   r.lower, r.jit, r.total, r.cached);
            if (strcmp(list[f]->d_name, "gyroscope.phys") == 0)
                printf("   target < 50 ms (issue 19): %s; cached < 5 ms: %s", r.total < 50 ? "met" : "NOT MET",
                       r.cached < 5 ? "met" : "NOT MET");
            printf("\n");
        }
        free(list[f]);
    }
    free(list);
    printf("   (IR ins: instructions of all the system's kernels after simplification; field ins: of the field dopri5 calls, Rhs (Field with gradV folded in; Field for SO(3) systems))\n\n");
}

/* ---- 2. vector-field throughput ---- */

typedef void (*HwRhs)(long n, const double *restrict z, const double *restrict params, double *restrict zdot);
typedef struct HwCtx {
    HwRhs f;
    const double *params;
} HwCtx;
static void hw_rhs(void *ctx, long n, const double *z, double *zdot) {
    HwCtx *h = ctx;
    h->f(n, z, h->params, zdot);
}

/* max over states and over the two halves (Xdot, Pdot) of max_i |a_i - b_i| / max_i |b_i| */
static double rel_diff(int N, long n, const double *a, const double *b) {
    double worst = 0;
    for (long s = 0; s < n; s++)
        for (int half = 0; half < 2; half++) {
            double num = 0, den = 0;
            for (int i = half * N; i < (half + 1) * N; i++) {
                double x = a[i * n + s], y = b[i * n + s];
                if (!isfinite(x) || !isfinite(y)) return INFINITY;
                num = fmax(num, fabs(x - y));
                den = fmax(den, fabs(y));
            }
            worst = fmax(worst, den > 0 ? num / den : num);
        }
    return worst;
}

/* Median over REPEATS measurements of seconds per call, each >= MIN_SECONDS long. */
static double time_rhs(PrtRhs f, void *ctx, long n, const double *z, double *zdot) {
    long reps = 1;
    double t = 0;
    for (;;) { /* calibrate (and warm up) */
        double t0 = now_s();
        for (long r = 0; r < reps; r++) f(ctx, n, z, zdot);
        t = now_s() - t0;
        if (t >= 0.05) break;
        reps *= 2;
    }
    reps = (long)ceil(reps * MIN_SECONDS * 1.1 / t);
    double per_call[REPEATS];
    for (int m = 0; m < REPEATS;) {
        double t0 = now_s();
        for (long r = 0; r < reps; r++) f(ctx, n, z, zdot);
        t = now_s() - t0;
        if (t < MIN_SECONDS) {
            reps = (long)ceil(reps * MIN_SECONDS * 1.2 / t);
            continue;
        }
        per_call[m++] = t / reps;
    }
    return median(per_call, REPEATS);
}

static void check_or_die(const char *what, const char *sys, double d) {
    printf("   check %-52s %.1e %s\n", what, d, d <= MAX_REL_DIFF ? "ok" : "FAILED");
    if (!(d <= MAX_REL_DIFF)) {
        fprintf(stderr, "\n*** bench: %s on %s computes a different vector field than physc's JIT "
                        "(relative difference %.3e > %.0e); its timing would mean nothing. ***\n",
                what, sys, d, MAX_REL_DIFF);
        exit(1);
    }
}

static void report(const char *what, double sec_per_call, long n) {
    double ns = sec_per_call / n * 1e9;
    printf("   %-42s %11.3g states/s %8.1f ns/state %9.2f us/batch\n", what, n / sec_per_call, ns, sec_per_call * 1e6);
}

static void throughput(const char *path, HwRhs hw, HwRhs hw_simd, int want_N, int want_C, int want_nmass) {
    Loaded l;
    char err[512];
    printf("-- %s, batch of %d states (SoA)\n", path, BATCH);
    if (!loaded_open(&l, path, COMPILE_SIMULATE, -1, stderr, err, sizeof err)) {
        fprintf(stderr, "bench: %s: %s\n", path, err);
        exit(1);
    }
    PrtSystem *ps = &l.c.ps;
    if (ps->N != want_N || ps->C != want_C || ps->nmass != want_nmass || ps->nparams != want_nmass) {
        fprintf(stderr, "bench: %s: N %d, C %d, %d mass params, %d params; handwritten.c expects %d, %d, %d, %d\n",
                path, ps->N, ps->C, ps->nmass, ps->nparams, want_N, want_C, want_nmass, want_nmass);
        exit(1);
    }
    printf("   N = %d coordinates, C = %d constraint rows, params (masses) =", ps->N, ps->C);
    for (int k = 0; k < ps->nparams; k++) printf(" %.10g", ps->params[k]);
    printf("\n");
    long n = BATCH, len = 2L * ps->N * n;
    double *z = malloc(sizeof(double) * (size_t)len), *zj = malloc(sizeof(double) * (size_t)len),
           *zh = malloc(sizeof(double) * (size_t)len), *zd = malloc(sizeof(double) * (size_t)len);
    PrtRng rng;
    prt_rng_seed(&rng, 2024);
    double proj = prt_sample_initial(ps, &rng, n, 1e-13, z);
    if (!(proj >= 0 && proj < 1e-10)) {
        fprintf(stderr, "bench: %s: sampling failed (projection left %g)\n", path, proj);
        exit(1);
    }
    /* off the manifold: n - 3 states (not a multiple of the SIMD width), each component moved */
    long noff = n - 3;
    double *zoff = malloc(sizeof(double) * (size_t)(2L * ps->N * noff));
    for (int i = 0; i < 2 * ps->N; i++)
        for (long b = 0; b < noff; b++)
            zoff[i * noff + b] = z[i * n + b] * (1 + 0.05 * prt_rng_normal(&rng)) + 0.05 * prt_rng_normal(&rng);

    HwCtx hctx = {hw, ps->params}, hsctx = {hw_simd, ps->params};
    Dense *dense = dense_open(ps, kernels_find(&l.c.k, "PhiDot"), err, sizeof err);
    if (!dense) {
        fprintf(stderr, "bench: %s: dense baseline: %s\n", path, err);
        exit(1);
    }
    /* the same function? max over states and over Xdot, Pdot of max|a - b| / max|b| */
    printf("   max relative difference from the JIT (limit %.0e; off the manifold A v != 0, so every term counts):\n",
           MAX_REL_DIFF);
    const double *states[2] = {z, zoff};
    const long counts[2] = {n, noff};
    const char *names[2] = {"sampled states", "perturbed states"};
    struct { const char *name; PrtRhs f; void *ctx; } other[3] = {
        {"b. hand-written", hw_rhs, &hctx}, {"b'. hand-written SIMD", hw_rhs, &hsctx}, {"c. dense/LAPACK", dense_rhs, dense}};
    for (int s = 0; s < 2; s++) {
        prt_hamiltonian_rhs(ps, counts[s], states[s], zj);
        for (int v = 0; v < 3; v++) {
            other[v].f(other[v].ctx, counts[s], states[s], zh);
            char what[128];
            snprintf(what, sizeof what, "%s, %ld %s:", other[v].name, counts[s], names[s]);
            check_or_die(what, path, rel_diff(ps->N, counts[s], zh, zj));
        }
    }

    double t_jit = time_rhs(prt_hamiltonian_rhs, ps, n, z, zj);
    double t_hw = time_rhs(hw_rhs, &hctx, n, z, zh);
    double t_hws = time_rhs(hw_rhs, &hsctx, n, z, zh);
    double t_dense = time_rhs(dense_rhs, dense, n, z, zd);
    printf("   throughput (states per second = vector-field evaluations per second):\n");
    report("a. physc JIT, prt_hamiltonian_rhs", t_jit, n);
    report("b. hand-written C, -O2 -march=native", t_hw, n);
    report("b'. the same, 8 states per SIMD vector", t_hws, n);
    report("c. dense DPsi J DPsi^T + LAPACK dgesv", t_dense, n);
    printf("   JIT / hand-written time: %.2fx (target <= 1.3x: %s); JIT / hand-written SIMD: %.2fx (%s)\n",
           t_jit / t_hw, t_jit / t_hw <= 1.3 ? "met" : "NOT MET", t_jit / t_hws, t_jit / t_hws <= 1.3 ? "met" : "NOT MET");
    printf("   dense / JIT time: %.1fx (the JIT is %.1fx faster than the dense formulation)\n", t_dense / t_jit,
           t_dense / t_jit);
    /* the integrator around the field: dopri5's own sums and error norm per evaluation */
    double times[2] = {0, 1}, best = INFINITY, *out = malloc(sizeof(double) * (size_t)(2 * len));
    PrtOdeStats st = {0};
    for (int r = 0; r < 3; r++) {
        double t0 = now_s();
        if (prt_dopri5(prt_hamiltonian_rhs, ps, n, 2 * ps->N, z, times, 2, 1e-9, 1e-9, out, &st) != 0) {
            fprintf(stderr, "bench: %s: dopri5 failed\n", path);
            exit(1);
        }
        best = fmin(best, now_s() - t0);
    }
    printf("   d. dopri5 with a., 1 s of motion (rtol = atol = 1e-9): %.1f ns/state an evaluation (%ld evaluations; the "
           "field a. %.0f %% of it)\n\n", best / n / (double)st.evals * 1e9, (long)st.evals, 100 * t_jit * (double)st.evals / best);
    free(out);

    dense_close(dense);
    free(z), free(zoff), free(zj), free(zh), free(zd);
    loaded_close(&l);
}

/* ---- 3. the machine ---- */

static void machine(void) {
    printf("== Machine\n");
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[4096], model[256] = "?", mhz[64] = "?";
    bool avx2 = false, avx512 = false;
    if (f) {
        while (fgets(line, sizeof line, f)) {
            char *colon = strchr(line, ':');
            if (!colon) continue;
            char *val = colon + 2;
            val[strcspn(val, "\n")] = 0;
            if (strncmp(line, "model name", 10) == 0 && model[0] == '?') snprintf(model, sizeof model, "%s", val);
            if (strncmp(line, "cpu MHz", 7) == 0 && mhz[0] == '?') snprintf(mhz, sizeof mhz, "%s", val);
            if (strncmp(line, "flags", 5) == 0) {
                avx2 = avx2 || strstr(val, " avx2") != NULL;
                avx512 = avx512 || strstr(val, " avx512f") != NULL;
            }
        }
        fclose(f);
    }
    struct utsname u;
    uname(&u);
    printf("   CPU: %s, %ld logical CPUs, %s MHz, AVX2 %s, AVX-512F %s\n", model, sysconf(_SC_NPROCESSORS_ONLN), mhz,
           avx2 ? "yes" : "no", avx512 ? "yes" : "no");
    printf("   OS: %s %s %s\n", u.sysname, u.release, u.machine);
    printf("   C compiler (bench, handwritten.c, runtime): %s %s\n",
#ifdef __clang__
           "clang",
#else
           "gcc",
#endif
           __VERSION__);
    printf("   LLVM (physc's JIT): %s, short pass pipelines (loop vectorizer on small kernels), SLP and post-RA scheduling off, host CPU features\n",
           BENCH_LLVM_VERSION);
    char blas[256];
    printf("   OpenBLAS: %s (OPENBLAS_NUM_THREADS=%s)\n", prt_blas_describe(blas, sizeof blas),
           getenv("OPENBLAS_NUM_THREADS") ? getenv("OPENBLAS_NUM_THREADS") : "unset");
    printf("   single-threaded; timings: CLOCK_MONOTONIC, median of %d runs of >= %.1f s each\n\n", REPEATS,
           MIN_SECONDS);
}

static void bench_field(void) {
    printf("== 2. Hamiltonian vector field (CHNN Eq. 6): zdot = (Xdot, Pdot) for a batch of sampled states\n");
    printf("   a = physc JIT (the Rhs kernel: Field with gradV folded in), b = hand-written C for the one system, b' = the same C code\n");
    printf("   run 8 states per vector (GCC vector extension; AVX-512 here), as the JIT's batch loop is,\n");
    printf("   c = dense unspecialized (JIT'd Jacobian of PhiDot for A and B, dense M^-1, full 2C x 2C LU per state)\n");
    throughput("examples/pendulum3.phys", hw_pendulum3_rhs, hw_pendulum3_rhs_simd, 6, 3, 3);
    throughput("examples/gyroscope.phys", hw_gyroscope_rhs, hw_gyroscope_rhs_simd, 12, 9, 4);
}

/* `bench [compile] [field] [train] [models] [dtlnn] [liet2] [scale]` runs only the parts named; no argument runs all. */
static bool wanted(int argc, char **argv, const char *part) {
    if (argc < 2) return true;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], part) == 0) return true;
    return false;
}

int main(int argc, char **argv) {
    prt_blas_select_kernels(argv);
    setvbuf(stdout, NULL, _IOLBF, 0);
    double t0 = now_s();
    printf("physc benchmark (make bench)\n\n");
    machine();
    if (wanted(argc, argv, "compile")) compile_times();
    if (wanted(argc, argv, "field")) bench_field();
    if (wanted(argc, argv, "train")) bench_training();
    if (wanted(argc, argv, "models")) bench_models();
    if (wanted(argc, argv, "dtlnn")) bench_dtlnn();
    if (wanted(argc, argv, "liet2")) bench_liet2();
    if (wanted(argc, argv, "scale")) bench_scale();
    printf("bench: done in %.0f s\n", now_s() - t0);
    return 0;
}
