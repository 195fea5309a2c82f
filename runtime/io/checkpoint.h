/* checkpoint.h — training checkpoints: a header and named arrays of doubles, written
   atomically (atomic_file.h: temporary file, fsync, rename, fsync of the directory) and checked on read
   (magic, version, sizes, a checksum over everything) so a torn or corrupted file is refused. */
#ifndef PRT_CHECKPOINT_H
#define PRT_CHECKPOINT_H
#include <stddef.h>
#include <stdint.h>

/* What a run depends on, hashed by part, so that a refused resume can say what changed:
   the system's compiled dynamics, the data (settings, seed, sampling), the model and its
   training settings, and the program's text (which alone may change: comments, layout). */
enum { PRT_FP_SYSTEM, PRT_FP_DATA, PRT_FP_MODEL, PRT_FP_SOURCE, PRT_FP_PARTS };
typedef struct PrtFingerprint {
    uint64_t part[PRT_FP_PARTS];
} PrtFingerprint;

typedef struct PrtCkptHeader {
    PrtFingerprint fp;      /* a mismatch of any part but the source is refused */
    int version;            /* of the file read (1: one fingerprint for everything, not kept) */
    long epoch;             /* epochs completed */
    long step;              /* optimizer steps taken */
    uint64_t rng[4];        /* the training RNG state (xoshiro256**) */
    /* PrtRng's cached second normal (polar Box-Muller makes two at a time): without it a
       run resumed between the two draws would diverge from the uninterrupted one. */
    double rng_spare_normal;
    int rng_has_spare;
} PrtCkptHeader;

typedef struct PrtCkptArray {
    const char *name;       /* e.g. "theta", "adam_m", "adam_v", "loss_history" */
    double *data;
    /* Reading, len < 0: the file's array may have any length; data has room for -len values,
       of which the first min(-len, its length) are read, and len is set to its length (a
       run extended to more epochs reads the shorter loss history of its checkpoint). */
    long len;
} PrtCkptArray;

/* Writes path atomically: a crash or a full disk leaves the old checkpoint (or none), never
   a half-written one. Not for a signal handler (it allocates and calls snprintf): the
   Ctrl-C handler sets a flag and the training loop writes at the end of the step. Returns 0,
   or -1 with a message in err (e.g. "cannot write runs/x/checkpoint.bin: No space left on
   device"). */
int prt_ckpt_write(const char *path, const PrtCkptHeader *h, const PrtCkptArray *arrays, int narrays,
                   char *err, size_t errlen);

/* Reads into the caller's arrays: each must be present in the file with exactly the given
   name and len (data is filled); the file may hold others. Returns 0, or -1 with a clear
   message: missing file, not a checkpoint (bad magic), other version, truncated ("ends after
   N of M bytes"), checksum mismatch ("is corrupted"), an array missing or of another length,
   a fingerprint whose system, data or model part differs from expected's (the message says
   which changed), a version 1 file (its one fingerprint cannot say). On failure *h and the
   arrays are left untouched. */
int prt_ckpt_read(const char *path, const PrtFingerprint *expected, PrtCkptHeader *h, PrtCkptArray *arrays,
                  int narrays, char *err, size_t errlen);

/* 0 if a checkpoint written with fingerprint `was` (header version `version`) may be
   resumed by a run of fingerprint `now`; else -1 and what changed in err. */
int prt_ckpt_check_fingerprint(const char *path, int version, const PrtFingerprint *was, const PrtFingerprint *now,
                               char *err, size_t errlen);

/* The same without the fingerprint check (version 1 files too): a run's params.bin read by
   another command, which checks the arrays' names and lengths only. */
int prt_ckpt_read_any(const char *path, PrtCkptHeader *h, PrtCkptArray *arrays, int narrays, char *err, size_t errlen);

/* FNV-1a 64 over bytes, chained from h (start with PRT_FNV_INIT); the caller fingerprints
   its inputs with it. */
#define PRT_FNV_INIT 0xcbf29ce484222325ull
uint64_t prt_fnv1a(uint64_t h, const void *data, size_t len);

#endif
