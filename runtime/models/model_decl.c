/* model_decl.c — the checks of a model's declaration that families share (model_decl.h). */
#include "model_decl.h"

#include <stdio.h>

int prt_model_decl_plain(const char *family_name, const PrtModelDecl *d, const PrtLearnedTerm **blame, char *err,
                         size_t errlen) {
    *blame = NULL;
    if (d->system_forces) {
        snprintf(err, errlen, "model '%s' (%s): the system has `force` blocks, which only a liet2 model learns (with a "
                 "force network)", d->name, family_name);
        return -1;
    }
    int n = d->npotentials + d->nforces + (d->mass != NULL);
    for (int i = 0; i < n; i++) {
        const PrtLearnedTerm *l = i < d->npotentials ? &d->potentials[i]
                                  : i < d->npotentials + d->nforces ? &d->forces[i - d->npotentials]
                                                                    : d->mass;
        if (l->scale != 1 || l->length_scale != 1 || l->time_scale != 1) {
            *blame = l;
            snprintf(err, errlen, "learned term '%s': `%s` is for liet2 models so far; model '%s' is a %s model", l->name,
                     l->scale != 1 ? "scale" : l->length_scale != 1 ? "length_scale" : "time_scale", d->name, family_name);
            return -1;
        }
    }
    return 0;
}

int prt_model_decl_counts(const char *family_name, const PrtModelDecl *d, int potentials, int forces, const char *what,
                          char *err, size_t errlen) {
    if (d->npotentials == potentials && d->nforces == forces) return 0;
    snprintf(err, errlen, "model '%s' (%s) takes %s so far", d->name, family_name, what);
    return -1;
}

int prt_model_decl_no_known(const char *family_name, const PrtModelDecl *d, char *err, size_t errlen) {
    if (!d->nknown) return 0;
    snprintf(err, errlen, "model '%s' (%s): known potential terms are not supported for %s models yet", d->name,
             family_name, family_name);
    return -1;
}
