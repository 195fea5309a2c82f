/* sema_settings.c — the data, train and eval blocks: their settings, defaults and bounds,
   and the checks between them once every block is read. */
#include "sema_internal.h"

#include "train/train.h"

#define BIG 1e300
static const SetSpec data_specs[] = {
    {"train", S_INT, offsetof(DataSettings, ntrain), 1, 10000000, NULL, 0, 0},
    {"valid", S_INT, offsetof(DataSettings, nvalid), 0, 10000000, NULL, 0, 0},
    {"test", S_INT, offsetof(DataSettings, ntest), 0, 10000000, NULL, 0, 0},
    {"dt", S_NUM, offsetof(DataSettings, dt), SET_POSITIVE, BIG, NULL, 0, 0},
    {"steps", S_INT, offsetof(DataSettings, steps), 1, 100000000, NULL, 0, 0},
    {"chunk", S_INT, offsetof(DataSettings, chunk), 2, 100000000, NULL, 0, 0},
    {"solver", S_WORD, offsetof(DataSettings, solver), 0, 0, "dopri5|rk4|rk4_38|rattle|leapfrog|liet2", 0, 0},
    {"substeps", S_INT, offsetof(DataSettings, substeps), 1, 100000, NULL, 0, 0},
    {"rtol", S_NUM, offsetof(DataSettings, rtol), SET_POSITIVE, 1, NULL, 0, 0},
    {"atol", S_NUM, offsetof(DataSettings, atol), SET_POSITIVE, 1, NULL, 0, 0},
    {"seed", S_INT, offsetof(DataSettings, seed), 0, 2147483647, NULL, 0, 0},
    {"file", S_STR, offsetof(DataSettings, file), 0, 0, NULL, 0, 0},
    {"noise", S_NUM, offsetof(DataSettings, noise), 0, BIG, NULL, 0, 0},
    {"test_noise", S_NUM, offsetof(DataSettings, test_noise), 0, BIG, NULL, 0, 0},
    {"project", S_WORD, offsetof(DataSettings, project), 0, 0, "mass|nearest", 0, 0},
};

static const SetSpec train_specs[] = {
    {"optimizer", S_WORD, offsetof(TrainSettings, optimizer), 0, 0, "adamw|adam|sgd", 0, 0},
    {"lr", S_NUM, offsetof(TrainSettings, lr), SET_POSITIVE, 100, NULL, 0, 0},
    {"weight_decay", S_NUM, offsetof(TrainSettings, weight_decay), 0, 100, NULL, 0, 0},
    {"adam_eps", S_NUM, offsetof(TrainSettings, adam_eps), SET_POSITIVE, 1, NULL, 0, 0},
    {"schedule", S_WORD, offsetof(TrainSettings, schedule), 0, 0, "cosine|constant", 0, 0},
    {"epochs", S_INT, offsetof(TrainSettings, epochs), 1, 100000000, NULL, 0, 0},
    {"batch", S_INT, offsetof(TrainSettings, batch), 1, 100000000, NULL, 0, 0},
    {"loss", S_WORD, offsetof(TrainSettings, loss), 0, 0, "l1|l2", 0, 0},
    {"loss_weights", S_WORD, offsetof(TrainSettings, loss_weights), 0, 0, "uniform|balanced", 0, 0},
    {"integrator", S_WORD, offsetof(TrainSettings, integrator), 0, 0, INTEGRATOR_WORDS, 0, 0},
    {"substeps", S_INT, offsetof(TrainSettings, substeps), 1, 1000, NULL, 0, 0},
    {"precision", S_WORD, offsetof(TrainSettings, precision), 0, 0, "f32|f64", 0, 0},
    {"threads", S_INT, offsetof(TrainSettings, threads), 1, 1024, NULL, 0, 0},
    {"shards", S_INT, offsetof(TrainSettings, shards), 1, PRT_TRAIN_MAX_SHARDS, NULL, 0, 0},
    {"checkpoint_every", S_INT, offsetof(TrainSettings, checkpoint_every), 1, 100000000, NULL, 0, 0},
};

static const SetSpec eval_specs[] = {
    {"horizon", S_INT, offsetof(EvalSettings, horizon), 1, 100000000, NULL, 0, 0},
    {"solver", S_WORD, offsetof(EvalSettings, solver), 0, 0, "dopri5|rk4|rk4_38|rattle|leapfrog|liet2", 0, 0},
    {"rtol", S_NUM, offsetof(EvalSettings, rtol), SET_POSITIVE, 1, NULL, 0, 0},
    {"atol", S_NUM, offsetof(EvalSettings, atol), SET_POSITIVE, 1, NULL, 0, 0},
    {"metrics", S_WORDS, offsetof(EvalSettings, metrics), 0, 0, "rel_error|energy|constraint|chaos_floor", offsetof(EvalSettings, nmetrics), 8},
    {"plots", S_WORDS, offsetof(EvalSettings, plots), 0, 0, "rollout|error|energy|phase|violation|orientation", offsetof(EvalSettings, nplots), 8},
    {"trajectories", S_INT, offsetof(EvalSettings, plot_trajectories), 0, 1000, NULL, 0, 0},
};

void sema_default_settings(System *sys) {
    sys->data = (DataSettings){.ntrain = 800, .nvalid = 100, .ntest = 100, .dt = 0.1, .steps = 100, .chunk = 5,
                               .solver = "dopri5", .substeps = 1, .rtol = 1e-7, .atol = 1e-9, .seed = 0, .project = "mass"};
    sys->train = (TrainSettings){.optimizer = "adamw", .lr = 3e-3, .weight_decay = 1e-4, .adam_eps = 1e-8, .schedule = "cosine",
                                 .epochs = 100, .batch = 200, .loss = "l1", .loss_weights = "uniform", .integrator = "rk4_38", .precision = "f64",
                                 .threads = 1, .checkpoint_every = 10, .substeps = 1};
    sys->eval = (EvalSettings){.horizon = 0, .solver = "dopri5", .rtol = 1e-7, .atol = 1e-9, .plot_trajectories = 4,
                               .metrics = {"rel_error", "energy", "constraint", "chaos_floor"}, .nmetrics = 4,
                               .plots = {"rollout", "error", "energy", "phase", "violation", "orientation"}, .nplots = 6};
}

/* The setting `key` of a settings block (NULL if the block or the setting is absent). */
Node *sema_setting_node(Node *block, const char *key) {
    for (int i = 0; block && i < block->list.len; i++)
        if (!strcmp(NODE_AT(block->list, i)->name, key)) return NODE_AT(block->list, i);
    return NULL;
}

/* item ( "data" | "train" | "eval" ) settings: block k (0 data, 1 train, 2 eval) */
void sema_settings_block(Sema *s, Node *n, int k) {
    System *sys = s->sys;
    if (k == 0) settings_apply(s, &s->system_scope, &n->list, data_specs, COUNT(data_specs), &sys->data, "the data block");
    if (k == 1) settings_apply(s, &s->system_scope, &n->list, train_specs, COUNT(train_specs), &sys->train, "the train block");
    if (k == 2) settings_apply(s, &s->system_scope, &n->list, eval_specs, COUNT(eval_specs), &sys->eval, "the eval block");
}

/* The settings blocks together (blocks[0..2]: data, train, eval, NULL where absent): chunk and
   horizon against the trajectories' steps, the data file beside the program, and where the
   blocks name what a command may refuse. */
void sema_finish_settings(Sema *s, Node *const blocks[3], const char *path) {
    System *sys = s->sys;
    Arena *arena = s->arena;
    Node *chunk_at = sema_setting_node(blocks[0], "chunk"), *file_at = sema_setting_node(blocks[0], "file"),
         *dt_at = sema_setting_node(blocks[0], "dt"), *horizon_at = sema_setting_node(blocks[2], "horizon"),
         *steps_at = sema_setting_node(blocks[0], "steps");
    if (!chunk_at) chunk_at = blocks[0]; /* the default chunk, too long for the steps set */
    if (chunk_at && sys->data.chunk > sys->data.steps + 1)
        ERR_AT(chunk_at, chunk_at->loc2, "chunk (%d points) is longer than a trajectory (%d steps = %d points)",
               sys->data.chunk, sys->data.steps, sys->data.steps + 1);
    if (file_at) sys->data.file_at = file_at->loc2;
    if (dt_at) sys->data.dt_at = dt_at->loc2;
    if (steps_at) sys->data.steps_at = steps_at->loc2;
    if (horizon_at) sys->eval.horizon_at = horizon_at->loc2;
    if (sys->data.file && !*sys->data.file) ERR_AT(file_at, file_at->loc2, "'file' takes the path of a CSV file");
    else if (sys->data.file && sys->data.file[0] != '/' && strchr(path, '/')) /* as imports: beside the program */
        sys->data.file = arena_printf(arena, "%s/%s", sema_dir_of(arena, path), sys->data.file);
    /* generated test trajectories are `steps` long; a file's length is checked when it is read */
    if (horizon_at && !sys->data.file && sys->eval.horizon > sys->data.steps)
        ERR_AT(horizon_at, horizon_at->loc2, "horizon (%d steps) is longer than the test trajectories (%d steps, the data "
               "block's steps)", sys->eval.horizon, sys->data.steps);
    if (!sys->eval.horizon) sys->eval.horizon = sys->data.steps;
    /* where the blocks name what a command may refuse (first_line 0: a default) */
    struct { Node *block; const char *key; Loc *at; } refusable[] = {
        {blocks[1], "integrator", &sys->train.integrator_at}, {blocks[1], "optimizer", &sys->train.optimizer_at},
        {blocks[0], "solver", &sys->data.solver_at}, {blocks[2], "solver", &sys->eval.solver_at}};
    for (size_t i = 0; i < sizeof refusable / sizeof refusable[0]; i++) {
        Node *at = sema_setting_node(refusable[i].block, refusable[i].key);
        *refusable[i].at = at ? at->loc2 : (Loc){0};
    }
}

const SetSpec *settings_of(const char *block, int *n) {
    static const struct { const char *block; const SetSpec *specs; int n; } blocks[] = {
        {"data", data_specs, sizeof data_specs / sizeof data_specs[0]},
        {"train", train_specs, sizeof train_specs / sizeof train_specs[0]},
        {"eval", eval_specs, sizeof eval_specs / sizeof eval_specs[0]},
    };
    for (size_t i = 0; i < sizeof blocks / sizeof blocks[0]; i++)
        if (!strcmp(block, blocks[i].block)) return *n = blocks[i].n, blocks[i].specs;
    if (!strcmp(block, "learned")) return sema_learned_specs(n);
    if (!strcmp(block, "model")) return sema_model_specs(n);
    if (!strcmp(block, "body")) return sema_body_specs(n);
    return *n = 0, NULL;
}
