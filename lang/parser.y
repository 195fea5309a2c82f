/* parser.y — the .phys grammar (Bison). Statements end at a line end or ';'; the lexer
   inserts the end-of-line terminator where a statement can end (see lexer.re). */
%require "3.8"
%define api.pure full
%define api.location.type {Loc}
%define parse.error custom
%define parse.lac full
%expect 0
%locations
%param {Parser *p}

%code requires {
#include "parse.h"
#define YYLLOC_DEFAULT(Cur, Rhs, N)                                   \
    do {                                                              \
        if (N) {                                                      \
            (Cur).first_line = YYRHSLOC(Rhs, 1).first_line;           \
            (Cur).first_column = YYRHSLOC(Rhs, 1).first_column;       \
            (Cur).last_line = YYRHSLOC(Rhs, N).last_line;             \
            (Cur).last_column = YYRHSLOC(Rhs, N).last_column;         \
            (Cur).file = YYRHSLOC(Rhs, 1).file;                       \
        } else {                                                      \
            (Cur).first_line = (Cur).last_line = YYRHSLOC(Rhs, 0).last_line;       \
            (Cur).first_column = (Cur).last_column = YYRHSLOC(Rhs, 0).last_column; \
            (Cur).file = YYRHSLOC(Rhs, 0).file;                       \
        }                                                             \
    } while (0)
}

%code provides {
int yylex(YYSTYPE *lval, YYLTYPE *lloc, Parser *p);
void yyerror(YYLTYPE *loc, Parser *p, const char *msg);
}

%code {
#include <string.h>
/* Bison's own stack limit: deeper input is reported as too deeply nested. */
#define YYMAXDEPTH 20000

static Node *mk(Parser *p, NodeKind k, Loc loc) { return ast_new(p, k, loc); }
static Node *mk_setting(Parser *p, const char *key, Loc keyloc, PtrVec vals, Loc loc) {
    Node *n = mk(p, N_SETTING, loc);
    n->name = key;
    n->loc2 = keyloc;
    n->list = vals;
    return n;
}
/* Contextual words (`length`, `point`) are identifiers to the lexer; the grammar checks them. */
static void expect_word(Parser *p, const char *got, const char *want, Loc loc) {
    if (strcmp(got, want) != 0)
        diag_error(p->diags, loc, "expected '%s' here, found '%s'", want, got);
}
}

%union {
    double num;
    const char *str;
    Node *node;
    PtrVec list;
    int op;
}

%token <num> NUM "number"
%token <str> STR "string"
%token <str> IDENT "identifier"
%token NEWLINE "end of line"
%token IMPORT "'import'" CONST "'const'" PARAM "'param'" FN "'fn'" LET "'let'" RETURN "'return'"
%token SYSTEM "'system'" BODY "'body'" ANCHOR "'anchor'" LINK "'link'" TETHER "'tether'"
%token JOINT "'joint'" AXIS "'axis'" POTENTIAL "'potential'" FOR "'for'" IN "'in'" FORCE "'force'"
%token COORDINATES "'coordinates'" INVERSE "'inverse'" INIT "'init'" LEARNED "'learned'"
%token MODEL "'model'" DATA "'data'" TRAIN "'train'" EVAL "'eval'" SUM "'sum'" TO "'to'"
%token DOTDOT "'..'" PLUSEQ "'+='" MINUSEQ "'-='" STAREQ "'*='" SLASHEQ "'/='"

%type <node> item decl fn fn_stmt system sys_stmt body prop constraint coords for_sys
%type <node> asg_stmt for_asg expr postfix primary setting block_item length_opt
%type <list> items sys_list prop_list props_opt fn_stmts asg_list set_list settings_opt
%type <list> expr_list expr_list_opt args_opt params_opt ident_list
%type <op> asg_op block_word constraint_word
%type <str> word

%left '+' '-'
%left '*' '/'
%precedence UMINUS
%right '^'

%%

file: items { p->root = mk(p, N_FILE, @$); p->root->list = $1; } ;

/* A list of statements: each ends with a terminator; blank lines are empty statements.
   `error term` resynchronizes at the next line so one run reports several errors. */
term: NEWLINE | ';' ;

items
    : %empty { memset(&$$, 0, sizeof $$); }
    | items term { $$ = $1; }
    | items item term { $$ = $1; ast_push(p, &$$, $2); }
    | items error term { $$ = $1; yyerrok; }
    ;

item: decl | fn | system | block_item
    | IMPORT STR { $$ = mk(p, N_IMPORT, @$); $$->name = $2; }
    ;

decl
    : CONST IDENT '=' expr { $$ = mk(p, N_CONST, @$); $$->name = $2; $$->loc2 = @2; $$->a = $4; }
    | PARAM IDENT '=' expr { $$ = mk(p, N_PARAM, @$); $$->name = $2; $$->loc2 = @2; $$->a = $4; }
    ;

/* fn name(params) = expr   |   fn name(params) { let ...; return expr } */
fn
    : FN IDENT '(' params_opt ')' '=' expr {
          $$ = mk(p, N_FN, @$); $$->name = $2; $$->loc2 = @2; $$->list = $4; $$->a = $7; }
    | FN IDENT '(' params_opt ')' '{' fn_stmts '}' {
          $$ = mk(p, N_FN, @$); $$->name = $2; $$->loc2 = @2; $$->list = $4; $$->list2 = $7; }
    ;
params_opt: %empty { memset(&$$, 0, sizeof $$); } | ident_list ;
ident_list
    : IDENT { memset(&$$, 0, sizeof $$); Node *n = mk(p, N_IDENT, @1); n->name = $1; ast_push(p, &$$, n); }
    | ident_list ',' IDENT { $$ = $1; Node *n = mk(p, N_IDENT, @3); n->name = $3; ast_push(p, &$$, n); }
    ;
fn_stmts
    : %empty { memset(&$$, 0, sizeof $$); }
    | fn_stmts term { $$ = $1; }
    | fn_stmts fn_stmt term { $$ = $1; ast_push(p, &$$, $2); }
    | fn_stmts error term { $$ = $1; yyerrok; }
    ;
fn_stmt
    : LET IDENT '=' expr { $$ = mk(p, N_LET, @$); $$->name = $2; $$->loc2 = @2; $$->a = $4; }
    | RETURN expr { $$ = mk(p, N_RETURN, @$); $$->a = $2; }
    ;

/* system name { dim 3; body ...; link ...; potential ...; coordinates ...; init ... } */
system: SYSTEM IDENT '{' sys_list '}' {
          $$ = mk(p, N_SYSTEM, @$); $$->name = $2; $$->loc2 = @2; $$->list = $4; } ;
sys_list
    : %empty { memset(&$$, 0, sizeof $$); }
    | sys_list term { $$ = $1; }
    | sys_list sys_stmt term { $$ = $1; ast_push(p, &$$, $2); }
    | sys_list error term { $$ = $1; yyerrok; }
    ;
sys_stmt
    : setting | decl | fn | body | constraint | coords | for_sys
    | ANCHOR IDENT '=' expr { $$ = mk(p, N_ANCHOR, @$); $$->name = $2; $$->loc2 = @2; $$->a = $4; }
    | POTENTIAL IDENT '=' expr { $$ = mk(p, N_POTENTIAL, @$); $$->name = $2; $$->loc2 = @2; $$->a = $4; }
    | INVERSE '{' asg_list '}' { $$ = mk(p, N_INVERSE, @$); $$->list2 = $3; }
    | INIT '{' asg_list '}' { $$ = mk(p, N_INIT, @$); $$->list2 = $3; }
    | FORCE IDENT '{' asg_list '}' { $$ = mk(p, N_FORCE, @$); $$->name = $2; $$->loc2 = @2; $$->list2 = $4; }
    ;
for_sys: FOR IDENT IN expr DOTDOT expr '{' sys_list '}' {
          $$ = mk(p, N_FOR, @$); $$->name = $2; $$->loc2 = @2; $$->a = $4; $$->b = $6; $$->list = $8; } ;

/* body name : kind { props }   |   body name[i in 1..N] : kind { props } */
body
    : BODY IDENT ':' IDENT props_opt {
          $$ = mk(p, N_BODY, @$); $$->name = $2; $$->loc2 = @4; $$->kind_word = $4; $$->list = $5; }
    | BODY IDENT '[' IDENT IN expr DOTDOT expr ']' ':' IDENT props_opt {
          $$ = mk(p, N_BODY, @$); $$->name = $2; $$->name2 = $4; $$->a = $6; $$->b = $8;
          $$->loc2 = @11; $$->kind_word = $11; $$->list = $12; }
    ;
props_opt: %empty { memset(&$$, 0, sizeof $$); } | '{' prop_list '}' { $$ = $2; } ;
prop_list
    : %empty { memset(&$$, 0, sizeof $$); }
    | prop_list term { $$ = $1; }
    | prop_list prop term { $$ = $1; ast_push(p, &$$, $2); }
    | prop_list error term { $$ = $1; yyerrok; }
    ;
prop
    : setting
    | IDENT IDENT '=' expr {
          expect_word(p, $1, "point", @1);
          $$ = mk(p, N_POINTDEF, @$); $$->name = $2; $$->loc2 = @2; $$->a = $4; }
    ;

/* link A to B [length L] | tether A to P [length L] | joint A to B | axis A to B */
constraint: constraint_word expr TO expr length_opt {
          $$ = mk(p, N_CONSTRAINT, @$); $$->op = $1; $$->a = $2; $$->b = $4; $$->c = $5; $$->loc2 = @3; } ;
constraint_word: LINK { $$ = CK_LINK; } | TETHER { $$ = CK_TETHER; } | JOINT { $$ = CK_JOINT; } | AXIS { $$ = CK_AXIS; } ;
length_opt
    : %empty { $$ = NULL; }
    | IDENT expr { expect_word(p, $1, "length", @1); $$ = $2; }
    ;

/* coordinates theta[1..N] { ... }   |   coordinates phi, theta, psi { ... } */
coords
    : COORDINATES ident_list '{' asg_list '}' {
          $$ = mk(p, N_COORDS, @$); $$->list = $2; $$->list2 = $4; }
    | COORDINATES IDENT '[' expr DOTDOT expr ']' '{' asg_list '}' {
          $$ = mk(p, N_COORDS, @$); $$->name = $2; $$->loc2 = @2; $$->a = $4; $$->b = $6; $$->list2 = $9; }
    ;

/* Statement lists of coordinates / inverse / init: assignments, let, for. */
asg_list
    : %empty { memset(&$$, 0, sizeof $$); }
    | asg_list term { $$ = $1; }
    | asg_list asg_stmt term { $$ = $1; ast_push(p, &$$, $2); }
    | asg_list error term { $$ = $1; yyerrok; }
    ;
asg_stmt
    : postfix asg_op expr { $$ = mk(p, N_ASSIGN, @$); $$->op = $2; $$->a = $1; $$->b = $3; $$->loc2 = @2; }
    | LET IDENT '=' expr { $$ = mk(p, N_LET, @$); $$->name = $2; $$->loc2 = @2; $$->a = $4; }
    | for_asg
    ;
asg_op: '=' { $$ = '='; } | PLUSEQ { $$ = '+'; } | MINUSEQ { $$ = '-'; } | STAREQ { $$ = '*'; } | SLASHEQ { $$ = '/'; } ;
for_asg: FOR IDENT IN expr DOTDOT expr '{' asg_list '}' {
          $$ = mk(p, N_FOR, @$); $$->name = $2; $$->loc2 = @2; $$->a = $4; $$->b = $6; $$->list2 = $8; } ;

/* learned V : potential { ... }   model chnn : chnn { ... }   data { ... } */
block_item
    : LEARNED IDENT ':' word settings_opt {
          $$ = mk(p, N_LEARNED, @$); $$->name = $2; $$->loc2 = @4; $$->kind_word = $4; $$->list = $5; }
    | MODEL IDENT ':' word settings_opt {
          $$ = mk(p, N_MODEL, @$); $$->name = $2; $$->loc2 = @4; $$->kind_word = $4; $$->list = $5; }
    | block_word '{' set_list '}' {
          $$ = mk(p, N_BLOCK, @$); $$->name = $1 == DATA ? "data" : $1 == TRAIN ? "train" : "eval";
          $$->loc2 = @1; $$->list = $3; }
    ;
/* Keys of settings blocks and kind words may be keywords: `train 800`, `learned V : potential`. */
word: IDENT | POTENTIAL { $$ = "potential"; } | FORCE { $$ = "force"; } | TRAIN { $$ = "train"; } | DATA { $$ = "data"; }
    | EVAL { $$ = "eval"; } | INIT { $$ = "init"; } | LEARNED { $$ = "learned"; } | MODEL { $$ = "model"; }
    | INVERSE { $$ = "inverse"; } | AXIS { $$ = "axis"; } | LINK { $$ = "link"; } | JOINT { $$ = "joint"; }
    | TETHER { $$ = "tether"; } | BODY { $$ = "body"; } | COORDINATES { $$ = "coordinates"; } ;
block_word: DATA { $$ = DATA; } | TRAIN { $$ = TRAIN; } | EVAL { $$ = EVAL; } ;
settings_opt: %empty { memset(&$$, 0, sizeof $$); } | '{' set_list '}' { $$ = $2; } ;
set_list
    : %empty { memset(&$$, 0, sizeof $$); }
    | set_list term { $$ = $1; }
    | set_list word expr_list term { $$ = $1; ast_push(p, &$$, mk_setting(p, $2, @2, $3, @2)); }
    | set_list word term { $$ = $1; PtrVec none = {0}; ast_push(p, &$$, mk_setting(p, $2, @2, none, @2)); }
    | set_list error term { $$ = $1; yyerrok; }
    ;
setting
    : IDENT expr_list { $$ = mk_setting(p, $1, @1, $2, @$); }
    | IDENT { PtrVec none = {0}; $$ = mk_setting(p, $1, @1, none, @$); }
    ;

/* Expressions. Unary minus binds looser than '^': -x^2 is -(x^2). */
expr
    : expr '+' expr { $$ = ast_bin(p, '+', $1, $3, @$, @2); }
    | expr '-' expr { $$ = ast_bin(p, '-', $1, $3, @$, @2); }
    | expr '*' expr { $$ = ast_bin(p, '*', $1, $3, @$, @2); }
    | expr '/' expr { $$ = ast_bin(p, '/', $1, $3, @$, @2); }
    | expr '^' expr { $$ = ast_bin(p, '^', $1, $3, @$, @2); }
    | '-' expr %prec UMINUS { $$ = ast_unary(p, N_NEG, $2, @$); }
    | postfix
    ;
postfix
    : primary
    | postfix '[' expr_list ']' { $$ = ast_unary(p, N_INDEX, $1, @$); $$->list = $3; $$->loc2 = @2; }
    | postfix '.' IDENT { $$ = ast_unary(p, N_MEMBER, $1, @$); $$->name = $3; $$->loc2 = @3; }
    | postfix '.' FORCE { $$ = ast_unary(p, N_MEMBER, $1, @$); $$->name = "force"; $$->loc2 = @3; }
    | postfix '.' IDENT '(' args_opt ')' {
          $$ = ast_unary(p, N_METHOD, $1, @$); $$->name = $3; $$->loc2 = @3; $$->list = $5; }
    | postfix '\'' { $$ = ast_unary(p, N_PRIME, $1, @$); }
    ;
primary
    : NUM { $$ = mk(p, N_NUM, @$); $$->num = $1; }
    | STR { $$ = mk(p, N_STR, @$); $$->name = $1; }
    | IDENT { $$ = mk(p, N_IDENT, @$); $$->name = $1; }
    | LEARNED { $$ = mk(p, N_IDENT, @$); $$->name = "learned"; }
    | IDENT '(' args_opt ')' { $$ = mk(p, N_CALL, @$); $$->name = $1; $$->loc2 = @1; $$->list = $3; }
    | '(' expr ')' { $$ = $2; }
    | '[' expr_list_opt ']' { $$ = mk(p, N_VEC, @$); $$->list = $2; }
    | SUM '(' IDENT IN expr DOTDOT expr ',' expr ')' {
          $$ = mk(p, N_SUM, @$); $$->name = $3; $$->loc2 = @3; $$->a = $5; $$->b = $7; $$->c = $9; }
    ;
args_opt: expr_list_opt ;
expr_list_opt: %empty { memset(&$$, 0, sizeof $$); } | expr_list | expr_list ',' ;
expr_list
    : expr { memset(&$$, 0, sizeof $$); ast_push(p, &$$, $1); }
    | expr_list ',' expr { $$ = $1; ast_push(p, &$$, $3); }
    ;

%%

/* Token names for messages: Bison quotes string aliases; strip the outer quotes. */
static const char *token_display(yysymbol_kind_t sym, char *buf, size_t n) {
    const char *s = yysymbol_name(sym);
    size_t len = strlen(s);
    if (len >= 2 && s[0] == '"' && s[len - 1] == '"') {
        snprintf(buf, n, "%.*s", (int)(len - 2), s + 1);
        return buf;
    }
    return s;
}

static int yyreport_syntax_error(const yypcontext_t *ctx, Parser *p) {
    yysymbol_kind_t got = yypcontext_token(ctx);
    if (p->lex.fatal || p->lex.eof_reported) return 0;
    /* After an error, stay quiet until the parser is back at the top level: recovery
       skips to a line end and may lose track of braces, so later errors would be noise. */
    if (p->lex.quiet) return 0;
    const Lexer *lx = &p->lex;
    const char *gotname = yysymbol_name(got);
    bool got_opener = !strcmp(gotname, "'('") || !strcmp(gotname, "'['") || !strcmp(gotname, "'{'");
    p->lex.quiet = true;
    p->lex.quiet_depth = lx->depth - (got_opener ? 1 : 0);
    const Loc *at = yypcontext_location(ctx);
    if (lx->depth > 0) {
        /* an unclosed '(' or '[' from an earlier line is the real cause */
        const Bracket *b = &lx->brackets[lx->depth - 1];
        if (b->ch != '{' && b->loc.first_line < at->first_line) {
            diag_error(p->diags, b->loc, "'%c' is not closed: expected '%c' before line %d", b->ch,
                       b->ch == '(' ? ')' : ']', at->first_line);
            p->lex.fatal = true;
            return 0;
        }
    }
    enum { MAX_EXPECTED = 6, MAX_ALL = 128 };
    yysymbol_kind_t expected[MAX_EXPECTED], all[MAX_ALL];
    int n = yypcontext_expected_tokens(ctx, expected, MAX_EXPECTED);
    int nall = yypcontext_expected_tokens(ctx, all, MAX_ALL);
    bool wants_expr = false, wants_to = false;
    for (int i = 0; i < nall; i++) {
        if (all[i] == YYSYMBOL_NUM) wants_expr = true;
        if (all[i] == YYSYMBOL_TO) wants_to = true;
    }
    char msg[512], buf[64];
    int len = 0;
    if (got == YYSYMBOL_IDENT || got == YYSYMBOL_NUM) {
        int toklen = (int)(lx->cursor - lx->tok);
        if (toklen > 40) toklen = 40;
        len = snprintf(msg, sizeof msg, "unexpected %s '%.*s'", token_display(got, buf, sizeof buf),
                       toklen, lx->tok);
    } else {
        len = snprintf(msg, sizeof msg, "unexpected %s", token_display(got, buf, sizeof buf));
    }
    bool wants_brace = false;
    if (n > 0 && n < MAX_EXPECTED) {
        len += snprintf(msg + len, sizeof msg - (size_t)len, ", expected ");
        for (int i = 0; i < n; i++) {
            if (expected[i] == YYSYMBOL_YYEOF) continue;
            if (strcmp(yysymbol_name(expected[i]), "'{'") == 0) wants_brace = true;
            const char *sep = i == 0 ? "" : i == n - 1 ? " or " : ", ";
            len += snprintf(msg + len, sizeof msg - (size_t)len, "%s%s", sep,
                            token_display(expected[i], buf, sizeof buf));
            if (len >= (int)sizeof msg) break;
        }
    }
    if ((n <= 0 || n >= MAX_EXPECTED) && wants_to && len < (int)sizeof msg)
        len += snprintf(msg + len, sizeof msg - (size_t)len, ", expected 'to'");
    else if ((n <= 0 || n >= MAX_EXPECTED) && wants_expr && len < (int)sizeof msg)
        len += snprintf(msg + len, sizeof msg - (size_t)len, ", expected an expression");
    if (got == YYSYMBOL_NEWLINE && wants_brace && len < (int)sizeof msg)
        snprintf(msg + len, sizeof msg - (size_t)len, " (an opening '{' goes on the same line)");
    diag_error(p->diags, *at, "%s", msg);
    return 0;
}

void yyerror(YYLTYPE *loc, Parser *p, const char *msg) {
    if (p->lex.fatal) return;
    if (strstr(msg, "exhausted")) {
        diag_error(p->diags, *loc, "input is nested too deeply for the parser");
        p->lex.fatal = true;
        return;
    }
    diag_error(p->diags, *loc, "%s", msg);
}
