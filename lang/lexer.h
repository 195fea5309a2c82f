/* lexer.h — the re2c scanner's state: one struct, no globals. */
#ifndef PHYSC_LEXER_H
#define PHYSC_LEXER_H
#include <stdbool.h>

#include "diag.h"

enum { MAX_BRACKET_DEPTH = 256, MAX_IDENT_LEN = 255 };

typedef struct Bracket {
    char ch;
    Loc loc;
} Bracket;

typedef struct Lexer {
    const unsigned char *text, *cursor, *limit, *marker, *tok;
    const unsigned char *line_start;
    int line;
    int file;
    int last;               /* the last token returned, for automatic end-of-line terminators */
    Loc last_loc;
    bool pending_close;     /* a '}' seen: first returns a terminator, then the brace */
    Loc pending_loc;
    Bracket brackets[MAX_BRACKET_DEPTH];
    int depth;
    bool fatal;             /* stop: further input would only produce noise */
    bool eof_reported;      /* an unclosed bracket was reported at end of file */
    bool keep_comments;     /* lex_raw_tokens: comments are tokens too */
    bool quiet;             /* a syntax error was reported: no more until recovery is surely done, */
    int quiet_depth;        /* i.e. a statement starts outside the brackets the error was in */
    Diags *diags;
} Lexer;

void lexer_init(Lexer *lx, Diags *d, int file);

/* A token as written, for tools that keep the text (fmt): a parser token (parser.h), or a
   line end or a comment; its bytes in the source and where it starts (as Loc counts). */
enum { RAW_NEWLINE = -100, RAW_COMMENT = -101 };
typedef struct RawToken {
    int kind;
    const char *text;
    size_t len;
    int line, column;
} RawToken;
/* Checks UTF-8; on failure returns false and sets *bad to the offending byte offset. */
bool utf8_valid(const unsigned char *s, size_t n, size_t *bad);

#endif
