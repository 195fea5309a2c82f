/* fuzz_frontend.c — libFuzzer target: any bytes through the lexer, parser and checker, and
   through the formatter. Every input must end in a diagnostic or a checked system: no crash,
   leak or hang; a file the formatter lays out must parse again and lay out the same. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "sema.h"

/* bytes as the source "fuzz.phys" of a new d (which owns the copy): its index */
static int add_bytes(Diags *d, FILE *devnull, const void *bytes, size_t size) {
    char *text = malloc(size + 1);
    memcpy(text, bytes, size);
    text[size] = 0;
    diag_init(d, devnull);
    return src_add(d, "fuzz.phys", text, size);
}

/* The formatter's layout of text (malloc'ed, or NULL where it does not parse) */
static char *format_text(FILE *devnull, const void *bytes, size_t size, size_t *len) {
    Diags d;
    int f = add_bytes(&d, devnull, bytes, size);
    Arena arena = {0};
    char *out = format_file(&arena, &d, f, len), *copy = NULL;
    if (out) {
        copy = malloc(*len + 1);
        memcpy(copy, out, *len + 1);
    }
    arena_free(&arena);
    diag_free(&d);
    return copy;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static FILE *devnull;
    if (!devnull) devnull = fopen("/dev/null", "w");
    Diags d;
    int f = add_bytes(&d, devnull, data, size);
    Arena arena = {0};
    const char *stdlib_dir = getenv("PHYSC_STDLIB");
    SemaOptions opt = {.stdlib_dir = stdlib_dir ? stdlib_dir : "stdlib", .require_system = true};
    sema_check_source(&arena, &d, f, &opt);
    arena_free(&arena);
    diag_free(&d);
    size_t once_len = 0, twice_len = 0;
    char *once = format_text(devnull, data, size, &once_len), *twice = once ? format_text(devnull, once, once_len, &twice_len) : NULL;
    if (once && (!twice || once_len != twice_len || memcmp(once, twice, once_len))) abort(); /* fmt(fmt(x)) = fmt(x) */
    free(once), free(twice);
    return 0;
}
