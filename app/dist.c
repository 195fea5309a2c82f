/* dist.c — physc's processes over MPI (see dist.h). */
#include "dist.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef PHYSC_MPI
#include <mpi.h>
#endif

static int rank_ = 0, size_ = 1;
static bool on, alone;

int dist_rank(void) { return alone ? 0 : rank_; }
int dist_size(void) { return alone ? 1 : size_; }
void dist_set_alone(bool a) { alone = a; }

#ifdef PHYSC_MPI
/* Started by a launcher: Open MPI's mpirun, PMIx (srun), or MPICH's Hydra */
static bool launched(void) { return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK") || getenv("PMI_SIZE"); }

void dist_init(int *argc, char ***argv) {
    if (!launched()) return;
    int provided;
    MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided); /* (the training's threads make no MPI call) */
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    on = true;
}

void dist_finalize(void) {
    if (on) MPI_Finalize();
    on = false;
}

void dist_abort(const char *why) {
    fprintf(stderr, "physc: rank %d of %d: %s; ending every process\n", rank_, size_, why);
    fflush(stderr);
    if (on) MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}

/* Waits for req at most timeout_s: 0, or -1 with a message naming what was waited for */
static int wait_for(MPI_Request *req, int timeout_s, const char *what, char *err, size_t errlen) {
    double deadline = timeout_s > 0 ? MPI_Wtime() + timeout_s : INFINITY; /* (0: as long as the others work) */
    struct timespec nap = {0, 20000};
    for (int done = 0;;) {
        MPI_Test(req, &done, MPI_STATUS_IGNORE);
        if (done) return 0;
        if (MPI_Wtime() > deadline) {
            snprintf(err, errlen, "no answer from the other processes for %d s (%s): one stalled or was lost",
                     timeout_s, what);
            return -1;
        }
        nanosleep(&nap, NULL);
    }
}

int dist_bcast(void *buf, size_t bytes, int timeout_s, const char *what, char *err, size_t errlen) {
    if (dist_size() == 1) return 0;
    for (size_t at = 0; at < bytes;) { /* (MPI counts are ints) */
        size_t part = bytes - at < ((size_t)1 << 30) ? bytes - at : (size_t)1 << 30;
        MPI_Request req;
        MPI_Ibcast((char *)buf + at, (int)part, MPI_BYTE, 0, MPI_COMM_WORLD, &req);
        if (wait_for(&req, timeout_s, what, err, errlen) != 0) return -1;
        at += part;
    }
    return 0;
}

/* Each process's own shards [S r / K, S (r + 1) / K) to every process, in place */
static int share(void *ctx, int nshards, long nparams, const long *n, double *losses, double *grads, char *err,
                 size_t errlen) {
    int counts[64], displs[64], lcounts[64], ldispls[64];
    for (int r = 0; r < size_; r++) {
        int lo = nshards * r / size_, hi = nshards * (r + 1) / size_;
        lcounts[r] = hi - lo, ldispls[r] = lo;
        counts[r] = (hi - lo) * (int)nparams, displs[r] = lo * (int)nparams;
    }
    MPI_Request req[2];
    MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, losses, lcounts, ldispls, MPI_DOUBLE, MPI_COMM_WORLD, &req[0]);
    MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, grads, counts, displs, MPI_DOUBLE, MPI_COMM_WORLD, &req[1]);
    if (wait_for(&req[0], DIST_TIMEOUT_S, "the shards' losses", err, errlen) != 0 ||
        wait_for(&req[1], DIST_TIMEOUT_S, "the shards' gradients", err, errlen) != 0)
        return -1;
    return 0;
}

int dist_max_int(int *v, const char *what, char *err, size_t errlen) {
    if (size_ == 1) return 0;
    int mine = *v;
    MPI_Request req;
    MPI_Iallreduce(&mine, v, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &req);
    return wait_for(&req, 0, what, err, errlen);
}

int dist_min_sum(double *min, double *sum, const char *what, char *err, size_t errlen) {
    if (dist_size() == 1) return 0;
    double mine[2] = {*min, *sum};
    MPI_Request req[2];
    MPI_Iallreduce(&mine[0], min, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD, &req[0]);
    MPI_Iallreduce(&mine[1], sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &req[1]);
    return wait_for(&req[0], DIST_TIMEOUT_S, what, err, errlen) != 0 ? -1 : wait_for(&req[1], DIST_TIMEOUT_S, what, err, errlen);
}

static bool any_stop(void *ctx, bool stop) {
    int mine = stop, any = 0;
    char err[256];
    MPI_Request req;
    MPI_Iallreduce(&mine, &any, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD, &req);
    if (wait_for(&req, DIST_TIMEOUT_S, "the stop at an epoch's end", err, sizeof err) != 0) dist_abort(err);
    return any != 0;
}

const PrtTrainExchange *dist_exchange(void) {
    static PrtTrainExchange ex;
    if (dist_size() == 1) return NULL;
    if (size_ > 64) dist_abort("at most 64 processes train together (the shards are at most 16)");
    ex = (PrtTrainExchange){.rank = rank_, .size = size_, .share = share, .any_stop = any_stop};
    return &ex;
}
const char *dist_describe(char *buf, size_t len) {
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int n = 0;
    MPI_Get_library_version(lib, &n);
    lib[strcspn(lib, ",\n")] = 0;
    snprintf(buf, len, "%s (mpirun -np K physc run ... trains on K processes)", lib);
    return buf;
}
#else
const char *dist_describe(char *buf, size_t len) {
    snprintf(buf, len, "none (built without MPI: one process)");
    return buf;
}
void dist_init(int *argc, char ***argv) {}
void dist_finalize(void) {}
void dist_abort(const char *why) {
    fprintf(stderr, "physc: %s\n", why);
    exit(1);
}
int dist_bcast(void *buf, size_t bytes, int timeout_s, const char *what, char *err, size_t errlen) { return 0; }
int dist_max_int(int *v, const char *what, char *err, size_t errlen) { return 0; }
int dist_min_sum(double *min, double *sum, const char *what, char *err, size_t errlen) { return 0; }
const PrtTrainExchange *dist_exchange(void) { return NULL; }
#endif
