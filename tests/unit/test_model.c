/* test_model.c — the learned models' training gradient: d loss / d theta through the RK4
   (3/8) steps, the MLP's double backward, the JIT'd VJP kernels of Field / Accel / MassV /
   MinvP and the exponential mass parametrization, against central differences of the
   loss for EVERY parameter (weights, biases, log masses and moments) of a small network,
   for CHNN and CLNN on a chain pendulum, the gyroscope (a rigid body with a joint) and the
   magnet pendulum, and with a known potential term beside the network (coupled pendulums).
   Also: a model compiled for rollouts only (no VJP kernels) rolls out as one compiled for
   training, and refuses to train. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fd_model.h"
#include "loaded.h"
#include "models/model.h"
#include "train/train.h"

/* model < 0: compiled for both kinds, without known terms */
static bool load_for(const char *path, Loaded *l, int model) {
    char err[512];
    bool ok = loaded_open(l, path, COMPILE_CHNN | COMPILE_CLNN, model, stdout, err, sizeof err);
    CHECK(ok, "%s: %s", path, err);
    if (!ok) loaded_close(l);
    return ok;
}

/* A CHNN's or CLNN's compile in loop form (runtime/system/loop_field.h): no Field or Accel kernel,
   the loop form's reverse passes in training */
static bool load_loop(const char *path, Loaded *l, bool lagrangian) {
    char err[512];
    driver_set_kernel_form(KERNEL_FORM_LOOP);
    bool ok = loaded_open(l, path, lagrangian ? COMPILE_CLNN : COMPILE_CHNN, -1, stdout, err, sizeof err);
    driver_set_kernel_form(KERNEL_FORM_AUTO);
    CHECK(ok && l->c.ps.loop && !l->c.ps.Field && !l->c.ps.FieldVJP && !l->c.ps.Accel && !l->c.ps.AccelVJP,
          "%s in loop form: %s", path, ok ? "not as asked" : err);
    CHECK(ok, "%s: %s", path, err);
    if (!ok) loaded_close(l);
    return ok;
}

/* npts points of n true trajectories as (X, Xdot): npts x 2N x n. */
static double *make_chunks(PrtSystem *s, long n, int npts, double dt) {
    long pt = 2L * s->N * n, Nn = (long)s->N * n;
    double *z = malloc(sizeof(double) * (size_t)(pt * npts)), *t = malloc(sizeof(double) * (size_t)npts);
    PrtRng rng;
    prt_rng_seed(&rng, 7);
    prt_sample_initial(s, &rng, n, 1e-12, z);
    for (int k = 0; k < npts; k++) t[k] = k * dt;
    CHECK(prt_dopri5(prt_hamiltonian_rhs, s, n, 2 * s->N, z, t, npts, 1e-9, 1e-11, z, NULL) == 0, "dopri5");
    double *v = malloc(sizeof(double) * (size_t)Nn);
    for (int k = 0; k < npts; k++) { /* P -> Xdot with the true masses */
        prt_minv(s, n, z + k * pt + Nn, v);
        memcpy(z + k * pt + Nn, v, sizeof(double) * (size_t)Nn);
    }
    free(v), free(t);
    return z;
}

/* model -2: a CHNN in loop form */
static void gradient_check(const char *path, bool lagrangian, int model) {
    Loaded l;
    if (!(model == -2 ? load_loop(path, &l, lagrangian) : load_for(path, &l, model))) return;
    PrtSystem *s = &l.c.ps;
    PrtMlp mlp = {.nlayers = 3, .size = {s->N, 6, 5, 1}, .act = PRT_ACT_TANH};
    PrtModel m;
    char err[256];
    CHECK(open_cartesian(&m, s, lagrangian, &mlp, err, sizeof err) == 0, "%s", err);
    m.cfg.substeps = 2;
    long n = 3;
    int npts = 3;
    double dt = 0.05;
    double *chunks = make_chunks(s, n, npts, dt);
    double *theta = malloc(sizeof(double) * (size_t)m.nparams), *grad = malloc(sizeof(double) * (size_t)m.nparams);
    PrtRng rng;
    prt_rng_seed(&rng, 3);
    prt_model_init_theta(&m, theta, &rng);
    for (long k = 0; k < m.nparams; k++) theta[k] += 0.3 * prt_rng_normal(&rng); /* biases and masses away from 0 */
    double loss = prt_model_loss_grad(&m, theta, n, npts, dt, chunks, grad);
    double plain = prt_model_loss(&m, theta, n, npts, dt, chunks);
    CHECK(fabs(loss - plain) <= 1e-12 * fabs(plain), "%s: tape loss %.17g, plain loss %.17g", path, loss, plain);
    FdWorst w = {0};
    fd_grad(fd_loss, &(FdLoss){&m, n, npts, dt, chunks}, theta, m.nparams, grad, &(FdOpts){.h = 1e-6, .scale = 1e-3},
            &w);
    CHECK(w.err < 1e-5, "%s %s: gradient of %ld entries: " FD_FMT, path, lagrangian ? "CLNN" : "CHNN", m.nparams,
          FD_ARGS(w));
    printf("  %-28s %s: %ld parameters (%d masses), loss %.4g, worst relative gradient error %.2e\n", path,
           model == -2 ? (lagrangian ? "CLNN (loop form)" : "CHNN (loop form)") : lagrangian ? "CLNN" : "CHNN", m.nparams,
           s->nmass, loss, w.err);
    free(theta), free(grad), free(chunks);
    prt_model_close(&m);
    loaded_close(&l);
}

/* The family's energy (T with the learned masses + V_theta + the known terms) is what the
   model's own field conserves: constant along its dopri5 rollout to the tolerance, the
   known springs' work included (without them it would not be). */
static void energy_conserved(const char *path, bool lagrangian, int model) {
    Loaded l;
    if (!load_for(path, &l, model)) return;
    PrtSystem *s = &l.c.ps;
    PrtMlp mlp = {.nlayers = 2, .size = {s->N, 8, 1}, .act = PRT_ACT_TANH};
    PrtModel m;
    char err[256];
    CHECK(open_cartesian(&m, s, lagrangian, &mlp, err, sizeof err) == 0, "%s", err);
    CHECK(m.family->energy && (model < 0 || s->Vknown), "%s: no energy, or no known terms' value", path);
    long n = 3, pt = 2L * s->N * n;
    int nt = 11;
    double *chunks = make_chunks(s, n, 2, 0.05), times[11], E0[3], E[3], drift = 0, scale = 0;
    for (int k = 0; k < nt; k++) times[k] = 0.1 * k;
    double *theta = malloc(sizeof(double) * (size_t)m.nparams), *out = malloc(sizeof(double) * (size_t)(pt * nt));
    PrtRng rng;
    prt_rng_seed(&rng, 3);
    prt_model_init_theta(&m, theta, &rng);
    for (long k = 0; k < m.nparams; k++) theta[k] += 0.3 * prt_rng_normal(&rng); /* a potential that moves things */
    CHECK(prt_model_rollout(&m, theta, n, chunks, times, nt, 1e-11, 1e-12, out) == 0, "%s: rollout", path);
    for (int k = 0; k < nt && m.family->energy; k++) {
        m.family->energy(&m, theta, n, out + k * pt, k ? E : E0);
        for (long b = 0; b < n && k; b++) drift = fmax(drift, fabs(E[b] - E0[b])), scale = fmax(scale, fabs(E0[b]));
    }
    CHECK(scale > 0 && drift < 1e-7 * scale, "%s %s: its energy drifts by %.3g over 1 s (scale %.3g)", path,
          lagrangian ? "CLNN" : "CHNN", drift, scale);
    printf("  %-28s %s: its own energy drifts by %.2e over 1 s (scale %.2g)\n", path, lagrangian ? "CLNN" : "CHNN", drift,
           scale);
    free(theta), free(out), free(chunks);
    prt_model_close(&m);
    loaded_close(&l);
}

/* Training runs replicas of a model in parallel threads (runtime/train/train.c shards), all on one
   compiled system: in loop form each replica's field and reverse pass use scratch of its own.
   Two replicas of a loop-form CHNN of a 30-link chain, their gradients computed 12 times at
   once in two threads, equal those computed one at a time, bit for bit. */
typedef struct Replica {
    PrtModel m;
    const double *theta, *chunks;
    double *grad;
    long n;
} Replica;

static void *replica_grad(void *arg) {
    Replica *r = arg;
    prt_model_loss_grad(&r->m, r->theta, r->n, 3, 0.05, r->chunks, r->grad);
    return NULL;
}

static void parallel_replicas(const char *path) {
    Loaded l;
    if (!load_loop(path, &l, false)) return;
    PrtSystem *s = &l.c.ps;
    PrtMlp mlp = {.nlayers = 2, .size = {s->N, 8, 1}, .act = PRT_ACT_TANH};
    Replica r[2];
    char err[256];
    double *chunks[2];
    for (int k = 0; k < 2; k++) { /* batches of 16 and 19 */
        CHECK(open_cartesian(&r[k].m, s, false, &mlp, err, sizeof err) == 0, "%s", err);
        r[k].n = 16 + 3 * k, r[k].chunks = chunks[k] = make_chunks(s, r[k].n, 3, 0.05);
    }
    double *theta = malloc(sizeof(double) * (size_t)r[0].m.nparams), *alone = malloc(sizeof(double) * 2 * (size_t)r[0].m.nparams);
    PrtRng rng;
    prt_rng_seed(&rng, 5);
    prt_model_init_theta(&r[0].m, theta, &rng);
    for (int k = 0; k < 2; k++) r[k].theta = theta, r[k].grad = alone + k * r[0].m.nparams, replica_grad(&r[k]);
    double *both = malloc(sizeof(double) * 2 * (size_t)r[0].m.nparams);
    int differ = 0;
    for (int round = 0; round < 12; round++) {
        pthread_t tid;
        r[0].grad = both, r[1].grad = both + r[0].m.nparams;
        CHECK(pthread_create(&tid, NULL, replica_grad, &r[1]) == 0, "pthread_create");
        replica_grad(&r[0]);
        pthread_join(tid, NULL);
        differ += memcmp(both, alone, sizeof(double) * 2 * (size_t)r[0].m.nparams) != 0;
    }
    CHECK(differ == 0, "%s: two replicas' gradients in parallel threads differ from one at a time in %d of 12 rounds",
          path, differ);
    printf("  %-28s CHNN (loop form): two replicas in parallel threads, 12 rounds: %s\n", path, differ ? "differ" : "the same bits");
    for (int k = 0; k < 2; k++) prt_model_close(&r[k].m);
    free(theta), free(alone), free(both), free(chunks[0]), free(chunks[1]);
    loaded_close(&l);
}

/* The integrator floor (prt_model_truth_loss): the system's own dynamics stepped as in
   training. On chunks the same steps made it is zero up to rounding (it uses the true masses
   and potential and steps exactly as training does); on dopri5 chunks it is the step's
   truncation error, so halving the step divides it by 2^order: about 16 for RK4, 2 for Euler. */
static void integrator_floor(const char *path, bool lagrangian) {
    Loaded l;
    if (!load_for(path, &l, -1)) return;
    PrtSystem *s = &l.c.ps;
    PrtMlp mlp = {.nlayers = 2, .size = {s->N, 4, 1}, .act = PRT_ACT_TANH};
    PrtModel m;
    char err[256];
    CHECK(open_cartesian(&m, s, lagrangian, &mlp, err, sizeof err) == 0, "%s", err);
    const char *kind = lagrangian ? "CLNN" : "CHNN";
    long n = 8, Nn = (long)s->N * n, pt = 2 * Nn;
    int npts = 5;
    double dt = 0.02; /* small enough for the asymptotic regime of both methods */
    if (!lagrangian) { /* chunks stepped by RK4 (3/8) in (X, P), then P -> Xdot */
        double *c = malloc(sizeof(double) * (size_t)(pt * npts)), *work = malloc(sizeof(double) * (size_t)(5 * pt));
        double *v = malloc(sizeof(double) * (size_t)Nn);
        PrtRng rng;
        prt_rng_seed(&rng, 11);
        prt_sample_initial(s, &rng, n, 1e-12, c);
        for (int k = 1; k < npts; k++) {
            memcpy(c + k * pt, c + (k - 1) * pt, sizeof(double) * (size_t)pt);
            prt_fixed_step(PRT_RK4_38, prt_hamiltonian_rhs, s, n, 2 * s->N, dt, c + k * pt, work);
        }
        for (int k = 0; k < npts; k++) {
            s->MinvP(n, c + k * pt + Nn, s->params, v);
            memcpy(c + k * pt + Nn, v, sizeof(double) * (size_t)Nn);
        }
        double same = prt_model_truth_loss(&m, n, npts, dt, c);
        CHECK(same < 1e-13, "%s %s: floor on chunks of its own steps %.3g, want rounding only", path, kind, same);
        printf("  %-28s %s: floor on RK4-made chunks %.1e\n", path, kind, same);
        free(c), free(work), free(v);
    }
    double *chunks = make_chunks(s, n, npts, dt);
    struct { PrtIntegrator method; const char *name; double lo, hi; } orders[2] = {{PRT_INT_RK4_38, "rk4_38", 12, 20},
                                                                                  {PRT_INT_EULER, "euler", 1.8, 2.2}};
    for (int i = 0; i < 2; i++) {
        m.cfg.integrator = orders[i].method;
        m.cfg.substeps = 1;
        double f1 = prt_model_truth_loss(&m, n, npts, dt, chunks);
        m.cfg.substeps = 2;
        double f2 = prt_model_truth_loss(&m, n, npts, dt, chunks);
        CHECK(f2 > 0 && f1 / f2 > orders[i].lo && f1 / f2 < orders[i].hi, "%s %s %s: floor %.3g with 1 step, %.3g with 2: ratio %.3g",
              path, kind, orders[i].name, f1, f2, f1 / f2);
        printf("  %-28s %s %-6s: floor %.3e (1 step per interval), %.3e (2 steps): ratio %.2f\n", path, kind,
               orders[i].name, f1, f2, f1 / f2);
    }
    free(chunks);
    prt_model_close(&m);
    loaded_close(&l);
}

/* The training gradient with the MLP in f32 against f64: the f32 passes round the weights
   once per recording and sum the weight adjoints of every MLP call in float (mlp.h), so a
   second minibatch with changed weights must see the new ones, and the summed adjoint must
   reach the double gradient. */
static void f32_matches_f64(const char *path) {
    Loaded l;
    if (!load_for(path, &l, -1)) return;
    PrtSystem *s = &l.c.ps;
    PrtMlp mlp64 = {.nlayers = 3, .size = {s->N, 16, 16, 1}, .act = PRT_ACT_TANH}, mlp32 = mlp64;
    mlp32.f32 = true;
    PrtModel m64, m32;
    char err[256];
    CHECK(open_cartesian(&m64, s, false, &mlp64, err, sizeof err) == 0, "%s", err);
    CHECK(open_cartesian(&m32, s, false, &mlp32, err, sizeof err) == 0, "%s", err);
    m64.cfg.substeps = m32.cfg.substeps = 2;
    long n = 5;
    int npts = 3;
    double dt = 0.05;
    double *chunks = make_chunks(s, n, npts, dt);
    double *theta = malloc(sizeof(double) * (size_t)m64.nparams);
    double *g64 = malloc(sizeof(double) * (size_t)m64.nparams), *g32 = malloc(sizeof(double) * (size_t)m64.nparams);
    PrtRng rng;
    prt_rng_seed(&rng, 5);
    prt_model_init_theta(&m64, theta, &rng);
    for (int round = 0; round < 2; round++) { /* round 1: the weights changed since round 0's recording */
        for (long k = 0; k < m64.nparams; k++) theta[k] += 0.3 * prt_rng_normal(&rng);
        double l64 = prt_model_loss_grad(&m64, theta, n, npts, dt, chunks, g64);
        double l32 = prt_model_loss_grad(&m32, theta, n, npts, dt, chunks, g32);
        double diff = 0, norm = 0;
        for (long k = 0; k < m64.nparams; k++) diff += (g32[k] - g64[k]) * (g32[k] - g64[k]), norm += g64[k] * g64[k];
        double rel = sqrt(diff / norm);
        CHECK(fabs(l32 - l64) <= 1e-5 * fabs(l64), "%s round %d: f32 loss %.9g, f64 loss %.9g", path, round, l32, l64);
        CHECK(rel < 1e-5, "%s round %d: f32 gradient off the f64 one by %.3g (relative norm)", path, round, rel);
        printf("  %-28s f32 vs f64, minibatch %d: loss off by %.1e, gradient by %.1e (relative)\n", path, round,
               fabs(l32 - l64) / fabs(l64), rel);
    }
    free(theta), free(g64), free(g32), free(chunks);
    prt_model_close(&m64), prt_model_close(&m32);
    loaded_close(&l);
}

/* A trained model's rollout needs only the forward kernels (`physc simulate --params`,
   emitted programs): compiled without the VJPs it rolls out bit for bit as compiled for
   training, and training it is refused with a message, not a crash. */
static void rollout_only(const char *path, bool lagrangian) {
    Loaded full, fwd;
    char err[256];
    if (!load_for(path, &full, -1)) return;
    bool ok = loaded_open(&fwd, path, COMPILE_CHNN | COMPILE_CLNN | COMPILE_ROLLOUT, -1, stdout, err, sizeof err);
    CHECK(ok, "%s (rollout only): %s", path, err);
    if (!ok) {
        loaded_close(&fwd), loaded_close(&full);
        return;
    }
    CHECK(!fwd.c.ps.FieldVJP && !fwd.c.ps.AccelVJP && fwd.c.ps.DPhiDot, "%s: rollout kernels", path);
    PrtMlp mlp = {.nlayers = 2, .size = {full.c.ps.N, 8, 1}, .act = PRT_ACT_SOFTPLUS};
    PrtModel a, b;
    CHECK(open_cartesian(&a, &full.c.ps, lagrangian, &mlp, err, sizeof err) == 0, "%s", err);
    CHECK(open_cartesian(&b, &fwd.c.ps, lagrangian, &mlp, err, sizeof err) == 0, "%s", err);
    CHECK(prt_model_trainable(&a) && !prt_model_trainable(&b), "%s: trainable", path);
    long n = 3, pt = 2L * full.c.ps.N * n;
    int nt = 6;
    double *chunks = make_chunks(&full.c.ps, n, 2, 0.05), times[6];
    for (int k = 0; k < nt; k++) times[k] = 0.05 * k;
    double *theta = malloc(sizeof(double) * (size_t)a.nparams), *ra = malloc(sizeof(double) * (size_t)(pt * nt)),
           *rb = malloc(sizeof(double) * (size_t)(pt * nt));
    PrtRng rng;
    prt_rng_seed(&rng, 5);
    prt_model_init_theta(&a, theta, &rng);
    CHECK(prt_model_rollout(&a, theta, n, chunks, times, nt, 1e-9, 1e-11, ra) == 0, "%s: rollout", path);
    CHECK(prt_model_rollout(&b, theta, n, chunks, times, nt, 1e-9, 1e-11, rb) == 0, "%s: rollout only", path);
    CHECK(!memcmp(ra, rb, sizeof(double) * (size_t)(pt * nt)), "%s: the rollouts differ", path);
    PrtTrajSet set = {.n = n, .npts = 2, .N = full.c.ps.N, .W = 2 * full.c.ps.N, .dt = 0.05, .xv = chunks},
               none = {.npts = 2, .N = full.c.ps.N, .W = 2 * full.c.ps.N};
    PrtTrainOptions to = {.epochs = 1, .batch = 3, .lr = 1e-3};
    PrtTrainResult tr;
    err[0] = 0;
    CHECK(prt_train(&b, theta, &set, &none, &to, &tr, err, sizeof err) == PRT_TRAIN_FAILED && strstr(err, "training"),
          "%s: training without VJP kernels: '%s'", path, err);
    printf("  %-28s %s rolled out without VJP kernels: bit-identical; training refused\n", path,
           lagrangian ? "CLNN" : "CHNN");
    prt_train_result_free(&tr);
    free(theta), free(ra), free(rb), free(chunks);
    prt_model_close(&a), prt_model_close(&b);
    loaded_close(&fwd), loaded_close(&full);
}

int main(void) {
    rollout_only("examples/pendulum2.phys", false);
    rollout_only("examples/gyroscope.phys", true);
    f32_matches_f64("examples/pendulum2.phys");
    const char *systems[] = {"examples/pendulum2.phys", "examples/gyroscope.phys", "examples/magnet.phys"};
    for (size_t i = 0; i < sizeof systems / sizeof systems[0]; i++) {
        gradient_check(systems[i], false, -1);
        gradient_check(systems[i], true, -1);
    }
    /* trained in loop form: the loop field's, Eq. 7's, M^-1's and M's reverse passes, the row
       classes' VJP kernels (point masses; a rigid body's masses and moments) */
    gradient_check("examples/pendulum2.phys", false, -2);
    gradient_check("examples/gyroscope.phys", false, -2);
    gradient_check("examples/pendulum2.phys", true, -2);
    gradient_check("examples/gyroscope.phys", true, -2);
    parallel_replicas("tests/run/chain30.phys");
    integrator_floor("examples/pendulum2.phys", false);
    integrator_floor("examples/pendulum2.phys", true);
    integrator_floor("examples/gyroscope.phys", false);
    integrator_floor("examples/gyroscope.phys", true);
    /* with the springs as a known term beside the network (models 0: chnn, 1: clnn) */
    gradient_check("tests/run/hybrid.phys", false, 0);
    gradient_check("tests/run/hybrid.phys", true, 1);
    energy_conserved("examples/pendulum2.phys", false, -1);
    energy_conserved("examples/pendulum2.phys", true, -1);
    energy_conserved("tests/run/hybrid.phys", false, 0);
    energy_conserved("tests/run/hybrid.phys", true, 1);
    printf("test_model: %s (%d failures)\n", failures ? "FAIL" : "ok", failures);
    return failures != 0;
}
