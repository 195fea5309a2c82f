/* opt.h — IR simplification: constant folding, algebraic identities, common-subexpression
   elimination and dead-code removal, so generated Jacobians keep only their nonzeros. */
#ifndef PHYSC_OPT_H
#define PHYSC_OPT_H
#include "ir.h"

/* Returns a simplified copy of f (same inputs, params and outputs). */
IrFn *opt_simplify(const IrFn *f);

#endif
