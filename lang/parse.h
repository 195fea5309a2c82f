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

/* Node constructors for the grammar actions (parse.c). */
Node *ast_new(Parser *p, NodeKind kind, Loc loc);
Node *ast_bin(Parser *p, int op, Node *a, Node *b, Loc loc, Loc oploc);
Node *ast_unary(Parser *p, NodeKind kind, Node *a, Loc loc);
void ast_push(Parser *p, PtrVec *v, Node *n);

#endif
