/* model_second_order.c — the second-order neural ODE ("NODE + SO", Gruver, Finzi, Stanton,
   Wilson, ICLR 2022, "Deconstructing the inductive biases of Hamiltonian neural networks"):
   the network gives the acceleration, and the positions change through the velocities, the
   one bias of the HNN that paper finds carries most of its gain. Two forms (model.h
   families):
     sonode   in the generalized coordinates q of the program's `coordinates` block, as the
              NODE: state (q, qdot), field (qdot, a(q, qdot)), a an MLP of (features(q),
              qdot) with nq outputs; the data, loss, truth and rollouts are the NODE's
              (model_generalized.h);
     csonode  in Cartesian coordinates with the constraints enforced by the CHNN paper's
              Eq. 7 multipliers: state (X, Xdot), Xddot the system's Accel kernel (the CLNN's
              projection) of the forces F = MLP(X, Xdot) (N outputs) in place of -dV/dX, with
              the system's masses or the Eq. 9 masses (`mass learned`); the loss, truth and
              rollouts are the CLNN's (model_cartesian.h).
   Neither has an energy of its own (as the NODE: energy NULL). theta: the network's
   parameters (then csonode's log masses, if learned). */
#include "model.h"
#include "model_cartesian.h"
#include "model_generalized.h"

#include <stdio.h>

#include "ad/mlp_graph.h"
#include "ad/state_ops.h"
#include "ad/tape.h"

/* ---- sonode: (qdot, a(q, qdot)) in generalized coordinates ---- */

static int accel_field(PrtModel *m, PrtTape *t, long n, const double *theta, double *grad, int q, int qdot) {
    PrtMlpTrace tr;
    int phi = prt_op_features(t, q, m->sys->nq, m->sys->angular, n);
    int a = prt_mlp_graph_forward(t, &m->cfg.net[0], theta, grad, prt_tape_concat(t, 2, (int[]){phi, qdot}), n, &tr);
    return prt_tape_concat(t, 2, (int[]){qdot, a});
}

static int open_sonode(PrtModel *m, char *err, size_t errlen) {
    if (prt_generalized_open(m, accel_field, err, errlen) != 0) return -1;
    int nq = m->sys->nq, nf = prt_features_width(nq, m->sys->angular);
    if (m->cfg.nnets != 1) {
        snprintf(err, errlen, "internal error: a %s model with %d networks", m->family->title, m->cfg.nnets);
        prt_generalized_close(m);
        return -1;
    }
    if (prt_generalized_check_net(m, 0, nf + nq, nq, "learned acceleration", err, errlen) != 0) {
        prt_generalized_close(m);
        return -1;
    }
    return 0;
}

/* ---- csonode: Eq. 7's accelerations of a learned force F(X, Xdot) ---- */

static int force_tape(PrtModel *m, PrtTape *t, long n, const double *theta, double *grad, int z) {
    return prt_tape_mlp_value(t, &m->cfg.net[0], theta, grad, n, z);
}

static void force_plain(PrtModel *m, long n, const double *theta, const double *z, double *F, PrtMlpWork *work) {
    prt_mlp_forward(&m->cfg.net[0], theta, n, z, F, work);
}

static const PrtCartesianForce learned_force = {.tape = force_tape, .plain = force_plain};

static int open_csonode(PrtModel *m, char *err, size_t errlen) {
    if (prt_cartesian_open(m, &learned_force, err, errlen) != 0) return -1;
    const PrtMlp *net = &m->cfg.net[0];
    int N = m->sys->N;
    if (m->cfg.nnets != 1 || net->size[0] != 2 * N || net->size[net->nlayers] != N) {
        snprintf(err, errlen, "the learned force of a %s model must map the %d positions and velocities to %d forces, not "
                 "%d to %d", m->family->title, 2 * N, N, net->size[0], net->size[net->nlayers]);
        prt_cartesian_close(m);
        return -1;
    }
    return 0;
}

/* ---- the declarations ---- */

/* One learned force, nothing else: no potential, no known terms, no learned mass network;
   sonode learns no masses either (its network's outputs are the accelerations). */
static int configure_force(const PrtModelDecl *d, PrtModelConfig *cfg, const PrtLearnedTerm **blame, char *err,
                           size_t errlen, const char *what) {
    const char *kind = cfg->family->name;
    if (prt_model_decl_plain(kind, d, blame, err, errlen) != 0 ||
        prt_model_decl_counts(kind, d, 0, 1, what, err, errlen) != 0 || prt_model_decl_no_known(kind, d, err, errlen) != 0)
        return -1;
    if (d->mass) {
        snprintf(err, errlen, "model '%s' (%s) takes no learned mass network: a learned mass matrix is for hnn and delan",
                 d->name, kind);
        return -1;
    }
    cfg->nnets = 1;
    cfg->net[0] = d->forces[0].net;
    return 0;
}

static int configure_sonode(const PrtModelDecl *d, PrtModelConfig *cfg, const PrtLearnedTerm **blame, char *err,
                            size_t errlen) {
    if (configure_force(d, cfg, blame, err, errlen, "one learned force (its accelerations, `input coords, rates`) and no "
                        "potential") != 0)
        return -1;
    if (d->mass_fit) {
        snprintf(err, errlen, "model '%s' (sonode) learns no masses: its network gives the accelerations (leave out `mass "
                 "learned`)", d->name);
        return -1;
    }
    return 0;
}

static int configure_csonode(const PrtModelDecl *d, PrtModelConfig *cfg, const PrtLearnedTerm **blame, char *err,
                             size_t errlen) {
    if (configure_force(d, cfg, blame, err, errlen, "one learned force (`input positions, velocities`) and no potential") !=
        0)
        return -1;
    const PrtLearnedTerm *f = &d->forces[0];
    if (!f->velocity_input || f->inputs != 2 * d->ncoords) {
        *blame = f;
        snprintf(err, errlen, "learned force '%s' must read the positions and velocities (`input positions, velocities`) "
                 "in a csonode model", f->name);
        return -1;
    }
    return 0;
}

static const char *role_accel(const PrtModelConfig *cfg, int k) { return "acceleration"; }
static const char *role_force(const PrtModelConfig *cfg, int k) { return "force"; }

const PrtModelFamily prt_family_sonode = {.name = "sonode", .title = "NODE+SO", .configure = configure_sonode,
    .net_role = role_accel, .open = open_sonode, .close = prt_generalized_close, .trainable = prt_generalized_trainable,
    .init_theta = prt_generalized_init_theta, .loss_grad = prt_generalized_loss_grad, .loss = prt_generalized_loss,
    .truth_loss = prt_generalized_truth_loss, .rollout = prt_generalized_rollout, .masses = prt_generalized_masses,
    .tape_field = prt_generalized_tape_field, .tape_step = prt_generalized_tape_step, .start_points = 1};
const PrtModelFamily prt_family_csonode = {.name = "csonode", .title = "CNODE+SO", .configure = configure_csonode,
    .net_role = role_force, .open = open_csonode, .close = prt_cartesian_close, .trainable = prt_cartesian_trainable,
    .init_theta = prt_cartesian_init_theta, .loss_grad = prt_cartesian_loss_grad, .loss = prt_cartesian_loss,
    .truth_loss = prt_cartesian_truth_loss, .rollout = prt_cartesian_rollout, .masses = prt_cartesian_masses,
    .tape_field = prt_cartesian_tape_field, .tape_step = prt_cartesian_tape_step, .start_points = 1};
