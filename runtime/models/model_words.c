/* model_words.c — what `physc run` says of a model (model.h: the say_* members): the words
   every family shares, and the family's own where it has them. */
#include "model.h"

#include <math.h>
#include <stdio.h>

void prt_model_say_scheme(const PrtModel *m, FILE *out) {
    if (m->family->say_scheme) m->family->say_scheme(m, out);
}

/* A family whose rollouts step its own integrator says so; the others integrate their field by dopri5. */
void prt_model_say_rollout(const PrtModel *m, double rtol, double atol, char *buf, size_t len) {
    if (m->family->say_rollout) m->family->say_rollout(m, rtol, atol, buf, len);
    else snprintf(buf, len, "dopri5 rtol %g, atol %g", rtol, atol);
}

void prt_model_floor_line(const PrtModel *m, const PrtFloorFacts *f, const char *note, FILE *out) {
    fprintf(out, "integrator floor: the system's own dynamics under %s%s reach a training loss of %.3e%s%s\n",
            prt_integrators[m->cfg.integrator].name, f->steps, f->floor, f->noisy ? " (with the data's noise)" : "", note);
}

/* The floor, and against it what the learned terms can gain (the known terms alone's loss,
   when theta = 0 is them) or how far the step is from the data (their mean |component|). */
static void shared_floor(const PrtModel *m, const PrtFloorFacts *f, FILE *out) {
    prt_model_floor_line(m, f, "", out);
    if (!isnan(f->baseline)) {
        /* a floor near the known terms' loss means the step's own error hides the corrections */
        char ratio[48] = "above a floor of 0"; /* (no ratio to a floor of 0) */
        if (f->floor > 0) snprintf(ratio, sizeof ratio, "%.3g x the floor", f->baseline / f->floor);
        fprintf(out, "known terms alone (no learned correction): a training loss of %.3e, %s: the most "
                "a learned correction can gain under this step%s\n", f->baseline, ratio,
                f->baseline > 0 && !(f->floor < 0.1 * f->baseline) ? "; the step's own error hides the corrections: "
                                                                     "`train { substeps N }` takes N steps per interval" : "");
    } else if (f->data_scale > 0 && !(f->floor < 0.1 * f->data_scale)) /* (scale 0: every component 0, at rest) */
        fprintf(out, "  (that is %.2g of the data's mean |component|: one step per interval cannot follow the system on some "
                "chunks; `train { substeps N }` takes N steps per interval)\n", f->floor / f->data_scale);
}

void prt_model_say_floor(const PrtModel *m, const PrtFloorFacts *f, FILE *out) {
    (m->family->say_floor ? m->family->say_floor : shared_floor)(m, f, out);
}

/* Below the floor the model fits the data better than the true dynamics under the step do:
   it has absorbed the step's error (or the noise), which no step size explains. */
const char *prt_model_floor_note(const PrtModel *m, double ratio) {
    static char note[192];
    if (ratio < 0.5) return " (below it: the model absorbs the training step's error or the data's noise)";
    if (ratio >= 1.5) return "";
    snprintf(note, sizeof note, " (%s)", m->family->floor_limit ? m->family->floor_limit
                                         : "the training step, not the network, limits the fit; `train { substeps N }` "
                                           "lowers the floor");
    return note;
}

int prt_model_pictures(PrtModel *m, const PrtPictureData *d, char *wrote, size_t wrotelen, char *err, size_t errlen) {
    return m->family->pictures ? m->family->pictures(m, d, wrote, wrotelen, err, errlen) : 0;
}
