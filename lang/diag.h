/* diag.h — source files and compiler-style diagnostics (file:line:col: error: ...). */
#ifndef PHYSC_DIAG_H
#define PHYSC_DIAG_H
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* A source span. Lines and columns are 1-based; last_column is one past the span's end.
   The field names are Bison's, so this is the parser's location type too. */
typedef struct Loc {
    int first_line, first_column;
    int last_line, last_column;
    int file;
} Loc;

typedef struct SrcFile {
    char *path;
    const char *text; /* NUL-terminated copy; may contain NULs inside (the lexer reports them) */
    size_t len;
    size_t *line_starts;
    int nlines;
} SrcFile;

typedef enum { DIAG_ERROR, DIAG_WARNING, DIAG_NOTE } DiagLevel;

/* A diagnostic held back by diag_defer: its rendered text (with its notes) and position. */
typedef struct DiagHeld {
    int file, line, column;
    long seq;
    char *text;
    size_t len;
} DiagHeld;

/* A diagnostic of the JSON form: its level, span and message; a note's parent (else -1) */
typedef struct DiagRecord {
    DiagLevel level;
    Loc loc;
    bool located;
    char *message;
    unsigned code;
    int parent;
    long seq;
} DiagRecord;

typedef struct Diags {
    SrcFile **files;
    int nfiles, cap_files;
    int nerrors, nwarnings;
    int max_errors;   /* stop reporting after this many errors */
    bool stopped;     /* the cap was reached, or a fatal error (the rest would be meaningless):
                         callers should stop early, and later errors are not shown */
    bool color;
    FILE *out;
    bool deferring; /* between diag_defer and diag_flush */
    DiagHeld *held;
    int nheld, cap_held;
    /* --diagnostics-format json: each diagnostic one JSON line (its notes and fix-its in it),
       written once its notes are known (diag_flush, or the next diagnostic) */
    bool json;
    DiagRecord *records;
    int nrecords, cap_records, emitted, sort_from;
} Diags;

void diag_init(Diags *d, FILE *out);
void diag_free(Diags *d);

/* Adds a file whose bytes the Diags now owns (text[len] must be 0). Returns its index. */
int src_add(Diags *d, const char *path, char *text, size_t len);
/* Reads a file; on failure returns -1 and sets *err to strerror-like text. */
int src_load(Diags *d, const char *path, const char **err);

void diag_at(Diags *d, DiagLevel level, Loc loc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void diag_error(Diags *d, Loc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void diag_warning(Diags *d, Loc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void diag_note(Diags *d, Loc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* From diag_defer to diag_flush diagnostics are held and then printed in source order
   (each with the notes that followed it), whatever order the checker found them in. */
void diag_defer(Diags *d);
void diag_flush(Diags *d);

/* An error with no source position (e.g. a missing file): "physc: error: ..." */
void diag_plain_error(Diags *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Internal compiler bug: never caused by user input. Prints and aborts. */
_Noreturn void die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
