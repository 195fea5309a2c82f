/* train.c — `make bench` part 3: seconds per epoch of CHNN training at the paper's settings
   (800 training chunks of 5 points, batch 200, 3 x 256 tanh, 4 RK4 (3/8) steps per chunk),
   the GFLOP/s of the MLP GEMMs the program actually called (counted by runtime/nn/mlp.c), and
   the GEMM peak OpenBLAS reaches on this machine in the same run, at 1 and 2 threads, in
   f64 (dgemm) and f32 (sgemm, against the sgemm peak). */
#include <cblas.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "io/dataset.h"
#include "../unit/loaded.h"
#include "train/train.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

double gemm_peak(bool f32, int M, int N, int K) {
    double *A = malloc(sizeof(double) * (size_t)M * K), *B = malloc(sizeof(double) * (size_t)K * N),
           *C = calloc((size_t)M * N, sizeof(double));
    float *Af = (float *)A, *Bf = (float *)B, *Cf = (float *)C;
    for (long i = 0; i < (long)M * K; i++) A[i] = (double)(i % 7) / 7;
    for (long i = 0; i < (long)K * N; i++) B[i] = (double)(i % 5) / 5;
    if (f32) { /* the same values as floats, in the front half of each buffer */
        for (long i = 0; i < (long)M * K; i++) Af[i] = (float)A[i];
        for (long i = 0; i < (long)K * N; i++) Bf[i] = (float)B[i];
    }
    double best = 0;
    for (int rep = 0; rep < 5; rep++) {
        int calls = 0;
        double t0 = now_s(), t;
        do {
            if (f32) cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1, Af, K, Bf, N, 0, Cf, N);
            else cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1, A, K, B, N, 0, C, N);
            calls++;
        } while ((t = now_s() - t0) < 0.2);
        double g = 2.0 * M * N * K * calls / t / 1e9;
        if (g > best) best = g;
    }
    free(A), free(B), free(C);
    return best;
}

static void train_one(const char *path, int threads, bool f32, double peak) {
    Loaded l;
    char err[512];
    if (!loaded_open(&l, path, COMPILE_CHNN, -1, stderr, err, sizeof err)) {
        printf("  %-26s could not compile for training: %s\n", path, err);
        loaded_close(&l);
        return;
    }
    const System *sys = l.sys;
    PrtSystem *ps = &l.c.ps;
    PrtTrajSet full, chunks;
    if (prt_trajset_generate(ps, 800, 101, sys->data.dt, 1e-7, 1e-9, 0, &full, err, sizeof err) != 0) {
        printf("  %-26s data: %s\n", path, err);
        loaded_close(&l);
        return;
    }
    PrtRng rng;
    prt_rng_seed(&rng, 1);
    prt_trajset_chunks(&full, 5, &rng, &chunks);
    PrtMlp mlp = {.nlayers = 4, .size = {ps->N, 256, 256, 256, 1}, .act = PRT_ACT_TANH, .f32 = f32};
    PrtModel m;
    open_cartesian(&m, ps, false, &mlp, err, sizeof err);
    double *theta = malloc(sizeof(double) * (size_t)m.nparams);
    openblas_set_num_threads(threads);
    const int epochs = 3;
    PrtTrainOptions o = {.epochs = epochs, .batch = 200, .lr = 3e-3, .weight_decay = 1e-4, .cosine = true,
                         .seed = 0, .checkpoint_every = 1000, .threads = threads};
    PrtTrainResult r;
    prt_train(&m, theta, &chunks, NULL,
              &(PrtTrainOptions){.epochs = 1, .batch = 200, .lr = 3e-3, .checkpoint_every = 1000,
                                 .threads = threads},
              &r, err, sizeof err); /* warm-up */
    prt_train_result_free(&r);
    double flops0 = (double)prt_mlp_gemm_flops, t0 = now_s();
    prt_train(&m, theta, &chunks, NULL, &o, &r, err, sizeof err);
    double per = (now_s() - t0) / epochs, gflops = ((double)prt_mlp_gemm_flops - flops0) / epochs / 1e9;
    printf("  %-26s %s  %d thread%s  %6.3f s/epoch  %6.2f GFLOP/epoch (MLP GEMMs)  %6.1f GFLOP/s = %3.0f%% of peak\n",
           path, f32 ? "f32" : "f64", threads, threads == 1 ? " " : "s", per, gflops, gflops / per, 100 * gflops / per / peak);
    prt_train_result_free(&r);
    free(theta);
    prt_model_close(&m);
    prt_trajset_free(&full), prt_trajset_free(&chunks);
    loaded_close(&l);
}

void bench_training(void) {
    printf("== 3. CHNN training at the paper's settings: 800 chunks of 5 points, batch 200, 3 x 256 tanh,\n");
    printf("   4 RK4 (3/8) steps per chunk, backpropagation through them (the mean of 3 epochs after one warm-up);\n");
    printf("   on T threads each thread trains on 1/T of every minibatch with single-threaded GEMMs (train.h)\n");
    for (int threads = 1; threads <= 2; threads++) {
        openblas_set_num_threads(threads);
        for (int f32 = 0; f32 <= 1; f32++) {
            double peak = gemm_peak(f32, 1024, 1024, 1024), shape = gemm_peak(f32, 256, 200, 256);
            printf("  OpenBLAS %cgemm peak, %d thread%s: %.1f GFLOP/s (1024^3); %.1f GFLOP/s at the MLP's 256 x 200 x 256\n",
                   f32 ? 's' : 'd', threads, threads == 1 ? "" : "s", peak, shape);
            train_one("examples/pendulum3.phys", threads, f32, peak);
            train_one("examples/gyroscope.phys", threads, f32, peak);
        }
    }
    printf("  (f32: the MLP passes in float with sgemm; kernels, tape and optimizer stay in f64)\n\n");
    openblas_set_num_threads(1);
}
