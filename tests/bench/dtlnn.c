/* dtlnn.c — `make bench` part 5: training speed of the discrete-time Lagrangian model at the
   2-body protocol of its paper (examples/twobody.phys, model `dtlnn`: Eq. 12's residual over
   position triples, 4 inputs, 2 x 200 tanh, batch 200, f64 and f32) on 1 and 2 threads: seconds
   per iteration, the projected time of the protocol's 100,000 iterations, the GFLOP of the GEMMs
   an iteration calls (the MLP forward, the discrete gradient's W^T passes and the reverse
   sweep's) and their share of the dgemm (sgemm) peak; and the CPU time of all threads per iteration,
   which tells the threads' speed-up apart from a machine busy with other work. The triples
   come from 200 short trajectories, 10 per trajectory, so that an epoch is exactly 10
   iterations of batch 200. */
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
#include "trained.h"

enum { BATCH = 200, TRAJ = 200, POINTS = 12, EPOCHS = 10, PROTOCOL_ITERATIONS = 100000 };

static double clock_s(clockid_t which) {
    struct timespec ts;
    clock_gettime(which, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void dtlnn_threads(const char *path, const char *model, int threads, bool f32, double peak) {
    Loaded l;
    char err[512];
    const Model *md = NULL;
    if (!loaded_open(&l, path, COMPILE_SIMULATE, -1, stderr, err, sizeof err)) {
        printf("  %s does not compile: %s\n", path, err);
        loaded_close(&l);
        return;
    }
    const char *why = trained_pick(l.sys, model, &md);
    if (why) {
        printf("  %s: %s\n", path, why);
        loaded_close(&l);
        return;
    }
    int k = (int)(md - l.sys->models);
    loaded_close(&l);
    PrtModelConfig cfg;
    Loc where;
    PrtModel m;
    if (!loaded_open(&l, path, 0, k, stderr, err, sizeof err) ||
        !trained_config(l.sys, &l.sys->models[k], f32, &cfg, &where, err, sizeof err) ||
        prt_model_open(&m, &l.c.ps, &cfg, err, sizeof err) != 0) {
        printf("  %s %s: %s\n", path, model, err);
        loaded_close(&l);
        return;
    }
    PrtTrajSet full, triples;
    if (prt_trajset_generate(&l.c.ps, TRAJ, POINTS, l.sys->data.dt, 1e-9, 1e-9, 0, &full, err, sizeof err) != 0) {
        printf("  %s data: %s\n", path, err);
        prt_model_close(&m), loaded_close(&l);
        return;
    }
    prt_trajset_all_windows(&full, m.family->train_window, &triples);
    long per_epoch = (triples.n + BATCH - 1) / BATCH;
    double *theta = malloc(sizeof(double) * (size_t)m.nparams);
    PrtTrainResult r;
    PrtTrainOptions o = {.epochs = 1, .batch = BATCH, .lr = 1e-3, .adam = true, .checkpoint_every = 1000,
                         .threads = threads};
    prt_train(&m, theta, &triples, NULL, &o, &r, err, sizeof err); /* warm-up: the tapes' buffers */
    prt_train_result_free(&r);
    o.epochs = EPOCHS;
    double flops0 = (double)prt_mlp_gemm_flops, t0 = clock_s(CLOCK_MONOTONIC), c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
    PrtTrainStatus st = prt_train(&m, theta, &triples, NULL, &o, &r, err, sizeof err);
    long its = per_epoch * EPOCHS;
    double per = (clock_s(CLOCK_MONOTONIC) - t0) / its, cpu = (clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0) / its;
    double gflop = ((double)prt_mlp_gemm_flops - flops0) / its / 1e9;
    if (st == PRT_TRAIN_DONE)
        printf("  %s %s %s  %d thread%s  %6.2f ms/iteration (CPU %5.2f ms)  100k iterations: %5.1f min  "
               "%5.3f GFLOP/iteration  %5.1f GFLOP/s = %3.0f%% of peak\n",
               path, model, f32 ? "f32" : "f64", threads, threads == 1 ? " " : "s", per * 1e3, cpu * 1e3, per * PROTOCOL_ITERATIONS / 60,
               gflop, gflop / per, 100 * gflop / per / peak);
    else
        printf("  %s %s: training failed: %s\n", path, model, err);
    prt_train_result_free(&r);
    free(theta);
    prt_model_close(&m);
    prt_trajset_free(&full), prt_trajset_free(&triples);
    loaded_close(&l);
}

void bench_dtlnn(void) {
    printf("== 5. DT-LNN training at the 2-body protocol (twobody.phys `dtlnn`: Eq. 12 over position triples,\n");
    printf("   4 inputs, 2 x 200 tanh, batch 200, f64 and f32, Adam): the mean of %d iterations after %d of warm-up;\n",
           EPOCHS * TRAJ * (POINTS - 2) / BATCH, TRAJ * (POINTS - 2) / BATCH);
    printf("   on T threads each thread trains on 1/T of every minibatch with single-threaded GEMMs (train.h)\n");
    for (int threads = 1; threads <= 2; threads++) {
        openblas_set_num_threads(threads);
        double peak = gemm_peak(false, 1024, 1024, 1024), speak = gemm_peak(true, 1024, 1024, 1024);
        printf("  OpenBLAS dgemm peak, %d thread%s: %.1f GFLOP/s; sgemm: %.1f (1024^3)\n", threads, threads == 1 ? "" : "s",
               peak, speak);
        dtlnn_threads("examples/twobody.phys", "dtlnn", threads, false, peak);
        dtlnn_threads("examples/twobody.phys", "dtlnn", threads, true, speak);
    }
    openblas_set_num_threads(1);
    printf("\n");
}
