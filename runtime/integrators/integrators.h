/* integrators.h — every integrator physc has, one row each, with the facts each user of the
   list needs: the checker and the commands (which names exist, which a command accepts),
   `physc simulate` (which implementation steps), training (which steps a model can be
   trained through), and the help texts.

   X(ID, name, kind, constraints, so3, trainable, symplectic, order, summary)
     kind        PRT_KIND_ADAPTIVE (dopri5: error control, output at requested times),
                 PRT_KIND_EXPLICIT_RK (a fixed step of an explicit Runge-Kutta tableau, ode.h),
                 PRT_KIND_SYMPLECTIC (symplectic.h: fixed steps on (X, P)),
                 PRT_KIND_LIE (lie_group.h: fixed steps that move `state so3` bodies' R by
                 rotations, or (verlet) the naive flat step the Lie T2 paper compares with),
                 PRT_KIND_DISCRETE (a two-step scheme on positions only: the learned dtlnn
                 models' Eq. 12; the system's own dynamics are not stepped by it)
     constraints whether it keeps a constrained system on its constraints (the RK rows integrate
                 the projected field of Eq. 6; RATTLE solves them; symplectic Euler and
                 leapfrog ignore them)
     so3         whether it handles bodies with `state so3`
     trainable   whether a model can be trained by backpropagating through its steps
     symplectic  whether its flow map is symplectic
     order       its order of accuracy */
#ifndef PRT_INTEGRATORS_H
#define PRT_INTEGRATORS_H
#include <stdbool.h>

#include "math/ode.h"

typedef enum PrtIntegratorKind {
    PRT_KIND_ADAPTIVE, PRT_KIND_EXPLICIT_RK, PRT_KIND_SYMPLECTIC, PRT_KIND_LIE, PRT_KIND_DISCRETE
} PrtIntegratorKind;

#define PRT_INTEGRATORS(X)                                                                                              \
    X(DOPRI5, "dopri5", PRT_KIND_ADAPTIVE, true, true, false, false, 5, "adaptive Dormand-Prince 5(4)")                 \
    X(RK4, "rk4", PRT_KIND_EXPLICIT_RK, true, true, true, false, 4, "classic Runge-Kutta, one step per dt")             \
    X(RK4_38, "rk4_38", PRT_KIND_EXPLICIT_RK, true, true, true, false, 4, "Runge-Kutta 3/8 rule, one step per dt")     \
    X(EULER, "euler", PRT_KIND_EXPLICIT_RK, true, true, true, false, 1, "explicit Euler, one step per dt")              \
    X(SYMPLECTIC_EULER, "symplectic_euler", PRT_KIND_SYMPLECTIC, false, false, false, true, 1,                         \
      "symplectic Euler")                                                                              \
    X(LEAPFROG, "leapfrog", PRT_KIND_SYMPLECTIC, false, false, false, true, 2, "leapfrog / velocity Verlet") \
    X(RATTLE, "rattle", PRT_KIND_SYMPLECTIC, true, false, false, true, 2, "RATTLE (SHAKE positions, projected velocities)") \
    X(LIET2, "liet2", PRT_KIND_LIE, false, true, true, true, 2,                                                    \
      "Lie T2: Strang splitting into exact flows on SO(3) (Lie T2 paper Eq. 3)")                                      \
    X(LIE_RK2, "lie_rk2", PRT_KIND_LIE, false, true, true, false, 2, "commutator-free Lie midpoint rule (CF2)")     \
    X(LIE_RK4, "lie_rk4", PRT_KIND_LIE, false, true, true, false, 4, "commutator-free Lie Runge-Kutta 4 (CF4)")     \
    X(VERLET, "verlet", PRT_KIND_LIE, false, true, true, false, 1,                                                  \
      "leapfrog on the flat embedding of SO(3): R leaves SO(3) (Lie T2 paper App. D)")                                \
    X(DISCRETE_GRADIENT, "discrete_gradient", PRT_KIND_DISCRETE, false, false, true, false, 2,                         \
      "discrete gradient (DT-LNN Eq. 12): learned dtlnn models only")

typedef enum PrtIntegrator {
#define PRT_INTEGRATOR_ID(id, ...) PRT_INT_##id,
    PRT_INTEGRATORS(PRT_INTEGRATOR_ID)
#undef PRT_INTEGRATOR_ID
    PRT_INTEGRATOR_COUNT
} PrtIntegrator;

typedef struct PrtIntegratorInfo {
    const char *name;
    PrtIntegratorKind kind;
    bool constraints, so3, trainable, symplectic;
    int order;
    const char *summary;
} PrtIntegratorInfo;

extern const PrtIntegratorInfo prt_integrators[PRT_INTEGRATOR_COUNT];

/* The row of that name, or -1. */
int prt_integrator_find(const char *name);
/* The Runge-Kutta tableau of an explicit RK row (ode.h), or NULL. */
const PrtTableau *prt_integrator_tableau(PrtIntegrator id);
/* The names of the rows with (trainable_only: only trainable ones), joined by sep, into buf. */
const char *prt_integrator_names(char *buf, int len, const char *sep, bool trainable_only);

#endif
