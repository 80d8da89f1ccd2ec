/*
 * revmap_rocks.c — reverse maps over RocksDB for adapting a slot.
 *
 * Merged (hash layout): the run's own family is sorted by BE64(h.hi), so the
 * keys sharing a fingerprint prefix are one seek away. Split (ordered
 * layout): the run's rmap.<id> family holds BE64(h.hi) ‖ user key. In both
 * cases only keys inside the slot's SST are reported (a run holds many
 * SSTs), and the full hash is recomputed from the user key with the
 * database seed, so the filter sees exactly the hashes it was built from.
 */
#include <stdlib.h>
#include <string.h>

#include "engine/internal.h"
#include "revmap/revmap.h"

typedef struct rm_ctx {
    akv_revmap rm;
    akv_db *db;
    const akvi_run *run;
    const akvi_cat_sst *sst;
} rm_ctx;

static int cmp_bytes(const uint8_t *a, size_t al, const uint8_t *b, size_t bl)
{
    int c = memcmp(a, b, al < bl ? al : bl);
    return c ? c : (al > bl) - (al < bl);
}

static bool in_sst(const rm_ctx *c, uint64_t hi, const uint8_t *uk, size_t ul)
{
    if (c->db->layout == AKV_LAYOUT_HASH) {
        uint32_t b = c->run->info.prefix_bits;
        return b == 0 || (hi >> (64 - b)) == c->sst->prefix;
    }
    return cmp_bytes(uk, ul, c->sst->smallest, c->sst->smallest_len) >= 0 &&
           cmp_bytes(uk, ul, c->sst->largest, c->sst->largest_len) <= 0;
}

static int cmp_hash(const void *a, const void *b)
{
    const akv_hash *x = a, *y = b;
    if (x->hi != y->hi)
        return x->hi < y->hi ? -1 : 1;
    return (x->lo > y->lo) - (x->lo < y->lo);
}

/* `hi` and the reported hashes are slot hashes (akvi_slot_hash): map the
 * query back to the stored key order (shard prefix first), seek there, and
 * keep only keys whose slot hash matches in its top `nbits` bits. */
static int scan(akv_revmap *rm, uint64_t hi, unsigned nbits, akv_revmap_fn fn, void *arg)
{
    rm_ctx *c = (rm_ctx *)rm;
    if (nbits < 1 || nbits > 64)
        return AKV_EINVAL;
    uint32_t pb = c->db->layout == AKV_LAYOUT_HASH ? c->run->info.prefix_bits : 0;
    uint64_t smask = nbits == 64 ? ~0ULL : ~(~0ULL >> nbits);
    uint64_t ohi = pb ? (c->sst->prefix << (64 - pb)) | (hi >> pb) : hi;
    unsigned onbits = nbits + pb > 64 ? 64 : nbits + pb;
    uint64_t mask = onbits == 64 ? ~0ULL : ~(~0ULL >> onbits);
    uint64_t start = ohi & mask;
    rocksdb_column_family_handle_t *cf = c->db->layout == AKV_LAYOUT_HASH ? c->run->cf : c->run->rmap_cf;
    rocksdb_iterator_t *it = rocksdb_create_iterator_cf(c->db->rdb, c->db->ro, cf);
    uint8_t seek[8];
    akvi_be64(seek, start);
    akv_hash *h = NULL;
    size_t n = 0, cap = 0;
    int rc = AKV_OK;
    for (rocksdb_iter_seek(it, (const char *)seek, 8); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
        size_t kl;
        const uint8_t *k = (const uint8_t *)rocksdb_iter_key(it, &kl);
        if (kl < 8)
            continue;
        uint64_t khi = akvi_get_be64(k);
        if ((khi & mask) != start)
            break;
        if (!in_sst(c, khi, k + 8, kl - 8))
            continue;
        akv_hash sh = akvi_slot_hash(akv_hash_key(k + 8, kl - 8, c->db->seed), pb);
        if ((sh.hi & smask) != (hi & smask))
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 8;
            akv_hash *p = realloc(h, cap * sizeof *p);
            if (!p) {
                rc = AKV_ENOMEM;
                break;
            }
            h = p;
        }
        h[n++] = sh;
    }
    char *err = NULL;
    rocksdb_iter_get_error(it, &err);
    rocksdb_iter_destroy(it);
    if (err) {
        rocksdb_free(err);
        rc = AKV_EIO;
    }
    if (rc == AKV_OK) {
        qsort(h, n, sizeof *h, cmp_hash);
        for (size_t i = 0; i < n && rc == AKV_OK; i++)
            rc = fn(arg, h[i]);
    }
    free(h);
    return rc;
}

static int adapt_filter(akv_db *db, akvi_run *r, size_t j, akv_filter *f, akv_hash h)
{
    akvi_slot *s = &r->slots[j];
    rm_ctx c = {{scan, NULL}, db, r, &r->info.ssts[j]};
    c.rm.ctx = &c;
    if (s->locked)
        pthread_rwlock_wrlock(&s->lock);
    int rc = akv_filter_adapt(f, h, &c.rm);
    if (s->locked)
        pthread_rwlock_unlock(&s->lock);
    return rc;
}

/*
 * A filter's room for adaptations is fixed when it is built; a small SST
 * under a steady stream of fresh false positives uses it up, and from then
 * on every replayed key would cost a probe again. So a full filter is
 * rebuilt from the keys its SST holds (never a key it does not hold) with
 * twice the room, pre-adapted to the miss log's negatives in its range, and
 * swapped in. Readers may still hold the old filter: it is kept until the
 * run is freed. `full` is the filter that reported AKV_EFULL; if another
 * thread already replaced it, there is nothing to do.
 */
#define MAX_GROWS 6 /* at most 2^6 times the size it was built with */

static int grow_slot(akv_db *db, akvi_run *r, size_t j, akv_filter *full)
{
    akvi_slot *s = &r->slots[j];
    const akvi_cat_sst *sst = &r->info.ssts[j];
    pthread_mutex_lock(&s->grow_mu);
    int rc = AKV_OK;
    uint64_t grows = atomic_load(&s->grows);
    if (atomic_load(&s->f) != full)
        goto out;
    if (grows >= MAX_GROWS) {
        rc = akvi_err(AKV_EFULL, "filter slot %llu-%llu is full and was grown %d times already",
                      (unsigned long long)r->info.id, (unsigned long long)sst->id, MAX_GROWS);
        goto out;
    }
    akv_filter **ret = realloc(s->retired, (s->n_retired + 1) * sizeof *ret);
    if (!ret) {
        rc = akvi_err(AKV_ENOMEM, "out of memory");
        goto out;
    }
    s->retired = ret;
    akv_hash *hashes = NULL;
    size_t n = 0;
    akv_filter *f = NULL;
    rc = akvi_sst_hashes(db, r, sst, &hashes, &n);
    if (rc == AKV_OK && n != sst->keys)
        rc = akvi_err(AKV_ECORRUPT, "SST %llu-%llu holds %zu keys; the catalog says %llu",
                      (unsigned long long)r->info.id, (unsigned long long)sst->id, n,
                      (unsigned long long)sst->keys);
    /* Sized for 2^(g+1) times its keys, so each growth doubles the room; a
     * filter grown before a restart (the count starts over) is already
     * larger, so keep doubling until the new one is bigger than the full. */
    size_t old_bytes = akv_filter_memory(full);
    for (uint64_t g = grows + 1; rc == AKV_OK && !f; g++) {
        if (g > MAX_GROWS) {
            rc = akvi_err(AKV_EFULL, "filter slot %llu-%llu is full and cannot grow further",
                          (unsigned long long)r->info.id, (unsigned long long)sst->id);
            break;
        }
        rc = akvi_build_filter_sized(db, (int)r->info.level, &r->info, sst, hashes, n, (n + 64) << g, &f);
        if (rc == AKV_OK && f->kind != full->kind) { /* a fallback kind: keep the adaptive one */
            akv_filter_destroy(f);
            f = NULL;
            rc = akvi_err(AKV_EFULL, "could not grow a %s filter", full->kind->name);
        } else if (rc == AKV_OK && akv_filter_memory(f) <= old_bytes) {
            akv_filter_destroy(f);
            f = NULL;
        }
    }
    free(hashes);
    if (rc == AKV_OK) {
        if (s->locked)
            pthread_rwlock_wrlock(&s->lock);
        s->retired[s->n_retired++] = full;
        atomic_store(&s->f, f);
        if (s->locked)
            pthread_rwlock_unlock(&s->lock);
        atomic_store(&s->dirty, true);
        atomic_fetch_add(&s->grows, 1);
    }
out:
    pthread_mutex_unlock(&s->grow_mu);
    return rc;
}

int akvi_adapt_slot(akv_db *db, akvi_run *r, size_t j, akv_hash h)
{
    akvi_slot *s = &r->slots[j];
    akv_filter *f = atomic_load(&s->f);
    int rc = adapt_filter(db, r, j, f, h);
    if (rc == AKV_EFULL && grow_slot(db, r, j, f) == AKV_OK) {
        f = atomic_load(&s->f);
        /* The rebuilt filter may already reject h (pre-adapted to it). */
        if (s->locked)
            pthread_rwlock_rdlock(&s->lock);
        bool yes = akv_filter_may_contain(f, h);
        if (s->locked)
            pthread_rwlock_unlock(&s->lock);
        rc = yes ? adapt_filter(db, r, j, f, h) : AKV_OK;
    }
    if (rc == AKV_OK)
        atomic_store(&s->dirty, true);
    return rc;
}

/*
 * Adaptations live in memory; the adapted slots are written back
 * (atomically, like any filter file) after each flush, every few idle
 * seconds and at close, so a key that fooled a filter does not fool it again
 * after a restart. A crash only loses recent adaptations: the file on disk
 * is always a complete filter of its SST. Runs on the background thread (or
 * at close), so no compaction removes a run meanwhile; the version pin keeps
 * its slots alive. The slot's filter is serialized under its write
 * exclusion (the kind's own lock for concurrent kinds, the slot's rwlock
 * otherwise), so a concurrent adaptation never tears the snapshot.
 */
void akvi_save_adapted_slots(akv_db *db)
{
    akvi_version *v = akvi_current(db);
    for (size_t i = 0; i < v->n_run; i++) {
        akvi_run *r = v->runs[i];
        for (size_t j = 0; j < r->info.n_sst; j++) {
            akvi_slot *s = &r->slots[j];
            /* Clear the flag first: an adaptation or growth after this sets
             * it again and is saved next time. */
            if (!atomic_exchange(&s->dirty, false))
                continue;
            akv_filter *f = atomic_load(&s->f);
            if (!f)
                continue;
            if (s->locked)
                pthread_rwlock_rdlock(&s->lock);
            int rc = akvi_slot_write_file(db->fdir, r->info.id, r->info.ssts[j].id, f);
            if (s->locked)
                pthread_rwlock_unlock(&s->lock);
            if (rc != AKV_OK)
                akvi_log(db, "warning: could not save an adapted filter: %s", akv_errmsg());
        }
    }
    akvi_version_unref(v);
}
