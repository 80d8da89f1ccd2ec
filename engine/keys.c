/*
 * keys.c — keys: limits, the internal key of each layout, and the one
 * answer to "which SST of a run holds this key".
 *
 * Hash layout: internal key BE64(h.hi) ‖ user key; a run's SSTs are shards
 * of the top prefix_bits of h.hi. Ordered layout: the internal key is the
 * user key; a run's SSTs are disjoint key ranges (docs/design.md).
 */
#include <string.h>

#include "engine/internal.h"
#include "util/order.h"

int akvi_check_key(size_t klen)
{
    if (klen == 0)
        return akvi_err(AKV_EINVAL, "key is empty; keys are 1 to %u bytes", AKV_MAX_KEY_BYTES);
    if (klen > AKV_MAX_KEY_BYTES)
        return akvi_err(AKV_EINVAL, "key is %zu bytes; the limit is %u", klen, AKV_MAX_KEY_BYTES);
    return AKV_OK;
}

int akvi_check_value(size_t vlen)
{
    if (vlen > AKV_MAX_VALUE_BYTES)
        return akvi_err(AKV_EINVAL, "value is %zu bytes; the limit is %u", vlen, AKV_MAX_VALUE_BYTES);
    return AKV_OK;
}

size_t akvi_ikey(const akv_db *db, akv_hash h, const void *key, size_t klen, uint8_t *buf)
{
    if (db->layout == AKV_LAYOUT_ORDERED) {
        memcpy(buf, key, klen);
        return klen;
    }
    akvi_be64(buf, h.hi);
    memcpy(buf + 8, key, klen);
    return klen + 8;
}

const uint8_t *akvi_ukey(const akv_db *db, const uint8_t *ikey, size_t iklen, size_t *klen)
{
    if (db->layout == AKV_LAYOUT_ORDERED || iklen < 8) {
        *klen = iklen;
        return ikey;
    }
    *klen = iklen - 8;
    return ikey + 8;
}

akv_hash akvi_run_slot_hash(const akv_db *db, const akvi_cat_run *r, akv_hash h)
{
    return akvi_slot_hash(h, db->layout == AKV_LAYOUT_HASH ? r->prefix_bits : 0);
}

bool akvi_sst_covers(const akv_db *db, const akvi_cat_run *r, const akvi_cat_sst *s, akv_hash h,
                     const uint8_t *ikey, size_t iklen)
{
    if (db->layout == AKV_LAYOUT_HASH)
        return akvi_shard_of(h, r->prefix_bits) == s->prefix;
    return akvi_bytes_cmp(ikey, iklen, s->smallest, s->smallest_len) >= 0 &&
           akvi_bytes_cmp(ikey, iklen, s->largest, s->largest_len) <= 0;
}

bool akvi_sst_holds_user_key(void *ref, akv_hash h, const void *ukey, size_t klen)
{
    const akvi_sst_ref *r = ref;
    return akvi_sst_covers(r->db, r->run, r->sst, h, ukey, klen);
}

long akvi_find_sst(const akv_db *db, const akvi_cat_run *r, akv_hash h, const uint8_t *ikey, size_t iklen)
{
    size_t lo = 0, hi = r->n_sst;
    if (db->layout == AKV_LAYOUT_HASH) { /* first SST whose shard is >= the key's */
        uint64_t p = akvi_shard_of(h, r->prefix_bits);
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (r->ssts[mid].prefix < p)
                lo = mid + 1;
            else
                hi = mid;
        }
    } else { /* the last SST whose smallest key is <= ikey */
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (akvi_bytes_cmp(r->ssts[mid].smallest, r->ssts[mid].smallest_len, ikey, iklen) <= 0)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo == 0)
            return -1;
        lo--;
    }
    return lo < r->n_sst && akvi_sst_covers(db, r, &r->ssts[lo], h, ikey, iklen) ? (long)lo : -1;
}

long akvi_find_run(akvi_run *const *runs, size_t n, const uint8_t *ikey, size_t iklen)
{
    size_t lo = 0, hi = n; /* the last run whose smallest key is <= ikey */
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        const akvi_cat_sst *first = &runs[mid]->info.ssts[0];
        if (akvi_bytes_cmp(first->smallest, first->smallest_len, ikey, iklen) <= 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return -1;
    const akvi_cat_run *r = &runs[lo - 1]->info;
    const akvi_cat_sst *last = &r->ssts[r->n_sst - 1];
    return akvi_bytes_cmp(ikey, iklen, last->largest, last->largest_len) <= 0 ? (long)(lo - 1) : -1;
}
