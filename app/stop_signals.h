/* stop_signals.h — the signals that stop physc's long commands: SIGINT (Ctrl-C), SIGTERM (what
   batch schedulers send before they kill a job) and SIGHUP (the terminal closed). */
#ifndef PHYSC_STOP_SIGNALS_H
#define PHYSC_STOP_SIGNALS_H
#include <signal.h>

enum { NSTOP_SIGNALS = 3 };

/* Sends the stop signals to handler, saving what they did in old. A SIGHUP ignored when this
   is called (`nohup physc run ... &`) stays ignored: the user asked the run to outlive its
   terminal. SIGPIPE is ignored too (a closed pipe fails the write, it does not kill). */
void stop_signals_catch(void (*handler)(int), struct sigaction old[NSTOP_SIGNALS + 1]);

/* Puts back what stop_signals_catch saved. */
void stop_signals_restore(const struct sigaction old[NSTOP_SIGNALS + 1]);

/* In a child process: each stop signal's default action, but a SIGHUP its parent found
   ignored (old, from the parent's stop_signals_catch) stays ignored. */
void stop_signals_default(const struct sigaction old[NSTOP_SIGNALS + 1]);

#endif
