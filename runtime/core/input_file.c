/* input_file.c — inputs that are regular files, or a clear refusal (see input_file.h). */
#include "input_file.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atomic_file.h"

const char *prt_file_kind(mode_t m) {
    return S_ISREG(m)    ? NULL
           : S_ISDIR(m)  ? "a directory"
           : S_ISFIFO(m) ? "a FIFO (named pipe)"
           : S_ISCHR(m)  ? "a character device"
           : S_ISBLK(m)  ? "a block device"
           : S_ISSOCK(m) ? "a socket"
                         : "a special file";
}

int prt_open_input(const char *path, const char *what, char *err, size_t errlen) {
    const char *sep = what ? " " : "";
    if (!what) what = "";
    /* O_NONBLOCK: the open of a FIFO with no writer returns at once (and is refused below) */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return prt_fail(err, errlen, "cannot read %s%s%s: %s", what, sep, path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return prt_fail(err, errlen, "cannot read %s%s%s: %s", what, sep, path, strerror(e));
    }
    const char *kind = prt_file_kind(st.st_mode);
    if (kind) {
        close(fd);
        return prt_fail(err, errlen, "cannot read %s%s%s: it is %s, not a regular file", what, sep, path, kind);
    }
    int flags = fcntl(fd, F_GETFL);
    if (flags >= 0) fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    return fd;
}

FILE *prt_fopen_input(const char *path, const char *what, char *err, size_t errlen) {
    int fd = prt_open_input(path, what, err, errlen);
    if (fd < 0) return NULL;
    FILE *f = fdopen(fd, "r");
    if (!f) {
        prt_fail(err, errlen, "cannot read %s: %s", path, strerror(errno));
        close(fd);
    }
    return f;
}
