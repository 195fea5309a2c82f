/* physc_model.h — the C ABI of a trained physc model built as a shared library
   (`physc emit-c --shared FILE --model M --params P -o libM.so`). Plain C (C99 and C++),
   no physc internals; docs/python.md shows it from Python, python/physc/ wraps it.

   A model is an opaque handle. Every call that computes returns PHYSC_OK (0) or an error
   code, and then, if `error` is not NULL, sets *error to a message the caller frees with
   physc_free_error. Buffers are the caller's, row-major: a batch of n states is n rows of
   physc_model_state_size() numbers (NumPy's (n, W) C order), and each buffer's length in
   doubles is passed beside it, so a wrong size is an error (PHYSC_ERR_SIZE), never a
   write past the end. Distinct handles may be used from distinct threads at once; one
   handle is used from one thread at a time.

   The state is the one of physc's trajectory files (physc_model_state_name): the bodies'
   Cartesian coordinates X (a `state so3` body: its position, then its rotation matrix row
   by row) and then their velocities (a `state so3` body: its velocity, then its angular
   velocity in the body frame). The same numbers for every family, whatever the family
   integrates inside. */
#ifndef PHYSC_MODEL_H
#define PHYSC_MODEL_H

#ifdef __cplusplus
extern "C" {
#endif

/* The ABI this header describes. A library built for another refuses to construct a model
   (PHYSC_ERR_VERSION, with both numbers in the message). */
#define PHYSC_MODEL_ABI_VERSION 1

typedef struct physc_model physc_model;

enum physc_status {
    PHYSC_OK = 0,
    PHYSC_ERR_ARGUMENT = 1,    /* a NULL handle or buffer, n < 1, steps < 0, dt not finite and positive */
    PHYSC_ERR_SIZE = 2,        /* a buffer's length is not what the call needs (the message says both) */
    PHYSC_ERR_FILE = 3,        /* a parameters file that cannot be read, or is not this model's */
    PHYSC_ERR_UNSUPPORTED = 4, /* the model's family has no such thing (a NODE's energy) */
    PHYSC_ERR_FAILED = 5,      /* a rollout or integration that failed, or a result that is not finite */
    PHYSC_ERR_VERSION = 6,     /* the library was built for another ABI version */
    PHYSC_ERR_MEMORY = 7
};

/* The ABI version the library was built for */
int physc_abi_version(void);

/* The BLAS the library runs on (its configuration, as `physc --version` says it), and the
   OpenBLAS kernels physc would choose on this CPU where OpenBLAS fell back to its generic
   ones (NULL: none; physc re-executes itself with OPENBLAS_CORETYPE set to them, which a
   library cannot do: set it before the library is loaded to get physc's results to the bit). */
const char *physc_blas(void);
const char *physc_blas_wanted_core(void);

/* Constructs a model: abi_version is the caller's PHYSC_MODEL_ABI_VERSION; params_path a
   params.bin of this model (physc run's), or NULL for the parameters built into the
   library. The lengths the program leaves open (a tether without `length`) are taken from
   the first initial state of the data block's seed, as `physc simulate` takes them. */
int physc_model_new(int abi_version, const char *params_path, physc_model **model, char **error);
void physc_model_free(physc_model *model);
void physc_free_error(char *error);

/* Names and sizes (NULL or -1 for a NULL handle). Strings live as long as the handle. */
const char *physc_model_name(const physc_model *model);   /* the program's model name: "chnn" */
const char *physc_model_family(const physc_model *model); /* its family: chnn, clnn, node, hnn, lnn, delan,
                                                             sonode, csonode, dtlnn, liet2 */
const char *physc_model_system(const physc_model *model); /* the system's name */
int physc_model_state_size(const physc_model *model);     /* W: numbers in a state */
int physc_model_positions(const physc_model *model);      /* the first of them that are coordinates */
const char *physc_model_state_name(const physc_model *model, int i); /* column i: "bob.x", "bob.vx" */
int physc_model_constraint_count(const physc_model *model); /* rows of Phi */
int physc_model_start_points(const physc_model *model);   /* states a rollout starts from: 1, or 2 for a
                                                             family that sees positions only (dtlnn) */
long physc_model_param_count(const physc_model *model);
double physc_model_dt(const physc_model *model);          /* the program's observation interval */
int physc_model_steps(const physc_model *model);          /* and its trajectories' steps */
unsigned long physc_model_seed(const physc_model *model); /* the data block's seed */

/* The model's parameters (physc_model_param_count numbers): a copy into theta, or set from
   theta (every later call uses them; finite numbers only), e.g. by an optimizer in the caller. */
int physc_model_get_params(const physc_model *model, double *theta, long theta_len, char **error);
int physc_model_set_params(physc_model *model, const double *theta, long theta_len, char **error);

/* The true system's trajectories as `physc simulate --n n --seed seed --steps steps --dt dt`
   makes them: n initial states of the program's init block, projected onto the
   constraints, integrated by the data block's solver. out: n x (steps + 1) x W. */
int physc_model_true_trajectories(physc_model *model, long n, unsigned long seed, int steps, double dt, double *out,
                                  long out_len, char **error);
/* The true system's vector field: d state / dt of n states x (n x W) into out (n x W). */
int physc_model_true_field(physc_model *model, long n, const double *x, long x_len, double *out, long out_len,
                           char **error);
/* The model rolled out as `physc simulate --params` and `physc run` evaluate it, from n
   trajectories' first start_points states x0 (n x start_points x W, dt apart), steps
   intervals of dt: out (n x (steps + 1) x W) holds the given states, then the model's. */
int physc_model_rollout(physc_model *model, long n, const double *x0, long x0_len, int steps, double dt, double *out,
                        long out_len, char **error);
/* The model's vector field: d state / dt of n states x (n x W) into out (n x W).
   PHYSC_ERR_UNSUPPORTED for a family without one (a discrete-time model). */
int physc_model_field(physc_model *model, long n, const double *x, long x_len, double *out, long out_len,
                      char **error);
/* The model's own training step (its integrator, substeps steps an interval): the states after
   `steps` intervals of dt from n trajectories' first start_points states x (n x start_points x
   W) into out (n x W). */
int physc_model_step(physc_model *model, long n, const double *x, long x_len, int steps, double dt, double *out,
                     long out_len, char **error);
/* Their vector-Jacobian products (reverse mode through the model's own operations, no
   finite differences): for a cotangent cot (n x W) of the output, cot . d out / d x into
   x_adj (x's shape) and, if theta_adj is not NULL, cot . d out / d theta summed over the
   batch into theta_adj (physc_model_param_count numbers). */
int physc_model_field_vjp(physc_model *model, long n, const double *x, long x_len, const double *cot, long cot_len,
                          double *x_adj, long x_adj_len, double *theta_adj, long theta_adj_len, char **error);
int physc_model_step_vjp(physc_model *model, long n, const double *x, long x_len, int steps, double dt,
                         const double *cot, long cot_len, double *x_adj, long x_adj_len, double *theta_adj,
                         long theta_adj_len, char **error);
/* The model's own energy of n states (what its scheme conserves: a CHNN's learned H),
   into out (n). PHYSC_ERR_UNSUPPORTED for a family whose field has none (NODE). */
int physc_model_energy(physc_model *model, long n, const double *x, long x_len, double *out, long out_len,
                       char **error);
/* The system's constraints at n states: Phi (n x C) and its time derivative DPhi Xdot
   (n x C); either output may be NULL. */
int physc_model_constraints(physc_model *model, long n, const double *x, long x_len, double *phi, long phi_len,
                            double *phidot, long phidot_len, char **error);

#ifdef __cplusplus
}
#endif

#endif
