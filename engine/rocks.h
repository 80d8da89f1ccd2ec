/*
 * rocks.h — the RocksDB instance under the database (rocks.c): its handle,
 * the options of each kind of column family, the shared block cache, the
 * fixed families (meta, default), and the helpers over them.
 */
#ifndef AKVI_ROCKS_H
#define AKVI_ROCKS_H

#include <rocksdb/c.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "adaptkv/adaptkv.h"

/* RocksDB's part of akv_db. Set by open and repair (akvi_rocks_setup,
 * then the instance's open) before any other thread of the database
 * starts, read-only while it runs, freed by akvi_rocks_teardown after the
 * last one has stopped: no lock. RocksDB's handles are thread-safe. */
typedef struct akvi_rocks {
    rocksdb_t *rdb;
    rocksdb_options_t *dbopt, *metaopt, *memopt, *runopt, *runopt_z;
    rocksdb_block_based_table_options_t *bbto, *bbto_run; /* families; run families */
    rocksdb_cache_t *cache;                               /* shared with the run files' readers */
    rocksdb_writeoptions_t *wo, *wo_sync;
    rocksdb_readoptions_t *ro, *ro_scan;
    rocksdb_column_family_handle_t *meta_cf;
    rocksdb_column_family_handle_t *default_cf;
} akvi_rocks;

/* "\0": where scans of a family start, after the empty key under which a
 * memtable family records its generation (mempool.c). */
extern const char akvi_scan_lower_bound[1];

int akvi_rocks_setup(akv_db *db);
void akvi_rocks_teardown(akv_db *db);
/* Close the instance, its fixed families' handles destroyed first (every
 * other family's handle must be destroyed by then); the options stay for
 * the next open. */
void akvi_rocks_close(akv_db *db);
int akvi_cf_create(akv_db *db, const char *name, int level, rocksdb_column_family_handle_t **out);
const rocksdb_options_t *akvi_cf_options_for(akv_db *db, const char *name);
void akvi_cf_drop(akv_db *db, rocksdb_column_family_handle_t *cf);
/* Stops background work and writes until reopen, keeping the first error:
 * after any failed flush, compaction, write or change of column families
 * (docs/reliability.md). Not under bg.mu. Returns rc. */
int akvi_stop(akv_db *db, int rc);
int akvi_meta_put(akv_db *db, const char *key, const uint8_t *val, size_t len, bool sync);
/* AKV_NOTFOUND when absent; *val malloc'd. */
int akvi_meta_get(akv_db *db, const char *key, uint8_t **val, size_t *len);
/* Flush the meta family (lets RocksDB retire old WAL files). */
void akvi_meta_flush(akv_db *db, bool wait);
/* One SST file as RocksDB's MANIFEST records it. */
typedef struct akvi_live_sst {
    char *cf, *name;             /* family; file name relative to DIR/rocksdb ("/000012.sst") */
    uint64_t size, entries;      /* entries: 0 when RocksDB has not loaded them */
    uint8_t *smallest, *largest; /* first and last (internal adaptkv) key */
    size_t smallest_len, largest_len;
} akvi_live_sst;
/* Every live SST file, sorted by family name, then smallest key. */
int akvi_live_ssts(rocksdb_t *rdb, akvi_live_sst **out, size_t *n);
/* The files of family cf: count, index of the first in *first. */
size_t akvi_live_ssts_of(const akvi_live_sst *l, size_t n, const char *cf, size_t *first);
void akvi_live_ssts_free(akvi_live_sst *l, size_t n);
/* Entries in all SST files of a family (read from every file's table
 * properties: RocksDB's per-file counts are often not loaded). */
int akvi_cf_entries(rocksdb_t *rdb, rocksdb_column_family_handle_t *cf, uint64_t *entries);
/* RocksDB blocks this thread has read from storage (its perf context,
 * enabled on first use); callers take differences. */
uint64_t akvi_thread_block_reads(void);

#endif
