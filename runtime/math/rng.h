/* rng.h — the runtime's random numbers. */
#ifndef PRT_RNG_H
#define PRT_RNG_H
#include <stdint.h>

/* Random numbers: xoshiro256** seeded by splitmix64, so a run is a pure function of its
   seed on every platform. */
typedef struct PrtRng {
    uint64_t s[4];
    double spare_normal;
    int has_spare;
} PrtRng;

void prt_rng_seed(PrtRng *r, uint64_t seed);
uint64_t prt_rng_u64(PrtRng *r);
double prt_rng_uniform(PrtRng *r);              /* in [0, 1) with 53 random bits */
double prt_rng_normal(PrtRng *r);               /* standard normal (polar Box-Muller) */

#endif
