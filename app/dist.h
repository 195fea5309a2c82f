/* dist.h — physc as one of several processes under mpirun (or srun): which one it is, and
   what the processes exchange. Built with MPI when the machine has it (the Makefile finds
   mpicc); started without mpirun, or built without MPI, physc is the one process of one and
   every call here is a no-op. Every exchange waits at most DIST_TIMEOUT_S for the others,
   then ends the whole job (MPI_Abort) with a message: no collective blocks forever. */
#ifndef PHYSC_DIST_H
#define PHYSC_DIST_H
#include <stdbool.h>
#include <stddef.h>

#include "train/train.h"

/* How long a process waits for the others: in an exchange of equal work (the shards of a
   minibatch, the stop at an epoch's end), and for what rank 0 does alone before training
   (its folder, its data: a data set may take a while to make). A process that dies ends the
   job at once (mpirun sees it); these bound a process that stalls. */
enum { DIST_TIMEOUT_S = 300, DIST_SOLO_TIMEOUT_S = 3600 };

/* MPI_Init when started by mpirun/srun (before any thread is made) */
void dist_init(int *argc, char ***argv);
void dist_finalize(void);
int dist_rank(void);
int dist_size(void);
/* rank 0's bytes to every process, waiting at most timeout_s (0, or -1 with a message
   naming what was waited for) */
int dist_bcast(void *buf, size_t bytes, int timeout_s, const char *what, char *err, size_t errlen);
/* The largest of every process's *v, waiting as long as the others work (a sweep's runs may
   take hours; a process that dies ends the job through mpirun): 0, or -1 with a message */
int dist_max_int(int *v, const char *what, char *err, size_t errlen);
/* The smallest of every process's *min and the sum of their *sum, in place (0, or -1 with a
   message) */
int dist_min_sum(double *min, double *sum, const char *what, char *err, size_t errlen);
/* While on, this process is one process of one (dist_rank 0, dist_size 1): a run of a sweep's
   task farm trains alone */
void dist_set_alone(bool alone);
/* The training exchange for this process (NULL: one process) */
const PrtTrainExchange *dist_exchange(void);
/* "MPI: <library> (...)" or "MPI: none (...)", for physc --version */
const char *dist_describe(char *buf, size_t len);
/* Ends every process with status 1 after saying why (on this process's stderr) */
void dist_abort(const char *why) __attribute__((noreturn));

#endif
