/* test_blas_cpu.c — OpenBLAS runs kernels this CPU can use: physc overrides only OpenBLAS's
   fallback for CPUs it does not know (SSE3 "Prescott"), and the kernels it then runs give
   the right product. On a Sapphire Rapids Xeon with Debian 12's OpenBLAS the fallback made
   training 2.7x slower (docs/performance.md). And its worker threads, parked at start, come
   back once each. */
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cblas.h>

#include "core/blas_cpu.h"
#include "check.h"

static void choice(void) {
    CHECK(!strcmp(prt_blas_better_core("Prescott", true, true), "SkylakeX"), "AVX-512 CPU -> SkylakeX");
    CHECK(!strcmp(prt_blas_better_core("Prescott", false, true), "Haswell"), "AVX2 CPU -> Haswell");
    CHECK(prt_blas_better_core("Prescott", false, false) == NULL, "an SSE3-only CPU keeps Prescott");
    CHECK(prt_blas_better_core("Zen", true, true) == NULL, "a core OpenBLAS recognised is kept");
    CHECK(prt_blas_better_core("Haswell", true, true) == NULL, "Haswell on an AVX-512 CPU is OpenBLAS's own choice");
    CHECK(prt_blas_better_core(NULL, true, true) == NULL, "no name");
}

/* Whatever kernels run, dgemm and sgemm must agree with the definition. */
static void product(void) {
    enum { M = 67, N = 45, K = 131 };
    double *a = malloc(sizeof(double) * M * K), *b = malloc(sizeof(double) * K * N), *c = malloc(sizeof(double) * M * N);
    float *af = malloc(sizeof(float) * M * K), *bf = malloc(sizeof(float) * K * N), *cf = malloc(sizeof(float) * M * N);
    for (int i = 0; i < M * K; i++) af[i] = (float)(a[i] = sin(0.37 * i));
    for (int i = 0; i < K * N; i++) bf[i] = (float)(b[i] = cos(0.11 * i));
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1, a, K, b, N, 0, c, N);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1, af, K, bf, N, 0, cf, N);
    double worst = 0, worstf = 0;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = 0, mag = 0;
            for (int k = 0; k < K; k++) s += a[i * K + k] * b[k * N + j], mag += fabs(a[i * K + k] * b[k * N + j]);
            worst = fmax(worst, fabs(c[i * N + j] - s) / mag);
            worstf = fmax(worstf, fabs(cf[i * N + j] - s) / mag);
        }
    CHECK(worst < 1e-14, "dgemm relative error %.2e", worst);
    CHECK(worstf < 1e-5, "sgemm relative error %.2e", worstf);
    free(a), free(b), free(c), free(af), free(bf), free(cf);
}

static int process_threads(void) {
    int n = 0;
    DIR *d = opendir("/proc/self/task");
    for (struct dirent *e; d && (e = readdir(d));) n += e->d_name[0] != '.';
    if (d) closedir(d);
    return n;
}

/* The thread count once it is `want`, or what it is after 5 s. pthread_join returns when the
   kernel clears the thread's id, a little before it takes the thread out of /proc/self/task:
   on a busy 2-core machine a joined worker was still listed right after (CI, once). */
static int threads_when(int want) {
    int n = process_threads();
    for (int ms = 0; n != want && ms < 5000; ms++) {
        nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
        n = process_threads();
    }
    return n;
}

/* A threaded dgemm of 300 x 300 x 300 against the definition, at a few entries */
static bool big_product_right(void) {
    enum { S = 300 };
    double *a = malloc(sizeof(double) * S * S), *b = malloc(sizeof(double) * S * S), *c = malloc(sizeof(double) * S * S);
    for (int i = 0; i < S * S; i++) a[i] = sin(0.37 * i), b[i] = cos(0.11 * i);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, S, S, S, 1, a, S, b, S, 0, c, S);
    double worst = 0;
    for (int i = 0; i < S; i += 37)
        for (int j = 0; j < S; j += 41) {
            double t = 0, mag = 0;
            for (int k = 0; k < S; k++) t += a[i * S + k] * b[k * S + j], mag += fabs(a[i * S + k] * b[k * S + j]);
            worst = fmax(worst, fabs(c[i * S + j] - t) / mag);
        }
    free(a), free(b), free(c);
    return worst < 1e-14;
}

/* The parked OpenBLAS workers (prt_blas_park_threads) are gone, start again at a threaded
   call, and prt_blas_set_threads above their number starts each worker once */
static void parked_threads(void) {
    int started = openblas_get_num_threads(), before = process_threads();
    prt_blas_park_threads();
    if (openblas_get_parallel() != 1 || started < 2) {
        CHECK(process_threads() == before, "workers stopped where OpenBLAS has none to park");
        return;
    }
    int parked = threads_when(before - (started - 1));
    CHECK(parked == before - (started - 1), "%d threads after parking %d workers of %d threads", parked, started - 1, before);
    CHECK(big_product_right(), "dgemm after parking the workers");
    CHECK(process_threads() == before, "%d threads after a threaded dgemm, %d before parking", process_threads(), before);
    prt_blas_park_threads();
    CHECK(threads_when(parked) == parked, "%d threads after parking again, %d the first time", process_threads(), parked);
    prt_blas_set_threads(started + 1);
    CHECK(big_product_right(), "dgemm on %d threads after parking", started + 1);
    CHECK(process_threads() == parked + started, "%d threads for %d OpenBLAS threads (%d before)", process_threads(),
          started + 1, parked);
    prt_blas_set_threads(started);
}

int main(int argc, char **argv) {
    (void)argc;
    /* a user's own OPENBLAS_CORETYPE wins; PRT_BLAS_CHOSEN_ENV marks physc's re-exec */
    bool user_core = getenv("OPENBLAS_CORETYPE") && !getenv(PRT_BLAS_CHOSEN_ENV);
    prt_blas_select_kernels(argv);
    choice();
    __builtin_cpu_init();
    bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    CHECK(user_core || !avx2 || strcasecmp(openblas_get_corename(), "Prescott"),
          "an AVX2 CPU runs OpenBLAS's SSE3 fallback kernels (Prescott)");
    product();
    parked_threads();
    char buf[256];
    printf("test_blas_cpu: %s\n", prt_blas_describe(buf, sizeof buf));
    printf("test_blas_cpu: %s\n", failures ? "FAILED" : "ok");
    return failures != 0;
}
