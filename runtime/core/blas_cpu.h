/* blas_cpu.h — make OpenBLAS use the GEMM kernels this CPU can run (see blas_cpu.c). */
#ifndef PRT_BLAS_CPU_H
#define PRT_BLAS_CPU_H

#include <stdbool.h>
#include <stddef.h>

/* Set (to the core OpenBLAS had picked) in the process physc re-executed with the kernels it
   chose, so that process can say why its kernels are what they are. */
#define PRT_BLAS_CHOSEN_ENV "PHYSC_BLAS_CORE_CHOSEN"

/* The OPENBLAS_CORETYPE to ask for when OpenBLAS picked `detected` on a CPU with these
   features, or NULL to keep its choice. Only its fallback core for CPUs it does not know
   ("Prescott", SSE3 kernels) is overridden. */
const char *prt_blas_better_core(const char *detected, bool avx512, bool avx2_fma);

/* The core prt_blas_select_kernels would ask for in this process (NULL: none: OpenBLAS's own
   choice stands, or OPENBLAS_CORETYPE is set). A library, which cannot re-execute its
   process, says it instead (runtime/abi/). */
const char *prt_blas_wanted_core(void);

/* Call first thing in main. When OpenBLAS fell back to its generic core on a CPU with
   AVX2 or AVX-512 and OPENBLAS_CORETYPE is not set, set it and re-execute the program, since
   OpenBLAS picks its kernels once, when it is loaded. Returns only if nothing was done
   (or the re-exec failed, which costs speed, not correctness). */
void prt_blas_select_kernels(char **argv);

/* Call next (physc's main): OpenBLAS's pthreads build starts its worker threads when it is
   loaded, and an idle worker spins on sched_yield for about 0.1 s before it sleeps, which is
   all of a short physc process: on 2 cores it took CPU from the JIT's two workers (the
   gyroscope's JIT 49 ms, or 95 ms in a third of the runs). The workers are stopped here;
   OpenBLAS starts them again at its first threaded call. Nothing where OpenBLAS is another
   build (an OpenMP or serial one has no such workers). */
void prt_blas_park_threads(void);
/* openblas_set_num_threads for physc's callers: with more than one thread it first starts
   the parked workers again, since openblas_set_num_threads of more threads than OpenBLAS
   started adds only the new ones, and OpenBLAS 0.3.21 would start the parked ones beside
   them at its next threaded call, one worker twice */
void prt_blas_set_threads(int n);

/* OpenBLAS's configuration (version, kernels), and why if physc chose the kernels; into buf. */
const char *prt_blas_describe(char *buf, size_t len);

#endif
