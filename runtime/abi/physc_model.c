/* physc_model.c — physc_model.h over the runtime's model interface (models/model.h): a
   handle is a copy of the registered system (its own parameters and scratch, so that
   handles are independent), the model opened on it, and its parameters. The ABI's states
   are rows (n x W); the runtime's batches are columns (W x n): each call transposes. */
#include "abi/physc_model.h"

#include <limits.h>
#include <pthread.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi/emitted.h"
#include "ad/tape.h"
#include "core/blas_cpu.h"
#include "io/checkpoint.h"
#include "math/rng.h"
#include "simulate/simulate.h"

struct physc_model {
    const PrtEmittedModel *e;
    PrtSystem sys;     /* the handle's own copy: free lengths and scratch are written */
    PrtLoopField loop; /* the same of the loop form's, if any: its tables shared, its scratch its own */
    double *params;
    PrtModel model;
    bool opened;
    double *theta;
    double *grad; /* theta's adjoints of a VJP */
};

static const PrtEmittedModel *registered;
static pthread_mutex_t prepare_lock = PTHREAD_MUTEX_INITIALIZER; /* the loop form's tables, made once */

void prt_abi_register(const PrtEmittedModel *e) { registered = e; }

int physc_abi_version(void) { return PHYSC_MODEL_ABI_VERSION; }

void physc_free_error(char *error) { free(error); }

const char *physc_blas(void) {
    static char buf[512]; /* (the same text whichever thread writes it) */
    return prt_blas_describe(buf, sizeof buf);
}

const char *physc_blas_wanted_core(void) { return prt_blas_wanted_core(); }

/* Returns code after setting *error (if wanted) to the message */
__attribute__((format(printf, 3, 4))) static int fail(char **error, int code, const char *fmt, ...) {
    if (!error) return code;
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    *error = strdup(buf); /* (NULL if even that fails: the code still says what) */
    return code;
}

/* n x per doubles, or -1 past LONG_MAX */
static long count(long n, long per) { return per > 0 && n > LONG_MAX / per ? -1 : n * per; }

/* PHYSC_OK if buffer `what` holds `need` doubles (its length `have`) */
static int check_buffer(const char *what, const void *buf, long have, long need, char **error) {
    if (!buf) return fail(error, PHYSC_ERR_ARGUMENT, "%s is NULL", what);
    if (need < 0) return fail(error, PHYSC_ERR_SIZE, "%s: the batch is too large to address", what);
    if (have != need) return fail(error, PHYSC_ERR_SIZE, "%s holds %ld numbers; this call needs %ld", what, have, need);
    return PHYSC_OK;
}

/* The handle and the batch size n: PHYSC_OK, or an error */
static int check_call(const physc_model *m, long n, char **error) {
    if (!m) return fail(error, PHYSC_ERR_ARGUMENT, "the model handle is NULL");
    if (n < 1) return fail(error, PHYSC_ERR_ARGUMENT, "n = %ld: a batch holds at least one state", n);
    return PHYSC_OK;
}

/* rows (n x w, row-major) <-> columns (w x n) */
static void to_columns(long n, int w, const double *rows, double *cols) {
    for (long b = 0; b < n; b++)
        for (int i = 0; i < w; i++) cols[(long)i * n + b] = rows[b * w + i];
}
static void to_rows(long n, int w, const double *cols, double *rows) {
    for (long b = 0; b < n; b++)
        for (int i = 0; i < w; i++) rows[b * w + i] = cols[(long)i * n + b];
}
/* nt points of columns (nt x w x n) -> n trajectories of rows (n x nt x w) */
static void trajectories_to_rows(long n, int nt, int w, const double *cols, double *rows) {
    for (int k = 0; k < nt; k++)
        for (long b = 0; b < n; b++)
            for (int i = 0; i < w; i++) rows[(b * nt + k) * w + i] = cols[((long)k * w + i) * n + b];
}

static double *scratch(long len) { return len >= 0 ? malloc(sizeof(double) * (size_t)(len > 0 ? len : 1)) : NULL; }

/* The parameters: the library's, or a params.bin's of the same count */
static int load_theta(physc_model *m, const char *path, char **error) {
    long np = m->e->nparams;
    if (!(m->theta = scratch(np)) || !(m->grad = scratch(np))) return fail(error, PHYSC_ERR_MEMORY, "no memory for %ld parameters", np);
    if (!path) {
        memcpy(m->theta, m->e->theta, sizeof(double) * (size_t)np);
        return PHYSC_OK;
    }
    PrtCkptHeader h;
    PrtCkptArray a = {"theta", m->theta, np};
    char err[512];
    if (prt_ckpt_read_any(path, &h, &a, 1, err, sizeof err) != 0)
        return fail(error, PHYSC_ERR_FILE, "%s (model %s has %ld parameters)", err, m->e->model, np);
    return PHYSC_OK;
}

/* The open lengths, from the first initial state of the data block's seed (as physc simulate) */
static int take_lengths(physc_model *m, char **error) {
    if (m->sys.nparams <= m->sys.nmass || m->sys.lengths_set) return PHYSC_OK;
    double *z = scratch(prt_state_rows(&m->sys));
    PrtRng rng;
    prt_rng_seed(&rng, (uint64_t)m->e->seed);
    double got = z ? prt_sample_initial(&m->sys, &rng, 1, 1e-12, z) : -1;
    free(z);
    if (!z) return fail(error, PHYSC_ERR_MEMORY, "no memory for a state");
    if (got == PRT_INIT_NONFINITE) return fail(error, PHYSC_ERR_FAILED, "the init block gave a non-finite state");
    m->sys.lengths_set = 1;
    return PHYSC_OK;
}

int physc_model_new(int abi_version, const char *params_path, physc_model **model, char **error) {
    if (model) *model = NULL;
    if (abi_version != PHYSC_MODEL_ABI_VERSION)
        return fail(error, PHYSC_ERR_VERSION, "this library implements physc_model.h ABI version %d and the caller was "
                    "built for version %d: build the library and its caller with the same physc", PHYSC_MODEL_ABI_VERSION,
                    abi_version);
    if (!model) return fail(error, PHYSC_ERR_ARGUMENT, "model (where the handle goes) is NULL");
    if (!registered) return fail(error, PHYSC_ERR_ARGUMENT, "no model in this library (not built by physc emit-c --shared?)");
    physc_model *m = calloc(1, sizeof *m);
    if (!m) return fail(error, PHYSC_ERR_MEMORY, "no memory for a model");
    m->e = registered;
    m->sys = m->e->sys;
    m->sys.work = NULL, m->sys.work_cap = 0;
    if (m->e->sys.loop) {
        pthread_mutex_lock(&prepare_lock);
        prt_loop_prepare(m->e->sys.loop);
        pthread_mutex_unlock(&prepare_lock);
        m->loop = *m->e->sys.loop;
        memset(&m->loop.scratch, 0, sizeof m->loop.scratch);
        m->sys.loop = &m->loop;
    }
    m->params = scratch(m->sys.nparams);
    int rc = m->params ? PHYSC_OK : fail(error, PHYSC_ERR_MEMORY, "no memory for the system's parameters");
    if (!rc) memcpy(m->params, m->e->sys.params, sizeof(double) * (size_t)m->sys.nparams);
    m->sys.params = m->params;
    if (!rc) rc = load_theta(m, params_path, error);
    if (!rc) rc = take_lengths(m, error);
    char err[512];
    if (!rc && prt_model_open(&m->model, &m->sys, &m->e->cfg, err, sizeof err) != 0)
        rc = fail(error, PHYSC_ERR_FAILED, "%s", err);
    m->opened = !rc;
    if (rc) {
        physc_model_free(m);
        return rc;
    }
    *model = m;
    return PHYSC_OK;
}

void physc_model_free(physc_model *m) {
    if (!m) return;
    if (m->opened) prt_model_close(&m->model);
    prt_system_release(&m->sys);
    if (m->sys.loop) prt_loop_scratch_free(&m->loop.scratch);
    free(m->params), free(m->theta), free(m->grad), free(m);
}

const char *physc_model_name(const physc_model *m) { return m ? m->e->model : NULL; }
const char *physc_model_family(const physc_model *m) { return m ? m->e->cfg.family->name : NULL; }
const char *physc_model_system(const physc_model *m) { return m ? m->e->system : NULL; }
int physc_model_state_size(const physc_model *m) { return m ? prt_state_rows(&m->sys) : -1; }
int physc_model_positions(const physc_model *m) { return m ? m->sys.N : -1; }
int physc_model_constraint_count(const physc_model *m) { return m ? m->sys.C : -1; }
int physc_model_start_points(const physc_model *m) { return m ? m->e->cfg.family->start_points : -1; }
long physc_model_param_count(const physc_model *m) { return m ? m->e->nparams : -1; }
double physc_model_dt(const physc_model *m) { return m ? m->e->dt : NAN; }
int physc_model_steps(const physc_model *m) { return m ? m->e->steps : -1; }
unsigned long physc_model_seed(const physc_model *m) { return m ? (unsigned long)m->e->seed : 0; }
const char *physc_model_state_name(const physc_model *m, int i) {
    return m && i >= 0 && i < prt_state_rows(&m->sys) ? m->sys.names[i] : NULL;
}

int physc_model_get_params(const physc_model *m, double *theta, long theta_len, char **error) {
    if (!m) return fail(error, PHYSC_ERR_ARGUMENT, "the model handle is NULL");
    int rc = check_buffer("theta", theta, theta_len, m->e->nparams, error);
    if (!rc) memcpy(theta, m->theta, sizeof(double) * (size_t)m->e->nparams);
    return rc;
}

int physc_model_set_params(physc_model *m, const double *theta, long theta_len, char **error) {
    if (!m) return fail(error, PHYSC_ERR_ARGUMENT, "the model handle is NULL");
    int rc = check_buffer("theta", theta, theta_len, m->e->nparams, error);
    for (long i = 0; !rc && i < theta_len; i++)
        if (!isfinite(theta[i])) rc = fail(error, PHYSC_ERR_ARGUMENT, "theta[%ld] is not finite", i);
    if (!rc) memcpy(m->theta, theta, sizeof(double) * (size_t)m->e->nparams);
    return rc;
}

static int check_steps(int steps, double dt, char **error) {
    if (steps < 0) return fail(error, PHYSC_ERR_ARGUMENT, "steps = %d: at least 0", steps);
    if (!(dt > 0) || !isfinite(dt)) return fail(error, PHYSC_ERR_ARGUMENT, "dt = %g: a finite interval above 0", dt);
    return PHYSC_OK;
}

int physc_model_true_trajectories(physc_model *m, long n, unsigned long seed, int steps, double dt, double *out,
                                  long out_len, char **error) {
    int rc = check_call(m, n, error);
    int W = rc ? 0 : prt_state_rows(&m->sys);
    if (!rc) rc = check_steps(steps, dt, error);
    if (!rc) rc = check_buffer("out", out, out_len, count(n, count(steps + 1, W)), error);
    if (rc) return rc;
    char err[512] = "";
    PrtSimOptions o = {.n = n, .steps = steps, .seed = (long)seed, .dt = dt, .rtol = m->e->rtol, .atol = m->e->atol,
                       .integrator = m->e->solver, .substeps = m->e->substeps, .errbuf = err, .errlen = sizeof err};
    PrtSimResult r;
    if (prt_sim_check_memory(&m->sys, &o, 3) != 0) return fail(error, PHYSC_ERR_MEMORY, "%s", err);
    if (prt_simulate_states(&m->sys, &o, NULL, NULL, &r) != 0) {
        free(r.traj);
        return fail(error, PHYSC_ERR_FAILED, "%s", err);
    }
    double *xv = prt_sim_velocities(&m->sys, n, steps, r.traj);
    trajectories_to_rows(n, steps + 1, W, xv, out);
    free(xv), free(r.traj);
    return PHYSC_OK;
}

int physc_model_true_field(physc_model *m, long n, const double *x, long x_len, double *out, long out_len,
                           char **error) {
    int rc = check_call(m, n, error);
    int W = rc ? 0 : prt_state_rows(&m->sys), N = rc ? 0 : m->sys.N;
    if (!rc) rc = check_buffer("x", x, x_len, count(n, W), error);
    if (!rc) rc = check_buffer("out", out, out_len, count(n, W), error);
    double *xv = rc ? NULL : scratch(count(n, 2L * W));
    if (!rc && !xv) rc = fail(error, PHYSC_ERR_MEMORY, "no memory for %ld states", n);
    if (rc) return rc;
    double *z = xv + (long)W * n, *zdot = xv; /* (xv is read into z, then holds the field) */
    to_columns(n, W, x, xv);
    memcpy(z, xv, sizeof(double) * (size_t)(N * n));
    prt_massv(&m->sys, n, xv + (long)N * n, z + (long)N * n); /* (X, Xdot) -> (X, P) */
    prt_hamiltonian_rhs(&m->sys, n, z, zdot);
    prt_minv(&m->sys, n, zdot + (long)N * n, z + (long)N * n); /* P' -> Xdot' (constant masses) */
    memcpy(zdot + (long)N * n, z + (long)N * n, sizeof(double) * (size_t)((W - N) * n));
    to_rows(n, W, zdot, out);
    free(xv);
    return PHYSC_OK;
}

int physc_model_rollout(physc_model *m, long n, const double *x0, long x0_len, int steps, double dt, double *out,
                        long out_len, char **error) {
    int rc = check_call(m, n, error);
    int W = rc ? 0 : prt_state_rows(&m->sys), sp = rc ? 0 : m->e->cfg.family->start_points;
    if (!rc) rc = check_steps(steps, dt, error);
    if (!rc && steps + 1 < sp)
        rc = fail(error, PHYSC_ERR_ARGUMENT, "steps = %d: a %s model is given its first %d states", steps,
                  m->e->cfg.family->title, sp);
    if (!rc) rc = check_buffer("x0", x0, x0_len, count(n, (long)sp * W), error);
    if (!rc) rc = check_buffer("out", out, out_len, count(n, count(steps + 1, W)), error);
    if (rc) return rc;
    int nt = steps + 1;
    double *xv0 = scratch(count(n, (long)sp * W)), *pred = scratch(count(n, count(nt, W))),
           *times = scratch(nt);
    if (!xv0 || !pred || !times) {
        free(xv0), free(pred), free(times);
        return fail(error, PHYSC_ERR_MEMORY, "no memory for %ld rollouts of %d points", n, nt);
    }
    for (int k = 0; k < sp; k++) /* point k of each trajectory, as a batch of columns */
        for (long b = 0; b < n; b++)
            for (int i = 0; i < W; i++) xv0[((long)k * W + i) * n + b] = x0[(b * sp + k) * W + i];
    for (int k = 0; k < nt; k++) times[k] = k * dt;
    if (prt_model_rollout(&m->model, m->theta, n, xv0, times, nt, m->e->rtol, m->e->atol, pred) != 0) {
        char why[256];
        prt_ode_describe_failure(&m->model.rollout_stats, n, NULL, why, sizeof why);
        rc = fail(error, PHYSC_ERR_FAILED, "the model's rollout failed: %s", why);
    } else {
        trajectories_to_rows(n, nt, W, pred, out);
    }
    free(xv0), free(pred), free(times);
    return rc;
}

int physc_model_energy(physc_model *m, long n, const double *x, long x_len, double *out, long out_len,
                       char **error) {
    int rc = check_call(m, n, error);
    int W = rc ? 0 : prt_state_rows(&m->sys);
    if (!rc && !m->e->cfg.family->energy)
        rc = fail(error, PHYSC_ERR_UNSUPPORTED, "a %s model's field has no energy", m->e->cfg.family->title);
    if (!rc) rc = check_buffer("x", x, x_len, count(n, W), error);
    if (!rc) rc = check_buffer("out", out, out_len, n, error);
    double *xv = rc ? NULL : scratch(count(n, W));
    if (!rc && !xv) rc = fail(error, PHYSC_ERR_MEMORY, "no memory for %ld states", n);
    if (rc) return rc;
    to_columns(n, W, x, xv);
    m->e->cfg.family->energy(&m->model, m->theta, n, xv, out);
    free(xv);
    return PHYSC_OK;
}

int physc_model_constraints(physc_model *m, long n, const double *x, long x_len, double *phi, long phi_len,
                            double *phidot, long phidot_len, char **error) {
    int rc = check_call(m, n, error);
    int W = rc ? 0 : prt_state_rows(&m->sys), C = rc ? 0 : m->sys.C;
    if (!rc) rc = check_buffer("x", x, x_len, count(n, W), error);
    if (!rc && phi) rc = check_buffer("phi", phi, phi_len, count(n, C), error);
    if (!rc && phidot) rc = check_buffer("phidot", phidot, phidot_len, count(n, C), error);
    if (!rc && phidot && m->sys.nso3 > 0 && C > 0)
        rc = fail(error, PHYSC_ERR_UNSUPPORTED, "the velocity constraints of a system with `state so3` bodies");
    double *xv = rc ? NULL : scratch(count(n, W)), *cols = rc ? NULL : scratch(count(n, C));
    if (!rc && (!xv || !cols)) rc = fail(error, PHYSC_ERR_MEMORY, "no memory for %ld states", n);
    if (rc) {
        free(xv), free(cols);
        return rc;
    }
    to_columns(n, W, x, xv);
    const double *lengths = m->sys.params + m->sys.nmass;
    if (phi && C > 0) {
        prt_phi(&m->sys, n, xv, lengths, cols);
        to_rows(n, C, cols, phi);
    }
    if (phidot && C > 0) {
        prt_phidot(&m->sys, n, xv, lengths, cols);
        to_rows(n, C, cols, phidot);
    }
    free(xv), free(cols);
    return PHYSC_OK;
}

/* ---- the model's own dynamics and their VJPs, through its family's recording (model.h) ---- */

typedef struct Recording {
    const char *what;  /* "field" or "step" */
    int points;        /* states of a trajectory given: 1, or start_points for a step */
    int steps;
    double dt;
} Recording;

/* Checks the call and records it: x (n x points x W) as the tape's leaf *leaf, then the
   family's operation; its output variable into *out. PHYSC_OK or an error. */
static int record(physc_model *m, const Recording *r, long n, const double *x, long x_len, int *leaf, int *out,
                  char **error) {
    PrtModel *pm = &m->model;
    const PrtModelFamily *f = pm->family;
    bool field = !strcmp(r->what, "field");
    int W = prt_state_rows(&m->sys);
    bool has = field ? f->tape_field != NULL : f->tape_step != NULL;
    if (!has || !pm->tape)
        return fail(error, PHYSC_ERR_UNSUPPORTED, "a %s model has no %s%s", f->title, field ? "vector field" : "step",
                    field && f->start_points > 1 ? " (it learns from positions only, in discrete time)" : " to differentiate");
    if (!prt_model_trainable(pm))
        return fail(error, PHYSC_ERR_UNSUPPORTED, "this library was built without the kernels the model's derivatives need");
    int rc = check_buffer("x", x, x_len, count(n, (long)r->points * W), error);
    if (rc) return rc;
    PrtTape *t = pm->tape;
    prt_tape_reset(t);
    *leaf = prt_tape_leaf(t, (long)r->points * W * n);
    double *v = prt_tape_val(t, *leaf);
    for (int k = 0; k < r->points; k++)
        for (long b = 0; b < n; b++)
            for (int i = 0; i < W; i++) v[((long)k * W + i) * n + b] = x[(b * r->points + k) * W + i];
    memset(m->grad, 0, sizeof(double) * (size_t)(m->e->nparams > 0 ? m->e->nparams : 1));
    char err[512] = "";
    *out = field ? f->tape_field(pm, m->theta, m->grad, n, *leaf, err, sizeof err)
                 : f->tape_step(pm, m->theta, m->grad, n, r->dt, r->steps, *leaf, err, sizeof err);
    if (*out < 0) return fail(error, *out == -2 ? PHYSC_ERR_FAILED : PHYSC_ERR_UNSUPPORTED, "%s", err);
    return PHYSC_OK;
}

/* The recorded output into out (n x W), NaN refused */
static int output(physc_model *m, long n, int var, double *out, char **error) {
    int W = prt_state_rows(&m->sys);
    const double *v = prt_tape_val(m->model.tape, var);
    for (long i = 0; i < (long)W * n; i++)
        if (!isfinite(v[i])) return fail(error, PHYSC_ERR_FAILED, "the model's %s is not finite at state %ld (%s)",
                                         "output", i % n, m->sys.names[i / n]);
    to_rows(n, W, v, out);
    return PHYSC_OK;
}

/* The backward pass from cot (n x W) at var: x's adjoints (n x points x W) and theta's */
static int backward(physc_model *m, const Recording *r, long n, int leaf, int var, const double *cot, long cot_len,
                    double *x_adj, long x_adj_len, double *theta_adj, long theta_adj_len, char **error) {
    int W = prt_state_rows(&m->sys);
    int rc = check_buffer("cot", cot, cot_len, count(n, W), error);
    if (!rc) rc = check_buffer("x_adj", x_adj, x_adj_len, count(n, (long)r->points * W), error);
    if (!rc && theta_adj) rc = check_buffer("theta_adj", theta_adj, theta_adj_len, m->e->nparams, error);
    if (rc) return rc;
    PrtTape *t = m->model.tape;
    prt_tape_zero_adjoints(t);
    to_columns(n, W, cot, prt_tape_adj(t, var));
    prt_tape_backward(t);
    const double *a = prt_tape_adj(t, leaf);
    for (int k = 0; k < r->points; k++)
        for (long b = 0; b < n; b++)
            for (int i = 0; i < W; i++) x_adj[(b * r->points + k) * W + i] = a[((long)k * W + i) * n + b];
    if (theta_adj) memcpy(theta_adj, m->grad, sizeof(double) * (size_t)m->e->nparams);
    return PHYSC_OK;
}

int physc_model_field(physc_model *m, long n, const double *x, long x_len, double *out, long out_len, char **error) {
    int rc = check_call(m, n, error), leaf, var;
    Recording r = {"field", 1, 0, 0};
    if (!rc) rc = check_buffer("out", out, out_len, count(n, prt_state_rows(&m->sys)), error);
    if (!rc) rc = record(m, &r, n, x, x_len, &leaf, &var, error);
    return rc ? rc : output(m, n, var, out, error);
}

int physc_model_step(physc_model *m, long n, const double *x, long x_len, int steps, double dt, double *out,
                     long out_len, char **error) {
    int rc = check_call(m, n, error), leaf, var;
    Recording r = {"step", rc ? 1 : m->e->cfg.family->start_points, steps, dt};
    if (!rc) rc = check_steps(steps, dt, error);
    if (!rc) rc = check_buffer("out", out, out_len, count(n, prt_state_rows(&m->sys)), error);
    if (!rc) rc = record(m, &r, n, x, x_len, &leaf, &var, error);
    return rc ? rc : output(m, n, var, out, error);
}

int physc_model_field_vjp(physc_model *m, long n, const double *x, long x_len, const double *cot, long cot_len,
                          double *x_adj, long x_adj_len, double *theta_adj, long theta_adj_len, char **error) {
    int rc = check_call(m, n, error), leaf, var;
    Recording r = {"field", 1, 0, 0};
    if (!rc) rc = record(m, &r, n, x, x_len, &leaf, &var, error);
    return rc ? rc : backward(m, &r, n, leaf, var, cot, cot_len, x_adj, x_adj_len, theta_adj, theta_adj_len, error);
}

int physc_model_step_vjp(physc_model *m, long n, const double *x, long x_len, int steps, double dt, const double *cot,
                         long cot_len, double *x_adj, long x_adj_len, double *theta_adj, long theta_adj_len,
                         char **error) {
    int rc = check_call(m, n, error), leaf, var;
    Recording r = {"step", rc ? 1 : m->e->cfg.family->start_points, steps, dt};
    if (!rc) rc = check_steps(steps, dt, error);
    if (!rc) rc = record(m, &r, n, x, x_len, &leaf, &var, error);
    return rc ? rc : backward(m, &r, n, leaf, var, cot, cot_len, x_adj, x_adj_len, theta_adj, theta_adj_len, error);
}
