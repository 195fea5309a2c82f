/* view.c — `physc view` (view.h): the runs to show, their files checked, and the page: the
   viewer's HTML, CSS and script (viewer/, carried inside physc by tools/embed.sh) with the
   runs' files inline. */
#include "view.h"
#include "core/alloc.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/atomic_file.h"
#include "report.h"

extern const char physc_view_html[], physc_view_css[], physc_view_js[];

enum { VIEW_MAX_RUNS = 8 }; /* models drawn together: more would be a tangle, not a picture */

typedef struct ViewRun {
    char *dir, *name;
    long seed, size;
} ViewRun;

static bool has(const char *dir, const char *name) {
    char *p = report_path(dir, name);
    struct stat st;
    bool yes = stat(p, &st) == 0 && S_ISREG(st.st_mode);
    free(p);
    return yes;
}

/* The text of dir/name (NULL with a message); *len its bytes */
static char *slurp(const char *dir, const char *name, size_t *len, char *err, size_t errlen) {
    char *p = report_path(dir, name), *text = report_read_text(p, len, err, errlen);
    free(p);
    return text;
}

/* A number of scene.json's ("key": N), or -1 */
static long scene_number(const char *scene, const char *key) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\": ", key);
    const char *p = strstr(scene, pat);
    return p ? strtol(p + strlen(pat), NULL, 10) : -1;
}

/* Why dir is not a run physc view can show ("" if it is one) */
static void check_run(const char *dir, char *why, size_t len) {
    why[0] = 0;
    if (!has(dir, "metrics.json")) {
        if (has(dir, "checkpoint.bin"))
            snprintf(why, len, "%s holds an unfinished run (a checkpoint, not yet evaluated): `physc run --resume --out %s` "
                     "with its options finishes it; then its test rollouts can be shown", dir, dir);
        else snprintf(why, len, "%s is not a run's folder (no metrics.json) nor a sweep's (no sweep.json or comparison.json)",
                      dir);
        return;
    }
    if (!has(dir, "scene.json") || !has(dir, "rollouts.bin") || !has(dir, "errors.csv") || !has(dir, "trajectories.csv"))
        snprintf(why, len, "%s has no scene.json and rollouts.bin (evaluated before physc wrote them, or without test "
                 "trajectories): `physc run --resume --out %s` with its options evaluates it again and writes them", dir, dir);
}

/* Where the summary first names model `name` (its settings list the models in order) */
static size_t model_rank(const char *summary, const char *name) {
    char pat[256];
    snprintf(pat, sizeof pat, "\"%s\"", name);
    const char *at = strstr(summary, pat);
    return at ? (size_t)(at - summary) : (size_t)-1;
}

/* A sweep's folder: each model's run of the smallest seed at the largest size. The count. */
static int sweep_runs(const char *dir, ViewRun *out, char *note, size_t notelen) {
    DIR *d = opendir(dir);
    int n = 0, more = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        const char *seed = strstr(e->d_name, "-seed");
        if (e->d_name[0] == '.' || !seed) continue;
        char *sub = report_path(dir, e->d_name), why[512];
        check_run(sub, why, sizeof why);
        if (why[0]) {
            free(sub);
            continue;
        }
        ViewRun r = {.dir = sub, .seed = strtol(seed + 5, NULL, 10), .size = 0};
        const char *size = strstr(seed, "-n");
        if (size) r.size = strtol(size + 2, NULL, 10);
        r.name = prt_xalloc((size_t)(seed - e->d_name) + 1, 1, "a name");
        memcpy(r.name, e->d_name, (size_t)(seed - e->d_name)), r.name[seed - e->d_name] = 0;
        int k = 0;
        while (k < n && strcmp(out[k].name, r.name)) k++;
        if (k < n && (r.seed < out[k].seed || (r.seed == out[k].seed && r.size > out[k].size))) {
            free(out[k].dir), free(out[k].name), out[k] = r;
        } else if (k == n && n < VIEW_MAX_RUNS) {
            out[n++] = r;
        } else {
            more += k == n;
            free(r.dir), free(r.name);
        }
    }
    if (d) closedir(d);
    if (more) snprintf(note, notelen, " (%d more models not drawn: at most %d together)", more, VIEW_MAX_RUNS);
    /* in the sweep's order of its models (its summary names them first), not the folder's */
    char err[512];
    char *summary = slurp(dir, has(dir, "sweep.json") ? "sweep.json" : "comparison.json", NULL, err, sizeof err);
    for (int i = 1; summary && i < n; i++)
        for (int k = i; k > 0 && model_rank(summary, out[k].name) < model_rank(summary, out[k - 1].name); k--) {
            ViewRun t = out[k];
            out[k] = out[k - 1], out[k - 1] = t;
        }
    free(summary);
    return n;
}

/* A JSON file inline in a script element: "</" cannot close it */
static void put_json_file(FILE *f, const char *s) {
    for (; *s; s++) {
        if (s[0] == '<' && s[1] == '/') fputs("<\\", f);
        else fputc(*s, f);
    }
}

static void put_base64(FILE *f, const unsigned char *b, size_t n) {
    static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)b[i] << 16 | (i + 1 < n ? (unsigned)b[i + 1] << 8 : 0) | (i + 2 < n ? b[i + 2] : 0);
        fputc(abc[v >> 18 & 63], f), fputc(abc[v >> 12 & 63], f);
        fputc(i + 1 < n ? abc[v >> 6 & 63] : '=', f), fputc(i + 2 < n ? abc[v & 63] : '=', f);
    }
}

/* One run's files as a member of the page's data: 0, or -1 with a message */
static int put_run(FILE *f, const ViewRun *r, bool first, char *err, size_t errlen) {
    size_t nroll;
    char *scene = slurp(r->dir, "scene.json", NULL, err, errlen), *metrics = scene ? slurp(r->dir, "metrics.json", NULL, err, errlen) : NULL;
    char *errors = metrics ? slurp(r->dir, "errors.csv", NULL, err, errlen) : NULL;
    char *trajs = errors ? slurp(r->dir, "trajectories.csv", NULL, err, errlen) : NULL;
    char *roll = trajs ? slurp(r->dir, "rollouts.bin", &nroll, err, errlen) : NULL;
    int rc = roll ? 0 : -1;
    if (roll) {
        long W = scene_number(scene, "rows"), T = scene_number(scene, "times"), n = scene_number(scene, "trajectories");
        if (W < 0) W = scene_number(scene, "coords"); /* (format 1: the coordinates only) */
        if (W < 1 || T < 1 || n < 1 || (size_t)(n * T * 2 * W) * sizeof(float) != nroll)
            rc = prt_fail(err, errlen, "%s/rollouts.bin holds %zu bytes where its scene.json says %ld trajectories of %ld times "
                          "of 2 x %ld float32 numbers: the files are not of one run", r->dir, nroll, n, T, W);
    }
    if (rc == 0) {
        fprintf(f, "%s{\"name\": ", first ? "" : ",\n");
        report_put_json_string(f, r->name);
        fputs(", \"scene\": ", f), put_json_file(f, scene);
        fputs(", \"metrics\": ", f), put_json_file(f, metrics);
        fputs(", \"errors\": ", f), report_put_json_string(f, errors);
        fputs(", \"trajectories\": ", f), report_put_json_string(f, trajs);
        fputs(", \"rollouts\": \"", f), put_base64(f, (const unsigned char *)roll, nroll);
        fputs("\"}", f);
    }
    free(scene), free(metrics), free(errors), free(trajs), free(roll);
    return rc;
}

/* The template with its three places filled: 0, or -1 with a message */
static int write_page(const char *path, const ViewRun *runs, int n, char *err, size_t errlen) {
    PrtAtomicFile af;
    if (prt_atomic_open(&af, path, err, errlen) != 0) return -1;
    FILE *f = af.f;
    const char *t = physc_view_html, *places[3] = {"/*PHYSC_STYLE*/", "<!--PHYSC_DATA-->", "/*PHYSC_SCRIPT*/"};
    for (int k = 0; k < 3; k++) {
        const char *at = strstr(t, places[k]);
        if (!at) {
            prt_atomic_abort(&af);
            return prt_fail(err, errlen, "internal error: the viewer's page lacks %s", places[k]);
        }
        fwrite(t, 1, (size_t)(at - t), f);
        if (k == 0) fputs(physc_view_css, f);
        if (k == 2) fputs(physc_view_js, f);
        if (k == 1) {
            fputs("<script type=\"application/json\" id=\"physc-data\">{\"runs\": [\n", f);
            for (int i = 0; i < n; i++)
                if (put_run(f, &runs[i], i == 0, err, errlen) != 0) {
                    prt_atomic_abort(&af);
                    return -1;
                }
            fputs("]}</script>", f);
        }
        t = at + strlen(places[k]);
    }
    fputs(t, f);
    return prt_atomic_commit(&af, err, errlen);
}

int view_write_page(const ViewOptions *o) {
    char why[1024], note[128] = "", err[1024];
    ViewRun runs[VIEW_MAX_RUNS];
    int n = 0;
    struct stat st;
    if (stat(o->dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "physc: view: %s is not a folder (a run's, from physc run, or a sweep's)\n", o->dir);
        return 1;
    }
    check_run(o->dir, why, sizeof why);
    if (!why[0]) {
        const char *slash = strrchr(o->dir, '/');
        runs[n++] = (ViewRun){.dir = strcpy(prt_xalloc(strlen(o->dir) + 1, 1, "a path"), o->dir),
                              .name = strcpy(prt_xalloc(strlen(o->dir) + 1, 1, "a name"), slash && slash[1] ? slash + 1 : o->dir)};
    } else if (has(o->dir, "sweep.json") || has(o->dir, "comparison.json")) {
        if ((n = sweep_runs(o->dir, runs, note, sizeof note)) == 0) {
            fprintf(stderr, "physc: view: %s has no finished run with scene.json and rollouts.bin to show\n", o->dir);
            return 1;
        }
    } else {
        fprintf(stderr, "physc: view: %s\n", why);
        return 1;
    }
    char *out = o->out ? strcpy(prt_xalloc(strlen(o->out) + 1, 1, "a path"), o->out) : report_path(o->dir, "view.html");
    int rc = write_page(out, runs, n, err, sizeof err);
    if (rc) fprintf(stderr, "physc: view: %s\n", err);
    else if (!o->quiet) {
        stat(out, &st);
        printf("wrote %s (%.1f MB, %d %s%s): open it in a browser, it needs no network\n", out, (double)st.st_size / 1e6, n,
               n == 1 ? "run" : "runs", note);
    }
    for (int i = 0; i < n; i++) free(runs[i].dir), free(runs[i].name);
    free(out);
    return rc ? 1 : 0;
}
