/* run_train.c — the training stage of `physc run` (run_internal.h): the model's summary, what
   the model reads off the data before its first epoch, the integrator floor, the epochs
   (stopped cleanly by a signal, with a checkpoint) and the trained parameters. */
#include "run_internal.h"
#include "core/alloc.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/blas_cpu.h"
#include "dist.h"
#include "report.h"
#include "stop_signals.h"

/* The signal that asked training to stop (SIGINT: Ctrl-C; SIGTERM: what batch schedulers
   send before they kill a job; SIGHUP: the terminal or ssh session closed), or 0. */
static volatile sig_atomic_t interrupted;

/* Under mpirun: whether this process says so (rank 0 only), and what it says of SIGTERM,
   which mpirun also sends when it ends the job because a process was lost (made before
   training: a handler only writes) */
static bool signal_quiet;
static char mpi_term_msg[1024];
static size_t mpi_term_len;

static void on_stop_signal(int sig) {
    if (interrupted) _exit(128 + sig); /* a second one: do not wait */
    interrupted = sig;
    if (signal_quiet) return;
    if (sig == SIGTERM && mpi_term_len) {
        ssize_t w = write(STDERR_FILENO, mpi_term_msg, mpi_term_len);
        (void)w;
        return;
    }
    static const char int_msg[] = "\nphysc: interrupted: finishing this epoch and writing a checkpoint (Ctrl-C again to quit now)\n",
                      term_msg[] = "\nphysc: SIGTERM: finishing this epoch and writing a checkpoint (a second SIGTERM quits now)\n",
                      hup_msg[] = "\nphysc: SIGHUP (the terminal closed): finishing this epoch and writing a checkpoint\n";
    ssize_t w = sig == SIGINT    ? write(STDERR_FILENO, int_msg, sizeof int_msg - 1)
                : sig == SIGTERM ? write(STDERR_FILENO, term_msg, sizeof term_msg - 1)
                                 : write(STDERR_FILENO, hup_msg, sizeof hup_msg - 1);
    (void)w;
}

/* The tape a minibatch records, checked against the machine before training (measured:
   a recurrent block through many substeps records megabytes a chunk), so a batch too large
   for memory is refused with its size, not killed by the kernel halfway through the first
   epoch. 0, or -1 with a message. */
static int check_batch_memory(PrtModel *m, const PrtTrajSet *train, long batch, char *err, size_t errlen) {
    double per = prt_model_tape_per_chunk(m, train->n, train->npts, train->dt, train->xv);
    long chunks = batch < train->n ? batch : train->n;
    /* the minibatch's recording, and a loss over a set in blocks beside it (model.h) */
    double need = per * (double)chunks + fmin(per * (double)train->n, (double)PRT_MODEL_TAPE_BUDGET);
    char what[160], b[32];
    snprintf(what, sizeof what, "a minibatch of %ld chunks, held on the tape for its gradient (%s a chunk, measured),", chunks,
             prt_format_bytes(per, b, sizeof b));
    return prt_mem_check(need, what, "reduce `batch` in the train block (or the substeps, or the networks' widths)", err,
                         errlen);
}

/* "model NAME (KIND): MLP ... -> DIR/": the networks, the training's settings, the folder */
static void print_model_line(const RunState *r, const PrtTrainOptions *to) {
    FILE *out = r->out;
    const PrtModelConfig *cfg = &r->cfg;
    const PrtMlp *mlp = &cfg->net[0];
    fprintf(out, "model %s (%s): MLP", r->md->name, model_kind_name(r->md->kind));
    for (int i = 0; i < cfg->nnets; i++) {
        fprintf(out, "%s %s %d", i ? " and" : "", cfg->family->net_role(cfg, i), cfg->net[i].size[0]);
        for (int l = 1; l <= cfg->net[i].nlayers; l++) fprintf(out, "-%d", cfg->net[i].size[l]);
    }
    char steps[48] = "";
    if (cfg->substeps > 1) snprintf(steps, sizeof steps, " (%d steps per interval)", cfg->substeps);
    char shards[32] = ""; /* (said when set: then the run depends on them, not on the threads) */
    if (to->shards) snprintf(shards, sizeof shards, " (%d shard%s)", prt_train_shards(to), prt_train_shards(to) == 1 ? "" : "s");
    fprintf(out, " %s %s, %ld parameters; %ld %s, batch %d%s, %s%s, lr %g, %s loss, %ld thread%s -> %s/\n",
            mlp->act == PRT_ACT_TANH ? "tanh" : mlp->act == PRT_ACT_SOFTPLUS ? "softplus" : "silu", mlp->f32 ? "f32" : "f64",
            r->m.nparams, r->epochs, noun(r->epochs, "epoch", "epochs"), to->batch, shards,
            prt_integrators[cfg->integrator].name, steps, to->lr, r->sys->train.loss, r->threads, r->threads == 1 ? "" : "s",
            r->dir);
    prt_model_say_scheme(&r->m, out);
}

/* What the model reads off the training data before its first epoch: its sizes (from_data)
   and its loss weights (balance). 0, or -1. */
static int read_off_data(RunState *r) {
    const PrtTrajSet *t = &r->data.train;
    char note[1024];
    prt_progress_start(&r->phase, "sizes from the training data");
    if (t->n && prt_model_from_data(&r->m, t->n, t->npts, t->dt, t->xv, note, sizeof note, r->err, sizeof r->err) != 0)
        return -1;
    if (r->out && t->n && note[0]) fprintf(r->out, "%s\n", note);
    prt_progress_start(&r->phase, "loss weights: the known terms alone on the training data");
    if (t->n && prt_model_balance(&r->m, t->n, t->npts, t->dt, t->xv, r->err, sizeof r->err) != 0) return -1;
    if (r->out && r->cfg.balance_loss)
        fprintf(r->out, "loss weights balanced: each state group's squared error over its own under the known terms alone "
                "(so that they score 1 on every group)\n");
    return 0;
}

/* Where the floor lies, by state group, against the known terms alone: what of each group is
   the step's error, which the learned terms can only absorb, and what the missing physics'. */
static void floor_groups(RunState *r) {
    run_group_ratios(r, NULL, "the integrator floor by state group", "the known terms alone by state group",
                     "  by state group, floor / known terms alone");
}

/* The loss the system itself reaches under the training integrator: if the model's loss ends
   near it, the integrator's step (not the model) limits what the data can teach. Beside it
   the loss of theta = 0 where that is the model without its learned terms (the scale a fit is
   measured against), else the data's mean |component|; the family says what they mean. */
static void integrator_floor(RunState *r) {
    const PrtTrajSet *t = &r->data.train;
    const PrtModelConfig *cfg = &r->cfg;
    prt_progress_start(&r->phase, "integrator floor: the system's own dynamics on the training data");
    r->integrator_floor = t->n ? prt_model_set_loss(&r->m, NULL, true, t->n, t->npts, t->dt, t->xv) : NAN;
    if (!r->out || !t->n) return;
    PrtFloorFacts f = {.floor = r->integrator_floor, .baseline = NAN, .steps = "", .noisy = r->sys->data.noise > 0};
    char steps[48] = "";
    if (cfg->substeps > 1) snprintf(steps, sizeof steps, " (%d steps per interval)", cfg->substeps);
    f.steps = steps;
    if (!isfinite(f.floor)) {
        fprintf(r->out, "integrator floor: none: the system's own dynamics under %s%s diverge on some training chunks (their "
                "loss is not finite): this step cannot follow the system, whatever a model learns; `train { substeps N }` "
                "takes N steps per interval\n", prt_integrators[cfg->integrator].name, steps);
        return;
    }
    if (cfg->family->zero_theta_is_baseline) {
        double *zero = prt_xcalloc((size_t)r->m.nparams, sizeof(double), "the parameters");
        prt_progress_start(&r->phase, "the loss without the learned terms on the training data");
        f.baseline = prt_model_set_loss(&r->m, zero, false, t->n, t->npts, t->dt, t->xv);
        free(zero);
    } else {
        long len = (long)t->W * t->n * t->npts;
        for (long i = 0; i < len; i++) f.data_scale += fabs(t->xv[i]);
        f.data_scale /= (double)len;
    }
    prt_model_say_floor(&r->m, &f, r->out);
    floor_groups(r);
}

/* The epochs, a stop signal caught (the epoch in progress finishes and a checkpoint is
   written): 0 trained, 1 stopped (rc set), -1 failed or diverged. */
static int train_epochs(RunState *r, const PrtTrainOptions *to) {
    struct sigaction old_stop[NSTOP_SIGNALS + 1];
    signal_quiet = dist_rank() > 0;
    mpi_term_len = 0;
    if (dist_size() > 1) {
        int n = snprintf(mpi_term_msg, sizeof mpi_term_msg,
                         "\nphysc: SIGTERM: the %d processes finish this epoch and write a checkpoint (if mpirun sent it "
                         "because a process was lost, the job ends now and the last checkpoint in %s/ stays: --resume "
                         "continues from it)\n", dist_size(), r->dir);
        mpi_term_len = n > 0 && (size_t)n < sizeof mpi_term_msg ? (size_t)n : 0;
    }
    stop_signals_catch(on_stop_signal, old_stop);
    PrtTrainStatus st = prt_train(&r->m, r->theta, &r->data.train, &r->data.valid, to, &r->tr, r->err, sizeof r->err);
    stop_signals_restore(old_stop);
    r->failed_outputs += r->tr.checkpoint_failures; /* reported by prt_train */
    if (st == PRT_TRAIN_FAILED || st == PRT_TRAIN_DIVERGED) return -1;
    if (st == PRT_TRAIN_INTERRUPTED && r->tr.checkpoint_failures) {
        fprintf(stderr, "physc: run: stopped after epoch %d of %ld; the checkpoint could not be written (see above)\n",
                r->tr.epochs_done, r->epochs);
        r->rc = run_note_failure(r->o, "stopped; the checkpoint could not be written");
        return 1;
    }
    if (st == PRT_TRAIN_INTERRUPTED) {
        if (dist_rank() == 0) /* (every process stops after the same epoch: one says so) */
            fprintf(stderr, "physc: run: stopped after epoch %d of %ld%s; the checkpoint is in %s/ (continue with --resume)\n",
                r->tr.epochs_done, r->epochs, interrupted == SIGTERM ? " (SIGTERM)" : interrupted == SIGHUP ? " (SIGHUP)"
                                              : interrupted ? " (interrupted)" : "", r->dir);
        r->rc = interrupted ? 128 + interrupted : 0;
        return 1;
    }
    return 0;
}

/* With shards (the run opted into sharded training, and under mpirun must), where the epochs'
   time went: computing this process's shards, the validation loss, and under mpirun the
   exchange, split into its transfer (the shortest exchange of all processes: the process
   that computed longest waits least) and waiting for the slowest (the processes' mean
   exchange less the transfer) (docs/scaling.md). */
static void print_time_split(const RunState *r) {
    const PrtTrainResult *t = &r->tr;
    bool many = dist_size() > 1;
    if (!t->steps || (!many && !r->sys->train.shards)) return;
    double transfer = t->exchange_s, mean = t->exchange_s;
    char err[256];
    if (many && dist_min_sum(&transfer, &mean, "the exchange times", err, sizeof err) != 0) dist_abort(err);
    mean /= dist_size();
    if (!r->out) return;
    int epochs = t->epochs_done - t->resumed_from;
    double per = 1e3 / (double)t->steps;
    fprintf(r->out, "time: %d epoch%s, %ld steps: compute %.3f s, validation %.3f s", epochs, epochs == 1 ? "" : "s", t->steps,
            t->compute_s, t->validation_s);
    if (many)
        fprintf(r->out, ", exchange %.3f s (a step, the mean of %d processes: %.3f ms, of which %.3f ms transfer and %.3f ms "
                "waiting for the slowest; %.0f bytes received)", t->exchange_s, dist_size(), mean * per, transfer * per,
                (mean - transfer) * per, t->bytes_per_step);
    fputc('\n', r->out);
}

int run_train(RunState *r) {
    const System *sys = r->sys;
    const Model *md = r->md;
    r->theta = prt_xalloc((size_t)r->m.nparams, sizeof(double), "the parameters");
    PrtTrainOptions to = {
        .epochs = (int)r->epochs, .batch = sys->train.batch, .lr = md->lr > 0 ? md->lr : sys->train.lr,
        .weight_decay = sys->train.weight_decay, .adam_eps = run_adam_eps(sys, md), .adam = !strcmp(sys->train.optimizer, "adam"),
        .cosine = !strcmp(sys->train.schedule, "cosine"), .seed = (uint64_t)r->seed,
        .checkpoint_every = sys->train.checkpoint_every, .checkpoint = r->ckpt, .resume = r->resume || r->adopted,
        .fingerprint = r->fp, .threads = (int)r->threads, .shards = sys->train.shards, .exchange = dist_exchange(), .progress = r->out, .tty = r->tty,
        .stop = &interrupted, .stop_after = (int)r->o->stop_after};
    if (r->out) print_model_line(r, &to);
    prt_progress_init(&r->phase, r->out, r->tty);
    r->m.progress = &r->phase;
    if (read_off_data(r) != 0) return -1;
    if (r->data.train.n && check_batch_memory(&r->m, &r->data.train, to.batch, r->err, sizeof r->err) != 0) return -1;
    integrator_floor(r);
    prt_blas_describe(r->blas, sizeof r->blas);
    if (r->out) fprintf(r->out, "BLAS: %s\n", r->blas);
    int s = train_epochs(r, &to);
    if (s == 0) run_say_when_stopped(r, RUN_AFTER_TRAINING);
    if (s >= 0) print_time_split(r);
    if (s) return s;
    if (dist_rank() > 0) return 0; /* (rank 0 writes the run's files) */
    PrtCkptArray params = {"theta", r->theta, r->m.nparams};
    char *pp = report_path(r->dir, "params.bin");
    PrtCkptHeader ph = {.fp = r->fp, .epoch = r->tr.epochs_done};
    r->failed_outputs += run_output_failed(prt_ckpt_write(pp, &ph, &params, 1, r->err, sizeof r->err), r->err);
    free(pp);
    return 0;
}
