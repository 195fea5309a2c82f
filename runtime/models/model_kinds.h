/* model_kinds.h — every kind of model a program may declare (`model NAME : KIND { ... }`),
   one row each. The compiler's ModelKind enum, the kind names sema accepts and prints, and
   the runtime's table of families all expand this list, so it is written once: a new kind is
   a new row here and a family of its own (a file defining prt_family_<name>; a row without
   one fails to link).

   X(ID, name, title, coords, learns_from, predicts_with)
     ID            MODEL_<ID> in the compiler
     name          the language's word, and the family's symbol prt_family_<name>
     title         as printed
     coords        PRT_COORDS_CARTESIAN or PRT_COORDS_GENERALIZED: where the model's state is
     learns_from   what its loss sees of the data
     predicts_with how its test rollouts step */
#ifndef PRT_MODEL_KINDS_H
#define PRT_MODEL_KINDS_H

enum { PRT_COORDS_CARTESIAN, PRT_COORDS_GENERALIZED };

#define PRT_MODEL_KINDS(X)                                                                                            \
    X(CHNN, chnn, "CHNN", PRT_COORDS_CARTESIAN, "(x, v) chunks", "dopri5 on the projected field")                     \
    X(CLNN, clnn, "CLNN", PRT_COORDS_CARTESIAN, "(x, v) chunks", "dopri5 on Eq. 7's accelerations")                   \
    X(NODE, node, "NODE", PRT_COORDS_GENERALIZED, "(q, qdot) chunks", "dopri5")                                       \
    X(HNN, hnn, "HNN", PRT_COORDS_GENERALIZED, "(q, qdot) chunks", "dopri5")                                          \
    X(DELAN, delan, "DeLaN", PRT_COORDS_GENERALIZED, "(q, qdot) chunks", "dopri5")                                    \
    X(LNN, lnn, "LNN", PRT_COORDS_GENERALIZED, "(q, qdot) chunks", "dopri5")                                          \
    X(DTLNN, dtlnn, "DT-LNN", PRT_COORDS_CARTESIAN, "consecutive positions", "its own implicit step (Newton)")       \
    X(LIET2, liet2, "Lie T2", PRT_COORDS_CARTESIAN, "(q, R, p, Pi) samples", "its own step on SO(3)")

#endif
