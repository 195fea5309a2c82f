/* models.c — `make bench` part 4: training speed of every model family of an example at its
   file's settings (batch 200, 5-point chunks, 800 of them, 3 x 256 tanh networks, rk4_38):
   seconds per epoch, the GFLOP/s of the GEMMs the passes called, and their share of the
   dgemm peak, in f64 on one thread. The baselines' fields hold derivatives of their networks
   (recorded on the tape: runtime/ad/mlp_graph.h), so an epoch of theirs costs more GEMMs than a
   CHNN's; what matters here is the share of the peak those GEMMs reach. */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "io/dataset.h"
#include "../unit/loaded.h"
#include "train/train.h"
#include "trained.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Every model of the program that physc trains, one line each. */
static void models_of(const char *path, double peak) {
    Loaded l;
    char err[512];
    if (!loaded_open(&l, path, COMPILE_SIMULATE, -1, stderr, err, sizeof err)) {
        printf("  %-26s does not compile: %s\n", path, err);
        loaded_close(&l);
        return;
    }
    int nmodels = l.sys->nmodels;
    loaded_close(&l);
    for (int k = 0; k < nmodels; k++) {
        if (!loaded_open(&l, path, 0, k, stderr, err, sizeof err)) {
            loaded_close(&l);
            continue; /* a kind physc does not train (dtlnn, liet2) */
        }
        const Model *md = &l.sys->models[k];
        PrtModelConfig cfg;
        Loc where;
        PrtModel m;
        PrtTrajSet full, chunks;
        if (!trained_config(l.sys, md, false, &cfg, &where, err, sizeof err) ||
            prt_model_open(&m, &l.c.ps, &cfg, err, sizeof err) != 0) {
            loaded_close(&l);
            continue;
        }
        if (prt_trajset_generate(&l.c.ps, 800, 101, l.sys->data.dt, 1e-7, 1e-9, 0, &full, err, sizeof err) != 0) {
            printf("  %-26s data: %s\n", path, err);
            prt_model_close(&m), loaded_close(&l);
            return;
        }
        PrtRng rng;
        prt_rng_seed(&rng, 1);
        prt_trajset_chunks(&full, 5, &rng, &chunks);
        double *theta = malloc(sizeof(double) * (size_t)m.nparams);
        PrtTrainResult r;
        PrtTrainOptions warm = {.epochs = 1, .batch = 200, .lr = 1e-4, .checkpoint_every = 1000, .threads = 1};
        prt_train(&m, theta, &chunks, NULL, &warm, &r, err, sizeof err);
        prt_train_result_free(&r);
        const int epochs = 2;
        PrtTrainOptions o = {.epochs = epochs, .batch = 200, .lr = 1e-4, .cosine = true, .checkpoint_every = 1000,
                             .threads = 1};
        double flops0 = (double)prt_mlp_gemm_flops, t0 = now_s();
        PrtTrainStatus st = prt_train(&m, theta, &chunks, NULL, &o, &r, err, sizeof err);
        double per = (now_s() - t0) / epochs, gflops = ((double)prt_mlp_gemm_flops - flops0) / epochs / 1e9;
        if (st == PRT_TRAIN_DONE)
            printf("  %-26s %-6s %-6s %7ld parameters  %6.3f s/epoch  %6.2f GFLOP/epoch  %6.1f GFLOP/s = %3.0f%% of peak\n",
                   path, md->name, m.family->title, m.nparams, per, gflops, gflops / per, 100 * gflops / per / peak);
        else
            printf("  %-26s %-6s training failed: %s\n", path, md->name, err);
        prt_train_result_free(&r);
        free(theta);
        prt_model_close(&m);
        prt_trajset_free(&full), prt_trajset_free(&chunks);
        loaded_close(&l);
    }
}

void bench_models(void) {
    printf("== 4. Every model family's training, f64, 1 thread: 800 chunks of 5 points, batch 200, rk4_38,\n");
    printf("   the example's networks (the mean of 2 epochs after one warm-up; GFLOP: the GEMMs the passes called)\n");
    openblas_set_num_threads(1);
    double peak = gemm_peak(false, 1024, 1024, 1024);
    printf("  OpenBLAS dgemm peak, 1 thread: %.1f GFLOP/s (1024^3)\n", peak);
    models_of("examples/pendulum3.phys", peak);
    models_of("examples/gyroscope.phys", peak);
    printf("\n");
}
