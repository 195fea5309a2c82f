/* liet2.c — `make bench` part 6: training speed of the Lie T2 model at the TRAPPIST-1 example
   (examples/trappist1.phys `liet2`: the known point-mass gravity plus its SiLU residual
   potentials, of the bodies' centres and a term per rigid body, each body's gain started from
   the windows as `physc run` starts it; the example's substeps and windows, batch 256) in f64
   and f32 (the network's passes), on 1 and 2 threads: seconds per iteration (a minibatch of
   256 windows: two gradients of the potential a step, and the reverse sweep), the
   example's seconds per epoch (its 26 trajectories of 129 points give 26 x (130 - chunk)
   windows) and for its epochs, and the GFLOP of the GEMMs an iteration calls with their
   share of the dgemm peak. The windows come from 16 short trajectories. */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bench.h"
#include "io/dataset.h"
#include "../unit/loaded.h"
#include "train/train.h"
#include "trained.h"

enum { BATCH = 256, TRAJ = 16, POINTS = 21, ITERATIONS = 3 };

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void liet2_run(Loaded *l, int k, const PrtTrajSet *windows, bool f32, int threads, double peak) {
    char err[512];
    PrtModelConfig cfg;
    Loc where;
    PrtModel m;
    if (!trained_config(l->sys, &l->sys->models[k], f32, &cfg, &where, err, sizeof err) ||
        prt_model_open(&m, &l->c.ps, &cfg, err, sizeof err) != 0) {
        printf("  trappist1 liet2: %s\n", err);
        return;
    }
    char note[1024]; /* each body's term starts at what the known terms miss on it, as `physc run` starts it */
    if (prt_model_from_data(&m, windows->n, windows->npts, windows->dt, windows->xv, note, sizeof note, err, sizeof err)) {
        printf("  trappist1 liet2: %s\n", err);
        prt_model_close(&m);
        return;
    }
    double *theta = malloc(sizeof(double) * (size_t)m.nparams);
    PrtRng rng;
    prt_rng_seed(&rng, 1);
    prt_model_init_theta(&m, theta, &rng);
    PrtTrainResult r;
    PrtTrainOptions o = {.epochs = 1, .batch = BATCH, .lr = 4e-4, .weight_decay = 1e-4, .checkpoint_every = 1000,
                         .threads = threads};
    prt_train(&m, theta, windows, NULL, &o, &r, err, sizeof err); /* warm-up: the tapes' buffers */
    prt_train_result_free(&r);
    o.epochs = ITERATIONS;
    double flops0 = (double)prt_mlp_gemm_flops, t0 = now_s();
    PrtTrainStatus st = prt_train(&m, theta, windows, NULL, &o, &r, err, sizeof err);
    long its = ITERATIONS * ((windows->n + BATCH - 1) / BATCH);
    double per = (now_s() - t0) / its, gflop = ((double)prt_mlp_gemm_flops - flops0) / its / 1e9;
    double per_epoch = per * (26.0 * (130 - l->sys->data.chunk) / BATCH), epochs = l->sys->train.epochs;
    if (st == PRT_TRAIN_DONE)
        printf("  %s %d thread%s  %6.2f s/iteration  %6.1f s/epoch  %ld epochs: %5.1f h  %6.2f GFLOP/iteration  "
               "%5.1f GFLOP/s = %3.0f%% of the dgemm peak\n", f32 ? "f32" : "f64", threads, threads == 1 ? " " : "s", per,
               per_epoch, (long)epochs, per_epoch * epochs / 3600, gflop, gflop / per, 100 * gflop / per / peak);
    else
        printf("  trappist1 liet2: training failed: %s\n", err);
    prt_train_result_free(&r);
    free(theta);
    prt_model_close(&m);
}

void bench_liet2(void) {
    Loaded l;
    char err[512];
    const Model *md = NULL;
    if (!loaded_open(&l, "examples/trappist1.phys", COMPILE_SIMULATE, -1, stderr, err, sizeof err) ||
        trained_pick(l.sys, "liet2", &md)) {
        printf("  examples/trappist1.phys does not compile: %s\n", err);
        loaded_close(&l);
        return;
    }
    int k = (int)(md - l.sys->models);
    printf("== 6. Lie T2 training at the TRAPPIST-1 example (trappist1.phys `liet2`: its SiLU networks,\n"
           "   %d substeps an interval, windows of %d points, batch 256, AdamW): %d iterations after one of warm-up\n",
           l.sys->train.substeps, l.sys->data.chunk, ITERATIONS);
    loaded_close(&l);
    PrtTrajSet full, windows;
    if (!loaded_open(&l, "examples/trappist1.phys", 0, k, stderr, err, sizeof err) ||
        prt_trajset_generate(&l.c.ps, TRAJ, POINTS, l.sys->data.dt, 1e-10, 1e-13, 0, &full, err, sizeof err) != 0) {
        printf("  trappist1: %s\n", err);
        loaded_close(&l);
        return;
    }
    prt_trajset_all_windows(&full, l.sys->data.chunk, &windows);
    for (int threads = 1; threads <= 2; threads++) {
        openblas_set_num_threads(threads);
        double peak = gemm_peak(false, 1024, 1024, 1024);
        printf("  OpenBLAS dgemm peak, %d thread%s: %.1f GFLOP/s (1024^3)\n", threads, threads == 1 ? "" : "s", peak);
        liet2_run(&l, k, &windows, false, threads, peak);
        liet2_run(&l, k, &windows, true, threads, peak);
    }
    openblas_set_num_threads(1);
    prt_trajset_free(&full), prt_trajset_free(&windows);
    loaded_close(&l);
    printf("\n");
}
