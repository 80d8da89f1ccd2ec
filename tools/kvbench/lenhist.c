/*
 * lenhist.c — field lengths from a histogram file, as YCSB's
 * HistogramGenerator (fieldlengthdistribution=histogram, the file named by
 * fieldlengthhistogram). The file is tab-separated:
 *
 *     BlockSize<TAB>16
 *     0<TAB>120
 *     1<TAB>40
 *     ...
 *
 * A draw takes r uniform in [0, area), area the sum of the counts, and
 * returns (i+1) * BlockSize for the first bucket i (of all but the last)
 * with r - (count0 + ... + count_i) <= 0, else (buckets-1) * BlockSize. So
 * bucket 0 also takes r = 0, and the last bucket yields the same length as
 * the one before it: YCSB's arithmetic, kept as it is.
 *
 * Unlike YCSB, bucket numbers must run 0, 1, 2, ... (YCSB inserts a bucket
 * at the position its number gives, shifting the others, or fails), and
 * counts must not be negative.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "tools/kvbench/kvbench.h"

static int fail(char *err, size_t errlen, const char *file, int line, const char *fmt, ...)
{
    char msg[AKV_KB_ERRLEN - 64];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (line > 0)
        snprintf(err, errlen, "%s:%d: %s", file, line, msg);
    else
        snprintf(err, errlen, "%s: %s", file, msg);
    return -1;
}

/* Java's Integer.parseInt of s[0..n): optional sign, decimal digits, 32 bits. */
static bool parse_int(const char *s, size_t n, long long *out)
{
    size_t i = n > 0 && (s[0] == '-' || s[0] == '+') ? 1 : 0;
    if (i == n || n - i > 10)
        return false;
    long long v = 0;
    for (size_t k = i; k < n; k++) {
        if (s[k] < '0' || s[k] > '9')
            return false;
        v = v * 10 + (s[k] - '0');
    }
    v = s[0] == '-' ? -v : v;
    if (v < INT32_MIN || v > INT32_MAX)
        return false;
    *out = v;
    return true;
}

/* The first two tab-separated fields of a line (Java's split("\t")). */
static bool two_fields(const char *s, size_t n, const char **a, size_t *an, const char **b, size_t *bn)
{
    const char *tab = memchr(s, '\t', n);
    if (!tab)
        return false;
    *a = s;
    *an = (size_t)(tab - s);
    *b = tab + 1;
    const char *end = memchr(*b, '\t', n - *an - 1);
    *bn = end ? (size_t)(end - *b) : n - *an - 1;
    return true;
}

static int add_bucket(akv_kb_lenhist *h, uint64_t count)
{
    if ((h->n & (h->n - 1)) == 0) { /* grow at powers of two */
        uint64_t *v = realloc(h->buckets, (h->n ? 2 * h->n : 16) * sizeof *v);
        if (!v)
            return -1;
        h->buckets = v;
    }
    h->buckets[h->n++] = count;
    return 0;
}

static int parse_line(akv_kb_lenhist *h, const char *file, int line, const char *s, size_t n, char *err,
                      size_t errlen)
{
    const char *a, *b;
    size_t an, bn;
    long long x, y;
    if (!two_fields(s, n, &a, &an, &b, &bn))
        return fail(err, errlen, file, line, "expected two tab-separated fields, found '%.*s'",
                    (int)(n > 40 ? 40 : n), s);
    if (line == 1) {
        if (an != 9 || memcmp(a, "BlockSize", 9) != 0)
            return fail(err, errlen, file, line, "the first line must be 'BlockSize<TAB>size'");
        if (!parse_int(b, bn, &y) || y < 1)
            return fail(err, errlen, file, line, "BlockSize '%.*s' is not a positive integer", (int)bn, b);
        h->block = (uint64_t)y;
        return 0;
    }
    if (!parse_int(a, an, &x) || x != (long long)h->n)
        return fail(err, errlen, file, line, "bucket '%.*s': expected bucket %zu (buckets run 0, 1, 2, ...)",
                    (int)an, a, h->n);
    if (!parse_int(b, bn, &y) || y < 0)
        return fail(err, errlen, file, line, "bucket %zu: count '%.*s' is not a non-negative integer", h->n,
                    (int)bn, b);
    if (h->area + (uint64_t)y > INT32_MAX)
        return fail(err, errlen, file, line, "the counts add up to more than 2^31-1 (YCSB draws an int)");
    h->area += (uint64_t)y;
    if (add_bucket(h, (uint64_t)y))
        return fail(err, errlen, file, line, "out of memory");
    return 0;
}

int akv_kb_lenhist_parse(akv_kb_lenhist *h, const char *file, const char *buf, size_t len, char *err,
                         size_t errlen)
{
    memset(h, 0, sizeof *h);
    int line = 0;
    for (size_t pos = 0; pos < len;) {
        const char *nl = memchr(buf + pos, '\n', len - pos);
        size_t end = nl ? (size_t)(nl - buf) : len, n = end - pos;
        if (n > 0 && buf[end - 1] == '\r')
            n--;
        if (parse_line(h, file, ++line, buf + pos, n, err, errlen)) {
            akv_kb_lenhist_free(h);
            return -1;
        }
        pos = end + 1;
    }
    if (line == 0)
        return fail(err, errlen, file, 0, "empty histogram file");
    if (h->area == 0) {
        akv_kb_lenhist_free(h);
        return fail(err, errlen, file, 0, "no bucket has a count above zero");
    }
    return 0;
}

int akv_kb_lenhist_load(akv_kb_lenhist *h, const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return fail(err, errlen, path, 0, "cannot open field length histogram: %s", strerror(errno));
    char *buf = NULL;
    size_t cap = 0, n = 0, got;
    do {
        if (n == cap) {
            char *nb = realloc(buf, cap = cap ? 2 * cap : 4096);
            if (!nb) {
                free(buf);
                fclose(f);
                return fail(err, errlen, path, 0, "out of memory");
            }
            buf = nb;
        }
        got = fread(buf + n, 1, cap - n, f);
        n += got;
    } while (got > 0);
    bool bad = ferror(f);
    fclose(f);
    int rc =
        bad ? fail(err, errlen, path, 0, "read error") : akv_kb_lenhist_parse(h, path, buf, n, err, errlen);
    free(buf);
    return rc;
}

uint64_t akv_kb_lenhist_next(const akv_kb_lenhist *h, akv_kb_rng *r)
{
    int64_t number = (int64_t)akv_kb_rng_below(r, h->area);
    size_t i;
    for (i = 0; i + 1 < h->n; i++) {
        number -= (int64_t)h->buckets[i];
        if (number <= 0)
            return (i + 1) * h->block;
    }
    return i * h->block;
}

/* The longest field a draw can return. */
uint64_t akv_kb_lenhist_max(const akv_kb_lenhist *h)
{
    return (h->n > 1 ? h->n - 1 : 0) * h->block;
}

void akv_kb_lenhist_free(akv_kb_lenhist *h)
{
    free(h->buckets);
    memset(h, 0, sizeof *h);
}
