/*
 * merge.c — merging iterator over column-family iterators, newest first.
 *
 * Yields each distinct key once, with the entry of the newest input that
 * holds it (the lowest index). Shadowing by tags is left to the caller:
 * flush/compaction keep or drop tombstones, user iterators skip them.
 * A linear scan over inputs is enough: a version has a handful of
 * memtables and runs, far fewer than a heap would pay off for.
 */
#include <stdlib.h>
#include <string.h>

#include "engine/internal.h"
#include "util/order.h"

struct akvi_merge {
    size_t n;
    rocksdb_iterator_t **its;
    long cur;
    int status;
};

akvi_merge *akvi_merge_create(rocksdb_iterator_t **its, size_t n)
{
    akvi_merge *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->its = its;
    m->n = n;
    m->cur = -1;
    return m;
}

static void check_errors(akvi_merge *m)
{
    for (size_t i = 0; i < m->n && m->status == AKV_OK; i++) {
        char *err = NULL;
        rocksdb_iter_get_error(m->its[i], &err);
        if (err)
            m->status = akvi_rocks_err(err, "reading a column family");
    }
}

static void pick(akvi_merge *m)
{
    long best = -1;
    const char *bk = NULL;
    size_t bl = 0;
    for (size_t i = 0; i < m->n; i++) {
        if (!rocksdb_iter_valid(m->its[i]))
            continue;
        size_t kl;
        const char *k = rocksdb_iter_key(m->its[i], &kl);
        if (best < 0 || akv_bytes_cmp(k, kl, bk, bl) < 0) {
            best = (long)i;
            bk = k;
            bl = kl;
        }
    }
    m->cur = best;
    if (best < 0)
        check_errors(m);
}

void akvi_merge_seek_first(akvi_merge *m)
{
    for (size_t i = 0; i < m->n; i++)
        rocksdb_iter_seek_to_first(m->its[i]);
    pick(m);
}

void akvi_merge_seek(akvi_merge *m, const uint8_t *k, size_t len)
{
    for (size_t i = 0; i < m->n; i++)
        rocksdb_iter_seek(m->its[i], (const char *)k, len);
    pick(m);
}

bool akvi_merge_valid(const akvi_merge *m)
{
    return m->cur >= 0 && m->status == AKV_OK;
}

const uint8_t *akvi_merge_key(const akvi_merge *m, size_t *len)
{
    return (const uint8_t *)rocksdb_iter_key(m->its[m->cur], len);
}

const uint8_t *akvi_merge_value(const akvi_merge *m, size_t *len)
{
    return (const uint8_t *)rocksdb_iter_value(m->its[m->cur], len);
}

void akvi_merge_next(akvi_merge *m)
{
    size_t kl;
    const char *k = rocksdb_iter_key(m->its[m->cur], &kl);
    /* Advance every other input sitting on the same key first, then the
     * current one (whose key buffer `k` belongs to it). */
    for (size_t i = 0; i < m->n; i++) {
        if ((long)i == m->cur || !rocksdb_iter_valid(m->its[i]))
            continue;
        size_t ol;
        const char *o = rocksdb_iter_key(m->its[i], &ol);
        if (akv_bytes_cmp(o, ol, k, kl) == 0)
            rocksdb_iter_next(m->its[i]);
    }
    rocksdb_iter_next(m->its[m->cur]);
    pick(m);
}

int akvi_merge_status(const akvi_merge *m)
{
    return m->status;
}

void akvi_merge_destroy(akvi_merge *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->n; i++)
        rocksdb_iter_destroy(m->its[i]);
    free(m->its);
    free(m);
}
