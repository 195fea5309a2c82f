/* settings.h — `key value` blocks (train, data, eval, ...) checked against a table of
   SetSpec rows (settings.c). */
#ifndef PHYSC_SETTINGS_H
#define PHYSC_SETTINGS_H
#include "eval.h"

#define SET_POSITIVE 1e-300 /* a SetSpec minimum meaning "greater than zero" */
typedef enum SetType { S_INT, S_NUM, S_WORD, S_STR, S_WORDS, S_INTS, S_NODE } SetType;

typedef struct SetSpec {
    const char *key;
    SetType type;
    size_t off;          /* where the value goes in the output struct */
    double min, max;     /* S_INT / S_NUM / S_INTS bounds (inclusive) */
    const char *choices; /* S_WORD / S_WORDS: "a|b|c" */
    size_t count_off;    /* S_WORDS / S_INTS: where the count goes */
    int max_count;
} SetSpec;

/* Applies every setting in `list` to `out`; reports unknown keys (with a suggestion),
   duplicates, wrong types and out-of-range values. */
void settings_apply(Sema *s, Scope *scope, const PtrVec *list, const SetSpec *specs, int nspecs, void *out,
                    const char *block);
const char *closest_word(const char *word, const char *const *candidates, int n);

/* The settings of a block ("data", "train", "eval", "learned", "model", "body"): its rows
   (*n of them; NULL, 0 for another word). For tools (the language server's completion). */
const SetSpec *settings_of(const char *block, int *n);
const SetSpec *sema_learned_specs(int *n);
const SetSpec *sema_model_specs(int *n);
const SetSpec *sema_body_specs(int *n);

#endif
