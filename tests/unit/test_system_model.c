/* test_system_model.c — the System that sema builds: coordinate layout, constraint
   references, the inertia-to-moments conversion, settings and parameter counts. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sema.h"

#include "check.h"

static System *check_text(Arena *a, Diags *d, const char *text, FILE *out) {
    diag_init(d, out);
    char *copy = strdup(text);
    int f = src_add(d, "test.phys", copy, strlen(copy));
    SemaOptions opt = {.stdlib_dir = "stdlib", .require_system = true};
    return sema_check_source(a, d, f, &opt);
}

static void test_layout_and_constraints(void) {
    Arena a = {0};
    Diags d;
    System *s = check_text(&a, &d,
        "const attach = [0, 0, -0.5]\n"
        "system s {\n"
        "  dim 3\n"
        "  body ball : point { mass 2 }\n"
        "  body top : rigid3 { mass 0.1; inertia [0.05, 0.05, 0.02]; point tip = attach }\n"
        "  body bob[i in 1..2] : point { mass i }\n"
        "  joint top.tip to origin\n"
        "  tether ball to [1, 0, 0] length 2\n"
        "  link bob[1] to bob[2] length 0.5\n"
        "  link bob[2] to top.point(3)\n"
        "  axis top.dir([0, 0, 1]) to [0, 0, 1]\n"
        "}\n"
        "data { steps 50; chunk 4; dt 0.01; file \"recorded.csv\" }\n"
        "learned V : potential { hidden [8, 4]; activation silu }\n"
        "model m : chnn { potential V }\n", stdout);
    CHECK(s != NULL, "program rejected (%d errors)", d.nerrors);
    if (!s) goto out;
    CHECK(s->dim == 3 && s->nbodies == 4, "dim %d, %d bodies", s->dim, s->nbodies);
    CHECK(s->npoints == 1 + 4 + 1 + 1, "points %d", s->npoints);
    CHECK(s->bodies[1].first_point == 1 && s->bodies[1].npoints == 4, "top's points start at %d",
          s->bodies[1].first_point);
    CHECK(s->bodies[2].first_point == 5 && s->bodies[3].first_point == 6, "array layout");
    CHECK(!strcmp(s->bodies[3].name, "bob[2]") && s->bodies[3].mass == 2, "bob[2] %s mass %g", s->bodies[3].name,
          s->bodies[3].mass);
    /* lambda_i = (I_j + I_k - I_i) / (2 m) */
    double want[3] = {(0.05 + 0.02 - 0.05) / 0.2, (0.05 + 0.02 - 0.05) / 0.2, (0.05 + 0.05 - 0.02) / 0.2};
    for (int i = 0; i < 3; i++)
        CHECK(fabs(s->bodies[1].moments[i] - want[i]) < 1e-15, "moment %d = %g, want %g", i, s->bodies[1].moments[i],
              want[i]);
    CHECK(s->nconstraints == 5, "%d constraints", s->nconstraints);
    Constraint *j = &s->constraints[0];
    CHECK(j->kind == CK_JOINT && j->a.kind == PT_BODY && j->a.body == 1 && j->a.c[2] == -0.5 && j->b.kind == PT_WORLD,
          "joint refs");
    CHECK(j->equations == 3 && j->independent == 3, "joint rows %d", j->equations);
    Constraint *t = &s->constraints[1];
    CHECK(t->kind == CK_TETHER && t->a.centre && t->b.c[0] == 1 && t->length == 2 && t->length_given, "tether");
    Constraint *l2 = &s->constraints[3];
    CHECK(!l2->length_given && l2->b.body == 1 && l2->b.c[2] == 1 && !l2->b.centre, "link to body point 3");
    Constraint *ax = &s->constraints[4];
    CHECK(ax->kind == CK_AXIS && ax->equations == 2 && ax->independent == 2, "axis rows %d/%d", ax->equations,
          ax->independent);
    CHECK(s->rigidity_equations == 6, "rigidity %d", s->rigidity_equations);
    CHECK(system_coordinates(s) == 21 && system_dof(s) == 21 - (6 + 3 + 1 + 1 + 1 + 2), "dof %d", system_dof(s));
    CHECK(s->data.steps == 50 && s->data.chunk == 4 && s->data.dt == 0.01 && s->data.ntrain == 800 &&
              !strcmp(s->data.file, "recorded.csv"), "data settings");
    CHECK(s->nlearned == 1 && s->learned[0].inputs == 21 && s->learned[0].act == ACT_SILU, "learned V");
    long p = 21 * 8 + 8 + 8 * 4 + 4 + 4 * 1 + 1;
    CHECK(s->learned[0].params == p, "V params %ld, want %ld", s->learned[0].params, p);
    /* the model adds per-body mass and moments (Eq. 9): 1 + n each */
    CHECK(s->nmodels == 1 && s->models[0].params == p + 1 + 4 + 1 + 1, "model params %ld", s->models[0].params);
out:
    arena_free(&a);
    diag_free(&d);
}

static void test_errors_are_reported_not_fatal(void) {
    Arena a = {0};
    Diags d;
    FILE *null = fopen("/dev/null", "w");
    System *s = check_text(&a, &d, "system s {\n  dim 2\n  body b : point { mass -1 }\n  potential p = b.pos + [1, 2, 3]\n}\n", null);
    CHECK(s == NULL && d.nerrors == 2, "want 2 errors, got %d", d.nerrors);
    fclose(null);
    arena_free(&a);
    diag_free(&d);
}

int main(void) {
    test_layout_and_constraints();
    test_errors_are_reported_not_fatal();
    printf("%s: %s\n", __FILE__, failures ? "FAILED" : "ok");
    return failures != 0;
}
