/* progress.c — progress lines (progress.h). */
#include "progress.h"

#include <stdarg.h>
#include <time.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

void prt_progress_init(PrtProgress *p, FILE *out, bool tty) { *p = (PrtProgress){.out = out, .tty = out && tty}; }

void prt_progress_start(PrtProgress *p, const char *fmt, ...) {
    if (!p) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->what, sizeof p->what, fmt, ap);
    va_end(ap);
    p->t0 = now_s(), p->shown = 0;
}

void prt_progress_rename(PrtProgress *p, const char *fmt, ...) {
    if (!p) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->what, sizeof p->what, fmt, ap);
    va_end(ap);
}

void prt_progress_tick(PrtProgress *p, double done, double total) {
    if (!p || !p->out || !p->what[0]) return;
    double now = now_s();
    /* a terminal's line from the start, redrawn; a log's after a second, then every 10 s */
    if (p->tty ? p->shown > 0 && now - p->shown < 0.1 : now - (p->shown > 0 ? p->shown : p->t0 - 9) < 10) return;
    p->shown = now;
    int percent = total > 0 ? (int)(100 * done / total) : 100;
    fprintf(p->out, "%s%s, %d%% in %.0f s%s", p->tty ? "\r\x1b[K" : "", p->what, percent < 100 ? percent : 100, now - p->t0,
            p->tty ? "" : "\n");
    fflush(p->out);
}

void prt_progress_end(PrtProgress *p) {
    if (!p) return;
    if (p->out && p->tty && p->shown > 0) {
        fputs("\r\x1b[K", p->out);
        fflush(p->out);
    }
    p->what[0] = 0, p->shown = 0;
}
