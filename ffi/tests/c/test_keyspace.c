/* Tests of the keyspace C ABI: sett_keyspace_open(), the keyspace point
 * operations and iterators, sett_batch_*_in(), sett_txn_*_in(),
 * sett_keyspace_names(), sett_drop_keyspace(). Built with -Wall -Wextra
 * -Werror -std=c11 and run under valgrind. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <dirent.h>
#include <sys/stat.h>

#include "check.h"
#include "sett.h"

static char dir_template[] = "/tmp/sett-kstest-XXXXXX";

static sett_db_t *open_db(const char *name) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir_template, name);
    sett_db_t *db = NULL;
    CHECK_RC(sett_open(path, NULL, &db, NULL), SETT_OK);
    return db;
}

/* 1 when keyspace `ks` holds `key` -> `want` (want NULL: absent). */
static int holds(sett_keyspace_t *ks, const char *key, const char *want) {
    sett_buf_t v;
    int rc = sett_keyspace_get(ks, B(key), strlen(key), &v, NULL);
    int ok = want == NULL ? rc == SETT_NOT_FOUND
                          : rc == SETT_OK && v.len == strlen(want) && memcmp(v.data, want, v.len) == 0;
    sett_buf_free(&v);
    return ok;
}

/* The keys of an iterator, joined by ',' into out. */
static void keys_of(sett_iter_t *it, char *out, size_t cap) {
    out[0] = 0;
    size_t used = 0;
    while (sett_iter_valid(it)) {
        const uint8_t *k;
        size_t len;
        sett_iter_key(it, &k, &len);
        if (used + len + 2 < cap) {
            if (used) out[used++] = ',';
            memcpy(out + used, k, len);
            used += len;
            out[used] = 0;
        }
        sett_iter_next(it, NULL);
    }
}

static void test_two_keyspaces_with_the_same_keys_stay_independent(void) {
    sett_db_t *db = open_db("independent");
    sett_keyspace_t *a = NULL, *b = NULL;
    CHECK_RC(sett_keyspace_open(db, "a", NULL, &a, NULL), SETT_OK);
    CHECK_RC(sett_keyspace_open(db, "b", NULL, &b, NULL), SETT_OK);
    CHECK(sett_keyspace_id(a) != sett_keyspace_id(b));
    CHECK_RC(sett_keyspace_put(a, B("k1"), 2, B("a1"), 2, NULL), SETT_OK);
    CHECK_RC(sett_keyspace_put(a, B("k2"), 2, B("a2"), 2, NULL), SETT_OK);
    CHECK_RC(sett_keyspace_put(a, B("k3"), 2, B("a3"), 2, NULL), SETT_OK);
    CHECK_RC(sett_keyspace_put(b, B("k1"), 2, B("b1"), 2, NULL), SETT_OK);
    CHECK_RC(sett_put(db, B("k1"), 2, B("d1"), 2, NULL), SETT_OK);
    CHECK(holds(a, "k1", "a1") && holds(b, "k1", "b1") && holds(b, "k2", NULL));
    CHECK_RC(sett_keyspace_delete(a, B("k1"), 2, NULL), SETT_OK);
    CHECK(holds(a, "k1", NULL) && holds(b, "k1", "b1"));
    CHECK_RC(sett_keyspace_delete_range(a, B("k3"), 2, NULL, 0, NULL), SETT_OK);
    CHECK(holds(a, "k3", NULL) && holds(a, "k2", "a2"));

    char got[256];
    sett_iter_t *it = NULL;
    CHECK_RC(sett_keyspace_iter_new(b, NULL, &it, NULL), SETT_OK);
    keys_of(it, got, sizeof got);
    CHECK(strcmp(got, "k1") == 0);
    sett_iter_free(it);
    /* The default keyspace shows only its own key. */
    CHECK_RC(sett_iter_new(db, NULL, &it, NULL), SETT_OK);
    keys_of(it, got, sizeof got);
    CHECK(strcmp(got, "k1") == 0);
    sett_iter_free(it);
    /* Bounds are in the keyspace's keys. */
    CHECK_RC(sett_keyspace_put(b, B("k5"), 2, B("b5"), 2, NULL), SETT_OK);
    CHECK_RC(sett_keyspace_put(b, B("k7"), 2, B("b7"), 2, NULL), SETT_OK);
    sett_iter_options_t *o = sett_iter_options_new();
    CHECK_RC(sett_iter_options_set_bounds(o, B("k2"), 2, B("k7"), 2), SETT_OK);
    CHECK_RC(sett_keyspace_iter_new(b, o, &it, NULL), SETT_OK);
    keys_of(it, got, sizeof got);
    CHECK(strcmp(got, "k5") == 0);
    sett_iter_free(it);
    sett_iter_options_free(o);

    /* Marker keys are refused in the default keyspace. */
    sett_error_t *err = NULL;
    CHECK_RC(sett_put(db, B("\xff\xff\xff\xff" "x"), 5, B("v"), 1, &err), SETT_INVALID_ARGUMENT);
    CHECK(err != NULL && strstr(sett_error_message(err), "FF FF FF FF") != NULL);
    sett_error_free(err);
    sett_keyspace_close(a);
    sett_keyspace_close(b);
    CHECK_RC(sett_close(db, NULL), SETT_OK);
    sett_db_free(db);
}

static void test_batches_and_transactions_span_keyspaces(void) {
    sett_db_t *db = open_db("atomic");
    sett_keyspace_t *a = NULL, *b = NULL;
    CHECK_RC(sett_keyspace_open(db, "a", NULL, &a, NULL), SETT_OK);
    CHECK_RC(sett_keyspace_open(db, "b", NULL, &b, NULL), SETT_OK);
    sett_batch_t *batch = sett_batch_new();
    CHECK_RC(sett_batch_put_in(batch, a, B("x"), 1, B("1"), 1), SETT_OK);
    CHECK_RC(sett_batch_put_in(batch, b, B("x"), 1, B("2"), 1), SETT_OK);
    CHECK_RC(sett_batch_put(batch, B("x"), 1, B("3"), 1), SETT_OK);
    CHECK_RC(sett_batch_put_in(batch, b, B("gone"), 4, B("g"), 1), SETT_OK);
    CHECK_RC(sett_batch_delete_in(batch, b, B("gone"), 4), SETT_OK);
    CHECK_RC(sett_batch_put_in(batch, a, B("r1"), 2, B("r"), 1), SETT_OK);
    CHECK_RC(sett_batch_put_in(batch, a, B("r2"), 2, B("r"), 1), SETT_OK);
    CHECK_RC(sett_batch_delete_range_in(batch, a, B("r"), 1, B("s"), 1), SETT_OK);
    CHECK_RC(sett_write(db, batch, NULL), SETT_OK);
    sett_batch_free(batch);
    CHECK(holds(a, "x", "1") && holds(b, "x", "2") && holds(b, "gone", NULL) && holds(a, "r1", NULL));

    sett_txn_t *t = NULL;
    CHECK_RC(sett_txn_begin(db, 1, &t, NULL), SETT_OK);
    CHECK_RC(sett_txn_put_in(t, a, B("y"), 1, B("ay"), 2, NULL), SETT_OK);
    CHECK_RC(sett_txn_put_in(t, b, B("y"), 1, B("by"), 2, NULL), SETT_OK);
    CHECK_RC(sett_txn_delete_in(t, a, B("x"), 1, NULL), SETT_OK);
    sett_buf_t v;
    CHECK_RC(sett_txn_get_in(t, a, B("y"), 1, &v, NULL), SETT_OK);
    CHECK(v.len == 2 && memcmp(v.data, "ay", 2) == 0);
    sett_buf_free(&v);
    CHECK_RC(sett_txn_get_in(t, a, B("x"), 1, &v, NULL), SETT_NOT_FOUND);
    sett_iter_t *it = NULL;
    char got[256];
    CHECK_RC(sett_txn_iter_new_in(t, a, NULL, &it, NULL), SETT_OK);
    keys_of(it, got, sizeof got);
    CHECK(strcmp(got, "y") == 0);
    sett_iter_free(it);
    CHECK(holds(a, "y", NULL));
    CHECK_RC(sett_txn_commit(t, NULL), SETT_OK);
    sett_txn_free(t);
    CHECK(holds(a, "y", "ay") && holds(b, "y", "by") && holds(a, "x", NULL));

    /* A read in one transaction conflicts with a later write to that key. */
    CHECK_RC(sett_txn_begin(db, 1, &t, NULL), SETT_OK);
    CHECK_RC(sett_txn_get_in(t, b, B("y"), 1, &v, NULL), SETT_OK);
    sett_buf_free(&v);
    CHECK_RC(sett_txn_put_in(t, a, B("z"), 1, B("1"), 1, NULL), SETT_OK);
    CHECK_RC(sett_keyspace_put(b, B("y"), 1, B("new"), 3, NULL), SETT_OK);
    CHECK_RC(sett_txn_commit(t, NULL), SETT_CONFLICT);
    sett_txn_free(t);
    CHECK(holds(a, "z", NULL));
    sett_keyspace_close(a);
    sett_keyspace_close(b);
    CHECK_RC(sett_close(db, NULL), SETT_OK);
    sett_db_free(db);
}

static void test_names_options_drop_and_reopen(void) {
    sett_db_t *db = open_db("drop");
    sett_keyspace_options_t *o = sett_keyspace_options_new();
    CHECK_RC(sett_keyspace_options_set_value_threshold(o, 16), SETT_OK);
    CHECK_RC(sett_keyspace_options_set_default_ttl(o, 3600 * 1000), SETT_OK);
    sett_keyspace_t *keep = NULL, *gone = NULL;
    CHECK_RC(sett_keyspace_open(db, "keep", o, &keep, NULL), SETT_OK);
    CHECK_RC(sett_keyspace_open(db, "gone", NULL, &gone, NULL), SETT_OK);
    sett_keyspace_options_free(o);
    CHECK_RC(sett_keyspace_put(keep, B("k"), 1, B("v"), 1, NULL), SETT_OK);
    CHECK_RC(sett_keyspace_put(gone, B("k"), 1, B("v"), 1, NULL), SETT_OK);
    sett_buf_t names;
    size_t count = 0;
    CHECK_RC(sett_keyspace_names(db, &names, &count, NULL), SETT_OK);
    CHECK(count == 2 && names.len == 10 && memcmp(names.data, "gone\0keep\0", 10) == 0);
    sett_buf_free(&names);

    CHECK_RC(sett_drop_keyspace(db, "gone", NULL), SETT_OK);
    sett_error_t *err = NULL;
    CHECK_RC(sett_keyspace_put(gone, B("k"), 1, B("v"), 1, &err), SETT_INVALID_ARGUMENT);
    CHECK(err != NULL && strstr(sett_error_message(err), "dropped") != NULL);
    CHECK_RC(sett_drop_keyspace(db, "gone", &err), SETT_NOT_FOUND);
    CHECK(err != NULL);
    sett_error_free(err);
    sett_keyspace_close(gone);
    sett_keyspace_close(keep);
    CHECK_RC(sett_close(db, NULL), SETT_OK);
    sett_db_free(db);

    db = open_db("drop");
    CHECK_RC(sett_keyspace_names(db, &names, &count, NULL), SETT_OK);
    CHECK(count == 1 && names.len == 5 && memcmp(names.data, "keep\0", 5) == 0);
    sett_buf_free(&names);
    CHECK_RC(sett_keyspace_open(db, "keep", NULL, &keep, NULL), SETT_OK);
    CHECK(holds(keep, "k", "v"));
    sett_keyspace_close(keep);
    CHECK_RC(sett_close(db, NULL), SETT_OK);
    sett_db_free(db);
}

static void test_a_keyspace_subscription_sees_its_keys_and_the_db_s_does_not(void) {
    sett_db_t *db = open_db("feed");
    sett_keyspace_t *ks = NULL;
    CHECK_RC(sett_keyspace_open(db, "ks", NULL, &ks, NULL), SETT_OK);
    sett_subscription_t *all = NULL, *own = NULL;
    CHECK_RC(sett_subscribe(db, NULL, 0, 0, 0, 0, &all, NULL), SETT_OK);
    CHECK_RC(sett_keyspace_subscribe(ks, NULL, 0, 0, 0, 0, &own, NULL), SETT_OK);
    CHECK_RC(sett_keyspace_subscribe(NULL, NULL, 0, 0, 0, 0, &own, NULL), SETT_INVALID_ARGUMENT);
    CHECK_RC(sett_keyspace_put(ks, B("k"), 1, B("v"), 1, NULL), SETT_OK);
    CHECK_RC(sett_put(db, B("d"), 1, B("w"), 1, NULL), SETT_OK);
    sett_changes_t c;
    CHECK_RC(sett_subscription_next(own, 1000, &c, NULL), SETT_OK);
    CHECK(c.len == 1 && c.items[0].key_len == 1 && c.items[0].key[0] == 'k');
    sett_changes_free(&c);
    CHECK_RC(sett_subscription_next(all, 1000, &c, NULL), SETT_OK);
    CHECK(c.len == 1 && c.items[0].key_len == 1 && c.items[0].key[0] == 'd');
    sett_changes_free(&c);
    sett_subscription_close(all);
    sett_subscription_close(own);
    sett_keyspace_close(ks);
    CHECK_RC(sett_close(db, NULL), SETT_OK);
    sett_db_free(db);
}

/* Bytes of the tables (*.sst) in database directory `name`. */
static long long table_bytes(const char *name) {
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir_template, name);
    DIR *d = opendir(path);
    long long total = 0;
    if (d == NULL) return -1;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        if (n < 4 || strcmp(e->d_name + n - 4, ".sst") != 0) continue;
        char file[1200];
        struct stat st;
        snprintf(file, sizeof file, "%s/%s", path, e->d_name);
        if (stat(file, &st) == 0) total += st.st_size;
    }
    closedir(d);
    return total;
}

/* Writes compressible records to keyspace "ks" of database `name`, opened
 * with codec `codec` (SETT_COMPRESSION_INHERIT: the database's, none),
 * flattens and closes; returns the tables' bytes. */
static long long fill(const char *name, int codec) {
    sett_db_t *db = open_db(name);
    sett_keyspace_options_t *o = sett_keyspace_options_new();
    CHECK_RC(sett_keyspace_options_set_compression(o, codec), SETT_OK);
    sett_keyspace_t *ks = NULL;
    CHECK_RC(sett_keyspace_open(db, "ks", o, &ks, NULL), SETT_OK);
    sett_keyspace_options_free(o);
    CHECK(sett_keyspace_compression(ks) == codec);
    for (int i = 0; i < 2000; i++) {
        char k[32], v[300];
        int kl = snprintf(k, sizeof k, "key%05d", i);
        int vl = snprintf(v, sizeof v,
                          "{\"id\":%d,\"name\":\"user-%d\",\"city\":\"Lyon\","
                          "\"bio\":\"alpha bravo charlie delta echo foxtrot golf hotel\"}",
                          i, i);
        CHECK_RC(sett_keyspace_put(ks, B(k), (size_t)kl, B(v), (size_t)vl, NULL), SETT_OK);
    }
    CHECK_RC(sett_flatten(db, NULL), SETT_OK);
    sett_keyspace_close(ks);
    CHECK_RC(sett_close(db, NULL), SETT_OK);
    sett_db_free(db);
    return table_bytes(name);
}

static void test_a_zstd_keyspace_s_tables_shrink_and_keep_the_codec_after_reopen(void) {
    long long plain = fill("codec-plain", SETT_COMPRESSION_INHERIT);
    long long zstd = fill("codec-zstd", SETT_COMPRESSION_ZSTD);
    CHECK(plain > 0 && zstd > 0 && zstd * 2 < plain);
    if (!(zstd * 2 < plain)) fprintf(stderr, "tables: zstd %lld, plain %lld\n", zstd, plain);

    sett_db_t *db = open_db("codec-zstd");
    sett_keyspace_t *ks = NULL;
    CHECK_RC(sett_keyspace_open(db, "ks", NULL, &ks, NULL), SETT_OK);
    CHECK(sett_keyspace_compression(ks) == SETT_COMPRESSION_ZSTD);
    sett_buf_t v;
    CHECK_RC(sett_keyspace_get(ks, B("key01999"), 8, &v, NULL), SETT_OK);
    CHECK(v.len > 10 && memcmp(v.data, "{\"id\":1999,", 11) == 0);
    sett_buf_free(&v);
    sett_keyspace_close(ks);
    sett_keyspace_options_t *o = sett_keyspace_options_new();
    CHECK_RC(sett_keyspace_options_set_compression(o, 7), SETT_INVALID_ARGUMENT);
    CHECK_RC(sett_keyspace_options_set_compression(NULL, SETT_COMPRESSION_LZ4),
             SETT_INVALID_ARGUMENT);
    sett_keyspace_options_free(o);
    CHECK(sett_keyspace_compression(NULL) == SETT_COMPRESSION_INHERIT);
    CHECK_RC(sett_close(db, NULL), SETT_OK);
    sett_db_free(db);
}

static void test_a_keyspace_multi_get_reads_only_its_own_keys(void) {
    sett_db_t *db = open_db("multiget");
    sett_keyspace_t *a = NULL;
    CHECK_RC(sett_keyspace_open(db, "a", NULL, &a, NULL), SETT_OK);
    CHECK_RC(sett_keyspace_put(a, B("k1"), 2, B("a1"), 2, NULL), SETT_OK);
    CHECK_RC(sett_keyspace_put(a, B("k3"), 2, B("a3"), 2, NULL), SETT_OK);
    CHECK_RC(sett_put(db, B("k2"), 2, B("d2"), 2, NULL), SETT_OK);
    const uint8_t *keys[3] = {B("k3"), B("k2"), B("k1")};
    size_t lens[3] = {2, 2, 2};
    sett_buf_t vals[3];
    int st[3];
    CHECK_RC(sett_keyspace_multi_get(a, keys, lens, 3, vals, st, NULL), SETT_OK);
    CHECK(st[0] == SETT_OK && st[1] == SETT_NOT_FOUND && st[2] == SETT_OK);
    CHECK(vals[0].len == 2 && memcmp(vals[0].data, "a3", 2) == 0);
    CHECK(vals[2].len == 2 && memcmp(vals[2].data, "a1", 2) == 0);
    for (int i = 0; i < 3; i++) sett_buf_free(&vals[i]);
    /* Bad input: NULL arrays, an empty key, a NULL handle; nothing written. */
    sett_error_t *err = NULL;
    CHECK_RC(sett_keyspace_multi_get(a, NULL, lens, 3, vals, st, &err), SETT_INVALID_ARGUMENT);
    CHECK(strstr(sett_error_message(err), "NULL") != NULL);
    sett_error_free(err);
    lens[1] = 0;
    CHECK_RC(sett_keyspace_multi_get(a, keys, lens, 3, vals, st, NULL), SETT_INVALID_ARGUMENT);
    CHECK_RC(sett_keyspace_multi_get(NULL, keys, lens, 3, vals, st, NULL), SETT_INVALID_ARGUMENT);
    CHECK(holds(a, "k1", "a1") && holds(a, "k3", "a3"));
    /* Into the caller's buffer: the keyspace's values only, in the order asked. */
    lens[1] = 2;
    uint8_t dst[8];
    size_t vlens[3], needed = 0;
    CHECK_RC(sett_keyspace_multi_get_into(a, keys, lens, 3, dst, sizeof dst, vlens, st, &needed, NULL), SETT_OK);
    CHECK(needed == 4 && vlens[0] == 2 && vlens[1] == 0 && vlens[2] == 2);
    CHECK(st[0] == SETT_OK && st[1] == SETT_NOT_FOUND && st[2] == SETT_OK);
    CHECK(memcmp(dst, "a3a1", 4) == 0);
    CHECK_RC(sett_keyspace_multi_get_into(a, keys, lens, 3, dst, 3, vlens, st, &needed, NULL), SETT_BUFFER_TOO_SMALL);
    CHECK(needed == 4);
    CHECK_RC(sett_keyspace_multi_get_into(NULL, keys, lens, 3, dst, sizeof dst, vlens, st, &needed, NULL), SETT_INVALID_ARGUMENT);
    CHECK_RC(sett_keyspace_multi_get_into(a, NULL, lens, 3, dst, sizeof dst, vlens, st, &needed, NULL), SETT_INVALID_ARGUMENT);
    CHECK(holds(a, "k1", "a1") && holds(a, "k3", "a3"));
    sett_keyspace_close(a);
    CHECK_RC(sett_close(db, NULL), SETT_OK);
    sett_db_free(db);
}

static void test_null_pointers_are_invalid_arguments(void) {
    sett_db_t *db = open_db("null");
    sett_keyspace_t *ks = NULL;
    sett_buf_t v;
    size_t n;
    CHECK_RC(sett_keyspace_open(NULL, "a", NULL, &ks, NULL), SETT_INVALID_ARGUMENT);
    CHECK(ks == NULL);
    CHECK_RC(sett_keyspace_open(db, NULL, NULL, &ks, NULL), SETT_INVALID_ARGUMENT);
    CHECK_RC(sett_keyspace_open(db, "a", NULL, NULL, NULL), SETT_INVALID_ARGUMENT);
    CHECK_RC(sett_keyspace_open(db, "", NULL, &ks, NULL), SETT_INVALID_ARGUMENT);
    CHECK_RC(sett_keyspace_put(NULL, B("k"), 1, B("v"), 1, NULL), SETT_INVALID_ARGUMENT);
    CHECK_RC(sett_keyspace_get(NULL, B("k"), 1, &v, NULL), SETT_INVALID_ARGUMENT);
    CHECK_RC(sett_keyspace_delete(NULL, B("k"), 1, NULL), SETT_INVALID_ARGUMENT);
    CHECK_RC(sett_keyspace_delete_range(NULL, B("a"), 1, NULL, 0, NULL), SETT_INVALID_ARGUMENT);
    CHECK_RC(sett_drop_keyspace(NULL, "a", NULL), SETT_INVALID_ARGUMENT);
    CHECK_RC(sett_drop_keyspace(db, NULL, NULL), SETT_INVALID_ARGUMENT);
    CHECK_RC(sett_keyspace_names(NULL, &v, &n, NULL), SETT_INVALID_ARGUMENT);
    CHECK_RC(sett_keyspace_names(db, NULL, &n, NULL), SETT_INVALID_ARGUMENT);
    CHECK_RC(sett_keyspace_options_set_value_threshold(NULL, 1), SETT_INVALID_ARGUMENT);
    sett_batch_t *batch = sett_batch_new();
    CHECK_RC(sett_batch_put_in(batch, NULL, B("k"), 1, B("v"), 1), SETT_INVALID_ARGUMENT);
    CHECK_RC(sett_batch_put_in(NULL, NULL, B("k"), 1, B("v"), 1), SETT_INVALID_ARGUMENT);
    CHECK(sett_batch_count(batch) == 0);
    sett_batch_free(batch);
    sett_txn_t *t = NULL;
    CHECK_RC(sett_txn_begin(db, 1, &t, NULL), SETT_OK);
    CHECK_RC(sett_txn_put_in(t, NULL, B("k"), 1, B("v"), 1, NULL), SETT_INVALID_ARGUMENT);
    CHECK_RC(sett_txn_get_in(t, NULL, B("k"), 1, &v, NULL), SETT_INVALID_ARGUMENT);
    sett_txn_free(t);
    sett_iter_t *it = NULL;
    CHECK_RC(sett_keyspace_iter_new(NULL, NULL, &it, NULL), SETT_INVALID_ARGUMENT);
    CHECK(sett_keyspace_id(NULL) == 0);
    sett_keyspace_close(NULL);
    sett_keyspace_options_free(NULL);
    CHECK_RC(sett_close(db, NULL), SETT_OK);
    sett_db_free(db);
}

int main(void) {
    if (mkdtemp(dir_template) == NULL) {
        perror("mkdtemp");
        return 2;
    }
    test_two_keyspaces_with_the_same_keys_stay_independent();
    test_batches_and_transactions_span_keyspaces();
    test_names_options_drop_and_reopen();
    test_a_keyspace_subscription_sees_its_keys_and_the_db_s_does_not();
    test_null_pointers_are_invalid_arguments();
    test_a_keyspace_multi_get_reads_only_its_own_keys();
    test_a_zstd_keyspace_s_tables_shrink_and_keep_the_codec_after_reopen();
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir_template);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir_template);
    printf("%d passed, %d failed\n", checks - failures, failures);
    return failures == 0 ? 0 : 1;
}
