/* lexer.re — the .phys scanner (re2c 3.0). Besides tokens it keeps a stack of open
   brackets, so a missing ')' names the '(' it should close, and it inserts the end-of-line
   terminator the way Go does: at a line end, when the line's last token can end a
   statement and no '(' or '[' is open. Every malformed byte gets a diagnostic. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"
#include "parser.h"

enum { T_EOF_RAW = -2, T_LINEBREAK = -3, T_SKIP = -4, T_COMMENT = -5 };

void lexer_init(Lexer *lx, Diags *d, int file) {
    memset(lx, 0, sizeof *lx);
    SrcFile *f = d->files[file];
    lx->text = (const unsigned char *)f->text;
    lx->cursor = lx->line_start = lx->text;
    lx->limit = lx->text + f->len;
    lx->line = 1;
    lx->file = file;
    lx->diags = d;
}

bool utf8_valid(const unsigned char *s, size_t n, size_t *bad) {
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        size_t k = c < 0x80 ? 1 : (c >= 0xc2 && c < 0xe0) ? 2 : (c >= 0xe0 && c < 0xf0) ? 3
                 : (c >= 0xf0 && c < 0xf5) ? 4 : 0;
        if (k == 0 || i + k > n) goto fail;
        for (size_t j = 1; j < k; j++)
            if ((s[i + j] & 0xc0) != 0x80) goto fail;
        /* reject overlong 3/4-byte forms, surrogates and code points past U+10FFFF */
        if (k == 3 && ((c == 0xe0 && s[i + 1] < 0xa0) || (c == 0xed && s[i + 1] >= 0xa0))) goto fail;
        if (k == 4 && ((c == 0xf0 && s[i + 1] < 0x90) || (c == 0xf4 && s[i + 1] >= 0x90))) goto fail;
        i += k;
        continue;
    fail:
        *bad = i;
        return false;
    }
    return true;
}

static Loc loc_span(const Lexer *lx, const unsigned char *from, const unsigned char *to) {
    Loc l;
    l.file = lx->file;
    l.first_line = l.last_line = lx->line;
    l.first_column = (int)(from - lx->line_start) + 1;
    l.last_column = (int)(to - lx->line_start) + 1;
    return l;
}

static void newline(Lexer *lx, const unsigned char *after) {
    lx->line++;
    lx->line_start = after;
}

static const struct { const char *word; int token; } keywords[] = {
    {"anchor", ANCHOR}, {"axis", AXIS}, {"body", BODY}, {"const", CONST},
    {"coordinates", COORDINATES}, {"data", DATA}, {"eval", EVAL}, {"fn", FN}, {"for", FOR}, {"force", FORCE},
    {"import", IMPORT}, {"in", IN}, {"init", INIT}, {"inverse", INVERSE}, {"joint", JOINT},
    {"learned", LEARNED}, {"let", LET}, {"link", LINK}, {"model", MODEL}, {"param", PARAM},
    {"potential", POTENTIAL}, {"return", RETURN}, {"sum", SUM}, {"system", SYSTEM},
    {"tether", TETHER}, {"to", TO}, {"train", TRAIN},
};

static int keyword(const unsigned char *s, size_t n) {
    for (size_t i = 0; i < sizeof keywords / sizeof keywords[0]; i++)
        if (strlen(keywords[i].word) == n && memcmp(keywords[i].word, s, n) == 0) return keywords[i].token;
    return 0;
}

static int lex_number(Lexer *lx, Parser *p, YYSTYPE *lval, Loc loc) {
    size_t n = (size_t)(lx->cursor - lx->tok);
    char *s = arena_strndup(p->arena, (const char *)lx->tok, n);
    errno = 0;
    double v = strtod(s, NULL);
    if (errno == ERANGE && isinf(v)) {
        diag_error(lx->diags, loc, "number '%.40s%s' is too large for a double", s, n > 40 ? "..." : "");
        v = 0;
    } else if (errno == ERANGE && v == 0) {
        diag_warning(lx->diags, loc, "number '%.40s%s' is too small for a double; it is 0", s, n > 40 ? "..." : "");
    }
    lval->num = v;
    return NUM;
}

/* A string literal from the opening quote: escapes \" \\ \n \t; one line; valid UTF-8. */
static int lex_string(Lexer *lx, Parser *p, YYSTYPE *lval, Loc *loc) {
    const unsigned char *s = lx->cursor; /* after the opening quote */
    char *buf = arena_alloc(p->arena, (size_t)(lx->limit - s) + 1);
    size_t len = 0;
    for (;;) {
        if (s >= lx->limit || *s == '\n' || *s == 0) {
            lx->cursor = s;
            *loc = loc_span(lx, lx->tok, lx->tok + 1);
            diag_error(lx->diags, *loc, "string is not closed before the end of the line");
            break;
        }
        if (*s == '"') {
            lx->cursor = s + 1;
            break;
        }
        if (*s == '\\') {
            if (s + 1 >= lx->limit || s[1] == '\n' || s[1] == 0) { /* a backslash at the end: not an escape */
                s++;
                continue;
            }
            char c = s[1] == '"' ? '"' : s[1] == '\\' ? '\\' : s[1] == 'n' ? '\n' : s[1] == 't' ? '\t' : 0;
            if (!c) {
                lx->cursor = s;
                diag_error(lx->diags, loc_span(lx, s, s + 2), "unknown escape sequence in string");
                c = '?';
            }
            buf[len++] = c;
            s += 2;
            continue;
        }
        buf[len++] = (char)*s++;
    }
    buf[len] = 0;
    size_t bad;
    if (!utf8_valid((const unsigned char *)buf, len, &bad))
        diag_error(lx->diags, loc_span(lx, lx->tok, lx->cursor), "string is not valid UTF-8");
    *loc = loc_span(lx, lx->tok, lx->cursor);
    lval->str = buf;
    return STR;
}

static void lex_block_comment(Lexer *lx) {
    Loc open = loc_span(lx, lx->tok, lx->tok + 2);
    const unsigned char *s = lx->cursor;
    while (s + 1 < lx->limit && !(s[0] == '*' && s[1] == '/')) {
        if (*s == '\n') newline(lx, s + 1);
        s++;
    }
    if (s + 1 >= lx->limit) {
        diag_error(lx->diags, open, "comment is not closed: '/*' has no matching '*/'");
        lx->cursor = lx->limit;
        return;
    }
    lx->cursor = s + 2;
}

static void check_comment_utf8(Lexer *lx) {
    size_t bad;
    if (!utf8_valid(lx->tok, (size_t)(lx->cursor - lx->tok), &bad))
        diag_warning(lx->diags, loc_span(lx, lx->tok + bad, lx->tok + bad + 1),
                     "comment is not valid UTF-8 (byte 0x%02X)", lx->tok[bad]);
}

/* Bytes that cannot start a token: report the run once and skip it. */
static void lex_bad_bytes(Lexer *lx) {
    const unsigned char *s = lx->tok;
    unsigned c = *s;
    if (c >= 0x80) {
        size_t bad, n = 1;
        while (s + n < lx->limit && s[n] >= 0x80 && n < 4) n++;
        if (utf8_valid(s, n, &bad) || bad > 0) {
            /* a valid character: name it */
            size_t k = c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
            unsigned cp = k == 2 ? c & 0x1f : k == 3 ? c & 0x0f : c & 0x07;
            for (size_t j = 1; j < k; j++) cp = (cp << 6) | (s[j] & 0x3f);
            lx->cursor = s + k;
            diag_error(lx->diags, loc_span(lx, s, s + k),
                       "character U+%04X ('%.*s') is not allowed here: names are ASCII letters, digits and '_'",
                       cp, (int)k, (const char *)s);
            return;
        }
        while (lx->cursor < lx->limit && *lx->cursor >= 0x80) lx->cursor++;
        diag_error(lx->diags, loc_span(lx, s, lx->cursor), "invalid UTF-8 byte 0x%02X in source", c);
        return;
    }
    if (c == 0) {
        while (lx->cursor < lx->limit && *lx->cursor == 0) lx->cursor++;
        diag_error(lx->diags, loc_span(lx, s, s + 1), "NUL byte in source (is this a binary file?)");
        return;
    }
    if (c < 0x20 || c == 0x7f) {
        diag_error(lx->diags, loc_span(lx, s, s + 1), "unexpected control character 0x%02X in source", c);
        return;
    }
    diag_error(lx->diags, loc_span(lx, s, s + 1), "unexpected character '%c'", c);
}

static int scan(Lexer *lx, Parser *p, YYSTYPE *lval, Loc *loc) {
    for (;;) {
        lx->tok = lx->cursor;
        /*!re2c
            re2c:define:YYCTYPE = "unsigned char";
            re2c:define:YYCURSOR = "lx->cursor";
            re2c:define:YYMARKER = "lx->marker";
            re2c:define:YYLIMIT = "lx->limit";
            re2c:yyfill:enable = 0;
            re2c:eof = 0;

            digits = [0-9]+;
            number = digits ("." digits)? ([eE] [+-]? digits)?;
            ident  = [a-zA-Z_][a-zA-Z0-9_]*;

            $ { *loc = loc_span(lx, lx->cursor, lx->cursor); return T_EOF_RAW; }
            [ \t\r\v\f]+ { continue; }
            "\n" { *loc = loc_span(lx, lx->tok, lx->tok); newline(lx, lx->cursor); return T_LINEBREAK; }
            "//" [^\n\x00]* { check_comment_utf8(lx); if (lx->keep_comments) return T_COMMENT; continue; }
            "#" [^\n\x00]* { check_comment_utf8(lx); if (lx->keep_comments) return T_COMMENT; continue; }
            "/*" { lex_block_comment(lx); if (lx->keep_comments) return T_COMMENT; continue; }

            number { *loc = loc_span(lx, lx->tok, lx->cursor); return lex_number(lx, p, lval, *loc); }
            number [a-zA-Z_][a-zA-Z0-9_]* {
                *loc = loc_span(lx, lx->tok, lx->cursor);
                int n = (int)(lx->cursor - lx->tok);
                diag_error(lx->diags, *loc, "invalid number '%.*s%s'%s", n > 40 ? 40 : n, (const char *)lx->tok,
                           n > 40 ? "..." : "", strchr("eE", lx->tok[n - 1]) ? " (the exponent has no digits)"
                                                : " (a name cannot start with a digit; write '*' to multiply)");
                lval->num = 0;
                return NUM;
            }
            ident {
                *loc = loc_span(lx, lx->tok, lx->cursor);
                size_t n = (size_t)(lx->cursor - lx->tok);
                int kw = keyword(lx->tok, n);
                if (kw) return kw;
                if (n > MAX_IDENT_LEN) {
                    diag_error(lx->diags, *loc, "name is too long (%zu characters; at most %d)", n, MAX_IDENT_LEN);
                    n = MAX_IDENT_LEN;
                }
                lval->str = arena_strndup(p->arena, (const char *)lx->tok, n);
                return IDENT;
            }
            ["] { return lex_string(lx, p, lval, loc); }

            ".." { *loc = loc_span(lx, lx->tok, lx->cursor); return DOTDOT; }
            "+=" { *loc = loc_span(lx, lx->tok, lx->cursor); return PLUSEQ; }
            "-=" { *loc = loc_span(lx, lx->tok, lx->cursor); return MINUSEQ; }
            "*=" { *loc = loc_span(lx, lx->tok, lx->cursor); return STAREQ; }
            "/=" { *loc = loc_span(lx, lx->tok, lx->cursor); return SLASHEQ; }
            [-+*/^(){}[\],:;=.'] { *loc = loc_span(lx, lx->tok, lx->cursor); return *lx->tok; }

            * { lex_bad_bytes(lx); continue; }
        */
    }
}

static char closer_of(char open) { return open == '(' ? ')' : open == '[' ? ']' : '}'; }

/* Tracks brackets. Returns the token to hand to the parser, or T_SKIP. */
static int track_bracket(Lexer *lx, int t, Loc loc) {
    if (t == '(' || t == '[' || t == '{') {
        if (lx->depth == MAX_BRACKET_DEPTH) {
            diag_error(lx->diags, loc, "brackets are nested too deeply (more than %d levels)", MAX_BRACKET_DEPTH);
            lx->fatal = true;
            return YYEOF;
        }
        lx->brackets[lx->depth].ch = (char)t;
        lx->brackets[lx->depth].loc = loc;
        lx->depth++;
        return t;
    }
    if (t != ')' && t != ']' && t != '}') return t;
    if (lx->depth > 0 && closer_of(lx->brackets[lx->depth - 1].ch) == t) {
        lx->depth--;
        return t;
    }
    int match = -1;
    for (int i = lx->depth - 1; i >= 0; i--)
        if (closer_of(lx->brackets[i].ch) == t) {
            match = i;
            break;
        }
    if (match < 0) {
        Bracket *top = lx->depth > 0 ? &lx->brackets[lx->depth - 1] : NULL;
        if (top && top->ch != '{' && top->loc.first_line == loc.first_line) {
            /* `[1, 2)`: the wrong closer for a bracket opened on this line */
            diag_error(lx->diags, loc, "expected '%c' to close '%c' at column %d, found '%c'", closer_of(top->ch),
                       top->ch, top->loc.first_column, t);
            lx->depth--;
            return closer_of(top->ch);
        }
        diag_error(lx->diags, loc, "'%c' has no matching opening bracket", t);
        return T_SKIP;
    }
    /* A closer for an outer bracket: the inner one was left open. Close it now and
       read this closer again. */
    Bracket *open = &lx->brackets[lx->depth - 1];
    diag_error(lx->diags, loc, "expected '%c' to close '%c' at line %d, column %d, before '%c'",
               closer_of(open->ch), open->ch, open->loc.first_line, open->loc.first_column, t);
    lx->cursor = lx->tok;
    lx->depth--;
    return closer_of(open->ch);
}

bool lex_can_end_statement(int t) {
    /* keywords that can also be words (`mass learned`, `learned V : potential`) end lines too */
    return t == IDENT || t == NUM || t == STR || t == ')' || t == ']' || t == '}' || t == '\'' || t == LEARNED ||
           t == POTENTIAL || t == TRAIN || t == DATA || t == EVAL || t == INIT || t == MODEL || t == INVERSE ||
           t == AXIS || t == LINK || t == JOINT || t == TETHER || t == BODY || t == COORDINATES || t == FORCE;
}

static int emit(Lexer *lx, int t, Loc loc, Loc *out) {
    /* a statement ended at the top level: syntax errors may be reported again */
    if (lx->quiet && (lx->depth == 0 || lx->depth < lx->quiet_depth) && (lx->last == NEWLINE || lx->last == ';') &&
        t != NEWLINE && t != ';' && t != '}')
        lx->quiet = false;
    lx->last = t;
    lx->last_loc = loc;
    *out = loc;
    return t;
}

int yylex(YYSTYPE *lval, YYLTYPE *lloc, Parser *p) {
    Lexer *lx = &p->lex;
    if (lx->fatal || lx->diags->stopped) {
        *lloc = loc_span(lx, lx->cursor, lx->cursor);
        return YYEOF;
    }
    if (lx->pending_close) {
        lx->pending_close = false;
        return emit(lx, '}', lx->pending_loc, lloc);
    }
    /* a terminator sits right after the previous token */
    Loc after = lx->last_loc;
    after.first_line = after.last_line;
    after.first_column = after.last_column;
    for (;;) {
        Loc loc;
        int t = scan(lx, p, lval, &loc);
        bool in_braces = lx->depth == 0 || lx->brackets[lx->depth - 1].ch == '{';
        if (t == T_LINEBREAK) {
            if (in_braces && lex_can_end_statement(lx->last)) return emit(lx, NEWLINE, after, lloc);
            continue;
        }
        if (t == T_EOF_RAW) {
            if (lx->depth > 0 && !lx->eof_reported) {
                Bracket *b = &lx->brackets[lx->depth - 1];
                lx->eof_reported = true;
                diag_error(lx->diags, b->loc, "'%c' is not closed: expected '%c' before the end of the file",
                           b->ch, closer_of(b->ch));
            }
            if (lx->last && lx->last != NEWLINE && lx->last != ';' && lx->last != '{') return emit(lx, NEWLINE, after, lloc);
            *lloc = loc;
            return YYEOF;
        }
        t = track_bracket(lx, t, loc);
        if (t == T_SKIP) continue;
        if (t == YYEOF) {
            *lloc = loc;
            return YYEOF;
        }
        if (t == '}' && lx->last != NEWLINE && lx->last != ';' && lx->last != '{') {
            /* `{ mass 1 }`: the statement before a closing brace needs no terminator */
            lx->pending_close = true;
            lx->pending_loc = loc;
            return emit(lx, NEWLINE, after, lloc);
        }
        return emit(lx, t, loc, lloc);
    }
}

int lex_raw_tokens(Parser *p, RawToken **out) {
    Lexer *lx = &p->lex;
    lx->keep_comments = true;
    int n = 0, cap = 0;
    RawToken *toks = NULL;
    for (;;) {
        YYSTYPE lval;
        Loc loc;
        int line = lx->line; /* (a block comment's first line and column: scanning it counts its line ends) */
        const unsigned char *line_start = lx->line_start;
        int t = scan(lx, p, &lval, &loc);
        if (t == T_EOF_RAW || lx->fatal) break;
        if (n == cap) {
            RawToken *bigger = arena_alloc(p->arena, sizeof *toks * (size_t)(cap = cap ? 2 * cap : 256));
            if (n) memcpy(bigger, toks, sizeof *toks * (size_t)n);
            toks = bigger;
        }
        toks[n++] = (RawToken){.kind = t == T_LINEBREAK ? RAW_NEWLINE : t == T_COMMENT ? RAW_COMMENT : t,
                               .text = (const char *)lx->tok, .len = (size_t)(lx->cursor - lx->tok), .line = line,
                               .column = (int)(lx->tok - line_start) + 1};
    }
    lx->keep_comments = false;
    *out = toks;
    return n;
}
