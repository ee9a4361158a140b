/* Tests of the change feed's C ABI: sett_subscribe(), sett_subscription_next(),
 * sett_changes_free(), sett_subscription_close(), sett_last_version(),
 * sett_error_version(). Built with -Wall -Wextra -Werror -std=c11 and run
 * under valgrind. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "sett.h"

static char dir_template[] = "/tmp/sett-feedtest-XXXXXX";

static sett_db_t *open_db(const char *name, size_t history) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir_template, name);
    sett_options_t *o = sett_options_new();
    CHECK_RC(sett_options_set_change_feed_history_bytes(o, history), SETT_OK);
    sett_db_t *db = NULL;
    CHECK_RC(sett_open(path, o, &db, NULL), SETT_OK);
    sett_options_free(o);
    return db;
}

static int same(const uint8_t *p, size_t len, const char *s) {
    return len == strlen(s) && (len == 0 || memcmp(p, s, len) == 0);
}

/* Takes changes until `want` arrived (or 50 empty waits passed) into *all;
 * returns how many arrived. */
static size_t take(sett_subscription_t *sub, sett_changes_t *all, size_t cap, size_t want) {
    size_t got = 0;
    for (int tries = 0; got < want && tries < 50; tries++) {
        sett_changes_t c;
        sett_error_t *err = NULL;
        int rc = sett_subscription_next(sub, 100, &c, &err);
        if (rc != SETT_OK) {
            fprintf(stderr, "next: %s\n", sett_error_message(err));
            sett_error_free(err);
            break;
        }
        if (c.len == 0) continue;
        if (got < cap) all[got++] = c;
        else sett_changes_free(&c);
    }
    return got;
}

static size_t count(sett_changes_t *sets, size_t n) {
    size_t total = 0;
    for (size_t i = 0; i < n; i++) total += sets[i].len;
    return total;
}

static void test_changes_under_prefixes_in_version_order(void) {
    sett_db_t *db = open_db("order", 4 << 20);
    sett_bytes_t prefixes[2] = {{B("a"), 1}, {B("c"), 1}};
    sett_subscription_t *sub = NULL;
    sett_error_t *err = NULL;
    CHECK_RC(sett_subscribe(db, prefixes, 2, 0, 0, 0, &sub, &err), SETT_OK);
    CHECK(sub != NULL && err == NULL);
    uint64_t start = sett_last_version(db);

    CHECK_RC(sett_put(db, B("a1"), 2, B("v1"), 2, NULL), SETT_OK);
    CHECK_RC(sett_put(db, B("b1"), 2, B("no"), 2, NULL), SETT_OK);
    CHECK_RC(sett_put_with(db, B("c1"), 2, B("v2"), 2, 9, 0, NULL), SETT_OK);
    CHECK_RC(sett_delete(db, B("a1"), 2, NULL), SETT_OK);
    sett_batch_t *b = sett_batch_new();
    CHECK_RC(sett_batch_put(b, B("a2"), 2, B("v3"), 2), SETT_OK);
    CHECK_RC(sett_batch_delete(b, B("a3"), 2), SETT_OK);
    CHECK_RC(sett_write(db, b, NULL), SETT_OK);
    sett_batch_free(b);

    sett_changes_t sets[8];
    size_t n = take(sub, sets, 8, 5);
    CHECK(count(sets, n) == 5);
    /* Flatten. */
    sett_change_t all[5];
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < sets[i].len && k < 5; j++) all[k++] = sets[i].items[j];
    if (k == 5) {
        CHECK(all[0].kind == SETT_CHANGE_PUT && same(all[0].key, all[0].key_len, "a1") &&
              same(all[0].value, all[0].value_len, "v1"));
        CHECK(all[1].kind == SETT_CHANGE_PUT && same(all[1].key, all[1].key_len, "c1") &&
              all[1].user_meta == 9);
        CHECK(all[2].kind == SETT_CHANGE_DELETE && same(all[2].key, all[2].key_len, "a1") &&
              all[2].value_len == 0 && all[2].value == NULL);
        CHECK(same(all[3].key, all[3].key_len, "a2") && same(all[4].key, all[4].key_len, "a3"));
        CHECK(all[0].version > start && all[0].version < all[1].version &&
              all[1].version < all[2].version && all[2].version < all[3].version);
        /* One batch, one version. */
        CHECK(all[3].version == all[4].version);
        CHECK(all[4].version == sett_last_version(db));
    }
    for (size_t i = 0; i < n; i++) {
        sett_changes_free(&sets[i]);
        CHECK(sets[i].items == NULL && sets[i].len == 0);
        sett_changes_free(&sets[i]); /* freeing an emptied set is a no-op */
    }
    sett_changes_free(NULL);

    /* A snapshot's version, for the rescan recipe. */
    sett_txn_t *txn = NULL;
    CHECK_RC(sett_txn_begin(db, 0, &txn, NULL), SETT_OK);
    CHECK(sett_txn_read_ts(txn) == sett_last_version(db));
    sett_txn_discard(txn);
    CHECK(sett_txn_read_ts(txn) == 0);
    sett_txn_free(txn);
    CHECK(sett_txn_read_ts(NULL) == 0);

    /* Nothing more: a timeout is SETT_OK with no changes. */
    sett_changes_t none;
    CHECK_RC(sett_subscription_next(sub, 20, &none, NULL), SETT_OK);
    CHECK(none.len == 0 && none.items == NULL);
    sett_subscription_close(sub);
    sett_subscription_close(NULL);
    CHECK_RC(sett_close(db, NULL), SETT_OK);
    sett_db_free(db);
}

static void test_a_slow_subscriber_falls_behind_and_resumes_from_the_history(void) {
    sett_db_t *db = open_db("behind", 4 << 20);
    /* Written before the first subscription: not in the history. */
    CHECK_RC(sett_put(db, B("early"), 5, B("v"), 1, NULL), SETT_OK);
    sett_subscription_t *sub = NULL;
    CHECK_RC(sett_subscribe(db, NULL, 0, 0, 0, 1024, &sub, NULL), SETT_OK);
    uint64_t start = sett_last_version(db);
    uint8_t val[100];
    memset(val, 'x', sizeof val);
    for (int i = 0; i < 100; i++) {
        char key[16];
        snprintf(key, sizeof key, "k%03d", i);
        CHECK_RC(sett_put(db, B(key), strlen(key), val, sizeof val, NULL), SETT_OK);
    }
    sett_changes_t c;
    sett_error_t *err = NULL;
    CHECK_RC(sett_subscription_next(sub, 1000, &c, &err), SETT_FELL_BEHIND);
    CHECK(c.len == 0);
    CHECK(sett_error_code(err) == SETT_FELL_BEHIND);
    uint64_t resume = sett_error_version(err);
    CHECK(resume == start);
    CHECK(strstr(sett_error_message(err), "fell behind") != NULL);
    sett_error_free(err);
    err = NULL;
    sett_subscription_close(sub);

    sub = NULL;
    CHECK_RC(sett_subscribe(db, NULL, 0, resume, 1, 0, &sub, NULL), SETT_OK);
    sett_changes_t sets[8];
    size_t n = take(sub, sets, 8, 100);
    CHECK(count(sets, n) == 100);
    if (n > 0 && sets[0].len > 0) {
        CHECK(sets[0].items[0].version == resume + 1);
        CHECK(same(sets[0].items[0].key, sets[0].items[0].key_len, "k000"));
    }
    for (size_t i = 0; i < n; i++) sett_changes_free(&sets[i]);
    sett_subscription_close(sub);

    /* Older than the history: the error names the oldest version held. */
    sub = NULL;
    CHECK_RC(sett_subscribe(db, NULL, 0, 0, 1, 0, &sub, &err), SETT_FEED_HISTORY_TOO_SHORT);
    CHECK(sub == NULL);
    CHECK(sett_error_version(err) == start);
    sett_error_free(err);
    err = NULL;

    /* Bad arguments. */
    CHECK_RC(sett_subscribe(NULL, NULL, 0, 0, 0, 0, &sub, NULL), SETT_INVALID_ARGUMENT);
    CHECK_RC(sett_subscribe(db, NULL, 0, 0, 0, 0, NULL, NULL), SETT_INVALID_ARGUMENT);
    CHECK_RC(sett_subscribe(db, NULL, 1, 0, 0, 0, &sub, NULL), SETT_INVALID_ARGUMENT);
    CHECK_RC(sett_subscribe(db, NULL, 0, 0, 2, 0, &sub, NULL), SETT_INVALID_ARGUMENT);
    CHECK_RC(sett_subscription_next(NULL, 0, &c, NULL), SETT_INVALID_ARGUMENT);
    CHECK(sett_error_version(NULL) == 0);
    CHECK(strcmp(sett_status_string(SETT_FELL_BEHIND), "unknown status code") != 0);
    CHECK(strcmp(sett_status_string(SETT_FEED_HISTORY_TOO_SHORT), "unknown status code") != 0);
    CHECK(strcmp(sett_status_string(SETT_OTHER), "unknown status code") != 0);
    CHECK(strcmp(sett_status_string(SETT_MERGE_FAILED), "unknown status code") != 0);
    CHECK(strcmp(sett_status_string(SETT_NOT_ENCRYPTED), "unknown status code") != 0);
    /* SETT_NOT_ENCRYPTED is the last code. */
    CHECK(strcmp(sett_status_string(SETT_NOT_ENCRYPTED + 1), "unknown status code") == 0);
    CHECK(sett_last_version(NULL) == 0);

    /* A closed database delivers what was committed, then SETT_CLOSED. */
    CHECK_RC(sett_subscribe(db, NULL, 0, 0, 0, 0, &sub, NULL), SETT_OK);
    CHECK_RC(sett_put(db, B("last"), 4, B("v"), 1, NULL), SETT_OK);
    CHECK_RC(sett_close(db, NULL), SETT_OK);
    CHECK_RC(sett_subscription_next(sub, -1, &c, NULL), SETT_OK);
    CHECK(c.len == 1 && same(c.items[0].key, c.items[0].key_len, "last"));
    sett_changes_free(&c);
    CHECK_RC(sett_subscription_next(sub, -1, &c, NULL), SETT_CLOSED);
    sett_subscription_close(sub);
    sett_db_free(db);
}

static void test_a_range_delete_is_one_change_to_the_prefixes_it_meets(void) {
    sett_db_t *db = open_db("range", 4 << 20);
    sett_bytes_t prefixes[1] = {{B("a"), 1}};
    sett_subscription_t *sub = NULL;
    CHECK_RC(sett_subscribe(db, prefixes, 1, 0, 0, 0, &sub, NULL), SETT_OK);
    CHECK_RC(sett_delete_range(db, B("x"), 1, B("z"), 1, NULL), SETT_OK); /* not "a" */
    CHECK_RC(sett_drop_prefix(db, B("a"), 1, NULL), SETT_OK);
    CHECK_RC(sett_delete_range(db, B("0"), 1, NULL, 0, NULL), SETT_OK); /* unbounded */
    sett_changes_t sets[4];
    size_t n = take(sub, sets, 4, 2);
    CHECK(count(sets, n) == 2);
    sett_change_t all[2];
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < sets[i].len && k < 2; j++) all[k++] = sets[i].items[j];
    if (k == 2) {
        CHECK(all[0].kind == SETT_CHANGE_DELETE_RANGE && same(all[0].key, all[0].key_len, "a") &&
              same(all[0].value, all[0].value_len, "b"));
        CHECK(all[1].kind == SETT_CHANGE_DELETE_RANGE && same(all[1].key, all[1].key_len, "0") &&
              all[1].value == NULL && all[1].value_len == 0);
        CHECK(all[0].version < all[1].version);
    }
    for (size_t i = 0; i < n; i++) sett_changes_free(&sets[i]);
    sett_subscription_close(sub);
    CHECK_RC(sett_close(db, NULL), SETT_OK);
    sett_db_free(db);
}

int main(void) {
    if (mkdtemp(dir_template) == NULL) {
        perror("mkdtemp");
        return 2;
    }
    test_changes_under_prefixes_in_version_order();
    test_a_slow_subscriber_falls_behind_and_resumes_from_the_history();
    test_a_range_delete_is_one_change_to_the_prefixes_it_meets();
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir_template);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir_template);
    printf("%d passed, %d failed\n", checks - failures, failures);
    return failures == 0 ? 0 : 1;
}
