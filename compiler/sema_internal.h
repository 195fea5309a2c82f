/* sema_internal.h — what the files of the checker share: the Sema state and Ctx come
   from eval.h; here are the limits, the error macro, what a system block collects, and
   the functions one file calls in another. Sections are named after the file that defines
   them. Not for the rest of the compiler: sema.h is its interface. */
#ifndef PHYSC_SEMA_INTERNAL_H
#define PHYSC_SEMA_INTERNAL_H
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"
#include "lower.h"
#include "parse.h"
#include "eval.h"
#include "rank.h"
#include "settings.h"
#include "integrators/integrators.h"
#include "models/model.h"

enum { MAX_BODIES = 10000, MAX_IMPORT_DEPTH = 32 };

#define ERR_AT(node, loc, ...) sema_error_once(s, (node), (loc), __VA_ARGS__)
#define COUNT(array) ((int)(sizeof(array) / sizeof((array)[0])))

/* the steps a train block or a model may name (runtime/integrators/integrators.h, and liet2's) */
#define INTEGRATOR_WORDS "rk4|rk4_38|euler|symplectic_euler|leapfrog|rattle|dopri5|discrete_gradient|liet2|lie_rk2|lie_rk4|verlet"

/* The constraints of a system so far, and a hash table of them (indices + 1, 0: empty slot)
   by kind and unordered pair of points, for the check that one does not repeat another:
   comparing each with all before it was quadratic (a 10,000-link chain's check took
   seconds). */
typedef struct ConstraintSet {
    PtrVec list;
    int *slot;
    int cap; /* a power of two, at least twice the constraints */
} ConstraintSet;

/* What the statements of a system block collect (sema_system_stmts) for the checks after
   them. */
typedef struct SysBuild {
    PtrVec bodies, potentials, forces;
    ConstraintSet constraints;
    Node *coords, *inverse, *init;
} SysBuild;

/* sema.c: the whole program, loading files and imports, declarations */
char *sema_dir_of(Arena *a, const char *path);
bool sema_check_new_name(Sema *s, Scope *scope, const char *name, Node *n, Loc loc);
void sema_declare_value(Sema *s, Scope *scope, Node *n, const SemaOptions *opt);

/* sema_bodies.c: bodies, constraints, the system block */
void sema_system_stmts(Sema *s, Scope *scope, PtrVec *list, SysBuild *sb, const SemaOptions *opt, int depth);
void sema_finish_layout(Sema *s, SysBuild *sb);
void sema_check_overconstrained(Sema *s, SysBuild *sb);

/* sema_coords.c: coordinates, inverse, init and force blocks (assignment blocks) */
void sema_check_coords(Sema *s, Scope *sys_scope, SysBuild *sb);
void sema_check_forces(Sema *s, SysBuild *sb);

/* sema_models.c: learned terms and models */
void sema_check_learned(Sema *s, Scope *scope, Node *n, PtrVec *out);
void sema_check_model(Sema *s, Scope *scope, Node *n, PtrVec *out);
void sema_check_model_defaults(Sema *s, Node *train);

/* sema_settings.c: the data, train and eval blocks */
void sema_default_settings(System *sys);
Node *sema_setting_node(Node *block, const char *key);
void sema_settings_block(Sema *s, Node *n, int k);
void sema_finish_settings(Sema *s, Node *const blocks[3], const char *path);

#endif
