/* run_stopped.c — what `physc run` says when a stop signal (stop_signals.h) ends it outside its
   epochs. The epochs catch the signals themselves (run_train.c: the epoch finishes and a
   checkpoint is written); before them (compiling, making the data, the losses before training)
   there is nothing to checkpoint, and after them the last checkpoint holds the trained
   parameters (the same command evaluates them without training again), so the
   run says which it was and ends by the signal (exit 128 + the signal, as an uncaught one). */
#include "run_internal.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "dist.h"
#include "stop_signals.h"

static char said[1024];               /* what follows "stopped (SIGTERM) " */
static volatile sig_atomic_t said_len; /* 0 while it is rewritten */
static struct sigaction before[NSTOP_SIGNALS + 1];
static bool caught;

static void on_stop(int sig) {
    static const char head[] = "\nphysc: run: stopped (";
    const char *name = sig == SIGINT ? "interrupted" : sig == SIGTERM ? "SIGTERM" : "SIGHUP";
    if (said_len) {
        ssize_t w = write(STDERR_FILENO, head, sizeof head - 1);
        w = write(STDERR_FILENO, name, strlen(name));
        w = write(STDERR_FILENO, ") ", 2);
        w = write(STDERR_FILENO, said, (size_t)said_len);
        (void)w;
    }
    signal(sig, SIG_DFL);
    raise(sig); /* (delivered when this handler returns) */
}

/* What the run kept at this stage, into `said`: its length (snprintf's) */
static int describe(const RunState *r, RunStage stage) {
    if (stage == RUN_AFTER_TRAINING)
        return snprintf(said, sizeof said, "after training: its checkpoint in %s/ keeps the trained parameters "
                        "(the same command evaluates them)\n", r->dir);
    if (r->resume && r->dir)
        return snprintf(said, sizeof said, "before training resumed: the checkpoint in %s/ is as it was\n", r->dir);
    return snprintf(said, sizeof said, "before training began: no epoch to keep\n");
}

void run_say_when_stopped(const RunState *r, RunStage stage) {
    said_len = 0;
    int n = dist_rank() == 0 ? describe(r, stage) : 0; /* (rank 0 speaks for the job) */
    if (n > 0 && (size_t)n < sizeof said) said_len = n;
    if (!caught) stop_signals_catch(on_stop, before);
    caught = true;
}

void run_release_stop_signals(void) {
    if (caught) stop_signals_restore(before);
    caught = false;
    said_len = 0;
}
