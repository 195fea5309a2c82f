/* pedantic.h — `physc check --pedantic`: warnings about a correct program that is probably
   not what its author meant (pedantic.c): a body no potential, constraint or force touches;
   a potential that names a body but does not depend on it; the standard library's gravity
   with a g far from any planet's; training settings far from the papers' protocol; a
   training step longer than the system's fastest motion allows. */
#ifndef PHYSC_PEDANTIC_H
#define PHYSC_PEDANTIC_H
#include "system.h"

/* Reports through d (warnings only); sys is a checked system (its potentials are lowered) */
void sema_pedantic(System *sys, Diags *d);
/* The training step against the fastest rate of the system's motion (pedantic_step.c). It
   compiles and integrates the system (JIT), so it is apart from sema_pedantic, which the
   front end's fuzzer also links. */
void pedantic_step(System *sys, Diags *d);

#endif
