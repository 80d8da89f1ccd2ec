/*
 * rocks.c — RocksDB options, column families and the meta family.
 *
 * Every column family shares one LRU block cache. Run families never run
 * RocksDB compactions (adaptkv owns the LSM shape) and carry no RocksDB
 * filter (adaptkv's slots are the filters). Memtable families (the pool's,
 * and an older format's mem.<gen>) get a write buffer larger than
 * memtable_bytes so RocksDB does not flush them before adaptkv rotates them.
 */
#include <stdlib.h>
#include <string.h>

#include "engine/internal.h"
#include "engine/lockorder.h"
#include "engine/runstore.h"
#include "util/clock.h"
#include "util/order.h"

const char akvi_scan_lower_bound[1] = {0};

static rocksdb_options_t *cf_options(rocksdb_block_based_table_options_t *t, bool auto_compact,
                                     int compression)
{
    rocksdb_options_t *o = rocksdb_options_create();
    rocksdb_options_set_block_based_table_factory(o, t);
    rocksdb_options_set_disable_auto_compactions(o, auto_compact ? 0 : 1);
    rocksdb_options_set_compression(o, compression);
    return o;
}

int akvi_rocks_setup(akv_db *db)
{
    size_t cache_bytes = db->opt.block_cache_bytes ? db->opt.block_cache_bytes : 1 << 20;
    /* One block cache: RocksDB's families and the readers of the runs'
     * own files (runstore.c) share it, so block_cache_bytes bounds both
     * (docs/design.md, "Run files"). */
    db->rk.cache = rocksdb_cache_create_lru(cache_bytes);
    int rc = akvi_rs_open(db->rk.cache, cache_bytes, db->opt.direct_reads, &db->runstore);
    if (rc != AKV_OK)
        return rc;
    db->rk.bbto = rocksdb_block_based_options_create();
    rocksdb_block_based_options_set_block_cache(db->rk.bbto, db->rk.cache);

    db->rk.dbopt = rocksdb_options_create();
    rocksdb_options_set_create_if_missing(db->rk.dbopt, 1);
    rocksdb_options_set_create_missing_column_families(db->rk.dbopt, 1);
    rocksdb_options_set_use_direct_reads(db->rk.dbopt, db->opt.direct_reads ? 1 : 0);
    rocksdb_options_set_block_based_table_factory(db->rk.dbopt, db->rk.bbto);
    rocksdb_options_set_info_log_level(db->rk.dbopt, 2 /* warn */);
    /* RocksDB's default: every SST stays open, rather than reopened by
     * the first read that reaches it (with a bounded table cache, the first
     * lookups after a flush or compaction each paid an index read when
     * runs were read through their families: docs/design.md). */
    rocksdb_options_set_max_open_files(db->rk.dbopt, -1);
    /* Writers reach RocksDB together (write.c): the group's leader writes
     * every member's entries into the memtables itself, and the members
     * wait without spinning. With RocksDB's defaults (members insert their
     * own entries in parallel and spin-yield while they wait) the leader
     * waited for a member that two busy cores had descheduled, and
     * workloada's UPDATE p99.9 at 1M x 1 KB went from 0.2 to 1.1-1.7 ms
     * (docs/benchmarks.md). */
    rocksdb_options_set_allow_concurrent_memtable_write(db->rk.dbopt, 0);
    rocksdb_options_set_enable_write_thread_adaptive_yield(db->rk.dbopt, 0);
    /* A damaged WAL: replay up to the damage, every write before it kept
     * (RocksDB's default, named here because open and repair count what
     * it drops: engine/wal.c). */
    rocksdb_options_set_wal_recovery_mode(db->rk.dbopt, 2 /* kPointInTimeRecovery */);
    /* No automatic resume after a background I/O error: adaptkv stops its
     * writers on the first one and recovers by reopening (docs/reliability.md),
     * and RocksDB 7.8 resuming by itself after a failed MANIFEST sync can
     * abort on an assertion. The C API has no setter for this option. */
    rocksdb_options_t *o = rocksdb_options_create();
    char *err = NULL;
    rocksdb_get_options_from_string(db->rk.dbopt, "max_bgerror_resume_count=0", o, &err);
    if (err) {
        rocksdb_options_destroy(o);
        return akvi_rocks_err(err, "setting RocksDB's options");
    }
    rocksdb_options_destroy(db->rk.dbopt);
    db->rk.dbopt = o;

    /* Gets, scans and merges read runs through their own files, whose
     * readers hold the index (runstore.c): a run family's table reader
     * keeps its index in the block cache instead, where it ages out unless
     * a fallback read or repair uses it, rather than holding a second copy
     * of every run's index for as long as the run lives. */
    db->rk.bbto_run = rocksdb_block_based_options_create();
    rocksdb_block_based_options_set_block_cache(db->rk.bbto_run, db->rk.cache);
    rocksdb_block_based_options_set_cache_index_and_filter_blocks(db->rk.bbto_run, 1);
    db->rk.metaopt = cf_options(db->rk.bbto, true, rocksdb_no_compression);
    db->rk.memopt = cf_options(db->rk.bbto, false, rocksdb_no_compression);
    uint64_t wb = db->opt.memtable_bytes * 2 + (1u << 20);
    rocksdb_options_set_write_buffer_size(db->rk.memopt, (size_t)wb);
    db->rk.runopt = cf_options(db->rk.bbto_run, false, rocksdb_no_compression);
    db->rk.runopt_z = cf_options(db->rk.bbto_run, false, rocksdb_zstd_compression);

    db->rk.wo = rocksdb_writeoptions_create();
    db->rk.wo_sync = rocksdb_writeoptions_create();
    rocksdb_writeoptions_set_sync(db->rk.wo_sync, 1);
    db->rk.ro = rocksdb_readoptions_create();
    db->rk.ro_scan = rocksdb_readoptions_create();
    /* Flush and compaction stream whole runs: keep them out of the cache. */
    rocksdb_readoptions_set_fill_cache(db->rk.ro_scan, 0);
    rocksdb_readoptions_set_readahead_size(db->rk.ro_scan, 2u << 20);
    /* A memtable family's generation record (mempool.c) sits under the
     * empty key, which no data key is: scans start after it. */
    rocksdb_readoptions_set_iterate_lower_bound(db->rk.ro_scan, akvi_scan_lower_bound, 1);
    return AKV_OK;
}

void akvi_rocks_close(akv_db *db)
{
    if (db->rk.meta_cf)
        rocksdb_column_family_handle_destroy(db->rk.meta_cf);
    if (db->rk.default_cf)
        rocksdb_column_family_handle_destroy(db->rk.default_cf);
    db->rk.meta_cf = db->rk.default_cf = NULL;
    if (db->rk.rdb)
        rocksdb_close(db->rk.rdb);
    db->rk.rdb = NULL;
}

void akvi_rocks_teardown(akv_db *db)
{
    akvi_rocks_close(db);
    rocksdb_options_t *opts[] = {db->rk.dbopt, db->rk.metaopt, db->rk.memopt, db->rk.runopt, db->rk.runopt_z};
    for (size_t i = 0; i < sizeof opts / sizeof *opts; i++)
        if (opts[i])
            rocksdb_options_destroy(opts[i]);
    if (db->rk.bbto)
        rocksdb_block_based_options_destroy(db->rk.bbto);
    if (db->rk.bbto_run)
        rocksdb_block_based_options_destroy(db->rk.bbto_run);
    if (db->rk.cache)
        rocksdb_cache_destroy(db->rk.cache);
    if (db->rk.wo)
        rocksdb_writeoptions_destroy(db->rk.wo);
    if (db->rk.wo_sync)
        rocksdb_writeoptions_destroy(db->rk.wo_sync);
    if (db->rk.ro)
        rocksdb_readoptions_destroy(db->rk.ro);
    if (db->rk.ro_scan)
        rocksdb_readoptions_destroy(db->rk.ro_scan);
    db->rk.dbopt = db->rk.metaopt = db->rk.memopt = db->rk.runopt = db->rk.runopt_z = NULL;
    db->rk.bbto = db->rk.bbto_run = NULL;
    db->rk.cache = NULL;
    db->rk.wo = db->rk.wo_sync = NULL;
    db->rk.ro = db->rk.ro_scan = NULL;
    akvi_rs_close(db->runstore); /* readers still open keep what they use */
    db->runstore = NULL;
}

/* Options for a column family by its name's prefix. */
const rocksdb_options_t *akvi_cf_options_for(akv_db *db, const char *name)
{
    if (strncmp(name, "mem.", 4) == 0 || strncmp(name, "pool.", 5) == 0)
        return db->rk.memopt;
    if (strncmp(name, "run.", 4) == 0 || strncmp(name, "rmap.", 5) == 0)
        return db->rk.runopt;
    return db->rk.metaopt;
}

int akvi_stop(akv_db *db, int rc)
{
    akvi_mutex_lock(&db->bg.mu, AKVI_RANK_BG);
    if (!db->bg.error)
        db->bg.error = rc;
    pthread_cond_broadcast(&db->bg.done_cv);
    akvi_mutex_unlock(&db->bg.mu, AKVI_RANK_BG);
    return rc;
}

/* Creating or dropping a family, and ingesting into one, hold RocksDB's
 * writers while RocksDB writes its MANIFEST (and, for a create or a drop,
 * its OPTIONS file): counted in akv_stats (family_ops, family_op_us; kind:
 * family_creates, family_drops, or NULL for an ingestion). */
static void family_op_done(akv_db *db, _Atomic uint64_t *kind, double t0)
{
    if (kind)
        atomic_fetch_add_explicit(kind, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&db->st.family_ops, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&db->st.family_op_us, (uint64_t)((akvi_mono_seconds() - t0) * 1e6),
                              memory_order_relaxed);
}

/* Creating or dropping a column family writes and syncs RocksDB's MANIFEST.
 * Once a RocksDB write failed, neither is tried again until reopen: RocksDB
 * 7.8 may be recovering from a failed MANIFEST write on its own thread, and
 * aborts the process on an assertion (`!versions_->descriptor_log_` in
 * DBImpl::ResumeImpl) if another MANIFEST write came in between. */
int akvi_cf_create(akv_db *db, const char *name, int level, rocksdb_column_family_handle_t **out)
{
    *out = NULL;
    int stopped = atomic_load(&db->bg.error);
    if (stopped)
        return akvi_err(stopped, "creating column family %s: the database stopped after a failure (reopen to recover)",
                        name);
    char *err = NULL;
    const rocksdb_options_t *o = akvi_cf_options_for(db, name);
    if (level >= 1 && strncmp(name, "run.", 4) == 0)
        o = db->rk.runopt_z;
    double t0 = akvi_mono_seconds();
    *out = rocksdb_create_column_family(db->rk.rdb, o, name, &err);
    family_op_done(db, &db->st.family_creates, t0);
    if (err) {
        *out = NULL;
        return akvi_stop(db, akvi_rocks_err(err, "creating column family"));
    }
    return AKV_OK;
}

void akvi_cf_drop(akv_db *db, rocksdb_column_family_handle_t *cf)
{
    /* No catalog names a family that is dropped: if it stays, the next open
     * drops it (recover.c). */
    if (atomic_load(&db->bg.error))
        return;
    char *err = NULL;
    double t0 = akvi_mono_seconds();
    rocksdb_drop_column_family(db->rk.rdb, cf, &err);
    family_op_done(db, &db->st.family_drops, t0);
    if (err) {
        akvi_log(db, "dropping a column family failed: %s", err);
        akvi_stop(db, akvi_rocks_err(err, "dropping a column family"));
    }
}

int akvi_meta_put(akv_db *db, const char *key, const uint8_t *val, size_t len, bool sync)
{
    char *err = NULL;
    rocksdb_put_cf(db->rk.rdb, sync ? db->rk.wo_sync : db->rk.wo, db->rk.meta_cf, key, strlen(key),
                   (const char *)val, len, &err);
    return err ? akvi_rocks_err(err, "writing the meta family") : AKV_OK;
}

int akvi_meta_get(akv_db *db, const char *key, uint8_t **val, size_t *len)
{
    char *err = NULL;
    size_t n = 0;
    char *v = rocksdb_get_cf(db->rk.rdb, db->rk.ro, db->rk.meta_cf, key, strlen(key), &n, &err);
    if (err)
        return akvi_rocks_err(err, "reading the meta family");
    if (!v)
        return AKV_NOTFOUND;
    *val = malloc(n ? n : 1);
    if (!*val) {
        rocksdb_free(v);
        return akvi_err(AKV_ENOMEM, "out of memory");
    }
    memcpy(*val, v, n);
    rocksdb_free(v);
    *len = n;
    return AKV_OK;
}

void akvi_meta_flush(akv_db *db, bool wait)
{
    rocksdb_flushoptions_t *fo = rocksdb_flushoptions_create();
    rocksdb_flushoptions_set_wait(fo, wait ? 1 : 0);
    char *err = NULL;
    rocksdb_flush_cf(db->rk.rdb, fo, db->rk.meta_cf, &err);
    rocksdb_flushoptions_destroy(fo);
    if (err) {
        /* Not fatal: the WAL stays until a later flush succeeds. */
        akvi_log(db, "warning: flushing the meta family failed: %s", err);
        rocksdb_free(err);
    }
}

/* ---- RocksDB's record of the SST files ---------------------------------- */

static uint8_t *dup_bytes(const char *p, size_t n)
{
    uint8_t *q = malloc(n ? n : 1);
    if (q && n)
        memcpy(q, p, n);
    return q;
}

static int cmp_live(const void *a, const void *b)
{
    const akvi_live_sst *x = a, *y = b;
    int c = strcmp(x->cf, y->cf);
    return c ? c : akvi_bytes_cmp(x->smallest, x->smallest_len, y->smallest, y->smallest_len);
}

int akvi_live_ssts(rocksdb_t *rdb, akvi_live_sst **out, size_t *n_out)
{
    const rocksdb_livefiles_t *lf = rocksdb_livefiles(rdb);
    if (!lf)
        return akvi_err(AKV_EIO, "RocksDB did not list its live files");
    int n = rocksdb_livefiles_count(lf);
    akvi_live_sst *l = calloc(n > 0 ? (size_t)n : 1, sizeof *l);
    int rc = l ? AKV_OK : akvi_err(AKV_ENOMEM, "out of memory");
    for (int i = 0; rc == AKV_OK && i < n; i++) {
        size_t sl, ll;
        const char *s = rocksdb_livefiles_smallestkey(lf, i, &sl);
        const char *g = rocksdb_livefiles_largestkey(lf, i, &ll);
        l[i].cf = strdup(rocksdb_livefiles_column_family_name(lf, i));
        l[i].name = strdup(rocksdb_livefiles_name(lf, i));
        l[i].size = rocksdb_livefiles_size(lf, i);
        l[i].entries = rocksdb_livefiles_entries(lf, i);
        l[i].smallest = dup_bytes(s, sl);
        l[i].smallest_len = sl;
        l[i].largest = dup_bytes(g, ll);
        l[i].largest_len = ll;
        if (!l[i].cf || !l[i].name || !l[i].smallest || !l[i].largest)
            rc = akvi_err(AKV_ENOMEM, "out of memory");
    }
    rocksdb_livefiles_destroy(lf);
    if (rc != AKV_OK) {
        akvi_live_ssts_free(l, l ? (size_t)n : 0);
        return rc;
    }
    akvi_sort(l, (size_t)n, sizeof *l, cmp_live);
    *out = l;
    *n_out = (size_t)n;
    return AKV_OK;
}

size_t akvi_live_ssts_of(const akvi_live_sst *l, size_t n, const char *cf, size_t *first)
{
    size_t i = 0;
    while (i < n && strcmp(l[i].cf, cf) != 0)
        i++;
    *first = i;
    size_t k = 0;
    while (i + k < n && strcmp(l[i + k].cf, cf) == 0)
        k++;
    return k;
}

int akvi_cf_entries(rocksdb_t *rdb, rocksdb_column_family_handle_t *cf, uint64_t *entries)
{
    /* RocksDB loads the entry counts of only the first few files at open,
     * so per-file counts are often 0; the aggregated table properties read
     * every file's. */
    char *v = rocksdb_property_value_cf(rdb, cf, "rocksdb.aggregated-table-properties");
    const char *p = v ? strstr(v, "# entries=") : NULL;
    int rc = p ? AKV_OK : akvi_err(AKV_EIO, "RocksDB did not report a family's table properties");
    if (p)
        *entries = strtoull(p + strlen("# entries="), NULL, 10);
    free(v);
    return rc;
}

void akvi_live_ssts_free(akvi_live_sst *l, size_t n)
{
    for (size_t i = 0; l && i < n; i++) {
        free(l[i].cf);
        free(l[i].name);
        free(l[i].smallest);
        free(l[i].largest);
    }
    free(l);
}

/* ---- per-thread perf context -------------------------------------------- */

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
