/* system.h — the checked system model that sema builds from the syntax tree and that the
   later stages (lowering, runtime) consume: bodies with their coordinate layout,
   constraints, potentials, generalized coordinates, learned terms, models, settings. */
#ifndef PHYSC_SYSTEM_H
#define PHYSC_SYSTEM_H
#include <stdbool.h>

#include "ast.h"
#include "models/model_kinds.h"

enum { MAX_DIM = 3 };

typedef enum BodyKind {
    BODY_POINT,   /* Obj0D: one point */
    BODY_RIGID,   /* ObjnD (n = 1..d): centre of mass + one point per principal axis (CHNN Eq. 9) */
} BodyKind;

typedef enum BodyState {
    STATE_POINTS, /* Cartesian points (CHNN/CLNN embedding) */
    STATE_SO3,    /* position + rotation matrix, body angular momentum (Lie T2) */
} BodyState;

typedef struct NamedPoint {
    const char *name;
    double c[MAX_DIM]; /* in the body frame, n components */
    Loc loc;
} NamedPoint;

typedef struct Body {
    const char *name;      /* e.g. "bob[2]" */
    BodyKind kind;
    BodyState state;
    int n;                 /* intrinsic dimension: 0 for a point */
    double mass;
    double moments[MAX_DIM]; /* principal second moments per unit mass, lambda_i (Eq. 9) */
    int first_point;       /* index of its first Cartesian point */
    int first_coord;       /* its first configuration coordinate: points x dim, or q (3) then R (9) */
    int first_mom;         /* its first momentum: one per coordinate, or p (3) then body Pi (3) */
    int npoints;           /* n + 1 */
    NamedPoint *points;
    int npoints_named;
    Loc loc;
} Body;

typedef enum PointKind { PT_BODY, PT_WORLD } PointKind;

/* A point (or direction, for axis constraints) given in a body's frame or in the world. */
typedef struct PointRef {
    PointKind kind;
    int body;              /* PT_BODY */
    double c[MAX_DIM];     /* body frame (n comps) or world coordinates (d comps) */
    bool centre;           /* the body's centre of mass itself */
} PointRef;

typedef struct Constraint {
    ConstraintKind kind;   /* link / tether: distance; joint: coincidence; axis: direction */
    PointRef a, b;
    double length;         /* link / tether */
    bool length_given;     /* else taken from the initial state */
    int equations;         /* rows of Phi it adds */
    int independent;       /* of which independent (all: an axis has d - 1 rows) */
    Loc loc;
} Constraint;

/* A name bound in expressions: loop indices and function parameters are bound at use. */
typedef struct Potential {
    const char *name;
    Node *expr;            /* scalar expression over body positions */
    Loc loc;
} Potential;

typedef struct GenCoords {
    bool present;
    int count;
    const char **names;    /* count names: theta[1]..theta[N] or phi, theta, psi */
    const char *array_name;/* for theta[1..N]; NULL for a list */
    int array_lo;
    Node *decl;            /* the N_COORDS node: statements place every body */
    Node *inverse;         /* the N_INVERSE node, or NULL */
    unsigned char *angular;/* per coordinate: 1 for an angle, which the map reads only through
                              sin and cos (lower_angles); models embed it as (cos, sin) */
    int nangles;
} GenCoords;

typedef enum LearnedRole { ROLE_POTENTIAL, ROLE_MASS, ROLE_FORCE } LearnedRole;
typedef enum Activation { ACT_TANH, ACT_SOFTPLUS, ACT_SILU, ACT_RELU } Activation;

typedef struct Learned {
    const char *name;
    LearnedRole role;
    int hidden[16];
    int nhidden;
    Activation act;
    bool zero_biases;      /* `biases zero`: every bias starts at 0 (the DGNet reference's), not torch's default */
    int inputs;            /* input width */
    int outputs;           /* output width */
    long params;           /* weights + biases */
    bool used;
    const char *width_of;  /* a force term of generalized inputs: the model whose kind fixed its width, or NULL */
    Node *input_exprs;     /* the `input` setting (N_SETTING), NULL for the default */
    double scale;          /* the output's multiplier (`scale`; liet2 models) */
    double length_scale;   /* the unit its input positions are measured in (`length_scale`; liet2 models) */
    double time_scale;     /* with length_scale, the unit of its input velocities (`time_scale`; liet2 models) */
    bool velocity_input;   /* `input positions, velocities` (a liet2 force: velocities and angular velocities) */
    bool body_frame_input; /* `input body_frame` (a liet2 potential of each body's view of the others) */
    bool own_centres_input; /* `input own_centres` (a liet2 potential: a term per body, its view in the world frame) */
    int body_gains;        /* > 0: a term per body, each times its own gain (`input own_frame`: the rigid bodies;
                              own_centres: every body); their gains follow the network's
                              parameters */
    Loc loc;
} Learned;

typedef enum ModelKind {
#define MODEL_KIND_ENUM(id, ...) MODEL_##id,
    PRT_MODEL_KINDS(MODEL_KIND_ENUM)
#undef MODEL_KIND_ENUM
    MODEL_NKINDS
} ModelKind;

typedef struct Model {
    const char *name;
    ModelKind kind;
    int potentials[8], npotentials;  /* learned potential terms (indices into learned) */
    int forces[8], nforces;
    int mass_learned;                /* index of a learned mass network, or -1 */
    bool mass_fit;                   /* Eq. 9 per-body mass parameters are learned */
    int known[16], nknown;           /* system potentials kept as known terms */
    double lr;                       /* the model's own learning rate, or 0: the train block's */
    double adam_eps;                 /* its own Adam epsilon, or 0: the train block's */
    int epochs;                      /* its own epochs, or 0: the train block's */
    const char *integrator;          /* its own training step, or NULL: the train block's */
    const char *predict;             /* dtlnn: its prediction step, or NULL: the training step */
    Loc integrator_at, predict_at;   /* where they are set (first_line 0: not set) */
    bool unit_mass;                  /* dtlnn: `mass identity`, M = I */
    long params;
    Loc loc;
} Model;

typedef struct DataSettings {
    int ntrain, nvalid, ntest;
    double dt;
    int steps, chunk;
    const char *solver;
    int substeps;          /* a fixed-step solver's steps per interval (dt / substeps each) */
    double rtol, atol;
    int seed;
    const char *file;      /* recorded trajectories (CSV) instead of generated ones; a relative
                              path is the program file's folder's, as imports are */
    double noise;
    double test_noise;     /* observation noise on the test trajectories too (0: none), as the
                              HNN/DGNet data scripts add it to every trajectory */
    const char *project;   /* how sampled states reach the constraints: "mass" or "nearest" */
    Loc file_at, dt_at, solver_at; /* where file, dt and solver are set (first_line 0: not set), for
                              the errors only the file reveals and the commands' refusals */
    Loc steps_at;          /* where steps is set (first_line 0: the default) */
} DataSettings;

typedef struct TrainSettings {
    const char *optimizer, *schedule, *loss, *integrator, *precision;
    const char *loss_weights; /* "uniform" (every component alike) or "balanced" (each state group by its
                                 error under the known terms alone: liet2) */
    double lr, weight_decay;
    double adam_eps; /* the denominator's epsilon of Adam and AdamW */
    int epochs, batch, threads, checkpoint_every;
    int shards;            /* each minibatch's shards (0: as many as threads): the run depends on them, not on threads */
    int substeps; /* integrator steps per observation interval */
    Loc integrator_at, optimizer_at; /* their values in the train block (first_line 0: defaults) */
} TrainSettings;

typedef struct EvalSettings {
    int horizon;
    Loc horizon_at;        /* where it is set (first_line 0: the default, data steps) */
    Loc solver_at;         /* where the solver is set (first_line 0: the default) */
    const char *solver;
    double rtol, atol;
    const char *metrics[8];
    int nmetrics;
    const char *plots[8];
    int nplots;
    int plot_trajectories;
} EvalSettings;

typedef struct System {
    const char *name;
    int dim;
    Body *bodies;
    int nbodies;
    int npoints;           /* Cartesian points: coordinates = npoints * dim */
    int ncoords;           /* configuration coordinates (Cartesian points, then 12 per SO(3) body) */
    int nmomenta;          /* momenta (one per Cartesian coordinate, 6 per SO(3) body) */
    const char **state_names; /* the coordinates' names, then the velocities' (bob[1].x, bob[1].vx):
                                 made by lowering on first use, in the arena */
    int nrotation_bodies;  /* STATE_SO3 bodies */
    Constraint *constraints;
    int nconstraints;
    int rigidity_equations;/* internal constraints of rigid bodies, C(n+1, 2) each */
    int orthogonality_equations; /* R^T R = I, 6 per SO(3) body */
    Potential *potentials;
    int npotentials;
    GenCoords coords;
    Node *init;            /* the N_INIT node, or NULL */
    Node **forces;         /* the N_FORCE blocks: non-conservative forces and torques (Force kernel) */
    int nforces;
    const char *init_at;   /* its "file:line:col", for the runtime's messages */
    Learned *learned;
    int nlearned;
    Model *models;
    int nmodels;
    DataSettings data;
    TrainSettings train;
    EvalSettings eval;
    Node *system_node;
    struct Sema *sema;     /* the checker's scopes, which lowering evaluates in */
} System;

int system_coordinates(const System *s);   /* Cartesian configuration coordinates */
int system_equations(const System *s);     /* rows of Phi */
int system_independent_constraints(const System *s);
int system_dof(const System *s);
/* The side (0: a, 1: b) of an axis constraint whose frame spans the d - 1 directions across
   its direction: a world direction (constant), a body of dimension d (its frame), or of
   dimension d - 1 (its frame and the frame's normal); -1 if neither (two rigid1 in 3-D). */
int axis_frame_side(const System *s, const Constraint *c);

const char *model_kind_name(ModelKind k);
/* The kinds' names in ModelKind's order (MODEL_NKINDS of them) */
const char *const *model_kind_names(void);
/* node, hnn, lnn, delan: the baselines that learn in the coordinates block's q */
bool model_in_generalized_coords(ModelKind k);
/* Whether a model of kind k can be trained through row `integrator` of runtime/integrators/integrators.h
   (-1: none) as far as the compiler knows: dtlnn through the position-only steps of its paper
   (Eq. 12, 15, 17, 19), the tape-trained families through an explicit Runge-Kutta step;
   liet2, which no family trains yet, through any. */
bool model_trains_through(ModelKind k, int integrator);
/* The rows a model of kind k trains through, joined by ", ", into buf. */
const char *model_integrator_names(ModelKind k, char *buf, int len);
/* The training step of model m: its own, else the train block's. */
const char *model_integrator(const System *s, const Model *m);

#endif
