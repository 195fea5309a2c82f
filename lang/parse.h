/* parse.h — entry point of the front end: text in, syntax tree out. */
#ifndef PHYSC_PARSE_H
#define PHYSC_PARSE_H
#include "ast.h"
#include "lexer.h"

typedef struct Parser {
    Arena *arena;
    Diags *diags;
    Lexer lex;
    Node *root;
    bool too_deep_reported;
} Parser;

/* Parses source file `file` (already in d). Returns its N_FILE node, or NULL on fatal errors;
   syntax errors are reported through d and counted in d->nerrors. */
Node *parse_file(Arena *arena, Diags *d, int file);

/* The tokens of p's lexer (lexer_init'ed on a file) as written, comments and line ends
   included, into *out (in p's arena): their count. Brackets are not matched and no line end
   is turned into a terminator: the text's own tokens, for fmt. */
int lex_raw_tokens(Parser *p, RawToken **out);
/* Whether a statement can end with token t: a line end after it, outside '(' and '[', ends
   the statement (lexer.re) */
bool lex_can_end_statement(int t);

/* Node constructors for the grammar actions (parse.c). */
Node *ast_new(Parser *p, NodeKind kind, Loc loc);
Node *ast_bin(Parser *p, int op, Node *a, Node *b, Loc loc, Loc oploc);
Node *ast_unary(Parser *p, NodeKind kind, Node *a, Loc loc);
void ast_push(Parser *p, PtrVec *v, Node *n);

#endif
