/* symplectic.h — structure-preserving integrators for z = (X, P) with H = P.M^-1 P/2 + V(X):
   symplectic Euler and leapfrog (velocity Verlet) for unconstrained systems, and RATTLE,
   the symplectic and constraint-preserving method for constrained ones (Hairer, Lubich &
   Wanner, Geometric Numerical Integration, VII.1; CHNN Appendix B.3). */
#ifndef PRT_SYMPLECTIC_H
#define PRT_SYMPLECTIC_H
#include "system/sim.h"

typedef enum PrtSymplectic { PRT_SYMPLECTIC_EULER, PRT_LEAPFROG, PRT_RATTLE } PrtSymplectic;

/* One step of size h for the n states of z (SoA, 2N x n), in place. Symplectic Euler and
   leapfrog need s->C == 0. RATTLE solves Phi(X_{n+1}) = 0 by Newton to `tol` and
   DPhi M^-1 P_{n+1} = 0 exactly; it returns the largest |Phi| left (or -1 if Newton
   did not converge). */
double prt_symplectic_step(PrtSystem *s, PrtSymplectic m, long n, double h, double *z, double tol);

#endif
