/* parse.c — runs the Bison parser over one file and builds syntax tree nodes. */
#include <string.h>

#include "parse.h"
#include "parser.h"

enum { MAX_EXPR_DEPTH = 1000 };

Node *ast_new(Parser *p, NodeKind kind, Loc loc) {
    Node *n = arena_alloc(p->arena, sizeof *n);
    n->kind = kind;
    n->loc = loc;
    n->loc2 = loc;
    n->depth = 1;
    return n;
}

/* Later passes recurse over expressions; a bound on depth keeps them safe on any input. */
static void check_depth(Parser *p, Node *n) {
    if (n->depth > MAX_EXPR_DEPTH && !p->too_deep_reported) {
        p->too_deep_reported = true;
        diag_error(p->diags, n->loc, "expression is nested too deeply (more than %d levels)", MAX_EXPR_DEPTH);
        p->lex.fatal = true;
    }
}

Node *ast_bin(Parser *p, int op, Node *a, Node *b, Loc loc, Loc oploc) {
    Node *n = ast_new(p, N_BIN, loc);
    n->op = op;
    n->a = a;
    n->b = b;
    n->loc2 = oploc;
    n->depth = 1 + (a->depth > b->depth ? a->depth : b->depth);
    check_depth(p, n);
    return n;
}

Node *ast_unary(Parser *p, NodeKind kind, Node *a, Loc loc) {
    Node *n = ast_new(p, kind, loc);
    n->a = a;
    n->depth = 1 + a->depth;
    check_depth(p, n);
    return n;
}

void ast_push(Parser *p, PtrVec *v, Node *n) {
    if (n) ptrvec_push(p->arena, v, n);
}

Node *parse_file(Arena *arena, Diags *d, int file) {
    Parser p;
    memset(&p, 0, sizeof p);
    p.arena = arena;
    p.diags = d;
    lexer_init(&p.lex, d, file);
    int rc = yyparse(&p);
    if (rc == 2 && !p.lex.fatal) diag_error(d, p.lex.last_loc, "out of memory while parsing");
    if (p.lex.fatal || !p.root) return NULL;
    return p.root;
}

const char *constraint_kind_name(ConstraintKind k) {
    switch (k) {
    case CK_LINK: return "link";
    case CK_TETHER: return "tether";
    case CK_JOINT: return "joint";
    case CK_AXIS: return "axis";
    }
    return "?";
}
