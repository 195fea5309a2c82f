/* view_data.c — what `physc view` draws, written by `physc run` beside its other outputs
   (view_data.h): the scene (scene.json: the bodies, the segments its constraints draw, the
   state's layout) and the test rollouts (rollouts.bin: truth and model positions). */
#include "view_data.h"
#include "core/alloc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/atomic_file.h"
#include "report.h"

/* A constraint's end: a body's point (its centre, or coefficients along its axes) or a
   point of the world */
static void put_end(FILE *f, const System *sys, const PointRef *p) {
    if (p->kind == PT_WORLD) {
        fputs("{\"world\": [", f);
        for (int i = 0; i < sys->dim; i++) fprintf(f, "%s%.10g", i ? ", " : "", p->c[i]);
        fputs("]}", f);
        return;
    }
    const Body *b = &sys->bodies[p->body];
    fprintf(f, "{\"body\": %d, \"c\": [", p->body);
    for (int i = 0; i < b->n && !p->centre; i++) fprintf(f, "%s%.10g", i ? ", " : "", p->c[i]);
    fputs("]}", f);
}

/* Whether expression e calls fn */
static bool calls(const Node *e, const char *fn) {
    if (!e) return false;
    if (e->kind == N_CALL && e->name && !strcmp(e->name, fn)) return true;
    for (int i = 0; i < e->list.len; i++)
        if (calls(NODE_AT(e->list, i), fn)) return true;
    return calls(e->a, fn) || calls(e->b, fn) || calls(e->c, fn);
}

/* The direction gravity pulls in, where a potential is the standard library's uniform gravity
   (m g x[last]: along minus the last axis); else none */
static void put_gravity(FILE *f, const System *sys) {
    for (int i = 0; i < sys->npotentials; i++)
        if (calls(sys->potentials[i].expr, "uniform_gravity")) {
            fputs("[", f);
            for (int d = 0; d < sys->dim; d++) fprintf(f, "%s%d", d ? ", " : "", d == sys->dim - 1 ? -1 : 0);
            fputs("]", f);
            return;
        }
    fputs("null", f);
}

int view_write_scene(const char *path, const ViewData *v, char *err, size_t errlen) {
    static const char *const kinds[] = {"link", "tether", "joint", "axis"};
    const System *sys = v->sys;
    const PrtSystem *ps = v->ps;
    PrtAtomicFile af;
    if (prt_atomic_open(&af, path, err, errlen) != 0) return -1;
    FILE *f = af.f;
    int rows = prt_state_rows(ps), npairs = report_phase_pairs(ps, 1 << 30, NULL);
    fputs("{\n  \"format\": 2,\n  \"system\": ", f), report_put_json_string(f, sys->name);
    fputs(",\n  \"model\": ", f), report_put_json_string(f, v->model);
    fputs(",\n  \"kind\": ", f), report_put_json_string(f, v->kind);
    fprintf(f, ",\n  \"dim\": %d,\n  \"coords\": %d,\n  \"rows\": %d,\n  \"names\": [", sys->dim, ps->N, rows);
    for (int i = 0; i < rows; i++) fputs(i ? ", " : "", f), report_put_json_string(f, ps->names[i]);
    fputs("],\n  \"phase\": [", f); /* (position row, velocity row): a phase portrait each */
    int (*pairs)[2] = prt_xalloc((size_t)npairs + 1, sizeof *pairs, "the phase pairs");
    report_phase_pairs(ps, npairs, pairs);
    for (int i = 0; i < npairs; i++) fprintf(f, "%s[%d, %d]", i ? ", " : "", pairs[i][0], pairs[i][1]);
    free(pairs);
    fputs("],\n  \"gravity\": ", f), put_gravity(f, sys);
    fputs(",\n  \"bodies\": [", f);
    for (int i = 0; i < sys->nbodies; i++) {
        const Body *b = &sys->bodies[i];
        fprintf(f, "%s\n    {\"name\": ", i ? "," : "");
        report_put_json_string(f, b->name);
        fprintf(f, ", \"state\": \"%s\", \"n\": %d, \"first_coord\": %d, \"mass\": %.10g}",
                b->state == STATE_SO3 ? "so3" : "points", b->n, b->first_coord, b->mass);
    }
    fputs("\n  ],\n  \"segments\": [", f);
    for (int i = 0, k = 0; i < sys->nconstraints; i++) {
        const Constraint *c = &sys->constraints[i];
        if (c->kind == CK_AXIS) continue; /* (a direction, not a segment) */
        fprintf(f, "%s\n    {\"kind\": \"%s\", \"a\": ", k++ ? "," : "", kinds[c->kind]);
        put_end(f, sys, &c->a);
        fputs(", \"b\": ", f);
        put_end(f, sys, &c->b);
        fputc('}', f);
    }
    fprintf(f, "\n  ],\n  \"dt\": %.10g,\n  \"times\": %d,\n  \"trajectories\": %ld,\n"
               "  \"rollouts\": \"rollouts.bin: float32, little-endian, [trajectory][time][the truth's %d rows (coordinates, "
               "then velocities), then the model's]\"\n}\n", v->dt, v->nt, v->n, rows);
    return prt_atomic_commit(&af, err, errlen);
}

int view_write_rollouts(const char *path, const ViewData *v, char *err, size_t errlen) {
    PrtAtomicFile af;
    if (prt_atomic_open(&af, path, err, errlen) != 0) return -1;
    int N = prt_state_rows(v->ps);
    float *row = prt_xalloc((size_t)(2 * N), sizeof(float), "the rollouts");
    for (long b = 0; b < v->n; b++)
        for (int k = 0; k < v->nt; k++) {
            for (int i = 0; i < N; i++) {
                row[i] = (float)v->truth[(long)k * v->truth_stride + (long)i * v->ntruth + b];
                row[N + i] = (float)v->pred[(long)k * v->pred_stride + (long)i * v->n + b];
            }
            fwrite(row, sizeof(float), (size_t)(2 * N), af.f); /* (x86: little-endian) */
        }
    free(row);
    return prt_atomic_commit(&af, err, errlen);
}
