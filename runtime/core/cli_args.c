/* cli_args.c — command-line values, one reading for every program (see cli_args.h). */
#include "cli_args.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

bool prt_arg_count(const char *v, long lo, long hi, long *x) {
    if (!*v || strlen(v) > 18) return false;
    for (const char *c = v; *c; c++)
        if (*c < '0' || *c > '9') return false;
    long n = strtol(v, NULL, 10);
    if (n < lo || n > hi) return false;
    *x = n;
    return true;
}

bool prt_arg_real(const char *v, double lo, double hi, double *x) {
    /* strtod alone would take " 1", "0x1p3", "inf" and "nan" */
    const char *c = v;
    if (*c == '+' || *c == '-') c++;
    if (!((*c >= '0' && *c <= '9') || (*c == '.' && c[1] >= '0' && c[1] <= '9'))) return false;
    for (; *c; c++)
        if (!strchr("0123456789.eE+-", *c)) return false;
    char *end;
    double d = strtod(v, &end);
    if (*end || !isfinite(d) || d < lo || d > hi) return false;
    *x = d;
    return true;
}

static bool looks_like_option(const char *v) {
    return !strncmp(v, "--", 2) || !strcmp(v, "-q") || !strcmp(v, "-h") || !strcmp(v, "-o");
}

const char *prt_arg_value(int argc, char **argv, int *i, const char *who) {
    const char *a = argv[*i], *v = *i + 1 < argc ? argv[*i + 1] : NULL;
    if (!v) fprintf(stderr, "%s: %s needs a value\n", who, a);
    else if (!*v) fprintf(stderr, "%s: %s needs a value, not an empty string\n", who, a);
    else if (looks_like_option(v))
        fprintf(stderr, "%s: %s needs a value; '%s' is an option (a value that starts with '-' may be written ./%s "
                "for a file)\n", who, a, v, v);
    else {
        *i += 1;
        return v;
    }
    return NULL;
}

bool prt_arg_once(PrtArgsSeen *seen, const char *name, const char *who) {
    for (int k = 0; k < seen->n; k++)
        if (!strcmp(seen->names[k], name)) {
            fprintf(stderr, "%s: %s is given twice: give each option once\n", who, name);
            return false;
        }
    if (seen->n < (int)(sizeof seen->names / sizeof seen->names[0])) seen->names[seen->n++] = name;
    return true;
}

void prt_stdio_order(void) {
    struct stat out, err;
    if (fstat(STDOUT_FILENO, &out) == 0 && fstat(STDERR_FILENO, &err) == 0 && out.st_dev == err.st_dev &&
        out.st_ino == err.st_ino)
        setvbuf(stdout, NULL, _IOLBF, 0);
}
