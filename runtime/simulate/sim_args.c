/* sim_args.c — the command line of a program that `physc emit-c` writes: the options of
   `physc simulate`, read as physc reads them (cli_args.h). */
#include "sim_args.h"

#include <stdio.h>
#include <string.h>

#include "core/cli_args.h"

static const char usage[] =
    "usage: %s [--n K] [--steps N] [--dt H] [--seed S] [--integrator NAME] [--substeps N] [--rtol X] [--atol X] "
    "[--out FILE] [--from CSV]\n";

static int bad(const char *who, const char *v, const char *a, const char *what) {
    fprintf(stderr, "%s: bad value '%s' for %s (%s)\n", who, v, a, what);
    return 2;
}

int prt_sim_args(int argc, char **argv, PrtSimOptions *o) {
    const char *who = argv[0], *data_solver = o->integrator;
    bool steps_given = false, substeps_given = false, spacing_given = false;
    PrtArgsSeen seen = {.n = 0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            printf(usage, who);
            return 0;
        }
        static const char *const known[] = {"--n", "--steps", "--seed", "--dt", "--rtol", "--atol", "--integrator",
                                            "--substeps", "--out", "--from"};
        bool is_known = false;
        for (size_t k = 0; k < sizeof known / sizeof known[0]; k++) is_known |= !strcmp(a, known[k]);
        if (!is_known) {
            fprintf(stderr, "%s: unknown option '%s'\n", who, a);
            fprintf(stderr, usage, who);
            return 2;
        }
        if (!prt_arg_once(&seen, a, who)) return 2;
        const char *v = prt_arg_value(argc, argv, &i, who);
        if (!v) return 2;
        long x;
        if (!strcmp(a, "--n")) {
            if (!prt_arg_count(v, 1, 10000000, &o->n)) return bad(who, v, a, "a whole number from 1 to 10000000");
            spacing_given = true;
        } else if (!strcmp(a, "--steps")) {
            if (!prt_arg_count(v, 1, 1000000000, &o->steps)) return bad(who, v, a, "a whole number from 1 to 1000000000");
            steps_given = true;
        } else if (!strcmp(a, "--seed")) {
            if (!prt_arg_count(v, 0, 2147483647, &o->seed)) return bad(who, v, a, "a whole number from 0 to 2147483647");
        } else if (!strcmp(a, "--substeps")) {
            if (!prt_arg_count(v, 1, 100000, &x)) return bad(who, v, a, "a whole number from 1 to 100000");
            o->substeps = (int)x, substeps_given = true;
        } else if (!strcmp(a, "--dt")) {
            if (!prt_arg_real(v, 1e-300, 1e300, &o->dt)) return bad(who, v, a, "a positive number");
            spacing_given = true;
        } else if (!strcmp(a, "--rtol") || !strcmp(a, "--atol")) {
            if (!prt_arg_real(v, 1e-300, 1, !strcmp(a, "--rtol") ? &o->rtol : &o->atol))
                return bad(who, v, a, "a number in (0, 1]");
        } else if (!strcmp(a, "--integrator")) o->integrator = v;
        else if (!strcmp(a, "--out")) o->csv = v;
        else o->from = v;
    }
    if (o->from && spacing_given) {
        fprintf(stderr, "%s: --from takes the number and spacing of the trajectories from the file; drop --n and --dt\n", who);
        return 2;
    }
    if (o->from && !steps_given) o->steps = 0; /* as long as the file's trajectories */
    /* the data block's steps per interval go with its solver */
    if (!substeps_given && strcmp(o->integrator, data_solver)) o->substeps = 1;
    return -1;
}
