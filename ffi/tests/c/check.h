/* The checks every C test of the ABI counts: CHECK(cond) and
 * CHECK_RC(call, want) record a failure with its file and line and go on, so
 * that one run reports every broken check; main() ends with the counts. B()
 * turns a string literal into the byte pointer the ABI takes. Each test is
 * its own program, so the counters are per test. */
#ifndef SETT_TEST_CHECK_H
#define SETT_TEST_CHECK_H

#include <stdint.h>
#include <stdio.h>

#include "sett.h"

static int failures = 0;
static int checks = 0;

#define CHECK(cond)                                                                  \
    do {                                                                             \
        checks++;                                                                    \
        if (!(cond)) {                                                               \
            failures++;                                                              \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
        }                                                                            \
    } while (0)

#define CHECK_RC(call, want)                                                          \
    do {                                                                              \
        int rc_ = (call);                                                             \
        checks++;                                                                     \
        if (rc_ != (want)) {                                                          \
            failures++;                                                               \
            fprintf(stderr, "%s:%d: %s returned %d (%s), want %d\n", __FILE__, __LINE__, \
                    #call, rc_, sett_status_string(rc_), (want));                     \
        }                                                                             \
    } while (0)

static inline const uint8_t *B(const char *s) { return (const uint8_t *)s; }

#endif
