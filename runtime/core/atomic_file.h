/* atomic_file.h — every output file physc writes (CSV, SVG, JSON, checkpoints, emitted C)
   goes through here, so that a full disk, a crash or a kill never leaves half a file, and a
   failure says why (the OS's reason).

   What PATH may be:
     - a regular file, or a name not yet taken: written to PATH.tmp beside it, flushed,
       fsync'd, then renamed over PATH (and the folder fsync'd): PATH holds the old
       contents or the new ones, never a mix; on failure the temporary is removed and PATH
       is left as it was. An existing file keeps its permission bits.
     - a symbolic link: followed; the file it leads to is replaced as above, the link stays.
     - a character device (/dev/null, /dev/stdout, a terminal) or a FIFO: written through
       (they are streams, and replacing them would destroy them): checked, not atomic. A
       FIFO that no process opens for reading within 5 s is refused, not waited on forever.
     - "-": standard output, likewise.
   A directory, a block device, a socket, or a link to nothing is refused. */
#ifndef PRT_ATOMIC_FILE_H
#define PRT_ATOMIC_FILE_H
#include <stddef.h>
#include <stdio.h>

typedef struct PrtAtomicFile {
    FILE *f;            /* write here; write errors are collected by prt_atomic_commit */
    const char *path;   /* as given, for messages */
    char *target;       /* the file replaced at commit (links resolved), or NULL when writing through */
    char *tmp;          /* target.tmp, or NULL */
} PrtAtomicFile;

/* 0, or -1 with "cannot write PATH: REASON" in err (nothing is left open). */
int prt_atomic_open(PrtAtomicFile *a, const char *path, char *err, size_t errlen);

/* Flushes, syncs, closes and renames into place. 0, or -1 with "cannot write PATH: REASON"
   (e.g. "No space left on device") in err, the temporary removed. Closes a->f either way. */
int prt_atomic_commit(PrtAtomicFile *a, char *err, size_t errlen);

/* Gives up: closes a->f and removes the temporary; PATH is left as it was. */
void prt_atomic_abort(PrtAtomicFile *a);

/* Whether PATH could be written now (as prt_atomic_open would, the temporary made and
   removed; a stream only checked for permission, not opened): for a command that computes
   long before it writes, so that a bad output path fails first. 0, or -1 with why. */
int prt_atomic_probe(const char *path, char *err, size_t errlen);

/* Formats a message into err (if any room) and returns -1: the error path of the file
   writers and readers (here and checkpoint.c). */
__attribute__((format(printf, 3, 4))) int prt_fail(char *err, size_t errlen, const char *fmt, ...);

#endif
