/* stop_signals.c — installing and removing the handlers of the stop signals (stop_signals.h). */
#include "stop_signals.h"

#include <stdbool.h>
#include <stddef.h>

static const int stop_signals[NSTOP_SIGNALS] = {SIGINT, SIGTERM, SIGHUP};

/* Signal i was ignored when caught (old[i]) and stays so: nohup's SIGHUP */
static bool kept_ignored(int i, const struct sigaction old[NSTOP_SIGNALS + 1]) {
    return stop_signals[i] == SIGHUP && old[i].sa_handler == SIG_IGN;
}

void stop_signals_catch(void (*handler)(int), struct sigaction old[NSTOP_SIGNALS + 1]) {
    struct sigaction sa = {.sa_handler = handler}, ignore = {.sa_handler = SIG_IGN};
    sigemptyset(&sa.sa_mask);
    sigemptyset(&ignore.sa_mask);
    for (int i = 0; i < NSTOP_SIGNALS; i++) {
        sigaction(stop_signals[i], NULL, &old[i]);
        if (!kept_ignored(i, old)) sigaction(stop_signals[i], &sa, NULL);
    }
    /* a closed terminal's pipe (`physc run | tee log`, the tee gone) must not kill a run before
       its checkpoint: its writes fail instead */
    sigaction(SIGPIPE, &ignore, &old[NSTOP_SIGNALS]);
}

void stop_signals_restore(const struct sigaction old[NSTOP_SIGNALS + 1]) {
    for (int i = 0; i < NSTOP_SIGNALS; i++) sigaction(stop_signals[i], &old[i], NULL);
    sigaction(SIGPIPE, &old[NSTOP_SIGNALS], NULL);
}

void stop_signals_default(const struct sigaction old[NSTOP_SIGNALS + 1]) {
    for (int i = 0; i < NSTOP_SIGNALS; i++)
        if (!kept_ignored(i, old)) signal(stop_signals[i], SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
}
