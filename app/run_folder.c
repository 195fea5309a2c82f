/* run_folder.c — the run's folder (run_internal.h): made and locked, and what an earlier run
   there allows: reused, continued, refused, or its training adopted. */
#include "run_internal.h"
#include "core/alloc.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/atomic_file.h"
#include "core/input_file.h"
#include "report.h"
#include "trained.h"

int run_make_dirs(const char *path, char *err, size_t errlen) {
    char *p = strcpy(prt_xalloc(strlen(path) + 1, 1, "a path"), path);
    for (char *s = p + 1;; s++) {
        if (*s && *s != '/') continue;
        char c = *s;
        *s = 0;
        if (mkdir(p, 0777) != 0 && errno != EEXIST) {
            snprintf(err, errlen, "cannot create directory %s: %s", p, strerror(errno));
            free(p);
            return -1;
        }
        if (!c) break;
        *s = c;
    }
    struct stat st;
    if (stat(p, &st) != 0 || !S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "%s exists and is not a directory", p);
        free(p);
        return -1;
    }
    free(p);
    return 0;
}

/* The model whose run the folder holds (the lock file's record `was` names the last one that
   wrote there, a finished run's metrics.json its own), into name; false if neither says. */
static bool run_model_name(const char *dir, char *name, size_t len);
static bool folder_model(const char *dir, const char *was, char *name, size_t len) {
    if (!strncmp(was, "model ", 6)) {
        snprintf(name, len, "%s", was + 6);
        return true;
    }
    return run_model_name(dir, name, len);
}

/* What the folder's checkpoint (if any) allows: a new run replaces no run there, finished,
   unfinished or unreadable, unless forced; a resumed run continues only its own model's
   run, and says how it continues. 0: start afresh; 1: continue the checkpoint (asked, or
   the folder holds this very run finished: evaluated again, nothing trained); -1: refused. */
static int check_previous(const char *dir, const char *lock_was, const char *ckpt, const char *model, const RunOptions *o,
                          const PrtFingerprint *fp, long epochs, FILE *out, char *err, size_t errlen) {
    if (o->force) return 0;
    if (access(ckpt, F_OK) != 0) {
        if (!o->resume) return 0;
        snprintf(err, errlen, "--resume: there is no run to continue: %s does not exist (leave out --resume to start "
                 "one)", ckpt);
        return -1;
    }
    PrtCkptHeader h;
    double first;
    PrtCkptArray loss = {"loss", &first, -1}; /* any length: that of the run that wrote it */
    char why[512];
    if (prt_ckpt_read_any(ckpt, &h, &loss, 1, why, sizeof why) != 0) {
        if (o->resume) return 1; /* the training loop refuses it with the same message */
        snprintf(err, errlen, "%s; --force starts afresh, replacing it", why);
        return -1;
    }
    char was[256];
    bool other = folder_model(dir, lock_was, was, sizeof was) && strcmp(was, model) != 0;
    if (other) {
        snprintf(err, errlen, "%s holds %s run of model %s (epoch %ld of %ld), not of %s: --force replaces it, or --out "
                 "names another folder%s%s", dir, h.epoch >= loss.len ? "a finished" : "an unfinished", was, h.epoch,
                 loss.len, model, o->resume ? "; --model " : "", o->resume ? was : "");
        if (o->resume) snprintf(err + strlen(err), errlen - strlen(err), " --resume continues it");
        return -1;
    }
    bool same_run = h.epoch >= loss.len && loss.len == epochs &&
                    prt_ckpt_check_fingerprint(ckpt, h.version, &h.fp, fp, why, sizeof why) == 0;
    if (!o->resume && same_run) {
        if (out) fprintf(out, "%s holds this very run, finished (%ld %s): evaluating it again (--force trains afresh)\n",
                         dir, loss.len, noun(loss.len, "epoch", "epochs"));
        return 1;
    }
    if (!o->resume && h.epoch >= loss.len) {
        snprintf(err, errlen, "%s holds a finished run of model %s (%ld %s): --resume --epochs N (more than %ld) extends "
                 "it, --force replaces it, or --out names another folder", dir, model, loss.len,
                 noun(loss.len, "epoch", "epochs"), loss.len);
        return -1;
    }
    if (!o->resume) {
        snprintf(err, errlen, "%s holds an unfinished run (epoch %ld of %ld): --resume continues it, --force starts "
                 "afresh, replacing it", ckpt, h.epoch, loss.len);
        return -1;
    }
    if (prt_ckpt_check_fingerprint(ckpt, h.version, &h.fp, fp, why, sizeof why) != 0) {
        snprintf(err, errlen, "%s; --force starts afresh, replacing it", why);
        return -1;
    }
    if (out && h.fp.part[PRT_FP_SOURCE] != fp->part[PRT_FP_SOURCE])
        fprintf(out, "resume: the program changed since the checkpoint in its comments or layout only\n");
    if (out && h.epoch >= loss.len && epochs > loss.len)
        fprintf(out, "resume: extending the finished run of %ld %s to %ld (the schedule continues as that of a run "
                "of %ld epochs)\n", loss.len, noun(loss.len, "epoch", "epochs"), epochs, epochs);
    return 1;
}

/* The model a run folder's metrics.json names ("model": "x"), into name; false if none. */
static bool run_model_name(const char *dir, char *name, size_t len) {
    char *mp = report_path(dir, "metrics.json");
    char err[256];
    FILE *f = prt_fopen_input(mp, NULL, err, sizeof err);
    free(mp);
    if (!f) return false;
    char line[512];
    bool found = false;
    while (!found && fgets(line, sizeof line, f)) {
        const char *p = strstr(line, "\"model\": \"");
        if (p != line + 2) continue;
        p += 10;
        const char *q = strchr(p, '"');
        if (q && (size_t)(q - p) < len) memcpy(name, p, (size_t)(q - p)), name[q - p] = 0, found = true;
    }
    fclose(f);
    return found;
}

/* Takes the training of a finished run in `from` if its model trains exactly as md (the
   fingerprints without names and prediction steps agree): its checkpoint, refingerprinted,
   becomes ckpt. 1 if taken, else 0 with why in err (another training, or a checkpoint that
   cannot be read, is unfinished or cannot be copied). */
static int adopt_training(const char *from, const char *file, System *sys, const Compiled *c, const Model *md,
                          const PrtModelConfig *cfg, bool f32, long seed, long ntrain, long threads, long epochs,
                          const PrtFingerprint *fp, const char *ckpt, char *err, size_t errlen) {
    char name[256];
    const Model *mda = NULL;
    PrtModelConfig cfga;
    Loc where;
    if (!run_model_name(from, name, sizeof name) || trained_pick(sys, name, &mda) ||
        !trained_config(sys, mda, f32, &cfga, &where, err, errlen)) {
        snprintf(err, errlen, "%s holds no finished run of a model of this program", from);
        return 0;
    }
    PrtFingerprint ta = run_fingerprint(file, sys, c, mda, &cfga, seed, ntrain, threads, true);
    PrtFingerprint tb = run_fingerprint(file, sys, c, md, cfg, seed, ntrain, threads, true);
    if (memcmp(ta.part, tb.part, sizeof(uint64_t) * PRT_FP_SOURCE) != 0) {
        snprintf(err, errlen, "%s's model %s does not train as %s (another term, setting, step, seed or data)", from, name,
                 md->name);
        return 0;
    }
    PrtFingerprint was = run_fingerprint(file, sys, c, mda, &cfga, seed, ntrain, threads, false);
    char *src = report_path(from, "checkpoint.bin");
    int rc = prt_train_adopt(src, &was, ckpt, fp, trained_nparams(sys, cfg), (int)epochs, err, errlen);
    free(src);
    return rc == 0 ? 1 : 0;
}

/* Copies every regular file of the folder `from` into `to` (each written atomically): a
   finished run's report, taken as another folder's. 0, or -1 with why in err. */
static int copy_run_files(const char *from, const char *to, char *err, size_t errlen) {
    DIR *d = opendir(from);
    if (!d) return prt_fail(err, errlen, "cannot read %s: %s", from, strerror(errno));
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d))) {
        char *src = report_path(from, e->d_name), *dst = report_path(to, e->d_name);
        struct stat st;
        size_t len = strlen(e->d_name);
        bool temporary = (len > 4 && !strcmp(e->d_name + len - 4, ".tmp")) /* a write in progress */
                         || !strcmp(e->d_name, PRT_RUN_LOCK_FILE);         /* the other folder's, not this one's */
        if (!temporary && stat(src, &st) == 0 && S_ISREG(st.st_mode)) {
            FILE *in = fopen(src, "rb");
            PrtAtomicFile a;
            if (!in) rc = prt_fail(err, errlen, "cannot read %s: %s", src, strerror(errno));
            else if (prt_atomic_open(&a, dst, err, errlen) != 0) rc = -1;
            else {
                char buf[1 << 16];
                size_t got;
                while ((got = fread(buf, 1, sizeof buf, in)) > 0) fwrite(buf, 1, got, a.f);
                if (ferror(in)) {
                    prt_atomic_abort(&a);
                    rc = prt_fail(err, errlen, "cannot read %s: %s", src, strerror(errno));
                } else rc = prt_atomic_commit(&a, err, errlen);
            }
            if (in) fclose(in);
        }
        free(src), free(dst);
    }
    closedir(d);
    return rc;
}

/* A finished run of this fingerprint and length, evaluated as asked, whose report is there:
   physc compare takes its files as they are. A changed system, data, model, seed, size or
   training setting does not match (comments and layout may differ, as on --resume); nor does the metrics.json of another run (one whose
   retraining failed before it wrote its own): its final training loss is not the
   checkpoint's. */
static bool finished_run_matches(const char *dir, const char *ckpt, const PrtFingerprint *fp, long epochs,
                                 bool eval_from_chunk) {
    PrtCkptHeader h;
    double *losses = prt_xalloc((size_t)epochs, sizeof(double), "the loss history");
    PrtCkptArray loss = {"loss", losses, -epochs};
    char why[512];
    bool same = access(ckpt, R_OK) == 0 && prt_ckpt_read_any(ckpt, &h, &loss, 1, why, sizeof why) == 0 &&
                h.epoch == loss.len && loss.len == epochs &&
                memcmp(h.fp.part, fp->part, sizeof(uint64_t) * PRT_FP_SOURCE) == 0; /* the text alone may differ,
                                                                                        as on --resume */
    char want[2][64];
    if (same) {
        snprintf(want[0], sizeof want[0], "  \"final_train_loss\": %.10g,\n", losses[epochs - 1]);
        snprintf(want[1], sizeof want[1], "  \"eval_from\": \"%s\",\n", eval_from_chunk ? "chunk" : "initial");
    }
    free(losses);
    char *mp = report_path(dir, "metrics.json");
    char err[256];
    FILE *f = same ? prt_fopen_input(mp, NULL, err, sizeof err) : NULL;
    free(mp);
    if (!f) return false;
    char line[256];
    bool seen[2] = {false, false};
    while (fgets(line, sizeof line, f))
        for (int i = 0; i < 2; i++) seen[i] |= !strcmp(line, want[i]);
    fclose(f);
    return seen[0] && seen[1];
}

/* A finished run of this very fingerprint in the folder, or in the folder physc compare names
   (copied here): 1 with rc 0 (the run only reports it), 0 if none, -1 if the copy failed. */
static int reuse_finished(RunState *r) {
    const RunOptions *o = r->o;
    if (o->reuse_finished && finished_run_matches(r->dir, r->ckpt, &r->fp, r->epochs, o->eval_from_chunk)) {
        if (r->out) fprintf(r->out, "reusing finished run %s\n", r->dir);
        r->rc = 0;
        return 1;
    }
    if (!o->reuse_from || o->force || !strcmp(o->reuse_from, r->dir)) return 0;
    char *theirs = report_path(o->reuse_from, "checkpoint.bin");
    bool match = finished_run_matches(o->reuse_from, theirs, &r->fp, r->epochs, o->eval_from_chunk);
    free(theirs);
    if (!match) return 0;
    if (copy_run_files(o->reuse_from, r->dir, r->err, sizeof r->err) != 0) return -1;
    if (r->out)
        fprintf(r->out, "reusing finished run %s (the same program, data, model and training; copied to %s)\n",
                o->reuse_from, r->dir);
    r->rc = 0;
    return 1;
}

/* --trained-by: the training of the first of those runs whose model trains as this one; 0,
   or -1 if none does and one is required. */
static int adopt_any(RunState *r) {
    const RunOptions *o = r->o;
    for (int i = 0; i < o->ntrained_by && !r->adopted && !r->resume; i++) {
        char reason[512];
        r->adopted = adopt_training(o->trained_by[i], o->file, r->sys, &r->c, r->md, &r->cfg, !strcmp(r->precision, "f32"),
                                    r->seed, r->ntrain, r->threads, r->epochs, &r->fp, r->ckpt, reason, sizeof reason) == 1;
        if (r->adopted && r->out)
            fprintf(r->out, "training: that of %s (the same training; %s predicts with %s)\n", o->trained_by[i],
                    r->md->name, prt_integrators[r->cfg.predict].name);
        if (!r->adopted && o->trained_by_required) {
            snprintf(r->err, sizeof r->err, "--trained-by: %s", reason);
            return -1;
        }
    }
    return 0;
}

/* --out, else runs/<system>-<model> (allocated) */
static char *folder_name(const RunState *r) {
    if (r->o->out_dir) return strcpy(prt_xalloc(strlen(r->o->out_dir) + 1, 1, "a path"), r->o->out_dir);
    size_t len = strlen(r->sys->name) + strlen(r->md->name) + 8;
    char *dir = prt_xalloc(len, 1, "a path");
    snprintf(dir, len, "runs/%s-%s", r->sys->name, r->md->name);
    return dir;
}

/* The number of threads whose shards made the checkpoint's training, when that alone keeps
   this run from continuing it (the train block sets no `shards`, so the threads are the
   shards), or 0. */
static long checkpoint_threads(const RunState *r) {
    PrtCkptHeader h;
    double first;
    PrtCkptArray loss = {"loss", &first, -1};
    char why[512];
    if (r->sys->train.shards || prt_ckpt_read_any(r->ckpt, &h, &loss, 1, why, sizeof why) != 0) return 0;
    for (long k = 1; k <= PRT_TRAIN_MAX_SHARDS; k++) {
        if (k == run_thread_shards(r->threads)) continue;
        PrtFingerprint fp = run_fingerprint(r->o->file, r->sys, &r->c, r->md, &r->cfg, r->seed, r->ntrain, k, false);
        if (!memcmp(fp.part, h.fp.part, sizeof(uint64_t) * PRT_FP_SOURCE)) return k;
    }
    return 0;
}

/* The run's folder made and locked; a finished run reused, an earlier run continued or
   refused, another's training adopted; then the model opened, so that what its family
   refuses is said before any data is made. */
int run_open_folder(RunState *r) {
    const RunOptions *o = r->o;
    r->dir = folder_name(r);
    if (run_make_dirs(r->dir, r->err, sizeof r->err) != 0) return -1;
    if (prt_run_lock(&r->lock, r->dir, r->lock_was, sizeof r->lock_was, r->err, sizeof r->err) != 0) return -1;
    r->ckpt = report_path(r->dir, "checkpoint.bin");
    r->fp = run_fingerprint(o->file, r->sys, &r->c, r->md, &r->cfg, r->seed, r->ntrain, r->threads, false);
    int reused = reuse_finished(r);
    if (reused) return reused;
    int previous = check_previous(r->dir, r->lock_was, r->ckpt, r->md->name, o, &r->fp, r->epochs, r->out, r->err,
                                  sizeof r->err);
    long k = previous < 0 && o->resume ? checkpoint_threads(r) : 0;
    if (k)
        snprintf(r->err, sizeof r->err, "%s was trained on %ld thread%s, its gradient in as many shards, which "
                 "--threads %ld would change: --threads %ld continues it, or `shards %ld` in the train block computes "
                 "the same shards on any number of threads", r->ckpt, k, k == 1 ? "" : "s", r->threads, k, k);
    if (previous < 0) return -1;
    r->resume = previous == 1;
    char holder[256];
    snprintf(holder, sizeof holder, "model %s", r->md->name);
    prt_run_lock_record(&r->lock, holder); /* the folder is this run's now */
    if (adopt_any(r) != 0) return -1;
    if (prt_model_open(&r->m, &r->c.ps, &r->cfg, r->err, sizeof r->err) != 0) { /* what the family refuses */
        r->err_at = r->md->loc;
        return -1;
    }
    return 0;
}

/* The processes but rank 0 under mpirun: rank 0's folder (they write nothing there, and read
   its checkpoint when the run resumes), their own fingerprint (run.c checks it against rank
   0's) and model. */
int run_join_folder(RunState *r) {
    const RunOptions *o = r->o;
    r->dir = folder_name(r);
    r->ckpt = report_path(r->dir, "checkpoint.bin");
    r->fp = run_fingerprint(o->file, r->sys, &r->c, r->md, &r->cfg, r->seed, r->ntrain, r->threads, false);
    if (prt_model_open(&r->m, &r->c.ps, &r->cfg, r->err, sizeof r->err) != 0) {
        r->err_at = r->md->loc;
        return -1;
    }
    return 0;
}
