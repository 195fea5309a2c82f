/* lsp.c — `physc lsp` (lsp.h): a language server over stdio. It keeps the open documents
   (full text on each change), checks each with the real front end as it changes and
   publishes the diagnostics, and answers formatting and document symbols (lsp_answers.c),
   hover, definition and completion (lsp_navigate.c).
   Requests are a table of methods; what is unknown is answered MethodNotFound, never a
   crash: a malformed message gets an error response (or is skipped if it has no id). */
#include "lsp.h"

#include <stdlib.h>
#include <string.h>

#include "lsp_internal.h"

enum { RPC_PARSE_ERROR = -32700, RPC_INVALID_REQUEST = -32600, RPC_METHOD_NOT_FOUND = -32601,
       RPC_INVALID_PARAMS = -32602, RPC_NOT_INITIALIZED = -32002 };

typedef struct Server {
    FILE *in, *out;
    const char *stdlib_dir, *version;
    LspDoc *docs;
    int ndocs, cap;
    bool initialized, shutdown;
} Server;

static const char *string_at(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* The document of params.textDocument.uri, or NULL */
static LspDoc *find_doc(Server *s, const cJSON *params) {
    const char *uri = string_at(cJSON_GetObjectItemCaseSensitive(params, "textDocument"), "uri");
    for (int i = 0; uri && i < s->ndocs; i++)
        if (!strcmp(s->docs[i].uri, uri)) return &s->docs[i];
    return NULL;
}

static char *dup_text(const char *t) {
    char *c = strdup(t ? t : "");
    if (!c) abort();
    return c;
}

static void publish(Server *s, const LspDoc *doc, bool empty) {
    cJSON *params = cJSON_CreateObject();
    cJSON_AddStringToObject(params, "uri", doc->uri);
    cJSON_AddItemToObject(params, "diagnostics", empty ? cJSON_CreateArray() : lsp_diagnostics(doc, s->stdlib_dir));
    lsp_notify(s->out, "textDocument/publishDiagnostics", params);
}

/* A document's text replaced (didOpen, didChange with the full text) and checked */
static void set_text(Server *s, LspDoc *doc, const char *text) {
    free(doc->text);
    doc->text = dup_text(text);
    doc->len = strlen(doc->text);
    publish(s, doc, false);
}

static void did_open(Server *s, const cJSON *params) {
    const cJSON *td = cJSON_GetObjectItemCaseSensitive(params, "textDocument");
    const char *uri = string_at(td, "uri"), *text = string_at(td, "text");
    if (!uri || !text) return;
    LspDoc *doc = find_doc(s, params);
    if (!doc) {
        if (s->ndocs == s->cap) {
            s->cap = s->cap ? 2 * s->cap : 8;
            s->docs = realloc(s->docs, sizeof *s->docs * (size_t)s->cap);
            if (!s->docs) abort();
        }
        doc = &s->docs[s->ndocs++];
        *doc = (LspDoc){.uri = dup_text(uri), .path = dup_text(strncmp(uri, "file://", 7) ? uri : uri + 7)};
    }
    set_text(s, doc, text);
}

static void did_change(Server *s, const cJSON *params) {
    LspDoc *doc = find_doc(s, params);
    const cJSON *changes = cJSON_GetObjectItemCaseSensitive(params, "contentChanges");
    const cJSON *last = cJSON_IsArray(changes) ? cJSON_GetArrayItem(changes, cJSON_GetArraySize(changes) - 1) : NULL;
    const char *text = string_at(last, "text"); /* (full sync: each change is the whole text) */
    if (doc && text) set_text(s, doc, text);
}

static void did_close(Server *s, const cJSON *params) {
    LspDoc *doc = find_doc(s, params);
    if (!doc) return;
    publish(s, doc, true); /* (its diagnostics go with it) */
    free(doc->uri), free(doc->path), free(doc->text);
    *doc = s->docs[--s->ndocs];
}

static cJSON *initialize(Server *s, const cJSON *params) {
    (void)params;
    s->initialized = true;
    cJSON *result = cJSON_CreateObject(), *caps = cJSON_CreateObject(), *info = cJSON_CreateObject();
    cJSON_AddNumberToObject(caps, "textDocumentSync", 1); /* full text on each change */
    cJSON_AddBoolToObject(caps, "documentFormattingProvider", 1);
    cJSON_AddBoolToObject(caps, "documentSymbolProvider", 1);
    cJSON_AddBoolToObject(caps, "hoverProvider", 1);
    cJSON_AddBoolToObject(caps, "definitionProvider", 1);
    cJSON *completion = cJSON_CreateObject(), *triggers = cJSON_CreateArray();
    cJSON_AddItemToArray(triggers, cJSON_CreateString("."));
    cJSON_AddItemToObject(completion, "triggerCharacters", triggers);
    cJSON_AddItemToObject(caps, "completionProvider", completion);
    cJSON_AddItemToObject(result, "capabilities", caps);
    cJSON_AddStringToObject(info, "name", "physc");
    cJSON_AddStringToObject(info, "version", s->version);
    cJSON_AddItemToObject(result, "serverInfo", info);
    return result;
}

static cJSON *formatting(const LspDoc *doc, const cJSON *params, const char *stdlib_dir) {
    (void)params, (void)stdlib_dir;
    return lsp_formatting(doc);
}

static cJSON *symbols(const LspDoc *doc, const cJSON *params, const char *stdlib_dir) {
    (void)params, (void)stdlib_dir;
    return lsp_symbols(doc);
}

/* The requests about a document, a row each */
static const struct {
    const char *method;
    cJSON *(*answer)(const LspDoc *doc, const cJSON *params, const char *stdlib_dir);
} document_requests[] = {
    {"textDocument/formatting", formatting}, {"textDocument/documentSymbol", symbols}, {"textDocument/hover", lsp_hover},
    {"textDocument/definition", lsp_definition}, {"textDocument/completion", lsp_completion},
};

/* A request's answer (a new cJSON, NULL for null); *error set for an error */
static cJSON *answer(Server *s, const char *method, const cJSON *params, int *error) {
    if (!strcmp(method, "initialize")) return initialize(s, params);
    if (!s->initialized) return *error = RPC_NOT_INITIALIZED, NULL;
    if (!strcmp(method, "shutdown")) return s->shutdown = true, NULL;
    for (size_t i = 0; i < sizeof document_requests / sizeof document_requests[0]; i++) {
        if (strcmp(method, document_requests[i].method)) continue;
        LspDoc *doc = find_doc(s, params);
        if (!doc) return *error = RPC_INVALID_PARAMS, NULL;
        return document_requests[i].answer(doc, params, s->stdlib_dir);
    }
    return *error = RPC_METHOD_NOT_FOUND, NULL;
}

/* A notification; true at `exit` */
static bool notified(Server *s, const char *method, const cJSON *params) {
    if (!strcmp(method, "exit")) return true;
    if (!s->initialized) return false;
    if (!strcmp(method, "textDocument/didOpen")) did_open(s, params);
    else if (!strcmp(method, "textDocument/didChange")) did_change(s, params);
    else if (!strcmp(method, "textDocument/didClose")) did_close(s, params);
    return false; /* (initialized, $/cancelRequest and the rest need nothing) */
}

int lsp_serve(FILE *in, FILE *out, const char *stdlib_dir, const char *version) {
    Server s = {.in = in, .out = out, .stdlib_dir = stdlib_dir, .version = version};
    for (;;) {
        cJSON *msg;
        LspRead r = lsp_read(in, &msg);
        if (r == LSP_END) break;
        if (r != LSP_OK) {
            lsp_error(out, NULL, r == LSP_BAD_JSON ? RPC_PARSE_ERROR : RPC_INVALID_REQUEST,
                      r == LSP_BAD_JSON ? "the message is not a JSON object" : "no valid Content-Length header");
            continue;
        }
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(msg, "id"), *params = cJSON_GetObjectItemCaseSensitive(msg, "params");
        const char *method = string_at(msg, "method");
        bool done = false;
        if (!method && id) lsp_error(out, id, RPC_INVALID_REQUEST, "a request without a method");
        else if (method && id) {
            int error = 0;
            cJSON *result = answer(&s, method, params, &error);
            if (error) lsp_error(out, id, error, error == RPC_METHOD_NOT_FOUND ? "physc lsp does not answer this method"
                                                 : error == RPC_NOT_INITIALIZED ? "initialize first"
                                                                                 : "no open document of that uri");
            else lsp_reply(out, id, result);
        } else if (method) done = notified(&s, method, params);
        cJSON_Delete(msg);
        if (done) break;
    }
    for (int i = 0; i < s.ndocs; i++) free(s.docs[i].uri), free(s.docs[i].path), free(s.docs[i].text);
    free(s.docs);
    return s.shutdown ? 0 : 1; /* (the protocol's exit status: 1 without a shutdown first) */
}
