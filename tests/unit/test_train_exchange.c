/* test_train_exchange.c — training shared by several processes (train.h's PrtTrainExchange):
   K "processes" (threads here, each with its own model, exchanging through memory as
   app/ does over MPI) that each compute their part of every minibatch's S shards end with
   the parameters of one process computing all S, bit for bit, for K = 2 and 3 (S = 4, one
   and two threads each) and for a CLNN; an exchange that fails stops every process with its
   message; a stop asked of one process stops all after the same epoch. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "loaded.h"
#include "train/train.h"

enum { MAX_K = 4 };

/* The processes' meeting point: each round, every process's own shards in, everyone's out */
typedef struct Hub {
    pthread_barrier_t bar;
    int size;
    double losses[PRT_TRAIN_MAX_SHARDS], *grads;
    bool stop[MAX_K];
    int fail_at; /* > 0: the exchange fails at this round (a process lost) */
    int round;
} Hub;

typedef struct Member {
    Hub *hub;
    int rank;
    PrtTrainExchange ex;
    PrtModel m;
    double *theta;
    PrtTrainOptions o;
    const PrtTrajSet *train;
    PrtTrainStatus status;
    PrtTrainResult res;
    char err[512];
} Member;

static int share(void *ctx, int nshards, long nparams, const long *n, double *losses, double *grads, char *err,
                 size_t errlen) {
    Member *me = ctx;
    Hub *h = me->hub;
    int lo = nshards * me->rank / h->size, hi = nshards * (me->rank + 1) / h->size;
    pthread_barrier_wait(&h->bar); /* the last round's readers are done */
    if (me->rank == 0) h->round++;
    for (int k = lo; k < hi; k++) {
        h->losses[k] = losses[k];
        if (n[k]) memcpy(h->grads + (long)k * nparams, grads + (long)k * nparams, sizeof(double) * (size_t)nparams);
    }
    pthread_barrier_wait(&h->bar);
    if (h->fail_at && h->round >= h->fail_at) {
        snprintf(err, errlen, "process lost (round %d)", h->round);
        return -1;
    }
    memcpy(losses, h->losses, sizeof(double) * (size_t)nshards);
    memcpy(grads, h->grads, sizeof(double) * (size_t)nshards * (size_t)nparams);
    return 0;
}

static bool any_stop(void *ctx, bool stop) {
    Member *me = ctx;
    Hub *h = me->hub;
    pthread_barrier_wait(&h->bar);
    h->stop[me->rank] = stop;
    pthread_barrier_wait(&h->bar);
    bool any = false;
    for (int r = 0; r < h->size; r++) any |= h->stop[r];
    return any;
}

static void *member_run(void *arg) {
    Member *me = arg;
    me->status = prt_train(&me->m, me->theta, me->train, NULL, &me->o, &me->res, me->err, sizeof me->err);
    return NULL;
}

static const PrtMlp small = {.nlayers = 3, .size = {2, 24, 24, 1}, .act = PRT_ACT_TANH};

static PrtTrainOptions options(int shards, int threads) {
    return (PrtTrainOptions){.epochs = 6, .batch = 8, .lr = 3e-3, .weight_decay = 1e-4, .cosine = true, .seed = 7,
                             .checkpoint_every = 1000, .fingerprint = {{5}}, .shards = shards, .threads = threads};
}

/* One process computing every shard */
static double *alone(PrtSystem *ps, bool lagrangian, const PrtTrajSet *train, int shards, long *nparams) {
    PrtModel m;
    char err[512];
    CHECK(open_cartesian(&m, ps, lagrangian, &small, err, sizeof err) == 0, "%s", err);
    double *theta = malloc(sizeof(double) * (size_t)m.nparams);
    PrtTrainOptions o = options(shards, 1);
    PrtTrainResult r;
    CHECK(prt_train(&m, theta, train, NULL, &o, &r, err, sizeof err) == PRT_TRAIN_DONE, "%s", err);
    *nparams = m.nparams;
    prt_train_result_free(&r);
    prt_model_close(&m);
    return theta;
}

/* K processes of `threads` threads; returns how many ended with `want` (their thetas in out) */
static int together(PrtSystem *ps, bool lagrangian, const PrtTrajSet *train, int K, int shards, int threads, int fail_at,
                    int stop_rank, PrtTrainStatus want, double **out, char *why, size_t whylen) {
    Hub hub = {.size = K, .fail_at = fail_at};
    Member mem[MAX_K];
    pthread_t tid[MAX_K];
    pthread_barrier_init(&hub.bar, NULL, (unsigned)K);
    volatile sig_atomic_t stop_flag = 1;
    for (int r = 0; r < K; r++) {
        Member *me = &mem[r];
        memset(me, 0, sizeof *me);
        me->hub = &hub, me->rank = r, me->train = train;
        me->ex = (PrtTrainExchange){.rank = r, .size = K, .ctx = me, .share = share, .any_stop = any_stop};
        CHECK(open_cartesian(&me->m, ps, lagrangian, &small, me->err, sizeof me->err) == 0, "%s", me->err);
        me->theta = malloc(sizeof(double) * (size_t)me->m.nparams);
        me->o = options(shards, threads);
        me->o.exchange = &me->ex;
        if (r == stop_rank) me->o.stop = &stop_flag; /* (asked before the first epoch ends) */
        if (r == 0) hub.grads = calloc((size_t)shards * (size_t)me->m.nparams, sizeof(double));
    }
    for (int r = 0; r < K; r++) pthread_create(&tid[r], NULL, member_run, &mem[r]);
    int ok = 0;
    for (int r = 0; r < K; r++) {
        pthread_join(tid[r], NULL);
        ok += mem[r].status == want;
        if (mem[r].status != want) snprintf(why, whylen, "process %d: status %d: %s", r, mem[r].status, mem[r].err);
        else if (want != PRT_TRAIN_DONE) snprintf(why, whylen, "%s", mem[r].err);
        out[r] = mem[r].theta;
        if (stop_rank >= 0) CHECK(mem[r].res.epochs_done == 1, "process %d stopped after %d epochs, not 1", r, mem[r].res.epochs_done);
        prt_train_result_free(&mem[r].res);
        prt_model_close(&mem[r].m);
    }
    free(hub.grads);
    pthread_barrier_destroy(&hub.bar);
    return ok;
}

static void same_bits(PrtSystem *ps, bool lagrangian, const PrtTrajSet *train, int K, int shards, int threads) {
    long nparams;
    double *ref = alone(ps, lagrangian, train, shards, &nparams), *th[MAX_K];
    char why[600] = "";
    int ok = together(ps, lagrangian, train, K, shards, threads, 0, -1, PRT_TRAIN_DONE, th, why, sizeof why);
    CHECK(ok == K, "%d of %d processes finished: %s", ok, K, why);
    for (int r = 0; r < K; r++) {
        CHECK(!memcmp(th[r], ref, sizeof(double) * (size_t)nparams), "%s, %d processes x %d threads, %d shards: process "
              "%d's parameters differ from one process's", lagrangian ? "CLNN" : "CHNN", K, threads, shards, r);
        free(th[r]);
    }
    printf("  %s: %d processes x %d threads, %d shards: the parameters of one process, bit for bit\n",
           lagrangian ? "CLNN" : "CHNN", K, threads, shards);
    free(ref);
}

int main(void) {
    Loaded l;
    char err[512];
    if (!loaded_open(&l, "examples/pendulum1.phys", COMPILE_CHNN | COMPILE_CLNN, -1, stdout, err, sizeof err)) {
        CHECK(false, "%s", err);
        return 1;
    }
    PrtTrajSet full, train;
    CHECK(prt_trajset_generate(&l.c.ps, 12, 21, 0.03, 1e-9, 1e-11, 5, &full, err, sizeof err) == 0, "%s", err);
    PrtRng rng;
    prt_rng_seed(&rng, 3);
    prt_trajset_chunks(&full, 5, &rng, &train);
    same_bits(&l.c.ps, false, &train, 2, 4, 1);
    same_bits(&l.c.ps, false, &train, 2, 4, 2);
    same_bits(&l.c.ps, false, &train, 3, 4, 1); /* 4 shards over 3 processes: 1, 1, 2 */
    same_bits(&l.c.ps, true, &train, 2, 2, 1);
    double *th[MAX_K];
    char why[600] = "";
    int failed = together(&l.c.ps, false, &train, 2, 4, 1, 3, -1, PRT_TRAIN_FAILED, th, why, sizeof why);
    CHECK(failed == 2 && strstr(why, "process lost"), "a lost process: %d of 2 stopped as failed (%s)", failed, why);
    for (int r = 0; r < 2; r++) free(th[r]);
    int stopped = together(&l.c.ps, false, &train, 2, 4, 1, 0, 1, PRT_TRAIN_INTERRUPTED, th, why, sizeof why);
    CHECK(stopped == 2, "one process asked to stop: %d of 2 stopped (%s)", stopped, why);
    for (int r = 0; r < 2; r++) free(th[r]);
    prt_trajset_free(&full), prt_trajset_free(&train);
    loaded_close(&l);
    printf("test_train_exchange: %s (%d failures)\n", failures ? "FAIL" : "ok", failures);
    return failures != 0;
}
