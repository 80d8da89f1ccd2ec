/*
 * db.c — options, key encoding, the write path and the read path.
 *
 * Read path (DESIGN §4): pin a version; memtables newest first behind the
 * guard; then for each run exactly one SST (the one whose range or hash
 * prefix holds the key), its slot first, RocksDB only on a "maybe". The
 * first component holding the key decides: PUT returns the value, DEL ends
 * the search. A probe that finds nothing is a false positive of the slot
 * that let it through, and is fed back to that slot.
 */
#include <stdlib.h>
#include <string.h>

#include "engine/internal.h"

void akv_options_init(akv_options *opt)
{
    memset(opt, 0, sizeof *opt);
    opt->layout = AKV_LAYOUT_HASH;
    opt->bits_per_key = 10;
    opt->memtable_bytes = 64u << 20;
    opt->block_cache_bytes = 64u << 20;
    opt->sst_target_bytes = 64u << 20;
    opt->miss_log_bytes = 1u << 20;
    opt->l0_compaction_trigger = 4;
    opt->l0_stall_runs = 8;
    opt->level_multiplier = 10;
    opt->create_if_missing = 1;
}

/* ---- keys ---------------------------------------------------------------- */

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

/* ---- write path ---------------------------------------------------------- */

/* Under wmu: wait while the background thread is behind. */
static int stall(akv_db *db)
{
    bool counted = false;
    for (;;) {
        akvi_version *v = akvi_current(db);
        bool behind = akvi_runs_at_level(v, 0) >= (size_t)db->opt.l0_stall_runs || v->n_mem > 3;
        akvi_version_unref(v);
        if (!behind)
            return AKV_OK;
        pthread_mutex_lock(&db->bgmu);
        int err = db->bg_error;
        bool down = db->shutdown;
        pthread_mutex_unlock(&db->bgmu);
        if (err || down)
            return akvi_err(err ? err : AKV_EBUSY, "background flush/compaction failed; writes are stopped");
        if (!counted) {
            atomic_fetch_add(&db->st.write_stalls, 1);
            counted = true;
        }
        akvi_bg_wake(db);
        pthread_cond_wait(&db->stall_cv, &db->wmu);
    }
}

static int apply_locked(akv_db *db, const akvi_op *ops, size_t n, bool sync)
{
    int rc = stall(db);
    if (rc != AKV_OK)
        return rc;
    akvi_version *v = akvi_current(db);
    akvi_mem *m = v->mems[0];
    rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
    uint8_t stackbuf[256];
    uint64_t bytes = 0;
    for (size_t i = 0; i < n; i++) {
        const akvi_op *op = &ops[i];
        akv_hash h = akv_hash_key(op->key, op->klen, db->seed);
        uint8_t *ik = op->klen + 8 <= sizeof stackbuf ? stackbuf : malloc(op->klen + 8);
        if (!ik) {
            rc = akvi_err(AKV_ENOMEM, "out of memory");
            break;
        }
        size_t iklen = akvi_ikey(db, h, op->key, op->klen, ik);
        /* The guard learns the key before RocksDB can show it to a reader. */
        akvi_guard_insert(db, m, h);
        const char *kp[1] = {(const char *)ik};
        size_t ks[1] = {iklen};
        const char *vp[2] = {(const char *)&op->tag, (const char *)op->val};
        size_t vs[2] = {1, op->tag == AKVI_TAG_PUT ? op->vlen : 0};
        rocksdb_writebatch_putv_cf(wb, m->cf, 1, kp, ks, 2, vp, vs);
        bytes += iklen + 1 + vs[1];
        if (ik != stackbuf)
            free(ik);
    }
    char *err = NULL;
    if (rc == AKV_OK)
        rocksdb_write(db->rdb, sync ? db->wo_sync : db->wo, wb, &err);
    rocksdb_writebatch_destroy(wb);
    if (err)
        rc = akvi_rocks_err(err, "writing to the memtable");
    if (rc == AKV_OK) {
        atomic_fetch_add(&m->bytes, bytes);
        atomic_fetch_add(&m->entries, n);
        if (atomic_load(&m->bytes) >= db->opt.memtable_bytes)
            rc = akvi_rotate(db);
    }
    akvi_version_unref(v);
    return rc;
}

int akvi_write_ops(akv_db *db, const akvi_op *ops, size_t n, bool sync)
{
    pthread_mutex_lock(&db->wmu);
    int rc = apply_locked(db, ops, n, sync);
    pthread_mutex_unlock(&db->wmu);
    if (rc == AKV_OK)
        for (size_t i = 0; i < n; i++) {
            atomic_fetch_add(ops[i].tag == AKVI_TAG_PUT ? &db->st.puts : &db->st.deletes, 1);
            atomic_fetch_add(&db->st.bytes_written_user, ops[i].klen + ops[i].vlen);
        }
    return rc;
}

int akv_put(akv_db *db, const void *key, size_t klen, const void *val, size_t vlen)
{
    if (!db || !key || (!val && vlen))
        return akvi_err(AKV_EINVAL, "akv_put: NULL argument");
    int rc = akvi_check_key(klen);
    if (rc == AKV_OK)
        rc = akvi_check_value(vlen);
    if (rc != AKV_OK)
        return rc;
    akvi_op op = {AKVI_TAG_PUT, key, val ? val : (const void *)"", klen, vlen};
    return akvi_write_ops(db, &op, 1, db->opt.sync);
}

int akv_delete(akv_db *db, const void *key, size_t klen)
{
    if (!db || !key)
        return akvi_err(AKV_EINVAL, "akv_delete: NULL argument");
    int rc = akvi_check_key(klen);
    if (rc != AKV_OK)
        return rc;
    akvi_op op = {AKVI_TAG_DEL, key, (const uint8_t *)"", klen, 0};
    return akvi_write_ops(db, &op, 1, db->opt.sync);
}

/* ---- read path ----------------------------------------------------------- */

static pthread_key_t g_perf_key;
static pthread_once_t g_perf_once = PTHREAD_ONCE_INIT;
static _Thread_local rocksdb_perfcontext_t *t_perf;

static void perf_free(void *p)
{
    rocksdb_perfcontext_destroy(p);
}
static void perf_key_init(void)
{
    pthread_key_create(&g_perf_key, perf_free);
}

/* RocksDB's perf context is per thread; enable counting once per thread. */
static rocksdb_perfcontext_t *perf(void)
{
    if (!t_perf) {
        pthread_once(&g_perf_once, perf_key_init);
        rocksdb_set_perf_level(rocksdb_enable_count);
        t_perf = rocksdb_perfcontext_create();
        pthread_setspecific(g_perf_key, t_perf);
    }
    return t_perf;
}

uint64_t akvi_thread_block_reads(void)
{
    return rocksdb_perfcontext_metric(perf(), rocksdb_block_read_count);
}

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

long akvi_find_sst(const akv_db *db, const akvi_run *r, akv_hash h, const uint8_t *ikey, size_t iklen)
{
    const akvi_cat_run *ri = &r->info;
    size_t lo = 0, hi = ri->n_sst;
    if (db->layout == AKV_LAYOUT_HASH) {
        uint64_t p = ri->prefix_bits ? h.hi >> (64 - ri->prefix_bits) : 0;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (ri->ssts[mid].prefix < p)
                lo = mid + 1;
            else
                hi = mid;
        }
        return (lo < ri->n_sst && ri->ssts[lo].prefix == p) ? (long)lo : -1;
    }
    /* Last SST whose smallest key is <= ikey; then check its largest. */
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        const akvi_cat_sst *s = &ri->ssts[mid];
        size_t n = s->smallest_len < iklen ? s->smallest_len : iklen;
        int c = memcmp(s->smallest, ikey, n);
        if (c < 0 || (c == 0 && s->smallest_len <= iklen))
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return -1;
    const akvi_cat_sst *s = &ri->ssts[lo - 1];
    size_t n = s->largest_len < iklen ? s->largest_len : iklen;
    int c = memcmp(ikey, s->largest, n);
    if (c > 0 || (c == 0 && iklen > s->largest_len))
        return -1;
    return (long)(lo - 1);
}

typedef struct get_ctx {
    akv_get_info info;
    void **val;
    size_t *vlen;
} get_ctx;

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
        if (!akvi_guard_may_contain(db, m, h)) {
            atomic_fetch_add_explicit(&db->st.slot_filtered, 1, memory_order_relaxed);
            continue;
        }
        g->info.probes++;
        int rc = lookup(db, m->cf, ik, iklen, g->val, g->vlen);
        if (rc != LK_MISSING)
            return rc;
        g->info.wasted_probes++;
        if (db->policy.mem) {
            atomic_fetch_add_explicit(&db->guard_stats.fps, 1, memory_order_relaxed);
            atomic_fetch_add(&db->st.false_positives, 1);
        }
    }
    if (g->info.wasted_probes > 0)
        akvi_guard_absorb(db, h); /* no memtable holds the key */
    for (size_t i = 0; i < v->n_run; i++) {
        akvi_run *r = v->runs[i];
        long j = akvi_find_sst(db, r, h, ik, iklen);
        if (j < 0)
            continue;
        akvi_slot *s = &r->slots[j];
        akv_hash sh = akvi_slot_hash(h, db->layout == AKV_LAYOUT_HASH ? r->info.prefix_bits : 0);
        g->info.slots_checked++;
        if (!akvi_slot_may_contain(s, sh)) {
            atomic_fetch_add_explicit(&db->st.slot_filtered, 1, memory_order_relaxed);
            continue;
        }
        g->info.probes++;
        atomic_fetch_add_explicit(&s->probes, 1, memory_order_relaxed);
        int rc = lookup(db, r->cf, ik, iklen, g->val, g->vlen);
        if (rc != LK_MISSING)
            return rc;
        g->info.wasted_probes++;
        atomic_fetch_add_explicit(&s->fps, 1, memory_order_relaxed);
        atomic_fetch_add(&db->st.false_positives, 1);
        if (adaptive(s) && akvi_adapt_slot(db, r, (size_t)j, sh) == AKV_OK) {
            atomic_fetch_add_explicit(&s->adaptations, 1, memory_order_relaxed);
            atomic_fetch_add(&db->st.adaptations, 1);
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
    rocksdb_perfcontext_t *pc = perf();
    rocksdb_perfcontext_reset(pc);
    get_ctx g = {{0}, val, vlen};
    akvi_version *v = akvi_current(db);
    rc = search(db, v, h, ik, iklen, &g);
    akvi_version_unref(v);
    g.info.block_reads = rocksdb_perfcontext_metric(pc, rocksdb_block_read_count);
    if (ik != stackbuf)
        free(ik);
    atomic_fetch_add(&db->st.gets, 1);
    atomic_fetch_add(&db->st.slot_queries, g.info.slots_checked);
    atomic_fetch_add(&db->st.probes, g.info.probes);
    atomic_fetch_add(&db->st.wasted_probes, g.info.wasted_probes);
    atomic_fetch_add(&db->st.block_reads, g.info.block_reads);
    if (info)
        *info = g.info;
    if (rc == LK_PUT)
        return AKV_OK;
    if (rc < 0)
        return rc;
    atomic_fetch_add(&db->st.negative_lookups, 1);
    akvi_misslog_record(db->ml, h, key, klen, g.info.wasted_probes);
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
