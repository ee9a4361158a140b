/* Single-thread batched writes, sett against RocksDB, both through their C
 * APIs: db_bench's fillrandom with --batch_size=1000 (the crate that ships
 * RocksDB 11.12's source does not ship tools/db_bench_tool.cc, so this program
 * does what that benchmark does). N entries of 16-byte keys drawn at random
 * (xorshift64, as hex: it repeats no value within its period, so every key
 * is new) and 100-byte values that do not compress, in batches of
 * 1000, WAL on and no sync, one writer thread, both engines with 64 MiB
 * memtables and no compression, everything else at its defaults. Keys and
 * values are made before the clock starts.
 *
 * The clock covers the writes and then the flush of what is still in memory
 * (sett_flush / rocksdb_flush with wait), so that neither engine is credited
 * with work it has only queued. Afterwards 1000 of the keys are read back and
 * checked: a wrong value exits 1.
 *
 * Prints "RESULT ENGINE fill NS ENTRIES_PER_S".
 *   batchfill sett|rocksdb DIR N */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rocksdb/c.h>

#include "sett.h"

#define KEY_LEN 16
#define VALUE_LEN 100
#define BATCH 1000
#define MEMTABLE (64u << 20)

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static uint64_t xorshift(uint64_t *x) {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

static char *keys;
static uint8_t *values; /* 4096 distinct values, one per key by index */
#define KEY(i) ((const uint8_t *)keys + (size_t)(i) * KEY_LEN)
#define VALUE(i) (values + (size_t)((i) & 4095) * VALUE_LEN)

static void make_data(unsigned long n) {
    keys = malloc((size_t)n * KEY_LEN + 1);
    values = malloc(4096 * VALUE_LEN);
    if (!keys || !values) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    uint64_t x = 0x9E3779B97F4A7C15ULL;
    for (unsigned long i = 0; i < n; i++) {
        char buf[KEY_LEN + 1];
        snprintf(buf, sizeof buf, "%016llx", (unsigned long long)xorshift(&x));
        memcpy(keys + (size_t)i * KEY_LEN, buf, KEY_LEN);
    }
    for (size_t i = 0; i < 4096 * VALUE_LEN; i++) values[i] = (uint8_t)xorshift(&x);
}

static int sett_fail(const char *what, sett_error_t *err) {
    fprintf(stderr, "sett %s: %s\n", what, err ? sett_error_message(err) : "wrong data");
    sett_error_free(err);
    return 1;
}

static int run_sett(const char *dir, unsigned long n) {
    sett_error_t *err = NULL;
    sett_options_t *o = sett_options_new();
    sett_options_set_memtable_size(o, MEMTABLE);
    sett_options_set_compression(o, SETT_COMPRESSION_NONE);
    sett_db_t *db = NULL;
    if (sett_open(dir, o, &db, &err) != SETT_OK) return sett_fail("open", err);
    sett_options_free(o);

    double t0 = now_ns();
    sett_batch_t *b = sett_batch_new();
    for (unsigned long i = 0; i < n; i++) {
        sett_batch_put(b, KEY(i), KEY_LEN, VALUE(i), VALUE_LEN);
        if (sett_batch_count(b) == BATCH || i + 1 == n) {
            if (sett_write(db, b, &err) != SETT_OK) return sett_fail("write", err);
            sett_batch_clear(b);
        }
    }
    sett_batch_free(b);
    if (sett_flush(db, &err) != SETT_OK) return sett_fail("flush", err);
    double ns = now_ns() - t0;
    printf("RESULT sett fill %.0f %.0f\n", ns, (double)n / (ns / 1e9));

    uint8_t dst[VALUE_LEN];
    for (unsigned long i = 0; i < n; i += n / 1000 + 1) {
        size_t len = 0;
        int rc = sett_get_into(db, KEY(i), KEY_LEN, dst, sizeof dst, &len, &err);
        if (rc != SETT_OK && rc != SETT_NOT_FOUND) return sett_fail("get", err);
        if (rc == SETT_NOT_FOUND || len != VALUE_LEN || memcmp(dst, VALUE(i), VALUE_LEN) != 0)
            return sett_fail("read back", NULL);
    }
    if (sett_close(db, &err) != SETT_OK) return sett_fail("close", err);
    sett_db_free(db);
    return 0;
}

static int rocks_fail(const char *what, char *err) {
    fprintf(stderr, "rocksdb %s: %s\n", what, err ? err : "wrong data");
    free(err);
    return 1;
}

static int run_rocksdb(const char *dir, unsigned long n) {
    char *err = NULL;
    rocksdb_options_t *o = rocksdb_options_create();
    rocksdb_options_set_create_if_missing(o, 1);
    rocksdb_options_set_write_buffer_size(o, MEMTABLE);
    rocksdb_options_set_compression(o, rocksdb_no_compression);
    rocksdb_t *db = rocksdb_open(o, dir, &err);
    if (err) return rocks_fail("open", err);
    rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();

    double t0 = now_ns();
    rocksdb_writebatch_t *b = rocksdb_writebatch_create();
    for (unsigned long i = 0; i < n; i++) {
        rocksdb_writebatch_put(b, (const char *)KEY(i), KEY_LEN, (const char *)VALUE(i), VALUE_LEN);
        if (rocksdb_writebatch_count(b) == BATCH || i + 1 == n) {
            rocksdb_write(db, wo, b, &err);
            if (err) return rocks_fail("write", err);
            rocksdb_writebatch_clear(b);
        }
    }
    rocksdb_writebatch_destroy(b);
    rocksdb_flushoptions_t *fo = rocksdb_flushoptions_create();
    rocksdb_flushoptions_set_wait(fo, 1);
    rocksdb_flush(db, fo, &err);
    if (err) return rocks_fail("flush", err);
    double ns = now_ns() - t0;
    printf("RESULT rocksdb fill %.0f %.0f\n", ns, (double)n / (ns / 1e9));

    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    for (unsigned long i = 0; i < n; i += n / 1000 + 1) {
        size_t len = 0;
        char *v = rocksdb_get(db, ro, (const char *)KEY(i), KEY_LEN, &len, &err);
        if (err) return rocks_fail("get", err);
        int ok = v && len == VALUE_LEN && memcmp(v, VALUE(i), VALUE_LEN) == 0;
        rocksdb_free(v);
        if (!ok) return rocks_fail("read back", NULL);
    }
    rocksdb_readoptions_destroy(ro);
    rocksdb_flushoptions_destroy(fo);
    rocksdb_writeoptions_destroy(wo);
    rocksdb_close(db);
    rocksdb_options_destroy(o);
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: batchfill sett|rocksdb DIR N\n");
        return 2;
    }
    unsigned long n = strtoul(argv[3], NULL, 10);
    if (n == 0 || n > 1000000000UL) {
        fprintf(stderr, "N must be between 1 and 1000000000\n");
        return 2;
    }
    make_data(n);
    if (strcmp(argv[1], "sett") == 0) return run_sett(argv[2], n);
    if (strcmp(argv[1], "rocksdb") == 0) return run_rocksdb(argv[2], n);
    fprintf(stderr, "unknown engine %s (sett or rocksdb)\n", argv[1]);
    return 2;
}
