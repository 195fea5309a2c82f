/* loop_form.h — the constrained vector field in loop form (runtime/system/loop_field.h): the rows
   of the Phi kernel grouped into classes of rows that are the same expression of other
   coordinates, one small kernel per class, and the index tables the runtime loops over.

   A row's expression is its cone in Phi (the values its output depends on, in post-order
   from its output), with each coordinate it reads renumbered by its place among its local
   coordinates (the components it reads of the points of the bodies it touches, bodies in
   ascending order) and each free length by first use. Rows whose
   renumbered cones are equal instruction for instruction, and whose bodies have the same
   shapes, share a class: a chain's links are one class, its tether another. Constants are
   compared by place, not value: those that differ between a class's rows (a rope's
   lengths) become inputs of its kernel, one value a row. */
#ifndef PHYSC_LOOP_FORM_H
#define PHYSC_LOOP_FORM_H
#include <stddef.h>

#include "ir.h"
#include "system/loop_field.h"
#include "system.h"

/* The most classes a loop form may have (each is a kernel to JIT): past it the system is
   too irregular for the loop form to pay off. */
enum { LOOP_FORM_MAX_CLASSES = 24 };

/* Builds f's tables from the simplified Phi kernel of sys (a system without SO(3) bodies)
   and one template per class, (x[k], v[k], lengths[q], consts[nc]) -> (phi, A[k], B[k]), named Row0,
   Row1, ... (unsimplified; the kernels' kernel pointers are left NULL for the JIT). Returns
   false with a reason when the rows fall into more than LOOP_FORM_MAX_CLASSES classes. */
bool loop_form_build(const System *sys, const IrFn *phi, PrtLoopField *f, IrFn **templates, int *ntemplates, char *err,
                     size_t errlen);

#endif
