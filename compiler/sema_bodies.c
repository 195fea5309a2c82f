/* sema_bodies.c — the statements of a system block: bodies and their coordinate layout,
   world points (anchors), constraints and potentials; then the layout of the state and
   the check that no body is constrained more than it can move. */
#include "sema_internal.h"

/* ---------- bodies ---------- */

typedef struct BodyProps {
    double mass;
    Node *moments, *inertia;
    const char *state;
} BodyProps;

static const SetSpec body_specs[] = {
    {"mass", S_NUM, offsetof(BodyProps, mass), SET_POSITIVE, 1e300, NULL, 0, 0},
    {"moments", S_NODE, offsetof(BodyProps, moments), 0, 0, NULL, 0, 0},
    {"inertia", S_NODE, offsetof(BodyProps, inertia), 0, 0, NULL, 0, 0},
    {"state", S_WORD, offsetof(BodyProps, state), 0, 0, "points|so3", 0, 0},
};

static bool const_vector(Sema *s, Scope *scope, Node *setting, int n, double *out, const char *what) {
    Node *vn = NODE_AT(setting->list, 0);
    if (setting->list.len != 1) {
        ERR_AT(vn, setting->loc, "'%s' takes one vector", what);
        return false;
    }
    Ctx c = {.s = s, .scope = scope, .mode = EV_CONST};
    Val v = eval(&c, vn);
    if (v.kind == V_ERR) return false;
    if (v.kind != V_NUM || v.ndim != 1 || v.rows != n) {
        ERR_AT(vn, vn->loc, "'%s' must be a %d-vector here, not %s", what, n, shape_name(s, v));
        return false;
    }
    if (!v.known) {
        ERR_AT(vn, vn->loc, "'%s' must be known when the program is compiled", what);
        return false;
    }
    for (int i = 0; i < n; i++) out[i] = v.v[i];
    return true;
}

/* IDENT after ":" in a body declaration: "point" or "rigid1".."rigid3" (intrinsic
   dimension n, at most the system's and none on a line). True if a rigid body's kind was
   refused: its moments are then not checked, which would only cascade. */
static bool body_kind(Sema *s, Node *n, Body *b) {
    const char *kw = n->kind_word;
    int dim = s->sys->dim;
    if (!strcmp(kw, "point")) {
        b->kind = BODY_POINT;
    } else if (!strncmp(kw, "rigid", 5) && kw[5] >= '1' && kw[5] <= '3' && !kw[6]) {
        b->kind = BODY_RIGID;
        b->n = kw[5] - '0';
        if (dim == 1) { /* on a line nothing turns: a rigid body would be a point with spectators */
            ERR_AT(n, n->loc2, "a 1-D system has point bodies only: a %s body needs a system of dimension 2 or 3", kw);
            b->n = 0;
            return true;
        }
        if (b->n > dim) {
            ERR_AT(n, n->loc2, "a %s body has intrinsic dimension %d, more than the system's dimension %d", kw, b->n, dim);
            b->n = dim;
            return true;
        }
    } else {
        const char *kinds[] = {"point", "rigid1", "rigid2", "rigid3"};
        const char *near = closest_word(kw, kinds, 4);
        ERR_AT(n, n->loc2, "unknown body kind '%s'%s%s%s (kinds: point, rigid1, rigid2, rigid3)", kw,
               near ? "; did you mean '" : "", near ? near : "", near ? "'?" : "");
    }
    return false;
}

/* "point" IDENT "=" expr in a rigid body: a named point of its frame, an n-vector known when
   the program is compiled, its name new to the body (nor one of its members). nprops: how
   many properties the body has, the most points it can name. */
static void body_named_point(Sema *s, Scope *scope, Body *b, Node *p, int nprops) {
    if (b->kind == BODY_POINT) {
        ERR_AT(p, p->loc, "%s is a point mass: it has no body frame to place a point in", b->name);
        return;
    }
    if (!b->points) b->points = arena_alloc(s->arena, sizeof *b->points * (size_t)nprops);
    bool dup = false;
    for (int j = 0; j < b->npoints_named; j++)
        if (!strcmp(b->points[j].name, p->name)) dup = true;
    if (dup || !strcmp(p->name, "pos") || !strcmp(p->name, "vel") || !strcmp(p->name, "rot") || !strcmp(p->name, "mass")) {
        ERR_AT(p, p->loc2, "point name '%s' is already used in %s", p->name, b->name);
        return;
    }
    NamedPoint *np = &b->points[b->npoints_named];
    Node fake = *p;
    fake.list.len = 1;
    fake.list.items = (void **)&p->a;
    if (const_vector(s, scope, &fake, b->n, np->c, "point")) {
        np->name = p->name;
        np->loc = p->loc;
        b->npoints_named++;
    }
}

/* The body's settings (mass, moments, inertia, state) into pr; a mass is required. */
static void body_settings(Sema *s, Scope *scope, Node *n, Body *b, PtrVec *settings, BodyProps *pr) {
    int errs = s->d->nerrors;
    settings_apply(s, scope, settings, body_specs, 4, pr, "a body");
    if (pr->mass == 0 && s->d->nerrors == errs) {
        bool has_mass = false;
        for (int i = 0; i < settings->len; i++)
            if (!strcmp(NODE_AT(*settings, i)->name, "mass")) has_mass = true;
        if (!has_mass) ERR_AT(n, n->loc, "body %s needs a mass: add { mass ... }", b->name);
    }
    b->mass = pr->mass;
    if (pr->state && !strcmp(pr->state, "so3")) {
        if (b->kind != BODY_RIGID || b->n != 3 || s->sys->dim != 3)
            ERR_AT(n, n->loc2, "`state so3` (rotation-matrix state) needs a rigid3 body in a 3-D system");
        else
            b->state = STATE_SO3;
    }
}

/* "inertia" expr: a rigid3 body's principal moments of inertia, positive and obeying the
   triangle inequality, as second moments per unit mass: lambda_i = (I_j + I_k - I_i) / (2 m).
   For a body of intrinsic dimension below 3 they do not determine lambda: it gives moments. */
static void moments_from_inertia(Sema *s, Scope *scope, Node *n, Body *b, Node *inertia) {
    double I[MAX_DIM];
    if (!const_vector(s, scope, inertia, b->n, I, "inertia")) return;
    Node *vn = NODE_AT(inertia->list, 0);
    if (b->n != 3) {
        ERR_AT(inertia, vn->loc, "'inertia' needs a rigid3 body; give `moments` for %s", n->kind_word);
        return;
    }
    double tr = I[0] + I[1] + I[2];
    for (int i = 0; i < 3; i++) {
        if (!(I[i] > 0)) {
            ERR_AT(inertia, vn->loc, "moments of inertia must be positive, but I%d of %s is %g", i + 1, b->name, I[i]);
            return;
        }
        b->moments[i] = (tr / 2 - I[i]) / (b->mass > 0 ? b->mass : 1);
        if (!(b->moments[i] > 0)) {
            ERR_AT(inertia, vn->loc,
                   "moments of inertia of %s break the triangle inequality (I%d = %g >= the sum of the "
                   "other two)", b->name, i + 1, I[i]);
            return;
        }
    }
}

/* "moments" expr or "inertia" expr: a rigid body's principal second moments per unit mass
   (positive), given one way and not both; a point mass has none. */
static void body_moments(Sema *s, Scope *scope, Node *n, Body *b, const BodyProps *pr) {
    if (b->kind == BODY_POINT) {
        if (pr->moments || pr->inertia)
            ERR_AT(n, (pr->moments ? pr->moments : pr->inertia)->loc2, "%s is a point mass: it has no moments", b->name);
    } else if (pr->moments && pr->inertia) {
        ERR_AT(pr->inertia, pr->inertia->loc2, "give either 'moments' or 'inertia', not both");
    } else if (!pr->moments && !pr->inertia) {
        ERR_AT(n, n->loc, "rigid body %s needs its principal moments: add `moments [...]` (second moments per unit "
               "mass) or `inertia [...]`", b->name);
    } else if (pr->moments) {
        if (const_vector(s, scope, pr->moments, b->n, b->moments, "moments"))
            for (int i = 0; i < b->n; i++)
                if (!(b->moments[i] > 0))
                    ERR_AT(pr->moments, NODE_AT(pr->moments->list, 0)->loc,
                           "second moments must be positive, but moment %d of %s is %g", i + 1, b->name, b->moments[i]);
    } else {
        moments_from_inertia(s, scope, n, b, pr->inertia);
    }
}

/* The body joins the system's: the evaluator reads bodies through sys->bodies while the
   system is being declared. */
static void register_body(Sema *s, Body *b, PtrVec *bodies) {
    System *sys = s->sys;
    ptrvec_push(s->arena, bodies, b);
    if (bodies->len > s->bodies_cap) {
        s->bodies_cap = bodies->cap;
        Body *grown = arena_alloc(s->arena, sizeof(Body) * (size_t)s->bodies_cap);
        if (sys->nbodies) memcpy(grown, sys->bodies, sizeof(Body) * (size_t)sys->nbodies);
        sys->bodies = grown;
    }
    sys->bodies[sys->nbodies++] = *b;
}

/* one body of a body declaration, its properties `prop = setting | "point" IDENT "=" expr` */
static void add_body(Sema *s, Scope *scope, Node *n, const char *name, PtrVec *bodies) {
    Body *b = arena_alloc(s->arena, sizeof *b);
    b->name = name;
    b->loc = n->loc;
    bool bad_kind = body_kind(s, n, b);
    PtrVec settings = {0};
    for (int i = 0; i < n->list.len; i++) {
        Node *p = NODE_AT(n->list, i);
        if (p->kind == N_SETTING) ptrvec_push(s->arena, &settings, p);
        else body_named_point(s, scope, b, p, n->list.len);
    }
    BodyProps pr = {0};
    body_settings(s, scope, n, b, &settings, &pr);
    if (b->kind == BODY_POINT || (b->kind == BODY_RIGID && !bad_kind)) body_moments(s, scope, n, b, &pr);
    b->npoints = b->state == STATE_SO3 ? 0 : b->n + 1;
    register_body(s, b, bodies);
}

/* body = "body" IDENT [ "[" IDENT "in" expr ".." expr "]" ] ":" IDENT [ "{" { [ prop ] term } "}" ] */
static void declare_body(Sema *s, Scope *scope, Node *n, PtrVec *bodies) {
    if (!sema_check_new_name(s, scope, n->name, n, n->loc)) return;
    if (!n->a) {
        Binding *b = scope_bind(s, scope, n->name, B_VAL, n);
        add_body(s, scope, n, n->name, bodies);
        memset(&b->val, 0, sizeof b->val);
        b->val.kind = V_BODY;
        b->val.body = bodies->len - 1;
        return;
    }
    Ctx c = {.s = s, .scope = scope, .mode = EV_CONST};
    long lo, hi;
    if (!val_int(&c, n->a, eval(&c, n->a), &lo, "a range bound") || !val_int(&c, n->b, eval(&c, n->b), &hi, "a range bound")) {
        n->reported = true; /* its uses would only say it is not defined */
        return;
    }
    if (hi < lo) {
        ERR_AT(n, n->loc, "body array %s has an empty index range %ld..%ld", n->name, lo, hi);
        return;
    }
    if (hi - lo + 1 + bodies->len > MAX_BODIES) {
        ERR_AT(n, n->loc, "too many bodies (at most %d)", MAX_BODIES);
        return;
    }
    Binding *arr = scope_bind(s, scope, n->name, B_ARRAY, n);
    arr->array = bodies->len;
    arr->lo = (int)lo;
    arr->hi = (int)hi;
    Scope local = {NULL, scope};
    Binding *iv = scope_bind(s, &local, n->name2, B_VAL, n);
    for (long i = lo; i <= hi && sema_step(s, n->loc); i++) {
        iv->val = val_scalar(s, (double)i);
        add_body(s, &local, n, arena_printf(s->arena, "%s[%ld]", n->name, i), bodies);
    }
}

/* ---------- constraints ---------- */

static bool point_of(Sema *s, Node *n, Val v, PtKind want, PointRef *out) {
    System *sys = s->sys;
    if (v.kind == V_ERR) return false;
    if (v.kind == V_BODY) {
        if (want == PTK_DIR) {
            ERR_AT(n, n->loc, "an axis constraint needs directions such as %s.dir([0, 0, 1]), not a body",
                   sys->bodies[v.body].name);
            return false;
        }
        out->kind = PT_BODY;
        out->body = v.body;
        out->centre = true;
        return true;
    }
    if (v.kind == V_NUM && v.pt == want) {
        *out = v.ref;
        if (out->kind == PT_WORLD && v.known) memcpy(out->c, v.v, sizeof(double) * (size_t)sys->dim);
        return true;
    }
    if (v.kind == V_NUM && v.ndim == 1 && v.rows == sys->dim && v.known) {
        out->kind = PT_WORLD;
        memcpy(out->c, v.v, sizeof(double) * (size_t)sys->dim);
        return true;
    }
    if (want == PTK_DIR)
        ERR_AT(n, n->loc, "expected a direction: body.dir(u) or a constant %d-vector, not %s", sys->dim, shape_name(s, v));
    else
        ERR_AT(n, n->loc, "expected a point: a body, body.at(c), a named body point, or a constant %d-vector, not %s%s",
               sys->dim, shape_name(s, v), v.kind == V_NUM && v.ndim == 1 && v.rows == sys->dim ? " computed from positions" : "");
    return false;
}

static unsigned long ref_hash(const PointRef *r) {
    unsigned long h = 1469598103934665603UL;
    unsigned char bytes[sizeof r->c + 3 * sizeof(int)];
    int head[3] = {(int)r->kind, r->centre, r->kind == PT_BODY ? r->body : 0};
    memcpy(bytes, head, sizeof head), memcpy(bytes + sizeof head, r->c, sizeof r->c);
    for (size_t i = 0; i < sizeof bytes; i++) h = (h ^ bytes[i]) * 1099511628211UL;
    return h;
}

static unsigned long constraint_hash(const Constraint *c) {
    return (ref_hash(&c->a) + ref_hash(&c->b)) * 31 + (unsigned long)c->kind; /* (a, b) and (b, a) alike */
}

/* Constraint i of the list into the first free slot from its hash (linear probing) */
static void constraint_slot(int *slot, int cap, const PtrVec *list, int i) {
    unsigned long h = constraint_hash(list->items[i]) & (unsigned long)(cap - 1);
    while (slot[h]) h = (h + 1) & (unsigned long)(cap - 1);
    slot[h] = i + 1;
}

static void constraint_set_add(Sema *s, ConstraintSet *set, Constraint *p) {
    if (2 * (set->list.len + 1) > set->cap) { /* grow and rehash */
        int cap = set->cap ? 2 * set->cap : 64;
        int *slot = arena_alloc(s->arena, sizeof(int) * (size_t)cap);
        for (int i = 0; i < set->list.len; i++) constraint_slot(slot, cap, &set->list, i);
        set->slot = slot, set->cap = cap;
    }
    ptrvec_push(s->arena, &set->list, p);
    constraint_slot(set->slot, set->cap, &set->list, set->list.len - 1);
}

static bool same_ref(const PointRef *a, const PointRef *b) {
    if (a->kind != b->kind || a->centre != b->centre) return false;
    if (a->kind == PT_BODY && a->body != b->body) return false;
    return memcmp(a->c, b->c, sizeof a->c) == 0;
}

/* constraint = ( "link" | "tether" | "joint" | "axis" ) expr "to" expr [ "length" expr ] */
static void add_constraint(Sema *s, Scope *scope, Node *n, ConstraintSet *out) {
    System *sys = s->sys;
    Ctx c = {.s = s, .scope = scope, .mode = EV_POTENTIAL};
    ConstraintKind k = (ConstraintKind)n->op;
    const char *kname = constraint_kind_name(k);
    PtKind want = k == CK_AXIS ? PTK_DIR : PTK_POINT;
    Constraint ct = {.kind = k, .loc = n->loc};
    if (k == CK_AXIS && sys->dim == 1) { /* its d - 1 equations: none */
        ERR_AT(n, n->loc, "an axis constraint needs directions across the axis: a 1-D system has none (dim 2 or 3)");
        return;
    }
    Val va = eval(&c, n->a), vb = eval(&c, n->b);
    if (!point_of(s, n->a, va, want, &ct.a) | !point_of(s, n->b, vb, want, &ct.b)) return;
    if (ct.a.kind == PT_WORLD && ct.b.kind == PT_WORLD) {
        ERR_AT(n, n->loc, "%s between two fixed world %s constrains nothing", kname, want == PTK_DIR ? "directions" : "points");
        return;
    }
    if (ct.a.kind == PT_BODY && ct.b.kind == PT_BODY && ct.a.body == ct.b.body) {
        ERR_AT(n, n->loc, "%s connects %s to itself", kname, sys->bodies[ct.a.body].name);
        return;
    }
    if (k == CK_TETHER && !(ct.a.kind == PT_BODY && ct.b.kind == PT_WORLD)) {
        ERR_AT(n, n->b->loc, "tether ties a body point to a fixed world point: `tether BODY to POINT length L`%s",
               ct.b.kind == PT_BODY ? " (use link between two bodies)" : "");
        return;
    }
    if (k == CK_LINK && (ct.a.kind == PT_WORLD || ct.b.kind == PT_WORLD)) {
        ERR_AT(n, (ct.a.kind == PT_WORLD ? n->a : n->b)->loc, "link connects two bodies; use tether for a fixed world point");
        return;
    }
    for (int side = 0; side < 2; side++) {
        PointRef *r = side ? &ct.b : &ct.a;
        if (r->kind == PT_BODY && sys->bodies[r->body].state == STATE_SO3) {
            ERR_AT(n, (side ? n->b : n->a)->loc, "%s has `state so3`: Lie T2 bodies move freely and cannot be constrained",
                   sys->bodies[r->body].name);
            return;
        }
    }
    if (n->c) {
        if (k == CK_JOINT || k == CK_AXIS) {
            ERR_AT(n->c, n->c->loc, "a %s has no length", kname);
            return;
        }
        Ctx cc = {.s = s, .scope = scope, .mode = EV_CONST};
        Val lv = eval(&cc, n->c);
        if (lv.kind == V_ERR) return;
        if (lv.kind != V_NUM || lv.ndim != 0 || !lv.known) {
            ERR_AT(n->c, n->c->loc, "a length must be a constant number, not %s", shape_name(s, lv));
            return;
        }
        if (!(lv.v[0] > 0)) {
            ERR_AT(n->c, n->c->loc, "a length must be positive, not %g", lv.v[0]);
            return;
        }
        ct.length = lv.v[0];
        ct.length_given = true;
    }
    if (k == CK_AXIS && axis_frame_side(sys, &ct) < 0) {
        ERR_AT(n, n->loc, "an axis between two rigid1 bodies in 3-D is not supported: one side must be a world direction "
               "or a direction of a body with at least 2 axes (rigid2, rigid3), whose frame spans the directions across "
               "the axis");
        return;
    }
    /* axis: d - 1 equations, the components of one direction across the other */
    ct.equations = k == CK_LINK || k == CK_TETHER ? 1 : k == CK_AXIS ? sys->dim - 1 : sys->dim;
    ct.independent = ct.equations;
    for (unsigned long h = out->cap ? constraint_hash(&ct) & (unsigned long)(out->cap - 1) : 0; out->cap && out->slot[h];
         h = (h + 1) & (unsigned long)(out->cap - 1)) {
        Constraint *o = out->list.items[out->slot[h] - 1];
        if (o->kind == k && ((same_ref(&o->a, &ct.a) && same_ref(&o->b, &ct.b)) || (same_ref(&o->a, &ct.b) && same_ref(&o->b, &ct.a)))) {
            ERR_AT(n, n->loc, "this %s repeats an earlier one", kname);
            diag_note(s->d, o->loc, "the earlier %s", kname);
            return;
        }
    }
    Constraint *p = arena_alloc(s->arena, sizeof *p);
    *p = ct;
    constraint_set_add(s, out, p);
}

/* ---------- the system block ---------- */

/* sys_list = { [ sys_stmt ] term }: dim, decl, fn, body, anchor, constraint, potential, for, force,
   coordinates, inverse, init */
void sema_system_stmts(Sema *s, Scope *scope, PtrVec *list, SysBuild *sb, const SemaOptions *opt, int depth) {
    for (int i = 0; i < list->len && !s->d->stopped; i++) {
        Node *n = NODE_AT(*list, i);
        switch (n->kind) {
        case N_SETTING:
            if (strcmp(n->name, "dim"))
                ERR_AT(n, n->loc2, "unknown setting '%s' in a system (the only setting is 'dim')", n->name);
            else if (depth > 0)
                ERR_AT(n, n->loc2, "'dim' cannot be set inside a for loop");
            break;
        case N_CONST:
        case N_PARAM:
        case N_FN: sema_declare_value(s, scope, n, opt); break;
        case N_BODY: declare_body(s, scope, n, &sb->bodies); break;
        case N_ANCHOR: {
            if (!sema_check_new_name(s, scope, n->name, n, n->loc2)) break;
            Ctx c = {.s = s, .scope = scope, .mode = EV_CONST};
            Val v = eval(&c, n->a);
            if (v.kind == V_ERR) break;
            if (v.kind != V_NUM || v.ndim != 1 || v.rows != s->sys->dim) {
                ERR_AT(n->a, n->a->loc, "an anchor is a point of the %d-D world: a %d-vector, not %s", s->sys->dim,
                       s->sys->dim, shape_name(s, v));
                break;
            }
            v.pt = PTK_POINT;
            v.ref.kind = PT_WORLD;
            Binding *b = scope_bind(s, scope, n->name, B_VAL, n);
            b->val = v;
            break;
        }
        case N_CONSTRAINT: add_constraint(s, scope, n, &sb->constraints); break;
        case N_POTENTIAL: {
            /* potential names are their own namespace: models refer to them with `known NAME` */
            bool dup = false;
            for (int j = 0; j < sb->potentials.len && !dup; j++) {
                Potential *o = sb->potentials.items[j];
                if (!strcmp(o->name, n->name)) {
                    ERR_AT(n, n->loc2, "potential '%s' is already defined", n->name);
                    diag_note(s->d, o->loc, "the first one");
                    dup = true;
                }
            }
            if (dup) break;
            Ctx c = {.s = s, .scope = scope, .mode = EV_POTENTIAL};
            Val v = eval(&c, n->a);
            if (v.kind == V_ERR) break;
            if (v.kind != V_NUM || v.ndim != 0) {
                ERR_AT(n->a, n->a->loc, "potential '%s' must be a scalar energy, not %s", n->name, shape_name(s, v));
                break;
            }
            Potential *p = arena_alloc(s->arena, sizeof *p);
            p->name = n->name;
            p->expr = n->a;
            p->loc = n->loc;
            ptrvec_push(s->arena, &sb->potentials, p);
            break;
        }
        case N_FOR: {
            Ctx c = {.s = s, .scope = scope, .mode = EV_CONST};
            long lo, hi;
            if (!val_int(&c, n->a, eval(&c, n->a), &lo, "a range bound") ||
                !val_int(&c, n->b, eval(&c, n->b), &hi, "a range bound"))
                break;
            if (hi - lo > MAX_BODIES) {
                ERR_AT(n, n->loc, "for loop over %ld values is too long", hi - lo + 1);
                break;
            }
            for (long k = lo; k <= hi && !s->d->stopped && sema_step(s, n->loc); k++) {
                Scope local = {NULL, scope};
                Binding *iv = scope_bind(s, &local, n->name, B_VAL, n);
                iv->val = val_scalar(s, (double)k);
                sema_system_stmts(s, &local, &n->list, sb, opt, depth + 1);
                /* declarations made inside a loop body would vanish with its scope */
                for (Binding *b = local.head; b; b = b->next)
                    if (b != iv) {
                        ERR_AT(b->decl, b->decl->loc, "declarations are not allowed inside a for loop");
                        break;
                    }
            }
            break;
        }
        case N_FORCE:
            if (depth > 0) ERR_AT(n, n->loc, "'force' cannot be inside a for loop (put the loop inside it)");
            else ptrvec_push(s->arena, &sb->forces, n);
            break;
        case N_COORDS:
        case N_INVERSE:
        case N_INIT: {
            Node **slot = n->kind == N_COORDS ? &sb->coords : n->kind == N_INVERSE ? &sb->inverse : &sb->init;
            const char *what = n->kind == N_COORDS ? "coordinates" : n->kind == N_INVERSE ? "inverse" : "init";
            if (depth > 0) {
                ERR_AT(n, n->loc, "'%s' cannot be inside a for loop", what);
            } else if (*slot) {
                ERR_AT(n, n->loc, "a system has one '%s' block", what);
                diag_note(s->d, (*slot)->loc, "the first one");
            } else {
                *slot = n;
            }
            break;
        }
        default: ERR_AT(n, n->loc, "this does not belong in a system block"); break;
        }
    }
}

/* ---------- after the system block: layout and over-constraint ---------- */

/* Where each body's points, coordinates and momenta begin in the state. */
void sema_finish_layout(Sema *s, SysBuild *sb) {
    System *sys = s->sys;
    int pt = 0, coord = 0, mom = 0;
    for (int i = 0; i < sys->nbodies; i++) {
        Body *b = &sys->bodies[i];
        b->first_point = pt;
        b->first_coord = coord;
        b->first_mom = mom;
        pt += b->npoints;
        coord += b->state == STATE_SO3 ? 12 : b->npoints * sys->dim;
        mom += b->state == STATE_SO3 ? 6 : b->npoints * sys->dim;
        if (b->state == STATE_SO3) sys->nrotation_bodies++;
        else if (b->kind == BODY_RIGID) sys->rigidity_equations += (b->n + 1) * b->n / 2;
    }
    (void)sb;
    sys->npoints = pt;
    sys->ncoords = coord;
    sys->nmomenta = mom;
    sys->orthogonality_equations = 6 * sys->nrotation_bodies;
}

/* The degrees of freedom of a body's points: d each, less its rigidity's n (n + 1) / 2 */
static int body_freedom(const System *sys, const Body *b) { return b->npoints * sys->dim - (b->n + 1) * b->n / 2; }

/* The constraints of the system block against the degrees of freedom of its bodies. */
void sema_check_overconstrained(Sema *s, SysBuild *sb) {
    System *sys = s->sys;
    sys->nconstraints = sb->constraints.list.len;
    sys->constraints = arena_alloc(s->arena, sizeof(Constraint) * (size_t)(sys->nconstraints + 1));
    for (int i = 0; i < sys->nconstraints; i++) sys->constraints[i] = *(Constraint *)sb->constraints.list.items[i];
    /* a body held only to the world can lose at most its own degrees of freedom: each body's
       world constraints summed in one pass (a pass over all constraints a body was quadratic:
       a third of checking a 10,000-link chain), reported body by body at the constraint that
       goes past its degrees of freedom */
    int nb = sys->nbodies, *used = arena_alloc(s->arena, sizeof(int) * (size_t)(nb + 1)),
        *over_at = arena_alloc(s->arena, sizeof(int) * (size_t)(nb + 1));
    for (int bi = 0; bi < nb; bi++) over_at[bi] = -1;
    for (int i = 0; i < sys->nconstraints; i++) {
        Constraint *c = &sys->constraints[i];
        bool world = c->a.kind == PT_WORLD || c->b.kind == PT_WORLD;
        int body = c->a.kind == PT_BODY ? c->a.body : c->b.body;
        if (!world || body < 0 || body >= nb || over_at[body] >= 0) continue;
        const Body *b = &sys->bodies[body];
        used[body] += c->independent;
        if (used[body] > body_freedom(sys, b)) over_at[body] = i;
    }
    bool body_reported = false;
    for (int bi = 0; bi < nb; bi++) {
        if (over_at[bi] < 0) continue;
        Body *b = &sys->bodies[bi];
        diag_error(s->d, sys->constraints[over_at[bi]].loc,
                   "%s is over-constrained: its constraints to the world remove %d degrees of freedom, but it has %d",
                   b->name, used[bi], body_freedom(sys, b));
        body_reported = true;
    }
    int coords = system_coordinates(sys), indep = system_independent_constraints(sys);
    if (indep > coords && sys->nconstraints > 0 && !body_reported)
        diag_error(s->d, sys->constraints[sys->nconstraints - 1].loc,
                   "the system is over-constrained: %d independent constraint equations for %d coordinates", indep, coords);
}

const SetSpec *sema_body_specs(int *n) {
    *n = (int)(sizeof body_specs / sizeof body_specs[0]);
    return body_specs;
}
