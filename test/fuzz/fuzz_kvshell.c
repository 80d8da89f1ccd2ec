/*
 * fuzz_kvshell.c — kvshell's command-line parser: the word splitter and
 * escape decoder of tools/kvshell/escape.c (no engine calls; compiled in).
 *
 * Input: one mode byte (modulo 3), then
 *   0  a command line for kvs_split. Every word it returns is NUL-terminated
 *      at its length; written back with every special byte as \xNN (an
 *      empty word as ""), the words split again into exactly the same bytes
 *   1  one word for kvs_unescape (load's key<TAB>value fields, arguments);
 *      and the input's bytes printed by kvs_print_escaped decode back to
 *      themselves
 *   2  a size for kvs_parse_size (up to the first NUL)
 *
 * Not fuzzed here: kvs_run (command dispatch) needs an open database, and
 * the history file reader (history.c) reads and may rewrite a file.
 */
#include <stdbool.h>
#include <string.h>

#include "test/fuzz/fuzz.h"
#include "tools/kvshell/escape.c"

/* A line that splits into exactly these words. */
static char *kvshell_join(const kvs_words *w, size_t *len)
{
    size_t cap = 1;
    for (size_t i = 0; i < w->n; i++)
        cap += 4 * w->v[i].len + 3;
    char *s = malloc(cap), *p = s;
    FUZZ_CHECK(s != NULL, "out of memory");
    for (size_t i = 0; i < w->n; i++) {
        if (i)
            *p++ = ' ';
        if (w->v[i].len == 0) {
            *p++ = '"';
            *p++ = '"';
        }
        for (size_t j = 0; j < w->v[i].len; j++) {
            unsigned char c = (unsigned char)w->v[i].data[j];
            if (c > 0x20 && c < 0x7f && c != '"' && c != '\'' && c != '\\')
                *p++ = (char)c;
            else
                p += sprintf(p, "\\x%02x", c);
        }
    }
    *p = 0;
    *len = (size_t)(p - s);
    return s;
}

static void kvshell_split(const char *s, size_t n)
{
    kvs_words w = {0};
    char err[256] = "";
    if (kvs_split(s, n, &w, err, sizeof err) != 0) {
        FUZZ_CHECK(err[0] != 0, "kvs_split failed without a message");
        kvs_words_free(&w);
        return;
    }
    for (size_t i = 0; i < w.n; i++) {
        FUZZ_CHECK(w.v[i].data != NULL && w.v[i].data[w.v[i].len] == 0, "word %zu not terminated", i);
        (void)kvs_word_is(&w.v[i], "get");
    }
    size_t len;
    char *line = kvshell_join(&w, &len);
    kvs_words again = {0};
    FUZZ_CHECK(kvs_split(line, len, &again, err, sizeof err) == 0, "escaped words do not split: %s", err);
    FUZZ_CHECK(again.n == w.n, "%zu words became %zu", w.n, again.n);
    for (size_t i = 0; i < w.n; i++)
        FUZZ_CHECK(again.v[i].len == w.v[i].len && memcmp(again.v[i].data, w.v[i].data, w.v[i].len) == 0,
                   "word %zu changed", i);
    kvs_words_free(&again);
    kvs_words_free(&w);
    free(line);
}

static void kvshell_unescape(const char *s, size_t n)
{
    kvs_word w;
    char err[256] = "";
    if (kvs_unescape(s, n, &w, err, sizeof err) == 0) {
        FUZZ_CHECK(w.data[w.len] == 0 && w.len <= n, "bad word");
        free(w.data);
    } else {
        FUZZ_CHECK(err[0] != 0, "kvs_unescape failed without a message");
    }
    char *printed = NULL;
    size_t plen = 0;
    FILE *f = open_memstream(&printed, &plen);
    FUZZ_CHECK(f != NULL, "open_memstream");
    kvs_print_escaped(f, s, n);
    fclose(f);
    FUZZ_CHECK(kvs_unescape(printed, plen, &w, err, sizeof err) == 0, "printed bytes do not decode: %s", err);
    FUZZ_CHECK(w.len == n && memcmp(w.data, s, n) == 0, "print/unescape round trip changed the bytes");
    free(w.data);
    free(printed);
}

int fuzz_kvshell(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    unsigned mode = data[0] % 3;
    const char *s = (const char *)data + 1;
    size_t n = size - 1;
    if (mode == 0) {
        kvshell_split(s, n);
    } else if (mode == 1) {
        kvshell_unescape(s, n);
    } else {
        char *z = strndup(s, n);
        FUZZ_CHECK(z != NULL, "out of memory");
        uint64_t v = 0;
        (void)kvs_parse_size(z, &v);
        free(z);
    }
    return 0;
}

AKV_FUZZ_ENTRY(fuzz_kvshell)
