/* settings.c — `key value` settings (data, train, eval, learned, model, body blocks),
   checked against a table of keys with their types, ranges and choices. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "settings.h"

static int edit_distance(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    if (la > 64 || lb > 64) return 99;
    int row[65];
    for (size_t j = 0; j <= lb; j++) row[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        int prev = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int cur = row[j];
            int best = prev + (a[i - 1] != b[j - 1]);
            if (row[j] + 1 < best) best = row[j] + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            prev = cur;
        }
    }
    return row[lb];
}

const char *closest_word(const char *word, const char *const *candidates, int n) {
    const char *best = NULL;
    int bestd = 3;
    for (int i = 0; i < n; i++) {
        int dist = edit_distance(word, candidates[i]);
        if (dist < bestd) {
            bestd = dist;
            best = candidates[i];
        }
    }
    return best;
}

/* Checks `w` against "a|b|c"; on failure reports the choices (and the nearest one). */
static bool word_in(Sema *s, Node *n, const char *w, const char *choices, const char *key) {
    char buf[512];
    snprintf(buf, sizeof buf, "%s", choices);
    const char *opts[32];
    int nopt = 0;
    for (char *t = strtok(buf, "|"); t && nopt < 32; t = strtok(NULL, "|")) {
        if (!strcmp(t, w)) return true;
        opts[nopt++] = t;
    }
    const char *near = closest_word(w, opts, nopt);
    char list[512];
    snprintf(list, sizeof list, "%s", choices);
    for (char *q = list; *q; q++)
        if (*q == '|') *q = ',';
    if (near)
        sema_error_once(s, n, n->loc, "unknown %s '%s'; did you mean '%s'? (one of: %s)", key, w, near, list);
    else
        sema_error_once(s, n, n->loc, "unknown %s '%s' (one of: %s)", key, w, list);
    return false;
}

static bool get_number(Sema *s, Scope *scope, Node *n, const SetSpec *sp, double *out) {
    Ctx c = {.s = s, .scope = scope, .mode = EV_CONST};
    Val v = eval(&c, n);
    if (v.kind == V_ERR) return false;
    if (v.kind != V_NUM || v.ndim != 0) {
        sema_error_once(s, n, n->loc, "'%s' takes a number, not %s", sp->key, shape_name(s, v));
        return false;
    }
    if (!v.known) {
        sema_error_once(s, n, n->loc, "'%s' must be known when the program is compiled", sp->key);
        return false;
    }
    double x = v.v[0];
    if (sp->type == S_INT || sp->type == S_INTS) {
        if (x != floor(x)) { /* not (long)x: out of range of long it is undefined */
            sema_error_once(s, n, n->loc, "'%s' takes a whole number, not %g", sp->key, x);
            return false;
        }
    }
    if (x < sp->min || x > sp->max) {
        if (sp->min == SET_POSITIVE && x <= 0)
            sema_error_once(s, n, n->loc, "'%s' must be positive, not %g", sp->key, x);
        else if (sp->min == sp->max)
            sema_error_once(s, n, n->loc, "'%s' must be %g, not %g", sp->key, sp->min, x);
        else if (sp->max >= 1e7 && x < sp->min)
            sema_error_once(s, n, n->loc, "'%s' must be at least %g, not %g", sp->key, sp->min, x);
        else if (sp->max >= 1e7)
            sema_error_once(s, n, n->loc, "'%s' must be at most %g, not %g", sp->key, sp->max, x);
        else
            sema_error_once(s, n, n->loc, "'%s' must be between %g and %g, not %g", sp->key, sp->min, sp->max, x);
        return false;
    }
    *out = x;
    return true;
}

static const char *get_word(Sema *s, Node *n, const SetSpec *sp) {
    if (n->kind != N_IDENT) {
        sema_error_once(s, n, n->loc, "'%s' takes a word (one of: %s)", sp->key, sp->choices);
        return NULL;
    }
    return word_in(s, n, n->name, sp->choices, sp->key) ? n->name : NULL;
}

void settings_apply(Sema *s, Scope *scope, const PtrVec *list, const SetSpec *specs, int nspecs, void *out,
                    const char *block) {
    Node *seen[64] = {0};
    for (int i = 0; i < list->len; i++) {
        Node *st = NODE_AT(*list, i);
        int k = 0;
        while (k < nspecs && strcmp(specs[k].key, st->name)) k++;
        if (k == nspecs) {
            const char *keys[64];
            for (int j = 0; j < nspecs && j < 64; j++) keys[j] = specs[j].key;
            const char *near = closest_word(st->name, keys, nspecs);
            if (near)
                diag_error(s->d, st->loc2, "unknown setting '%s' in %s; did you mean '%s'?", st->name, block, near);
            else {
                char all[512] = "";
                for (int j = 0; j < nspecs; j++)
                    snprintf(all + strlen(all), sizeof all - strlen(all), "%s%s", j ? ", " : "", specs[j].key);
                diag_error(s->d, st->loc2, "unknown setting '%s' in %s (settings: %s)", st->name, block, all);
            }
            continue;
        }
        const SetSpec *sp = &specs[k];
        if (k < 64 && seen[k]) {
            diag_error(s->d, st->loc2, "'%s' is set twice in %s", st->name, block);
            diag_note(s->d, seen[k]->loc2, "first set here");
            continue;
        }
        if (k < 64) seen[k] = st;
        char *base = out;
        bool listy = sp->type == S_WORDS || sp->type == S_INTS || sp->type == S_NODE;
        if (st->list.len == 0) {
            diag_error(s->d, st->loc2, "'%s' needs a value", st->name);
            continue;
        }
        if (!listy && st->list.len > 1) {
            diag_error(s->d, NODE_AT(st->list, 1)->loc, "'%s' takes one value", st->name);
            continue;
        }
        Node *v0 = NODE_AT(st->list, 0);
        double x;
        switch (sp->type) {
        case S_INT:
            if (get_number(s, scope, v0, sp, &x)) *(int *)(base + sp->off) = (int)x;
            break;
        case S_NUM:
            if (get_number(s, scope, v0, sp, &x)) *(double *)(base + sp->off) = x;
            break;
        case S_WORD: {
            const char *w = get_word(s, v0, sp);
            if (w) *(const char **)(base + sp->off) = w;
            break;
        }
        case S_STR:
            if (v0->kind != N_STR)
                sema_error_once(s, v0, v0->loc, "'%s' takes a string in double quotes", sp->key);
            else
                *(const char **)(base + sp->off) = v0->name;
            break;
        case S_WORDS: {
            const char **dst = (const char **)(base + sp->off);
            int cnt = 0;
            for (int j = 0; j < st->list.len; j++) {
                Node *vn = NODE_AT(st->list, j);
                const char *w = get_word(s, vn, sp);
                if (!w) continue;
                bool dup = false;
                for (int q = 0; q < cnt; q++)
                    if (!strcmp(dst[q], w)) dup = true;
                if (dup) {
                    sema_error_once(s, vn, vn->loc, "'%s' is named twice", w);
                    continue;
                }
                if (cnt == sp->max_count) {
                    sema_error_once(s, vn, vn->loc, "'%s' takes at most %d values", sp->key, sp->max_count);
                    break;
                }
                dst[cnt++] = w;
            }
            *(int *)(base + sp->count_off) = cnt;
            break;
        }
        case S_INTS: {
            /* a vector literal [a, b, c] or a plain list a, b, c */
            PtrVec items = st->list;
            if (st->list.len == 1 && v0->kind == N_VEC) items = v0->list;
            int *dst = (int *)(base + sp->off), cnt = 0;
            if (items.len > sp->max_count) {
                sema_error_once(s, v0, v0->loc, "'%s' takes at most %d values", sp->key, sp->max_count);
                break;
            }
            for (int j = 0; j < items.len; j++)
                if (get_number(s, scope, NODE_AT(items, j), sp, &x)) dst[cnt++] = (int)x;
            *(int *)(base + sp->count_off) = cnt;
            break;
        }
        case S_NODE: *(Node **)(base + sp->off) = st; break;
        }
    }
}
