/* Tests of the merge operators' C ABI: sett_options_set_merge_operator(),
 * sett_merge(), sett_keyspace_merge(), sett_batch_merge(_in)(),
 * sett_txn_merge(_in)(), SETT_CHANGE_MERGE, and the refusals: NULL handles
 * and keys, an unknown operator name, a merge without an operator, a reopen
 * with another operator, an oversized transaction. Built with -Wall -Wextra
 * -Werror -std=c11 and run under valgrind. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "sett.h"

static char dir_template[] = "/tmp/sett-mergetest-XXXXXX";

/* Opens `name` with the built-in operator `op` (NULL: none); *rc gets the status. */
static sett_db_t *open_with(const char *name, const char *op, int *rc, sett_error_t **err) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir_template, name);
    sett_options_t *o = sett_options_new();
    CHECK_RC(sett_options_set_merge_operator(o, op), SETT_OK);
    sett_db_t *db = NULL;
    *rc = sett_open(path, o, &db, err);
    sett_options_free(o);
    return db;
}

static sett_db_t *open_ok(const char *name, const char *op) {
    int rc;
    sett_error_t *err = NULL;
    sett_db_t *db = open_with(name, op, &rc, &err);
    if (rc != SETT_OK) fprintf(stderr, "open %s: %s\n", name, sett_error_message(err));
    CHECK(rc == SETT_OK && db != NULL);
    sett_error_free(err);
    return db;
}

static void close_db(sett_db_t *db) {
    CHECK_RC(sett_close(db, NULL), SETT_OK);
    sett_db_free(db);
}

static void le64(uint8_t out[8], uint64_t v) {
    for (int i = 0; i < 8; i++) out[i] = (uint8_t)(v >> (8 * i));
}

/* The counter at `key`, or UINT64_MAX when it is absent or not 8 bytes. */
static uint64_t counter(sett_db_t *db, const char *key) {
    sett_buf_t v = {0};
    uint64_t n = UINT64_MAX;
    if (sett_get(db, B(key), strlen(key), &v, NULL) == SETT_OK && v.len == 8) {
        n = 0;
        for (int i = 7; i >= 0; i--) n = (n << 8) | v.data[i];
    }
    sett_buf_free(&v);
    return n;
}

/* 1 when get(key) on db is exactly `want`. */
static int holds(sett_db_t *db, const char *key, const char *want) {
    sett_buf_t v = {0};
    int rc = sett_get(db, B(key), strlen(key), &v, NULL);
    int ok = rc == SETT_OK && v.len == strlen(want) && memcmp(v.data, want, v.len) == 0;
    sett_buf_free(&v);
    return ok;
}

static void test_a_u64_counter_adds_up_across_a_reopen(void) {
    uint8_t one[8], ten[8];
    le64(one, 1);
    le64(ten, 10);
    sett_db_t *db = open_ok("counter", "sett.u64_add");
    for (int i = 0; i < 5; i++) CHECK_RC(sett_merge(db, B("hits"), 4, one, 8, NULL), SETT_OK);
    CHECK(counter(db, "hits") == 5);
    CHECK_RC(sett_flush(db, NULL), SETT_OK);
    CHECK_RC(sett_merge(db, B("hits"), 4, ten, 8, NULL), SETT_OK);
    close_db(db);
    db = open_ok("counter", "sett.u64_add");
    CHECK(counter(db, "hits") == 15);
    CHECK_RC(sett_merge(db, B("hits"), 4, one, 8, NULL), SETT_OK);
    CHECK(counter(db, "hits") == 16);
    close_db(db);
}

static void test_append_and_max_fold_in_write_order(void) {
    sett_db_t *db = open_ok("append", "sett.append");
    CHECK_RC(sett_put(db, B("log"), 3, B("a"), 1, NULL), SETT_OK);
    CHECK_RC(sett_merge(db, B("log"), 3, B("bc"), 2, NULL), SETT_OK);
    CHECK_RC(sett_merge(db, B("log"), 3, B("d"), 1, NULL), SETT_OK);
    CHECK(holds(db, "log", "abcd"));
    close_db(db);
    db = open_ok("max", "sett.max");
    CHECK_RC(sett_merge(db, B("m"), 1, B("b"), 1, NULL), SETT_OK);
    CHECK_RC(sett_merge(db, B("m"), 1, B("z"), 1, NULL), SETT_OK);
    CHECK_RC(sett_merge(db, B("m"), 1, B("q"), 1, NULL), SETT_OK);
    CHECK(holds(db, "m", "z"));
    close_db(db);
}

static void test_batch_and_txn_merges_combine_with_other_writes(void) {
    sett_db_t *db = open_ok("batchtxn", "sett.append");
    sett_batch_t *b = sett_batch_new();
    CHECK_RC(sett_batch_put(b, B("k"), 1, B("x"), 1), SETT_OK);
    CHECK_RC(sett_batch_merge(b, B("k"), 1, B("y"), 1), SETT_OK);
    CHECK_RC(sett_batch_merge(b, B("k"), 1, B("z"), 1), SETT_OK);
    CHECK(sett_batch_count(b) == 3);
    CHECK_RC(sett_write(db, b, NULL), SETT_OK);
    sett_batch_free(b);
    CHECK(holds(db, "k", "xyz"));

    sett_txn_t *t = NULL;
    CHECK_RC(sett_txn_begin(db, 1, &t, NULL), SETT_OK);
    CHECK_RC(sett_txn_merge(t, B("k"), 1, B("1"), 1, NULL), SETT_OK);
    sett_buf_t v = {0};
    CHECK_RC(sett_txn_get(t, B("k"), 1, &v, NULL), SETT_OK);
    CHECK(v.len == 4 && memcmp(v.data, "xyz1", 4) == 0); /* the txn sees its own merge */
    sett_buf_free(&v);
    CHECK(holds(db, "k", "xyz")); /* others do not, before the commit */
    CHECK_RC(sett_txn_commit(t, NULL), SETT_OK);
    sett_txn_free(t);
    CHECK(holds(db, "k", "xyz1"));
    close_db(db);
}

static void test_keyspace_merges_stay_in_their_keyspace(void) {
    sett_db_t *db = open_ok("keyspace", "sett.append");
    sett_keyspace_t *ks = NULL;
    CHECK_RC(sett_keyspace_open(db, "logs", NULL, &ks, NULL), SETT_OK);
    CHECK_RC(sett_keyspace_merge(ks, B("k"), 1, B("a"), 1, NULL), SETT_OK);
    sett_batch_t *b = sett_batch_new();
    CHECK_RC(sett_batch_merge_in(b, ks, B("k"), 1, B("b"), 1), SETT_OK);
    CHECK_RC(sett_batch_merge(b, B("k"), 1, B("default"), 7), SETT_OK);
    CHECK_RC(sett_write(db, b, NULL), SETT_OK);
    sett_batch_free(b);
    sett_txn_t *t = NULL;
    CHECK_RC(sett_txn_begin(db, 1, &t, NULL), SETT_OK);
    CHECK_RC(sett_txn_merge_in(t, ks, B("k"), 1, B("c"), 1, NULL), SETT_OK);
    CHECK_RC(sett_txn_commit(t, NULL), SETT_OK);
    sett_txn_free(t);
    sett_buf_t v = {0};
    CHECK_RC(sett_keyspace_get(ks, B("k"), 1, &v, NULL), SETT_OK);
    CHECK(v.len == 3 && memcmp(v.data, "abc", 3) == 0);
    sett_buf_free(&v);
    CHECK(holds(db, "k", "default"));
    sett_keyspace_close(ks);
    close_db(db);
}

static void test_the_feed_delivers_a_merge_as_its_operand(void) {
    sett_db_t *db = open_ok("feed", "sett.append");
    sett_subscription_t *sub = NULL;
    CHECK_RC(sett_subscribe(db, NULL, 0, 0, 0, 0, &sub, NULL), SETT_OK);
    CHECK_RC(sett_put(db, B("k"), 1, B("a"), 1, NULL), SETT_OK);
    CHECK_RC(sett_merge(db, B("k"), 1, B("b"), 1, NULL), SETT_OK);
    uint32_t kinds[2] = {99, 99};
    char last[8] = {0};
    size_t seen = 0;
    for (int tries = 0; tries < 50 && seen < 2; tries++) {
        sett_changes_t c = {0};
        CHECK_RC(sett_subscription_next(sub, 100, &c, NULL), SETT_OK);
        for (size_t i = 0; i < c.len && seen < 2; i++, seen++) {
            kinds[seen] = c.items[i].kind;
            if (c.items[i].value_len < sizeof last) memcpy(last, c.items[i].value, c.items[i].value_len);
        }
        sett_changes_free(&c);
    }
    CHECK(seen == 2 && kinds[0] == SETT_CHANGE_PUT && kinds[1] == SETT_CHANGE_MERGE);
    CHECK(strcmp(last, "b") == 0);
    sett_subscription_close(sub);
    close_db(db);
}

static void test_bad_input_is_refused_and_loses_nothing(void) {
    uint8_t one[8];
    le64(one, 1);
    sett_db_t *db = open_ok("bad", "sett.u64_add");
    CHECK_RC(sett_merge(db, B("n"), 1, one, 8, NULL), SETT_OK);

    /* NULL handles and keys, an empty key. */
    sett_error_t *err = NULL;
    CHECK_RC(sett_merge(NULL, B("n"), 1, one, 8, &err), SETT_INVALID_ARGUMENT);
    CHECK(strstr(sett_error_message(err), "db is NULL") != NULL);
    CHECK_RC(sett_merge(db, NULL, 1, one, 8, &err), SETT_INVALID_ARGUMENT);
    CHECK(strstr(sett_error_message(err), "key") != NULL);
    CHECK_RC(sett_merge(db, B("n"), 1, NULL, 8, &err), SETT_INVALID_ARGUMENT);
    CHECK(strstr(sett_error_message(err), "operand") != NULL);
    CHECK_RC(sett_merge(db, B(""), 0, one, 8, &err), SETT_INVALID_ARGUMENT);
    CHECK_RC(sett_keyspace_merge(NULL, B("n"), 1, one, 8, &err), SETT_INVALID_ARGUMENT);
    CHECK(strstr(sett_error_message(err), "keyspace is NULL") != NULL);
    CHECK_RC(sett_txn_merge(NULL, B("n"), 1, one, 8, &err), SETT_INVALID_ARGUMENT);
    CHECK(strstr(sett_error_message(err), "txn is NULL") != NULL);
    CHECK_RC(sett_batch_merge(NULL, B("n"), 1, one, 8), SETT_INVALID_ARGUMENT);
    sett_batch_t *b = sett_batch_new();
    CHECK_RC(sett_batch_merge(b, NULL, 1, one, 8), SETT_INVALID_ARGUMENT);
    CHECK_RC(sett_batch_merge_in(b, NULL, B("n"), 1, one, 8), SETT_INVALID_ARGUMENT);
    CHECK(sett_batch_count(b) == 0);
    sett_batch_free(b);

    /* An operand the operator refuses fails the read, names the key, and a put repairs it. */
    CHECK_RC(sett_merge(db, B("bad"), 3, B("abc"), 3, NULL), SETT_OK);
    sett_buf_t v = {0};
    CHECK_RC(sett_get(db, B("bad"), 3, &v, &err), SETT_MERGE_FAILED);
    CHECK(strstr(sett_error_message(err), "merging the operands") != NULL);
    CHECK(counter(db, "n") == 1);

    /* A transaction over its size limit refuses the merge and stays usable. */
    sett_txn_t *t = NULL;
    CHECK_RC(sett_txn_begin(db, 1, &t, NULL), SETT_OK);
    size_t big_len = 16u << 20;
    uint8_t *big = calloc(big_len, 1);
    CHECK(big != NULL);
    CHECK_RC(sett_txn_merge(t, B("n"), 1, big, big_len, &err), SETT_TOO_BIG);
    free(big);
    CHECK_RC(sett_txn_merge(t, B("n"), 1, one, 8, NULL), SETT_OK);
    CHECK_RC(sett_txn_commit(t, NULL), SETT_OK);
    sett_txn_free(t);
    CHECK(counter(db, "n") == 2);
    close_db(db);

    /* An unknown name is refused naming the built-ins; the options keep their operator. */
    sett_options_t *o = sett_options_new();
    CHECK_RC(sett_options_set_merge_operator(o, "sett.u64_add"), SETT_OK);
    CHECK_RC(sett_options_set_merge_operator(o, "sett.nope"), SETT_INVALID_ARGUMENT);
    CHECK_RC(sett_options_set_merge_operator(NULL, "sett.max"), SETT_INVALID_ARGUMENT);
    char path[512];
    snprintf(path, sizeof path, "%s/bad", dir_template);
    CHECK_RC(sett_open(path, o, &db, NULL), SETT_OK);
    sett_options_free(o);
    CHECK(counter(db, "n") == 2);
    close_db(db);

    /* Another operator at open is refused, and nothing changes. */
    int rc;
    db = open_with("bad", "sett.append", &rc, &err);
    CHECK(rc == SETT_MERGE_OPERATOR_MISMATCH && db == NULL);
    CHECK(strstr(sett_error_message(err), "sett.u64_add") != NULL);
    /* Without an operator: merged keys answer SETT_MERGE_OPERATOR_MISSING,
     * merges are refused, other keys read and write. */
    db = open_ok("bad", NULL);
    CHECK_RC(sett_get(db, B("n"), 1, &v, &err), SETT_MERGE_OPERATOR_MISSING);
    CHECK_RC(sett_merge(db, B("n"), 1, one, 8, &err), SETT_MERGE_OPERATOR_MISSING);
    b = sett_batch_new();
    CHECK_RC(sett_batch_merge(b, B("n"), 1, one, 8), SETT_OK);
    CHECK_RC(sett_write(db, b, &err), SETT_MERGE_OPERATOR_MISSING);
    sett_batch_free(b);
    CHECK_RC(sett_put(db, B("plain"), 5, B("p"), 1, NULL), SETT_OK);
    CHECK(holds(db, "plain", "p"));
    close_db(db);
    /* With the right one, every value is still there. */
    db = open_ok("bad", "sett.u64_add");
    CHECK(counter(db, "n") == 2);
    CHECK(holds(db, "plain", "p"));
    close_db(db);
    sett_error_free(err);
    CHECK(strcmp(sett_status_string(SETT_MERGE_FAILED), "unknown status code") != 0);
}

int main(void) {
    if (mkdtemp(dir_template) == NULL) {
        perror("mkdtemp");
        return 2;
    }
    test_a_u64_counter_adds_up_across_a_reopen();
    test_append_and_max_fold_in_write_order();
    test_batch_and_txn_merges_combine_with_other_writes();
    test_keyspace_merges_stay_in_their_keyspace();
    test_the_feed_delivers_a_merge_as_its_operand();
    test_bad_input_is_refused_and_loses_nothing();
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir_template);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir_template);
    printf("%d passed, %d failed\n", checks - failures, failures);
    return failures == 0 ? 0 : 1;
}
