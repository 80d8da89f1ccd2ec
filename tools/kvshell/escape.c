/*
 * escape.c — kvshell's binary-safe words: splitting command lines, decoding
 * and printing escapes, parsing sizes. No engine calls here, so the tests can
 * compile this file alone.
 */
#include "tools/kvshell/kvshell.h"
#include "util/grow.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* A growable byte string, NUL-terminated for convenience. */
typedef struct bytes {
    char *p;
    size_t n, cap;
} bytes;

static int bytes_put(bytes *b, char c)
{
    char *p = akvi_grow(b->p, &b->cap, b->n + 2, 1, 32);
    if (!p)
        return -1;
    b->p = p;
    b->p[b->n++] = c;
    b->p[b->n] = '\0';
    return 0;
}

static void seterr(char *err, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, cap, fmt, ap);
    va_end(ap);
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c = tolower(c);
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Decode the escape starting at s[*i] == '\\'; advances *i past it. */
static int decode_escape(const char *s, size_t len, size_t *i, char *out, char *err, size_t errcap)
{
    if (*i + 1 >= len) {
        seterr(err, errcap, "a backslash ends the line (write \\\\ for a backslash)");
        return -1;
    }
    char c = s[*i + 1];
    *i += 2;
    switch (c) {
    case 'n':
        *out = '\n';
        return 0;
    case 't':
        *out = '\t';
        return 0;
    case 'r':
        *out = '\r';
        return 0;
    case '0':
        *out = '\0';
        return 0;
    case '\\':
    case '"':
    case '\'':
    case ' ':
        *out = c;
        return 0;
    case 'x': {
        int hi = *i < len ? hexval((unsigned char)s[*i]) : -1;
        int lo = *i + 1 < len ? hexval((unsigned char)s[*i + 1]) : -1;
        if (hi < 0 || lo < 0) {
            seterr(err, errcap, "\\x needs two hex digits (e.g. \\x00)");
            return -1;
        }
        *i += 2;
        *out = (char)(hi * 16 + lo);
        return 0;
    }
    default:
        if (isprint((unsigned char)c))
            seterr(err, errcap, "unknown escape \\%c (known: \\xNN \\n \\t \\r \\0 \\\\ \\\" \\' \\<space>)",
                   c);
        else
            seterr(err, errcap, "unknown escape: backslash followed by byte 0x%02x", (unsigned char)c);
        return -1;
    }
}

int kvs_words_push(kvs_words *w, kvs_word word)
{
    kvs_word *v = akvi_grow(w->v, &w->cap, w->n + 1, sizeof *v, 8);
    if (!v)
        return -1;
    w->v = v;
    w->v[w->n++] = word;
    return 0;
}

void kvs_words_free(kvs_words *w)
{
    for (size_t i = 0; i < w->n; i++)
        free(w->v[i].data);
    free(w->v);
    w->v = NULL;
    w->n = w->cap = 0;
}

static int finish_word(kvs_words *out, bytes *b, bool plain)
{
    /* An empty quoted word ("") is a real word; make sure it has storage. */
    if (!b->p && bytes_put(b, 'x') == 0)
        b->n = 0;
    if (!b->p)
        return -1;
    b->p[b->n] = '\0';
    kvs_word w = {b->p, b->n, plain};
    if (kvs_words_push(out, w) != 0)
        return -1;
    memset(b, 0, sizeof *b);
    return 0;
}

static bool is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

int kvs_split(const char *s, size_t len, kvs_words *out, char *err, size_t errcap)
{
    bytes b = {0};
    bool in_word = false, plain = true;
    char quote = 0;
    for (size_t i = 0; i < len;) {
        char c = s[i];
        if (!quote && is_blank(c)) {
            if (in_word && finish_word(out, &b, plain) != 0)
                goto oom;
            in_word = false;
            plain = true;
            i++;
            continue;
        }
        in_word = true;
        if (c == '\\') {
            char d;
            plain = false;
            if (decode_escape(s, len, &i, &d, err, errcap) != 0)
                goto fail;
            if (bytes_put(&b, d) != 0)
                goto oom;
            continue;
        }
        if ((c == '"' || c == '\'') && (!quote || quote == c)) {
            /* Opening or closing quote; the quote byte itself is not kept. */
            quote = quote ? 0 : c;
            plain = false;
            i++;
            continue;
        }
        if (bytes_put(&b, c) != 0)
            goto oom;
        i++;
    }
    if (quote) {
        seterr(err, errcap, "unterminated %c quote", quote);
        goto fail;
    }
    if (in_word && finish_word(out, &b, plain) != 0)
        goto oom;
    return 0;
oom:
    seterr(err, errcap, "out of memory");
fail:
    free(b.p);
    return -1;
}

int kvs_unescape(const char *s, size_t len, kvs_word *out, char *err, size_t errcap)
{
    bytes b = {0};
    bool plain = true;
    for (size_t i = 0; i < len;) {
        char c = s[i];
        if (c == '\\') {
            plain = false;
            if (decode_escape(s, len, &i, &c, err, errcap) != 0) {
                free(b.p);
                return -1;
            }
        } else {
            i++;
        }
        if (bytes_put(&b, c) != 0) {
            free(b.p);
            seterr(err, errcap, "out of memory");
            return -1;
        }
    }
    if (!b.p && bytes_put(&b, 'x') == 0)
        b.n = 0;
    if (!b.p) {
        seterr(err, errcap, "out of memory");
        return -1;
    }
    b.p[b.n] = '\0';
    *out = (kvs_word){b.p, b.n, plain};
    return 0;
}

void kvs_print_escaped(FILE *f, const void *p, size_t n)
{
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = s[i];
        if (c == '\\')
            fputs("\\\\", f);
        else if (c >= 0x20 && c < 0x7f)
            putc(c, f);
        else
            fprintf(f, "\\x%02x", c);
    }
}

int kvs_parse_size(const char *s, uint64_t *out)
{
    if (!s || !isdigit((unsigned char)*s))
        return -1;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno)
        return -1;
    unsigned shift = 0;
    switch (toupper((unsigned char)*end)) {
    case 'K':
        shift = 10;
        end++;
        break;
    case 'M':
        shift = 20;
        end++;
        break;
    case 'G':
        shift = 30;
        end++;
        break;
    default:
        break;
    }
    /* Accept "4M", "4MB", "4MiB" alike; all are powers of 1024. */
    if (shift && (*end == 'i' || *end == 'I'))
        end++;
    if (*end == 'B' || *end == 'b')
        end++;
    if (*end != '\0')
        return -1;
    if (shift && v > (UINT64_MAX >> shift))
        return -1;
    *out = (uint64_t)v << shift;
    return 0;
}

bool kvs_word_is(const kvs_word *w, const char *s)
{
    return w->plain && w->len == strlen(s) && memcmp(w->data, s, w->len) == 0;
}
