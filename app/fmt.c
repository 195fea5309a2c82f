/* fmt.c — `physc fmt FILE... [-w | --check]` (fmt.h): the canonical layout of each file
   (lang/format.h), printed, written back in place (atomically, only where it changes), or
   checked. */
#include "fmt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/atomic_file.h"
#include "format.h"

static const char *fmt_help =
    "usage: physc fmt [OPTIONS] FILE...\n"
    "\n"
    "Lays each .phys FILE out canonically and prints it: the author's line breaks, at most\n"
    "one blank line in a row, two spaces of indentation a bracket, one space between words,\n"
    "around binary operators, '=' and ':', after ',' and ';', none inside brackets or before\n"
    "a call's '(' or an index's '['; numbers, strings and comments as written, the trailing\n"
    "comments of consecutive lines in one column. Formatting twice changes nothing. A file\n"
    "with syntax errors is not formatted: its errors are reported.\n"
    "\n"
    "options:\n"
    "  -w, --write        write each file back in place (only where it changes)\n"
    "  --check            print nothing but the files not formatted; exit 1 if any\n"
    "  -q, --quiet        -w: do not name the files written\n"
    "  --diagnostics-format json  syntax errors as JSON lines (physc check --help)\n"
    "  -h, --help         show this help\n"
    "\n"
    "exit status: 0 done (--check: every file formatted), 1 a file not formatted (--check),\n"
    "with syntax errors or not written, 2 wrong command line\n";

/* One file: 0 done, 1 not formatted (check) or an error (said) */
static int fmt_one(const char *path, bool write, bool check, bool quiet, bool json) {
    Diags d;
    diag_init(&d, stderr);
    d.json = json;
    Arena arena = {0};
    const char *why;
    int file = src_load(&d, path, &why), rc = 0;
    if (file < 0) {
        if (json) diag_plain_error(&d, "cannot read '%s': %s", path, why);
        else fprintf(stderr, "physc: fmt: %s: %s\n", path, why);
        rc = 1;
    } else {
        size_t len;
        char *text = format_file(&arena, &d, file, &len);
        const SrcFile *src = d.files[file];
        bool same = text && len == src->len && !memcmp(text, src->text, len);
        char err[512];
        if (!text) {
            if (!json) fprintf(stderr, "physc: fmt: %s not formatted: it has syntax errors\n", path);
            rc = 1;
        } else if (check && !same) {
            printf("%s: not formatted (physc fmt -w %s)\n", path, path);
            rc = 1;
        } else if (write && !same) {
            PrtAtomicFile af; /* written whole or not at all: an editor's file is never left half */
            bool ok = prt_atomic_open(&af, path, err, sizeof err) == 0;
            if (ok) fwrite(text, 1, len, af.f);
            if (!ok || prt_atomic_commit(&af, err, sizeof err) != 0) {
                fprintf(stderr, "physc: fmt: %s\n", err);
                rc = 1;
            } else if (!quiet) printf("formatted %s\n", path);
        } else if (!write && !check) {
            fwrite(text, 1, len, stdout);
        }
    }
    arena_free(&arena);
    diag_free(&d);
    return rc;
}

int fmt_main(int argc, char **argv) {
    bool write = false, check = false, quiet = false, json = false;
    int nfiles = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--diagnostics-format")) { /* (its value is no file) */
            const char *v = i + 1 < argc ? argv[++i] : "";
            if (strcmp(v, "json") && strcmp(v, "text")) {
                fprintf(stderr, "physc: fmt: bad value '%s' for --diagnostics-format (text or json)\n", v);
                return 2;
            }
            json = !strcmp(v, "json");
            argv[i - 1] = argv[i] = "-"; /* (not files below) */
            continue;
        }
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(fmt_help, stdout);
            return 0;
        }
        if (!strcmp(a, "-w") || !strcmp(a, "--write")) write = true;
        else if (!strcmp(a, "--check")) check = true;
        else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) quiet = true;
        else if (a[0] == '-') {
            fprintf(stderr, "physc: fmt: unknown option '%s'\n(run 'physc fmt --help' for usage)\n", a);
            return 2;
        } else nfiles++;
    }
    if (write && check) {
        fprintf(stderr, "physc: fmt: -w and --check are two different jobs: give one\n");
        return 2;
    }
    if (!nfiles) {
        fprintf(stderr, "physc: fmt needs a .phys FILE (or several)\n(run 'physc fmt --help' for usage)\n");
        return 2;
    }
    int rc = 0;
    for (int i = 0; i < argc; i++)
        if (argv[i][0] != '-') rc |= fmt_one(argv[i], write, check, quiet, json);
    return rc;
}
