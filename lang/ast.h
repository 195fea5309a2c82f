/* ast.h — the syntax tree of a .phys file, built by the parser in an arena. */
#ifndef PHYSC_AST_H
#define PHYSC_AST_H
#include "arena.h"
#include "diag.h"

typedef enum NodeKind {
    /* expressions */
    N_NUM,      /* num */
    N_STR,      /* name = string value */
    N_IDENT,    /* name */
    N_VEC,      /* [list...]: a vector, or a matrix when its items are vectors */
    N_BIN,      /* a op b; op is '+', '-', '*', '/', '^'; loc2 is the operator */
    N_NEG,      /* -a */
    N_CALL,     /* name(list...); loc2 is the name */
    N_INDEX,    /* a[list...] */
    N_MEMBER,   /* a.name */
    N_METHOD,   /* a.name(list...) */
    N_PRIME,    /* a' : the rate of a generalized coordinate */
    N_SUM,      /* sum(name in a..b, c) */
    /* top-level items and statements */
    N_FILE,     /* list: items */
    N_IMPORT,   /* name = path string */
    N_CONST,    /* name = a */
    N_PARAM,    /* name = a (overridable with --set name=value) */
    N_FN,       /* name(list: N_IDENT params) with list2: N_LET / N_RETURN statements, or a = body */
    N_LET,      /* let name = a */
    N_RETURN,   /* return a */
    N_SETTING,  /* name list... (e.g. `dim 3`, `mass 1.5`, `hidden [64, 64]`) */
    N_SYSTEM,   /* system name { list } */
    N_BODY,     /* body name[name2 in a..b] : kind { list: settings / N_POINTDEF } */
    N_POINTDEF, /* point name = a (a point fixed in a body, in its frame) */
    N_ANCHOR,   /* anchor name = a (a fixed world point) */
    N_CONSTRAINT, /* op = CK_*: a to b [length c] */
    N_POTENTIAL,  /* potential name = a */
    N_FOR,      /* for name in a..b { list } */
    N_COORDS,   /* coordinates: list = N_IDENT names, or name[a..b]; list2 = statements */
    N_INVERSE,  /* inverse { list2 } */
    N_INIT,     /* init { list2 } */
    N_FORCE,    /* force name { list2 }: non-conservative forces and torques */
    N_ASSIGN,   /* a op b; op is '=', '+', '-', '*', '/' (for =, +=, -=, *=, /=) */
    N_LEARNED,  /* learned name : kind { list: settings } */
    N_MODEL,    /* model name : kind { list: settings } */
    N_BLOCK,    /* data / train / eval { list: settings }; name is the block word */
} NodeKind;

typedef enum ConstraintKind { CK_LINK, CK_TETHER, CK_JOINT, CK_AXIS } ConstraintKind;

typedef struct Node Node;
struct Node {
    NodeKind kind;
    int op;
    Loc loc;        /* the whole construct */
    Loc loc2;       /* a secondary position: operator, callee name, kind word, `to` */
    double num;
    const char *name;
    const char *name2;
    const char *kind_word; /* body kind, learned role, model kind */
    Node *a, *b, *c;
    PtrVec list, list2;
    bool reported;  /* an error was reported here (loops are unrolled: report once) */
    int depth;      /* nesting depth of an expression (bounded to keep recursion safe) */
};

#define NODE_AT(vec, i) ((Node *)(vec).items[i])

const char *constraint_kind_name(ConstraintKind k);

#endif
