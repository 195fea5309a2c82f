/* test_baselines.c — the model families in generalized coordinates (NODE, HNN, LNN, DeLaN:
   runtime/models/model_generalized.c). On the compiled examples: the system's own dynamics in the
   generalized coordinates (M(q), dT/dq and dV/dq compiled from the coordinate map: what a
   known-mass HNN with the true V is) reproduce the Cartesian ground truth. On a double
   pendulum whose kernels are written here by hand from its closed form, independently of
   the compiler:
   - every family's loss gradient against central finite differences;
   - the learned models conserve their own energy along their rollouts (HNN: H(q, p); LNN:
     qdot . dL/dqdot - L; DeLaN: T + V), which a wrong Hessian, Mdot or sign would break;
   - the truth (the system's M(q), dT/dq and dV/dq in (q, p)) stepped as in training matches
     exact trajectories to the step's truncation error;
   - training lowers the loss. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "io/dataset.h"
#include "fd_model.h"
#include "loaded.h"
#include "ad/mlp_graph.h"
#include "models/model.h"
#include "math/ode.h"
#include "ad/state_ops.h"
#include "train/train.h"

/* ---- the double pendulum: bobs at l1 (sin q1, -cos q1) and that + l2 (sin q2, -cos q2) ---- */

static const double l1 = 1.1, l2 = 0.9, grav = 9.81;
static double masses_[2] = {1.2, 0.8};
enum { NQ = 2, NX = 4 };

static void coord_map(long n, const double *in, const double *p, double *out) {
    for (long b = 0; b < n; b++) {
        double q1 = in[b], q2 = in[n + b], v1 = in[2 * n + b], v2 = in[3 * n + b];
        double x1 = l1 * sin(q1), y1 = -l1 * cos(q1);
        out[b] = x1, out[n + b] = y1, out[2 * n + b] = x1 + l2 * sin(q2), out[3 * n + b] = y1 - l2 * cos(q2);
        double vx1 = l1 * cos(q1) * v1, vy1 = l1 * sin(q1) * v1;
        out[4 * n + b] = vx1, out[5 * n + b] = vy1;
        out[6 * n + b] = vx1 + l2 * cos(q2) * v2, out[7 * n + b] = vy1 + l2 * sin(q2) * v2;
    }
}

static void coord_inverse(long n, const double *in, const double *p, double *out) {
    for (long b = 0; b < n; b++) {
        double x1 = in[b], y1 = in[n + b], x2 = in[2 * n + b] - x1, y2 = in[3 * n + b] - y1;
        double vx1 = in[4 * n + b], vy1 = in[5 * n + b], vx2 = in[6 * n + b] - vx1, vy2 = in[7 * n + b] - vy1;
        out[b] = atan2(x1, -y1), out[n + b] = atan2(x2, -y2);
        out[2 * n + b] = (-y1 * vx1 + x1 * vy1) / (x1 * x1 + y1 * y1);
        out[3 * n + b] = (-y2 * vx2 + x2 * vy2) / (x2 * x2 + y2 * y2);
    }
}

static void mass_q(long n, const double *in, const double *p, double *out) {
    for (long b = 0; b < n; b++) {
        double c = p[1] * l1 * l2 * cos(in[b] - in[n + b]);
        out[b] = (p[0] + p[1]) * l1 * l1, out[n + b] = c, out[2 * n + b] = c, out[3 * n + b] = p[1] * l2 * l2;
    }
}

static void mass_q_vjp(long n, const double *in, const double *p, double *out) {
    for (long b = 0; b < n; b++) {
        double d = in[b] - in[n + b], C11 = in[2 * n + b], Cx = in[3 * n + b] + in[4 * n + b], C22 = in[5 * n + b];
        double g1 = -Cx * p[1] * l1 * l2 * sin(d);
        out[b] = g1, out[n + b] = -g1;
        out[2 * n + b] = C11 * l1 * l1; /* then the parameters' (the masses) */
        out[3 * n + b] = C11 * l1 * l1 + Cx * l1 * l2 * cos(d) + C22 * l2 * l2;
    }
}

/* d/dq (v^T M v / 2): only M12 depends on q. */
static void kinetic_q(long n, const double *in, const double *p, double *out) {
    for (long b = 0; b < n; b++) {
        double k1 = -p[1] * l1 * l2 * in[2 * n + b] * in[3 * n + b] * sin(in[b] - in[n + b]);
        out[b] = k1, out[n + b] = -k1;
    }
}

static void kinetic_q_vjp(long n, const double *in, const double *p, double *out) {
    for (long b = 0; b < n; b++) {
        double d = in[b] - in[n + b], v1 = in[2 * n + b], v2 = in[3 * n + b], c = in[4 * n + b] - in[5 * n + b];
        double a = -p[1] * l1 * l2;
        out[b] = a * v1 * v2 * cos(d) * c, out[n + b] = -out[b];
        out[2 * n + b] = a * v2 * sin(d) * c, out[3 * n + b] = a * v1 * sin(d) * c;
        out[4 * n + b] = 0, out[5 * n + b] = -l1 * l2 * v1 * v2 * sin(d) * c;
    }
}

static void grad_vq(long n, const double *in, const double *p, double *out) {
    for (long b = 0; b < n; b++)
        out[b] = grav * (p[0] + p[1]) * l1 * sin(in[b]), out[n + b] = grav * p[1] * l2 * sin(in[n + b]);
}

static const unsigned char angular[NQ] = {1, 1};

static PrtSystem pendulum(void) {
    return (PrtSystem){.N = NX, .NP = NX, .nmass = 2, .nparams = 2, .params = masses_, .nq = NQ, .angular = angular,
                       .CoordMap = coord_map, .CoordInverse = coord_inverse, .MassQ = mass_q, .MassQVJP = mass_q_vjp,
                       .KineticQ = kinetic_q, .KineticQVJP = kinetic_q_vjp, .GradVq = grad_vq};
}

/* The exact field in (q, p) with plain C, for reference trajectories. */
static void exact_rhs(void *ctx, long n, const double *z, double *zdot) {
    for (long b = 0; b < n; b++) {
        double in[2] = {z[b], z[n + b]}, M[4], k[2], g[2], v[2] = {z[2 * n + b], z[3 * n + b]};
        mass_q(1, in, masses_, M);
        prt_small_solve(2, M, v, false);
        double kin_in[4] = {in[0], in[1], v[0], v[1]};
        kinetic_q(1, kin_in, masses_, k);
        grad_vq(1, in, masses_, g);
        zdot[b] = v[0], zdot[n + b] = v[1], zdot[2 * n + b] = k[0] - g[0], zdot[3 * n + b] = k[1] - g[1];
    }
}

/* n chunks of npts points dt apart (Cartesian, SoA per point), exact to dopri5 at 1e-12. */
static double *make_chunks(long n, int npts, double dt, uint64_t seed) {
    PrtRng rng;
    prt_rng_seed(&rng, seed);
    double *qv = malloc(sizeof(double) * 4 * (size_t)n), *traj = malloc(sizeof(double) * 4 * (size_t)(n * npts)),
           *times = malloc(sizeof(double) * (size_t)npts), *chunks = malloc(sizeof(double) * 8 * (size_t)(n * npts));
    for (long i = 0; i < 4 * n; i++) qv[i] = i < 2 * n ? 0.8 * prt_rng_normal(&rng) : 0.8 * prt_rng_normal(&rng);
    for (long b = 0; b < n; b++) { /* qdot -> p */
        double in[2] = {qv[b], qv[n + b]}, M[4];
        mass_q(1, in, masses_, M);
        double v1 = qv[2 * n + b], v2 = qv[3 * n + b];
        qv[2 * n + b] = M[0] * v1 + M[1] * v2, qv[3 * n + b] = M[2] * v1 + M[3] * v2;
    }
    for (int k = 0; k < npts; k++) times[k] = k * dt;
    prt_dopri5(exact_rhs, NULL, n, 4, qv, times, npts, 1e-12, 1e-12, traj, NULL);
    for (int k = 0; k < npts; k++) {
        double *z = traj + k * 4 * n;
        for (long b = 0; b < n; b++) { /* p -> qdot */
            double in[2] = {z[b], z[n + b]}, M[4], v[2] = {z[2 * n + b], z[3 * n + b]};
            mass_q(1, in, masses_, M);
            prt_small_solve(2, M, v, false);
            z[2 * n + b] = v[0], z[3 * n + b] = v[1];
        }
        coord_map(n, z, masses_, chunks + k * 8 * n);
    }
    free(qv), free(traj), free(times);
    return chunks;
}

static PrtMlp net(int in, int out) {
    return (PrtMlp){.nlayers = 3, .size = {in, 16, 16, out}, .act = PRT_ACT_TANH};
}

static int open_family(PrtModel *m, PrtSystem *s, const char *name, bool known_mass) {
    const PrtModelFamily *f = prt_model_family(name);
    int nf = prt_features_width(NQ, angular);
    PrtMlp first = !strcmp(name, "node") ? net(nf + NQ, 2 * NQ) : !strcmp(name, "lnn") ? net(nf + NQ, 1) : net(nf, 1);
    PrtModelConfig cfg = prt_model_config(f, &first, false);
    if ((!strcmp(name, "hnn") && !known_mass) || !strcmp(name, "delan")) cfg.nnets = 2, cfg.net[1] = net(nf, NQ * (NQ + 1) / 2);
    cfg.integrator = PRT_INT_RK4;
    char err[256];
    int rc = prt_model_open(m, s, &cfg, err, sizeof err);
    CHECK(rc == 0, "%s: %s", name, err);
    return rc;
}

static const struct {
    const char *name;
    bool known;
} kinds[] = {{"node", false}, {"hnn", false}, {"hnn", true}, {"lnn", false}, {"delan", false}};
enum { NKINDS = sizeof kinds / sizeof kinds[0] };

static void test_loss_gradients(void) {
    PrtSystem s = pendulum();
    long n = 3;
    int npts = 3;
    double dt = 0.05, *chunks = make_chunks(n, npts, dt, 1);
    for (int k = 0; k < NKINDS; k++) {
        PrtModel m;
        if (open_family(&m, &s, kinds[k].name, kinds[k].known)) continue;
        PrtRng rng;
        prt_rng_seed(&rng, 2);
        double *theta = malloc(sizeof(double) * (size_t)m.nparams), *grad = malloc(sizeof(double) * (size_t)m.nparams);
        prt_model_init_theta(&m, theta, &rng);
        double L = prt_model_loss_grad(&m, theta, n, npts, dt, chunks, grad);
        double L2 = prt_model_loss(&m, theta, n, npts, dt, chunks);
        CHECK(L == L2, "%s: loss_grad's loss %.17g, loss %.17g", kinds[k].name, L, L2);
        FdWorst w = {0}; /* about 40 entries */
        fd_grad(fd_loss, &(FdLoss){&m, n, npts, dt, chunks}, theta, m.nparams, grad,
                &(FdOpts){.h = 1e-6, .scale = 1e-6, .stride = m.nparams / 40 + 1}, &w);
        CHECK(w.err < 1e-4, "%s%s: loss gradient: " FD_FMT, kinds[k].name, kinds[k].known ? " (known mass)" : "",
              FD_ARGS(w));
        printf("  %-5s%-13s %5ld parameters, loss %.5f, worst relative gradient error %.2e\n", kinds[k].name,
               kinds[k].known ? " known mass" : "", m.nparams, L, w.err);
        free(theta), free(grad);
        prt_model_close(&m);
    }
    free(chunks);
}

/* The model's own energy at (q, qdot) (2 x n) for theta, evaluated with the recorded passes. */
static void model_energy(const PrtModel *m, const double *theta, long n, const double *qv, double *E) {
    const char *name = m->family->name;
    PrtTape *t = prt_tape_new();
    int z = prt_tape_leaf(t, 4 * n);
    memcpy(prt_tape_val(t, z), qv, sizeof(double) * 4 * (size_t)n);
    int q = prt_tape_view(t, z, 0, 2 * n), v = prt_tape_view(t, z, 2 * n, 2 * n);
    int phi = prt_op_features(t, q, NQ, angular, n);
    PrtMlpTrace tr;
    if (!strcmp(name, "lnn")) { /* E = qdot . dL/dqdot - L, L = net + eps |qdot|^2 */
        int x = prt_tape_concat(t, 2, (int[]){phi, v});
        const double *L = prt_tape_val(t, prt_mlp_graph_forward(t, &m->cfg.net[0], theta, NULL, x, n, &tr));
        const double *g = prt_tape_val(t, prt_mlp_graph_vjp(t, &tr, -1)), *vv = prt_tape_val(t, v);
        int nf = prt_features_width(NQ, angular);
        for (long b = 0; b < n; b++) {
            double vsq = vv[b] * vv[b] + vv[n + b] * vv[n + b];
            E[b] = vv[b] * g[nf * n + b] + vv[n + b] * g[(nf + 1) * n + b] + 0.2 * vsq - (L[b] + 0.1 * vsq);
        }
    } else { /* T + V, T = |L^T p|^2 / 2 with M^-1 = L L^T and p = M qdot (HNN and DeLaN alike) */
        const double *V = prt_tape_val(t, prt_mlp_graph_forward(t, &m->cfg.net[0], theta, NULL, phi, n, &tr));
        PrtMlpTrace trM;
        long off = prt_mlp_nparams(&m->cfg.net[0]);
        int raw = prt_mlp_graph_forward(t, &m->cfg.net[1], theta + off, NULL, phi, n, &trM);
        int L = prt_op_tril_softplus(t, raw, NQ, n);
        int w = prt_op_tril_t_mul(t, L, prt_op_tril_llt_solve(t, L, v, NQ, n), NQ, n);
        const double *wv = prt_tape_val(t, w);
        for (long b = 0; b < n; b++) E[b] = V[b] + 0.5 * (wv[b] * wv[b] + wv[n + b] * wv[n + b]);
    }
    prt_tape_free(t);
}

static void test_energy_conservation(void) {
    PrtSystem s = pendulum();
    long n = 4;
    int nt = 21;
    double *chunks = make_chunks(n, 1, 0.1, 3), times[21];
    for (int k = 0; k < nt; k++) times[k] = 0.05 * k;
    const char *names[] = {"hnn", "lnn", "delan"};
    for (int k = 0; k < 3; k++) {
        PrtModel m;
        if (open_family(&m, &s, names[k], false)) continue;
        PrtRng rng;
        prt_rng_seed(&rng, 9);
        double *theta = malloc(sizeof(double) * (size_t)m.nparams), *out = malloc(sizeof(double) * 8 * (size_t)(n * nt));
        prt_model_init_theta(&m, theta, &rng);
        int rc = prt_model_rollout(&m, theta, n, chunks, times, nt, 1e-11, 1e-11, out);
        CHECK(rc == 0, "%s rollout", names[k]);
        double E0[4], E[4], Ef[4], qv[16], drift = 0, scale = 0, family_off = 0;
        CHECK(m.family->energy != NULL, "%s: the family reports no energy of its own", names[k]);
        for (int i = 0; i < nt; i++) {
            coord_inverse(n, out + i * 8 * n, masses_, qv);
            model_energy(&m, theta, n, qv, i ? E : E0);
            if (m.family->energy) { /* the family's own (evaluate.c's variance reads it), from the Cartesian states */
                m.family->energy(&m, theta, n, out + i * 8 * n, Ef);
                for (long b = 0; b < n; b++) family_off = fmax(family_off, fabs(Ef[b] - (i ? E : E0)[b]));
            }
            for (long b = 0; b < n && i; b++) drift = fmax(drift, fabs(E[b] - E0[b])), scale = fmax(scale, fabs(E0[b]));
        }
        CHECK(drift < 1e-8 * fmax(1, scale), "%s: its energy drifts by %.3g over its rollout (scale %.3g)", names[k], drift, scale);
        CHECK(family_off < 1e-12 * fmax(1, scale), "%s: the family's energy is off this test's by %.3g", names[k], family_off);
        printf("  %-5s energy drift over 1 s at tolerance 1e-11: %.2e (energy scale %.2g)\n", names[k], drift, scale);
        free(theta), free(out);
        prt_model_close(&m);
    }
    /* an HNN of the system's M(q): its family's energy (T with M(q), the learned V) is what
       its rollout conserves; a NODE has none to report */
    PrtModel m;
    if (!open_family(&m, &s, "hnn", true)) {
        PrtRng rng;
        prt_rng_seed(&rng, 9);
        double *theta = malloc(sizeof(double) * (size_t)m.nparams), *out = malloc(sizeof(double) * 8 * (size_t)(n * nt));
        prt_model_init_theta(&m, theta, &rng);
        CHECK(prt_model_rollout(&m, theta, n, chunks, times, nt, 1e-11, 1e-11, out) == 0, "known-mass hnn rollout");
        double E0[4], E[4], drift = 0, scale = 0;
        for (int i = 0; i < nt; i++) {
            m.family->energy(&m, theta, n, out + i * 8 * n, i ? E : E0);
            for (long b = 0; b < n && i; b++) drift = fmax(drift, fabs(E[b] - E0[b])), scale = fmax(scale, fabs(E0[b]));
        }
        CHECK(scale > 0 && drift < 1e-8 * fmax(1, scale), "known-mass hnn: its energy drifts by %.3g (scale %.3g)", drift, scale);
        printf("  hnn (known mass) energy drift over 1 s at tolerance 1e-11: %.2e (energy scale %.2g)\n", drift, scale);
        free(theta), free(out);
        prt_model_close(&m);
    }
    if (!open_family(&m, &s, "node", false)) {
        CHECK(m.family->energy == NULL, "a NODE reports an energy it does not have");
        prt_model_close(&m);
    }
    free(chunks);
}

/* The truth in (q, p), stepped with rk4 as in training, against exact chunks: what is left is
   rk4's truncation error; over the same 4 steps, O(dt^5) (a factor 32 per halving of dt). */
static void test_truth(void) {
    PrtSystem s = pendulum();
    PrtModel m;
    if (open_family(&m, &s, "node", false)) return;
    long n = 8;
    double prev = 0;
    for (int r = 0; r < 2; r++) {
        double dt = r ? 0.025 : 0.05, *chunks = make_chunks(n, 5, dt, 4);
        double loss = prt_model_truth_loss(&m, n, 5, dt, chunks);
        CHECK(loss < 1e-4, "truth loss %.3g at dt %g", loss, dt);
        if (r) CHECK(prev / loss > 20 && prev / loss < 50, "rk4 truth loss falls by %.3g when dt halves (32 expected)", prev / loss);
        printf("  truth (the system's M(q), dT/dq, dV/dq in (q, p)), rk4 at dt %g: loss %.3g\n", dt, loss);
        prev = loss;
        free(chunks);
    }
    prt_model_close(&m);
}

static void test_training(void) {
    PrtSystem s = pendulum();
    long ntrain = 64;
    int npts = 4;
    double dt = 0.05, *chunks = make_chunks(ntrain, npts, dt, 6);
    PrtTrajSet train = {.n = ntrain, .npts = npts, .N = NX, .W = 2 * NX, .dt = dt, .xv = chunks}; /* the same layout */
    PrtTrajSet valid = {.npts = npts, .N = NX, .W = 2 * NX, .dt = dt};
    const char *names[] = {"node", "hnn", "lnn", "delan"};
    for (int k = 0; k < 4; k++) {
        PrtModel m;
        if (open_family(&m, &s, names[k], false)) continue;
        double *theta = malloc(sizeof(double) * (size_t)m.nparams);
        PrtTrainOptions o = {.epochs = 30, .batch = 16, .threads = 1, .lr = 3e-3, .cosine = true, .seed = 1};
        PrtTrainResult r = {0};
        char err[256] = "";
        PrtTrainStatus st = prt_train(&m, theta, &train, &valid, &o, &r, err, sizeof err);
        CHECK(st == PRT_TRAIN_DONE, "%s training: %s", names[k], err);
        if (st == PRT_TRAIN_DONE)
            CHECK(r.loss[o.epochs - 1] < 0.8 * r.loss[0], "%s: training loss %.4g -> %.4g", names[k], r.loss[0], r.loss[o.epochs - 1]);
        if (st == PRT_TRAIN_DONE) printf("  %-5s training loss %.4f -> %.4f in 30 epochs\n", names[k], r.loss[0], r.loss[o.epochs - 1]);
        prt_train_result_free(&r);
        free(theta);
        prt_model_close(&m);
    }
    free(chunks);
}

/* The truth in (q, p), stepped finely (substeps rk4 steps per interval), against chunks of
   the Cartesian ground truth (dopri5 at 1e-12): the generalized dynamics are the true ones.
   (The magnet pendulum's close passes need fine steps: rk4's error falls as h^5 there.) */
static void test_compiled_truth(const char *path, const char *model, int substeps, double tol) {
    Loaded l;
    char err[512];
    int k = -1;
    if (loaded_open(&l, path, COMPILE_SIMULATE, -1, stderr, err, sizeof err))
        for (int i = 0; i < l.sys->nmodels; i++)
            if (!strcmp(l.sys->models[i].name, model)) k = i;
    loaded_close(&l);
    CHECK(k >= 0, "%s has a model %s", path, model);
    if (k < 0 || !loaded_open(&l, path, 0, k, stderr, err, sizeof err)) {
        CHECK(k < 0, "%s: %s", path, err);
        loaded_close(&l);
        return;
    }
    PrtSystem *ps = &l.c.ps;
    int nf = prt_features_width(ps->nq, ps->angular);
    PrtMlp V = net(nf, 1);
    PrtModelConfig cfg = prt_model_config(prt_model_family("hnn"), &V, false);
    cfg.integrator = PRT_INT_RK4, cfg.substeps = substeps;
    PrtModel m;
    PrtTrajSet full, chunks;
    if (prt_model_open(&m, ps, &cfg, err, sizeof err) != 0) {
        CHECK(false, "%s: %s", path, err);
        loaded_close(&l);
        return;
    }
    CHECK(prt_trajset_generate(ps, 64, 21, l.sys->data.dt, 1e-12, 1e-12, 3, &full, err, sizeof err) == 0, "%s", err);
    PrtRng rng;
    prt_rng_seed(&rng, 1);
    prt_trajset_chunks(&full, 5, &rng, &chunks);
    double loss = prt_model_truth_loss(&m, chunks.n, chunks.npts, chunks.dt, chunks.xv);
    CHECK(loss < tol, "%s: the generalized truth misses the Cartesian one by %.3g (mean |error| of (q, qdot))", path, loss);
    printf("  %-24s the truth in (q, p), %3d rk4 steps per interval, against the Cartesian truth: mean |error| %.2e\n",
           path, substeps, loss);
    prt_trajset_free(&full), prt_trajset_free(&chunks);
    prt_model_close(&m);
    loaded_close(&l);
}

/* A rollout over its step budget fails at once and says why (evaluate.c passes that on, and
   physc run then exits 1). */
static void test_rollout_budget(void) {
    PrtSystem s = pendulum();
    PrtModel m;
    if (open_family(&m, &s, "lnn", false)) return;
    long n = 4;
    int nt = 11;
    double *xv0 = make_chunks(n, 1, 0.05, 8), *theta = malloc(sizeof(double) * (size_t)m.nparams), times[11],
           *out = malloc(sizeof(double) * (size_t)(nt * 2 * NX * n));
    for (int k = 0; k < nt; k++) times[k] = 0.05 * k;
    PrtRng rng;
    prt_rng_seed(&rng, 1);
    prt_model_init_theta(&m, theta, &rng);
    m.rollout_max_steps = 1; /* one step per output interval on average: too few at rtol 1e-10 */
    char why[256];
    int rc = prt_model_rollout(&m, theta, n, xv0, times, nt, 1e-10, 1e-10, out);
    prt_ode_describe_failure(&m.rollout_stats, n, NULL, why, sizeof why);
    CHECK(rc != 0 && strstr(why, "all the 10 steps it was allowed"), "a rollout over its budget: rc %d, '%s'", rc, why);
    m.rollout_max_steps = 200;
    rc = prt_model_rollout(&m, theta, n, xv0, times, nt, 1e-10, 1e-10, out);
    CHECK(rc == 0, "a rollout within its budget failed");
    free(theta), free(xv0), free(out);
    prt_model_close(&m);
}

int main(void) {
    test_compiled_truth("examples/pendulum3.phys", "hnn", 64, 1e-9);
    test_compiled_truth("examples/magnet.phys", "hnn", 256, 1e-6);
    test_compiled_truth("examples/coupled3.phys", "hnn", 64, 1e-9);
    test_loss_gradients();
    test_energy_conservation();
    test_truth();
    test_training();
    test_rollout_budget();
    printf("test_baselines: %s (%d failures)\n", failures ? "FAILED" : "ok", failures);
    return failures != 0;
}
