/* train.h — the training loop: epochs of shuffled minibatches, AdamW with a cosine schedule
   (stepped per epoch), validation, atomic checkpoints with bit-for-bit resume, a clean stop
   on Ctrl-C and on a non-finite loss. */
#ifndef PRT_TRAIN_H
#define PRT_TRAIN_H
#include <signal.h>
#include <stdio.h>

#include "io/checkpoint.h"
#include "io/dataset.h"
#include "models/model.h"

/* Processes that train one model together, each computing its part of every minibatch's
   shards (app/ implements it over MPI; the runtime knows no MPI). Process `rank` of `size`
   computes shards [S rank / size, S (rank + 1) / size); share() then gives every process every
   shard's loss and gradient, which each sums in the shards' order, so the parameters are the
   same bits on every process and whatever `size`. */
typedef struct PrtTrainExchange {
    int rank, size;
    void *ctx;
    /* On entry losses[k] and grads[k * nparams ...] hold this process's own shards (of
       n[k] chunks; n is the same everywhere); on return every shard's. 0, or -1 with a
       message (a process was lost). */
    int (*share)(void *ctx, int nshards, long nparams, const long *n, double *losses, double *grads, char *err,
                 size_t errlen);
    /* Whether any process was asked to stop (each passes its own flag): the same answer on
       all, at every epoch's end. */
    bool (*any_stop)(void *ctx, bool stop);
} PrtTrainExchange;

typedef struct PrtTrainOptions {
    int epochs, batch;
    int threads;                   /* the threads that compute a minibatch's shards (at most one per shard) */
    int shards;                    /* > 1: each minibatch is split in this many shards, each computed alone
                                      with single-threaded GEMMs and summed in their order: the results
                                      depend on this count (it is part of the run), not on the threads;
                                      0: as many as threads (at most PRT_TRAIN_MAX_SHARDS) */
    double lr, weight_decay;
    double adam_eps;               /* Adam's epsilon (0: PyTorch's 1e-8) */
    bool adam;                     /* Adam (decay added to the gradient), else AdamW */
    bool cosine;                   /* else a constant learning rate */
    uint64_t seed;                 /* initialization and shuffling */
    int checkpoint_every;          /* epochs */
    const char *checkpoint;        /* path, or NULL for none */
    bool resume;                   /* continue from `checkpoint`; its run may have had fewer
                                      epochs (extended: the cosine schedule continues as that
                                      of a run of `epochs`) */
    PrtFingerprint fingerprint;    /* what the checkpoint must have been written by */
    FILE *progress;                /* a line per epoch, or NULL */
    bool tty;                      /* redraw the progress line in place */
    volatile sig_atomic_t *stop;   /* set (by a signal handler): checkpoint and return */
    int stop_after;                /* > 0: checkpoint and return after this epoch (a run in parts) */
    const PrtTrainExchange *exchange; /* several processes share the shards (NULL: this one computes them all);
                                         only rank 0 writes checkpoints, every rank reads one to resume */
} PrtTrainOptions;

enum { PRT_TRAIN_MAX_SHARDS = 16 };

typedef enum PrtTrainStatus { PRT_TRAIN_DONE, PRT_TRAIN_INTERRUPTED, PRT_TRAIN_DIVERGED, PRT_TRAIN_FAILED } PrtTrainStatus;

typedef struct PrtTrainResult {
    PrtTrainStatus status;
    int epochs_done;               /* in total, including the epochs before a resume */
    int resumed_from;              /* epoch the run resumed at (0: a fresh start) */
    int checkpointed;              /* epochs in the last checkpoint written or resumed from
                                      (-1: none) */
    double seconds;                /* training time of this process */
    /* where this process's epochs went: computing its shards, exchanging them with the other
       processes (waiting for the slowest included), the validation loss; the minibatch steps
       and the bytes each step received from the others */
    double compute_s, exchange_s, validation_s;
    long steps;
    double bytes_per_step;
    double *loss;                  /* per epoch (epochs): mean training loss */
    double *valid;                 /* per epoch: validation loss (NaN without a validation set) */
    int checkpoint_failures;       /* checkpoints that could not be written: each was reported on stderr and
                                      training went on (the caller still writes its outputs, then fails) */
} PrtTrainResult;

void prt_train_result_free(PrtTrainResult *r);

/* The shards o splits each minibatch into (before the batch's own size bounds them) */
int prt_train_shards(const PrtTrainOptions *o);

/* Takes the finished training in checkpoint `from` (written with fingerprint `was`: nparams
   parameters, `epochs` epochs all done) as the checkpoint `to` of another run, with its
   fingerprint `now`: a model that trains exactly as that run's and predicts otherwise (the
   DT-LNN paper's leapfrog + proposed). prt_train with resume then only returns it. Written
   atomically. 0, or -1 with a message (not that run's, not finished, unreadable). */
int prt_train_adopt(const char *from, const PrtFingerprint *was, const char *to, const PrtFingerprint *now, long nparams,
                    int epochs, char *err, size_t errlen);

/* Trains theta (m->nparams; initialized here unless resuming) on the chunks `train`
   (validation on `valid`, which may have n = 0). Returns the status; err explains
   PRT_TRAIN_DIVERGED and PRT_TRAIN_FAILED. */
PrtTrainStatus prt_train(PrtModel *m, double *theta, const PrtTrajSet *train, const PrtTrajSet *valid,
                         const PrtTrainOptions *o, PrtTrainResult *r, char *err, size_t errlen);

#endif
