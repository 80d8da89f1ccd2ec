/*
 * engine_rocksdb.c — the baseline: plain RocksDB through its C API with its
 * default leveled LSM and its own full Bloom or Ribbon filter at the same
 * bits/key, block cache, memtable size and direct-read setting as adaptkv,
 * and the memtable Bloom filter its users turn on for point lookups.
 * Per-operation cost comes from RocksDB's perf context (thread-local, so
 * each bench thread keeps its own).
 */
#include <rocksdb/c.h>
#include <stdlib.h>
#include <string.h>

#include "tools/kvbench/kvbench.h"

typedef struct rdb {
    rocksdb_t *db;
    double memtable_bloom_bytes; /* per memtable */
    rocksdb_options_t *opt;
    rocksdb_block_based_table_options_t *bbto;
    rocksdb_cache_t *cache;
    rocksdb_readoptions_t *ro;
    rocksdb_writeoptions_t *wo;
} rdb;

static _Thread_local char errbuf[AKV_KB_ERRLEN];

/* Take ownership of a RocksDB error string. */
static int take_err(char *err)
{
    if (!err)
        return 0;
    snprintf(errbuf, sizeof errbuf, "%s", err);
    rocksdb_free(err);
    return -2;
}

static void configure(rdb *r, const akv_kb_cfg *c)
{
    r->opt = rocksdb_options_create();
    rocksdb_options_set_create_if_missing(r->opt, 1);
    rocksdb_options_increase_parallelism(r->opt, 2);
    rocksdb_options_set_write_buffer_size(r->opt, c->memtable_bytes);
    rocksdb_options_set_use_direct_reads(r->opt, c->direct_reads);
    rocksdb_options_set_compression(r->opt, rocksdb_zstd_compression);
    r->bbto = rocksdb_block_based_options_create();
    r->cache = rocksdb_cache_create_lru(c->cache_bytes);
    rocksdb_block_based_options_set_block_cache(r->bbto, r->cache);
    bool ribbon = c->filter && strcmp(c->filter, "ribbon") == 0;
    rocksdb_block_based_options_set_filter_policy(
        r->bbto, ribbon ? rocksdb_filterpolicy_create_ribbon(c->bits_per_key)
                        : rocksdb_filterpolicy_create_bloom_full(c->bits_per_key));
    rocksdb_options_set_block_based_table_factory(r->opt, r->bbto);
    /* What a RocksDB user tunes for point lookups: a whole-key Bloom filter
     * in each memtable (counted below as filter memory). */
    if (c->memtable_bloom_ratio > 0) {
        rocksdb_options_set_memtable_prefix_bloom_size_ratio(r->opt, c->memtable_bloom_ratio);
        rocksdb_options_set_memtable_whole_key_filtering(r->opt, 1);
        r->memtable_bloom_bytes = c->memtable_bloom_ratio * (double)c->memtable_bytes;
    }
    r->ro = rocksdb_readoptions_create();
    r->wo = rocksdb_writeoptions_create();
    rocksdb_writeoptions_set_sync(r->wo, c->sync);
}

static void destroy(rdb *r)
{
    if (r->db)
        rocksdb_close(r->db);
    if (r->ro)
        rocksdb_readoptions_destroy(r->ro);
    if (r->wo)
        rocksdb_writeoptions_destroy(r->wo);
    if (r->opt)
        rocksdb_options_destroy(r->opt);
    if (r->bbto)
        rocksdb_block_based_options_destroy(r->bbto);
    if (r->cache)
        rocksdb_cache_destroy(r->cache);
    free(r);
}

static int r_open(akv_kb_engine *e, const akv_kb_cfg *c, char *err, size_t n)
{
    if (c->filter && strcmp(c->filter, "bloom") != 0 && strcmp(c->filter, "ribbon") != 0) {
        snprintf(err, n, "unknown RocksDB filter '%s' (bloom or ribbon)", c->filter);
        return -1;
    }
    rdb *r = calloc(1, sizeof *r);
    if (!r) {
        snprintf(err, n, "out of memory");
        return -1;
    }
    configure(r, c);
    char *e_ = NULL;
    r->db = rocksdb_open(r->opt, c->dir, &e_);
    if (take_err(e_)) {
        snprintf(err, n, "rocksdb_open %s: %s", c->dir, errbuf);
        destroy(r);
        return -1;
    }
    e->db = r;
    snprintf(e->label, sizeof e->label, "rocksdb %s", c->filter ? c->filter : "bloom");
    return 0;
}

static void r_close(akv_kb_engine *e)
{
    if (e->db)
        destroy(e->db);
    e->db = NULL;
}

static void *r_thread_begin(akv_kb_engine *e)
{
    (void)e;
    rocksdb_set_perf_level(rocksdb_enable_count); /* thread-local in RocksDB */
    return rocksdb_perfcontext_create();
}

static void r_thread_end(akv_kb_engine *e, void *t)
{
    (void)e;
    if (t)
        rocksdb_perfcontext_destroy(t);
}

/* A filter "maybe" that the SST then did not confirm is a wasted probe.
 * Filters consulted: every SST filter and memtable Bloom filter checked,
 * whatever it answered. */
static void cost_of(void *t, akv_kb_cost *c, bool found)
{
    uint64_t hits = rocksdb_perfcontext_metric(t, rocksdb_bloom_sst_hit_count);
    c->filters = (uint32_t)(hits + rocksdb_perfcontext_metric(t, rocksdb_bloom_sst_miss_count) +
                            rocksdb_perfcontext_metric(t, rocksdb_bloom_memtable_hit_count) +
                            rocksdb_perfcontext_metric(t, rocksdb_bloom_memtable_miss_count));
    c->block_reads = rocksdb_perfcontext_metric(t, rocksdb_block_read_count);
    c->probes = (uint32_t)hits;
    c->wasted = (uint32_t)(found && hits ? hits - 1 : hits);
    /* Memtable Bloom hits that found nothing: all of them for a lookup
     * that found nothing (one less when the key came from a memtable). */
    uint64_t mem_hits = rocksdb_perfcontext_metric(t, rocksdb_bloom_memtable_hit_count);
    c->mem_wasted = (uint32_t)(found && !hits && mem_hits ? mem_hits - 1 : mem_hits);
}

static int r_read(akv_kb_engine *e, void *t, const char *k, size_t kn, akv_kb_cost *c)
{
    rdb *r = e->db;
    char *err = NULL;
    size_t vlen = 0;
    rocksdb_perfcontext_reset(t);
    char *v = rocksdb_get(r->db, r->ro, k, kn, &vlen, &err);
    if (take_err(err))
        return -2;
    cost_of(t, c, v != NULL);
    rocksdb_free(v);
    return v ? AKV_KB_FOUND : AKV_KB_NOTFOUND;
}

static int r_write(akv_kb_engine *e, void *t, const char *k, size_t kn, const char *v, size_t vn)
{
    (void)t;
    rdb *r = e->db;
    char *err = NULL;
    rocksdb_put(r->db, r->wo, k, kn, v, vn, &err);
    return take_err(err);
}

static int r_remove(akv_kb_engine *e, void *t, const char *k, size_t kn)
{
    (void)t;
    rdb *r = e->db;
    char *err = NULL;
    rocksdb_delete(r->db, r->wo, k, kn, &err);
    return take_err(err);
}

static int r_scan(akv_kb_engine *e, void *t, const char *k, size_t kn, uint32_t count, akv_kb_cost *c)
{
    rdb *r = e->db;
    rocksdb_perfcontext_reset(t);
    rocksdb_iterator_t *it = rocksdb_create_iterator(r->db, r->ro);
    int seen = 0;
    for (rocksdb_iter_seek(it, k, kn); seen < (int)count && rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
        size_t vl;
        (void)rocksdb_iter_value(it, &vl);
        seen++;
    }
    char *err = NULL;
    rocksdb_iter_get_error(it, &err);
    rocksdb_iter_destroy(it);
    c->block_reads = rocksdb_perfcontext_metric(t, rocksdb_block_read_count);
    return take_err(err) ? -2 : seen;
}

static bool r_can_scan(akv_kb_engine *e)
{
    (void)e;
    return true;
}

static int r_flush(akv_kb_engine *e)
{
    rdb *r = e->db;
    rocksdb_flushoptions_t *fo = rocksdb_flushoptions_create();
    rocksdb_flushoptions_set_wait(fo, 1);
    char *err = NULL;
    rocksdb_flush(r->db, fo, &err);
    rocksdb_flushoptions_destroy(fo);
    return take_err(err);
}

static int r_compact(akv_kb_engine *e)
{
    rdb *r = e->db;
    int rc = r_flush(e);
    if (rc == 0)
        rocksdb_compact_range(r->db, NULL, 0, NULL, 0);
    return rc;
}

/* "key=value; key=value" from rocksdb.aggregated-table-properties. */
static double table_prop(const char *s, const char *key)
{
    const char *p = s ? strstr(s, key) : NULL;
    return p ? strtod(p + strlen(key), NULL) : 0;
}

/* The number after `key` in RocksDB's "rocksdb.stats" text (0 if absent). */
static double stats_num(const char *s, const char *key)
{
    const char *p = s ? strstr(s, key) : NULL;
    return p ? strtod(p + strlen(key), NULL) : 0;
}

/* The start of the next whitespace-separated word after the one at p (or
 * at end, the line's end, when there is none). */
static const char *next_word(const char *p, const char *end)
{
    while (p < end && *p == ' ')
        p++;
    while (p < end && *p != ' ')
        p++;
    while (p < end && *p == ' ')
        p++;
    return p;
}

/* Write(GB) per level from the first "Compaction Stats" table of
 * "rocksdb.stats" (rows "  L<n>", printed only for levels with files or
 * compactions), over the GB ingested. Its "Size" column takes two words
 * in a row ("31.23 MB") but one in the header. */
static void level_write_amp(const char *st, double ingest, akv_kb_estats *s)
{
    const char *t = st && ingest > 0 ? strstr(st, "** Compaction Stats [") : NULL;
    const char *hdr = t ? strstr(t, "\nLevel ") : NULL;
    const char *eol = hdr ? strchr(hdr + 1, '\n') : NULL;
    if (!eol)
        return;
    int col = -1, size_col = -1;
    int i = 0;
    for (const char *p = hdr + 1; p < eol; p = next_word(p, eol), i++) {
        if (strncmp(p, "Write(GB)", 9) == 0)
            col = i;
        if (strncmp(p, "Size ", 5) == 0)
            size_col = i;
    }
    if (col < 0)
        return;
    if (size_col >= 0 && size_col < col)
        col++;
    for (const char *row = eol + 1; *row;) {
        const char *end = strchr(row, '\n');
        if (!end)
            break;
        unsigned lvl;
        int off = 0;
        if (sscanf(row, " L%u%n", &lvl, &off) == 1 && off > 0 && lvl < AKV_KB_MAX_LEVELS) {
            const char *p = next_word(row, end); /* the first word: "L<n>" */
            for (int k = 1; k < col; k++)
                p = next_word(p, end);
            if (p < end) {
                s->write_amp_level[lvl] = strtod(p, NULL) / ingest;
                if ((int)lvl + 1 > s->n_write_amp_levels)
                    s->n_write_amp_levels = (int)lvl + 1;
            }
        } else if (strncmp(row, " Sum", 4) == 0 || (row[0] != ' ' && row[0] != '-')) {
            break;
        }
        row = end + 1;
    }
}

static int r_stats(akv_kb_engine *e, akv_kb_estats *s)
{
    rdb *r = e->db;
    memset(s, 0, sizeof *s);
    char *agg = rocksdb_property_value(r->db, "rocksdb.aggregated-table-properties");
    double entries = table_prop(agg, "# entries=");
    double fbytes = table_prop(agg, "filter block size=");
    free(agg);
    /* Memtable Blooms: one per live memtable (the active one and those
     * waiting to be flushed). */
    char *imm = rocksdb_property_value(r->db, "rocksdb.num-immutable-mem-table");
    double mems = 1 + (imm ? strtod(imm, NULL) : 0);
    free(imm);
    double mbytes = r->memtable_bloom_bytes * mems;
    s->keys = (uint64_t)entries;
    s->filter_bytes = (uint64_t)(fbytes + mbytes);
    s->filter_bits_per_key = entries > 0 ? (fbytes + mbytes) * 8 / entries : 0;
    s->sst_filter_bits_per_key = entries > 0 ? fbytes * 8 / entries : 0;
    /* Write amplification from RocksDB's own DB statistics: flush and
     * compaction GB written over the GB the application ingested. */
    char *st = rocksdb_property_value(r->db, "rocksdb.stats");
    double ingest = stats_num(st, "Cumulative writes:") > 0 ? stats_num(strstr(st, "Cumulative writes:"), "ingest: ") : 0;
    double flush = stats_num(st, "Flush(GB): cumulative ");
    double compact = stats_num(st, "Cumulative compaction: ");
    const char *stall = st ? strstr(st, "Cumulative stall: ") : NULL;
    if (stall) {
        unsigned h = 0, m = 0;
        double sec = 0;
        if (sscanf(stall, "Cumulative stall: %u:%u:%lf", &h, &m, &sec) == 3)
            s->stall_seconds = h * 3600.0 + m * 60.0 + sec;
    }
    level_write_amp(st, ingest, s);
    free(st);
    s->write_amp = ingest > 0 ? (flush + compact) / ingest : 0;
    char *l0 = rocksdb_property_value(r->db, "rocksdb.num-files-at-level0"); /* a string property */
    s->l0_files = l0 ? strtoull(l0, NULL, 10) : 0;
    free(l0);
    rocksdb_property_int(r->db, "rocksdb.estimate-pending-compaction-bytes", &s->pending_compaction_bytes);
    return 0;
}

/* Owed: what RocksDB's properties say is pending or running (a flush
 * wanted or running, a compaction due or running, bytes its due
 * compactions would rewrite). */
static int r_backlog(akv_kb_engine *e, char *what, size_t n)
{
    rdb *r = e->db;
    static const char *const props[] = {"rocksdb.mem-table-flush-pending", "rocksdb.num-running-flushes",
                                        "rocksdb.compaction-pending", "rocksdb.num-running-compactions",
                                        "rocksdb.estimate-pending-compaction-bytes"};
    uint64_t v[5];
    for (int i = 0; i < 5; i++)
        if (rocksdb_property_int(r->db, props[i], &v[i]) != 0) {
            snprintf(errbuf, sizeof errbuf, "RocksDB has no property %s", props[i]);
            return -2;
        }
    if (!v[0] && !v[1] && !v[2] && !v[3] && !v[4])
        return 0;
    snprintf(what, n,
             "rocksdb: flush pending %llu, running flushes %llu, compaction pending %llu, running "
             "compactions %llu, pending compaction %.1f MiB",
             (unsigned long long)v[0], (unsigned long long)v[1], (unsigned long long)v[2],
             (unsigned long long)v[3], (double)v[4] / 1048576.0);
    return 1;
}

static const char *r_errmsg(akv_kb_engine *e, int rc)
{
    (void)e;
    return rc == -2 ? errbuf : "error";
}

int akv_kb_engine_rocksdb(akv_kb_engine *e)
{
    memset(e, 0, sizeof *e);
    e->name = "rocksdb";
    e->open = r_open;
    e->close = r_close;
    e->thread_begin = r_thread_begin;
    e->thread_end = r_thread_end;
    e->read = r_read;
    e->write = r_write;
    e->remove = r_remove;
    e->scan = r_scan;
    e->can_scan = r_can_scan;
    e->flush = r_flush;
    e->compact = r_compact;
    e->stats = r_stats;
    e->backlog = r_backlog;
    e->errmsg = r_errmsg;
    return 0;
}
