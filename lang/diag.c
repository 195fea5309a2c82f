/* diag.c — prints diagnostics like a C compiler: position, message, source line, caret. */
#include "diag.h"
#include "arena.h"
#include "diag_json.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { DEFAULT_MAX_ERRORS = 20, MAX_SHOWN_LINE = 160 };

void diag_init(Diags *d, FILE *out) {
    memset(d, 0, sizeof *d);
    d->out = out;
    d->max_errors = DEFAULT_MAX_ERRORS;
    const char *nc = getenv("NO_COLOR");
    d->color = isatty(fileno(out)) && !(nc && *nc);
}

void diag_free(Diags *d) {
    diag_flush(d);
    free(d->held);
    d->held = NULL;
    free(d->records);
    d->records = NULL;
    for (int i = 0; i < d->nfiles; i++) {
        free(d->files[i]->path);
        free((char *)d->files[i]->text);
        free(d->files[i]->line_starts);
        free(d->files[i]);
    }
    free(d->files);
    d->files = NULL;
    d->nfiles = 0;
}

int src_add(Diags *d, const char *path, char *text, size_t len) {
    SrcFile *f = xcalloc(1, sizeof *f);
    if (!f) die("out of memory");
    f->path = xstrdup(path);
    f->text = text;
    f->len = len;
    size_t cap = 64;
    f->line_starts = xalloc(cap, sizeof *f->line_starts);
    f->line_starts[f->nlines++] = 0;
    for (size_t i = 0; i < len; i++) {
        if (text[i] == '\n') {
            if ((size_t)f->nlines == cap) {
                cap *= 2;
                f->line_starts = xrealloc(f->line_starts, cap, sizeof *f->line_starts);
            }
            f->line_starts[f->nlines++] = i + 1;
        }
    }
    if (d->nfiles == d->cap_files) {
        d->cap_files = d->cap_files ? d->cap_files * 2 : 8;
        d->files = xrealloc(d->files, (size_t)d->cap_files, sizeof *d->files);
    }
    d->files[d->nfiles] = f;
    return d->nfiles++;
}

enum { SRC_MAX_BYTES = 16 << 20 }; /* the examples are a few KB; the language unrolls loops, not files */

int src_load(Diags *d, const char *path, const char **err) {
    /* a FIFO's open would wait for a writer and a device never ends: only regular files
       (O_NONBLOCK lets the open of a FIFO return, to be refused) */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        *err = strerror(errno);
        if (fd >= 0) close(fd);
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        *err = S_ISDIR(st.st_mode)    ? "it is a directory"
               : S_ISFIFO(st.st_mode) ? "it is a FIFO (named pipe), not a regular file"
               : S_ISCHR(st.st_mode)  ? "it is a character device, not a regular file"
               : S_ISSOCK(st.st_mode) ? "it is a socket, not a regular file"
                                      : "not a regular file";
        return -1;
    }
    FILE *fp = fdopen(fd, "rb");
    if (!fp) {
        *err = strerror(errno);
        close(fd);
        return -1;
    }
    size_t cap = 4096, len = 0;
    char *buf = xalloc(cap, 1);
    for (;;) {
        if (len + 1 >= cap) {
            if (cap >= SRC_MAX_BYTES) { /* /dev/zero, a data file named by mistake: never a program */
                free(buf);
                fclose(fp);
                *err = "file too large for a program (more than 16 MiB)";
                return -1;
            }
            cap *= 2;
            char *nb = realloc(buf, cap);
            if (!nb) {
                free(buf);
                fclose(fp);
                *err = "file too large to read";
                return -1;
            }
            buf = nb;
        }
        size_t n = fread(buf + len, 1, cap - len - 1, fp);
        len += n;
        if (n == 0) break;
    }
    int failed = ferror(fp);
    fclose(fp);
    if (failed) {
        free(buf);
        *err = "read error (is it a directory?)";
        return -1;
    }
    buf[len] = 0;
    /* a lone CR ends a line too (classic Mac files); CR LF stays as it is */
    for (size_t i = 0; i < len; i++)
        if (buf[i] == '\r' && buf[i + 1] != '\n') buf[i] = '\n';
    return src_add(d, path, buf, len);
}

static const char *level_name(DiagLevel l) {
    return l == DIAG_ERROR ? "error" : l == DIAG_WARNING ? "warning" : "note";
}

static const char *level_color(DiagLevel l) {
    return l == DIAG_ERROR ? "\033[1;31m" : l == DIAG_WARNING ? "\033[1;35m" : "\033[1;36m";
}

/* Prints a byte for display: tabs kept, control bytes and bytes >= 0x80 outside valid
   UTF-8 shown as '?', so garbage input never garbles the terminal. Returns bytes consumed. */
static size_t put_display_char(FILE *out, const unsigned char *s, size_t n) {
    unsigned char c = s[0];
    if (c == '\t' || (c >= 0x20 && c < 0x7f)) {
        fputc(c, out);
        return 1;
    }
    if (c >= 0xc2 && c <= 0xf4) {
        size_t k = c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
        if (k <= n) {
            size_t i = 1;
            while (i < k && (s[i] & 0xc0) == 0x80) i++;
            if (i == k) {
                fwrite(s, 1, k, out);
                return k;
            }
        }
    }
    fputc('?', out);
    return 1;
}

static void show_source(Diags *d, Loc loc) {
    if (loc.file < 0 || loc.file >= d->nfiles || loc.first_line < 1) return;
    SrcFile *f = d->files[loc.file];
    if (loc.first_line > f->nlines) return;
    size_t start = f->line_starts[loc.first_line - 1];
    size_t end = start;
    while (end < f->len && f->text[end] != '\n') end++;
    if (end > start && f->text[end - 1] == '\r') end--;
    size_t linelen = end - start;
    size_t col0 = loc.first_column > 0 ? (size_t)loc.first_column - 1 : 0;
    if (col0 > linelen) col0 = linelen;
    size_t span = 1;
    if (loc.last_line == loc.first_line && loc.last_column > loc.first_column)
        span = (size_t)(loc.last_column - loc.first_column);
    /* Long lines (a 1 MB identifier, minified input) are shown as a window around the column. */
    size_t from = 0, to = linelen;
    if (linelen > MAX_SHOWN_LINE) {
        from = col0 > 60 ? col0 - 60 : 0;
        to = from + MAX_SHOWN_LINE < linelen ? from + MAX_SHOWN_LINE : linelen;
    }
    if (span > to - col0 + 1) span = to > col0 ? to - col0 : 1;
    const unsigned char *s = (const unsigned char *)f->text + start;
    fprintf(d->out, "%5d | %s", loc.first_line, from > 0 ? "..." : "");
    for (size_t i = from; i < to;) i += put_display_char(d->out, s + i, to - i);
    fprintf(d->out, "%s\n      | %s", to < linelen ? "..." : "", from > 0 ? "   " : "");
    /* Caret line: keep tabs so the caret lines up; one column per UTF-8 character. */
    for (size_t i = from; i < col0; i++) {
        if ((s[i] & 0xc0) == 0x80) continue;
        fputc(s[i] == '\t' ? '\t' : ' ', d->out);
    }
    if (d->color) fputs("\033[1;32m", d->out);
    fputc('^', d->out);
    for (size_t i = 1; i < span; i++)
        if ((s[col0 + i] & 0xc0) != 0x80) fputc('~', d->out);
    if (d->color) fputs("\033[0m", d->out);
    fputc('\n', d->out);
}

/* While deferring, output goes to a memory stream that becomes a held diagnostic (a note
   joins the one before it); returns the stream to write to, or d->out. */
static FILE *begin_output(Diags *d, DiagLevel level, int file, int line, int column) {
    if (!d->deferring) return d->out;
    if (level != DIAG_NOTE || d->nheld == 0) {
        if (d->nheld == d->cap_held) {
            d->cap_held = d->cap_held ? 2 * d->cap_held : 16;
            d->held = xrealloc(d->held, (size_t)d->cap_held, sizeof *d->held);
            if (!d->held) die("out of memory");
        }
        d->held[d->nheld++] = (DiagHeld){.file = file, .line = line, .column = column, .seq = d->nheld};
    }
    DiagHeld *h = &d->held[d->nheld - 1];
    FILE *mem = open_memstream(&h->text, &h->len);
    if (!mem) die("out of memory");
    return mem;
}

/* Appends what was written to mem to the held diagnostic's text. */
static void end_output(Diags *d, FILE *mem, char *before, size_t before_len) {
    if (!d->deferring) return;
    fclose(mem);
    DiagHeld *h = &d->held[d->nheld - 1];
    if (before) { /* a note: its parent's text, then the note's */
        char *joined = xalloc(before_len + h->len + 1, 1);
        if (!joined) die("out of memory");
        memcpy(joined, before, before_len);
        memcpy(joined + before_len, h->text, h->len + 1);
        free(h->text), free(before);
        h->text = joined, h->len += before_len;
    }
}

static void vdiag(Diags *d, DiagLevel level, Loc loc, const char *fmt, va_list ap) {
    if (d->stopped && level != DIAG_NOTE) return;
    bool joins = d->deferring && level == DIAG_NOTE && d->nheld > 0;
    char *before = joins ? d->held[d->nheld - 1].text : NULL;
    size_t before_len = joins ? d->held[d->nheld - 1].len : 0;
    FILE *real = d->out;
    if (d->json) {
        if (level == DIAG_ERROR && d->nerrors >= d->max_errors) {
            d->stopped = true;
            diag_json_record(d, DIAG_ERROR, loc, false, "too many errors; stopping", ap);
            return;
        }
        d->nerrors += level == DIAG_ERROR, d->nwarnings += level == DIAG_WARNING;
        diag_json_record(d, level, loc, loc.file >= 0 && loc.file < d->nfiles, fmt, ap);
        return;
    }
    if (level == DIAG_ERROR && d->nerrors >= d->max_errors) {
        d->stopped = true;
        d->out = begin_output(d, level, 1 << 30, 0, 0); /* after everything else */
        fprintf(d->out, "physc: too many errors (%d); stopping\n", d->nerrors);
        end_output(d, d->out, NULL, 0);
        d->out = real;
        return;
    }
    d->out = begin_output(d, level, loc.file, loc.first_line, loc.first_column);
    if (level == DIAG_ERROR) d->nerrors++;
    if (level == DIAG_WARNING) d->nwarnings++;
    const char *path = (loc.file >= 0 && loc.file < d->nfiles) ? d->files[loc.file]->path : "physc";
    if (d->color) fputs("\033[1m", d->out);
    fprintf(d->out, "%s:%d:%d: ", path, loc.first_line, loc.first_column);
    if (d->color) fputs(level_color(level), d->out);
    fprintf(d->out, "%s: ", level_name(level));
    if (d->color) fputs("\033[0;1m", d->out);
    vfprintf(d->out, fmt, ap);
    if (d->color) fputs("\033[0m", d->out);
    fputc('\n', d->out);
    show_source(d, loc);
    end_output(d, d->out, before, before_len);
    d->out = real;
}

void diag_at(Diags *d, DiagLevel level, Loc loc, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vdiag(d, level, loc, fmt, ap);
    va_end(ap);
}

#define DEFINE_DIAG(name, level)                          \
    void name(Diags *d, Loc loc, const char *fmt, ...) {  \
        va_list ap;                                       \
        va_start(ap, fmt);                                \
        vdiag(d, level, loc, fmt, ap);                    \
        va_end(ap);                                       \
    }
DEFINE_DIAG(diag_error, DIAG_ERROR)
DEFINE_DIAG(diag_warning, DIAG_WARNING)
DEFINE_DIAG(diag_note, DIAG_NOTE)

void diag_plain_error(Diags *d, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    d->nerrors++;
    if (d->json) {
        diag_json_record(d, DIAG_ERROR, (Loc){.file = -1}, false, fmt, ap);
        va_end(ap);
        return;
    }
    FILE *out = begin_output(d, DIAG_ERROR, -1, 0, 0); /* no position: first */
    fprintf(out, "physc: error: ");
    vfprintf(out, fmt, ap);
    fputc('\n', out);
    end_output(d, out, NULL, 0);
    va_end(ap);
}

void diag_defer(Diags *d) {
    if (d->json) diag_json_emit(d, false); /* (what came before is not reordered) */
    d->deferring = true;
}

static int held_order(const void *pa, const void *pb) {
    const DiagHeld *a = pa, *b = pb;
    if (a->file != b->file) return a->file < b->file ? -1 : 1;
    if (a->line != b->line) return a->line < b->line ? -1 : 1;
    if (a->column != b->column) return a->column < b->column ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

void diag_flush(Diags *d) {
    if (d->json) diag_json_emit(d, d->deferring);
    d->deferring = false;
    if (d->nheld > 1) qsort(d->held, (size_t)d->nheld, sizeof *d->held, held_order);
    for (int i = 0; i < d->nheld; i++) {
        fwrite(d->held[i].text, 1, d->held[i].len, d->out);
        free(d->held[i].text);
    }
    d->nheld = 0;
    fflush(d->out);
}

_Noreturn void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "physc: internal error: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    abort();
}
