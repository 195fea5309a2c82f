/* lsp_io.c — the language server's transport (lsp_internal.h): JSON-RPC messages framed by a
   Content-Length header on stdin and stdout (the LSP base protocol), parsed and written with
   Debian's cJSON. */
#include "lsp_internal.h"

#include <stdlib.h>
#include <string.h>

enum { MAX_HEADER = 1024, MAX_MESSAGE = 64 << 20 }; /* a document of 16 MiB (src_load's limit), escaped */

/* One header line (up to \r\n) into buf: its length, or -1 at the end of the input */
static int read_header_line(FILE *in, char *buf, int cap) {
    int n = 0, c;
    while ((c = fgetc(in)) != EOF) {
        if (c == '\n') {
            if (n > 0 && buf[n - 1] == '\r') n--;
            buf[n] = 0;
            return n;
        }
        if (n + 1 < cap) buf[n++] = (char)c;
    }
    return -1;
}

LspRead lsp_read(FILE *in, cJSON **msg) {
    char line[MAX_HEADER];
    long length = -1;
    *msg = NULL;
    for (;;) {
        int n = read_header_line(in, line, sizeof line);
        if (n < 0) return LSP_END;
        if (n == 0 && length >= 0) break;
        if (n == 0) continue; /* (a stray blank line before the headers) */
        if (!strncasecmp(line, "Content-Length:", 15)) {
            char *end;
            length = strtol(line + 15, &end, 10);
            if (end == line + 15 || length < 0) length = -2;
        }
    }
    if (length < 0 || length > MAX_MESSAGE) { /* (checked before allocating) */
        for (long i = 0; length > 0 && i < length && fgetc(in) != EOF; i++) continue;
        return LSP_BAD_HEADER;
    }
    char *body = malloc((size_t)length + 1);
    if (!body) return LSP_BAD_HEADER;
    size_t got = fread(body, 1, (size_t)length, in);
    body[got] = 0;
    if (got != (size_t)length) {
        free(body);
        return LSP_END;
    }
    *msg = cJSON_ParseWithLength(body, (size_t)length);
    free(body);
    return *msg && cJSON_IsObject(*msg) ? LSP_OK : (cJSON_Delete(*msg), *msg = NULL, LSP_BAD_JSON);
}

void lsp_write(FILE *out, cJSON *msg) {
    cJSON_AddStringToObject(msg, "jsonrpc", "2.0");
    char *text = cJSON_PrintUnformatted(msg);
    if (!text) return;
    fprintf(out, "Content-Length: %zu\r\n\r\n%s", strlen(text), text);
    fflush(out);
    cJSON_free(text);
}

void lsp_reply(FILE *out, const cJSON *id, cJSON *result) {
    cJSON *msg = cJSON_CreateObject();
    cJSON_AddItemToObject(msg, "id", id ? cJSON_Duplicate(id, 1) : cJSON_CreateNull());
    cJSON_AddItemToObject(msg, "result", result ? result : cJSON_CreateNull());
    lsp_write(out, msg);
    cJSON_Delete(msg);
}

void lsp_error(FILE *out, const cJSON *id, int code, const char *message) {
    cJSON *msg = cJSON_CreateObject(), *err = cJSON_CreateObject();
    cJSON_AddItemToObject(msg, "id", id ? cJSON_Duplicate(id, 1) : cJSON_CreateNull());
    cJSON_AddNumberToObject(err, "code", code);
    cJSON_AddStringToObject(err, "message", message);
    cJSON_AddItemToObject(msg, "error", err);
    lsp_write(out, msg);
    cJSON_Delete(msg);
}

void lsp_notify(FILE *out, const char *method, cJSON *params) {
    cJSON *msg = cJSON_CreateObject();
    cJSON_AddStringToObject(msg, "method", method);
    cJSON_AddItemToObject(msg, "params", params);
    lsp_write(out, msg);
    cJSON_Delete(msg);
}
