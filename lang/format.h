/* format.h — the canonical layout of a .phys file (`physc fmt`), from its own tokens as the
   lexer reads them, comments kept where they are. */
#ifndef PHYSC_FORMAT_H
#define PHYSC_FORMAT_H
#include <stddef.h>

#include "arena.h"
#include "diag.h"

/* The canonical text of source file `file` of d (NUL-terminated, in arena; *len its bytes),
   or NULL after reporting its syntax errors through d (a file that does not parse is not
   formatted). The layout: the author's line breaks, at most one blank line in a row and none
   after `{` or before `}`; two spaces an open brace or bracket of indentation; one space
   between words, around binary operators, `=` and `:`, after `,` and `;`, none inside
   brackets, before `(` or `[` of a call or an index, around `^`, `.` and `..`, after a unary
   sign; numbers, strings and comments as written; the trailing comments of consecutive lines
   in one column. Formatting its output again gives the same text. */
char *format_file(Arena *arena, Diags *d, int file, size_t *len);

#endif
