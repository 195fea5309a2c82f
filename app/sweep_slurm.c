/* sweep_slurm.c — a sweep as a Slurm job array (sweep_internal.h): `physc sweep ...
   --emit-slurm SCRIPT` writes an sbatch script whose array index is the task (`--task`), so
   a cluster runs the sweep without MPI, --jobs tasks at once (the array's %N). */
#include "sweep_internal.h"
#include "core/alloc.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/atomic_file.h"
#include "run.h"

/* s for a POSIX shell: in single quotes, each ' as '\'' */
static void put_quoted(FILE *f, const char *s) {
    fputc('\'', f);
    for (; *s; s++)
        if (*s == '\'') fputs("'\\''", f);
        else fputc(*s, f);
    fputc('\'', f);
}

/* Whether argument i is --emit-slurm or --jobs, or the value of one (the script drops them:
   a task is one task, and --jobs is the array's throttle) */
static bool dropped(char **argv, int i) {
    bool own = !strcmp(argv[i], "--emit-slurm") || !strcmp(argv[i], "--jobs");
    bool value = i > 0 && (!strcmp(argv[i - 1], "--emit-slurm") || !strcmp(argv[i - 1], "--jobs"));
    return own || value;
}

int sweep_emit_slurm(const Settings *st, int ntasks) {
    const SweepOptions *o = st->o;
    char exe[PATH_MAX], cwd[PATH_MAX], err[1024];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0 || !getcwd(cwd, sizeof cwd)) {
        fprintf(stderr, "physc: %s: --emit-slurm: cannot tell where physc or this folder is\n", o->command);
        return 1;
    }
    exe[n] = 0;
    if (run_make_dirs(st->dir, err, sizeof err) != 0) { /* (Slurm writes the tasks' logs there) */
        fprintf(stderr, "physc: %s: %s\n", o->command, err);
        return 1;
    }
    int nruns = st->nmodels * st->nsizes * (int)o->seeds;
    PrtAtomicFile af;
    if (prt_atomic_open(&af, o->emit_slurm, err, sizeof err) != 0) {
        fprintf(stderr, "physc: %s: %s\n", o->command, err);
        return 1;
    }
    FILE *f = af.f;
    fprintf(f, "#!/bin/bash\n"
               "# physc %s of %s as a Slurm job array: %d runs in %d tasks (the runs of one seed, size and\n"
               "# model kind), one task per array index. Submit it with: sbatch %s\n"
               "# Each task claims its runs (%s/tasks.lock): a task run twice, or beside another sweep\n"
               "# of the folder, runs nothing twice. The task that ends last writes the summary; the same\n"
               "# command without --emit-slurm prints it again (it runs nothing then).\n",
            o->command, o->file, nruns, ntasks, o->emit_slurm, st->dir);
    fprintf(f, "#SBATCH --job-name=physc-%s-%s\n#SBATCH --array=0-%d", st->sys->name, o->command, ntasks - 1);
    if (o->jobs > 1) fprintf(f, "%%%ld", o->jobs);
    /* (sbatch reads its #SBATCH lines without a shell: a path is written as it is, in double
       quotes where it has a space) */
    const char *q = strpbrk(cwd, " \t") ? "\"" : "", *qd = strpbrk(st->dir, " \t") ? "\"" : "";
    fprintf(f, "\n#SBATCH --ntasks=1\n#SBATCH --cpus-per-task=%ld\n#SBATCH --chdir=%s%s%s\n", st->threads, q, cwd, q);
    fprintf(f, "#SBATCH --output=%s%s/slurm-%%A_%%a.log%s\n", qd, st->dir, qd);
    fputs("set -eu\n: \"${SLURM_ARRAY_TASK_ID:?run this script with sbatch (or set SLURM_ARRAY_TASK_ID)}\"\ncd ", f);
    put_quoted(f, cwd);
    fputs("\nexec ", f);
    put_quoted(f, exe);
    fprintf(f, " %s", o->command);
    for (int i = 0; i < o->argc; i++)
        if (!dropped(o->argv, i)) fputc(' ', f), put_quoted(f, o->argv[i]);
    fputs(" --task \"$SLURM_ARRAY_TASK_ID\"\n", f);
    if (prt_atomic_commit(&af, err, sizeof err) != 0) {
        fprintf(stderr, "physc: %s: %s\n", o->command, err);
        return 1;
    }
    char throttle[48] = "";
    if (o->jobs > 1) snprintf(throttle, sizeof throttle, ", %ld at a time", o->jobs);
    if (!o->quiet)
        printf("wrote %s: %d runs in %d tasks (array 0-%d%s); submit it with `sbatch %s`\n", o->emit_slurm, nruns, ntasks,
               ntasks - 1, throttle, o->emit_slurm);
    return 0;
}
