/* checkpoint.c — writing and checking training checkpoints.

   Format, version 2. Integers and doubles are in the writing machine's byte order
   (little-endian on every machine physc targets; a file from a big-endian machine fails
   the header checksum and is refused); doubles are copied as bytes, so they round-trip bit for bit, NaN payloads too.

     offset  size
          0     8  magic "PHYSCKPT"
          8     4  u32 version (2)
         12     4  u32 narrays
         16     8  u64 size of the whole file in bytes
         24     8  u64 FNV-1a of bytes 0..23
         32    32  u64 fingerprint parts: system, data, model, source (PrtFingerprint)
         64     8  i64 epoch
         72     8  i64 step
         80    32  u64 rng[4]
        112     8  f64 rng_spare_normal
        120     8  u64 rng_has_spare (0 or 1)
        128        narrays times: u32 name length, name bytes (no NUL), i64 len, len f64
     size-8     8  u64 FNV-1a of bytes 0..size-9

   Version 1 had one u64 fingerprint at 32 (so everything after it 24 bytes earlier). It is
   still read (a params.bin of an older run), but not resumed: its fingerprint cannot say
   what changed, nor be compared with the parts.

   The first 32 bytes keep this layout in every version. Their own checksum tells a damaged
   size field (corrupted) from a short file (truncated), and is checked before the version
   so a flipped bit there is not reported as a file from another physc. */
#include "checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/atomic_file.h"
#include "core/input_file.h"

enum { VERSION = 2, HEAD_BYTES = 32 };

/* Where the header's fields after the fingerprint start, and where the arrays start. */
static size_t fields_at(uint32_t version) { return version == 1 ? 40 : 32 + 8 * PRT_FP_PARTS; }
static size_t arrays_at(uint32_t version) { return fields_at(version) + 64; }
static const char MAGIC[8] = {'P', 'H', 'Y', 'S', 'C', 'K', 'P', 'T'};

uint64_t prt_fnv1a(uint64_t h, const void *data, size_t len) {
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

/* ---- writing ---- */

/* A writer that checksums what passes through it; stdio buffers, and its first error
   sticks in the stream, which prt_atomic_commit checks. */
typedef struct Out {
    FILE *f;
    uint64_t sum; /* FNV-1a of every byte put so far */
} Out;

static void put(Out *o, const void *data, size_t len) {
    o->sum = prt_fnv1a(o->sum, data, len);
    fwrite(data, 1, len, o->f);
}
static void put_u32(Out *o, uint32_t v) { put(o, &v, 4); }
static void put_u64(Out *o, uint64_t v) { put(o, &v, 8); }

int prt_ckpt_write(const char *path, const PrtCkptHeader *h, const PrtCkptArray *arrays, int narrays,
                   char *err, size_t errlen) {
    if (narrays < 0) return prt_fail(err, errlen, "cannot write %s: %d arrays", path, narrays);
    uint64_t size = arrays_at(VERSION) + 8;
    for (int i = 0; i < narrays; i++) {
        const PrtCkptArray *a = &arrays[i];
        if (!a->name || a->len < 0 || (a->len && !a->data) || strlen(a->name) > UINT32_MAX)
            return prt_fail(err, errlen, "cannot write %s: array %d is malformed", path, i);
        size += 4 + strlen(a->name) + 8 + 8 * (uint64_t)a->len;
    }
    PrtAtomicFile af;
    if (prt_atomic_open(&af, path, err, errlen) != 0) return -1;
    Out out = {.f = af.f, .sum = PRT_FNV_INIT}, *o = &out;
    put(o, MAGIC, 8);
    put_u32(o, VERSION);
    put_u32(o, (uint32_t)narrays);
    put_u64(o, size);
    put_u64(o, o->sum);   /* the checksum of the 24 bytes so far */
    for (int i = 0; i < PRT_FP_PARTS; i++) put_u64(o, h->fp.part[i]);
    put_u64(o, (uint64_t)(int64_t)h->epoch);
    put_u64(o, (uint64_t)(int64_t)h->step);
    for (int i = 0; i < 4; i++) put_u64(o, h->rng[i]);
    put(o, &h->rng_spare_normal, 8);
    put_u64(o, h->rng_has_spare != 0);
    for (int i = 0; i < narrays; i++) {
        const PrtCkptArray *a = &arrays[i];
        size_t k = strlen(a->name);
        put_u32(o, (uint32_t)k);
        put(o, a->name, k);
        put_u64(o, (uint64_t)(int64_t)a->len);
        if (a->len) put(o, a->data, 8 * (size_t)a->len);
    }
    put_u64(o, o->sum);
    return prt_atomic_commit(&af, err, errlen);
}

/* ---- reading ---- */

static uint32_t get_u32(const unsigned char *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}
static uint64_t get_u64(const unsigned char *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

/* The data of array name in a list already checked to be well formed, or NULL. */
static const unsigned char *find(const unsigned char *p, uint32_t count, const char *name, int64_t *len) {
    size_t want = strlen(name);
    for (uint32_t i = 0; i < count; i++) {
        uint32_t k = get_u32(p);
        *len = (int64_t)get_u64(p + 4 + k);
        if (k == want && memcmp(p + 4, name, k) == 0) return p + 4 + k + 8;
        p += 4 + k + 8 + 8 * (size_t)*len;
    }
    return NULL;
}

int prt_ckpt_check_fingerprint(const char *path, int version, const PrtFingerprint *was, const PrtFingerprint *now,
                               char *err, size_t errlen) {
    if (version == 1)
        return prt_fail(err, errlen, "%s was written by an older physc (checkpoint version 1), whose fingerprint cannot say "
                    "whether the run changed; it cannot be resumed", path);
    static const char *const what[] = {
        [PRT_FP_SYSTEM] = "the system (its bodies, constraints, potentials or constants, or --kernels: the loop "
                          "form's kernels are others)",
        [PRT_FP_DATA] = "the data (the data or init block, or --seed)",
        [PRT_FP_MODEL] = "the model or its training (the model, its learned terms, the train block, --precision or "
                         "--threads)",
    };
    char changed[512] = "";
    for (int i = 0; i < PRT_FP_SOURCE; i++)
        if (was->part[i] != now->part[i])
            snprintf(changed + strlen(changed), sizeof changed - strlen(changed), "%s%s", changed[0] ? "; " : "", what[i]);
    if (changed[0]) return prt_fail(err, errlen, "%s was written by another run: changed since: %s", path, changed);
    return 0;
}

static int parse(const char *path, const unsigned char *b, size_t n, const PrtFingerprint *want_fp, PrtCkptHeader *h,
                 PrtCkptArray *arrays, int narrays, char *err, size_t errlen) {
    if (memcmp(b, MAGIC, n < 8 ? n : 8) != 0) return prt_fail(err, errlen, "%s is not a physc checkpoint", path);
    if (n < HEAD_BYTES)
        return prt_fail(err, errlen, "%s is truncated: it ends after %zu of at least %d bytes", path, n, HEAD_BYTES);
    if (get_u64(b + 24) != prt_fnv1a(PRT_FNV_INIT, b, 24))
        return prt_fail(err, errlen, "%s is corrupted (its header fails its checksum)", path);
    uint32_t version = get_u32(b + 8);
    if (version != VERSION && version != 1)
        return prt_fail(err, errlen, "%s is a version %u checkpoint; this physc reads versions 1 and %d", path, version,
                    VERSION);
    uint64_t size = get_u64(b + 16);
    if (n < size)
        return prt_fail(err, errlen, "%s is truncated: it ends after %zu of %llu bytes", path, n,
                    (unsigned long long)size);
    if (n > size)
        return prt_fail(err, errlen, "%s is corrupted: it has %zu bytes, not %llu", path, n, (unsigned long long)size);
    size_t fields = fields_at(version), start = arrays_at(version);
    if (n < start + 8 || get_u64(b + n - 8) != prt_fnv1a(PRT_FNV_INIT, b, n - 8))
        return prt_fail(err, errlen, "%s is corrupted (checksum mismatch)", path);
    PrtFingerprint fp = {{0}};
    if (version != 1)
        for (int i = 0; i < PRT_FP_PARTS; i++) fp.part[i] = get_u64(b + 32 + 8 * i);
    if (want_fp && prt_ckpt_check_fingerprint(path, (int)version, &fp, want_fp, err, errlen) != 0) return -1;
    /* The checksum matched, so a bad layout below is a writer's bug, but still never read
       past the end. */
    uint32_t count = get_u32(b + 12);
    const unsigned char *p = b + start, *end = b + n - 8;
    for (uint32_t i = 0; i < count && p; i++) {
        size_t left = (size_t)(end - p);
        if (left < 12 || left - 12 < get_u32(p)) {
            p = NULL;
            break;
        }
        p += 4 + get_u32(p);
        uint64_t len = get_u64(p);   /* a negative i64 is huge here, and refused */
        p += 8;
        p = len > (size_t)(end - p) / 8 ? NULL : p + 8 * len;
    }
    if (p != end) return prt_fail(err, errlen, "%s is corrupted (its array list is malformed)", path);
    /* All checks before any copy, so a refused file leaves the caller's state as it was. */
    for (int i = 0; i < narrays; i++) {
        int64_t len;
        if (!find(b + start, count, arrays[i].name, &len))
            return prt_fail(err, errlen, "%s has no array \"%s\"", path, arrays[i].name);
        if (len != arrays[i].len && arrays[i].len >= 0)
            return prt_fail(err, errlen, "%s holds array \"%s\" with %lld values; this run expects %ld", path,
                        arrays[i].name, (long long)len, arrays[i].len);
    }
    for (int i = 0; i < narrays; i++) {
        int64_t len;
        const unsigned char *d = find(b + start, count, arrays[i].name, &len);
        int64_t room = arrays[i].len < 0 ? -arrays[i].len : arrays[i].len, take = len < room ? len : room;
        if (take > 0) memcpy(arrays[i].data, d, 8 * (size_t)take);
        arrays[i].len = (long)len;
    }
    h->fp = fp;
    h->version = (int)version;
    h->epoch = (long)(int64_t)get_u64(b + fields);
    h->step = (long)(int64_t)get_u64(b + fields + 8);
    for (int i = 0; i < 4; i++) h->rng[i] = get_u64(b + fields + 16 + 8 * i);
    memcpy(&h->rng_spare_normal, b + fields + 48, 8);
    h->rng_has_spare = get_u64(b + fields + 56) != 0;
    return 0;
}

/* want_fp NULL: any fingerprint */
static int read_file(const char *path, const PrtFingerprint *want_fp, PrtCkptHeader *h, PrtCkptArray *arrays, int narrays,
                     char *err, size_t errlen) {
    int fd = prt_open_input(path, NULL, err, errlen);
    if (fd < 0) return -1;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return prt_fail(err, errlen, "cannot read %s: %s", path, strerror(e));
    }
    size_t n = (size_t)st.st_size, got = 0;
    unsigned char *b = malloc(n ? n : 1);
    int e = b ? 0 : ENOMEM;
    while (!e && got < n) {
        ssize_t k = read(fd, b + got, n - got);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) e = errno;
        else if (k == 0) break;   /* shrank while we read: judged on what is there */
        else got += (size_t)k;
    }
    close(fd);
    int rc = e ? prt_fail(err, errlen, "cannot read %s: %s", path, strerror(e))
               : parse(path, b, got, want_fp, h, arrays, narrays, err, errlen);
    free(b);
    return rc;
}

int prt_ckpt_read(const char *path, const PrtFingerprint *expected, PrtCkptHeader *h, PrtCkptArray *arrays,
                  int narrays, char *err, size_t errlen) {
    return read_file(path, expected, h, arrays, narrays, err, errlen);
}

int prt_ckpt_read_any(const char *path, PrtCkptHeader *h, PrtCkptArray *arrays, int narrays, char *err, size_t errlen) {
    return read_file(path, NULL, h, arrays, narrays, err, errlen);
}
