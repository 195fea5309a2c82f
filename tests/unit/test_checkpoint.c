/* test_checkpoint.c — checkpoints round-trip bit for bit (NaN payloads, -0.0, subnormals),
   are replaced atomically with no .tmp left behind, and every damaged file is refused with
   the right message: truncated at every kind of length, any flipped byte, trailing bytes,
   another version, another fingerprint (saying which part changed; the source text alone
   may), a missing or resized array, a missing file; a loss history of another length is
   read as far as there is room; a version 1 file is read but not resumed. */
#include <errno.h>
#include <float.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "io/checkpoint.h"

static char dir[64], path[128], tmp[160], other[160];

static double bits(uint64_t u) {
    double d;
    memcpy(&d, &u, 8);
    return d;
}

static unsigned char *slurp(const char *p, size_t *n) {
    FILE *f = fopen(p, "rb");
    unsigned char *b = malloc(1 << 16);
    *n = f ? fread(b, 1, 1 << 16, f) : 0;
    if (f) fclose(f);
    return b;
}

static void spit(const char *p, const void *b, size_t n) {
    FILE *f = fopen(p, "wb");
    fwrite(b, 1, n, f);
    fclose(f);
}

/* The test's run: three arrays as a trainer would save them, plus an empty one. */
enum { NTH = 9, NLOSS = 5 };
static PrtCkptHeader hdr = {.fp = {{0x0123456789abcdefull, 2, 3, 4}}, .epoch = 40, .step = 1234567,
                            .rng = {1, 0xffffffffffffffffull, 0x8000000000000000ull, 42},
                            .rng_spare_normal = -0.7071067811865476, .rng_has_spare = 1};
static double theta[NTH], adam_m[NTH], loss[NLOSS];

static void fill(void) {
    theta[0] = -0.0;
    theta[1] = bits(0x7ff8000000000123ull);   /* quiet NaN with a payload */
    theta[2] = bits(0xfff0000000000001ull);   /* negative signalling NaN: copied, never loaded as FP */
    theta[3] = bits(1);                       /* the smallest subnormal */
    theta[4] = DBL_MAX;
    theta[5] = bits(0xfff0000000000000ull);   /* -inf */
    theta[6] = 0.1;
    theta[7] = 1.0 / 3.0;
    theta[8] = -6.02214076e23;
    for (int i = 0; i < NTH; i++) adam_m[i] = bits(0x3ff0000000000000ull + (uint64_t)i * 0x0123456789ull);
    for (int i = 0; i < NLOSS; i++) loss[i] = 1.0 / (i + 1);
}

static int write_run(const char *p) {
    PrtCkptArray a[] = {{"theta", theta, NTH}, {"adam_m", adam_m, NTH}, {"empty", NULL, 0}, {"loss_history", loss, NLOSS}};
    char err[512];
    int rc = prt_ckpt_write(p, &hdr, a, 4, err, sizeof err);
    CHECK(rc == 0, "write %s: %s", p, err);
    return rc;
}

/* Reads path as the run would; returns rc and leaves the message in err. */
static int read_run(const char *p, const PrtFingerprint *fp, long nth, PrtCkptHeader *h, double *th, char *err, size_t errlen) {
    double m[NTH], l[NLOSS];
    PrtCkptArray a[] = {{"loss_history", l, NLOSS}, {"theta", th, nth}, {"adam_m", m, NTH}};
    err[0] = 0;
    int rc = prt_ckpt_read(p, fp, h, a, 3, err, errlen);
    if (rc == 0) {
        CHECK(memcmp(m, adam_m, sizeof m) == 0, "adam_m differs after the round trip");
        CHECK(memcmp(l, loss, sizeof l) == 0, "loss_history differs after the round trip");
    }
    return rc;
}

/* The message of a read of path with fingerprint fp (static). */
static const char *err_of(const char *p, const PrtFingerprint *fp) {
    static char err[512];
    PrtCkptHeader h;
    double th[NTH];
    read_run(p, fp, NTH, &h, th, err, sizeof err);
    return err;
}

/* A checkpoint as physc wrote it before version 2: one u64 fingerprint at 32, theta only. */
static void write_v1(const char *p) {
    unsigned char b[512];
    size_t n = 0;
    uint64_t size = 104 + 4 + 5 + 8 + 8 * NTH + 8;
    uint32_t version = 1, narrays = 1, namelen = 5;
    int64_t fields[] = {0x1234, 7, 99, 1, 2, 3, 4, 0, 0}; /* fingerprint, epoch, step, rng, spare, has_spare */
    int64_t len = NTH;
#define PUT(x, k) (memcpy(b + n, x, k), n += k)
    PUT("PHYSCKPT", 8), PUT(&version, 4), PUT(&narrays, 4), PUT(&size, 8);
    uint64_t head = prt_fnv1a(PRT_FNV_INIT, b, 24);
    PUT(&head, 8), PUT(fields, sizeof fields), PUT(&namelen, 4), PUT("theta", 5), PUT(&len, 8), PUT(theta, 8 * NTH);
    uint64_t sum = prt_fnv1a(PRT_FNV_INIT, b, n);
    PUT(&sum, 8);
#undef PUT
    CHECK(n == size, "the version 1 file has %zu bytes, not %llu", n, (unsigned long long)size);
    spit(p, b, n);
}

/* Expects path refused with a message naming it and containing want. */
static void refused(const char *p, const PrtFingerprint *fp, long nth, const char *want, const char *what) {
    char err[512];
    double th[NTH + 1];
    for (int i = 0; i < NTH + 1; i++) th[i] = 99;
    PrtCkptHeader h = {.epoch = -5};
    int rc = read_run(p, fp, nth, &h, th, err, sizeof err);
    CHECK(rc == -1 && strstr(err, want) && strstr(err, p), "%s: rc %d, message \"%s\", wanted \"%s\"", what, rc, err, want);
    CHECK(h.epoch == -5 && th[0] == 99 && th[NTH] == 99, "%s: a refused read changed the caller's state", what);
    printf("  %s: %s\n", what, err);
}

int main(void) {
    strcpy(dir, "/tmp/physc_ckpt_XXXXXX");
    if (!mkdtemp(dir)) {
        printf("mkdtemp: %s\n", strerror(errno));
        return 1;
    }
    snprintf(path, sizeof path, "%s/checkpoint.bin", dir);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    snprintf(other, sizeof other, "%s/damaged.bin", dir);
    char err[512];
    fill();

    /* FNV-1a 64 against the published test vectors, and chaining */
    CHECK(prt_fnv1a(PRT_FNV_INIT, "", 0) == 0xcbf29ce484222325ull && prt_fnv1a(PRT_FNV_INIT, "a", 1) == 0xaf63dc4c8601ec8cull &&
              prt_fnv1a(PRT_FNV_INIT, "foobar", 6) == 0x85944171f73967e8ull,
          "FNV-1a test vectors");
    CHECK(prt_fnv1a(prt_fnv1a(PRT_FNV_INIT, "foo", 3), "bar", 3) == prt_fnv1a(PRT_FNV_INIT, "foobar", 6), "FNV-1a chains");

    /* round trip, bit for bit; arrays read in another order than written, one left unread */
    write_run(path);
    struct stat st;
    CHECK(stat(tmp, &st) != 0 && errno == ENOENT, "%s remains after a successful write", tmp);
    PrtCkptHeader h;
    double th[NTH];
    CHECK(read_run(path, &hdr.fp, NTH, &h, th, err, sizeof err) == 0, "read: %s", err);
    CHECK(memcmp(th, theta, sizeof th) == 0, "theta differs after the round trip (NaN payloads, -0.0)");
    CHECK(memcmp(&h.fp, &hdr.fp, sizeof h.fp) == 0 && h.version == 2 && h.epoch == hdr.epoch && h.step == hdr.step &&
              memcmp(h.rng, hdr.rng, sizeof h.rng) == 0 && memcmp(&h.rng_spare_normal, &hdr.rng_spare_normal, 8) == 0 &&
              h.rng_has_spare == 1,
          "header differs after the round trip");

    /* overwrite: the new contents replace the old, still with no .tmp */
    hdr.epoch = 50, hdr.step = 1500000, hdr.rng_has_spare = 0, theta[6] = 0.2;
    write_run(path);
    CHECK(stat(tmp, &st) != 0, "%s remains after an overwrite", tmp);
    CHECK(read_run(path, &hdr.fp, NTH, &h, th, err, sizeof err) == 0, "read after overwrite: %s", err);
    CHECK(h.epoch == 50 && h.step == 1500000 && h.rng_has_spare == 0 && th[6] == 0.2, "overwrite not seen");

    /* a failed write (here the .tmp cannot be created) reports the path and keeps the old file */
    mkdir(tmp, 0700);
    PrtCkptArray one = {"theta", theta, NTH};
    CHECK(prt_ckpt_write(path, &hdr, &one, 1, err, sizeof err) == -1 && strstr(err, path), "write over a directory: %s", err);
    rmdir(tmp);
    CHECK(read_run(path, &hdr.fp, NTH, &h, th, err, sizeof err) == 0, "old checkpoint lost by a failed write: %s", err);
    char nodir[192];
    snprintf(nodir, sizeof nodir, "%s/no/such/dir/ck.bin", dir);
    CHECK(prt_ckpt_write(nodir, &hdr, &one, 1, err, sizeof err) == -1 && strstr(err, nodir) && strstr(err, "No such file"),
          "write into a missing directory: %s", err);

    /* truncated at every length: inside the magic, the header, an array, the checksum */
    size_t n;
    unsigned char *good = slurp(path, &n);
    printf("checkpoint of %d + %d + 0 + %d doubles: %zu bytes\n", NTH, NTH, NLOSS, n);
    int bad_trunc = 0;
    for (size_t k = 0; k < n; k++) {
        spit(other, good, k);
        PrtCkptHeader hh;
        double t[NTH];
        if (read_run(other, &hdr.fp, NTH, &hh, t, err, sizeof err) != -1 || !strstr(err, "truncated")) {
            if (!bad_trunc++) printf("truncated to %zu bytes: \"%s\"\n", k, err);
        }
        if (k == 4 || k == 20 || k == n / 2) printf("  truncated to %zu: %s\n", k, err);
    }
    CHECK(bad_trunc == 0, "%d truncations not refused as truncated", bad_trunc);

    /* any flipped byte is refused: in the magic as not a checkpoint, anywhere else as corrupted */
    int bad_flip = 0;
    for (size_t k = 0; k < n; k++) {
        good[k] ^= 0x10;
        spit(other, good, n);
        good[k] ^= 0x10;
        PrtCkptHeader hh;
        double t[NTH];
        const char *want = k < 8 ? "not a physc checkpoint" : "corrupted";
        if (read_run(other, &hdr.fp, NTH, &hh, t, err, sizeof err) != -1 || !strstr(err, want)) {
            if (!bad_flip++) printf("byte %zu flipped: \"%s\"\n", k, err);
        }
        if (k == 2 || k == 17 || k == n / 2) printf("  byte %zu flipped: %s\n", k, err);
    }
    CHECK(bad_flip == 0, "%d flipped bytes not refused as corrupted", bad_flip);

    /* bytes after the end; another version (with its header checksum made right) */
    good[n] = 0;
    spit(other, good, n + 1);
    refused(other, &hdr.fp, NTH, "corrupted", "trailing byte");
    uint32_t v = 3;
    memcpy(good + 8, &v, 4);
    uint64_t hs = prt_fnv1a(PRT_FNV_INIT, good, 24);
    memcpy(good + 24, &hs, 8);
    spit(other, good, n);
    refused(other, &hdr.fp, NTH, "version 3", "another version");
    free(good);
    spit(other, "theta = 1.0\n", 12);
    refused(other, &hdr.fp, NTH, "not a physc checkpoint", "a text file");

    /* the run's side: another fingerprint (each part named; the source alone may differ),
       theta of another length, an array not saved, no file */
    PrtFingerprint other_fp = hdr.fp;
    other_fp.part[PRT_FP_DATA] ^= 1;
    refused(path, &other_fp, NTH, "changed since: the data (", "the data's fingerprint");
    CHECK(!strstr(err_of(path, &other_fp), "the system") && !strstr(err_of(path, &other_fp), "the model"),
          "only the data changed: %s", err_of(path, &other_fp));
    other_fp.part[PRT_FP_SYSTEM] ^= 1, other_fp.part[PRT_FP_MODEL] ^= 1;
    refused(path, &other_fp, NTH, "changed since: the system (its bodies", "three fingerprint parts");
    CHECK(strstr(err_of(path, &other_fp), "; the data (") && strstr(err_of(path, &other_fp), "; the model or its training"),
          "all three changes named: %s", err_of(path, &other_fp));
    other_fp = hdr.fp;
    other_fp.part[PRT_FP_SOURCE] ^= 1; /* comments or layout only */
    CHECK(read_run(path, &other_fp, NTH, &h, th, err, sizeof err) == 0, "a source-only change refused: %s", err);

    /* a loss history of another length: read as far as there is room, its length told */
    double hist[NLOSS + 3];
    for (int i = 0; i < NLOSS + 3; i++) hist[i] = -1;
    PrtCkptArray longer = {"loss_history", hist, -(NLOSS + 3)}, shorter = {"loss_history", hist, -2};
    CHECK(prt_ckpt_read(path, &hdr.fp, &h, &longer, 1, err, sizeof err) == 0 && longer.len == NLOSS &&
              memcmp(hist, loss, sizeof loss) == 0 && hist[NLOSS] == -1,
          "a shorter loss history into more room: len %ld (%s)", longer.len, err);
    hist[2] = -1;
    CHECK(prt_ckpt_read(path, &hdr.fp, &h, &shorter, 1, err, sizeof err) == 0 && shorter.len == NLOSS && hist[1] == loss[1] &&
              hist[2] == -1,
          "a longer loss history into less room: len %ld (%s)", shorter.len, err);

    /* a version 1 file (one fingerprint, the fields 24 bytes earlier): read for its arrays
       (an older run's params.bin), refused for a resume */
    write_v1(other);
    PrtCkptArray th1 = {"theta", th, NTH};
    memset(th, 0, sizeof th);
    CHECK(prt_ckpt_read_any(other, &h, &th1, 1, err, sizeof err) == 0 && h.version == 1 && h.epoch == 7 && h.step == 99 &&
              memcmp(th, theta, sizeof th) == 0,
          "a version 1 file not read: %s", err);
    refused(other, &hdr.fp, NTH, "older physc (checkpoint version 1)", "version 1 resumed");
    refused(path, &hdr.fp, NTH + 1, "expects 10", "theta's length");
    double x;
    PrtCkptArray missing = {"adam_v", &x, 1};
    CHECK(prt_ckpt_read(path, &hdr.fp, &h, &missing, 1, err, sizeof err) == -1 && strstr(err, "no array \"adam_v\""),
          "missing array: %s", err);
    refused(nodir, &hdr.fp, NTH, "No such file", "missing file");

    /* clean up; rmdir fails if anything else (a stray .tmp) was left */
    unlink(path);
    unlink(other);
    CHECK(rmdir(dir) == 0, "rmdir %s: %s (a file left behind?)", dir, strerror(errno));
    printf("%s: %s\n", __FILE__, failures ? "FAILED" : "ok");
    return failures != 0;
}
