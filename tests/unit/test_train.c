/* test_train.c — the training loop and the metrics: training on a tiny set reduces the
   loss at least 100x; the same seed gives the same parameters bit for bit; 10 epochs equal
   5 epochs + resume + 5 epochs bit for bit; a corrupted or truncated checkpoint is
   refused; a NaN in the data stops training naming the epoch; the time summary of the
   metrics (geometric mean by the trapezoidal rule) against closed forms; the CSV round trip;
   test windows cut from a chunk's start; nested training sets. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "train/evaluate.h"
#include "loaded.h"
#include "train/train.h"

typedef struct Setup {
    Loaded l;
    PrtTrajSet full, train;
} Setup;

static bool setup(Setup *s, const char *path, long ntraj) {
    memset(s, 0, sizeof *s);
    char err[512];
    if (!loaded_open(&s->l, path, COMPILE_CHNN | COMPILE_CLNN, -1, stdout, err, sizeof err)) {
        CHECK(false, "%s: %s", path, err);
        loaded_close(&s->l);
        return false;
    }
    CHECK(prt_trajset_generate(&s->l.c.ps, ntraj, 21, 0.03, 1e-9, 1e-11, 5, &s->full, err, sizeof err) == 0, "%s", err);
    PrtRng rng;
    prt_rng_seed(&rng, 11);
    prt_trajset_chunks(&s->full, 5, &rng, &s->train);
    return true;
}

/* The data solver's progress observer (physc run's "data: ... %" lines) sees every output
   time in order, and observing changes nothing in the data */
typedef struct Seen {
    int calls, last, nt;
    bool in_order;
} Seen;

static void seen_reached(void *ctx, int k, int nt) {
    Seen *v = ctx;
    v->in_order = v->in_order && k > v->last;
    v->calls++, v->last = k, v->nt = nt;
}

static void data_progress_observed(Setup *s) {
    Seen seen = {.last = -1, .in_order = true};
    PrtOdeObserver obs = {seen_reached, &seen, 0, 0};
    PrtDataSolver solver = {PRT_INT_DOPRI5, 1, 1e-9, 1e-11, &obs};
    PrtTrajSet again;
    char err[512];
    CHECK(prt_trajset_generate_by(&s->l.c.ps, s->full.n, 21, 0.03, &solver, 5, &again, err, sizeof err) == 0, "%s", err);
    CHECK(seen.calls >= 20 && seen.in_order && seen.last == seen.nt - 1 && seen.nt == 21,
          "progress: %d calls, last %d of %d, in order %d", seen.calls, seen.last, seen.nt, seen.in_order);
    long len = (long)again.W * again.npts * again.n;
    CHECK(again.n == s->full.n && !memcmp(again.xv, s->full.xv, sizeof(double) * (size_t)len),
          "observed data differ from unobserved");
    prt_trajset_free(&again);
}

static void teardown(Setup *s) {
    prt_trajset_free(&s->full), prt_trajset_free(&s->train);
    loaded_close(&s->l);
}

static const PrtMlp small = {.nlayers = 3, .size = {2, 32, 32, 1}, .act = PRT_ACT_TANH};

static PrtTrainOptions options(int epochs) {
    return (PrtTrainOptions){.epochs = epochs, .batch = 8, .lr = 3e-3, .weight_decay = 1e-4,
                             .cosine = true, .seed = 42, .checkpoint_every = 1000, .fingerprint = {{77}}};
}

static void tiny_set_learns(Setup *s) {
    PrtModel m;
    char err[512];
    open_cartesian(&m, &s->l.c.ps, false, &small, err, sizeof err);
    double *theta = malloc(sizeof(double) * (size_t)m.nparams);
    PrtTrainOptions o = options(600);
    PrtTrainResult r;
    CHECK(prt_train(&m, theta, &s->train, NULL, &o, &r, err, sizeof err) == PRT_TRAIN_DONE, "%s", err);
    double first = r.loss[0], last = r.loss[o.epochs - 1];
    CHECK(last * 100 <= first, "the loss fell only from %.3e to %.3e", first, last);
    double mass[8];
    prt_model_masses(&m, theta, mass);
    printf("  tiny set (16 chunks), CHNN 2-32-32-1: loss %.3e -> %.3e in %d epochs (%.0fx), learned mass %.4f (true %.4f)\n",
          first, last, o.epochs, first / last, mass[0], s->l.c.ps.params[0]);
    prt_train_result_free(&r);
    free(theta);
    prt_model_close(&m);
}

/* Trains `epochs` (stopping after stop_after, resuming when asked) and returns theta. */
static int shards = 1; /* the threads option of the runs below */

static double *train_run(Setup *s, int epochs, int stop_after, bool resume, const char *ckpt, double **loss) {
    PrtModel m;
    char err[512];
    open_cartesian(&m, &s->l.c.ps, true, &small, err, sizeof err);
    double *theta = malloc(sizeof(double) * (size_t)m.nparams);
    PrtTrainOptions o = options(epochs);
    o.checkpoint = ckpt, o.stop_after = stop_after, o.resume = resume, o.checkpoint_every = 2, o.threads = shards;
    PrtTrainResult r;
    PrtTrainStatus st = prt_train(&m, theta, &s->train, &s->train, &o, &r, err, sizeof err);
    CHECK(st == (stop_after && stop_after < epochs ? PRT_TRAIN_INTERRUPTED : PRT_TRAIN_DONE), "status %d: %s", st, err);
    if (loss) {
        *loss = malloc(sizeof(double) * (size_t)epochs);
        memcpy(*loss, r.loss, sizeof(double) * (size_t)epochs);
    }
    prt_train_result_free(&r);
    prt_model_close(&m);
    return theta;
}

static void determinism_and_resume(Setup *s) {
    char dir[] = "/tmp/physc-train-XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    char ckpt[256];
    snprintf(ckpt, sizeof ckpt, "%s/checkpoint.bin", dir);
    PrtModel probe;
    char err[512];
    open_cartesian(&probe, &s->l.c.ps, true, &small, err, sizeof err);
    size_t bytes = sizeof(double) * (size_t)probe.nparams;
    prt_model_close(&probe);

    double *loss_a, *loss_b, *loss_c;
    double *a = train_run(s, 10, 0, false, NULL, &loss_a);
    double *b = train_run(s, 10, 0, false, NULL, &loss_b);
    CHECK(memcmp(a, b, bytes) == 0 && memcmp(loss_a, loss_b, 10 * sizeof(double)) == 0, "same seed, different run");
    double *part = train_run(s, 10, 5, false, ckpt, NULL);
    double *c = train_run(s, 10, 0, true, ckpt, &loss_c);
    CHECK(memcmp(a, c, bytes) == 0, "10 epochs differ from 5 + resume + 5");
    CHECK(memcmp(loss_a, loss_c, 10 * sizeof(double)) == 0, "the loss history differs after a resume");
    printf("  10 epochs == 5 + resume + 5, bit for bit: %s\n", memcmp(a, c, bytes) ? "NO" : "yes");

    /* the minibatch in 3 shards on 3 threads: deterministic, resumable, and the same
       training up to the order of summation */
    shards = 3;
    double *loss_d, *loss_e;
    double *d = train_run(s, 10, 0, false, NULL, &loss_d);
    double *d2 = train_run(s, 10, 5, false, ckpt, NULL);
    double *e = train_run(s, 10, 0, true, ckpt, &loss_e);
    CHECK(memcmp(d, e, bytes) == 0 && memcmp(loss_d, loss_e, 10 * sizeof(double)) == 0,
          "3 threads: 10 epochs differ from 5 + resume + 5");
    double worst = 0;
    for (int k = 0; k < 10; k++) worst = fmax(worst, fabs(loss_d[k] - loss_a[k]) / loss_a[k]);
    CHECK(worst < 1e-6, "3 threads train differently from 1: loss history differs by %.2e", worst);
    printf("  3 threads: resume bit for bit %s; loss history within %.1e of 1 thread\n", memcmp(d, e, bytes) ? "NO" : "yes",
           worst);
    shards = 1;
    free(d), free(d2), free(e), free(loss_d), free(loss_e);

    /* a truncated or corrupted checkpoint is refused with a clear message */
    FILE *f = fopen(ckpt, "r+b");
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, size / 2, SEEK_SET);
    int byte = fgetc(f);
    fseek(f, size / 2, SEEK_SET);
    fputc(byte ^ 0x10, f);
    fclose(f);
    PrtModel m;
    open_cartesian(&m, &s->l.c.ps, true, &small, err, sizeof err);
    double *theta = malloc(bytes);
    PrtTrainOptions o = options(10);
    o.checkpoint = ckpt, o.resume = true;
    PrtTrainResult r;
    CHECK(prt_train(&m, theta, &s->train, NULL, &o, &r, err, sizeof err) == PRT_TRAIN_FAILED && strstr(err, "corrupted"),
          "a corrupted checkpoint was not refused (%s)", err);
    prt_train_result_free(&r);
    CHECK(truncate(ckpt, size - 100) == 0, "truncate");
    CHECK(prt_train(&m, theta, &s->train, NULL, &o, &r, err, sizeof err) == PRT_TRAIN_FAILED && strstr(err, "truncated"),
          "a truncated checkpoint was not refused (%s)", err);
    printf("  truncated checkpoint: %s\n", err);
    prt_train_result_free(&r);
    o.fingerprint.part[PRT_FP_MODEL] = 78;
    CHECK(prt_train(&m, theta, &s->train, NULL, &o, &r, err, sizeof err) == PRT_TRAIN_FAILED, "fingerprint not checked");
    prt_train_result_free(&r);

    /* a NaN in the data: training stops at epoch 1 and says so */
    PrtTrajSet bad = s->train;
    bad.xv = malloc(sizeof(double) * (size_t)(2 * bad.N * bad.n * bad.npts));
    memcpy(bad.xv, s->train.xv, sizeof(double) * (size_t)(2 * bad.N * bad.n * bad.npts));
    bad.xv[3 * bad.n * 2 * bad.N + 1] = NAN;
    o = options(3);
    CHECK(prt_train(&m, theta, &bad, NULL, &o, &r, err, sizeof err) == PRT_TRAIN_DIVERGED && strstr(err, "epoch 1"),
          "NaN not caught (%s)", err);
    printf("  NaN in the data: %s\n", err);
    prt_train_result_free(&r);
    /* ... and in the validation data: a validation loss that is no number stops it too, not
       printed as a figure (it showed as "-", which is what no validation set shows) */
    CHECK(prt_train(&m, theta, &s->train, &bad, &o, &r, err, sizeof err) == PRT_TRAIN_DIVERGED &&
          strstr(err, "epoch 1: the validation loss became NaN or infinite") && r.epochs_done == 0,
          "a NaN validation loss not caught (%s)", err);
    prt_train_result_free(&r);
    free(bad.xv);
    free(theta);
    prt_model_close(&m);
    remove(ckpt);
    CHECK(rmdir(dir) == 0, "temporary files left in %s", dir);
    free(a), free(b), free(c), free(part), free(loss_a), free(loss_b), free(loss_c);
}

static void time_geomean(void) {
    double e[101];
    for (int k = 0; k <= 100; k++) e[k] = 1e-3;
    CHECK(fabs(prt_time_geomean(e, 101, 1, 0.1) / (1e-3 + 1e-8) - 1) < 1e-12, "constant");
    /* e(t) = exp(a t) - 1e-8: log(e + 1e-8) is linear, so the trapezoidal rule is exact: exp(a T / 2) */
    for (int k = 0; k <= 100; k++) e[k] = exp(-20 + 0.15 * k * 0.1) - 1e-8;
    double g = prt_time_geomean(e, 101, 1, 0.1);
    CHECK(fabs(g / exp(-20 + 0.15 * 10 / 2) - 1) < 1e-12, "exponential: %g", g);
    /* strided (nt x n layout): column 1 of 3 */
    double f[3 * 5];
    for (int k = 0; k < 5; k++) f[3 * k] = 1, f[3 * k + 1] = k == 0 ? 0 : 1e-2, f[3 * k + 2] = 1;
    g = prt_time_geomean(f + 1, 5, 3, 1);
    double want = exp((0.5 * (log(1e-8) + log(1e-2 + 1e-8)) + 3 * log(1e-2 + 1e-8)) / 4);
    CHECK(fabs(g / want - 1) < 1e-12, "trapezoid with a zero first point: %g vs %g", g, want);
}

/* Test windows (the reference code's test rollouts from a random chunk's first state): each
   is a slice of its own trajectory starting at a multiple of the chunk, and every start that
   leaves room is drawn. */
static void windows_are_slices(Setup *s) {
    const PrtTrajSet *full = &s->full; /* 21 points: windows of 11 start at 0, 5 or 10 */
    PrtRng rng;
    prt_rng_seed(&rng, 5);
    PrtTrajSet w;
    prt_trajset_windows(full, 5, 11, &rng, &w);
    CHECK(w.n == full->n && w.npts == 11 && w.N == full->N && w.dt == full->dt, "shape");
    long rows = 2L * full->N, n = full->n;
    bool seen[3] = {false, false, false};
    for (long b = 0; b < n; b++) {
        int start = -1;
        for (int c = 0; c < 3 && start < 0; c++) {
            bool same = true;
            for (int k = 0; k < 11 && same; k++)
                for (long i = 0; i < rows; i++)
                    same &= w.xv[(k * rows + i) * n + b] == full->xv[((long)(5 * c + k) * rows + i) * n + b];
            if (same) start = c;
        }
        CHECK(start >= 0, "window %ld is not a slice of its trajectory from a chunk's start", b);
        if (start >= 0) seen[start] = true;
    }
    CHECK(seen[0] && seen[1] && seen[2], "not every start drawn in %ld trajectories", n);
    prt_trajset_free(&w);
}

/* Nested training sets (CHNN App. D.1, physc compare --train-sizes): the first m of n
   trajectories start from the same sampled states, get the same chunks and the same noise
   as a set of m alone, whatever n. */
static void prefixes_are_nested(Setup *s) {
    const long m = 5, n = s->full.n;
    long rows = 2L * s->full.N, idx[5] = {0, 1, 2, 3, 4};
    PrtTrajSet few;
    char err[512];
    CHECK(prt_trajset_generate(&s->l.c.ps, m, 21, 0.03, 1e-9, 1e-11, 5, &few, err, sizeof err) == 0, "%s", err);
    bool same = true;
    for (long b = 0; b < m; b++)
        for (long i = 0; i < rows; i++) same &= few.xv[i * m + b] == s->full.xv[i * n + b];
    CHECK(same, "the first %ld sampled states depend on how many are sampled", m);
    /* chunks and noise, from the same first 5 trajectories alone and among 16 */
    prt_trajset_free(&few);
    few = (PrtTrajSet){.n = m, .npts = s->full.npts, .N = s->full.N, .W = s->full.W, .dt = s->full.dt,
                       .xv = malloc(sizeof(double) * (size_t)(rows * s->full.npts * m))};
    prt_trajset_gather(&s->full, idx, m, few.xv);
    PrtTrajSet cf, ca;
    PrtRng r1, r2;
    prt_rng_seed(&r1, 9), prt_rng_seed(&r2, 9);
    prt_trajset_chunks(&few, 5, &r1, &cf), prt_trajset_chunks(&s->full, 5, &r2, &ca);
    prt_rng_seed(&r1, 10), prt_rng_seed(&r2, 10);
    prt_trajset_add_noise(&cf, 0.1, &r1), prt_trajset_add_noise(&ca, 0.1, &r2);
    same = true;
    for (long b = 0; b < m; b++)
        for (long r = 0; r < rows * 5; r++) same &= cf.xv[r * m + b] == ca.xv[r * n + b];
    CHECK(same, "the first %ld noisy chunks depend on how many trajectories there are", m);
    prt_trajset_free(&few), prt_trajset_free(&cf), prt_trajset_free(&ca);
}

static void csv_round_trip(Setup *s) {
    char path[] = "/tmp/physc-csv-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0, "mkstemp");
    close(fd);
    const char *names[] = {"x", "y", "vx", "vy"};
    char err[512];
    CHECK(prt_trajset_write_csv(&s->full, path, names, err, sizeof err) == 0, "%s", err);
    PrtTrajSet back;
    CHECK(prt_trajset_read_csv(path, 2, names, &back, err, sizeof err) == 0, "%s", err);
    CHECK(back.n == s->full.n && back.npts == s->full.npts && fabs(back.dt - 0.03) < 1e-15, "shape");
    CHECK(memcmp(back.xv, s->full.xv, sizeof(double) * (size_t)(4 * back.n * back.npts)) == 0, "values differ");
    prt_trajset_free(&back);
    FILE *f = fopen(path, "a");
    fprintf(f, "0,0.5,1,2,three,4\n");
    fclose(f);
    CHECK(prt_trajset_read_csv(path, 2, names, &back, err, sizeof err) != 0 && strstr(err, ":"), "bad row accepted");
    printf("  bad CSV row: %s\n", err);
    remove(path);
}

int main(void) {
    time_geomean();
    Setup s;
    if (setup(&s, "examples/pendulum1.phys", 16)) {
        csv_round_trip(&s);
        data_progress_observed(&s);
        windows_are_slices(&s);
        prefixes_are_nested(&s);
        tiny_set_learns(&s);
        determinism_and_resume(&s);
        teardown(&s);
    }
    printf("test_train: %s (%d failures)\n", failures ? "FAIL" : "ok", failures);
    return failures != 0;
}
