/* loop_gram.h — the nearest-point projection's Gram matrix in the loop form's tables.

   The projection onto (Phi, PhiDot) = 0 nearest in the plain metric (sim.c's
   project_nearest) solves J J^T y = r with J = [A 0; B A]: Phi_r's row of J is A_r on its
   coordinates, PhiDot_r's is B_r there and A_r on their velocities (B = dPhiDot/dX). Taken
   row by row, J J^T is C x C blocks of 2 x 2 (Phi_r, PhiDot_r against Phi_q, PhiDot_q),
   nonzero only where rows r and q share a coordinate: the sparsity of the constraint graph,
   which the loop form's elimination order factors without fill-in for chains and trees.
   Here it is factored L D L^T by blocks in that order, so memory and time are linear in the
   rows where a dense 2C x 2C matrix would be quadratic (3.2 GB at 10,000 links). */
#ifndef PRT_LOOP_GRAM_H
#define PRT_LOOP_GRAM_H
#include <stdbool.h>

#include "loop_field.h"

/* The factors, grown on first use: L's 2 x 2 blocks in the loop form's entries of L, each
   position's D^-1, and one row of L D */
typedef struct PrtLoopGram {
    double *L, *d_inv, *w;
} PrtLoopGram;

/* Factors J J^T of one state from its rows' A and B (prt_loop_rows' layout); false when a
   pivot block is not positive definite (dependent constraints). */
bool prt_loop_gram_factor(const PrtLoopField *f, const double *A, const double *B, PrtLoopGram *g);
/* y = (J J^T)^-1 y, y = (the Phi rows, then the PhiDot rows): 2C values */
void prt_loop_gram_solve(const PrtLoopField *f, const PrtLoopGram *g, double *y);
void prt_loop_gram_free(PrtLoopGram *g);

#endif
