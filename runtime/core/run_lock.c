/* run_lock.c — a run folder's advisory lock (see run_lock.h). */
#include "run_lock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atomic_file.h"

static char *lock_path(const char *dir) {
    size_t len = strlen(dir) + sizeof PRT_RUN_LOCK_FILE + 1;
    char *p = malloc(len);
    if (p) snprintf(p, len, "%s/%s", dir, PRT_RUN_LOCK_FILE);
    return p;
}

/* The lock file's text: "pid N\nWHAT\n", read whole (it is short) */
static bool read_holder(int fd, long *pid, char *what, size_t len) {
    char text[512];
    ssize_t n = pread(fd, text, sizeof text - 1, 0);
    if (n <= 0) return false;
    text[n] = 0;
    char *nl = strchr(text, '\n');
    if (strncmp(text, "pid ", 4) != 0 || !nl) return false;
    *pid = strtol(text + 4, NULL, 10);
    char *end = strchr(nl + 1, '\n');
    if (end) *end = 0;
    snprintf(what, len, "%s", nl + 1);
    return true;
}

/* flock's op (LOCK_EX or LOCK_SH) on DIR/run.lock */
static int lock_as(PrtRunLock *l, const char *dir, int op, char *was, size_t waslen, char *err, size_t errlen) {
    l->fd = -1;
    if (waslen) was[0] = 0;
    char *path = lock_path(dir);
    if (!path) return prt_fail(err, errlen, "cannot lock %s: out of memory", dir);
    /* O_NOFOLLOW, and a regular file only: the lock file is rewritten, and a link planted in
       its place must not make physc truncate what it leads to */
    int fd = open(path, O_RDWR | O_CREAT | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC, 0644);
    int rc = 0;
    long pid = 0;
    struct stat st;
    if (fd < 0)
        rc = prt_fail(err, errlen, "cannot lock %s: %s", path,
                      errno == ELOOP ? "it is a symbolic link, not physc's lock file (remove it)" : strerror(errno));
    else if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        rc = prt_fail(err, errlen, "cannot lock %s: it is not a regular file (remove it)", path);
        close(fd);
    } else if (flock(fd, op | LOCK_NB) == 0) {
        read_holder(fd, &pid, was, waslen);
        l->fd = fd;
    } else {
        char holder[256] = "";
        if (errno == EWOULDBLOCK && read_holder(fd, &pid, holder, sizeof holder))
            rc = prt_fail(err, errlen, "%s is in use by another physc (pid %ld, %s), which writes its run there; "
                          "wait for it, stop it, or write to another folder", dir, pid, holder);
        else if (errno == EWOULDBLOCK)
            rc = prt_fail(err, errlen, "%s is in use by another physc, which writes its run there; wait for it, stop it, "
                          "or write to another folder", dir);
        else rc = prt_fail(err, errlen, "cannot lock %s: %s", path, strerror(errno));
        close(fd);
    }
    free(path);
    return rc;
}

int prt_run_lock(PrtRunLock *l, const char *dir, char *was, size_t waslen, char *err, size_t errlen) {
    return lock_as(l, dir, LOCK_EX, was, waslen, err, errlen);
}

int prt_run_lock_shared(PrtRunLock *l, const char *dir, char *err, size_t errlen) {
    return lock_as(l, dir, LOCK_SH, NULL, 0, err, errlen);
}

void prt_run_lock_record(PrtRunLock *l, const char *what) {
    if (l->fd < 0) return;
    char text[512];
    int n = snprintf(text, sizeof text, "pid %ld\n%s\n", (long)getpid(), what);
    /* (a failure costs only the names in later messages: the lock itself is held) */
    if (ftruncate(l->fd, 0) != 0 || pwrite(l->fd, text, (size_t)n, 0) != n) return;
}

void prt_run_unlock(PrtRunLock *l) {
    if (l->fd >= 0) close(l->fd); /* (closing the last descriptor releases the flock) */
    l->fd = -1;
}
