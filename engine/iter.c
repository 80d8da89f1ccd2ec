/*
 * iter.c — range iterators (ordered layout): a merge over the memtables and
 * runs of a pinned version, newest entry per key, tombstones skipped.
 *
 * Consistency: the version is pinned and a RocksDB snapshot taken under the
 * writer lock, so the iterator sees exactly the writes acknowledged before
 * it was created. Run families are immutable and need no snapshot.
 */
#include <stdlib.h>
#include <string.h>

#include "engine/internal.h"

struct akv_iter {
    akv_db *db;
    akvi_version *v;
    const rocksdb_snapshot_t *snap;
    rocksdb_readoptions_t *ro_mem;
    akvi_merge *mg;
    uint64_t block_reads; /* RocksDB blocks read by this iterator's steps */
};

int akv_iter_create(akv_db *db, akv_iter **out)
{
    if (!db || !out)
        return akvi_err(AKV_EINVAL, "akv_iter_create: NULL argument");
    *out = NULL;
    if (db->layout != AKV_LAYOUT_ORDERED)
        return akvi_err(AKV_ENOTSUP, "range scans need the ordered layout");
    akv_iter *it = calloc(1, sizeof *it);
    if (!it)
        return akvi_err(AKV_ENOMEM, "out of memory");
    it->db = db;
    pthread_mutex_lock(&db->wmu);
    it->v = akvi_current(db);
    it->snap = rocksdb_create_snapshot(db->rdb);
    pthread_mutex_unlock(&db->wmu);
    it->ro_mem = rocksdb_readoptions_create();
    rocksdb_readoptions_set_snapshot(it->ro_mem, it->snap);
    size_t n = it->v->n_mem + it->v->n_run;
    rocksdb_iterator_t **its = calloc(n ? n : 1, sizeof *its);
    if (!its) {
        akv_iter_destroy(it);
        return akvi_err(AKV_ENOMEM, "out of memory");
    }
    size_t k = 0;
    for (size_t i = 0; i < it->v->n_mem; i++)
        its[k++] = rocksdb_create_iterator_cf(db->rdb, it->ro_mem, it->v->mems[i]->cf);
    for (size_t i = 0; i < it->v->n_run; i++)
        its[k++] = rocksdb_create_iterator_cf(db->rdb, db->ro, it->v->runs[i]->cf);
    it->mg = akvi_merge_create(its, n);
    /* A run's input must not end before its last key (merge.c). */
    for (size_t i = 0; it->mg && i < it->v->n_run; i++)
        akvi_merge_expect(it->mg, it->v->n_mem + i, &it->v->runs[i]->info);
    if (!it->mg) {
        for (size_t i = 0; i < n; i++)
            rocksdb_iter_destroy(its[i]);
        free(its);
        akv_iter_destroy(it);
        return akvi_err(AKV_ENOMEM, "out of memory");
    }
    *out = it;
    return AKV_OK;
}

static void skip_tombstones(akv_iter *it)
{
    while (akvi_merge_valid(it->mg)) {
        size_t vl;
        const uint8_t *v = akvi_merge_value(it->mg, &vl);
        if (vl > 0 && v[0] == AKVI_TAG_PUT)
            return;
        akvi_merge_next(it->mg);
    }
}

/* End of a seek or step begun when the thread had read `before` blocks:
 * steps run on the caller's thread, so its perf context counts their reads. */
static void settle(akv_iter *it, uint64_t before)
{
    skip_tombstones(it);
    it->block_reads += akvi_thread_block_reads() - before;
}

void akv_iter_seek_first(akv_iter *it)
{
    uint64_t before = akvi_thread_block_reads();
    akvi_merge_seek_first(it->mg);
    settle(it, before);
}

void akv_iter_seek(akv_iter *it, const void *key, size_t klen)
{
    uint64_t before = akvi_thread_block_reads();
    akvi_merge_seek(it->mg, key, klen);
    settle(it, before);
}

int akv_iter_valid(const akv_iter *it)
{
    return it && akvi_merge_valid(it->mg);
}

void akv_iter_next(akv_iter *it)
{
    if (!akv_iter_valid(it))
        return;
    uint64_t before = akvi_thread_block_reads();
    akvi_merge_next(it->mg);
    settle(it, before);
}

uint64_t akv_iter_block_reads(const akv_iter *it)
{
    return it ? it->block_reads : 0;
}

const void *akv_iter_key(const akv_iter *it, size_t *klen)
{
    if (!akv_iter_valid(it)) {
        *klen = 0;
        return NULL;
    }
    return akvi_merge_key(it->mg, klen);
}

const void *akv_iter_value(const akv_iter *it, size_t *vlen)
{
    if (!akv_iter_valid(it)) {
        *vlen = 0;
        return NULL;
    }
    size_t n;
    const uint8_t *v = akvi_merge_value(it->mg, &n);
    *vlen = n - 1;
    return v + 1;
}

int akv_iter_status(const akv_iter *it)
{
    if (!it)
        return AKV_EINVAL;
    return akvi_merge_status(it->mg);
}

void akv_iter_destroy(akv_iter *it)
{
    if (!it)
        return;
    akvi_ctr_add(&akvi_rstats_of(it->db)->block_reads, it->block_reads);
    akvi_merge_destroy(it->mg);
    if (it->ro_mem)
        rocksdb_readoptions_destroy(it->ro_mem);
    if (it->snap)
        rocksdb_release_snapshot(it->db->rdb, it->snap);
    akvi_version_unref(it->v);
    free(it);
}
