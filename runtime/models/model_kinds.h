/* model_kinds.h — every kind of model a program may declare (`model NAME : KIND { ... }`),
   one row each. The compiler's ModelKind enum, the kind names sema accepts and prints, what
   sema checks of a model of the kind and what the driver compiles for it, and the runtime's
   table of families all read this list, so it is written once: a new kind is a new row here
   and a family of its own (a file defining prt_family_<name>; a row without one fails to
   link).

   X(ID, name, title, rules...)
     ID      MODEL_<ID> in the compiler
     name    the language's word, and the family's symbol prt_family_<name>
     title   as printed
     rules   designated initializers of the rest of PrtModelKind (below) */
#ifndef PRT_MODEL_KINDS_H
#define PRT_MODEL_KINDS_H
#include <stdbool.h>

#include "integrators/integrators.h"

enum { PRT_COORDS_CARTESIAN, PRT_COORDS_GENERALIZED };

/* What a kind's training differentiates through, which the compiler compiles for it: the
   Hamiltonian field (Eq. 6), the Lagrangian's accelerations (Eq. 7), the kernels of the
   coordinates block, or the rigid bodies' kernels on SO(3). */
typedef enum PrtKindTrains { PRT_TRAINS_FIELD, PRT_TRAINS_ACCEL, PRT_TRAINS_IN_Q, PRT_TRAINS_ON_SO3 } PrtKindTrains;

/* What a model of the kind needs and may declare, as sema checks it (flags) */
enum {
    PRT_KIND_NEEDS_POTENTIAL = 1 << 0,  /* a learned (or known) potential */
    PRT_KIND_NEEDS_FORCE = 1 << 1,      /* a learned force: its vector field */
    PRT_KIND_NEEDS_MASS_TERM = 1 << 2,  /* a learned mass matrix (`mass M`) */
    PRT_KIND_NEEDS_BODIES = 1 << 3,     /* the system's bodies (its Cartesian masses) */
    PRT_KIND_RIGID_BODIES = 1 << 4,     /* it integrates `state so3` bodies; every other kind refuses them */
    PRT_KIND_FITS_MASSES = 1 << 5,      /* the Eq. 9 masses are learned unless `mass known` */
    PRT_KIND_RELU_TERMS = 1 << 6,       /* its terms are not differentiated twice: relu is allowed */
    PRT_KIND_LAGRANGIAN_TERM = 1 << 7,  /* its potential is a whole Lagrangian L(q, qdot) */
    PRT_KIND_PREDICT_STEP = 1 << 8,     /* it predicts with a step of its own (`predict`) */
    PRT_KIND_UNIT_MASS = 1 << 9,        /* `mass identity` (M = I) */
    PRT_KIND_BODY_VIEWS = 1 << 10,      /* its potentials may read `body_frame`, `own_frame`, `own_centres` */
    PRT_KIND_STEPS_POSITIONS = 1 << 11, /* a potential of the Cartesian positions stepped without constraints,
                                           nothing else learned (the DT-LNN paper's Eq. 12) */
    PRT_KIND_FORCE_IS_ACCEL = 1 << 12,  /* its learned force gives accelerations (nq outputs in generalized
                                           coordinates), not the rates of the whole state (2 nq) */
    PRT_KIND_KNOWN_MASS_VJP = 1 << 13,  /* with the system's masses its training differentiates M(q) and dT/dq */
    PRT_KIND_EQ9_MASSES = 1 << 14,      /* it may learn the Eq. 9 masses (`mass learned`); the others would ignore them */
};

typedef struct PrtModelKind {
    const char *name, *title;
    int coords;                 /* PRT_COORDS_*: where the model's state is */
    const char *learns_from;    /* what its loss sees of the data */
    const char *predicts_with;  /* how its test rollouts step */
    unsigned rules;             /* PRT_KIND_* */
    int max_potentials, max_forces; /* 0: as many as the language allows */
    const int *steps;           /* the steps it trains through, its first proposed, -1 ending the list; NULL: every
                                   trainable explicit Runge-Kutta row of integrators.h */
    PrtKindTrains trains;
} PrtModelKind;

#define PRT_MODEL_KINDS(X)                                                                                            \
    X(CHNN, chnn, "CHNN", .coords = PRT_COORDS_CARTESIAN, .learns_from = "(x, v) chunks",                             \
      .predicts_with = "dopri5 on the projected field",                                                               \
      .rules = PRT_KIND_NEEDS_POTENTIAL | PRT_KIND_NEEDS_BODIES | PRT_KIND_FITS_MASSES | PRT_KIND_EQ9_MASSES,           \
      .trains = PRT_TRAINS_FIELD)                                                                                     \
    X(CLNN, clnn, "CLNN", .coords = PRT_COORDS_CARTESIAN, .learns_from = "(x, v) chunks",                             \
      .predicts_with = "dopri5 on Eq. 7's accelerations",                                                             \
      .rules = PRT_KIND_NEEDS_POTENTIAL | PRT_KIND_NEEDS_BODIES | PRT_KIND_FITS_MASSES | PRT_KIND_EQ9_MASSES,           \
      .trains = PRT_TRAINS_ACCEL)    \
    X(NODE, node, "NODE", .coords = PRT_COORDS_GENERALIZED, .learns_from = "(q, qdot) chunks", .predicts_with = "dopri5", \
      .rules = PRT_KIND_NEEDS_FORCE | PRT_KIND_RELU_TERMS, .trains = PRT_TRAINS_IN_Q)                                 \
    X(HNN, hnn, "HNN", .coords = PRT_COORDS_GENERALIZED, .learns_from = "(q, qdot) chunks", .predicts_with = "dopri5", \
      .rules = PRT_KIND_NEEDS_POTENTIAL | PRT_KIND_KNOWN_MASS_VJP, .trains = PRT_TRAINS_IN_Q)                         \
    X(DELAN, delan, "DeLaN", .coords = PRT_COORDS_GENERALIZED, .learns_from = "(q, qdot) chunks",                     \
      .predicts_with = "dopri5", .rules = PRT_KIND_NEEDS_POTENTIAL | PRT_KIND_NEEDS_MASS_TERM,                        \
      .trains = PRT_TRAINS_IN_Q)                                                                                      \
    X(LNN, lnn, "LNN", .coords = PRT_COORDS_GENERALIZED, .learns_from = "(q, qdot) chunks", .predicts_with = "dopri5", \
      .rules = PRT_KIND_NEEDS_POTENTIAL | PRT_KIND_LAGRANGIAN_TERM, .trains = PRT_TRAINS_IN_Q)                        \
    X(DTLNN, dtlnn, "DT-LNN", .coords = PRT_COORDS_CARTESIAN, .learns_from = "consecutive positions",                 \
      .predicts_with = "its own implicit step (Newton)",                                                              \
      .rules = PRT_KIND_NEEDS_POTENTIAL | PRT_KIND_PREDICT_STEP | PRT_KIND_UNIT_MASS | PRT_KIND_STEPS_POSITIONS,      \
      .steps = (const int[]){PRT_INT_DISCRETE_GRADIENT, PRT_INT_LEAPFROG, PRT_INT_SYMPLECTIC_EULER, PRT_INT_EULER, -1}, \
      .trains = PRT_TRAINS_FIELD)                                                                                     \
    X(LIET2, liet2, "Lie T2", .coords = PRT_COORDS_CARTESIAN, .learns_from = "(q, R, p, Pi) samples",                 \
      .predicts_with = "its own step on SO(3)", .rules = PRT_KIND_RIGID_BODIES | PRT_KIND_BODY_VIEWS,                 \
      .max_potentials = 3, .max_forces = 1,                                                                           \
      .steps = (const int[]){PRT_INT_LIET2, PRT_INT_LIE_RK2, PRT_INT_LIE_RK4, PRT_INT_VERLET, PRT_INT_RK4,            \
                             PRT_INT_EULER, -1},                                                                      \
      .trains = PRT_TRAINS_ON_SO3)                                                                                    \
    X(SONODE, sonode, "NODE+SO", .coords = PRT_COORDS_GENERALIZED, .learns_from = "(q, qdot) chunks",                 \
      .predicts_with = "dopri5", .rules = PRT_KIND_NEEDS_FORCE | PRT_KIND_RELU_TERMS | PRT_KIND_FORCE_IS_ACCEL,       \
      .trains = PRT_TRAINS_IN_Q)                                                                                      \
    X(CSONODE, csonode, "CNODE+SO", .coords = PRT_COORDS_CARTESIAN, .learns_from = "(x, v) chunks",                   \
      .predicts_with = "dopri5 on Eq. 7's accelerations",                                                             \
      .rules = PRT_KIND_NEEDS_FORCE | PRT_KIND_NEEDS_BODIES | PRT_KIND_EQ9_MASSES,                                    \
      .trains = PRT_TRAINS_ACCEL)

/* The rows in the table's order (model_kinds.c), and their count */
extern const PrtModelKind prt_model_kinds[];
extern const int prt_model_nkinds;

/* Whether a model of kind k trains through the integrator row `integrator` (< 0: none). */
bool prt_model_kind_trains_through(int k, int integrator);

#endif
