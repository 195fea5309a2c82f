/* lsp_answers.c — what `physc lsp` says about a document (lsp_internal.h): its diagnostics
   from the real front end (the checker's own JSON diagnostics, as `physc check
   --diagnostics-format json` prints them), its canonical layout (lang/format.h), its symbols
   from its syntax tree. Positions: LSP lines from 0, characters in UTF-16 code units. */
#define _GNU_SOURCE /* open_memstream */
#include "lsp_internal.h"

#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "parse.h"
#include "sema.h"

int lsp_add_source(Diags *d, const LspDoc *doc) {
    char *copy = malloc(doc->len + 1);
    if (!copy) abort();
    memcpy(copy, doc->text, doc->len);
    copy[doc->len] = 0;
    return src_add(d, doc->path, copy, doc->len);
}

/* UTF-16 code units in the first `bytes` bytes of line `line` (1-based) of text */
static int utf16_column(const char *text, size_t len, int line, int bytes) {
    size_t at = 0;
    for (int l = 1; l < line && at < len; at++)
        if (text[at] == '\n') l++;
    int units = 0;
    for (int i = 0; i < bytes && at + (size_t)i < len && text[at + i] != '\n'; i++) {
        unsigned char c = (unsigned char)text[at + i];
        if ((c & 0xc0) != 0x80) units += c >= 0xf0 ? 2 : 1; /* (a 4-byte character is a surrogate pair) */
    }
    return units;
}

static cJSON *position(const LspDoc *doc, int line, int column) {
    cJSON *p = cJSON_CreateObject();
    int l = line > 0 ? line : 1;
    cJSON_AddNumberToObject(p, "line", l - 1);
    cJSON_AddNumberToObject(p, "character", utf16_column(doc->text, doc->len, l, column > 0 ? column - 1 : 0));
    return p;
}

static cJSON *range(const LspDoc *doc, int line, int column, int end_line, int end_column) {
    cJSON *r = cJSON_CreateObject();
    cJSON_AddItemToObject(r, "start", position(doc, line, column));
    cJSON_AddItemToObject(r, "end", position(doc, end_line, end_column));
    return r;
}

static int number(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valueint : 0;
}

/* One JSON diagnostic of the checker as an LSP Diagnostic: in another file (an import), at
   the document's start with that file's place in the message */
static cJSON *lsp_diagnostic(const LspDoc *doc, const cJSON *j) {
    const cJSON *file = cJSON_GetObjectItemCaseSensitive(j, "file"), *msg = cJSON_GetObjectItemCaseSensitive(j, "message");
    const cJSON *sev = cJSON_GetObjectItemCaseSensitive(j, "severity"), *code = cJSON_GetObjectItemCaseSensitive(j, "code");
    bool here = cJSON_IsString(file) && !strcmp(file->valuestring, doc->path);
    cJSON *d = cJSON_CreateObject();
    cJSON_AddItemToObject(d, "range", here ? range(doc, number(j, "line"), number(j, "column"), number(j, "end_line"),
                                                   number(j, "end_column"))
                                           : range(doc, 1, 1, 1, 1));
    cJSON_AddNumberToObject(d, "severity", cJSON_IsString(sev) && !strcmp(sev->valuestring, "warning") ? 2 : 1);
    if (cJSON_IsString(code)) cJSON_AddStringToObject(d, "code", code->valuestring);
    cJSON_AddStringToObject(d, "source", "physc");
    char *text = NULL;
    if (!here && cJSON_IsString(file))
        asprintf(&text, "%s:%d:%d: %s", file->valuestring, number(j, "line"), number(j, "column"),
                 cJSON_IsString(msg) ? msg->valuestring : "");
    cJSON_AddStringToObject(d, "message", text ? text : cJSON_IsString(msg) ? msg->valuestring : "");
    free(text);
    cJSON *related = cJSON_CreateArray(), *note;
    cJSON_ArrayForEach(note, cJSON_GetObjectItemCaseSensitive(j, "notes")) {
        const cJSON *nf = cJSON_GetObjectItemCaseSensitive(note, "file"), *nm = cJSON_GetObjectItemCaseSensitive(note, "message");
        if (!cJSON_IsString(nf) || strcmp(nf->valuestring, doc->path) || !cJSON_IsString(nm)) continue;
        cJSON *info = cJSON_CreateObject(), *loc = cJSON_CreateObject();
        cJSON_AddStringToObject(loc, "uri", doc->uri);
        cJSON_AddItemToObject(loc, "range", range(doc, number(note, "line"), number(note, "column"), number(note, "end_line"),
                                                  number(note, "end_column")));
        cJSON_AddItemToObject(info, "location", loc);
        cJSON_AddStringToObject(info, "message", nm->valuestring);
        cJSON_AddItemToArray(related, info);
    }
    cJSON_AddItemToObject(d, "relatedInformation", related);
    return d;
}

cJSON *lsp_diagnostics(const LspDoc *doc, const char *stdlib_dir) {
    char *lines = NULL;
    size_t nbytes = 0;
    FILE *mem = open_memstream(&lines, &nbytes);
    if (!mem) abort();
    Diags d;
    diag_init(&d, mem);
    d.json = true;
    Arena arena = {0};
    SemaOptions opt = {.stdlib_dir = stdlib_dir, .require_system = false};
    sema_check_source(&arena, &d, lsp_add_source(&d, doc), &opt);
    diag_free(&d);
    arena_free(&arena);
    fclose(mem);
    cJSON *out = cJSON_CreateArray();
    for (char *line = lines, *end; line && *line; line = end + 1) {
        end = strchr(line, '\n');
        if (!end) break;
        cJSON *j = cJSON_ParseWithLength(line, (size_t)(end - line));
        if (j) cJSON_AddItemToArray(out, lsp_diagnostic(doc, j));
        cJSON_Delete(j);
    }
    free(lines);
    return out;
}

cJSON *lsp_formatting(const LspDoc *doc) {
    FILE *null = fopen("/dev/null", "w");
    Diags d;
    diag_init(&d, null ? null : stderr);
    Arena arena = {0};
    size_t len;
    char *text = format_file(&arena, &d, lsp_add_source(&d, doc), &len);
    cJSON *edits = cJSON_CreateArray();
    if (text && (len != doc->len || memcmp(text, doc->text, len))) {
        int nlines = 1;
        for (size_t i = 0; i < doc->len; i++) nlines += doc->text[i] == '\n';
        cJSON *edit = cJSON_CreateObject(), *r = cJSON_CreateObject(), *end = cJSON_CreateObject();
        cJSON_AddItemToObject(r, "start", position(doc, 1, 1));
        cJSON_AddNumberToObject(end, "line", nlines); /* (past the last line: the whole document) */
        cJSON_AddNumberToObject(end, "character", 0);
        cJSON_AddItemToObject(r, "end", end);
        cJSON_AddItemToObject(edit, "range", r);
        cJSON_AddStringToObject(edit, "newText", text);
        cJSON_AddItemToArray(edits, edit);
    }
    diag_free(&d);
    arena_free(&arena);
    if (null) fclose(null);
    return edits;
}

/* ---- symbols, from the syntax tree (a file with errors in its meaning still has them) ---- */

enum { SYM_NAMESPACE = 3, SYM_CLASS = 5, SYM_FIELD = 8, SYM_FUNCTION = 12, SYM_VARIABLE = 13, SYM_CONSTANT = 14,
       SYM_STRUCT = 23, SYM_OBJECT = 19 };

static cJSON *symbol(const LspDoc *doc, const char *name, const char *detail, int kind, Loc loc, Loc sel) {
    cJSON *s = cJSON_CreateObject();
    cJSON_AddStringToObject(s, "name", name && *name ? name : "?");
    if (detail) cJSON_AddStringToObject(s, "detail", detail);
    cJSON_AddNumberToObject(s, "kind", kind);
    cJSON_AddItemToObject(s, "range", range(doc, loc.first_line, loc.first_column, loc.last_line, loc.last_column));
    cJSON_AddItemToObject(s, "selectionRange", range(doc, sel.first_line, sel.first_column, sel.last_line, sel.last_column));
    return s;
}

/* An item of the file or of the system as a symbol, or NULL for what is none */
static cJSON *node_symbol(const LspDoc *doc, const Node *n) {
    char buf[160];
    switch (n->kind) {
    case N_CONST: return symbol(doc, n->name, "const", SYM_CONSTANT, n->loc, n->loc2);
    case N_PARAM: return symbol(doc, n->name, "param", SYM_VARIABLE, n->loc, n->loc2);
    case N_FN: return symbol(doc, n->name, "fn", SYM_FUNCTION, n->loc, n->loc2);
    case N_BODY: return symbol(doc, n->name, n->kind_word, SYM_STRUCT, n->loc, n->loc);
    case N_ANCHOR: return symbol(doc, n->name, "anchor", SYM_OBJECT, n->loc, n->loc);
    case N_POTENTIAL: return symbol(doc, n->name, "potential", SYM_FUNCTION, n->loc, n->loc);
    case N_FORCE: return symbol(doc, n->name, "force", SYM_FUNCTION, n->loc, n->loc);
    case N_CONSTRAINT:
        snprintf(buf, sizeof buf, "%s (line %d)", constraint_kind_name((ConstraintKind)n->op), n->loc.first_line);
        return symbol(doc, buf, NULL, SYM_FIELD, n->loc, n->loc);
    case N_LEARNED: return symbol(doc, n->name, n->kind_word, SYM_CLASS, n->loc, n->loc);
    case N_MODEL: return symbol(doc, n->name, n->kind_word, SYM_CLASS, n->loc, n->loc);
    case N_COORDS: return symbol(doc, "coordinates", NULL, SYM_NAMESPACE, n->loc, n->loc);
    case N_INIT: return symbol(doc, "init", NULL, SYM_NAMESPACE, n->loc, n->loc);
    case N_BLOCK: return symbol(doc, n->name, "settings", SYM_NAMESPACE, n->loc, n->loc);
    default: return NULL;
    }
}

cJSON *lsp_symbols(const LspDoc *doc) {
    FILE *null = fopen("/dev/null", "w");
    Diags d;
    diag_init(&d, null ? null : stderr);
    Arena arena = {0};
    Node *root = parse_file(&arena, &d, lsp_add_source(&d, doc));
    cJSON *out = cJSON_CreateArray();
    for (int i = 0; root && i < root->list.len; i++) {
        const Node *n = NODE_AT(root->list, i);
        if (n->kind == N_SYSTEM) {
            cJSON *s = symbol(doc, n->name, "system", SYM_NAMESPACE, n->loc, n->loc), *kids = cJSON_CreateArray();
            for (int k = 0; k < n->list.len; k++) {
                cJSON *c = node_symbol(doc, NODE_AT(n->list, k));
                if (c) cJSON_AddItemToArray(kids, c);
            }
            cJSON_AddItemToObject(s, "children", kids);
            cJSON_AddItemToArray(out, s);
        } else {
            cJSON *c = node_symbol(doc, n);
            if (c) cJSON_AddItemToArray(out, c);
        }
    }
    diag_free(&d);
    arena_free(&arena);
    if (null) fclose(null);
    return out;
}
