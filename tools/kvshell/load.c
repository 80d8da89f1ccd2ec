/*
 * load.c — `load FILE`: bulk load through write batches.
 *
 * A line holding a TAB is "key<TAB>value" (split at the first TAB, backslash
 * escapes decoded in both parts, quotes ordinary), which is exactly what
 * `dump` prints, so dump | load round-trips. Any other line is a command,
 * and only `put K V` and `del K` are accepted. Blank lines and lines starting
 * with '#' are skipped. Loading stops at the first bad line, or at Ctrl-C in
 * an interactive session; the lines before it are stored.
 */
#include "tools/kvshell/kvshell.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum { BATCH_OPS = 1000, BATCH_BYTES = 4u << 20 };
#define PROGRESS_MIN_BYTES (8u << 20) /* files smaller than this load silently */

typedef struct loader {
    kvs_ctx *c;
    const char *path;
    akv_batch *b;
    size_t batch_bytes;
    uint64_t records, lineno;
    uint64_t file_bytes, done_bytes;
    time_t last_progress;
    bool progress, tty;
} loader;

static int commit(loader *l)
{
    if (akv_batch_count(l->b) == 0)
        return 0;
    int rc = akv_write(l->c->db, l->b, l->c->sync);
    akv_batch_clear(l->b);
    l->batch_bytes = 0;
    if (rc != AKV_OK) {
        kvs_error(l->c, "load", "%s: writing a batch before line %llu: %s", l->path,
                  (unsigned long long)l->lineno, kvs_engine_msg(rc));
        return -1;
    }
    return 0;
}

static int line_error(loader *l, const char *msg)
{
    kvs_error(l->c, "load", "%s:%llu: %s", l->path, (unsigned long long)l->lineno, msg);
    return -1;
}

static int add_put(loader *l, const kvs_word *k, const kvs_word *v)
{
    int rc = akv_batch_put(l->b, k->data, k->len, v->data, v->len);
    if (rc != AKV_OK)
        return line_error(l, kvs_engine_msg(rc));
    l->batch_bytes += k->len + v->len;
    return 0;
}

static int add_del(loader *l, const kvs_word *k)
{
    int rc = akv_batch_delete(l->b, k->data, k->len);
    if (rc != AKV_OK)
        return line_error(l, kvs_engine_msg(rc));
    l->batch_bytes += k->len;
    return 0;
}

static int add_pair_line(loader *l, const char *s, size_t len, const char *tab)
{
    char err[256];
    kvs_word k, v;
    if (kvs_unescape(s, (size_t)(tab - s), &k, err, sizeof err) != 0)
        return line_error(l, err);
    if (kvs_unescape(tab + 1, len - (size_t)(tab + 1 - s), &v, err, sizeof err) != 0) {
        free(k.data);
        return line_error(l, err);
    }
    int rc = add_put(l, &k, &v);
    free(k.data);
    free(v.data);
    return rc;
}

static int add_command_line(loader *l, const char *s, size_t len)
{
    char err[256];
    kvs_words w = {0};
    int rc = -1;
    if (kvs_split(s, len, &w, err, sizeof err) != 0)
        rc = line_error(l, err);
    else if (w.n == 0)
        rc = 0;
    else if (w.n == 3 && kvs_word_is(&w.v[0], "put"))
        rc = add_put(l, &w.v[1], &w.v[2]);
    else if (w.n == 2 && kvs_word_is(&w.v[0], "del"))
        rc = add_del(l, &w.v[1]);
    else
        rc = line_error(l, "expected \"key<TAB>value\", \"put KEY VALUE\" or \"del KEY\"");
    kvs_words_free(&w);
    return rc;
}

static int add_line(loader *l, char *s, size_t len)
{
    while (len && (s[len - 1] == '\n' || s[len - 1] == '\r'))
        len--;
    if (len == 0 || s[0] == '#')
        return 0;
    const char *tab = memchr(s, '\t', len);
    int rc = tab ? add_pair_line(l, s, len, tab) : add_command_line(l, s, len);
    if (rc == 0)
        l->records++;
    return rc;
}

static void progress(loader *l, bool last)
{
    time_t now = time(NULL);
    if (!l->progress || (!last && now == l->last_progress))
        return;
    l->last_progress = now;
    double pct = l->file_bytes ? 100.0 * (double)l->done_bytes / (double)l->file_bytes : 100.0;
    fprintf(stderr, "%sload: %s: %llu records, %.0f%%%s", l->tty ? "\r" : "", l->path,
            (unsigned long long)l->records, pct, l->tty && !last ? "" : "\n");
}

static int load_stream(loader *l, FILE *f)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int rc = 0;
    while (rc == 0 && (n = getline(&line, &cap, f)) >= 0) {
        l->lineno++;
        if (kvs_interrupted()) { /* Ctrl-C: this line and the rest are not loaded */
            kvs_error(l->c, "load", "%s: interrupted", l->path);
            rc = -1;
            break;
        }
        l->done_bytes += (uint64_t)n;
        rc = add_line(l, line, (size_t)n);
        if (rc == 0 && (akv_batch_count(l->b) >= BATCH_OPS || l->batch_bytes >= BATCH_BYTES)) {
            rc = commit(l);
            progress(l, false);
        }
    }
    if (rc == 0 && ferror(f)) {
        kvs_error(l->c, "load", "%s: read error: %s", l->path, strerror(errno));
        rc = -1;
    }
    free(line);
    /* Lines before a bad one are stored, as documented. */
    int crc = commit(l);
    return rc ? rc : crc;
}

int kvs_cmd_load(kvs_ctx *c, const char *path)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
    if (!f) {
        kvs_error(c, "load", "%s: %s", path, strerror(errno));
        return KVS_FAIL;
    }
    loader l = {.c = c, .path = path, .tty = isatty(2)};
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode))
        l.file_bytes = (uint64_t)st.st_size;
    l.progress = l.file_bytes >= PROGRESS_MIN_BYTES;
    int rc = akv_batch_create(&l.b);
    if (rc != AKV_OK) {
        kvs_error(c, "load", "%s", kvs_engine_msg(rc));
        if (f != stdin)
            fclose(f);
        return KVS_FAIL;
    }
    rc = load_stream(&l, f);
    if (f != stdin)
        fclose(f);
    akv_batch_destroy(l.b);
    progress(&l, true);
    if (rc != 0) {
        kvs_error(c, "load", "%s: stopped at line %llu; %llu records before it are stored", path,
                  (unsigned long long)l.lineno, (unsigned long long)l.records);
        return KVS_FAIL;
    }
    printf("loaded %llu records\n", (unsigned long long)l.records);
    return KVS_OK;
}
