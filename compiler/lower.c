/* lower.c — kernels from the system model: the checker's evaluator runs again over the
   potentials with lowering switched on, so the language has one meaning in one place. */
#include "lower.h"

#include <stdio.h>
#include <string.h>

#include "sema.h"

static int *position_inputs(IrFn *f, const System *sys) {
    int n = sys->npoints * sys->dim;
    int *ids = arena_alloc(sys->sema->arena, sizeof(int) * (size_t)(n + 1));
    for (int p = 0; p < sys->nbodies; p++) {
        const Body *b = &sys->bodies[p];
        for (int q = 0; q < b->npoints; q++)
            for (int k = 0; k < sys->dim; k++) {
                int i = (b->first_point + q) * sys->dim + k;
                char name[300];
                snprintf(name, sizeof name, "%s.%s%d.%c", b->name, q == 0 ? "x" : "axis", q, "xyz"[k]);
                if (q == 0) snprintf(name, sizeof name, "%s.%c", b->name, "xyz"[k]);
                ir_set_input_name(f, i, name);
            }
    }
    for (int i = 0; i < n; i++) ids[i] = ir_input(f, i);
    return ids;
}

static Ctx lowering_ctx(System *sys, IrFn *f) {
    Sema *s = sys->sema;
    s->steps = 0;
    s->over_budget = false;
    Ctx c = {.s = s, .scope = &s->system_scope, .mode = EV_POTENTIAL, .ir = f};
    c.position_inputs = position_inputs(f, sys);
    return c;
}

IrFn *lower_potential(System *sys) {
    IrFn *f = ir_new("V", sys->npoints * sys->dim, 0, 1);
    ir_set_output_name(f, 0, "V");
    Ctx c = lowering_ctx(sys, f);
    int acc = -1;
    for (int i = 0; i < sys->npotentials; i++) {
        Val v = eval(&c, sys->potentials[i].expr);
        if (v.kind != V_NUM || v.ndim != 0) die("potential %s did not lower to a scalar", sys->potentials[i].name);
        int id = v.known ? ir_const(f, v.v[0]) : v.ir[0];
        acc = acc < 0 ? id : ir_bin(f, IR_ADD, acc, id);
    }
    f->outputs[0] = acc < 0 ? ir_const(f, 0) : acc;
    return f;
}

int lower_free_lengths(const System *sys) {
    int k = 0;
    for (int i = 0; i < sys->nconstraints; i++) {
        ConstraintKind ck = sys->constraints[i].kind;
        if ((ck == CK_LINK || ck == CK_TETHER) && !sys->constraints[i].length_given) k++;
    }
    return k;
}

/* World coordinates (IR) of a point or direction reference. */
static void ref_coords(Ctx *c, const PointRef *r, PtKind kind, int *out) {
    const System *sys = c->s->sys;
    if (r->kind == PT_WORLD) {
        for (int k = 0; k < sys->dim; k++) out[k] = ir_const(c->ir, r->c[k]);
        return;
    }
    /* evaluate the same expression the checker saw: a body point via the shared helper */
    Val v = eval_point(c, r->body, r->c, r->centre, kind);
    memcpy(out, v.ir, sizeof(int) * (size_t)sys->dim);
}

static int squared_distance(IrFn *f, const int *a, const int *b, int d) {
    int acc = -1;
    for (int k = 0; k < d; k++) {
        int diff = ir_bin(f, IR_SUB, a[k], b[k]);
        int sq = ir_bin(f, IR_MUL, diff, diff);
        acc = acc < 0 ? sq : ir_bin(f, IR_ADD, acc, sq);
    }
    return acc;
}

IrFn *lower_constraints(System *sys) {
    int d = sys->dim, rows = system_equations(sys) - sys->orthogonality_equations;
    IrFn *f = ir_new("Phi", sys->npoints * d, lower_free_lengths(sys), rows);
    Ctx c = lowering_ctx(sys, f);
    int row = 0, param = 0;
    for (int bi = 0; bi < sys->nbodies; bi++) {
        const Body *b = &sys->bodies[bi];
        if (b->kind != BODY_RIGID || b->state == STATE_SO3) continue;
        for (int i = 0; i <= b->n; i++)
            for (int j = i + 1; j <= b->n; j++) {
                int xi[MAX_DIM], xj[MAX_DIM];
                for (int k = 0; k < d; k++) {
                    xi[k] = c.position_inputs[(b->first_point + i) * d + k];
                    xj[k] = c.position_inputs[(b->first_point + j) * d + k];
                }
                int sq = squared_distance(f, xi, xj, d);
                f->outputs[row] = ir_bin(f, IR_SUB, sq, ir_const(f, i == 0 ? 1 : 2));
                char name[300];
                snprintf(name, sizeof name, "rigid %s points %d-%d", b->name, i, j);
                ir_set_output_name(f, row++, name);
            }
    }
    for (int ci = 0; ci < sys->nconstraints; ci++) {
        const Constraint *ct = &sys->constraints[ci];
        PtKind kind = ct->kind == CK_AXIS ? PTK_DIR : PTK_POINT;
        int a[MAX_DIM], b[MAX_DIM];
        ref_coords(&c, &ct->a, kind, a);
        ref_coords(&c, &ct->b, kind, b);
        char name[300];
        snprintf(name, sizeof name, "%s %d (line %d)", constraint_kind_name(ct->kind), ci + 1, ct->loc.first_line);
        if (ct->kind == CK_LINK || ct->kind == CK_TETHER) {
            int len2 = ct->length_given ? ir_const(f, ct->length * ct->length) : -1;
            if (!ct->length_given) {
                int l = ir_param(f, param++);
                len2 = ir_bin(f, IR_MUL, l, l);
            }
            f->outputs[row] = ir_bin(f, IR_SUB, squared_distance(f, a, b, d), len2);
            ir_set_output_name(f, row++, name);
        } else {
            for (int k = 0; k < d; k++) {
                f->outputs[row] = ir_bin(f, IR_SUB, a[k], b[k]);
                ir_set_output_name(f, row++, name);
            }
        }
    }
    if (row != rows) die("lower_constraints: %d rows, expected %d", row, rows);
    return f;
}
