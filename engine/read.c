/*
 * read.c — the read path (docs/design.md, "Read path"): pin a
 * version; memtables newest first behind the guard; then for each run
 * exactly one SST (akvi_find_sst), its slot first, RocksDB only on a
 * "maybe". The first component holding the key decides: PUT returns the
 * value, DEL ends the search. A probe that finds nothing is a false
 * positive of the slot that let it through, and is fed back to that slot.
 * A value is copied for akv_get, or handed over without a copy for
 * akv_get_pinned (RocksDB's pinned slice, with the version it was found in).
 */
#include <stdlib.h>
#include <string.h>

#include "engine/internal.h"
#include "engine/runstore.h"

enum { LK_MISSING, LK_PUT, LK_DEL };

typedef struct get_ctx {
    akv_get_info info;
    void **val;
    size_t *vlen;
    rocksdb_pinnableslice_t **pin; /* akv_get_pinned: keep RocksDB's slice instead of copying */
    akvi_rs_val *rpin;             /* akv_get_pinned: or the run file's block */
    const void *key;               /* the user key, for the adaptation rule */
    size_t klen;
    uint64_t filtered, fps, adaptations; /* added to this thread's counters at the end */
    bool pinned;                         /* by hazard: the guard is read without its lock */
    bool perf;                           /* reads_before taken: a probe went to RocksDB */
    uint64_t reads_before;
} get_ctx;

/* A stored value: LK_PUT (copied into g->val when asked) or LK_DEL, or a
 * negative error. */
static int take_value(const uint8_t *v, size_t len, get_ctx *g)
{
    if (len == 0 || (v[0] != AKVI_TAG_PUT && v[0] != AKVI_TAG_DEL))
        return akvi_err(AKV_ECORRUPT, "stored value has no valid tag");
    if (v[0] == AKVI_TAG_DEL)
        return LK_DEL;
    if (g->val) {
        *g->val = malloc(len > 1 ? len - 1 : 1);
        if (!*g->val)
            return akvi_err(AKV_ENOMEM, "out of memory copying a value");
        memcpy(*g->val, v + 1, len - 1);
        if (g->vlen)
            *g->vlen = len - 1;
    }
    return LK_PUT;
}

/* Probe one SST file of a run; as lookup below, the block it was found in
 * handed over in g->rpin. */
static int lookup_file(akvi_rs_sst *f, const uint8_t *ik, size_t iklen, get_ctx *g)
{
    akvi_rs_val rv;
    int rc = akvi_rs_get(f, ik, iklen, &rv);
    if (rc == AKV_NOTFOUND)
        return LK_MISSING;
    if (rc != AKV_OK)
        return rc;
    rc = take_value(rv.v, rv.len, g);
    if (rc == LK_PUT && g->rpin) {
        *g->rpin = rv;
        return rc;
    }
    akvi_rs_val_release(&rv);
    return rc;
}

/* Probe one column family; LK_* or a negative error. A value found is
 * copied into g->val, or its slice handed over in g->pin. */
static int lookup(akv_db *db, rocksdb_column_family_handle_t *cf, const uint8_t *ik, size_t iklen, get_ctx *g)
{
    char *err = NULL;
    rocksdb_pinnableslice_t *ps =
        rocksdb_get_pinned_cf(db->rk.rdb, db->rk.ro, cf, (const char *)ik, iklen, &err);
    if (err)
        return akvi_rocks_err(err, "reading");
    if (!ps)
        return LK_MISSING;
    size_t len;
    const uint8_t *v = (const uint8_t *)rocksdb_pinnableslice_value(ps, &len);
    int rc = take_value(v, len, g);
    if (rc == LK_PUT && g->pin) {
        *g->pin = ps;
        return rc;
    }
    rocksdb_pinnableslice_destroy(ps);
    return rc;
}

/* RocksDB's perf context is read only when a probe goes to RocksDB: a get
 * that every filter answered never touches it. A run's SST is read
 * through its file when the run has its readers (f), else through its
 * family. */
static int probe(akv_db *db, rocksdb_column_family_handle_t *cf, akvi_rs_sst *f, const uint8_t *ik,
                 size_t iklen, get_ctx *g)
{
    if (!g->perf) {
        g->perf = true;
        g->reads_before = akvi_thread_block_reads();
    }
    g->info.probes++;
    return f ? lookup_file(f, ik, iklen, g) : lookup(db, cf, ik, iklen, g);
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
        if (!atomic_load_explicit(&m->written, memory_order_acquire))
            continue; /* empty: nothing to find, no filter to check */
        if (db->policy.mem)
            g->info.slots_checked++;
        if (!akvi_guard_may_contain(db, m, h, g->pinned)) {
            g->filtered++;
            continue;
        }
        g->info.mem_probes++;
        int rc = probe(db, m->cf, NULL, ik, iklen, g);
        if (rc != LK_MISSING)
            return rc;
        g->info.wasted_probes++;
        g->info.mem_wasted++;
        if (db->policy.mem) {
            atomic_fetch_add_explicit(&akvi_slot_ctr_of(&db->guard.stats)->fps, 1, memory_order_relaxed);
            g->fps++;
        }
    }
    if (g->info.mem_wasted > 0)
        akvi_guard_absorb(db, h); /* no memtable holds the key */
    /* The last L0 front asked and its answer: each front once per get, its
     * runs skipped together when it says no (l0front.c). */
    const akvi_front *front = NULL;
    bool front_yes = true, have_fx = false;
    uint64_t fx = 0;
    for (size_t i = 0, end; i < v->n_run; i = end) {
        /* L0 runs one by one; a deeper level's one run by its range. */
        uint32_t level = v->runs[i]->info.level;
        for (end = i + 1; level > 0 && end < v->n_run && v->runs[end]->info.level == level; end++)
            ;
        long at = level == 0 ? 0 : akvi_find_run(v->runs + i, end - i, ik, iklen);
        if (at < 0)
            continue;
        akvi_run *r = v->runs[i + (size_t)at];
        if (r->front) {
            if (r->front != front) {
                front = r->front;
                if (!have_fx) {
                    fx = akvi_front_key(h);
                    have_fx = true;
                }
                front_yes = akvi_front_may_contain(front, fx);
                g->info.slots_checked++;
                g->filtered += !front_yes;
            }
            if (!front_yes)
                continue;
        }
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
        int rc = probe(db, r->cf, r->files ? r->files[j] : NULL, ik, iklen, g);
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

/* One lookup. *keep: NULL, or where the version goes when a value is found
 * (pinned by refcount, released by the caller) instead of being released
 * here. */
static int get(akv_db *db, const void *key, size_t klen, get_ctx *g, akvi_version **keep)
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
    g->key = key;
    g->klen = klen;
    /* A value kept past the call needs its version kept too: by refcount,
     * since the hazard pin is the thread's one and ends with the call. */
    int tok = -1;
    akvi_version *v = keep ? akvi_current(db) : akvi_pin(db, &tok);
    g->pinned = tok >= 0;
    rc = search(db, v, h, ik, iklen, g);
    if (keep && rc == LK_PUT)
        *keep = v;
    else
        akvi_unpin(db, v, tok);
    if (g->perf)
        g->info.block_reads = akvi_thread_block_reads() - g->reads_before;
    if (ik != stackbuf)
        free(ik);
    /* This thread's counters only (threadslot.h, stats.h). */
    akvi_rstats *st = akvi_rstats_of(db);
    akvi_ctr_add(&st->gets, 1);
    akvi_ctr_add(&st->slot_queries, g->info.slots_checked);
    akvi_ctr_add(&st->slot_filtered, g->filtered);
    akvi_ctr_add(&st->probes, g->info.probes);
    akvi_ctr_add(&st->wasted_probes, g->info.wasted_probes);
    akvi_ctr_add(&st->false_positives, g->fps);
    akvi_ctr_add(&st->adaptations, g->adaptations);
    akvi_ctr_add(&st->block_reads, g->info.block_reads);
    if (rc == LK_PUT)
        return AKV_OK;
    if (rc < 0)
        return rc;
    akvi_ctr_add(&st->negative_lookups, 1);
    akvi_misslog_negative(db->ml, h, key, klen, g->info.wasted_probes);
    return AKV_NOTFOUND;
}

int akv_get_ex(akv_db *db, const void *key, size_t klen, void **val, size_t *vlen, akv_get_info *info)
{
    get_ctx g = {.val = val, .vlen = vlen};
    int rc = get(db, key, klen, &g, NULL);
    if (info)
        *info = g.info;
    return rc;
}

/* A value read without a copy: RocksDB's pinned slice (a block-cache block,
 * or its own copy of a memtable value) or the run file's block, and the
 * version it was found in, so that its run is not dropped before the
 * caller lets go. */
struct akv_pinned {
    rocksdb_pinnableslice_t *ps; /* NULL: rv */
    akvi_rs_val rv;
    akvi_version *v;
};

int akv_get_pinned(akv_db *db, const void *key, size_t klen, akv_pinned **out)
{
    if (!out)
        return akvi_err(AKV_EINVAL, "akv_get_pinned: NULL argument");
    *out = NULL;
    akv_pinned *p = calloc(1, sizeof *p);
    if (!p)
        return akvi_err(AKV_ENOMEM, "out of memory");
    get_ctx g = {.pin = &p->ps, .rpin = &p->rv};
    int rc = get(db, key, klen, &g, &p->v);
    if (rc != AKV_OK) {
        free(p);
        return rc;
    }
    *out = p;
    return AKV_OK;
}

const void *akv_pinned_value(const akv_pinned *p, size_t *vlen)
{
    if (!p) {
        if (vlen)
            *vlen = 0;
        return NULL;
    }
    size_t len;
    const char *v;
    if (p->ps) {
        v = rocksdb_pinnableslice_value(p->ps, &len);
    } else {
        v = (const char *)p->rv.v;
        len = p->rv.len;
    }
    if (vlen)
        *vlen = len - 1; /* the tag byte, checked by lookup */
    return v + 1;
}

void akv_pinned_release(akv_pinned *p)
{
    if (!p)
        return;
    if (p->ps)
        rocksdb_pinnableslice_destroy(p->ps);
    else
        akvi_rs_val_release(&p->rv);
    akvi_version_unref(p->v);
    free(p);
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
