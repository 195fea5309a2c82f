/* sema.c — checks a program and builds its System: imports, declarations, bodies and
   their coordinate layout, constraints, potentials, generalized coordinates, init,
   learned terms, models and settings. Errors are recorded and checking goes on, so one
   run reports several. */
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

/* ---------- loading files and imports ---------- */

typedef struct Program {
    PtrVec items;        /* declarations of all files, imports first */
    PtrVec loaded;       /* canonical paths already loaded */
} Program;

static char *dir_of(Arena *a, const char *path) {
    const char *slash = strrchr(path, '/');
    return slash ? arena_strndup(a, path, (size_t)(slash - path)) : arena_strdup(a, ".");
}

static bool already_loaded(Program *pr, const char *canon) {
    for (int i = 0; i < pr->loaded.len; i++)
        if (!strcmp(pr->loaded.items[i], canon)) return true;
    return false;
}

static int load_file(Sema *s, Program *pr, const char *path, Node *import_node, const SemaOptions *opt, int depth);

/* An import names a module of the stdlib (letters, digits, '_') or a .phys file by a path
   relative to the importing file's folder: not a file anywhere on the machine. */
static bool import_name_ok(Sema *s, Node *it, const char *name, bool is_path) {
    size_t len = strlen(name);
    if (is_path && name[0] == '/')
        ERR_AT(it, it->loc, "cannot import '%s': an import path is relative to the importing file's folder, not absolute",
               name);
    else if (is_path && (len < 6 || strcmp(name + len - 5, ".phys")))
        ERR_AT(it, it->loc, "cannot import '%s': an import names a stdlib module or a .phys file", name);
    else if (!is_path && strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != len)
        ERR_AT(it, it->loc, "cannot import '%s': a stdlib module's name is letters, digits and '_' (a file: \"./%s.phys\")",
               name, name);
    else return true;
    return false;
}

/* Where a file is not .phys text (a NUL byte or a control character other than tab, CR and
   LF), its line; 0 if it is text. */
static int binary_line(const SrcFile *f) {
    int line = 1;
    for (size_t i = 0; i < f->len; i++) {
        unsigned char ch = (unsigned char)f->text[i];
        if (ch == '\n') line++;
        else if ((ch < 0x20 && ch != '\t' && ch != '\r') || ch == 0x7f) return line;
    }
    return 0;
}

static void load_imports(Sema *s, Program *pr, Node *file, const char *path, const SemaOptions *opt, int depth) {
    for (int i = 0; i < file->list.len; i++) {
        Node *it = NODE_AT(file->list, i);
        if (it->kind != N_IMPORT) continue;
        const char *name = it->name;
        if (!*name) {
            ERR_AT(it, it->loc, "empty import name");
            continue;
        }
        bool is_path = strchr(name, '/') || strstr(name, ".phys");
        if (!import_name_ok(s, it, name, is_path)) continue;
        const char *target = is_path ? (name[0] == '/' ? name : arena_printf(s->arena, "%s/%s", dir_of(s->arena, path), name))
                                     : arena_printf(s->arena, "%s/%s.phys", opt->stdlib_dir, name);
        if (depth >= MAX_IMPORT_DEPTH) {
            ERR_AT(it, it->loc, "imports nest more than %d deep", MAX_IMPORT_DEPTH);
            continue;
        }
        load_file(s, pr, target, it, opt, depth + 1);
    }
}

/* Returns the file's index in Diags, or -1. Imported files may only declare constants,
   parameters and functions (a library), never a system or settings. */
static void add_file_items(Sema *s, Program *pr, int f, const char *path, Node *import_node, const SemaOptions *opt,
                           int depth) {
    Node *file = parse_file(s->arena, s->d, f);
    if (!file) return;
    load_imports(s, pr, file, path, opt, depth);
    for (int i = 0; i < file->list.len; i++) {
        Node *it = NODE_AT(file->list, i);
        if (it->kind == N_IMPORT) continue;
        if (import_node && it->kind != N_CONST && it->kind != N_PARAM && it->kind != N_FN) {
            ERR_AT(it, it->loc, "an imported file may only declare constants, parameters and functions");
            continue;
        }
        ptrvec_push(s->arena, &pr->items, it);
    }
}

static int load_file(Sema *s, Program *pr, const char *path, Node *import_node, const SemaOptions *opt, int depth) {
    char *canon = realpath(path, NULL);
    if (canon) {
        bool seen = already_loaded(pr, canon);
        if (!seen) ptrvec_push(s->arena, &pr->loaded, arena_strdup(s->arena, canon));
        free(canon);
        if (seen) return -1; /* imported twice, or an import cycle: once is enough */
    }
    const char *err = NULL;
    int f = src_load(s->d, path, &err);
    if (f < 0) {
        if (import_node)
            ERR_AT(import_node, import_node->loc, "cannot import '%s': %s: %s", import_node->name, path, err);
        else
            diag_plain_error(s->d, "cannot read '%s': %s", path, err);
        return -1;
    }
    int bin = import_node ? binary_line(s->d->files[f]) : 0;
    if (bin) { /* one error, not one per line of whatever it is */
        ERR_AT(import_node, import_node->loc, "cannot import '%s': %s is not .phys text (binary data on its line %d)",
               import_node->name, path, bin);
        return -1;
    }
    add_file_items(s, pr, f, path, import_node, opt, depth);
    return f;
}

/* ---------- declarations ---------- */

static Loc decl_loc(Node *n) { return n->kind == N_BODY ? n->loc : n->loc2; }

static bool check_new_name(Sema *s, Scope *scope, const char *name, Node *n, Loc loc) {
    Binding *prev = NULL;
    for (Binding *b = scope->head; b; b = b->next)
        if (!strcmp(b->name, name)) prev = b;
    if (!prev && scope->parent) {
        Binding *outer = scope_lookup(scope->parent, name);
        if (outer && outer->kind != B_VAL) prev = outer; /* functions stay unique across scopes */
        if (outer && outer->kind == B_VAL && outer->decl && outer->decl->kind != N_FOR && outer->decl->kind != N_SUM)
            prev = outer;
    }
    if (!prev) {
        if (!strcmp(name, "pi") || !strcmp(name, "dim") || !strcmp(name, "origin")) {
            ERR_AT(n, loc, "'%s' is a built-in name and cannot be redefined", name);
            return false;
        }
        return true;
    }
    ERR_AT(n, loc, "'%s' is already defined", name);
    if (prev->decl) diag_note(s->d, decl_loc(prev->decl), "'%s' was defined here", name);
    return false;
}

static void declare_value(Sema *s, Scope *scope, Node *n, const SemaOptions *opt) {
    if (!check_new_name(s, scope, n->name, n, n->loc2)) return;
    if (n->kind == N_FN) {
        if (is_builtin_fn(n->name)) {
            ERR_AT(n, n->loc2, "'%s' is a built-in function and cannot be redefined", n->name);
            return;
        }
        for (int i = 0; i < n->list.len; i++)
            for (int j = 0; j < i; j++)
                if (!strcmp(NODE_AT(n->list, i)->name, NODE_AT(n->list, j)->name))
                    ERR_AT(NODE_AT(n->list, i), NODE_AT(n->list, i)->loc, "parameter '%s' appears twice",
                           NODE_AT(n->list, i)->name);
        int nret = 0;
        for (int i = 0; i < n->list2.len; i++) {
            Node *st = NODE_AT(n->list2, i);
            if (st->kind == N_RETURN) {
                nret++;
                if (i != n->list2.len - 1) ERR_AT(st, st->loc, "'return' must be the last statement of a function");
            }
        }
        if (!n->a && nret == 0) ERR_AT(n, n->loc2, "function '%s' has no return statement", n->name);
        Binding *b = scope_bind(s, scope, n->name, B_FN, n);
        b->fn = n;
        return;
    }
    Ctx c = {.s = s, .scope = scope, .mode = EV_CONST};
    Val v = eval(&c, n->a);
    if (v.kind == V_NUM && !v.known) {
        ERR_AT(n->a, n->a->loc, "the value of %s '%s' must be known when the program is compiled",
               n->kind == N_PARAM ? "parameter" : "constant", n->name);
        v = val_err();
    }
    bool from_set = false;
    if (n->kind == N_PARAM && opt) {
        for (int i = 0; i < opt->nset; i++)
            if (!strcmp(opt->set_names[i], n->name)) {
                if (v.kind == V_NUM && v.ndim != 0)
                    ERR_AT(n, n->loc2, "--set %s: parameter '%s' is %s, not a scalar", n->name, n->name, shape_name(s, v));
                else
                    v = val_scalar(s, opt->set_values[i]), from_set = true;
            }
    }
    Binding *b = scope_bind(s, scope, n->name, B_VAL, n);
    b->val = v;
    b->from_set = from_set;
}

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

static void add_body(Sema *s, Scope *scope, Node *n, const char *name, PtrVec *bodies) {
    System *sys = s->sys;
    const char *kw = n->kind_word;
    Body *b = arena_alloc(s->arena, sizeof *b);
    b->name = name;
    b->loc = n->loc;
    bool bad_kind = false; /* reported already: do not cascade into the moments */
    if (!strcmp(kw, "point")) {
        b->kind = BODY_POINT;
    } else if (!strncmp(kw, "rigid", 5) && kw[5] >= '1' && kw[5] <= '3' && !kw[6]) {
        b->kind = BODY_RIGID;
        b->n = kw[5] - '0';
        if (sys->dim == 1) { /* on a line nothing turns: a rigid body would be a point with spectators */
            ERR_AT(n, n->loc2, "a 1-D system has point bodies only: a %s body needs a system of dimension 2 or 3", kw);
            b->n = 0;
            bad_kind = true;
        } else if (b->n > sys->dim) {
            ERR_AT(n, n->loc2, "a %s body has intrinsic dimension %d, more than the system's dimension %d", kw, b->n,
                   sys->dim);
            b->n = sys->dim;
            bad_kind = true;
        }
    } else {
        const char *kinds[] = {"point", "rigid1", "rigid2", "rigid3"};
        const char *near = closest_word(kw, kinds, 4);
        ERR_AT(n, n->loc2, "unknown body kind '%s'%s%s%s (kinds: point, rigid1, rigid2, rigid3)", kw,
               near ? "; did you mean '" : "", near ? near : "", near ? "'?" : "");
    }
    BodyProps pr = {0};
    PtrVec settings = {0};
    for (int i = 0; i < n->list.len; i++) {
        Node *p = NODE_AT(n->list, i);
        if (p->kind == N_SETTING) {
            ptrvec_push(s->arena, &settings, p);
            continue;
        }
        /* point NAME = c */
        if (b->kind == BODY_POINT) {
            ERR_AT(p, p->loc, "%s is a point mass: it has no body frame to place a point in", name);
            continue;
        }
        if (!b->points) b->points = arena_alloc(s->arena, sizeof *b->points * (size_t)n->list.len);
        bool dup = false;
        for (int j = 0; j < b->npoints_named; j++)
            if (!strcmp(b->points[j].name, p->name)) dup = true;
        if (dup || !strcmp(p->name, "pos") || !strcmp(p->name, "vel") || !strcmp(p->name, "rot") ||
            !strcmp(p->name, "mass")) {
            ERR_AT(p, p->loc2, "point name '%s' is already used in %s", p->name, name);
            continue;
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
    int errs = s->d->nerrors;
    settings_apply(s, scope, &settings, body_specs, 4, &pr, "a body");
    if (pr.mass == 0 && s->d->nerrors == errs) {
        bool has_mass = false;
        for (int i = 0; i < settings.len; i++)
            if (!strcmp(NODE_AT(settings, i)->name, "mass")) has_mass = true;
        if (!has_mass) ERR_AT(n, n->loc, "body %s needs a mass: add { mass ... }", name);
    }
    b->mass = pr.mass;
    if (pr.state && !strcmp(pr.state, "so3")) {
        if (b->kind != BODY_RIGID || b->n != 3 || sys->dim != 3)
            ERR_AT(n, n->loc2, "`state so3` (rotation-matrix state) needs a rigid3 body in a 3-D system");
        else
            b->state = STATE_SO3;
    }
    if (b->kind == BODY_POINT) {
        if (pr.moments || pr.inertia)
            ERR_AT(n, (pr.moments ? pr.moments : pr.inertia)->loc2, "%s is a point mass: it has no moments", name);
    } else if (b->kind == BODY_RIGID && !bad_kind) {
        if (pr.moments && pr.inertia) {
            ERR_AT(pr.inertia, pr.inertia->loc2, "give either 'moments' or 'inertia', not both");
        } else if (!pr.moments && !pr.inertia) {
            ERR_AT(n, n->loc, "rigid body %s needs its principal moments: add `moments [...]` (second moments per unit "
                   "mass) or `inertia [...]`", name);
        } else if (pr.moments) {
            if (const_vector(s, scope, pr.moments, b->n, b->moments, "moments"))
                for (int i = 0; i < b->n; i++)
                    if (!(b->moments[i] > 0))
                        ERR_AT(pr.moments, NODE_AT(pr.moments->list, 0)->loc,
                               "second moments must be positive, but moment %d of %s is %g", i + 1, name, b->moments[i]);
        } else {
            double I[MAX_DIM];
            if (const_vector(s, scope, pr.inertia, b->n, I, "inertia")) {
                /* lambda_i = (I_j + I_k - I_i) / (2 m): principal second moments per unit mass. For a body of
                   intrinsic dimension below 3 the moments of inertia do not determine lambda; ask for moments. */
                Node *vn = NODE_AT(pr.inertia->list, 0);
                if (b->n != 3) {
                    ERR_AT(pr.inertia, vn->loc, "'inertia' needs a rigid3 body; give `moments` for %s", kw);
                } else {
                    double tr = I[0] + I[1] + I[2];
                    for (int i = 0; i < 3; i++) {
                        if (!(I[i] > 0)) {
                            ERR_AT(pr.inertia, vn->loc, "moments of inertia must be positive, but I%d of %s is %g", i + 1,
                                   name, I[i]);
                            break;
                        }
                        b->moments[i] = (tr / 2 - I[i]) / (b->mass > 0 ? b->mass : 1);
                        if (!(b->moments[i] > 0)) {
                            ERR_AT(pr.inertia, vn->loc,
                                   "moments of inertia of %s break the triangle inequality (I%d = %g >= the sum of the "
                                   "other two)", name, i + 1, I[i]);
                            break;
                        }
                    }
                }
            }
        }
    }
    b->npoints = b->state == STATE_SO3 ? 0 : b->n + 1;
    ptrvec_push(s->arena, bodies, b);
    /* the evaluator reads bodies through sys->bodies while the system is being declared */
    if (bodies->len > s->bodies_cap) {
        s->bodies_cap = bodies->cap;
        Body *grown = arena_alloc(s->arena, sizeof(Body) * (size_t)s->bodies_cap);
        if (sys->nbodies) memcpy(grown, sys->bodies, sizeof(Body) * (size_t)sys->nbodies);
        sys->bodies = grown;
    }
    sys->bodies[sys->nbodies++] = *b;
}

static void declare_body(Sema *s, Scope *scope, Node *n, PtrVec *bodies) {
    if (!check_new_name(s, scope, n->name, n, n->loc)) return;
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

/* The constraints of a system so far, and a hash table of them (indices + 1, 0: empty slot)
   by kind and unordered pair of points, for the check that one does not repeat another:
   comparing each with all before it was quadratic (a 10,000-link chain's check took
   seconds). */
typedef struct ConstraintSet {
    PtrVec list;
    int *slot;
    int cap; /* a power of two, at least twice the constraints */
} ConstraintSet;

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

typedef struct SysBuild {
    PtrVec bodies, potentials, forces;
    ConstraintSet constraints;
    Node *coords, *inverse, *init;
} SysBuild;

static void system_stmts(Sema *s, Scope *scope, PtrVec *list, SysBuild *sb, const SemaOptions *opt, int depth) {
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
        case N_FN: declare_value(s, scope, n, opt); break;
        case N_BODY: declare_body(s, scope, n, &sb->bodies); break;
        case N_ANCHOR: {
            if (!check_new_name(s, scope, n->name, n, n->loc2)) break;
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
                system_stmts(s, &local, &n->list, sb, opt, depth + 1);
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

/* ---------- coordinates, inverse and init: assignment blocks ---------- */

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

static void assign_target(Sema *s, Ctx *c, Node *st, AsgBlock *ab) {
    System *sys = s->sys;
    Node *t = st->a;
    bool pose = t->kind == N_MEMBER && (!strcmp(t->name, "pos") || !strcmp(t->name, "rot"));
    int rates_lo = pose ? rates_begin(c, ab) : -1;
    Val rhs = eval(c, st->b);
    if (rhs.kind == V_ERR) return;
    if (rhs.random && ab->mode != EV_INIT) {
        ERR_AT(st->b, st->b->loc, "random draws are only allowed in an init block");
        return;
    }
    bool prime = t->kind == N_PRIME;
    Node *base = prime ? t->a : t;
    long index = 0;
    Node *idx_node = NULL;
    if (base->kind == N_INDEX && base->a->kind == N_IDENT) {
        Binding *bnd = scope_lookup(c->scope, base->a->name);
        if (bnd && bnd->kind == B_COORD) {
            idx_node = base;
            base = base->a;
        }
    }
    if (base->kind == N_PRIME && !prime) { /* theta[2]' parses as (theta[2])' */
        prime = true;
        base = base->a;
    }
    if (base->kind == N_IDENT) {
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
        int count = bnd->hi > 0 ? bnd->hi - bnd->lo + 1 : 1;
        int first = bnd->coord;
        if (idx_node) {
            if (bnd->hi == 0) {
                ERR_AT(idx_node, idx_node->loc, "'%s' is a single coordinate and takes no index", base->name);
                return;
            }
            Ctx cc = *c;
            cc.mode = EV_CONST;
            if (idx_node->list.len != 1 ||
                !val_int(c, NODE_AT(idx_node->list, 0), eval(&cc, NODE_AT(idx_node->list, 0)), &index, "an index"))
                return;
            if (index < bnd->lo || index > bnd->hi) {
                ERR_AT(idx_node, NODE_AT(idx_node->list, 0)->loc, "index %ld is out of range: %s has indices %d..%d", index,
                       base->name, bnd->lo, bnd->hi);
                return;
            }
            first += (int)(index - bnd->lo);
            count = 1;
        }
        bool want_vec = count > 1 || (bnd->hi > 0 && !idx_node);
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
        return;
    }
    if (prime) {
        ERR_AT(t, t->loc, "only generalized coordinates have rates (')");
        return;
    }
    if (t->kind == N_MEMBER) {
        Ctx cc = *c;
        cc.mode = EV_INIT; /* evaluate the body reference only */
        Val bv = eval(&cc, t->a);
        if (bv.kind == V_ERR) return;
        if (bv.kind != V_BODY) {
            ERR_AT(t, t->loc, "cannot assign to a member of %s", shape_name(s, bv));
            return;
        }
        Body *b = &sys->bodies[bv.body];
        const char *m = t->name;
        int d = sys->dim;
        if (ab->mode == EV_FORCE) {
            force_target(s, c, st, b, bv.body, rhs);
            return;
        }
        bool ok_member = !strcmp(m, "pos") || !strcmp(m, "rot") ||
                         (ab->mode == EV_INIT && (!strcmp(m, "vel") || !strcmp(m, "angmom") || !strcmp(m, "omega")));
        if (!ok_member || ab->mode == EV_INVERSE) {
            ERR_AT(t, t->loc2, "cannot assign %s.%s here%s", b->name, m,
                   ab->mode == EV_COORDS ? " (the coordinate map sets pos and rot)"
                   : ab->mode == EV_INVERSE ? " (inverse assigns generalized coordinates)"
                                            : " (init sets pos, vel, rot, angmom, omega)");
            return;
        }
        bool is_rot = !strcmp(m, "rot");
        if (is_rot && b->kind == BODY_POINT) {
            ERR_AT(t, t->loc2, "%s is a point mass: it has no orientation", b->name);
            return;
        }
        if ((!strcmp(m, "angmom") || !strcmp(m, "omega")) && b->state != STATE_SO3) {
            ERR_AT(t, t->loc2, "'%s' exists for bodies with `state so3` only", m);
            return;
        }
        int rows = (!strcmp(m, "angmom") || !strcmp(m, "omega")) ? 3 : d;
        bool shape_ok = rhs.kind == V_NUM && (is_rot ? (rhs.ndim == 2 && rhs.rows == d && rhs.cols == d)
                                                      : (rhs.ndim == 1 && rhs.rows == rows));
        if (!shape_ok) {
            ERR_AT(st, st->loc2, "cannot assign %s to %s.%s, which is a %s", shape_name(s, rhs), b->name, m,
                   is_rot ? arena_printf(s->arena, "%dx%d matrix", d, d) : arena_printf(s->arena, "%d-vector", rows));
            return;
        }
        if (st->op != '=' && ab->mode == EV_COORDS && !(is_rot ? ab->set_rot : ab->set_pos)[bv.body]) {
            ERR_AT(st, st->loc2, "%s.%s is updated before the coordinate map sets it", b->name, m);
            return;
        }
        if (is_rot) ab->set_rot[bv.body] = true;
        else if (!strcmp(m, "pos")) ab->set_pos[bv.body] = true;
        else if (!strcmp(m, "vel")) ab->set_vel[bv.body] = true;
        if (c->ir && c->ls) {
            if (ab->mode == EV_INIT && !c->ls->mapped) c->ls->apply_map(c);
            int *rhs_ids = value_ids(c, rhs);
            if (!strcmp(m, "omega") || !strcmp(m, "angmom")) { /* stored as omega; angmom = I omega */
                int *om = body_omega(c, bv.body);
                for (int k = 0; k < 3; k++) {
                    int in = ir_const(c->ir, body_inertia(b, k));
                    int old = !strcmp(m, "omega") ? om[k] : ir_bin(c->ir, IR_MUL, in, om[k]);
                    int nv = combine(c, st->op, old, rhs_ids[k]);
                    om[k] = !strcmp(m, "omega") ? nv : ir_bin(c->ir, IR_DIV, nv, in);
                }
                return;
            }
            int *slot = is_rot ? c->ls->rot + bv.body * d * d : !strcmp(m, "pos") ? c->ls->pos + bv.body * d
                                                                                   : c->ls->vel + bv.body * d;
            for (int k = 0; k < (is_rot ? d * d : d); k++) slot[k] = combine(c, st->op, slot[k], rhs_ids[k]);
            if (rates_lo >= 0) { /* the new pose moves as its expression does: vel or rotdot by its JVP */
                int *rate = is_rot ? c->ls->rotdot + bv.body * d * d : c->ls->vel + bv.body * d;
                c->ls->rates_end(c, rates_lo, slot, is_rot ? d * d : d, rate, false);
                if (is_rot && b->state == STATE_SO3)
                    for (int k = 0; k < 3; k++) c->ls->omega[bv.body * 3 + k] = -1; /* now R^T R' */
            }
        }
        return;
    }
    ERR_AT(t, t->loc, "cannot assign to this expression");
}

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

/* The force blocks: checked as assignment blocks of EV_FORCE (force_target); the system's
   forces are the Force kernel (lower.c), which the equations of motion add to P'. */
static void check_forces(Sema *s, SysBuild *sb) {
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

static void check_coords(Sema *s, Scope *sys_scope, SysBuild *sb) {
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
            if (!check_new_name(s, cs, n->name, n, n->loc2)) return;
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
                if (!check_new_name(s, cs, id->name, id, id->loc)) continue;
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

/* ---------- learned terms and models ---------- */

typedef struct LearnedSettings {
    int hidden[16], nhidden;
    const char *activation;
    Node *input;
    double scale, length_scale, time_scale;
} LearnedSettings;

static const SetSpec learned_specs[] = {
    {"hidden", S_INTS, offsetof(LearnedSettings, hidden), 1, 65536, NULL, offsetof(LearnedSettings, nhidden), 16},
    {"activation", S_WORD, offsetof(LearnedSettings, activation), 0, 0, "tanh|softplus|silu|relu", 0, 0},
    {"scale", S_NUM, offsetof(LearnedSettings, scale), SET_POSITIVE, 1e300, NULL, 0, 0},
    {"length_scale", S_NUM, offsetof(LearnedSettings, length_scale), SET_POSITIVE, 1e300, NULL, 0, 0},
    {"time_scale", S_NUM, offsetof(LearnedSettings, time_scale), SET_POSITIVE, 1e300, NULL, 0, 0},
    {"input", S_NODE, offsetof(LearnedSettings, input), 0, 0, NULL, 0, 0},
};

static int state_width(System *sys) {
    int w = sys->npoints * sys->dim;
    for (int i = 0; i < sys->nbodies; i++)
        if (sys->bodies[i].state == STATE_SO3) w += 3 + 9;
    return w;
}

/* The momenta (or velocities): one per coordinate, but 3 + 3 (p, body Pi) per `state so3` body. */
static int momentum_width(System *sys) {
    int w = sys->npoints * sys->dim;
    for (int i = 0; i < sys->nbodies; i++)
        if (sys->bodies[i].state == STATE_SO3) w += 3 + 3;
    return w;
}

static int input_width(Sema *s, Scope *scope, Node *setting, Learned *l) {
    System *sys = s->sys;
    if (!setting) return state_width(sys);
    int width = 0;
    for (int i = 0; i < setting->list.len; i++) {
        Node *e = NODE_AT(setting->list, i);
        if (e->kind == N_IDENT && !scope_lookup(scope, e->name)) {
            const char *w = e->name;
            if (!strcmp(w, "positions") || !strcmp(w, "velocities") || !strcmp(w, "momenta")) {
                width += strcmp(w, "positions") ? momentum_width(sys) : state_width(sys);
                continue;
            }
            if (!strcmp(w, "state")) {
                width += state_width(sys) + momentum_width(sys);
                continue;
            }
            if (!strcmp(w, "centres")) { /* the positions without the rotation entries (liet2) */
                width += sys->npoints * sys->dim;
                for (int b = 0; b < sys->nbodies; b++) width += sys->bodies[b].state == STATE_SO3 ? 3 : 0;
                continue;
            }
            if (!strcmp(w, "own_centres")) { /* a term per body: where the others lie from it, and which body */
                int bodies = sys->npoints;
                for (int b = 0; b < sys->nbodies; b++) bodies += sys->bodies[b].state == STATE_SO3;
                if (sys->dim != 3 || bodies < 2) {
                    ERR_AT(e, e->loc, "input 'own_centres' reads where bodies lie relative to each other: it needs a 3-D "
                           "system of two bodies or more");
                    return -1;
                }
                width += 3 * (bodies - 1) + bodies;
                l->body_gains = bodies;
                continue;
            }
            bool own = !strcmp(w, "own_frame");
            if (own || !strcmp(w, "body_frame")) { /* every body's centre in every other's frame: 3 per ordered pair */
                int rigid = 0;
                for (int b = 0; b < sys->nbodies; b++) rigid += sys->bodies[b].state == STATE_SO3;
                if (sys->dim != 3 || rigid == 0 || sys->npoints + rigid < 2) {
                    ERR_AT(e, e->loc, "input '%s' reads where bodies lie in the frames of rigid ones: it needs a "
                           "3-D system with a `state so3` body and another body", w);
                    return -1;
                }
                /* own_frame: one rigid body's view (3 per other body) and which body it is (one-hot) */
                width += own ? 3 * (sys->npoints + rigid - 1) + rigid : 3 * rigid * (sys->npoints + rigid - 1);
                if (own) l->body_gains = rigid;
                continue;
            }
            if (!strcmp(w, "coords") || !strcmp(w, "rates")) {
                if (!sys->coords.present) {
                    ERR_AT(e, e->loc, "input '%s' needs generalized coordinates: the system has no coordinates block", w);
                    return -1;
                }
                /* coords: each angle as (cos q, sin q) (CHNN App. D.2); rates as they are */
                width += sys->coords.count + (!strcmp(w, "coords") ? sys->coords.nangles : 0);
                continue;
            }
        }
        Ctx c = {.s = s, .scope = scope, .mode = EV_INPUT};
        Val v = eval(&c, e);
        if (v.kind == V_ERR) return -1;
        if (v.kind != V_NUM || v.ndim == 2) {
            ERR_AT(e, e->loc, "a learned term's input is positions, velocities, state, coords, or vector expressions, not %s",
                   shape_name(s, v));
            return -1;
        }
        width += v.ndim == 0 ? 1 : v.rows;
    }
    (void)l;
    return width;
}

/* Whether an `input` setting lists the input keyword `word`. */
static bool reads_input(const Node *setting, const char *word) {
    for (int i = 0; setting && i < setting->list.len; i++) {
        const Node *e = NODE_AT(setting->list, i);
        if (e->kind == N_IDENT && !strcmp(e->name, word)) return true;
    }
    return false;
}

/* Whether an `input` setting is exactly the keywords words[0..n), in that order. */
static bool input_is(const Node *setting, const char *const *words, int n) {
    if (!setting || setting->list.len != n) return false;
    for (int i = 0; i < n; i++) {
        const Node *e = NODE_AT(setting->list, i);
        if (e->kind != N_IDENT || strcmp(e->name, words[i])) return false;
    }
    return true;
}

static void check_learned(Sema *s, Scope *scope, Node *n, PtrVec *out) {
    Learned *l = arena_alloc(s->arena, sizeof *l);
    l->name = n->name;
    l->loc = n->loc;
    const char *role = n->kind_word;
    if (!strcmp(role, "potential")) l->role = ROLE_POTENTIAL;
    else if (!strcmp(role, "mass")) l->role = ROLE_MASS;
    else if (!strcmp(role, "force")) l->role = ROLE_FORCE;
    else {
        const char *roles[] = {"potential", "mass", "force"};
        const char *near = closest_word(role, roles, 3);
        ERR_AT(n, n->loc2, "unknown role '%s' for learned term %s%s%s%s (roles: potential, mass, force)", role, n->name,
               near ? "; did you mean '" : "", near ? near : "", near ? "'?" : "");
        return;
    }
    LearnedSettings ls = {.hidden = {256, 256, 256}, .nhidden = 3, .activation = "tanh", .scale = 1, .length_scale = 1,
                         .time_scale = 1};
    settings_apply(s, scope, &n->list, learned_specs, 6, &ls, arena_printf(s->arena, "learned %s", n->name));
    memcpy(l->hidden, ls.hidden, sizeof l->hidden);
    l->nhidden = ls.nhidden;
    l->act = !strcmp(ls.activation, "tanh") ? ACT_TANH : !strcmp(ls.activation, "softplus") ? ACT_SOFTPLUS
             : !strcmp(ls.activation, "silu") ? ACT_SILU : ACT_RELU;
    l->input_exprs = ls.input;
    l->scale = ls.scale;
    l->length_scale = ls.length_scale;
    l->time_scale = ls.time_scale;
    static const char *const positions_velocities[] = {"positions", "velocities"};
    l->velocity_input = input_is(ls.input, positions_velocities, 2);
    l->inputs = input_width(s, scope, ls.input, l);
    static const struct { const char *word, *what; } whole_inputs[] = { /* a potential's whole input, alone */
        {"centres", "the bodies' positions without their rotations"},
        {"body_frame", "each body's view of the others"},
        {"own_frame", "a term of each rigid body's view of the others"},
        {"own_centres", "a term of each body's view of the others"},
    };
    for (size_t i = 0; i < sizeof whole_inputs / sizeof whole_inputs[0]; i++)
        if (reads_input(ls.input, whole_inputs[i].word) && (l->role != ROLE_POTENTIAL || ls.input->list.len != 1))
            ERR_AT(n, n->loc, "learned %s: `input %s` (%s) is the whole input of a potential", n->name,
                   whole_inputs[i].word, whole_inputs[i].what);
    l->body_frame_input = reads_input(ls.input, "body_frame");
    l->own_centres_input = reads_input(ls.input, "own_centres");
    System *sys = s->sys;
    int q = sys->coords.present ? sys->coords.count : 0;
    if (l->role == ROLE_POTENTIAL) l->outputs = 1;
    else if (l->role == ROLE_FORCE) /* the rates of (q, qdot) from generalized inputs (node), else on the momenta */
        l->outputs = reads_input(ls.input, "coords") || reads_input(ls.input, "rates") ? 2 * q : momentum_width(sys);
    else {
        if (!q) {
            ERR_AT(n, n->loc2, "a learned mass matrix M(q) needs generalized coordinates: the system has no coordinates block");
            l->inputs = -1;
        }
        l->outputs = q * (q + 1) / 2; /* the Cholesky factor's lower triangle */
    }
    if (l->nhidden == 0) ERR_AT(n, n->loc, "learned term %s needs at least one hidden layer: hidden [64, 64]", n->name);
    ptrvec_push(s->arena, out, l);
    if (l->inputs <= 0) return; /* reported; kept so that models naming it do not cascade */
    long params = 0;
    int in = l->inputs;
    for (int i = 0; i < l->nhidden; i++) {
        params += (long)in * l->hidden[i] + l->hidden[i];
        in = l->hidden[i];
    }
    params += (long)in * l->outputs + l->outputs;
    l->params = params + l->body_gains; /* own_frame: each rigid body's gain too */
}

typedef struct ModelSettings {
    Node *mass, *potential, *force, *known;
    double lr, adam_eps; /* 0: the train block's */
    int epochs;  /* 0: the train block's */
    const char *integrator, *predict; /* NULL: the train block's; the training step */
} ModelSettings;

/* the steps a train block or a model may name (runtime/integrators/integrators.h, and liet2's) */
#define INTEGRATOR_WORDS "rk4|rk4_38|euler|symplectic_euler|leapfrog|rattle|dopri5|discrete_gradient|liet2|lie_rk2|lie_rk4|verlet"

static const SetSpec model_specs[] = {
    {"potential", S_NODE, offsetof(ModelSettings, potential), 0, 0, NULL, 0, 0},
    {"force", S_NODE, offsetof(ModelSettings, force), 0, 0, NULL, 0, 0},
    {"known", S_NODE, offsetof(ModelSettings, known), 0, 0, NULL, 0, 0},
    {"mass", S_NODE, offsetof(ModelSettings, mass), 0, 0, NULL, 0, 0},
    /* the train block's settings a model may set for itself (the paper trains some baselines
       with a lower rate or fewer epochs, App. D.3); the same bounds as there */
    {"lr", S_NUM, offsetof(ModelSettings, lr), SET_POSITIVE, 100, NULL, 0, 0},
    {"adam_eps", S_NUM, offsetof(ModelSettings, adam_eps), SET_POSITIVE, 1, NULL, 0, 0},
    {"epochs", S_INT, offsetof(ModelSettings, epochs), 1, 100000000, NULL, 0, 0},
    {"integrator", S_WORD, offsetof(ModelSettings, integrator), 0, 0, INTEGRATOR_WORDS, 0, 0},
    /* dtlnn: a prediction step other than the training step (the paper's leapfrog+proposed) */
    {"predict", S_WORD, offsetof(ModelSettings, predict), 0, 0, INTEGRATOR_WORDS, 0, 0},
};

static int find_learned(System *sys, const char *name) {
    for (int i = 0; i < sys->nlearned; i++)
        if (!strcmp(sys->learned[i].name, name)) return i;
    return -1;
}

/* Resolves a list of learned-term names of one role into idx[]. */
static int learned_list(Sema *s, Node *setting, LearnedRole role, int *idx, int max) {
    System *sys = s->sys;
    int cnt = 0;
    if (!setting) return 0;
    for (int i = 0; i < setting->list.len; i++) {
        Node *e = NODE_AT(setting->list, i);
        if (e->kind != N_IDENT) {
            ERR_AT(e, e->loc, "'%s' takes names of learned terms", setting->name);
            continue;
        }
        int k = find_learned(sys, e->name);
        if (k < 0) {
            const char *names[64];
            int nn = 0;
            for (int j = 0; j < sys->nlearned && nn < 64; j++)
                if (sys->learned[j].role == role) names[nn++] = sys->learned[j].name;
            const char *near = closest_word(e->name, names, nn);
            ERR_AT(e, e->loc, "no learned term named '%s'%s%s%s", e->name, near ? "; did you mean '" : "", near ? near : "",
                   near ? "'?" : "");
            continue;
        }
        if (sys->learned[k].role != role) {
            ERR_AT(e, e->loc, "learned term '%s' is a %s term, not a %s term", e->name,
                   sys->learned[k].role == ROLE_POTENTIAL ? "potential" : sys->learned[k].role == ROLE_MASS ? "mass" : "force",
                   role == ROLE_POTENTIAL ? "potential" : role == ROLE_MASS ? "mass" : "force");
            continue;
        }
        bool dup = false;
        for (int j = 0; j < cnt; j++)
            if (idx[j] == k) dup = true;
        if (dup) {
            ERR_AT(e, e->loc, "'%s' is named twice", e->name);
            continue;
        }
        if (cnt == max) {
            ERR_AT(e, e->loc, "'%s' takes at most %d terms", setting->name, max);
            break;
        }
        idx[cnt++] = k;
        sys->learned[k].used = true;
    }
    return cnt;
}

/* The terms a model in generalized coordinates names in `setting` read exactly the input
   words[0..nwords), and (twice differentiated, all but node's) not through relu. */
static void check_generalized_terms(Sema *s, const Model *m, const char *kind, Node *setting, LearnedRole role,
                                    const char *const *words, int nwords) {
    System *sys = s->sys;
    for (int i = 0; setting && i < setting->list.len; i++) {
        Node *e = NODE_AT(setting->list, i);
        int k = e->kind == N_IDENT ? find_learned(sys, e->name) : -1;
        if (k < 0 || sys->learned[k].role != role) continue; /* reported */
        const Learned *l = &sys->learned[k];
        if (!input_is(l->input_exprs, words, nwords)) {
            ERR_AT(e, e->loc, "model %s (%s) reads %s in generalized coordinates: give learned %s `input %s%s`", m->name,
                   kind, l->name, l->name, words[0], nwords > 1 ? ", rates" : "");
            continue;
        }
        if (m->kind != MODEL_NODE && l->act == ACT_RELU)
            ERR_AT(e, e->loc, "model %s (%s) needs second derivatives of %s, which relu does not have: use activation tanh, "
                   "softplus or silu", m->name, kind, l->name);
    }
}

/* The baselines in generalized coordinates (node, hnn, lnn, delan): their data, made in
   Cartesian coordinates, comes into q through the inverse block, and their networks read
   coords (angles as (cos, sin)) and rates as the CHNN paper's App. D.2 gives them. */
static void check_generalized_model(Sema *s, const Model *m, const char *kind, Node *n, const ModelSettings *ms) {
    System *sys = s->sys;
    if (!sys->coords.present) {
        ERR_AT(n, n->loc2, "model %s (%s) learns in generalized coordinates: the system needs a coordinates block", m->name,
               kind);
        return;
    }
    if (!sys->coords.inverse) {
        ERR_AT(n, n->loc2, "model %s (%s) learns in generalized coordinates: the system needs an inverse block to map its "
               "Cartesian data into them", m->name, kind);
        return;
    }
    if (ms->known) ERR_AT(ms->known, ms->known->loc2, "known potentials are not supported yet for %s", kind);
    static const char *const q_only[] = {"coords"}, *const q_and_rates[] = {"coords", "rates"};
    check_generalized_terms(s, m, kind, ms->force, ROLE_FORCE, q_and_rates, 2);
    /* lnn's `potential` is its whole Lagrangian L(q, qdot) */
    check_generalized_terms(s, m, kind, ms->potential, ROLE_POTENTIAL, m->kind == MODEL_LNN ? q_and_rates : q_only,
                            m->kind == MODEL_LNN ? 2 : 1);
    if (m->mass_learned >= 0) check_generalized_terms(s, m, kind, ms->mass, ROLE_MASS, q_only, 1);
}

/* The setting `key` of a settings block (NULL if the block or the setting is absent). */
static Node *setting_node(Node *block, const char *key) {
    for (int i = 0; block && i < block->list.len; i++)
        if (!strcmp(NODE_AT(block->list, i)->name, key)) return NODE_AT(block->list, i);
    return NULL;
}

/* A model's own training step (`integrator`), checked against what its family trains
   through, and a dtlnn's prediction step (`predict`). The train block's step, which a
   model without its own uses, is checked once every block is read (check_model_defaults). */
static void check_model_steps(Sema *s, Model *m, Node *n, const ModelSettings *ms) {
    const char *kind = model_kind_name(m->kind);
    char names[256];
    Node *at = setting_node(n, "integrator");
    if (at) m->integrator_at = at->loc2; /* (set, if not to a known word: reported) */
    if (ms->integrator) {
        m->integrator = ms->integrator;
        if (!model_trains_through(m->kind, prt_integrator_find(ms->integrator)))
            ERR_AT(at, NODE_AT(at->list, 0)->loc, "model %s (%s) trains through one of: %s; not %s", m->name, kind,
                   model_integrator_names(m->kind, names, sizeof names), ms->integrator);
    }
    at = setting_node(n, "predict");
    if (!ms->predict) return;
    m->predict = ms->predict;
    m->predict_at = at->loc2;
    if (m->kind != MODEL_DTLNN)
        ERR_AT(at, at->loc2, "'predict' is for dtlnn models; model %s (%s) predicts by integrating its learned dynamics "
               "(the eval block's solver)", m->name, kind);
    else if (!model_trains_through(m->kind, prt_integrator_find(ms->predict)))
        ERR_AT(at, NODE_AT(at->list, 0)->loc, "model %s (dtlnn) predicts with one of: %s; not %s", m->name,
               model_integrator_names(m->kind, names, sizeof names), ms->predict);
}

/* dtlnn (the DT-LNN paper): a learned potential V of the positions or of the generalized
   coordinates, stepped by Eq. 12 with a constant mass matrix; nothing else is learned. */
static void check_dtlnn_model(Sema *s, const Model *m, Node *n, const ModelSettings *ms) {
    System *sys = s->sys;
    if (m->mass_learned >= 0 || m->mass_fit)
        ERR_AT(ms->mass, ms->mass->loc2, "model %s (dtlnn) learns a potential only: its mass matrix is `mass identity` "
               "(M = I, as the paper) or `mass known` (the bodies' masses)", m->name);
    if (ms->force)
        ERR_AT(ms->force, ms->force->loc2, "model %s (dtlnn) learns a potential only: Eq. 12 has no learned force",
               m->name);
    if (!ms->potential && m->nknown)
        ERR_AT(n, n->loc2, "model %s (dtlnn) needs a learned potential: add `potential V` with `learned V : potential`",
               m->name);
    for (int i = 0; ms->potential && i < ms->potential->list.len; i++) {
        Node *e = NODE_AT(ms->potential->list, i);
        int k = e->kind == N_IDENT ? find_learned(sys, e->name) : -1;
        if (k < 0 || sys->learned[k].role != ROLE_POTENTIAL) continue; /* reported */
        const Learned *l = &sys->learned[k];
        static const char *const positions[] = {"positions"}, *const coords[] = {"coords"};
        if (input_is(l->input_exprs, coords, 1)) { /* the runtime steps Cartesian positions only (model_discrete.c) */
            ERR_AT(e, e->loc, "model %s (dtlnn) steps the Cartesian positions of a system without constraints; "
                   "generalized coordinates are not supported: give %s `input positions`, and write a system in "
                   "coordinates as `dim 1` points (examples/pendulum-dg.phys)", m->name, l->name);
        } else if (l->input_exprs && !input_is(l->input_exprs, positions, 1)) {
            ERR_AT(e, e->loc, "model %s (dtlnn) steps the positions: give learned %s `input positions`", m->name,
                   l->name);
        } else if (system_independent_constraints(sys) > 0) {
            ERR_AT(e, e->loc, "model %s (dtlnn) steps the positions %s reads by Eq. 12, which has no constraints, but the "
                   "system has %d constraint equation%s: write it in coordinates as `dim 1` points (examples/pendulum-dg.phys)",
                   m->name, l->name, system_equations(sys), system_equations(sys) == 1 ? "" : "s");
        }
    }
}

static void check_model(Sema *s, Scope *scope, Node *n, PtrVec *out) {
    System *sys = s->sys;
    Model *m = arena_alloc(s->arena, sizeof *m);
    m->name = n->name;
    m->loc = n->loc;
    m->mass_learned = -1;
    const char *const *model_kinds = model_kind_names();
    int k = 0;
    while (k < MODEL_NKINDS && strcmp(model_kinds[k], n->kind_word)) k++;
    if (k == MODEL_NKINDS) {
        const char *near = closest_word(n->kind_word, model_kinds, MODEL_NKINDS);
        char kinds[256] = "";
        for (int i = 0; i < MODEL_NKINDS; i++)
            snprintf(kinds + strlen(kinds), sizeof kinds - strlen(kinds), "%s%s", i ? ", " : "", model_kinds[i]);
        ERR_AT(n, n->loc2, "unknown model kind '%s'%s%s%s (kinds: %s)", n->kind_word, near ? "; did you mean '" : "",
               near ? near : "", near ? "'?" : "", kinds);
        return;
    }
    m->kind = (ModelKind)k;
    int errors_before = s->d->nerrors;
    ModelSettings ms = {0};
    settings_apply(s, scope, &n->list, model_specs, COUNT(model_specs), &ms, arena_printf(s->arena, "model %s", n->name));
    m->lr = ms.lr, m->adam_eps = ms.adam_eps, m->epochs = ms.epochs;
    m->npotentials = learned_list(s, ms.potential, ROLE_POTENTIAL, m->potentials, 8);
    m->nforces = learned_list(s, ms.force, ROLE_FORCE, m->forces, 8);
    m->mass_fit = m->kind == MODEL_CHNN || m->kind == MODEL_CLNN;
    if (ms.mass) {
        Node *mass_node = ms.mass;
        Node *e = NODE_AT(mass_node->list, 0);
        if (mass_node->list.len != 1 || e->kind != N_IDENT) {
            ERR_AT(mass_node, mass_node->loc2, "'mass' takes one word: learned, known, or a learned mass term's name");
        } else if (!strcmp(e->name, "learned")) {
            m->mass_fit = true;
        } else if (!strcmp(e->name, "known")) {
            m->mass_fit = false;
        } else if (!strcmp(e->name, "identity")) { /* the DT-LNN paper's M = I */
            m->mass_fit = false;
            m->unit_mass = true;
            if (m->kind != MODEL_DTLNN)
                ERR_AT(e, e->loc, "`mass identity` (M = I) is for dtlnn models; model %s (%s) takes `mass known`, "
                       "`mass learned` or a learned mass term", n->name, model_kinds[k]);
        } else {
            int idx[1];
            if (learned_list(s, mass_node, ROLE_MASS, idx, 1) == 1) {
                m->mass_learned = idx[0];
                m->mass_fit = false;
            }
        }
    }
    if (ms.known) {
        for (int i = 0; i < ms.known->list.len; i++) {
            Node *e = NODE_AT(ms.known->list, i);
            int found = -1;
            if (e->kind == N_IDENT)
                for (int j = 0; j < sys->npotentials; j++)
                    if (!strcmp(sys->potentials[j].name, e->name)) found = j;
            if (found < 0) {
                ERR_AT(e, e->loc, "'known' names a potential of the system; the system has no potential '%s'",
                       e->kind == N_IDENT ? e->name : "?");
                continue;
            }
            bool dup = false;
            for (int j = 0; j < m->nknown; j++)
                if (m->known[j] == found) dup = true;
            if (dup) {
                ERR_AT(e, e->loc, "'%s' is named twice", e->name);
                continue;
            }
            if (m->nknown == 16) {
                ERR_AT(e, e->loc, "'known' takes at most 16 potentials");
                break;
            }
            m->known[m->nknown++] = found;
        }
    }
    check_model_steps(s, m, n, &ms);
    /* what each model needs of the system */
    const char *kind = model_kinds[k];
    bool has_so3 = sys->nrotation_bodies > 0;
    if (model_in_generalized_coords(m->kind)) check_generalized_model(s, m, kind, n, &ms);
    if (m->kind == MODEL_DTLNN) check_dtlnn_model(s, m, n, &ms);
    if (m->kind == MODEL_DELAN && m->mass_learned < 0)
        ERR_AT(n, n->loc2, "model %s (delan) needs a learned mass matrix: `mass M` with `learned M : mass`", n->name);
    if (m->kind == MODEL_NODE && m->nforces == 0)
        ERR_AT(n, n->loc2, "model %s (node) needs a learned vector field: `force F` with `learned F : force`", n->name);
    /* (a `potential` or `known` setting whose names failed to resolve has had its error) */
    if (m->kind != MODEL_NODE && m->kind != MODEL_LIET2 && m->npotentials == 0 && m->nknown == 0 && !ms.potential &&
        !ms.known)
        ERR_AT(n, n->loc2, "model %s (%s) has no potential: add `potential V` (a learned potential term)", n->name, kind);
    if (m->kind == MODEL_LIET2 && ms.potential && ms.potential->list.len > PRT_MODEL_MAX_NETS - 1)
        ERR_AT(ms.potential, NODE_AT(ms.potential->list, PRT_MODEL_MAX_NETS - 1)->loc,
               "model %s (liet2) sums at most %d learned potentials", n->name, PRT_MODEL_MAX_NETS - 1);
    if (m->kind == MODEL_LIET2 && ms.force && ms.force->list.len > 1)
        ERR_AT(ms.force, NODE_AT(ms.force->list, 1)->loc, "model %s (liet2) takes one learned force (one network of "
               "every force and torque)", n->name);
    if (m->kind == MODEL_LIET2 && !has_so3)
        ERR_AT(n, n->loc2, "model %s (liet2) integrates rigid bodies on SO(3): the system has no body with `state so3`", n->name);
    if (has_so3 && m->kind != MODEL_LIET2)
        ERR_AT(n, n->loc2, "model %s (%s) needs Cartesian bodies, but the system has bodies with `state so3` (use liet2)",
               n->name, kind);
    if ((m->kind == MODEL_CHNN || m->kind == MODEL_CLNN) && sys->nbodies == 0)
        ERR_AT(n, n->loc2, "model %s needs bodies", n->name);
    for (int i = 0; i < m->npotentials && m->kind != MODEL_LIET2; i++) { /* inputs that only liet2's potentials read */
        const Learned *l = &sys->learned[m->potentials[i]];
        if (l->body_frame_input || l->body_gains)
            ERR_AT(n, n->loc2, "model %s (%s): learned %s reads `input %s`, which only a liet2 model's potential reads",
                   n->name, kind, l->name, l->own_centres_input ? "own_centres" : l->body_gains ? "own_frame" : "body_frame");
    }
    long params = 0;
    for (int i = 0; i < m->npotentials; i++) params += sys->learned[m->potentials[i]].params;
    for (int i = 0; i < m->nforces; i++) params += sys->learned[m->forces[i]].params;
    if (m->mass_learned >= 0) params += sys->learned[m->mass_learned].params;
    if (m->mass_fit)
        for (int i = 0; i < sys->nbodies; i++) params += 1 + sys->bodies[i].n;
    m->params = params;
    bool learns = m->npotentials || m->nforces || m->mass_learned >= 0 || m->mass_fit;
    if (!learns && s->d->nerrors == errors_before)
        ERR_AT(n, n->loc2, "model %s (%s) learns nothing: add `potential V` (a learned term)%s", n->name, kind,
               m->kind == MODEL_CHNN || m->kind == MODEL_CLNN ? " or `mass learned`" : "");
    ptrvec_push(s->arena, out, m);
}

/* ---------- data / train / eval ---------- */

#define BIG 1e300
static const SetSpec data_specs[] = {
    {"train", S_INT, offsetof(DataSettings, ntrain), 1, 10000000, NULL, 0, 0},
    {"valid", S_INT, offsetof(DataSettings, nvalid), 0, 10000000, NULL, 0, 0},
    {"test", S_INT, offsetof(DataSettings, ntest), 0, 10000000, NULL, 0, 0},
    {"dt", S_NUM, offsetof(DataSettings, dt), SET_POSITIVE, BIG, NULL, 0, 0},
    {"steps", S_INT, offsetof(DataSettings, steps), 1, 100000000, NULL, 0, 0},
    {"chunk", S_INT, offsetof(DataSettings, chunk), 2, 100000000, NULL, 0, 0},
    {"solver", S_WORD, offsetof(DataSettings, solver), 0, 0, "dopri5|rk4|rk4_38|rattle|leapfrog|liet2", 0, 0},
    {"substeps", S_INT, offsetof(DataSettings, substeps), 1, 100000, NULL, 0, 0},
    {"rtol", S_NUM, offsetof(DataSettings, rtol), SET_POSITIVE, 1, NULL, 0, 0},
    {"atol", S_NUM, offsetof(DataSettings, atol), SET_POSITIVE, 1, NULL, 0, 0},
    {"seed", S_INT, offsetof(DataSettings, seed), 0, 2147483647, NULL, 0, 0},
    {"file", S_STR, offsetof(DataSettings, file), 0, 0, NULL, 0, 0},
    {"noise", S_NUM, offsetof(DataSettings, noise), 0, BIG, NULL, 0, 0},
    {"test_noise", S_NUM, offsetof(DataSettings, test_noise), 0, BIG, NULL, 0, 0},
    {"project", S_WORD, offsetof(DataSettings, project), 0, 0, "mass|nearest", 0, 0},
};

static const SetSpec train_specs[] = {
    {"optimizer", S_WORD, offsetof(TrainSettings, optimizer), 0, 0, "adamw|adam|sgd", 0, 0},
    {"lr", S_NUM, offsetof(TrainSettings, lr), SET_POSITIVE, 100, NULL, 0, 0},
    {"weight_decay", S_NUM, offsetof(TrainSettings, weight_decay), 0, 100, NULL, 0, 0},
    {"adam_eps", S_NUM, offsetof(TrainSettings, adam_eps), SET_POSITIVE, 1, NULL, 0, 0},
    {"schedule", S_WORD, offsetof(TrainSettings, schedule), 0, 0, "cosine|constant", 0, 0},
    {"epochs", S_INT, offsetof(TrainSettings, epochs), 1, 100000000, NULL, 0, 0},
    {"batch", S_INT, offsetof(TrainSettings, batch), 1, 100000000, NULL, 0, 0},
    {"loss", S_WORD, offsetof(TrainSettings, loss), 0, 0, "l1|l2", 0, 0},
    {"loss_weights", S_WORD, offsetof(TrainSettings, loss_weights), 0, 0, "uniform|balanced", 0, 0},
    {"integrator", S_WORD, offsetof(TrainSettings, integrator), 0, 0, INTEGRATOR_WORDS, 0, 0},
    {"substeps", S_INT, offsetof(TrainSettings, substeps), 1, 1000, NULL, 0, 0},
    {"precision", S_WORD, offsetof(TrainSettings, precision), 0, 0, "f32|f64", 0, 0},
    {"threads", S_INT, offsetof(TrainSettings, threads), 1, 1024, NULL, 0, 0},
    {"checkpoint_every", S_INT, offsetof(TrainSettings, checkpoint_every), 1, 100000000, NULL, 0, 0},
};

static const SetSpec eval_specs[] = {
    {"horizon", S_INT, offsetof(EvalSettings, horizon), 1, 100000000, NULL, 0, 0},
    {"solver", S_WORD, offsetof(EvalSettings, solver), 0, 0, "dopri5|rk4|rk4_38|rattle|leapfrog|liet2", 0, 0},
    {"rtol", S_NUM, offsetof(EvalSettings, rtol), SET_POSITIVE, 1, NULL, 0, 0},
    {"atol", S_NUM, offsetof(EvalSettings, atol), SET_POSITIVE, 1, NULL, 0, 0},
    {"metrics", S_WORDS, offsetof(EvalSettings, metrics), 0, 0, "rel_error|energy|constraint|chaos_floor", offsetof(EvalSettings, nmetrics), 8},
    {"plots", S_WORDS, offsetof(EvalSettings, plots), 0, 0, "rollout|error|energy", offsetof(EvalSettings, nplots), 8},
    {"trajectories", S_INT, offsetof(EvalSettings, plot_trajectories), 0, 1000, NULL, 0, 0},
};

static void default_settings(System *sys) {
    sys->data = (DataSettings){.ntrain = 800, .nvalid = 100, .ntest = 100, .dt = 0.1, .steps = 100, .chunk = 5,
                               .solver = "dopri5", .substeps = 1, .rtol = 1e-7, .atol = 1e-9, .seed = 0, .project = "mass"};
    sys->train = (TrainSettings){.optimizer = "adamw", .lr = 3e-3, .weight_decay = 1e-4, .adam_eps = 1e-8, .schedule = "cosine",
                                 .epochs = 100, .batch = 200, .loss = "l1", .loss_weights = "uniform", .integrator = "rk4_38", .precision = "f64",
                                 .threads = 1, .checkpoint_every = 10, .substeps = 1};
    sys->eval = (EvalSettings){.horizon = 0, .solver = "dopri5", .rtol = 1e-7, .atol = 1e-9, .plot_trajectories = 4,
                               .metrics = {"rel_error", "energy", "constraint", "chaos_floor"}, .nmetrics = 4,
                               .plots = {"rollout", "error", "energy"}, .nplots = 3};
}

/* ---------- the whole program ---------- */

static void finish_layout(Sema *s, SysBuild *sb) {
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

static void check_overconstrained(Sema *s, SysBuild *sb) {
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

static System *check_program(Sema *s, Program *pr, const char *path, const SemaOptions *opt);

/* A dtlnn model without its own training step takes the train block's, which is for the
   tape-trained families by default (rk4_38): say so at the model. */
static void check_model_defaults(Sema *s, Node *train) {
    System *sys = s->sys;
    for (int i = 0; i < sys->nmodels; i++) {
        const Model *m = &sys->models[i];
        if ((m->kind != MODEL_DTLNN && (m->kind != MODEL_LIET2 || sys->nrotation_bodies == 0)) || m->integrator_at.first_line ||
            model_trains_through(m->kind, prt_integrator_find(sys->train.integrator)))
            continue;
        char names[256];
        diag_error(s->d, m->loc, "model %s (%s) trains through one of: %s; the train block's integrator is %s%s: give "
                   "the model its own, e.g. `integrator %s`", m->name, model_kind_name(m->kind),
                   model_integrator_names(m->kind, names, sizeof names), sys->train.integrator,
                   setting_node(train, "integrator") ? "" : " (the default)",
                   m->kind == MODEL_DTLNN ? "discrete_gradient" : "liet2");
    }
}

/* The checks run by kind of item (systems, learned terms, models, ...); their findings are
   reported in source order, as a reader goes through the file. */
static System *check_in_source_order(Sema *s, Program *pr, const char *path, const SemaOptions *opt) {
    diag_defer(s->d);
    System *sys = check_program(s, pr, path, opt);
    diag_flush(s->d);
    return sys;
}

System *sema_check_file(Arena *arena, Diags *d, const char *path, const SemaOptions *opt) {
    Sema *sema = arena_alloc(arena, sizeof *sema); /* kept: lowering evaluates in its scopes */
    sema->arena = arena;
    sema->d = d;
    Program pr = {0};
    load_file(sema, &pr, path, NULL, opt, 0);
    return check_in_source_order(sema, &pr, path, opt);
}

System *sema_check_source(Arena *arena, Diags *d, int file, const SemaOptions *opt) {
    Sema *sema = arena_alloc(arena, sizeof *sema);
    sema->arena = arena;
    sema->d = d;
    Program pr = {0};
    const char *path = d->files[file]->path;
    add_file_items(sema, &pr, file, path, NULL, opt, 0);
    return check_in_source_order(sema, &pr, path, opt);
}

static Node *find_in(PtrVec *list, const char *name) {
    for (int i = 0; list && i < list->len; i++) {
        Node *n = list->items[i];
        switch (n->kind) {
        case N_CONST:
        case N_PARAM:
        case N_FN:
        case N_BODY:
        case N_ANCHOR:
            if (!strcmp(n->name, name)) return n;
            break;
        case N_COORDS:
            if (n->name && !strcmp(n->name, name)) return n;
            for (int j = 0; j < n->list.len; j++)
                if (!strcmp(NODE_AT(n->list, j)->name, name)) return n;
            break;
        default: break;
        }
    }
    return NULL;
}

static Node *find_decl(Sema *s, const char *name) {
    Node *n = find_in(s->items, name);
    return n ? n : s->system ? find_in(&s->system->list, name) : NULL;
}

static System *check_program(Sema *s, Program *pr_, const char *path, const SemaOptions *opt) {
    Diags *d = s->d;
    Arena *arena = s->arena;
    Program pr = *pr_;
    System *sys = arena_alloc(arena, sizeof *sys);
    s->sys = sys;
    sys->sema = s;
    default_settings(sys);
    s->system_scope.parent = &s->globals;
    if (d->nerrors) return NULL; /* syntax errors: the tree is partial */
    s->items = arena_alloc(arena, sizeof *s->items);
    *s->items = pr.items;
    s->find_decl = find_decl;

    /* declarations first: constants, parameters, functions of all files */
    Node *system = NULL;
    for (int i = 0; i < pr.items.len; i++) {
        Node *n = pr.items.items[i];
        if (n->kind == N_CONST || n->kind == N_PARAM || n->kind == N_FN) declare_value(s, &s->globals, n, opt);
        if (n->kind == N_SYSTEM) {
            if (system) {
                ERR_AT(n, n->loc2, "a program describes one system; '%s' is a second one", n->name);
                diag_note(d, system->loc2, "the first system");
            } else {
                system = n;
            }
        }
    }
    for (int i = 0; i < opt->nset; i++) {
        Binding *b = scope_lookup(&s->globals, opt->set_names[i]);
        if (!b || !b->decl || b->decl->kind != N_PARAM) {
            bool local = false;
            if (system)
                for (int j = 0; j < system->list.len; j++) {
                    Node *st = NODE_AT(system->list, j);
                    if (st->kind == N_PARAM && !strcmp(st->name, opt->set_names[i])) local = true;
                }
            if (!local) diag_plain_error(d, "--set %s: the program has no parameter '%s'", opt->set_names[i], opt->set_names[i]);
        }
    }
    if (!system) {
        if (opt->require_system) diag_plain_error(d, "%s: no system declared (add `system NAME { ... }`)", path);
        return d->nerrors ? NULL : sys;
    }
    sys->name = system->name;
    sys->system_node = system;
    s->system = system;
    /* the dimension first: everything else depends on it */
    Node *dimn = NULL;
    for (int i = 0; i < system->list.len; i++) {
        Node *st = NODE_AT(system->list, i);
        if (st->kind != N_SETTING || strcmp(st->name, "dim")) continue;
        if (dimn) {
            ERR_AT(st, st->loc2, "'dim' is set twice");
            diag_note(d, dimn->loc2, "first set here");
            continue;
        }
        dimn = st;
        Ctx c = {.s = s, .scope = &s->globals, .mode = EV_CONST};
        long dim;
        if (st->list.len != 1) {
            ERR_AT(st, st->loc2, "'dim' takes one number: 1, 2 or 3");
        } else if (val_int(&c, NODE_AT(st->list, 0), eval(&c, NODE_AT(st->list, 0)), &dim, "the dimension")) {
            if (dim < 1 || dim > MAX_DIM) ERR_AT(st, NODE_AT(st->list, 0)->loc, "the dimension must be 1, 2 or 3, not %ld", dim);
            else sys->dim = (int)dim;
        }
    }
    if (!dimn) ERR_AT(system, system->loc2, "system '%s' needs a dimension: add `dim 1`, `dim 2` or `dim 3`", system->name);
    if (!sys->dim) return NULL;
    s->have_dim = true;

    SysBuild sb = {0};
    system_stmts(s, &s->system_scope, &system->list, &sb, opt, 0);
    finish_layout(s, &sb);
    check_overconstrained(s, &sb);
    sys->npotentials = sb.potentials.len;
    sys->potentials = arena_alloc(arena, sizeof(Potential) * (size_t)(sys->npotentials + 1));
    for (int i = 0; i < sys->npotentials; i++) sys->potentials[i] = *(Potential *)sb.potentials.items[i];
    bool declares_bodies = false; /* if so, a rejected body was reported already */
    for (int i = 0; i < system->list.len; i++)
        if (NODE_AT(system->list, i)->kind == N_BODY) declares_bodies = true;
    if (sys->nbodies == 0 && !declares_bodies) ERR_AT(system, system->loc2, "system '%s' has no bodies", system->name);
    if (!d->stopped) check_coords(s, &s->system_scope, &sb);
    if (!d->stopped) check_forces(s, &sb);
    /* which generalized coordinates are angles: models read them as (cos, sin) */
    if (sys->coords.present && !d->nerrors && !d->stopped) lower_angles(sys);

    /* learned terms, models and settings blocks */
    PtrVec learned = {0}, models = {0};
    Node *blocks[3] = {0};
    for (int i = 0; i < pr.items.len && !d->stopped; i++) {
        Node *n = pr.items.items[i];
        if (n->kind == N_LEARNED) {
            Learned *prev = NULL;
            for (int j = 0; j < learned.len; j++)
                if (!strcmp(((Learned *)learned.items[j])->name, n->name)) prev = learned.items[j];
            Binding *other = scope_lookup(&s->system_scope, n->name);
            if (prev || other) {
                ERR_AT(n, n->loc, "'%s' is already defined", n->name);
                if (prev) diag_note(d, prev->loc, "'%s' was defined here", n->name);
                else if (other->decl) diag_note(d, decl_loc(other->decl), "'%s' was defined here", n->name);
                continue;
            }
            check_learned(s, &s->system_scope, n, &learned);
        }
    }
    sys->nlearned = learned.len;
    sys->learned = arena_alloc(arena, sizeof(Learned) * (size_t)(sys->nlearned + 1));
    for (int i = 0; i < learned.len; i++) sys->learned[i] = *(Learned *)learned.items[i];
    for (int i = 0; i < pr.items.len && !d->stopped; i++) {
        Node *n = pr.items.items[i];
        if (n->kind == N_MODEL) {
            Model *prev = NULL;
            for (int j = 0; j < models.len; j++)
                if (!strcmp(((Model *)models.items[j])->name, n->name)) prev = models.items[j];
            if (prev) {
                ERR_AT(n, n->loc, "model '%s' is already defined", n->name);
                diag_note(d, prev->loc, "the first model '%s'", n->name);
                continue;
            }
            check_model(s, &s->system_scope, n, &models);
        } else if (n->kind == N_BLOCK) {
            int k = !strcmp(n->name, "data") ? 0 : !strcmp(n->name, "train") ? 1 : 2;
            if (blocks[k]) {
                ERR_AT(n, n->loc2, "a program has one '%s' block", n->name);
                diag_note(d, blocks[k]->loc2, "the first one");
                continue;
            }
            blocks[k] = n;
            if (k == 0) settings_apply(s, &s->system_scope, &n->list, data_specs, COUNT(data_specs), &sys->data, "the data block");
            if (k == 1) {
                settings_apply(s, &s->system_scope, &n->list, train_specs, COUNT(train_specs), &sys->train, "the train block");
            }
            if (k == 2) settings_apply(s, &s->system_scope, &n->list, eval_specs, COUNT(eval_specs), &sys->eval, "the eval block");
        }
    }
    sys->nmodels = models.len;
    sys->models = arena_alloc(arena, sizeof(Model) * (size_t)(sys->nmodels + 1));
    for (int i = 0; i < models.len; i++) sys->models[i] = *(Model *)models.items[i];
    check_model_defaults(s, blocks[1]);
    Node *chunk_at = setting_node(blocks[0], "chunk"), *file_at = setting_node(blocks[0], "file"),
         *dt_at = setting_node(blocks[0], "dt"), *horizon_at = setting_node(blocks[2], "horizon"),
         *steps_at = setting_node(blocks[0], "steps");
    if (!chunk_at) chunk_at = blocks[0]; /* the default chunk, too long for the steps set */
    if (chunk_at && sys->data.chunk > sys->data.steps + 1)
        ERR_AT(chunk_at, chunk_at->loc2, "chunk (%d points) is longer than a trajectory (%d steps = %d points)",
               sys->data.chunk, sys->data.steps, sys->data.steps + 1);
    if (file_at) sys->data.file_at = file_at->loc2;
    if (dt_at) sys->data.dt_at = dt_at->loc2;
    if (steps_at) sys->data.steps_at = steps_at->loc2;
    if (horizon_at) sys->eval.horizon_at = horizon_at->loc2;
    if (sys->data.file && !*sys->data.file) ERR_AT(file_at, file_at->loc2, "'file' takes the path of a CSV file");
    else if (sys->data.file && sys->data.file[0] != '/' && strchr(path, '/')) /* as imports: beside the program */
        sys->data.file = arena_printf(arena, "%s/%s", dir_of(arena, path), sys->data.file);
    /* generated test trajectories are `steps` long; a file's length is checked when it is read */
    if (horizon_at && !sys->data.file && sys->eval.horizon > sys->data.steps)
        ERR_AT(horizon_at, horizon_at->loc2, "horizon (%d steps) is longer than the test trajectories (%d steps, the data "
               "block's steps)", sys->eval.horizon, sys->data.steps);
    if (!sys->eval.horizon) sys->eval.horizon = sys->data.steps;
    /* where the blocks name what a command may refuse (first_line 0: a default) */
    struct { Node *block; const char *key; Loc *at; } refusable[] = {
        {blocks[1], "integrator", &sys->train.integrator_at}, {blocks[1], "optimizer", &sys->train.optimizer_at},
        {blocks[0], "solver", &sys->data.solver_at}, {blocks[2], "solver", &sys->eval.solver_at}};
    for (size_t i = 0; i < sizeof refusable / sizeof refusable[0]; i++) {
        Node *at = setting_node(refusable[i].block, refusable[i].key);
        *refusable[i].at = at ? at->loc2 : (Loc){0};
    }
    if (!sys->init && !sys->data.file && sys->nmodels > 0)
        ERR_AT(system, system->loc2, "system '%s' has no init block, so no data can be generated (add `init { ... }`, or "
               "`file \"...\"` in the data block)", system->name);
    for (int i = 0; i < sys->nlearned; i++)
        if (!sys->learned[i].used)
            diag_warning(d, sys->learned[i].loc, "learned term '%s' is not used by any model", sys->learned[i].name);
    if (!d->nerrors && !d->stopped) check_constraints_independent(sys, d);
    return d->nerrors ? NULL : sys;
}
