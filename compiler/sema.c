/* sema.c — checks a program and builds its System. This file: loading files and imports,
   declarations (const, param, fn), and the whole program: the passes in order (the
   system block, its coordinates, learned terms, models, settings). The checks of each
   kind of construct are in sema_bodies.c, sema_coords.c, sema_models.c and
   sema_settings.c (sema_internal.h). Errors are recorded and checking goes on, so one
   run reports several. */
#include "sema_internal.h"

/* ---------- loading files and imports ---------- */

typedef struct Program {
    PtrVec items;        /* declarations of all files, imports first */
    PtrVec loaded;       /* canonical paths already loaded */
} Program;

char *sema_dir_of(Arena *a, const char *path) {
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

/* item "import" STRING: a file's imports, loaded before its own items */
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
        const char *target = is_path ? (name[0] == '/' ? name : arena_printf(s->arena, "%s/%s", sema_dir_of(s->arena, path), name))
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

/* That a declaration's IDENT is new in its scope (and not a built-in name). */
bool sema_check_new_name(Sema *s, Scope *scope, const char *name, Node *n, Loc loc) {
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

/* decl = ( "const" | "param" ) IDENT "=" expr, and
   fn = "fn" IDENT "(" [ ident_list ] ")" ( "=" expr | "{" { [ fn_stmt ] term } "}" ) */
void sema_declare_value(Sema *s, Scope *scope, Node *n, const SemaOptions *opt) {
    if (!sema_check_new_name(s, scope, n->name, n, n->loc2)) return;
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

/* ---------- the whole program ---------- */

static System *check_program(Sema *s, Program *pr, const char *path, const SemaOptions *opt);

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

/* file = { [ item ] term }, first pass: the declarations of all files (constants,
   parameters, functions) into the globals; the one system block (a second is refused), or
   NULL */
static Node *declare_globals(Sema *s, const Program *pr, const SemaOptions *opt) {
    Node *system = NULL;
    for (int i = 0; i < pr->items.len; i++) {
        Node *n = pr->items.items[i];
        if (n->kind == N_CONST || n->kind == N_PARAM || n->kind == N_FN) sema_declare_value(s, &s->globals, n, opt);
        if (n->kind == N_SYSTEM) {
            if (system) {
                ERR_AT(n, n->loc2, "a program describes one system; '%s' is a second one", n->name);
                diag_note(s->d, system->loc2, "the first system");
            } else {
                system = n;
            }
        }
    }
    return system;
}

/* --set NAME=VALUE on the command line: NAME is a parameter of the program, a global one or
   one of the system block's */
static void check_set_names(Sema *s, Node *system, const SemaOptions *opt) {
    for (int i = 0; i < opt->nset; i++) {
        Binding *b = scope_lookup(&s->globals, opt->set_names[i]);
        if (!b || !b->decl || b->decl->kind != N_PARAM) {
            bool local = false;
            if (system)
                for (int j = 0; j < system->list.len; j++) {
                    Node *st = NODE_AT(system->list, j);
                    if (st->kind == N_PARAM && !strcmp(st->name, opt->set_names[i])) local = true;
                }
            if (!local)
                diag_plain_error(s->d, "--set %s: the program has no parameter '%s'", opt->set_names[i], opt->set_names[i]);
        }
    }
}

/* "dim" expr in the system block, first: everything else depends on it. Once, a whole
   number from 1 to 3 known when the program is compiled; false if the system has none. */
static bool check_dim(Sema *s, Node *system) {
    Node *dimn = NULL;
    for (int i = 0; i < system->list.len; i++) {
        Node *st = NODE_AT(system->list, i);
        if (st->kind != N_SETTING || strcmp(st->name, "dim")) continue;
        if (dimn) {
            ERR_AT(st, st->loc2, "'dim' is set twice");
            diag_note(s->d, dimn->loc2, "first set here");
            continue;
        }
        dimn = st;
        Ctx c = {.s = s, .scope = &s->globals, .mode = EV_CONST};
        long dim;
        if (st->list.len != 1) {
            ERR_AT(st, st->loc2, "'dim' takes one number: 1, 2 or 3");
        } else if (val_int(&c, NODE_AT(st->list, 0), eval(&c, NODE_AT(st->list, 0)), &dim, "the dimension")) {
            if (dim < 1 || dim > MAX_DIM) ERR_AT(st, NODE_AT(st->list, 0)->loc, "the dimension must be 1, 2 or 3, not %ld", dim);
            else s->sys->dim = (int)dim;
        }
    }
    if (!dimn) ERR_AT(system, system->loc2, "system '%s' needs a dimension: add `dim 1`, `dim 2` or `dim 3`", system->name);
    return s->sys->dim != 0;
}

/* "system" IDENT "{" { stmt } "}": its bodies, constraints and potentials (at least one
   body), then its coordinate map, inverse, init and force blocks, and which coordinates are
   angles */
static void check_system(Sema *s, Node *system, const SemaOptions *opt) {
    System *sys = s->sys;
    Diags *d = s->d;
    SysBuild sb = {0};
    sema_system_stmts(s, &s->system_scope, &system->list, &sb, opt, 0);
    sema_finish_layout(s, &sb);
    sema_check_overconstrained(s, &sb);
    sys->npotentials = sb.potentials.len;
    sys->potentials = arena_alloc(s->arena, sizeof(Potential) * (size_t)(sys->npotentials + 1));
    for (int i = 0; i < sys->npotentials; i++) sys->potentials[i] = *(Potential *)sb.potentials.items[i];
    bool declares_bodies = false; /* if so, a rejected body was reported already */
    for (int i = 0; i < system->list.len; i++)
        if (NODE_AT(system->list, i)->kind == N_BODY) declares_bodies = true;
    if (sys->nbodies == 0 && !declares_bodies) ERR_AT(system, system->loc2, "system '%s' has no bodies", system->name);
    if (!d->stopped) sema_check_coords(s, &s->system_scope, &sb);
    if (!d->stopped) sema_check_forces(s, &sb);
    /* which generalized coordinates are angles: models read them as (cos, sin) */
    if (sys->coords.present && !d->nerrors && !d->stopped) lower_angles(sys);
}

/* "learned" IDENT ":" ...: the learned terms, each name new (not another term's, not one
   the system sees) */
static void check_learned_terms(Sema *s, const Program *pr) {
    System *sys = s->sys;
    Diags *d = s->d;
    PtrVec learned = {0};
    for (int i = 0; i < pr->items.len && !d->stopped; i++) {
        Node *n = pr->items.items[i];
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
            sema_check_learned(s, &s->system_scope, n, &learned);
        }
    }
    sys->nlearned = learned.len;
    sys->learned = arena_alloc(s->arena, sizeof(Learned) * (size_t)(sys->nlearned + 1));
    for (int i = 0; i < learned.len; i++) sys->learned[i] = *(Learned *)learned.items[i];
}

/* "model" IDENT ":" ... and the "data", "train" and "eval" blocks, in source order: each
   model name once, each block once (blocks[k]: data, train, eval) */
static void check_models_and_blocks(Sema *s, const Program *pr, Node *blocks[3]) {
    System *sys = s->sys;
    Diags *d = s->d;
    PtrVec models = {0};
    for (int i = 0; i < pr->items.len && !d->stopped; i++) {
        Node *n = pr->items.items[i];
        if (n->kind == N_MODEL) {
            Model *prev = NULL;
            for (int j = 0; j < models.len; j++)
                if (!strcmp(((Model *)models.items[j])->name, n->name)) prev = models.items[j];
            if (prev) {
                ERR_AT(n, n->loc, "model '%s' is already defined", n->name);
                diag_note(d, prev->loc, "the first model '%s'", n->name);
                continue;
            }
            sema_check_model(s, &s->system_scope, n, &models);
        } else if (n->kind == N_BLOCK) {
            int k = !strcmp(n->name, "data") ? 0 : !strcmp(n->name, "train") ? 1 : 2;
            if (blocks[k]) {
                ERR_AT(n, n->loc2, "a program has one '%s' block", n->name);
                diag_note(d, blocks[k]->loc2, "the first one");
                continue;
            }
            blocks[k] = n;
            sema_settings_block(s, n, k);
        }
    }
    sys->nmodels = models.len;
    sys->models = arena_alloc(s->arena, sizeof(Model) * (size_t)(sys->nmodels + 1));
    for (int i = 0; i < models.len; i++) sys->models[i] = *(Model *)models.items[i];
}

/* What is checked once every item is: the models' defaults and the settings, the models'
   data (an init block or a file), learned terms no model uses (a warning), and that the
   constraints are independent. The System, or NULL after an error. */
static System *finish_program(Sema *s, Node *system, Node *const blocks[3], const char *path) {
    System *sys = s->sys;
    Diags *d = s->d;
    sema_check_model_defaults(s, blocks[1]);
    sema_finish_settings(s, blocks, path);
    if (!sys->init && !sys->data.file && sys->nmodels > 0)
        ERR_AT(system, system->loc2, "system '%s' has no init block, so no data can be generated (add `init { ... }`, or "
               "`file \"...\"` in the data block)", system->name);
    for (int i = 0; i < sys->nlearned; i++)
        if (!sys->learned[i].used)
            diag_warning(d, sys->learned[i].loc, "learned term '%s' is not used by any model", sys->learned[i].name);
    if (!d->nerrors && !d->stopped) check_constraints_independent(sys, d);
    return d->nerrors ? NULL : sys;
}

/* file = { [ item ] term }: the declarations, the system, learned terms, models and
   settings blocks of a file and its imports */
static System *check_program(Sema *s, Program *pr_, const char *path, const SemaOptions *opt) {
    Diags *d = s->d;
    Program pr = *pr_;
    System *sys = arena_alloc(s->arena, sizeof *sys);
    s->sys = sys;
    sys->sema = s;
    sema_default_settings(sys);
    s->system_scope.parent = &s->globals;
    if (d->nerrors) return NULL; /* syntax errors: the tree is partial */
    s->items = arena_alloc(s->arena, sizeof *s->items);
    *s->items = pr.items;
    s->find_decl = find_decl;

    Node *system = declare_globals(s, &pr, opt);
    check_set_names(s, system, opt);
    if (!system) {
        if (opt->require_system) diag_plain_error(d, "%s: no system declared (add `system NAME { ... }`)", path);
        return d->nerrors ? NULL : sys;
    }
    sys->name = system->name;
    sys->system_node = system;
    s->system = system;
    if (!check_dim(s, system)) return NULL;
    s->have_dim = true;
    check_system(s, system, opt);
    check_learned_terms(s, &pr);
    Node *blocks[3] = {0};
    check_models_and_blocks(s, &pr, blocks);
    return finish_program(s, system, blocks, path);
}
