/*
 * stats.c — statistics: counters, shape of the LSM, per-slot rows, JSON.
 *
 * The read path counts per thread (threadslot.h, stats.h): a get
 * writes only its thread's stripe of the database's and each slot's
 * counters, and these sums are exact once the readers are done.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/internal.h"

int akv_get_stats(akv_db *db, akv_stats *st)
{
    if (!db || !st)
        return akvi_err(AKV_EINVAL, "akv_get_stats: NULL argument");
    memset(st, 0, sizeof *st);
    st->puts = atomic_load(&db->st.puts);
    st->deletes = atomic_load(&db->st.deletes);
    /* The read path's counters: one block per thread slot, summed. */
    for (size_t i = 0; i < AKVI_RSTATS_STRIPES; i++) {
        const akvi_rstats *r = &db->st.rs[i].c;
        st->gets += atomic_load_explicit(&r->gets, memory_order_relaxed);
        st->negative_lookups += atomic_load_explicit(&r->negative_lookups, memory_order_relaxed);
        st->probes += atomic_load_explicit(&r->probes, memory_order_relaxed);
        st->wasted_probes += atomic_load_explicit(&r->wasted_probes, memory_order_relaxed);
        st->slot_queries += atomic_load_explicit(&r->slot_queries, memory_order_relaxed);
        st->slot_filtered += atomic_load_explicit(&r->slot_filtered, memory_order_relaxed);
        st->false_positives += atomic_load_explicit(&r->false_positives, memory_order_relaxed);
        st->adaptations += atomic_load_explicit(&r->adaptations, memory_order_relaxed);
        st->block_reads += atomic_load_explicit(&r->block_reads, memory_order_relaxed);
    }
    st->flushes = atomic_load(&db->st.flushes);
    st->compactions = atomic_load(&db->st.compactions);
    st->write_stalls = atomic_load(&db->st.write_stalls);
    st->write_slowdowns = atomic_load(&db->st.write_slowdowns);
    st->l0_merges = atomic_load(&db->st.l0_merges);
    st->family_ops = atomic_load(&db->st.family_ops);
    st->family_op_us = atomic_load(&db->st.family_op_us);
    st->family_creates = atomic_load(&db->st.family_creates);
    st->family_drops = atomic_load(&db->st.family_drops);
    st->memtable_empties = atomic_load(&db->st.memtable_empties);
    st->memtable_empty_us = atomic_load(&db->st.memtable_empty_us);
    st->wal_damaged_recoveries = atomic_load(&db->st.wal_damaged_recoveries);
    st->wal_records_dropped = atomic_load(&db->st.wal_records_dropped);
    for (int l = 0; l < AKV_MAX_LEVELS; l++)
        st->bytes_written_per_level[l] = atomic_load(&db->st.bytes_written_level[l]);
    st->bytes_written_user = atomic_load(&db->st.bytes_written_user);
    st->bytes_written_disk = atomic_load(&db->st.bytes_written_disk);
    akvi_guard_mem g;
    akvi_guard_memory_parts(db, &g);
    st->guard_filter_bytes = g.now;
    st->guard_filter_bytes_avg = (uint64_t)g.avg;
    st->filter_bytes = g.now;
    akvi_version *v = akvi_current(db);
    st->memtables = (uint32_t)v->n_mem;
    for (size_t i = 0; i < v->n_run; i++) {
        akvi_run *r = v->runs[i];
        uint32_t l = r->info.level;
        if (st->runs_per_level[l]++ == 0)
            st->levels++;
        st->ssts_per_level[l] += (uint32_t)r->info.n_sst;
        st->keys_per_level[l] += r->info.keys;
        st->live_keys_estimate += r->info.keys;
        for (size_t j = 0; r->slots && j < r->info.n_sst; j++) {
            size_t m = akvi_slot_memory(&r->slots[j]);
            st->filter_bytes += m;
            st->filter_bytes_per_level[l] += m;
            st->filter_grown_bytes += atomic_load(&r->slots[j].grown_bytes);
        }
    }
    size_t fronts = akvi_fronts_memory(v, NULL, 0); /* L0 fronts: filter memory of L0 */
    st->filter_bytes += fronts;
    st->filter_bytes_per_level[0] += fronts;
    st->filter_budget_bits_per_key = db->opt.bits_per_key;
    st->filter_budget_bytes =
        (uint64_t)(akvi_filter_budget(db, (double)st->live_keys_estimate, st->memtables, &g) + 0.5);
    st->compaction_debt_bytes = akvi_compaction_debt(db, v);
    akvi_version_unref(v);
    st->miss_log_coverage = akvi_misslog_coverage(db->ml);
    st->filter_grows = atomic_load(&db->st.filter_grows);
    st->filter_refills = atomic_load(&db->st.filter_refills);
    return AKV_OK;
}

static void put_array32(char **p, const char *end, const char *name, const uint32_t *a)
{
    *p += snprintf(*p, (size_t)(end - *p), ",\"%s\":[", name);
    for (int i = 0; i < AKV_MAX_LEVELS; i++)
        *p += snprintf(*p, (size_t)(end - *p), "%s%u", i ? "," : "", a[i]);
    *p += snprintf(*p, (size_t)(end - *p), "]");
}

static void put_array64(char **p, const char *end, const char *name, const uint64_t *a)
{
    *p += snprintf(*p, (size_t)(end - *p), ",\"%s\":[", name);
    for (int i = 0; i < AKV_MAX_LEVELS; i++)
        *p += snprintf(*p, (size_t)(end - *p), "%s%llu", i ? "," : "", (unsigned long long)a[i]);
    *p += snprintf(*p, (size_t)(end - *p), "]");
}

int akv_stats_json(akv_db *db, char **json)
{
    if (!json)
        return akvi_err(AKV_EINVAL, "akv_stats_json: NULL argument");
    akv_stats s;
    int rc = akv_get_stats(db, &s);
    if (rc != AKV_OK)
        return rc;
    size_t cap = 8192;
    char *buf = malloc(cap);
    if (!buf)
        return akvi_err(AKV_ENOMEM, "out of memory");
    char *p = buf, *end = buf + cap;
#define U64(name)                                                                                            \
    p += snprintf(p, (size_t)(end - p), "%s\"" #name "\":%llu", p == buf + 1 ? "" : ",",                     \
                  (unsigned long long)s.name)
    p += snprintf(p, (size_t)(end - p), "{");
    U64(puts);
    U64(deletes);
    U64(gets);
    U64(negative_lookups);
    U64(probes);
    U64(wasted_probes);
    U64(slot_queries);
    U64(slot_filtered);
    U64(false_positives);
    U64(adaptations);
    U64(block_reads);
    U64(flushes);
    U64(compactions);
    U64(write_stalls);
    U64(write_slowdowns);
    U64(bytes_written_user);
    U64(bytes_written_disk);
    U64(filter_bytes);
    U64(live_keys_estimate);
    U64(levels);
    U64(memtables);
    U64(compaction_debt_bytes);
    U64(filter_grows);
    U64(filter_refills);
    U64(l0_merges);
    U64(family_ops);
    U64(family_op_us);
    U64(family_creates);
    U64(family_drops);
    U64(memtable_empties);
    U64(memtable_empty_us);
    U64(wal_damaged_recoveries);
    U64(wal_records_dropped);
    U64(filter_grown_bytes);
    U64(guard_filter_bytes);
    U64(guard_filter_bytes_avg);
    U64(filter_budget_bytes);
#undef U64
    put_array32(&p, end, "runs_per_level", s.runs_per_level);
    put_array32(&p, end, "ssts_per_level", s.ssts_per_level);
    put_array64(&p, end, "keys_per_level", s.keys_per_level);
    put_array64(&p, end, "bytes_written_per_level", s.bytes_written_per_level);
    put_array64(&p, end, "filter_bytes_per_level", s.filter_bytes_per_level);
    p += snprintf(p, (size_t)(end - p), ",\"filter_budget_bits_per_key\":%.4f", s.filter_budget_bits_per_key);
    p += snprintf(p, (size_t)(end - p), ",\"miss_log_coverage\":%.4f", s.miss_log_coverage);
    p += snprintf(p, (size_t)(end - p), ",\"write_amp_per_level\":[");
    for (int i = 0; i < AKV_MAX_LEVELS; i++)
        p += snprintf(p, (size_t)(end - p), "%s%.3f", i ? "," : "",
                      s.bytes_written_user ? (double)s.bytes_written_per_level[i] / (double)s.bytes_written_user : 0.0);
    snprintf(p, (size_t)(end - p), "]}");
    *json = buf;
    return AKV_OK;
}

static void fill_row(akv_slot_info *row, int level, uint64_t run, uint64_t sst, const char *kind,
                     uint64_t keys, size_t mem, akvi_slot *s)
{
    memset(row, 0, sizeof *row);
    row->level = level;
    row->run = run;
    row->sst = sst;
    snprintf(row->kind, sizeof row->kind, "%s", kind);
    row->keys = keys;
    row->bits_per_key = keys ? (double)mem * 8.0 / (double)keys : 0;
    akvi_slot_counts c;
    akvi_slot_sum(s, &c);
    row->queries = c.queries;
    row->filtered = c.filtered;
    row->probes = c.probes;
    row->false_positives = c.fps;
    row->adaptations = c.adaptations;
}

int akv_slots(akv_db *db, akv_slot_info **rows, size_t *n)
{
    if (!db || !rows || !n)
        return akvi_err(AKV_EINVAL, "akv_slots: NULL argument");
    akvi_version *v = akvi_current(db);
    size_t total = 1;
    for (size_t i = 0; i < v->n_run; i++)
        total += v->runs[i]->info.n_sst;
    akv_slot_info *out = calloc(total, sizeof *out);
    if (!out) {
        akvi_version_unref(v);
        return akvi_err(AKV_ENOMEM, "out of memory");
    }
    size_t k = 0;
    uint64_t mem_keys = 0;
    for (size_t i = 0; i < v->n_mem; i++)
        mem_keys += atomic_load(&v->mems[i]->entries);
    fill_row(&out[k++], -1, 0, 0, db->policy.mem ? db->policy.mem->name : "none", mem_keys,
             akvi_guard_memory(db), &db->guard.stats);
    /* Guard probes are the memtable reads it let through. */
    out[0].probes = out[0].queries - out[0].filtered;
    for (size_t i = 0; i < v->n_run; i++) {
        akvi_run *r = v->runs[i];
        for (size_t j = 0; j < r->info.n_sst; j++)
            fill_row(&out[k++], (int)r->info.level, r->info.id, r->info.ssts[j].id, r->info.ssts[j].kind,
                     r->info.ssts[j].keys, akvi_slot_memory(&r->slots[j]), &r->slots[j]);
    }
    akvi_version_unref(v);
    *rows = out;
    *n = k;
    return AKV_OK;
}

int akvi_stats_init(akvi_stats *st)
{
    st->rs = aligned_alloc(AKVI_LINE, AKVI_RSTATS_STRIPES * sizeof *st->rs);
    if (!st->rs)
        return AKV_ENOMEM;
    memset(st->rs, 0, AKVI_RSTATS_STRIPES * sizeof *st->rs);
    return AKV_OK;
}

void akvi_stats_destroy(akvi_stats *st)
{
    free(st->rs);
    st->rs = NULL;
}
