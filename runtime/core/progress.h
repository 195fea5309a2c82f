/* progress.h — the progress line of a phase of a run that may take long (making the data,
   a loss over the whole training set, an epoch, the evaluation): on a terminal one line
   redrawn in place (at most every 0.1 s) and cleared when the phase ends, so that the
   phase's own result line takes its place; in a log a line once the phase has taken a
   second, then every 10 s (a log is not flooded; a long phase still shows life). The same
   lines whatever the phase: "<what>, <percent>% in <seconds> s". */
#ifndef PRT_PROGRESS_H
#define PRT_PROGRESS_H
#include <stdbool.h>
#include <stdio.h>

typedef struct PrtProgress {
    FILE *out;        /* NULL: silent */
    bool tty;         /* redraw in place */
    char what[160];   /* the phase in progress ("" between phases: nothing is printed) */
    double t0, shown; /* when it started; when its last line was printed (0: none yet) */
} PrtProgress;

/* A meter printing to out (NULL: none), redrawing in place if tty. */
void prt_progress_init(PrtProgress *p, FILE *out, bool tty);
/* A new phase, what (printf) it does, timed from now. p may be NULL (then nothing). */
void prt_progress_start(PrtProgress *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The phase goes on under another name, on the same clock (the data's next set). */
void prt_progress_rename(PrtProgress *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* done of total: the phase's line, when one is due. */
void prt_progress_tick(PrtProgress *p, double done, double total);
/* Ends the phase: its line cleared on a terminal. */
void prt_progress_end(PrtProgress *p);

#endif
