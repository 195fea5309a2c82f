/* lower.c — kernels from the system model: the checker's evaluator runs again over the
   potentials with lowering switched on, so the language has one meaning in one place. */
#include "lower.h"
#include "arena.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ad.h"
#include "eval.h"

/* The body whose coordinates (or momenta) start at or before i: bodies lay theirs out in
   order (sema's finish_layout), so a binary search; a scan made naming a 1000-body system's
   inputs quadratic (11 % of its cached compile). */
static const Body *body_at(const System *sys, int i, bool momenta) {
    int lo = 0, hi = sys->nbodies - 1;
    if (hi < 0) return NULL;
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2, first = momenta ? sys->bodies[mid].first_mom : sys->bodies[mid].first_coord;
        if (first <= i) lo = mid;
        else hi = mid - 1;
    }
    return &sys->bodies[lo];
}

/* Names of the configuration coordinates (bob[1].x, top.axis2.z, planet.R13) and of the
   velocities in the momenta's layout (bob[1].vx; planet.vx and planet.wx for omega). */
static void name_coord(const System *sys, int i, char *out, size_t n) {
    const Body *b = body_at(sys, i, false);
    if (b) {
        int rel = i - b->first_coord;
        if (b->state == STATE_SO3 && rel >= 0 && rel < 12) {
            if (rel < 3) snprintf(out, n, "%s.%c", b->name, "xyz"[rel]);
            else snprintf(out, n, "%s.R%d%d", b->name, (rel - 3) / 3 + 1, (rel - 3) % 3 + 1);
            return;
        }
        if (b->state != STATE_SO3 && rel >= 0 && rel < b->npoints * sys->dim) {
            int q = rel / sys->dim, k = rel % sys->dim;
            if (q == 0) snprintf(out, n, "%s.%c", b->name, "xyz"[k]);
            else snprintf(out, n, "%s.axis%d.%c", b->name, q, "xyz"[k]);
            return;
        }
    }
    snprintf(out, n, "x%d", i);
}

static void name_velocity(const System *sys, int i, char *out, size_t n) {
    const Body *b = body_at(sys, i, true);
    if (b) {
        int rel = i - b->first_mom;
        if (b->state == STATE_SO3 && rel >= 0 && rel < 6) {
            snprintf(out, n, "%s.%c%c", b->name, rel < 3 ? 'v' : 'w', "xyz"[rel % 3]);
            return;
        }
        if (b->state != STATE_SO3 && rel >= 0 && rel < b->npoints * sys->dim) {
            int q = rel / sys->dim, k = rel % sys->dim;
            if (q == 0) snprintf(out, n, "%s.v%c", b->name, "xyz"[k]);
            else snprintf(out, n, "%s.axis%d.v%c", b->name, q, "xyz"[k]);
            return;
        }
    }
    snprintf(out, n, "v%d", i);
}

/* Name i of the state: coordinate i < ncoords, else velocity i - ncoords. Made once per
   system (every kernel names its inputs or outputs so: a 1000-body system's names cost as
   much as lowering one of its kernels). */
static const char *state_name(System *sys, int i) {
    if (!sys->state_names) {
        int n = sys->ncoords + sys->nmomenta;
        const char **names = arena_alloc(sys->sema->arena, sizeof(char *) * (size_t)(n + 1));
        for (int k = 0; k < n; k++) {
            char name[300];
            if (k < sys->ncoords) name_coord(sys, k, name, sizeof name);
            else name_velocity(sys, k - sys->ncoords, name, sizeof name);
            names[k] = arena_strdup(sys->sema->arena, name);
        }
        sys->state_names = names;
    }
    return sys->state_names[i];
}

static int *position_inputs(IrFn *f, System *sys) {
    int n = sys->ncoords;
    int *ids = arena_alloc(sys->sema->arena, sizeof(int) * (size_t)(n + 1));
    for (int i = 0; i < n; i++) {
        ir_set_input_name(f, i, state_name(sys, i));
        ids[i] = ir_input(f, i);
    }
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

IrFn *lower_potential(System *sys) { return lower_potential_terms(sys, NULL, sys->npotentials, "V"); }

IrFn *lower_potential_terms(System *sys, const int *which, int n, const char *name) {
    IrFn *f = ir_new(name, sys->ncoords, 0, 1);
    ir_set_output_name(f, 0, name);
    Ctx c = lowering_ctx(sys, f);
    int acc = -1;
    for (int k = 0; k < n; k++) {
        int i = which ? which[k] : k;
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

void lower_free_length_rows(const System *sys, int *rows) {
    int row = sys->rigidity_equations, k = 0;
    for (int i = 0; i < sys->nconstraints; i++) {
        const Constraint *c = &sys->constraints[i];
        if ((c->kind == CK_LINK || c->kind == CK_TETHER) && !c->length_given) rows[k++] = row;
        row += c->equations;
    }
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

/* The same reference with its direction scaled to unit length (axis constraints compare
   directions only). */
static PointRef unit_direction(const System *sys, const PointRef *r) {
    PointRef u = *r;
    int n = r->kind == PT_WORLD ? sys->dim : sys->bodies[r->body].n;
    double len = 0;
    for (int k = 0; k < n; k++) len += r->c[k] * r->c[k];
    len = sqrt(len);
    for (int k = 0; k < n; k++) u.c[k] /= len;
    return u;
}

/* n - 1 orthonormal vectors spanning the complement of the unit n-vector u: Gram-Schmidt of
   the standard basis vectors least aligned with u. */
static void complement_basis(const double *u, int n, double w[][MAX_DIM]) {
    int order[MAX_DIM];
    for (int i = 0; i < n; i++) order[i] = i;
    for (int i = 0; i < n; i++) /* by |u_i| ascending */
        for (int j = i + 1; j < n; j++)
            if (fabs(u[order[j]]) < fabs(u[order[i]])) {
                int t = order[i];
                order[i] = order[j];
                order[j] = t;
            }
    for (int k = 0; k < n - 1; k++) {
        double v[MAX_DIM] = {0};
        v[order[k]] = 1;
        for (int p = -1; p < k; p++) { /* p = -1: u itself */
            const double *q = p < 0 ? u : w[p];
            double dot = 0;
            for (int i = 0; i < n; i++) dot += v[i] * q[i];
            for (int i = 0; i < n; i++) v[i] -= dot * q[i];
        }
        double len = 0;
        for (int i = 0; i < n; i++) len += v[i] * v[i];
        for (int i = 0; i < n; i++) w[k][i] = v[i] / sqrt(len);
    }
}

/* Axis U to V. R_A u_A = R_B u_B would be d equations of rank d - 1 (both sides have the
   same length), and the dependent row makes G = DPhi M^-1 DPhi^T singular. Instead the d - 1
   equations w_k . a = 0: a is one side's unit direction, w_1..w_{d-1} an orthonormal basis of
   the directions across the other side's (the frame side, axis_frame_side): constant for a
   world direction, R w_k with w_k across u in the body frame for a body, plus the normal of
   the frame for a body of dimension d - 1. They also hold for a = -b: the initial state picks
   the branch, and the checker makes sure it picks a = b (check_constraints_independent). */
static void axis_rows(Ctx *c, const Constraint *ct, int *rows) {
    const System *sys = c->s->sys;
    IrFn *f = c->ir;
    int d = sys->dim, side = axis_frame_side(sys, ct);
    PointRef fr = unit_direction(sys, side ? &ct->b : &ct->a), other = unit_direction(sys, side ? &ct->a : &ct->b);
    int a[MAX_DIM];
    ref_coords(c, &other, PTK_DIR, a);
    int n = fr.kind == PT_WORLD ? d : sys->bodies[fr.body].n;
    double w[MAX_DIM][MAX_DIM];
    complement_basis(fr.c, n, w);
    int across[MAX_DIM][MAX_DIM], e[MAX_DIM][MAX_DIM]; /* world directions across; the body's frame columns */
    if (fr.kind == PT_BODY)
        for (int q = 0; q < n; q++)
            for (int j = 0; j < d; j++)
                e[q][j] = ir_bin(f, IR_SUB, body_coord(c, fr.body, q + 1, j), body_coord(c, fr.body, 0, j));
    for (int k = 0; k < n - 1; k++)
        for (int j = 0; j < d; j++) {
            if (fr.kind == PT_WORLD) {
                across[k][j] = ir_const(f, w[k][j]);
                continue;
            }
            int acc = -1;
            for (int q = 0; q < n; q++) {
                if (w[k][q] == 0) continue;
                int t = ir_bin(f, IR_MUL, ir_const(f, w[k][q]), e[q][j]);
                acc = acc < 0 ? t : ir_bin(f, IR_ADD, acc, t);
            }
            across[k][j] = acc;
        }
    if (n == d - 1) { /* the normal of the body's frame: e_1 turned a quarter (2-D), e_1 x e_2 (3-D) */
        int *nv = across[d - 2];
        if (d == 2) {
            nv[0] = ir_un(f, IR_NEG, e[0][1]);
            nv[1] = e[0][0];
        } else
            for (int j = 0; j < 3; j++) {
                int p = (j + 1) % 3, q = (j + 2) % 3;
                nv[j] = ir_bin(f, IR_SUB, ir_bin(f, IR_MUL, e[0][p], e[1][q]), ir_bin(f, IR_MUL, e[0][q], e[1][p]));
            }
    }
    for (int k = 0; k < d - 1; k++) {
        int acc = -1;
        for (int j = 0; j < d; j++) {
            int t = ir_bin(f, IR_MUL, across[k][j], a[j]);
            acc = acc < 0 ? t : ir_bin(f, IR_ADD, acc, t);
        }
        rows[k] = acc;
    }
}

IrFn *lower_axis_alignment(System *sys) {
    int naxis = 0;
    for (int i = 0; i < sys->nconstraints; i++) naxis += sys->constraints[i].kind == CK_AXIS;
    IrFn *f = ir_new("AxisAlignment", sys->ncoords, 0, naxis);
    Ctx c = lowering_ctx(sys, f);
    int out = 0;
    for (int i = 0; i < sys->nconstraints; i++) {
        const Constraint *ct = &sys->constraints[i];
        if (ct->kind != CK_AXIS) continue;
        PointRef ua = unit_direction(sys, &ct->a), ub = unit_direction(sys, &ct->b);
        int a[MAX_DIM], b[MAX_DIM];
        ref_coords(&c, &ua, PTK_DIR, a);
        ref_coords(&c, &ub, PTK_DIR, b);
        int acc = -1;
        for (int j = 0; j < sys->dim; j++) {
            int t = ir_bin(f, IR_MUL, a[j], b[j]);
            acc = acc < 0 ? t : ir_bin(f, IR_ADD, acc, t);
        }
        f->outputs[out++] = acc;
    }
    return f;
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
    IrFn *f = ir_new("Phi", sys->ncoords, lower_free_lengths(sys), rows);
    Ctx c = lowering_ctx(sys, f);
    int row = 0, param = 0;
    for (int bi = 0; bi < sys->nbodies; bi++) {
        const Body *b = &sys->bodies[bi];
        if (b->kind != BODY_RIGID || b->state == STATE_SO3) continue;
        for (int i = 0; i <= b->n; i++)
            for (int j = i + 1; j <= b->n; j++) {
                int xi[MAX_DIM], xj[MAX_DIM];
                for (int k = 0; k < d; k++) {
                    xi[k] = c.position_inputs[b->first_coord + i * d + k];
                    xj[k] = c.position_inputs[b->first_coord + j * d + k];
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
        int a[MAX_DIM], b[MAX_DIM];
        if (ct->kind != CK_AXIS) {
            ref_coords(&c, &ct->a, PTK_POINT, a);
            ref_coords(&c, &ct->b, PTK_POINT, b);
        }
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
        } else if (ct->kind == CK_AXIS) {
            axis_rows(&c, ct, f->outputs + row);
            for (int k = 0; k < d - 1; k++) ir_set_output_name(f, row++, name);
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

/* init: places the bodies from q (coordinate map) and their velocities from q' (its JVP) */
static void apply_coordinate_map(Ctx *c) {
    Sema *s = c->s;
    System *sys = s->sys;
    LowerState *ls = c->ls;
    ls->mapped = true;
    if (!sys->coords.present) return;
    int nq = sys->coords.count, d = sys->dim, nb = sys->nbodies;
    int *fresh = arena_alloc(s->arena, sizeof(int) * (size_t)(nq + 1)), *dir = arena_alloc(s->arena, sizeof(int) * (size_t)(nq + 1));
    int zero = ir_const(c->ir, 0);
    for (int i = 0; i < nq; i++) { /* distinct values to differentiate along, even if two coordinates are equal */
        fresh[i] = ir_bin(c->ir, IR_ADD, ls->q[i] >= 0 ? ls->q[i] : zero, zero);
        ls->q[i] = fresh[i];
        dir[i] = ls->qdot[i] >= 0 ? ls->qdot[i] : zero;
    }
    int lo = c->ir->ninsts;
    sema_run_block(s, c, &sys->coords.decl->list2, EV_COORDS);
    int hi = c->ir->ninsts;
    /* velocities of the centres and rates of the rotations: tangents along q' */
    int nof = nb * (d + d * d);
    int *of = arena_alloc(s->arena, sizeof(int) * (size_t)nof), *tan = arena_alloc(s->arena, sizeof(int) * (size_t)nof);
    for (int b = 0; b < nb; b++) {
        memcpy(of + b * (d + d * d), ls->pos + b * d, sizeof(int) * (size_t)d);
        memcpy(of + b * (d + d * d) + d, ls->rot + b * d * d, sizeof(int) * (size_t)(d * d));
    }
    ad_tangent_in(c->ir, lo, hi, fresh, dir, nq, of, nof, tan);
    for (int b = 0; b < nb; b++) {
        memcpy(ls->vel + b * d, tan + b * (d + d * d), sizeof(int) * (size_t)d);
        memcpy(ls->rotdot + b * d * d, tan + b * (d + d * d) + d, sizeof(int) * (size_t)(d * d));
    }
}

static void rotation_rate(IrFn *f, const int *R, const int *w, int *Rdot);

static void add_seed(Sema *s, LowerState *ls, int value, int rate) {
    if (ls->nseeds == ls->cap_seeds) {
        ls->cap_seeds = ls->cap_seeds ? 2 * ls->cap_seeds : 64;
        int *v = arena_alloc(s->arena, sizeof(int) * (size_t)ls->cap_seeds), *r = arena_alloc(s->arena, sizeof(int) * (size_t)ls->cap_seeds);
        if (ls->nseeds) memcpy(v, ls->seed, sizeof(int) * (size_t)ls->nseeds), memcpy(r, ls->seed_rate, sizeof(int) * (size_t)ls->nseeds);
        ls->seed = v, ls->seed_rate = r;
    }
    ls->seed[ls->nseeds] = value;
    ls->seed_rate[ls->nseeds++] = rate;
}

/* Makes state slot *v a seed with rate `rate`. One IR value may stand for slots whose rates
   differ (a coordinate placed as a position whose vel init then sets; a let of it): that
   slot is replaced by a distinct copy. rate_of[value]: the rate it is a seed with (-1: none). */
static void seed_slot(Ctx *c, int *v, int rate, int *rate_of, int zero) {
    if (rate_of[*v] == rate) return;
    if (rate_of[*v] >= 0) *v = ir_bin(c->ir, IR_ADD, *v, zero); /* a new value: no other slot has it */
    else rate_of[*v] = rate;
    add_seed(c->s, c->ls, *v, rate);
}

/* init, before a statement whose rate is wanted: seeds q (rate q'), and once the map has
   placed the bodies, pos (vel) and rot (its rate; R hat(omega) when init set omega), after
   the earlier lets. */
static int init_rates_begin(Ctx *c) {
    System *sys = c->s->sys;
    LowerState *ls = c->ls;
    IrFn *f = c->ir;
    if (!sys->coords.present) return -1;
    int d = sys->dim, zero = ir_const(f, 0), *rate_of = xalloc((size_t)f->ninsts + 1, sizeof(int));
    for (int i = 0; i < f->ninsts; i++) rate_of[i] = -1;
    ls->nseeds = ls->nlet_seeds;
    for (int k = 0; k < ls->nseeds; k++) rate_of[ls->seed[k]] = ls->seed_rate[k];
    for (int i = 0; i < sys->coords.count; i++)
        if (ls->q[i] >= 0) seed_slot(c, &ls->q[i], ls->qdot[i] >= 0 ? ls->qdot[i] : zero, rate_of, zero);
    for (int b = 0; ls->mapped && b < sys->nbodies; b++) {
        const Body *body = &sys->bodies[b];
        for (int k = 0; k < d; k++)
            if (ls->pos[b * d + k] >= 0) seed_slot(c, &ls->pos[b * d + k], ls->vel[b * d + k], rate_of, zero);
        if (body->kind == BODY_POINT) continue;
        int *R = ls->rot + b * d * d, *Rdot = ls->rotdot + b * d * d, Rw[9];
        if (body->state == STATE_SO3 && ls->omega[b * 3] >= 0) {
            rotation_rate(f, R, ls->omega + b * 3, Rw);
            Rdot = Rw;
        }
        for (int k = 0; k < d * d; k++) seed_slot(c, &R[k], Rdot[k], rate_of, zero);
    }
    free(rate_of);
    return f->ninsts;
}

/* init, after the statement begun at lo: the tangents of of[0..n); a let's are kept as seeds
   for the statements after it. */
static void init_rates_end(Ctx *c, int lo, const int *of, int n, int *tan, bool remember) {
    LowerState *ls = c->ls;
    for (int i = 0; i < n; i++)
        if (of[i] < 0) die("init: a value without IR at component %d", i);
    ad_tangent_in(c->ir, lo, c->ir->ninsts, ls->seed, ls->seed_rate, ls->nseeds, of, n, tan);
    if (!remember) return;
    ls->nseeds = ls->nlet_seeds;
    for (int i = 0; i < n; i++)
        if (c->ir->insts[of[i]].op != IR_CONST) add_seed(c->s, ls, of[i], tan[i]);
    ls->nlet_seeds = ls->nseeds;
}

/* The state being built by the coordinate map and init: every slot unset (-1) but the
   bodies' orientations (unrotated) and velocities (at rest). */
static LowerState *new_lower_state(System *sys, IrFn *f) {
    Sema *s = sys->sema;
    int d = sys->dim, nb = sys->nbodies, nq = sys->coords.count;
    LowerState *ls = arena_alloc(s->arena, sizeof *ls);
    ls->q = arena_alloc(s->arena, sizeof(int) * (size_t)(nq + 1));
    ls->qdot = arena_alloc(s->arena, sizeof(int) * (size_t)(nq + 1));
    ls->pos = arena_alloc(s->arena, sizeof(int) * (size_t)(nb * d + 1));
    ls->vel = arena_alloc(s->arena, sizeof(int) * (size_t)(nb * d + 1));
    ls->rot = arena_alloc(s->arena, sizeof(int) * (size_t)(nb * d * d + 1));
    ls->rotdot = arena_alloc(s->arena, sizeof(int) * (size_t)(nb * d * d + 1));
    ls->omega = arena_alloc(s->arena, sizeof(int) * (size_t)(nb * 3 + 1));
    for (int i = 0; i < nb * 3; i++) ls->omega[i] = -1;
    ls->apply_map = apply_coordinate_map;
    ls->rates_begin = init_rates_begin;
    ls->rates_end = init_rates_end;
    int zero = ir_const(f, 0), one = ir_const(f, 1);
    for (int i = 0; i < nq; i++) ls->q[i] = ls->qdot[i] = -1;
    for (int i = 0; i < nb * d; i++) ls->pos[i] = -1, ls->vel[i] = zero;
    for (int b = 0; b < nb; b++) /* bodies start unrotated and at rest */
        for (int i = 0; i < d * d; i++) ls->rot[b * d * d + i] = i / d == i % d ? one : zero, ls->rotdot[b * d * d + i] = zero;
    return ls;
}

/* The state in Init's output layout into out[0..ncoords + nmomenta): the configuration
   (points; or q, R), then velocities in the momenta's layout (one per coordinate; or v,
   omega in the body frame). */
static void assemble_state(Ctx *c, int *out) {
    System *sys = c->s->sys;
    LowerState *ls = c->ls;
    IrFn *f = c->ir;
    int d = sys->dim, *vout = out + sys->ncoords;
    for (int b = 0; b < sys->nbodies; b++) {
        const Body *body = &sys->bodies[b];
        for (int k = 0; k < d; k++)
            if (ls->pos[b * d + k] < 0) die("init leaves %s unplaced", body->name);
        if (body->state == STATE_SO3) {
            int *om = body_omega(c, b);
            for (int k = 0; k < 3; k++) {
                out[body->first_coord + k] = ls->pos[b * 3 + k];
                vout[body->first_mom + k] = ls->vel[b * 3 + k];
                vout[body->first_mom + 3 + k] = om[k];
            }
            for (int k = 0; k < 9; k++) out[body->first_coord + 3 + k] = ls->rot[b * 9 + k];
            continue;
        }
        for (int p = 0; p < body->npoints; p++)
            for (int k = 0; k < d; k++) {
                int o = p * d + k;
                int x = ls->pos[b * d + k], v = ls->vel[b * d + k];
                if (p > 0) {
                    x = ir_bin(f, IR_ADD, x, ls->rot[(b * d + k) * d + p - 1]);
                    v = ir_bin(f, IR_ADD, v, ls->rotdot[(b * d + k) * d + p - 1]);
                }
                out[body->first_coord + o] = x;
                vout[body->first_mom + o] = v;
            }
    }
}

static void name_state_outputs(System *sys, IrFn *f) {
    for (int i = 0; i < sys->ncoords + sys->nmomenta; i++) ir_set_output_name(f, i, state_name(sys, i));
}

/* Force(X, P) -> the forces of the system's force blocks on P (NP outputs): each point
   mass's on its momentum, each `state so3` body's on p, then its torque on Pi. The blocks
   read positions, rotations and velocities (v = p / m, omega = Pi_i / J_i). */
IrFn *lower_force(System *sys) {
    Sema *s = sys->sema;
    int N = sys->ncoords, NP = sys->nmomenta, d = sys->dim, nb = sys->nbodies;
    IrFn *f = ir_new("Force", N + NP, 0, NP);
    LowerState *ls = new_lower_state(sys, f);
    ls->mapped = true;
    ls->force = arena_alloc(s->arena, sizeof(int) * (size_t)(nb * d + 1));
    ls->torque = arena_alloc(s->arena, sizeof(int) * (size_t)(nb * 3 + 1));
    int zero = ir_const(f, 0);
    for (int i = 0; i < nb * d; i++) ls->force[i] = zero;
    for (int i = 0; i < nb * 3; i++) ls->torque[i] = zero;
    for (int b = 0; b < nb; b++) {
        const Body *body = &sys->bodies[b];
        int fc = body->first_coord, fm = body->first_mom;
        for (int k = 0; k < d; k++) {
            ls->pos[b * d + k] = ir_input(f, fc + k);
            ls->vel[b * d + k] = ir_bin(f, IR_DIV, ir_input(f, N + fm + k), ir_const(f, body->mass));
        }
        if (body->state != STATE_SO3) continue;
        for (int i = 0; i < 9; i++) ls->rot[b * 9 + i] = ir_input(f, fc + 3 + i);
        for (int k = 0; k < 3; k++)
            ls->omega[b * 3 + k] = ir_bin(f, IR_DIV, ir_input(f, N + fm + 3 + k), ir_const(f, body_inertia(body, k)));
    }
    Ctx c = {.s = s, .scope = &s->system_scope, .mode = EV_FORCE, .ir = f, .ls = ls};
    for (int i = 0; i < sys->nforces; i++) sema_run_block(s, &c, &sys->forces[i]->list2, EV_FORCE);
    for (int b = 0; b < nb; b++) {
        const Body *body = &sys->bodies[b];
        for (int k = 0; k < d; k++) f->outputs[body->first_mom + k] = ls->force[b * d + k];
        if (body->state == STATE_SO3)
            for (int k = 0; k < 3; k++) f->outputs[body->first_mom + 3 + k] = ls->torque[b * 3 + k];
    }
    return f;
}

IrFn *lower_init(System *sys, int **kinds, int *ndraws) {
    Sema *s = sys->sema;
    IrFn *f = ir_new("Init", 0, 0, sys->ncoords + sys->nmomenta);
    s->steps = 0;
    s->over_budget = false;
    LowerState *ls = new_lower_state(sys, f);
    Ctx c = {.s = s, .scope = &s->system_scope, .mode = EV_INIT, .ir = f, .ls = ls};
    if (sys->init) sema_run_block(s, &c, &sys->init->list2, EV_INIT);
    if (!ls->mapped) apply_coordinate_map(&c);
    assemble_state(&c, f->outputs);
    name_state_outputs(sys, f);
    ir_set_ninputs(f, ls->ndraws);
    *kinds = xalloc((size_t)(ls->ndraws + 1), sizeof(int));
    for (int i = 0; i < ls->ndraws; i++) {
        (*kinds)[i] = ls->draws[i];
        ir_set_input_name(f, i, ls->draws[i] == DRAW_NORMAL ? "normal" : "uniform");
    }
    *ndraws = ls->ndraws;
    return f;
}

/* ---- models in generalized coordinates (issue 16): the map, its inverse, and what
   physics pulls back through it ---- */

/* The state (X, Xdot) in Init's layout from the coordinate map at q (IR values of f), its
   JVP along qdot giving the velocities: init's assembly without the init block. */
void lower_map_state(System *sys, IrFn *f, const int *q, const int *qdot, int *out) {
    Sema *s = sys->sema;
    LowerState *ls = new_lower_state(sys, f);
    memcpy(ls->q, q, sizeof(int) * (size_t)sys->coords.count);
    memcpy(ls->qdot, qdot, sizeof(int) * (size_t)sys->coords.count);
    Ctx c = {.s = s, .scope = &s->system_scope, .mode = EV_INIT, .ir = f, .ls = ls};
    apply_coordinate_map(&c);
    assemble_state(&c, out);
}

/* Inputs q[0..nq) then qdot[0..nq), named after the coordinates; their values into q, qdot. */
static void generalized_inputs(const System *sys, IrFn *f, int first, bool rates, int *q, int *qdot) {
    int nq = sys->coords.count;
    for (int i = 0; i < nq; i++) {
        ir_set_input_name(f, first + i, sys->coords.names[i]);
        q[i] = ir_input(f, first + i);
    }
    for (int i = 0; rates && i < nq; i++) {
        char name[300];
        snprintf(name, sizeof name, "d/dt %s", sys->coords.names[i]);
        ir_set_input_name(f, first + nq + i, name);
        qdot[i] = ir_input(f, first + nq + i);
    }
}

IrFn *lower_coord_map(System *sys) {
    int nq = sys->coords.count;
    IrFn *f = ir_new("CoordMap", 2 * nq, 0, sys->ncoords + sys->nmomenta);
    sys->sema->steps = 0;
    sys->sema->over_budget = false;
    int *q = xalloc((size_t)(2 * nq + 1), sizeof(int));
    generalized_inputs(sys, f, 0, true, q, q + nq);
    lower_map_state(sys, f, q, q + nq, f->outputs);
    name_state_outputs(sys, f);
    free(q);
    return f;
}

/* d/dt of an SO(3) body's R (row-major, 9 values from R) at body angular velocity w:
   R hat(w), hat(w) e_j = w x e_j. */
static void rotation_rate(IrFn *f, const int *R, const int *w, int *Rdot) {
    int zero = ir_const(f, 0), hat[9] = {zero, ir_un(f, IR_NEG, w[2]), w[1], w[2], zero, ir_un(f, IR_NEG, w[0]),
                                          ir_un(f, IR_NEG, w[1]), w[0], zero};
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            int acc = ir_bin(f, IR_MUL, R[i * 3], hat[j]);
            for (int k = 1; k < 3; k++) acc = ir_bin(f, IR_ADD, acc, ir_bin(f, IR_MUL, R[i * 3 + k], hat[k * 3 + j]));
            Rdot[i * 3 + j] = acc;
        }
}

IrFn *lower_coord_inverse(System *sys) {
    Sema *s = sys->sema;
    int nq = sys->coords.count, N = sys->ncoords, NP = sys->nmomenta, d = sys->dim;
    IrFn *f = ir_new("CoordInverse", N + NP, 0, 2 * nq);
    Ctx c = lowering_ctx(sys, f);
    int *xdot = xalloc((size_t)(NP + 1), sizeof(int)), *dir = xalloc((size_t)(N + 1), sizeof(int));
    for (int i = 0; i < NP; i++) {
        ir_set_input_name(f, N + i, state_name(sys, N + i));
        xdot[i] = ir_input(f, N + i);
    }
    /* the inverse reads pos and rot from the position inputs, vel (and omega) from Xdot */
    LowerState *ls = new_lower_state(sys, f);
    for (int b = 0; b < sys->nbodies; b++) {
        const Body *body = &sys->bodies[b];
        for (int k = 0; k < d; k++) ls->vel[b * d + k] = xdot[body->first_mom + k];
        if (body->state == STATE_SO3)
            for (int k = 0; k < 3; k++) ls->omega[b * 3 + k] = xdot[body->first_mom + 3 + k];
    }
    /* the direction of X along which q's rates are its JVP: Xdot, with R' = R hat(omega) */
    for (int b = 0; b < sys->nbodies; b++) {
        const Body *body = &sys->bodies[b];
        if (body->state != STATE_SO3) {
            for (int k = 0; k < body->npoints * d; k++) dir[body->first_coord + k] = xdot[body->first_mom + k];
            continue;
        }
        for (int k = 0; k < 3; k++) dir[body->first_coord + k] = xdot[body->first_mom + k];
        rotation_rate(f, c.position_inputs + body->first_coord + 3, xdot + body->first_mom + 3, dir + body->first_coord + 3);
    }
    c.ls = ls;
    int lo = f->ninsts;
    sema_run_block(s, &c, &sys->coords.inverse->list2, EV_INVERSE);
    int hi = f->ninsts;
    for (int i = 0; i < nq; i++) {
        if (ls->q[i] < 0) die("the inverse map leaves %s unset", sys->coords.names[i]);
        f->outputs[i] = ls->q[i];
    }
    ad_tangent_in(f, lo, hi, c.position_inputs, dir, N, ls->q, nq, f->outputs + nq);
    for (int i = 0; i < nq; i++) {
        char name[300];
        snprintf(name, sizeof name, "d/dt %s", sys->coords.names[i]);
        ir_set_output_name(f, i, sys->coords.names[i]);
        ir_set_output_name(f, nq + i, name);
    }
    free(xdot), free(dir);
    return f;
}

/* x . y over n values */
static int dot_ir(IrFn *f, const int *x, const int *y, int n) {
    int acc = ir_bin(f, IR_MUL, x[0], y[0]);
    for (int i = 1; i < n; i++) acc = ir_bin(f, IR_ADD, acc, ir_bin(f, IR_MUL, x[i], y[i]));
    return acc;
}

static void mass_params(IrFn *f, int n, int *mp) {
    for (int i = 0; i < n; i++) mp[i] = ir_param(f, i);
}

IrFn *lower_mass_q(System *sys, const IrFn *massv) {
    int nq = sys->coords.count, N = sys->ncoords, NP = sys->nmomenta;
    IrFn *f = ir_new("MassQ", nq, massv->nparams, nq * nq);
    sys->sema->steps = 0;
    sys->sema->over_budget = false;
    int *q = xalloc((size_t)(nq + 1), sizeof(int)), *e = xalloc((size_t)(nq + 1), sizeof(int));
    int *mp = xalloc((size_t)(massv->nparams + 1), sizeof(int));
    int *state = xalloc((size_t)(nq * (N + NP) + 1), sizeof(int)), *mv = xalloc((size_t)(nq * NP + 1), sizeof(int));
    generalized_inputs(sys, f, 0, false, q, NULL);
    mass_params(f, massv->nparams, mp);
    /* column i of J = dX/dq: the map's velocities along e_i (the simplifier merges the
       repeated primal); then M_cart J e_i */
    for (int i = 0; i < nq; i++) {
        for (int j = 0; j < nq; j++) e[j] = ir_const(f, i == j);
        lower_map_state(sys, f, q, e, state + i * (N + NP));
        ad_inline(f, massv, state + i * (N + NP) + N, mp, mv + i * NP);
    }
    for (int i = 0; i < nq; i++)
        for (int j = i; j < nq; j++) {
            int m = dot_ir(f, state + i * (N + NP) + N, mv + j * NP, NP);
            f->outputs[i * nq + j] = f->outputs[j * nq + i] = m;
        }
    free(q), free(e), free(mp), free(state), free(mv);
    return f;
}

/* Names output i of a gradient over the generalized coordinates prefix + the coordinate's name. */
static void name_gradient_outputs(const System *sys, IrFn *f, const char *prefix) {
    for (int i = 0; i < sys->coords.count; i++) {
        char name[300];
        snprintf(name, sizeof name, "%s%s", prefix, sys->coords.names[i]);
        ir_set_output_name(f, i, name);
    }
}

IrFn *lower_kinetic_q(System *sys, const IrFn *massv) {
    int nq = sys->coords.count, N = sys->ncoords, NP = sys->nmomenta;
    IrFn *f = ir_new("KineticQ", 2 * nq, massv->nparams, nq);
    sys->sema->steps = 0;
    sys->sema->over_budget = false;
    int *q = xalloc((size_t)(2 * nq + 1), sizeof(int)), *mp = xalloc((size_t)(massv->nparams + 1), sizeof(int));
    int *state = xalloc((size_t)(N + NP + 1), sizeof(int)), *mv = xalloc((size_t)(NP + 1), sizeof(int));
    generalized_inputs(sys, f, 0, true, q, q + nq);
    mass_params(f, massv->nparams, mp);
    int lo = f->ninsts;
    lower_map_state(sys, f, q, q + nq, state); /* Xdot = J v */
    ad_inline(f, massv, state + N, mp, mv);
    int T = ir_bin(f, IR_MUL, ir_const(f, 0.5), dot_ir(f, state + N, mv, NP));
    ad_gradient_in(f, lo, f->ninsts, T, q, nq, f->outputs);
    name_gradient_outputs(sys, f, "dT/d");
    free(q), free(mp), free(state), free(mv);
    return f;
}

IrFn *lower_grad_vq(System *sys, const IrFn *V) {
    int nq = sys->coords.count, N = sys->ncoords, NP = sys->nmomenta;
    IrFn *f = ir_new("GradVq", nq, V->nparams, nq);
    sys->sema->steps = 0;
    sys->sema->over_budget = false;
    int *q = xalloc((size_t)(nq + 1), sizeof(int)), *rest = xalloc((size_t)(nq + 1), sizeof(int));
    int *state = xalloc((size_t)(N + NP + 1), sizeof(int)), *p = xalloc((size_t)(V->nparams + 1), sizeof(int)), v;
    generalized_inputs(sys, f, 0, false, q, NULL);
    mass_params(f, V->nparams, p);
    for (int i = 0; i < nq; i++) rest[i] = ir_const(f, 0);
    int lo = f->ninsts;
    lower_map_state(sys, f, q, rest, state);
    ad_inline(f, V, state, p, &v);
    ad_gradient_in(f, lo, f->ninsts, v, q, nq, f->outputs);
    name_gradient_outputs(sys, f, "dV/d");
    free(q), free(rest), free(state), free(p);
    return f;
}

/* The coordinate whose value x is when the map can read it 2 pi periodically through sin
   and cos: the coordinate itself, or such a value plus or minus a constant, negated, or
   times a whole number (-1: none). like[] holds the earlier values'. */
static int periodic_of(const IrFn *f, const IrInst *x, const int *like) {
    if (x->op == IR_INPUT) return x->imm < f->ninputs / 2 ? x->imm : -1; /* q, not qdot */
    if (x->op == IR_NEG) return like[x->a];
    if (x->op != IR_ADD && x->op != IR_SUB && x->op != IR_MUL) return -1;
    bool ca = f->insts[x->a].op == IR_CONST, cb = f->insts[x->b].op == IR_CONST;
    int of = ca ? like[x->b] : cb ? like[x->a] : -1;
    if (of < 0 || x->op != IR_MUL) return of;
    double k = f->insts[ca ? x->a : x->b].num;
    return k == floor(k) ? of : -1;
}

void lower_angles(System *sys) {
    int nq = sys->coords.count;
    GenCoords *gc = &sys->coords;
    gc->angular = arena_alloc(sys->sema->arena, (size_t)nq + 1);
    gc->nangles = 0;
    IrFn *f = lower_coord_map(sys); /* unsimplified: what the program wrote */
    int n = f->ninsts, *like = xalloc((size_t)n + 1, sizeof(int));
    bool *live = xcalloc((size_t)n + 1, sizeof(bool)), *other = xcalloc((size_t)nq + 1, sizeof(bool));
    for (int o = 0; o < f->noutputs; o++) live[f->outputs[o]] = true;
    for (int v = n - 1; v >= 0; v--) {
        const IrInst *x = &f->insts[v];
        if (!live[v]) continue;
        if (ir_op_nargs[x->op] > 0) live[x->a] = true;
        if (ir_op_nargs[x->op] > 1) live[x->b] = true;
    }
    /* q_i is an angle when it is read (through sin or cos) and read no other way */
    for (int v = 0; v < n; v++) {
        const IrInst *x = &f->insts[v];
        like[v] = periodic_of(f, x, like);
        if (!live[v] || like[v] >= 0) continue;
        for (int k = 0; k < ir_op_nargs[x->op]; k++) {
            int of = like[k ? x->b : x->a];
            if (of < 0) continue;
            if (x->op == IR_SIN || x->op == IR_COS) gc->angular[of] = 1;
            else other[of] = true;
        }
    }
    for (int o = 0; o < f->noutputs; o++)
        if (like[f->outputs[o]] >= 0) other[like[f->outputs[o]]] = true; /* a position itself */
    for (int i = 0; i < nq; i++) {
        if (other[i]) gc->angular[i] = 0;
        gc->nangles += gc->angular[i];
    }
    free(like), free(live), free(other);
    ir_free(f);
}
