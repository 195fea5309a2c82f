/* loaded.h — check a .phys file and compile it: the step the unit tests and the bench share.
   Header-only (static functions), so each test stays one file. */
#ifndef PHYSC_TEST_LOADED_H
#define PHYSC_TEST_LOADED_H
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "driver.h"
#include "models/model.h"
#include "sema.h"

typedef struct Loaded {
    Arena arena;
    Diags d;
    System *sys;     /* NULL if the file did not check */
    Compiled c;      /* valid when `compiled` */
    bool compiled;
    double front_ms; /* checking the file: lexing, parsing, sema */
} Loaded;

/* Checks `path` (diagnostics to diag_to) and compiles it, for `purpose` (COMPILE_* flags) or,
   when model >= 0, for the file's model of that index. On failure err says why ("does not
   check" or the compiler's message) and l->sys tells which step failed. loaded_close is
   right either way. */
static bool loaded_open(Loaded *l, const char *path, int purpose, int model, FILE *diag_to, char *err, size_t errlen) {
    memset(l, 0, sizeof *l);
    diag_init(&l->d, diag_to);
    SemaOptions opt = {.stdlib_dir = "stdlib", .require_system = true};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    l->sys = sema_check_file(&l->arena, &l->d, path, &opt);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    l->front_ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-6;
    if (!l->sys) {
        snprintf(err, errlen, "does not check");
        return false;
    }
    l->compiled = model >= 0 ? compiled_open_model(l->sys, &l->c, 2, &l->sys->models[model], err, errlen)
                             : compiled_open(l->sys, &l->c, 2, purpose, err, errlen);
    return l->compiled;
}

static void loaded_close(Loaded *l) {
    if (l->compiled) compiled_close(&l->c);
    l->compiled = false;
    arena_free(&l->arena);
    diag_free(&l->d);
}

/* A CHNN or CLNN model of s with mlp and learned masses, the defaults otherwise. */
static inline int open_cartesian(PrtModel *m, PrtSystem *s, bool lagrangian, const PrtMlp *mlp, char *err,
                                 size_t errlen) {
    PrtModelConfig cfg = prt_model_config(prt_model_family(lagrangian ? "clnn" : "chnn"), mlp, true);
    return prt_model_open(m, s, &cfg, err, errlen);
}

#endif
