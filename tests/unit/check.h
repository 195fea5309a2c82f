/* check.h — the unit tests' one assertion macro: prints the failure and counts it. */
#ifndef PHYSC_TEST_CHECK_H
#define PHYSC_TEST_CHECK_H
#include <stdio.h>

static int failures;
#define CHECK(cond, ...)                                \
    do {                                                \
        if (!(cond)) {                                  \
            printf("FAIL %s:%d: ", __FILE__, __LINE__); \
            printf(__VA_ARGS__);                        \
            printf("\n");                               \
            failures++;                                 \
        }                                               \
    } while (0)

#endif
