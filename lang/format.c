/* format.c — `physc fmt`'s layout (format.h). The syntax tree says what the tokens are (an
   index's '[' from a setting's vector, a call's '(' from a parenthesis); the tokens as
   written (lex_raw_tokens) give the text, comments and line breaks; the layout is rebuilt
   from them line by line. Whitespace never changes a .phys file's meaning (the lexer drops
   it; only line ends end statements, and they are kept), so the output parses as the input. */
#include "format.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"
#include "parser.h"

enum { INDENT = 2, COMMENT_GAP = 2 };

/* Where tight brackets open: an index's '[' (N_INDEX's loc2) and the names a '(' follows
   without a space (calls, methods, fn definitions), by line and column */
typedef struct Spots {
    int (*at)[2];
    int n, cap;
} Spots;

static void spot_add(Arena *a, Spots *s, Loc l) {
    if (s->n == s->cap) {
        int (*bigger)[2] = arena_alloc(a, sizeof *bigger * (size_t)(s->cap = s->cap ? 2 * s->cap : 64));
        if (s->n) memcpy(bigger, s->at, sizeof *bigger * (size_t)s->n);
        s->at = bigger;
    }
    s->at[s->n][0] = l.first_line, s->at[s->n][1] = l.first_column, s->n++;
}

static bool spot_has(const Spots *s, int line, int column) {
    for (int i = 0; i < s->n; i++)
        if (s->at[i][0] == line && s->at[i][1] == column) return true;
    return false;
}

static void find_spots(Arena *a, const Node *n, Spots *index, Spots *callee) {
    if (!n) return;
    if (n->kind == N_INDEX) spot_add(a, index, n->loc2);
    if (n->kind == N_CALL || n->kind == N_METHOD || n->kind == N_FN) spot_add(a, callee, n->loc2);
    find_spots(a, n->a, index, callee), find_spots(a, n->b, index, callee), find_spots(a, n->c, index, callee);
    for (int i = 0; i < n->list.len; i++) find_spots(a, NODE_AT(n->list, i), index, callee);
    for (int i = 0; i < n->list2.len; i++) find_spots(a, NODE_AT(n->list2, i), index, callee);
}

/* A growing text */
typedef struct Text {
    char *s;
    size_t len, cap;
} Text;

static void put(Text *t, const char *s, size_t n) {
    if (t->len + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 4096;
        while (t->len + n + 1 > cap) cap *= 2;
        char *bigger = realloc(t->s, cap);
        if (!bigger) abort();
        t->s = bigger, t->cap = cap;
    }
    memcpy(t->s + t->len, s, n);
    t->len += n;
    t->s[t->len] = 0;
}

static void put_spaces(Text *t, int n) {
    for (int i = 0; i < n; i++) put(t, " ", 1);
}

static bool operand_end(int k) { return k == IDENT || k == NUM || k == STR || k == ')' || k == ']' || k == '\''; }
static bool is_open(int k) { return k == '(' || k == '[' || k == '{'; }
static bool is_close(int k) { return k == ')' || k == ']' || k == '}'; }

typedef struct Layout {
    const RawToken *tok;
    const bool *unary; /* a sign before its operand (no space after it) */
    Spots index, callee;
} Layout;

/* Whether token j follows token i (on the same line) with a space */
static bool space_between(const Layout *L, int i, int j) {
    int p = L->tok[i].kind, t = L->tok[j].kind;
    if (t == RAW_COMMENT || p == '{' || t == '}') return true;
    if (t == ',' || t == ';' || t == ')' || t == ']' || t == '\'' || t == '.' || p == '.') return false;
    if (t == DOTDOT || p == DOTDOT || t == '^' || p == '^' || p == '(' || p == '[' || L->unary[i]) return false;
    if (t == '(') return !(p == SUM || (p == IDENT && spot_has(&L->callee, L->tok[i].line, L->tok[i].column)));
    if (t == '[') /* an index, or a declared array's bounds (`body bob[i in 1..N]`); else a vector */
        return !(spot_has(&L->index, L->tok[j].line, L->tok[j].column) ||
                 (p == IDENT && i > 0 && (L->tok[i - 1].kind == BODY || L->tok[i - 1].kind == COORDINATES)));
    return true;
}

/* A token's text; a block comment's line ends as \n (a CR LF file comes out with LF) */
static void put_token(Text *t, const RawToken *tok) {
    for (size_t i = 0; i < tok->len; i++)
        if (!(tok->kind == RAW_COMMENT && tok->text[i] == '\r' && i + 1 < tok->len && tok->text[i + 1] == '\n'))
            put(t, tok->text + i, 1);
}

/* A line of the output: its code, its trailing comment (or a comment alone), its indent */
typedef struct OutLine {
    Text code;
    const char *comment;
    size_t comment_len;
    int indent;
    bool opens, closes; /* ends with '{', starts with '}' */
} OutLine;

static bool blank(const OutLine *l) { return !l->code.len && !l->comment; }

/* The brackets open before a line (each with the indent of the line that opened it), the
   previous significant token, and the indent of the statement the line may continue */
typedef struct Nesting {
    char open[256];
    int base[256];
    int depth, last, statement;
} Nesting;

/* Whether the line end before the next line was no terminator (the lexer's rule) */
static bool continues(const Nesting *n) {
    bool in_braces = n->depth == 0 || n->open[n->depth - 1] == '{';
    return n->last && n->last != ';' && n->last != '{' && n->last != '}' && !(in_braces && lex_can_end_statement(n->last));
}

/* A line's indent: a line that starts by closing brackets, that of the line that opened the
   first of them; inside '(' or '[', two more than the line that opened it; a statement's
   continuation, two more than its first line; else two more than the line of its '{' */
static int indent_of(Nesting *n, int lead, bool code) {
    int d = n->depth - lead;
    if (lead > 0) return n->base[d];
    if (d > 0 && n->open[d - 1] != '{') return n->base[d - 1] + INDENT;
    if (code && continues(n)) return n->statement + INDENT;
    int indent = d > 0 ? n->base[d - 1] + INDENT : 0;
    if (code) n->statement = indent;
    return indent;
}

/* Tokens first..last (a source line) as an output line */
static OutLine make_line(const Layout *L, int first, int last, Nesting *nest) {
    OutLine o = {0};
    int lead = 0;
    while (first + lead <= last && is_close(L->tok[first + lead].kind)) lead++;
    if (lead > nest->depth) lead = nest->depth;
    o.indent = indent_of(nest, lead, first <= last && L->tok[first].kind != RAW_COMMENT);
    int end = last;
    if (end >= first && L->tok[end].kind == RAW_COMMENT) { /* a comment ends the line: kept apart, aligned later */
        o.comment = L->tok[end].text, o.comment_len = L->tok[end].len;
        while (o.comment_len && strchr(" \t\r", o.comment[o.comment_len - 1])) o.comment_len--;
        end--;
    }
    for (int j = first; j <= end; j++) {
        if (j > first && space_between(L, j - 1, j)) put(&o.code, " ", 1);
        put_token(&o.code, &L->tok[j]);
    }
    for (int j = first; j <= last; j++) {
        int k = L->tok[j].kind;
        if (is_open(k) && nest->depth < (int)sizeof nest->open)
            nest->base[nest->depth] = o.indent, nest->open[nest->depth++] = (char)k;
        else if (is_close(k) && nest->depth > 0) nest->depth--;
        if (k != RAW_COMMENT) nest->last = k;
    }
    o.opens = end >= first && L->tok[end].kind == '{';
    o.closes = lead > 0 && L->tok[first].kind == '}';
    return o;
}

/* The lines with at most one blank line in a row, none at the ends, after '{' or before '}' */
static int squeeze_blanks(OutLine *lines, int n) {
    int m = 0;
    for (int i = 0; i < n; i++) {
        int next = i + 1; /* the next line with something on it: a run of blanks before '}' goes whole */
        while (next < n && blank(&lines[next])) next++;
        bool drop = blank(&lines[i]) && (m == 0 || blank(&lines[m - 1]) || lines[m - 1].opens || next == n ||
                                         lines[next].closes);
        if (drop) free(lines[i].code.s);
        else lines[m++] = lines[i];
    }
    while (m > 0 && blank(&lines[m - 1])) free(lines[--m].code.s);
    return m;
}

/* The text: the trailing comments of consecutive lines in one column, two spaces past the
   longest code of the run */
static void put_lines(Text *t, const OutLine *lines, int n) {
    for (int i = 0; i < n;) {
        int j = i, column = 0;
        while (j < n && lines[j].code.len && lines[j].comment) {
            int w = lines[j].indent + (int)lines[j].code.len + COMMENT_GAP;
            column = w > column ? w : column;
            j++;
        }
        if (j == i) j = i + 1;
        for (int k = i; k < j; k++) {
            const OutLine *l = &lines[k];
            if (!blank(l)) put_spaces(t, l->indent);
            put(t, l->code.s ? l->code.s : "", l->code.len);
            if (l->comment && l->code.len) put_spaces(t, column - l->indent - (int)l->code.len);
            if (l->comment) put(t, l->comment, l->comment_len);
            put(t, "\n", 1);
        }
        i = j;
    }
}

char *format_file(Arena *arena, Diags *d, int file, size_t *len) {
    int errors = d->nerrors;
    Node *root = parse_file(arena, d, file);
    if (!root || d->nerrors > errors) return NULL;
    Parser p = {.arena = arena, .diags = d};
    lexer_init(&p.lex, d, file);
    RawToken *tok;
    int n = lex_raw_tokens(&p, &tok);
    bool *unary = arena_alloc(arena, (size_t)n + 1);
    Layout L = {.tok = tok, .unary = unary};
    find_spots(arena, root, &L.index, &L.callee);
    for (int j = 0, prev = 0; j < n; j++) {
        int k = tok[j].kind;
        if (k == RAW_NEWLINE || k == RAW_COMMENT) continue;
        unary[j] = (k == '-' || k == '+') && !operand_end(prev);
        prev = k;
    }
    OutLine *lines = calloc((size_t)n + 2, sizeof *lines);
    if (!lines) abort();
    int nl = 0;
    Nesting nest = {.depth = 0};
    for (int first = 0; first <= n;) {
        int last = first;
        while (last < n && tok[last].kind != RAW_NEWLINE) last++;
        lines[nl++] = make_line(&L, first, last - 1, &nest);
        first = last + 1;
    }
    nl = squeeze_blanks(lines, nl);
    Text out = {0};
    put_lines(&out, lines, nl);
    for (int i = 0; i < nl; i++) free(lines[i].code.s);
    free(lines);
    char *text = arena_alloc(arena, out.len + 1);
    if (out.len) memcpy(text, out.s, out.len);
    free(out.s);
    *len = out.len;
    return text;
}
