/* input_file.h — every file physc reads (checkpoints, params, CSV data, a run's files) is
   opened here, so that what is not a regular file is refused at once with its name and
   kind: opening a FIFO for reading blocks until a writer comes (forever, for a user who
   named one by mistake), and a device such as /dev/zero or /dev/urandom never ends. */
#ifndef PRT_INPUT_FILE_H
#define PRT_INPUT_FILE_H
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

/* What a file of this mode is, in words ("a FIFO", "a directory", ...), or NULL for a
   regular file. */
const char *prt_file_kind(mode_t mode);

/* A descriptor open for reading on the regular file PATH (blocking reads), or -1 with
   "cannot read PATH: REASON" in err; `what` names the file in the message ("data file"),
   or NULL. */
int prt_open_input(const char *path, const char *what, char *err, size_t errlen);

/* The same as a stdio stream ("r" mode), or NULL with the message in err. */
FILE *prt_fopen_input(const char *path, const char *what, char *err, size_t errlen);

#endif
