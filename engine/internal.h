/*
 * internal.h — the engine's internal types, shared by the engine sources only.
 *
 * Object graph: an akv_db owns the RocksDB instance and a pointer to the
 * current *version*. A version is an immutable snapshot of the LSM shape:
 * the memtables (newest first) and the sorted runs in search order (L0
 * newest first, then L1, L2, ...). Versions, runs and memtables are
 * refcounted; a reader pins a version for the length of one lookup or
 * iterator, and a run's column family is dropped only when the last version
 * naming it goes away.
 *
 * The engine's files form a stack (docs/design.md, "Source map"): a file
 * calls only files below it. Sections here follow the files, bottom first.
 */
#ifndef AKV_ENGINE_INTERNAL_H
#define AKV_ENGINE_INTERNAL_H

#include <pthread.h>
#include <rocksdb/c.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "adaptkv/adaptkv.h"
#include "adaptkv/filter.h"
#include "util/shard.h"

/* Value tags: the first byte of every stored value. */
#define AKVI_TAG_PUT 1
#define AKVI_TAG_DEL 2

/* ---- errors (errors.c) ------------------------------------------------- */

/* Set this thread's message and return rc. */
int akvi_err(int rc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Turn a RocksDB error string into AKV_EIO with context; frees err. */
int akvi_rocks_err(char *err, const char *what);
void akvi_log(const akv_db *db, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- slot policy (policy.c) -------------------------------------------- */

typedef struct akvi_policy {
    const akv_filter_kind *mem;                   /* NULL: memtables always probed */
    const akv_filter_kind *level[AKV_MAX_LEVELS]; /* kind per run level */
} akvi_policy;

/* Parse "mem=sscf,l0=aqf,l1+=aqf". NULL or "" selects the default (with
 * fallbacks). On error returns AKV_EINVAL with a message. `note` (may be
 * NULL) receives a one-line description of what was chosen. */
int akvi_policy_parse(const char *s, akvi_policy *out, char *note, size_t note_cap);

/* ---- miss log (misslog.c) ---------------------------------------------- */

typedef struct akvi_misslog akvi_misslog;

akvi_misslog *akvi_misslog_create(uint64_t budget_bytes);
void akvi_misslog_destroy(akvi_misslog *ml);
/* A negative lookup of key (hash h) that wasted `wasted` probes. */
void akvi_misslog_record(akvi_misslog *ml, akv_hash h, const void *key, size_t klen, double wasted);
/* An application hint: key is a costly negative. */
void akvi_misslog_hint(akvi_misslog *ml, akv_hash h, const void *key, size_t klen, double cost);
/* Negatives accepted by `in_range` (key bytes and hash), highest weight
 * first, at most `max`; malloc'd array in *out. */
typedef bool (*akvi_range_fn)(void *arg, akv_hash h, const void *key, size_t klen);
size_t akvi_misslog_collect(akvi_misslog *ml, akvi_range_fn in_range, void *arg, size_t max,
                            akv_negative **out);
size_t akvi_misslog_count(akvi_misslog *ml);
/* Persisted form (format in docs/format.md). */
int akvi_misslog_encode(akvi_misslog *ml, uint8_t **buf, size_t *len);
int akvi_misslog_decode(akvi_misslog *ml, const uint8_t *buf, size_t len);

/* ---- catalog (catalog.c) ----------------------------------------------- */

typedef struct akvi_cat_sst {
    uint64_t id;       /* index within its run; filter file "<run>-<id>.akf" */
    uint64_t keys;     /* entries (puts and tombstones) */
    uint64_t bytes;    /* SST file size */
    uint64_t prefix;   /* hash layout: the shard (top prefix_bits of h.hi) */
    char kind[16];     /* filter kind name */
    uint8_t *smallest; /* internal keys; owned */
    uint8_t *largest;
    size_t smallest_len, largest_len;
} akvi_cat_sst;

typedef struct akvi_cat_run {
    uint64_t id;
    uint32_t level;
    uint32_t prefix_bits; /* hash layout: shards split on this many top bits */
    uint64_t keys, bytes;
    uint64_t raw_bytes; /* key+value bytes before compression: level sizing */
    size_t n_sst;
    akvi_cat_sst *ssts; /* hash layout: ascending prefix; ordered: ascending range */
} akvi_cat_run;

typedef struct akvi_catalog {
    uint32_t layout;
    uint64_t seed;
    uint64_t next_run_id;
    uint64_t flushed_mem_gen; /* memtables with gen <= this are in runs */
    size_t n_run;
    akvi_cat_run *runs; /* search order */
} akvi_catalog;

int akvi_catalog_encode(const akvi_catalog *c, uint8_t **buf, size_t *len);
/* Deep-decodes into *c (free with akvi_catalog_free). */
int akvi_catalog_decode(const uint8_t *buf, size_t len, akvi_catalog *c);
void akvi_catalog_free(akvi_catalog *c);
void akvi_cat_run_free(akvi_cat_run *r);
void akvi_filter_file_name(uint64_t run, uint64_t sst, char *out, size_t cap);

/* ---- slots (slot.c) ---------------------------------------------------- */

typedef struct akvi_slot {
    _Atomic(akv_filter *) f; /* NULL: always probe; replaced when it grows */
    bool locked;             /* mutable non-concurrent kind: use `lock` */
    pthread_rwlock_t lock;   /* readers share, adapt/insert/remove exclusive */
    _Atomic uint64_t queries, filtered, probes, fps, adaptations, grows;
    _Atomic bool dirty;          /* adapted since its file was written */
    _Atomic unsigned scan_bits;  /* reverse-map prefix its kind's adapt last asked for; 0 unknown */
    pthread_mutex_t grow_mu;     /* serialises swaps; guards `retired` */
    akv_filter **retired;        /* outgrown filters a reader may still hold */
    size_t n_retired;
} akvi_slot;

void akvi_slot_init(akvi_slot *s, akv_filter *f);
void akvi_slot_destroy(akvi_slot *s);
/* The one lock helper: shared access to the slot's filter for queries and
 * snapshots, exclusive for mutations. A no-op for kinds that need no lock
 * (static, or locking internally). */
void akvi_slot_lock(akvi_slot *s, bool exclusive);
void akvi_slot_unlock(akvi_slot *s);
/* Query, counting it. */
bool akvi_slot_may_contain(akvi_slot *s, akv_hash h);
/* Adapt filter f (the slot's current one) to the false positive h under the
 * exclusive lock; rm must answer from memory (no I/O under the lock). */
int akvi_slot_adapt(akvi_slot *s, akv_filter *f, akv_hash h, akv_revmap *rm);
/* Replace the slot's filter `expected` with g (AKV_NOTFOUND, nothing done,
 * if it is no longer the current one); the old one is kept until the slot
 * is destroyed, since a reader may still hold it. */
int akvi_slot_swap(akvi_slot *s, const akv_filter *expected, akv_filter *g);
size_t akvi_slot_memory(akvi_slot *s);
/* Write the slot's filter to its file if it changed since the last save:
 * serialized under the shared lock, written after it is released. */
int akvi_slot_save(akvi_slot *s, const char *fdir, uint64_t run, uint64_t sst);
/* Write a filter file atomically (temp, fsync, rename, fsync dir). */
int akvi_slot_write_file(const char *fdir, uint64_t run, uint64_t sst, const akv_filter *f);
/* AKV_OK, or AKV_NOTFOUND/AKV_ECORRUPT/AKV_ENOTSUP when the file is unusable. */
int akvi_slot_read_file(const char *fdir, uint64_t run, uint64_t sst, akv_filter **out);

/* ---- live objects (version.c) ------------------------------------------ */

typedef struct akvi_run {
    _Atomic int refs;
    akv_db *db;
    akvi_cat_run info;
    akvi_slot *slots; /* parallel to info.ssts */
    rocksdb_column_family_handle_t *cf;
    rocksdb_column_family_handle_t *rmap_cf; /* ordered layout only */
    _Atomic bool obsolete;                   /* drop CF + filter files at last unref */
} akvi_run;

typedef struct akvi_mem {
    _Atomic int refs;
    akv_db *db;
    uint64_t gen;
    rocksdb_column_family_handle_t *cf;
    _Atomic uint64_t bytes;   /* key+value bytes written */
    _Atomic uint64_t entries; /* writes (with overwrites) */
    akv_hash *hashes;         /* guard inserts, removed again at flush */
    size_t n_hashes, cap_hashes;
    _Atomic bool flushed;  /* its data is in a run; guard entries may be gone */
    _Atomic bool obsolete; /* drop the CF at last unref */
} akvi_mem;

typedef struct akvi_version {
    _Atomic int refs;
    size_t n_mem;
    akvi_mem **mems; /* newest first; mems[0] takes writes */
    size_t n_run;
    akvi_run **runs; /* search order: level ascending, newest first within a level */
} akvi_version;

akvi_version *akvi_version_new(size_t n_mem, size_t n_run);
void akvi_version_ref(akvi_version *v);
void akvi_version_unref(akvi_version *v);
void akvi_run_ref(akvi_run *r);
void akvi_run_unref(akvi_run *r);
void akvi_mem_ref(akvi_mem *m);
void akvi_mem_unref(akvi_mem *m);
/* Pin the current version (never NULL while the db is open). */
akvi_version *akvi_current(akv_db *db);
/* Replace the current version (takes ownership of v's reference). */
void akvi_install(akv_db *db, akvi_version *v);
/* The runs of v (search order) with `drop` removed and `add` placed first
 * in its level; malloc'd array, count in *n. */
akvi_run **akvi_runs_after(const akvi_version *v, akvi_run *const *drop, size_t n_drop, akvi_run *add, size_t *n);
/* New version = current + add_mem (front) - drop_mem - drop_runs + add_run. */
int akvi_apply(akv_db *db, akvi_mem *add_mem, const akvi_mem *drop_mem, akvi_run *const *drop_runs,
               size_t n_drop, akvi_run *add_run);
size_t akvi_runs_at_level(const akvi_version *v, int level);
int akvi_deepest_level(const akvi_version *v);

/* ---- the database ------------------------------------------------------ */

struct akv_db {
    char *dir, *rdir, *fdir, *tdir; /* DIR, DIR/rocksdb, DIR/filters, DIR/tmp */
    akv_options opt;
    akvi_policy policy;
    akv_layout layout;
    uint64_t seed;

    rocksdb_t *rdb;
    rocksdb_options_t *dbopt, *metaopt, *memopt, *runopt, *runopt_z;
    rocksdb_block_based_table_options_t *bbto;
    rocksdb_cache_t *cache;
    rocksdb_writeoptions_t *wo, *wo_sync;
    rocksdb_readoptions_t *ro, *ro_scan;
    rocksdb_column_family_handle_t *meta_cf;
    rocksdb_column_family_handle_t *default_cf;
    rocksdb_envoptions_t *envopt;

    pthread_rwlock_t vmu; /* guards `cur`: readers share it to pin, edits take it exclusively */
    akvi_version *cur;

    pthread_mutex_t wmu; /* serialises writers, rotation and guard rebuild */
    pthread_cond_t stall_cv;
    uint64_t next_mem_gen;

    /* Memtable guard: one dynamic filter over the keys of all live memtables. */
    pthread_rwlock_t guard_lock;
    akv_filter *guard; /* NULL: memtables always probed */
    akvi_slot guard_stats;
    _Atomic bool guard_broken;
    uint64_t guard_cap;              /* keys the current guard was sized for (under wmu) */
    _Atomic uint64_t guard_observed; /* most keys a flushed memtable held; 0 before the first */

    /* Background thread. */
    pthread_t bg;
    bool bg_started;
    pthread_mutex_t bgmu;
    pthread_cond_t bg_cv, done_cv;
    bool shutdown;
    uint64_t compact_req, compact_done;
    int bg_error;                          /* sticky: first background failure */
    uint64_t next_run_id, flushed_mem_gen; /* bg thread (and open) only */

    _Atomic uint64_t build_fallbacks; /* filter builds that needed a fallback */
    pthread_mutex_t catmu;            /* serialises catalog + miss-log writes */
    akvi_misslog *ml;

    struct {
        _Atomic uint64_t puts, deletes, gets, negative_lookups, probes, wasted_probes, slot_queries,
            slot_filtered, false_positives, adaptations, block_reads, flushes, compactions, write_stalls,
            bytes_written_user, bytes_written_disk;
    } st;
};

/* ---- options (options.c) ---------------------------------------------- */

int akvi_check_options(const akv_options *o);

/* ---- keys (keys.c) ----------------------------------------------------- */

/* Internal key for the layout into buf (klen + 8 bytes); returns its length. */
size_t akvi_ikey(const akv_db *db, akv_hash h, const void *key, size_t klen, uint8_t *buf);
/* The user key inside an internal key. */
const uint8_t *akvi_ukey(const akv_db *db, const uint8_t *ikey, size_t iklen, size_t *klen);
int akvi_check_key(size_t klen);
int akvi_check_value(size_t vlen);
/* The one SST-range test: does SST s of run r cover the key (hash h,
 * internal key ikey)? Hash layout: its shard; ordered: its key range. */
bool akvi_sst_covers(const akv_db *db, const akvi_cat_run *r, const akvi_cat_sst *s, akv_hash h,
                     const uint8_t *ikey, size_t iklen);
/* The one SST lookup: the SST of run r that may hold the key; -1 if none. */
long akvi_find_sst(const akv_db *db, const akvi_cat_run *r, akv_hash h, const uint8_t *ikey, size_t iklen);
/* The hash run r's slots see (shard prefix shifted out in the hash layout). */
akv_hash akvi_run_slot_hash(const akv_db *db, const akvi_cat_run *r, akv_hash h);
static inline void akvi_be64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (56 - 8 * i));
}
static inline uint64_t akvi_get_be64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = (v << 8) | p[i];
    return v;
}

/* ---- rocksdb helpers (rocks.c) ----------------------------------------- */

int akvi_rocks_setup(akv_db *db);
void akvi_rocks_teardown(akv_db *db);
int akvi_cf_create(akv_db *db, const char *name, int level, rocksdb_column_family_handle_t **out);
const rocksdb_options_t *akvi_cf_options_for(akv_db *db, const char *name);
void akvi_cf_drop(akv_db *db, rocksdb_column_family_handle_t *cf);
int akvi_meta_put(akv_db *db, const char *key, const uint8_t *val, size_t len, bool sync);
/* AKV_NOTFOUND when absent; *val malloc'd. */
int akvi_meta_get(akv_db *db, const char *key, uint8_t **val, size_t *len);
/* RocksDB blocks this thread has read from storage (its perf context,
 * enabled on first use); callers take differences. */
uint64_t akvi_thread_block_reads(void);

/* ---- the memtable guard (guard.c) -------------------------------------- */

/* Writer side, under wmu: insert into the guard and remember the hash. */
int akvi_guard_insert(akv_db *db, akvi_mem *m, akv_hash h);
/* Reader side: false only when the key is certainly not in memtable m. */
bool akvi_guard_may_contain(akv_db *db, const akvi_mem *m, akv_hash h);
/* A lookup the guard let through found nothing in any memtable: let an
 * absorbing kind (ada-SSCF) learn the negative. */
void akvi_guard_absorb(akv_db *db, akv_hash h);
/* After m's run is installed: take m's keys out of the guard. */
void akvi_guard_remove_mem(akv_db *db, akvi_mem *m);
int akvi_guard_init(akv_db *db);
size_t akvi_guard_memory(akv_db *db);

/* ---- memtables (memtable.c) -------------------------------------------- */

int akvi_mem_create(akv_db *db, uint64_t gen, rocksdb_column_family_handle_t *cf, akvi_mem **out);
/* Under wmu: make a new active memtable (the caller wakes the background
 * thread to flush the old one). */
int akvi_rotate(akv_db *db);
/* Rebuild the guard entries of a memtable recovered from the WAL. */
int akvi_mem_recover(akv_db *db, akvi_mem *m);

/* ---- merge iterator over column families (merge.c) --------------------- */

typedef struct akvi_merge akvi_merge;
/* Inputs newest first; takes ownership of the iterators. */
akvi_merge *akvi_merge_create(rocksdb_iterator_t **its, size_t n);
void akvi_merge_seek_first(akvi_merge *m);
void akvi_merge_seek(akvi_merge *m, const uint8_t *k, size_t len);
bool akvi_merge_valid(const akvi_merge *m);
/* Current entry: the newest version of the smallest key. */
const uint8_t *akvi_merge_key(const akvi_merge *m, size_t *len);
const uint8_t *akvi_merge_value(const akvi_merge *m, size_t *len);
void akvi_merge_next(akvi_merge *m);
int akvi_merge_status(const akvi_merge *m); /* AKV_OK or AKV_EIO with message */
void akvi_merge_destroy(akvi_merge *m);

/* ---- slot building (slotbuild.c) --------------------------------------- */

/* Build the slot of SST `sst` of `run` from its keys' hashes (turned into
 * slot hashes and sorted in place), sized for `capacity` >= n keys (room
 * for adaptations), pre-adapted to the miss log's negatives in its range.
 * A kind that cannot be built falls back (docs/design.md). */
int akvi_build_filter(akv_db *db, int level, const akvi_cat_run *run, const akvi_cat_sst *sst,
                      akv_hash *hashes, size_t n, size_t capacity, akv_filter **out);
/* Hashes of the keys an SST holds, read back from its run's family; the
 * count must match the catalog's. */
int akvi_sst_hashes(akv_db *db, const akvi_run *r, const akvi_cat_sst *s, akv_hash **out, size_t *n);
/* A new filter for SST j of r from its data, `capacity` keys of room. */
int akvi_build_from_sst(akv_db *db, const akvi_run *r, size_t j, size_t capacity, akv_filter **out);

/* ---- run writer (runwriter.c) ------------------------------------------ */

typedef struct akvi_runwriter akvi_runwriter;
int akvi_rw_begin(akv_db *db, int level, uint64_t est_bytes, akvi_runwriter **out);
int akvi_rw_add(akvi_runwriter *w, const uint8_t *ikey, size_t iklen, const uint8_t *val, size_t vlen);
/* Seal: SSTs, slots, filter files, ingest into a new run CF. *out is NULL
 * when nothing was added. */
int akvi_rw_finish(akvi_runwriter *w, akvi_run **out);
void akvi_rw_abort(akvi_runwriter *w);
/* Merge column families (newest first) into a new run at `level`. */
int akvi_rw_merge(akv_db *db, rocksdb_column_family_handle_t **cfs, size_t n, int level, uint64_t est,
                  bool drop_tombstones, akvi_run **out);

/* ---- adaptation (adapt.c) ---------------------------------------------- */

/* Adapt slot `sst` of run `r` to the false positive `h` (a slot hash): the
 * colliding keys are read from the reverse map first, then the slot's lock
 * is taken and the fingerprint extended. A filter with no room left is
 * rebuilt from its SST with twice the room. */
int akvi_adapt_slot(akv_db *db, akvi_run *r, size_t sst, akv_hash h);
/* Test hook: called before the reverse map is read, outside every lock. */
extern void (*_Atomic akvi_hook_before_revmap_read)(void);

/* ---- commit (commit.c) ------------------------------------------------- */

/* The catalog (sync) and miss log for the given runs and flushed gen. */
int akvi_commit(akv_db *db, akvi_run **runs, size_t n_run, uint64_t flushed_mem_gen);
/* Commit, then install, the replacement of `drop` (runs) and `mem` by `add`
 * in version v; replaced runs and the memtable become obsolete. */
int akvi_publish(akv_db *db, akvi_version *v, akvi_mem *mem, akvi_run **drop, size_t n_drop, akvi_run *add);

/* ---- flush (flush.c), compaction (compact.c) ---------------------------- */

int akvi_flush_one(akv_db *db, akvi_mem *m);
bool akvi_compaction_needed(akv_db *db, const akvi_version *v);
int akvi_compact_step(akv_db *db, bool full);

/* ---- background thread (bg.c) ------------------------------------------ */

int akvi_bg_start(akv_db *db);
void akvi_bg_stop(akv_db *db);
void akvi_bg_wake(akv_db *db);
/* Rewrite the files of slots adapted since they were written. */
int akvi_save_adapted_slots(akv_db *db);

/* ---- write path (write.c) --------------------------------------------- */

typedef struct akvi_op {
    uint8_t tag; /* AKVI_TAG_PUT or AKVI_TAG_DEL */
    const uint8_t *key, *val;
    size_t klen, vlen;
} akvi_op;

/* Apply ops atomically to the active memtable (one RocksDB write batch). */
int akvi_write_ops(akv_db *db, const akvi_op *ops, size_t n, bool sync);

#endif
