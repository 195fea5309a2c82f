/* dataset.h — trajectory sets for training and evaluation (CHNN Appendix D.1): ground truth
   by dopri5 from sampled, projected initial states; training chunks cut from them;
   minibatches gathered from chunks; CSV in and out (the columns `physc simulate` writes). */
#ifndef PRT_DATASET_H
#define PRT_DATASET_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "math/ode.h"
#include "system/sim.h"

/* n trajectories of npts points, each point (X, Xdot) in SoA layout: point k of all
   trajectories is xv + k * W * n (W x n), W = N + NP (prt_state_rows: 2N, or for `state so3`
   bodies their velocity and body angular velocity, 6 numbers for their 12 coordinates). */
typedef struct PrtTrajSet {
    long n;
    int npts;
    int N;
    int W;      /* numbers per point: N positions, then W - N velocities */
    double dt;
    double *xv;
    bool velocities_estimated; /* read from positions only: the velocities are prt_trajset_estimate_velocities' */
} PrtTrajSet;

void prt_trajset_free(PrtTrajSet *d);

/* n trajectories of npts points dt apart, from initial states sampled with `seed`, by dopri5
   at (rtol, atol) on the true system. Returns 0, or -1 with a message. */
int prt_trajset_generate(PrtSystem *s, long n, int npts, double dt, double rtol, double atol, uint64_t seed,
                         PrtTrajSet *out, char *err, size_t errlen);

/* How a data set is integrated: dopri5 at (rtol, atol), or a fixed-step integrator of
   fixed_steps.h taking `substeps` steps per interval (the data the Lie T2 paper's GRIT makes
   with its own splitting at a fixed step). */
typedef struct PrtDataSolver {
    int integrator; /* a PrtIntegrator: PRT_INT_DOPRI5 or a fixed-step row */
    int substeps;
    double rtol, atol;
    const PrtOdeObserver *progress; /* told of each output time reached (NULL: none) */
} PrtDataSolver;

/* prt_trajset_generate with any data solver. */
int prt_trajset_generate_by(PrtSystem *s, long n, int npts, double dt, const PrtDataSolver *solver, uint64_t seed,
                            PrtTrajSet *out, char *err, size_t errlen);

/* One chunk of `chunk` points per trajectory, from one of its floor(npts / chunk)
   non-overlapping chunks chosen at random. */
void prt_trajset_chunks(const PrtTrajSet *full, int chunk, PrtRng *rng, PrtTrajSet *out);

/* A window of npts points per trajectory (npts <= full->npts), starting at the first point
   of one of the (full->npts - npts) / chunk + 1 chunks that leave room for it, chosen at
   random: the CHNN reference code's test rollouts start there, not at the sampled state. */
void prt_trajset_windows(const PrtTrajSet *full, int chunk, int npts, PrtRng *rng, PrtTrajSet *out);

/* Every window of w consecutive points of every trajectory (n (npts - w + 1) of them; window
   j * n + b starts at point j of trajectory b): a two-step scheme's training triples. */
void prt_trajset_all_windows(const PrtTrajSet *full, int w, PrtTrajSet *out);

/* Gaussian observation noise of standard deviation sigma on every component, drawn
   trajectory by trajectory: the first m trajectories get the same noise whatever d->n. */
void prt_trajset_add_noise(PrtTrajSet *d, double sigma, PrtRng *rng);

/* The trajectories idx[0..m) of d into out (npts x W x m). */
void prt_trajset_gather(const PrtTrajSet *d, const long *idx, long m, double *out);

/* CSV of n trajectories of npts points dt apart: a header `traj,t,<cols names>`, one row per
   point; point k of trajectory b holds data[(k * cols + i) * n + b], i < cols (SoA).
   Returns 0, or -1 with a message. */
int prt_csv_write_soa(const char *path, const char *const *names, long cols, long n, int npts, double dt,
                      const double *data, char *err, size_t errlen);
/* CSV: a header `traj,t,<N coordinate names>,<N velocity names>`, one row per point; of a
   set whose velocities are estimated, the positions alone (what was observed). */
int prt_trajset_write_csv(const PrtTrajSet *d, const char *path, const char *const *names, char *err, size_t errlen);
/* Reads trajectories written as above (or by `physc simulate`): the header must name the
   columns traj, t, then names[0..2N) in that order (N coordinates, N velocities), or
   names[0..N) alone (recorded positions: the velocities are then estimated, see below, and
   out->velocities_estimated set; at least 3 points a trajectory); every value must be finite;
   every trajectory must have the same number of points, its rows in increasing t, equally
   spaced. Returns 0, or -1 with a message (path:line where it can). */
int prt_trajset_read_csv(const char *path, int N, const char *const *names, PrtTrajSet *out, char *err, size_t errlen);

/* The velocities of d (npts >= 3) from its positions by second-order finite differences
   along each trajectory: central, (q[k+1] - q[k-1]) / 2dt, inside, and the one-sided
   (-3q[0] + 4q[1] - q[2]) / 2dt and (3q[K] - 4q[K-1] + q[K-2]) / 2dt at the two ends.
   Sets d->velocities_estimated. */
void prt_trajset_estimate_velocities(PrtTrajSet *d);

/* How far the states of d are off the constraints Phi = 0, Phi_dot = 0: the largest |Phi| and
   |Phi_dot| (in the units of the constraint rows: squared lengths for a link), and the
   distances they stand for, |Phi_r| / |grad Phi_r| per row (a length; a speed for Phi_dot),
   relative to the largest |position| and |velocity| component of d. */
typedef struct PrtConstraintOffset {
    double phi, phidot, rel_pos, rel_vel;
} PrtConstraintOffset;
void prt_trajset_constraint_offset(const PrtSystem *s, const PrtTrajSet *d, PrtConstraintOffset *off);

/* Recorded trajectories of s (`physc run`'s data file, `physc simulate --from`): reads path
   with s's column names, takes the lengths the program leaves open from its first state, and
   measures how far its states are off the constraints (the positions only, when the
   velocities are estimated). Refuses (-1 with a message) states too
   far off to be this system's; between that and what an accurate solver leaves, fills
   `warning` with the figures (else warning[0] = 0). */
int prt_trajset_load(PrtSystem *s, const char *path, PrtTrajSet *out, char *warning, size_t wlen, char *err,
                     size_t errlen);

#endif
