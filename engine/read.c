/*
 * read.c — the read path (docs/design.md, "Read path"): pin a
 * version; memtables newest first behind the guard; then for each run
 * exactly one SST (akvi_find_sst), its slot first, RocksDB only on a
 * "maybe". The first component holding the key decides: PUT returns the
 * value, DEL ends the search. A probe that finds nothing is a false
 * positive of the slot that let it through, and is fed back to that slot.
 */
#include <stdlib.h>
#include <string.h>

#include "engine/internal.h"

enum { LK_MISSING, LK_PUT, LK_DEL };

/* Probe one column family; LK_* or a negative error. */
static int lookup(akv_db *db, rocksdb_column_family_handle_t *cf, const uint8_t *ik, size_t iklen, void **val,
                  size_t *vlen)
{
    char *err = NULL;
    rocksdb_pinnableslice_t *ps = rocksdb_get_pinned_cf(db->rdb, db->ro, cf, (const char *)ik, iklen, &err);
    if (err)
        return akvi_rocks_err(err, "reading");
    if (!ps)
        return LK_MISSING;
    size_t len;
    const uint8_t *v = (const uint8_t *)rocksdb_pinnableslice_value(ps, &len);
    int rc;
    if (len == 0 || (v[0] != AKVI_TAG_PUT && v[0] != AKVI_TAG_DEL)) {
        rc = akvi_err(AKV_ECORRUPT, "stored value has no valid tag");
    } else if (v[0] == AKVI_TAG_DEL) {
        rc = LK_DEL;
    } else {
        rc = LK_PUT;
        if (val) {
            *val = malloc(len > 1 ? len - 1 : 1);
            if (*val) {
                memcpy(*val, v + 1, len - 1);
                if (vlen)
                    *vlen = len - 1;
            } else {
                rc = akvi_err(AKV_ENOMEM, "out of memory copying a value");
            }
        }
    }
    rocksdb_pinnableslice_destroy(ps);
    return rc;
}

typedef struct get_ctx {
    akv_get_info info;
    void **val;
    size_t *vlen;
    const void *key; /* the user key, for the adaptation rule */
    size_t klen;
    uint64_t filtered, fps, adaptations; /* added to this thread's counters at the end */
    bool pinned;                         /* by hazard: the guard is read without its lock */
    bool perf;                           /* reads_before taken: a probe went to RocksDB */
    uint64_t reads_before;
} get_ctx;

/* RocksDB's perf context is read only when a probe goes to RocksDB: a get
 * that every filter answered never touches it. */
static int probe(akv_db *db, rocksdb_column_family_handle_t *cf, const uint8_t *ik, size_t iklen, get_ctx *g)
{
    if (!g->perf) {
        g->perf = true;
        g->reads_before = akvi_thread_block_reads();
    }
    g->info.probes++;
    return lookup(db, cf, ik, iklen, g->val, g->vlen);
}

static bool adaptive(const akvi_slot *s)
{
    return s->f && (s->f->kind->flags & AKV_FK_ADAPTIVE) && s->f->kind->adapt;
}

/* Search memtables then runs; LK_* or a negative error. */
static int search(akv_db *db, akvi_version *v, akv_hash h, const uint8_t *ik, size_t iklen, get_ctx *g)
{
    for (size_t i = 0; i < v->n_mem; i++) {
        akvi_mem *m = v->mems[i];
        if (db->policy.mem)
            g->info.slots_checked++;
        if (!akvi_guard_may_contain(db, m, h, g->pinned)) {
            g->filtered++;
            continue;
        }
        g->info.mem_probes++;
        int rc = probe(db, m->cf, ik, iklen, g);
        if (rc != LK_MISSING)
            return rc;
        g->info.wasted_probes++;
        g->info.mem_wasted++;
        if (db->policy.mem) {
            atomic_fetch_add_explicit(&akvi_slot_ctr_of(&db->guard_stats)->fps, 1, memory_order_relaxed);
            g->fps++;
        }
    }
    if (g->info.mem_wasted > 0)
        akvi_guard_absorb(db, h); /* no memtable holds the key */
    for (size_t i = 0, end; i < v->n_run; i = end) {
        /* L0 runs one by one; a deeper level's one run by its range. */
        uint32_t level = v->runs[i]->info.level;
        for (end = i + 1; level > 0 && end < v->n_run && v->runs[end]->info.level == level; end++)
            ;
        long at = level == 0 ? 0 : akvi_find_run(v->runs + i, end - i, ik, iklen);
        if (at < 0)
            continue;
        akvi_run *r = v->runs[i + (size_t)at];
        long j = akvi_find_sst(db, &r->info, h, ik, iklen);
        if (j < 0)
            continue;
        akvi_slot *s = &r->slots[j];
        akv_hash sh = akvi_run_slot_hash(db, &r->info, h);
        g->info.slots_checked++;
        akvi_slot_ctr *c = akvi_slot_ctr_of(s);
        if (!akvi_slot_may_contain(s, c, sh)) {
            g->filtered++;
            continue;
        }
        atomic_fetch_add_explicit(&c->probes, 1, memory_order_relaxed);
        int rc = probe(db, r->cf, ik, iklen, g);
        if (rc != LK_MISSING)
            return rc;
        g->info.wasted_probes++;
        atomic_fetch_add_explicit(&c->fps, 1, memory_order_relaxed);
        g->fps++;
        if (adaptive(s) && akvi_adapt_pays(db, h, g->key, g->klen) &&
            akvi_adapt_slot(db, r, (size_t)j, sh) == AKV_OK) {
            atomic_fetch_add_explicit(&c->adaptations, 1, memory_order_relaxed);
            g->adaptations++;
        }
    }
    return LK_MISSING;
}

int akv_get_ex(akv_db *db, const void *key, size_t klen, void **val, size_t *vlen, akv_get_info *info)
{
    if (!db || !key)
        return akvi_err(AKV_EINVAL, "akv_get: NULL argument");
    int rc = akvi_check_key(klen);
    if (rc != AKV_OK)
        return rc;
    akv_hash h = akv_hash_key(key, klen, db->seed);
    uint8_t stackbuf[512];
    uint8_t *ik = klen + 8 <= sizeof stackbuf ? stackbuf : malloc(klen + 8);
    if (!ik)
        return akvi_err(AKV_ENOMEM, "out of memory");
    size_t iklen = akvi_ikey(db, h, key, klen, ik);
    get_ctx g = {.val = val, .vlen = vlen, .key = key, .klen = klen};
    int tok;
    akvi_version *v = akvi_pin(db, &tok);
    g.pinned = tok >= 0;
    rc = search(db, v, h, ik, iklen, &g);
    akvi_unpin(db, v, tok);
    if (g.perf)
        g.info.block_reads = akvi_thread_block_reads() - g.reads_before;
    if (ik != stackbuf)
        free(ik);
    /* This thread's counters only (internal.h, "thread slots"). */
    akvi_rstats *st = akvi_rstats_of(db);
    akvi_ctr_add(&st->gets, 1);
    akvi_ctr_add(&st->slot_queries, g.info.slots_checked);
    akvi_ctr_add(&st->slot_filtered, g.filtered);
    akvi_ctr_add(&st->probes, g.info.probes);
    akvi_ctr_add(&st->wasted_probes, g.info.wasted_probes);
    akvi_ctr_add(&st->false_positives, g.fps);
    akvi_ctr_add(&st->adaptations, g.adaptations);
    akvi_ctr_add(&st->block_reads, g.info.block_reads);
    if (info)
        *info = g.info;
    if (rc == LK_PUT)
        return AKV_OK;
    if (rc < 0)
        return rc;
    akvi_ctr_add(&st->negative_lookups, 1);
    akvi_misslog_negative(db->ml, h, key, klen, g.info.wasted_probes);
    return AKV_NOTFOUND;
}

int akv_get(akv_db *db, const void *key, size_t klen, void **val, size_t *vlen)
{
    return akv_get_ex(db, key, klen, val, vlen, NULL);
}

int akv_hint_negative(akv_db *db, const void *key, size_t klen, double cost)
{
    if (!db || !key)
        return akvi_err(AKV_EINVAL, "akv_hint_negative: NULL argument");
    int rc = akvi_check_key(klen);
    if (rc != AKV_OK)
        return rc;
    if (!(cost >= 0))
        return akvi_err(AKV_EINVAL, "negative cost %g; costs are >= 0", cost);
    akvi_misslog_hint(db->ml, akv_hash_key(key, klen, db->seed), key, klen, cost);
    return AKV_OK;
}
