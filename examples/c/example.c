/* A small sett program to copy from: open, write a batch, read, iterate a
 * prefix, a transaction retried on conflict, close.
 *
 *   make lib
 *   export PKG_CONFIG_PATH=$PWD/target/pkgconfig
 *   cc -std=c11 -Wall -o example examples/c/example.c $(pkg-config --cflags --libs sett)
 *   ./example /tmp/sett-example
 */
#include <stdio.h>
#include <string.h>

#include "sett.h"

#define K(s) (const uint8_t *)(s), strlen(s)

static int fail(const char *what, sett_error_t *err) {
    fprintf(stderr, "%s: %s\n", what, sett_error_message(err));
    sett_error_free(err);
    return 1;
}

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "/tmp/sett-example";
    sett_error_t *err = NULL;
    sett_db_t *db = NULL;

    sett_options_t *opts = sett_options_new();
    sett_options_set_sync_writes(opts, 1);
    int rc = sett_open(path, opts, &db, &err);
    sett_options_free(opts);
    if (rc != SETT_OK) return fail("open", err);

    /* An atomic batch. */
    sett_batch_t *batch = sett_batch_new();
    sett_batch_put(batch, K("fruit/apple"), K("red"));
    sett_batch_put(batch, K("fruit/banana"), K("yellow"));
    sett_batch_put(batch, K("veg/carrot"), K("orange"));
    rc = sett_write(db, batch, &err);
    sett_batch_free(batch);
    if (rc != SETT_OK) return fail("write", err);

    /* A point read: the value is ours to free. */
    sett_buf_t value = {0};
    rc = sett_get(db, K("fruit/apple"), &value, &err);
    if (rc == SETT_OK) {
        printf("fruit/apple = %.*s\n", (int)value.len, (const char *)value.data);
        sett_buf_free(&value);
    } else if (rc != SETT_NOT_FOUND) {
        return fail("get", err);
    }

    /* Iterate a prefix. */
    sett_iter_options_t *io = sett_iter_options_new();
    sett_iter_options_set_prefix(io, K("fruit/"));
    sett_iter_t *it = NULL;
    rc = sett_iter_new(db, io, &it, &err);
    sett_iter_options_free(io);
    if (rc != SETT_OK) return fail("iter", err);
    for (; sett_iter_valid(it); sett_iter_next(it, NULL)) {
        const uint8_t *k, *v;
        size_t kl, vl;
        sett_iter_key(it, &k, &kl);
        sett_iter_value(it, &v, &vl);
        printf("  %.*s -> %.*s\n", (int)kl, (const char *)k, (int)vl, (const char *)v);
    }
    sett_iter_free(it);

    /* A read-modify-write transaction, retried while it conflicts. */
    for (;;) {
        sett_txn_t *txn = NULL;
        if (sett_txn_begin(db, 1, &txn, &err) != SETT_OK) return fail("begin", err);
        sett_buf_t count = {0};
        int n = 0;
        if (sett_txn_get(txn, K("visits"), &count, NULL) == SETT_OK) {
            sscanf((const char *)count.data, "%d", &n);
            sett_buf_free(&count);
        }
        char buf[16];
        int len = snprintf(buf, sizeof buf, "%d", n + 1);
        sett_txn_put(txn, K("visits"), (const uint8_t *)buf, (size_t)len + 1, NULL);
        rc = sett_txn_commit(txn, &err);
        sett_txn_free(txn);
        if (rc == SETT_OK) {
            printf("visits = %d\n", n + 1);
            break;
        }
        if (rc != SETT_CONFLICT) return fail("commit", err);
        sett_error_free(err);
        err = NULL;
    }

    rc = sett_close(db, &err);
    sett_db_free(db);
    if (rc != SETT_OK) return fail("close", err);
    return 0;
}
