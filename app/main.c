/* main.c — the physc command line: parses arguments and runs a command. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/cli_args.h"
#include "core/atomic_file.h"
#include "core/blas_cpu.h"
#include "sweep.h"
#include "view.h"
#include "fmt.h"
#include "lsp.h"
#include "pedantic.h"
#include "dist.h"
#include "driver.h"
#include "dynamics.h"
#include "emit_main.h"
#include "emit_shared.h"
#include "integrators/integrators.h"
#include "jit_cache.h"
#include "lower.h"
#include "run.h"
#include "simulate/simulate.h"
#include "kernels.h"
#include "sema.h"
#include "trained.h"

#ifndef PHYSC_VERSION
#define PHYSC_VERSION "0.1.0"
#endif

enum { EXIT_INPUT = 1, EXIT_USAGE = 2, MAX_SETS = 64 };

static const char *usage_text =
    "usage: physc COMMAND [OPTIONS] FILE\n"
    "\n"
    "physc compiles .phys descriptions of physical systems (bodies, joints, potentials),\n"
    "the learned terms of a model of them, and how to make data, train and evaluate.\n"
    "\n"
    "commands:\n"
    "  check FILE    parse and check FILE; print a summary of the system\n"
    "  dump-ir FILE  print the compiled kernels (IR) of FILE's system\n"
    "  simulate FILE integrate the system's true dynamics (JIT) and report energy and\n"
    "                constraint drift; --out writes the trajectories as CSV\n"
    "  emit-c FILE -o OUT.c  write the system's kernels and a simulation main() as C\n"
    "  run FILE      compile, make the data, train a model, evaluate it and write a\n"
    "                report (metrics.json, plots) to runs/<system>-<model>/\n"
    "  sweep FILE    train and evaluate models x seeds x training-set sizes the same way\n"
    "                (in turn, --jobs at once, under mpirun, or as a Slurm job array); a\n"
    "                table, sweep.json and plots in runs/<system>-sweep/\n"
    "  compare FILE  a sweep of the program's models: comparison.json in runs/<system>-compare/\n"
    "  view DIR      one HTML page (offline) that shows a run's test trajectories moving,\n"
    "                the truth as a ghost under the model, with the errors over time\n"
    "  fmt FILE...   lay .phys files out canonically (-w in place, --check for CI)\n"
    "  lsp           a language server for editors (stdin/stdout)\n"
    "\n"
    "options:\n"
    "  -h, --help    show this help (physc COMMAND --help for a command's options)\n"
    "  --version     print the version\n"
    "\n"
    "Each option is given once (--set once per NAME): a repeated option is refused, not\n"
    "taken at its last value. Counts are decimal digits (1e1, 0x3 and 2.0 are refused),\n"
    "real numbers decimal notation; a value that starts with -- is taken for a missing\n"
    "value (write a file so named ./--name). Programs emitted by emit-c read their options\n"
    "the same way.\n";

static const char *check_help =
    "usage: physc check [OPTIONS] FILE\n"
    "\n"
    "Parses and checks FILE and its imports, then prints a summary: bodies, Cartesian\n"
    "coordinates (points x dimension), constraints, degrees of freedom, generalized\n"
    "coordinates, learned terms and models with their parameter counts.\n"
    "Errors are printed as file:line:col: error: message, with the source line.\n"
    "\n"
    "options:\n"
    "  --set NAME=VALUE   override a `param` of the program (once per NAME)\n"
    "  --stdlib DIR       where `import \"name\"` finds name.phys (default: the stdlib/\n"
    "                     folder beside the physc build, or $PHYSC_STDLIB)\n"
    "  --max-errors N     stop after N errors (default 20)\n"
    "  --diagnostics-format json  the errors and warnings as JSON, one object a line (file,\n"
    "                     line, column, end of span, severity, code, message, notes, fix-its),\n"
    "                     for editors and tools; every command that reads a program takes it\n"
    "  --pedantic         also warn of what is correct but probably not meant: a body no\n"
    "                     potential, constraint or force touches; a potential that names a\n"
    "                     body but does not depend on it; gravity far from any planet's; an\n"
    "                     lr or weight decay far from the papers' protocol; a training\n"
    "                     step too long for the system's fastest motion\n"
    "  -q, --quiet        print nothing when the file is fine\n"
    "  -h, --help         show this help\n"
    "\n"
    "exit status: 0 the program is fine, 1 it has errors, 2 wrong command line\n";

static const char *dump_ir_help =
    "usage: physc dump-ir [OPTIONS] FILE\n"
    "\n"
    "Compiles FILE's system to kernel IR and prints it (the format is in docs/ir.md):\n"
    "V (potential), gradV, Phi (constraints), DPhi (their Jacobian), PhiDot (DPhi times\n"
    "the velocities), DPhiDot (its Jacobian), H (the Hamiltonian), Field (Eq. 6), Accel\n"
    "(Eq. 7), MinvP and MassV (Eq. 9) and Init (the init block), after lowering,\n"
    "differentiation and simplification (docs/ir.md lists them with their inputs).\n"
    "\n"
    "options:\n"
    "  --kernel NAME      print only this kernel\n"
    "  --no-opt           skip the simplifier (constant folding, CSE, dead code)\n"
    "  --kernels loop     the loop form's kernels (one per class of alike constraint rows,\n"
    "                     Row0, Row1, ..., instead of Field, Rhs, DPhi and DPhiDot)\n"
    "  --set NAME=VALUE   override a `param` of the program (once per NAME)\n"
    "  --stdlib DIR       where `import \"name\"` finds name.phys\n"
    "  --max-errors N     stop after N errors (default 20)\n"
    "  -h, --help         show this help\n";

static const char *simulate_help =
    "usage: physc simulate [OPTIONS] FILE\n"
    "\n"
    "Compiles FILE's system to native code (LLVM JIT), samples initial states from its init\n"
    "block, projects them onto the constraints, integrates the true constrained dynamics\n"
    "(Eq. 6 of the CHNN paper) and prints the relative energy drift and the constraint\n"
    "violation. Defaults come from the program's data block.\n"
    "\n"
    "options:\n"
    "  --n K              number of trajectories (default 4)\n"
    "  --steps N          observation steps (default: data steps)\n"
    "  --dt H             time between observations (default: data dt)\n"
    "  --seed S           random seed (default: data seed)\n"
    "  --integrator NAME  one of the integrators below (default: the data block's solver)\n"
    "  --substeps N       a fixed-step integrator's steps per --dt (default: the data block's\n"
    "                     `substeps` with its solver, else 1)\n"
    "  --rtol X, --atol X dopri5 tolerances (default: data rtol, atol)\n"
    "  --out FILE         write the trajectories as CSV: traj,t, positions, velocities (whole\n"
    "                     or not at all, as emit-c -o)\n"
    "  --from FILE        start from the first state of each trajectory in this CSV (the\n"
    "                     columns --out writes, or traj,t and the positions alone, whose\n"
    "                     velocities are then estimated by second-order finite\n"
    "                     differences; e.g. recorded data) instead of sampling;\n"
    "                     as many trajectories, dt apart and (unless --steps) as long as\n"
    "                     the file's\n"
    "  --params FILE      a trained model instead: the params.bin a `physc run` wrote. The\n"
    "                     model is rolled out (dopri5) from the same sampled states and\n"
    "                     measured against the true dynamics (with --from, against the\n"
    "                     file's trajectories) as `physc run` evaluates it; --out writes\n"
    "                     the model's trajectories\n"
    "  --model NAME       which model of the file the parameters are for (default: the first,\n"
    "                     or else the one model with as many parameters as the file)\n"
    "  --precision P      f32 or f64: the precision a dtlnn model predicts in, as it was\n"
    "                     trained (default: the train block's); other models roll out in f64\n"
    "  --no-cache         compile with LLVM even if the kernels' code is in the cache of\n"
    "                     compiled kernels ($PHYSC_CACHE_DIR, else ~/.cache/physc), and do not\n"
    "                     add to it\n"
    "  --kernels FORM     how the system's vector field is compiled for simulating it:\n"
    "                     unrolled (straight-line code for this system, fastest for small\n"
    "                     ones), loop (one small kernel per kind of constraint row, looped\n"
    "                     over the rows: compile time independent of the size) or auto\n"
    "                     (loop from 512 constraint rows, or where the unrolled code\n"
    "                     would be too large; the default); with --params, a chnn's field\n"
    "                     too. Systems without constraints or with `state so3` bodies are\n"
    "                     always unrolled\n"
    "  --set NAME=VALUE   override a `param` of the program (once per NAME)\n"
    "  --stdlib DIR       where `import \"name\"` finds name.phys\n"
    "  -h, --help         show this help\n";

static const char *emit_c_help =
    "usage: physc emit-c [OPTIONS] FILE -o OUT.c\n"
    "\n"
    "Writes FILE's system as one C file: its kernels (the same IR the JIT compiles, as\n"
    "readable C) and a main() that runs the same simulation as `physc simulate`. Build it\n"
    "against the runtime:\n"
    "    cc -O2 -std=c17 -Iruntime OUT.c build/libphysrt.a -lm -o sim\n"
    "and run ./sim [--n K] [--steps N] [--dt H] [--seed S] [--integrator NAME] [--out CSV]\n"
    "[--from CSV] (the options of `physc simulate`).\n"
    "\n"
    "With --params, the program is a trained model shipped as C: the parameters are baked in\n"
    "and main() does what `physc simulate --params` does. The MLP runs on OpenBLAS, so add\n"
    "-lopenblas before -lm.\n"
    "\n"
    "options:\n"
    "  -o, --out FILE     the C file to write (required; - for standard output). It is\n"
    "                     replaced whole or not at all; through a symbolic link, the file\n"
    "                     the link leads to; a character device or FIFO is written through,\n"
    "                     a directory or block device refused\n"
    "  --params FILE      bake in a trained model: the params.bin a `physc run` wrote\n"
    "  --model NAME       which model of the file the parameters are for (default: the first,\n"
    "                     or else the one model with as many parameters as the file)\n"
    "  --precision P      f32 or f64: the precision a dtlnn model predicts in, as it was\n"
    "                     trained (default: the train block's); other models roll out in f64\n"
    "  --kernels FORM     unrolled, loop or auto (the default: the loop form from 40\n"
    "                     constraint rows, where `physc simulate` takes it from 512: a C\n"
    "                     compiler takes minutes on larger unrolled kernels). A system, or a\n"
    "                     trained chnn, emitted in loop form holds its row kernels and their\n"
    "                     index tables; the other models are emitted unrolled\n"
    "  --shared           with --params: build a shared library (-o libNAME.so) with the C\n"
    "                     ABI of runtime/abi/physc_model.h (docs/python.md): the kernels are\n"
    "                     the JIT's own code, so its rollouts are `physc simulate --params`'s\n"
    "                     to the bit; needs cc\n"
    "  --set NAME=VALUE   override a `param` of the program (once per NAME)\n"
    "  --stdlib DIR       where `import \"name\"` finds name.phys\n"
    "  -h, --help         show this help\n";

static const char *run_help =
    "usage: physc run [OPTIONS] FILE\n"
    "\n"
    "The main job: compiles FILE's system for training (LLVM JIT, with the VJP kernels),\n"
    "makes the data of its data block (dopri5 ground truth; CHNN App. D) or loads its\n"
    "`file`, trains a model (CHNN, CLNN, or the baselines NODE, HNN, LNN, DeLaN in the\n"
    "generalized coordinates: AdamW, cosine schedule, backpropagation through RK4 steps),\n"
    "evaluates it on the test trajectories (dopri5 rollouts: relative state\n"
    "error, energy error, constraint violation, chaos floor) and writes to the output\n"
    "folder: metrics.json (with the loss per epoch), trajectories.csv (per test\n"
    "trajectory), errors.csv (per trajectory and time), params.bin, loss.svg, rollout.svg,\n"
    "error.svg, energy.svg, and\n"
    "checkpoint.bin (written atomically every checkpoint_every epochs and on Ctrl-C,\n"
    "SIGTERM or SIGHUP). One run at a time writes a folder (DIR/run.lock).\n"
    "\n"
    "options:\n"
    "  --model NAME       the model to train (default: the first in the file)\n"
    "  --epochs N         epochs (default: the train block's; the paper used 2000)\n"
    "  --out DIR          output folder (default runs/<system>-<model>)\n"
    "  --seed S           seed of the data, initialization and shuffling (default: data seed)\n"
    "  --threads T        OpenBLAS threads (default: the train block's)\n"
    "  --precision P      f32 (the MLP passes in float, sgemm) or f64 (default: the train\n"
    "                     block's)\n"
    "  --resume           continue from DIR/checkpoint.bin (same program and options),\n"
    "                     bit for bit as if never stopped; with a larger --epochs, extend\n"
    "                     a finished run (the cosine schedule continues as that of a run\n"
    "                     of the new length)\n"
    "  --force            start afresh even if DIR holds a run, finished or not, replacing\n"
    "                     it (without --resume or --force, physc run refuses a folder that\n"
    "                     holds a run)\n"
    "  --stop-after E     checkpoint and stop after epoch E (a long run in parts)\n"
    "  --view             also write DIR/view.html, the page that shows the test\n"
    "                     trajectories moving (physc view --help)\n"
    "  --save-data DIR    also write the generated train/valid/test trajectories as CSV\n"
    "  --trained-by DIR   take the training of DIR's finished run, of a model that trains\n"
    "                     as this one and predicts otherwise (leapfrog, leapfrog+proposed):\n"
    "                     its checkpoint becomes this run's, which only evaluates\n"
    "  --eval-from WHERE  where the test rollouts start: initial (each test trajectory's\n"
    "                     sampled state; the default) or chunk (the first state of a random\n"
    "                     chunk of it, as the CHNN reference code evaluates; the test\n"
    "                     trajectories are simulated longer to leave room). Not part of the\n"
    "                     checkpoint: --resume of a finished run evaluates again\n"
    "  -q, --quiet        print nothing but errors\n"
    "  --no-cache         compile with LLVM even if the kernels' code is in the cache of\n"
    "                     compiled kernels ($PHYSC_CACHE_DIR, else ~/.cache/physc), and do not\n"
    "                     add to it\n"
    "  --kernels FORM     how the system's own dynamics (its data, projections and the truth\n"
    "                     the model is measured against) are compiled: unrolled, loop or auto\n"
    "                     (loop from 512 constraint rows), as for `physc simulate`; a chnn's or\n"
    "                     clnn's field too (trained through the loop form's reverse passes);\n"
    "                     the other models' own kernels are always unrolled\n"
    "  --set NAME=VALUE   override a `param` of the program (once per NAME)\n"
    "  --stdlib DIR       where `import \"name\"` finds name.phys\n"
    "  -h, --help         show this help\n"
    "\n"
    "exit status: 0 done, 1 bad input or training failed (e.g. the loss became NaN: the\n"
    "last checkpoint written, if any, is kept), 2 wrong command line, 130 interrupted by\n"
    "Ctrl-C (SIGINT), 143 by SIGTERM or 129 by SIGHUP (the epoch in progress ends and a\n"
    "checkpoint is written; before the first epoch or after the last, the run ends at once\n"
    "and says what it kept). Under nohup a SIGHUP is ignored.\n";

/* sweep's and compare's help (what they do, then their options): their options are the same (compare is a sweep of the
   program's models, into its own folder) */
#define SWEEP_HELP_BODY \
    "Trains and evaluates models of FILE the same way, as the CHNN paper compares model\n" \
    "families (Section 7, Figures 1, 7 and 8) and the discrete-time paper averages its\n" \
    "trials: each model, seed and training-set size is one `physc run` into\n" \
    "DIR/<model>-seed<S>[-n<SIZE>]/. The runs of one seed, size and model kind are a task (they\n" \
    "go in turn: one may take the other's training). Where the runs go:\n" \
    "  in turn in this process (default), or --jobs J tasks at once, each run a child\n" \
    "  process writing DIR/<run>.log;\n" \
    "  under `mpirun -np K` (or srun): a task farm, every process taking the next task no\n" \
    "  process holds (each run one process's, its log in DIR/<run>.log);\n" \
    "  --emit-slurm SCRIPT writes an sbatch script of a job array whose index is the task\n" \
    "  (--task I runs task I alone); a cluster runs it without MPI.\n" \
    "Processes that share DIR claim its tasks (DIR/tasks.lock), so none runs twice. A\n" \
    "finished run there of the same program and options is reused as it is (so is a finished\n" \
    "`physc run` of the same options in its own folder, runs/<system>-<model>, for the data\n" \
    "block's seed and size: its files are copied), an unfinished one resumed; a run that fails\n" \
    "(e.g. diverges) is reported and the others go on. From the runs' files (nothing is\n" \
    "evaluated again) it writes to DIR the summary: each run's figures, and each model's\n" \
    "with its seeds' test trajectories pooled (the geometric mean of the relative error at\n" \
    "each time and over the rollout, the energy error, the constraint violation, each with\n" \
    "its 95% interval), the mean of each run's figures over the seeds with a 95% t interval,\n" \
    "parameters, seconds per epoch; fig7-rel-error.svg and fig8-energy-error.svg (over time,\n" \
    "a line per model with its 95% band) and, with several sizes, data-efficiency.svg (the\n" \
    "error against the number of training trajectories, log-log); and prints a table.\n"
#define SWEEP_HELP_OPTIONS \
    "\n" \
    "options:\n" \
    "  --models A,B,...   the models (default: every model of a kind physc trains)\n" \
    "  --epochs N         epochs of every run (default: each model's own, else the train block's)\n" \
    "  --seeds K | A..B   K seeds from the data block's (seed, seed + 1, ...; default 1), or\n" \
    "                     the seeds A to B; each draws its own data, initialization and\n" \
    "                     shuffling\n" \
    "  --train-sizes A,B,...  numbers of training trajectories (default: the data block's\n" \
    "                     train; also --set train.size=A,B,...): a smaller set is the first\n" \
    "                     trajectories of a larger one; validation and test sets are the same\n" \
    "                     for every size\n" \
    "  --eval-from WHERE  initial or chunk: where the test rollouts start (physc run --help)\n" \
    "  --precision P      f32 or f64: every run's training precision (physc run --help)\n" \
    "  --threads T        OpenBLAS threads of each run (default: the train block's)\n" \
    "  --jobs J           J tasks at once (default 1: in turn, on the terminal); give each\n" \
    "                     core one thread of one run: --jobs 2 --threads 1 on 2 cores. With\n" \
    "                     --emit-slurm: at most J array tasks at once (%J)\n" \
    "  --task I           run task I alone (0 to the number of tasks - 1; what a Slurm\n" \
    "                     array task runs); the task that ends last writes the summary\n" \
    "  --emit-slurm SCRIPT  write the sbatch script of the sweep's job array; run nothing\n" \
    "  --out DIR          the folder of the runs and the summary\n" \
    "  --force            train every run afresh, replacing finished and unfinished ones\n" \
    "  -q, --quiet        the runs print nothing; the table is printed\n" \
    "  --no-cache         compile with LLVM even if the kernels' code is in the cache of\n" \
    "                     compiled kernels ($PHYSC_CACHE_DIR, else ~/.cache/physc), and do not\n" \
    "                     add to it\n" \
    "  --set NAME=VALUE   override a `param` of the program (once per NAME)\n" \
    "  --stdlib DIR       where `import \"name\"` finds name.phys\n" \
    "  -h, --help         show this help\n" \
    "\n" \
    "exit status: 0 every run finished, 1 bad input, a run failed (the others are summarized)\n" \
    "or an output could not be written, 2 wrong command line (e.g. a model the program\n" \
    "lacks), 130 or 143 interrupted (the runs in progress keep their checkpoints: the same\n" \
    "command resumes them)\n"

static const char *sweep_help =
    "usage: physc sweep [OPTIONS] FILE\n"
    "\n"
    SWEEP_HELP_BODY "DIR is --out, else runs/<system>-sweep; the summary is DIR/sweep.json.\n" SWEEP_HELP_OPTIONS;

static const char *view_help =
    "usage: physc view [OPTIONS] DIR\n"
    "\n"
    "Writes one self-contained HTML page (its script, style and data inline: nothing is\n"
    "fetched, it works from file:// and can be mailed) that shows the test trajectories of\n"
    "the run in DIR moving: the bodies, links, tethers and joints, rigid bodies' frames, the\n"
    "truth as a grey ghost under the model (or side by side); a time slider, play, speed,\n"
    "a trajectory picker (worst, median, best by relative error, or by index); under it the\n"
    "relative state error, energy error and constraint violation of the chosen trajectory\n"
    "over time, with a cursor; the run's headline figures and settings. DIR is a folder\n"
    "`physc run` wrote (from its scene.json, rollouts.bin, errors.csv, trajectories.csv and\n"
    "metrics.json; nothing is evaluated again), or a sweep's or compare's folder: each\n"
    "model's run of the first seed at the largest size, drawn together on the truth (at\n"
    "most 8 models; --models, --seed and --size choose others), with the sweep's table of\n"
    "every run and its figures.\n"
    "The page's address may say what it opens at: view.html#traj=3&t=1.5&layout=side.\n"
    "\n"
    "options:\n"
    "  -o, --out FILE     the page (default: DIR/view.html)\n"
    "  --models A,B       a sweep's folder: the models to draw, in this order (at most 8)\n"
    "  --seed S           a sweep's folder: each model's run of seed S (default: its first)\n"
    "  --size N           a sweep's folder: each model's run of N training trajectories\n"
    "                     (default: its largest)\n"
    "  --mp4 FILE         also a video of the scene for slides (H.264): every time of one\n"
    "                     test trajectory, drawn by the page itself in headless Chromium and\n"
    "                     encoded by ffmpeg (Debian's chromium and ffmpeg)\n"
    "  --traj K           the video's test trajectory (default 0)\n"
    "  --layout L         the video's scene: overlay (the truth a ghost; default) or side\n"
    "  --fps N            the video's frames a second (default: the page's clock, 1 s a time\n"
    "                     unit but 4 s at least, within 5 to 60)\n"
    "  -q, --quiet        print nothing on success\n"
    "  -h, --help         show this help\n"
    "\n"
    "exit status: 0 written, 1 a folder it cannot show (said) or the page not written,\n"
    "2 wrong command line\n";

static const char *compare_help =
    "usage: physc compare [OPTIONS] FILE\n"
    "\n"
    "A sweep (physc sweep) whose models are, by default, every model of the program.\n" SWEEP_HELP_BODY
    "DIR is --out, else runs/<system>-compare; the summary is DIR/comparison.json.\n" SWEEP_HELP_OPTIONS;

/* The integrator table (runtime/integrators/integrators.h) as `simulate --help` shows it. */
static void print_integrators(FILE *out) {
    fprintf(out, "\nintegrators (--integrator NAME):\n");
    for (int i = 0; i < PRT_INTEGRATOR_COUNT; i++) {
        const PrtIntegratorInfo *in = &prt_integrators[i];
        fprintf(out, "  %-18s order %d%s%s%s: %s\n", in->name, in->order, in->symplectic ? ", symplectic" : "",
                in->constraints ? "" : ", no constraints", in->so3 ? "" : ", no `state so3`", in->summary);
    }
}

static int usage_error(const char *fmt, const char *arg) {
    fprintf(stderr, "physc: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n(run 'physc --help' for usage)\n");
    return EXIT_USAGE;
}

/* stdlib/ beside the build: <repo>/build/physc -> <repo>/stdlib */
static const char *default_stdlib(void) {
    const char *env = getenv("PHYSC_STDLIB");
    if (env && *env) return env;
    static char buf[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 32);
    if (n > 0) {
        buf[n] = 0;
        for (int up = 0; up < 3; up++) {
            char *slash = strrchr(buf, '/');
            if (!slash) break;
            *slash = 0;
            char probe[PATH_MAX + 32];
            snprintf(probe, sizeof probe, "%s/stdlib/gravity.phys", buf);
            if (access(probe, R_OK) == 0) {
                strcat(buf, "/stdlib");
                return buf;
            }
        }
    }
#ifdef PHYSC_STDLIB_DIR
    return PHYSC_STDLIB_DIR;
#else
    return "stdlib";
#endif
}

static const char *lsp_help =
    "usage: physc lsp [--stdlib DIR]\n"
    "\n"
    "A language server for .phys files on stdin and stdout (the Language Server Protocol),\n"
    "for editors: diagnostics as you type (the checker's own, as physc check prints them),\n"
    "formatting (physc fmt's layout), document symbols (the system, bodies, constraints,\n"
    "potentials, learned terms, models), hover (declarations, a body's masses and the\n"
    "degrees of freedom, a constant's value, a builtin's call), go-to-definition (into the\n"
    "standard library too) and completion (names, builtins, keywords, a body's members).\n"
    "docs/editors.md says what it answers.\n"
    "\n"
    "options:\n"
    "  --stdlib DIR       where `import \"name\"` finds name.phys\n"
    "  -h, --help         show this help\n"
    "\n"
    "exit status: 0 after the client's shutdown and exit, 1 at exit without shutdown or at\n"
    "the input's end, 2 wrong command line\n";

/* physc lsp [--stdlib DIR] */
static int lsp_main(int argc, char **argv) {
    const char *stdlib_dir = NULL;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            fputs(lsp_help, stdout);
            return 0;
        }
        if (!strcmp(argv[i], "--stdlib") && i + 1 < argc) stdlib_dir = argv[++i];
        else return usage_error("lsp: unknown argument '%s' (physc lsp --help)", argv[i]);
    }
    return lsp_serve(stdin, stdout, stdlib_dir ? stdlib_dir : default_stdlib(), PHYSC_VERSION);
}

static void print_mlp(const Learned *l) {
    static const char *acts[] = {"tanh", "softplus", "silu", "relu"};
    printf("%d", l->inputs);
    for (int i = 0; i < l->nhidden; i++) printf("-%d", l->hidden[i]);
    printf("-%d %s", l->outputs, acts[l->act]);
}


/* Which generalized coordinates are angles: all, none, or their names (runs of an array as
   q[4..6]). */
static void print_angles(const GenCoords *gc) {
    if (gc->nangles == gc->count || gc->nangles == 0) {
        printf("%s", gc->nangles ? "all" : "none");
        return;
    }
    const char *sep = "";
    for (int i = 0; i < gc->count; i++) {
        if (!gc->angular[i]) continue;
        int end = i;
        while (gc->array_name && end + 1 < gc->count && gc->angular[end + 1]) end++;
        if (end > i) printf("%s%s[%d..%d]", sep, gc->array_name, gc->array_lo + i, gc->array_lo + end);
        else printf("%s%s", sep, gc->names[i]);
        sep = ", ";
        i = end;
    }
}
static void print_summary(const System *s) {
    int points = 0, rigid = 0, so3 = 0;
    for (int i = 0; i < s->nbodies; i++) {
        if (s->bodies[i].state == STATE_SO3) so3++;
        else if (s->bodies[i].kind == BODY_RIGID) rigid++;
        else points++;
    }
    printf("system %s (%d-D)\n", s->name, s->dim);
    printf("  bodies:              %d (", s->nbodies);
    const char *sep = "";
    if (points) printf("%s%d point mass%s", sep, points, points == 1 ? "" : "es"), sep = ", ";
    if (rigid) printf("%s%d rigid bod%s", sep, rigid, rigid == 1 ? "y" : "ies"), sep = ", ";
    if (so3) printf("%s%d rigid bod%s with rotation state", sep, so3, so3 == 1 ? "y" : "ies");
    printf(")\n");
    printf("  coordinates:         %d (", system_coordinates(s));
    if (s->npoints) printf("%d point%s x %d", s->npoints, s->npoints == 1 ? "" : "s", s->dim);
    if (s->npoints && so3) printf(" + ");
    if (so3) printf("%d x (3 position + 9 rotation)", so3);
    printf(")\n");
    int eq = system_equations(s), indep = system_independent_constraints(s);
    printf("  constraints:         %d", eq);
    int counts[4] = {0};
    for (int i = 0; i < s->nconstraints; i++) counts[s->constraints[i].kind] += s->constraints[i].equations;
    sep = " (";
    if (s->rigidity_equations) printf("%s%d rigidity", sep, s->rigidity_equations), sep = ", ";
    if (s->orthogonality_equations) printf("%s%d orthogonality", sep, s->orthogonality_equations), sep = ", ";
    for (int k = 0; k < 4; k++)
        if (counts[k]) printf("%s%d %s", sep, counts[k], constraint_kind_name((ConstraintKind)k)), sep = ", ";
    if (indep != eq) printf("%s%d independent", sep, indep), sep = ", ";
    printf("%s\n", sep[0] == ',' ? ")" : "");
    printf("  degrees of freedom:  %d\n", system_dof(s));
    printf("  potentials:          ");
    for (int i = 0; i < s->npotentials; i++) printf("%s%s", i ? ", " : "", s->potentials[i].name);
    printf("%s\n", s->npotentials ? "" : "none");
    if (s->nforces) { /* (only when there are: other systems' summaries stay as they were) */
        printf("  forces:              ");
        for (int i = 0; i < s->nforces; i++) printf("%s%s", i ? ", " : "", s->forces[i]->name);
        printf(" (non-conservative)\n");
    }
    if (s->coords.present) {
        printf("  generalized coords:  %d (", s->coords.count);
        if (s->coords.array_name)
            printf("%s[%d..%d]", s->coords.array_name, s->coords.array_lo, s->coords.array_lo + s->coords.count - 1);
        else
            for (int i = 0; i < s->coords.count; i++) printf("%s%s", i ? ", " : "", s->coords.names[i]);
        printf("; angles: ");
        print_angles(&s->coords);
        printf(")%s\n", s->coords.inverse ? ", with inverse" : "");
    }
    for (int i = 0; i < s->nlearned; i++) {
        const Learned *l = &s->learned[i];
        static const char *roles[] = {"potential", "mass", "force"};
        printf("  learned %-12s %s, MLP ", l->name, roles[l->role]);
        print_mlp(l);
        printf(", %ld parameters\n", l->params);
    }
    for (int i = 0; i < s->nmodels; i++) {
        const Model *m = &s->models[i];
        printf("  model %-14s %s, %ld learned parameters%s", m->name, model_kind_name(m->kind), m->params,
               m->mass_fit ? " (incl. masses and moments)" : "");
        if (m->lr > 0) printf("; lr %g", m->lr);
        if (m->epochs > 0) printf("; %d epochs", m->epochs);
        const PrtModelFamily *family = prt_model_family(model_kind_name(m->kind));
        if (family && family->steps_make_the_model) /* set or not, they are the model */
            printf("; integrator %s, predict %s, mass %s", model_integrator(s, m),
                   m->predict ? m->predict : model_integrator(s, m), m->unit_mass ? "identity" : "known");
        else if (m->integrator)
            printf("; integrator %s", m->integrator);
        printf("\n");
    }
}

/* What one command line asked for. */
typedef struct Invocation {
    const char *cmd, *help, *file, *stdlib_dir, *kernel;
    const char *set_names[MAX_SETS];
    double set_values[MAX_SETS];
    int nset, max_errors;
    bool quiet, no_opt, no_cache, diag_json, pedantic, shared;
    /* simulate */
    long n, steps, seed, substeps;
    double dt, rtol, atol;
    const char *integrator, *out, *from;
    /* run; simulate and emit-c with a trained model */
    const char *model, *params, *save_data, *precision;
    const char *trained_by;  /* run: a finished run whose training this model's is */
    long epochs, threads, stop_after;
    bool resume, force, eval_from_chunk, is_sweep, view;
    /* sweep and compare */
    const char *models, *emit_slurm;
    /* view */
    const char *mp4, *layout;
    long traj, fps;
    long seeds, seed_from, jobs, task, sizes[SWEEP_MAX_LIST];
    int nsizes, argc;
    char **argv;
} Invocation;

/* --set NAME=NUMBER (NAME once): 0, or the exit status after the message */
static int parse_set(Invocation *inv, const char *v) {
    const char *eq = strchr(v, '=');
    double x;
    if (!eq || eq == v || !prt_arg_real(eq + 1, -1e300, 1e300, &x))
        return usage_error("--set takes NAME=NUMBER (a finite number in decimal notation), not '%s'", v);
    if (inv->nset == MAX_SETS) return usage_error("too many --set options (at most 64)%s", "");
    for (int k = 0; k < inv->nset; k++)
        if (strlen(inv->set_names[k]) == (size_t)(eq - v) && !strncmp(inv->set_names[k], v, (size_t)(eq - v)))
            return usage_error("--set %s is given twice: give each parameter once", inv->set_names[k]);
    char *name = prt_xalloc((size_t)(eq - v) + 1, 1, "a --set name");
    memcpy(name, v, (size_t)(eq - v));
    name[eq - v] = 0;
    inv->set_names[inv->nset] = name;
    inv->set_values[inv->nset++] = x;
    return 0;
}

/* The value of option argv[*i] once (cli_args.h: never a value that is an option, never an
   option given twice; -o is --out), or NULL after the message. */
static const char *option_value(Invocation *inv, PrtArgsSeen *seen, int argc, char **argv, int *i) {
    char who[64];
    snprintf(who, sizeof who, "physc: %s", inv->cmd);
    const char *name = !strcmp(argv[*i], "-o") ? "--out" : argv[*i];
    if (strcmp(name, "--set") && !prt_arg_once(seen, name, who)) return NULL;
    return prt_arg_value(argc, argv, i, who);
}

static int bad_value(const Invocation *inv, const char *v, const char *a, const char *what) {
    fprintf(stderr, "physc: %s: bad value '%s' for %s (%s)\n", inv->cmd, v, a, what);
    return EXIT_USAGE;
}

/* A count option in [lo, hi] into *x: 0, or the exit status after the message */
static int count_value(const Invocation *inv, const char *a, const char *v, long lo, long hi, long *x) {
    char what[96];
    snprintf(what, sizeof what, "a whole number from %ld to %ld, in decimal digits", lo, hi);
    return prt_arg_count(v, lo, hi, x) ? 0 : bad_value(inv, v, a, what);
}

/* Reads option a's value v into inv: 0, or the exit status after the message */
typedef int (*OptionFn)(Invocation *inv, const char *a, const char *v);

static bool one_of(const char *a, const char *const *names) {
    for (; *names; names++)
        if (!strcmp(a, *names)) return true;
    return false;
}

/* The options with a value that simulate, run and compare take of their own */
static const char *const simulate_options[] = {"--n", "--steps", "--dt", "--seed", "--rtol", "--atol", "--integrator",
                                               "--out", "--from", "--substeps", "--precision", NULL};
static const char *const run_options[] = {"--model", "--epochs", "--out", "--seed", "--threads", "--stop-after",
                                          "--save-data", "--precision", "--eval-from", "--trained-by", NULL};
static const char *const sweep_options[] = {"--models", "--epochs", "--seeds", "--train-sizes", "--eval-from", "--threads",
                                            "--out", "--jobs", "--precision", "--task", "--emit-slurm", NULL};

/* simulate's option a = v: 0, or the exit status after the message */
static int simulate_option(Invocation *inv, const char *a, const char *v) {
    if (!strcmp(a, "--integrator")) inv->integrator = v;
    else if (!strcmp(a, "--from")) inv->from = v;
    else if (!strcmp(a, "--out")) inv->out = v;
    else if (!strcmp(a, "--precision") && (!strcmp(v, "f32") || !strcmp(v, "f64"))) inv->precision = v;
    else if (!strcmp(a, "--precision")) return bad_value(inv, v, a, "f32 or f64");
    else if (!strcmp(a, "--substeps")) return count_value(inv, a, v, 1, 100000, &inv->substeps);
    else if (!strcmp(a, "--n")) return count_value(inv, a, v, 1, 10000000, &inv->n);
    else if (!strcmp(a, "--steps")) return count_value(inv, a, v, 1, 1000000000, &inv->steps);
    else if (!strcmp(a, "--seed")) return count_value(inv, a, v, 0, 2147483647, &inv->seed);
    else if (!strcmp(a, "--dt") && !prt_arg_real(v, 1e-300, 1e300, &inv->dt)) return bad_value(inv, v, a, "a positive number");
    else if (!strcmp(a, "--rtol") && !prt_arg_real(v, 1e-300, 1, &inv->rtol)) return bad_value(inv, v, a, "a number in (0, 1]");
    else if (!strcmp(a, "--atol") && !prt_arg_real(v, 1e-300, 1, &inv->atol)) return bad_value(inv, v, a, "a number in (0, 1]");
    return 0;
}

/* --eval-from's two words: 0, or the exit status after the message */
static int eval_from_option(Invocation *inv, const char *a, const char *v) {
    if (strcmp(v, "initial") && strcmp(v, "chunk")) return bad_value(inv, v, a, "initial or chunk");
    inv->eval_from_chunk = !strcmp(v, "chunk");
    return 0;
}

/* run's option a = v */
static int run_option(Invocation *inv, const char *a, const char *v) {
    if (!strcmp(a, "--model")) inv->model = v;
    else if (!strcmp(a, "--trained-by")) inv->trained_by = v;
    else if (!strcmp(a, "--out")) inv->out = v;
    else if (!strcmp(a, "--save-data")) inv->save_data = v;
    else if (!strcmp(a, "--precision")) inv->precision = v;
    else if (!strcmp(a, "--eval-from")) return eval_from_option(inv, a, v);
    else if (!strcmp(a, "--epochs")) return count_value(inv, a, v, 1, 100000000, &inv->epochs);
    else if (!strcmp(a, "--stop-after")) return count_value(inv, a, v, 1, 100000000, &inv->stop_after);
    else if (!strcmp(a, "--threads")) return count_value(inv, a, v, 1, 1024, &inv->threads);
    else if (!strcmp(a, "--seed")) return count_value(inv, a, v, 0, 2147483647, &inv->seed);
    return 0;
}

/* --train-sizes A,B,... (or --set train.size=A,B,...) */
static int sizes_option(Invocation *inv, const char *a, const char *v) {
    if (inv->nsizes) return usage_error("the training-set sizes are given twice (--train-sizes, --set train.size)%s", "");
    if ((inv->nsizes = sweep_parse_counts(v, inv->sizes, SWEEP_MAX_LIST)) <= 0)
        return bad_value(inv, v, a, "different whole numbers from 1, separated by commas");
    return 0;
}

/* sweep's and compare's option a = v */
static int sweep_option(Invocation *inv, const char *a, const char *v) {
    if (!strcmp(a, "--models") && v[strlen(v) - 1] != ',') inv->models = v;
    else if (!strcmp(a, "--models")) return bad_value(inv, v, a, "model names separated by commas");
    else if (!strcmp(a, "--precision") && (!strcmp(v, "f32") || !strcmp(v, "f64"))) inv->precision = v;
    else if (!strcmp(a, "--precision")) return bad_value(inv, v, a, "f32 or f64");
    else if (!strcmp(a, "--out")) inv->out = v;
    else if (!strcmp(a, "--emit-slurm")) inv->emit_slurm = v;
    else if (!strcmp(a, "--eval-from")) return eval_from_option(inv, a, v);
    else if (!strcmp(a, "--epochs")) return count_value(inv, a, v, 1, 100000000, &inv->epochs);
    else if (!strcmp(a, "--seeds") && sweep_parse_seeds(v, &inv->seeds, &inv->seed_from) != 0)
        return bad_value(inv, v, a, "a count K from 1 to 1000, or seeds A..B (A <= B, at most 1000 of them)");
    else if (!strcmp(a, "--threads")) return count_value(inv, a, v, 1, 1024, &inv->threads);
    else if (!strcmp(a, "--jobs")) return count_value(inv, a, v, 1, 256, &inv->jobs);
    else if (!strcmp(a, "--task")) return count_value(inv, a, v, 0, 1000000, &inv->task);
    else if (!strcmp(a, "--train-sizes")) return sizes_option(inv, a, v);
    return 0;
}

static const char *const view_options[] = {"--models", "--seed", "--size", "--mp4", "--traj", "--layout", "--fps", NULL};

/* view's choice among a sweep's runs: --models, --seed, --size */
static int view_option(Invocation *inv, const char *a, const char *v) {
    if (!strcmp(a, "--models") && v[strlen(v) - 1] != ',') inv->models = v;
    else if (!strcmp(a, "--models")) return bad_value(inv, v, a, "model names separated by commas");
    else if (!strcmp(a, "--seed")) return count_value(inv, a, v, 0, 2147483647, &inv->seed);
    else if (!strcmp(a, "--size")) return count_value(inv, a, v, 1, 2147483647, &inv->sizes[0]);
    else if (!strcmp(a, "--mp4")) inv->mp4 = v;
    else if (!strcmp(a, "--traj")) return count_value(inv, a, v, 0, 2147483647, &inv->traj);
    else if (!strcmp(a, "--fps")) return count_value(inv, a, v, 1, 120, &inv->fps);
    else if (!strcmp(a, "--layout") && strcmp(v, "overlay") && strcmp(v, "side")) return bad_value(inv, v, a, "overlay or side");
    else if (!strcmp(a, "--layout")) inv->layout = v;
    return 0;
}

/* emit-c's -o, and simulate's and emit-c's --model and --params: paths and names as given */
static int path_option(Invocation *inv, const char *a, const char *v) {
    *(!strcmp(a, "--model") ? &inv->model : !strcmp(a, "--params") ? &inv->params : &inv->out) = v;
    return 0;
}

static const char *const shared_options[] = {"--set", "--stdlib", "--max-errors", "--diagnostics-format", NULL};

/* The options every command shares with a value: --set, --stdlib, --max-errors (and dump-ir's --kernel) */
static int shared_option(Invocation *inv, const char *a, const char *v) {
    long n;
    if (!strcmp(a, "--stdlib")) inv->stdlib_dir = v;
    else if (!strcmp(a, "--diagnostics-format") && strcmp(v, "text") && strcmp(v, "json"))
        return bad_value(inv, v, a, "text or json");
    else if (!strcmp(a, "--diagnostics-format")) inv->diag_json = !strcmp(v, "json");
    else if (!strcmp(a, "--kernel")) inv->kernel = v;
    else if (!strcmp(a, "--max-errors")) {
        int rc = count_value(inv, a, v, 1, 100000, &n);
        if (!rc) inv->max_errors = (int)n;
        return rc;
    } else if (!strcmp(a, "--set") && inv->is_sweep && !strncmp(v, "train.size=", 11))
        return sizes_option(inv, "--set train.size", v + 11);
    else if (!strcmp(a, "--set") && inv->is_sweep && strchr(v, '=') && strchr(strchr(v, '='), ','))
        return usage_error("--set %s: a list of values sweeps train.size only; sweep a param with one sweep per value "
                           "(each with its --out)", v);
    else if (!strcmp(a, "--set")) return parse_set(inv, v);
    return 0;
}

/* --kernels FORM */
static int kernels_option(Invocation *inv, const char *a, const char *v) {
    if (!strcmp(v, "auto")) driver_set_kernel_form(KERNEL_FORM_AUTO);
    else if (!strcmp(v, "unrolled")) driver_set_kernel_form(KERNEL_FORM_UNROLLED);
    else if (!strcmp(v, "loop")) driver_set_kernel_form(KERNEL_FORM_LOOP);
    else return usage_error("--kernels takes auto, unrolled or loop, not '%s'", v);
    return 0;
}

/* The options that do not go together, once all are read: -1 to go on, or EXIT_USAGE */
static int check_combination(const Invocation *inv, bool is_sim, bool is_emit) {
    if (!inv->file) {
        fprintf(stderr, "physc: %s needs a %s\n(run 'physc %s --help' for usage)\n", inv->cmd,
                strcmp(inv->cmd, "view") ? "FILE" : "run's folder (DIR)", inv->cmd);
        return EXIT_USAGE;
    }
    if (is_emit && inv->shared && (!inv->params || !inv->out || !strcmp(inv->out, "-"))) {
        fprintf(stderr, "physc: emit-c: --shared builds a trained model's library: it needs --params RUN/params.bin "
                "and -o libNAME.so (a file)\n");
        return EXIT_USAGE;
    }
    if ((is_sim || is_emit) && inv->model && !inv->params) {
        fprintf(stderr, "physc: %s: --model needs --params RUN/params.bin (the parameters a `physc run` wrote)\n", inv->cmd);
        return EXIT_USAGE;
    }
    if (inv->is_sweep && inv->task >= 0 && (inv->jobs > 1 || inv->emit_slurm)) {
        fprintf(stderr, "physc: %s: --task runs one task in this process: drop %s\n", inv->cmd, inv->jobs > 1 ? "--jobs" : "--emit-slurm");
        return EXIT_USAGE;
    }
    if (inv->is_sweep && dist_size() > 1 && (inv->jobs > 1 || inv->task >= 0 || inv->emit_slurm)) {
        fprintf(stderr, "physc: %s: under mpirun the processes take the tasks: drop %s\n", inv->cmd,
                inv->jobs > 1 ? "--jobs" : inv->task >= 0 ? "--task" : "--emit-slurm");
        return EXIT_USAGE;
    }
    if (inv->resume && inv->force) {
        fprintf(stderr, "physc: run: --resume continues the folder's run and --force replaces it: give one\n");
        return EXIT_USAGE;
    }
    if (is_sim && inv->from && (inv->n || inv->dt)) {
        fprintf(stderr, "physc: simulate: --from takes the number and spacing of the trajectories from the file; "
                        "drop --n and --dt\n");
        return EXIT_USAGE;
    }
    if (is_sim && inv->params && inv->integrator && strcmp(inv->integrator, "dopri5")) {
        fprintf(stderr, "physc: simulate: a learned model rolls out as physc run evaluates it (with dopri5, or a dtlnn "
                "model with its own `predict` step), not with %s\n", inv->integrator);
        return EXIT_USAGE;
    }
    return -1;
}

/* Parses the options every command shares, and the command's own (check: -q; dump-ir:
   --kernel, --no-opt). Each option is given once (--set once per NAME). Returns -1 to go on,
   or an exit status. */
static int parse_args(Invocation *inv, int argc, char **argv) {
    inv->max_errors = 20;
    inv->seed = -1;
    inv->traj = -1;
    bool is_dump = !strcmp(inv->cmd, "dump-ir"), is_sim = !strcmp(inv->cmd, "simulate"), is_emit = !strcmp(inv->cmd, "emit-c"),
         is_run = !strcmp(inv->cmd, "run"), is_cmp = !strcmp(inv->cmd, "compare") || !strcmp(inv->cmd, "sweep"),
         is_view = !strcmp(inv->cmd, "view");
    inv->is_sweep = is_cmp;
    inv->task = -1;
    inv->argc = argc, inv->argv = argv;
    PrtArgsSeen seen = {.n = 0};
    char who[64];
    snprintf(who, sizeof who, "physc: %s", inv->cmd);
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = NULL;
        int rc = 0;
        bool flag = (!is_dump && (!strcmp(a, "-q") || !strcmp(a, "--quiet"))) || (is_dump && !strcmp(a, "--no-opt")) ||
                    ((is_sim || is_run || is_cmp) && !strcmp(a, "--no-cache")) || (is_run && !strcmp(a, "--resume")) ||
                    ((is_run || is_cmp) && !strcmp(a, "--force")) || (is_run && !strcmp(a, "--view")) ||
                    (!strcmp(inv->cmd, "check") && !strcmp(a, "--pedantic")) || (is_emit && !strcmp(a, "--shared"));
        OptionFn own = NULL; /* who reads the option's value */
        if (is_sim && one_of(a, simulate_options)) own = simulate_option;
        else if (is_run && one_of(a, run_options)) own = run_option;
        else if (is_cmp && one_of(a, sweep_options)) own = sweep_option;
        else if (is_view && one_of(a, view_options)) own = view_option;
        else if (((is_emit || is_view) && (!strcmp(a, "-o") || !strcmp(a, "--out"))) ||
                 ((is_sim || is_emit) && (!strcmp(a, "--model") || !strcmp(a, "--params"))))
            own = path_option;
        else if ((is_sim || is_run || is_emit || is_dump) && !strcmp(a, "--kernels")) own = kernels_option;
        else if (is_emit && !strcmp(a, "--precision")) own = simulate_option; /* (its f32 or f64 alone) */
        else if (one_of(a, shared_options) || (is_dump && !strcmp(a, "--kernel"))) own = shared_option;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(inv->help, stdout);
            if (is_sim) print_integrators(stdout);
            return 0;
        } else if (flag) {
            if (!prt_arg_once(&seen, !strcmp(a, "-q") ? "--quiet" : a, who)) return EXIT_USAGE;
            *(!strcmp(a, "--no-opt") ? &inv->no_opt : !strcmp(a, "--resume") ? &inv->resume
              : !strcmp(a, "--force") ? &inv->force : !strcmp(a, "--no-cache") ? &inv->no_cache
              : !strcmp(a, "--view") ? &inv->view : !strcmp(a, "--pedantic") ? &inv->pedantic
              : !strcmp(a, "--shared") ? &inv->shared : &inv->quiet) = true;
        } else if (own) {
            if (!(v = option_value(inv, &seen, argc, argv, &i))) return EXIT_USAGE;
            rc = own(inv, a, v);
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "physc: %s: unknown option '%s'\n(run 'physc %s --help' for usage)\n", inv->cmd, a, inv->cmd);
            return EXIT_USAGE;
        } else if (inv->file) {
            fprintf(stderr, "physc: %s takes one file; '%s' is a second one\n", inv->cmd, a);
            return EXIT_USAGE;
        } else {
            inv->file = a;
        }
        if (rc) return rc;
    }
    if (inv->no_cache) jit_cache_set_enabled(false);
    return check_combination(inv, is_sim, is_emit);
}

/* Loads and checks the file; NULL after printing the diagnostics and their count. */
static System *load_system(Invocation *inv, Arena *arena, Diags *d) {
    diag_init(d, stderr);
    d->max_errors = inv->max_errors;
    d->json = inv->diag_json;
    SemaOptions opt = {.stdlib_dir = inv->stdlib_dir ? inv->stdlib_dir : default_stdlib(), .set_names = inv->set_names,
                       .set_values = inv->set_values, .nset = inv->nset, .require_system = true};
    System *sys = sema_check_file(arena, d, inv->file, &opt);
    if (sys && !d->nerrors) return sys;
    if (d->json) return NULL; /* (the JSON lines are the whole report) */
    if (d->nerrors > 1 || d->nwarnings) fprintf(stderr, "%d error%s", d->nerrors, d->nerrors == 1 ? "" : "s");
    if (d->nwarnings) fprintf(stderr, ", %d warning%s", d->nwarnings, d->nwarnings == 1 ? "" : "s");
    if (d->nerrors > 1 || d->nwarnings) fputc('\n', stderr);
    return NULL;
}

/* A --model the program does not have is a wrong command line (exit 2), in every command
   that takes one: says so, with the models there are. */
static bool unknown_model(const System *sys, const Invocation *inv) {
    const Model *md;
    if (!inv->model || !trained_pick(sys, inv->model, &md)) return false;
    fprintf(stderr, "physc: %s: no model of that name: %s (", inv->cmd, inv->model);
    if (!sys->nmodels) fprintf(stderr, "the program has none");
    for (int i = 0; i < sys->nmodels; i++) fprintf(stderr, "%s%s", i ? ", " : "models: ", sys->models[i].name);
    fprintf(stderr, ")\n");
    return true;
}

/* --precision of simulate and emit-c, the precision a trained model predicts in: the train
   block's unless given (a family that rolls out in f64 ignores f32: trained_open) */
static bool predicts_in_f32(const Invocation *inv, const System *sys) {
    return !strcmp(inv->precision ? inv->precision : sys ? sys->train.precision : "f64", "f32");
}

/* A --precision without a trained model, or f32 for one that rolls out in f64: the exit
   status after the message, else 0 */
static int check_precision(const Invocation *inv, const Trained *t) {
    if (!t->md && inv->precision) {
        fprintf(stderr, "physc: %s: --precision is the precision of a trained model's prediction: give --params too\n",
                inv->cmd);
        return EXIT_USAGE;
    }
    if (inv->precision && !strcmp(inv->precision, "f32") && !t->cfg.family->predicts_at_training_precision) {
        fprintf(stderr, "physc: %s: --precision f32: model %s (%s) rolls out in f64 whatever its training precision "
                "(dopri5 at its tolerance would step on float rounding); only a dtlnn model predicts in f32\n", inv->cmd,
                t->md->name, model_kind_name(t->md->kind));
        return EXIT_USAGE;
    }
    return 0;
}

static int cmd_simulate(Invocation *inv) {
    Diags d;
    Arena arena = {0};
    System *sys = load_system(inv, &arena, &d);
    int rc = !sys ? EXIT_INPUT : unknown_model(sys, inv) ? EXIT_USAGE : 0;
    Trained t = {0};
    if (!rc && inv->params && !trained_open(sys, inv->cmd, inv->model, inv->params, predicts_in_f32(inv, sys), &d, &t))
        rc = EXIT_INPUT;
    if (!rc) rc = check_precision(inv, &t);
    int given = t.md ? t.cfg.family->start_points : 0; /* the observed points a model's rollout starts from */
    if (!rc && inv->steps && inv->steps < given) {
        fprintf(stderr, "physc: simulate: --steps %ld predicts nothing: model %s (%s) starts from the first %d positions of "
                "each trajectory; give --steps %d or more\n", inv->steps, t.md->name, model_kind_name(t.md->kind), given, given);
        rc = EXIT_USAGE;
    }
    Compiled c;
    char err[512];
    bool opened = false;
    if (!rc && inv->out && prt_atomic_probe(inv->out, err, sizeof err) != 0) { /* before compiling, not after */
        fprintf(stderr, "physc: simulate: %s\n", err);
        rc = EXIT_INPUT;
    }
    if (!rc) {
        opened = t.md ? compiled_open_rollout(sys, &c, 2, t.md, err, sizeof err)
                      : compiled_open(sys, &c, 2, COMPILE_SIMULATE, err, sizeof err);
        if (!opened) {
            fprintf(stderr, "physc: simulate: %s\n", err);
            rc = EXIT_INPUT;
        }
    }
    PrtModel m = {0};
    if (opened && t.md && prt_model_open(&m, &c.ps, &t.cfg, err, sizeof err)) {
        diag_error(&d, t.md->loc, "%s", err); /* what the family refuses in the model */
        rc = EXIT_INPUT;
    }
    if (opened && !rc) {
        PrtSimOptions o = {
            .n = inv->n ? inv->n : 4, .steps = inv->steps || inv->from ? inv->steps : sys->data.steps,
            .seed = inv->seed >= 0 ? inv->seed : sys->data.seed, .dt = inv->dt ? inv->dt : sys->data.dt,
            .rtol = inv->rtol ? inv->rtol : sys->data.rtol, .atol = inv->atol ? inv->atol : sys->data.atol,
            .integrator = inv->integrator ? inv->integrator : sys->data.solver, .csv = inv->out,
            /* the data block's steps per interval go with its solver */
            .substeps = inv->substeps ? (int)inv->substeps
                        : !inv->integrator || !strcmp(inv->integrator, sys->data.solver) ? sys->data.substeps : 1,
            .from = inv->from,
        };
        printf("system %s: compiled in %.1f ms (lowering) + %.1f ms (%s)\n", sys->name, c.lower_ms, c.jit_ms,
               jit_from_cache(c.jit) ? "code from the cache" : "LLVM JIT");
        if (t.md) {
            char blas[256];
            printf("model %s (%s) with the parameters of %s\n", t.md->name, model_kind_name(t.md->kind), inv->params);
            printf("BLAS: %s\n", prt_blas_describe(blas, sizeof blas)); /* (as the emitted program says it) */
        }
        PrtSimResult r;
        rc = t.md ? prt_simulate_model(&c.ps, &o, &m, t.theta, stdout, &r) : prt_simulate(&c.ps, &o, stdout, &r);
        rc = rc == 2 ? EXIT_USAGE : rc ? EXIT_INPUT : 0;
        free(r.traj);
    }
    prt_model_close(&m);
    if (opened) compiled_close(&c);
    trained_close(&t);
    arena_free(&arena);
    diag_free(&d);
    return rc;
}

/* Where the lines about a written output go: standard output, unless the output is itself
   standard output or a stream (-o /dev/stdout, a FIFO, a terminal), which they would mix into */
static FILE *output_status_stream(const char *out) {
    struct stat st, so;
    bool regular = stat(out, &st) == 0 && S_ISREG(st.st_mode);
    bool is_stdout = fstat(STDOUT_FILENO, &so) == 0 && regular && st.st_dev == so.st_dev && st.st_ino == so.st_ino;
    return regular && !is_stdout ? stdout : stderr;
}

static int cmd_emit_c(Invocation *inv) {
    if (!inv->out) {
        fprintf(stderr, "physc: emit-c needs -o OUT.c\n(run 'physc emit-c --help' for usage)\n");
        return EXIT_USAGE;
    }
    Diags d;
    Arena arena = {0};
    System *sys = load_system(inv, &arena, &d);
    int rc = !sys ? EXIT_INPUT : unknown_model(sys, inv) ? EXIT_USAGE : 0;
    if (rc) sys = NULL;
    Trained t = {0};
    if (sys && inv->params && !trained_open(sys, inv->cmd, inv->model, inv->params, predicts_in_f32(inv, sys), &d, &t))
        sys = NULL, rc = EXIT_INPUT;
    if (sys && (rc = check_precision(inv, &t))) sys = NULL;
    if (sys && inv->shared) { /* the JIT's own objects, linked as a library */
        rc = emit_shared_library(sys, t.md, &t.cfg, t.theta, t.nparams, inv->params, inv->out, inv->quiet);
        sys = NULL;
    }
    Kernels k;
    char err[512];
    driver_set_loop_form_min_rows(DRIVER_EMIT_LOOP_FORM_MIN_ROWS);
    /* (a CHNN's field is the system's Field with its learned masses and potential: in loop
       form as the system's would be; the other models need their own kernels unrolled) */
    bool as_system = !t.md || t.cfg.family->field_is_systems;
    if (sys && !as_system && driver_kernel_form() == KERNEL_FORM_LOOP) {
        fprintf(stderr, "physc: emit-c: --kernels loop: only a chnn's field has a loop form, and model '%s' is a %s: "
                        "it is emitted unrolled (leave --kernels out)\n", t.md->name, model_kind_name(t.md->kind));
        rc = EXIT_USAGE, sys = NULL;
    }
    bool built = sys && (as_system ? driver_build_simulation_kernels(sys, &k, 0, err, sizeof err)
                                   : kernels_build(sys, &k, true, err, sizeof err));
    if (built && t.md && ((t.md->nknown && !kernels_add_known(sys, &k, t.md->known, t.md->nknown, true, err, sizeof err)) ||
                          (model_in_generalized_coords(t.md->kind) &&
                           !kernels_add_generalized(sys, &k, false, true, err, sizeof err)))) {
        kernels_free(&k);
        built = false;
    }
    if (sys && !built) {
        fprintf(stderr, "physc: emit-c: %s\n", err);
        rc = EXIT_INPUT;
    } else if (sys && !kernels_find(&k, "Init")) {
        fprintf(stderr, "physc: emit-c: system '%s' has no init block to sample initial states from\n", sys->name);
        kernels_free(&k);
        rc = EXIT_INPUT;
    } else if (sys) {
        int nmass = dynamics_mass_params(sys), nparams = nmass + lower_free_lengths(sys);
        double *params = prt_xcalloc((size_t)nparams + 1, sizeof(double), "emit-c tables");
        int *rows = prt_xcalloc((size_t)(nparams - nmass) + 1, sizeof(int), "emit-c tables");
        dynamics_fill_mass_params(sys, params);
        lower_free_length_rows(sys, rows);
        PrtAtomicFile af; /* written whole or not at all (atomic_file.h) */
        if (prt_atomic_open(&af, inv->out, err, sizeof err) != 0) {
            fprintf(stderr, "physc: emit-c: %s\n", err);
            rc = EXIT_INPUT;
        } else {
            EmitModel em = {.name = t.md ? t.md->name : NULL, .params_path = inv->params, .cfg = t.cfg,
                            .theta = t.theta, .nparams = t.nparams};
            emitc_program(af.f, sys, &k, params, nparams, nmass, rows, t.md ? &em : NULL);
            if (prt_atomic_commit(&af, err, sizeof err) != 0) {
                fprintf(stderr, "physc: emit-c: %s\n", err);
                rc = EXIT_INPUT;
            } else if (!inv->quiet && strcmp(inv->out, "-")) { /* with -o -, standard output is the C alone */
                char build[PATH_MAX], include[PATH_MAX + 16], exe[PATH_MAX];
                if (!runtime_paths(build, include, sizeof build)) strcpy(build, "build"), strcpy(include, "runtime");
                snprintf(exe, sizeof exe, "%s", inv->out);
                char *dot = strrchr(exe, '.'), *base = strrchr(exe, '/');
                if (dot && (!base || dot > base)) *dot = 0;
                if (!strcmp(exe, inv->out)) strcat(exe, ".bin");
                FILE *status = output_status_stream(inv->out);
                fprintf(status, "wrote %s: %s%s%s as C, with a main() that runs it as `physc simulate%s` does\n", inv->out,
                        t.md ? "model " : "system ", t.md ? t.md->name : sys->name, t.md ? " (trained)" : "",
                        !t.md ? "" : t.cfg.net[0].f32 ? " --params --precision f32" : " --params");
                fprintf(status, "build it: cc -O2 -std=c17 -I%s %s %s/libphysrt.a%s -lm -o %s\n", include, inv->out, build,
                        t.md ? " -lopenblas" : "", exe);
            }
        }
        free(params), free(rows);
        kernels_free(&k);
    }
    trained_close(&t);
    arena_free(&arena);
    diag_free(&d);
    return rc;
}

static int cmd_run(Invocation *inv) {
    Diags d;
    Arena arena = {0};
    System *sys = load_system(inv, &arena, &d);
    int rc = EXIT_INPUT;
    if (sys && unknown_model(sys, inv)) rc = EXIT_USAGE;
    else if (sys) {
        RunOptions o = {.file = inv->file, .set_names = inv->set_names, .set_values = inv->set_values, .nset = inv->nset,
                        .model = inv->model, .out_dir = inv->out, .save_data = inv->save_data, .precision = inv->precision,
                        .epochs = inv->epochs, .seed = inv->seed, .threads = inv->threads, .stop_after = inv->stop_after,
                        .resume = inv->resume, .force = inv->force, .quiet = inv->quiet, .view = inv->view,
                        .eval_from_chunk = inv->eval_from_chunk, .diags = &d,
                        .trained_by = inv->trained_by ? &inv->trained_by : NULL, .ntrained_by = inv->trained_by ? 1 : 0,
                        .trained_by_required = inv->trained_by != NULL};
        rc = run_model(sys, &o);
    }
    arena_free(&arena);
    diag_free(&d);
    return rc;
}

static int cmd_sweep(Invocation *inv) {
    Diags d;
    Arena arena = {0};
    System *sys = load_system(inv, &arena, &d);
    int rc = EXIT_INPUT;
    if (sys) {
        SweepOptions o = {.command = inv->cmd, .file = inv->file, .set_names = inv->set_names,
                          .set_values = inv->set_values, .nset = inv->nset, .models = inv->models, .sizes = inv->sizes,
                          .nsizes = inv->nsizes, .epochs = inv->epochs, .seeds = inv->seeds ? inv->seeds : 1,
                          .seed_from = inv->seeds ? inv->seed_from : -1, .threads = inv->threads,
                          .jobs = inv->jobs ? inv->jobs : 1, .task = inv->task, .emit_slurm = inv->emit_slurm,
                          .argc = inv->argc, .argv = inv->argv, .precision = inv->precision, .out_dir = inv->out,
                          .eval_from_chunk = inv->eval_from_chunk, .force = inv->force, .quiet = inv->quiet, .diags = &d};
        rc = sweep_models(sys, &o);
    }
    arena_free(&arena);
    diag_free(&d);
    return rc;
}

static int cmd_view(Invocation *inv) {
    ViewOptions o = {.dir = inv->file, .out = inv->out, .quiet = inv->quiet, .models = inv->models, .seed_given = inv->seed >= 0, .seed = inv->seed,
                     .size = inv->sizes[0], .mp4 = inv->mp4, .layout = inv->layout, .traj = inv->traj, .fps = inv->fps};
    return view_write_page(&o);
}

static void invocation_free(Invocation *inv) {
    for (int i = 0; i < inv->nset; i++) free((char *)inv->set_names[i]);
}

static int cmd_check(Invocation *inv) {
    Diags d;
    Arena arena = {0};
    System *sys = load_system(inv, &arena, &d);
    if (sys && inv->pedantic) {
        diag_defer(&d); /* (in source order) */
        sema_pedantic(sys, &d);
        pedantic_step(sys, &d);
        diag_flush(&d);
        if (d.nwarnings && !d.json) fprintf(stderr, "%d warning%s\n", d.nwarnings, d.nwarnings == 1 ? "" : "s");
    }
    if (sys && !inv->quiet) print_summary(sys);
    arena_free(&arena);
    diag_free(&d);
    return sys ? 0 : EXIT_INPUT;
}

static int cmd_dump_ir(Invocation *inv) {
    Diags d;
    Arena arena = {0};
    System *sys = load_system(inv, &arena, &d);
    int rc = sys ? 0 : EXIT_INPUT;
    Kernels k = {0};
    char err[512];
    /* one kernel asked for by name may be one of a generalized-coordinate model's */
    bool loop = driver_kernel_form() == KERNEL_FORM_LOOP; /* Row0, Row1, ... instead of Field, Rhs, DPhi */
    if (sys && (!(loop ? kernels_build_except(sys, &k, !inv->no_opt, KERNELS_LOOP_FORM, err, sizeof err)
                       : kernels_build(sys, &k, !inv->no_opt, err, sizeof err)) ||
                (inv->kernel && sys->coords.present &&
                 !kernels_add_generalized(sys, &k, true, !inv->no_opt, err, sizeof err)))) {
        fprintf(stderr, "physc: dump-ir: %s\n", err);
        rc = EXIT_INPUT;
    } else if (sys) {
        bool found = false;
        for (int i = 0; i < k.n; i++) {
            if (inv->kernel && strcmp(inv->kernel, k.fns[i]->name)) continue;
            if (found) putchar('\n');
            ir_print(stdout, k.fns[i]);
            found = true;
        }
        if (!found) {
            fprintf(stderr, "physc: dump-ir: no kernel named '%s' (kernels:", inv->kernel);
            for (int i = 0; i < k.n; i++) fprintf(stderr, " %s", k.fns[i]->name);
            fprintf(stderr, ")\n");
            rc = EXIT_USAGE;
        }
    }
    kernels_free(&k);
    arena_free(&arena);
    diag_free(&d);
    return rc;
}

int main(int argc, char **argv) {
    prt_blas_select_kernels(argv); /* (it may exec physc again: before MPI starts) */
    dist_init(&argc, &argv);
    prt_blas_park_threads();
    prt_stdio_order();
    if (argc < 2) {
        fputs(usage_text, stderr);
        return EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
        fputs(usage_text, stdout);
        return 0;
    }
    if (!strcmp(cmd, "--version")) {
        char blas[256];
        char mpi[256];
        printf("physc %s\nBLAS: %s\nMPI: %s\n", PHYSC_VERSION, prt_blas_describe(blas, sizeof blas),
               dist_describe(mpi, sizeof mpi));
        return 0;
    }
    if (!strcmp(cmd, "fmt")) return fmt_main(argc - 2, argv + 2); /* (files, not a program: its own options) */
    if (!strcmp(cmd, "lsp")) return lsp_main(argc - 2, argv + 2);
    static const struct {
        const char *name;
        const char *help;
        int (*run)(Invocation *);
    } commands[] = {
        {"check", NULL, cmd_check},
        {"dump-ir", NULL, cmd_dump_ir},
        {"simulate", NULL, cmd_simulate},
        {"emit-c", NULL, cmd_emit_c},
        {"run", NULL, cmd_run},
        {"compare", NULL, cmd_sweep},
        {"sweep", NULL, cmd_sweep},
        {"view", NULL, cmd_view},
    };
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        if (strcmp(cmd, commands[i].name)) continue;
        const char *helps[] = {check_help, dump_ir_help, simulate_help, emit_c_help, run_help, compare_help, sweep_help, view_help};
        Invocation inv = {.cmd = cmd, .help = helps[i]};
        int rc = parse_args(&inv, argc - 2, argv + 2);
        if (rc < 0) rc = commands[i].run(&inv);
        invocation_free(&inv);
        dist_finalize();
        return rc;
    }
    return usage_error("unknown command '%s'", cmd);
}
