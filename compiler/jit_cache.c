/* jit_cache.c — compiled kernels on disk (jit_cache.h). An entry file <key>.jit holds:
   the magic "PHYSCJIT", the format version and the object count (u32 each), the key (32
   hex digits), each object's length (u64), the objects, and a 64-bit checksum of them. */
#include "jit_cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum { FORMAT_VERSION = 1 };
/* the cache's bound (MB, $PHYSC_CACHE_MAX_MB overrides it): past it, the entries used
   longest ago go (a hit refreshes an entry's time) */
static const double default_max_mb = 256;
static const char magic[8] = {'P', 'H', 'Y', 'S', 'C', 'J', 'I', 'T'};
/* an entry larger than this is not ours (the largest systems compile to a few MB) */
static const size_t max_entry = (size_t)1 << 30;

static bool enabled = true;

void jit_cache_set_enabled(bool on) { enabled = on; }
bool jit_cache_enabled(void) { return enabled; }

/* ---- the key: MurmurHash3's x64 128-bit mixing over 64-bit words ---- */

typedef struct Hash {
    uint64_t h1, h2, n;
} Hash;

static uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

static void mix(Hash *s, uint64_t k1, uint64_t k2) {
    const uint64_t c1 = 0x87c37b91114253d5ULL, c2 = 0x4cf5ad432745937fULL;
    k1 *= c1, k1 = rotl(k1, 31), k1 *= c2, s->h1 ^= k1;
    s->h1 = rotl(s->h1, 27), s->h1 += s->h2, s->h1 = s->h1 * 5 + 0x52dce729;
    k2 *= c2, k2 = rotl(k2, 33), k2 *= c1, s->h2 ^= k2;
    s->h2 = rotl(s->h2, 31), s->h2 += s->h1, s->h2 = s->h2 * 5 + 0x38495ab5;
    s->n += 16;
}

static void mix_bytes(Hash *s, const void *data, size_t len) {
    const unsigned char *p = data;
    mix(s, len, 0x9e3779b97f4a7c15ULL); /* the length first: "ab","c" differs from "a","bc" */
    for (size_t i = 0; i < len; i += 16) {
        uint64_t k[2] = {0, 0};
        memcpy(k, p + i, len - i < 16 ? len - i : 16);
        mix(s, k[0], k[1]);
    }
}

static uint64_t fmix(uint64_t k) {
    k ^= k >> 33, k *= 0xff51afd7ed558ccdULL, k ^= k >> 33, k *= 0xc4ceb9fe1a85ec53ULL, k ^= k >> 33;
    return k;
}

static void finish(Hash *s, uint64_t out[2]) {
    uint64_t h1 = s->h1 ^ s->n, h2 = s->h2 ^ s->n;
    h1 += h2, h2 += h1;
    h1 = fmix(h1), h2 = fmix(h2);
    h1 += h2, h2 += h1;
    out[0] = h1, out[1] = h2;
}

void jit_cache_key(IrFn *const *fns, int nfns, const char *config, char key[JIT_CACHE_KEY_LEN + 1]) {
    Hash s = {0x243f6a8885a308d3ULL, 0x13198a2e03707344ULL, 0};
    mix(&s, FORMAT_VERSION, (uint64_t)nfns);
    mix_bytes(&s, config, strlen(config));
    struct stat st; /* this physc: a rebuilt code generator must not read an older one's objects */
    if (stat("/proc/self/exe", &st) == 0) {
        mix(&s, (uint64_t)st.st_size, (uint64_t)st.st_ino);
        mix(&s, (uint64_t)st.st_mtim.tv_sec, (uint64_t)st.st_mtim.tv_nsec);
        mix(&s, (uint64_t)st.st_dev, 0);
    }
    for (int i = 0; i < nfns; i++) {
        const IrFn *f = fns[i];
        mix_bytes(&s, f->name, strlen(f->name));
        mix(&s, (uint64_t)(uint32_t)f->ninputs << 32 | (uint32_t)f->nparams,
            (uint64_t)(uint32_t)f->noutputs << 32 | (uint32_t)f->ninsts);
        for (int k = 0; k < f->ninsts; k++) {
            const IrInst *in = &f->insts[k];
            uint64_t bits;
            memcpy(&bits, &in->num, sizeof bits);
            mix(&s, (uint64_t)(uint32_t)in->op << 32 | (uint32_t)in->imm, (uint64_t)(uint32_t)in->a << 32 | (uint32_t)in->b);
            mix(&s, bits, (uint64_t)k);
        }
        mix_bytes(&s, f->outputs, sizeof(int) * (size_t)f->noutputs);
    }
    uint64_t h[2];
    finish(&s, h);
    snprintf(key, JIT_CACHE_KEY_LEN + 1, "%016llx%016llx", (unsigned long long)h[0], (unsigned long long)h[1]);
}

static uint64_t checksum(const JitBlob *blobs, int n) {
    Hash s = {0x452821e638d01377ULL, 0xbe5466cf34e90c6cULL, 0};
    for (int i = 0; i < n; i++) mix_bytes(&s, blobs[i].data, blobs[i].len);
    uint64_t h[2];
    finish(&s, h);
    return h[0];
}

/* ---- where the entries live ---- */

/* The cache folder into dir (created if missing); false if there is none to use. */
static bool cache_dir(char *dir, size_t len) {
    const char *env = getenv("PHYSC_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int n;
    if (env && *env) n = snprintf(dir, len, "%s", env);
    else if (xdg && *xdg == '/') n = snprintf(dir, len, "%s/physc", xdg);
    else if (home && *home) n = snprintf(dir, len, "%s/.cache/physc", home);
    else return false;
    if (n <= 0 || (size_t)n >= len) return false;
    for (char *p = dir + 1; *p; p++) /* mkdir -p */
        if (*p == '/') {
            *p = 0;
            bool ok = mkdir(dir, 0755) == 0 || errno == EEXIST;
            *p = '/';
            if (!ok) return false;
        }
    return mkdir(dir, 0755) == 0 || errno == EEXIST;
}

static bool entry_path(const char *key, char *path, size_t len) {
    char dir[PATH_MAX];
    if (!cache_dir(dir, sizeof dir)) return false;
    int n = snprintf(path, len, "%s/%s.jit", dir, key);
    return n > 0 && (size_t)n < len;
}

/* ---- reading and writing entries ---- */

static bool read_all(int fd, void *buf, size_t len) {
    for (size_t got = 0; got < len;) {
        ssize_t r = read(fd, (char *)buf + got, len - got);
        if (r <= 0) {
            if (r < 0 && errno == EINTR) continue;
            return false;
        }
        got += (size_t)r;
    }
    return true;
}

static bool write_all(int fd, const void *buf, size_t len) {
    for (size_t put = 0; put < len;) {
        ssize_t w = write(fd, (const char *)buf + put, len - put);
        if (w <= 0) {
            if (w < 0 && errno == EINTR) continue;
            return false;
        }
        put += (size_t)w;
    }
    return true;
}

int jit_cache_load(const char *key, JitBlob *blobs, int max) {
    char path[PATH_MAX];
    if (!enabled || !entry_path(key, path, sizeof path)) return -1;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC); /* (a FIFO put there: refused below, not waited on) */
    if (fd < 0) return -1;
    struct stat st;
    unsigned char *file = NULL;
    int n = -1;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (size_t)st.st_size <= max_entry && st.st_size > 0 &&
        (file = malloc((size_t)st.st_size)) && read_all(fd, file, (size_t)st.st_size)) {
        size_t size = (size_t)st.st_size, at = sizeof magic + 8 + JIT_CACHE_KEY_LEN;
        uint32_t version, count;
        if (size >= at && !memcmp(file, magic, sizeof magic)) {
            memcpy(&version, file + 8, 4), memcpy(&count, file + 12, 4);
            bool ok = version == FORMAT_VERSION && count >= 1 && (int)count <= max && count <= JIT_CACHE_MAX_BLOBS &&
                      !memcmp(file + 16, key, JIT_CACHE_KEY_LEN) && size >= at + 8 * (size_t)count + 8;
            size_t total = at + 8 * (size_t)count + 8; /* header, lengths, checksum */
            for (uint32_t i = 0; ok && i < count; i++) {
                uint64_t len;
                memcpy(&len, file + at + 8 * i, 8);
                ok = len > 0 && len <= size && total + len <= size;
                if (ok) blobs[i].len = (size_t)len, total += (size_t)len;
            }
            ok = ok && total == size;
            size_t off = 0;
            for (uint32_t i = 0; ok && i < count; i++) {
                size_t start = at + 8 * (size_t)count + off;
                blobs[i].data = malloc(blobs[i].len);
                if (!blobs[i].data) {
                    for (uint32_t k = 0; k < i; k++) free(blobs[k].data);
                    ok = false;
                    break;
                }
                memcpy(blobs[i].data, file + start, blobs[i].len);
                off += blobs[i].len;
            }
            uint64_t sum;
            if (ok) {
                memcpy(&sum, file + size - 8, 8);
                if (sum != checksum(blobs, (int)count)) {
                    for (uint32_t k = 0; k < count; k++) free(blobs[k].data);
                    ok = false;
                }
            }
            if (ok) n = (int)count;
        }
    }
    free(file);
    if (n > 0) futimens(fd, NULL); /* used now: the last to go when the cache is trimmed */
    close(fd);
    return n;
}

typedef struct Entry {
    char name[JIT_CACHE_KEY_LEN + 8];
    struct timespec used;
    size_t size;
} Entry;

static int older_first(const void *a, const void *b) {
    const struct timespec *x = &((const Entry *)a)->used, *y = &((const Entry *)b)->used;
    return x->tv_sec != y->tv_sec ? (x->tv_sec < y->tv_sec ? -1 : 1)
                                  : (x->tv_nsec < y->tv_nsec ? -1 : x->tv_nsec > y->tv_nsec);
}

/* Removes the entries used longest ago until the rest hold at most the bound. */
static void trim(void) {
    const char *env = getenv("PHYSC_CACHE_MAX_MB");
    char *end = NULL;
    double mb = env ? strtod(env, &end) : default_max_mb;
    if (!env || end == env || *end || !(mb >= 0) || mb > 1e9) mb = default_max_mb;
    size_t max_total = (size_t)(mb * 1048576);
    char dir[PATH_MAX];
    if (!cache_dir(dir, sizeof dir)) return;
    DIR *d = opendir(dir);
    if (!d) return;
    Entry *e = NULL;
    size_t n = 0, cap = 0, total = 0;
    time_t now = time(NULL);
    for (struct dirent *de; (de = readdir(d));) {
        size_t len = strlen(de->d_name);
        struct stat st;
        if (len < JIT_CACHE_KEY_LEN + 4 || strncmp(de->d_name + JIT_CACHE_KEY_LEN, ".jit", 4) ||
            fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
            continue;
        if (len != JIT_CACHE_KEY_LEN + 4) { /* a temporary: a writer killed before its rename left it after a day */
            if (now - st.st_mtim.tv_sec > 86400) unlinkat(dirfd(d), de->d_name, 0);
            continue;
        }
        if (n == cap) {
            Entry *grown = realloc(e, (cap = cap ? 2 * cap : 64) * sizeof *e);
            if (!grown) break;
            e = grown;
        }
        snprintf(e[n].name, sizeof e[n].name, "%s", de->d_name);
        e[n].used = st.st_mtim, e[n].size = (size_t)st.st_size;
        total += e[n++].size;
    }
    if (total > max_total) {
        qsort(e, n, sizeof *e, older_first);
        for (size_t i = 0; i < n && total > max_total; i++)
            if (unlinkat(dirfd(d), e[i].name, 0) == 0) total -= e[i].size;
    }
    free(e);
    closedir(d);
}

void jit_cache_store(const char *key, const JitBlob *blobs, int n) {
    char path[PATH_MAX], tmp[PATH_MAX + 16];
    if (!enabled || n < 1 || n > JIT_CACHE_MAX_BLOBS || !entry_path(key, path, sizeof path)) return;
    snprintf(tmp, sizeof tmp, "%s.XXXXXX", path);
    int fd = mkstemp(tmp);
    if (fd < 0) return;
    uint32_t head[2] = {FORMAT_VERSION, (uint32_t)n};
    bool ok = write_all(fd, magic, sizeof magic) && write_all(fd, head, sizeof head) &&
              write_all(fd, key, JIT_CACHE_KEY_LEN);
    for (int i = 0; ok && i < n; i++) {
        uint64_t len = blobs[i].len;
        ok = write_all(fd, &len, 8);
    }
    for (int i = 0; ok && i < n; i++) ok = write_all(fd, blobs[i].data, blobs[i].len);
    uint64_t sum = checksum(blobs, n);
    ok = ok && write_all(fd, &sum, 8);
    ok = close(fd) == 0 && ok;
    /* the rename is atomic: a concurrent reader sees the whole entry or none */
    if (!ok || rename(tmp, path) != 0) unlink(tmp);
    else trim();
}
