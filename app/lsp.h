/* lsp.h — `physc lsp`: a language server for .phys files over stdin and stdout (the Language
   Server Protocol's JSON-RPC, parsed with Debian's cJSON): diagnostics as the text changes
   (the real front end's), formatting (physc fmt's layout), document symbols, hover,
   go-to-definition and completion. */
#ifndef PHYSC_LSP_H
#define PHYSC_LSP_H
#include <stdio.h>

/* Serves until `exit` or the input's end: 0 after a shutdown request, else 1 */
int lsp_serve(FILE *in, FILE *out, const char *stdlib_dir, const char *version);

#endif
