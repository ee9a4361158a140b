/* Tests of encryption at rest through the C ABI: the key and rotation
 * setters, sett_rotate_encryption_key(), and the status codes of a wrong,
 * missing or unexpected key. Every refused open is followed by an open with
 * the right key that reads the data back: a bad key loses nothing.
 * Built with -Wall -Wextra -Werror -std=c11 and run under valgrind. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "sett.h"

static char dir_template[] = "/tmp/sett-ctest-enc-XXXXXX";

static uint8_t key_a[32];
static uint8_t key_b[32];

static void path_in(char *out, size_t cap, const char *name) {
    snprintf(out, cap, "%s/%s", dir_template, name);
}

/* Options with `key` (NULL: none) and a small memtable. */
static sett_options_t *options_with(const uint8_t *key) {
    sett_options_t *o = sett_options_new();
    CHECK(o != NULL);
    CHECK_RC(sett_options_set_memtable_size(o, 1 << 20), SETT_OK);
    if (key != NULL) CHECK_RC(sett_options_set_encryption_key(o, key, 32), SETT_OK);
    return o;
}

/* Opens `name` with `opts`; returns the status and leaves the message in
 * msg (empty on success). *db is the handle or NULL. */
static int try_open(const char *name, sett_options_t *opts, sett_db_t **db, char *msg, size_t cap) {
    char path[512];
    path_in(path, sizeof path, name);
    sett_error_t *err = NULL;
    *db = NULL;
    int rc = sett_open(path, opts, db, &err);
    snprintf(msg, cap, "%s", sett_error_message(err));
    CHECK((rc == SETT_OK) == (err == NULL));
    CHECK((rc == SETT_OK) == (*db != NULL));
    sett_error_free(err);
    return rc;
}

static void close_db(sett_db_t *db) {
    CHECK_RC(sett_close(db, NULL), SETT_OK);
    sett_db_free(db);
}

/* True when `key` reads as `want` in db. */
static int reads(sett_db_t *db, const char *key, const char *want) {
    sett_buf_t v = {0};
    int rc = sett_get(db, B(key), strlen(key), &v, NULL);
    int ok = rc == SETT_OK && v.len == strlen(want) && memcmp(v.data, want, v.len) == 0;
    sett_buf_free(&v);
    return ok;
}

/* A database written with key A (values in the LSM tree and the value log,
 * flushed and not) and closed. */
static void make_encrypted(const char *name) {
    sett_options_t *o = options_with(key_a);
    CHECK_RC(sett_options_set_value_threshold(o, 64), SETT_OK);
    sett_db_t *db = NULL;
    char msg[512];
    CHECK_RC(try_open(name, o, &db, msg, sizeof msg), SETT_OK);
    sett_options_free(o);
    if (db == NULL) return;
    char big[200];
    memset(big, 'v', sizeof big - 1);
    big[sizeof big - 1] = 0;
    CHECK_RC(sett_put(db, B("small"), 5, B("value"), 5, NULL), SETT_OK);
    CHECK_RC(sett_put(db, B("big"), 3, B(big), strlen(big), NULL), SETT_OK);
    CHECK_RC(sett_flush(db, NULL), SETT_OK);
    CHECK_RC(sett_put(db, B("after-flush"), 11, B("wal"), 3, NULL), SETT_OK);
    close_db(db);
}

/* Opens `name` with key A and checks every key of make_encrypted(). */
static void reads_back_with_key_a(const char *name) {
    sett_options_t *o = options_with(key_a);
    sett_db_t *db = NULL;
    char msg[512];
    CHECK_RC(try_open(name, o, &db, msg, sizeof msg), SETT_OK);
    sett_options_free(o);
    if (db == NULL) return;
    CHECK(reads(db, "small", "value"));
    CHECK(reads(db, "after-flush", "wal"));
    sett_buf_t v = {0};
    CHECK_RC(sett_get(db, B("big"), 3, &v, NULL), SETT_OK);
    CHECK(v.len == 199 && v.data != NULL && v.data[0] == 'v' && v.data[198] == 'v');
    sett_buf_free(&v);
    close_db(db);
}

static void test_an_encrypted_db_reopens_with_its_key_and_reads_its_data(void) {
    make_encrypted("reopen");
    reads_back_with_key_a("reopen");
}

static void test_files_of_an_encrypted_db_do_not_hold_the_plaintext(void) {
    /* The value log of make_encrypted() holds a 199-byte run of 'v': its
     * plaintext must not be on disk (a check that fails with the key unset). */
    make_encrypted("plaintext");
    char cmd[700];
    path_in(cmd, sizeof cmd, "plaintext");
    char grep[800];
    snprintf(grep, sizeof grep, "grep -rqa vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv %s", cmd);
    CHECK(system(grep) != 0);
}

static void test_a_wrong_key_is_refused_and_the_right_key_still_opens(void) {
    make_encrypted("wrong");
    sett_options_t *o = options_with(key_b);
    sett_db_t *db = NULL;
    char msg[512];
    CHECK_RC(try_open("wrong", o, &db, msg, sizeof msg), SETT_WRONG_ENCRYPTION_KEY);
    CHECK(strstr(msg, "not the key this database was encrypted with") != NULL);
    CHECK(strcmp(sett_status_string(SETT_WRONG_ENCRYPTION_KEY), "wrong encryption key") == 0);
    sett_options_free(o);
    reads_back_with_key_a("wrong");
}

static void test_no_key_for_an_encrypted_db_is_refused_and_loses_nothing(void) {
    make_encrypted("nokey");
    sett_options_t *o = options_with(NULL);
    sett_db_t *db = NULL;
    char msg[512];
    CHECK_RC(try_open("nokey", o, &db, msg, sizeof msg), SETT_ENCRYPTION_KEY_REQUIRED);
    CHECK(strstr(msg, "is encrypted") != NULL);
    /* NULL options (the defaults) too. */
    CHECK_RC(try_open("nokey", NULL, &db, msg, sizeof msg), SETT_ENCRYPTION_KEY_REQUIRED);
    /* A key set and then cleared (NULL, 0) is no key. */
    CHECK_RC(sett_options_set_encryption_key(o, key_a, 32), SETT_OK);
    CHECK_RC(sett_options_set_encryption_key(o, NULL, 0), SETT_OK);
    CHECK_RC(try_open("nokey", o, &db, msg, sizeof msg), SETT_ENCRYPTION_KEY_REQUIRED);
    sett_options_free(o);
    reads_back_with_key_a("nokey");
}

static void test_a_key_for_a_plain_db_is_refused_and_loses_nothing(void) {
    sett_db_t *db = NULL;
    char msg[512];
    CHECK_RC(try_open("plain", NULL, &db, msg, sizeof msg), SETT_OK);
    if (db == NULL) return;
    CHECK_RC(sett_put(db, B("k"), 1, B("plain"), 5, NULL), SETT_OK);
    close_db(db);
    sett_options_t *o = options_with(key_a);
    CHECK_RC(try_open("plain", o, &db, msg, sizeof msg), SETT_NOT_ENCRYPTED);
    CHECK(strstr(msg, "not encrypted") != NULL);
    sett_options_free(o);
    CHECK_RC(try_open("plain", NULL, &db, msg, sizeof msg), SETT_OK);
    if (db == NULL) return;
    CHECK(reads(db, "k", "plain"));
    close_db(db);
}

static void test_bad_keys_are_invalid_arguments_and_keep_the_set_key(void) {
    make_encrypted("badinput");
    sett_options_t *o = options_with(key_a);
    CHECK_RC(sett_options_set_encryption_key(NULL, key_a, 32), SETT_INVALID_ARGUMENT);
    CHECK_RC(sett_options_set_encryption_key(o, key_b, 31), SETT_INVALID_ARGUMENT);
    CHECK_RC(sett_options_set_encryption_key(o, key_b, 33), SETT_INVALID_ARGUMENT);
    CHECK_RC(sett_options_set_encryption_key(o, key_b, 0), SETT_INVALID_ARGUMENT);
    CHECK_RC(sett_options_set_encryption_key(o, NULL, 32), SETT_INVALID_ARGUMENT);
    CHECK_RC(sett_options_set_encryption_key_rotation_ms(NULL, 1000), SETT_INVALID_ARGUMENT);
    /* Key A is still the options' key: the refused calls changed nothing. */
    sett_db_t *db = NULL;
    char msg[512];
    CHECK_RC(try_open("badinput", o, &db, msg, sizeof msg), SETT_OK);
    sett_options_free(o);
    if (db == NULL) return;
    CHECK(reads(db, "small", "value"));
    sett_error_t *err = NULL;
    CHECK_RC(sett_rotate_encryption_key(NULL, NULL, &err), SETT_INVALID_ARGUMENT);
    CHECK(err != NULL && strstr(sett_error_message(err), "db is NULL") != NULL);
    sett_error_free(err);
    CHECK(reads(db, "small", "value"));
    close_db(db);
}

static void test_rotation_gives_new_key_ids_and_every_key_still_reads(void) {
    sett_options_t *o = options_with(key_a);
    /* The rotation period set after the key applies to it. */
    CHECK_RC(sett_options_set_encryption_key_rotation_ms(o, 0), SETT_OK);
    sett_db_t *db = NULL;
    char msg[512];
    CHECK_RC(try_open("rotate", o, &db, msg, sizeof msg), SETT_OK);
    if (db == NULL) {
        sett_options_free(o);
        return;
    }
    CHECK_RC(sett_put(db, B("before"), 6, B("one"), 3, NULL), SETT_OK);
    CHECK_RC(sett_flush(db, NULL), SETT_OK);
    uint32_t first = 0, second = 0;
    CHECK_RC(sett_rotate_encryption_key(db, &first, NULL), SETT_OK);
    CHECK_RC(sett_put(db, B("between"), 7, B("two"), 3, NULL), SETT_OK);
    CHECK_RC(sett_flush(db, NULL), SETT_OK);
    CHECK_RC(sett_rotate_encryption_key(db, &second, NULL), SETT_OK);
    CHECK(second > first);
    /* key_id may be NULL. */
    CHECK_RC(sett_rotate_encryption_key(db, NULL, NULL), SETT_OK);
    CHECK_RC(sett_put(db, B("after"), 5, B("three"), 5, NULL), SETT_OK);
    close_db(db);
    CHECK_RC(try_open("rotate", o, &db, msg, sizeof msg), SETT_OK);
    sett_options_free(o);
    if (db == NULL) return;
    CHECK(reads(db, "before", "one"));
    CHECK(reads(db, "between", "two"));
    CHECK(reads(db, "after", "three"));
    close_db(db);
}

static void test_rotating_a_plain_db_is_an_invalid_argument(void) {
    sett_db_t *db = NULL;
    char msg[512];
    CHECK_RC(try_open("plain-rotate", NULL, &db, msg, sizeof msg), SETT_OK);
    if (db == NULL) return;
    CHECK_RC(sett_put(db, B("k"), 1, B("v"), 1, NULL), SETT_OK);
    uint32_t id = 77;
    sett_error_t *err = NULL;
    CHECK_RC(sett_rotate_encryption_key(db, &id, &err), SETT_INVALID_ARGUMENT);
    CHECK(id == 77);
    CHECK(err != NULL && strstr(sett_error_message(err), "without encryption") != NULL);
    sett_error_free(err);
    CHECK(reads(db, "k", "v"));
    close_db(db);
}

int main(void) {
    if (mkdtemp(dir_template) == NULL) {
        perror("mkdtemp");
        return 2;
    }
    for (int i = 0; i < 32; i++) {
        key_a[i] = (uint8_t)(i + 1);
        key_b[i] = (uint8_t)(0xa0 ^ i);
    }
    test_an_encrypted_db_reopens_with_its_key_and_reads_its_data();
    test_files_of_an_encrypted_db_do_not_hold_the_plaintext();
    test_a_wrong_key_is_refused_and_the_right_key_still_opens();
    test_no_key_for_an_encrypted_db_is_refused_and_loses_nothing();
    test_a_key_for_a_plain_db_is_refused_and_loses_nothing();
    test_bad_keys_are_invalid_arguments_and_keep_the_set_key();
    test_rotation_gives_new_key_ids_and_every_key_still_reads();
    test_rotating_a_plain_db_is_an_invalid_argument();
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir_template);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir_template);
    printf("%d passed, %d failed\n", checks - failures, failures);
    return failures == 0 ? 0 : 1;
}
