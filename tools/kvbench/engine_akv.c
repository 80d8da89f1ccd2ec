/*
 * engine_akv.c — adaptkv behind the bench's engine vtable. Per-lookup cost
 * comes straight from akv_get_ex (slots checked, probes, wasted probes,
 * RocksDB block reads), which is also the attacker's side channel.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adaptkv/adaptkv.h"
#include "tools/kvbench/kvbench.h"

/* The engine's notes (effective slot policy) and warnings, one per line. */
static void engine_log(void *arg, const char *msg)
{
    (void)arg;
    fprintf(stderr, "adaptkv: %s\n", msg);
}

static int a_open(akv_kb_engine *e, const akv_kb_cfg *c, char *err, size_t n)
{
    akv_options o;
    akv_options_init(&o);
    o.layout = c->ordered ? AKV_LAYOUT_ORDERED : AKV_LAYOUT_HASH;
    o.slot_policy = c->policy;
    o.bits_per_key = c->bits_per_key;
    o.memtable_bytes = c->memtable_bytes;
    if (c->sst_target_bytes)
        o.sst_target_bytes = c->sst_target_bytes;
    if (c->l0_trigger) { /* the stop and the slowdown follow it up */
        o.l0_compaction_trigger = c->l0_trigger;
        if (o.l0_stall_runs < 2 * c->l0_trigger)
            o.l0_stall_runs = 2 * c->l0_trigger;
    }
    if (c->miss_log_bytes)
        o.miss_log_bytes = c->miss_log_bytes;
    if (c->grown_share_set)
        o.grown_filter_share = c->grown_share;
    o.block_cache_bytes = c->cache_bytes;
    o.direct_reads = c->direct_reads;
    if (c->rest_compaction >= 0)
        o.rest_compaction = c->rest_compaction;
    if (c->no_l0_front)
        o.l0_front = 0;
    o.sync = c->sync;
    o.seed = c->seed;
    o.log = engine_log;
    akv_db *db = NULL;
    int rc = akv_open(c->dir, &o, &db);
    if (rc != AKV_OK) {
        snprintf(err, n, "akv_open %s: %s (%s)", c->dir, akv_errmsg(), akv_strerror(rc));
        return -1;
    }
    e->db = db;
    snprintf(e->label, sizeof e->label, "adaptkv %s %s%s", c->ordered ? "ordered" : "hash",
             c->policy ? c->policy : "default", c->no_l0_front ? " no-l0-front" : "");
    return 0;
}

static void a_close(akv_kb_engine *e)
{
    akv_close(e->db);
    e->db = NULL;
}

static int a_read(akv_kb_engine *e, void *t, const char *k, size_t kn, akv_kb_cost *c)
{
    (void)t;
    akv_get_info info = {0};
    void *v = NULL;
    size_t vlen = 0;
    int rc = akv_get_ex(e->db, k, kn, &v, &vlen, &info);
    akv_free(v);
    /* SST probes only, as RocksDB's side counts them; memtable probes
     * (the guard's false positives) apart. */
    c->probes = info.probes - info.mem_probes;
    c->wasted = info.wasted_probes - info.mem_wasted;
    c->mem_wasted = info.mem_wasted;
    c->filters = info.slots_checked;
    c->block_reads = info.block_reads;
    return rc == AKV_OK ? AKV_KB_FOUND : rc == AKV_NOTFOUND ? AKV_KB_NOTFOUND : rc;
}

static int a_write(akv_kb_engine *e, void *t, const char *k, size_t kn, const char *v, size_t vn)
{
    (void)t;
    return akv_put(e->db, k, kn, v, vn);
}

static int a_remove(akv_kb_engine *e, void *t, const char *k, size_t kn)
{
    (void)t;
    int rc = akv_delete(e->db, k, kn);
    return rc == AKV_NOTFOUND ? 0 : rc;
}

static int a_scan(akv_kb_engine *e, void *t, const char *k, size_t kn, uint32_t count, akv_kb_cost *c)
{
    (void)t;
    if (akv_db_layout(e->db) != AKV_LAYOUT_ORDERED) /* hash order is no key range */
        return AKV_KB_ENOTSUP;
    akv_iter *it = NULL;
    int rc = akv_iter_create(e->db, &it);
    if (rc != AKV_OK)
        return rc;
    int seen = 0;
    for (akv_iter_seek(it, k, kn); seen < (int)count && akv_iter_valid(it); akv_iter_next(it)) {
        size_t vl;
        (void)akv_iter_value(it, &vl);
        seen++;
    }
    rc = akv_iter_status(it);
    c->block_reads = akv_iter_block_reads(it);
    akv_iter_destroy(it);
    return rc == AKV_OK ? seen : rc;
}

/* The hash layout iterates in hash order, which is no key range: YCSB's
 * scans (N records from a key on, in key order) need the ordered layout. */
static bool a_can_scan(akv_kb_engine *e)
{
    return akv_db_layout(e->db) == AKV_LAYOUT_ORDERED;
}

static int a_flush(akv_kb_engine *e)
{
    return akv_flush(e->db);
}

static int a_compact(akv_kb_engine *e)
{
    return akv_compact(e->db);
}

/* The live slots summed per level, and the bits per key of the SST slots
 * alone (the memtable guard comes and goes with the memtables). */
static void slot_levels(akv_db *db, akv_kb_estats *s)
{
    akv_slot_info *rows = NULL;
    size_t n = 0;
    if (akv_slots(db, &rows, &n) != AKV_OK)
        return;
    const int cap = (int)(sizeof s->levels / sizeof s->levels[0]);
    double bits = 0, keys = 0;
    for (size_t i = 0; i < n; i++) {
        const akv_slot_info *r = &rows[i];
        if (r->level >= 0) {
            bits += r->bits_per_key * (double)r->keys;
            keys += (double)r->keys;
        }
        int l = 0;
        while (l < s->n_levels && s->levels[l].level != r->level)
            l++;
        if (l == s->n_levels) {
            if (l == cap)
                continue;
            s->levels[s->n_levels++].level = r->level;
        }
        struct akv_kb_level *v = &s->levels[l];
        v->slots++;
        v->keys += r->keys;
        v->bits += r->bits_per_key * (double)r->keys;
        v->queries += r->queries;
        v->false_positives += r->false_positives;
        v->adaptations += r->adaptations;
    }
    akv_free(rows);
    s->sst_filter_bits_per_key = keys > 0 ? bits / keys : 0;
}

static int a_stats(akv_kb_engine *e, akv_kb_estats *s)
{
    akv_stats st;
    memset(s, 0, sizeof *s);
    int rc = akv_get_stats(e->db, &st);
    if (rc != AKV_OK)
        return rc;
    s->adaptations = st.adaptations;
    s->filter_grows = st.filter_grows;
    snprintf(s->slot_policy, sizeof s->slot_policy, "%s", akv_db_slot_policy(e->db));
    s->filter_refills = st.filter_refills;
    s->filter_bytes = st.filter_bytes;
    s->keys = st.live_keys_estimate;
    s->filter_bits_per_key =
        st.live_keys_estimate ? (double)st.filter_bytes * 8 / (double)st.live_keys_estimate : 0;
    s->guard_bytes = st.guard_filter_bytes;
    s->guard_bytes_avg = st.guard_filter_bytes_avg;
    s->grown_bytes = st.filter_grown_bytes;
    s->budget_bytes = st.filter_budget_bytes;
    slot_levels(e->db, s);
    s->write_amp = st.bytes_written_user ? (double)st.bytes_written_disk / (double)st.bytes_written_user : 0;
    for (int l = 0; st.bytes_written_user && l < AKV_MAX_LEVELS && l < AKV_KB_MAX_LEVELS; l++) {
        s->write_amp_level[l] = (double)st.bytes_written_per_level[l] / (double)st.bytes_written_user;
        if (st.bytes_written_per_level[l])
            s->n_write_amp_levels = l + 1;
    }
    s->write_stalls = st.write_stalls;
    s->write_slowdowns = st.write_slowdowns;
    s->family_ops = st.family_ops;
    s->family_op_seconds = (double)st.family_op_us / 1e6;
    s->family_creates = st.family_creates;
    s->family_drops = st.family_drops;
    s->memtable_empties = st.memtable_empties;
    s->memtable_empty_seconds = (double)st.memtable_empty_us / 1e6;
    s->l0_merges = st.l0_merges;
    s->l0_files = st.runs_per_level[0];
    s->pending_compaction_bytes = st.compaction_debt_bytes;
    return 0;
}

/* Owed: a compaction due (compaction_debt_bytes, which stays above 0
 * until a due compaction has published its output, and is above 0 whenever
 * L0 is deep enough for an L0 merge) or a memtable waiting for the flush
 * (more than the one being written). */
static int a_backlog(akv_kb_engine *e, char *what, size_t n)
{
    akv_stats st;
    int rc = akv_get_stats(e->db, &st);
    if (rc != AKV_OK)
        return rc;
    if (st.compaction_debt_bytes == 0 && st.memtables <= 1)
        return 0;
    snprintf(what, n, "adaptkv: compaction debt %.1f MiB, %u L0 runs, %u memtables",
             (double)st.compaction_debt_bytes / 1048576.0, st.runs_per_level[0], st.memtables);
    return 1;
}

static const char *a_errmsg(akv_kb_engine *e, int rc)
{
    (void)e;
    const char *m = akv_errmsg();
    return m && *m ? m : akv_strerror(rc);
}

int akv_kb_engine_akv(akv_kb_engine *e)
{
    memset(e, 0, sizeof *e);
    e->name = "adaptkv";
    e->open = a_open;
    e->close = a_close;
    e->read = a_read;
    e->write = a_write;
    e->remove = a_remove;
    e->scan = a_scan;
    e->can_scan = a_can_scan;
    e->flush = a_flush;
    e->compact = a_compact;
    e->stats = a_stats;
    e->backlog = a_backlog;
    e->errmsg = a_errmsg;
    return 0;
}
