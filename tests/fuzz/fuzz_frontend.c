/* fuzz_frontend.c — libFuzzer target: any bytes through the lexer, parser and checker.
   Every input must end in a diagnostic or a checked system: no crash, leak or hang. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sema.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static FILE *devnull;
    if (!devnull) devnull = fopen("/dev/null", "w");
    char *text = malloc(size + 1);
    memcpy(text, data, size);
    text[size] = 0;
    Diags d;
    diag_init(&d, devnull);
    int f = src_add(&d, "fuzz.phys", text, size);
    Arena arena = {0};
    const char *stdlib_dir = getenv("PHYSC_STDLIB");
    SemaOptions opt = {.stdlib_dir = stdlib_dir ? stdlib_dir : "stdlib", .require_system = true};
    sema_check_source(&arena, &d, f, &opt);
    arena_free(&arena);
    diag_free(&d);
    return 0;
}
