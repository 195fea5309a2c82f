/* view_video.c — `physc view --mp4` (view_video.h): the page draws the frames (its #frames
   mode: the scene at each time with a caption, as PNGs), headless Chromium runs it and
   hands back its DOM, and Debian's ffmpeg encodes the frames to H.264. The same page, not a
   second renderer. */
#define _GNU_SOURCE /* mkdtemp, realpath */
#include "view_video.h"

#include <errno.h>
#include <ftw.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/atomic_file.h"

enum { FRAMES_PER_LAUNCH = 50 }; /* a chunk's PNGs in one DOM: a few MB */
static const double CHROMIUM_SECONDS = 180; /* a launch that takes longer is stuck */

/* The program `name` on PATH (its path, to free), or NULL */
static char *on_path(const char *name) {
    const char *path = getenv("PATH");
    for (const char *p = path ? path : "/usr/bin:/bin"; p && *p;) {
        const char *end = strchr(p, ':');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char *full = prt_xalloc(len + strlen(name) + 2, 1, "a path");
        snprintf(full, len + strlen(name) + 2, "%.*s/%s", (int)len, p, name);
        if (access(full, X_OK) == 0) return full;
        free(full);
        p = end ? end + 1 : NULL;
    }
    return NULL;
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Runs argv with its standard output captured into *out (NUL-terminated, to free) and its
   standard error discarded, killing it after `seconds`. 0, or -1 with a message. */
static int capture(char *const argv[], double seconds, char **out, char *err, size_t errlen) {
    int fd[2];
    if (pipe(fd) != 0) return prt_fail(err, errlen, "a pipe: %s", strerror(errno));
    pid_t pid = fork();
    if (pid < 0) {
        close(fd[0]), close(fd[1]);
        return prt_fail(err, errlen, "fork: %s", strerror(errno));
    }
    if (pid == 0) {
        dup2(fd[1], 1);
        if (!freopen("/dev/null", "w", stderr)) _exit(127);
        close(fd[0]), close(fd[1]);
        execv(argv[0], argv);
        _exit(127);
    }
    close(fd[1]);
    size_t len = 0, cap = 1 << 20;
    char *buf = prt_xalloc(cap, 1, "the page's frames");
    double deadline = now_s() + seconds;
    bool late = false;
    for (;;) {
        struct pollfd p = {.fd = fd[0], .events = POLLIN};
        double left = deadline - now_s();
        if (left <= 0 || poll(&p, 1, (int)(left * 1000) + 1) == 0) {
            late = true;
            break;
        }
        if (len + 65536 > cap) buf = prt_xrealloc(buf, cap *= 2, 1, "the page's frames");
        ssize_t got = read(fd[0], buf + len, 65536);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        len += (size_t)got;
    }
    close(fd[0]);
    if (late) kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    buf[len] = 0;
    if (late || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        free(buf);
        return late ? prt_fail(err, errlen, "%s took over %.0f s and was stopped", argv[0], seconds)
                    : prt_fail(err, errlen, "%s failed (status %d)", argv[0], WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    }
    *out = buf;
    return 0;
}

static int b64_value(int c) {
    return c >= 'A' && c <= 'Z' ? c - 'A' : c >= 'a' && c <= 'z' ? c - 'a' + 26 : c >= '0' && c <= '9' ? c - '0' + 52
           : c == '+' ? 62 : c == '/' ? 63 : -1;
}

/* Decodes base64 text s[0..n) into out (room for 3 n / 4); the bytes, or -1 on a bad character */
static long b64_decode(const char *s, size_t n, unsigned char *out) {
    long len = 0;
    unsigned acc = 0;
    int bits = 0;
    for (size_t i = 0; i < n && s[i] != '='; i++) {
        int v = b64_value((unsigned char)s[i]);
        if (v < 0) return -1;
        acc = acc << 6 | (unsigned)v, bits += 6;
        if (bits >= 8) out[len++] = (unsigned char)(acc >> (bits -= 8));
    }
    return len;
}

/* The frames (a PNG a line, base64) of the page's physc-frames element in dom, written to f.
   Their count, or -1 with a message. */
static long put_frames(const char *dom, FILE *f, char *err, size_t errlen) {
    const char *at = strstr(dom, "id=\"physc-frames\"");
    at = at ? strchr(at, '>') : NULL;
    const char *end = at ? strstr(at, "</pre>") : NULL;
    if (!end) return prt_fail(err, errlen, "the page drew no frames (its script did not run to the end)");
    long count = 0;
    unsigned char *png = NULL;
    for (const char *line = at + 1; line < end;) {
        const char *stop = memchr(line, '\n', (size_t)(end - line));
        if (!stop) stop = end;
        size_t n = (size_t)(stop - line);
        if (n > 0) {
            png = prt_xrealloc(png, n, 1, "a frame");
            long bytes = b64_decode(line, n, png);
            if (bytes < 8 || memcmp(png, "\x89PNG", 4) != 0) {
                free(png);
                return prt_fail(err, errlen, "frame %ld of the page is not a PNG", count);
            }
            if (fwrite(png, 1, (size_t)bytes, f) != (size_t)bytes) {
                free(png);
                return prt_fail(err, errlen, "ffmpeg stopped taking frames");
            }
            count++;
        }
        line = stop + 1;
    }
    free(png);
    return count;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

/* ffmpeg reading PNGs from a pipe at fps, writing H.264 MP4 to path: its stdin, or NULL */
static FILE *start_ffmpeg(const char *ffmpeg, const char *path, long fps, pid_t *pid) {
    int fd[2];
    if (pipe(fd) != 0) return NULL;
    char rate[32];
    snprintf(rate, sizeof rate, "%ld", fps);
    char *argv[] = {(char *)ffmpeg, "-y", "-loglevel", "error", "-f", "image2pipe", "-c:v", "png", "-framerate", rate, "-i", "-",
                    "-c:v", "libx264", "-pix_fmt", "yuv420p", "-crf", "20", "-movflags", "+faststart", "-f", "mp4", (char *)path,
                    NULL};
    if ((*pid = fork()) == 0) {
        dup2(fd[0], 0);
        close(fd[0]), close(fd[1]);
        execv(ffmpeg, argv);
        _exit(127);
    }
    close(fd[0]);
    if (*pid < 0) {
        close(fd[1]);
        return NULL;
    }
    return fdopen(fd[1], "w");
}

/* Frames a..b of the page, drawn by headless Chromium (its profile in `profile`), into the
   encoder: 0, or -1 with a message */
static int render_chunk(const ViewVideo *v, const char *chromium, const char *page, const char *profile, long a, long b,
                        FILE *enc, char *err, size_t errlen) {
    size_t ulen = strlen(page) + 256, plen = strlen(profile) + 32;
    char *url = prt_xalloc(ulen, 1, "an address"), *user = prt_xalloc(plen, 1, "an option"), *dom = NULL;
    snprintf(url, ulen, "file://%s#traj=%ld&layout=%s&frames=%ld-%ld&size=%ldx%ld", page, v->traj, v->layout, a, b, v->width,
             v->height);
    snprintf(user, plen, "--user-data-dir=%s", profile);
    char *argv[] = {(char *)chromium, "--headless", "--no-sandbox", "--disable-gpu", user, "--window-size=1300,1000",
                    "--dump-dom", url, NULL};
    int rc = capture(argv, CHROMIUM_SECONDS, &dom, err, errlen);
    long got = rc ? -1 : put_frames(dom, enc, err, errlen);
    if (got >= 0 && got != b - a + 1) rc = prt_fail(err, errlen, "the page drew %ld frames of %ld", got, b - a + 1);
    else if (got < 0) rc = -1;
    free(url), free(user), free(dom);
    return rc;
}

int view_write_mp4(const ViewVideo *v, char *err, size_t errlen) {
    char *chromium = on_path("chromium"), *ffmpeg = on_path("ffmpeg"), *page = realpath(v->page, NULL);
    char profile[] = "/tmp/physc-chromium-XXXXXX", *tmp = NULL;
    bool made = false;
    int rc = 0;
    if (!chromium || !ffmpeg) {
        rc = prt_fail(err, errlen, "--mp4 needs Debian's %s%s%s (apt-get install chromium ffmpeg): the page draws the frames in "
                      "headless Chromium and ffmpeg encodes them", chromium ? "" : "chromium", !chromium && !ffmpeg ? " and " : "",
                      ffmpeg ? "" : "ffmpeg");
        goto done;
    }
    if (!page || !(made = mkdtemp(profile) != NULL)) {
        rc = prt_fail(err, errlen, "%s: %s", page ? "a folder for Chromium's profile" : v->page, strerror(errno));
        goto done;
    }
    size_t tlen = strlen(v->out) + 16;
    tmp = prt_xalloc(tlen, 1, "a path");
    snprintf(tmp, tlen, "%s.partial", v->out); /* renamed once whole: a cut video is never left under its name */
    pid_t pid;
    FILE *enc = start_ffmpeg(ffmpeg, tmp, v->fps, &pid);
    if (!enc) {
        rc = prt_fail(err, errlen, "could not start %s: %s", ffmpeg, strerror(errno));
        goto done;
    }
    signal(SIGPIPE, SIG_IGN); /* (an ffmpeg that stops is said by fwrite, not by a signal) */
    for (long a = 0; rc == 0 && a < v->times; a += FRAMES_PER_LAUNCH) {
        long b = a + FRAMES_PER_LAUNCH - 1 < v->times - 1 ? a + FRAMES_PER_LAUNCH - 1 : v->times - 1;
        rc = render_chunk(v, chromium, page, profile, a, b, enc, err, errlen);
        if (!v->quiet && rc == 0) fprintf(stderr, "\rframes %ld/%ld", b + 1, v->times);
    }
    if (!v->quiet) fputc('\n', stderr);
    int status = 0;
    bool closed = fclose(enc) == 0;
    waitpid(pid, &status, 0);
    if (rc == 0 && (!closed || !WIFEXITED(status) || WEXITSTATUS(status) != 0))
        rc = prt_fail(err, errlen, "ffmpeg could not encode the frames into %s (status %d)", v->out,
                      WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    if (rc == 0 && rename(tmp, v->out) != 0) rc = prt_fail(err, errlen, "%s: %s", v->out, strerror(errno));
    if (rc != 0) remove(tmp);
done:
    if (made) nftw(profile, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    free(chromium), free(ffmpeg), free(page), free(tmp);
    return rc;
}
