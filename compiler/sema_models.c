/* sema_models.c — learned terms (`learned NAME : role { ... }`: a network's input, width
   and parameters) and models (`model NAME : kind { ... }`: which terms a model learns with,
   and what its family needs of the system). */
#include "sema_internal.h"

typedef struct LearnedSettings {
    int hidden[16], nhidden;
    const char *activation;
    const char *biases;
    Node *input;
    double scale, length_scale, time_scale;
} LearnedSettings;

static const SetSpec learned_specs[] = {
    {"hidden", S_INTS, offsetof(LearnedSettings, hidden), 1, 65536, NULL, offsetof(LearnedSettings, nhidden), 16},
    {"activation", S_WORD, offsetof(LearnedSettings, activation), 0, 0, "tanh|softplus|silu|relu", 0, 0},
    {"biases", S_WORD, offsetof(LearnedSettings, biases), 0, 0, "uniform|zero", 0, 0},
    {"scale", S_NUM, offsetof(LearnedSettings, scale), SET_POSITIVE, 1e300, NULL, 0, 0},
    {"length_scale", S_NUM, offsetof(LearnedSettings, length_scale), SET_POSITIVE, 1e300, NULL, 0, 0},
    {"time_scale", S_NUM, offsetof(LearnedSettings, time_scale), SET_POSITIVE, 1e300, NULL, 0, 0},
    {"input", S_NODE, offsetof(LearnedSettings, input), 0, 0, NULL, 0, 0},
};

static int state_width(System *sys) {
    int w = sys->npoints * sys->dim;
    for (int i = 0; i < sys->nbodies; i++)
        if (sys->bodies[i].state == STATE_SO3) w += 3 + 9;
    return w;
}

/* The momenta (or velocities): one per coordinate, but 3 + 3 (p, body Pi) per `state so3` body. */
static int momentum_width(System *sys) {
    int w = sys->npoints * sys->dim;
    for (int i = 0; i < sys->nbodies; i++)
        if (sys->bodies[i].state == STATE_SO3) w += 3 + 3;
    return w;
}

/* setting `input e, ...` of a learned term: positions, velocities, momenta, state, centres,
   own_centres, body_frame, own_frame, coords, rates, or expressions; its width */
static int input_width(Sema *s, Scope *scope, Node *setting, Learned *l) {
    System *sys = s->sys;
    if (!setting) return state_width(sys);
    int width = 0;
    for (int i = 0; i < setting->list.len; i++) {
        Node *e = NODE_AT(setting->list, i);
        if (e->kind == N_IDENT && !scope_lookup(scope, e->name)) {
            const char *w = e->name;
            if (!strcmp(w, "positions") || !strcmp(w, "velocities") || !strcmp(w, "momenta")) {
                width += strcmp(w, "positions") ? momentum_width(sys) : state_width(sys);
                continue;
            }
            if (!strcmp(w, "state")) {
                width += state_width(sys) + momentum_width(sys);
                continue;
            }
            if (!strcmp(w, "centres")) { /* the positions without the rotation entries (liet2) */
                width += sys->npoints * sys->dim;
                for (int b = 0; b < sys->nbodies; b++) width += sys->bodies[b].state == STATE_SO3 ? 3 : 0;
                continue;
            }
            if (!strcmp(w, "own_centres")) { /* a term per body: where the others lie from it, and which body */
                int bodies = sys->npoints;
                for (int b = 0; b < sys->nbodies; b++) bodies += sys->bodies[b].state == STATE_SO3;
                if (sys->dim != 3 || bodies < 2) {
                    ERR_AT(e, e->loc, "input 'own_centres' reads where bodies lie relative to each other: it needs a 3-D "
                           "system of two bodies or more");
                    return -1;
                }
                width += 3 * (bodies - 1) + bodies;
                l->body_gains = bodies;
                continue;
            }
            bool own = !strcmp(w, "own_frame");
            if (own || !strcmp(w, "body_frame")) { /* every body's centre in every other's frame: 3 per ordered pair */
                int rigid = 0;
                for (int b = 0; b < sys->nbodies; b++) rigid += sys->bodies[b].state == STATE_SO3;
                if (sys->dim != 3 || rigid == 0 || sys->npoints + rigid < 2) {
                    ERR_AT(e, e->loc, "input '%s' reads where bodies lie in the frames of rigid ones: it needs a "
                           "3-D system with a `state so3` body and another body", w);
                    return -1;
                }
                /* own_frame: one rigid body's view (3 per other body) and which body it is (one-hot) */
                width += own ? 3 * (sys->npoints + rigid - 1) + rigid : 3 * rigid * (sys->npoints + rigid - 1);
                if (own) l->body_gains = rigid;
                continue;
            }
            if (!strcmp(w, "coords") || !strcmp(w, "rates")) {
                if (!sys->coords.present) {
                    ERR_AT(e, e->loc, "input '%s' needs generalized coordinates: the system has no coordinates block", w);
                    return -1;
                }
                /* coords: each angle as (cos q, sin q) (CHNN App. D.2); rates as they are */
                width += sys->coords.count + (!strcmp(w, "coords") ? sys->coords.nangles : 0);
                continue;
            }
        }
        Ctx c = {.s = s, .scope = scope, .mode = EV_INPUT};
        Val v = eval(&c, e);
        if (v.kind == V_ERR) return -1;
        if (v.kind != V_NUM || v.ndim == 2) {
            ERR_AT(e, e->loc, "a learned term's input is positions, velocities, state, coords, or vector expressions, not %s",
                   shape_name(s, v));
            return -1;
        }
        width += v.ndim == 0 ? 1 : v.rows;
    }
    (void)l;
    return width;
}

/* Whether an `input` setting lists the input keyword `word`. */
static bool reads_input(const Node *setting, const char *word) {
    for (int i = 0; setting && i < setting->list.len; i++) {
        const Node *e = NODE_AT(setting->list, i);
        if (e->kind == N_IDENT && !strcmp(e->name, word)) return true;
    }
    return false;
}

/* Whether an `input` setting is exactly the keywords words[0..n), in that order. */
static bool input_is(const Node *setting, const char *const *words, int n) {
    if (!setting || setting->list.len != n) return false;
    for (int i = 0; i < n; i++) {
        const Node *e = NODE_AT(setting->list, i);
        if (e->kind != N_IDENT || strcmp(e->name, words[i])) return false;
    }
    return true;
}

/* The parameters of a learned term's network (and its bodies' gains) */
static long learned_params(const Learned *l) {
    long params = 0;
    int in = l->inputs;
    for (int i = 0; i < l->nhidden; i++) {
        params += (long)in * l->hidden[i] + l->hidden[i];
        in = l->hidden[i];
    }
    params += (long)in * l->outputs + l->outputs;
    return params + l->body_gains; /* own_frame: each rigid body's gain too */
}

/* item "learned" IDENT ":" word [ settings ], word a role: potential, mass, force */
void sema_check_learned(Sema *s, Scope *scope, Node *n, PtrVec *out) {
    Learned *l = arena_alloc(s->arena, sizeof *l);
    l->name = n->name;
    l->loc = n->loc;
    const char *role = n->kind_word;
    if (!strcmp(role, "potential")) l->role = ROLE_POTENTIAL;
    else if (!strcmp(role, "mass")) l->role = ROLE_MASS;
    else if (!strcmp(role, "force")) l->role = ROLE_FORCE;
    else {
        const char *roles[] = {"potential", "mass", "force"};
        const char *near = closest_word(role, roles, 3);
        ERR_AT(n, n->loc2, "unknown role '%s' for learned term %s%s%s%s (roles: potential, mass, force)", role, n->name,
               near ? "; did you mean '" : "", near ? near : "", near ? "'?" : "");
        return;
    }
    LearnedSettings ls = {.hidden = {256, 256, 256}, .nhidden = 3, .activation = "tanh", .biases = "uniform", .scale = 1,
                         .length_scale = 1, .time_scale = 1};
    settings_apply(s, scope, &n->list, learned_specs, sizeof learned_specs / sizeof learned_specs[0], &ls,
                   arena_printf(s->arena, "learned %s", n->name));
    l->zero_biases = !strcmp(ls.biases, "zero");
    memcpy(l->hidden, ls.hidden, sizeof l->hidden);
    l->nhidden = ls.nhidden;
    l->act = !strcmp(ls.activation, "tanh") ? ACT_TANH : !strcmp(ls.activation, "softplus") ? ACT_SOFTPLUS
             : !strcmp(ls.activation, "silu") ? ACT_SILU : ACT_RELU;
    l->input_exprs = ls.input;
    l->scale = ls.scale;
    l->length_scale = ls.length_scale;
    l->time_scale = ls.time_scale;
    static const char *const positions_velocities[] = {"positions", "velocities"};
    l->velocity_input = input_is(ls.input, positions_velocities, 2);
    l->inputs = input_width(s, scope, ls.input, l);
    static const struct { const char *word, *what; } whole_inputs[] = { /* a potential's whole input, alone */
        {"centres", "the bodies' positions without their rotations"},
        {"body_frame", "each body's view of the others"},
        {"own_frame", "a term of each rigid body's view of the others"},
        {"own_centres", "a term of each body's view of the others"},
    };
    for (size_t i = 0; i < sizeof whole_inputs / sizeof whole_inputs[0]; i++)
        if (reads_input(ls.input, whole_inputs[i].word) && (l->role != ROLE_POTENTIAL || ls.input->list.len != 1))
            ERR_AT(n, n->loc, "learned %s: `input %s` (%s) is the whole input of a potential", n->name,
                   whole_inputs[i].word, whole_inputs[i].what);
    l->body_frame_input = reads_input(ls.input, "body_frame");
    l->own_centres_input = reads_input(ls.input, "own_centres");
    System *sys = s->sys;
    int q = sys->coords.present ? sys->coords.count : 0;
    if (l->role == ROLE_POTENTIAL) l->outputs = 1;
    else if (l->role == ROLE_FORCE) /* the rates of (q, qdot) from generalized inputs (node), else on the momenta */
        l->outputs = reads_input(ls.input, "coords") || reads_input(ls.input, "rates") ? 2 * q : momentum_width(sys);
    else {
        if (!q) {
            ERR_AT(n, n->loc2, "a learned mass matrix M(q) needs generalized coordinates: the system has no coordinates block");
            l->inputs = -1;
        }
        l->outputs = q * (q + 1) / 2; /* the Cholesky factor's lower triangle */
    }
    if (l->nhidden == 0) ERR_AT(n, n->loc, "learned term %s needs at least one hidden layer: hidden [64, 64]", n->name);
    ptrvec_push(s->arena, out, l);
    if (l->inputs <= 0) return; /* reported; kept so that models naming it do not cascade */
    l->params = learned_params(l);
}

typedef struct ModelSettings {
    Node *mass, *potential, *force, *known;
    double lr, adam_eps; /* 0: the train block's */
    int epochs;  /* 0: the train block's */
    const char *integrator, *predict; /* NULL: the train block's; the training step */
} ModelSettings;


static const SetSpec model_specs[] = {
    {"potential", S_NODE, offsetof(ModelSettings, potential), 0, 0, NULL, 0, 0},
    {"force", S_NODE, offsetof(ModelSettings, force), 0, 0, NULL, 0, 0},
    {"known", S_NODE, offsetof(ModelSettings, known), 0, 0, NULL, 0, 0},
    {"mass", S_NODE, offsetof(ModelSettings, mass), 0, 0, NULL, 0, 0},
    /* the train block's settings a model may set for itself (the paper trains some baselines
       with a lower rate or fewer epochs, App. D.3); the same bounds as there */
    {"lr", S_NUM, offsetof(ModelSettings, lr), SET_POSITIVE, 100, NULL, 0, 0},
    {"adam_eps", S_NUM, offsetof(ModelSettings, adam_eps), SET_POSITIVE, 1, NULL, 0, 0},
    {"epochs", S_INT, offsetof(ModelSettings, epochs), 1, 100000000, NULL, 0, 0},
    {"integrator", S_WORD, offsetof(ModelSettings, integrator), 0, 0, INTEGRATOR_WORDS, 0, 0},
    /* dtlnn: a prediction step other than the training step (the paper's leapfrog+proposed) */
    {"predict", S_WORD, offsetof(ModelSettings, predict), 0, 0, INTEGRATOR_WORDS, 0, 0},
};

static int find_learned(System *sys, const char *name) {
    for (int i = 0; i < sys->nlearned; i++)
        if (!strcmp(sys->learned[i].name, name)) return i;
    return -1;
}

/* Resolves a list of learned-term names of one role into idx[]. */
static int learned_list(Sema *s, Node *setting, LearnedRole role, int *idx, int max) {
    System *sys = s->sys;
    int cnt = 0;
    if (!setting) return 0;
    for (int i = 0; i < setting->list.len; i++) {
        Node *e = NODE_AT(setting->list, i);
        if (e->kind != N_IDENT) {
            ERR_AT(e, e->loc, "'%s' takes names of learned terms", setting->name);
            continue;
        }
        int k = find_learned(sys, e->name);
        if (k < 0) {
            const char *names[64];
            int nn = 0;
            for (int j = 0; j < sys->nlearned && nn < 64; j++)
                if (sys->learned[j].role == role) names[nn++] = sys->learned[j].name;
            const char *near = closest_word(e->name, names, nn);
            ERR_AT(e, e->loc, "no learned term named '%s'%s%s%s", e->name, near ? "; did you mean '" : "", near ? near : "",
                   near ? "'?" : "");
            continue;
        }
        if (sys->learned[k].role != role) {
            ERR_AT(e, e->loc, "learned term '%s' is a %s term, not a %s term", e->name,
                   sys->learned[k].role == ROLE_POTENTIAL ? "potential" : sys->learned[k].role == ROLE_MASS ? "mass" : "force",
                   role == ROLE_POTENTIAL ? "potential" : role == ROLE_MASS ? "mass" : "force");
            continue;
        }
        bool dup = false;
        for (int j = 0; j < cnt; j++)
            if (idx[j] == k) dup = true;
        if (dup) {
            ERR_AT(e, e->loc, "'%s' is named twice", e->name);
            continue;
        }
        if (cnt == max) {
            ERR_AT(e, e->loc, "'%s' takes at most %d terms", setting->name, max);
            break;
        }
        idx[cnt++] = k;
        sys->learned[k].used = true;
    }
    return cnt;
}

/* The terms a model in generalized coordinates names in `setting` read exactly the input
   words[0..nwords), and (twice differentiated, all but node's) not through relu. */
static void check_generalized_terms(Sema *s, const Model *m, const char *kind, Node *setting, LearnedRole role,
                                    const char *const *words, int nwords) {
    System *sys = s->sys;
    for (int i = 0; setting && i < setting->list.len; i++) {
        Node *e = NODE_AT(setting->list, i);
        int k = e->kind == N_IDENT ? find_learned(sys, e->name) : -1;
        if (k < 0 || sys->learned[k].role != role) continue; /* reported */
        const Learned *l = &sys->learned[k];
        if (!input_is(l->input_exprs, words, nwords)) {
            ERR_AT(e, e->loc, "model %s (%s) reads %s in generalized coordinates: give learned %s `input %s%s`", m->name,
                   kind, l->name, l->name, words[0], nwords > 1 ? ", rates" : "");
            continue;
        }
        if (!(prt_model_kinds[m->kind].rules & PRT_KIND_RELU_TERMS) && l->act == ACT_RELU)
            ERR_AT(e, e->loc, "model %s (%s) needs second derivatives of %s, which relu does not have: use activation tanh, "
                   "softplus or silu", m->name, kind, l->name);
    }
}

/* The baselines in generalized coordinates (node, hnn, lnn, delan): their data, made in
   Cartesian coordinates, comes into q through the inverse block, and their networks read
   coords (angles as (cos, sin)) and rates as the CHNN paper's App. D.2 gives them. */
static void check_generalized_model(Sema *s, const Model *m, const char *kind, Node *n, const ModelSettings *ms) {
    System *sys = s->sys;
    if (!sys->coords.present) {
        ERR_AT(n, n->loc2, "model %s (%s) learns in generalized coordinates: the system needs a coordinates block", m->name,
               kind);
        return;
    }
    if (!sys->coords.inverse) {
        ERR_AT(n, n->loc2, "model %s (%s) learns in generalized coordinates: the system needs an inverse block to map its "
               "Cartesian data into them", m->name, kind);
        return;
    }
    if (ms->known) ERR_AT(ms->known, ms->known->loc2, "known potentials are not supported yet for %s", kind);
    static const char *const q_only[] = {"coords"}, *const q_and_rates[] = {"coords", "rates"};
    check_generalized_terms(s, m, kind, ms->force, ROLE_FORCE, q_and_rates, 2);
    /* lnn's `potential` is its whole Lagrangian L(q, qdot) */
    bool lagrangian = prt_model_kinds[m->kind].rules & PRT_KIND_LAGRANGIAN_TERM;
    check_generalized_terms(s, m, kind, ms->potential, ROLE_POTENTIAL, lagrangian ? q_and_rates : q_only, lagrangian ? 2 : 1);
    if (m->mass_learned >= 0) check_generalized_terms(s, m, kind, ms->mass, ROLE_MASS, q_only, 1);
}

/* The kinds whose rows have the rule `rule`, ", "-separated (for messages). */
static const char *kinds_with(unsigned rule) {
    static char buf[256];
    buf[0] = 0;
    for (int k = 0; k < prt_model_nkinds; k++)
        if (prt_model_kinds[k].rules & rule)
            snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s%s", buf[0] ? ", " : "", prt_model_kinds[k].name);
    return buf;
}

/* A force term of generalized inputs gives the rates of the whole state (q, qdot) to a kind
   that learns its field (2 nq outputs), its accelerations to a kind whose force is one (nq):
   the first model that names it fixes which, and a model of the other sort is refused. */
static void claim_force_width(Sema *s, const Model *m, Node *setting, int i) {
    System *sys = s->sys;
    Learned *l = &sys->learned[m->forces[i]];
    int q = sys->coords.present ? sys->coords.count : 0;
    if (!q || (l->outputs != 2 * q && l->outputs != q) || l->inputs <= 0) return; /* Cartesian inputs, or reported */
    static const char *const generalized[] = {"coords", "rates"};
    if (!reads_input(l->input_exprs, generalized[0]) && !reads_input(l->input_exprs, generalized[1])) return;
    bool accel = prt_model_kinds[m->kind].rules & PRT_KIND_FORCE_IS_ACCEL;
    int want = accel ? q : 2 * q;
    if (l->outputs != want && l->width_of) {
        Node *e = NODE_AT(setting->list, i);
        ERR_AT(e, e->loc, "learned %s gives model %s the %s (%d outputs); model %s (%s) reads %s (%d): declare a learned "
               "force of its own", l->name, l->width_of, accel ? "rates of (q, qdot)" : "accelerations", l->outputs,
               m->name, model_kind_name(m->kind), accel ? "accelerations" : "the rates of (q, qdot)", want);
        return;
    }
    l->outputs = want;
    l->params = learned_params(l);
    if (!l->width_of) l->width_of = m->name;
}

/* A model's own training step (`integrator`), checked against what its family trains
   through, and a dtlnn's prediction step (`predict`). The train block's step, which a
   model without its own uses, is checked once every block is read (sema_check_model_defaults). */
static void check_model_steps(Sema *s, Model *m, Node *n, const ModelSettings *ms) {
    const char *kind = model_kind_name(m->kind);
    char names[256];
    Node *at = sema_setting_node(n, "integrator");
    if (at) m->integrator_at = at->loc2; /* (set, if not to a known word: reported) */
    if (ms->integrator) {
        m->integrator = ms->integrator;
        if (!model_trains_through(m->kind, prt_integrator_find(ms->integrator)))
            ERR_AT(at, NODE_AT(at->list, 0)->loc, "model %s (%s) trains through one of: %s; not %s", m->name, kind,
                   model_integrator_names(m->kind, names, sizeof names), ms->integrator);
    }
    at = sema_setting_node(n, "predict");
    if (!ms->predict) return;
    m->predict = ms->predict;
    m->predict_at = at->loc2;
    if (!(prt_model_kinds[m->kind].rules & PRT_KIND_PREDICT_STEP))
        ERR_AT(at, at->loc2, "'predict' is for %s models; model %s (%s) predicts by integrating its learned dynamics "
               "(the eval block's solver)", kinds_with(PRT_KIND_PREDICT_STEP), m->name, kind);
    else if (!model_trains_through(m->kind, prt_integrator_find(ms->predict)))
        ERR_AT(at, NODE_AT(at->list, 0)->loc, "model %s (%s) predicts with one of: %s; not %s", m->name, kind,
               model_integrator_names(m->kind, names, sizeof names), ms->predict);
}

/* A kind that steps the Cartesian positions by a discrete Euler-Lagrange step (dtlnn, the
   DT-LNN paper's Eq. 12): a learned potential V of the positions, a constant mass matrix, no
   constraints; nothing else is learned. */
static void check_positions_stepper(Sema *s, const Model *m, Node *n, const ModelSettings *ms) {
    System *sys = s->sys;
    const char *kind = model_kind_name(m->kind);
    if (m->mass_learned >= 0 || m->mass_fit)
        ERR_AT(ms->mass, ms->mass->loc2, "model %s (%s) learns a potential only: its mass matrix is `mass identity` "
               "(M = I, as the paper) or `mass known` (the bodies' masses)", m->name, kind);
    if (ms->force)
        ERR_AT(ms->force, ms->force->loc2, "model %s (%s) learns a potential only: Eq. 12 has no learned force",
               m->name, kind);
    if (!ms->potential && m->nknown)
        ERR_AT(n, n->loc2, "model %s (%s) needs a learned potential: add `potential V` with `learned V : potential`",
               m->name, kind);
    for (int i = 0; ms->potential && i < ms->potential->list.len; i++) {
        Node *e = NODE_AT(ms->potential->list, i);
        int k = e->kind == N_IDENT ? find_learned(sys, e->name) : -1;
        if (k < 0 || sys->learned[k].role != ROLE_POTENTIAL) continue; /* reported */
        const Learned *l = &sys->learned[k];
        static const char *const positions[] = {"positions"}, *const coords[] = {"coords"};
        if (input_is(l->input_exprs, coords, 1)) { /* the runtime steps Cartesian positions only (model_discrete.c) */
            ERR_AT(e, e->loc, "model %s (%s) steps the Cartesian positions of a system without constraints; "
                   "generalized coordinates are not supported: give %s `input positions`, and write a system in "
                   "coordinates as `dim 1` points (examples/pendulum-dg.phys)", m->name, kind, l->name);
        } else if (l->input_exprs && !input_is(l->input_exprs, positions, 1)) {
            ERR_AT(e, e->loc, "model %s (%s) steps the positions: give learned %s `input positions`", m->name,
                   kind, l->name);
        } else if (system_independent_constraints(sys) > 0) {
            ERR_AT(e, e->loc, "model %s (%s) steps the positions %s reads by Eq. 12, which has no constraints, but the "
                   "system has %d constraint equation%s: write it in coordinates as `dim 1` points (examples/pendulum-dg.phys)",
                   m->name, kind, l->name, system_equations(sys), system_equations(sys) == 1 ? "" : "s");
        }
    }
}

/* What the kind's row (model_kinds.h) says a model of it needs of its terms and its system. */
static void check_kind_rules(Sema *s, const Model *m, Node *n, const ModelSettings *ms) {
    System *sys = s->sys;
    const PrtModelKind *kind = &prt_model_kinds[m->kind];
    unsigned r = kind->rules;
    bool has_so3 = sys->nrotation_bodies > 0;
    if (r & PRT_KIND_STEPS_POSITIONS) check_positions_stepper(s, m, n, ms);
    if (m->mass_fit && !(r & PRT_KIND_EQ9_MASSES)) /* (after a kind's own word on its masses: said once) */
        ERR_AT(ms->mass, ms->mass->loc2, "model %s (%s) learns no Eq. 9 masses: `mass learned` is for %s models (`mass "
               "known` keeps the system's; hnn and delan learn a mass matrix: `mass M` with `learned M : mass`)", m->name,
               kind->name, kinds_with(PRT_KIND_EQ9_MASSES));
    if ((r & PRT_KIND_NEEDS_MASS_TERM) && m->mass_learned < 0)
        ERR_AT(n, n->loc2, "model %s (%s) needs a learned mass matrix: `mass M` with `learned M : mass`", m->name, kind->name);
    if ((r & PRT_KIND_NEEDS_FORCE) && m->nforces == 0)
        ERR_AT(n, n->loc2, "model %s (%s) needs a learned vector field: `force F` with `learned F : force`", m->name,
               kind->name);
    /* (a `potential` or `known` setting whose names failed to resolve has had its error) */
    if ((r & PRT_KIND_NEEDS_POTENTIAL) && m->npotentials == 0 && m->nknown == 0 && !ms->potential && !ms->known)
        ERR_AT(n, n->loc2, "model %s (%s) has no potential: add `potential V` (a learned potential term)", m->name, kind->name);
    if (kind->max_potentials && ms->potential && ms->potential->list.len > kind->max_potentials)
        ERR_AT(ms->potential, NODE_AT(ms->potential->list, kind->max_potentials)->loc,
               "model %s (%s) sums at most %d learned potentials", m->name, kind->name, kind->max_potentials);
    if (kind->max_forces && ms->force && ms->force->list.len > kind->max_forces)
        ERR_AT(ms->force, NODE_AT(ms->force->list, kind->max_forces)->loc, "model %s (%s) takes one learned force (one "
               "network of every force and torque)", m->name, kind->name);
    if ((r & PRT_KIND_RIGID_BODIES) && !has_so3)
        ERR_AT(n, n->loc2, "model %s (%s) integrates rigid bodies on SO(3): the system has no body with `state so3`", m->name,
               kind->name);
    if (has_so3 && !(r & PRT_KIND_RIGID_BODIES))
        ERR_AT(n, n->loc2, "model %s (%s) needs Cartesian bodies, but the system has bodies with `state so3` (use %s)",
               m->name, kind->name, kinds_with(PRT_KIND_RIGID_BODIES));
    if ((r & PRT_KIND_NEEDS_BODIES) && sys->nbodies == 0) ERR_AT(n, n->loc2, "model %s needs bodies", m->name);
    for (int i = 0; i < m->npotentials && !(r & PRT_KIND_BODY_VIEWS); i++) { /* inputs that only some kinds' potentials read */
        const Learned *l = &sys->learned[m->potentials[i]];
        if (l->body_frame_input || l->body_gains)
            ERR_AT(n, n->loc2, "model %s (%s): learned %s reads `input %s`, which only a %s model's potential reads", m->name,
                   kind->name, l->name, l->own_centres_input ? "own_centres" : l->body_gains ? "own_frame" : "body_frame",
                   kinds_with(PRT_KIND_BODY_VIEWS));
    }
}

/* item "model" IDENT ":" word [ settings ], word a model kind (model_kind_names) */
void sema_check_model(Sema *s, Scope *scope, Node *n, PtrVec *out) {
    System *sys = s->sys;
    Model *m = arena_alloc(s->arena, sizeof *m);
    m->name = n->name;
    m->loc = n->loc;
    m->mass_learned = -1;
    const char *const *model_kinds = model_kind_names();
    int k = 0;
    while (k < MODEL_NKINDS && strcmp(model_kinds[k], n->kind_word)) k++;
    if (k == MODEL_NKINDS) {
        const char *near = closest_word(n->kind_word, model_kinds, MODEL_NKINDS);
        char kinds[256] = "";
        for (int i = 0; i < MODEL_NKINDS; i++)
            snprintf(kinds + strlen(kinds), sizeof kinds - strlen(kinds), "%s%s", i ? ", " : "", model_kinds[i]);
        ERR_AT(n, n->loc2, "unknown model kind '%s'%s%s%s (kinds: %s)", n->kind_word, near ? "; did you mean '" : "",
               near ? near : "", near ? "'?" : "", kinds);
        return;
    }
    m->kind = (ModelKind)k;
    int errors_before = s->d->nerrors;
    ModelSettings ms = {0};
    settings_apply(s, scope, &n->list, model_specs, COUNT(model_specs), &ms, arena_printf(s->arena, "model %s", n->name));
    m->lr = ms.lr, m->adam_eps = ms.adam_eps, m->epochs = ms.epochs;
    m->npotentials = learned_list(s, ms.potential, ROLE_POTENTIAL, m->potentials, 8);
    m->nforces = learned_list(s, ms.force, ROLE_FORCE, m->forces, 8);
    for (int i = 0; i < m->nforces; i++) claim_force_width(s, m, ms.force, i);
    const PrtModelKind *rules = &prt_model_kinds[k];
    m->mass_fit = rules->rules & PRT_KIND_FITS_MASSES;
    if (ms.mass) {
        Node *mass_node = ms.mass;
        Node *e = NODE_AT(mass_node->list, 0);
        if (mass_node->list.len != 1 || e->kind != N_IDENT) {
            ERR_AT(mass_node, mass_node->loc2, "'mass' takes one word: learned, known, or a learned mass term's name");
        } else if (!strcmp(e->name, "learned")) {
            m->mass_fit = true;
        } else if (!strcmp(e->name, "known")) {
            m->mass_fit = false;
        } else if (!strcmp(e->name, "identity")) { /* the DT-LNN paper's M = I */
            m->mass_fit = false;
            m->unit_mass = true;
            if (!(rules->rules & PRT_KIND_UNIT_MASS))
                ERR_AT(e, e->loc, "`mass identity` (M = I) is for %s models; model %s (%s) takes `mass known`, "
                       "`mass learned` or a learned mass term", kinds_with(PRT_KIND_UNIT_MASS), n->name, model_kinds[k]);
        } else {
            int idx[1];
            if (learned_list(s, mass_node, ROLE_MASS, idx, 1) == 1) {
                m->mass_learned = idx[0];
                m->mass_fit = false;
            }
        }
    }
    if (ms.known) {
        for (int i = 0; i < ms.known->list.len; i++) {
            Node *e = NODE_AT(ms.known->list, i);
            int found = -1;
            if (e->kind == N_IDENT)
                for (int j = 0; j < sys->npotentials; j++)
                    if (!strcmp(sys->potentials[j].name, e->name)) found = j;
            if (found < 0) {
                ERR_AT(e, e->loc, "'known' names a potential of the system; the system has no potential '%s'",
                       e->kind == N_IDENT ? e->name : "?");
                continue;
            }
            bool dup = false;
            for (int j = 0; j < m->nknown; j++)
                if (m->known[j] == found) dup = true;
            if (dup) {
                ERR_AT(e, e->loc, "'%s' is named twice", e->name);
                continue;
            }
            if (m->nknown == 16) {
                ERR_AT(e, e->loc, "'known' takes at most 16 potentials");
                break;
            }
            m->known[m->nknown++] = found;
        }
    }
    check_model_steps(s, m, n, &ms);
    /* what each model needs of the system */
    const char *kind = model_kinds[k];
    if (model_in_generalized_coords(m->kind)) check_generalized_model(s, m, kind, n, &ms);
    check_kind_rules(s, m, n, &ms);
    long params = 0;
    for (int i = 0; i < m->npotentials; i++) params += sys->learned[m->potentials[i]].params;
    for (int i = 0; i < m->nforces; i++) params += sys->learned[m->forces[i]].params;
    if (m->mass_learned >= 0) params += sys->learned[m->mass_learned].params;
    if (m->mass_fit)
        for (int i = 0; i < sys->nbodies; i++) params += 1 + sys->bodies[i].n;
    m->params = params;
    bool learns = m->npotentials || m->nforces || m->mass_learned >= 0 || m->mass_fit;
    if (!learns && s->d->nerrors == errors_before)
        ERR_AT(n, n->loc2, "model %s (%s) learns nothing: add `potential V` (a learned term)%s", n->name, kind,
               rules->rules & PRT_KIND_FITS_MASSES ? " or `mass learned`" : "");
    ptrvec_push(s->arena, out, m);
}

/* A dtlnn model without its own training step takes the train block's, which is for the
   tape-trained families by default (rk4_38): say so at the model. */
void sema_check_model_defaults(Sema *s, Node *train) {
    System *sys = s->sys;
    for (int i = 0; i < sys->nmodels; i++) {
        const Model *m = &sys->models[i];
        const int *own = prt_model_kinds[m->kind].steps; /* (the others take the train block's, checked with it) */
        bool refused = (prt_model_kinds[m->kind].rules & PRT_KIND_RIGID_BODIES) && sys->nrotation_bodies == 0; /* (said) */
        if (!own || refused || m->integrator_at.first_line ||
            model_trains_through(m->kind, prt_integrator_find(sys->train.integrator)))
            continue;
        char names[256];
        diag_error(s->d, m->loc, "model %s (%s) trains through one of: %s; the train block's integrator is %s%s: give "
                   "the model its own, e.g. `integrator %s`", m->name, model_kind_name(m->kind),
                   model_integrator_names(m->kind, names, sizeof names), sys->train.integrator,
                   sema_setting_node(train, "integrator") ? "" : " (the default)",
                   prt_integrators[own[0]].name);
    }
}

const SetSpec *sema_learned_specs(int *n) {
    *n = (int)(sizeof learned_specs / sizeof learned_specs[0]);
    return learned_specs;
}

const SetSpec *sema_model_specs(int *n) {
    *n = (int)(sizeof model_specs / sizeof model_specs[0]);
    return model_specs;
}
