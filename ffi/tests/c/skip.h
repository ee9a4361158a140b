/* Skip marks for make test: a C test that cannot run here calls
 * sett_test_skip(name, reason), which writes the file SETT_SKIPPED_DIR/<name>
 * (the Makefile defines SETT_SKIPPED_DIR as target/tmp/skipped under the
 * repository root); make test's closing line counts and names the marks.
 * `name` says which test and why in a few words, as a plain file name.
 * A mark that cannot be written aborts the test: an unrecorded skip would read
 * as a pass. */
#ifndef SETT_TEST_SKIP_H
#define SETT_TEST_SKIP_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#ifndef SETT_SKIPPED_DIR
#error "compile with -DSETT_SKIPPED_DIR='\"<repository>/target/tmp/skipped\"'"
#endif

static inline void sett_test_skip(const char *name, const char *reason) {
    fprintf(stderr, "SKIPPED %s: %s\n", name, reason);
    if (name[0] == '\0' || name[0] == '.' || strchr(name, '/') != NULL) {
        fprintf(stderr, "skip mark name '%s' is not a plain file name\n", name);
        abort();
    }
    if (mkdir(SETT_SKIPPED_DIR, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "creating %s: %s\n", SETT_SKIPPED_DIR, strerror(errno));
        abort();
    }
    char path[4096];
    int n = snprintf(path, sizeof path, "%s/%s", SETT_SKIPPED_DIR, name);
    FILE *f = (n > 0 && (size_t)n < sizeof path) ? fopen(path, "w") : NULL;
    if (f == NULL || fprintf(f, "%s\n", reason) < 0 || fclose(f) != 0) {
        fprintf(stderr, "writing the skip mark %s failed\n", path);
        abort();
    }
}

#endif
