/* atomic_file.c — output files written whole or not at all (see atomic_file.h). */
#include "atomic_file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "alloc.h"

int prt_fail(char *err, size_t errlen, const char *fmt, ...) {
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static void release(PrtAtomicFile *a) {
    free(a->target), free(a->tmp);
    a->f = NULL, a->target = a->tmp = NULL;
}

static char *concat(const char *a, const char *b) {
    size_t na = strlen(a), nb = strlen(b);
    char *s = prt_xalloc(na + nb + 1, 1, "a path");
    memcpy(s, a, na);
    memcpy(s + na, b, nb + 1);
    return s;
}

static const char *kind_of(mode_t m) {
    return S_ISDIR(m) ? "a directory" : S_ISBLK(m) ? "a block device" : S_ISSOCK(m) ? "a socket" : "not a regular file";
}

/* A FIFO is written through once a process reads it. A plain open would wait for that reader
   forever; this one waits FIFO_WAIT_MS (a reader started just before or after physc), then
   says that nothing reads it. */
enum { FIFO_WAIT_MS = 5000, FIFO_POLL_MS = 10 };
static int open_fifo(PrtAtomicFile *a, const char *path, char *err, size_t errlen) {
    int fd = -1;
    for (int waited = 0; fd < 0; waited += FIFO_POLL_MS) {
        fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
        if (fd >= 0) break;
        if (errno != ENXIO) return prt_fail(err, errlen, "cannot write %s: %s", path, strerror(errno));
        if (waited >= FIFO_WAIT_MS)
            return prt_fail(err, errlen, "cannot write %s: it is a FIFO that no process reads (waited %d s)", path,
                            FIFO_WAIT_MS / 1000);
        struct timespec pause = {0, FIFO_POLL_MS * 1000000L};
        nanosleep(&pause, NULL);
    }
    int flags = fcntl(fd, F_GETFL);
    if (flags >= 0) fcntl(fd, F_SETFL, flags & ~O_NONBLOCK); /* blocking writes from here */
    if (!(a->f = fdopen(fd, "w"))) {
        int e = errno;
        close(fd);
        return prt_fail(err, errlen, "cannot write %s: %s", path, strerror(e));
    }
    return 0;
}

int prt_atomic_open(PrtAtomicFile *a, const char *path, char *err, size_t errlen) {
    memset(a, 0, sizeof *a);
    a->path = path;
    if (!strcmp(path, "-")) {
        a->f = stdout;
        return 0;
    }
    struct stat lst, st;
    bool exists = lstat(path, &lst) == 0;
    if (!exists && errno != ENOENT) return prt_fail(err, errlen, "cannot write %s: %s", path, strerror(errno));
    if (exists && stat(path, &st) != 0) /* a link to nothing, or a loop of links */
        return prt_fail(err, errlen, "cannot write %s: it is a symbolic link to %s", path,
                    errno == ENOENT ? "a file that does not exist" : strerror(errno));
    if (exists && S_ISFIFO(st.st_mode)) return open_fifo(a, path, err, errlen);
    if (exists && S_ISCHR(st.st_mode)) { /* a stream: written through */
        a->f = fopen(path, "w");
        if (!a->f) return prt_fail(err, errlen, "cannot write %s: %s", path, strerror(errno));
        return 0;
    }
    if (exists && !S_ISREG(st.st_mode))
        return prt_fail(err, errlen, "cannot write %s: it is %s (physc writes regular files, character devices and FIFOs)",
                    path, kind_of(st.st_mode));
    if (exists && S_ISLNK(lst.st_mode)) { /* replace the file the link leads to, not the link */
        a->target = realpath(path, NULL);
        if (!a->target) return prt_fail(err, errlen, "cannot write %s: %s", path, strerror(errno));
    } else {
        a->target = concat(path, "");
    }
    a->tmp = concat(a->target, ".tmp");
    /* a stale temporary (a crash) is ours to remove; O_EXCL then never writes through a link or FIFO placed there */
    if (unlink(a->tmp) != 0 && errno != ENOENT && errno != EISDIR && errno != EPERM) {
        int e = errno;
        release(a);
        return prt_fail(err, errlen, "cannot write %s: %s", path, strerror(e));
    }
    int fd = open(a->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0 && exists && fchmod(fd, st.st_mode & 07777) != 0) { /* keep the replaced file's permissions */
        close(fd);
        unlink(a->tmp);
        fd = -1;
    }
    if (fd < 0 || !(a->f = fdopen(fd, "w"))) {
        int e = errno;
        if (fd >= 0) close(fd), unlink(a->tmp);
        prt_fail(err, errlen, "cannot write %s: %s%s%s", path, e == EEXIST ? "cannot create " : "", e == EEXIST ? a->tmp : "",
             e == EEXIST ? " (something is in the way)" : strerror(e));
        release(a);
        return -1;
    }
    return 0;
}

int prt_atomic_probe(const char *path, char *err, size_t errlen) {
    struct stat st;
    if (!strcmp(path, "-")) return 0;
    if (stat(path, &st) == 0 && (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))) /* (opening a FIFO waits for a reader) */
        return access(path, W_OK) == 0 ? 0 : prt_fail(err, errlen, "cannot write %s: %s", path, strerror(errno));
    PrtAtomicFile a;
    if (prt_atomic_open(&a, path, err, errlen) != 0) return -1;
    prt_atomic_abort(&a);
    return 0;
}

/* The rename is only durable once the directory entry is: fsync the directory. Filesystems
   that cannot sync a directory say EINVAL; like PostgreSQL, accept that. */
static int sync_dir(const char *path) {
    char dir[PATH_MAX];
    const char *slash = strrchr(path, '/');
    if (!slash) {
        strcpy(dir, ".");
    } else {
        size_t n = slash == path ? 1 : (size_t)(slash - path); /* "/x" lives in "/" */
        if (n >= sizeof dir) return ENAMETOOLONG;
        memcpy(dir, path, n);
        dir[n] = 0;
    }
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return errno;
    int e = fsync(fd) == 0 || errno == EINVAL ? 0 : errno;
    close(fd);
    return e;
}

int prt_atomic_commit(PrtAtomicFile *a, char *err, size_t errlen) {
    /* a write error shows up at the flush (stdio retries what is buffered) or stays in the
       stream's error flag; a full disk over NFS may only show at close */
    int e = fflush(a->f) != 0 ? errno : ferror(a->f) ? EIO : 0;
    if (!e && a->tmp && fsync(fileno(a->f)) != 0) e = errno;
    if (a->f == stdout) clearerr(stdout);
    else if (fclose(a->f) != 0 && !e) e = errno;
    if (!e && a->tmp && rename(a->tmp, a->target) != 0) e = errno;
    if (e && a->tmp) unlink(a->tmp);
    if (!e && a->tmp && (e = sync_dir(a->target)) != 0) {
        prt_fail(err, errlen, "cannot write %s: syncing its directory: %s", a->path, strerror(e));
        release(a);
        return -1;
    }
    if (e) prt_fail(err, errlen, "cannot write %s: %s", a->path, strerror(e));
    release(a);
    return e ? -1 : 0;
}

void prt_atomic_abort(PrtAtomicFile *a) {
    if (a->f && a->f != stdout) fclose(a->f);
    if (a->tmp) unlink(a->tmp);
    release(a);
}
