/* view.c — `physc view` (view.h): the runs to show, their files checked, and the page: the
   viewer's HTML, CSS and script (viewer/, carried inside physc by tools/embed.sh) with the
   runs' files inline. */
#include "view.h"
#include "core/alloc.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/atomic_file.h"
#include "report.h"
#include "view_video.h"

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

/* Every finished run of a sweep's folder (its subfolders NAME-seedS[-nN]), into a list *out in
   the sweep's order of its models (its summary names them first), then by seed and size; their
   count */
static int sweep_all_runs(const char *dir, const char *summary, ViewRun **out) {
    DIR *d = opendir(dir);
    int n = 0, cap = 0;
    ViewRun *all = NULL;
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
        if (n == cap) all = prt_xrealloc(all, (size_t)(cap = cap ? 2 * cap : 16), sizeof *all, "the sweep's runs");
        ViewRun r = {.dir = sub, .seed = strtol(seed + 5, NULL, 10), .size = 0};
        const char *size = strstr(seed, "-n");
        if (size) r.size = strtol(size + 2, NULL, 10);
        r.name = prt_xalloc((size_t)(seed - e->d_name) + 1, 1, "a name");
        memcpy(r.name, e->d_name, (size_t)(seed - e->d_name)), r.name[seed - e->d_name] = 0;
        all[n++] = r;
    }
    if (d) closedir(d);
    for (int i = 1; i < n; i++) /* insertion sort: a sweep has dozens of runs, not thousands */
        for (int k = i; k > 0; k--) {
            ViewRun *a = &all[k - 1], *b = &all[k];
            size_t ra = summary ? model_rank(summary, a->name) : 0, rb = summary ? model_rank(summary, b->name) : 0;
            int c = ra != rb ? (rb < ra ? 1 : -1) : strcmp(a->name, b->name) ? strcmp(a->name, b->name)
                    : a->seed != b->seed ? (b->seed < a->seed ? 1 : -1) : (b->size > a->size ? 1 : b->size < a->size ? -1 : 0);
            if (c <= 0) break;
            ViewRun t = *a;
            *a = *b, *b = t;
        }
    *out = all;
    return n;
}

/* Whether name is one of the comma-separated list */
static bool listed(const char *list, const char *name) {
    size_t len = strlen(name);
    for (const char *p = list; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
        if (!strncmp(p, name, len) && (p[len] == ',' || !p[len])) return true;
    return false;
}

/* The runs to draw from all (sorted), as o chooses: each model's run of o->seed (else its
   smallest) at o->size (else its largest), the models o->models names in its order (else the
   sweep's first VIEW_MAX_RUNS). Their count into drawn (indices into all), or -1 after saying
   what is missing. */
static int choose_runs(const ViewOptions *o, const ViewRun *all, int nall, int drawn[VIEW_MAX_RUNS], char *note,
                       size_t notelen) {
    int n = 0, models = 0;
    char want[64][128];
    int nwant = 0;
    for (const char *p = o->models; p && *p && nwant < 64; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
        snprintf(want[nwant], sizeof want[nwant], "%.*s", (int)(strchr(p, ',') ? strchr(p, ',') - p : (long)strlen(p)), p), nwant++;
    for (int i = 0; i < nall; i++) {
        if (i && !strcmp(all[i].name, all[i - 1].name)) continue; /* a model's first run: the next model */
        models++;
        int best = -1;
        for (int j = i; j < nall && !strcmp(all[j].name, all[i].name); j++)
            if ((!o->seed_given || all[j].seed == o->seed) && (!o->size || all[j].size == o->size) &&
                (best < 0 || all[j].seed < all[best].seed || (all[j].seed == all[best].seed && all[j].size > all[best].size)))
                best = j;
        if (o->models && !listed(o->models, all[i].name)) continue;
        if (best < 0) {
            char what[96] = "", size[48] = "";
            if (o->seed_given) snprintf(what, sizeof what, " of seed %ld", o->seed);
            if (o->size) snprintf(size, sizeof size, " at %ld training trajectories", o->size);
            fprintf(stderr, "physc: view: %s has no finished run of model %s%s%s (its runs:", o->dir, all[i].name, what, size);
            for (int j = i; j < nall && !strcmp(all[j].name, all[i].name); j++) {
                fprintf(stderr, "%s seed %ld", j > i ? "," : "", all[j].seed);
                if (all[j].size) fprintf(stderr, " with %ld trajectories", all[j].size);
            }
            fprintf(stderr, ")\n");
            return -1;
        }
        if (n < VIEW_MAX_RUNS) drawn[n++] = best;
    }
    for (int k = 0; k < nwant; k++) {
        bool found = false;
        for (int i = 0; i < nall && !found; i++) found = !strcmp(all[i].name, want[k]);
        if (!found) {
            fprintf(stderr, "physc: view: %s has no finished run of a model %s (its models:", o->dir, want[k]);
            for (int i = 0; i < nall; i++)
                if (!i || strcmp(all[i].name, all[i - 1].name)) fprintf(stderr, " %s", all[i].name);
            fprintf(stderr, ")\n");
            return -1;
        }
    }
    if (o->models) /* in the order asked */
        for (int i = 1; i < n; i++)
            for (int k = i; k > 0; k--) {
                int a = 0, b = 0;
                while (a < nwant && strcmp(want[a], all[drawn[k - 1]].name)) a++;
                while (b < nwant && strcmp(want[b], all[drawn[k]].name)) b++;
                if (b >= a) break;
                int t = drawn[k];
                drawn[k] = drawn[k - 1], drawn[k - 1] = t;
            }
    int chosen = o->models ? nwant : models;
    if (chosen > n)
        snprintf(note, notelen, " (%d more models not drawn: at most %d together; --models picks them)", chosen - n,
                 VIEW_MAX_RUNS);
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
        if (r->seed >= 0) fprintf(f, ", \"seed\": %ld, \"size\": %ld", r->seed, r->size); /* (a sweep's run) */
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

/* The video's choices against the run's scene: 0, or the exit status after the message (2: a
   --traj it has not) */
static int check_video(const ViewOptions *o, const ViewRun *r) {
    char err[512], *scene = slurp(r->dir, "scene.json", NULL, err, sizeof err);
    if (!scene) {
        fprintf(stderr, "physc: view: %s\n", err);
        return 1;
    }
    long n = scene_number(scene, "trajectories");
    free(scene);
    if (prt_atomic_probe(o->mp4, err, sizeof err) != 0) { /* (before the page and the frames) */
        fprintf(stderr, "physc: view: --mp4: %s\n", err);
        return 1;
    }
    if (o->traj >= n) {
        fprintf(stderr, "physc: view: --traj %ld: %s has %ld test trajectories (0 to %ld)\n", o->traj, r->dir, n, n - 1);
        return 2;
    }
    return 0;
}

/* The video of the page at `page`: the exit status (0, or 1 after the message) */
static int write_video(const ViewOptions *o, const ViewRun *r, const char *page) {
    char err[1024], *scene = slurp(r->dir, "scene.json", NULL, err, sizeof err);
    if (!scene) {
        fprintf(stderr, "physc: view: %s\n", err);
        return 1;
    }
    const char *at = strstr(scene, "\"dt\": ");
    double dt = at ? strtod(at + 6, NULL) : 0;
    long times = scene_number(scene, "times");
    /* the page's clock: a time unit a second, but 4 s at least (within 5 to 60 frames a second) */
    double frame_s = fmax(dt, 4.0 / (double)(times > 1 ? times - 1 : 1));
    long fps = o->fps ? o->fps : lround(fmin(60, fmax(5, 1 / frame_s)));
    ViewVideo v = {.page = page, .out = o->mp4, .traj = o->traj < 0 ? 0 : o->traj, .layout = o->layout ? o->layout : "overlay",
                   .times = times, .fps = fps, .width = 1280, .height = 720, .quiet = o->quiet};
    free(scene);
    if (view_write_mp4(&v, err, sizeof err) != 0) {
        fprintf(stderr, "physc: view: %s\n", err);
        return 1;
    }
    if (!o->quiet) {
        struct stat st;
        stat(o->mp4, &st);
        printf("wrote %s (%.1f MB, %ld frames at %ld a second, %dx%d: test trajectory %ld, %s)\n", o->mp4,
               (double)st.st_size / 1e6, v.times, v.fps, (int)v.width, (int)v.height, v.traj,
               strcmp(v.layout, "side") ? "the truth a ghost under the model" : "truth and model side by side");
    }
    return 0;
}

/* A sweep's summary and its figures (every .svg of its folder) as the page's `sweep` member */
static void put_sweep(FILE *f, const char *dir, const char *summary) {
    fputs(",\n\"sweep\": {\"summary\": ", f), put_json_file(f, summary);
    fputs(", \"figures\": [", f);
    DIR *d = opendir(dir);
    struct dirent *e;
    char *names[64];
    int n = 0;
    while (d && (e = readdir(d)) && n < 64) {
        size_t len = strlen(e->d_name);
        if (len > 4 && !strcmp(e->d_name + len - 4, ".svg"))
            names[n++] = strcpy(prt_xalloc(len + 1, 1, "a name"), e->d_name);
    }
    if (d) closedir(d);
    for (int i = 1; i < n; i++) /* in a fixed order: the paper's figures by name */
        for (int k = i; k > 0 && strcmp(names[k], names[k - 1]) < 0; k--) {
            char *t = names[k];
            names[k] = names[k - 1], names[k - 1] = t;
        }
    for (int i = 0, k = 0; i < n; i++) {
        size_t len;
        char err[256], *svg = slurp(dir, names[i], &len, err, sizeof err);
        if (svg) {
            fprintf(f, "%s{\"name\": ", k++ ? ", " : "");
            report_put_json_string(f, names[i]);
            fputs(", \"svg\": \"", f), put_base64(f, (const unsigned char *)svg, len), fputs("\"}", f);
        }
        free(svg), free(names[i]);
    }
    fputs("]}", f);
}

/* The template with its three places filled: 0, or -1 with a message. summary: a sweep's
   (sweep_dir its folder), or NULL for one run. */
static int write_page(const char *path, const ViewRun *runs, int n, const char *sweep_dir, const char *summary, char *err,
                      size_t errlen) {
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
            fputs("]", f);
            if (summary) put_sweep(f, sweep_dir, summary);
            fputs("}</script>", f);
        }
        t = at + strlen(places[k]);
    }
    fputs(t, f);
    return prt_atomic_commit(&af, err, errlen);
}

int view_write_page(const ViewOptions *o) {
    char why[1024], note[160] = "", err[1024];
    ViewRun runs[VIEW_MAX_RUNS], *all = NULL;
    int n = 0, nall = 0;
    char *summary = NULL;
    struct stat st;
    if (stat(o->dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "physc: view: %s is not a folder (a run's, from physc run, or a sweep's)\n", o->dir);
        return 1;
    }
    check_run(o->dir, why, sizeof why);
    bool sweep = why[0] && (has(o->dir, "sweep.json") || has(o->dir, "comparison.json"));
    if (!sweep && (o->models || o->seed_given || o->size)) {
        fprintf(stderr, "physc: view: --models, --seed and --size choose among a sweep's runs; %s is %s\n", o->dir,
                why[0] ? "not a sweep's folder" : "one run's folder");
        return 2;
    }
    if (!why[0]) {
        const char *slash = strrchr(o->dir, '/');
        runs[n++] = (ViewRun){.seed = -1, .dir = strcpy(prt_xalloc(strlen(o->dir) + 1, 1, "a path"), o->dir),
                              .name = strcpy(prt_xalloc(strlen(o->dir) + 1, 1, "a name"), slash && slash[1] ? slash + 1 : o->dir)};
    } else if (sweep) {
        summary = slurp(o->dir, has(o->dir, "sweep.json") ? "sweep.json" : "comparison.json", NULL, err, sizeof err);
        nall = sweep_all_runs(o->dir, summary, &all);
        int drawn[VIEW_MAX_RUNS];
        n = nall ? choose_runs(o, all, nall, drawn, note, sizeof note) : 0;
        if (nall == 0) fprintf(stderr, "physc: view: %s has no finished run with scene.json and rollouts.bin to show\n", o->dir);
        for (int i = 0; i < n; i++) runs[i] = all[drawn[i]];
        if (n <= 0) {
            for (int i = 0; i < nall; i++) free(all[i].dir), free(all[i].name);
            free(all), free(summary);
            return 1;
        }
    } else {
        fprintf(stderr, "physc: view: %s\n", why);
        return 1;
    }
    char *out = o->out ? strcpy(prt_xalloc(strlen(o->out) + 1, 1, "a path"), o->out) : report_path(o->dir, "view.html");
    int rc = o->mp4 ? check_video(o, &runs[0]) : 0;
    if (rc == 0 && write_page(out, runs, n, o->dir, summary, err, sizeof err) != 0) {
        fprintf(stderr, "physc: view: %s\n", err);
        rc = 1;
    } else if (rc == 0 && !o->quiet) {
        stat(out, &st);
        printf("wrote %s (%.1f MB, %d %s%s): open it in a browser, it needs no network\n", out, (double)st.st_size / 1e6, n,
               n == 1 ? "run" : "runs", note);
    }
    if (rc == 0 && o->mp4) rc = write_video(o, &runs[0], out);
    if (all) n = 0; /* (the drawn runs are all's) */
    for (int i = 0; i < n; i++) free(runs[i].dir), free(runs[i].name);
    for (int i = 0; i < nall; i++) free(all[i].dir), free(all[i].name);
    free(all), free(summary), free(out);
    return rc;
}
