/* model.h — the model-family interface: what training, evaluation, checkpoints, `physc
   simulate --params` and emitted programs need from a learned model, whatever its family.
   A family is one row of the table in model.c (a PrtModelFamily of function pointers);
   the callers never ask which family a model is.

   Every family works on the data's Cartesian batches, structure of arrays: a chunk of npts
   points holds at point k (chunks + k * 2N * n) the positions X then the velocities Xdot
   of n states. What the model integrates (CHNN: (X, P); CLNN: (X, Xdot); generalized
   coordinates; positions only; SO(3) states) is its own business: the family maps the data
   into its state and back, so losses, rollouts and metrics read the same numbers for every
   family. theta is one flat array of nparams: the networks' parameters in order, then any
   physical parameters the family learns (e.g. log masses).

   The rows are model_kinds.h's, each family in a file of its own: CHNN and CLNN
   (model_cartesian.c), the baselines in generalized coordinates NODE, HNN, LNN, DeLaN
   (model_generalized.c), the second-order NODE in both coordinates (model_second_order.c),
   the DT-LNN (model_discrete.c) and Lie T2 (model_lie.c). */
#ifndef PRT_MODEL_H
#define PRT_MODEL_H
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "integrators/integrators.h"
#include "nn/mlp.h"
#include "model_decl.h"
#include "core/progress.h"
#include "system/sim.h"
#include "ad/tape.h"

enum { PRT_MODEL_MAX_NETS = 4, PRT_MODEL_MAX_GROUPS = 8, PRT_MODEL_OWN_BYTES = 256 };

typedef struct PrtModel PrtModel;
typedef struct PrtModelFamily PrtModelFamily;

/* What physc run measured of the training data before training, for a family's words
   (say_floor) */
typedef struct PrtFloorFacts {
    double floor;      /* the system's own dynamics under the training step: their training loss */
    double baseline;   /* theta = 0 (zero_theta_is_baseline), or NaN: not measured */
    double data_scale; /* the training data's mean |component| */
    const char *steps; /* the training step's substeps in words ("" or " (k steps per interval)") */
    bool noisy;        /* the data have noise */
} PrtFloorFacts;

/* What a family's own pictures draw from (pictures) */
typedef struct PrtPictureData {
    const char *dir;      /* the run's folder */
    const char *title;    /* "system / model" */
    const double *truth;  /* the test trajectories (npts x W x ntruth) */
    long ntruth;
    const double *pred;   /* the model's rollouts of the first n of them (nt x W x n) */
    const double *theta;  /* the trained parameters (a picture may roll the model out between the observations) */
    long n;
    int nt;
    double dt;
} PrtPictureData;

/* How a model is built and trained: the same for every family (a family ignores what it
   has no use for, and refuses in open() what it cannot do). */
typedef struct PrtModelConfig {
    const PrtModelFamily *family;
    int nnets;
    PrtMlp net[PRT_MODEL_MAX_NETS]; /* the learned networks (their f32 flag may change between calls) */
    bool learn_mass;                /* else the system's own masses */
    bool l2;                        /* mean squared error; else mean absolute error (L1) */
    PrtIntegrator integrator;       /* the training step (a trainable row of integrators.h) */
    PrtIntegrator predict;  /* the prediction step of a family that predicts with another step than it trains (dtlnn), else = integrator */
    bool unit_mass;  /* M = I (a dtlnn model's `mass identity`) */
    int substeps;                   /* steps of it per data interval */
    bool balance_loss; /* weight the loss's state groups so that the known terms alone score 1 on each
                          (train { loss_weights balanced }; families with a `balance`) */
    /* The family's own settings, which its configure sets and it alone reads (liet2's: model_lie.h) */
    union {
        double align;
        unsigned char bytes[PRT_MODEL_OWN_BYTES];
    } own;
} PrtModelConfig;

struct PrtModelFamily {
    const char *name;  /* as in the language: chnn, clnn, ... */
    const char *title; /* as printed: CHNN, CLNN, ... */
    /* Turns the model's declaration into cfg's networks (and whatever of them the family reads):
       which learned terms it takes, in which order (cfg->family is set). 0, or -1 with a
       message and *blame the term at fault (NULL: the model). */
    int (*configure)(const PrtModelDecl *d, PrtModelConfig *cfg, const PrtLearnedTerm **blame, char *err,
                     size_t errlen);
    /* What network k of cfg is to the model, as a run's summary names it ("potential", "mass
       factor", "field", ...). */
    const char *(*net_role)(const PrtModelConfig *cfg, int k);
    /* Checks that sys and cfg suit the family, sets m->nparams and m->impl. 0, or -1 with a message. */
    int (*open)(PrtModel *m, char *err, size_t errlen);
    void (*close)(PrtModel *m);
    /* Whether sys has what training backpropagates through (a rollout needs less). */
    bool (*trainable)(const PrtModel *m);
    void (*init_theta)(const PrtModel *m, double *theta, PrtRng *rng);
    /* The training loss over n chunks of npts points dt apart, and (loss_grad) its gradient
       d loss / d theta into grad (nparams). */
    double (*loss_grad)(PrtModel *m, const double *theta, long n, int npts, double dt, const double *chunks,
                        double *grad);
    double (*loss)(PrtModel *m, const double *theta, long n, int npts, double dt, const double *chunks);
    /* The same loss for the system's own dynamics in the model's state, stepped as in
       training: what the training step's truncation error (and any noise) leaves of it. */
    double (*truth_loss)(PrtModel *m, long n, int npts, double dt, const double *chunks);
    /* Rolls the model out from the Cartesian states xv0 (2N x n; start_points of them, dt =
       times[1] - times[0] apart) through times[0..nt), writing Cartesian (X, Xdot) at each
       into out (nt x 2N x n). 0, or -1 if it failed (m->rollout_stats says why). */
    int (*rollout)(PrtModel *m, const double *theta, long n, const double *xv0, const double *times, int nt,
                   double rtol, double atol, double *out);
    /* The physical parameters the model holds for theta (the masses of Eq. 9, learned or
       the system's) into out (sys->nmass); returns how many it wrote (0: none). */
    int (*masses)(const PrtModel *m, const double *theta, double *out);
    /* The model's own energy of n Cartesian states xv (2N x n) into out (n), as its rollouts
       report them: what its scheme conserves (the paper's "modelled energy"; a CHNN's H with
       its learned masses, potential and known terms). NULL: its field has none (a NODE), which
       the reports say in words. */
    void (*energy)(PrtModel *m, const double *theta, long n, const double *xv, double *out);
    /* The learned part of the potential's gradient, dV_theta/dX at the positions X (N x n),
       into G (N x n): for a family that learns a residual of known terms (liet2), which the
       evaluation compares with the true residual. NULL: none. */
    void (*residual_grad)(PrtModel *m, const double *theta, long n, const double *X, double *G);
    /* cfg.balance_loss: sets the loss's weight of each state group (positions, rotations,
       momenta, angular momenta) to 1 / its mean squared error under the known terms alone
       (theta = 0) over the n training chunks, so that every group starts at 1 and the loss at 1.
       0, or -1 with a message. NULL: the family weighs every component alike. */
    int (*balance)(PrtModel *m, long n, int npts, double dt, const double *chunks, char *err, size_t errlen);
    /* Sizes the model reads off the n training chunks before its first epoch, which
       init_theta then starts from (liet2: the torque its known terms miss on each rigid body,
       an own_frame potential's initial gains), saying what it read in note (empty: nothing to
       say). 0, or -1 with a message in err. NULL: none. */
    int (*from_data)(PrtModel *m, long n, int npts, double dt, const double *chunks, char *note, size_t notelen,
                     char *err, size_t errlen);
    /* Gives a replica of m (prt_model_open_replica) what from_data and balance read off the
       training data into m, so that its shards' losses are m's. NULL: the family reads nothing
       off the data that its loss depends on. */
    void (*adopt)(PrtModel *replica, const PrtModel *m);
    /* The unweighted mean squared error of each state group of theta's predictions over n
       chunks into mse (theta NULL: of the system's own dynamics stepped as in training, the
       integrator floor by group), their names into names (at most PRT_MODEL_MAX_GROUPS);
       returns how many. NULL: the family does not split its loss. */
    int (*loss_groups)(PrtModel *m, const double *theta, long n, int npts, double dt, const double *chunks, double *mse,
                       const char **names);
    /* The family's own settings (cfg->own): set to their defaults (NULL: all zero);
       own_params: the parameters theta holds beyond the networks' and the masses' (NULL: none);
       own_words: network k's own settings in words, for the checkpoint's fingerprint ("" when
       all are defaults; NULL: none); own_set: one of them by name, as an emitted program sets
       them (0, or -1 for a name it does not know); own_emit: cfg's, as C calls of
       prt_model_config_set(&cfg, name, value) (NULL: none). */
    void (*own_init)(PrtModelConfig *cfg);
    long (*own_params)(const PrtModelConfig *cfg);
    void (*own_words)(const PrtModelConfig *cfg, int k, char *buf, size_t len);
    int (*own_set)(PrtModelConfig *cfg, const char *name, double value);
    void (*own_emit)(const PrtModelConfig *cfg, FILE *out);
    /* What `physc run` says and draws of the model beyond what every family shares
       (model_words.c has the shared words; each NULL: those):
       say_scheme: a line after the model's, on how it trains and predicts (NULL: none);
       say_rollout: how its test rollouts step, into buf;
       say_floor: the integrator floor (f->floor finite) and what it means for this model;
       pictures: figures of its own beside the shared plots (NULL: none), each file's name
       appended to wrote as ", NAME"; 0, or -1 with a message. */
    void (*say_scheme)(const PrtModel *m, FILE *out);
    void (*say_rollout)(const PrtModel *m, double rtol, double atol, char *buf, size_t len);
    void (*say_floor)(const PrtModel *m, const PrtFloorFacts *f, FILE *out);
    int (*pictures)(PrtModel *m, const PrtPictureData *d, char *wrote, size_t wrotelen, char *err, size_t errlen);
    /* The model's own dynamics recorded on m->tape after what the caller put there, for a
       library's derivatives (runtime/abi/): from the states at tape variable xv (the data's
       layout, W = N + NP rows: start_points points of W x n each), tape_field records the
       model's d xv/dt and tape_step the states after `steps` intervals of dt of its training
       step (cfg.integrator, cfg.substeps a step); both return the variable (W x n), and a
       backward pass adds theta's adjoints to grad (nparams, the caller's; NULL: not wanted).
       theta must stay unchanged until then. -1 with a message in err for a model of the
       family that has none, -2 with one when it failed (a solve that did not converge);
       NULL: the family has no such thing (a discrete-time model's field). */
    int (*tape_field)(PrtModel *m, const double *theta, double *grad, long n, int xv, char *err, size_t errlen);
    int (*tape_step)(PrtModel *m, const double *theta, double *grad, long n, double dt, int steps, int xv, char *err,
                     size_t errlen);
    /* What limits a fit that ends near the integrator floor, in words (NULL: the training
       step, which `train { substeps N }` refines) */
    const char *floor_limit;
    /* The observed points a rollout starts from: 1 (a state), or 2 for a family that sees
       positions only (its first step needs two). rollout's xv0 then holds that many
       consecutive points, 2N x n each. */
    int start_points;
    /* 0: training reads the data's chunks (one random chunk of each trajectory); w > 0: every
       window of w consecutive points of every trajectory (a two-step scheme's triples); -1:
       every window of the data block's chunk length (a recurrent block on few, long
       trajectories: the Lie T2 paper's 32 of 128 samples). */
    int train_window;
    /* Training reads the data's positions only, never its velocities: the families that may
       train on recorded positions whose velocities physc estimated (dataset.h). */
    bool positions_only;
    /* theta = 0 is the model without its learned terms (a constant V: no force; or the
       system's known terms alone): the loss it reaches is the scale a fit is measured
       against, and the headroom over the integrator floor (physc run prints both). */
    bool zero_theta_is_baseline;
    /* Its vector field is the system's own Field kernel with the learned potential and masses
       (a CHNN): a trained model is compiled and emitted as the system's would be, in loop form
       too; else the family's own kernels, unrolled. */
    bool field_is_systems;
    /* Its training and prediction steps and its mass matrix make the model (the DT-LNN paper's
       five models differ in nothing else): a program's summary names them, set or not. */
    bool steps_make_the_model;
    /* Its rollouts run at its training precision: its prediction is its own scheme, no ODE
       solve at a tolerance that float rounding would defeat (the DT-LNN paper's Table 3
       measures an f32 model's energy). Else the rollouts are in f64 (run_eval.c). */
    bool predicts_at_training_precision;
};

struct PrtModel {
    const PrtModelFamily *family;
    PrtModelConfig cfg;
    PrtSystem *sys;   /* the true system's kernels (with the training VJPs when trainable) */
    long nparams;     /* all of theta */
    void *impl;       /* the family's own state */
    PrtTape *tape;    /* the family's tape, whose recordings set the loss blocks' size (NULL: none) */
    const PrtOdeObserver *rollout_observer; /* told of each output time a rollout reaches, or NULL */
    PrtProgress *progress; /* the phase a loss over a whole set (prt_model_for_blocks) is part of, or NULL:
                              told of each block, and ended with the set */
    int rollout_max_steps;  /* > 0: a rollout may take at most this many dopri5 steps per output
                               interval on average, and ten times as many in any one (more: its
                               learned field is too stiff to use) */
    PrtOdeStats rollout_stats; /* the last rollout's: why it failed */
};

/* For a family that trains through explicit Runge-Kutta steps on the tape: 0 if cfg's
   integrator is one (a trainable row with a tableau) with substeps >= 1, else -1 with a message. */
int prt_model_check_rk_step(const PrtModel *m, char *err, size_t errlen);

/* dopri5 for a family's rollout of n states of its own state (dim rows): with the model's
   observer and step budget, its statistics into m->rollout_stats. */
int prt_model_dopri5(PrtModel *m, PrtRhs f, long n, int dim, const double *z0, const double *times, int nt, double rtol,
                     double atol, double *out);

/* Losses over a whole set of chunks run in blocks: the first of PRT_MODEL_LOSS_PROBE
   chunks, then as many as keep the family's recording on its tape under
   PRT_MODEL_TAPE_BUDGET bytes (measured on the block before), at most PRT_MODEL_LOSS_BLOCK.
   A set of 4e5 training triples at once would need gigabytes of tape, and so would the
   3250 windows of TRAPPIST-1 through 40 RK4 steps (4 MB of tape each: the run was killed
   for want of memory). A family that records a rollout in segments (prt_tape_rewind) holds
   less than that; its blocks are still sized by the whole recording's bytes, which keeps
   them, and so the set losses' sums to the bit, those of the tape that held it whole. */
enum { PRT_MODEL_LOSS_BLOCK = 4096, PRT_MODEL_LOSS_PROBE = 64 };
#define PRT_MODEL_TAPE_BUDGET ((size_t)1 << 30)
/* Calls each(m, ctx, nb, block) on the n chunks (rows x n, a chunk per column) block by
   block as above, block holding nb of them in the same layout; m->progress's phase is told
   of each block, and ends with the last. */
typedef void (*PrtChunkBlockFn)(PrtModel *m, void *ctx, long nb, const double *block);
void prt_model_for_blocks(PrtModel *m, long n, long rows, const double *chunks, PrtChunkBlockFn each, void *ctx);
/* The bytes of tape a chunk of this set holds at once while its gradient is taken (the
   largest segment of a recording in segments), measured on its first few chunks (theta =
   0); 0 for a family with no tape. What a minibatch needs is that times its size (physc
   run checks it against the machine before training). */
double prt_model_tape_per_chunk(PrtModel *m, long n, int npts, double dt, const double *chunks);
/* The loss of theta (or, truth, of the system's own dynamics: truth_loss) over a whole set
   of n chunks, in blocks (above), averaged by their sizes. */
double prt_model_set_loss(PrtModel *m, const double *theta, bool truth, long n, int npts, double dt,
                          const double *chunks);

/* The family of that name from the table, or NULL. */
const PrtModelFamily *prt_model_family(const char *name);
/* The families' names, ", "-separated (for messages). */
const char *prt_model_family_names(void);

/* A config with the defaults: one network, rk4_38 (training and prediction), one step per
   interval, L1, the system's masses. */
PrtModelConfig prt_model_config(const PrtModelFamily *family, const PrtMlp *net, bool learn_mass);

/* The parameters cfg's model holds beyond the masses: its networks' and the family's own */
long prt_model_config_nparams(const PrtModelConfig *cfg);
/* Sets the family's own setting `name` (an emitted program's configuration): 0, or -1 */
int prt_model_config_set(PrtModelConfig *cfg, const char *name, double value);

/* Builds the model. 0, or -1 with a message (m is then empty). */
int prt_model_open(PrtModel *m, PrtSystem *sys, const PrtModelConfig *cfg, char *err, size_t errlen);
/* Builds a copy of m that computes the same losses (one per training thread): m's system and
   configuration, and what m read off the training data (PrtModelFamily.adopt). 0, or -1. */
int prt_model_open_replica(PrtModel *replica, const PrtModel *m, char *err, size_t errlen);
void prt_model_close(PrtModel *m);

static inline bool prt_model_trainable(const PrtModel *m) { return m->family->trainable(m); }
static inline void prt_model_init_theta(const PrtModel *m, double *theta, PrtRng *rng) {
    m->family->init_theta(m, theta, rng);
}
static inline double prt_model_loss_grad(PrtModel *m, const double *theta, long n, int npts, double dt,
                                         const double *chunks, double *grad) {
    return m->family->loss_grad(m, theta, n, npts, dt, chunks, grad);
}
static inline double prt_model_loss(PrtModel *m, const double *theta, long n, int npts, double dt,
                                    const double *chunks) {
    return m->family->loss(m, theta, n, npts, dt, chunks);
}
/* cfg.balance_loss: the family's balance over the training set (model.h: PrtModelFamily). */
static inline int prt_model_balance(PrtModel *m, long n, int npts, double dt, const double *chunks, char *err,
                                    size_t errlen) {
    return m->cfg.balance_loss ? m->family->balance(m, n, npts, dt, chunks, err, errlen) : 0;
}
static inline int prt_model_from_data(PrtModel *m, long n, int npts, double dt, const double *chunks, char *note,
                                      size_t notelen, char *err, size_t errlen) {
    if (notelen) note[0] = 0;
    return m->family->from_data ? m->family->from_data(m, n, npts, dt, chunks, note, notelen, err, errlen) : 0;
}
static inline double prt_model_truth_loss(PrtModel *m, long n, int npts, double dt, const double *chunks) {
    return m->family->truth_loss(m, n, npts, dt, chunks);
}
static inline int prt_model_rollout(PrtModel *m, const double *theta, long n, const double *xv0, const double *times,
                                    int nt, double rtol, double atol, double *out) {
    return m->family->rollout(m, theta, n, xv0, times, nt, rtol, atol, out);
}
static inline int prt_model_masses(const PrtModel *m, const double *theta, double *out) {
    return m->family->masses(m, theta, out);
}

/* The words of physc run for model m (model_words.c): the family's, else the shared ones
   (PrtModelFamily's say_* members). */
void prt_model_say_scheme(const PrtModel *m, FILE *out);
void prt_model_say_rollout(const PrtModel *m, double rtol, double atol, char *buf, size_t len);
void prt_model_say_floor(const PrtModel *m, const PrtFloorFacts *f, FILE *out);
/* The note on a final training loss `ratio` times the integrator floor ("" when none) */
const char *prt_model_floor_note(const PrtModel *m, double ratio);
/* The family's pictures, if it has any: 0, or -1 with a message. */
int prt_model_pictures(PrtModel *m, const PrtPictureData *d, char *wrote, size_t wrotelen, char *err, size_t errlen);
/* The line physc run prints for a finite floor f->floor: "integrator floor: ..." with note after
   the figure (the shared part of every family's say_floor). */
void prt_model_floor_line(const PrtModel *m, const PrtFloorFacts *f, const char *note, FILE *out);

#endif
