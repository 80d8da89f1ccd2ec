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
 *   - Each function's comment lists what it returns ("Returns ..."), or says
 *     it cannot fail. Write errors are sticky: after a failed write, flush
 *     or compaction (an I/O error in RocksDB or a filter file), writes,
 *     akv_flush and akv_compact return that error until the database is
 *     reopened (docs/reliability.md); reads go on.
 *
 * Public API: every function declared AKV_API here, in adaptkv/filter.h and in
 * adaptkv/hash.h (adaptkv/api.h); the shared library exports those and nothing
 * else. Usable from C and C++ (the declarations are extern "C").
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

#include "adaptkv/api.h"

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

/* Human-readable name of a result code ("invalid argument", …). Cannot
 * fail: returns a static string, "unknown error" for a code not listed
 * above. */
AKV_API const char *akv_strerror(int rc);

/* The release this header belongs to (MAJOR.MINOR.PATCH; the shared
 * library's file is libadaptkv.so.MAJOR.MINOR.PATCH, its SONAME
 * libadaptkv.so.<ABI>, changed on any incompatible change of the API). */
#define AKV_VERSION_MAJOR  0
#define AKV_VERSION_MINOR  1
#define AKV_VERSION_PATCH  0
#define AKV_VERSION_STRING "0.1.0"
/* One comparable number: MAJOR * 10000 + MINOR * 100 + PATCH. */
#define AKV_VERSION_NUMBER (AKV_VERSION_MAJOR * 10000 + AKV_VERSION_MINOR * 100 + AKV_VERSION_PATCH)

/* The release of the library linked at run time, which may differ from the
 * header's AKV_VERSION_* a program was built with (as LMDB's mdb_version,
 * SQLite's sqlite3_libversion). Stores its parts in the non-NULL arguments
 * and returns "MAJOR.MINOR.PATCH" (static; never NULL). Cannot fail. */
AKV_API const char *akv_version(int *major, int *minor, int *patch);

#define AKV_MAX_KEY_BYTES (64u * 1024u)
#define AKV_MAX_VALUE_BYTES (64u * 1024u * 1024u)

/* Data layout, fixed at create time (docs/design.md, "Data layout"). */
typedef enum akv_layout {
    AKV_LAYOUT_HASH = 0,    /* default: hash-ordered data, merged AQF reverse map; iterators
                               walk every key in hash order, no key ranges */
    AKV_LAYOUT_ORDERED = 1, /* key-ordered data, range scans, split reverse map */
    AKV_LAYOUT_AUTO = 2,    /* open: whatever the database has; create: hash */
} akv_layout;

typedef struct akv_options {
    akv_layout layout;         /* create time only; reopening with another is refused (AUTO accepts any) */
    /* The slot policy and filter memory per key are stored with the
     * database (akv_open). Unset (NULL or "", and 0: what akv_options_init
     * leaves) means the database's own, or at create 10 bits/key and the
     * default policy for the budget: "mem=sscf,l0+=ablocked" below 12
     * bits/key, "mem=sscf,l0+=aqf" from 12 up. */
    const char *slot_policy;   /* e.g. "mem=sscf,l0=aqf,l1+=blocked"; NULL = unset */
    /* Filter memory per key, (0, 64]; 0 = unset. It bounds all filter
     * memory, the memtable guard's included (beyond the guard's fixed
     * minimum of 4096 keys' worth); the runs' slots average what the guard
     * leaves: smaller runs get more, the deepest level less (docs/design.md,
     * "Filter memory by level"). */
    double bits_per_key;
    uint64_t memtable_bytes;   /* rotate the memtable past this; default 64 MiB */
    uint64_t block_cache_bytes;/* shared LRU block cache; default 64 MiB */
    uint64_t sst_target_bytes; /* target SST size in runs; default 64 MiB */
    uint64_t miss_log_bytes;   /* negative-lookup summary budget; default 1 MiB */
    /* L0 is measured in flushed memtables: a run merged from several L0
     * runs counts as all of them (docs/design.md, "LSM shape"). */
    int l0_compaction_trigger; /* L0 runs that trigger a compaction; default 4 */
    int l0_stall_runs;         /* writers stop at this many L0 runs; default 36 (RocksDB's) */
    int level_multiplier;      /* level i+1 holds this × level i; default 10 */
    int direct_reads;          /* O_DIRECT reads for SSTs (I/O measurements); default 0 */
    int sync;                  /* default for akv_put/akv_delete: fsync the WAL; default 0 */
    int create_if_missing;     /* default 1 */
    int error_if_exists;       /* default 0 */
    uint64_t seed;             /* hash seed at create; 0 = random. Reopening with another non-zero seed is refused */
    /* Warnings (e.g. a filter rebuilt from data) go here; NULL = stderr. */
    void (*log)(void *arg, const char *msg);
    void *log_arg;
    int l0_slowdown_runs;      /* writers slow down (rate-limited) from this many L0 runs;
                                  0 (default) = half-way between the trigger and l0_stall_runs
                                  (20 with the defaults, as RocksDB's) */
    /* How far adaptive filters that ran out of room may take all filter
     * memory over its budget (bits_per_key over the runs' keys), as a
     * share of it (16 KiB while the budget is under 128 KiB): a full
     * filter grows
     * (rebuilt larger) while the total with the growth stays within this,
     * and is refilled at its own size past it, forgetting its older
     * adaptations; the slots built afterwards give the excess back
     * (docs/design.md, "A full adaptive filter grows"). [0, 64]; default
     * 0.03, so the total stays within 5 % of the budget. A larger share
     * keeps more repeated false positives fixed when they outnumber the
     * filters' room, at that much more memory; 0 never grows. */
    double grown_filter_share;
    /* Compaction at rest: once nothing has been written since the last
     * flush and no compaction is due, push runs above the deepest level
     * down, one step at a time (a write stops it after the step in
     * progress; docs/design.md, "LSM shape"). 1 (default, bounded): L0
     * into L1, then one upper run at a time, the cheapest for the lookups
     * it takes off, until the levels above the deepest are checked by at
     * most a quarter of the lookups, and only while the raw bytes it
     * rewrites stay within what users have written (less what earlier
     * rests rewrote): at most one more unit of write amplification over
     * the database's life. 2: everything into the deepest level, whatever
     * it costs (one filter per absent key; in the hash layout most of the
     * database is rewritten after each burst of writes). 0: off. */
    int rest_compaction;
    /* A damaged WAL (a record failing its checksum, or the last file
     * ending inside a record): 0 (default) recovers every write before the
     * damage and drops the rest, with a warning and a count in akv_stats
     * (RocksDB's point-in-time recovery); 1 refuses the open with
     * AKV_ECORRUPT naming the file, the directory left as it was (an open
     * without it, or akv_repair, then recovers up to the damage). */
    int wal_strict;
    /* L0 fronts: 1 (default) puts the L0 runs flushed since the last L0
     * compaction behind one Bloom filter, so that an absent key checks it
     * instead of each of them, at half of bits_per_key per key, counted in
     * the budget and taken back from those runs' slots (docs/design.md,
     * "The L0 front"). 0: off, every L0 run's slot is checked. Needs the
     * memtable guard (a slot policy with mem= other than none). */
    int l0_front;
} akv_options;

/* Fill with defaults; slot_policy and bits_per_key are left unset (NULL,
 * 0). Always call before setting fields. Cannot fail (`opt` must not be
 * NULL). */
AKV_API void akv_options_init(akv_options *opt);

typedef struct akv_db akv_db;

/* Open (or create) the database in directory `dir`. On failure *db is NULL
 * and akv_errmsg() says why. `opt` may be NULL (defaults).
 *
 * The slot policy and bits_per_key are stored with the database: a create
 * records the ones given (or the defaults); an open with them unset uses
 * the stored ones. An open that sets them differently uses the new ones
 * for every SST built from then on (flushes, compactions) and for the
 * memtable guard; existing SSTs keep the filter kinds they have (a slot
 * rebuilt from its SST keeps its kind and takes the new bits_per_key). The
 * new ones become the stored ones, and the open says so in one line
 * through the log hook ("slot policy changed from ... to ..."). An open
 * with nothing changed logs nothing.
 *
 * Besides the argument checks (AKV_EINVAL), an existing database whose
 * stored policy does not parse (damaged, or naming a filter kind not
 * registered) is refused with AKV_ECORRUPT naming the catalog file; see
 * akv_repair. Damage open repairs by itself, with a warning through the
 * log hook: leftovers of an interrupted flush or compaction (families,
 * files, an SST RocksDB removed of a run no catalog names), filter files
 * rebuilt from their SSTs. Damage it cannot account for is refused with
 * AKV_ECORRUPT naming akv_repair, the directory left as it was
 * (docs/reliability.md, "Damage and what open does"); AKV_EIO when a read
 * or write fails. One handle at a time: open takes the database's lock
 * before it reads anything, and a database another handle holds (in this
 * process or another) gets AKV_EBUSY.
 *
 * Returns AKV_OK, or
 *   AKV_EINVAL   NULL dir or db, an option out of range, a layout or seed
 *                other than the database's, or no database in `dir` with
 *                create_if_missing off;
 *   AKV_EEXIST   a database exists in `dir` and error_if_exists is on;
 *   AKV_EBUSY    another handle, in this process or another, holds the
 *                database;
 *   AKV_ECORRUPT damage open cannot account for (see above), or a damaged
 *                WAL with wal_strict set;
 *   AKV_EIO      a read or write failed, or RocksDB refused (its message
 *                says why);
 *   AKV_ENOMEM   out of memory. */
AKV_API int akv_open(const char *dir, const akv_options *opt, akv_db **db);

/* Wait for background work, persist the miss log and adapted filters, close.
 * The database is closed either way; an error says something could not be
 * saved (acknowledged writes are safe in RocksDB's WAL). NULL is a no-op.
 * Errors: the error that stopped the database, when an earlier write or
 * background job failed (the miss log is then not saved); AKV_EIO when
 * writing the miss log failed or RocksDB's own background work (a flush or
 * compaction of the meta family) reported an error, which its LOG
 * describes; the save's own code (AKV_EIO, AKV_ENOMEM) when an adapted
 * filter could not be saved. */
AKV_API int akv_close(akv_db *db);

/* The layout the open database has (never AKV_LAYOUT_AUTO). Cannot fail. */
AKV_API akv_layout akv_db_layout(const akv_db *db);

/* The slot policy in effect for SSTs built from now on, in canonical form
 * with every part named ("mem=sscf,l0=aqf,l1+=blocked"; the form stored
 * with the database). Valid until akv_close. Cannot fail. */
AKV_API const char *akv_db_slot_policy(const akv_db *db);
/* The filter kind that policy gives new slots of run level `level`
 * (0 .. AKV_MAX_LEVELS-1), or the memtable guard (level -1): a kind name,
 * or "none" (no guard). Returns NULL for any other level. Existing slots
 * may have other kinds after a policy change: akv_slots lists them. */
AKV_API const char *akv_db_policy_kind(const akv_db *db, int level);
/* The filter memory per key new slots are built with (stored or given).
 * Cannot fail. */
AKV_API double akv_db_bits_per_key(const akv_db *db);

/* Detailed message for the last failure on this thread ("" if none); valid
 * until the thread's next call into adaptkv. Cannot fail. */
AKV_API const char *akv_errmsg(void);

/* Release a buffer adaptkv returned (akv_get values, akv_stats_json,
 * akv_slots rows, akv_repair_report.text). NULL is a no-op. */
AKV_API void akv_free(void *p);

/* ---- point operations -------------------------------------------------- */

/* Store `val` under `key` (1 B to AKV_MAX_KEY_BYTES; the value up to
 * AKV_MAX_VALUE_BYTES, may be empty), replacing any value; fsyncs the WAL
 * first when the `sync` option is set. A write may wait while background
 * work is far behind (docs/design.md, "LSM shape").
 * Returns AKV_OK, or
 *   AKV_EINVAL   NULL db or key, NULL val with vlen > 0, or a key or value
 *                out of the limits;
 *   AKV_EIO      RocksDB could not write (its WAL, or a new memtable
 *                family); writes stop until reopen;
 *   AKV_ENOMEM   out of memory;
 *   the error of an earlier failed write, flush or compaction (writes are
 *   stopped until reopen), or AKV_EBUSY while the database is closing. */
AKV_API int akv_put(akv_db *db, const void *key, size_t klen, const void *val, size_t vlen);
/* Delete `key`; deleting an absent key is not an error. Returns what
 * akv_put returns. */
AKV_API int akv_delete(akv_db *db, const void *key, size_t klen);

/* Look up `key`. On AKV_OK *val holds a malloc'd copy of the value (free
 * with akv_free) and *vlen its length. `val` may be NULL: the call then only
 * tests presence (nothing is copied); `vlen` may be NULL. akv_get_pinned
 * reads without the copy.
 * Returns AKV_OK; AKV_NOTFOUND when the key is absent or deleted (not an
 * error; *val untouched); AKV_EINVAL for a NULL db or key, or a key out of
 * the limits; AKV_EIO when RocksDB cannot read (a damaged block);
 * AKV_ECORRUPT when a stored value fails validation; AKV_ENOMEM. */
AKV_API int akv_get(akv_db *db, const void *key, size_t klen, void **val, size_t *vlen);

/* What one lookup cost (for benchmarks and the adversarial workload). */
typedef struct akv_get_info {
    uint32_t slots_checked; /* filter slots consulted, the memtable guard's included */
    uint32_t probes;        /* SSTs / memtables actually read */
    uint32_t wasted_probes; /* probes that did not hold the key */
    uint64_t block_reads;   /* RocksDB block_read_count for this lookup */
    uint32_t mem_probes;    /* of `probes`, memtables (in memory: no disk read) */
    uint32_t mem_wasted;    /* of `wasted_probes`, memtables */
} akv_get_info;

/* akv_get, and what the lookup cost in *info (when not NULL).
 * Returns what akv_get returns. */
AKV_API int akv_get_ex(akv_db *db, const void *key, size_t klen, void **val, size_t *vlen, akv_get_info *info);

/* ---- reads without a copy ----------------------------------------------- */

/* A value the caller reads in place, as RocksDB's PinnableSlice or LMDB's
 * MDB_val: no malloc, no copy of the value. */
typedef struct akv_pinned akv_pinned;

/* Look up `key` as akv_get does; on AKV_OK *pin holds the value, readable
 * with akv_pinned_value until akv_pinned_release(*pin). While held, a pin
 * keeps the data it was read from (a block in the block cache, the run
 * that holds it) from being freed, as an iterator does: release it soon,
 * and always before akv_close. *pin is NULL unless AKV_OK.
 * Returns AKV_OK; AKV_NOTFOUND when the key is absent or deleted;
 * AKV_EINVAL for a NULL argument or a key of 0 or more than
 * AKV_MAX_KEY_BYTES bytes; AKV_EIO when RocksDB cannot read; AKV_ECORRUPT
 * when a stored value fails validation; AKV_ENOMEM. */
AKV_API int akv_get_pinned(akv_db *db, const void *key, size_t klen, akv_pinned **pin);
/* The pinned value and its length in *vlen (may be NULL); NULL (and 0) for
 * a NULL pin. Cannot fail. */
AKV_API const void *akv_pinned_value(const akv_pinned *pin, size_t *vlen);
/* Let go of the value. NULL is a no-op. */
AKV_API void akv_pinned_release(akv_pinned *pin);

/* Declare an absent key costly up front (HABF/SSCF "costed negatives"): the
 * miss log weighs it by `cost` (>= 0) as if it had caused that many wasted
 * probes, so costed filter kinds learn it at their next build.
 * Returns AKV_OK, or AKV_EINVAL (NULL db or key, a key out of the limits,
 * a negative or NaN cost). */
AKV_API int akv_hint_negative(akv_db *db, const void *key, size_t klen, double cost);

/* ---- write batches ----------------------------------------------------- */

typedef struct akv_batch akv_batch;

/* A new, empty batch in *b (NULL on failure).
 * Returns AKV_OK, or AKV_EINVAL (NULL b), AKV_ENOMEM. */
AKV_API int akv_batch_create(akv_batch **b);
/* Add a put or a delete (copied; the limits of akv_put and akv_delete).
 * Later operations on a key win within a batch.
 * Returns AKV_OK, or AKV_EINVAL (NULL argument, a key or value out of the
 * limits; the batch is unchanged), AKV_ENOMEM. */
AKV_API int akv_batch_put(akv_batch *b, const void *key, size_t klen, const void *val, size_t vlen);
AKV_API int akv_batch_delete(akv_batch *b, const void *key, size_t klen);
/* Empty the batch for reuse. NULL is a no-op. */
AKV_API void akv_batch_clear(akv_batch *b);
/* Operations in the batch (0 for NULL). Cannot fail. */
AKV_API size_t akv_batch_count(const akv_batch *b);
/* Free the batch. NULL is a no-op. */
AKV_API void akv_batch_destroy(akv_batch *b);

/* Apply atomically: a reader or a crash sees all of the batch or none of
 * it; sync = 1 fsyncs the WAL before returning. The batch is left as it was
 * (clear or destroy it). An empty batch is AKV_OK and writes nothing.
 * Returns what akv_put returns (AKV_EINVAL for a NULL db or batch). */
AKV_API int akv_write(akv_db *db, akv_batch *b, int sync);

/* ---- iterators ----------------------------------------------------------- */

/* An iterator walks every live key once. Ordered layout: in key order
 * (bytewise, a shorter key before its extensions). Hash layout: in hash
 * order, an order unrelated to the keys (the same for the same data); use
 * it to list, count, dump or copy a database, not for key ranges. */
typedef struct akv_iter akv_iter;

/* The iterator sees a consistent snapshot: exactly the writes acknowledged
 * before this call. It pins that snapshot (data it covers stays on disk)
 * until akv_iter_destroy, which must come before akv_close. It starts
 * unpositioned: seek first.
 * Returns AKV_OK, or AKV_EINVAL (NULL argument), AKV_ENOMEM. */
AKV_API int akv_iter_create(akv_db *db, akv_iter **it);
/* The first key. Seeks and steps return nothing: check akv_iter_valid,
 * then akv_iter_status (an error ends the iteration). */
AKV_API void akv_iter_seek_first(akv_iter *it);
/* Ordered layout: the first key >= key. Hash layout: the key's own place in
 * hash order (the key if it is live, else the next one in that order), so a
 * scan can resume after the last key it returned. An empty key (klen 0) is
 * akv_iter_seek_first. Returns nothing: see akv_iter_valid and
 * akv_iter_status. */
AKV_API void akv_iter_seek(akv_iter *it, const void *key, size_t klen);
/* The last key (below the upper bound, when one is set). Returns nothing:
 * see akv_iter_valid and akv_iter_status. */
AKV_API void akv_iter_seek_last(akv_iter *it);
/* Returns non-zero while positioned on a key; 0 past either end, at or
 * past the upper bound, after an error (akv_iter_status says which) or for
 * NULL. */
AKV_API int akv_iter_valid(const akv_iter *it);
/* The key after the current one. Returns nothing; a no-op on an iterator
 * that is not valid. */
AKV_API void akv_iter_next(akv_iter *it);
/* The key before the current one (in the layout's order); past the first,
 * the iterator is no longer valid. Returns nothing; a no-op on an
 * iterator that is not valid. */
AKV_API void akv_iter_prev(akv_iter *it);
/* Ordered layout: keys from `key` on (exclusive, as RocksDB's
 * iterate_upper_bound) are not shown: a step onto one ends the iteration,
 * and akv_iter_seek_last goes to the last key before it. The key is copied;
 * NULL removes the bound. It applies from the next seek or step.
 * Returns AKV_OK, or AKV_ENOTSUP on the hash layout (no key order),
 * AKV_EINVAL (NULL iterator, key longer than AKV_MAX_KEY_BYTES),
 * AKV_ENOMEM. */
AKV_API int akv_iter_set_upper_bound(akv_iter *it, const void *key, size_t klen);
/* The current key and value, read in place: valid until the next seek or
 * step. NULL (length 0) when the iterator is not valid. Cannot fail. */
AKV_API const void *akv_iter_key(const akv_iter *it, size_t *klen);
AKV_API const void *akv_iter_value(const akv_iter *it, size_t *vlen);
/* Returns AKV_OK, or the error that ended the iteration: AKV_EIO (RocksDB could
 * not read), AKV_ECORRUPT (a run read back other than the catalog records
 * it, naming the run and SST; see akv_repair), AKV_ENOMEM; AKV_EINVAL for
 * NULL. Reaching the end is not an error. */
AKV_API int akv_iter_status(const akv_iter *it);
/* RocksDB blocks read from storage (block-cache misses) by this iterator's
 * seeks and steps so far: the scan counterpart of akv_get_info.block_reads.
 * Cannot fail (0 for NULL). */
AKV_API uint64_t akv_iter_block_reads(const akv_iter *it);
/* Release the iterator and its snapshot. NULL is a no-op. */
AKV_API void akv_iter_destroy(akv_iter *it);

/* ---- maintenance ------------------------------------------------------- */

/* Turn the memtable into an L0 run now and wait for it, and for the
 * filters adapted so far to be saved to their files (the background
 * threads save them at most every 10 s otherwise). An empty memtable is
 * not flushed.
 * Returns AKV_OK, or AKV_EINVAL (NULL db); the error that stopped the
 * background work (AKV_EIO, AKV_ECORRUPT naming a damaged run, AKV_ENOMEM;
 * sticky until reopen); AKV_EIO or AKV_ENOMEM when the new memtable cannot
 * be created. */
AKV_API int akv_flush(akv_db *db);
/* Flush, then compact every level down into the last one, and wait.
 * Returns what akv_flush returns; a failed compaction's error is sticky as
 * well. */
AKV_API int akv_compact(akv_db *db);

/* ---- backup ------------------------------------------------------------ */

/*
 * A consistent point-in-time copy of the open database in the new directory
 * `dir` (it must not exist; its parent must), taken while other threads
 * read and write: it holds every write acknowledged before the call and
 * none that starts after it returned, and akv_open opens it as a database
 * of its own (same layout, seed, policy and data). Immutable files (SSTs,
 * filter files) are hard-linked where the filesystem allows, so on the
 * same filesystem it costs little space until the database moves on; the
 * rest (WAL, catalog, RocksDB's manifest) is copied and synced. Flushes
 * and compactions wait while it is taken; writers do not.
 * To restore: close the database and open the copy in its place
 * (docs/design.md, "Backup and restore").
 *
 * Returns AKV_OK, or
 *   AKV_EINVAL   NULL or empty argument;
 *   AKV_EEXIST   `dir` exists;
 *   AKV_EIO      a file could not be created, linked, copied or synced, or
 *                RocksDB's checkpoint failed (nothing is left in `dir`);
 *   AKV_ENOMEM   out of memory.
 */
AKV_API int akv_checkpoint(akv_db *db, const char *dir);

/* ---- repair ------------------------------------------------------------ */

/* What akv_repair found and did. Counts are of entries (puts and
 * tombstones) and files; `text` has one line per finding, each also sent
 * to the log hook. */
typedef struct akv_repair_report {
    uint32_t runs_kept;       /* runs found whole and kept as they were */
    uint32_t runs_rewritten;  /* runs rewritten from what could be read of them */
    uint32_t runs_dropped;    /* leftovers the catalog accounts for, or runs with nothing readable */
    uint32_t ssts_restored;   /* SST files RocksDB's MANIFEST had forgotten, ingested again */
    uint32_t ssts_damaged;    /* SSTs some entries of which could not be read */
    uint32_t files_set_aside; /* files not recognised, moved to DIR/lost/ (never deleted) */
    uint32_t filters_rebuilt; /* filter files written from data */
    uint32_t memtables_kept, memtables_dropped;
    uint64_t entries_kept; /* entries in the repaired runs */
    uint64_t entries_lost; /* entries recorded (catalog, filter files) that could not be read */
    char *text;            /* malloc'd; release with akv_free */
} akv_repair_report;

/*
 * Repair the database in `dir` after damage, as LevelDB's and RocksDB's
 * repair do: salvage what the run families and SST files still hold,
 * rebuild the catalog and every filter, and report exactly what was lost.
 * Every refusal of akv_open that names akv_repair can be resolved by it;
 * repair ends by opening the database with every check of akv_open, and
 * where that open still refuses, repair fails with AKV_ECORRUPT saying it
 * cannot fix what the open names (a report of "0 lost" is never followed
 * by a refused open).
 * The database must not be open: repair takes the database's lock before
 * it reads, moves or writes anything, and a database another handle holds
 * (in this process or another) gets AKV_EBUSY, untouched. `opt` may be NULL (defaults); its layout
 * and seed, when given, must match the database's; its log hook receives
 * the findings. `report` may be NULL; otherwise release report->text.
 *
 * What repair does, in order (docs/reliability.md, "Repair"):
 *   - a missing rocksdb/CURRENT is restored, pointing to the newest
 *     MANIFEST that opens;
 *   - SST files RocksDB's MANIFEST no longer records are set aside before
 *     RocksDB could delete them, identified by their keys against the
 *     catalog and the filter files, and ingested again into their run;
 *   - every run is read in full: a run whose every SST reads back as
 *     recorded is kept; a damaged one is rewritten from what can be read
 *     (reads step over unreadable blocks), its losses counted;
 *   - runs newer than the catalog are kept in the order their levels and
 *     ids give; leftovers the catalog accounts for are dropped;
 *   - the catalog, the identity and every filter file are written anew.
 * Keys whose newest version was lost may afterwards answer with an older
 * version or as not found: repair cannot know what it never read.
 *
 * Returns AKV_OK (even when data was lost: see the report), or
 *   AKV_EINVAL   bad arguments, or opt's layout/seed differ from the database's;
 *   AKV_ECORRUPT nothing says what the database's hash seed is (no identity,
 *                catalog or meta record survives), or RocksDB's own files are
 *                beyond what repair restores (no MANIFEST opens);
 *   AKV_EIO      a read or write failed;
 *   AKV_ENOMEM   out of memory.
 */
AKV_API int akv_repair(const char *dir, const akv_options *opt, akv_repair_report *report);

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
    uint64_t write_slowdowns;     /* writes delayed (rate-limited) while L0 or the flushes lag */
    /* SST bytes written into each level (flushes into L0); divided by
     * bytes_written_user, the write amplification of that level. */
    uint64_t bytes_written_per_level[AKV_MAX_LEVELS];
    /* Compaction debt: raw bytes over the levels' capacities, plus all of
     * L0 once it holds l0_compaction_trigger runs; when none of that is
     * owed and nothing has been written since the last flush, the bytes
     * the next step of compaction at rest rewrites (rest_compaction). 0
     * when no compaction is due: it falls to 0 when background work has
     * caught up. */
    uint64_t compaction_debt_bytes;
    /* Share (0..1) of the recent negative lookups whose key the miss log
     * kept rather than lost to its budget (miss_log_bytes); 1 before any.
     * Below 0.9 slots the policy gives a costed kind (habf) are built as
     * ablocked: raise miss_log_bytes to train them. */
    double miss_log_coverage;
    /* Full adaptive filters that grew (rebuilt larger), and that were
     * refilled in place instead (rebuilt at their size, forgetting old
     * adaptations) because grown filters had used their share of
     * bits_per_key (docs/design.md, "A full adaptive filter grows"). */
    uint64_t filter_grows, filter_refills;
    /* L0 merges: the newest L0 runs merged into one while a compaction
     * ran, so a lookup checks fewer L0 filters (counted apart from
     * `compactions`). */
    uint64_t l0_merges;
    /* Column families created and dropped, and ingestions into them
     * (one of each per run written), and the microseconds they took.
     * RocksDB holds every writer while it records each of them in its
     * MANIFEST, so this time is write latency (docs/design.md, "LSM
     * shape"). family_creates and family_drops count the creates and
     * drops among family_ops (a create or a drop also rewrites RocksDB's
     * OPTIONS file); the rest are ingestions. */
    uint64_t family_ops, family_op_us;
    uint64_t family_creates, family_drops;
    /* Memtable families of the pool emptied after their memtable's flush
     * (a range deletion, a RocksDB flush and a compaction of the family, on
     * a background thread, not counted in family_ops), and the
     * microseconds that took (docs/design.md, "Data layout"). */
    uint64_t memtable_empties, memtable_empty_us;
    /* WAL files this open recovered only up to damage (a record failing
     * its checksum, or a file ending inside a record), and the records
     * (write batches) RocksDB's point-in-time replay dropped after it;
     * each such recovery is also logged through the log hook naming the
     * file, the byte and the counts (docs/reliability.md, "A damaged
     * WAL"). With wal_strict set, open refuses instead. */
    uint64_t wal_damaged_recoveries, wal_records_dropped;
    /* Filter memory by part (docs/design.md, "Filter memory by level"),
     * in bytes: the SST slots of each level, grown filters and the
     * outgrown ones still held included; of all slots, what they grew by
     * since open (the filters they grew into, each held beside the one it
     * replaced); the memtable guard now, and averaged over about a minute.
     * filter_bytes is the slots' sum plus the guard now. */
    uint64_t filter_bytes_per_level[AKV_MAX_LEVELS];
    uint64_t filter_grown_bytes;
    uint64_t guard_filter_bytes, guard_filter_bytes_avg;
    /* The budget all filter memory is held to, in bytes: bits_per_key (B)
     * times live_keys_estimate; more by what the memtable guard grew while
     * memtables wait for their flush (RocksDB has a Bloom filter per
     * memtable), and
     * on a tiny database by part of the guard's fixed minimum
     * (docs/design.md, "Filter memory by level"). filter_bytes is held
     * at most 5 % over filter_budget_bytes; compactions can leave it
     * further under (docs/benchmarks.md). */
    double filter_budget_bits_per_key;
    uint64_t filter_budget_bytes;
} akv_stats;

/* The statistics now, into *st (counters restart at zero on open).
 * Returns AKV_OK, or AKV_EINVAL (NULL argument). */
AKV_API int akv_get_stats(akv_db *db, akv_stats *st);
/* One line of JSON with every field above (malloc'd; akv_free).
 * Returns AKV_OK, or AKV_EINVAL (NULL argument), AKV_ENOMEM. */
AKV_API int akv_stats_json(akv_db *db, char **json);

/* One row per filter slot (memtable guard first, then runs by level). */
typedef struct akv_slot_info {
    int level;            /* -1 for the memtable guard */
    uint64_t run, sst;
    char kind[16];
    uint64_t keys;
    double bits_per_key;
    uint64_t queries, filtered, probes, false_positives, adaptations;
} akv_slot_info;

/* malloc'd array in *rows (akv_free), count in *n.
 * Returns AKV_OK, or AKV_EINVAL (NULL argument), AKV_ENOMEM. */
AKV_API int akv_slots(akv_db *db, akv_slot_info **rows, size_t *n);

#ifdef __cplusplus
}
#endif
#endif
