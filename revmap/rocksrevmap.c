/*
 * rocksrevmap.c — reverse maps on RocksDB (revmap.h): the owners of a
 * fingerprint prefix, read from a column family sorted by BE64(h.hi).
 *
 * The scan maps the slot-hash prefix back to the stored key order (shard
 * prefix first), seeks there once, and keeps only keys of the SST whose slot
 * hash matches in its top `nbits` bits. Hashes are reported in ascending
 * (hi, lo) order, as the interface requires, after the keys are collected:
 * the stored order is by h.hi and user key, not by h.lo.
 */
#include <stdlib.h>

#include "revmap/revmap.h"
#include "util/order.h"
#include "util/shard.h"
#include "util/grow.h"

static uint64_t be64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = (v << 8) | p[i];
    return v;
}

static void put_be64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (56 - 8 * i));
}

static int push(akv_hash **v, size_t *n, size_t *cap, akv_hash h)
{
    akv_hash *p = akvi_grow(*v, cap, *n + 1, sizeof *p, 8);
    if (!p)
        return AKV_ENOMEM;
    *v = p;
    (*v)[(*n)++] = h;
    return AKV_OK;
}

static int scan(akv_revmap *rm, uint64_t hi, unsigned nbits, akv_revmap_fn fn, void *arg)
{
    akvi_rocksrevmap *m = rm->ctx;
    if (nbits < 1 || nbits > 64)
        return AKV_EINVAL;
    uint32_t pb = m->prefix_bits;
    uint64_t smask = nbits == 64 ? ~0ULL : ~(~0ULL >> nbits);
    uint64_t ohi = pb ? (m->prefix << (64 - pb)) | (hi >> pb) : hi;
    unsigned onbits = nbits + pb > 64 ? 64 : nbits + pb;
    uint64_t mask = onbits == 64 ? ~0ULL : ~(~0ULL >> onbits);
    uint64_t start = ohi & mask;
    const akvi_revmap_cursor *c = m->cursor;
    rocksdb_iterator_t *it = c ? NULL : rocksdb_create_iterator_cf(m->db, m->ro, m->cf);
    uint8_t seek[8];
    put_be64(seek, start);
    akv_hash *v = NULL;
    size_t n = 0, cap = 0;
    int rc = AKV_OK;
    if (c)
        rc = c->seek(c->ctx, seek, 8);
    else
        rocksdb_iter_seek(it, (const char *)seek, 8);
    while (rc == AKV_OK && (c ? c->valid(c->ctx) : rocksdb_iter_valid(it))) {
        size_t kl;
        const uint8_t *k = c ? c->key(c->ctx, &kl) : (const uint8_t *)rocksdb_iter_key(it, &kl);
        if (kl >= 8 && (be64(k) & mask) != start)
            break;
        if (kl >= 8) {
            akv_hash h = akv_hash_key(k + 8, kl - 8, m->seed);
            akv_hash sh = akvi_slot_hash(h, pb);
            if (m->in_sst(m->in_sst_arg, h, k + 8, kl - 8) && (sh.hi & smask) == (hi & smask))
                rc = push(&v, &n, &cap, sh);
        }
        if (rc != AKV_OK)
            break;
        if (c)
            rc = c->next(c->ctx);
        else
            rocksdb_iter_next(it);
    }
    if (it) {
        char *err = NULL;
        rocksdb_iter_get_error(it, &err);
        rocksdb_iter_destroy(it);
        if (err) {
            rocksdb_free(err);
            rc = AKV_EIO;
        }
    }
    if (rc == AKV_OK) {
        akvi_sort(v, n, sizeof *v, akvi_hash_cmp_ptr);
        for (size_t i = 0; i < n && rc == AKV_OK; i++)
            rc = fn(arg, v[i]);
    }
    free(v);
    return rc;
}

akv_revmap *akvi_rocksrevmap_init(akvi_rocksrevmap *m)
{
    m->rm.scan = scan;
    m->rm.ctx = m;
    return &m->rm;
}
