/* The skip helper itself: compiled with SETT_SKIPPED_DIR naming a folder of
 * its own (not make test's), it must leave a mark holding the reason. */
#include <stdio.h>
#include <string.h>

#include "skip.h"

int main(void) {
    sett_test_skip("c-selftest-helper_check", "the helper's own check");
    char path[4096], got[256] = {0};
    snprintf(path, sizeof path, "%s/%s", SETT_SKIPPED_DIR, "c-selftest-helper_check");
    FILE *f = fopen(path, "r");
    if (f == NULL || fgets(got, sizeof got, f) == NULL) {
        fprintf(stderr, "test_skip: no mark at %s\n", path);
        return 1;
    }
    fclose(f);
    if (strcmp(got, "the helper's own check\n") != 0 || remove(path) != 0) {
        fprintf(stderr, "test_skip: mark %s holds '%s'\n", path, got);
        return 1;
    }
    printf("test_skip: the helper wrote %s\n", path);
    return 0;
}
