#define _GNU_SOURCE /* vasprintf */
/* diag_json.c — diagnostics for tools (`--diagnostics-format json`): one JSON object a line
   for each error or warning, with its span, severity, code, message, its notes and, where the
   message suggests a name ("did you mean 'x'?"), a fix-it that puts the name in the span.
   The text form (diag.c) says the same: the same messages, spans and order. */
#include "diag_json.h"
#include "arena.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A JSON string: quotes, backslashes and control bytes escaped, bytes that are not UTF-8 as
   U+FFFD */
static void put_string(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; p && *p;) {
        unsigned c = *p;
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c), p++;
        else if (c == '\n') fputs("\\n", f), p++;
        else if (c == '\t') fputs("\\t", f), p++;
        else if (c < 0x20 || c == 0x7f) fprintf(f, "\\u%04x", c), p++;
        else if (c < 0x80) fputc((int)c, f), p++;
        else {
            size_t k = c >= 0xc2 && c < 0xe0 ? 2 : c >= 0xe0 && c < 0xf0 ? 3 : c >= 0xf0 && c < 0xf5 ? 4 : 0, i = 1;
            while (k && i < k && (p[i] & 0xc0) == 0x80) i++;
            if (k && i == k) fwrite(p, 1, k, f), p += k;
            else fputs("\\ufffd", f), p++;
        }
    }
    fputc('"', f);
}

/* A message's kind, as a stable code: FNV-1a of the message with what it quotes ('...') and
   its numbers left out (the same diagnostic has the same code whatever names and numbers it
   shows) */
static unsigned message_code(const char *message) {
    unsigned h = 2166136261u;
    bool quoted = false;
    for (const unsigned char *p = (const unsigned char *)message; *p; p++) {
        if (*p == '\'') quoted = !quoted;
        else if (quoted || (*p >= '0' && *p <= '9') || *p == '.') continue;
        h = (h ^ *p) * 16777619u;
    }
    return h;
}

void diag_json_record(Diags *d, DiagLevel level, Loc loc, bool located, const char *fmt, va_list ap) {
    if (d->nrecords == d->cap_records) {
        d->cap_records = d->cap_records ? 2 * d->cap_records : 16;
        d->records = xrealloc(d->records, (size_t)d->cap_records, sizeof *d->records);
    }
    if (level != DIAG_NOTE && !d->deferring) diag_json_emit(d, false); /* the last one's notes are all in */
    char *message = NULL;
    if (vasprintf(&message, fmt, ap) < 0) die("out of memory");
    int parent = -1;
    for (int i = d->nrecords - 1; level == DIAG_NOTE && i >= 0 && parent < 0; i--)
        if (d->records[i].level != DIAG_NOTE) parent = i;
    d->records[d->nrecords] = (DiagRecord){.level = level, .loc = loc, .located = located, .message = message,
                                           .code = message_code(message), .parent = parent, .seq = d->nrecords};
    d->nrecords++;
}

static void put_span(FILE *f, const Diags *d, const DiagRecord *r) {
    if (!r->located) {
        fputs("\"file\": null, \"line\": null, \"column\": null, \"end_line\": null, \"end_column\": null", f);
        return;
    }
    const char *path = r->loc.file >= 0 && r->loc.file < d->nfiles ? d->files[r->loc.file]->path : "physc";
    fputs("\"file\": ", f), put_string(f, path);
    fprintf(f, ", \"line\": %d, \"column\": %d, \"end_line\": %d, \"end_column\": %d", r->loc.first_line,
            r->loc.first_column, r->loc.last_line, r->loc.last_column);
}

/* "did you mean 'x'?": the fix-it that writes x over the span */
static void put_fixits(FILE *f, const DiagRecord *r) {
    const char *at = strstr(r->message, "did you mean '"), *end = at ? strchr(at + 14, '\'') : NULL;
    fputs(", \"fixits\": [", f);
    if (end && r->located && r->loc.first_line == r->loc.last_line) {
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)(end - at - 14), at + 14);
        fprintf(f, "{\"line\": %d, \"column\": %d, \"end_line\": %d, \"end_column\": %d, \"replacement\": ", r->loc.first_line,
                r->loc.first_column, r->loc.last_line, r->loc.last_column);
        put_string(f, name), fputc('}', f);
    }
    fputc(']', f);
}

static const char *severity(DiagLevel l) { return l == DIAG_ERROR ? "error" : l == DIAG_WARNING ? "warning" : "note"; }

static void put_record(FILE *f, const Diags *d, int i) {
    const DiagRecord *r = &d->records[i];
    fputc('{', f), put_span(f, d, r);
    fprintf(f, ", \"severity\": \"%s\", \"code\": \"P%08x\", \"message\": ", severity(r->level), r->code);
    put_string(f, r->message);
    fputs(", \"notes\": [", f);
    for (int k = i + 1, n = 0; k < d->nrecords && d->records[k].parent == i; k++) {
        fputs(n++ ? ", {" : "{", f), put_span(f, d, &d->records[k]);
        fputs(", \"message\": ", f), put_string(f, d->records[k].message), fputc('}', f);
    }
    fputc(']', f), put_fixits(f, r), fputs("}\n", f);
}

static int record_order(const void *pa, const void *pb) {
    const DiagRecord *a = pa, *b = pb;
    int fa = a->located ? a->loc.file : -1, fb = b->located ? b->loc.file : -1;
    if (fa != fb) return fa < fb ? -1 : 1;
    if (a->loc.first_line != b->loc.first_line) return a->loc.first_line < b->loc.first_line ? -1 : 1;
    if (a->loc.first_column != b->loc.first_column) return a->loc.first_column < b->loc.first_column ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* Records [from, n) in source order, each top-level one followed by its notes */
static void sort_groups(Diags *d, int from) {
    int n = d->nrecords - from, ntop = 0;
    DiagRecord *tops = xalloc((size_t)n + 1, sizeof *tops), *sorted = xalloc((size_t)n + 1, sizeof *sorted);
    for (int i = from; i < d->nrecords; i++)
        if (d->records[i].parent < 0) tops[ntop++] = d->records[i];
    qsort(tops, (size_t)ntop, sizeof *tops, record_order);
    int m = 0;
    for (int t = 0; t < ntop; t++) {
        int old = (int)tops[t].seq, at = from + m;
        sorted[m++] = tops[t];
        for (int i = old + 1; i < d->nrecords && d->records[i].parent == old; i++) {
            sorted[m] = d->records[i];
            sorted[m++].parent = at;
        }
    }
    for (int i = 0; i < m; i++) sorted[i].seq = from + i, d->records[from + i] = sorted[i];
    free(tops), free(sorted);
}

void diag_json_emit(Diags *d, bool sort) {
    if (sort && d->nrecords - d->emitted > 1) sort_groups(d, d->emitted);
    for (int i = d->emitted; i < d->nrecords; i++)
        if (d->records[i].parent < 0) put_record(d->out, d, i);
    for (int i = d->emitted; i < d->nrecords; i++) free(d->records[i].message);
    d->emitted = d->nrecords = 0;
    fflush(d->out);
}
