/* eval.h — the checker's values and its abstract evaluator (eval.c), shared by sema.c,
   settings.c and lower.c: every expression runs with loops unrolled, giving numbers where
   they are known at compile time and shapes (and, when lowering, IR) where they are not. */
#ifndef PHYSC_EVAL_H
#define PHYSC_EVAL_H
#include "sema.h"

typedef enum ValKind { V_ERR, V_NUM, V_BODY, V_BODYARR, V_STR, V_WORD, V_INPUTSET } ValKind;
typedef enum PtKind { PTK_NONE, PTK_POINT, PTK_DIR } PtKind;

typedef struct Val {
    ValKind kind;
    int ndim;            /* 0 scalar, 1 vector, 2 matrix */
    int rows, cols;      /* vector: rows x 1 */
    bool known;          /* numbers known at compile time (in v) */
    bool random;         /* depends on random draws (init only) */
    double *v;
    int body;            /* V_BODY: body index; V_BODYARR: array index */
    PtKind pt;           /* a point or direction constraints can refer to */
    PointRef ref;
    const char *str;     /* V_STR, V_WORD */
    int *ir;             /* when lowering: the IR value of each unknown component */
} Val;

typedef enum EvalMode {
    EV_CONST,     /* must be known at compile time */
    EV_POTENTIAL, /* positions are symbolic */
    EV_COORDS,    /* the coordinate map: assigns body poses from generalized coordinates */
    EV_INVERSE,   /* generalized coordinates from body poses */
    EV_INIT,      /* sampling: random draws allowed */
    EV_INPUT,     /* inputs of a learned term */
    EV_FORCE,     /* a force block: positions and velocities symbolic; adds to b.force, b.torque */
} EvalMode;

typedef enum BindKind { B_VAL, B_FN, B_ARRAY, B_COORD } BindKind;

typedef struct Binding Binding;
struct Binding {
    const char *name;
    BindKind kind;
    Val val;             /* B_VAL */
    Node *fn;            /* B_FN */
    int array, lo, hi;   /* B_ARRAY: first body index and index range */
    int coord;           /* B_COORD: first coordinate index; lo/hi for an array */
    Node *decl;          /* for "previous definition" notes */
    bool used;
    bool from_set;       /* a param's value given on the command line (--set), for the messages */
    Binding *next;
};

typedef struct Scope Scope;
struct Scope {
    Binding *head;
    Scope *parent;
};

typedef struct Sema Sema;
typedef struct Ctx Ctx;

/* Lowering of the coordinate map and init: the state being built, as IR values. */
typedef enum DrawKind { DRAW_NORMAL, DRAW_UNIFORM } DrawKind;
typedef struct LowerState {
    int *q, *qdot;        /* per generalized coordinate (-1: not set) */
    int *pos, *vel;       /* per body: centre of mass, dim values each */
    int *rot, *rotdot;    /* per body: dim x dim rotation (row-major) and its rate */
    int *omega;           /* per SO(3) body: 3 (-1: the one R' implies) */
    int *force, *torque;  /* a force block: per body, dim values (on its momentum), and 3 (on Pi) */
    bool mapped;          /* init: the coordinate map has placed the bodies */
    DrawKind *draws;      /* kind of each random input */
    int ndraws, cap_draws;
    void (*apply_map)(Ctx *c); /* init: place the bodies from q and q' */
    /* init: a body's pos or rot assigned after the map gets as rate (vel, rotdot) the JVP of
       the statement along the current rates (lower.c). rates_begin, before a statement, makes
       the values with a known rate (q, pos, rot, earlier lets) seeds and returns the first
       instruction of the statement (-1: no rates tracked, without a coordinates block);
       rates_end gives the tangents of of[0..n) and, with remember (a let), keeps them. */
    int *seed, *seed_rate;     /* values with a known rate, and the rate */
    int nseeds, nlet_seeds, cap_seeds;
    int (*rates_begin)(Ctx *c);
    void (*rates_end)(Ctx *c, int lo, const int *of, int n, int *tan, bool remember);
} LowerState;

struct Ctx {
    Sema *s;
    Scope *scope;
    EvalMode mode;
    int call_depth;
    bool *placed_pos, *placed_rot;   /* EV_COORDS: which bodies the map has placed so far */
    struct IrFn *ir;                 /* lowering: unknown values also emit IR into this kernel */
    int *position_inputs;            /* lowering: IR value of each Cartesian coordinate */
    LowerState *ls;                  /* lowering the coordinate map or init */
};

struct Sema {
    Arena *arena;
    Diags *d;
    System *sys;
    Scope globals;
    Scope system_scope;
    bool have_dim;
    int bodies_cap;
    long steps;          /* evaluation work so far: loops are unrolled, so bound it */
    /* a declaration of `name` anywhere in the program (for "used before it is defined"),
       or the coordinates block declaring it */
    Node *(*find_decl)(Sema *s, const char *name);
    PtrVec *items;
    Node *system;
    bool over_budget;
    Scope *coords_scope;  /* where the generalized coordinates are bound */
};

/* Counts one unit of checking work; false (after one error) once the budget is spent. */
bool sema_step(Sema *s, Loc loc);

Val eval(Ctx *c, Node *n);
/* A body point or direction (body frame coordinates cc) as a value; with IR when lowering. */
Val eval_point(Ctx *c, int body, const double *cc, bool centre, PtKind k);
/* Lowering: IR of Cartesian coordinate k of point p of a body (0: centre, i: axis point i). */
int body_coord(Ctx *c, int body, int p, int k);
int *body_omega(Ctx *c, int body);            /* init: an SO(3) body's angular velocity (body frame) */
double body_inertia(const Body *b, int i);    /* principal moment of inertia m (lambda_j + lambda_k) */
/* Runs the statements of a coordinates / inverse / init block (checking, and lowering
   into c->ls when c->ir is set). */
void sema_run_block(Sema *s, Ctx *c, PtrVec *stmts, EvalMode mode);
Val val_err(void);
Val val_scalar(Sema *s, double x);
Val val_vec(Sema *s, int n, bool known);
Val val_mat(Sema *s, int r, int c, bool known);
const char *shape_name(Sema *s, Val v);
bool val_int(Ctx *c, Node *n, Val v, long *out, const char *what);
Binding *scope_lookup(Scope *sc, const char *name);
Binding *scope_bind(Sema *s, Scope *sc, const char *name, BindKind kind, Node *decl);
void sema_error_once(Sema *s, Node *n, Loc loc, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
bool is_builtin_fn(const char *name);
/* Builtin function i (from 0): its name, its call as the manual writes it, what it gives; NULL
   past the last */
const char *builtin_row(int i, const char **call, const char **doc);

#endif
