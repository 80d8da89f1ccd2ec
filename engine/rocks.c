/*
 * rocks.c — RocksDB options, column families and the meta family.
 *
 * Every column family shares one LRU block cache. Run families never run
 * RocksDB compactions (adaptkv owns the LSM shape) and carry no RocksDB
 * filter (adaptkv's slots are the filters). Memtable families get a write
 * buffer larger than memtable_bytes so RocksDB does not flush them before
 * adaptkv rotates them.
 */
#include <stdlib.h>
#include <string.h>

#include "engine/internal.h"


static rocksdb_options_t *cf_options(akv_db *db, bool auto_compact, int compression)
{
    rocksdb_options_t *o = rocksdb_options_create();
    rocksdb_options_set_block_based_table_factory(o, db->bbto);
    rocksdb_options_set_disable_auto_compactions(o, auto_compact ? 0 : 1);
    rocksdb_options_set_compression(o, compression);
    return o;
}

int akvi_rocks_setup(akv_db *db)
{
    db->cache = rocksdb_cache_create_lru(db->opt.block_cache_bytes ? db->opt.block_cache_bytes : 1 << 20);
    db->bbto = rocksdb_block_based_options_create();
    rocksdb_block_based_options_set_block_cache(db->bbto, db->cache);

    db->dbopt = rocksdb_options_create();
    rocksdb_options_set_create_if_missing(db->dbopt, 1);
    rocksdb_options_set_create_missing_column_families(db->dbopt, 1);
    rocksdb_options_set_use_direct_reads(db->dbopt, db->opt.direct_reads ? 1 : 0);
    rocksdb_options_set_block_based_table_factory(db->dbopt, db->bbto);
    rocksdb_options_set_info_log_level(db->dbopt, 2 /* warn */);
    /* Every run is its own family with its own files: bound the table cache
     * so a large database does not run out of file descriptors. */
    rocksdb_options_set_max_open_files(db->dbopt, 512);

    db->metaopt = cf_options(db, true, rocksdb_no_compression);
    db->memopt = cf_options(db, false, rocksdb_no_compression);
    uint64_t wb = db->opt.memtable_bytes * 2 + (1u << 20);
    rocksdb_options_set_write_buffer_size(db->memopt, (size_t)wb);
    db->runopt = cf_options(db, false, rocksdb_no_compression);
    db->runopt_z = cf_options(db, false, rocksdb_zstd_compression);

    db->wo = rocksdb_writeoptions_create();
    db->wo_sync = rocksdb_writeoptions_create();
    rocksdb_writeoptions_set_sync(db->wo_sync, 1);
    db->ro = rocksdb_readoptions_create();
    db->ro_scan = rocksdb_readoptions_create();
    /* Flush and compaction stream whole runs: keep them out of the cache. */
    rocksdb_readoptions_set_fill_cache(db->ro_scan, 0);
    db->envopt = rocksdb_envoptions_create();
    return AKV_OK;
}

void akvi_rocks_teardown(akv_db *db)
{
    if (db->meta_cf)
        rocksdb_column_family_handle_destroy(db->meta_cf);
    if (db->default_cf)
        rocksdb_column_family_handle_destroy(db->default_cf);
    db->meta_cf = db->default_cf = NULL;
    if (db->rdb)
        rocksdb_close(db->rdb);
    db->rdb = NULL;
    rocksdb_options_t *opts[] = {db->dbopt, db->metaopt, db->memopt, db->runopt, db->runopt_z};
    for (size_t i = 0; i < sizeof opts / sizeof *opts; i++)
        if (opts[i])
            rocksdb_options_destroy(opts[i]);
    if (db->bbto)
        rocksdb_block_based_options_destroy(db->bbto);
    if (db->cache)
        rocksdb_cache_destroy(db->cache);
    if (db->wo)
        rocksdb_writeoptions_destroy(db->wo);
    if (db->wo_sync)
        rocksdb_writeoptions_destroy(db->wo_sync);
    if (db->ro)
        rocksdb_readoptions_destroy(db->ro);
    if (db->ro_scan)
        rocksdb_readoptions_destroy(db->ro_scan);
    if (db->envopt)
        rocksdb_envoptions_destroy(db->envopt);
}

/* Options for a column family by its name's prefix. */
const rocksdb_options_t *akvi_cf_options_for(akv_db *db, const char *name)
{
    if (strncmp(name, "mem.", 4) == 0)
        return db->memopt;
    if (strncmp(name, "run.", 4) == 0 || strncmp(name, "rmap.", 5) == 0)
        return db->runopt;
    return db->metaopt;
}

int akvi_cf_create(akv_db *db, const char *name, int level, rocksdb_column_family_handle_t **out)
{
    char *err = NULL;
    const rocksdb_options_t *o = akvi_cf_options_for(db, name);
    if (level >= 1 && strncmp(name, "run.", 4) == 0)
        o = db->runopt_z;
    *out = rocksdb_create_column_family(db->rdb, o, name, &err);
    if (err) {
        *out = NULL;
        return akvi_rocks_err(err, "creating column family");
    }
    return AKV_OK;
}

void akvi_cf_drop(akv_db *db, rocksdb_column_family_handle_t *cf)
{
    char *err = NULL;
    rocksdb_drop_column_family(db->rdb, cf, &err);
    if (err) {
        /* Not fatal: the next open removes families the catalog does not name. */
        akvi_log(db, "dropping a column family failed: %s", err);
        rocksdb_free(err);
    }
}

int akvi_meta_put(akv_db *db, const char *key, const uint8_t *val, size_t len, bool sync)
{
    char *err = NULL;
    rocksdb_put_cf(db->rdb, sync ? db->wo_sync : db->wo, db->meta_cf, key, strlen(key), (const char *)val,
                   len, &err);
    return err ? akvi_rocks_err(err, "writing the meta family") : AKV_OK;
}

int akvi_meta_get(akv_db *db, const char *key, uint8_t **val, size_t *len)
{
    char *err = NULL;
    size_t n = 0;
    char *v = rocksdb_get_cf(db->rdb, db->ro, db->meta_cf, key, strlen(key), &n, &err);
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

