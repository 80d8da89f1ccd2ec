/*
 * iter.c — iterators: a merge over the memtables and runs of a pinned
 * version, newest entry per key, tombstones skipped. In the ordered layout
 * keys come in key order; in the hash layout in the order of the internal
 * keys (BE64(h.hi) ‖ user key), an order unrelated to the keys, with the
 * hash prefix stripped from what the caller sees.
 *
 * Consistency: the version is pinned and a RocksDB snapshot taken under the
 * writer lock, so the iterator sees exactly the writes acknowledged before
 * it was created. Run families are immutable and need no snapshot.
 */
#include <stdlib.h>
#include <string.h>

#include "engine/internal.h"
#include "engine/lockorder.h"
#include "engine/runstore.h"
#include "util/order.h"

struct akv_iter {
    akv_db *db;
    akvi_version *v;
    const rocksdb_snapshot_t *snap;
    rocksdb_readoptions_t *ro_mem;
    akvi_merge *mg;
    uint64_t block_reads; /* RocksDB blocks read by this iterator's steps */
    uint8_t *upper;       /* exclusive upper bound (ordered layout), or NULL */
    size_t upper_len;
    bool past_upper; /* positioned at or past the upper bound: not valid */
};

int akv_iter_create(akv_db *db, akv_iter **out)
{
    if (!db || !out)
        return akvi_err(AKV_EINVAL, "akv_iter_create: NULL argument");
    *out = NULL;
    akv_iter *it = calloc(1, sizeof *it);
    if (!it)
        return akvi_err(AKV_ENOMEM, "out of memory");
    it->db = db;
    akvi_mutex_lock(&db->wr.mu, AKVI_RANK_WRITE);
    it->v = akvi_current(db);
    it->snap = rocksdb_create_snapshot(db->rk.rdb);
    akvi_mutex_unlock(&db->wr.mu, AKVI_RANK_WRITE);
    it->ro_mem = rocksdb_readoptions_create();
    rocksdb_readoptions_set_snapshot(it->ro_mem, it->snap);
    /* past a memtable family's generation record (mempool.c) */
    rocksdb_readoptions_set_iterate_lower_bound(it->ro_mem, akvi_scan_lower_bound, 1);
    size_t n = it->v->n_mem + it->v->n_run;
    rocksdb_iterator_t **its = calloc(n ? n : 1, sizeof *its);
    if (!its) {
        akv_iter_destroy(it);
        return akvi_err(AKV_ENOMEM, "out of memory");
    }
    size_t k = 0;
    for (size_t i = 0; i < it->v->n_mem; i++)
        its[k++] = rocksdb_create_iterator_cf(db->rk.rdb, it->ro_mem, it->v->mems[i]->cf);
    /* A run with its files open reads them (runstore.c), else its family. */
    for (size_t i = 0; i < it->v->n_run; i++)
        its[k++] = it->v->runs[i]->files
                       ? NULL
                       : rocksdb_create_iterator_cf(db->rk.rdb, db->rk.ro, it->v->runs[i]->cf);
    it->mg = akvi_merge_create(its, n);
    if (!it->mg) {
        for (size_t i = 0; i < n; i++)
            if (its[i])
                rocksdb_iter_destroy(its[i]);
        free(its);
        akv_iter_destroy(it);
        return akvi_err(AKV_ENOMEM, "out of memory");
    }
    int rc = AKV_OK;
    for (size_t i = 0; rc == AKV_OK && i < it->v->n_run; i++) {
        akvi_run *r = it->v->runs[i];
        akvi_rs_iter *fi = NULL;
        if (r->files && (rc = akvi_rs_iter_new(r->files, r->info.n_sst, false, &fi)) == AKV_OK)
            rc = akvi_merge_use_files(it->mg, it->v->n_mem + i, fi);
        /* A run's input must not end before its last key (merge.c). */
        if (rc == AKV_OK)
            akvi_merge_expect(it->mg, it->v->n_mem + i, &r->info);
    }
    if (rc != AKV_OK) {
        akv_iter_destroy(it);
        return rc;
    }
    *out = it;
    return AKV_OK;
}

/* Steps over tombstones in the direction of travel. */
static void skip_tombstones(akv_iter *it, bool backwards)
{
    while (akvi_merge_valid(it->mg)) {
        size_t vl;
        const uint8_t *v = akvi_merge_value(it->mg, &vl);
        if (vl > 0 && v[0] == AKVI_TAG_PUT)
            return;
        if (backwards)
            akvi_merge_prev(it->mg);
        else
            akvi_merge_next(it->mg);
    }
}

/* End of a seek or step begun when the thread had read `before` blocks:
 * steps run on the caller's thread, so its perf context counts their reads. */
static void settle(akv_iter *it, uint64_t before, bool backwards)
{
    skip_tombstones(it, backwards);
    it->past_upper = false;
    if (it->upper && akvi_merge_valid(it->mg)) {
        size_t kl;
        const uint8_t *k = akvi_merge_key(it->mg, &kl);
        it->past_upper = akvi_bytes_cmp(k, kl, it->upper, it->upper_len) >= 0;
    }
    it->block_reads += akvi_thread_block_reads() - before;
}

void akv_iter_seek_first(akv_iter *it)
{
    uint64_t before = akvi_thread_block_reads();
    akvi_merge_seek_first(it->mg);
    settle(it, before, false);
}

void akv_iter_seek_last(akv_iter *it)
{
    uint64_t before = akvi_thread_block_reads();
    if (it->upper)
        akvi_merge_seek_before(it->mg, it->upper, it->upper_len);
    else
        akvi_merge_seek_last(it->mg);
    settle(it, before, true);
}

void akv_iter_seek(akv_iter *it, const void *key, size_t klen)
{
    if (!key || klen == 0) { /* nothing comes before the empty key */
        akv_iter_seek_first(it);
        return;
    }
    uint64_t before = akvi_thread_block_reads();
    if (it->db->layout == AKV_LAYOUT_HASH) {
        /* The key's own place in hash order: the internal key it would have. */
        uint8_t stackbuf[512];
        uint8_t *ik = klen + 8 <= sizeof stackbuf ? stackbuf : malloc(klen + 8);
        if (!ik) {
            akvi_merge_fail(it->mg, akvi_err(AKV_ENOMEM, "out of memory"));
            return;
        }
        size_t iklen = akvi_ikey(it->db, akv_hash_key(key, klen, it->db->seed), key, klen, ik);
        akvi_merge_seek(it->mg, ik, iklen);
        if (ik != stackbuf)
            free(ik);
    } else {
        akvi_merge_seek(it->mg, key, klen);
    }
    settle(it, before, false);
}

int akv_iter_set_upper_bound(akv_iter *it, const void *key, size_t klen)
{
    if (!it)
        return akvi_err(AKV_EINVAL, "akv_iter_set_upper_bound: NULL iterator");
    if (it->db->layout != AKV_LAYOUT_ORDERED)
        return akvi_err(AKV_ENOTSUP, "an upper bound needs the ordered layout: the hash layout keeps keys in "
                                     "hash order");
    if (key && klen > AKV_MAX_KEY_BYTES)
        return akvi_check_key(klen);
    uint8_t *b = NULL;
    if (key) {
        b = malloc(klen ? klen : 1);
        if (!b)
            return akvi_err(AKV_ENOMEM, "out of memory");
        memcpy(b, key, klen);
    }
    free(it->upper);
    it->upper = b;
    it->upper_len = klen;
    it->past_upper = false;
    return AKV_OK;
}

int akv_iter_valid(const akv_iter *it)
{
    return it && !it->past_upper && akvi_merge_valid(it->mg);
}

void akv_iter_next(akv_iter *it)
{
    if (!akv_iter_valid(it))
        return;
    uint64_t before = akvi_thread_block_reads();
    akvi_merge_next(it->mg);
    settle(it, before, false);
}

void akv_iter_prev(akv_iter *it)
{
    if (!akv_iter_valid(it))
        return;
    uint64_t before = akvi_thread_block_reads();
    akvi_merge_prev(it->mg);
    settle(it, before, true);
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
    size_t iklen;
    const uint8_t *ik = akvi_merge_key(it->mg, &iklen);
    return akvi_ukey(it->db, ik, iklen, klen);
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
        rocksdb_release_snapshot(it->db->rk.rdb, it->snap);
    akvi_version_unref(it->v);
    free(it->upper);
    free(it);
}
