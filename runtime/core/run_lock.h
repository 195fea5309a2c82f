/* run_lock.h — one process at a time writes a run's folder.

   Two `physc run` (or compare jobs) started into one folder both trained and both wrote,
   the later one's files over the earlier one's. The folder's lock is an advisory flock(2)
   on DIR/run.lock, which the kernel releases when the holder exits however it dies (no
   stale lock to clean up). The file also says who holds it, or last held it: its pid and
   what it runs ("model chnn"), so that a refusal can name the holder and a later command
   can tell which model's run the folder holds. */
#ifndef PRT_RUN_LOCK_H
#define PRT_RUN_LOCK_H
#include <stdbool.h>
#include <stddef.h>

#define PRT_RUN_LOCK_FILE "run.lock"

typedef struct PrtRunLock {
    int fd; /* -1: not held */
} PrtRunLock;

/* Takes DIR's lock (DIR exists). 0, or -1 with why in err: "DIR is in use by another physc
   (pid N, model chnn) ..." or the OS's reason. What the last holder ran is put in was (""
   if nothing), before this process records itself (prt_run_lock_record). */
int prt_run_lock(PrtRunLock *l, const char *dir, char *was, size_t waslen, char *err, size_t errlen);

/* Takes DIR's lock shared with other processes that take it shared (the processes of one
   sweep, which each lock their own runs' folders), not with one that takes it alone (a run
   writing its files there): 0, or -1 with why, as prt_run_lock. */
int prt_run_lock_shared(PrtRunLock *l, const char *dir, char *err, size_t errlen);

/* Records this process and `what` ("model chnn") in the held lock's file, for the refusals
   of others and for later commands: once the folder is this process's to write. */
void prt_run_lock_record(PrtRunLock *l, const char *what);

/* Releases it (the file stays, naming its last holder); nothing if not held. */
void prt_run_unlock(PrtRunLock *l);

#endif
