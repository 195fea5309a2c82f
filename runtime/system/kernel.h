/* kernel.h — the kernel ABI (docs/runtime-abi.md), the one type the JIT, emitted C and the
   runtime share: n states, structure-of-arrays inputs and outputs (in[i*n + b],
   out[o*n + b]), params shared by the batch. */
#ifndef PRT_KERNEL_H
#define PRT_KERNEL_H

typedef void (*PrtKernel)(long n, const double *in, const double *params, double *out);

/* Every kernel the compiler makes for the runtime, one row each, in the order a PrtSystem
   holds them (sim.h): the compiler builds them (compiler/kernels.c), the driver looks them
   up after the JIT, emit-c wires an emitted program's PrtSystem, and dump-ir prints them.
   X(name, required, what) -- required: in every compiled system; the others only for some
   purposes (else NULL). Inputs are SoA, `;` separates the shared params. */
#define PRT_KERNELS(X)                                                                                              \
    X(V, true, "(X) -> potential energy")                                                                           \
    X(gradV, true, "(X) -> dV/dX")                                                                                  \
    X(Phi, true, "(X; free lengths) -> constraint values")                                                          \
    X(DPhi, true, "(X; free lengths) -> their Jacobian, row-major (rows x coordinates)")                            \
    X(PhiDot, true, "(X, Xdot; free lengths) -> DPhi Xdot, the velocity constraint")                                \
    X(DPhiDot, false, "(X, Xdot; free lengths) -> d(PhiDot)/d(X, Xdot), row-major: nearest-point projections")      \
    X(H, true, "(X, P; masses) -> P . M^-1 P / 2 + V(X)")                                                           \
    X(Field, false,"(X, P, dV/dX; masses, free lengths) -> (Xdot, Pdot), Eq. 6 (so3 bodies: their own field)")     \
    X(Rhs, false, "(X, P; masses, free lengths) -> (Xdot, Pdot): Field with the system's own dV/dX folded in")      \
    X(Accel, false, "(X, Xdot, F; masses, free lengths) -> Xddot, Eq. 7: Lagrangian models")                       \
    X(MinvP, true, "(P; masses) -> M^-1 P (Eq. 9)")                                                                 \
    X(MassV, true, "(V; masses) -> M V (Eq. 9)")                                                                    \
    X(Init, true, "(random draws) -> (X, Xdot), the init block")                                                    \
    X(FieldVJP, false, "(Field's inputs, cotangent) -> (input adjoints, parameter adjoints): training")            \
    X(AccelVJP, false, "the same for Accel: training a Lagrangian model")                                          \
    X(MinvPVJP, false, "the same for MinvP: training")                                                              \
    X(MassVVJP, false, "the same for MassV: training")                                                              \
    X(Vknown, false, "(X) -> a model's known potential terms (its energy)")                                         \
    X(gradVknown, false, "(X) -> the gradient of a model's known potential terms")                                  \
    X(gradVknownVJP, false, "its VJP (a Hessian-vector product): training such a model")                           \
    X(CoordMap, false, "(q, qdot) -> (X, Xdot): the coordinate map and its JVP (models in generalized coordinates)")  \
    X(CoordInverse, false, "(X, Xdot) -> (q, qdot): the inverse map (angles as it computes them) and its JVP")      \
    X(MassQ, false, "(q; masses) -> M(q), row-major nq x nq: the kinetic energy pulled back through dX/dq")        \
    X(MassQVJP, false, "its VJP: training a generalized-coordinate model with the known mass")                      \
    X(KineticQ, false, "(q, v; masses) -> d(v . M(q) v / 2)/dq at fixed v")                                        \
    X(KineticQVJP, false, "its VJP: training a generalized-coordinate model with the known mass")                   \
    X(GradVq, false, "(q) -> dV(X(q))/dq: the system's potentials in the generalized coordinates")                  \
    X(CoordMapVJP, false, "CoordMap's VJP: a library's derivatives of a model in generalized coordinates")           \
    X(CoordInverseVJP, false, "CoordInverse's VJP: the same")                                                       \
    X(CoordMapJVP, false, "(q, qdot, tangent) -> CoordMap's JVP: with (qdot, qddot), (Xdot, Xddot)")                \
    X(CoordMapJVPVJP, false, "its VJP: a library's derivatives of such a model's field")                           \
    X(MassQJVP, false, "(q, qdot; masses) -> dM(q)/dt along qdot: a library's field of an HNN with `mass known`")   \
    X(MassQJVPVJP, false, "its VJP")                                                                                 \
    X(Force, false, "(X, P) -> the forces of the system's `force` blocks on P (on each p, and torques on so3 bodies' Pi)")

#endif
