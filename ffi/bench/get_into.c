/* Cost of sett_get_into() through the C ABI: N keys of 16 bytes with 100-byte
 * values, then M lookups of existing keys in a fixed pseudo-random order, one
 * thread. `sett bench-get` does the same lookups through the Rust API on the
 * same directory, so that `make bench-ffi` prints both in one run.
 *   get_into DIR N M */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sett.h"

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: get_into DIR N M\n");
        return 2;
    }
    unsigned long n = strtoul(argv[2], NULL, 10), m = strtoul(argv[3], NULL, 10);
    sett_db_t *db = NULL;
    sett_error_t *err = NULL;
    if (sett_open(argv[1], NULL, &db, &err) != SETT_OK) {
        fprintf(stderr, "open: %s\n", sett_error_message(err));
        return 1;
    }
    char key[32];
    uint8_t value[100];
    sett_batch_t *b = sett_batch_new();
    for (unsigned long i = 0; i < n; i++) {
        snprintf(key, sizeof key, "key%012lu", i);
        memset(value, (int)(i & 0xff), sizeof value);
        sett_batch_put(b, (const uint8_t *)key, 15, value, sizeof value);
        if (sett_batch_count(b) == 1000 || i + 1 == n) {
            if (sett_write(db, b, &err) != SETT_OK) {
                fprintf(stderr, "write: %s\n", sett_error_message(err));
                return 1;
            }
            sett_batch_clear(b);
        }
    }
    sett_batch_free(b);
    uint8_t dst[256];
    size_t len = 0;
    unsigned long long x = 88172645463325252ULL, found = 0;
    double t0 = now_ns();
    for (unsigned long i = 0; i < m; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        snprintf(key, sizeof key, "key%012llu", x % n);
        if (sett_get_into(db, (const uint8_t *)key, 15, dst, sizeof dst, &len, NULL) == SETT_OK) found++;
    }
    double per = (now_ns() - t0) / (double)m;
    printf("C   sett_get_into: %.0f ns/op over %lu lookups (%llu found)\n", per, m, found);
    sett_close(db, NULL);
    sett_db_free(db);
    return found == m ? 0 : 1;
}
