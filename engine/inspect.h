/*
 * inspect.h — one read-only look at a database directory (inspect.c): the
 * catalog against RocksDB's families and files, the filter and run
 * directories, and the memtable families, returned as typed findings
 * (damage.h). Open (recover.c) and repair (repair.c) are two policies over
 * the same findings: open refuses the kinds the damage table refuses and
 * acts on the rest; repair acts on all of them.
 */
#ifndef AKVI_INSPECT_H
#define AKVI_INSPECT_H

#include "engine/catalog.h"
#include "engine/damage.h"
#include "engine/internal.h"

/* What a directory holds before RocksDB opens it. */
typedef enum akvi_dir_kind {
    AKVI_DIR_IDENTIFIED,   /* an identity (layout and seed) */
    AKVI_DIR_UNIDENTIFIED, /* rocksdb/CURRENT and no identity: format 1, or a create interrupted before it */
    AKVI_DIR_NEW           /* nothing of adaptkv's: to be created */
} akvi_dir_kind;

/* The identity file and rocksdb/CURRENT, read before RocksDB opens: the
 * kind of directory, the identity's layout and seed (when identified), and
 * damage as findings (an identity that does not read; CURRENT missing
 * where an identity or other adaptkv files say it was there). Nothing
 * changes. Errors: AKV_ENOMEM. */
int akvi_inspect_dir(akv_db *db, akvi_findings *F, akvi_dir_kind *kind, uint32_t *layout, uint64_t *seed);

typedef struct akvi_inspection {
    akvi_findings found;
    /* Per family of the inspected set: the memtable generation it holds
     * above the catalog's flushed one (0: none, or a leftover), and for a
     * family of the memtable pool its state (AKVI_POOL_BUSY, _STALE or
     * _FREE). */
    uint64_t *gen;
    uint8_t *pool;
} akvi_inspection;

/* Inspect db's directory against catalog c, RocksDB open (read only, or
 * for writing) with the families cfs. Nothing on disk or in cfs changes;
 * damage is a finding, not an error. Errors: AKV_ENOMEM; AKV_EIO when
 * RocksDB cannot report its files or a directory cannot be read. */
int akvi_inspect(akv_db *db, const akvi_catalog *c, const akvi_cf_set *cfs, akvi_inspection *out);
void akvi_inspection_free(akvi_inspection *I);

/* Before RocksDB replays its WAL: read the WAL files (wal.c) and say what
 * the replay will drop, since RocksDB recovers up to the first damaged
 * record (point in time) and drops the rest without a word. Damage is
 * logged and counted in akv_stats; with `strict`, refused (AKV_ECORRUPT)
 * before anything is changed. The finding's text also goes into
 * note[0..cap) (repair's report). Errors: AKV_EIO reading the files. */
int akvi_wal_damage(akv_db *db, bool strict, char *note, size_t cap);

#endif
