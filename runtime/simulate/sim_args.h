/* sim_args.h — the command line of an emitted program (see sim_args.c). */
#ifndef PRT_SIM_ARGS_H
#define PRT_SIM_ARGS_H
#include "simulate.h"

/* Reads argv into o, which holds the program's defaults (its data block's: o->integrator is
   the data block's solver, o->substeps its steps per interval). Returns -1 to go on, or the
   exit status (0 after --help, 2 after a message). */
int prt_sim_args(int argc, char **argv, PrtSimOptions *o);

#endif
