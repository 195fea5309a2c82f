/* diag_json.h — the JSON form of diagnostics (diag_json.c), for diag.c. */
#ifndef PHYSC_DIAG_JSON_H
#define PHYSC_DIAG_JSON_H
#include <stdarg.h>

#include "diag.h"

/* Keeps a diagnostic (a note joins the last error or warning); the one before it is written
   first unless deferring */
void diag_json_record(Diags *d, DiagLevel level, Loc loc, bool located, const char *fmt, va_list ap);
/* Writes the kept diagnostics, one JSON line each (sort: in source order, as diag_flush) */
void diag_json_emit(Diags *d, bool sort);

#endif
