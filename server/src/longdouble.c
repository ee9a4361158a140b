/* INCRBYFLOAT's arithmetic in C's long double: redis-server parses, adds and
 * prints in that type, so a result computed in f64 would differ from Redis's
 * in its last digits (10.5 + 5000.1 prints as 5010.60000000000000009 there).
 * Parsing follows Redis's rules for a float argument: at most 5 KiB, no
 * leading space, the whole string consumed, no NaN, no overflow or underflow
 * to zero; printing is %.17Lf without trailing zeros. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FLOAT_CHARS 5120

static int parse(const char *s, size_t len, long double *out) {
    char buf[MAX_FLOAT_CHARS + 1];
    char *end;
    long double v;
    if (len == 0 || len >= MAX_FLOAT_CHARS) return 0;
    memcpy(buf, s, len);
    buf[len] = '\0';
    if (isspace((unsigned char)buf[0])) return 0;
    errno = 0;
    v = strtold(buf, &end);
    if (*end != '\0') return 0;
    if (errno == ERANGE && (isinf(v) || fpclassify(v) == FP_ZERO)) return 0;
    if (isnan(v)) return 0;
    *out = v;
    return 1;
}

/* a + b into out (its length in *n). Returns 0 when written, 1 when an operand is
 * not a float, 2 when the sum is not finite or does not fit out. */
int sett_ld_add(const char *a, size_t alen, const char *b, size_t blen, char *out, size_t cap,
                size_t *n) {
    long double x, y, v;
    int l;
    if (!parse(a, alen, &x) || !parse(b, blen, &y)) return 1;
    v = x + y;
    if (isnan(v) || isinf(v)) return 2;
    l = snprintf(out, cap, "%.17Lf", v);
    if (l < 0 || (size_t)l + 1 > cap) return 2;
    if (strchr(out, '.') != NULL) {
        while (l > 0 && out[l - 1] == '0') l--;
        if (l > 0 && out[l - 1] == '.') l--;
    }
    if (l == 2 && out[0] == '-' && out[1] == '0') {
        out[0] = '0';
        l = 1;
    }
    *n = (size_t)l;
    return 0;
}
