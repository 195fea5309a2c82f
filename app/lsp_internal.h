/* lsp_internal.h — the parts of `physc lsp` (lsp.c): the transport (lsp_io.c) and what it
   answers about a document (lsp_answers.c). */
#ifndef PHYSC_LSP_INTERNAL_H
#define PHYSC_LSP_INTERNAL_H
#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdio.h>

#include "diag.h"

/* ---- transport: JSON-RPC framed by Content-Length ---- */
typedef enum { LSP_OK, LSP_END, LSP_BAD_HEADER, LSP_BAD_JSON } LspRead;
/* The next message into *msg (to cJSON_Delete): LSP_OK, LSP_END at the input's end, or why
   it could not be read (the rest of the message skipped) */
LspRead lsp_read(FILE *in, cJSON **msg);
void lsp_write(FILE *out, cJSON *msg);
/* A response to request id (result consumed; NULL: null), an error response, a notification
   (params consumed) */
void lsp_reply(FILE *out, const cJSON *id, cJSON *result);
void lsp_error(FILE *out, const cJSON *id, int code, const char *message);
void lsp_notify(FILE *out, const char *method, cJSON *params);

/* ---- documents ---- */
typedef struct LspDoc {
    char *uri, *path; /* path: the file the URI names (diagnostics and imports read it so) */
    char *text;
    size_t len;
} LspDoc;

/* The document as a source of d (which owns a copy of its text): its index */
int lsp_add_source(Diags *d, const LspDoc *doc);

/* The answers, each a new cJSON to hand on: the document's diagnostics (the real front end's,
   through --diagnostics-format json), its formatting (one edit, or an empty array where it
   has syntax errors), its symbols (system, bodies, constraints, potentials, learned terms,
   models, constants, functions) */
cJSON *lsp_diagnostics(const LspDoc *doc, const char *stdlib_dir);
cJSON *lsp_formatting(const LspDoc *doc);
cJSON *lsp_symbols(const LspDoc *doc);
/* At a request's position (lsp_navigate.c): the hover (markdown: the declaration, what the
   checker knows of it, a builtin's call and what it gives; NULL: nothing), the definition
   (a Location, in the standard library for an import's function; NULL: none), the
   completions (after `body.`: its points and the members; else the names, builtins and
   keywords) */
cJSON *lsp_hover(const LspDoc *doc, const cJSON *params, const char *stdlib_dir);
cJSON *lsp_definition(const LspDoc *doc, const cJSON *params, const char *stdlib_dir);
cJSON *lsp_completion(const LspDoc *doc, const cJSON *params, const char *stdlib_dir);

#endif
