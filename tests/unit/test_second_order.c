/* test_second_order.c — the second-order neural ODE in its two forms (sonode: generalized
   coordinates; csonode: Cartesian coordinates under Eq. 7's multipliers;
   runtime/models/model_second_order.c), on compiled examples:
   - each form's loss gradient against central finite differences (fd_model.h), for every
     parameter of a small network: sonode on the 2- and 3-pendulum and the gyroscope's Euler
     angles; csonode with the system's masses and with the Eq. 9 masses (`mass learned`) on
     the 2-pendulum and the gyroscope (a rigid body's masses and moments), its kernels
     unrolled and in loop form;
   - the truth (the system's own dynamics) stepped as in training: fine steps reproduce the
     Cartesian ground truth, and halving RK4's step divides what is left by about 16;
   - csonode's projection with the true force -dV/dX in place of its network IS the system:
     its loss equals the truth's to the bit and its rollouts follow the true trajectories;
   - csonode's rollouts of an untrained network keep the constraints (|Phi|, |DPhi Xdot|)
     while they move, where the unprojected field (Xddot = M^-1 F) leaves them at once;
   - a few epochs of training lower the validation loss of both forms;
   - what each family's configure refuses, and that neither reports an energy. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fd_model.h"
#include "io/dataset.h"
#include "loaded.h"
#include "models/model.h"
#include "models/model_cartesian.h"
#include "ad/state_ops.h"
#include "ad/tape.h"
#include "train/train.h"

static bool load(const char *path, int purpose, bool loop, Loaded *l) {
    char err[512];
    if (loop) driver_set_kernel_form(KERNEL_FORM_LOOP);
    bool ok = loaded_open(l, path, purpose, -1, stdout, err, sizeof err);
    if (loop) driver_set_kernel_form(KERNEL_FORM_AUTO);
    CHECK(ok, "%s: %s", path, err);
    if (ok && loop) CHECK(l->c.ps.loop && !l->c.ps.Accel && !l->c.ps.AccelVJP, "%s: not in loop form", path);
    if (!ok) loaded_close(l);
    return ok;
}

/* A network of hidden layers [h1, h2], tanh */
static PrtMlp mlp(int in, int h1, int h2, int out) {
    return (PrtMlp){.nlayers = 3, .size = {in, h1, h2, out}, .act = PRT_ACT_TANH};
}

/* A model of the family `name` on s: sonode's network reads (features(q), qdot) and gives nq
   accelerations; csonode's reads (X, Xdot) and gives N forces. */
static int open_form(PrtModel *m, PrtSystem *s, const char *name, bool learn_mass, int hidden) {
    PrtMlp net = !strcmp(name, "sonode") ? mlp(prt_features_width(s->nq, s->angular) + s->nq, hidden, hidden, s->nq)
                                         : mlp(2 * s->N, hidden, hidden, s->N);
    PrtModelConfig cfg = prt_model_config(prt_model_family(name), &net, learn_mass);
    char err[256];
    int rc = prt_model_open(m, s, &cfg, err, sizeof err);
    CHECK(rc == 0, "%s: %s", name, err);
    return rc;
}

/* n true trajectories of npts points dt apart (dopri5 at 1e-12), as n chunks */
static bool truth_chunks(PrtSystem *s, long n, int npts, double dt, uint64_t seed, PrtTrajSet *out) {
    char err[256];
    int rc = prt_trajset_generate(s, n, npts, dt, 1e-12, 1e-12, seed, out, err, sizeof err);
    CHECK(rc == 0, "data: %s", err);
    return rc == 0;
}

/* ---- the loss gradients ---- */

static void gradient(const char *path, const char *name, bool learn_mass, bool loop) {
    bool so = !strcmp(name, "sonode");
    Loaded l;
    if (!load(path, so ? COMPILE_GENERALIZED : COMPILE_CLNN, loop, &l)) return;
    PrtSystem *s = &l.c.ps;
    PrtModel m;
    PrtTrajSet d;
    if (open_form(&m, s, name, learn_mass, 6) != 0 || !truth_chunks(s, 3, 3, 0.05, 7, &d)) {
        loaded_close(&l);
        return;
    }
    m.cfg.substeps = 2;
    double *theta = malloc(sizeof(double) * (size_t)m.nparams), *grad = malloc(sizeof(double) * (size_t)m.nparams);
    PrtRng rng;
    prt_rng_seed(&rng, 3);
    prt_model_init_theta(&m, theta, &rng);
    for (long k = 0; k < m.nparams; k++) theta[k] += 0.3 * prt_rng_normal(&rng); /* biases and masses away from 0 */
    double L = prt_model_loss_grad(&m, theta, d.n, d.npts, d.dt, d.xv, grad);
    double plain = prt_model_loss(&m, theta, d.n, d.npts, d.dt, d.xv);
    CHECK(fabs(L - plain) <= 1e-12 * fabs(plain), "%s %s: loss_grad's loss %.17g, loss %.17g", path, name, L, plain);
    FdWorst w = {0};
    fd_grad(fd_loss, &(FdLoss){&m, d.n, d.npts, d.dt, d.xv}, theta, m.nparams, grad,
            &(FdOpts){.h = 1e-6, .scale = 1e-4}, &w);
    CHECK(w.err < 1e-5, "%s %s%s%s: gradient of %ld entries: " FD_FMT, path, name, learn_mass ? " (mass learned)" : "",
          loop ? " (loop form)" : "", m.nparams, FD_ARGS(w));
    printf("  %-26s %-7s %-13s %-9s %4ld parameters, loss %.4g, worst gradient error %.2e\n", path, name,
           learn_mass ? "mass learned" : "", loop ? "loop form" : "", m.nparams, L, w.err);
    free(theta), free(grad);
    prt_trajset_free(&d);
    prt_model_close(&m);
    loaded_close(&l);
}

/* ---- the truth stepped as in training ---- */

/* The system's own dynamics under `substeps` RK4 steps per interval against chunks of the
   ground truth: fine steps reach it, and with twice the steps (the same intervals) what is
   left falls by RK4's 2^4. */
static void truth(const char *path, const char *name, double fine_tol) {
    bool so = !strcmp(name, "sonode");
    Loaded l;
    if (!load(path, so ? COMPILE_GENERALIZED : COMPILE_CLNN, false, &l)) return;
    PrtSystem *s = &l.c.ps;
    PrtModel m;
    PrtTrajSet d;
    if (open_form(&m, s, name, false, 4) != 0 || !truth_chunks(s, 16, 5, 0.02, 11, &d)) {
        loaded_close(&l);
        return;
    }
    m.cfg.integrator = PRT_INT_RK4;
    double f[3];
    int steps[3] = {1, 2, 64};
    for (int i = 0; i < 3; i++) {
        m.cfg.substeps = steps[i];
        f[i] = prt_model_truth_loss(&m, d.n, d.npts, d.dt, d.xv);
    }
    CHECK(f[2] < fine_tol, "%s %s: the truth at 64 RK4 steps an interval misses the ground truth by %.3g", path, name, f[2]);
    CHECK(f[1] > 0 && f[0] / f[1] > 12 && f[0] / f[1] < 20, "%s %s: the truth's error %.3g at 1 step, %.3g at 2: ratio %.3g "
          "(RK4: 16)", path, name, f[0], f[1], f[0] / f[1]);
    printf("  %-26s %-7s the truth under RK4: %.2e (1 step an interval), %.2e (2): ratio %.1f; %.1e (64)\n", path, name,
           f[0], f[1], f[0] / f[1], f[2]);
    prt_trajset_free(&d);
    prt_model_close(&m);
    loaded_close(&l);
}

/* ---- csonode's projection with the true force ---- */

/* F = -dV/dX of the system's own potential in place of the network (theta unused) */
static void minus_grad_v(const PrtSystem *s, long n, const double *z, double *F) {
    s->gradV(n, z, s->params, F);
    for (long i = 0; i < (long)s->N * n; i++) F[i] = -F[i];
}
static void no_backward(PrtTape *t, const void *ctx, const int *in, int nin, int out) {}
static int true_force_tape(PrtModel *m, PrtTape *t, long n, const double *theta, double *grad, int z) {
    static const char none = 0; /* (no context) */
    int F = prt_tape_op(t, no_backward, &none, sizeof none, 1, &z, (long)m->sys->N * n);
    minus_grad_v(m->sys, n, prt_tape_val(t, z), prt_tape_val(t, F));
    return F;
}
static void true_force_plain(PrtModel *m, long n, const double *theta, const double *z, double *F, PrtMlpWork *work) {
    minus_grad_v(m->sys, n, z, F);
}
static const PrtCartesianForce true_force = {.tape = true_force_tape, .plain = true_force_plain};
static int open_true_force(PrtModel *m, char *err, size_t errlen) { return prt_cartesian_open(m, &true_force, err, errlen); }

static void projection_is_the_system(const char *path) {
    Loaded l;
    if (!load(path, COMPILE_CLNN, false, &l)) return;
    PrtSystem *s = &l.c.ps;
    PrtModelFamily fam = *prt_model_family("csonode");
    fam.open = open_true_force;
    PrtMlp net = mlp(2 * s->N, 4, 4, s->N);
    PrtModelConfig cfg = prt_model_config(&fam, &net, false);
    PrtModel m;
    char err[256];
    PrtTrajSet d;
    if (prt_model_open(&m, s, &cfg, err, sizeof err) != 0 || !truth_chunks(s, 8, 41, 0.03, 5, &d)) {
        CHECK(false, "%s: %s", path, err);
        loaded_close(&l);
        return;
    }
    double *theta = calloc((size_t)m.nparams, sizeof(double)), *grad = malloc(sizeof(double) * (size_t)m.nparams);
    /* its loss of 5-point chunks is the truth's, to the bit (the same rhs, stepped alike), on the tape too */
    double loss = prt_model_loss(&m, theta, d.n, 5, d.dt, d.xv), truth = prt_model_truth_loss(&m, d.n, 5, d.dt, d.xv);
    double taped = prt_model_loss_grad(&m, theta, d.n, 5, d.dt, d.xv, grad);
    CHECK(loss == truth && loss > 0, "%s: Eq. 7 of -dV/dX: loss %.17g, the truth's %.17g", path, loss, truth);
    CHECK(fabs(taped - loss) <= 1e-12 * loss, "%s: Eq. 7 of -dV/dX on the tape: loss %.17g, plain %.17g", path, taped, loss);
    /* its rollouts follow the true trajectories (dopri5 at 1e-10 against the data's 1e-12) */
    long pt = 2L * s->N * d.n;
    double times[41], *out = malloc(sizeof(double) * (size_t)(pt * 41)), worst = 0, scale = 0;
    for (int k = 0; k < 41; k++) times[k] = k * d.dt;
    CHECK(prt_model_rollout(&m, theta, d.n, d.xv, times, 41, 1e-10, 1e-12, out) == 0, "%s: rollout", path);
    for (long i = 0; i < pt * 41; i++) worst = fmax(worst, fabs(out[i] - d.xv[i])), scale = fmax(scale, fabs(d.xv[i]));
    CHECK(worst < 1e-6 * scale, "%s: Eq. 7 of -dV/dX rolls out %.3g off the true trajectories (scale %.3g)", path, worst,
          scale);
    printf("  %-26s csonode with F = -dV/dX: loss = the truth's (%.3e); rollouts %.1e off the truth over 1.2 s\n", path,
           loss, worst / scale);
    free(theta), free(grad), free(out);
    prt_trajset_free(&d);
    prt_model_close(&m);
    loaded_close(&l);
}

/* ---- csonode keeps the constraints ---- */

/* The unprojected second-order field Xddot = M^-1 F of the same network (masses the
   system's), for the contrast */
typedef struct Free {
    PrtModel *m;
    const double *theta;
} Free;
static void free_rhs(void *ctx, long n, const double *z, double *zdot) {
    Free *f = ctx;
    const PrtSystem *s = f->m->sys;
    long Nn = (long)s->N * n;
    double *F = malloc(sizeof(double) * (size_t)Nn);
    PrtMlpWork w = {0};
    prt_mlp_forward(&f->m->cfg.net[0], f->theta, n, z, F, &w);
    prt_mlp_work_free(&w);
    memcpy(zdot, z + Nn, sizeof(double) * (size_t)Nn);
    prt_minv(s, n, F, zdot + Nn);
    free(F);
}

static void constraints_kept(const char *path, bool loop) {
    Loaded l;
    if (!load(path, COMPILE_CLNN, loop, &l)) return;
    PrtSystem *s = &l.c.ps;
    PrtModel m;
    PrtTrajSet d;
    if (open_form(&m, s, "csonode", false, 16) != 0 || !truth_chunks(s, 4, 1, 0.03, 9, &d)) {
        loaded_close(&l);
        return;
    }
    double *theta = malloc(sizeof(double) * (size_t)m.nparams);
    PrtRng rng;
    prt_rng_seed(&rng, 4);
    prt_model_init_theta(&m, theta, &rng);
    for (long k = 0; k < m.nparams; k++) theta[k] *= 3; /* forces of the order of the system's */
    long n = d.n, pt = 2L * s->N * n;
    int nt = 101;
    double times[101], *out = malloc(sizeof(double) * (size_t)(pt * nt)), *phidot = malloc(sizeof(double) * (size_t)(s->C * n + 1));
    for (int k = 0; k < nt; k++) times[k] = 0.02 * k;
    CHECK(prt_model_rollout(&m, theta, n, d.xv, times, nt, 1e-10, 1e-12, out) == 0, "%s: rollout", path);
    double phi = 0, vel = 0, moved = 0, scale = 0;
    int rows = s->C;
    for (int k = 0; k < nt; k++) {
        const double *z = out + k * pt;
        phi = fmax(phi, prt_constraint_violation(s, n, z));
        prt_phidot(s, n, z, s->params + s->nmass, phidot);
        for (long i = 0; i < rows * n; i++) vel = fmax(vel, fabs(phidot[i]));
    }
    for (long i = 0; i < (long)s->N * n; i++)
        moved = fmax(moved, fabs(out[(nt - 1) * pt + i] - out[i])), scale = fmax(scale, fabs(out[i]));
    CHECK(moved > 0.1 * scale, "%s: the rollout hardly moves (%.3g, scale %.3g): it shows nothing", path, moved, scale);
    CHECK(phi < 1e-7 && vel < 1e-6, "%s: csonode's rollout leaves the constraints: |Phi| %.3g, |DPhi Xdot| %.3g", path, phi,
          vel);
    /* the same network without the projection leaves them */
    Free f = {&m, theta};
    CHECK(prt_dopri5(free_rhs, &f, n, 2 * s->N, d.xv, times, nt, 1e-10, 1e-12, out, NULL) == 0, "%s: free rollout", path);
    double phi_free = prt_constraint_violation(s, n, out + (nt - 1) * pt);
    CHECK(phi_free > 1e3 * fmax(phi, 1e-12), "%s: without the projection |Phi| is %.3g, with it %.3g", path, phi_free, phi);
    printf("  %-26s csonode%s over 2 s: |Phi| %.1e, |DPhi Xdot| %.1e (unprojected: |Phi| %.2g)\n", path,
           loop ? " (loop form)" : "", phi, vel, phi_free);
    free(theta), free(out), free(phidot);
    prt_trajset_free(&d);
    prt_model_close(&m);
    loaded_close(&l);
}

/* ---- training ---- */

static void training(const char *path, const char *name) {
    bool so = !strcmp(name, "sonode");
    Loaded l;
    if (!load(path, so ? COMPILE_GENERALIZED : COMPILE_CLNN, false, &l)) return;
    PrtSystem *s = &l.c.ps;
    PrtModel m;
    PrtTrajSet train, valid;
    if (open_form(&m, s, name, false, 32) != 0 || !truth_chunks(s, 64, 5, 0.03, 21, &train) ||
        !truth_chunks(s, 16, 5, 0.03, 22, &valid)) {
        loaded_close(&l);
        return;
    }
    double *theta = malloc(sizeof(double) * (size_t)m.nparams);
    PrtTrainOptions o = {.epochs = 20, .batch = 16, .threads = 1, .lr = 3e-3, .cosine = true, .seed = 1};
    PrtTrainResult r = {0};
    char err[256] = "";
    PrtTrainStatus st = prt_train(&m, theta, &train, &valid, &o, &r, err, sizeof err);
    CHECK(st == PRT_TRAIN_DONE, "%s %s training: %s", path, name, err);
    if (st == PRT_TRAIN_DONE) {
        double v0 = r.valid[0], v1 = r.valid[o.epochs - 1];
        CHECK(v1 < 0.85 * v0, "%s %s: validation loss %.4g -> %.4g in %d epochs", path, name, v0, v1, o.epochs);
        printf("  %-26s %-7s validation loss %.4f -> %.4f in %d epochs (training %.4f -> %.4f)\n", path, name, v0, v1,
               o.epochs, r.loss[0], r.loss[o.epochs - 1]);
    }
    prt_train_result_free(&r);
    free(theta);
    prt_trajset_free(&train), prt_trajset_free(&valid);
    prt_model_close(&m);
    loaded_close(&l);
}

/* ---- the declarations ---- */

static void declarations(void) {
    const PrtModelFamily *so = prt_model_family("sonode"), *cso = prt_model_family("csonode");
    CHECK(so && cso && !so->energy && !cso->energy && so->start_points == 1 && cso->start_points == 1,
          "the families: no energy of their own, one start point");
    if (!so || !cso) return;
    PrtLearnedTerm pot = {.name = "V", .net = mlp(4, 8, 8, 1), .inputs = 4, .scale = 1, .length_scale = 1, .time_scale = 1};
    PrtLearnedTerm aq = {.name = "Aq", .net = mlp(6, 8, 8, 2), .inputs = 6, .scale = 1, .length_scale = 1, .time_scale = 1};
    PrtLearnedTerm fx = {.name = "F", .net = mlp(8, 8, 8, 4), .inputs = 8, .scale = 1, .length_scale = 1, .time_scale = 1,
                         .velocity_input = true};
    PrtLearnedTerm fstate = fx;
    fstate.velocity_input = false; /* `input state`: positions and momenta */
    struct {
        const PrtModelFamily *f;
        PrtModelDecl d;
        const char *want; /* NULL: accepted */
        const PrtLearnedTerm *blame;
    } cases[] = {
        {so, {.name = "a", .forces = &aq, .nforces = 1, .ncoords = 4}, NULL, NULL},
        {cso, {.name = "b", .forces = &fx, .nforces = 1, .ncoords = 4}, NULL, NULL},
        {cso, {.name = "c", .forces = &fx, .nforces = 1, .ncoords = 4, .mass_fit = true}, NULL, NULL},
        {so, {.name = "d", .forces = &aq, .nforces = 1, .potentials = &pot, .npotentials = 1, .ncoords = 4},
         "takes one learned force (its accelerations", NULL},
        {so, {.name = "e", .forces = &aq, .nforces = 1, .nknown = 1, .ncoords = 4}, "known potential terms", NULL},
        {so, {.name = "f", .forces = &aq, .nforces = 1, .mass_fit = true, .ncoords = 4}, "learns no masses", NULL},
        {so, {.name = "g", .forces = &aq, .nforces = 1, .mass = &pot, .ncoords = 4}, "no learned mass network", NULL},
        {cso, {.name = "h", .forces = &fstate, .nforces = 1, .ncoords = 4}, "must read the positions and velocities", &fstate},
        {cso, {.name = "i", .potentials = &pot, .npotentials = 1, .ncoords = 4}, "takes one learned force", NULL},
        {cso, {.name = "j", .forces = &fx, .nforces = 1, .ncoords = 4, .system_forces = true}, "`force` blocks", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        PrtMlp none = {0};
        PrtModelConfig cfg = prt_model_config(cases[i].f, &none, cases[i].d.mass_fit);
        const PrtLearnedTerm *blame = NULL;
        char err[256] = "";
        int rc = cases[i].f->configure(&cases[i].d, &cfg, &blame, err, sizeof err);
        if (!cases[i].want)
            CHECK(rc == 0 && cfg.nnets == 1 && cfg.net[0].size[0] == cases[i].d.forces[0].inputs,
                  "model %s (%s): refused: %s", cases[i].d.name, cases[i].f->name, err);
        else
            CHECK(rc != 0 && strstr(err, cases[i].want) && blame == cases[i].blame, "model %s (%s): '%s', want '%s'",
                  cases[i].d.name, cases[i].f->name, err, cases[i].want);
    }
}

int main(void) {
    declarations();
    gradient("tests/run/baselines.phys", "sonode", false, false);
    gradient("examples/pendulum3.phys", "sonode", false, false);
    gradient("examples/gyroscope.phys", "sonode", false, false);
    gradient("examples/pendulum2.phys", "csonode", false, false);
    gradient("examples/pendulum2.phys", "csonode", true, false);
    gradient("examples/gyroscope.phys", "csonode", false, false);
    gradient("examples/gyroscope.phys", "csonode", true, false);
    gradient("examples/pendulum2.phys", "csonode", true, true);
    gradient("examples/gyroscope.phys", "csonode", true, true);
    truth("examples/pendulum3.phys", "sonode", 1e-9);
    truth("examples/pendulum3.phys", "csonode", 1e-9);
    truth("examples/gyroscope.phys", "csonode", 1e-9);
    projection_is_the_system("examples/pendulum3.phys");
    projection_is_the_system("examples/gyroscope.phys");
    constraints_kept("examples/pendulum3.phys", false);
    constraints_kept("examples/gyroscope.phys", false);
    constraints_kept("examples/gyroscope.phys", true);
    training("tests/run/baselines.phys", "sonode");
    training("tests/run/baselines.phys", "csonode");
    printf("test_second_order: %s (%d failures)\n", failures ? "FAILED" : "ok", failures);
    return failures != 0;
}
