/* emit_shared.c — `physc emit-c --shared`: a trained model as a shared library with the C
   ABI of runtime/abi/physc_model.h. Its kernels are the JIT's own objects (the instructions
   `physc simulate --params` runs, so the library's rollouts are that command's to the bit),
   its tables the emitted C of emit_main.c, and the runtime is linked in; cc links them. */
#include "emit_shared.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "abi/physc_model.h"
#include "arena.h"
#include "core/alloc.h"
#include "core/atomic_file.h"
#include "dynamics.h"
#include "emit_main.h"
#include "lower.h"

bool runtime_paths(char *build, char *include, size_t len) {
    char exe[PATH_MAX], cwd[PATH_MAX], probe[PATH_MAX + 32];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    char *slash = n > 0 ? (exe[n] = 0, strrchr(exe, '/')) : NULL;
    if (!slash) return false;
    *slash = 0; /* exe: the build folder, <repo>/build */
    snprintf(probe, sizeof probe, "%s/../runtime/system/sim.h", exe);
    bool found = access(probe, R_OK) == 0;
    snprintf(probe, sizeof probe, "%s/libphysrt.a", exe);
    if (!found || access(probe, R_OK) != 0) return false;
    size_t c = getcwd(cwd, sizeof cwd) ? strlen(cwd) : 0;
    const char *dir = c && !strncmp(exe, cwd, c) && exe[c] == '/' ? exe + c + 1 : exe;
    const char *up = strrchr(dir, '/');
    snprintf(build, len, "%s", dir);
    if (up) snprintf(include, len, "%.*s/runtime", (int)(up - dir), dir);
    else snprintf(include, len, "runtime");
    return true;
}

/* Writes len bytes to path: 0, or -1 with a message */
static int write_file(const char *path, const void *data, size_t len, char *err, size_t errlen) {
    FILE *f = fopen(path, "wb");
    bool ok = f && fwrite(data, 1, len, f) == len;
    if (f && fclose(f) != 0) ok = false;
    if (!ok) snprintf(err, errlen, "cannot write %.900s: %s", path, strerror(errno));
    return ok ? 0 : -1;
}

/* Runs argv (argv[0] found on PATH) with its standard error into log: its exit status, or -1 */
static int run_logged(char *const argv[], const char *log) {
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        if (!freopen(log, "w", stderr) || !freopen("/dev/null", "w", stdout)) _exit(127);
        execvp(argv[0], argv);
        fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    int status = 0;
    if (waitpid(pid, &status, 0) < 0) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* The objects, the tables' C and the export list in dir; their paths into argv from *at */
static int write_parts(const char *dir, const Compiled *c, const System *sys, const EmitModel *em, char **argv,
                       int *at, char *err, size_t errlen) {
    char path[PATH_MAX + 32];
    const Jit *jits[2] = {c->jit, c->jit_extra};
    for (int g = 0; g < 2; g++)
        for (int i = 0; i < jit_object_count(jits[g]); i++) {
            const JitObject *o = jit_object(jits[g], i);
            snprintf(path, sizeof path, "%s/kernels%d-%d.o", dir, g, i);
            if (write_file(path, o->data, o->len, err, errlen) != 0) return -1;
            argv[(*at)++] = xstrdup(path);
        }
    snprintf(path, sizeof path, "%s/tables.c", dir);
    FILE *f = fopen(path, "w");
    if (!f) return snprintf(err, errlen, "cannot write %.900s: %s", path, strerror(errno)), -1;
    int nmass = dynamics_mass_params(sys), nparams = nmass + lower_free_lengths(sys);
    int *rows = prt_xcalloc((size_t)(nparams - nmass) + 1, sizeof(int), "emit-c tables");
    lower_free_length_rows(sys, rows);
    emitc_shared_tables(f, sys, &c->k, c->jitted, c->njitted, c->params, nparams, nmass, rows, em);
    free(rows);
    if (fclose(f) != 0) return snprintf(err, errlen, "cannot write %.900s: %s", path, strerror(errno)), -1;
    argv[(*at)++] = xstrdup(path);
    static const char exports[] = "{ global: physc_*; local: *; };\n"; /* the ABI, and nothing of the runtime */
    snprintf(path, sizeof path, "%s/exports.map", dir);
    return write_file(path, exports, strlen(exports), err, errlen);
}

/* cc's command line for the library out (argv[0..*at) already holds the parts) */
static void link_command(char **argv, int *at, const char *dir, const char *build, const char *include,
                         const char *out) {
    char buf[PATH_MAX + 64];
    const char *flags[] = {"-O2", "-std=c17", "-fPIC", "-shared", NULL};
    char *head[16];
    int nh = 0;
    head[nh++] = xstrdup("cc");
    for (int i = 0; flags[i]; i++) head[nh++] = xstrdup(flags[i]);
    snprintf(buf, sizeof buf, "-I%s", include);
    head[nh++] = xstrdup(buf);
    memmove(argv + nh, argv, sizeof(char *) * (size_t)*at); /* the parts after the flags */
    memcpy(argv, head, sizeof(char *) * (size_t)nh);
    *at += nh;
    snprintf(buf, sizeof buf, "%s/libphysrt.a", build);
    argv[(*at)++] = xstrdup(buf);
    argv[(*at)++] = xstrdup("-lopenblas");
    argv[(*at)++] = xstrdup("-lm");
    snprintf(buf, sizeof buf, "-Wl,--version-script=%s/exports.map", dir);
    argv[(*at)++] = xstrdup(buf);
    argv[(*at)++] = xstrdup("-o");
    argv[(*at)++] = xstrdup(out);
    argv[*at] = NULL;
}

/* Removes dir and the files in it (its own: no subfolders) */
static void remove_dir(const char *dir, char **argv, int n) {
    char path[PATH_MAX + 32];
    for (int i = 0; i < n; i++)
        if (argv[i] && !strncmp(argv[i], dir, strlen(dir))) unlink(argv[i]);
    const char *also[] = {"exports.map", "cc.log", NULL};
    for (int i = 0; also[i]; i++) snprintf(path, sizeof path, "%s/%s", dir, also[i]), unlink(path);
    rmdir(dir);
}

int emit_shared_library(System *sys, const Model *md, const PrtModelConfig *cfg, const double *theta, long nparams,
                        const char *params_path, const char *out, bool quiet) {
    char err[1024], build[PATH_MAX], include[PATH_MAX + 16];
    if (prt_atomic_probe(out, err, sizeof err) != 0) return fprintf(stderr, "physc: emit-c: %s\n", err), 1;
    if (!runtime_paths(build, include, sizeof build))
        return fprintf(stderr, "physc: emit-c: --shared links build/libphysrt.a and runtime/'s headers, which are not "
                       "beside this physc\n"), 1;
    Compiled c;
    jit_keep_objects(true);
    /* as physc simulate --params, with the VJP kernels training has (the library's derivatives) */
    bool opened = compiled_open_library(sys, &c, 2, md, err, sizeof err);
    jit_keep_objects(false);
    if (!opened) return fprintf(stderr, "physc: emit-c: %s\n", err), 1;
    const char *tmp = getenv("TMPDIR");
    char dir[PATH_MAX], partial[PATH_MAX + 16], log[PATH_MAX + 16];
    snprintf(dir, sizeof dir, "%s/physc-shared.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    snprintf(partial, sizeof partial, "%s.partial", out);
    char **argv = prt_xcalloc((size_t)(jit_object_count(c.jit) + jit_object_count(c.jit_extra)) + 40, sizeof(char *),
                              "cc's command line");
    int at = 0, rc = 1;
    EmitModel em = {.name = md->name, .params_path = params_path, .cfg = *cfg, .theta = theta, .nparams = nparams};
    if (!mkdtemp(dir)) {
        fprintf(stderr, "physc: emit-c: cannot make a folder in %s: %s\n", tmp && *tmp ? tmp : "/tmp", strerror(errno));
    } else if (write_parts(dir, &c, sys, &em, argv, &at, err, sizeof err) != 0) {
        fprintf(stderr, "physc: emit-c: %s\n", err);
    } else {
        link_command(argv, &at, dir, build, include, partial);
        snprintf(log, sizeof log, "%s/cc.log", dir);
        int status = run_logged(argv, log);
        if (status != 0) {
            fprintf(stderr, "physc: emit-c: cc failed (status %d) linking %s; its messages:\n", status, out);
            FILE *f = fopen(log, "r");
            char line[512];
            for (int i = 0; f && i < 20 && fgets(line, sizeof line, f); i++) fputs(line, stderr);
            if (f) fclose(f);
            unlink(partial);
        } else if (rename(partial, out) != 0) {
            fprintf(stderr, "physc: emit-c: cannot rename %s to %s: %s\n", partial, out, strerror(errno));
            unlink(partial);
        } else {
            rc = 0;
        }
    }
    if (!rc && !quiet)
        printf("wrote %s: model %s (%s, trained: %s%s) as a shared library with the C ABI of %s/abi/physc_model.h "
               "(version %d); from Python: python/physc (docs/python.md)\n",
               out, md->name, cfg->family->name, params_path, cfg->net[0].f32 ? ", predicting in f32" : "", include,
               PHYSC_MODEL_ABI_VERSION);
    remove_dir(dir, argv, at);
    for (int i = 0; i < at; i++) free(argv[i]);
    free(argv);
    compiled_close(&c);
    return rc;
}
