/* lsp_navigate.c — `physc lsp`'s hover, go-to-definition and completion (lsp_internal.h).
   Names come from the document's syntax tree (bodies, their points, constants, params,
   functions, learned terms, models; the imports' functions from the standard library's
   files), values from the checker where the document checks (a body's mass and moments,
   the system's degrees of freedom, a constant's numbers), functions from the builtins'
   table. */
#define _GNU_SOURCE /* open_memstream */
#include "lsp_internal.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "eval.h"
#include "settings.h"
#include "parse.h"
#include "sema.h"

/* A declared name of the document (or of an import) and its node */
typedef struct Decl {
    const char *name, *owner; /* owner: a point's body */
    const Node *n;
} Decl;

typedef struct Names {
    Decl *d;
    int n, cap;
} Names;

static void add_decl(Names *ns, const char *name, const char *owner, const Node *n) {
    if (!name) return;
    if (ns->n == ns->cap) {
        ns->cap = ns->cap ? 2 * ns->cap : 32;
        ns->d = realloc(ns->d, sizeof *ns->d * (size_t)ns->cap);
        if (!ns->d) abort();
    }
    ns->d[ns->n++] = (Decl){.name = name, .owner = owner, .n = n};
}

static void collect(Names *ns, const PtrVec *items) {
    for (int i = 0; i < items->len; i++) {
        const Node *n = NODE_AT(*items, i);
        switch (n->kind) {
        case N_SYSTEM: case N_FOR: collect(ns, &n->list); break;
        case N_BODY:
            add_decl(ns, n->name, NULL, n);
            for (int k = 0; k < n->list.len; k++)
                if (NODE_AT(n->list, k)->kind == N_POINTDEF) add_decl(ns, NODE_AT(n->list, k)->name, n->name, NODE_AT(n->list, k));
            break;
        case N_CONST: case N_PARAM: case N_FN: case N_LEARNED: case N_MODEL: case N_ANCHOR: case N_POTENTIAL:
            add_decl(ns, n->name, NULL, n);
            break;
        default: break;
        }
    }
}

/* A parsed document: its tree (in arena), its names, and the checked system if it checks */
typedef struct Parsed {
    Arena arena;
    Diags d;
    FILE *null;
    Node *root;
    Names names;
    System *sys;
} Parsed;

static void parse_doc(Parsed *p, const LspDoc *doc, const char *stdlib_dir, bool check) {
    memset(p, 0, sizeof *p);
    p->null = fopen("/dev/null", "w");
    diag_init(&p->d, p->null ? p->null : stderr);
    int file = lsp_add_source(&p->d, doc);
    p->root = parse_file(&p->arena, &p->d, file);
    if (p->root) collect(&p->names, &p->root->list);
    SemaOptions opt = {.stdlib_dir = stdlib_dir, .require_system = false};
    if (check && p->root && !p->d.nerrors) p->sys = sema_check_source(&p->arena, &p->d, file, &opt);
}

static void parsed_free(Parsed *p) {
    free(p->names.d);
    diag_free(&p->d);
    arena_free(&p->arena);
    if (p->null) fclose(p->null);
}

/* The byte offset of LSP position (line, UTF-16 character) in doc */
static size_t offset_of(const LspDoc *doc, int line, int character) {
    size_t at = 0;
    for (int l = 0; l < line && at < doc->len; at++)
        if (doc->text[at] == '\n') l++;
    for (int units = 0; at < doc->len && doc->text[at] != '\n' && units < character; at++) {
        unsigned char c = (unsigned char)doc->text[at];
        if ((c & 0xc0) != 0x80) units += c >= 0xf0 ? 2 : 1;
    }
    return at;
}

static bool word_char(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'; }

/* The name at a request's position, into buf ("" if none); *member: it follows a '.' */
static void word_at(const LspDoc *doc, const cJSON *params, char *buf, size_t len, bool *member, size_t *start_out) {
    const cJSON *pos = cJSON_GetObjectItemCaseSensitive(params, "position");
    const cJSON *l = cJSON_GetObjectItemCaseSensitive(pos, "line"), *c = cJSON_GetObjectItemCaseSensitive(pos, "character");
    size_t at = offset_of(doc, cJSON_IsNumber(l) ? l->valueint : 0, cJSON_IsNumber(c) ? c->valueint : 0), s = at, e = at;
    while (s > 0 && word_char(doc->text[s - 1])) s--;
    while (e < doc->len && word_char(doc->text[e])) e++;
    snprintf(buf, len, "%.*s", (int)(e - s < len ? e - s : len - 1), doc->text + s);
    *member = s > 0 && doc->text[s - 1] == '.';
    if (start_out) *start_out = s;
}

static const Decl *find(const Names *ns, const char *name, bool member) {
    for (int i = 0; i < ns->n; i++)
        if (!strcmp(ns->d[i].name, name) && (ns->d[i].owner != NULL) == member) return &ns->d[i];
    return NULL;
}

/* A node's source lines (at most 6) as a code block */
static void put_source(FILE *f, const LspDoc *doc, const Node *n) {
    size_t at = 0;
    for (int l = 1; l < n->loc.first_line && at < doc->len; at++)
        if (doc->text[at] == '\n') l++;
    fputs("```phys\n", f);
    for (int l = n->loc.first_line, shown = 0; l <= n->loc.last_line && at < doc->len && shown < 6; l++, shown++) {
        size_t e = at;
        while (e < doc->len && doc->text[e] != '\n') e++;
        fprintf(f, "%.*s\n", (int)(e - at), doc->text + at);
        at = e + 1;
    }
    fputs("```\n", f);
}

/* What the checker knows of a name: a body's mass and moments, a constant's numbers */
static void put_values(FILE *f, const Parsed *p, const Decl *d) {
    const System *sys = p->sys;
    if (!sys) return;
    if (d->n->kind == N_BODY) {
        for (int b = 0; b < sys->nbodies; b++) {
            const Body *body = &sys->bodies[b];
            size_t k = strlen(d->name);
            if (strncmp(body->name, d->name, k) || (body->name[k] && body->name[k] != '[')) continue;
            fprintf(f, "\n`%s`: mass %g", body->name, body->mass);
            for (int i = 0; i < body->n; i++) fprintf(f, "%s%g", i ? ", " : "; moments (per unit mass) ", body->moments[i]);
        }
        fprintf(f, "\n\nsystem `%s`: %d bodies, %d coordinates, %d degrees of freedom\n", sys->name, sys->nbodies,
                system_coordinates(sys), system_dof(sys));
        return;
    }
    if ((d->n->kind == N_CONST || d->n->kind == N_PARAM) && sys->sema) {
        Binding *b = scope_lookup(&sys->sema->globals, d->name);
        if (!b || b->kind != B_VAL || b->val.kind != V_NUM || !b->val.known) return;
        int count = b->val.ndim == 0 ? 1 : b->val.rows * (b->val.ndim == 2 ? b->val.cols : 1);
        fprintf(f, "\n= ");
        for (int i = 0; i < count && i < 12; i++) fprintf(f, "%s%.10g", i ? ", " : count > 1 ? "[" : "", b->val.v[i]);
        fprintf(f, "%s\n", count > 12 ? ", ...]" : count > 1 ? "]" : "");
    }
}

static const char *const members[][2] = {
    {"pos", "the centre of mass (a d-vector; a point)"}, {"vel", "the centre of mass's velocity"},
    {"mass", "the mass (a scalar known at compile time)"}, {"rot", "the rotation, body to world (rigid bodies)"},
    {"omega", "the angular velocity (`state so3` bodies)"}, {"angmom", "the body angular momentum (`state so3` bodies)"},
    {"at", "at(c): the point at body-frame coordinates c"}, {"dir", "dir(u): the direction R u"},
    {"point", "point(k): the centre (0) or the point on principal axis k"}, {"x", "the first component"},
    {"y", "the second component"}, {"z", "the third component"}};
static const char *const keywords[] = {"import", "const", "param", "fn", "let", "return", "system", "body", "anchor",
                                       "link", "tether", "joint", "axis", "to", "length", "potential", "for", "in",
                                       "force", "coordinates", "inverse", "init", "learned", "model", "data", "train",
                                       "eval", "sum", "dim", "origin", "pi"};

cJSON *lsp_hover(const LspDoc *doc, const cJSON *params, const char *stdlib_dir) {
    char name[256], *text = NULL;
    bool member;
    word_at(doc, params, name, sizeof name, &member, NULL);
    if (!name[0]) return NULL;
    Parsed p;
    parse_doc(&p, doc, stdlib_dir, true);
    size_t len;
    FILE *f = open_memstream(&text, &len);
    if (!f) abort();
    const Decl *d = find(&p.names, name, member);
    const char *call, *what;
    if (d) put_source(f, doc, d->n), put_values(f, &p, d);
    for (int i = 0; !d && !member && builtin_row(i, &call, &what); i++)
        if (!strcmp(builtin_row(i, NULL, NULL), name)) fprintf(f, "`%s`: %s (a builtin)", call, what);
    for (size_t i = 0; !d && member && i < sizeof members / sizeof members[0]; i++)
        if (!strcmp(members[i][0], name)) fprintf(f, "`.%s`: %s", members[i][0], members[i][1]);
    if (!strcmp(name, "pi")) fputs("`pi` = 3.141592653589793", f);
    if (!strcmp(name, "dim") || !strcmp(name, "origin"))
        fputs(!strcmp(name, "dim") ? "`dim`: the system's dimension" : "`origin`: the world origin, a point", f);
    fclose(f);
    parsed_free(&p);
    cJSON *result = NULL;
    if (len) {
        result = cJSON_CreateObject();
        cJSON *contents = cJSON_CreateObject();
        cJSON_AddStringToObject(contents, "kind", "markdown");
        cJSON_AddStringToObject(contents, "value", text);
        cJSON_AddItemToObject(result, "contents", contents);
    }
    free(text);
    return result;
}

static cJSON *location(const char *uri, const Loc *l) {
    cJSON *loc = cJSON_CreateObject(), *r = cJSON_CreateObject(), *s = cJSON_CreateObject(), *e = cJSON_CreateObject();
    cJSON_AddStringToObject(loc, "uri", uri);
    cJSON_AddNumberToObject(s, "line", l->first_line - 1), cJSON_AddNumberToObject(s, "character", l->first_column - 1);
    cJSON_AddNumberToObject(e, "line", l->last_line - 1), cJSON_AddNumberToObject(e, "character", l->last_column - 1);
    cJSON_AddItemToObject(r, "start", s), cJSON_AddItemToObject(r, "end", e);
    cJSON_AddItemToObject(loc, "range", r);
    return loc;
}

/* A function of an imported standard-library file: its location, or NULL */
static cJSON *imported(const Parsed *p, const char *name, const char *stdlib_dir) {
    for (int i = 0; p->root && i < p->root->list.len; i++) {
        const Node *n = NODE_AT(p->root->list, i);
        if (n->kind != N_IMPORT || !n->name || strchr(n->name, '/')) continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s.phys", stdlib_dir, n->name);
        FILE *fp = fopen(path, "rb");
        if (!fp) continue;
        char *text = NULL;
        size_t len = 0, got;
        char chunk[4096];
        FILE *mem = open_memstream(&text, &len);
        while ((got = fread(chunk, 1, sizeof chunk, fp)) > 0) fwrite(chunk, 1, got, mem);
        fclose(fp), fclose(mem);
        LspDoc lib = {.uri = NULL, .path = path, .text = text, .len = len};
        Parsed q;
        parse_doc(&q, &lib, stdlib_dir, false);
        const Decl *d = find(&q.names, name, false);
        char uri[PATH_MAX + 16], *full = realpath(path, NULL);
        snprintf(uri, sizeof uri, "file://%s", full ? full : path);
        free(full);
        cJSON *loc = d ? location(uri, d->n->kind == N_FN ? &d->n->loc2 : &d->n->loc) : NULL;
        parsed_free(&q);
        free(text);
        if (loc) return loc;
    }
    return NULL;
}

cJSON *lsp_definition(const LspDoc *doc, const cJSON *params, const char *stdlib_dir) {
    char name[256];
    bool member;
    word_at(doc, params, name, sizeof name, &member, NULL);
    if (!name[0]) return NULL;
    Parsed p;
    parse_doc(&p, doc, stdlib_dir, false);
    const Decl *d = find(&p.names, name, member);
    cJSON *loc = NULL;
    if (d) {
        bool named = d->n->kind == N_CONST || d->n->kind == N_PARAM || d->n->kind == N_FN;
        loc = location(doc->uri, named ? &d->n->loc2 : &d->n->loc);
    } else if (!member) {
        loc = imported(&p, name, stdlib_dir);
        for (int i = 0; !loc && p.root && i < p.root->list.len; i++) { /* an import's name: its file */
            const Node *n = NODE_AT(p.root->list, i);
            if (n->kind == N_IMPORT && n->name && !strcmp(n->name, name)) {
                char uri[PATH_MAX + 16], path[PATH_MAX], *full;
                Loc top = {.first_line = 1, .first_column = 1, .last_line = 1, .last_column = 1};
                snprintf(path, sizeof path, "%s/%s.phys", stdlib_dir, name);
                full = realpath(path, NULL);
                snprintf(uri, sizeof uri, "file://%s", full ? full : path);
                free(full);
                loc = location(uri, &top);
            }
        }
    }
    parsed_free(&p);
    return loc;
}

static void item(cJSON *items, const char *label, int kind, const char *detail) {
    cJSON *it = cJSON_CreateObject();
    cJSON_AddStringToObject(it, "label", label);
    cJSON_AddNumberToObject(it, "kind", kind);
    if (detail) cJSON_AddStringToObject(it, "detail", detail);
    cJSON_AddItemToArray(items, it);
}

enum { ITEM_FUNCTION = 3, ITEM_FIELD = 5, ITEM_VARIABLE = 6, ITEM_CLASS = 7, ITEM_PROPERTY = 10, ITEM_KEYWORD = 14,
       ITEM_CONSTANT = 21, ITEM_STRUCT = 22 };

/* The innermost settings block (data, train, eval, a learned term, a model, a body) whose
   braces hold line:column of the program (1-based), or NULL */
static const Node *settings_block_at(const Node *n, int line, int column) {
    if (!n) return NULL;
    const Node *inner = NULL;
    for (int i = 0; i < n->list.len && !inner; i++) inner = settings_block_at(NODE_AT(n->list, i), line, column);
    if (inner) return inner;
    bool block = n->kind == N_BLOCK || n->kind == N_LEARNED || n->kind == N_MODEL || n->kind == N_BODY;
    bool inside = (line > n->loc.first_line || (line == n->loc.first_line && column > n->loc.first_column)) &&
                  (line < n->loc.last_line || (line == n->loc.last_line && column < n->loc.last_column));
    return block && inside ? n : NULL;
}

/* A settings block's keys, with their choices where they have them */
static void setting_items(cJSON *items, const Node *block) {
    const char *word = block->kind == N_BLOCK ? block->name : block->kind == N_LEARNED ? "learned"
                       : block->kind == N_MODEL ? "model" : "body";
    int n;
    const SetSpec *specs = settings_of(word, &n);
    for (int i = 0; i < n; i++) item(items, specs[i].key, ITEM_PROPERTY, specs[i].choices);
}

/* After `name.`: the body's points and the members; else the names, builtins and keywords
   (and in a settings block, its keys first) */
cJSON *lsp_completion(const LspDoc *doc, const cJSON *params, const char *stdlib_dir) {
    char name[256];
    bool member;
    size_t start;
    word_at(doc, params, name, sizeof name, &member, &start);
    Parsed p;
    parse_doc(&p, doc, stdlib_dir, false);
    cJSON *items = cJSON_CreateArray();
    if (member) {
        size_t e = start - 1, s; /* the body before the '.', past an index: bob[1].| */
        if (e > 0 && doc->text[e - 1] == ']')
            while (e > 0 && doc->text[e - 1] != '[') e--;
        if (e > 0 && doc->text[e - 1] == '[') e--;
        for (s = e; s > 0 && word_char(doc->text[s - 1]); s--) continue;
        for (int i = 0; i < p.names.n; i++)
            if (p.names.d[i].owner && strlen(p.names.d[i].owner) == e - s && !strncmp(p.names.d[i].owner, doc->text + s, e - s))
                item(items, p.names.d[i].name, ITEM_FIELD, "a point of the body");
        for (size_t i = 0; i < sizeof members / sizeof members[0]; i++) item(items, members[i][0], ITEM_FIELD, members[i][1]);
    } else {
        const cJSON *pos = cJSON_GetObjectItemCaseSensitive(params, "position");
        const cJSON *l = cJSON_GetObjectItemCaseSensitive(pos, "line");
        int line = cJSON_IsNumber(l) ? l->valueint + 1 : 0, column = 1;
        for (size_t i = start; i > 0 && doc->text[i - 1] != '\n'; i--) column++; /* (the word's column, in bytes) */
        const Node *block = p.root ? settings_block_at(p.root, line, column) : NULL;
        if (block) setting_items(items, block);
        static const int kinds[] = {[N_CONST] = ITEM_CONSTANT, [N_PARAM] = ITEM_VARIABLE, [N_FN] = ITEM_FUNCTION,
                                    [N_BODY] = ITEM_STRUCT, [N_LEARNED] = ITEM_CLASS, [N_MODEL] = ITEM_CLASS,
                                    [N_ANCHOR] = ITEM_VARIABLE, [N_POTENTIAL] = ITEM_VARIABLE};
        for (int i = 0; i < p.names.n; i++)
            if (!p.names.d[i].owner) item(items, p.names.d[i].name, kinds[p.names.d[i].n->kind] ? kinds[p.names.d[i].n->kind] : ITEM_VARIABLE, NULL);
        const char *call, *what, *fn;
        for (int i = 0; (fn = builtin_row(i, &call, &what)); i++) item(items, fn, ITEM_FUNCTION, call);
        for (size_t i = 0; i < sizeof keywords / sizeof keywords[0]; i++) item(items, keywords[i], ITEM_KEYWORD, NULL);
    }
    parsed_free(&p);
    return items;
}
