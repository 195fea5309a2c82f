/* sema_coords.c — the assignment blocks: coordinates (the map from generalized
   coordinates to body poses), inverse, init and force blocks. The same walk checks them
   and, given a Ctx with IR, lowers them (sema_run_block). */
#include "sema_internal.h"

typedef struct AsgBlock {
    EvalMode mode;
    bool *set_pos, *set_rot, *set_vel;
    bool *coord_set, *rate_set;
} AsgBlock;

/* Lowering: the new IR value of a state slot after `slot op= rhs`. */
static int combine(Ctx *c, int op, int old, int rhs) {
    if (op == '=') return rhs;
    IrOp o = op == '+' ? IR_ADD : op == '-' ? IR_SUB : op == '*' ? IR_MUL : IR_DIV;
    return ir_bin(c->ir, o, old, rhs);
}

/* The IR values of a value's components (constants for known numbers). */
static int *value_ids(Ctx *c, Val v) {
    int n = v.rows * v.cols, *out = arena_alloc(c->s->arena, sizeof(int) * (size_t)n);
    for (int i = 0; i < n; i++) out[i] = v.known ? ir_const(c->ir, v.v[i]) : v.ir[i];
    return out;
}

/* Lowering init: the first instruction of a statement whose rates are tracked (a let, or an
   assignment to a body's pos or rot), or -1. */
static int rates_begin(Ctx *c, AsgBlock *ab) {
    return c->ir && c->ls && ab->mode == EV_INIT ? c->ls->rates_begin(c) : -1;
}

/* A force block's `b.force += f` (on the momentum of a point mass or a `state so3` body, a
   dim-vector in the world frame) or `b.torque += t` (on a `state so3` body's Pi, a 3-vector in
   its frame): the forces of all blocks add up, so only += and -= are allowed. */
static void force_target(Sema *s, Ctx *c, Node *st, Body *b, int body, Val rhs) {
    const char *m = st->a->name;
    int d = s->sys->dim;
    bool torque = !strcmp(m, "torque");
    if (strcmp(m, "force") && !torque) {
        ERR_AT(st->a, st->a->loc2, "a force block adds to %s.force or %s.torque, not %s.%s", b->name, b->name, b->name, m);
        return;
    }
    if (torque ? b->state != STATE_SO3 : b->kind != BODY_POINT && b->state != STATE_SO3) {
        ERR_AT(st->a, st->a->loc2, torque ? "a torque acts on a body with `state so3`; %s has none"
                                           : "a force acts on a point mass or a body with `state so3`; %s is neither",
               b->name);
        return;
    }
    if (st->op != '+' && st->op != '-') {
        ERR_AT(st, st->loc2, "forces add up: write %s.%s += ... (or -=)", b->name, m);
        return;
    }
    int rows = torque ? 3 : d;
    if (rhs.kind != V_NUM || rhs.ndim != 1 || rhs.rows != rows) {
        ERR_AT(st, st->loc2, "cannot add %s to %s.%s, which is a %d-vector", shape_name(s, rhs), b->name, m, rows);
        return;
    }
    if (!c->ir || !c->ls) return;
    int *ids = value_ids(c, rhs), *slot = torque ? c->ls->torque + body * 3 : c->ls->force + body * d;
    for (int k = 0; k < rows; k++) slot[k] = combine(c, st->op, slot[k], ids[k]);
}

/* The target of an assignment without its index and prime: `theta`, `theta[2]`, `theta'`
   and `theta[2]'` name generalized coordinates (base: the identifier theta); any other base
   is a body's member or not assignable. */
typedef struct AsgTarget {
    Node *base;
    Node *idx_node; /* theta[k] of a coordinate vector: the index node (base is theta), or NULL */
    bool prime;     /* a rate, theta' */
} AsgTarget;

static AsgTarget asg_target(Ctx *c, Node *t) {
    AsgTarget tg = {.prime = t->kind == N_PRIME};
    tg.base = tg.prime ? t->a : t;
    if (tg.base->kind == N_INDEX && tg.base->a->kind == N_IDENT) {
        Binding *bnd = scope_lookup(c->scope, tg.base->a->name);
        if (bnd && bnd->kind == B_COORD) {
            tg.idx_node = tg.base;
            tg.base = tg.base->a;
        }
    }
    if (tg.base->kind == N_PRIME && !tg.prime) { /* theta[2]' parses as (theta[2])' */
        tg.prime = true;
        tg.base = tg.base->a;
    }
    return tg;
}

/* IDENT [ "[" expr "]" ]: which generalized coordinates the target names, the first's index
   and their count (an index: the one it picks, a constant in the vector's range) */
static bool coord_range(Sema *s, Ctx *c, const AsgTarget *tg, const Binding *bnd, int *first, int *count) {
    Node *idx_node = tg->idx_node;
    *count = bnd->hi > 0 ? bnd->hi - bnd->lo + 1 : 1;
    *first = bnd->coord;
    if (!idx_node) return true;
    if (bnd->hi == 0) {
        ERR_AT(idx_node, idx_node->loc, "'%s' is a single coordinate and takes no index", tg->base->name);
        return false;
    }
    Ctx cc = *c;
    cc.mode = EV_CONST;
    long index = 0;
    if (idx_node->list.len != 1 ||
        !val_int(c, NODE_AT(idx_node->list, 0), eval(&cc, NODE_AT(idx_node->list, 0)), &index, "an index"))
        return false;
    if (index < bnd->lo || index > bnd->hi) {
        ERR_AT(idx_node, NODE_AT(idx_node->list, 0)->loc, "index %ld is out of range: %s has indices %d..%d", index,
               tg->base->name, bnd->lo, bnd->hi);
        return false;
    }
    *first += (int)(index - bnd->lo);
    *count = 1;
    return true;
}

/* IDENT [ "[" expr "]" ] [ "'" ] ( "=" | ... ) expr: generalized coordinates (inverse, init)
   or their rates (init), a scalar per coordinate or a vector for several; an update only
   after an '=' */
static void assign_coord(Sema *s, Ctx *c, Node *st, AsgBlock *ab, const AsgTarget *tg, Val rhs) {
    Node *t = st->a, *base = tg->base;
    bool prime = tg->prime;
    Binding *bnd = scope_lookup(c->scope, base->name);
    if (!bnd || bnd->kind != B_COORD) {
        ERR_AT(t, t->loc, "cannot assign to '%s'%s", base->name,
               bnd ? "" : ": it is not a generalized coordinate (use let to name a value)");
        return;
    }
    if (ab->mode == EV_COORDS) {
        ERR_AT(t, t->loc, "the coordinate map reads generalized coordinates; assign body poses (b.pos, b.rot)");
        return;
    }
    if (prime && ab->mode != EV_INIT) {
        ERR_AT(t, t->loc, "rates are only assigned in an init block");
        return;
    }
    int first, count;
    if (!coord_range(s, c, tg, bnd, &first, &count)) return;
    bool want_vec = count > 1 || (bnd->hi > 0 && !tg->idx_node);
    if (rhs.kind != V_NUM || (want_vec ? (rhs.ndim != 1 || rhs.rows != count) : rhs.ndim != 0)) {
        ERR_AT(st, st->loc2, "cannot assign %s to %s%s, which is %s", shape_name(s, rhs), base->name, prime ? "'" : "",
               want_vec ? arena_printf(s->arena, "a %d-vector", count) : "a scalar");
        return;
    }
    bool *set = prime ? ab->rate_set : ab->coord_set;
    if (st->op != '=')
        for (int k = 0; k < count; k++)
            if (!set[first + k]) {
                ERR_AT(st, st->loc2, "%s%s is updated before it is set (use '=' first)", base->name, prime ? "'" : "");
                return;
            }
    for (int k = 0; k < count; k++) set[first + k] = true;
    if (c->ir && c->ls) {
        int *rhs_ids = value_ids(c, rhs), *slot = prime ? c->ls->qdot : c->ls->q;
        for (int k = 0; k < count; k++) slot[first + k] = combine(c, st->op, slot[first + k], rhs_ids[k]);
    }
}

/* The checks of `b.m = rhs` outside a force block: a member this block sets (the coordinate
   map: pos, rot; init also vel, angmom, omega), that body b has, of rhs's shape; in the
   coordinate map, an update only after an '='. */
static bool member_assignable(Sema *s, Node *st, AsgBlock *ab, const Body *b, int body, Val rhs) {
    Node *t = st->a;
    const char *m = t->name;
    int d = s->sys->dim;
    bool ok_member = !strcmp(m, "pos") || !strcmp(m, "rot") ||
                     (ab->mode == EV_INIT && (!strcmp(m, "vel") || !strcmp(m, "angmom") || !strcmp(m, "omega")));
    if (!ok_member || ab->mode == EV_INVERSE) {
        ERR_AT(t, t->loc2, "cannot assign %s.%s here%s", b->name, m,
               ab->mode == EV_COORDS ? " (the coordinate map sets pos and rot)"
               : ab->mode == EV_INVERSE ? " (inverse assigns generalized coordinates)"
                                        : " (init sets pos, vel, rot, angmom, omega)");
        return false;
    }
    bool is_rot = !strcmp(m, "rot");
    if (is_rot && b->kind == BODY_POINT) {
        ERR_AT(t, t->loc2, "%s is a point mass: it has no orientation", b->name);
        return false;
    }
    if ((!strcmp(m, "angmom") || !strcmp(m, "omega")) && b->state != STATE_SO3) {
        ERR_AT(t, t->loc2, "'%s' exists for bodies with `state so3` only", m);
        return false;
    }
    int rows = (!strcmp(m, "angmom") || !strcmp(m, "omega")) ? 3 : d;
    bool shape_ok = rhs.kind == V_NUM && (is_rot ? (rhs.ndim == 2 && rhs.rows == d && rhs.cols == d)
                                                  : (rhs.ndim == 1 && rhs.rows == rows));
    if (!shape_ok) {
        ERR_AT(st, st->loc2, "cannot assign %s to %s.%s, which is a %s", shape_name(s, rhs), b->name, m,
               is_rot ? arena_printf(s->arena, "%dx%d matrix", d, d) : arena_printf(s->arena, "%d-vector", rows));
        return false;
    }
    if (st->op != '=' && ab->mode == EV_COORDS && !(is_rot ? ab->set_rot : ab->set_pos)[body]) {
        ERR_AT(st, st->loc2, "%s.%s is updated before the coordinate map sets it", b->name, m);
        return false;
    }
    return true;
}

/* Lowering `b.m op= rhs`: the body's state slots get their new values (omega and angmom both
   as omega; init places the bodies by the coordinate map first). In init a pose's rate (vel,
   or rotdot) follows by the JVP of its statement, from rates_lo on. */
static void lower_member(Ctx *c, Node *st, AsgBlock *ab, const Body *b, int body, Val rhs, int rates_lo) {
    const char *m = st->a->name;
    int d = c->s->sys->dim;
    bool is_rot = !strcmp(m, "rot");
    if (ab->mode == EV_INIT && !c->ls->mapped) c->ls->apply_map(c);
    int *rhs_ids = value_ids(c, rhs);
    if (!strcmp(m, "omega") || !strcmp(m, "angmom")) { /* stored as omega; angmom = I omega */
        int *om = body_omega(c, body);
        for (int k = 0; k < 3; k++) {
            int in = ir_const(c->ir, body_inertia(b, k));
            int old = !strcmp(m, "omega") ? om[k] : ir_bin(c->ir, IR_MUL, in, om[k]);
            int nv = combine(c, st->op, old, rhs_ids[k]);
            om[k] = !strcmp(m, "omega") ? nv : ir_bin(c->ir, IR_DIV, nv, in);
        }
        return;
    }
    int *slot = is_rot ? c->ls->rot + body * d * d : !strcmp(m, "pos") ? c->ls->pos + body * d
                                                                      : c->ls->vel + body * d;
    for (int k = 0; k < (is_rot ? d * d : d); k++) slot[k] = combine(c, st->op, slot[k], rhs_ids[k]);
    if (rates_lo >= 0) { /* the new pose moves as its expression does: vel or rotdot by its JVP */
        int *rate = is_rot ? c->ls->rotdot + body * d * d : c->ls->vel + body * d;
        c->ls->rates_end(c, rates_lo, slot, is_rot ? d * d : d, rate, false);
        if (is_rot && b->state == STATE_SO3)
            for (int k = 0; k < 3; k++) c->ls->omega[body * 3 + k] = -1; /* now R^T R' */
    }
}

/* postfix "." IDENT ( "=" | ... ) expr: a body's member (a force block: force_target; else
   member_assignable), marked as set, and lowered */
static void assign_member(Sema *s, Ctx *c, Node *st, AsgBlock *ab, Val rhs, int rates_lo) {
    Node *t = st->a;
    Ctx cc = *c;
    cc.mode = EV_INIT; /* evaluate the body reference only */
    Val bv = eval(&cc, t->a);
    if (bv.kind == V_ERR) return;
    if (bv.kind != V_BODY) {
        ERR_AT(t, t->loc, "cannot assign to a member of %s", shape_name(s, bv));
        return;
    }
    Body *b = &s->sys->bodies[bv.body];
    const char *m = t->name;
    if (ab->mode == EV_FORCE) {
        force_target(s, c, st, b, bv.body, rhs);
        return;
    }
    if (!member_assignable(s, st, ab, b, bv.body, rhs)) return;
    if (!strcmp(m, "rot")) ab->set_rot[bv.body] = true;
    else if (!strcmp(m, "pos")) ab->set_pos[bv.body] = true;
    else if (!strcmp(m, "vel")) ab->set_vel[bv.body] = true;
    if (c->ir && c->ls) lower_member(c, st, ab, b, bv.body, rhs, rates_lo);
}

/* asg_stmt = postfix ( "=" | "+=" | "-=" | "*=" | "/=" ) expr: the value (random draws in
   init only), then its target: generalized coordinates or a body's member */
static void assign_target(Sema *s, Ctx *c, Node *st, AsgBlock *ab) {
    Node *t = st->a;
    bool pose = t->kind == N_MEMBER && (!strcmp(t->name, "pos") || !strcmp(t->name, "rot"));
    int rates_lo = pose ? rates_begin(c, ab) : -1;
    Val rhs = eval(c, st->b);
    if (rhs.kind == V_ERR) return;
    if (rhs.random && ab->mode != EV_INIT) {
        ERR_AT(st->b, st->b->loc, "random draws are only allowed in an init block");
        return;
    }
    AsgTarget tg = asg_target(c, t);
    if (tg.base->kind == N_IDENT) assign_coord(s, c, st, ab, &tg, rhs);
    else if (tg.prime) ERR_AT(t, t->loc, "only generalized coordinates have rates (')");
    else if (t->kind == N_MEMBER) assign_member(s, c, st, ab, rhs, rates_lo);
    else ERR_AT(t, t->loc, "cannot assign to this expression");
}

/* asg_list = { [ asg_stmt ] term }, asg_stmt also "let" IDENT "=" expr
   | "for" IDENT "in" expr ".." expr "{" asg_list "}" */
static void asg_stmts(Sema *s, Ctx *c, PtrVec *list, AsgBlock *ab) {
    for (int i = 0; i < list->len && !s->d->stopped; i++) {
        Node *st = NODE_AT(*list, i);
        if (st->kind == N_LET) {
            int rates_lo = rates_begin(c, ab);
            Val v = eval(c, st->a);
            if (v.kind != V_ERR && v.random && ab->mode != EV_INIT)
                ERR_AT(st->a, st->a->loc, "random draws are only allowed in an init block");
            if (rates_lo >= 0 && v.kind == V_NUM && !v.known) { /* its rate, for statements that read it */
                int n = v.rows * v.cols, *tan = arena_alloc(s->arena, sizeof(int) * (size_t)n);
                c->ls->rates_end(c, rates_lo, v.ir, n, tan, true);
            }
            Binding *b = scope_bind(s, c->scope, st->name, B_VAL, st);
            b->val = v;
        } else if (st->kind == N_FOR) {
            Ctx cc = *c;
            cc.mode = EV_CONST;
            long lo, hi;
            if (!val_int(c, st->a, eval(&cc, st->a), &lo, "a range bound") ||
                !val_int(c, st->b, eval(&cc, st->b), &hi, "a range bound"))
                continue;
            if (hi - lo > MAX_BODIES) {
                ERR_AT(st, st->loc, "for loop over %ld values is too long", hi - lo + 1);
                continue;
            }
            for (long k = lo; k <= hi && sema_step(s, st->loc); k++) {
                Scope local = {NULL, c->scope};
                Binding *iv = scope_bind(s, &local, st->name, B_VAL, st);
                iv->val = val_scalar(s, (double)k);
                Ctx inner = *c;
                inner.scope = &local;
                asg_stmts(s, &inner, &st->list2, ab);
            }
        } else {
            assign_target(s, c, st, ab);
        }
    }
}

/* "{" asg_list "}" of one mode (lowering runs a block of a checked program again) */
void sema_run_block(Sema *s, Ctx *c, PtrVec *stmts, EvalMode mode) {
    int nb = s->sys->nbodies, nq = s->sys->coords.count;
    AsgBlock ab = {.mode = mode};
    ab.set_pos = arena_alloc(s->arena, (size_t)nb + 1);
    ab.set_rot = arena_alloc(s->arena, (size_t)nb + 1);
    ab.set_vel = arena_alloc(s->arena, (size_t)nb + 1);
    ab.coord_set = arena_alloc(s->arena, (size_t)nq + 1);
    ab.rate_set = arena_alloc(s->arena, (size_t)nq + 1);
    Ctx inner = *c;
    inner.mode = mode;
    inner.placed_pos = ab.set_pos;
    inner.placed_rot = ab.set_rot;
    Scope *local = arena_alloc(s->arena, sizeof *local);
    local->parent = s->coords_scope ? s->coords_scope : &s->system_scope;
    inner.scope = local;
    asg_stmts(s, &inner, stmts, &ab);
}

/* "force" IDENT "{" asg_list "}": the force blocks, checked as assignment blocks of
   EV_FORCE (force_target); the system's forces are the Force kernel (lower.c), which the
   equations of motion add to P'. */
void sema_check_forces(Sema *s, SysBuild *sb) {
    System *sys = s->sys;
    sys->nforces = sb->forces.len;
    sys->forces = arena_alloc(s->arena, sizeof(Node *) * (size_t)(sys->nforces + 1));
    for (int i = 0; i < sys->nforces; i++) {
        Node *n = sb->forces.items[i];
        sys->forces[i] = n;
        for (int j = 0; j < i; j++)
            if (!strcmp(sys->forces[j]->name, n->name)) {
                ERR_AT(n, n->loc2, "force '%s' is already defined", n->name);
                diag_note(s->d, sys->forces[j]->loc, "the first one");
            }
        if (i == 0 && (sys->nconstraints > 0 || sys->rigidity_equations > 0)) {
            ERR_AT(n, n->loc, "force blocks need a system without constraints (point masses and `state so3` bodies) so far");
            return;
        }
        Ctx c = {.s = s, .scope = &s->system_scope, .mode = EV_FORCE};
        sema_run_block(s, &c, &n->list2, EV_FORCE);
    }
}

/* coordinates = "coordinates" ( ident_list | IDENT "[" expr ".." expr "]" ) "{" asg_list "}",
   "inverse" "{" asg_list "}" and "init" "{" asg_list "}" */
void sema_check_coords(Sema *s, Scope *sys_scope, SysBuild *sb) {
    System *sys = s->sys;
    GenCoords *gc = &sys->coords;
    int nb = sys->nbodies;
    Scope *cs = arena_alloc(s->arena, sizeof *cs);
    cs->parent = sys_scope;
    s->coords_scope = cs;
    Node *n = sb->coords;
    if (n) {
        gc->present = true;
        gc->decl = n;
        if (n->name) { /* theta[lo..hi] */
            Ctx c = {.s = s, .scope = sys_scope, .mode = EV_CONST};
            long lo, hi;
            if (!val_int(&c, n->a, eval(&c, n->a), &lo, "a range bound") || !val_int(&c, n->b, eval(&c, n->b), &hi, "a range bound"))
                return;
            if (hi < lo || hi - lo >= 10000) {
                ERR_AT(n, n->loc2, "generalized coordinates %s need an index range like 1..N, not %ld..%ld", n->name, lo, hi);
                return;
            }
            if (!sema_check_new_name(s, cs, n->name, n, n->loc2)) return;
            Binding *b = scope_bind(s, cs, n->name, B_COORD, n);
            b->lo = (int)lo;
            b->hi = (int)hi;
            gc->count = (int)(hi - lo + 1);
            gc->array_name = n->name;
            gc->array_lo = (int)lo;
            gc->names = arena_alloc(s->arena, sizeof(char *) * (size_t)gc->count);
            for (int i = 0; i < gc->count; i++) gc->names[i] = arena_printf(s->arena, "%s[%ld]", n->name, lo + i);
        } else {
            gc->count = n->list.len;
            gc->names = arena_alloc(s->arena, sizeof(char *) * (size_t)gc->count);
            for (int i = 0; i < n->list.len; i++) {
                Node *id = NODE_AT(n->list, i);
                gc->names[i] = id->name;
                if (!sema_check_new_name(s, cs, id->name, id, id->loc)) continue;
                Binding *b = scope_bind(s, cs, id->name, B_COORD, id);
                b->coord = i;
            }
        }
        AsgBlock ab = {.mode = EV_COORDS};
        ab.set_pos = arena_alloc(s->arena, (size_t)nb + 1);
        ab.set_rot = arena_alloc(s->arena, (size_t)nb + 1);
        ab.set_vel = arena_alloc(s->arena, (size_t)nb + 1);
        ab.coord_set = arena_alloc(s->arena, (size_t)gc->count + 1);
        ab.rate_set = arena_alloc(s->arena, (size_t)gc->count + 1);
        Scope *local = arena_alloc(s->arena, sizeof *local);
        local->parent = cs;
        Ctx c = {.s = s, .scope = local, .mode = EV_COORDS, .placed_pos = ab.set_pos, .placed_rot = ab.set_rot};
        int errs = s->d->nerrors;
        asg_stmts(s, &c, &n->list2, &ab);
        if (s->d->nerrors == errs)
            for (int i = 0; i < nb; i++) {
                Body *b = &sys->bodies[i];
                if (!ab.set_pos[i]) {
                    ERR_AT(n, n->loc, "the coordinate map does not place %s: assign %s.pos", b->name, b->name);
                    break;
                }
                if (b->kind == BODY_RIGID && !ab.set_rot[i]) {
                    ERR_AT(n, n->loc, "the coordinate map does not orient %s: assign %s.rot", b->name, b->name);
                    break;
                }
            }
        int dof = system_dof(sys);
        if (s->d->nerrors == errs && gc->count != dof)
            diag_warning(s->d, n->loc, "%d generalized coordinate%s for a system with %d degree%s of freedom", gc->count,
                         gc->count == 1 ? "" : "s", dof, dof == 1 ? "" : "s");
    }
    if (sb->inverse) {
        if (!n) {
            ERR_AT(sb->inverse, sb->inverse->loc, "an inverse map needs a coordinates block");
        } else {
            gc->inverse = sb->inverse;
            AsgBlock ab = {.mode = EV_INVERSE};
            ab.set_pos = arena_alloc(s->arena, (size_t)nb + 1);
            ab.set_rot = arena_alloc(s->arena, (size_t)nb + 1);
            ab.set_vel = arena_alloc(s->arena, (size_t)nb + 1);
            ab.coord_set = arena_alloc(s->arena, (size_t)gc->count + 1);
            ab.rate_set = arena_alloc(s->arena, (size_t)gc->count + 1);
            Scope *local = arena_alloc(s->arena, sizeof *local);
            local->parent = cs;
            Ctx c = {.s = s, .scope = local, .mode = EV_INVERSE};
            int errs = s->d->nerrors;
            asg_stmts(s, &c, &sb->inverse->list2, &ab);
            for (int i = 0; i < gc->count && s->d->nerrors == errs; i++)
                if (!ab.coord_set[i]) ERR_AT(sb->inverse, sb->inverse->loc, "the inverse map does not set %s", gc->names[i]);
        }
    }
    if (sb->init) {
        sys->init = sb->init;
        Loc at = sb->init->loc;
        sys->init_at = arena_printf(s->arena, "%s:%d:%d", s->d->files[at.file]->path, at.first_line, at.first_column);
        AsgBlock ab = {.mode = EV_INIT};
        ab.set_pos = arena_alloc(s->arena, (size_t)nb + 1);
        ab.set_rot = arena_alloc(s->arena, (size_t)nb + 1);
        ab.set_vel = arena_alloc(s->arena, (size_t)nb + 1);
        ab.coord_set = arena_alloc(s->arena, (size_t)gc->count + 1);
        ab.rate_set = arena_alloc(s->arena, (size_t)gc->count + 1);
        Scope *local = arena_alloc(s->arena, sizeof *local);
        local->parent = cs;
        Ctx c = {.s = s, .scope = local, .mode = EV_INIT};
        int errs = s->d->nerrors;
        asg_stmts(s, &c, &sb->init->list2, &ab);
        if (s->d->nerrors == errs) {
            if (n) {
                for (int i = 0; i < gc->count; i++)
                    if (!ab.coord_set[i]) {
                        ERR_AT(sb->init, sb->init->loc, "init does not sample generalized coordinate %s", gc->names[i]);
                        break;
                    }
            } else {
                for (int i = 0; i < nb; i++)
                    if (!ab.set_pos[i]) {
                        ERR_AT(sb->init, sb->init->loc,
                               "init does not set %s.pos (and there is no coordinates block to place it)", sys->bodies[i].name);
                        break;
                    }
            }
        }
    }
}
