/* sweep_runs.c — the engines that run a sweep's runs (sweep_internal.h): in turn in this
   process, several at once as child processes (--jobs), one task of a Slurm array (--task),
   or a task farm under mpirun. Every engine takes a task (the runs of one seed, size and
   model kind, which go in turn: one may take the other's training) by claiming it, so that
   processes that share a sweep's folder (the farm's ranks, Slurm's tasks, a second sweep
   started by mistake) never run one task twice nor write over each other: a claim is a write
   lock on byte `task` of DIR/tasks.lock (fcntl(2): the kernel drops it when the process ends,
   however it ends), held until the process leaves the sweep; each run also holds its own
   folder's lock (core/run_lock.h). */
#include "sweep_internal.h"
#include "core/alloc.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dist.h"
#include "report.h"
#include "run.h"
#include "stop_signals.h"

/* ---- claims ---- */

static int claims_fd = -1;
static bool claims_said; /* a folder without locks said once */
static char farm_rank[32]; /* " (rank r)" in a task farm's lines, else "" */

/* 1: task is this process's (now or already); 0: another process holds it (*holder: its
   pid); where the folder cannot be locked (said once), 1 as if there were no other process. */
static int claim(const Settings *st, int task, pid_t *holder) {
    if (claims_fd < 0) {
        char *path = report_path(st->dir, "tasks.lock");
        claims_fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (claims_fd < 0 && !claims_said)
            fprintf(stderr, "physc: %s: cannot open %s (%s): runs are not claimed, so no other process may share the "
                    "folder\n", st->o->command, path, strerror(errno)), claims_said = true;
        free(path);
        if (claims_fd < 0) return 1;
    }
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = task, .l_len = 1};
    if (fcntl(claims_fd, F_SETLK, &fl) == 0) return 1;
    if (errno != EACCES && errno != EAGAIN) {
        if (!claims_said)
            fprintf(stderr, "physc: %s: cannot lock %s/tasks.lock (%s): runs are not claimed, so no other process may "
                    "share the folder\n", st->o->command, st->dir, strerror(errno)), claims_said = true;
        return 1;
    }
    fl = (struct flock){.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = task, .l_len = 1};
    *holder = fcntl(claims_fd, F_GETLK, &fl) == 0 && fl.l_type != F_UNLCK ? fl.l_pid : 0;
    return 0;
}

/* Run i's task, claimed: true if this process runs it; else run i is pending (said). */
static bool claim_run(const Settings *st, Run *runs, int i, int nruns) {
    pid_t holder = 0;
    if (claim(st, runs[i].task, &holder)) return true;
    runs[i].pending = true;
    snprintf(runs[i].failure, sizeof runs[i].failure, "not finished");
    if (!st->o->quiet && !farm_rank[0]) { /* (in a farm, the other processes' tasks are the rule) */
        char who[32] = "another process";
        if (holder > 0) snprintf(who, sizeof who, "process %d", (int)holder);
        printf("%s: run %d of %d (%s) is %s's: skipped\n", st->o->command, i + 1, nruns, runs[i].dir, who);
        fflush(stdout);
    }
    return false;
}

/* ---- one run ---- */

/* The options of run i, whose folder is set, printing its line; *earlier (the caller frees
   it) lists the finished runs of its seed and size, whose training it may take. */
static RunOptions run_options(const Settings *st, Run *runs, int i, int nruns, const char ***earlier, const char *log) {
    const SweepOptions *o = st->o;
    Run *r = &runs[i];
    bool resume = !o->force && sweep_unfinished(r->dir);
    if (!o->quiet)
        printf("%s%s: run %d of %d: model %s, seed %ld, %ld training %s -> %s/%s%s%s%s\n", o->command, farm_rank, i + 1, nruns,
               r->md->name, r->seed, r->size, r->size == 1 ? "trajectory" : "trajectories", r->dir,
               resume ? " (resuming its checkpoint)" : "", log ? " (log: " : "", log ? log : "", log ? ")" : "");
    fflush(stdout);
    /* the earlier models' finished runs of this seed and size: one that trains as this model
       (leapfrog for leapfrog + proposed) gives it its training */
    *earlier = prt_xcalloc((size_t)nruns + 1, sizeof(char *), "the runs");
    int nearlier = 0;
    for (int k = 0; k < i; k++)
        if (runs[k].ok && runs[k].seed == r->seed && runs[k].size == r->size) (*earlier)[nearlier++] = runs[k].dir;
    /* `physc run`'s own folder for this model, at the data block's seed and size: a finished run
       there of the same fingerprint is taken rather than trained again */
    bool run_default = r->seed == st->sys->data.seed && r->size == st->sys->data.ntrain;
    if (run_default && !r->run_dir) {
        size_t len = strlen(st->sys->name) + strlen(r->md->name) + 8;
        r->run_dir = prt_xalloc(len, 1, "a path");
        snprintf(r->run_dir, len, "runs/%s-%s", st->sys->name, r->md->name);
    }
    return (RunOptions){.file = o->file, .set_names = o->set_names, .set_values = o->set_values, .nset = o->nset,
                        .model = r->md->name, .out_dir = r->dir, .epochs = st->epochs, .seed = r->seed,
                        .precision = o->precision, .reuse_from = r->run_dir, .threads = o->threads,
                        .ntrain = o->nsizes ? r->size : 0, .quiet = o->quiet, .force = o->force, .resume = resume,
                        .eval_from_chunk = o->eval_from_chunk, .reuse_finished = !o->force, .trained_by = *earlier,
                        .ntrained_by = nearlier, .failure = r->failure, .failure_len = sizeof r->failure, .diags = o->diags};
}

/* After run r ended with run_rc (not interrupted): its files read, or why it failed (said,
   and kept beside its folder for the summary of whichever process makes it). */
static void run_ended(const Settings *st, Run *r, int run_rc) {
    r->pending = false;
    if (run_rc == 0 && sweep_load_run(r, r->failure, sizeof r->failure) == 0) r->ok = true;
    else if (!r->failure[0]) snprintf(r->failure, sizeof r->failure, "exit status %d", run_rc);
    if (r->ok) sweep_forget_failure(r);
    else {
        fprintf(stderr, "physc: %s: %s failed: %s\n", st->o->command, r->dir, r->failure);
        sweep_keep_failure(r);
    }
}

/* DIR/<run>.log (the caller frees it) */
static char *log_path(const Run *r) {
    size_t len = strlen(r->dir) + 8;
    char *log = prt_xalloc(len, 1, "a path");
    snprintf(log, len, "%s.log", r->dir);
    return log;
}

/* Opens a run's log to add to it (a run reused or resumed keeps what its log said before),
   after a line that says when: the descriptor, or -1 */
static int open_log(const char *path, const char *command) {
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0) return -1;
    char line[128], when[64];
    time_t now = time(NULL);
    strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S %Z", localtime(&now));
    int n = snprintf(line, sizeof line, "== physc %s, %s ==\n", command, when);
    if (write(fd, line, (size_t)n) < 0) { /* (a log that cannot be written costs the log only) */
    }
    return fd;
}

/* Run i in this process, its output on the terminal or (log) in DIR/<run>.log: run_model's
   exit status. */
static int run_here(System *sys, const Settings *st, Run *runs, int i, int nruns, bool log) {
    const char **earlier;
    char *path = log ? log_path(&runs[i]) : NULL;
    RunOptions ro = run_options(st, runs, i, nruns, &earlier, st->o->quiet ? NULL : path);
    int saved[2] = {-1, -1}, fd = -1;
    if (path) {
        fflush(stdout), fflush(stderr);
        fd = open_log(path, st->o->command);
        if (fd >= 0) saved[0] = dup(STDOUT_FILENO), saved[1] = dup(STDERR_FILENO), dup2(fd, STDOUT_FILENO), dup2(fd, STDERR_FILENO);
    }
    int rc = run_model(sys, &ro);
    if (fd >= 0) {
        fflush(stdout), fflush(stderr);
        dup2(saved[0], STDOUT_FILENO), dup2(saved[1], STDERR_FILENO);
        close(saved[0]), close(saved[1]), close(fd);
    }
    free(earlier), free(path);
    return rc;
}

/* ---- the engines ---- */

int sweep_in_turn(System *sys, const Settings *st, Run *runs, int nruns) {
    for (int i = 0; i < nruns; i++) {
        if (!claim_run(st, runs, i, nruns)) continue;
        int run_rc = run_here(sys, st, runs, i, nruns, false);
        if (run_rc >= 128) { /* Ctrl-C or SIGTERM: the run kept a checkpoint; stop here */
            fprintf(stderr, "physc: %s: stopped at run %d of %d; the same command resumes it\n", st->o->command, i + 1, nruns);
            return run_rc;
        }
        run_ended(st, &runs[i], run_rc);
    }
    return 0;
}

int sweep_one_task(System *sys, const Settings *st, Run *runs, int nruns, int task) {
    for (int i = 0; i < nruns; i++) {
        if (runs[i].task != task) continue;
        if (!claim_run(st, runs, i, nruns)) return 0;
        int run_rc = run_here(sys, st, runs, i, nruns, false);
        if (run_rc >= 128) {
            fprintf(stderr, "physc: %s: task %d stopped at run %d of %d; the same command resumes it\n", st->o->command, task,
                    i + 1, nruns);
            return run_rc;
        }
        run_ended(st, &runs[i], run_rc);
    }
    return 0;
}

/* Under mpirun: every process walks the runs in order and takes each task no process holds,
   running its runs alone (each its own run of one process, its output in DIR/<run>.log); a
   failed run is said and the others go on. Then the processes wait for each other (as long
   as runs take: a process that dies ends the job through mpirun). */
int sweep_farm(System *sys, const Settings *st, Run *runs, int nruns) {
    int rc = 0;
    snprintf(farm_rank, sizeof farm_rank, " (rank %d)", dist_rank());
    dist_set_alone(true); /* (each run is one process's) */
    for (int i = 0; i < nruns && !rc; i++) {
        if (!claim_run(st, runs, i, nruns)) continue;
        int run_rc = run_here(sys, st, runs, i, nruns, true);
        if (run_rc >= 128) {
            fprintf(stderr, "physc: %s%s: stopped at run %d of %d; the same command resumes it\n", st->o->command, farm_rank,
                    i + 1, nruns);
            rc = run_rc;
        } else {
            run_ended(st, &runs[i], run_rc);
            if (!st->o->quiet && runs[i].ok)
                printf("%s%s: run %d of %d ended: model %s, seed %ld\n", st->o->command, farm_rank, i + 1, nruns,
                       runs[i].md->name, runs[i].seed);
            fflush(stdout);
        }
    }
    dist_set_alone(false);
    farm_rank[0] = 0;
    char err[256];
    int any = rc;
    if (dist_max_int(&any, "the other processes' runs", err, sizeof err) != 0) dist_abort(err);
    return rc ? rc : any;
}

static volatile sig_atomic_t stop_signal; /* SIGINT, SIGTERM or SIGHUP, to the parent of parallel runs */
static struct sigaction parent_signals[NSTOP_SIGNALS + 1]; /* what they did before it caught them */
static void on_stop_signal(int sig) { stop_signal = sig; }

/* Whether run i may start: every earlier run of its seed, size and model kind has ended,
   since one of them may train exactly as it does and give it its training. */
static bool run_ready(const Run *runs, const char *state, int i) {
    for (int k = 0; k < i; k++)
        if (state[k] != 'd' && runs[k].seed == runs[i].seed && runs[k].size == runs[i].size &&
            runs[k].md->kind == runs[i].md->kind)
            return false;
    return true;
}

/* Starts run i in a child process with its own process group (the parent forwards a stop
   signal once, so a run sees one Ctrl-C, not two), its output in `log`; the child reports
   why it failed through a pipe. The child's pid, or -1 with errno set. */
static pid_t start_run(System *sys, const char *command, const RunOptions *ro, const char *log, int *failure_fd) {
    int fds[2];
    if (pipe(fds) != 0) return -1;
    fflush(stdout), fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(fds[0]), close(fds[1]);
        errno = e;
        return -1;
    }
    if (pid == 0) {
        close(fds[0]);
        setpgid(0, 0);
        stop_signals_default(parent_signals);
        int fd = open_log(log, command);
        if (fd >= 0) dup2(fd, STDOUT_FILENO), dup2(fd, STDERR_FILENO), close(fd);
        int rc = run_model(sys, ro);
        fflush(stdout), fflush(stderr);
        size_t len = strnlen(ro->failure, ro->failure_len);
        if (len && write(fds[1], ro->failure, len) < 0) rc = rc ? rc : 1;
        _exit(rc);
    }
    setpgid(pid, pid);
    close(fds[1]);
    *failure_fd = fds[0];
    return pid;
}

/* Up to o->jobs runs at once, each a child process writing DIR/<run>.log. Returns 0, or
   128 + the signal that stopped them (forwarded to the runs in progress, which keep their
   checkpoints; no new run starts). */
int sweep_in_parallel(System *sys, const Settings *st, Run *runs, int nruns) {
    const SweepOptions *o = st->o;
    char *state = prt_xalloc((size_t)nruns, 1, "the runs"); /* 'w'aiting, 'r'unning, 'd'one */
    pid_t *pid = prt_xalloc((size_t)nruns, sizeof(pid_t), "the runs");
    int *fd = prt_xalloc((size_t)nruns, sizeof(int), "the runs");
    memset(state, 'w', (size_t)nruns);
    stop_signal = 0;
    stop_signals_catch(on_stop_signal, parent_signals);
    int running = 0, stopped = 0;
    bool forwarded = false;
    for (;;) {
        if (stop_signal && !forwarded) {
            for (int i = 0; i < nruns; i++)
                if (state[i] == 'r') kill(pid[i], stop_signal);
            forwarded = true;
        }
        while (!stop_signal && running < o->jobs) {
            int i = 0;
            while (i < nruns && !(state[i] == 'w' && run_ready(runs, state, i))) i++;
            if (i == nruns) break;
            if (!claim_run(st, runs, i, nruns)) {
                state[i] = 'd';
                continue;
            }
            char *log = log_path(&runs[i]);
            const char **earlier;
            RunOptions ro = run_options(st, runs, i, nruns, &earlier, o->quiet ? NULL : log);
            pid[i] = start_run(sys, o->command, &ro, log, &fd[i]);
            if (pid[i] > 0) state[i] = 'r', running++;
            else {
                snprintf(runs[i].failure, sizeof runs[i].failure, "cannot start its process: %s", strerror(errno));
                state[i] = 'd';
                run_ended(st, &runs[i], 1);
            }
            free(earlier), free(log);
        }
        if (running == 0) break; /* all ended, or stopped */
        int status;
        pid_t ended = waitpid(-1, &status, WNOHANG);
        if (ended == 0 || (ended < 0 && errno == EINTR)) {
            sleep(1); /* (a signal ends it early) */
            continue;
        }
        if (ended < 0) break; /* no child left: cannot happen while running > 0 */
        int i = 0;
        while (i < nruns && !(state[i] == 'r' && pid[i] == ended)) i++;
        if (i == nruns) continue; /* not a run's */
        Run *r = &runs[i];
        ssize_t got = read(fd[i], r->failure, sizeof r->failure - 1);
        r->failure[got > 0 ? got : 0] = 0;
        close(fd[i]);
        state[i] = 'd', running--;
        int run_rc = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
        if (WIFSIGNALED(status) && !r->failure[0])
            snprintf(r->failure, sizeof r->failure, "its process was killed by signal %d", WTERMSIG(status));
        if (stop_signal && (run_rc >= 128 || (WIFSIGNALED(status) && WTERMSIG(status) == stop_signal))) {
            /* stopped by the forwarded signal: its checkpoint is kept (or, stopped before it
               trained, it has none and starts afresh next time) */
            stopped++;
            continue;
        }
        run_ended(st, r, run_rc);
        if (!o->quiet && r->ok) printf("%s: run %d of %d ended: model %s, seed %ld\n", o->command, i + 1, nruns, r->md->name, r->seed);
        fflush(stdout);
    }
    stop_signals_restore(parent_signals);
    free(state), free(pid), free(fd);
    if (!stop_signal) return 0;
    fprintf(stderr, "physc: %s: stopped (%s); %d %s in progress kept %s checkpoint%s; the same command resumes\n",
            o->command, stop_signal == SIGINT ? "interrupted" : stop_signal == SIGHUP ? "SIGHUP" : "SIGTERM", stopped, stopped == 1 ? "run" : "runs",
            stopped == 1 ? "its" : "their", stopped == 1 ? "" : "s");
    return 128 + stop_signal;
}
