/*
 * adaptkv.h — public API of adaptkv, an embeddable key-value store whose data
 * lives in RocksDB and whose every SSTable has an adaptive filter slot.
 *
 * Conventions (as in SQLite and LMDB):
 *   - Handles are opaque (akv_db, akv_batch, akv_iter).
 *   - Every function that can fail returns an int result code: AKV_OK (0),
 *     AKV_NOTFOUND (1, not an error) or a negative AKV_E* code (below).
 *     akv_strerror(rc) names the code; akv_errmsg() gives the detailed human
 *     message of the last failure on the calling thread ("key is 70000 bytes;
 *     the limit is 65536", "database was created with layout 'hash', opened
 *     with 'ordered'").
 *   - Buffers returned to the caller are malloc'd; release them with akv_free().
 *
 * Limits: keys are 1 B to 64 KiB, values at most 64 MiB; anything else is
 * AKV_EINVAL with a message, never a truncation.
 *
 * Thread safety: an akv_db may be used from many threads at once. Writers are
 * serialised internally; readers never block writers. A batch or iterator
 * belongs to one thread at a time.
 *
 * Durability: a write acknowledged with sync (the `sync` option, or
 * akv_write(..., sync=1)) survives a crash at any point. Unsynced writes may
 * be lost on a machine crash but never corrupt the database.
 */
#ifndef ADAPTKV_H
#define ADAPTKV_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Result codes. AKV_NOTFOUND is not an error; every error is negative. */
enum {
    AKV_OK = 0,
    AKV_NOTFOUND = 1,   /* key absent (not an error) */
    AKV_EINVAL = -1,    /* bad argument or option */
    AKV_EIO = -2,       /* operating-system or RocksDB I/O failure */
    AKV_ECORRUPT = -3,  /* data failed validation (checksum, bounds, magic) */
    AKV_ENOTSUP = -4,   /* operation not supported by this kind/layout */
    AKV_ENOMEM = -5,    /* allocation failed */
    AKV_EFULL = -6,     /* a fixed-capacity structure is full */
    AKV_EBUSY = -7,     /* resource locked or in use */
    AKV_EEXIST = -8,    /* already exists (e.g. kind name registered twice) */
};

/* Human-readable name of a result code ("invalid argument", …). */
const char *akv_strerror(int rc);

#define AKV_MAX_KEY_BYTES (64u * 1024u)
#define AKV_MAX_VALUE_BYTES (64u * 1024u * 1024u)

/* Data layout, fixed at create time (docs/design.md, "Data layout"). */
typedef enum akv_layout {
    AKV_LAYOUT_HASH = 0,    /* default: hash-ordered data, merged AQF reverse map, no scans */
    AKV_LAYOUT_ORDERED = 1, /* key-ordered data, range scans, split reverse map */
    AKV_LAYOUT_AUTO = 2,    /* open: whatever the database has; create: hash */
} akv_layout;

typedef struct akv_options {
    akv_layout layout;         /* create time only; reopening with another is refused (AUTO accepts any) */
    const char *slot_policy;   /* e.g. "mem=sscf,l0=aqf,l1+=aqf" (default); NULL = default */
    double bits_per_key;       /* filter memory per key; default 10 */
    uint64_t memtable_bytes;   /* rotate the memtable past this; default 64 MiB */
    uint64_t block_cache_bytes;/* shared LRU block cache; default 64 MiB */
    uint64_t sst_target_bytes; /* target SST size in runs; default 64 MiB */
    uint64_t miss_log_bytes;   /* negative-lookup summary budget; default 1 MiB */
    int l0_compaction_trigger; /* L0 runs that trigger a compaction; default 4 */
    int l0_stall_runs;         /* writers stall at this many L0 runs; default 8 */
    int level_multiplier;      /* level i+1 holds this × level i; default 10 */
    int direct_reads;          /* O_DIRECT reads for SSTs (I/O measurements); default 0 */
    int sync;                  /* default for akv_put/akv_delete: fsync the WAL; default 0 */
    int create_if_missing;     /* default 1 */
    int error_if_exists;       /* default 0 */
    uint64_t seed;             /* hash seed at create; 0 = random. Reopening with another non-zero seed is refused */
    /* Warnings (e.g. a filter rebuilt from data) go here; NULL = stderr. */
    void (*log)(void *arg, const char *msg);
    void *log_arg;
} akv_options;

/* Fill with defaults. Always call before setting fields. */
void akv_options_init(akv_options *opt);

typedef struct akv_db akv_db;

/* Open (or create) the database in directory `dir`. On failure *db is NULL
 * and akv_errmsg() says why. */
int akv_open(const char *dir, const akv_options *opt, akv_db **db);

/* Wait for background work, persist the miss log and adapted filters, close.
 * The database is closed either way; an error says something could not be
 * saved (acknowledged writes are safe in RocksDB's WAL). NULL is a no-op. */
int akv_close(akv_db *db);

/* The layout the open database has (never AKV_LAYOUT_AUTO). */
akv_layout akv_db_layout(const akv_db *db);

/* Detailed message for the last failure on this thread ("" if none). */
const char *akv_errmsg(void);

void akv_free(void *p);

/* ---- point operations -------------------------------------------------- */

int akv_put(akv_db *db, const void *key, size_t klen, const void *val, size_t vlen);
int akv_delete(akv_db *db, const void *key, size_t klen);

/* AKV_OK with a malloc'd copy of the value in *val (free with akv_free), or
 * AKV_NOTFOUND. */
int akv_get(akv_db *db, const void *key, size_t klen, void **val, size_t *vlen);

/* What one lookup cost (for benchmarks and the adversarial workload). */
typedef struct akv_get_info {
    uint32_t slots_checked; /* filter slots consulted */
    uint32_t probes;        /* SSTs / memtables actually read */
    uint32_t wasted_probes; /* probes that did not hold the key */
    uint64_t block_reads;   /* RocksDB block_read_count for this lookup */
} akv_get_info;

int akv_get_ex(akv_db *db, const void *key, size_t klen, void **val, size_t *vlen, akv_get_info *info);

/* Declare an absent key costly up front (HABF/SSCF "costed negatives"). */
int akv_hint_negative(akv_db *db, const void *key, size_t klen, double cost);

/* ---- write batches ----------------------------------------------------- */

typedef struct akv_batch akv_batch;

int akv_batch_create(akv_batch **b);
int akv_batch_put(akv_batch *b, const void *key, size_t klen, const void *val, size_t vlen);
int akv_batch_delete(akv_batch *b, const void *key, size_t klen);
void akv_batch_clear(akv_batch *b);
size_t akv_batch_count(const akv_batch *b);
void akv_batch_destroy(akv_batch *b);

/* Apply atomically; sync = 1 fsyncs the WAL before returning. */
int akv_write(akv_db *db, akv_batch *b, int sync);

/* ---- iterators (ordered layout only) ----------------------------------- */

typedef struct akv_iter akv_iter;

/* AKV_ENOTSUP on the hash layout. The iterator sees a consistent snapshot. */
int akv_iter_create(akv_db *db, akv_iter **it);
void akv_iter_seek_first(akv_iter *it);
void akv_iter_seek(akv_iter *it, const void *key, size_t klen); /* first key >= key */
int akv_iter_valid(const akv_iter *it);
void akv_iter_next(akv_iter *it);
const void *akv_iter_key(const akv_iter *it, size_t *klen);   /* valid until next/seek */
const void *akv_iter_value(const akv_iter *it, size_t *vlen); /* valid until next/seek */
int akv_iter_status(const akv_iter *it); /* AKV_OK or the error that ended iteration */
/* RocksDB blocks read from storage (block-cache misses) by this iterator's
 * seeks and steps so far: the scan counterpart of akv_get_info.block_reads. */
uint64_t akv_iter_block_reads(const akv_iter *it);
void akv_iter_destroy(akv_iter *it);

/* ---- maintenance ------------------------------------------------------- */

/* Turn the memtable into an L0 run now and wait for it. */
int akv_flush(akv_db *db);
/* Flush, then compact every level down into the last one, and wait. */
int akv_compact(akv_db *db);

/* ---- statistics -------------------------------------------------------- */

#define AKV_MAX_LEVELS 8

typedef struct akv_stats {
    uint64_t puts, deletes, gets;
    uint64_t negative_lookups; /* gets that found nothing */
    uint64_t probes;           /* SSTs (and memtables) read by gets */
    uint64_t wasted_probes;    /* probes that did not hold the key */
    uint64_t slot_queries;     /* filter slots consulted */
    uint64_t slot_filtered;    /* slots that said "no" */
    uint64_t false_positives;  /* = wasted probes caused by a slot's "maybe" */
    uint64_t adaptations;      /* false positives fixed by adaptive slots */
    uint64_t block_reads;      /* RocksDB block_read_count over all gets */
    uint64_t flushes, compactions, write_stalls;
    uint64_t bytes_written_user;  /* key+value bytes written by the application */
    uint64_t bytes_written_disk;  /* SST bytes written by flush and compaction */
    uint64_t filter_bytes;        /* memory of all filter slots */
    uint64_t live_keys_estimate;  /* keys in runs (with shadowed duplicates) */
    uint32_t levels;              /* non-empty levels (runs), not counting memtables */
    uint32_t memtables;
    uint32_t runs_per_level[AKV_MAX_LEVELS];
    uint32_t ssts_per_level[AKV_MAX_LEVELS];
    uint64_t keys_per_level[AKV_MAX_LEVELS];
} akv_stats;

int akv_get_stats(akv_db *db, akv_stats *st);
/* One line of JSON with every field above (malloc'd; akv_free). */
int akv_stats_json(akv_db *db, char **json);

/* One row per filter slot (memtable guard first, then runs by level). */
typedef struct akv_slot_info {
    int level;            /* -1 for the memtable guard */
    uint64_t run, sst;
    char kind[16];
    uint64_t keys;
    double bits_per_key;
    uint64_t queries, filtered, probes, false_positives, adaptations;
} akv_slot_info;

/* malloc'd array in *rows (akv_free), count in *n. */
int akv_slots(akv_db *db, akv_slot_info **rows, size_t *n);

#ifdef __cplusplus
}
#endif
#endif
