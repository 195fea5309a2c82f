/* pedantic.c — `physc check --pedantic` (pedantic.h): warnings about a program that is
   correct but probably not what its author meant, as Stan's pedantic mode. */
#include "pedantic.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "eval.h"
#include "lower.h"
#include "opt.h"
#include "sema_internal.h"

/* Whether expression (or statement list) n names the body array or body `name` */
static bool names_body(const Node *n, const char *name) {
    if (!n) return false;
    if ((n->kind == N_IDENT || n->kind == N_CALL) && n->name && !strcmp(n->name, name)) return true;
    for (int i = 0; i < n->list.len; i++)
        if (names_body(NODE_AT(n->list, i), name)) return true;
    for (int i = 0; i < n->list2.len; i++)
        if (names_body(NODE_AT(n->list2, i), name)) return true;
    return names_body(n->a, name) || names_body(n->b, name) || names_body(n->c, name);
}

/* A body's name as the program writes it: "bob" for bob[2] */
static void base_name(const char *body, char *out, size_t len) {
    const char *bracket = strchr(body, '[');
    snprintf(out, len, "%.*s", (int)(bracket ? bracket - body : (long)strlen(body)), body);
}

/* A body no potential, constraint or force touches moves in a straight line, whatever is
   learned about the others */
static void untouched_bodies(const System *sys, Diags *d) {
    for (int b = 0; b < sys->nbodies; b++) {
        bool touched = false;
        char name[256];
        base_name(sys->bodies[b].name, name, sizeof name);
        for (int c = 0; c < sys->nconstraints && !touched; c++)
            touched = (sys->constraints[c].a.kind == PT_BODY && sys->constraints[c].a.body == b) ||
                      (sys->constraints[c].b.kind == PT_BODY && sys->constraints[c].b.body == b);
        for (int p = 0; p < sys->npotentials && !touched; p++) touched = names_body(sys->potentials[p].expr, name);
        for (int f = 0; f < sys->nforces && !touched; f++) touched = names_body(sys->forces[f], name);
        if (!touched)
            diag_warning(d, sys->bodies[b].loc, "body '%s' is touched by no potential, constraint or force: its centre moves "
                         "in a straight line at constant speed%s (pedantic)", sys->bodies[b].name,
                         sys->bodies[b].n > 0 ? " and it turns freely" : "");
    }
}

/* The value of a constant expression of the program (a number, or a constant's name), or NaN */
static double known_value(const System *sys, const Node *n) {
    if (n->kind == N_NUM) return n->num;
    if (n->kind == N_NEG && n->a) return -known_value(sys, n->a);
    if (n->kind != N_IDENT || !sys->sema) return NAN;
    Binding *b = scope_lookup(&sys->sema->globals, n->name);
    return b && b->kind == B_VAL && b->val.kind == V_NUM && b->val.known && b->val.ndim == 0 ? b->val.v[0] : NAN;
}

/* The standard library's gravity with a g far from any planet's in SI units (981: cm/s^2) */
static void gravity_magnitudes(const System *sys, const Node *n, Diags *d) {
    if (!n) return;
    if (n->kind == N_CALL && n->name && !strcmp(n->name, "uniform_gravity") && n->list.len == 3) {
        const Node *g = NODE_AT(n->list, 1);
        double v = known_value(sys, g);
        if (isfinite(v) && (fabs(v) > 100 || (v != 0 && fabs(v) < 0.1)))
            diag_warning(d, g->loc, "gravity %g: far from the 1.6 to 25 m/s^2 of the Moon to Jupiter (in cm/s^2 Earth's is "
                         "981; physc does not know units: the same unit for every length and time of the program) "
                         "(pedantic)", v);
    }
    for (int i = 0; i < n->list.len; i++) gravity_magnitudes(sys, NODE_AT(n->list, i), d);
    gravity_magnitudes(sys, n->a, d), gravity_magnitudes(sys, n->b, d), gravity_magnitudes(sys, n->c, d);
}

/* The train block's settings far from the papers' protocol (AdamW, lr 1e-3 to 3e-3, weight
   decay 1e-4). (A batch is counted in chunks for some families and in windows for others:
   not compared with the training set.) */
static void training_protocol(const System *sys, Diags *d) {
    Node *train = NULL;
    for (int i = 0; sys->sema && sys->sema->items && i < sys->sema->items->len; i++) {
        Node *n = NODE_AT(*sys->sema->items, i);
        if (n->kind == N_BLOCK && n->name && !strcmp(n->name, "train")) train = n;
    }
    Node *lr = sema_setting_node(train, "lr"), *wd = sema_setting_node(train, "weight_decay");
    const TrainSettings *t = &sys->train;
    if (lr && (t->lr > 1e-2 || t->lr < 1e-5))
        diag_warning(d, lr->loc, "lr %g: the papers train with 1e-3 to 3e-3 (AdamW); so far from them a run may diverge or "
                     "not move (pedantic)", t->lr);
    if (wd && t->weight_decay > 1e-2)
        diag_warning(d, wd->loc, "weight_decay %g: the papers use 1e-4; this much pulls the weights to 0 faster than the "
                     "data pulls them anywhere (pedantic)", t->weight_decay);
}

/* The inputs (Cartesian coordinates) output 0 of f depends on, into used[ninputs] */
static void inputs_used(const IrFn *f, bool *used) {
    bool *live = calloc((size_t)f->ninsts + 1, sizeof *live);
    if (!live) return;
    if (f->noutputs > 0 && f->outputs[0] >= 0) live[f->outputs[0]] = true;
    for (int v = f->ninsts - 1; v >= 0; v--) { /* (operands come before their users) */
        if (!live[v]) continue;
        const IrInst *in = &f->insts[v];
        if (in->op == IR_INPUT && in->imm >= 0 && in->imm < f->ninputs) used[in->imm] = true;
        if (in->op == IR_INPUT || in->op == IR_CONST || in->op == IR_PARAM) continue;
        if (in->a >= 0) live[in->a] = true;
        if (in->b >= 0) live[in->b] = true;
    }
    free(live);
}

/* A potential that names a body but, once simplified, does not depend on where it is
   (`0 * bob.pos.x`, a difference of a point with itself): the author meant another body or
   another expression */
static void independent_of_named(System *sys, Diags *d) {
    for (int p = 0; p < sys->npotentials; p++) {
        IrFn *raw = lower_potential_terms(sys, &p, 1, "pedantic"), *f = raw && !raw->too_big ? opt_simplify(raw) : NULL;
        bool *used = f ? calloc((size_t)f->ninputs + 1, sizeof *used) : NULL;
        if (used) inputs_used(f, used);
        for (int b = 0; used && b < sys->nbodies; b++) {
            const Body *body = &sys->bodies[b];
            char name[256];
            base_name(body->name, name, sizeof name);
            if (!names_body(sys->potentials[p].expr, name) || strchr(body->name, '[')) continue; /* (an array: some of it) */
            int from = body->first_coord, to = from + (body->state == STATE_SO3 ? 12 : body->npoints * sys->dim);
            bool depends = false;
            for (int i = from; i < to && i < f->ninputs; i++) depends |= used[i];
            if (!depends)
                diag_warning(d, sys->potentials[p].loc, "potential '%s' names body '%s' but does not depend on where it is "
                             "(pedantic)", sys->potentials[p].name, body->name);
        }
        free(used);
        if (f) ir_free(f);
        if (raw) ir_free(raw);
    }
}

void sema_pedantic(System *sys, Diags *d) {
    untouched_bodies(sys, d);
    independent_of_named(sys, d);
    for (int p = 0; p < sys->npotentials; p++) gravity_magnitudes(sys, sys->potentials[p].expr, d);
    training_protocol(sys, d);
}
