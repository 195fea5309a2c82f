/* jit_cache.h — compiled kernels kept on disk, so that compiling the same system again
   costs a file read instead of LLVM's optimization and code generation.

   An entry is keyed by a 128-bit hash of everything the object code depends on: every
   kernel's instructions, constants (bit for bit), inputs and outputs, in order; the
   optimization level, the host CPU and its features, LLVM's version; and the physc
   executable itself (its size, time and inode), so that a rebuilt physc never reads
   objects an older code generator made. Changing one constant of a system changes its key.

   Where: $PHYSC_CACHE_DIR, else $XDG_CACHE_HOME/physc, else $HOME/.cache/physc (created on
   first use). Entries are written to a unique temporary and renamed into place, so
   concurrent runs never see half an entry; an entry that is short, garbled or of another
   format reads as a miss (and is rewritten). The cache holds at most 256 MB
   ($PHYSC_CACHE_MAX_MB): the entries used longest ago go first. Failing to read or write
   the cache is never an error: the kernels are compiled as if there were none. */
#ifndef PHYSC_JIT_CACHE_H
#define PHYSC_JIT_CACHE_H
#include <stdbool.h>
#include <stddef.h>

#include "ir.h"

enum { JIT_CACHE_KEY_LEN = 32, JIT_CACHE_MAX_BLOBS = 16 };

/* One object file of an entry. */
typedef struct JitBlob {
    void *data;
    size_t len;
} JitBlob;

/* Turns the cache off for this process (physc --no-cache) or on. */
void jit_cache_set_enabled(bool on);
bool jit_cache_enabled(void);

/* The entry key (hex, NUL-terminated) of the kernels compiled under config (a string that
   names the optimization level, target and LLVM version). */
void jit_cache_key(IrFn *const *fns, int nfns, const char *config, char key[JIT_CACHE_KEY_LEN + 1]);

/* The entry's objects into blobs (each data malloc'd, the caller frees): their count, or
   -1 for a miss. */
int jit_cache_load(const char *key, JitBlob *blobs, int max);

/* Writes an entry (silently nothing if the cache is off or cannot be written). */
void jit_cache_store(const char *key, const JitBlob *blobs, int n);

#endif
