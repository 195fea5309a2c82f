/* blas_cpu.c — make OpenBLAS use the GEMM kernels this CPU can run.

   A DYNAMIC_ARCH OpenBLAS picks its kernels from the CPU model number when it is loaded.
   A release older than the CPU does not know the model and falls back to "Prescott", its
   SSE3 kernels: on a Sapphire Rapids Xeon, Debian 12's OpenBLAS 0.3.21 ran dgemm at
   15.7 GFLOP/s per core that way, and CHNN training 2.7x slower than with the AVX-512
   ("SkylakeX") kernels the CPU can run (docs/performance.md). OPENBLAS_CORETYPE overrides
   the choice, but only before the library is loaded, so physc sets it and re-executes
   itself. A user's own OPENBLAS_CORETYPE is always left alone.

   Programs that `physc emit-c` writes call the same functions, so that they run the same
   kernels as physc and give the same bits. Some of them link no OpenBLAS at all (a system's
   simulation, or a model on build/libgemm_plain.a): OpenBLAS's own functions are therefore
   weak references here, null where it is absent. */
#define _GNU_SOURCE
#include "blas_cpu.h"

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#pragma weak openblas_get_corename
#pragma weak openblas_get_config
#pragma weak openblas_get_parallel
#pragma weak openblas_get_num_threads
#pragma weak openblas_set_num_threads

/* Linked with OpenBLAS, not the plain GEMM or no BLAS at all */
static bool have_openblas(void) { return openblas_get_corename && openblas_get_config; }

const char *prt_blas_better_core(const char *detected, bool avx512, bool avx2_fma) {
    if (!detected || strcasecmp(detected, "Prescott")) return NULL;
    if (avx512) return "SkylakeX";
    if (avx2_fma) return "Haswell";
    return NULL;
}

const char *prt_blas_wanted_core(void) {
    if (!have_openblas() || getenv("OPENBLAS_CORETYPE")) return NULL; /* the user's choice, or ours after the re-exec */
    __builtin_cpu_init();
    /* GCC's checks include the OS's consent (XGETBV) to the AVX and AVX-512 registers */
    bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                  __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
    bool avx2_fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    return prt_blas_better_core(openblas_get_corename(), avx512, avx2_fma);
}

void prt_blas_select_kernels(char **argv) {
    const char *core = prt_blas_wanted_core();
    if (!core) return;
    setenv("OPENBLAS_CORETYPE", core, 1);
    setenv(PRT_BLAS_CHOSEN_ENV, openblas_get_corename(), 1);
    fflush(NULL);
    execv("/proc/self/exe", argv);
    /* no /proc: carry on with the slow kernels rather than fail */
    unsetenv("OPENBLAS_CORETYPE");
    unsetenv(PRT_BLAS_CHOSEN_ENV);
}

/* The pthreads build's own (driver/others/blas_server.c), also what its fork handler calls;
   weak: absent from the other builds */
extern int blas_thread_shutdown_(void) __attribute__((weak));
extern int blas_thread_init(void) __attribute__((weak));
static bool parked;

void prt_blas_park_threads(void) {
    if (!have_openblas() || !openblas_get_parallel || !blas_thread_shutdown_ || !blas_thread_init ||
        openblas_get_parallel() != 1 || openblas_get_num_threads() < 2)
        return;
    blas_thread_shutdown_();
    parked = true;
}

void prt_blas_set_threads(int n) {
    if (parked && n > 1) {
        blas_thread_init();
        parked = false;
    }
    if (openblas_set_num_threads) openblas_set_num_threads(n);
}

const char *prt_blas_describe(char *buf, size_t len) {
    const char *was = getenv(PRT_BLAS_CHOSEN_ENV);
    if (!have_openblas()) snprintf(buf, len, "no OpenBLAS linked (the plain C GEMM, or none)");
    else if (was)
        snprintf(buf, len, "%s (physc chose the %s kernels: this OpenBLAS does not know the CPU and fell back to %s)",
                 openblas_get_config(), openblas_get_corename(), was);
    else snprintf(buf, len, "%s", openblas_get_config());
    return buf;
}
