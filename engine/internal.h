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

/* ---- thread slots (threadslot.c) --------------------------------------- */

/* Readers write only cache lines of their own: each thread gets an index
 * below AKVI_THREAD_SLOTS, unique among live threads, or -1 once all are
 * taken (it then shares a stripe, with atomic additions, and pins versions
 * by refcount). */
#define AKVI_THREAD_SLOTS 64
#define AKVI_LINE         64 /* cache line bytes: the stride of striped counters */
int akvi_thread_slot(void);

/* Read-path counters of the database, one block per thread slot (and one
 * shared by threads without a slot), each on its own cache lines; summed by
 * akv_get_stats. */
typedef struct akvi_rstats {
    _Atomic uint64_t gets, negative_lookups, probes, wasted_probes, slot_queries, slot_filtered,
        false_positives, adaptations, block_reads;
} akvi_rstats;
typedef union akvi_rstats_line {
    akvi_rstats c;
    char pad[2 * AKVI_LINE];
} akvi_rstats_line;
#define AKVI_RSTATS_STRIPES (AKVI_THREAD_SLOTS + 1)

/* A slot's counters, striped by thread slot over AKVI_SLOT_STRIPES lines. */
typedef struct akvi_slot_ctr {
    _Atomic uint64_t queries, filtered, probes, fps, adaptations;
} akvi_slot_ctr;
typedef union akvi_slot_ctr_line {
    akvi_slot_ctr c;
    char pad[AKVI_LINE];
} akvi_slot_ctr_line;
#define AKVI_SLOT_STRIPES 8

/* A version pin of one thread slot (version.c), on its own line: the
 * version it names (NULL: none) and how many pins it has ended. */
struct akvi_version;
typedef union akvi_pin_line {
    struct {
        _Atomic(struct akvi_version *) v;
        _Atomic uint64_t ended;
    } p;
    char pad[AKVI_LINE];
} akvi_pin_line;

static inline void akvi_ctr_add(_Atomic uint64_t *c, uint64_t n)
{
    if (n)
        atomic_fetch_add_explicit(c, n, memory_order_relaxed);
}

/* ---- errors (errors.c) ------------------------------------------------- */

/* Set this thread's message and return rc. */
int akvi_err(int rc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Turn a RocksDB error string into AKV_EIO with context; frees err. */
int akvi_rocks_err(char *err, const char *what);
void akvi_log(const akv_db *db, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- whole files (files.c) --------------------------------------------- */

/* "a/b", malloc'd; NULL when out of memory. */
char *akvi_path_join(const char *a, const char *b);

/* AKV_NOTFOUND (with a message) when the file does not exist; *buf malloc'd. */
int akvi_file_read(const char *path, uint8_t **buf, size_t *len);
/* dir/name.tmp written, fsynced, renamed over dir/name; the rename is
 * durable once the caller syncs dir (akvi_fsync_dir), once per batch. */
int akvi_file_replace(const char *dir, const char *name, const uint8_t *buf, size_t len);
/* akvi_file_replace, then dir fsynced. */
int akvi_file_write_atomic(const char *dir, const char *name, const uint8_t *buf, size_t len);
/* Overwrite path in place (created if absent) and fdatasync it. */
int akvi_file_rewrite(const char *path, const uint8_t *buf, size_t len);
int akvi_fsync_dir(const char *dir);
bool akvi_path_exists(const char *path);

/* ---- RocksDB's WAL files (wal.c) --------------------------------------- */

/* What RocksDB's point-in-time replay of DIR/rocksdb/NNNNNN.log will keep
 * and drop. `file`: the first log whose replay stops before its end, at
 * byte `offset`; `torn`: it ends inside a record (a writer that died
 * mid-write, or a cut file) rather than at a damaged one. Dropped counts
 * take in the record at the stop, the complete records after it in that
 * file, and (after a damaged record) every later log file's. */
typedef struct akvi_wal_report {
    unsigned files_damaged;
    char file[64];
    uint64_t offset;
    bool torn;
    uint64_t records_kept, writes_kept; /* in `file`, before the stop */
    uint64_t records_dropped, writes_dropped;
} akvi_wal_report;
int akvi_wal_check(const char *rdir, akvi_wal_report *rep);

/* ---- slot policy (policy.c) -------------------------------------------- */

typedef struct akvi_policy {
    const akv_filter_kind *mem;                   /* NULL: memtables always probed */
    const akv_filter_kind *level[AKV_MAX_LEVELS]; /* kind per run level */
} akvi_policy;

/* Longest canonical policy text, with its NUL (docs/format.md §6). */
#define AKVI_POLICY_MAX 1024

/* Parse "mem=sscf,l0=aqf,l1+=aqf". NULL or "" selects the default (with
 * fallbacks); a level the text leaves without a kind gets the default run
 * kind for bits_per_key (ablocked below 12 bits/key, aqf from 12 up). On error returns AKV_EINVAL with a message. `note` (may be
 * NULL) receives a one-line description of what was chosen. */
int akvi_policy_parse(const char *s, double bits_per_key, akvi_policy *out, char *note, size_t note_cap);
/* The canonical text of p ("mem=sscf,l0=aqf,l1+=blocked"): every part
 * named, each level run written once; parsing it gives p again. AKV_EINVAL
 * if it does not fit in cap bytes. */
int akvi_policy_format(const akvi_policy *p, char *out, size_t cap);

/* ---- miss log (misslog.c) ---------------------------------------------- */

typedef struct akvi_misslog akvi_misslog;

akvi_misslog *akvi_misslog_create(uint64_t budget_bytes);
void akvi_misslog_destroy(akvi_misslog *ml);
/* A negative lookup of key (hash h) that wasted `wasted` probes. */
void akvi_misslog_record(akvi_misslog *ml, akv_hash h, const void *key, size_t klen, double wasted);
/* The get path's record: a costly negative (wasted > 0) always; a free one
 * always while its shard has room, and once the shard is full one time in
 * AKVI_MISSLOG_SAMPLE (this thread's random draw), counted that many
 * times; a free one is skipped if its shard is busy. */
#define AKVI_MISSLOG_SAMPLE 8
void akvi_misslog_negative(akvi_misslog *ml, akv_hash h, const void *key, size_t klen, double wasted);
/* One draw of this thread's sampler: true one time in AKVI_MISSLOG_SAMPLE. */
bool akvi_misslog_sampled(void);
/* An application hint: key is a costly negative. */
void akvi_misslog_hint(akvi_misslog *ml, akv_hash h, const void *key, size_t klen, double cost);
/* Negatives accepted by `in_range` (key bytes and hash), highest weight
 * first, at most `max`; malloc'd array in *out. */
typedef bool (*akvi_range_fn)(void *arg, akv_hash h, const void *key, size_t klen);
size_t akvi_misslog_collect(akvi_misslog *ml, akvi_range_fn in_range, void *arg, size_t max,
                            akv_negative **out);
size_t akvi_misslog_count(akvi_misslog *ml);
/* Whether the table holds key: it was looked up in vain before. */
bool akvi_misslog_holds(akvi_misslog *ml, akv_hash h, const void *key, size_t klen);
/* The share of the negative lookups it met lately whose key it did not
 * have to lose (drop, or evict an entry for): 1 while it has lost none (or
 * met none), near 0 when the stream is far larger than its budget. */
double akvi_misslog_coverage(akvi_misslog *ml);
/* Persisted form (format in docs/format.md). */
int akvi_misslog_encode(akvi_misslog *ml, uint8_t **buf, size_t *len);
int akvi_misslog_decode(akvi_misslog *ml, const uint8_t *buf, size_t len);

/* ---- catalog (catalog.c) ----------------------------------------------- */

typedef struct akvi_cat_sst {
    uint64_t id;       /* index within its run; filter file "<run>-<id>.akf" */
    uint64_t keys;     /* entries (puts and tombstones) */
    uint64_t bytes;    /* SST file size */
    uint64_t prefix;   /* hash layout: the shard (top prefix_bits of h.hi) */
    uint64_t digest;   /* akvi_key_digest of its keys; 0: not recorded (catalog v1) */
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
    /* The database's slot policy (canonical text) and bits per key; ""
     * and 0: not recorded (catalog v1 and v2). akvi_catalog_store writes
     * the open database's own. */
    char policy[AKVI_POLICY_MAX];
    double bits_per_key;
    uint64_t seq;             /* commit sequence: the newer of the two catalog files wins */
    uint64_t next_run_id;     /* run ids below this are allocated or reserved */
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
/* Delete, in the filter directory fdir, each "<run>-<sst>.akf" for which
 * keep(arg, run, sst) is false and each "<run>-<sst>.akf.tmp"; any other
 * name is not adaptkv's to delete and stays. */
void akvi_sweep_filter_files(const char *fdir, bool (*keep)(void *arg, uint64_t run, uint64_t sst), void *arg);
/* An SST's recorded fields after its id (key count, bytes, prefix, digest,
 * kind, key range), as the catalog and each filter file store them
 * (docs/format.md). The decoder copies the range keys (freed with the run)
 * and sets r->err on a short or malformed record. */
struct akvi_wbuf;
struct akvi_rbuf;
void akvi_cat_sst_put_fields(struct akvi_wbuf *w, const akvi_cat_sst *s);
void akvi_cat_sst_get_fields(struct akvi_rbuf *r, akvi_cat_sst *s, bool with_digest);
/* The catalog files DIR/CATALOG.0 and .1 (docs/format.md). Under catmu:
 * write c with the next sequence number into its slot (next_run_id is
 * raised to the reserved bound) and keep it for reservations. */
int akvi_catalog_store(akv_db *db, akvi_catalog *c);
/* Before run id `id` names a family or file: make sure the catalog on disk
 * reserves it (a no-op unless id >= the reserved bound). Takes catmu. */
int akvi_catalog_reserve(akv_db *db, uint64_t id);
/* The newer valid catalog file of dir; AKV_NOTFOUND when neither exists.
 * `note` tells of a damaged slot that was passed over ("" if none). */
int akvi_catalog_load(const char *dir, akvi_catalog *c, char *note, size_t note_cap);
/* DIR/CATALOG.<slot> alone (the previous generation, to name in a refusal). */
int akvi_catalog_load_slot(const char *dir, unsigned slot, akvi_catalog *c);

/* ---- slots (slot.c) ---------------------------------------------------- */

typedef struct akvi_slot {
    _Atomic(akv_filter *) f; /* NULL: always probe; replaced when it grows */
    bool locked;             /* mutable non-concurrent kind: use `lock` */
    pthread_rwlock_t lock;   /* readers share, adapt/insert/remove exclusive */
    /* Queries, probes, false positives, adaptations: AKVI_SLOT_STRIPES
     * cache lines (NULL when out of memory: `one` then holds them). */
    akvi_slot_ctr_line *ctr;
    akvi_slot_ctr one;
    _Atomic uint64_t grows, refills;
    _Atomic bool dirty;          /* adapted since its file was written */
    _Atomic unsigned scan_bits;  /* reverse-map prefix its kind's adapt last asked for; 0 unknown */
    pthread_mutex_t grow_mu;     /* serialises swaps; guards `retired` */
    akv_filter **retired;        /* outgrown filters a reader may still hold */
    size_t n_retired;
    _Atomic size_t grown_bytes; /* memory of the filters it grew into (adapt.c) */
    _Atomic bool refilling;     /* a thread is refilling its filter (adapt.c) */
    /* The SST its file is bound to: ssts[sst] of run (akvi_slot_bind). */
    const akvi_cat_run *run;
    size_t sst;
} akvi_slot;

void akvi_slot_init(akvi_slot *s, akv_filter *f);
/* Bind the slot to SST j of run (its file records that catalog entry). */
void akvi_slot_bind(akvi_slot *s, const akvi_cat_run *run, size_t j);
void akvi_slot_destroy(akvi_slot *s);
/* The one lock helper: shared access to the slot's filter for queries and
 * snapshots, exclusive for mutations. A no-op for kinds that need no lock
 * (static, or locking internally). */
void akvi_slot_lock(akvi_slot *s, bool exclusive);
void akvi_slot_unlock(akvi_slot *s);
/* This thread's stripe of the slot's counters. */
static inline akvi_slot_ctr *akvi_slot_ctr_of(akvi_slot *s)
{
    if (!s->ctr)
        return &s->one;
    int t = akvi_thread_slot();
    return &s->ctr[t < 0 ? 0 : (unsigned)t % AKVI_SLOT_STRIPES].c;
}
/* The slot's counters summed over its stripes: exact once the threads that
 * counted are done with it. */
typedef struct akvi_slot_counts {
    uint64_t queries, filtered, probes, fps, adaptations;
} akvi_slot_counts;
void akvi_slot_sum(const akvi_slot *s, akvi_slot_counts *out);
/* Query the slot's filter (counted in `c`, the caller's stripe). */
bool akvi_slot_may_contain(akvi_slot *s, akvi_slot_ctr *c, akv_hash h);
/* Adapt filter f (the slot's current one) to the false positive h under the
 * exclusive lock; rm must answer from memory (no I/O under the lock). */
int akvi_slot_adapt(akvi_slot *s, akv_filter *f, akv_hash h, akv_revmap *rm);
/* Replace the slot's filter `expected` with g (AKV_NOTFOUND, nothing done,
 * if it is no longer the current one); the old one is kept until the slot
 * is destroyed, since a reader may still hold it. */
int akvi_slot_swap(akvi_slot *s, const akv_filter *expected, akv_filter *g);
/* The filter's memory, and that of the outgrown filters it still holds. */
size_t akvi_slot_memory(akvi_slot *s);
/* Write the slot's filter to its bound file if it changed since the last
 * save: serialized under the shared lock, written after it is released
 * (akvi_file_replace: the caller syncs fdir). 1 if written, AKV_OK if the
 * slot was clean, or an error. */
int akvi_slot_save(akvi_slot *s, const char *fdir, uint64_t run, uint64_t sst);
/* Write the filter file of SST j of run r (akvi_file_replace: the caller
 * syncs fdir before a catalog names it), bound to that catalog entry
 * (docs/format.md §8). */
int akvi_slot_write_file(const char *fdir, const akvi_cat_run *r, size_t j, const akv_filter *f);
/* The filter of SST j of run r from its file: AKV_OK, or AKV_NOTFOUND /
 * AKV_ECORRUPT (damaged, another kind, or bound to another SST) /
 * AKV_ENOTSUP. *unbound: a version-1 file, which names no SST; the caller
 * must check it against the SST's keys before trusting it. */
int akvi_slot_read_file(const char *fdir, const akvi_cat_run *r, size_t j, bool *unbound, akv_filter **out);
/* The binding recorded in a version-2 filter file: a run with one SST
 * (free with akvi_cat_run_free). AKV_ENOTSUP for a version-1 file. */
int akvi_slot_describe(const char *path, akvi_cat_run *desc);
/* The filter in a filter file of either version, its binding unchecked
 * (tools and tests). */
int akvi_slot_file_filter(const char *path, akv_filter **out);

/* ---- live objects (version.c) ------------------------------------------ */

typedef struct akvi_front akvi_front; /* l0front.c */

typedef struct akvi_run {
    _Atomic int refs;
    akv_db *db;
    akvi_cat_run info;
    akvi_slot *slots; /* parallel to info.ssts */
    rocksdb_column_family_handle_t *cf;
    rocksdb_column_family_handle_t *rmap_cf; /* ordered layout only */
    _Atomic bool obsolete;                   /* drop CF + filter files at last unref */
    struct akvi_run *grave_next;             /* in db->grave_runs */
    /* L0 only: the front holding its keys (NULL: none), and how many
     * hashes it put there; set before the run is published, then fixed. */
    akvi_front *front;
    uint64_t front_keys;
} akvi_run;

typedef struct akvi_mem {
    _Atomic int refs;
    akv_db *db;
    uint64_t gen;
    rocksdb_column_family_handle_t *cf; /* the pool's (mempool.c), or its own mem.<gen> (older format) */
    int pool;                           /* index in db->pool; -1: a mem.<gen> family */
    _Atomic uint64_t bytes;   /* key+value bytes written */
    _Atomic uint64_t entries; /* writes (with overwrites) */
    /* Set before RocksDB can show the memtable's first key to a reader
     * (written before each write, and by recovery): until then a reader
     * skips the memtable and its guard check, as RocksDB skips an empty
     * memtable's Bloom filter. */
    _Atomic bool written;
    akv_hash *hashes;         /* guard inserts, removed again at flush */
    size_t n_hashes, cap_hashes;
    _Atomic bool hashes_lost; /* one could not be remembered: no L0 front for its run */
    _Atomic bool flushed;  /* its data is in a run; guard entries may be gone */
    _Atomic bool obsolete; /* at last unref: its pool family emptied (mem.<gen>: dropped) */
    struct akvi_mem *grave_next; /* in db->grave_mems */
} akvi_mem;

typedef struct akvi_version {
    _Atomic int refs;
    struct akvi_version *retired_next; /* in db->retired */
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
/* ---- the end of runs and memtables (grave.c) ----------------------------- */

/* The last reference to r (m) is gone: destroy it, or, if it is obsolete
 * and this is not a background thread while they run, leave it to them. */
void akvi_grave_run(akvi_run *r);
void akvi_grave_mem(akvi_mem *m);
/* Called by each background thread once: it destroys at once. */
void akvi_grave_background_thread(void);
/* Whether other threads defer (while the background threads run). */
void akvi_grave_set_open(akv_db *db, bool open);
/* Destroy everything deferred so far. */
void akvi_grave_empty(akv_db *db);
/* Does the grave hold a memtable (whose pool family writers may wait for)? */
bool akvi_grave_has_mems(akv_db *db);

/* ---- the pool of memtable families: its state (mempool.c) -------------- */

/* Immutable memtables a writer lets wait for their flush before it stops
 * (write.c); the pool holds them, the active one, and two more while
 * flushed ones are emptied. */
#define AKVI_MEM_WAITING_MAX 3
#define AKVI_POOL_SIZE       (AKVI_MEM_WAITING_MAX + 3)
/* Readers holding flushed memtables grow the pool up to this. */
#define AKVI_POOL_MAX 64
/* akvi_pool_take: none free, one being emptied; wait as for a stall. */
#define AKVI_POOL_WAIT 1
enum {
    AKVI_POOL_FREE,     /* empty, takes the next rotation */
    AKVI_POOL_BUSY,     /* holds a memtable (live, or flushed and still pinned) */
    AKVI_POOL_EMPTYING, /* its flushed memtable is gone: being emptied */
    AKVI_POOL_STALE,    /* open: holds a flushed memtable's data, emptied in phase 2 */
    AKVI_POOL_BROKEN    /* emptying failed, or the database stopped: emptied at reopen */
};
typedef struct akvi_pool {
    pthread_mutex_t mu; /* state and handles; nothing is locked or written under it */
    size_t n;           /* families pool.1 .. pool.<n> (a slot may be NULL: missing) */
    rocksdb_column_family_handle_t *cf[AKVI_POOL_MAX];
    uint8_t state[AKVI_POOL_MAX];
} akvi_pool;

/* Pin the current version (never NULL while the db is open). */
akvi_version *akvi_current(akv_db *db);
/* The get path's pin: a hazard in this thread's slot, no shared write
 * (akvi_current for a thread without one, and for a get nested inside
 * another get of the same thread and database). *tok goes to akvi_unpin. */
akvi_version *akvi_pin(akv_db *db, int *tok);
void akvi_unpin(akv_db *db, akvi_version *v, int tok);
/* Unref the retired versions no pin names (all of them at close, when no
 * reader is left). `wait`: take the list's lock rather than leave it to
 * whoever holds it. */
void akvi_reclaim(akv_db *db, bool wait);
/* A grace period for what the get path reads outside versions (the
 * memtable guard): after replacing a shared pointer, snapshot the pins;
 * once they have all passed (each pin of the snapshot ended), no get can
 * still hold the old object. */
typedef struct akvi_pin_snapshot {
    uint64_t ended[AKVI_THREAD_SLOTS]; /* UINT64_MAX: that slot held no pin */
} akvi_pin_snapshot;
void akvi_pins_snapshot(akv_db *db, akvi_pin_snapshot *s);
bool akvi_pins_passed(akv_db *db, const akvi_pin_snapshot *s);
/* Replace the current version (takes ownership of v's reference). */
void akvi_install(akv_db *db, akvi_version *v);
/* The runs of v with `drop` removed and `add` added, in search order;
 * malloc'd array, count in *n. */
akvi_run **akvi_runs_after(const akvi_version *v, akvi_run *const *drop, size_t n_drop, akvi_run *const *add,
                           size_t n_add, size_t *n);
/* New version = current + add_mem (front) - drop_mem - drop_runs + add_runs. */
int akvi_apply(akv_db *db, akvi_mem *add_mem, const akvi_mem *drop_mem, akvi_run *const *drop_runs,
               size_t n_drop, akvi_run *const *add_runs, size_t n_add);
/* Runs in search order (level, then L0 newest first, deeper levels by range). */
void akvi_sort_runs(akvi_run **runs, size_t n);
int akvi_deepest_level(const akvi_version *v);

/* ---- the database ------------------------------------------------------ */

/* Where the last compaction of a level ended (its round-robin). */
typedef struct compact_cursor {
    uint8_t *key;
    size_t len;
} compact_cursor;

struct akv_db {
    char *dir, *rdir, *fdir, *tdir; /* DIR, DIR/rocksdb, DIR/filters, DIR/tmp */
    akv_options opt;      /* opt.bits_per_key: the one in effect (stored, given or default) */
    akvi_policy policy;   /* in effect for slots built from now on */
    char policy_text[AKVI_POLICY_MAX]; /* its canonical text, recorded in the catalog */
    bool policy_given, bits_given; /* set in the options (else the stored ones apply) */
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
    /* Open only: RocksDB's MANIFEST may name an SST that RocksDB itself
     * removed (an ingestion whose MANIFEST sync failed). `missing_ok`: this
     * open may then retry RocksDB without paranoid checks, which sets
     * `missing_relaxed` (docs/reliability.md, "Missing SST of an uncommitted
     * run"). */
    bool missing_ok, missing_relaxed;
    /* The database's lock: DIR itself opened and flock()ed exclusively
     * before anything in it is read, moved or written (open and repair),
     * held until the handle is freed; -1 while not held. flock belongs to
     * the open file description, so a second open of DIR in the same
     * process is refused like one in another process (akvi_dir_lock). */
    int lock_fd;

    /* `cur` on a cache line of its own: every get reads it, nothing on
     * the hot path writes near it. */
    char cur_pad0[AKVI_LINE];
    _Atomic(akvi_version *) cur; /* changed under vmu (exclusive) */
    char cur_pad1[AKVI_LINE];
    pthread_rwlock_t vmu; /* akvi_current shares it to pin by refcount, edits take it exclusively */
    /* Gets pin by hazard: pins[t] is the version thread slot t reads (NULL:
     * none); a replaced version is retired and unref'd once no pin names it
     * (version.c). */
    akvi_pin_line *pins;
    pthread_mutex_t retmu;      /* the retired list */
    akvi_version *retired;      /* under retmu, linked by retired_next */
    _Atomic size_t n_retired;   /* its length; readers look before they try */
    _Atomic bool reclaim_again; /* a reader found retmu taken: scan again */
    akvi_rstats_line *rs;       /* AKVI_RSTATS_STRIPES blocks of read-path counters */

    pthread_mutex_t wmu; /* serialises writers, rotation and guard rebuild */
    pthread_cond_t stall_cv;
    uint64_t next_mem_gen;
    akvi_pool pool; /* the memtable families (mempool.c) */

    /* Memtable guard: one dynamic filter over the keys of all live memtables. */
    pthread_rwlock_t guard_lock;
    _Atomic(akv_filter *) guard; /* NULL: memtables always probed */
    /* A get pinned by hazard queries a concurrent guard without guard_lock:
     * guard_gen is odd while a rebuild swaps guard and clears guard_broken,
     * and a replaced guard is freed only once the pins have passed
     * (guard_retired, under wmu). */
    _Atomic uint64_t guard_gen;
    struct akvi_guard_retired *guard_retired;
    akvi_slot guard_stats;
    _Atomic bool guard_broken;
    uint64_t guard_cap;              /* keys the current guard was sized for (under wmu) */
    double guard_avg, guard_avg_since; /* its memory averaged over time, as of then (guard_lock) */
    uint64_t guard_keys;             /* hashes the guard holds for memtables (under wmu) */
    _Atomic uint64_t guard_mem_keys; /* hashes of the last memtable flushed (written under wmu) */
    akvi_mem *guard_draining;        /* flushed, leaving the version, hashes still in the guard (under wmu) */

    /* The L0 front (l0front.c): the one new flushes go into, under mu. */
    struct {
        pthread_mutex_t mu;
        akvi_front *cur;
        bool rotate; /* a compaction picked L0 runs: the next flush starts a new one */
    } fronts;

    /* Background threads: one flushes, one compacts (neither waits for the
     * other); both publish under pubmu. */
    pthread_t flusher, compactor;
    bool bg_started;
    compact_cursor cursor[AKV_MAX_LEVELS]; /* compaction thread only */
    pthread_mutex_t bgmu;
    pthread_cond_t bg_cv, done_cv;
    bool shutdown;
    uint64_t compact_req, compact_done;
    /* L0 merges (compact.c), under bgmu: the compaction thread is inside a
     * step, holding the L0 runs with ids below l0_held_below (0: none);
     * the flush thread is merging the newest L0 runs among themselves. */
    bool compacting, l0_merging;
    uint64_t l0_held_below;
    /* Compaction at rest's budget (compact.c): the credit saved at the last
     * close, and the raw bytes its pushes have rewritten since the open. */
    uint64_t rest_credit_saved;
    _Atomic uint64_t rest_spent;
    _Atomic int bg_error; /* sticky: first background failure (set under bgmu; read without it) */
    uint64_t save_req, save_done; /* under bgmu: akv_flush's requests that the flusher save adapted slots */
    pthread_mutex_t savemu; /* one saver of adapted slots at a time (bg.c) */
    double saved_at;        /* under savemu: when adapted slots were last saved */
    _Atomic uint64_t next_run_id; /* flush and compaction threads allocate */
    uint64_t flushed_mem_gen;     /* under pubmu (and open) */
    pthread_mutex_t pubmu;        /* serialises publishes: commit + install */
    pthread_mutex_t gravemu;      /* the grave (grave.c): */
    bool grave_open;              /* other threads defer to the background threads */
    akvi_run *grave_runs;         /* obsolete runs and memtables waiting for them */
    akvi_mem *grave_mems;

    _Atomic uint64_t build_fallbacks; /* filter builds that needed a fallback */
    _Atomic uint64_t grown_bytes;     /* live slots' grown_bytes, summed (adapt.c, grave.c) */
    _Atomic bool said_costed_fallback; /* akvi_build_kind logged its note */
    pthread_mutex_t catmu;            /* serialises catalog + miss-log writes */
    uint8_t *cat_buf;                 /* under catmu: the catalog last written, its length, */
    size_t cat_len;                   /* sequence number and reserved run ids */
    uint64_t cat_seq, run_id_bound;
    uint64_t meta_wal_bytes, meta_flush_user; /* under catmu: WAL growth since the meta family's last flush */
    akvi_misslog *ml;
    /* Keys whose false positive was not fixed (adapt.c): a 32-bit tag of
     * the hash per entry, direct-mapped, AKVI_FP_SEEN entries, the first
     * 8,192 of them for the sampled ones. */
    _Atomic uint32_t *fp_seen;
    /* Of the sampled first false positives left unfixed lately, how many
     * came back as a second, and how many a later sample took the place of
     * first; the sampling rate's exponent over its least (adapt.c): decide
     * whether a first one is fixed at once. */
    _Atomic uint32_t fp_left, fp_back, fp_lost, fp_thin;

    struct {
        _Atomic uint64_t puts, deletes, flushes, compactions, write_stalls, write_slowdowns, l0_merges,
            bytes_written_user, bytes_written_disk, filter_grows, filter_refills, family_ops, family_op_us,
            family_creates, family_drops, wal_damaged_recoveries, wal_records_dropped, memtable_empties,
            memtable_empty_us;
        _Atomic uint64_t bytes_written_level[AKV_MAX_LEVELS];
    } st;
};

/* This thread's block of the read-path counters. */
static inline akvi_rstats *akvi_rstats_of(akv_db *db)
{
    int t = akvi_thread_slot();
    return &db->rs[t < 0 ? AKVI_THREAD_SLOTS : t].c;
}

/* ---- options (options.c) ---------------------------------------------- */

/* bits_per_key when neither the options nor the database give one. */
#define AKVI_DEFAULT_BITS_PER_KEY 10.0

/* *out = in, or the defaults when in is NULL; AKV_EINVAL (with a message)
 * when they are out of range. */
int akvi_options_resolve(const akv_options *in, akv_options *out);

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
/* An SST of a run, for callbacks that ask whether a user key is in it (the
 * miss log's negatives for a build, a reverse map's keys): in the ordered
 * layout the internal key is the user key; in the hash layout only the
 * hash matters. */
typedef struct akvi_sst_ref {
    const akv_db *db;
    const akvi_cat_run *run;
    const akvi_cat_sst *sst;
} akvi_sst_ref;
bool akvi_sst_holds_user_key(void *ref, akv_hash h, const void *ukey, size_t klen);
/* The one run lookup within a level >= 1 (runs sorted by range, disjoint):
 * the index in runs[0..n) of the run whose range may hold the key; -1 if none. */
long akvi_find_run(akvi_run *const *runs, size_t n, const uint8_t *ikey, size_t iklen);
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

/* "\0": where scans of a family start, after the empty key under which a
 * memtable family records its generation (mempool.c). */
extern const char akvi_scan_lower_bound[1];

int akvi_rocks_setup(akv_db *db);
void akvi_rocks_teardown(akv_db *db);
int akvi_cf_create(akv_db *db, const char *name, int level, rocksdb_column_family_handle_t **out);
const rocksdb_options_t *akvi_cf_options_for(akv_db *db, const char *name);
void akvi_cf_drop(akv_db *db, rocksdb_column_family_handle_t *cf);
/* Ingests SST files into a family, moving (hard-linking) them or copying;
 * `what` names the step in the error. */
int akvi_ingest(akv_db *db, rocksdb_column_family_handle_t *cf, const char *const *paths, size_t n, bool move,
                const char *what);
/* Stops background work and writes until reopen, keeping the first error:
 * after any failed flush, compaction, write or change of column families
 * (docs/reliability.md). Not under bgmu. Returns rc. */
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

/* ---- the memtable guard (guard.c) -------------------------------------- */

/* Writer side, under wmu: insert into the guard and remember the hash; a
 * guard past its capacity is rebuilt at twice the keys. */
int akvi_guard_insert(akv_db *db, akvi_mem *m, akv_hash h);
/* Open, re-reading memtable m (in no version yet): the same, but a guard
 * past its capacity is marked broken; akvi_guard_refit follows. */
void akvi_guard_recover_insert(akv_db *db, akvi_mem *m, akv_hash h);
/* Open, once the memtables are in the first version: rebuild a guard that
 * is broken or past its capacity. */
void akvi_guard_refit(akv_db *db);
/* Reader side: false only when the key is certainly not in memtable m.
 * `pinned`: the caller holds a hazard pin (akvi_pin), so a concurrent
 * kind is queried without guard_lock. */
bool akvi_guard_may_contain(akv_db *db, const akvi_mem *m, akv_hash h, bool pinned);
/* A lookup the guard let through found nothing in any memtable: let an
 * absorbing kind (ada-SSCF) learn the negative. */
void akvi_guard_absorb(akv_db *db, akv_hash h);
/* Before m leaves the version (its run is being installed): guard rebuilds
 * keep m's hashes until akvi_guard_remove_mem takes them out. NULL: none. */
void akvi_guard_draining(akv_db *db, akvi_mem *m);
/* After m's run is installed: take m's keys out of the guard. */
void akvi_guard_remove_mem(akv_db *db, akvi_mem *m);
int akvi_guard_init(akv_db *db);
/* Close: the guard and every replaced one (no reader is left). */
void akvi_guard_free(akv_db *db);
size_t akvi_guard_memory(akv_db *db);
/* The smallest guard: for this many keys (15 KiB at 10 bits/key). */
#define AKVI_GUARD_MIN 4096
/* The guard's memory now, averaged over the last minute or so, what a
 * guard of its minimum size (4096 keys) takes, and what it takes at the
 * size it keeps while a memtable fills (5/4 of the keys the last flushed
 * one held); bytes, all 0 without a guard. */
typedef struct akvi_guard_mem {
    size_t now;
    double avg, floor, planned;
} akvi_guard_mem;
void akvi_guard_memory_parts(akv_db *db, akvi_guard_mem *out);
/* Test knob: the period that average is taken over (60 s). */
extern _Atomic double akvi_guard_avg_seconds;

/* ---- the L0 front (l0front.c) ------------------------------------------ */

void akvi_fronts_init(akv_db *db);
void akvi_fronts_free(akv_db *db);
/* A compaction picked L0 runs: the next flush starts a new front. */
void akvi_fronts_rotate(akv_db *db);
/* The bits per key of capacity a front is built with. */
double akvi_front_bits(const akv_db *db);
/* The false-positive rate of a full front built at these bits per key. */
double akvi_front_rate(double bits_per_key);
/* A flush's runs, before they are published: m's hashes into the current
 * front (a new one when it is full, or mostly stale in `now`, the current
 * version), and the runs pointed to it. Nothing when m's hashes are not
 * all known. */
void akvi_front_cover_flush(akv_db *db, const akvi_version *now, const akvi_mem *m, akvi_run **runs,
                            size_t n);
/* An L0 merge's outputs, before they are published: its inputs' front, if
 * they all point to the same one. */
void akvi_front_cover_merge(akvi_run *const *in, size_t n_in, akvi_run **out, size_t n_out);
/* What fronts query for h: computed once per get, for every front. */
uint64_t akvi_front_key(akv_hash h);
/* False only when no key of a run pointing to f has this front key. */
bool akvi_front_may_contain(const akvi_front *f, uint64_t x);
void akvi_front_ref(akvi_front *f);
void akvi_front_unref(akvi_front *f);
size_t akvi_front_memory(const akvi_front *f);
/* The fronts v's L0 runs point to, each counted once (bytes), leaving out
 * the runs whose family is in except[0..n_except) (a compaction's inputs). */
size_t akvi_fronts_memory(const akvi_version *v, rocksdb_column_family_handle_t *const *except,
                          size_t n_except);

/* ---- the pool of memtable families (mempool.c) ------------------------- */

/* "pool.<i+1>": the name of family i. */
void akvi_pool_name(size_t i, char *buf, size_t cap);
/* The memtable generation family cf holds: its record under the empty key
 * (8 bytes little-endian); 0 when it has none. */
int akvi_pool_marker(akv_db *db, rocksdb_column_family_handle_t *cf, uint64_t *gen);
void akvi_pool_init(akv_db *db);
/* Open: family i's handle (owned by the pool from now on) and state. */
void akvi_pool_set(akv_db *db, size_t i, rocksdb_column_family_handle_t *cf, int state);
/* Create the families of the pool that do not exist (create, open). */
int akvi_pool_fill(akv_db *db);
/* Under wmu: a free family for memtable `gen`, its record written; a new
 * family when none is free or being emptied (readers pin the rest);
 * AKVI_POOL_WAIT when one is being emptied. */
int akvi_pool_take(akv_db *db, uint64_t gen, size_t *idx);
/* Open: a copy of an older format's memtable family src (generation gen)
 * in a free family of the pool, written in one synced batch. */
int akvi_pool_adopt(akv_db *db, rocksdb_column_family_handle_t *src, uint64_t gen, size_t *idx);
/* A taken family that no memtable used after all. */
void akvi_pool_put_back(akv_db *db, size_t i);
/* Its flushed memtable's last reference is gone: it is to be emptied. */
void akvi_pool_retire(akv_db *db, size_t i);
/* Empty family i and make it free (a background thread, or open). */
int akvi_pool_empty(akv_db *db, size_t i);
/* Open, phase 2: empty the families that hold flushed memtables' data. */
int akvi_pool_empty_stale(akv_db *db);
/* Close: the handles, before RocksDB closes (the lock stays, for reuse). */
void akvi_pool_free(akv_db *db);

/* ---- memtables (memtable.c) -------------------------------------------- */

/* pool: the pool family cf is (-1: a mem.<gen> family of its own). */
int akvi_mem_create(akv_db *db, uint64_t gen, rocksdb_column_family_handle_t *cf, int pool, akvi_mem **out);
/* Under wmu: make a new active memtable in a pool family (the caller wakes
 * the background thread to flush the old one); AKVI_POOL_WAIT: none is
 * free yet. */
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
/* Backwards (user iterators): the last entry, the last entry before k, the
 * entry before the current one. Catalog checks follow forward passes only. */
void akvi_merge_seek_last(akvi_merge *m);
void akvi_merge_seek_before(akvi_merge *m, const uint8_t *k, size_t len);
void akvi_merge_prev(akvi_merge *m);
int akvi_merge_status(const akvi_merge *m); /* AKV_OK, AKV_EIO or AKV_ECORRUPT with message */
void akvi_merge_fail(akvi_merge *m, int rc); /* end the merge with error rc (the first one stays) */
/* Check input i against run's catalog entry (kept alive by the caller):
 * the input must not end before the run's last key, and a full pass must
 * read each SST's recorded entry count; else the status is AKV_ECORRUPT. */
void akvi_merge_expect(akvi_merge *m, size_t i, const akvi_cat_run *run);
void akvi_merge_destroy(akvi_merge *m);

/* ---- slot building (slotbuild.c) --------------------------------------- */

/* Build the slot of SST `sst` of `run` from its keys' hashes (turned into
 * slot hashes and sorted in place), sized for `capacity` >= n keys (room
 * for adaptations), pre-adapted to the miss log's negatives in its range.
 * A kind that cannot be built falls back (docs/design.md). `replaces`: the
 * column families of the runs the output replaces (a compaction's inputs;
 * NULL otherwise), left out of the tree its memory share is computed for. */
int akvi_build_filter(akv_db *db, int level, const akvi_cat_run *run, const akvi_cat_sst *sst,
                      akv_hash *hashes, size_t n, size_t capacity,
                      rocksdb_column_family_handle_t *const *replaces, size_t n_replaces, akv_filter **out);
/* What binds a filter to its SST's contents: the keys' 128-bit hashes in SST
 * order, each as 16 little-endian bytes (hi, then lo), hashed with XXH64 in
 * chunks of 256 keys, each chunk seeded with the previous chunk's digest
 * (the first with 0); never 0 (docs/format.md §6). */
uint64_t akvi_key_digest(const akv_hash *h, size_t n);
/* Hashes of the keys an SST holds, in SST order, read back from its run's
 * family; the count (and the digest, when recorded) must match the
 * catalog's, else AKV_ECORRUPT. */
int akvi_sst_hashes(akv_db *db, const akvi_run *r, const akvi_cat_sst *s, akv_hash **out, size_t *n);
/* The kind a new run's slots get at `level` (the policy's, or ablocked for
 * a costed kind the miss log cannot train). */
const akv_filter_kind *akvi_build_kind(akv_db *db, int level);
/* The bits per key the runs' slots of `keys` keys share now: bits_per_key
 * less what the memtable guard holds (at most a quarter). */
double akvi_runs_budget(akv_db *db, double keys);
/* The filter memory budget of a database whose runs hold `keys` keys, with
 * `mems` live memtables and guard g, in bytes: bits_per_key over them, plus
 * the part of a minimal guard that does not count on a tiny database, plus
 * what the guard grew beyond its usual size while memtables wait for their
 * flush (docs/design.md, "Filter memory by level"). */
double akvi_filter_budget(akv_db *db, double keys, size_t mems, const akvi_guard_mem *g);
/* All filter memory now (every slot, grown filters and the outgrown ones
 * still held included, and the guard), the runs' keys, and the budget
 * (akvi_filter_budget, with one memtable); bytes. */
typedef struct akvi_filter_total {
    double held, keys, budget;
} akvi_filter_total;
void akvi_filter_account(akv_db *db, akvi_filter_total *t);
/* A new filter for SST j of r from its data, `capacity` keys of room. */
int akvi_build_from_sst(akv_db *db, const akvi_run *r, size_t j, size_t capacity, akv_filter **out);
/* Refill f, the filter of SST j of r, in place from the SST's keys, pre-
 * adapted to the miss log's negatives in its range (akv_filter_refill). */
int akvi_refill_from_sst(akv_db *db, const akvi_run *r, size_t j, akv_filter *f);

/* ---- run writer (runwriter.c) ------------------------------------------ */

typedef struct akvi_runwriter akvi_runwriter;
/*
 * The shards a merge's inputs cover (hash layout): their finest prefix bits
 * and the part [lo, hi) of the hash space (as fractions of it) from the
 * first input shard's start to the last one's end. The output is cut at
 * least that finely, and finer while a shard would hold more than a
 * target's worth at the inputs' density over that part (akvi_rw_begin), so
 * that each output SST is a whole shard holding all of its level's keys
 * there: its slot hash then spreads its keys over the slot's whole table
 * (docs/design.md, "Sharding"). AKVI_SHARDS_NONE: no inputs yet.
 */
typedef struct akvi_shards {
    uint32_t min_bits;
    double lo, hi;
} akvi_shards;
#define AKVI_SHARDS_NONE ((akvi_shards){0, 1, 0})
void akvi_shards_add(akvi_shards *s, const akvi_cat_run *r);
/* A writer of one run at `level`, est_bytes of input in all; `sh` NULL:
 * shards from est_bytes alone. */
int akvi_rw_begin(akv_db *db, int level, uint64_t est_bytes, const akvi_shards *sh, akvi_runwriter **out);
int akvi_rw_add(akvi_runwriter *w, const uint8_t *ikey, size_t iklen, const uint8_t *val, size_t vlen);
/* Seal: SSTs, slots, filter files, ingest into a new run CF. *out is NULL
 * when nothing was added. */
int akvi_rw_finish(akvi_runwriter *w, akvi_run **out);
void akvi_rw_abort(akvi_runwriter *w);
/* Merge column families (newest first) into new runs at `level`, each cut
 * once it holds `run_bytes` raw bytes (disjoint ranges, ascending); the
 * runs in a malloc'd array *out, count in *n_out (0 when all was dropped). */
int akvi_rw_merge(akv_db *db, rocksdb_column_family_handle_t **cfs, size_t n, int level, uint64_t est,
                  const akvi_shards *sh, uint64_t run_bytes, bool drop_tombstones, akvi_run ***out,
                  size_t *n_out);

/* ---- adaptation (adapt.c) ---------------------------------------------- */

/* Adapt slot `sst` of run `r` to the false positive `h` (a slot hash): the
 * colliding keys are read from the reverse map first, then the slot's lock
 * is taken and the fingerprint extended. A filter with no room left is
 * rebuilt from its SST with twice the room. */
int akvi_adapt_slot(akv_db *db, akvi_run *r, size_t sst, akv_hash h);
/* Whether fixing a false positive of key (hash h, the key's own) pays: on
 * its second false positive (remembered in db->fp_seen), when the miss log
 * already holds it as a returning absent key, or, while at least a quarter
 * of a random sample of unfixed first false positives come back, on its
 * first unless it is sampled (docs/design.md, "Adaptation where it pays").
 * Records this false positive. */
bool akvi_adapt_pays(akv_db *db, akv_hash h, const void *key, size_t klen);
#define AKVI_FP_SEEN (1u << 16) /* entries of db->fp_seen: 256 KiB */
/* Test hook: called before the reverse map is read, outside every lock. */
extern void (*_Atomic akvi_hook_before_revmap_read)(void);

/* ---- commit (commit.c) ------------------------------------------------- */

/* The catalog (sync) and miss log for the given runs and flushed gen. */
int akvi_commit(akv_db *db, akvi_run **runs, size_t n_run, uint64_t flushed_mem_gen);
/* Commit, then install, the replacement of `drop` (runs) and `mem` by `add`
 * in the current version; replaced runs and the memtable become obsolete.
 * Flush and compaction run on their own threads: commits are serialised,
 * and each edits the version current at its commit. */
int akvi_publish(akv_db *db, akvi_mem *mem, akvi_run **drop, size_t n_drop, akvi_run **add, size_t n_add);

/* ---- flush (flush.c), compaction (compact.c) ---------------------------- */

int akvi_flush_one(akv_db *db, akvi_mem *m);
bool akvi_compaction_needed(akv_db *db, const akvi_version *v);
/* Raw bytes over the levels' capacities, L0's all of it once at its
 * trigger: what the compactions due now have to move (akv_stats). */
uint64_t akvi_compaction_debt(const akv_db *db, const akvi_version *v);
int akvi_compact_step(akv_db *db, bool full);
/* Compaction at rest's budget: read at open (before the background threads
 * start), saved at close (after they stop) in the meta family. */
int akvi_rest_credit_load(akv_db *db);
int akvi_rest_credit_save(akv_db *db);
/* How many memtables' worth of data L0 holds: each run counts as the
 * memtables it was flushed from (its raw bytes over memtable_bytes, at
 * least 1). L0 compactions are due, and writers slow down and stop, by
 * this count, so merging L0 runs does not change when they happen. */
size_t akvi_l0_weight(const akv_db *db, const akvi_version *v);
/* Under bgmu: is an L0 merge due (the flush thread's spare work)? */
bool akvi_l0_merge_due(const akv_db *db, const akvi_version *v);
/* Merge the newest L0 runs no compaction holds into one L0 run, if due
 * (docs/design.md, "LSM shape"). Flush thread only: a merge's run id is
 * then above every input's and below every later flush's, so ids keep
 * giving L0's search order. */
int akvi_compact_l0(akv_db *db);

/* ---- background thread (bg.c) ------------------------------------------ */

int akvi_bg_start(akv_db *db);
void akvi_bg_stop(akv_db *db);
void akvi_bg_wake(akv_db *db);
/* Rewrite the files of slots adapted since they were written. */
/* Under wmu: akvi_rotate; while no family of the pool is free yet (one is
 * being emptied), wait as a stalled writer does, counted as a stall. */
int akvi_rotate_when_free(akv_db *db);
int akvi_save_adapted_slots(akv_db *db);

/* ---- write path (write.c) --------------------------------------------- */

typedef struct akvi_op {
    uint8_t tag; /* AKVI_TAG_PUT or AKVI_TAG_DEL */
    const uint8_t *key, *val;
    size_t klen, vlen;
} akvi_op;

/* Apply ops atomically to the active memtable (one RocksDB write batch). */
int akvi_write_ops(akv_db *db, const akvi_op *ops, size_t n, bool sync);

/* ---- open and close (recover.c) ----------------------------------------- */

/* akv_open without the background threads: every check of open, and
 * nothing flushed or compacted until the handle is closed (repair's check
 * that the repaired database opens). */
int akvi_open_quiet(const char *dir, const akv_options *opt, akv_db **out);

/* RocksDB's families as open found them; runs and memtables take theirs. */
enum { AKVI_CF_FREE, AKVI_CF_USED, AKVI_CF_LEFTOVER };
typedef struct akvi_cf_set {
    char **names;
    rocksdb_column_family_handle_t **h;
    uint8_t *state; /* AKVI_CF_*: free (handle destroyed at the end), taken
                     * (its owner destroys it), or a leftover to drop */
    size_t n;
} akvi_cf_set;

/* Open DIR/rocksdb with every family it lists (read only, or for writing;
 * `create`: a new instance may be made). Sets db->rdb, meta_cf, default_cf. */
int akvi_cf_set_open(akv_db *db, bool read_only, bool create, akvi_cf_set *s);
/* Destroy the handles nobody took (dropping leftovers when `drop`). */
void akvi_cf_set_free(akv_db *db, akvi_cf_set *s, bool drop);
/* "run.12" with prefix "run." -> 12; 0 if the name is not of that form. */
uint64_t akvi_parse_id(const char *name, const char *prefix);
/* The identity record (28 bytes) and DIR/IDENTITY (docs/format.md §5). */
size_t akvi_identity_encode(uint32_t layout, uint64_t seed, uint8_t *buf);
int akvi_identity_decode(const uint8_t *buf, size_t len, uint32_t *layout, uint64_t *seed);
int akvi_identity_read(const char *dir, uint32_t *layout, uint64_t *seed);
/* DIR/IDENTITY (atomically) and its copy in the meta family. */
int akvi_identity_write(akv_db *db);
/* An akv_db with options, paths, locks and RocksDB options, not opened. */
akv_db *akvi_db_new(const char *dir, const akv_options *opt, int *rc);
void akvi_db_free(akv_db *db);
/* Take the database's lock (db->lock_fd): AKV_EBUSY, naming DIR, when
 * another handle holds it, in this process or another; AKV_NOTFOUND when
 * DIR does not exist. Taken before anything in DIR is read. */
int akvi_dir_lock(akv_db *db);
/* Check RocksDB's WAL before it is replayed (wal.c): damage is logged and
 * counted, or refused when `strict`; the finding's text into note. */
int akvi_wal_damage(akv_db *db, bool strict, char *note, size_t cap);
/* Test hook: called at the steps of a create ("rocksdb", "catalog",
 * "identity"); a result other than AKV_OK fails the open there. */
extern int (*_Atomic akvi_hook_create_step)(const char *step);
/* Test hook: the compaction thread calls it in each compaction step once
 * the inputs are picked and before they are merged (holding no lock); a
 * test holds compactions back by blocking in it. */
extern void (*_Atomic akvi_hook_before_compaction)(void);

#endif
