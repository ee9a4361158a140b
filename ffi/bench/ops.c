/* The C row of `make bench-bindings`: the four phases of `sett-bench ops`
 * (cli/src/opsbench.rs) through the C ABI, on the same data, so that the
 * difference between rows is the binding layer:
 *   batch   N keys "key%012lu" with 100-byte values, in 1000-entry batches
 *   put     the same N keys overwritten with one sett_put each
 *   get     N sett_get_into lookups of existing keys in a fixed xorshift64 order
 *   iterate one forward scan with values (sett_iter_next_batch into a buffer)
 * Keys and the 256 possible values are made before the clock starts.
 * Prints "RESULT c PHASE NS" (ns per key); exits 1 if data reads back wrong.
 *   ops DIR N */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sett.h"

#define VALUE_LEN 100

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void report(const char *phase, double t0, unsigned long n) {
    printf("RESULT c %s %.0f\n", phase, (now_ns() - t0) / (double)n);
}

static int fail(const char *what, sett_error_t *err) {
    fprintf(stderr, "%s: %s\n", what, err ? sett_error_message(err) : "wrong data");
    sett_error_free(err);
    return 1;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: ops DIR N\n");
        return 2;
    }
    unsigned long n = strtoul(argv[2], NULL, 10);
    sett_db_t *db = NULL;
    sett_error_t *err = NULL;
    if (sett_open(argv[1], NULL, &db, &err) != SETT_OK) return fail("open", err);
    if (n == 0 || n > 999999999999UL) {
        fprintf(stderr, "N must be between 1 and 999999999999\n");
        return 2;
    }
    char *keys = malloc(n * 32);
    static uint8_t values[256][VALUE_LEN];
    for (unsigned long i = 0; i < n; i++) snprintf(keys + i * 32, 32, "key%012lu", i);
    for (int v = 0; v < 256; v++) memset(values[v], v, VALUE_LEN);
#define KEY(i) ((const uint8_t *)keys + (i) * 32)
#define VALUE(i) (values[(i) & 0xff])

    double t0 = now_ns();
    sett_batch_t *b = sett_batch_new();
    for (unsigned long i = 0; i < n; i++) {
        sett_batch_put(b, KEY(i), 15, VALUE(i), VALUE_LEN);
        if (sett_batch_count(b) == 1000 || i + 1 == n) {
            if (sett_write(db, b, &err) != SETT_OK) return fail("write", err);
            sett_batch_clear(b);
        }
    }
    sett_batch_free(b);
    report("batch", t0, n);

    t0 = now_ns();
    for (unsigned long i = 0; i < n; i++) {
        if (sett_put(db, KEY(i), 15, VALUE(i + 1), VALUE_LEN, &err) != SETT_OK)
            return fail("put", err);
    }
    report("put", t0, n);

    uint8_t dst[256];
    size_t len = 0;
    unsigned long long x = 88172645463325252ULL;
    t0 = now_ns();
    for (unsigned long i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        unsigned long long k = x % n;
        if (sett_get_into(db, KEY(k), 15, dst, sizeof dst, &len, &err) != SETT_OK)
            return fail("get", err);
        if (len != VALUE_LEN || dst[0] != (uint8_t)((k + 1) & 0xff)) return fail("get", NULL);
    }
    report("get", t0, n);

    sett_iter_t *it = NULL;
    if (sett_iter_new(db, NULL, &it, &err) != SETT_OK) return fail("iter", err);
    size_t cap = 256 << 10, count = 0, used = 0;
    uint8_t *buf = malloc(cap);
    unsigned long seen = 0;
    t0 = now_ns();
    for (;;) {
        if (sett_iter_next_batch(it, buf, cap, &count, &used, &err) != SETT_OK)
            return fail("iter", err);
        if (count == 0) break;
        size_t at = 0;
        for (size_t j = 0; j < count; j++) {
            uint32_t kl, vl;
            memcpy(&kl, buf + at, 4);
            memcpy(&vl, buf + at + 4, 4);
            if (kl != 15 || vl != VALUE_LEN) return fail("iter", NULL);
            at += 8 + kl + vl;
        }
        seen += count;
    }
    report("iterate", t0, n);
    free(buf);
    free(keys);
    sett_iter_free(it);
    if (seen != n) return fail("iter count", NULL);
    if (sett_close(db, &err) != SETT_OK) return fail("close", err);
    sett_db_free(db);
    return 0;
}
