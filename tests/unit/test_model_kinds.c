/* test_model_kinds.c — the one list of model kinds (runtime/models/model_kinds.h) agrees with what
   expands it: the compiler's names and coordinates, and each runtime family's own name and
   title (the family structs spell them too, for their messages). */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "models/model.h"
#include "models/model_kinds.h"
#include "system.h"

int main(void) {
    int rows = 0;
#define CHECK_ROW(kid, kname, ktitle, ...)                                                         \
    do {                                                                                                            \
        const PrtModelFamily *f = prt_model_family(#kname);                                                          \
        CHECK(f && !strcmp(f->name, #kname), "kind %s: a runtime family of that name", #kname);                        \
        CHECK(f && !strcmp(f->title, ktitle), "kind %s: the family's title '%s' is the table's '%s'", #kname,          \
              f ? f->title : "-", ktitle);                                                                           \
        CHECK(f && f->configure && f->net_role && f->open && f->close, "kind %s: the interface's required members",   \
              #kname);                                                                                              \
        CHECK(!strcmp(model_kind_name(MODEL_##kid), #kname), "MODEL_%s is named %s", #kid, #kname);                      \
        CHECK(!strcmp(prt_model_kinds[MODEL_##kid].name, #kname) && !strcmp(prt_model_kinds[MODEL_##kid].title, ktitle), \
              "kind %s: the runtime's row of the table", #kname);                                                        \
        CHECK((int)MODEL_##kid == rows, "MODEL_%s in the table's order", #kid);                                        \
        rows++;                                                                                                     \
    } while (0);
    PRT_MODEL_KINDS(CHECK_ROW)
#undef CHECK_ROW
    CHECK(rows == MODEL_NKINDS && rows == prt_model_nkinds, "%d rows, %d kinds", rows, (int)MODEL_NKINDS);
    CHECK(prt_model_family("nosuch") == NULL, "no family for an unknown name");
    printf("%s: %s\n", __FILE__, failures ? "FAILED" : "ok");
    return failures != 0;
}
