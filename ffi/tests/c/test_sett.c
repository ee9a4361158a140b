/* Tests of the C ABI: every function, its error paths, and threads sharing one
 * database. Built with -Wall -Wextra -Werror -std=c11 and run under valgrind. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "sett.h"

static char dir_template[] = "/tmp/sett-ctest-XXXXXX";

static void path_in(char *out, size_t cap, const char *name) {
    snprintf(out, cap, "%s/%s", dir_template, name);
}

static sett_db_t *open_db(const char *name, sett_options_t *opts) {
    char path[512];
    path_in(path, sizeof path, name);
    sett_db_t *db = NULL;
    sett_error_t *err = NULL;
    int rc = sett_open(path, opts, &db, &err);
    if (rc != SETT_OK) {
        fprintf(stderr, "open %s: %s\n", path, sett_error_message(err));
    }
    CHECK(rc == SETT_OK && db != NULL && err == NULL);
    sett_error_free(err);
    return db;
}

static void test_version_and_status(void) {
    CHECK(sett_version_number() == SETT_VERSION_NUMBER);
    CHECK(SETT_VERSION_NUMBER == SETT_VERSION_MAJOR * 10000 + SETT_VERSION_MINOR * 100 + SETT_VERSION_PATCH);
    char want[32];
    snprintf(want, sizeof want, "%d.%d.%d", SETT_VERSION_MAJOR, SETT_VERSION_MINOR, SETT_VERSION_PATCH);
    CHECK(strcmp(sett_version_string(), want) == 0);
    for (int code = SETT_OK; code <= SETT_INVALID_OPTION; code++) {
        CHECK(strlen(sett_status_string(code)) > 0);
        CHECK(strcmp(sett_status_string(code), "unknown status code") != 0);
    }
    CHECK(strcmp(sett_status_string(9999), "unknown status code") == 0);
    CHECK(strcmp(sett_error_message(NULL), "") == 0);
    CHECK(sett_error_code(NULL) == SETT_INVALID_ARGUMENT);
    sett_error_free(NULL);
    sett_buf_free(NULL);
}

static void test_options_and_open_errors(void) {
    sett_options_t *o = sett_options_new();
    CHECK(o != NULL);
    CHECK_RC(sett_options_set_value_threshold(o, 512), SETT_OK);
    CHECK_RC(sett_options_set_memtable_size(o, 1 << 20), SETT_OK);
    CHECK_RC(sett_options_set_max_memtables(o, 3), SETT_OK);
    CHECK_RC(sett_options_set_block_size(o, 4096), SETT_OK);
    CHECK_RC(sett_options_set_bloom_bits_per_key(o, 10), SETT_OK);
    CHECK_RC(sett_options_set_table_size(o, 2 << 20), SETT_OK);
    CHECK_RC(sett_options_set_level_base_size(o, 8 << 20), SETT_OK);
    CHECK_RC(sett_options_set_level_multiplier(o, 10), SETT_OK);
    CHECK_RC(sett_options_set_num_levels(o, 7), SETT_OK);
    CHECK_RC(sett_options_set_l0_compaction_trigger(o, 4), SETT_OK);
    CHECK_RC(sett_options_set_l0_slowdown_trigger(o, 8), SETT_OK);
    CHECK_RC(sett_options_set_l0_stop_trigger(o, 12), SETT_OK);
    CHECK_RC(sett_options_set_compaction_threads(o, 1), SETT_OK);
    CHECK_RC(sett_options_set_vlog_file_size(o, 4 << 20), SETT_OK);
    CHECK_RC(sett_options_set_max_key_size(o, 1000), SETT_OK);
    CHECK_RC(sett_options_set_max_value_size(o, 1 << 20), SETT_OK);
    CHECK_RC(sett_options_set_max_txn_size(o, 1 << 20), SETT_OK);
    CHECK_RC(sett_options_set_sync_writes(o, 1), SETT_OK);
    CHECK_RC(sett_options_set_sync_writes(o, 2), SETT_INVALID_ARGUMENT);
    CHECK_RC(sett_options_set_read_only(o, 7), SETT_INVALID_ARGUMENT);
    CHECK_RC(sett_options_set_sync_writes(NULL, 1), SETT_INVALID_ARGUMENT);
    CHECK_RC(sett_options_set_value_threshold(NULL, 1), SETT_INVALID_ARGUMENT);

    sett_db_t *db = NULL;
    sett_error_t *err = NULL;
    CHECK_RC(sett_open(NULL, o, &db, &err), SETT_INVALID_ARGUMENT);
    CHECK(db == NULL && err != NULL && sett_error_code(err) == SETT_INVALID_ARGUMENT);
    CHECK(strstr(sett_error_message(err), "path") != NULL);
    /* A second failure replaces the first error (valgrind checks nothing leaks). */
    char path[512];
    path_in(path, sizeof path, "opts");
    CHECK_RC(sett_open(path, o, NULL, &err), SETT_INVALID_ARGUMENT);
    CHECK_RC(sett_options_set_bloom_bits_per_key(o, 1000), SETT_OK);
    CHECK_RC(sett_open(path, o, &db, &err), SETT_INVALID_OPTION);
    CHECK(strstr(sett_error_message(err), "bloom_bits_per_key") != NULL);
    /* The message states the bounds of core's table of options. */
    CHECK(strstr(sett_error_message(err), "1000 is outside 0..=64") != NULL);
    sett_error_free(err);
    err = NULL;
    CHECK_RC(sett_options_set_bloom_bits_per_key(o, 10), SETT_OK);
    db = open_db("opts", o);
    sett_db_t *second = NULL;
    CHECK_RC(sett_open(path, o, &second, &err), SETT_LOCKED);
    CHECK(second == NULL && strstr(sett_error_message(err), "locked") != NULL);
    sett_error_free(err);
    CHECK_RC(sett_close(db, NULL), SETT_OK);
    sett_db_free(db);
    sett_options_free(o);
    sett_options_free(NULL);

    /* Read-only opens share the directory and refuse writes. */
    o = sett_options_new();
    CHECK_RC(sett_options_set_read_only(o, 1), SETT_OK);
    sett_db_t *r1 = open_db("opts", o);
    sett_db_t *r2 = open_db("opts", o);
    CHECK_RC(sett_put(r1, B("k"), 1, B("v"), 1, NULL), SETT_READ_ONLY);
    sett_db_free(r1);
    sett_db_free(r2);
    sett_options_free(o);
}

static void test_point_operations(sett_db_t *db) {
    sett_error_t *err = NULL;
    sett_buf_t v = {0};
    CHECK_RC(sett_put(db, B("hello"), 5, B("world"), 5, &err), SETT_OK);
    CHECK_RC(sett_get(db, B("hello"), 5, &v, &err), SETT_OK);
    CHECK(v.len == 5 && memcmp(v.data, "world", 5) == 0);
    sett_buf_free(&v);
    CHECK(v.data == NULL && v.len == 0);
    sett_buf_free(&v); /* twice is fine */
    CHECK_RC(sett_get(db, B("absent"), 6, &v, &err), SETT_NOT_FOUND);
    CHECK(err == NULL && v.data == NULL);

    /* A large value goes to the value log and comes back. */
    size_t big = 100000;
    uint8_t *bigv = malloc(big);
    for (size_t i = 0; i < big; i++) bigv[i] = (uint8_t)(i * 7);
    CHECK_RC(sett_put(db, B("big"), 3, bigv, big, NULL), SETT_OK);
    uint8_t small[16];
    size_t len = 0;
    CHECK_RC(sett_get_into(db, B("big"), 3, small, sizeof small, &len, &err), SETT_BUFFER_TOO_SMALL);
    CHECK(len == big && sett_error_code(err) == SETT_BUFFER_TOO_SMALL);
    sett_error_free(err);
    err = NULL;
    uint8_t *dst = malloc(len);
    CHECK_RC(sett_get_into(db, B("big"), 3, dst, len, &len, NULL), SETT_OK);
    CHECK(len == big && memcmp(dst, bigv, big) == 0);
    CHECK_RC(sett_get_into(db, B("absent"), 6, dst, big, &len, NULL), SETT_NOT_FOUND);
    CHECK_RC(sett_get_into(db, B("big"), 3, NULL, 10, &len, NULL), SETT_INVALID_ARGUMENT);
    CHECK_RC(sett_get_into(db, B("big"), 3, dst, big, NULL, NULL), SETT_INVALID_ARGUMENT);
    free(dst);
    free(bigv);

    CHECK_RC(sett_delete(db, B("hello"), 5, NULL), SETT_OK);
    CHECK_RC(sett_get(db, B("hello"), 5, &v, NULL), SETT_NOT_FOUND);

    /* Bad arguments: errors, never crashes. */
    CHECK_RC(sett_put(NULL, B("k"), 1, B("v"), 1, NULL), SETT_INVALID_ARGUMENT);
    CHECK_RC(sett_put(db, NULL, 3, B("v"), 1, NULL), SETT_INVALID_ARGUMENT);
    CHECK_RC(sett_put(db, B(""), 0, B("v"), 1, &err), SETT_INVALID_ARGUMENT);
    CHECK(strstr(sett_error_message(err), "empty key") != NULL);
    sett_error_free(err);
    err = NULL;
    CHECK_RC(sett_put(db, B("k"), 1, NULL, 0, NULL), SETT_OK); /* empty value is fine */
    CHECK_RC(sett_get(db, B("k"), 1, NULL, NULL), SETT_INVALID_ARGUMENT);
    CHECK_RC(sett_get(NULL, B("k"), 1, &v, NULL), SETT_INVALID_ARGUMENT);
    CHECK_RC(sett_delete(NULL, B("k"), 1, NULL), SETT_INVALID_ARGUMENT);
    uint8_t *huge_key = calloc(70000, 1);
    CHECK_RC(sett_put(db, huge_key, 70000, B("v"), 1, &err), SETT_TOO_BIG);
    CHECK(strstr(sett_error_message(err), "key of 70000 bytes") != NULL);
    sett_error_free(err);
    err = NULL;
    free(huge_key);
    /* None of the refused calls touched what was stored. */
    CHECK_RC(sett_get_into(db, B("big"), 3, NULL, 0, &len, NULL), SETT_BUFFER_TOO_SMALL);
    CHECK(len == big);
    CHECK_RC(sett_get(db, B("k"), 1, &v, NULL), SETT_OK);
    CHECK(v.len == 0);
    sett_buf_free(&v);

    /* TTL and user meta. */
    CHECK_RC(sett_put_with(db, B("meta"), 4, B("m"), 1, 42, 60000, NULL), SETT_OK);
    uint8_t meta = 0;
    uint64_t expires = 0, version = 0;
    CHECK_RC(sett_get_entry(db, B("meta"), 4, &v, &meta, &expires, &version, NULL), SETT_OK);
    CHECK(meta == 42 && expires > 0 && version > 0 && v.len == 1);
    sett_buf_free(&v);
    CHECK_RC(sett_get_entry(db, B("meta"), 4, &v, NULL, NULL, NULL, NULL), SETT_OK);
    sett_buf_free(&v);
    CHECK_RC(sett_get_entry(db, B("nope"), 4, &v, &meta, &expires, &version, NULL), SETT_NOT_FOUND);
}

static void test_batch_and_multi_get(sett_db_t *db) {
    sett_batch_t *b = sett_batch_new();
    CHECK_RC(sett_batch_put(b, B("b1"), 2, B("one"), 3), SETT_OK);
    CHECK_RC(sett_batch_put_with(b, B("b2"), 2, B("two"), 3, 1, 0), SETT_OK);
    CHECK_RC(sett_batch_delete(b, B("b1"), 2), SETT_OK);
    CHECK_RC(sett_batch_put(b, B("b3"), 2, B("three"), 5), SETT_OK);
    CHECK_RC(sett_batch_put(NULL, B("x"), 1, B("y"), 1), SETT_INVALID_ARGUMENT);
    CHECK_RC(sett_batch_put(b, NULL, 1, B("y"), 1), SETT_INVALID_ARGUMENT);
    CHECK(sett_batch_count(b) == 4);
    CHECK(sett_batch_count(NULL) == 0);
    CHECK_RC(sett_write(db, b, NULL), SETT_OK);
    CHECK_RC(sett_write(db, NULL, NULL), SETT_INVALID_ARGUMENT);
    CHECK_RC(sett_batch_clear(b), SETT_OK);
    CHECK(sett_batch_count(b) == 0);
    /* A batch with an empty key is refused whole. */
    CHECK_RC(sett_batch_put(b, B("b4"), 2, B("four"), 4), SETT_OK);
    CHECK_RC(sett_batch_put(b, B(""), 0, B("x"), 1), SETT_OK);
    CHECK_RC(sett_write(db, b, NULL), SETT_INVALID_ARGUMENT);
    sett_batch_free(b);
    sett_batch_free(NULL);

    const uint8_t *keys[4] = {B("b1"), B("b2"), B("b3"), B("b4")};
    size_t lens[4] = {2, 2, 2, 2};
    sett_buf_t vals[4];
    int st[4];
    CHECK_RC(sett_multi_get(db, keys, lens, 4, vals, st, NULL), SETT_OK);
    CHECK(st[0] == SETT_NOT_FOUND && st[1] == SETT_OK && st[2] == SETT_OK && st[3] == SETT_NOT_FOUND);
    CHECK(vals[1].len == 3 && memcmp(vals[1].data, "two", 3) == 0);
    CHECK(vals[2].len == 5 && memcmp(vals[2].data, "three", 5) == 0);
    for (int i = 0; i < 4; i++) sett_buf_free(&vals[i]);
    CHECK_RC(sett_multi_get(db, NULL, lens, 4, vals, st, NULL), SETT_INVALID_ARGUMENT);
    CHECK_RC(sett_multi_get(db, keys, lens, 0, NULL, NULL, NULL), SETT_OK);

    /* Into the caller's buffer: values back to back, in the order asked. */
    uint8_t dst[16];
    size_t vlens[4], needed = 99;
    sett_error_t *err = NULL;
    CHECK_RC(sett_multi_get_into(db, keys, lens, 4, dst, sizeof dst, vlens, st, &needed, NULL), SETT_OK);
    CHECK(needed == 8);
    CHECK(st[0] == SETT_NOT_FOUND && st[1] == SETT_OK && st[2] == SETT_OK && st[3] == SETT_NOT_FOUND);
    CHECK(vlens[0] == 0 && vlens[1] == 3 && vlens[2] == 5 && vlens[3] == 0);
    CHECK(memcmp(dst, "twothree", 8) == 0);
    /* Too small a buffer: the size needed, nothing copied. */
    memset(dst, 'x', sizeof dst);
    CHECK_RC(sett_multi_get_into(db, keys, lens, 4, dst, 7, vlens, st, &needed, &err), SETT_BUFFER_TOO_SMALL);
    CHECK(needed == 8 && dst[0] == 'x');
    CHECK(strstr(sett_error_message(err), "do not fit") != NULL);
    sett_error_free(err);
    err = NULL;
    /* Bad input: NULL arrays, NULL dst with a capacity, NULL needed, an empty key. */
    CHECK_RC(sett_multi_get_into(db, keys, lens, 4, dst, sizeof dst, NULL, st, &needed, &err), SETT_INVALID_ARGUMENT);
    CHECK(strstr(sett_error_message(err), "lens") != NULL);
    sett_error_free(err);
    err = NULL;
    CHECK_RC(sett_multi_get_into(db, keys, lens, 4, NULL, 8, vlens, st, &needed, NULL), SETT_INVALID_ARGUMENT);
    CHECK_RC(sett_multi_get_into(db, keys, lens, 4, dst, sizeof dst, vlens, st, NULL, NULL), SETT_INVALID_ARGUMENT);
    CHECK_RC(sett_multi_get_into(NULL, keys, lens, 4, dst, sizeof dst, vlens, st, &needed, NULL), SETT_INVALID_ARGUMENT);
    size_t empty[4] = {2, 0, 2, 2};
    CHECK_RC(sett_multi_get_into(db, keys, empty, 4, dst, sizeof dst, vlens, st, &needed, NULL), SETT_INVALID_ARGUMENT);
    CHECK_RC(sett_multi_get_into(db, keys, lens, 0, NULL, 0, NULL, NULL, &needed, NULL), SETT_OK);
    CHECK(needed == 0);
    /* The data is still there. */
    CHECK_RC(sett_multi_get_into(db, keys, lens, 4, dst, sizeof dst, vlens, st, &needed, NULL), SETT_OK);
    CHECK(memcmp(dst, "twothree", 8) == 0);
    /* Only empty values and missing keys: no buffer (NULL, 0) is enough. */
    CHECK_RC(sett_put(db, B("b5"), 2, B(""), 0, NULL), SETT_OK);
    const uint8_t *empties[2] = {B("b5"), B("b1")};
    CHECK_RC(sett_multi_get_into(db, empties, lens, 2, NULL, 0, vlens, st, &needed, NULL), SETT_OK);
    CHECK(needed == 0 && st[0] == SETT_OK && vlens[0] == 0 && st[1] == SETT_NOT_FOUND);
}

static void test_transactions(sett_db_t *db) {
    sett_txn_t *t1 = NULL, *t2 = NULL;
    sett_error_t *err = NULL;
    sett_buf_t v = {0};
    CHECK_RC(sett_txn_begin(db, 2, &t1, &err), SETT_INVALID_ARGUMENT);
    CHECK(t1 == NULL);
    sett_error_free(err);
    err = NULL;
    CHECK_RC(sett_put(db, B("acct"), 4, B("100"), 3, NULL), SETT_OK);
    CHECK_RC(sett_txn_begin(db, 1, &t1, NULL), SETT_OK);
    CHECK_RC(sett_txn_begin(db, 1, &t2, NULL), SETT_OK);
    CHECK_RC(sett_txn_get(t1, B("acct"), 4, &v, NULL), SETT_OK);
    sett_buf_free(&v);
    CHECK_RC(sett_txn_get(t2, B("acct"), 4, &v, NULL), SETT_OK);
    sett_buf_free(&v);
    CHECK_RC(sett_txn_put(t1, B("acct"), 4, B("90"), 2, NULL), SETT_OK);
    CHECK_RC(sett_txn_put_with(t2, B("acct"), 4, B("80"), 2, 3, 0, NULL), SETT_OK);
    CHECK_RC(sett_txn_delete(t2, B("other"), 5, NULL), SETT_OK);
    CHECK_RC(sett_txn_get(t1, B("acct"), 4, &v, NULL), SETT_OK);
    CHECK(v.len == 2 && memcmp(v.data, "90", 2) == 0);
    sett_buf_free(&v);
    CHECK_RC(sett_txn_commit(t1, NULL), SETT_OK);
    CHECK_RC(sett_txn_commit(t2, &err), SETT_CONFLICT);
    CHECK(sett_error_code(err) == SETT_CONFLICT);
    sett_error_free(err);
    err = NULL;
    CHECK_RC(sett_txn_commit(t1, NULL), SETT_CLOSED);
    CHECK_RC(sett_txn_get(t1, B("acct"), 4, &v, NULL), SETT_CLOSED);
    sett_txn_free(t1);
    sett_txn_free(t2);

    /* Retry loop, as a C user would write it. */
    int attempts = 0;
    for (;;) {
        sett_txn_t *t = NULL;
        attempts++;
        CHECK_RC(sett_txn_begin(db, 1, &t, NULL), SETT_OK);
        CHECK_RC(sett_txn_put(t, B("retry"), 5, B("x"), 1, NULL), SETT_OK);
        int rc = sett_txn_commit(t, NULL);
        sett_txn_free(t);
        if (rc != SETT_CONFLICT) {
            CHECK(rc == SETT_OK);
            break;
        }
    }
    CHECK(attempts == 1);

    /* Read-only transactions refuse writes; discard and NULL are fine. */
    sett_txn_t *ro = NULL;
    CHECK_RC(sett_txn_begin(db, 0, &ro, NULL), SETT_OK);
    CHECK_RC(sett_txn_put(ro, B("k"), 1, B("v"), 1, NULL), SETT_INVALID_ARGUMENT);
    sett_iter_t *it = NULL;
    CHECK_RC(sett_txn_iter_new(ro, NULL, &it, NULL), SETT_OK);
    CHECK(sett_iter_valid(it) == 1);
    sett_iter_free(it);
    sett_txn_discard(ro);
    sett_txn_discard(ro);
    sett_txn_discard(NULL);
    CHECK_RC(sett_txn_get(ro, B("k"), 1, &v, NULL), SETT_CLOSED);
    sett_txn_free(ro);
    sett_txn_free(NULL);
    CHECK_RC(sett_txn_get(NULL, B("k"), 1, &v, NULL), SETT_INVALID_ARGUMENT);
    CHECK_RC(sett_txn_begin(NULL, 1, &t1, NULL), SETT_INVALID_ARGUMENT);
    CHECK_RC(sett_txn_begin(db, 1, NULL, NULL), SETT_INVALID_ARGUMENT);
}

static void test_iterators(sett_db_t *db) {
    char k[32], val[64];
    for (int i = 0; i < 300; i++) {
        snprintf(k, sizeof k, "it/%04d", i);
        int vl = snprintf(val, sizeof val, "value-%d", i);
        CHECK_RC(sett_put(db, B(k), strlen(k), B(val), (size_t)vl, NULL), SETT_OK);
    }
    sett_iter_options_t *o = sett_iter_options_new();
    CHECK_RC(sett_iter_options_set_prefix(o, B("it/"), 3), SETT_OK);
    CHECK_RC(sett_iter_options_set_prefetch(o, 0), SETT_INVALID_ARGUMENT);
    CHECK_RC(sett_iter_options_set_prefetch(o, 16), SETT_OK);
    CHECK_RC(sett_iter_options_set_reverse(o, 3), SETT_INVALID_ARGUMENT);
    CHECK_RC(sett_iter_options_set_keys_only(NULL, 1), SETT_INVALID_ARGUMENT);
    sett_iter_t *it = NULL;
    CHECK_RC(sett_iter_new(db, o, &it, NULL), SETT_OK);
    int n = 0;
    const uint8_t *kp, *vp;
    size_t kl, vl;
    while (sett_iter_valid(it)) {
        CHECK_RC(sett_iter_key(it, &kp, &kl), SETT_OK);
        CHECK_RC(sett_iter_value(it, &vp, &vl), SETT_OK);
        snprintf(k, sizeof k, "it/%04d", n);
        CHECK(kl == strlen(k) && memcmp(kp, k, kl) == 0);
        CHECK(vl > 6 && memcmp(vp, "value-", 6) == 0);
        CHECK_RC(sett_iter_next(it, NULL), SETT_OK);
        n++;
    }
    CHECK(n == 300);
    CHECK_RC(sett_iter_key(it, &kp, &kl), SETT_OK);
    CHECK(kp == NULL && kl == 0);
    CHECK_RC(sett_iter_seek(it, B("it/0150"), 7, NULL), SETT_OK);
    CHECK_RC(sett_iter_key(it, &kp, &kl), SETT_OK);
    CHECK(kl == 7 && memcmp(kp, "it/0150", 7) == 0);
    CHECK_RC(sett_iter_rewind(it, NULL), SETT_OK);
    CHECK_RC(sett_iter_key(it, &kp, &kl), SETT_OK);
    CHECK(kl == 7 && memcmp(kp, "it/0000", 7) == 0);

    /* Batches of many items per call. */
    uint8_t tiny[8];
    size_t count = 0, used = 0;
    CHECK_RC(sett_iter_next_batch(it, tiny, sizeof tiny, &count, &used, NULL), SETT_BUFFER_TOO_SMALL);
    CHECK(count == 0 && used == 8 + 7 + strlen("value-0"));
    uint8_t *buf = malloc(4096);
    int total = 0, calls = 0;
    for (;;) {
        CHECK_RC(sett_iter_next_batch(it, buf, 4096, &count, &used, NULL), SETT_OK);
        if (count == 0) break;
        calls++;
        size_t at = 0;
        for (size_t i = 0; i < count; i++) {
            uint32_t klen, vlen;
            memcpy(&klen, buf + at, 4);
            memcpy(&vlen, buf + at + 4, 4);
            snprintf(k, sizeof k, "it/%04d", total);
            CHECK(klen == 7 && memcmp(buf + at + 8, k, 7) == 0);
            at += 8 + klen + vlen;
            total++;
        }
        CHECK(at == used);
    }
    CHECK(total == 300 && calls < 20);
    free(buf);
    CHECK_RC(sett_iter_next_batch(it, NULL, 10, &count, &used, NULL), SETT_INVALID_ARGUMENT);

    /* Views: entries lent without a copy, each call's still in place after
     * it returns (7 a call crosses the iterator's chunks of 1, 4, 16... items). */
    CHECK_RC(sett_iter_rewind(it, NULL), SETT_OK);
    sett_entry_view_t views[7];
    total = 0;
    calls = 0;
    for (;;) {
        CHECK_RC(sett_iter_next_view(it, views, 7, &count, NULL), SETT_OK);
        if (count == 0) break;
        CHECK(count <= 7);
        calls++;
        for (size_t i = 0; i < count; i++) {
            snprintf(k, sizeof k, "it/%04d", total);
            CHECK(views[i].key_len == 7 && memcmp(views[i].key, k, 7) == 0);
            CHECK(views[i].value_len > 6 && memcmp(views[i].value, "value-", 6) == 0);
            total++;
        }
    }
    CHECK(total == 300 && calls == 300 / 7 + 1);
    CHECK_RC(sett_iter_next_view(it, views, 7, &count, NULL), SETT_OK);
    CHECK(count == 0);
    CHECK_RC(sett_iter_next_view(it, NULL, 7, &count, NULL), SETT_INVALID_ARGUMENT);
    CHECK_RC(sett_iter_next_view(it, views, 0, &count, NULL), SETT_INVALID_ARGUMENT);
    CHECK_RC(sett_iter_next_view(it, views, 7, NULL, NULL), SETT_INVALID_ARGUMENT);
    CHECK_RC(sett_iter_next_view(NULL, views, 7, &count, NULL), SETT_INVALID_ARGUMENT);
    sett_iter_free(it);

    /* Reverse, bounds, keys only. */
    CHECK_RC(sett_iter_options_set_prefix(o, NULL, 0), SETT_OK);
    CHECK_RC(sett_iter_options_set_bounds(o, B("it/0010"), 7, B("it/0020"), 7), SETT_OK);
    CHECK_RC(sett_iter_options_set_reverse(o, 1), SETT_OK);
    CHECK_RC(sett_iter_options_set_keys_only(o, 1), SETT_OK);
    CHECK_RC(sett_iter_new(db, o, &it, NULL), SETT_OK);
    CHECK_RC(sett_iter_key(it, &kp, &kl), SETT_OK);
    CHECK(kl == 7 && memcmp(kp, "it/0019", 7) == 0);
    CHECK_RC(sett_iter_value(it, &vp, &vl), SETT_OK);
    CHECK(vl == 0);
    n = 0;
    while (sett_iter_valid(it)) {
        n++;
        CHECK_RC(sett_iter_next(it, NULL), SETT_OK);
    }
    CHECK(n == 10);
    /* A keys-only view's value is NULL with length 0. */
    CHECK_RC(sett_iter_rewind(it, NULL), SETT_OK);
    CHECK_RC(sett_iter_next_view(it, views, 7, &count, NULL), SETT_OK);
    CHECK(count == 7 && views[0].key_len == 7 && memcmp(views[0].key, "it/0019", 7) == 0);
    CHECK(views[0].value == NULL && views[0].value_len == 0);
    sett_iter_free(it);
    sett_iter_options_free(o);
    sett_iter_options_free(NULL);
    sett_iter_free(NULL);
    CHECK(sett_iter_valid(NULL) == 0);
    CHECK_RC(sett_iter_next(NULL, NULL), SETT_INVALID_ARGUMENT);
    CHECK_RC(sett_iter_new(NULL, NULL, &it, NULL), SETT_INVALID_ARGUMENT);
    CHECK_RC(sett_iter_new(db, NULL, NULL, NULL), SETT_INVALID_ARGUMENT);
}

static void test_maintenance(sett_db_t *db) {
    sett_error_t *err = NULL;
    sett_stats_t st;
    CHECK_RC(sett_stats(db, &st, NULL), SETT_OK);
    CHECK(st.num_levels == 7 && st.last_seq > 0);
    CHECK_RC(sett_stats(db, NULL, NULL), SETT_INVALID_ARGUMENT);
    CHECK_RC(sett_flush(db, NULL), SETT_OK);
    CHECK_RC(sett_flush(NULL, NULL), SETT_INVALID_ARGUMENT);
    CHECK_RC(sett_flatten(db, NULL), SETT_OK);
    CHECK_RC(sett_stats(db, &st, NULL), SETT_OK);
    CHECK(st.level_tables[6] > 0 && st.level_tables[0] == 0);
    int collected = -1;
    CHECK_RC(sett_run_value_log_gc(db, 0.5, &collected, NULL), SETT_OK);
    CHECK(collected != -1); /* written; whether it collects: test_value_log_gc */
    CHECK_RC(sett_run_value_log_gc(db, 1.5, &collected, &err), SETT_INVALID_ARGUMENT);
    sett_error_free(err);
    err = NULL;

    char bpath[512];
    path_in(bpath, sizeof bpath, "backup.bin");
    uint64_t next = 0, entries = 0;
    CHECK_RC(sett_backup(db, bpath, 0, &next, NULL), SETT_OK);
    CHECK(next > 0);
    sett_db_t *restored = open_db("restored", NULL);
    CHECK_RC(sett_restore(restored, bpath, &entries, NULL), SETT_OK);
    CHECK(entries > 300);
    sett_buf_t v = {0};
    CHECK_RC(sett_get(restored, B("it/0123"), 7, &v, NULL), SETT_OK);
    CHECK(v.len == 9 && memcmp(v.data, "value-123", 9) == 0);
    sett_buf_free(&v);
    CHECK_RC(sett_restore(restored, bpath, &entries, &err), SETT_INVALID_ARGUMENT); /* not empty */
    sett_error_free(err);
    err = NULL;
    CHECK_RC(sett_restore(restored, "/nonexistent/backup", NULL, &err), SETT_IO);
    sett_error_free(err);
    err = NULL;
    CHECK_RC(sett_backup(db, NULL, 0, NULL, NULL), SETT_INVALID_ARGUMENT);
    sett_db_free(restored);

    CHECK_RC(sett_drop_prefix(db, B("it/00"), 5, NULL), SETT_OK);
    CHECK_RC(sett_get(db, B("it/0050"), 7, &v, NULL), SETT_NOT_FOUND);
    CHECK_RC(sett_get(db, B("it/0150"), 7, &v, NULL), SETT_OK);
    sett_buf_free(&v);

    sett_sequence_t *seq = NULL;
    uint64_t a = 99, b2 = 99;
    CHECK_RC(sett_sequence_new(db, B("seq"), 3, 10, &seq, NULL), SETT_OK);
    CHECK_RC(sett_sequence_next(seq, &a, NULL), SETT_OK);
    CHECK_RC(sett_sequence_next(seq, &b2, NULL), SETT_OK);
    CHECK(a == 0 && b2 == 1);
    CHECK_RC(sett_sequence_release(seq, NULL), SETT_OK);
    CHECK_RC(sett_sequence_next(seq, NULL, NULL), SETT_INVALID_ARGUMENT);
    sett_sequence_free(seq);
    sett_sequence_free(NULL);
    CHECK_RC(sett_sequence_new(db, B("seq"), 3, 0, &seq, NULL), SETT_INVALID_ARGUMENT);

    CHECK_RC(sett_drop_all(db, NULL), SETT_OK);
    CHECK_RC(sett_get(db, B("it/0150"), 7, &v, NULL), SETT_NOT_FOUND);
}

static void test_bulk_load(void) {
    sett_db_t *db = open_db("bulk", NULL);
    sett_bulk_loader_t *l = NULL;
    sett_error_t *err = NULL;
    CHECK_RC(sett_bulk_loader_new(db, &l, NULL), SETT_OK);
    CHECK_RC(sett_put(db, B("x"), 1, B("y"), 1, NULL), SETT_INVALID_ARGUMENT);
    char k[32];
    for (int i = 0; i < 1000; i++) {
        snprintf(k, sizeof k, "bulk%06d", i);
        CHECK_RC(sett_bulk_loader_add(l, B(k), strlen(k), B("value"), 5, NULL), SETT_OK);
    }
    CHECK_RC(sett_bulk_loader_add(l, B("bulk000001"), 10, B("v"), 1, &err), SETT_INVALID_ARGUMENT);
    sett_error_free(err);
    uint64_t count = 0;
    CHECK_RC(sett_bulk_loader_finish(l, &count, NULL), SETT_OK);
    CHECK(count == 1000);
    CHECK_RC(sett_bulk_loader_finish(l, &count, NULL), SETT_CLOSED);
    CHECK_RC(sett_bulk_loader_add(l, B("z"), 1, B("v"), 1, NULL), SETT_CLOSED);
    sett_bulk_loader_free(l);
    sett_bulk_loader_free(NULL);
    sett_buf_t v = {0};
    CHECK_RC(sett_get(db, B("bulk000999"), 10, &v, NULL), SETT_OK);
    sett_buf_free(&v);
    CHECK_RC(sett_put(db, B("x"), 1, B("y"), 1, NULL), SETT_OK);
    CHECK_RC(sett_bulk_loader_new(db, &l, NULL), SETT_INVALID_ARGUMENT); /* not empty */
    CHECK(l == NULL);
    CHECK_RC(sett_bulk_loader_new(NULL, &l, NULL), SETT_INVALID_ARGUMENT);
    sett_db_free(db);
}

/* Overwritten values in sealed value-log files: the first GC call collects, the
 * calls after it run out, and every value reads back as last written. */
static void test_value_log_gc(void) {
    sett_options_t *o = sett_options_new();
    sett_options_set_value_threshold(o, 64);
    sett_options_set_memtable_size(o, 16 << 10); /* overwritten versions reach tables */
    sett_options_set_vlog_file_size(o, 16 << 10);
    sett_options_set_vlog_gc_ratio(o, 0); /* GC by hand here: no background GC */
    sett_db_t *db = open_db("gc", o);
    sett_options_free(o);
    char k[32], v[200];
    for (int round = 0; round < 4; round++) {
        for (int i = 0; i < 300; i++) {
            snprintf(k, sizeof k, "gc%04d", i);
            memset(v, 'a' + round, sizeof v);
            CHECK_RC(sett_put(db, B(k), strlen(k), (const uint8_t *)v, sizeof v, NULL), SETT_OK);
        }
    }
    CHECK_RC(sett_flatten(db, NULL), SETT_OK); /* drops rounds 0-2: their bytes are garbage */
    int collected = -1;
    CHECK_RC(sett_run_value_log_gc(db, 0.5, &collected, NULL), SETT_OK);
    CHECK(collected == 1);
    int calls = 1;
    while (collected == 1 && calls < 100) {
        CHECK_RC(sett_run_value_log_gc(db, 0.5, &collected, NULL), SETT_OK);
        calls++;
    }
    CHECK(collected == 0);
    sett_buf_t got = {0};
    for (int i = 0; i < 300; i++) {
        snprintf(k, sizeof k, "gc%04d", i);
        CHECK_RC(sett_get(db, B(k), strlen(k), &got, NULL), SETT_OK);
        CHECK(got.len == sizeof v && got.data[0] == 'd' && got.data[sizeof v - 1] == 'd');
        sett_buf_free(&got);
    }
    sett_db_free(db);
}

struct worker {
    sett_db_t *db;
    int id;
    int errors;
};

static void *worker_main(void *arg) {
    struct worker *w = arg;
    char k[32], val[32];
    for (int i = 0; i < 500; i++) {
        snprintf(k, sizeof k, "t%d/%d", w->id, i);
        snprintf(val, sizeof val, "v%d", i);
        if (sett_put(w->db, B(k), strlen(k), B(val), strlen(val), NULL) != SETT_OK) w->errors++;
        sett_buf_t v = {0};
        if (sett_get(w->db, B(k), strlen(k), &v, NULL) != SETT_OK || v.len != strlen(val) ||
            memcmp(v.data, val, v.len) != 0)
            w->errors++;
        sett_buf_free(&v);
    }
    return NULL;
}

static void test_threads_share_one_db(sett_db_t *db) {
    pthread_t th[4];
    struct worker w[4];
    for (int i = 0; i < 4; i++) {
        w[i] = (struct worker){db, i, 0};
        CHECK(pthread_create(&th[i], NULL, worker_main, &w[i]) == 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        CHECK(w[i].errors == 0);
    }
}

struct racer {
    sett_db_t *db;
    int id;
    int bad;  /* calls that returned something other than OK, NOT_FOUND, CLOSED */
    long calls;
};

static void *racer_main(void *arg) {
    struct racer *r = arg;
    char k[32];
    sett_buf_t v = {0};
    for (long i = 0;; i++) {
        snprintf(k, sizeof k, "race%d/%ld", r->id, i % 200);
        int rc = (i % 2) ? sett_get(r->db, B(k), strlen(k), &v, NULL)
                         : sett_put(r->db, B(k), strlen(k), B("value"), 5, NULL);
        sett_buf_free(&v);
        r->calls++;
        if (rc == SETT_CLOSED) return NULL;
        if (rc != SETT_OK && rc != SETT_NOT_FOUND) {
            r->bad++;
            return NULL;
        }
    }
}

/* sett_close while other threads are inside calls on the same handle: each
 * call completes or returns SETT_CLOSED, and nothing crashes (valgrind-clean). */
static void test_close_racing_calls(void) {
    sett_db_t *db = open_db("race", NULL);
    pthread_t th[4];
    struct racer r[4];
    for (int i = 0; i < 4; i++) {
        r[i] = (struct racer){db, i, 0, 0};
        CHECK(pthread_create(&th[i], NULL, racer_main, &r[i]) == 0);
    }
    struct timespec pause = {0, 50 * 1000 * 1000};
    nanosleep(&pause, NULL);
    CHECK_RC(sett_close(db, NULL), SETT_OK);
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        CHECK(r[i].bad == 0);
        CHECK(r[i].calls > 0);
    }
    CHECK_RC(sett_put(db, B("k"), 1, B("v"), 1, NULL), SETT_CLOSED);
    sett_db_free(db);
}

static void test_closed_db(sett_db_t *db) {
    sett_iter_t *it = NULL;
    CHECK_RC(sett_put(db, B("x"), 1, B("y"), 1, NULL), SETT_OK);
    CHECK_RC(sett_iter_new(db, NULL, &it, NULL), SETT_OK);
    sett_txn_t *t = NULL;
    CHECK_RC(sett_txn_begin(db, 1, &t, NULL), SETT_OK);
    sett_error_t *err = NULL;
    CHECK_RC(sett_close(db, &err), SETT_OK);
    CHECK_RC(sett_close(db, NULL), SETT_OK);
    sett_buf_t v = {0};
    CHECK_RC(sett_put(db, B("x"), 1, B("y"), 1, NULL), SETT_CLOSED);
    CHECK_RC(sett_get(db, B("x"), 1, &v, &err), SETT_CLOSED);
    CHECK(strstr(sett_error_message(err), "closed") != NULL);
    sett_error_free(err);
    sett_stats_t st;
    CHECK_RC(sett_stats(db, &st, NULL), SETT_CLOSED);
    CHECK_RC(sett_txn_put(t, B("a"), 1, B("b"), 1, NULL), SETT_CLOSED);
    sett_txn_free(t);
    sett_db_free(db);
    /* The iterator outlives its database: moving it is an error, not a crash. */
    int rc = SETT_OK;
    for (int i = 0; i < 10000 && rc == SETT_OK; i++) rc = sett_iter_next(it, NULL);
    CHECK(rc == SETT_CLOSED);
    sett_iter_free(it);
    sett_db_free(NULL);
    CHECK_RC(sett_close(NULL, NULL), SETT_INVALID_ARGUMENT);
}

/* --- verify ------------------------------------------------------------- */

/* The first file in directory `name` of the test folder whose name ends with
 * `suffix`, as a full path in `out`; 0 if there is none. */
static int find_file(const char *name, const char *suffix, char *out, size_t cap, char *base, size_t base_cap) {
    char dir[512];
    path_in(dir, sizeof dir, name);
    DIR *d = opendir(dir);
    if (d == NULL) return 0;
    struct dirent *e;
    int found = 0;
    while (!found && (e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name), m = strlen(suffix);
        if (n > m && strcmp(e->d_name + n - m, suffix) == 0) {
            snprintf(out, cap, "%s/%s", dir, e->d_name);
            snprintf(base, base_cap, "%s", e->d_name);
            found = 1;
        }
    }
    closedir(d);
    return found;
}

/* Flips one byte of the file at `path`, `at` bytes from its start. */
static int flip_byte(const char *path, long at) {
    FILE *f = fopen(path, "r+b");
    if (f == NULL) return 0;
    int ok = fseek(f, at, SEEK_SET) == 0;
    int c = ok ? fgetc(f) : EOF;
    ok = ok && c != EOF && fseek(f, at, SEEK_SET) == 0 && fputc(c ^ 0x5a, f) != EOF;
    return fclose(f) == 0 && ok;
}

static void test_verify_counts_a_healthy_db_and_names_a_damaged_table(void) {
    sett_options_t *o = sett_options_new();
    sett_options_set_value_threshold(o, 64);
    sett_options_set_vlog_gc_ratio(o, 0);
    sett_db_t *db = open_db("verify", o);
    char k[32], v[100];
    for (int i = 0; i < 400; i++) {
        snprintf(k, sizeof k, "verify%04d", i);
        memset(v, 'a' + i % 26, sizeof v);
        CHECK_RC(sett_put(db, B(k), strlen(k), B(v), (i % 2) ? sizeof v : 10, NULL), SETT_OK);
    }
    CHECK_RC(sett_flush(db, NULL), SETT_OK);
    sett_verify_report_t r;
    memset(&r, 0, sizeof r);
    sett_error_t *err = NULL;
    CHECK_RC(sett_verify(db, &r, &err), SETT_INVALID_ARGUMENT); /* size not set */
    CHECK(strstr(sett_error_message(err), "sett_verify_report_t.size is 0") != NULL);
    sett_error_free(err);
    err = NULL;
    r.size = sizeof r;
    CHECK_RC(sett_verify(db, &r, &err), SETT_OK);
    CHECK(err == NULL && r.size == sizeof r);
    CHECK(r.tables >= 1 && r.blocks >= r.tables);
    CHECK(r.entries == 400 && r.values == 200); /* 200 values of 100 bytes in the value log */
    CHECK_RC(sett_verify(db, NULL, NULL), SETT_OK);
    CHECK_RC(sett_verify(NULL, &r, NULL), SETT_INVALID_ARGUMENT);
    sett_db_free(db);

    /* Damage the first data block of a table: verify reports it by name. */
    char path[600], base[256];
    CHECK(find_file("verify", ".sst", path, sizeof path, base, sizeof base));
    CHECK(flip_byte(path, 100));
    db = open_db("verify", o);
    sett_options_free(o);
    if (db == NULL) return;
    r.size = sizeof r;
    r.tables = 12345;
    CHECK_RC(sett_verify(db, &r, &err), SETT_CORRUPTION);
    CHECK(sett_error_code(err) == SETT_CORRUPTION);
    if (strstr(sett_error_message(err), base) == NULL)
        fprintf(stderr, "verify did not name %s: %s\n", base, sett_error_message(err));
    CHECK(strstr(sett_error_message(err), base) != NULL);
    CHECK(r.tables == 12345); /* not written on failure */
    sett_error_free(err);
    /* The database is still open: writes and reads of the memtable work. */
    CHECK_RC(sett_put(db, B("after"), 5, B("x"), 1, NULL), SETT_OK);
    sett_buf_t got = {0};
    CHECK_RC(sett_get(db, B("after"), 5, &got, NULL), SETT_OK);
    sett_buf_free(&got);
    sett_db_free(db);
}

/* --- backup and restore through callbacks -------------------------------- */

struct sink {
    uint8_t *data;
    size_t len, cap;
    int calls;
    int fail_on_call; /* 0: never */
};

static int sink_write(void *ctx, const uint8_t *data, size_t len) {
    struct sink *s = ctx;
    s->calls++;
    if (s->fail_on_call != 0 && s->calls == s->fail_on_call) return 7;
    if (s->len + len > s->cap) {
        size_t cap = (s->len + len) * 2;
        uint8_t *p = realloc(s->data, cap);
        if (p == NULL) return 12;
        s->data = p;
        s->cap = cap;
    }
    memcpy(s->data + s->len, data, len);
    s->len += len;
    return 0;
}

struct source {
    const uint8_t *data;
    size_t len, at;
    size_t step;     /* at most this many bytes per call */
    size_t fail_at;  /* return 9 once this many bytes were handed out; 0: never */
    size_t end_at;   /* report the end of the stream here; 0: at len */
};

static int source_read(void *ctx, uint8_t *buf, size_t cap, size_t *len) {
    struct source *s = ctx;
    if (s->fail_at != 0 && s->at >= s->fail_at) return 9;
    size_t end = s->end_at != 0 ? s->end_at : s->len;
    size_t n = end - s->at;
    if (n > cap) n = cap;
    if (n > s->step) n = s->step;
    memcpy(buf, s->data + s->at, n);
    s->at += n;
    *len = n;
    return 0;
}

static sett_db_t *stream_source_db(void) {
    sett_options_t *o = sett_options_new();
    sett_options_set_value_threshold(o, 64);
    sett_db_t *db = open_db("stream-src", o);
    sett_options_free(o);
    char k[32], v[300];
    for (int i = 0; i < 500; i++) {
        snprintf(k, sizeof k, "s%04d", i);
        memset(v, 'A' + i % 26, sizeof v);
        size_t vl = (i % 3 == 0) ? sizeof v : 12;
        CHECK_RC(sett_put_with(db, B(k), strlen(k), B(v), vl, (uint8_t)(i % 7), (i % 5 == 0) ? 3600000 : 0, NULL), SETT_OK);
    }
    for (int i = 0; i < 500; i += 10) {
        snprintf(k, sizeof k, "s%04d", i);
        CHECK_RC(sett_delete(db, B(k), strlen(k), NULL), SETT_OK);
    }
    return db;
}

static void test_backup_to_a_callback_round_trips_every_entry(sett_db_t *src) {
    struct sink s = {0};
    uint64_t next = 0, entries = 0;
    CHECK_RC(sett_backup_to(src, 0, sink_write, &s, &next, NULL), SETT_OK);
    CHECK(next > 0 && s.len > 0 && s.calls >= 4);

    /* The same bytes as the file form of the backup. */
    char bpath[512];
    path_in(bpath, sizeof bpath, "stream.backup");
    uint64_t next_file = 0;
    CHECK_RC(sett_backup(src, bpath, 0, &next_file, NULL), SETT_OK);
    CHECK(next_file == next);
    FILE *f = fopen(bpath, "rb");
    uint8_t *file = malloc(s.len + 1);
    size_t n = f ? fread(file, 1, s.len + 1, f) : 0;
    if (f) fclose(f);
    CHECK(n == s.len && memcmp(file, s.data, s.len) == 0);
    free(file);

    /* Restored through a reader that hands out at most 1000 bytes a call. */
    sett_db_t *dst = open_db("stream-dst", NULL);
    struct source r = {s.data, s.len, 0, 1000, 0, 0};
    CHECK_RC(sett_restore_from(dst, source_read, &r, &entries, NULL), SETT_OK);
    CHECK(entries == 450 && r.at == s.len);
    char k[32];
    int same = 0;
    for (int i = 0; i < 500; i++) {
        snprintf(k, sizeof k, "s%04d", i);
        sett_buf_t a = {0}, b = {0};
        uint8_t ma = 0, mb = 0;
        uint64_t xa = 0, xb = 0;
        int ra = sett_get_entry(src, B(k), strlen(k), &a, &ma, &xa, NULL, NULL);
        int rb = sett_get_entry(dst, B(k), strlen(k), &b, &mb, &xb, NULL, NULL);
        if (ra == rb && a.len == b.len && (a.len == 0 || memcmp(a.data, b.data, a.len) == 0) && ma == mb && xa == xb)
            same++;
        else
            fprintf(stderr, "restored %s differs (rc %d/%d, len %zu/%zu)\n", k, ra, rb, a.len, b.len);
        sett_buf_free(&a);
        sett_buf_free(&b);
    }
    CHECK(same == 500);

    /* An incremental backup from `next` after one more write carries just it. */
    CHECK_RC(sett_put(src, B("late"), 4, B("L"), 1, NULL), SETT_OK);
    struct sink inc = {0};
    uint64_t next2 = 0;
    CHECK_RC(sett_backup_to(src, next, sink_write, &inc, &next2, NULL), SETT_OK);
    CHECK(next2 > next);
    struct source ri = {inc.data, inc.len, 0, 1 << 20, 0, 0};
    CHECK_RC(sett_restore_from(dst, source_read, &ri, &entries, NULL), SETT_OK);
    CHECK(entries == 1);
    sett_buf_t late = {0};
    CHECK_RC(sett_get(dst, B("late"), 4, &late, NULL), SETT_OK);
    sett_buf_free(&late);
    CHECK_RC(sett_delete(src, B("late"), 4, NULL), SETT_OK);
    free(inc.data);

    /* A cut stream is corruption; bad arguments are refused. */
    sett_db_t *cut = open_db("stream-cut", NULL);
    struct source rc = {s.data, s.len, 0, 1 << 20, 0, s.len - 5};
    sett_error_t *err = NULL;
    CHECK_RC(sett_restore_from(cut, source_read, &rc, NULL, &err), SETT_CORRUPTION);
    CHECK(strstr(sett_error_message(err), "backup stream") != NULL);
    sett_error_free(err);
    err = NULL;
    CHECK_RC(sett_restore_from(cut, NULL, &rc, NULL, &err), SETT_INVALID_ARGUMENT);
    CHECK(strstr(sett_error_message(err), "read callback is NULL") != NULL);
    sett_error_free(err);
    err = NULL;
    CHECK_RC(sett_backup_to(src, 0, NULL, &s, NULL, &err), SETT_INVALID_ARGUMENT);
    CHECK(strstr(sett_error_message(err), "write callback is NULL") != NULL);
    sett_error_free(err);
    CHECK_RC(sett_backup_to(NULL, 0, sink_write, &s, NULL, NULL), SETT_INVALID_ARGUMENT);
    CHECK_RC(sett_restore_from(NULL, source_read, &rc, NULL, NULL), SETT_INVALID_ARGUMENT);
    sett_db_free(cut);
    sett_db_free(dst);
    free(s.data);
}

static void test_a_callback_that_fails_mid_stream_leaves_both_dbs_as_they_were(sett_db_t *src) {
    /* The writer stops the backup at its third call. */
    struct sink s = {0};
    s.fail_on_call = 3;
    sett_error_t *err = NULL;
    uint64_t next = 77;
    CHECK_RC(sett_backup_to(src, 0, sink_write, &s, &next, &err), SETT_IO);
    CHECK(s.calls == 3 && next == 77);
    if (strstr(sett_error_message(err), "write callback returned 7") == NULL)
        fprintf(stderr, "unexpected message: %s\n", sett_error_message(err));
    CHECK(strstr(sett_error_message(err), "write callback returned 7") != NULL);
    sett_error_free(err);
    err = NULL;
    /* The source is untouched: every key reads back and a new backup works. */
    sett_buf_t v = {0};
    CHECK_RC(sett_get(src, B("s0001"), 5, &v, NULL), SETT_OK);
    CHECK(v.len == 12 && v.data[0] == 'B');
    sett_buf_free(&v);
    CHECK_RC(sett_get(src, B("s0003"), 5, &v, NULL), SETT_OK);
    CHECK(v.len == 300);
    sett_buf_free(&v);
    struct sink full = {0};
    CHECK_RC(sett_backup_to(src, 0, sink_write, &full, NULL, NULL), SETT_OK);

    /* The reader fails halfway: the target stays empty, and the whole stream
     * restores into it afterwards. */
    sett_db_t *dst = open_db("stream-fail", NULL);
    struct source r = {full.data, full.len, 0, 4096, full.len / 2, 0};
    CHECK_RC(sett_restore_from(dst, source_read, &r, NULL, &err), SETT_IO);
    CHECK(strstr(sett_error_message(err), "read callback returned 9") != NULL);
    sett_error_free(err);
    CHECK_RC(sett_get(dst, B("s0001"), 5, &v, NULL), SETT_NOT_FOUND);
    struct source again = {full.data, full.len, 0, 1 << 20, 0, 0};
    uint64_t entries = 0;
    CHECK_RC(sett_restore_from(dst, source_read, &again, &entries, NULL), SETT_OK);
    CHECK(entries == 450);
    CHECK_RC(sett_get(dst, B("s0499"), 5, &v, NULL), SETT_OK);
    sett_buf_free(&v);
    sett_db_free(dst);
    free(full.data);
    free(s.data);
}

static void test_streams(void) {
    sett_db_t *src = stream_source_db();
    test_backup_to_a_callback_round_trips_every_entry(src);
    test_a_callback_that_fails_mid_stream_leaves_both_dbs_as_they_were(src);
    sett_db_free(src);
}

/* --- meta and TTL in transactions and the bulk loader --------------------- */

static void test_txn_get_entry_reads_meta_and_expiry(sett_db_t *db) {
    CHECK_RC(sett_put_with(db, B("tmeta"), 5, B("v1"), 2, 9, 60000, NULL), SETT_OK);
    uint8_t meta = 0;
    uint64_t expires = 0, version = 0, db_version = 0;
    sett_buf_t v = {0};
    CHECK_RC(sett_get_entry(db, B("tmeta"), 5, &v, NULL, NULL, &db_version, NULL), SETT_OK);
    sett_buf_free(&v);
    sett_txn_t *t = NULL;
    CHECK_RC(sett_txn_begin(db, 1, &t, NULL), SETT_OK);
    CHECK_RC(sett_txn_get_entry(t, B("tmeta"), 5, &v, &meta, &expires, &version, NULL), SETT_OK);
    CHECK(v.len == 2 && memcmp(v.data, "v1", 2) == 0);
    CHECK(meta == 9 && expires > (uint64_t)time(NULL) && version == db_version);
    sett_buf_free(&v);
    /* Its own pending write: the meta it wrote, version and expiry 0. */
    CHECK_RC(sett_txn_put_with(t, B("tmeta"), 5, B("v2"), 2, 4, 0, NULL), SETT_OK);
    CHECK_RC(sett_txn_get_entry(t, B("tmeta"), 5, &v, &meta, &expires, &version, NULL), SETT_OK);
    CHECK(v.len == 2 && memcmp(v.data, "v2", 2) == 0 && meta == 4 && version == 0 && expires == 0);
    sett_buf_free(&v);
    CHECK_RC(sett_txn_get_entry(t, B("tnone"), 5, &v, &meta, NULL, NULL, NULL), SETT_NOT_FOUND);
    CHECK(v.data == NULL);
    CHECK_RC(sett_txn_get_entry(t, B("tmeta"), 5, NULL, NULL, NULL, NULL, NULL), SETT_INVALID_ARGUMENT);
    CHECK_RC(sett_txn_commit(t, NULL), SETT_OK);
    CHECK_RC(sett_txn_get_entry(t, B("tmeta"), 5, &v, NULL, NULL, NULL, NULL), SETT_CLOSED);
    sett_txn_free(t);
    CHECK_RC(sett_get_entry(db, B("tmeta"), 5, &v, &meta, &expires, NULL, NULL), SETT_OK);
    CHECK(meta == 4 && expires == 0);
    sett_buf_free(&v);
}

static void test_bulk_loader_add_with_keeps_meta_and_ttl(void) {
    sett_db_t *db = open_db("bulk-meta", NULL);
    sett_bulk_loader_t *l = NULL;
    CHECK_RC(sett_bulk_loader_new(db, &l, NULL), SETT_OK);
    CHECK_RC(sett_bulk_loader_add_with(l, B("a"), 1, B("1"), 1, 3, 0, NULL), SETT_OK);
    CHECK_RC(sett_bulk_loader_add_with(l, B("b"), 1, B("2"), 1, 0, 120000, NULL), SETT_OK);
    CHECK_RC(sett_bulk_loader_add(l, B("c"), 1, B("3"), 1, NULL), SETT_OK);
    CHECK_RC(sett_bulk_loader_add_with(l, B("b"), 1, B("x"), 1, 0, 0, NULL), SETT_INVALID_ARGUMENT);
    CHECK_RC(sett_bulk_loader_add_with(NULL, B("d"), 1, B("x"), 1, 0, 0, NULL), SETT_INVALID_ARGUMENT);
    uint64_t count = 0;
    CHECK_RC(sett_bulk_loader_finish(l, &count, NULL), SETT_OK);
    CHECK(count == 3);
    CHECK_RC(sett_bulk_loader_add_with(l, B("z"), 1, B("x"), 1, 0, 0, NULL), SETT_CLOSED);
    sett_bulk_loader_free(l);
    uint8_t meta = 0;
    uint64_t expires = 1;
    sett_buf_t v = {0};
    CHECK_RC(sett_get_entry(db, B("a"), 1, &v, &meta, &expires, NULL, NULL), SETT_OK);
    CHECK(meta == 3 && expires == 0);
    sett_buf_free(&v);
    uint64_t now = (uint64_t)time(NULL);
    CHECK_RC(sett_get_entry(db, B("b"), 1, &v, &meta, &expires, NULL, NULL), SETT_OK);
    CHECK(meta == 0 && expires >= now + 119 && expires <= now + 121);
    sett_buf_free(&v);
    sett_db_free(db);
}

/* --- stats with GC counts; vlog_gc_ratio out of range --------------------- */

static void test_stats_ex_reports_gc_and_checks_its_size(void) {
    sett_options_t *o = sett_options_new();
    sett_options_set_value_threshold(o, 64);
    sett_options_set_memtable_size(o, 16 << 10);
    sett_options_set_vlog_file_size(o, 16 << 10);
    sett_options_set_vlog_gc_ratio(o, 0); /* GC by hand */
    CHECK_RC(sett_options_set_cache_size(o, 3 << 20), SETT_OK);
    sett_db_t *db = open_db("stats-ex", o);
    sett_options_free(o);
    sett_stats_ex_t st;
    memset(&st, 0, sizeof st);
    st.size = sizeof st;
    CHECK_RC(sett_stats_ex(db, &st, NULL), SETT_OK);
    CHECK(st.size == sizeof st && st.num_levels == 7);
    CHECK(st.gc_files_rewritten == 0 && st.gc_files_deleted == 0 && st.gc_bytes_reclaimed == 0);
    CHECK(st.cache_capacity == 3 << 20 && st.cache_usage <= st.cache_capacity);
    char k[32], v[200];
    for (int round = 0; round < 4; round++) {
        for (int i = 0; i < 300; i++) {
            snprintf(k, sizeof k, "gc%04d", i);
            memset(v, 'a' + round, sizeof v);
            CHECK_RC(sett_put(db, B(k), strlen(k), (const uint8_t *)v, sizeof v, NULL), SETT_OK);
        }
    }
    CHECK_RC(sett_flatten(db, NULL), SETT_OK);
    int collected = 1, calls = 0;
    while (collected == 1 && calls < 100) {
        CHECK_RC(sett_run_value_log_gc(db, 0.5, &collected, NULL), SETT_OK);
        calls++;
    }
    CHECK(calls > 1);
    CHECK_RC(sett_stats_ex(db, &st, NULL), SETT_OK);
    CHECK(st.gc_files_rewritten + st.gc_files_deleted >= (uint64_t)(calls - 1));
    CHECK(st.gc_bytes_reclaimed > 0);
    CHECK(st.last_seq >= 1200 && st.level_tables[6] > 0);
    /* Where the writes went: flushes into L0, flatten's merges below, the WAL. */
    uint64_t compaction_read = 0;
    for (int l = 0; l < SETT_MAX_LEVELS; l++) compaction_read += st.level_bytes_read[l];
    CHECK(st.level_bytes_written[0] > 0 && compaction_read > 0 && st.wal_bytes_written > 1200 * 6);
    CHECK((st.gc_files_rewritten == 0) == (st.gc_bytes_moved == 0));
    /* The flattened tables' indexes and filters are pinned in the budget. */
    CHECK(st.cache_pinned_bytes > 0 && st.cache_usage <= st.cache_capacity);
    sett_stats_t old;
    CHECK_RC(sett_stats(db, &old, NULL), SETT_OK);
    CHECK(old.last_seq == st.last_seq && old.vlog_files == st.vlog_files);

    /* A newer header's larger struct: the known part filled, the rest zeroed. */
    uint64_t bigger[sizeof(sett_stats_ex_t) / 8 + 4];
    memset(bigger, 0xAB, sizeof bigger);
    ((sett_stats_ex_t *)bigger)->size = sizeof bigger;
    CHECK_RC(sett_stats_ex(db, (sett_stats_ex_t *)bigger, NULL), SETT_OK);
    CHECK(((sett_stats_ex_t *)bigger)->size == sizeof(sett_stats_ex_t));
    CHECK(((sett_stats_ex_t *)bigger)->last_seq == st.last_seq);
    for (size_t i = sizeof(sett_stats_ex_t) / 8; i < sizeof bigger / 8; i++) CHECK(bigger[i] == 0);

    sett_error_t *err = NULL;
    st.size = 16;
    CHECK_RC(sett_stats_ex(db, &st, &err), SETT_INVALID_ARGUMENT);
    CHECK(strstr(sett_error_message(err), "sett_stats_ex_t.size is 16") != NULL);
    sett_error_free(err);
    CHECK_RC(sett_stats_ex(db, NULL, NULL), SETT_INVALID_ARGUMENT);
    CHECK_RC(sett_close(db, NULL), SETT_OK);
    st.size = sizeof st;
    CHECK_RC(sett_stats_ex(db, &st, NULL), SETT_CLOSED);
    sett_db_free(db);
}

/* --- checkpoints ---------------------------------------------------------- */

static void test_checkpoint_opens_as_its_own_db(void) {
    sett_options_t *o = sett_options_new();
    sett_options_set_value_threshold(o, 64);
    sett_options_set_memtable_size(o, 16 << 10);
    sett_options_set_vlog_file_size(o, 16 << 10);
    sett_db_t *db = open_db("ckpt-src", o);
    char k[32], v[200];
    for (int i = 0; i < 300; i++) {
        snprintf(k, sizeof k, "ck%04d", i);
        memset(v, 'a' + i % 26, sizeof v);
        size_t vlen = i % 2 ? sizeof v : 10; /* both sides of the value threshold */
        CHECK_RC(sett_put(db, B(k), strlen(k), (const uint8_t *)v, vlen, NULL), SETT_OK);
    }
    char target[512];
    path_in(target, sizeof target, "ckpt-dst");
    sett_checkpoint_report_t r;
    memset(&r, 0, sizeof r);
    sett_error_t *err = NULL;
    CHECK_RC(sett_checkpoint(db, target, &r, &err), SETT_INVALID_ARGUMENT); /* size not set */
    CHECK(strstr(sett_error_message(err), "sett_checkpoint_report_t.size is 0") != NULL);
    sett_error_free(err);
    err = NULL;
    r.size = sizeof r;
    CHECK_RC(sett_checkpoint(db, target, &r, &err), SETT_OK);
    CHECK(err == NULL && r.size == sizeof r);
    CHECK(r.files_linked >= 2 && r.bytes_linked > 0 && r.files_copied == 0);
    /* Writes after the checkpoint stay in the source. */
    CHECK_RC(sett_put(db, B("later"), 5, B("x"), 1, NULL), SETT_OK);
    /* A second checkpoint onto the same directory is refused. */
    CHECK_RC(sett_checkpoint(db, target, NULL, &err), SETT_INVALID_ARGUMENT);
    CHECK(strstr(sett_error_message(err), "already exists") != NULL);
    sett_error_free(err);
    err = NULL;

    sett_db_t *ck = NULL;
    CHECK_RC(sett_open(target, NULL, &ck, &err), SETT_OK);
    if (ck != NULL) {
        for (int i = 0; i < 300; i++) {
            snprintf(k, sizeof k, "ck%04d", i);
            memset(v, 'a' + i % 26, sizeof v);
            size_t vlen = i % 2 ? sizeof v : 10;
            sett_buf_t got = {0};
            CHECK_RC(sett_get(ck, B(k), strlen(k), &got, NULL), SETT_OK);
            CHECK(got.len == vlen && memcmp(got.data, v, vlen) == 0);
            sett_buf_free(&got);
        }
        sett_buf_t got = {0};
        CHECK_RC(sett_get(ck, B("later"), 5, &got, NULL), SETT_NOT_FOUND);
        sett_verify_report_t vr;
        memset(&vr, 0, sizeof vr);
        vr.size = sizeof vr;
        CHECK_RC(sett_verify(ck, &vr, NULL), SETT_OK);
        CHECK(vr.entries >= 300 && vr.values >= 150);
        CHECK_RC(sett_close(ck, NULL), SETT_OK);
        sett_db_free(ck);
    }
    CHECK_RC(sett_close(db, NULL), SETT_OK);
    sett_db_free(db);

    /* A directory holding the marker of an interrupted checkpoint is refused. */
    char marker[600];
    snprintf(marker, sizeof marker, "%s/CHECKPOINT-INCOMPLETE", target);
    FILE *f = fopen(marker, "w");
    CHECK(f != NULL);
    if (f != NULL) fclose(f);
    ck = NULL;
    CHECK_RC(sett_open(target, NULL, &ck, &err), SETT_CORRUPTION);
    CHECK(ck == NULL && strstr(sett_error_message(err), "CHECKPOINT-INCOMPLETE") != NULL);
    sett_error_free(err);
    sett_options_free(o);
}

static void test_vlog_gc_ratio_out_of_range_is_refused_by_name(void) {
    sett_db_t *db = open_db("ratio", NULL);
    CHECK_RC(sett_put(db, B("kept"), 4, B("value"), 5, NULL), SETT_OK);
    sett_db_free(db);
    char path[512];
    path_in(path, sizeof path, "ratio");
    const double bad[] = {1.5, -0.1, 1.0};
    for (size_t i = 0; i < 2 * (sizeof bad / sizeof bad[0]); i++) {
        /* First vlog_gc_ratio, then vlog_gc_idle_ratio, each refused by its name. */
        int idle = i >= sizeof bad / sizeof bad[0];
        double value = bad[i % (sizeof bad / sizeof bad[0])];
        const char *name = idle ? "vlog_gc_idle_ratio" : "vlog_gc_ratio";
        sett_options_t *o = sett_options_new();
        if (idle)
            CHECK_RC(sett_options_set_vlog_gc_idle_ratio(o, value), SETT_OK); /* checked at open */
        else
            CHECK_RC(sett_options_set_vlog_gc_ratio(o, value), SETT_OK);
        sett_error_t *err = NULL;
        db = (sett_db_t *)1;
        CHECK_RC(sett_open(path, o, &db, &err), SETT_INVALID_OPTION);
        CHECK(db == NULL);
        if (strstr(sett_error_message(err), name) == NULL)
            fprintf(stderr, "%s %g: %s\n", name, value, sett_error_message(err));
        CHECK(strstr(sett_error_message(err), name) != NULL);
        sett_error_free(err);
        sett_options_free(o);
    }
    /* The refused opens did not touch the data. */
    db = open_db("ratio", NULL);
    sett_buf_t v = {0};
    CHECK_RC(sett_get(db, B("kept"), 4, &v, NULL), SETT_OK);
    CHECK(v.len == 5 && memcmp(v.data, "value", 5) == 0);
    sett_buf_free(&v);
    sett_db_free(db);
}

/* Sum of the sizes of the .sst files in database directory `name`. */
static long long table_bytes(const char *name) {
    char path[512], file[1024];
    path_in(path, sizeof path, name);
    DIR *d = opendir(path);
    long long total = 0;
    if (d == NULL) return -1;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        if (n < 4 || strcmp(e->d_name + n - 4, ".sst") != 0) continue;
        snprintf(file, sizeof file, "%s/%s", path, e->d_name);
        FILE *f = fopen(file, "rb");
        if (f == NULL) continue;
        fseek(f, 0, SEEK_END);
        total += ftell(f);
        fclose(f);
    }
    closedir(d);
    return total;
}

static void json_record(char *out, size_t cap, int i) {
    snprintf(out, cap,
             "{\"id\":%d,\"name\":\"user-%d\",\"email\":\"user%d@example.com\","
             "\"city\":\"Lyon\",\"active\":true,\"tags\":[\"alpha\",\"bravo\"],"
             "\"bio\":\"charlie delta echo foxtrot golf hotel india juliet kilo lima\"}",
             i, i, i);
}

/* Writes JSON-like records with `types` per level, flattens, reopens and reads
 * every one back; returns the bytes of its tables. */
static long long write_json(const char *name, const int *types, size_t n) {
    sett_options_t *o = sett_options_new();
    sett_options_set_memtable_size(o, 64 << 10);
    sett_options_set_table_size(o, 64 << 10);
    CHECK_RC(sett_options_set_compression_per_level(o, types, n), SETT_OK);
    CHECK_RC(sett_options_set_zstd_level(o, 5), SETT_OK);
    sett_db_t *db = open_db(name, o);
    char key[32], value[512];
    for (int i = 0; i < 3000; i++) {
        snprintf(key, sizeof key, "user:%06d", i);
        json_record(value, sizeof value, i);
        CHECK_RC(sett_put(db, B(key), strlen(key), B(value), strlen(value), NULL), SETT_OK);
    }
    CHECK_RC(sett_flatten(db, NULL), SETT_OK);
    CHECK_RC(sett_close(db, NULL), SETT_OK);
    sett_db_free(db);
    db = open_db(name, o);
    sett_options_free(o);
    int wrong = 0;
    for (int i = 0; i < 3000; i++) {
        sett_buf_t v = {0};
        snprintf(key, sizeof key, "user:%06d", i);
        json_record(value, sizeof value, i);
        if (sett_get(db, B(key), strlen(key), &v, NULL) != SETT_OK || v.len != strlen(value) ||
            memcmp(v.data, value, v.len) != 0)
            wrong++;
        sett_buf_free(&v);
    }
    CHECK(wrong == 0);
    CHECK_RC(sett_verify(db, NULL, NULL), SETT_OK);
    CHECK_RC(sett_close(db, NULL), SETT_OK);
    sett_db_free(db);
    return table_bytes(name);
}

static void test_compression_per_level_reads_back_and_shrinks_tables(void) {
    const int none[] = {SETT_COMPRESSION_NONE};
    const int mixed[] = {SETT_COMPRESSION_NONE, SETT_COMPRESSION_LZ4, SETT_COMPRESSION_ZSTD};
    long long plain = write_json("plain", none, 1);
    long long packed = write_json("packed", mixed, 3);
    if (!(packed > 0 && packed * 10 < plain * 7))
        fprintf(stderr, "compressed tables %lld bytes against %lld\n", packed, plain);
    CHECK(packed > 0 && packed * 10 < plain * 7);

    /* Bad values: an unknown type or NULL list now, a bad zstd level at open. */
    sett_options_t *o = sett_options_new();
    const int bad[] = {SETT_COMPRESSION_LZ4, 7};
    CHECK_RC(sett_options_set_compression(o, 3), SETT_INVALID_ARGUMENT);
    CHECK_RC(sett_options_set_compression_per_level(o, bad, 2), SETT_INVALID_ARGUMENT);
    CHECK_RC(sett_options_set_compression_per_level(o, NULL, 2), SETT_INVALID_ARGUMENT);
    CHECK_RC(sett_options_set_compression_per_level(o, NULL, 0), SETT_OK);
    CHECK_RC(sett_options_set_compression(o, SETT_COMPRESSION_LZ4), SETT_OK);
    CHECK_RC(sett_options_set_zstd_level(o, 40), SETT_OK);
    char path[512];
    path_in(path, sizeof path, "packed");
    sett_db_t *db = NULL;
    sett_error_t *err = NULL;
    CHECK_RC(sett_open(path, o, &db, &err), SETT_INVALID_OPTION);
    CHECK(db == NULL && strstr(sett_error_message(err), "zstd_level") != NULL);
    sett_error_free(err);
    sett_options_free(o);
}

/* NULL handles give SETT_INVALID_ARGUMENT with a message naming the handle.
 * `call` stores its error through `&e_`. */
#define CHECK_NULL_HANDLE(call, name)                                              \
    do {                                                                           \
        sett_error_t *e_ = NULL;                                                   \
        CHECK_RC(call, SETT_INVALID_ARGUMENT);                                     \
        checks++;                                                                  \
        if (strstr(sett_error_message(e_), name) == NULL) {                        \
            failures++;                                                            \
            fprintf(stderr, "%s:%d: %s: message \"%s\" does not say \"%s\"\n",     \
                    __FILE__, __LINE__, #call, sett_error_message(e_), name);      \
        }                                                                          \
        sett_error_free(e_);                                                       \
    } while (0)

static void test_null_handles_are_errors_naming_the_handle(void) {
    sett_buf_t v = {0};
    uint64_t n = 0;
    CHECK_NULL_HANDLE(sett_flush(NULL, &e_), "db is NULL");
    CHECK_NULL_HANDLE(sett_get(NULL, B("k"), 1, &v, &e_), "db is NULL");
    CHECK_NULL_HANDLE(sett_verify(NULL, NULL, &e_), "db is NULL");
    CHECK_NULL_HANDLE(sett_stats_ex(NULL, NULL, &e_), "db is NULL");
    CHECK_NULL_HANDLE(sett_checkpoint(NULL, "/nonexistent", NULL, &e_), "db is NULL");
    CHECK_NULL_HANDLE(sett_backup_to(NULL, 0, sink_write, NULL, NULL, &e_), "db is NULL");
    CHECK_NULL_HANDLE(sett_txn_get_entry(NULL, B("k"), 1, &v, NULL, NULL, NULL, &e_), "txn is NULL");
    CHECK_NULL_HANDLE(sett_txn_commit(NULL, &e_), "txn is NULL");
    CHECK_NULL_HANDLE(sett_iter_next(NULL, &e_), "iter is NULL");
    CHECK_NULL_HANDLE(sett_iter_rewind(NULL, &e_), "iter is NULL");
    CHECK_NULL_HANDLE(sett_sequence_next(NULL, &n, &e_), "seq is NULL");
    CHECK_NULL_HANDLE(sett_bulk_loader_finish(NULL, &n, &e_), "loader is NULL");
    CHECK_NULL_HANDLE(sett_bulk_loader_add_with(NULL, B("k"), 1, B("v"), 1, 0, 0, &e_), "loader is NULL");
    /* The calls without an error out-parameter return the code. */
    CHECK_RC(sett_batch_clear(NULL), SETT_INVALID_ARGUMENT);
    CHECK_RC(sett_iter_options_set_reverse(NULL, 1), SETT_INVALID_ARGUMENT);
    CHECK_RC(sett_options_set_vlog_gc_ratio(NULL, 0.5), SETT_INVALID_ARGUMENT);
    CHECK_RC(sett_options_set_vlog_gc_idle_ratio(NULL, 0.25), SETT_INVALID_ARGUMENT);
    CHECK(sett_iter_valid(NULL) == 0 && sett_batch_count(NULL) == 0);
    sett_txn_discard(NULL);
    CHECK(v.data == NULL);
}

static int count_keys(sett_db_t *db) {
    sett_iter_t *it = NULL;
    CHECK_RC(sett_iter_new(db, NULL, &it, NULL), SETT_OK);
    int n = 0;
    while (it != NULL && sett_iter_valid(it)) {
        CHECK_RC(sett_iter_next(it, NULL), SETT_OK);
        n++;
    }
    sett_iter_free(it);
    return n;
}

static void test_range_deletes_hide_their_range_in_reads_batches_and_after_flatten(void) {
    sett_db_t *db = open_db("range", NULL);
    char k[16];
    for (int i = 0; i < 100; i++) {
        snprintf(k, sizeof k, "k%03d", i);
        CHECK_RC(sett_put(db, B(k), 4, B("value"), 5, NULL), SETT_OK);
    }
    sett_buf_t v = {0};
    CHECK_RC(sett_delete_range(db, B("k020"), 4, B("k030"), 4, NULL), SETT_OK);
    CHECK_RC(sett_get(db, B("k025"), 4, &v, NULL), SETT_NOT_FOUND);
    CHECK_RC(sett_get(db, B("k020"), 4, &v, NULL), SETT_NOT_FOUND);
    CHECK_RC(sett_get(db, B("k030"), 4, &v, NULL), SETT_OK);
    sett_buf_free(&v);
    CHECK_RC(sett_get(db, B("k019"), 4, &v, NULL), SETT_OK);
    sett_buf_free(&v);
    CHECK(count_keys(db) == 90);

    /* start >= end is refused with a message; nothing is deleted. */
    sett_error_t *err = NULL;
    CHECK_RC(sett_delete_range(db, B("k090"), 4, B("k010"), 4, &err), SETT_INVALID_ARGUMENT);
    CHECK(err != NULL && strstr(sett_error_message(err), "start < end") != NULL);
    sett_error_free(err);
    CHECK_RC(sett_delete_range(NULL, B("a"), 1, B("b"), 1, NULL), SETT_INVALID_ARGUMENT);
    CHECK_RC(sett_delete_range(db, NULL, 1, B("b"), 1, NULL), SETT_INVALID_ARGUMENT);
    CHECK(count_keys(db) == 90);

    /* In a batch: the range delete removes what the batch put before it, not after. */
    sett_batch_t *b = sett_batch_new();
    CHECK_RC(sett_batch_put(b, B("k050"), 4, B("early"), 5), SETT_OK);
    CHECK_RC(sett_batch_delete_range(b, B("k040"), 4, B("k060"), 4), SETT_OK);
    CHECK_RC(sett_batch_put(b, B("k055"), 4, B("late"), 4), SETT_OK);
    CHECK_RC(sett_batch_delete_range(NULL, B("a"), 1, B("b"), 1), SETT_INVALID_ARGUMENT);
    CHECK(sett_batch_count(b) == 2);
    CHECK_RC(sett_write(db, b, NULL), SETT_OK);
    sett_batch_free(b);
    CHECK_RC(sett_get(db, B("k050"), 4, &v, NULL), SETT_NOT_FOUND);
    CHECK_RC(sett_get(db, B("k045"), 4, &v, NULL), SETT_NOT_FOUND);
    CHECK_RC(sett_get(db, B("k055"), 4, &v, NULL), SETT_OK);
    CHECK(v.len == 4 && memcmp(v.data, "late", 4) == 0);
    sett_buf_free(&v);
    CHECK(count_keys(db) == 71);

    /* In a transaction: its reads stop seeing the range; the commit applies it. */
    sett_txn_t *t = NULL;
    CHECK_RC(sett_txn_begin(db, 1, &t, NULL), SETT_OK);
    CHECK_RC(sett_txn_delete_range(t, B("k060"), 4, B("k065"), 4, NULL), SETT_OK);
    CHECK_RC(sett_txn_get(t, B("k061"), 4, &v, NULL), SETT_NOT_FOUND);
    CHECK_RC(sett_get(db, B("k061"), 4, &v, NULL), SETT_OK);
    sett_buf_free(&v);
    CHECK_RC(sett_txn_delete_range(t, B("k9"), 2, B("k1"), 2, NULL), SETT_INVALID_ARGUMENT);
    CHECK_RC(sett_txn_commit(t, NULL), SETT_OK);
    sett_txn_free(t);
    CHECK_RC(sett_get(db, B("k061"), 4, &v, NULL), SETT_NOT_FOUND);
    CHECK(count_keys(db) == 66);
    CHECK_RC(sett_txn_delete_range(NULL, B("a"), 1, B("b"), 1, NULL), SETT_INVALID_ARGUMENT);

    /* An empty end reaches past the last key; flatten keeps it all. */
    CHECK_RC(sett_delete_range(db, B("k090"), 4, NULL, 0, NULL), SETT_OK);
    CHECK_RC(sett_flatten(db, NULL), SETT_OK);
    CHECK(count_keys(db) == 56);
    sett_stats_t st;
    CHECK_RC(sett_stats(db, &st, NULL), SETT_OK);
    CHECK(st.table_entries == 56);
    CHECK_RC(sett_close(db, NULL), SETT_OK);
    sett_db_free(db);
    db = open_db("range", NULL);
    CHECK(count_keys(db) == 56);
    CHECK_RC(sett_get(db, B("k095"), 4, &v, NULL), SETT_NOT_FOUND);
    CHECK_RC(sett_close(db, NULL), SETT_OK);
    sett_db_free(db);
}

int main(void) {
    if (mkdtemp(dir_template) == NULL) {
        perror("mkdtemp");
        return 2;
    }
    test_version_and_status();
    test_options_and_open_errors();
    test_bulk_load();
    test_value_log_gc();
    test_close_racing_calls();
    test_verify_counts_a_healthy_db_and_names_a_damaged_table();
    test_streams();
    test_bulk_loader_add_with_keeps_meta_and_ttl();
    test_stats_ex_reports_gc_and_checks_its_size();
    test_vlog_gc_ratio_out_of_range_is_refused_by_name();
    test_checkpoint_opens_as_its_own_db();
    test_compression_per_level_reads_back_and_shrinks_tables();
    test_null_handles_are_errors_naming_the_handle();
    test_range_deletes_hide_their_range_in_reads_batches_and_after_flatten();
    sett_options_t *o = sett_options_new();
    sett_options_set_memtable_size(o, 64 << 10);
    sett_options_set_value_threshold(o, 64);
    sett_db_t *db = open_db("main", o);
    sett_options_free(o);
    test_point_operations(db);
    test_batch_and_multi_get(db);
    test_transactions(db);
    test_txn_get_entry_reads_meta_and_expiry(db);
    test_iterators(db);
    test_threads_share_one_db(db);
    test_maintenance(db);
    test_closed_db(db);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir_template);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir_template);
    printf("%d passed, %d failed\n", checks - failures, failures);
    return failures == 0 ? 0 : 1;
}
