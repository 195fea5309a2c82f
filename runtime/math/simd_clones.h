/* simd_clones.h — PRT_SIMD_CLONES compiles a function for AVX-512, AVX2 and baseline x86-64,
   and the loader picks the one this CPU runs (GCC's target_clones, an ifunc). Loops over
   arrays in such functions vectorize at the widest width the machine has, while the build
   stays portable (no -march=native): the binary runs, with the same results, wherever it is
   copied. Elsewhere (clang, sanitizers, other CPUs) it is empty and the baseline code runs. */
#ifndef PRT_SIMD_CLONES_H
#define PRT_SIMD_CLONES_H

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__SANITIZE_ADDRESS__) && !defined(__clang__)
#define PRT_SIMD_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define PRT_SIMD_CLONES
#endif

#endif
